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
 * Only one device and one stream; no memory limit (segments are never
 * released: empty_cache() is not called during a step). */
#pragma once

#include <stdint.h>

#define MEMEST_ALLOC_MIN_BLOCK 512u                   /* kMinBlockSize */
#define MEMEST_ALLOC_SMALL_SIZE ((uint64_t)1 << 20)  /* kSmallSize: 1 MiB */
#define MEMEST_ALLOC_SMALL_BUFFER ((uint64_t)2 << 20) /* kSmallBuffer: 2 MiB */
#define MEMEST_ALLOC_LARGE_BUFFER ((uint64_t)20 << 20) /* kLargeBuffer: 20 MiB */
#define MEMEST_ALLOC_MIN_LARGE ((uint64_t)10 << 20)  /* kMinLargeAlloc: 10 MiB */
#define MEMEST_ALLOC_ROUND_LARGE ((uint64_t)2 << 20) /* kRoundLarge: 2 MiB */

struct memest_alloc_stats {
    uint64_t allocated;      /* live block bytes: memory_allocated() */
    uint64_t reserved;       /* segment bytes: memory_reserved() */
    uint64_t requested;      /* live bytes as requested (before rounding) */
    uint64_t max_allocated;  /* since creation or the last reset_peak */
    uint64_t max_reserved;
    uint64_t segments;       /* cudaMalloc calls (segments held) */
    uint64_t live_blocks;
};

struct memest_alloc;

/* A new, empty allocator; NULL when out of memory. */
struct memest_alloc *memest_alloc_create(void);
void memest_alloc_destroy(struct memest_alloc *a);

/* Allocates `bytes` (> 0; 0-byte requests never reach the allocator in
 * PyTorch, so the caller skips them). *handle identifies the block for
 * memest_alloc_free, *block_bytes is the block's size (what
 * memory_allocated() grows by). 0; -1 when the request exceeds 2^62 bytes or
 * the segments would exceed 2^63 - 1 bytes; -2 when the host is out of
 * memory. */
int memest_alloc_malloc(struct memest_alloc *a, uint64_t bytes, uint32_t *handle,
                        uint64_t *block_bytes);
/* Returns the block to its pool, merging it with free neighbours of the same
 * segment. The handle must be live. */
void memest_alloc_free(struct memest_alloc *a, uint32_t handle);
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
/* get_allocation_size(): the segment cudaMalloc'd for a rounded request
 * that no cached block can serve. */
uint64_t memest_alloc_segment_size(uint64_t rounded);
