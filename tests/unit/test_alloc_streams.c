/* test_alloc_streams.c - the caching-allocator model with two streams:
 * hand-worked cases from c10/cuda/CUDACachingAllocator.cpp (PyTorch 2.6):
 * the pools are std::sets ordered by (stream, size, address) and
 * get_free_block returns only a block of the request's stream;
 * release_available_cached_blocks looks at the request's stream,
 * release_cached_blocks at every stream's; a block freed with record_stream
 * uses waits for their events (insert_events), freed at the next malloc
 * (process_events). Each expected figure is worked out in the comment
 * above it. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "memest/alloc.h"
#include "memest/alloc_conf.h"

#define MiB ((uint64_t)1 << 20)
#define BASE ((uint64_t)1 << 32)   /* the first segment's address (alloc.h) */

static uint32_t get_on(struct memest_alloc *a, uint64_t bytes, unsigned stream, uint64_t expect)
{
    uint32_t h = UINT32_MAX;
    uint64_t got = 0;
    CHECK_EQ_INT(memest_alloc_malloc_on(a, bytes, stream, &h, &got), 0);
    CHECK_EQ_U64(got, expect);
    return h;
}

/* Stream 1 asks for 1000 bytes: 1024 (two 512-byte steps) out of a new
 * 2 MiB small segment at BASE; freed, the segment is cached in stream 1's
 * small pool. Stream 0 asks for 1000 bytes: its small pool is empty, so a
 * second 2 MiB segment at BASE + 2 MiB: reserved 4 MiB, 2 segments. Stream
 * 1 asks again: its cached segment serves it at BASE, reserved stays 4 MiB.
 * The same in the large pool: 12 MiB on stream 1 (a 12 MiB segment at
 * BASE + 4 MiB), freed; 12 MiB on stream 0 cannot take it: a new 12 MiB
 * segment at BASE + 16 MiB, reserved 4 + 12 + 12 = 28 MiB. A stream that
 * is not modelled (8) is refused. */
static void test_pools_per_stream(void)
{
    struct memest_alloc *a = memest_alloc_create();
    const struct memest_alloc_stats *s = memest_alloc_stats(a);
    uint32_t h1 = get_on(a, 1000, 1, 1024);
    CHECK_EQ_U64(memest_alloc_addr(a, h1), BASE);
    memest_alloc_free(a, h1);
    uint32_t h0 = get_on(a, 1000, 0, 1024);
    CHECK_EQ_U64(memest_alloc_addr(a, h0), BASE + 2 * MiB);
    CHECK_EQ_U64(s->reserved, 4 * MiB);
    CHECK_EQ_U64(s->segments, 2);
    h1 = get_on(a, 1000, 1, 1024);
    CHECK_EQ_U64(memest_alloc_addr(a, h1), BASE);
    CHECK_EQ_U64(s->reserved, 4 * MiB);
    uint32_t g1 = get_on(a, 12 * MiB, 1, 12 * MiB);
    CHECK_EQ_U64(memest_alloc_addr(a, g1), BASE + 4 * MiB);
    memest_alloc_free(a, g1);
    uint32_t g0 = get_on(a, 12 * MiB, 0, 12 * MiB);
    CHECK_EQ_U64(memest_alloc_addr(a, g0), BASE + 16 * MiB);
    CHECK_EQ_U64(s->reserved, 28 * MiB);
    uint32_t h;
    uint64_t got;
    CHECK_EQ_INT(memest_alloc_malloc_on(a, 1000, MEMEST_ALLOC_STREAMS, &h, &got), -1);
    memest_alloc_destroy(a);
}

/* Capacity 40 MiB. Stream 1: 12 MiB, freed (a whole cached 12 MiB
 * segment), and 1000 bytes kept live (a 2 MiB small segment that holds a
 * live block). Stream 0: 12 MiB, freed: its own 12 MiB segment. Reserved
 * 12 + 2 + 12 = 26 MiB. Stream 0 asks for 20 MiB: no block of stream 0 is
 * that large; alloc_block would hold 26 + 20 = 46 > 40 MiB;
 * release_available_cached_blocks does nothing without max_split_size_mb;
 * release_cached_blocks frees every stream's free whole segments: stream
 * 0's 12 MiB and stream 1's 12 MiB (24 MiB, 2 cudaFrees), not the small
 * segment with the live block; the retry holds 2 + 20 = 22 <= 40 MiB.
 * Reserved 22 MiB, peak 26 MiB, one retry. */
static void test_release_cached_all_streams(void)
{
    struct memest_alloc *a = memest_alloc_create();
    const struct memest_alloc_stats *s = memest_alloc_stats(a);
    memest_alloc_set_capacity(a, 40 * MiB, false);
    memest_alloc_free(a, get_on(a, 12 * MiB, 1, 12 * MiB));
    get_on(a, 1000, 1, 1024);
    memest_alloc_free(a, get_on(a, 12 * MiB, 0, 12 * MiB));
    CHECK_EQ_U64(s->reserved, 26 * MiB);
    get_on(a, 20 * MiB, 0, 20 * MiB);
    CHECK_EQ_U64(s->released, 24 * MiB);
    CHECK_EQ_U64(s->segment_frees, 2);
    CHECK_EQ_U64(s->reserved, 22 * MiB);
    CHECK_EQ_U64(s->max_reserved, 26 * MiB);
    CHECK_EQ_U64(s->retries, 1);
    memest_alloc_destroy(a);
}

/* max_split_size_mb:32 (blocks of 32 MiB and more are oversize), capacity
 * 190 MiB. Stream 1: 80 MiB, freed (segment A at BASE); stream 0: 80 MiB,
 * freed (segment B at BASE + 80 MiB): reserved 160 MiB. Stream 0 asks for
 * 40 MiB: B is refused (80 >= 40 + max_non_split_rounding's 20 MiB);
 * alloc_block would hold 200 > 190 MiB; release_available_cached_blocks
 * looks in stream 0's large pool only: the smallest block of at least
 * max(40, 32) MiB is B (A, lower in address, is stream 1's): B goes back,
 * 80 MiB released, it returns true and alloc_block holds 80 + 40 = 120 MiB
 * (no release_cached_blocks: no retry), the segment at BASE + 160 MiB.
 * Stream 1 then asks for 80 MiB: A, still cached, serves it: reserved
 * stays 120 MiB. */
static void test_release_available_own_stream(void)
{
    struct memest_alloc_conf c;
    char msg[128];
    CHECK_EQ_INT(memest_alloc_conf_parse("max_split_size_mb:32", &c, msg, sizeof msg), 0);
    struct memest_alloc *a = memest_alloc_create_with(&c);
    const struct memest_alloc_stats *s = memest_alloc_stats(a);
    memest_alloc_set_capacity(a, 190 * MiB, false);
    memest_alloc_free(a, get_on(a, 80 * MiB, 1, 80 * MiB));
    memest_alloc_free(a, get_on(a, 80 * MiB, 0, 80 * MiB));
    uint32_t h = get_on(a, 40 * MiB, 0, 40 * MiB);
    CHECK_EQ_U64(memest_alloc_addr(a, h), BASE + 160 * MiB);
    CHECK_EQ_U64(s->released, 80 * MiB);
    CHECK_EQ_U64(s->retries, 0);
    CHECK_EQ_U64(s->reserved, 120 * MiB);
    h = get_on(a, 80 * MiB, 1, 80 * MiB);
    CHECK_EQ_U64(memest_alloc_addr(a, h), BASE);
    CHECK_EQ_U64(s->reserved, 120 * MiB);
    memest_alloc_destroy(a);
}

/* record_stream: stream 1 (an all-gather stream) makes 12 MiB (a 12 MiB
 * segment at BASE) and 1000 bytes (a 2 MiB small segment at BASE + 12 MiB,
 * block 1024); the 12 MiB block, used by stream 0, is freed deferred:
 * allocated drops by 12 MiB at once (to 1024), 12 MiB are pending, and
 * the block is in no pool. The 1000-byte block freed deferred too: 1024
 * more pending, its segment not yet whole. The next malloc (stream 1,
 * 12 MiB) first frees both (process_events: the events are taken as
 * complete), then is served by the 12 MiB block at BASE: reserved stays
 * 14 MiB, nothing pending. Under a capacity of 14 MiB a 2 MiB request of
 * stream 0 then fails past alloc_block (14 + 20 > 14), and
 * release_cached_blocks frees the small segment, whole again since its
 * block was freed: 2 MiB released. */
static void test_deferred_free(void)
{
    struct memest_alloc *a = memest_alloc_create();
    const struct memest_alloc_stats *s = memest_alloc_stats(a);
    uint32_t big = get_on(a, 12 * MiB, 1, 12 * MiB);
    uint32_t small = get_on(a, 1000, 1, 1024);
    memest_alloc_free_deferred(a, big);
    CHECK_EQ_U64(s->allocated, 1024);
    CHECK_EQ_U64(s->pending, 12 * MiB);
    CHECK_EQ_U64(s->live_blocks, 1);
    memest_alloc_free_deferred(a, small);
    CHECK_EQ_U64(s->allocated, 0);
    CHECK_EQ_U64(s->pending, 12 * MiB + 1024);
    CHECK_EQ_U64(s->reserved, 14 * MiB);
    uint32_t again = get_on(a, 12 * MiB, 1, 12 * MiB);
    CHECK_EQ_U64(memest_alloc_addr(a, again), BASE);
    CHECK_EQ_U64(s->pending, 0);
    CHECK_EQ_U64(s->reserved, 14 * MiB);
    CHECK_EQ_U64(s->segments, 2);
    memest_alloc_set_capacity(a, 14 * MiB, false);
    uint32_t h;
    uint64_t got;
    CHECK_EQ_INT(memest_alloc_malloc_on(a, 2 * MiB, 0, &h, &got), -3);
    CHECK_EQ_U64(s->released, 2 * MiB);
    CHECK_EQ_U64(s->reserved, 12 * MiB);
    memest_alloc_destroy(a);
}

/* The trace carries the stream and the deferral: stream 1 allocates 12 MiB
 * and frees it deferred, stream 0 allocates 12 MiB (a second segment: the
 * first is stream 1's), then stream 1 12 MiB again (its cached segment).
 * Replayed: peak reserved 24 MiB, peak allocated 24 MiB (stream 0's and
 * stream 1's second are live together). Under 20 MiB: stream 0's request
 * fails alloc_block (12 + 12 > 20), release_cached_blocks frees stream
 * 1's segment (free since the malloc's process_events: 12 MiB released),
 * the retry fits; stream 1's second request then needs a segment again
 * while stream 0's is live: 24 > 20 with nothing to release: it fails at
 * request 3. */
static void test_trace(void)
{
    struct memest_alloc_trace t;
    memset(&t, 0, sizeof t);
    CHECK_EQ_INT(memest_alloc_trace_push_on(&t, false, 0, 12 * MiB, 1, false), 0);
    CHECK_EQ_INT(memest_alloc_trace_push_on(&t, true, 0, 0, 0, true), 0);
    CHECK_EQ_INT(memest_alloc_trace_push_on(&t, false, 1, 12 * MiB, 0, false), 0);
    CHECK_EQ_INT(memest_alloc_trace_push_on(&t, false, 2, 12 * MiB, 1, false), 0);
    CHECK_EQ_INT(t.op[1].deferred, 1);
    CHECK_EQ_INT(t.op[2].stream, 0);
    CHECK_EQ_INT(t.op[3].stream, 1);
    struct memest_alloc_run run;
    CHECK_EQ_INT(memest_alloc_replay(&t, NULL, UINT64_MAX, false, &run), 0);
    CHECK(run.completes);
    CHECK_EQ_U64(run.max_reserved, 24 * MiB);
    CHECK_EQ_U64(run.max_allocated, 24 * MiB);
    CHECK_EQ_INT(memest_alloc_replay(&t, NULL, 20 * MiB, false, &run), 0);
    CHECK(!run.completes);
    CHECK_EQ_U64(run.failed_at, 3);
    CHECK_EQ_U64(run.released, 12 * MiB);
    memest_alloc_trace_dispose(&t);
}

int main(void)
{
    test_pools_per_stream();
    test_release_cached_all_streams();
    test_release_available_own_stream();
    test_deferred_free();
    test_trace();
    return CHECK_DONE();
}
