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
 *     block at least as large as the request, the lowest address on ties,
 *     of the request's stream only (the key's stream is the request's, and
 *     a block of another stream is never returned): each stream has its
 *     pools (alloc_internal.h: POOL_OF);
 *   - free() of a block with stream_uses (record_stream) records an event
 *     on each of those streams (insert_events) and caches the block only
 *     when they completed: process_events() at the next malloc (memest's
 *     assumption: every such event has completed by then);
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
 *     (release_cached_blocks()): the second happens only under a capacity
 *     (alloc_release.c); without one, reserved memory only grows;
 *   - with PYTORCH_CUDA_ALLOC_CONF (alloc_conf.h): round_size() under
 *     roundup_power2_divisions (roundup_power2_next_division()); with
 *     max_split_size_mb, get_free_block() gives no oversize block (at least
 *     max_split_size) to a smaller request, nor one more than
 *     max_non_split_rounding_mb larger to an oversize one, and an oversize
 *     block is never split; expandable segments: alloc_expand.c.
 * The source followed is c10/cuda/CUDACachingAllocator.cpp of PyTorch 2.6
 * (DeviceCachingAllocator: malloc, get_free_block, alloc_block,
 * should_split, alloc_found_block, free_block, try_merge_blocks); the
 * functions are named, not their lines, as the tagged file could not be
 * fetched here (pytorch/pytorch is 4 GB).
 * memory_allocated() is the sum of live block sizes, memory_reserved() the
 * sum of segment sizes; max_* are their high-water marks since
 * reset_peak_memory_stats().
 *
 * Data structures: blocks live in one array (indices, recycled). The large
 * pool's free blocks form a treap keyed by (size, address): best fit,
 * insertion and removal in O(log n). Stream 0's small pool's (at most 2 MiB, a
 * multiple of 512; the other streams' small pools are treaps) sit in 4096
 * exact-size bins, each a treap by address,
 * with a bitmap of the non-empty bins: best fit is the first set bit at or
 * above the request's bin and that bin's lowest address. */
#include "alloc_internal.h"

#include <stdlib.h>
#include <string.h>

#include "memest/checked.h"

uint64_t memest_alloc_round(uint64_t bytes)
{
    if (bytes < MEMEST_ALLOC_MIN_BLOCK)
        return MEMEST_ALLOC_MIN_BLOCK;
    return (bytes + MEMEST_ALLOC_MIN_BLOCK - 1) / MEMEST_ALLOC_MIN_BLOCK * MEMEST_ALLOC_MIN_BLOCK;
}

/* roundup_power2_next_division() */
static uint64_t next_division(uint64_t size, uint32_t divisions)
{
    if ((size & (size - 1)) == 0)
        return size;
    uint64_t floor2 = (uint64_t)1 << (63 - __builtin_clzll(size));
    uint64_t step = floor2 >> (31 - __builtin_clz(divisions));
    if (step == 0)
        return floor2 << 1;
    uint64_t down = size & ~(step - 1);
    return down == size ? size : down + step;
}

uint64_t memest_alloc_round_conf(const struct memest_alloc_conf *c, uint64_t bytes)
{
    if (bytes < MEMEST_ALLOC_MIN_BLOCK || !c)
        return memest_alloc_round(bytes);
    uint32_t d = memest_alloc_conf_divisions(c, bytes);
    if (d > 1 && bytes > (uint64_t)MEMEST_ALLOC_MIN_BLOCK * d)
        return next_division(bytes, d);
    return memest_alloc_round(bytes);
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

struct memest_alloc *memest_alloc_create(void) { return memest_alloc_create_with(NULL); }

struct memest_alloc *memest_alloc_create_with(const struct memest_alloc_conf *conf)
{
    struct memest_alloc *a = calloc(1, sizeof *a);
    if (a)
        memest_alloc_reset(a, conf);
    return a;
}

void memest_alloc_reset(struct memest_alloc *a, const struct memest_alloc_conf *conf)
{
    if (conf)
        a->conf = *conf;
    else
        memest_alloc_conf_default(&a->conf);
    a->n = a->nspare = 0;
    a->ndevseg = 0;
    a->bins = !a->conf.expandable;
    for (int p = 0; p < NPOOLS; p++)
        a->pool[p] = (struct pool){.root = NIL, .free_head = NIL, .unmapped_head = NIL};
    memset(a->bin, 0xFF, sizeof a->bin);   /* NIL */
    memset(a->binmap, 0, sizeof a->binmap);
    a->binsum = 0;
    a->pending_head = NIL;
    a->rng = 2463534242u;
    a->next_addr = (uint64_t)1 << 32;
    a->capacity = UINT64_MAX;
    a->fraction = false;
    a->st = (struct memest_alloc_stats){.need_fail = UINT64_MAX};
}

void memest_alloc_destroy(struct memest_alloc *a)
{
    if (!a)
        return;
    free(a->b);
    free(a->spare);
    free(a->scratch);
    free(a->devseg);
    free(a);
}

void memest_alloc_set_device(struct memest_alloc *a, const struct memest_alloc_device *d)
{
    a->dev = d ? *d : (struct memest_alloc_device){0};
}

int memest_alloc_device_close(struct memest_alloc *a)
{
    int rc = 0;
    for (uint32_t k = 0; k < a->ndevseg; k++)
        if (a->dev.seg_free(a->dev.ctx, a->devseg[k].handle) != 0)
            rc = -1;
    a->ndevseg = 0;
    return rc;
}

/* The device's handle of the segment starting at addr, taken off the table
 * (0: none). */
uint64_t alloc_devseg_take(struct memest_alloc *a, uint64_t addr)
{
    for (uint32_t k = 0; k < a->ndevseg; k++)
        if (a->devseg[k].addr == addr) {
            uint64_t h = a->devseg[k].handle;
            a->devseg[k] = a->devseg[--a->ndevseg];
            return h;
        }
    return 0;
}

static int devseg_put(struct memest_alloc *a, uint64_t addr, uint64_t handle)
{
    if (a->ndevseg == a->capdevseg) {
        uint32_t c = a->capdevseg ? a->capdevseg * 2 : 64;
        struct devseg *p = c > a->capdevseg ? realloc(a->devseg, sizeof *p * c) : NULL;
        if (!p)
            return -1;
        a->devseg = p;
        a->capdevseg = c;
    }
    a->devseg[a->ndevseg++] = (struct devseg){addr, handle};
    return 0;
}

void memest_alloc_set_capacity(struct memest_alloc *a, uint64_t capacity, bool fraction)
{
    a->capacity = capacity;
    a->fraction = fraction;
}

const struct memest_alloc_stats *memest_alloc_stats(const struct memest_alloc *a) { return &a->st; }

uint64_t memest_alloc_addr(const struct memest_alloc *a, uint32_t handle) { return a->b[handle].addr; }

void memest_alloc_reset_peak(struct memest_alloc *a)
{
    a->st.max_allocated = a->st.allocated;
    a->st.max_reserved = a->st.reserved;
}

bool alloc_capacity_ok(struct memest_alloc *a, uint64_t need)
{
    if (a->capacity == UINT64_MAX)
        return true;
    if (need > a->capacity) {
        if (need < a->st.need_fail)
            a->st.need_fail = need;
        return false;
    }
    if (need > a->st.need_ok)
        a->st.need_ok = need;
    return true;
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

/* stream 0's small pool only: the other streams' small pools are treaps */
static bool bins_of(const struct memest_alloc *a, int pool)
{
    return pool == POOL_OF(0, POOL_SMALL) && a->bins;
}

static uint32_t bin_of(uint64_t size) { return (uint32_t)(size / MEMEST_ALLOC_MIN_BLOCK - 1); }

/* Best fit in the small pool's bins: the first non-empty bin at or above
 * the request's, its lowest address. */
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

uint32_t alloc_lower_bound(const struct memest_alloc *a, int pool, uint64_t size)
{
    if (bins_of(a, pool))
        return size > MEMEST_ALLOC_SMALL_BUFFER ? NIL : small_fit(a, size);
    return lower_bound(a->b, a->pool[pool].root, size);
}

/* The next block after x in (size, address) order: the large pool's
 * treap, or an expandable pool's. */
uint32_t alloc_succ(const struct memest_alloc *a, uint32_t x)
{
    uint32_t t = a->pool[a->b[x].pool].root, best = NIL;
    while (t != NIL) {
        if (key_less(&a->b[x], &a->b[t])) {
            best = t;
            t = a->b[t].left;
        } else {
            t = a->b[t].right;
        }
    }
    return best;
}

uint32_t alloc_pred(const struct memest_alloc *a, uint32_t x)
{
    uint32_t t = a->pool[a->b[x].pool].root, best = NIL;
    while (t != NIL) {
        if (key_less(&a->b[t], &a->b[x])) {
            best = t;
            t = a->b[t].right;
        } else {
            t = a->b[t].left;
        }
    }
    return best;
}

uint32_t alloc_largest(const struct memest_alloc *a, int pool)
{
    uint32_t t = a->pool[pool].root;
    if (t == NIL)
        return NIL;
    while (a->b[t].right != NIL)
        t = a->b[t].right;
    return t;
}

static uint32_t *root_of(struct memest_alloc *a, uint32_t x)
{
    return bins_of(a, a->b[x].pool) ? &a->bin[bin_of(a->b[x].size)] : &a->pool[a->b[x].pool].root;
}

/* insert_into_blocks(): the block cached, its age counted from now. */
void alloc_pool_insert(struct memest_alloc *a, uint32_t x)
{
    struct blk *bx = &a->b[x];
    struct pool *p = &a->pool[bx->pool];
    bx->left = bx->right = NIL;
    a->rng ^= a->rng << 13;
    a->rng ^= a->rng >> 17;
    a->rng ^= a->rng << 5;
    bx->prio = a->rng;
    bx->gc_base = (uint32_t)a->calls[POOL_KIND(bx->pool)];
    insert(a->b, root_of(a, x), x);
    if (bins_of(a, bx->pool)) {
        uint32_t c = bin_of(bx->size);
        a->binmap[c / 64] |= (uint64_t)1 << (c % 64);
        a->binsum |= (uint64_t)1 << (c / 64);
    }
    bx->fprev = NIL;
    bx->fnext = p->free_head;
    if (p->free_head != NIL)
        a->b[p->free_head].fprev = x;
    p->free_head = x;
}

void alloc_pool_erase(struct memest_alloc *a, uint32_t x)
{
    struct blk *bx = &a->b[x];
    uint32_t *root = root_of(a, x);
    erase(a->b, root, x);
    if (bins_of(a, bx->pool) && *root == NIL) {
        uint32_t c = bin_of(bx->size);
        a->binmap[c / 64] &= ~((uint64_t)1 << (c % 64));
        if (!a->binmap[c / 64])
            a->binsum &= ~((uint64_t)1 << (c / 64));
    }
    if (bx->fprev != NIL)
        a->b[bx->fprev].fnext = bx->fnext;
    else
        a->pool[bx->pool].free_head = bx->fnext;
    if (bx->fnext != NIL)
        a->b[bx->fnext].fprev = bx->fprev;
}

/* ---- blocks ---- */

int alloc_new_block(struct memest_alloc *a, uint32_t *out)
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

void alloc_drop_block(struct memest_alloc *a, uint32_t x)
{
    if (a->nspare == a->capspare) {
        uint32_t ncap = a->capspare ? a->capspare * 2 : 64;
        uint32_t *ns = realloc(a->spare, sizeof *ns * ncap);
        if (!ns)
            return;   /* a failed push only leaks an index, never a byte of the model */
        a->spare = ns;
        a->capspare = ncap;
    }
    a->spare[a->nspare++] = x;
}

/* get_free_block(): best fit, as expandable segments see it, and the
 * oversize rules. */
static uint32_t get_free_block(struct memest_alloc *a, int pool, uint64_t size)
{
    const struct memest_alloc_conf *c = &a->conf;
    uint64_t max_split = c->max_split ? c->max_split : UINT64_MAX;
    uint64_t rounding = c->max_non_split_rounding ? c->max_non_split_rounding
                                                  : MEMEST_ALLOC_LARGE_BUFFER;
    if (a->fraction && c->gc_threshold > 0)
        a->calls[POOL_KIND(pool)]++;
    uint32_t x = alloc_lower_bound(a, pool, size);
    if (x == NIL)
        return NIL;
    if (a->b[x].expandable) {
        /* a block followed by unmapped pages counts as what it can grow to */
#define GROW(i)                                                                             \
    (a->b[i].size + (a->b[i].next != NIL && !a->b[a->b[i].next].mapped ? a->b[a->b[i].next].size \
                                                                       : 0))
        for (uint32_t nx = alloc_succ(a, x); nx != NIL && GROW(nx) < GROW(x); nx = alloc_succ(a, x))
            x = nx;
#undef GROW
    }
    if (size < max_split && a->b[x].size >= max_split)
        return NIL;
    if (size >= max_split && a->b[x].size >= size + rounding)
        return NIL;
    return x;
}

/* alloc_block(): a new segment of `seg` bytes, or an expandable segment's
 * pages. 0 (*out NIL: it does not fit), -1 out of host memory, -2 past
 * memest's limits. */
static int alloc_block(struct memest_alloc *a, int pool, uint64_t size, uint64_t seg, bool retry,
                       uint32_t *out)
{
    *out = NIL;
    if (retry)
        a->st.retries++;
    if (a->fraction && !alloc_capacity_ok(a, a->st.reserved + seg))
        return 0;
    if (a->conf.expandable)
        return alloc_expand_block(a, pool, size, out);
    /* reserved bounds every sum of live blocks: keeping it within 2^63 - 1
     * keeps all of them from wrapping (issue 6) */
    if (a->next_addr > MEMEST_SIZE_MAX - seg || a->st.reserved > MEMEST_SIZE_MAX - seg)
        return -2;
    if (!a->fraction && !alloc_capacity_ok(a, a->st.reserved + seg))
        return 0;
    uint64_t dev = 0;
    if (a->dev.seg_alloc) {   /* the device's cudaMalloc decides */
        int drc = a->dev.seg_alloc(a->dev.ctx, seg, &dev);
        if (drc != 0)
            return drc > 0 ? 0 : -3;
    }
    uint32_t x;
    if (alloc_new_block(a, &x) != 0 || (a->dev.seg_alloc && devseg_put(a, a->next_addr, dev) != 0)) {
        if (a->dev.seg_alloc)
            a->dev.seg_free(a->dev.ctx, dev);
        return -1;
    }
    a->b[x] = (struct blk){.addr = a->next_addr, .size = seg, .prev = NIL, .next = NIL,
                           .pool = (uint8_t)pool, .mapped = 1};
    a->next_addr += seg;
    a->st.reserved += seg;
    a->st.segments++;
    if (a->st.reserved > a->st.max_reserved)
        a->st.max_reserved = a->st.reserved;
    *out = x;
    return 0;
}

/* The block for a request no cached block serves: malloc()'s order. */
static int find_room(struct memest_alloc *a, int pool, uint64_t size, uint32_t *x)
{
    uint64_t seg = memest_alloc_segment_size(size);
    if (a->fraction && a->conf.gc_threshold > 0)
        alloc_garbage_collect(a);
    int rc = alloc_block(a, pool, size, seg, false, x);
    if (rc != 0 || *x != NIL)
        return rc;
    if (alloc_release_available(a, pool, size)) {
        rc = alloc_block(a, pool, size, seg, false, x);
        if (rc != 0 || *x != NIL)
            return rc;
    }
    if (alloc_release_cached(a) != 0)
        return -1;
    return alloc_block(a, pool, size, seg, true, x);
}

/* should_split() */
static bool should_split(const struct memest_alloc *a, const struct blk *b, uint64_t size)
{
    uint64_t remaining = b->size - size;
    if (POOL_KIND(b->pool) == POOL_SMALL || b->expandable)
        return remaining >= MEMEST_ALLOC_MIN_BLOCK;
    return (!a->conf.max_split || size < a->conf.max_split) && remaining > MEMEST_ALLOC_SMALL_SIZE;
}

int memest_alloc_malloc(struct memest_alloc *a, uint64_t bytes, uint32_t *handle,
                        uint64_t *block_bytes)
{
    return memest_alloc_malloc_on(a, bytes, 0, handle, block_bytes);
}

int memest_alloc_malloc_on(struct memest_alloc *a, uint64_t bytes, unsigned stream,
                           uint32_t *handle, uint64_t *block_bytes)
{
    if (bytes > ((uint64_t)1 << 62) || stream >= MEMEST_ALLOC_STREAMS)
        return -1;
    alloc_process_events(a);
    uint64_t size = memest_alloc_round_conf(&a->conf, bytes);
    int pool = POOL_OF(stream, size <= MEMEST_ALLOC_SMALL_SIZE ? POOL_SMALL : POOL_LARGE);
    uint32_t x = get_free_block(a, pool, size);
    if (x != NIL) {
        alloc_pool_erase(a, x);
    } else {
        int rc = find_room(a, pool, size, &x);
        if (rc != 0)
            return rc == -1 ? -2 : rc == -3 ? -4 : -1;
        if (x == NIL) {
            a->st.ooms++;
            return -3;
        }
    }
    if (should_split(a, &a->b[x], size)) {
        uint32_t r;
        if (alloc_new_block(a, &r) != 0) {
            alloc_pool_insert(a, x);
            return -2;
        }
        struct blk *bx = &a->b[x];
        a->b[r] = (struct blk){.addr = bx->addr + size, .size = bx->size - size, .prev = x,
                               .next = bx->next, .pool = bx->pool, .mapped = 1,
                               .expandable = bx->expandable};
        if (bx->next != NIL)
            a->b[bx->next].prev = r;
        bx->next = r;
        bx->size = size;
        alloc_pool_insert(a, r);
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

void alloc_unmapped_unlink(struct memest_alloc *a, uint32_t x)
{
    struct blk *b = &a->b[x];
    if (b->fprev != NIL)
        a->b[b->fprev].fnext = b->fnext;
    else
        a->pool[b->pool].unmapped_head = b->fnext;
    if (b->fnext != NIL)
        a->b[b->fnext].fprev = b->fprev;
}

void alloc_absorb(struct memest_alloc *a, uint32_t dst, uint32_t src)
{
    struct blk *d = &a->b[dst], *s = &a->b[src];
    if (s->mapped)
        alloc_pool_erase(a, src);
    else
        alloc_unmapped_unlink(a, src);
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
    alloc_drop_block(a, src);
}

static bool mergeable(const struct memest_alloc *a, uint32_t x)
{
    return x != NIL && !a->b[x].allocated && a->b[x].mapped;
}

/* free()'s statistics: they drop when the block is freed, its events
 * pending or not */
static void uncount(struct memest_alloc *a, const struct blk *x)
{
    a->st.allocated -= x->size;
    a->st.requested -= x->req;
    a->st.live_blocks--;
}

/* free_block(): the block merged with its free neighbours, cached */
static void free_block(struct memest_alloc *a, uint32_t h)
{
    struct blk *x = &a->b[h];
    x->allocated = 0;
    x->pending = 0;
    uint32_t p = x->prev, n = x->next;
    if (mergeable(a, p))
        alloc_absorb(a, h, p);
    if (mergeable(a, n))
        alloc_absorb(a, h, n);
    alloc_pool_insert(a, h);
}

void memest_alloc_free(struct memest_alloc *a, uint32_t h)
{
    uncount(a, &a->b[h]);
    free_block(a, h);
}

/* The block keeps `allocated` set while its events are pending, so that no
 * neighbour merges with it (try_merge_blocks skips a block with
 * event_count > 0) and no expandable candidate spans it. */
void memest_alloc_free_deferred(struct memest_alloc *a, uint32_t h)
{
    struct blk *x = &a->b[h];
    uncount(a, x);
    x->pending = 1;
    a->st.pending += x->size;
    x->fnext = a->pending_head;
    a->pending_head = h;
}

/* Every pending event has completed (memest's assumption: by the next
 * malloc after its stream's op ran): the blocks are freed. The order does
 * not change the free blocks the merges make. */
void alloc_process_events(struct memest_alloc *a)
{
    while (a->pending_head != NIL) {
        uint32_t h = a->pending_head;
        a->pending_head = a->b[h].fnext;
        a->st.pending -= a->b[h].size;
        free_block(a, h);
    }
}
