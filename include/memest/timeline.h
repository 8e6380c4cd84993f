/* timeline.h - one training (or inference) step as an ordered list of
 * device allocation and free events, and its peaks. The simulator (sim.h)
 * builds both, the reports read them, the CUDA probe replays the events on
 * a real device. Every ALLOC has exactly one matching
 * FREE with the same id, unless the block outlives the step (parameters,
 * buffers, optimizer state: `persistent`), in which case the free comes at
 * the very end in phase MEMEST_PH_TEARDOWN. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "memest/error.h"

enum memest_phase {
    MEMEST_PH_SETUP = 0,  /* model and optimizer state before the step */
    MEMEST_PH_FORWARD,
    MEMEST_PH_LOSS,
    MEMEST_PH_BACKWARD,
    MEMEST_PH_OPTIMIZER,
    MEMEST_PH_TEARDOWN,
    MEMEST_PH_COUNT
};

enum memest_category {
    MEMEST_CAT_PARAMS = 0,
    MEMEST_CAT_BUFFERS,
    MEMEST_CAT_GRADS,
    MEMEST_CAT_OPTSTATE,
    MEMEST_CAT_INPUTS,
    MEMEST_CAT_SAVED,       /* activations saved for backward */
    MEMEST_CAT_TRANSIENT,   /* forward outputs not saved, workspaces */
    MEMEST_CAT_ACTGRADS,    /* gradients of activations during backward */
    MEMEST_CAT_OPTTEMP,     /* optimizer temporaries */
    MEMEST_CAT_WORKSPACE,   /* library scratch from the caching allocator that is
                               not a tensor (the cuBLAS workspace) */
    MEMEST_CAT_COMM,        /* several GPUs: the engines' buffers (DDP's buckets,
                               DeepSpeed's reduce buckets) and gathered parameters */
    MEMEST_CAT_COUNT
};

enum memest_event_kind { MEMEST_EV_ALLOC = 0, MEMEST_EV_FREE = 1 };

/* A FREE's stream flag: the block was used on another stream and
 * record_stream'd there, so the caching allocator frees it only once that
 * stream's event completed (alloc.h: memest_alloc_free_deferred). */
#define MEMEST_EV_RECORDED 0x80u
#define MEMEST_EV_STREAM(s) ((uint8_t)((s) & 0x7Fu))

/* The unit of an event's `reserved`: 2 MiB, the caching allocator's
 * smallest segment (alloc.h: MEMEST_ALLOC_SMALL_BUFFER, kept equal by a
 * static_assert in sim_replay.c); every segment is a multiple of it. */
#define MEMEST_TIMELINE_RESERVED_UNIT ((uint64_t)2 << 20)

struct memest_event {
    uint8_t kind;      /* enum memest_event_kind */
    uint8_t phase;     /* enum memest_phase */
    uint8_t category;  /* enum memest_category */
    uint8_t stream;    /* the CUDA stream the block is allocated on (0: the default
                          stream; the engines' own streams: sim_dist.c, doc/several-
                          gpus.md "Streams"); a FREE's, copied from its ALLOC, with
                          MEMEST_EV_RECORDED when record_stream deferred the free */
    uint32_t node;     /* node index in the graph, UINT32_MAX = none */
    uint32_t id;       /* allocation id, pairs ALLOC with FREE */
    uint32_t reserved; /* the allocator model's reserved memory after this event,
                          in MEMEST_TIMELINE_RESERVED_UNIT units (0: not simulated) */
    uint64_t bytes;    /* the tensor's exact size */
    uint64_t block;    /* the caching allocator's block for it (0: not simulated) */
};

/* One segment of the caching-allocator model: what PyTorch cudaMallocs. */
struct memest_segment {
    uint64_t addr;    /* its start in the model's address space (alloc.h) */
    uint64_t bytes;   /* a multiple of MEMEST_TIMELINE_RESERVED_UNIT */
    size_t event;     /* the event that made it; 0 also for the segments made
                         before the step (setup, warm-up step): they come first */
};

struct memest_timeline {
    struct memest_event *ev;
    size_t n, cap;
    uint32_t next_id;
    const char *const *node_names;  /* node index -> name, for messages; may be NULL */
    /* The allocator's layout, for the probe: set `layout` on the timeline
     * handed to the simulator (sim.h) and it fills seg (every segment, in
     * the order made: their addresses ascend) and addr (per event, the
     * address of its block; 0 for a 0-byte allocation). */
    int layout;
    struct memest_segment *seg;
    size_t nseg;
    uint64_t *addr;
};

const char *memest_phase_name(enum memest_phase p);
const char *memest_category_name(enum memest_category c);

/* Appends an ALLOC and returns its id via *id. 0 / -1 (out of memory). */
int memest_timeline_alloc(struct memest_timeline *t, uint8_t phase, uint8_t cat,
                          uint32_t node, uint64_t bytes, uint32_t *id);
/* Appends the FREE of allocation id (bytes and category as allocated). */
int memest_timeline_free(struct memest_timeline *t, uint8_t phase, uint8_t cat,
                         uint32_t node, uint32_t id, uint64_t bytes);
void memest_timeline_reset(struct memest_timeline *t);
/* Frees the events and the layout; the timeline is empty (layout unset). */
void memest_timeline_dispose(struct memest_timeline *t);

/* Peak of live bytes over the timeline, and the index of the event at which
 * it is first reached. */
uint64_t memest_timeline_peak(const struct memest_timeline *t, size_t *at_event);

/* What is live at one point of a walk over a timeline, per category and in
 * all: the one walk of --timeline's columns and --plot's stacked areas. */
struct memest_live {
    uint64_t cat[MEMEST_CAT_COUNT];
    uint64_t total;
};

enum memest_live_measure {
    MEMEST_LIVE_TENSORS = 0,  /* the tensors' exact bytes (memest_event.bytes) */
    MEMEST_LIVE_BLOCKS,       /* the allocator's blocks (memest_event.block) */
};

/* Applies event e to *l: an ALLOC adds its size in measure m to its
 * category and the total, a FREE subtracts it (modulo 2^64: a consistent
 * timeline frees only what it allocated). A category out of range counts
 * as the first. Returns the category counted. */
uint8_t memest_live_apply(struct memest_live *l, const struct memest_event *e,
                          enum memest_live_measure m);

/* The peaks of one simulated step (sim.h: memest_sim_step), what the
 * estimate and the reports read. */
struct memest_peak {
    uint64_t bytes;           /* the allocator's allocated peak: the most bytes in live
                                 blocks (rounded, unsplit remainders included) at any
                                 event of the step, torch.cuda.max_memory_allocated() */
    size_t event;             /* timeline event at which it is first reached */
    uint8_t phase;            /* enum memest_phase */
    uint32_t node;            /* node at the peak, UINT32_MAX = none (loss, optimizer) */
    uint64_t at_peak[MEMEST_CAT_COUNT];  /* live block bytes per category at the
                                            peak (they sum to bytes) */
    uint64_t tensor_bytes;    /* peak of live tensor bytes, exact sizes, before
                                 allocator rounding and without library workspaces:
                                 what a tensor-level measurement counts */
    size_t tensor_event;
    uint64_t reserved;        /* the allocator's reserved peak (segments),
                                 torch.cuda.max_memory_reserved() */
    uint64_t segments;        /* cudaMalloc'd segments held at the end */
    uint64_t sim_events;      /* events the simulation made (warm-up included): what
                                 the cost model (cost.h) bounds from above */
    uint64_t fwd_saved;       /* exact bytes of the saved activations alive when the
                                 step's (last micro-batch's) forward ends: what a
                                 pipeline stage holds per micro-batch in flight
                                 (checkpointing included) */
    uint64_t bwd_saved;       /* exact bytes of the tensors autograd keeps when the
                                 (last micro-batch's) backward starts: the model's
                                 saved activations (under checkpointing the segments'
                                 inputs, not their insides) and the loss's; a pipeline
                                 stage's other micro-batches left out; 0 for a no-grad
                                 pass */
    uint64_t offload_host;    /* --activation-offload: the most bytes the host copies of
                                 the offloaded saved tensors hold (pinned memory) */
    uint64_t offload_d2h;     /* ... bytes a (the last) micro-batch's forward copies to
                                 the host */
    uint64_t offload_h2d;     /* ... bytes its backward copies back */
};
