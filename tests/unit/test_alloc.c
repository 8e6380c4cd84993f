/* test_alloc.c - the caching-allocator model on cases computed by hand from
 * the rules of c10/cuda/CUDACachingAllocator.cpp (see src/sim/alloc.c). */
#include <stdint.h>
#include <stdlib.h>

#include "alloc_check.h"
#include "check.h"
#include "memest/alloc.h"

#define KiB ((uint64_t)1024)
#define MiB ((uint64_t)1 << 20)

static void test_rounding(void)
{
    CHECK_EQ_U64(memest_alloc_round(0), 512);
    CHECK_EQ_U64(memest_alloc_round(1), 512);
    CHECK_EQ_U64(memest_alloc_round(512), 512);
    CHECK_EQ_U64(memest_alloc_round(513), 1024);
    CHECK_EQ_U64(memest_alloc_round(4000), 4096);
    CHECK_EQ_U64(memest_alloc_round(MiB + 1), MiB + 512);
}

static void test_segment_sizes(void)
{
    CHECK_EQ_U64(memest_alloc_segment_size(512), 2 * MiB);          /* small pool */
    CHECK_EQ_U64(memest_alloc_segment_size(MiB), 2 * MiB);          /* 1 MiB is still small */
    CHECK_EQ_U64(memest_alloc_segment_size(MiB + 512), 20 * MiB);   /* large, < 10 MiB */
    CHECK_EQ_U64(memest_alloc_segment_size(10 * MiB - 512), 20 * MiB);
    CHECK_EQ_U64(memest_alloc_segment_size(10 * MiB), 10 * MiB);    /* >= 10 MiB: 2 MiB multiple */
    CHECK_EQ_U64(memest_alloc_segment_size(10 * MiB + 512), 12 * MiB);
    CHECK_EQ_U64(memest_alloc_segment_size(101 * MiB), 102 * MiB);
}

/* Small requests share a 2 MiB segment; freeing merges the pieces back. */
static void test_small_pool(void)
{
    struct memest_alloc *a = memest_alloc_create();
    const struct memest_alloc_stats *s = memest_alloc_stats(a);
    uint32_t x = get(a, 1000, 1024);
    CHECK_EQ_U64(s->reserved, 2 * MiB);
    CHECK_EQ_U64(s->allocated, 1024);
    CHECK_EQ_U64(s->requested, 1000);
    uint32_t y = get(a, 1, 512);          /* from the remainder, same segment */
    CHECK_EQ_U64(s->reserved, 2 * MiB);
    CHECK_EQ_U64(s->segments, 1);
    uint32_t z = get(a, 700 * KiB, 700 * KiB);
    CHECK_EQ_U64(s->allocated, 1024 + 512 + 700 * KiB);
    /* 2 MiB - 1536 - 700 KiB = 1378816 bytes remain: a second 700 KiB
     * request still fits in the first segment */
    uint32_t w = get(a, 700 * KiB, 700 * KiB);
    CHECK_EQ_U64(s->segments, 1);
    /* only 2 MiB - 1536 - 1400 KiB = 662016 bytes left: a new segment */
    uint32_t v = get(a, 700 * KiB, 700 * KiB);
    CHECK_EQ_U64(s->segments, 2);
    CHECK_EQ_U64(s->reserved, 4 * MiB);
    memest_alloc_free(a, y);
    memest_alloc_free(a, x);    /* merges with y's block: 1536 bytes free at the start */
    uint32_t u = get(a, 1536, 1536);   /* best fit: exactly the merged block */
    CHECK_EQ_U64(s->segments, 2);
    memest_alloc_free(a, u);
    memest_alloc_free(a, z);
    memest_alloc_free(a, w);
    memest_alloc_free(a, v);
    CHECK_EQ_U64(s->allocated, 0);
    CHECK_EQ_U64(s->requested, 0);
    CHECK_EQ_U64(s->reserved, 4 * MiB);    /* segments are kept */
    CHECK_EQ_U64(s->max_allocated, 1024 + 512 + 2100 * KiB);
    /* both segments merged back to one 2 MiB block each: four 1 MiB
     * requests fit, a fifth needs a third segment */
    for (int i = 0; i < 4; i++)
        get(a, MiB, MiB);
    CHECK_EQ_U64(s->segments, 2);
    get(a, MiB, MiB);
    CHECK_EQ_U64(s->segments, 3);
    memest_alloc_destroy(a);
}

/* Large requests: 20 MiB segments below 10 MiB, split only when more than
 * 1 MiB would remain; an unsplit block counts whole in memory_allocated. */
static void test_large_pool(void)
{
    struct memest_alloc *a = memest_alloc_create();
    const struct memest_alloc_stats *s = memest_alloc_stats(a);
    uint32_t x = get(a, 5 * MiB, 5 * MiB);
    CHECK_EQ_U64(s->reserved, 20 * MiB);
    /* 15 MiB remain; 14.5 MiB leaves 0.5 MiB (<= 1 MiB): no split */
    uint32_t y = get(a, 14 * MiB + 512 * KiB, 15 * MiB);
    CHECK_EQ_U64(s->allocated, 20 * MiB);
    CHECK_EQ_U64(s->requested, 19 * MiB + 512 * KiB);
    CHECK_EQ_U64(s->reserved, 20 * MiB);
    memest_alloc_free(a, x);
    memest_alloc_free(a, y);
    CHECK_EQ_U64(s->allocated, 0);

    memest_alloc_destroy(a);

    /* >= 10 MiB: a segment of the request rounded to 2 MiB; 10.5 MiB leaves
     * 1.5 MiB of a 12 MiB segment, which is split off and reusable */
    a = memest_alloc_create();
    s = memest_alloc_stats(a);
    uint32_t z = get(a, 10 * MiB + 512 * KiB, 10 * MiB + 512 * KiB);
    CHECK_EQ_U64(s->reserved, 12 * MiB);
    uint32_t w = get(a, MiB + 512 * KiB, MiB + 512 * KiB);   /* the remainder, exactly */
    CHECK_EQ_U64(s->reserved, 12 * MiB);
    CHECK_EQ_U64(s->segments, 1);
    /* 11 MiB: a 12 MiB segment whose 1 MiB remainder (not > 1 MiB) stays
     * with the block */
    uint32_t p = get(a, 11 * MiB, 12 * MiB);
    CHECK_EQ_U64(s->segments, 2);
    uint32_t q = get(a, 5 * MiB, 5 * MiB);
    CHECK_EQ_U64(s->reserved, 44 * MiB);
    CHECK_EQ_U64(s->allocated, 29 * MiB);
    memest_alloc_free(a, z);
    memest_alloc_free(a, w);
    memest_alloc_free(a, p);
    memest_alloc_free(a, q);
    CHECK_EQ_U64(s->max_allocated, 29 * MiB);
    memest_alloc_destroy(a);
}

/* Free blocks of different segments never merge; pools are separate. */
static void test_segments_never_merge(void)
{
    struct memest_alloc *a = memest_alloc_create();
    const struct memest_alloc_stats *s = memest_alloc_stats(a);
    uint32_t x = get(a, 12 * MiB, 12 * MiB);
    uint32_t y = get(a, 12 * MiB, 12 * MiB);
    CHECK_EQ_U64(s->reserved, 24 * MiB);
    memest_alloc_free(a, x);
    memest_alloc_free(a, y);
    /* 24 MiB are cached, but in two 12 MiB segments: a 20 MiB request needs
     * its own segment */
    uint32_t z = get(a, 20 * MiB, 20 * MiB);
    CHECK_EQ_U64(s->reserved, 44 * MiB);
    /* a small request does not use the cached large blocks */
    uint32_t w = get(a, 4096, 4096);
    CHECK_EQ_U64(s->reserved, 46 * MiB);
    /* a 12 MiB request reuses a cached 12 MiB segment */
    uint32_t v = get(a, 12 * MiB, 12 * MiB);
    CHECK_EQ_U64(s->reserved, 46 * MiB);
    memest_alloc_free(a, z);
    memest_alloc_free(a, w);
    memest_alloc_free(a, v);
    memest_alloc_destroy(a);
}

/* Best fit prefers the smallest block, and the lowest address among equal
 * sizes; reset_peak restarts the maxima. */
static void test_best_fit_and_peak(void)
{
    struct memest_alloc *a = memest_alloc_create();
    const struct memest_alloc_stats *s = memest_alloc_stats(a);
    uint32_t big = get(a, 30 * MiB, 30 * MiB);      /* segment A: 30 MiB */
    uint32_t small = get(a, 16 * MiB, 16 * MiB);    /* segment B: 16 MiB */
    memest_alloc_free(a, big);
    memest_alloc_free(a, small);
    /* 15 MiB: both fit; the 16 MiB block is the best fit (1 MiB left: whole) */
    uint32_t x = get(a, 15 * MiB, 16 * MiB);
    CHECK_EQ_U64(s->reserved, 46 * MiB);
    /* next 15 MiB comes from the 30 MiB block, split (15 MiB left) */
    uint32_t y = get(a, 15 * MiB, 15 * MiB);
    CHECK_EQ_U64(s->allocated, 31 * MiB);
    memest_alloc_reset_peak(a);
    CHECK_EQ_U64(s->max_allocated, 31 * MiB);
    memest_alloc_free(a, x);
    CHECK_EQ_U64(s->max_allocated, 31 * MiB);
    memest_alloc_free(a, y);
    memest_alloc_reset_peak(a);
    CHECK_EQ_U64(s->max_allocated, 0);
    CHECK_EQ_U64(s->max_reserved, 46 * MiB);
    memest_alloc_destroy(a);
}

/* Many interleaved allocations: the accounting stays consistent and every
 * block is reused after a full free (no new segment on a replay). */
static void test_replay_is_stable(void)
{
    struct memest_alloc *a = memest_alloc_create();
    const struct memest_alloc_stats *s = memest_alloc_stats(a);
    enum { N = 2000 };
    static uint32_t h[N];
    uint64_t reserved_after_first = 0;
    for (int round = 0; round < 2; round++) {
        uint32_t seed = 12345;
        for (int i = 0; i < N; i++) {
            seed = seed * 1103515245u + 12345u;
            uint64_t bytes = 1 + (seed >> 8) % (3 * MiB);
            uint64_t blk;
            CHECK_EQ_INT(memest_alloc_malloc(a, bytes, &h[i], &blk), 0);
            CHECK(blk >= memest_alloc_round(bytes));
            if (i % 3 == 2) {   /* free every third pair early */
                memest_alloc_free(a, h[i - 1]);
                h[i - 1] = UINT32_MAX;
            }
        }
        for (int i = N; i-- > 0;)
            if (h[i] != UINT32_MAX)
                memest_alloc_free(a, h[i]);
        CHECK_EQ_U64(s->allocated, 0);
        CHECK_EQ_U64(s->live_blocks, 0);
        if (round == 0)
            reserved_after_first = s->reserved;
    }
    CHECK_EQ_U64(s->reserved, reserved_after_first);
    memest_alloc_destroy(a);
}

int main(void)
{
    test_rounding();
    test_segment_sizes();
    test_small_pool();
    test_large_pool();
    test_segments_never_merge();
    test_best_fit_and_peak();
    test_replay_is_stable();
    return CHECK_DONE();
}
