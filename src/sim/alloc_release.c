/* alloc_release.c - what the caching allocator gives back to the device
 * when a segment does not fit: PyTorch 2.6 c10/cuda/CUDACachingAllocator.cpp,
 * DeviceCachingAllocator::release_available_cached_blocks,
 * release_cached_blocks (release_blocks, release_block, unmap_block) and
 * garbage_collect_cached_blocks.
 *
 *   - release_available_cached_blocks() does nothing without
 *     max_split_size_mb. With it, in the request's pool of the request's
 *     stream (its lower_bound key carries p.stream()): the smallest free
 *     block of at least max(request, max_split_size) goes back (cudaFree),
 *     else the oversize free blocks from the largest down until as many
 *     bytes went back (those freed stay freed when they do not reach it).
 *     An oversize block is never split (should_split), so each is a whole
 *     segment. Expandable blocks are skipped, as newer PyTorch skips them
 *     (2.6 asserts on one: a crash memest does not reproduce).
 *   - release_cached_blocks(): synchronize_and_free_events() first (the
 *     blocks freed with record_stream events pending become free), then
 *     every free block that is a whole segment (no neighbour) in the large
 *     pool, then the small one, every stream's, is cudaFree'd;
 *     with expandable segments every free block's whole pages are
 *     unmapped. Free space inside a segment that still holds a live block
 *     stays reserved.
 *   - garbage_collect_cached_blocks(), only under a memory fraction with a
 *     garbage_collection_threshold, when a request found no cached block:
 *     while reserved memory is above threshold x allowed, the large pool's
 *     (every stream's) whole free segments at least as old as their mean age (in
 *     get_free_block calls on the pool since each was cached) go back,
 *     pass after pass until enough went back or none did. */
#include <stdlib.h>

#include "alloc_internal.h"

void alloc_release_block(struct memest_alloc *a, uint32_t x)
{
    uint64_t size = a->b[x].size;
    if (a->dev.seg_alloc && a->dev.seg_free(a->dev.ctx, alloc_devseg_take(a, a->b[x].addr)) != 0)
        a->st.device_errors++;
    alloc_pool_erase(a, x);
    a->st.reserved -= size;
    a->st.released += size;
    a->st.segment_frees++;
    alloc_drop_block(a, x);
}

static bool whole(const struct memest_alloc *a, uint32_t x)
{
    return a->b[x].prev == NIL && a->b[x].next == NIL;
}

bool alloc_release_available(struct memest_alloc *a, int pool, uint64_t size)
{
    uint64_t max_split = a->conf.max_split;
    if (!max_split)
        return false;
    uint64_t key = size < max_split ? max_split : size;
    uint32_t it = alloc_lower_bound(a, pool, key);
    if (it != NIL && !a->b[it].expandable) {
        alloc_release_block(a, it);
        return true;
    }
    /* no single block is large enough: the largest ones, downwards */
    it = it == NIL ? alloc_largest(a, pool) : alloc_pred(a, it);
    uint64_t total = 0;
    while (it != NIL && total < key && a->b[it].size >= max_split) {
        uint32_t cur = it;
        it = alloc_pred(a, cur);
        if (!a->b[cur].expandable && whole(a, cur)) {
            total += a->b[cur].size;
            alloc_release_block(a, cur);
        }
    }
    return total >= key;
}

/* The free mapped blocks of every stream's pool of one kind (PyTorch's
 * BlockPool holds every stream's), listed first: releasing changes the
 * list. -1: out of host memory. */
static int list_free(struct memest_alloc *a, int kind, uint32_t *n)
{
    *n = 0;
    for (unsigned s = 0; s < MEMEST_ALLOC_STREAMS; s++)
        for (uint32_t x = a->pool[POOL_OF(s, kind)].free_head; x != NIL; x = a->b[x].fnext) {
            if (*n == a->capscratch) {
                uint32_t c = a->capscratch ? a->capscratch * 2 : 256;
                uint32_t *l = realloc(a->scratch, sizeof *l * c);
                if (!l)
                    return -1;
                a->scratch = l;
                a->capscratch = c;
            }
            a->scratch[(*n)++] = x;
        }
    return 0;
}

int alloc_release_cached(struct memest_alloc *a)
{
    static const int order[2] = {POOL_LARGE, POOL_SMALL};
    alloc_process_events(a);   /* synchronize_and_free_events() */
    for (int k = 0; k < 2; k++) {
        uint32_t n;
        if (list_free(a, order[k], &n) != 0)
            return -1;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t x = a->scratch[i];
            if (a->b[x].expandable) {
                if (alloc_unmap_block(a, x) != 0)
                    return -1;
            } else if (whole(a, x)) {
                alloc_release_block(a, x);
            }
        }
    }
    return 0;
}

void alloc_garbage_collect(struct memest_alloc *a)
{
    /* the threshold is a fraction of the capacity: the capacities that
     * replay alike are not the interval the checks give */
    a->st.inexact = true;
    uint64_t threshold = (uint64_t)(a->conf.gc_threshold * (double)a->capacity);
    if (a->st.reserved <= threshold)
        return;
    uint64_t target = a->st.reserved - threshold, reclaimed = 0, total_age = 0;
    uint64_t calls = a->calls[POOL_LARGE];
    int64_t count = 0;
    for (unsigned s = 0; s < MEMEST_ALLOC_STREAMS; s++)
        for (uint32_t x = a->pool[POOL_OF(s, POOL_LARGE)].free_head; x != NIL; x = a->b[x].fnext)
            if (whole(a, x)) {
                total_age += (uint32_t)(calls - a->b[x].gc_base);
                count++;
            }
    bool freed = true;
    while (reclaimed < target && freed && count > 0) {
        double age = (double)total_age / (double)count;
        freed = false;
        uint32_t n;
        if (list_free(a, POOL_LARGE, &n) != 0)
            return;   /* out of host memory: no collection, which PyTorch may skip too */
        for (uint32_t i = 0; i < n; i++) {
            uint32_t x = a->scratch[i];
            uint64_t gc = (uint32_t)(calls - a->b[x].gc_base);
            if (!whole(a, x) || a->b[x].expandable || (double)gc < age)
                continue;
            freed = true;
            reclaimed += a->b[x].size;
            total_age -= gc;
            count--;
            alloc_release_block(a, x);
        }
    }
}
