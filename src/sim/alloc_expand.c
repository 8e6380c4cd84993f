/* alloc_expand.c - expandable segments (PYTORCH_CUDA_ALLOC_CONF=
 * expandable_segments:True), as PyTorch 2.6 c10/cuda/CUDACachingAllocator.cpp
 * runs them: ExpandableSegment (map, unmap), find_expandable_block,
 * try_allocate_expandable_block, map_block, unmap_block.
 *
 * Each pool (small, large) of each stream has one segment (PyTorch keeps
 * an ExpandableSegment per (stream, pool): find_expandable_block's
 * `segment->owning_stream() == p.stream()` test): a range of
 * virtual addresses (1 1/8 the card's memory in PyTorch; here 2^46 bytes,
 * which no capacity reaches) whose pages are mapped as blocks need them:
 * 2 MiB pages for the small pool (kSmallBuffer), 20 MiB for the large one
 * (kLargeBuffer). Reserved memory is the mapped pages.
 *   - find_expandable_block(): the unmapped blocks by address, the lowest
 *     first; each, or the free mapped block just before it, starts a
 *     candidate when the free and unmapped blocks from there on hold the
 *     request;
 *   - try_allocate_expandable_block(): the candidate's unmapped pages are
 *     mapped (the request rounded up to whole pages), one unmapped block
 *     after another, each merging with its free mapped neighbours; a page
 *     that does not fit the device fails the request (pages mapped before
 *     it stay mapped);
 *   - free blocks stay mapped: pages are unmapped only by
 *     release_cached_blocks() (emptyCache, or a request that does not fit),
 *     the whole pages inside each free block (unmap_block), its partial
 *     pages at either end staying free and mapped.
 * A free block merges with a neighbour only when both are mapped or both
 * are not (try_merge_blocks). Under set_per_process_memory_fraction the
 * fraction check comes first and uses the request's get_allocation_size()
 * (alloc.c: alloc_block); mapping then never fails. */
#include "alloc_internal.h"

#define ES_SPAN ((uint64_t)1 << 46)

static uint64_t page_of(int pool)
{
    return POOL_KIND(pool) == POOL_SMALL ? MEMEST_ALLOC_SMALL_BUFFER : MEMEST_ALLOC_LARGE_BUFFER;
}

/* ---- the pool's unmapped blocks, by address ---- */

/* x goes after `after` (NIL: first). */
static void unmapped_link(struct memest_alloc *a, uint32_t x, uint32_t after)
{
    struct blk *b = &a->b[x];
    struct pool *p = &a->pool[b->pool];
    b->fprev = after;
    b->fnext = after == NIL ? p->unmapped_head : a->b[after].fnext;
    if (b->fnext != NIL)
        a->b[b->fnext].fprev = x;
    if (after == NIL)
        p->unmapped_head = x;
    else
        a->b[after].fnext = x;
}

/* The nearest unmapped block before x in its segment, or NIL. */
static uint32_t unmapped_before(const struct memest_alloc *a, uint32_t x)
{
    for (uint32_t y = a->b[x].prev; y != NIL; y = a->b[y].prev)
        if (!a->b[y].mapped)
            return y;
    return NIL;
}

/* A new block after `at` in the segment (at's next follows it). -1: out of
 * host memory. */
static int splice_after(struct memest_alloc *a, uint32_t at, struct blk init, uint32_t *out)
{
    uint32_t y;
    if (alloc_new_block(a, &y) != 0)
        return -1;
    init.prev = at;
    init.next = a->b[at].next;
    a->b[y] = init;
    if (init.next != NIL)
        a->b[init.next].prev = y;
    a->b[at].next = y;
    *out = y;
    return 0;
}

static bool same_free(const struct memest_alloc *a, uint32_t x, bool mapped)
{
    return x != NIL && !a->b[x].allocated && a->b[x].mapped == mapped;
}

/* ---- map and unmap ---- */

/* map_block(): the first `size` bytes (rounded up to pages) of the
 * unmapped block x mapped; the merged free block into *out. 0 (*out NIL:
 * the pages do not fit), -1 out of host memory. */
static int map_block(struct memest_alloc *a, uint32_t x, uint64_t size, uint32_t *out)
{
    *out = NIL;
    struct blk *b = &a->b[x];
    uint64_t page = page_of(b->pool);
    uint64_t len = (size + page - 1) / page * page;
    if (len > b->size)
        len = b->size;
    if (!a->fraction && !alloc_capacity_ok(a, a->st.reserved + len))
        return 0;
    if (len < b->size) {
        uint32_t rest;
        struct blk init = {.addr = b->addr + len, .size = b->size - len, .pool = b->pool,
                           .mapped = 0, .expandable = 1};
        if (splice_after(a, x, init, &rest) != 0)
            return -1;
        unmapped_link(a, rest, x);
        b = &a->b[x];
        b->size = len;
    }
    alloc_unmapped_unlink(a, x);
    b->mapped = 1;
    a->st.reserved += len;
    if (a->st.reserved > a->st.max_reserved)
        a->st.max_reserved = a->st.reserved;
    if (same_free(a, a->b[x].prev, true))
        alloc_absorb(a, x, a->b[x].prev);
    if (same_free(a, a->b[x].next, true))
        alloc_absorb(a, x, a->b[x].next);
    alloc_pool_insert(a, x);
    *out = x;
    return 0;
}

/* The pool's segment: one unmapped block over the whole span. */
static int make_segment(struct memest_alloc *a, int pool)
{
    uint32_t x;
    if (alloc_new_block(a, &x) != 0)
        return -1;
    uint64_t base = (uint64_t)(pool + 1) << 47;
    a->b[x] = (struct blk){.addr = base, .size = ES_SPAN, .prev = NIL, .next = NIL,
                           .pool = (uint8_t)pool, .mapped = 0, .expandable = 1};
    a->pool[pool].es_base = base;
    unmapped_link(a, x, NIL);
    a->st.segments++;
    return 0;
}

/* find_expandable_block(): where a request of `size` bytes can grow. */
static uint32_t find_candidate(const struct memest_alloc *a, int pool, uint64_t size)
{
    for (uint32_t u = a->pool[pool].unmapped_head; u != NIL; u = a->b[u].fnext) {
        uint32_t c = u;
        if (a->b[u].prev != NIL && !a->b[a->b[u].prev].allocated)
            c = a->b[u].prev;
        uint64_t room = 0;
        for (uint32_t y = c; y != NIL && room < size && !a->b[y].allocated; y = a->b[y].next)
            room += a->b[y].size;
        if (room >= size)
            return c;
    }
    return NIL;
}

int alloc_expand_block(struct memest_alloc *a, int pool, uint64_t size, uint32_t *out)
{
    *out = NIL;
    if (a->pool[pool].es_base == 0 && make_segment(a, pool) != 0)
        return -1;
    uint32_t c = find_candidate(a, pool, size);
    if (c == NIL)
        return 0;   /* 2^46 bytes of addresses in use: no capacity gets here */
    if (!a->b[c].mapped) {
        uint64_t want = a->b[c].size < size ? a->b[c].size : size;
        if (map_block(a, c, want, &c) != 0)
            return -1;
        if (c == NIL)
            return 0;
    }
    while (a->b[c].size < size) {
        uint32_t nx = a->b[c].next;
        uint64_t rest = size - a->b[c].size;
        if (map_block(a, nx, rest < a->b[nx].size ? rest : a->b[nx].size, &c) != 0)
            return -1;
        if (c == NIL)
            return 0;
    }
    alloc_pool_erase(a, c);
    *out = c;
    return 0;
}

int alloc_unmap_block(struct memest_alloc *a, uint32_t x)
{
    struct blk *b = &a->b[x];
    uint64_t page = page_of(b->pool), base = a->pool[b->pool].es_base;
    uint64_t begin = base + (b->addr - base + page - 1) / page * page;
    uint64_t end = base + (b->addr + b->size - base) / page * page;
    if (begin >= end)
        return 0;
    alloc_pool_erase(a, x);
    struct blk piece = {.pool = b->pool, .mapped = 1, .expandable = 1};
    if (begin > b->addr) {
        /* the partial page before: a free mapped block of its own */
        uint32_t y, p = b->prev;
        if (alloc_new_block(a, &y) != 0)
            return -1;
        b = &a->b[x];
        piece.addr = b->addr;
        piece.size = begin - b->addr;
        piece.prev = p;
        piece.next = x;
        a->b[y] = piece;
        if (p != NIL)
            a->b[p].next = y;
        b->prev = y;
        alloc_pool_insert(a, y);
    }
    if (b->addr + b->size > end) {
        uint32_t y;
        piece.addr = end;
        piece.size = b->addr + b->size - end;
        if (splice_after(a, x, piece, &y) != 0)
            return -1;
        alloc_pool_insert(a, y);
    }
    b = &a->b[x];
    b->addr = begin;
    b->size = end - begin;
    b->mapped = 0;
    a->st.reserved -= end - begin;
    a->st.released += end - begin;
    unmapped_link(a, x, unmapped_before(a, x));
    if (same_free(a, a->b[x].prev, false))
        alloc_absorb(a, x, a->b[x].prev);
    if (same_free(a, a->b[x].next, false))
        alloc_absorb(a, x, a->b[x].next);
    return 0;
}
