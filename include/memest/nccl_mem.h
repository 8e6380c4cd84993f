/* nccl_mem.h - the device memory NCCL takes for its communicators beside
 * the caching allocator (src/sim/nccl_mem.c states the rule and its
 * sources): per communicator, the buffers of each channel's connections
 * (LL, LL128 and SIMPLE), NVLink SHARP's (NVLS) where the node has
 * NVSwitch, and the communicators PyTorch's engines create for a layout.
 * Device knowledge, like cuda_overhead.h: the estimate adds it to the
 * device overhead; the card (gpu.h) says what fabric a preset has. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/dist.h"

/* What the rule reads of the card and the environment. */
struct memest_nccl_fabric {
    unsigned cc;          /* compute capability, major * 10 + minor (0: unknown) */
    bool nvswitch;        /* the GPUs of a node meet at NVSwitches (SXM / HGX) */
    bool nvls_off;        /* NCCL_NVLS_ENABLE=0 in the environment */
    uint64_t buffsize;    /* NCCL_BUFFSIZE, the SIMPLE buffer (0: NCCL's 4 MiB) */
};

/* The communicator kinds PyTorch's engines create for a layout. */
enum memest_nccl_kind {
    MEMEST_NCCL_DP = 0,   /* the data-parallel group: DDP's all-reduce, ZeRO's and FSDP's
                             reduce-scatter and all-gather (HSDP: the shard group) */
    MEMEST_NCCL_REPLICA,  /* HSDP's replicate group (across nodes) */
    MEMEST_NCCL_TP,       /* tensor parallel */
    MEMEST_NCCL_CP,       /* context parallel */
    MEMEST_NCCL_PP,       /* a pipeline neighbour: one 2-rank communicator per peer */
    MEMEST_NCCL_EP,       /* expert parallel: all-to-all */
    MEMEST_NCCL_KIND_COUNT
};
/* "dp", "replicate", "tp", "cp", "pp", "ep". */
const char *memest_nccl_kind_name(enum memest_nccl_kind k);

struct memest_nccl_comm {
    enum memest_nccl_kind kind;
    int64_t ranks;        /* the communicator's size */
    int64_t local;        /* its ranks on one node */
    int64_t count;        /* communicators of this kind a rank holds (PP: its neighbours) */
    uint64_t rings;       /* bytes of one: its ring (and tree) connections */
    uint64_t nvls;        /* bytes of one: its NVLS buffers (0: none) */
    uint64_t bytes;       /* count x (rings + nvls) */
};

struct memest_nccl {
    unsigned channels;    /* the collective channels of a communicator */
    uint64_t conn;        /* the bytes of one connection (send and receive sides) */
    int n;
    struct memest_nccl_comm comm[MEMEST_NCCL_KIND_COUNT];
    uint64_t total;       /* per GPU, the most any rank holds */
};

/* The collective channels NCCL opens on fabric f. */
unsigned memest_nccl_channels(const struct memest_nccl_fabric *f);
/* The device bytes of one connection (one channel to one peer: the send
 * side's and the receive side's buffers, each rounded to 2 MiB). */
uint64_t memest_nccl_conn_bytes(const struct memest_nccl_fabric *f);
/* One communicator of `ranks` ranks, `local` of them on a node. */
void memest_nccl_comm_bytes(const struct memest_nccl_fabric *f, bool alltoall, int64_t ranks,
                            int64_t local, uint64_t *rings, uint64_t *nvls);
/* The communicators of layout d (NULL or one GPU: none) and their bytes. */
void memest_nccl_layout(const struct memest_dist_cfg *d, const struct memest_nccl_fabric *f,
                        struct memest_nccl *out);
