/* test_nccl_mem.c - NCCL's device memory per communicator (src/sim/
 * nccl_mem.c), each figure worked by hand from the rule (NCCL v2.27.3-1):
 *   LL = 8 x 512 x 8 x 16 B = 524,288; LL128 = 120 x 640 x 8 x 8 B =
 *   4,915,200; SIMPLE = NCCL_BUFFSIZE, 4,194,304; ncclSendMem and
 *   ncclRecvMem 4,096 each; each side rounded up to 2 MiB (2,097,152).
 *   Reading (NVLink, Ampere on): send 4,096 + 4,194,304 = 4,198,400 -> 6 MiB,
 *   receive 4,096 + 524,288 + 4,915,200 = 5,443,584 -> 6 MiB: 12 MiB.
 *   Writing (PCIe): send 4,096 -> 2 MiB, receive 5,443,584 + 4,194,304 =
 *   9,637,888 -> 10 MiB: 12 MiB.
 *   NVLS on Hopper: 16 channels x 2 x (128 KiB x 8 = 1 MiB) x heads, plus
 *   16 x 2 x 64 B x heads rounded to 2 MiB. */
#include "check.h"
#include "memest/dist.h"
#include "memest/nccl_mem.h"

#define MIB ((uint64_t)1 << 20)

static const struct memest_nccl_fabric H100 = {.cc = 90, .nvswitch = true};
static const struct memest_nccl_fabric A100 = {.cc = 80, .nvswitch = true};
static const struct memest_nccl_fabric PCIE = {.cc = 89, .nvswitch = false};

static struct memest_dist_cfg layout(int64_t gpus, enum memest_strategy s)
{
    struct memest_dist_cfg c;
    memest_dist_default(&c);
    c.set = true;
    c.gpus = gpus;
    c.strategy = s;
    return c;
}

static void connections(void)
{
    CHECK_EQ_U64(memest_nccl_conn_bytes(&H100), 12 * MIB);   /* 6 + 6 MiB */
    CHECK_EQ_U64(memest_nccl_conn_bytes(&PCIE), 12 * MIB);   /* 2 + 10 MiB */
    /* NCCL_BUFFSIZE=8 MiB, reading: send 4,096 + 8,388,608 -> 10 MiB, receive 6 MiB */
    struct memest_nccl_fabric big = H100;
    big.buffsize = 8 * MIB;
    CHECK_EQ_U64(memest_nccl_conn_bytes(&big), 16 * MIB);
    CHECK_EQ_U64(memest_nccl_channels(&H100), 32);
    CHECK_EQ_U64(memest_nccl_channels(&A100), 24);
    CHECK_EQ_U64(memest_nccl_channels(&PCIE), 2);
}

static void data_parallel(void)
{
    struct memest_nccl n;
    /* FSDP on 8 x H100: one communicator of 8 ranks, all on the node: ring
     * 32 x 12 MiB = 384 MiB; NVLS 16 x 2 x 1 MiB x 8 = 256 MiB + 16 x 2 x 64
     * x 8 = 16,384 B -> 2 MiB: 258 MiB; 642 MiB = 673,185,792 B */
    struct memest_dist_cfg c = layout(8, MEMEST_STRAT_FSDP);
    memest_nccl_layout(&c, &H100, &n);
    CHECK(n.n == 1 && n.comm[0].kind == MEMEST_NCCL_DP && n.comm[0].ranks == 8);
    CHECK_EQ_U64(n.comm[0].rings, 384 * MIB);
    CHECK_EQ_U64(n.comm[0].nvls, 258 * MIB);
    CHECK_EQ_U64(n.total, 673185792);
    /* NCCL_NVLS_ENABLE=0: the ring alone */
    struct memest_nccl_fabric off = H100;
    off.nvls_off = true;
    memest_nccl_layout(&c, &off, &n);
    CHECK_EQ_U64(n.total, 384 * MIB);
    /* DDP on 8 x A100 (no NVLS before Hopper): 24 x 12 MiB = 288 MiB */
    c = layout(8, MEMEST_STRAT_DDP);
    memest_nccl_layout(&c, &A100, &n);
    CHECK_EQ_U64(n.total, 288 * MIB);
    /* one GPU: none */
    c = layout(1, MEMEST_STRAT_NONE);
    memest_nccl_layout(&c, &H100, &n);
    CHECK(n.n == 0);
    CHECK_EQ_U64(n.total, 0);
    memest_nccl_layout(NULL, &H100, &n);
    CHECK_EQ_U64(n.total, 0);
}

static void model_parallel(void)
{
    struct memest_nccl n;
    /* 16 x H100 on 2 nodes, TP 8 and FSDP over 2: TP 642 MiB (as above);
     * the DP pair is 8 ranks apart, one per node: ring and tree 2 x 32 x
     * 12 MiB = 768 MiB, no NVLS; 1,410 MiB */
    struct memest_dist_cfg c = layout(16, MEMEST_STRAT_FSDP);
    c.tp = 8;
    c.gpus_per_node = 8;
    memest_nccl_layout(&c, &H100, &n);
    CHECK(n.n == 2);
    CHECK_EQ_U64(n.comm[0].bytes, 642 * MIB);
    CHECK(n.comm[1].kind == MEMEST_NCCL_DP && n.comm[1].local == 1);
    CHECK_EQ_U64(n.comm[1].bytes, 768 * MIB);
    CHECK_EQ_U64(n.total, 1410 * MIB);
    /* HSDP on the same 16: shard 8 on a node (642 MiB), replicate 2 across
     * nodes (768 MiB) */
    c = layout(16, MEMEST_STRAT_HSDP);
    c.gpus_per_node = 8;
    memest_nccl_layout(&c, &H100, &n);
    CHECK(n.n == 2 && n.comm[1].kind == MEMEST_NCCL_REPLICA);
    CHECK_EQ_U64(n.total, 1410 * MIB);
    /* a 4-stage pipeline on PCIe cards: a middle stage's two 2-rank
     * communicators, 2 channels x 12 MiB each: 48 MiB */
    c = layout(4, MEMEST_STRAT_NONE);
    c.pp = 4;
    memest_nccl_layout(&c, &PCIE, &n);
    CHECK(n.n == 1 && n.comm[0].kind == MEMEST_NCCL_PP && n.comm[0].count == 2);
    CHECK_EQ_U64(n.total, 48 * MIB);
    /* DDP with EP 8 on 8 x H100: the DP communicator (642 MiB) and the
     * all-to-all's 7 peers x 32 channels x 12 MiB = 2,688 MiB */
    c = layout(8, MEMEST_STRAT_DDP);
    c.ep = 8;
    memest_nccl_layout(&c, &H100, &n);
    CHECK(n.n == 2 && n.comm[1].kind == MEMEST_NCCL_EP);
    CHECK_EQ_U64(n.comm[1].bytes, 2688 * MIB);
    CHECK_EQ_U64(n.total, (642 + 2688) * MIB);
}

int main(void)
{
    connections();
    data_parallel();
    model_parallel();
    return CHECK_DONE();
}
