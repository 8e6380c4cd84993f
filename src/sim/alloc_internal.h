/* alloc_internal.h - the caching-allocator model's state, shared by its
 * files: alloc.c (blocks, pools, malloc and free), alloc_release.c (what
 * PyTorch frees when a cudaMalloc fails: the two release stages and the
 * garbage collection) and alloc_expand.c (expandable segments). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/alloc.h"

#define NIL UINT32_MAX
#define SMALL_BINS 4096   /* small-pool blocks: 512 B .. 2 MiB */
#define POOL_SMALL 0
#define POOL_LARGE 1
/* The pools: one per (stream, small/large), index stream * 2 + kind, as
 * PyTorch's BlockPool std::sets order their blocks by (stream, size,
 * address) and get_free_block looks only at the request's stream. */
#define NPOOLS (2 * (int)MEMEST_ALLOC_STREAMS)
#define POOL_KIND(p) ((p) & 1)
#define POOL_OF(stream, kind) ((int)(stream) * 2 + (kind))

struct blk {
    uint64_t addr, size, req;
    uint32_t gc_base;       /* the pool's get_free_block calls when it was cached
                               (modulo 2^32: ages are differences) */
    uint32_t prev, next;    /* neighbours within the segment */
    uint32_t left, right;   /* treap children (free mapped blocks only) */
    uint32_t fprev, fnext;  /* the pool's list of free mapped blocks; for an
                               unmapped block, the pool's unmapped list */
    uint32_t prio;
    uint8_t pool;           /* POOL_OF(stream, POOL_SMALL or POOL_LARGE) */
    uint8_t allocated;      /* live, or freed with its record_stream events pending */
    uint8_t pending;        /* freed, waiting for its events (memest_alloc_free_deferred);
                               linked through fnext from memest_alloc.pending_head */
    uint8_t mapped;         /* expandable segments: its pages are mapped (else 1) */
    uint8_t expandable;     /* part of an expandable segment */
};

struct pool {
    uint32_t root;          /* treap of free mapped blocks by (size, address) */
    uint32_t free_head;     /* every free mapped block, unordered */
    uint32_t unmapped_head; /* expandable: the unmapped blocks by address */
    uint64_t es_base;       /* expandable: the segment's start (0: none yet) */
};

struct memest_alloc {
    struct blk *b;
    uint32_t n, cap;
    uint32_t *spare;        /* recycled block indices */
    uint32_t nspare, capspare;
    struct pool pool[NPOOLS];
    uint64_t calls[2];      /* get_free_blocks_call_count of the small and the large
                               BlockPool (every stream's blocks in one set) */
    uint32_t pending_head;  /* the blocks freed with events pending (NIL: none) */
    bool bins;              /* stream 0's small pool's free blocks in exact-size bins
                               (no expandable segments: every small block is at
                               most 2 MiB) */
    uint32_t bin[SMALL_BINS];   /* small pool: a treap per size (512-byte steps) */
    uint64_t binmap[SMALL_BINS / 64];
    uint64_t binsum;        /* bit w: binmap[w] is not 0 */
    uint64_t next_addr;
    uint32_t rng;
    struct memest_alloc_conf conf;
    uint64_t capacity;      /* bytes the segments may take (UINT64_MAX: no limit) */
    bool fraction;          /* the limit is set_per_process_memory_fraction's */
    uint32_t *scratch;      /* release_cached_blocks' list */
    uint32_t capscratch;
    struct memest_alloc_stats st;
    struct memest_alloc_device dev;   /* seg_alloc NULL: no device */
    struct devseg { uint64_t addr, handle; } *devseg;   /* on a device: each segment
                                                           held, by its start */
    uint32_t ndevseg, capdevseg;
};

/* alloc.c */
int alloc_new_block(struct memest_alloc *a, uint32_t *out);
void alloc_drop_block(struct memest_alloc *a, uint32_t x);
void alloc_pool_insert(struct memest_alloc *a, uint32_t x);
void alloc_pool_erase(struct memest_alloc *a, uint32_t x);
/* try_merge_blocks(dst, src): src, free and adjacent in the segment, mapped
 * as dst is, joins dst (src leaves the free pool or the unmapped list). */
void alloc_absorb(struct memest_alloc *a, uint32_t dst, uint32_t src);
/* x leaves its pool's list of unmapped blocks. */
void alloc_unmapped_unlink(struct memest_alloc *a, uint32_t x);
/* In the pool's treap: the smallest block of at least `size` bytes (lowest
 * address), the next and the previous block in (size, address) order, the
 * largest; NIL for none. */
uint32_t alloc_lower_bound(const struct memest_alloc *a, int pool, uint64_t size);
uint32_t alloc_succ(const struct memest_alloc *a, uint32_t x);
uint32_t alloc_pred(const struct memest_alloc *a, uint32_t x);
uint32_t alloc_largest(const struct memest_alloc *a, int pool);
/* A capacity check: `need` bytes of segments would be reserved. true when
 * they fit; the outcome narrows the capacities that replay alike. */
bool alloc_capacity_ok(struct memest_alloc *a, uint64_t need);

/* process_events() / synchronize_and_free_events(): every block freed
 * with events pending becomes free (free_block). */
void alloc_process_events(struct memest_alloc *a);

/* The device's handle of the segment starting at addr, off the table. */
uint64_t alloc_devseg_take(struct memest_alloc *a, uint64_t addr);

/* alloc_release.c */
/* release_available_cached_blocks(): true when it freed enough oversize
 * blocks (max_split_size_mb only). */
bool alloc_release_available(struct memest_alloc *a, int pool, uint64_t size);
/* release_cached_blocks(): the pending events synchronized (their blocks
 * freed), then every free whole segment (expandable: every free page) of
 * every stream's pools back to the device. -1: out of host memory. */
int alloc_release_cached(struct memest_alloc *a);
/* garbage_collect_cached_blocks() */
void alloc_garbage_collect(struct memest_alloc *a);
/* release_block(): a free whole segment back to the device. */
void alloc_release_block(struct memest_alloc *a, uint32_t x);

/* alloc_expand.c */
/* try_allocate_expandable_block(): a free mapped block of at least `size`
 * bytes, out of the pool's pool (NIL when the pages cannot be mapped); -1
 * when out of host memory. */
int alloc_expand_block(struct memest_alloc *a, int pool, uint64_t size, uint32_t *out);
/* unmap_block(): the whole pages inside the free block x unmapped. -1: out
 * of host memory. */
int alloc_unmap_block(struct memest_alloc *a, uint32_t x);
