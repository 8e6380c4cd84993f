/* test_timeline.c - the event list and its peak walk. */
#include <stdint.h>

#include "check.h"
#include "memest/timeline.h"

static void test_alloc_free_peak(void)
{
    struct memest_timeline t = {0};
    uint32_t a, b, c;
    CHECK_EQ_INT(memest_timeline_alloc(&t, MEMEST_PH_SETUP, MEMEST_CAT_PARAMS, 0, 100, &a), 0);
    CHECK_EQ_INT(memest_timeline_alloc(&t, MEMEST_PH_FORWARD, MEMEST_CAT_SAVED, 1, 50, &b), 0);
    CHECK_EQ_INT(memest_timeline_free(&t, MEMEST_PH_FORWARD, MEMEST_CAT_SAVED, 1, b, 50), 0);
    CHECK_EQ_INT(memest_timeline_alloc(&t, MEMEST_PH_BACKWARD, MEMEST_CAT_GRADS, 2, 70, &c), 0);
    CHECK_EQ_INT(memest_timeline_free(&t, MEMEST_PH_TEARDOWN, MEMEST_CAT_GRADS, 2, c, 70), 0);
    CHECK_EQ_INT(memest_timeline_free(&t, MEMEST_PH_TEARDOWN, MEMEST_CAT_PARAMS, 0, a, 100), 0);
    CHECK_EQ_U64(a, 0);
    CHECK_EQ_U64(b, 1);
    CHECK_EQ_U64(c, 2);
    CHECK_EQ_U64(t.n, 6);
    CHECK_EQ_U64(t.next_id, 3);
    CHECK_EQ_INT(t.ev[2].kind, MEMEST_EV_FREE);
    CHECK_EQ_U64(t.ev[2].id, b);
    CHECK_EQ_U64(t.ev[3].bytes, 70);
    CHECK_EQ_INT(t.ev[3].phase, MEMEST_PH_BACKWARD);
    CHECK_EQ_INT(t.ev[3].category, MEMEST_CAT_GRADS);
    CHECK_EQ_U64(t.ev[3].node, 2);

    size_t at = 99;
    CHECK_EQ_U64(memest_timeline_peak(&t, &at), 170);   /* 100 + 70 > 100 + 50 */
    CHECK_EQ_U64(at, 3);
    CHECK_EQ_U64(memest_timeline_peak(&t, NULL), 170);

    memest_timeline_reset(&t);
    CHECK_EQ_U64(t.n, 0);
    CHECK_EQ_U64(t.next_id, 0);
    CHECK_EQ_U64(memest_timeline_peak(&t, &at), 0);
    CHECK_EQ_U64(at, 0);
    memest_timeline_dispose(&t);
    CHECK(t.ev == NULL && t.n == 0 && t.cap == 0);
    memest_timeline_dispose(&t);   /* twice is harmless */
}

static void test_first_peak_wins(void)
{
    struct memest_timeline t = {0};
    uint32_t a, b;
    memest_timeline_alloc(&t, MEMEST_PH_FORWARD, MEMEST_CAT_TRANSIENT, 0, 10, &a);
    memest_timeline_free(&t, MEMEST_PH_FORWARD, MEMEST_CAT_TRANSIENT, 0, a, 10);
    memest_timeline_alloc(&t, MEMEST_PH_FORWARD, MEMEST_CAT_TRANSIENT, 1, 10, &b);
    size_t at;
    CHECK_EQ_U64(memest_timeline_peak(&t, &at), 10);
    CHECK_EQ_U64(at, 0);
    memest_timeline_dispose(&t);
}

static void test_growth_and_saturation(void)
{
    struct memest_timeline t = {0};
    for (uint32_t i = 0; i < 100000; i++) {
        uint32_t id;
        if (memest_timeline_alloc(&t, MEMEST_PH_FORWARD, MEMEST_CAT_SAVED, i, 3, &id) != 0) {
            CHECK(0);
            break;
        }
        CHECK_EQ_U64(id, i);
    }
    size_t at;
    CHECK_EQ_U64(memest_timeline_peak(&t, &at), 300000);
    CHECK_EQ_U64(at, 99999);
    memest_timeline_reset(&t);

    /* Sums saturate instead of wrapping; frees never go below 0. */
    memest_timeline_alloc(&t, MEMEST_PH_SETUP, MEMEST_CAT_PARAMS, 0, INT64_MAX, NULL);
    memest_timeline_alloc(&t, MEMEST_PH_SETUP, MEMEST_CAT_PARAMS, 0, 5, NULL);
    CHECK_EQ_U64(memest_timeline_peak(&t, &at), UINT64_MAX);
    CHECK_EQ_U64(at, 1);
    memest_timeline_reset(&t);
    memest_timeline_free(&t, MEMEST_PH_SETUP, MEMEST_CAT_PARAMS, 0, 7, 100);
    memest_timeline_alloc(&t, MEMEST_PH_SETUP, MEMEST_CAT_PARAMS, 0, 1, NULL);
    CHECK_EQ_U64(memest_timeline_peak(&t, &at), 1);

    /* Ids are exhausted cleanly. */
    t.next_id = UINT32_MAX;
    CHECK_EQ_INT(memest_timeline_alloc(&t, MEMEST_PH_SETUP, MEMEST_CAT_PARAMS, 0, 1, NULL), -1);
    memest_timeline_dispose(&t);
}

static void test_names(void)
{
    CHECK_STR_EQ(memest_phase_name(MEMEST_PH_SETUP), "setup");
    CHECK_STR_EQ(memest_phase_name(MEMEST_PH_FORWARD), "forward");
    CHECK_STR_EQ(memest_phase_name(MEMEST_PH_LOSS), "loss");
    CHECK_STR_EQ(memest_phase_name(MEMEST_PH_BACKWARD), "backward");
    CHECK_STR_EQ(memest_phase_name(MEMEST_PH_OPTIMIZER), "optimizer");
    CHECK_STR_EQ(memest_phase_name(MEMEST_PH_TEARDOWN), "teardown");
    CHECK_STR_EQ(memest_phase_name(MEMEST_PH_COUNT), "?");
    for (int c = 0; c < MEMEST_CAT_COUNT; c++)
        CHECK(memest_category_name((enum memest_category)c)[0] != '?');
    CHECK_STR_EQ(memest_category_name(MEMEST_CAT_SAVED), "saved_activations");
    CHECK_STR_EQ(memest_category_name(MEMEST_CAT_COUNT), "?");
}

/* memest_live_apply: live bytes per category and in all, in the tensors'
 * exact bytes or in the allocator's blocks. */
static void test_live_walk(void)
{
    struct memest_timeline t = {0};
    uint32_t a, s;
    CHECK_EQ_INT(memest_timeline_alloc(&t, MEMEST_PH_SETUP, MEMEST_CAT_PARAMS, 0, 100, &a), 0);
    CHECK_EQ_INT(memest_timeline_alloc(&t, MEMEST_PH_FORWARD, MEMEST_CAT_SAVED, 1, 50, &s), 0);
    CHECK_EQ_INT(memest_timeline_free(&t, MEMEST_PH_BACKWARD, MEMEST_CAT_SAVED, 1, s, 50), 0);
    t.ev[0].block = 512;   /* the allocator's rounding */
    t.ev[1].block = t.ev[2].block = 512;
    t.ev[1].category = MEMEST_CAT_COUNT + 3;   /* out of range: counted as the first */
    t.ev[2].category = MEMEST_CAT_COUNT + 3;
    struct memest_live tensors = {0}, blocks = {0};
    CHECK_EQ_INT(memest_live_apply(&tensors, &t.ev[0], MEMEST_LIVE_TENSORS), MEMEST_CAT_PARAMS);
    memest_live_apply(&blocks, &t.ev[0], MEMEST_LIVE_BLOCKS);
    CHECK_EQ_INT(memest_live_apply(&tensors, &t.ev[1], MEMEST_LIVE_TENSORS), 0);
    memest_live_apply(&blocks, &t.ev[1], MEMEST_LIVE_BLOCKS);
    CHECK_EQ_U64(tensors.cat[MEMEST_CAT_PARAMS], 150);
    CHECK_EQ_U64(tensors.total, 150);
    CHECK_EQ_U64(blocks.total, 1024);
    memest_live_apply(&tensors, &t.ev[2], MEMEST_LIVE_TENSORS);
    memest_live_apply(&blocks, &t.ev[2], MEMEST_LIVE_BLOCKS);
    CHECK_EQ_U64(tensors.cat[MEMEST_CAT_PARAMS], 100);
    CHECK_EQ_U64(tensors.total, 100);
    CHECK_EQ_U64(blocks.cat[MEMEST_CAT_PARAMS], 512);
    CHECK_EQ_U64(blocks.total, 512);
    CHECK_EQ_U64(tensors.cat[MEMEST_CAT_SAVED], 0);
    memest_timeline_dispose(&t);
}

int main(void)
{
    test_live_walk();
    test_alloc_free_peak();
    test_first_peak_wins();
    test_growth_and_saturation();
    test_names();
    return CHECK_DONE();
}
