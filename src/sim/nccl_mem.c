/* nccl_mem.c - NCCL's own device memory per communicator (nccl_mem.h),
 * outside PyTorch's caching allocator: nvidia-smi shows it, the
 * allocator's statistics do not.
 *
 * The rule, from NVIDIA/nccl v2.27.3-1 (the NCCL of PyTorch 2.8's CUDA 12
 * wheels):
 *  - a connection (one channel to one peer) has three protocol buffers:
 *    LL = NCCL_LL_LINES_PER_THREAD 8 x NCCL_LL_MAX_NTHREADS 512 x
 *    NCCL_STEPS 8 x 16 B = 512 KiB, LL128 = NCCL_LL128_ELEMS_PER_THREAD 120
 *    x NCCL_LL128_MAX_NTHREADS 640 x 8 x 8 B = 4,915,200 B, SIMPLE =
 *    NCCL_BUFFSIZE, 1 << 22 = 4 MiB (src/init.cc:618-634,
 *    src/include/device.h:25,93-111);
 *  - the P2P (NVLink/PCIe) transport puts LL and LL128 on the receiver
 *    with a 4 KiB ncclRecvMem, and SIMPLE on the sender (with a 4 KiB
 *    ncclSendMem) when it reads, which it does on NVLink from Ampere on,
 *    else on the receiver; each side rounds to CUDA_IPC_MIN, 2 MiB
 *    (src/transport/p2p.cc:308-320,372-380,441-448, src/include/comm.h:
 *    34-35): 6 + 6 MiB reading, 2 + 10 MiB writing, 12 MiB either way
 *    with the defaults (NCCL issue #1685: 10,485,760 B and 2,097,152 B
 *    allocations per channel and peer on 8 x H100);
 *  - a ring connects each rank to its next and previous rank: one
 *    connection per channel on each GPU; a communicator over several
 *    nodes adds its tree (one more per channel); NCCL_RUNTIME_CONNECT=1
 *    (src/init.cc:52) connects an algorithm at its first use, and a
 *    training step uses the ring;
 *  - the channels: what the topology search finds, doubled (MAXCHANNELS
 *    64 caps it, src/include/device.h:87; NCCL_MIN/MAX_NCHANNELS,
 *    src/graph/connect.cc:325-350): 24 on an A100 SXM4 NVSwitch node
 *    (nccl-tests issue #100, "Channel 23/24"), 32 on an H100/H200 SXM
 *    one (NCCL issue #1685: 32 channels per pair), 2 on PCIe (one ring
 *    doubled; nccl-tests issue #228 "Channel 00/01"); Blackwell's NVSwitch
 *    nodes as Hopper's;
 *  - an all-to-all (expert parallelism) connects each peer on its
 *    point-to-point channels, as many as the collective ones on NVSwitch
 *    (issue #1685: 32 per peer, 3.3 GB on 8 x H100);
 *  - NVLS (NVLink SHARP, Hopper and Blackwell NVSwitch, more than 2 GPUs
 *    of a node, NCCL_NVLS_ENABLE not 0; src/transport/nvls.cc:146-160):
 *    its channels (16 on sm90, 24 on a sm100 node, 32 across nodes) x 2
 *    x NCCL_NVLS_CHUNKSIZE 128 KiB x NCCL_STEPS 8 per head, one head per
 *    local rank (nvls.cc:333-337, src/graph/connect.cc:241-254), each
 *    GPU's share of the unicast memory bound to the multicast object, and
 *    a credit region of channels x 2 x 64 B x heads rounded to 2 MiB
 *    (nvls.cc:402-433): 16 x 2 x 1 MiB x 8 + 2 MiB = 258 MiB on 8 x H100.
 * Each communicator has its own (ncclCommSplit shares them only when
 * asked: NCCL issue #986). */
#include "memest/nccl_mem.h"

#define MIB ((uint64_t)1 << 20)
#define IPC_MIN (2 * MIB)         /* CUDA_IPC_MIN */
#define MEM_ALIGN 4096u           /* sizeof(struct ncclSendMem), ncclRecvMem */
#define LL_BYTES ((uint64_t)8 * 512 * 8 * 16)
#define LL128_BYTES ((uint64_t)120 * 640 * 8 * 8)
#define SIMPLE_BYTES ((uint64_t)1 << 22)
#define NVLS_BUFF ((uint64_t)128 * 1024 * 8)   /* NVLS_CHUNKSIZE x NCCL_STEPS */

static uint64_t ipc_round(uint64_t n)
{
    return (n + IPC_MIN - 1) / IPC_MIN * IPC_MIN;
}

const char *memest_nccl_kind_name(enum memest_nccl_kind k)
{
    static const char *const names[] = {"dp", "replicate", "tp", "cp", "pp", "ep"};
    _Static_assert(sizeof names / sizeof *names == MEMEST_NCCL_KIND_COUNT, "kinds");
    return (unsigned)k < MEMEST_NCCL_KIND_COUNT ? names[k] : "?";
}

unsigned memest_nccl_channels(const struct memest_nccl_fabric *f)
{
    if (!f->nvswitch)
        return 2;
    return f->cc >= 90 ? 32 : 24;
}

uint64_t memest_nccl_conn_bytes(const struct memest_nccl_fabric *f)
{
    uint64_t simple = f->buffsize ? f->buffsize : SIMPLE_BYTES;
    bool read = f->nvswitch && f->cc >= 80;
    uint64_t send = MEM_ALIGN + (read ? simple : 0);
    uint64_t recv = MEM_ALIGN + LL_BYTES + LL128_BYTES + (read ? 0 : simple);
    return ipc_round(send) + ipc_round(recv);
}

void memest_nccl_comm_bytes(const struct memest_nccl_fabric *f, bool alltoall, int64_t ranks,
                            int64_t local, uint64_t *rings, uint64_t *nvls)
{
    *rings = *nvls = 0;
    if (ranks < 2)
        return;
    uint64_t ch = memest_nccl_channels(f), conn = memest_nccl_conn_bytes(f);
    bool spans = local < ranks;
    if (alltoall)
        *rings = (uint64_t)(ranks - 1) * ch * conn;
    else
        *rings = ch * conn * (spans ? 2 : 1);
    if (f->nvswitch && f->cc >= 90 && !f->nvls_off && local > 2 && !alltoall) {
        uint64_t nch = f->cc >= 100 ? (spans ? 32 : 24) : 16, heads = (uint64_t)local;
        *nvls = nch * 2 * NVLS_BUFF * heads + ipc_round(nch * 2 * 64 * heads);
    }
}

/* A group of `ranks` whose members are `stride` ranks apart (Megatron's
 * order: TP, then CP, then DP, then PP). */
static void add(struct memest_nccl *o, const struct memest_nccl_fabric *f, int64_t gpn,
                enum memest_nccl_kind k, int64_t ranks, int64_t stride, int64_t count)
{
    if (ranks < 2 || count < 1)
        return;
    struct memest_nccl_comm *c = &o->comm[o->n++];
    int64_t per_node = stride >= gpn ? 1 : gpn / stride;
    c->kind = k;
    c->ranks = ranks;
    c->local = ranks < per_node ? ranks : per_node;
    c->count = count;
    memest_nccl_comm_bytes(f, k == MEMEST_NCCL_EP, ranks, c->local, &c->rings, &c->nvls);
    c->bytes = (uint64_t)count * (c->rings + c->nvls);
    o->total += c->bytes;
}

void memest_nccl_layout(const struct memest_dist_cfg *d, const struct memest_nccl_fabric *f,
                        struct memest_nccl *out)
{
    *out = (struct memest_nccl){.channels = memest_nccl_channels(f),
                                .conn = memest_nccl_conn_bytes(f)};
    if (!d || d->gpus < 2)
        return;
    int64_t gpn = memest_dist_gpus_per_node(d), dp = memest_dist_dp(d);
    int64_t tp = d->tp, cp = d->cp, pp = d->pp;
    add(out, f, gpn, MEMEST_NCCL_TP, tp, 1, 1);
    add(out, f, gpn, MEMEST_NCCL_CP, cp, tp, 1);
    if (d->strategy == MEMEST_STRAT_HSDP) {
        int64_t shard = memest_dist_shard_group(d);
        add(out, f, gpn, MEMEST_NCCL_DP, shard, tp, 1);
        add(out, f, gpn, MEMEST_NCCL_REPLICA, dp * cp / shard, tp * shard, 1);
    } else if (d->strategy != MEMEST_STRAT_NONE) {
        add(out, f, gpn, MEMEST_NCCL_DP, dp * cp, tp, 1);
    }
    /* pipeline neighbours: a 2-rank communicator each (ProcessGroupNCCL's
     * send/recv) */
    int64_t peers = pp < 2 ? 0 : pp == 2 ? 1 : 2;   /* a middle stage has two */
    add(out, f, gpn, MEMEST_NCCL_PP, 2, tp * cp * dp, peers);
    add(out, f, gpn, MEMEST_NCCL_EP, d->ep, tp, 1);
}
