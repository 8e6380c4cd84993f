/* alloc.h - a model of PyTorch's CUDA caching allocator
 * (c10/cuda/CUDACachingAllocator.cpp, PyTorch 1.13 to 2.x, default
 * configuration), replayed on a step's allocation events to predict what
 * torch.cuda.max_memory_allocated() and max_memory_reserved() report.
 *
 *   struct memest_alloc *a = memest_alloc_create();
 *   uint32_t h; uint64_t got;
 *   memest_alloc_malloc(a, 1000, &h, &got);     // got == 1024: one 512-byte multiple
 *   memest_alloc_free(a, h);
 *   memest_alloc_stats(a)->max_reserved;        // 2 MiB: one small-pool segment
 *   memest_alloc_destroy(a);
 *
 * One device; up to MEMEST_ALLOC_STREAMS streams (memest_alloc_malloc_on),
 * each with its own pools: a cached block serves only a request of its
 * stream (get_free_block), release_available_cached_blocks looks at the
 * request's stream, release_cached_blocks and the garbage collection at
 * every stream's. A block freed after record_stream put another stream's
 * use on it (memest_alloc_free_deferred) waits for that stream's event:
 * memest assumes the event has completed by the next malloc, whose
 * process_events() frees it. Stream 0 alone is the one-stream model.
 * Without a capacity (the default) no
 * cudaMalloc fails, so no segment is ever released and the reserved memory
 * only grows; with one (memest_alloc_set_capacity) a request that finds no
 * room follows PyTorch's malloc(): the free-memory callbacks (none that a
 * training step registers), the garbage collection (with a fraction and a
 * garbage_collection_threshold), alloc_block, release_available_cached_blocks
 * and release_cached_blocks with a retry each, then out of memory.
 * PYTORCH_CUDA_ALLOC_CONF's settings (alloc_conf.h) apply as PyTorch applies
 * them: max_split_size_mb, max_non_split_rounding_mb, roundup_power2_divisions,
 * garbage_collection_threshold and expandable_segments (alloc_expand.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memest/alloc_conf.h"

#define MEMEST_ALLOC_MIN_BLOCK 512u                   /* kMinBlockSize */
#define MEMEST_ALLOC_SMALL_SIZE ((uint64_t)1 << 20)  /* kSmallSize: 1 MiB */
#define MEMEST_ALLOC_SMALL_BUFFER ((uint64_t)2 << 20) /* kSmallBuffer: 2 MiB */
#define MEMEST_ALLOC_LARGE_BUFFER ((uint64_t)20 << 20) /* kLargeBuffer: 20 MiB */
#define MEMEST_ALLOC_MIN_LARGE ((uint64_t)10 << 20)  /* kMinLargeAlloc: 10 MiB */
#define MEMEST_ALLOC_ROUND_LARGE ((uint64_t)2 << 20) /* kRoundLarge: 2 MiB */
#define MEMEST_ALLOC_STREAMS 8u   /* streams 0 .. 7 (memest's, not a PyTorch limit) */

struct memest_alloc_stats {
    uint64_t allocated;      /* live block bytes: memory_allocated() */
    uint64_t reserved;       /* segment bytes: memory_reserved() */
    uint64_t requested;      /* live bytes as requested (before rounding) */
    uint64_t max_allocated;  /* since creation or the last reset_peak */
    uint64_t max_reserved;
    uint64_t segments;       /* cudaMalloc calls (segments made) */
    uint64_t live_blocks;
    uint64_t pending;        /* bytes of blocks freed with record_stream events pending:
                                out of `allocated`, not yet in a pool */
    /* under a capacity */
    uint64_t retries;        /* num_alloc_retries: release_cached_blocks, then a retry */
    uint64_t ooms;           /* requests that failed after every release */
    uint64_t released;       /* bytes given back to the device (cudaFree, unmapped pages) */
    uint64_t segment_frees;  /* cudaFree calls */
    /* The capacity checks so far: the most reserved memory a check that
     * passed asked for, the least one that failed asked for (UINT64_MAX:
     * none failed). Every capacity in [need_ok, need_fail) passes and fails
     * the same checks, so a replay under any of them runs alike. */
    uint64_t need_ok, need_fail;
    uint64_t device_errors;  /* a device's segment frees that failed */
    bool inexact;            /* a check compared with a fraction of the capacity
                                (the garbage collection's threshold): the
                                interval above is not known */
};

struct memest_alloc;

/* A new, empty allocator with the default settings; NULL when out of
 * memory. */
struct memest_alloc *memest_alloc_create(void);
/* The same with PYTORCH_CUDA_ALLOC_CONF's settings (NULL: the default). */
struct memest_alloc *memest_alloc_create_with(const struct memest_alloc_conf *conf);
/* The bytes of segments the allocator may hold from now on: the device's
 * free memory when the step starts (fraction false: a cudaMalloc or a page
 * mapping past it fails), or set_per_process_memory_fraction's
 * allowed_memory_maximum (fraction true: alloc_block refuses a segment past
 * it, and garbage_collection_threshold applies). UINT64_MAX: no limit. */
void memest_alloc_set_capacity(struct memest_alloc *a, uint64_t capacity, bool fraction);

/* A device behind the model (the probe's replay under pressure): every
 * segment the model cudaMallocs is seg_alloc'd there (0; 1: the device is
 * out of memory, and the model releases and retries as PyTorch does; -1:
 * another failure, which ends the request with -4), every segment it gives
 * back is seg_free'd (0 / -1). Not with expandable segments. */
struct memest_alloc_device {
    int (*seg_alloc)(void *ctx, uint64_t bytes, uint64_t *handle);
    int (*seg_free)(void *ctx, uint64_t handle);
    void *ctx;
};
void memest_alloc_set_device(struct memest_alloc *a, const struct memest_alloc_device *d);
/* Every segment still held given back to the device. 0 / -1 (a free
 * failed). */
int memest_alloc_device_close(struct memest_alloc *a);
void memest_alloc_destroy(struct memest_alloc *a);

/* Allocates `bytes` (> 0; 0-byte requests never reach the allocator in
 * PyTorch, so the caller skips them). *handle identifies the block for
 * memest_alloc_free, *block_bytes is the block's size (what
 * memory_allocated() grows by). 0; -1 when the request exceeds 2^62 bytes or
 * the segments would exceed 2^63 - 1 bytes; -2 when the host is out of
 * memory; -3 when it does not fit the capacity after every release
 * (PyTorch's OutOfMemoryError); -4 when the device failed otherwise
 * (memest_alloc_set_device). */
int memest_alloc_malloc(struct memest_alloc *a, uint64_t bytes, uint32_t *handle,
                        uint64_t *block_bytes);
/* The same on stream `stream` (< MEMEST_ALLOC_STREAMS, else -1): the block
 * comes from, and returns to, that stream's pools. memest_alloc_malloc is
 * stream 0. */
int memest_alloc_malloc_on(struct memest_alloc *a, uint64_t bytes, unsigned stream,
                           uint32_t *handle, uint64_t *block_bytes);
/* Returns the block to its pool, merging it with free neighbours of the same
 * segment. The handle must be live. */
void memest_alloc_free(struct memest_alloc *a, uint32_t handle);
/* free() of a block record_stream marked as used by another stream: its
 * bytes leave memory_allocated() now (PyTorch's stats decrease at free),
 * the block waits for the other stream's event (insert_events) and returns
 * to its pool at the start of the next malloc (process_events), or when
 * release_cached_blocks synchronizes the events. The handle is spent. */
void memest_alloc_free_deferred(struct memest_alloc *a, uint32_t handle);
const struct memest_alloc_stats *memest_alloc_stats(const struct memest_alloc *a);
/* The live block's address. Segments are laid out one after another from
 * 2^32 in the order they are made, so a malloc that made a segment (stats'
 * `segments` grew) returns the block at its start: the segment spans
 * [address, address + the growth of `reserved`). */
uint64_t memest_alloc_addr(const struct memest_alloc *a, uint32_t handle);
/* torch.cuda.reset_peak_memory_stats(): the maxima restart from the
 * current values. */
void memest_alloc_reset_peak(struct memest_alloc *a);

/* round_size(): the request rounded up to a multiple of 512 bytes (at
 * least 512). */
uint64_t memest_alloc_round(uint64_t bytes);
/* round_size() under roundup_power2_divisions: a request above 512 x D
 * bytes (D the divisions of its size's interval, D > 1) rounds up to the
 * next of D equal steps between the powers of two around it. */
uint64_t memest_alloc_round_conf(const struct memest_alloc_conf *c, uint64_t bytes);
/* get_allocation_size(): the segment cudaMalloc'd for a rounded request
 * that no cached block can serve. */
uint64_t memest_alloc_segment_size(uint64_t rounded);

/* ---- a step's requests, replayed under capacities (alloc_replay.c) ---- */

/* One request of the step: an allocation of `bytes` (0-byte ones never
 * reach the allocator and are not recorded) on `stream`, or the free of
 * allocation id (deferred: memest_alloc_free_deferred's). */
struct memest_alloc_op {
    uint64_t bytes;
    uint32_t id;
    uint8_t free;      /* 1: the free of id */
    uint8_t stream;    /* an allocation's stream */
    uint8_t deferred;  /* a free's: record_stream's events pending */
};

struct memest_alloc_trace {
    struct memest_alloc_op *op;
    size_t n, cap;
    uint32_t nid;    /* ids are below it */
};

/* Appends one request. 0 / -1 (out of memory). */
int memest_alloc_trace_push(struct memest_alloc_trace *t, bool is_free, uint32_t id,
                            uint64_t bytes);
/* The same with an allocation's stream or a free's deferral. */
int memest_alloc_trace_push_on(struct memest_alloc_trace *t, bool is_free, uint32_t id,
                               uint64_t bytes, uint8_t stream, bool deferred);
void memest_alloc_trace_dispose(struct memest_alloc_trace *t);
/* Room for n requests up front (an upper bound of the events: cost.h), so
 * that the trace is not copied as it grows. 0 / -1. */
int memest_alloc_trace_reserve(struct memest_alloc_trace *t, uint64_t n);
/* The allocator emptied for a new replay under conf c (NULL: the default),
 * its arrays kept: a replay after the first touches no new memory. */
void memest_alloc_reset(struct memest_alloc *a, const struct memest_alloc_conf *c);

/* One replay of a trace under a capacity. */
struct memest_alloc_run {
    bool completes;          /* every request was served */
    size_t failed_at;        /* else: the request that ran out of memory */
    uint64_t need_ok, need_fail;   /* the stats' interval (alloc.h): every capacity in
                                      [need_ok, need_fail) replays the same */
    bool inexact;            /* the interval is not known (garbage collection) */
    uint64_t max_reserved, max_allocated, retries, released, segment_frees;
};
/* Replays t on a fresh allocator with conf c (NULL: the default) under
 * `capacity` (fraction: as set_per_process_memory_fraction's). 0; -1 out of
 * host memory; -2 past memest's limits (alloc.h). */
int memest_alloc_replay(const struct memest_alloc_trace *t, const struct memest_alloc_conf *c,
                        uint64_t capacity, bool fraction, struct memest_alloc_run *out);

/* Replays t with conf c on the device d (no capacity: the device's own
 * memory decides), then gives every segment back to it. 0; -1 out of host
 * memory; -2 past memest's limits; -3 the device failed. */
int memest_alloc_replay_device(const struct memest_alloc_trace *t,
                               const struct memest_alloc_conf *c,
                               const struct memest_alloc_device *d, struct memest_alloc_run *out);

/* The least capacity a trace runs in. */
struct memest_alloc_least {
    uint64_t least;      /* the smallest capacity (a multiple of 2 MiB) at which the
                            replay completes */
    uint64_t floor;      /* no capacity below it completes: the allocated peak
                            rounded up to 2 MiB */
    uint64_t top;        /* the unconstrained reserved peak: every capacity from it
                            up completes */
    bool exact;          /* every capacity below `least` was shown to fail */
    uint32_t replays;
};
/* The search: the capacity checks compare multiples of 2 MiB (segments and
 * pages are), so a capacity acts as its multiple of 2 MiB below. From the
 * floor up: a replay that fails at C fails, identically, at every capacity
 * up to the least check it failed (need_fail), which is where the next
 * replay goes; the first that completes is the least, exactly, whether or
 * not completion is monotone above it. At most max_replays replays (>= 2):
 * past half of them, a bisection between the last failure and the top
 * (exact false: a capacity it skipped may complete). */
int memest_alloc_least_capacity(const struct memest_alloc_trace *t,
                                const struct memest_alloc_conf *c, bool fraction,
                                unsigned max_replays, struct memest_alloc_least *out);
/* The same with out->top (the unconstrained reserved peak: a replay of
 * the trace without a capacity reserves it, as the simulator's did) and
 * out->floor (at most the allocated peak: any lower bound) given by the
 * caller, which saves the unconstrained replay; top 0: replayed. */
int memest_alloc_least_known(const struct memest_alloc_trace *t,
                             const struct memest_alloc_conf *c, bool fraction,
                             unsigned max_replays, struct memest_alloc_least *out);
