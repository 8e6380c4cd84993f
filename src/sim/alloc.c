/* alloc.c - PyTorch's CUDA caching allocator, modelled block by block.
 *
 * The rules, as c10/cuda/CUDACachingAllocator.cpp implements them (1.13 and
 * 2.x; default PYTORCH_CUDA_ALLOC_CONF: no max_split_size_mb, no
 * roundup_power2_divisions, no expandable_segments, no garbage collection):
 *   - round_size(): every request is rounded up to a multiple of
 *     kMinBlockSize = 512 bytes (a request below 512 bytes takes 512);
 *   - get_pool(): a rounded request of at most kSmallSize = 1 MiB is served
 *     from the small pool, anything larger from the large pool;
 *   - get_free_block(): best fit: the pool is a std::set ordered by
 *     (stream, size, address) and lower_bound picks the smallest cached
 *     block at least as large as the request, the lowest address on ties;
 *   - alloc_block() / get_allocation_size(): when no cached block fits, one
 *     cudaMalloc'd segment: kSmallBuffer = 2 MiB for the small pool,
 *     kLargeBuffer = 20 MiB for requests under kMinLargeAlloc = 10 MiB,
 *     else the request rounded up to kRoundLarge = 2 MiB;
 *   - should_split(): the block is split when the remainder is >= 512 bytes
 *     (small pool) or > kSmallSize (large pool); otherwise the whole block
 *     is handed out, and memory_allocated() grows by the whole block
 *     (alloc_found_block() adds block->size to allocated_bytes);
 *   - free() / free_block() / try_merge_blocks(): a freed block merges with
 *     its free neighbours (prev/next), which exist only within the same
 *     segment, so segments never merge; the merged block returns to the
 *     pool;
 *   - segments are released only by empty_cache() or when cudaMalloc fails
 *     (release_cached_blocks()); neither happens here, so reserved memory
 *     only grows.
 * memory_allocated() is the sum of live block sizes, memory_reserved() the
 * sum of segment sizes; max_* are their high-water marks since
 * reset_peak_memory_stats().
 *
 * Data structures: blocks live in one array (indices, recycled). The large
 * pool's free blocks form a treap keyed by (size, address): best fit,
 * insertion and removal in O(log n). The small pool's (at most 2 MiB, a
 * multiple of 512) sit in 4096 exact-size bins, each a treap by address,
 * with a bitmap of the non-empty bins: best fit is the first set bit at or
 * above the request's bin and that bin's lowest address. */
#include "memest/alloc.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "memest/checked.h"

#define NIL UINT32_MAX
#define SMALL_BINS 4096   /* small-pool blocks: 512 B .. 2 MiB */

struct blk {
    uint64_t addr, size, req;
    uint32_t prev, next;    /* neighbours within the segment */
    uint32_t left, right;   /* treap children (free blocks only) */
    uint32_t prio;
    uint8_t small;          /* pool */
    uint8_t allocated;
};

struct memest_alloc {
    struct blk *b;
    uint32_t n, cap;
    uint32_t *spare;        /* recycled block indices */
    uint32_t nspare, capspare;
    uint32_t large;         /* treap root of the large pool's free blocks */
    uint32_t bin[SMALL_BINS];   /* small pool: a treap per size (512-byte steps) */
    uint64_t binmap[SMALL_BINS / 64];
    uint64_t binsum;        /* bit w: binmap[w] is not 0 */
    uint64_t next_addr;
    uint32_t rng;
    struct memest_alloc_stats st;
};

uint64_t memest_alloc_round(uint64_t bytes)
{
    if (bytes < MEMEST_ALLOC_MIN_BLOCK)
        return MEMEST_ALLOC_MIN_BLOCK;
    return (bytes + MEMEST_ALLOC_MIN_BLOCK - 1) / MEMEST_ALLOC_MIN_BLOCK * MEMEST_ALLOC_MIN_BLOCK;
}

uint64_t memest_alloc_segment_size(uint64_t rounded)
{
    if (rounded <= MEMEST_ALLOC_SMALL_SIZE)
        return MEMEST_ALLOC_SMALL_BUFFER;
    if (rounded < MEMEST_ALLOC_MIN_LARGE)
        return MEMEST_ALLOC_LARGE_BUFFER;
    return (rounded + MEMEST_ALLOC_ROUND_LARGE - 1) / MEMEST_ALLOC_ROUND_LARGE *
           MEMEST_ALLOC_ROUND_LARGE;
}

struct memest_alloc *memest_alloc_create(void)
{
    struct memest_alloc *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->large = NIL;
    memset(a->bin, 0xFF, sizeof a->bin);   /* NIL */
    a->rng = 2463534242u;
    a->next_addr = (uint64_t)1 << 32;
    return a;
}

void memest_alloc_destroy(struct memest_alloc *a)
{
    if (!a)
        return;
    free(a->b);
    free(a->spare);
    free(a);
}

const struct memest_alloc_stats *memest_alloc_stats(const struct memest_alloc *a) { return &a->st; }

uint64_t memest_alloc_addr(const struct memest_alloc *a, uint32_t handle) { return a->b[handle].addr; }

void memest_alloc_reset_peak(struct memest_alloc *a)
{
    a->st.max_allocated = a->st.allocated;
    a->st.max_reserved = a->st.reserved;
}

/* ---- the treap of free blocks ---- */

static bool key_less(const struct blk *x, const struct blk *y)
{
    return x->size < y->size || (x->size == y->size && x->addr < y->addr);
}

/* The treap's operations are loops over links (no recursion): each walks
 * one root-to-leaf path. */

/* Splits t into l (keys < key of k) and r (keys >= it). */
static void split(struct blk *b, uint32_t t, const struct blk *k, uint32_t *l, uint32_t *r)
{
    while (t != NIL) {
        if (key_less(&b[t], k)) {
            *l = t;
            l = &b[t].right;
            t = b[t].right;
        } else {
            *r = t;
            r = &b[t].left;
            t = b[t].left;
        }
    }
    *l = *r = NIL;
}

/* Joins l and r, every key of l below every key of r. */
static uint32_t merge(struct blk *b, uint32_t l, uint32_t r)
{
    uint32_t root, *link = &root;
    while (l != NIL && r != NIL) {
        if (b[l].prio > b[r].prio) {
            *link = l;
            link = &b[l].right;
            l = b[l].right;
        } else {
            *link = r;
            link = &b[r].left;
            r = b[r].left;
        }
    }
    *link = l != NIL ? l : r;
    return root;
}

/* x goes where its priority puts it on its key's path; the subtree it
 * displaces splits around it. */
static void insert(struct blk *b, uint32_t *root, uint32_t x)
{
    uint32_t *link = root;
    while (*link != NIL && b[*link].prio >= b[x].prio)
        link = key_less(&b[x], &b[*link]) ? &b[*link].left : &b[*link].right;
    split(b, *link, &b[x], &b[x].left, &b[x].right);
    *link = x;
}

/* x (in the treap: keys are unique) is replaced by its children merged. */
static void erase(struct blk *b, uint32_t *root, uint32_t x)
{
    uint32_t *link = root;
    while (*link != x)
        link = key_less(&b[x], &b[*link]) ? &b[*link].left : &b[*link].right;
    *link = merge(b, b[x].left, b[x].right);
}

/* The smallest free block of at least `size` bytes (lowest address among
 * equal sizes) in a treap, or NIL. */
static uint32_t lower_bound(const struct blk *b, uint32_t t, uint64_t size)
{
    uint32_t best = NIL;
    while (t != NIL) {
        if (b[t].size >= size) {
            best = t;
            t = b[t].left;
        } else {
            t = b[t].right;
        }
    }
    return best;
}

static uint32_t bin_of(uint64_t size) { return (uint32_t)(size / MEMEST_ALLOC_MIN_BLOCK - 1); }

/* Best fit in the small pool: the first non-empty bin at or above the
 * request's, its lowest address. */
static uint32_t small_fit(const struct memest_alloc *a, uint64_t size)
{
    uint32_t c = bin_of(size), w = c / 64;
    uint64_t m = a->binmap[w] & (~(uint64_t)0 << (c % 64));
    if (!m) {
        uint64_t above = w + 1 < 64 ? a->binsum & (~(uint64_t)0 << (w + 1)) : 0;
        if (!above)
            return NIL;
        w = (uint32_t)__builtin_ctzll(above);
        m = a->binmap[w];
    }
    uint32_t t = a->bin[w * 64 + (uint32_t)__builtin_ctzll(m)];
    while (a->b[t].left != NIL)
        t = a->b[t].left;
    return t;
}

static uint32_t *root_of(struct memest_alloc *a, uint32_t x)
{
    return a->b[x].small ? &a->bin[bin_of(a->b[x].size)] : &a->large;
}

static void pool_insert(struct memest_alloc *a, uint32_t x)
{
    a->b[x].left = a->b[x].right = NIL;
    a->rng ^= a->rng << 13;
    a->rng ^= a->rng >> 17;
    a->rng ^= a->rng << 5;
    a->b[x].prio = a->rng;
    uint32_t *root = root_of(a, x);
    insert(a->b, root, x);
    if (a->b[x].small) {
        uint32_t c = bin_of(a->b[x].size);
        a->binmap[c / 64] |= (uint64_t)1 << (c % 64);
        a->binsum |= (uint64_t)1 << (c / 64);
    }
}

static void pool_erase(struct memest_alloc *a, uint32_t x)
{
    uint32_t *root = root_of(a, x);
    erase(a->b, root, x);
    if (a->b[x].small && *root == NIL) {
        uint32_t c = bin_of(a->b[x].size);
        a->binmap[c / 64] &= ~((uint64_t)1 << (c % 64));
        if (!a->binmap[c / 64])
            a->binsum &= ~((uint64_t)1 << (c / 64));
    }
}

/* ---- blocks ---- */

static int new_block(struct memest_alloc *a, uint32_t *out)
{
    if (a->nspare) {
        *out = a->spare[--a->nspare];
        return 0;
    }
    if (a->n == a->cap) {
        uint32_t ncap = a->cap ? a->cap * 2 : 256;
        if (ncap <= a->cap || ncap >= NIL)
            return -1;
        struct blk *nb = realloc(a->b, sizeof *nb * ncap);
        if (!nb)
            return -1;
        a->b = nb;
        a->cap = ncap;
    }
    *out = a->n++;
    return 0;
}

static int drop_block(struct memest_alloc *a, uint32_t x)
{
    if (a->nspare == a->capspare) {
        uint32_t ncap = a->capspare ? a->capspare * 2 : 64;
        uint32_t *ns = realloc(a->spare, sizeof *ns * ncap);
        if (!ns)
            return -1;
        a->spare = ns;
        a->capspare = ncap;
    }
    a->spare[a->nspare++] = x;
    return 0;
}

int memest_alloc_malloc(struct memest_alloc *a, uint64_t bytes, uint32_t *handle,
                        uint64_t *block_bytes)
{
    if (bytes > ((uint64_t)1 << 62))
        return -1;
    uint64_t size = memest_alloc_round(bytes);
    uint8_t small = size <= MEMEST_ALLOC_SMALL_SIZE;
    uint32_t x = small ? small_fit(a, size) : lower_bound(a->b, a->large, size);
    if (x != NIL) {
        pool_erase(a, x);
    } else {
        uint64_t seg = memest_alloc_segment_size(size);
        /* reserved bounds every sum of live blocks: keeping it within
         * 2^63 - 1 keeps all of them from wrapping (issue 6) */
        if (a->next_addr > MEMEST_SIZE_MAX - seg)
            return -1;
        if (new_block(a, &x) != 0)
            return -2;
        a->b[x] = (struct blk){.addr = a->next_addr, .size = seg, .prev = NIL, .next = NIL,
                               .small = small};
        a->next_addr += seg;
        a->st.reserved += seg;
        a->st.segments++;
        if (a->st.reserved > a->st.max_reserved)
            a->st.max_reserved = a->st.reserved;
    }
    uint64_t remaining = a->b[x].size - size;
    bool split_it = small ? remaining >= MEMEST_ALLOC_MIN_BLOCK : remaining > MEMEST_ALLOC_SMALL_SIZE;
    if (split_it) {
        uint32_t r;
        if (new_block(a, &r) != 0) {
            pool_insert(a, x);
            return -2;
        }
        struct blk *bx = &a->b[x];
        a->b[r] = (struct blk){.addr = bx->addr + size, .size = remaining, .prev = x,
                               .next = bx->next, .small = small};
        if (bx->next != NIL)
            a->b[bx->next].prev = r;
        bx->next = r;
        bx->size = size;
        pool_insert(a, r);
    }
    struct blk *bx = &a->b[x];
    bx->allocated = 1;
    bx->req = bytes;
    a->st.allocated += bx->size;
    a->st.requested += bytes;
    a->st.live_blocks++;
    if (a->st.allocated > a->st.max_allocated)
        a->st.max_allocated = a->st.allocated;
    *handle = x;
    *block_bytes = bx->size;
    return 0;
}

/* try_merge_blocks(dst, src): src is free and adjacent in the segment. */
static void absorb(struct memest_alloc *a, uint32_t dst, uint32_t src)
{
    struct blk *d = &a->b[dst], *s = &a->b[src];
    pool_erase(a, src);
    if (d->prev == src) {
        d->addr = s->addr;
        d->prev = s->prev;
        if (d->prev != NIL)
            a->b[d->prev].next = dst;
    } else {
        d->next = s->next;
        if (d->next != NIL)
            a->b[d->next].prev = dst;
    }
    d->size += s->size;
    /* a failed push only leaks an index, never a byte of the model */
    (void)drop_block(a, src);
}

void memest_alloc_free(struct memest_alloc *a, uint32_t h)
{
    struct blk *x = &a->b[h];
    x->allocated = 0;
    a->st.allocated -= x->size;
    a->st.requested -= x->req;
    a->st.live_blocks--;
    uint32_t p = x->prev, n = x->next;
    if (p != NIL && !a->b[p].allocated)
        absorb(a, h, p);
    if (n != NIL && !a->b[n].allocated)
        absorb(a, h, n);
    pool_insert(a, h);
}
