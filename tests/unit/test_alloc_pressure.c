/* test_alloc_pressure.c - the caching-allocator model under a capacity, with
 * PYTORCH_CUDA_ALLOC_CONF's settings: hand-worked cases from the rules of
 * c10/cuda/CUDACachingAllocator.cpp (src/sim/alloc.c, alloc_release.c,
 * alloc_expand.c), and the settings' parser (src/step/alloc_conf.c). Each
 * expected figure is worked out in the comment above it. */
#include <stdint.h>
#include <string.h>

#include "alloc_check.h"
#include "check.h"
#include "memest/alloc.h"
#include "memest/alloc_conf.h"

#define MiB ((uint64_t)1 << 20)

static struct memest_alloc *make(const char *conf)
{
    struct memest_alloc_conf c;
    char msg[256];
    CHECK_EQ_INT(memest_alloc_conf_parse(conf, &c, msg, sizeof msg), 0);
    return memest_alloc_create_with(&c);
}

/* Capacity 30 MiB. A 12 MiB request makes a 12 MiB segment (>= 10 MiB:
 * rounded to 2 MiB); freed, it stays cached. A 20 MiB request finds no
 * cached block of 20 MiB; alloc_block would hold 12 + 20 = 32 > 30 MiB;
 * release_available_cached_blocks does nothing without max_split_size_mb;
 * release_cached_blocks frees the whole free 12 MiB segment; the retry holds
 * 0 + 20 <= 30 MiB. Reserved 20 MiB, one retry, 12 MiB released; the checks
 * passed asked for at most 20 MiB and the one that failed for 32 MiB. */
static void test_retry_completes(void)
{
    struct memest_alloc *a = make(NULL);
    const struct memest_alloc_stats *s = memest_alloc_stats(a);
    memest_alloc_set_capacity(a, 30 * MiB, false);
    memest_alloc_free(a, get(a, 12 * MiB, 12 * MiB));
    CHECK_EQ_U64(s->reserved, 12 * MiB);
    get(a, 20 * MiB, 20 * MiB);
    CHECK_EQ_U64(s->reserved, 20 * MiB);
    CHECK_EQ_U64(s->retries, 1);
    CHECK_EQ_U64(s->released, 12 * MiB);
    CHECK_EQ_U64(s->segment_frees, 1);
    CHECK_EQ_U64(s->need_ok, 20 * MiB);
    CHECK_EQ_U64(s->need_fail, 32 * MiB);
    CHECK_EQ_U64(s->ooms, 0);
    memest_alloc_destroy(a);
}

/* The same with the 12 MiB block alive: nothing is free to release, the
 * retry asks for 32 MiB again: out of memory. */
static void test_retry_fails(void)
{
    struct memest_alloc *a = make(NULL);
    const struct memest_alloc_stats *s = memest_alloc_stats(a);
    memest_alloc_set_capacity(a, 30 * MiB, false);
    get(a, 12 * MiB, 12 * MiB);
    uint32_t h;
    uint64_t got;
    CHECK_EQ_INT(memest_alloc_malloc(a, 20 * MiB, &h, &got), -3);
    CHECK_EQ_U64(s->ooms, 1);
    CHECK_EQ_U64(s->retries, 1);
    CHECK_EQ_U64(s->released, 0);
    CHECK_EQ_U64(s->reserved, 12 * MiB);
    memest_alloc_destroy(a);
}

/* Free space inside a segment that holds a live block is not released.
 * Capacity 24 MiB. 2 MiB (large pool, under 10 MiB) takes a 20 MiB
 * segment, split: 18 MiB stay free in it. 19 MiB does not fit those 18; a
 * new segment of 20 MiB (19 rounded to 2 MiB) would hold 40 > 24 MiB; the
 * first segment is not whole, so nothing goes back: out of memory, with 2
 * MiB allocated and 2 + 19 = 21 MiB asked of a 24 MiB card. */
static void test_split_segment_stays(void)
{
    struct memest_alloc *a = make(NULL);
    const struct memest_alloc_stats *s = memest_alloc_stats(a);
    memest_alloc_set_capacity(a, 24 * MiB, false);
    get(a, 2 * MiB, 2 * MiB);
    uint32_t h;
    uint64_t got;
    CHECK_EQ_INT(memest_alloc_malloc(a, 19 * MiB, &h, &got), -3);
    CHECK_EQ_U64(s->released, 0);
    CHECK_EQ_U64(s->need_fail, 40 * MiB);
    CHECK_EQ_U64(s->allocated, 2 * MiB);
    memest_alloc_destroy(a);
}

/* max_split_size_mb:32. (1) A free 40 MiB block (oversize: >= 32 MiB) is not
 * given to a 16 MiB request: a 16 MiB segment is made (reserved 56 MiB).
 * (2) Capacity 60 MiB: 8 MiB needs a 20 MiB segment, 56 + 20 = 76 > 60;
 * release_available_cached_blocks frees the smallest free block of at least
 * max(8, 32) = 32 MiB, the 40 MiB one, and alloc_block succeeds again
 * without counting a retry: 16 + 20 = 36 MiB reserved, 40 MiB released. */
static void test_max_split(void)
{
    struct memest_alloc *a = make("max_split_size_mb:32");
    const struct memest_alloc_stats *s = memest_alloc_stats(a);
    memest_alloc_free(a, get(a, 40 * MiB, 40 * MiB));
    get(a, 16 * MiB, 16 * MiB);
    CHECK_EQ_U64(s->reserved, 56 * MiB);
    memest_alloc_set_capacity(a, 60 * MiB, false);
    get(a, 8 * MiB, 8 * MiB);
    CHECK_EQ_U64(s->reserved, 36 * MiB);
    CHECK_EQ_U64(s->released, 40 * MiB);
    CHECK_EQ_U64(s->retries, 0);
    memest_alloc_destroy(a);
}

/* max_split_size_mb:32, an oversize request: a free 64 MiB block is refused
 * to 40 MiB (64 >= 40 + 20, max_non_split_rounding_mb's default) and taken
 * by 50 MiB (64 < 70), whole: an oversize block is never split. */
static void test_oversize_rounding(void)
{
    struct memest_alloc *a = make("max_split_size_mb:32");
    const struct memest_alloc_stats *s = memest_alloc_stats(a);
    memest_alloc_free(a, get(a, 64 * MiB, 64 * MiB));
    uint32_t h = get(a, 40 * MiB, 40 * MiB);
    CHECK_EQ_U64(s->reserved, 104 * MiB);
    memest_alloc_free(a, h);
    get(a, 50 * MiB, 64 * MiB);
    CHECK_EQ_U64(s->reserved, 104 * MiB);
    memest_alloc_destroy(a);
}

/* roundup_power2_divisions:4: 5 MiB + 1 byte lies in [4 MiB, 8 MiB), cut in
 * 4 steps of 1 MiB: it rounds up to 6 MiB. 4 MiB, a power of two, stays. */
static void test_roundup(void)
{
    struct memest_alloc_conf c;
    char msg[256];
    CHECK_EQ_INT(memest_alloc_conf_parse("roundup_power2_divisions:4", &c, msg, sizeof msg), 0);
    CHECK_EQ_U64(memest_alloc_round_conf(&c, 5 * MiB + 1), 6 * MiB);
    CHECK_EQ_U64(memest_alloc_round_conf(&c, 4 * MiB), 4 * MiB);
    /* below 512 x 4 bytes: the 512-byte rounding */
    CHECK_EQ_U64(memest_alloc_round_conf(&c, 1500), 1536);
    /* the list form: 256 -> interval 8 (and, being first, 0..7) get 1; 512
     * -> 9 gets 2, then '>' fills from the last interval named (9) on with
     * 4, overwriting it, as PyTorch 2.6's parser does */
    CHECK_EQ_INT(memest_alloc_conf_parse("roundup_power2_divisions:[256:1,512:2,>:4]", &c, msg,
                                         sizeof msg), 0);
    CHECK_EQ_U64(memest_alloc_conf_divisions(&c, 300 * MiB), 1);
    CHECK_EQ_U64(memest_alloc_conf_divisions(&c, 600 * MiB), 4);
    CHECK_EQ_U64(memest_alloc_conf_divisions(&c, 2 * MiB), 1);
}

/* expandable_segments:True. 3 MiB maps one 20 MiB page of the large pool's
 * segment and leaves 17 MiB free; 30 MiB then grows from that free block:
 * 13 MiB more are needed, one more page, 40 MiB reserved (without
 * expandable segments: 20 + a 30 MiB segment = 50 MiB). */
static void test_expandable_grows(void)
{
    struct memest_alloc *a = make("expandable_segments:True");
    const struct memest_alloc_stats *s = memest_alloc_stats(a);
    get(a, 3 * MiB, 3 * MiB);
    CHECK_EQ_U64(s->reserved, 20 * MiB);
    get(a, 30 * MiB, 30 * MiB);
    CHECK_EQ_U64(s->reserved, 40 * MiB);
    /* small requests map 2 MiB pages of their own pool's segment */
    get(a, 1000, 1024);
    CHECK_EQ_U64(s->reserved, 42 * MiB);
    memest_alloc_destroy(a);
}

/* expandable_segments:True under a capacity of 60 MiB. x = 35 MiB maps two
 * pages [0, 40); z = 3 MiB takes [35, 38) of the free rest; x freed: [0, 35)
 * free. 40 MiB: no free block is that large; growing from [38, 40) needs 38
 * MiB more, two pages: 40 + 40 = 80 > 60 MiB. release_cached_blocks unmaps
 * the whole pages inside free blocks: [0, 20) (20 MiB released; [20, 35)
 * and [38, 40) hold no whole page). The retry: the hole [0, 20) with the
 * free [20, 35) holds only 35 MiB before z; the end, from [38, 40), takes
 * two pages: 20 + 40 = 60 <= 60 MiB. */
static void test_expandable_release(void)
{
    struct memest_alloc *a = make("expandable_segments:True");
    const struct memest_alloc_stats *s = memest_alloc_stats(a);
    memest_alloc_set_capacity(a, 60 * MiB, false);
    uint32_t x = get(a, 35 * MiB, 35 * MiB);
    get(a, 3 * MiB, 3 * MiB);
    memest_alloc_free(a, x);
    get(a, 40 * MiB, 40 * MiB);
    CHECK_EQ_U64(s->retries, 1);
    CHECK_EQ_U64(s->released, 20 * MiB);
    CHECK_EQ_U64(s->reserved, 60 * MiB);
    CHECK_EQ_U64(s->need_fail, 80 * MiB);
    memest_alloc_destroy(a);
}

/* The least capacity of a trace: 12 MiB allocated and freed, then 20 MiB.
 * Unconstrained the 12 MiB segment stays cached: 32 MiB reserved. The
 * floor is the allocated peak, 20 MiB: there the second request fails
 * (12 + 20), the cached segment goes back and the retry fits: the least is
 * 20 MiB, found exactly by the second replay. */
static void test_least(void)
{
    struct memest_alloc_trace t = {0};
    CHECK_EQ_INT(memest_alloc_trace_push(&t, false, 0, 12 * MiB), 0);
    CHECK_EQ_INT(memest_alloc_trace_push(&t, true, 0, 0), 0);
    CHECK_EQ_INT(memest_alloc_trace_push(&t, false, 1, 20 * MiB), 0);
    CHECK_EQ_INT(memest_alloc_trace_push(&t, true, 1, 0), 0);
    struct memest_alloc_least l;
    CHECK_EQ_INT(memest_alloc_least_capacity(&t, NULL, false, 48, &l), 0);
    CHECK_EQ_U64(l.top, 32 * MiB);
    CHECK_EQ_U64(l.floor, 20 * MiB);
    CHECK_EQ_U64(l.least, 20 * MiB);
    CHECK(l.exact);
    CHECK_EQ_U64(l.replays, 2);
    /* one granule below the least: out of memory */
    struct memest_alloc_run run;
    CHECK_EQ_INT(memest_alloc_replay(&t, NULL, 18 * MiB, false, &run), 0);
    CHECK(!run.completes);
    CHECK_EQ_U64(run.failed_at, 2);
    /* with the 12 MiB block alive until the end, nothing can go back: the
     * least is the unconstrained 32 MiB; the scan replays the floor (20 MiB),
     * whose failed check asked for 32 MiB, and stops there */
    struct memest_alloc_trace u = {0};
    CHECK_EQ_INT(memest_alloc_trace_push(&u, false, 0, 12 * MiB), 0);
    CHECK_EQ_INT(memest_alloc_trace_push(&u, false, 1, 20 * MiB), 0);
    CHECK_EQ_INT(memest_alloc_least_capacity(&u, NULL, false, 48, &l), 0);
    CHECK_EQ_U64(l.floor, 32 * MiB);
    CHECK_EQ_U64(l.least, 32 * MiB);
    CHECK_EQ_U64(l.replays, 1);
    memest_alloc_trace_dispose(&t);
    memest_alloc_trace_dispose(&u);
}

/* The parser refuses what PyTorch 2.6 refuses, with its words. */
static void test_conf_errors(void)
{
    struct memest_alloc_conf c;
    char msg[256];
    CHECK_EQ_INT(memest_alloc_conf_parse("max_split_size_mb:20", &c, msg, sizeof msg), -1);
    CHECK_CONTAINS(msg, "must be > 20");
    CHECK_EQ_INT(memest_alloc_conf_parse("expandable_segment:True", &c, msg, sizeof msg), -1);
    CHECK_CONTAINS(msg, "Unrecognized CachingAllocator option: expandable_segment");
    CHECK_EQ_INT(memest_alloc_conf_parse("expandable_segments:true", &c, msg, sizeof msg), -1);
    CHECK_CONTAINS(msg, "True/False");
    CHECK_EQ_INT(memest_alloc_conf_parse("garbage_collection_threshold:1.5", &c, msg, sizeof msg), -1);
    CHECK_CONTAINS(msg, "too big");
    CHECK_EQ_INT(memest_alloc_conf_parse("roundup_power2_divisions:3", &c, msg, sizeof msg), -1);
    CHECK_CONTAINS(msg, "power of 2");
    /* std::stoi reads "64abc" as 64; ';' is no separator, so the ':' after
     * "64;expandable_segments" is where a ',' was expected */
    CHECK_EQ_INT(memest_alloc_conf_parse("max_split_size_mb:64abc", &c, msg, sizeof msg), 0);
    CHECK_EQ_U64(c.max_split, 64 * MiB);
    CHECK_EQ_INT(memest_alloc_conf_parse("max_split_size_mb:64;expandable_segments:True", &c, msg,
                                         sizeof msg), -1);
    CHECK_CONTAINS(msg, "expected ,");
    CHECK_EQ_INT(memest_alloc_conf_parse("roundup_power2_divisions:[256:2", &c, msg, sizeof msg), -1);
    CHECK_CONTAINS(msg, "no closing ']'");
    CHECK_EQ_INT(memest_alloc_conf_parse("roundup_power2_divisions:[300:2]", &c, msg, sizeof msg), -1);
    CHECK_CONTAINS(msg, "the intervals have to be power of 2");
    CHECK_EQ_INT(memest_alloc_conf_parse("backend:cudaMallocAsync", &c, msg, sizeof msg), -1);
    CHECK_EQ_INT(memest_alloc_conf_parse(" expandable_segments : True , max_split_size_mb:512", &c,
                                         msg, sizeof msg), 0);
    CHECK(c.expandable);
    CHECK_STR_EQ(c.text, "max_split_size_mb:512,expandable_segments:True");
    CHECK_EQ_INT(memest_alloc_conf_parse("max_split_size_mb:64,", &c, msg, sizeof msg), 0);
    CHECK_EQ_INT(memest_alloc_conf_parse("max_split_size_mb:64,,", &c, msg, sizeof msg), -1);
}

int main(void)
{
    test_retry_completes();
    test_retry_fails();
    test_split_segment_stays();
    test_max_split();
    test_oversize_rounding();
    test_roundup();
    test_expandable_grows();
    test_expandable_release();
    test_least();
    test_conf_errors();
    return CHECK_DONE();
}
