/* timeline.c - the step's allocation/free event list: a growable array with
 * overflow-checked growth, and the walk that finds its peak of live bytes. */
#include "memest/timeline.h"

#include <assert.h>
#include <stdlib.h>

#include "memest/checked.h"

static const char *const phase_names[MEMEST_PH_COUNT] = {
    [MEMEST_PH_SETUP] = "setup",         [MEMEST_PH_FORWARD] = "forward",
    [MEMEST_PH_LOSS] = "loss",           [MEMEST_PH_BACKWARD] = "backward",
    [MEMEST_PH_OPTIMIZER] = "optimizer", [MEMEST_PH_TEARDOWN] = "teardown",
};
static_assert(MEMEST_PH_COUNT == 6, "MEMEST_PH_COUNT changed: update phase_names");

static const char *const category_names[MEMEST_CAT_COUNT] = {
    [MEMEST_CAT_PARAMS] = "parameters",
    [MEMEST_CAT_BUFFERS] = "buffers",
    [MEMEST_CAT_GRADS] = "gradients",
    [MEMEST_CAT_OPTSTATE] = "optimizer_state",
    [MEMEST_CAT_INPUTS] = "inputs",
    [MEMEST_CAT_SAVED] = "saved_activations",
    [MEMEST_CAT_TRANSIENT] = "transient",
    [MEMEST_CAT_ACTGRADS] = "activation_gradients",
    [MEMEST_CAT_OPTTEMP] = "optimizer_temporaries",
    [MEMEST_CAT_WORKSPACE] = "workspace",
    [MEMEST_CAT_COMM] = "comm_buffers",
};
static_assert(MEMEST_CAT_COUNT == 11, "MEMEST_CAT_COUNT changed: update category_names");

const char *memest_phase_name(enum memest_phase p)
{
    return (unsigned)p < MEMEST_PH_COUNT ? phase_names[p] : "?";
}

const char *memest_category_name(enum memest_category c)
{
    return (unsigned)c < MEMEST_CAT_COUNT ? category_names[c] : "?";
}

/* Makes room for one more event. 0, or -1 when out of memory or when the
 * array size would overflow. */
static int grow(struct memest_timeline *t)
{
    if (t->n < t->cap)
        return 0;
    uint64_t cap = t->cap ? (uint64_t)t->cap * 2 : 256, bytes;
    if (cap > SIZE_MAX || !memest_mul(cap, sizeof *t->ev, &bytes) || bytes > SIZE_MAX)
        return -1;
    struct memest_event *ev = realloc(t->ev, (size_t)bytes);
    if (!ev)
        return -1;
    t->ev = ev;
    t->cap = (size_t)cap;
    return 0;
}

static int push(struct memest_timeline *t, uint8_t kind, uint8_t phase, uint8_t cat,
                uint32_t node, uint32_t id, uint64_t bytes)
{
    if (grow(t) < 0)
        return -1;
    t->ev[t->n++] = (struct memest_event){
        .kind = kind, .phase = phase, .category = cat, .node = node, .id = id, .bytes = bytes,
    };
    return 0;
}

int memest_timeline_alloc(struct memest_timeline *t, uint8_t phase, uint8_t cat,
                          uint32_t node, uint64_t bytes, uint32_t *id)
{
    if (t->next_id == UINT32_MAX)   /* ids exhausted */
        return -1;
    if (push(t, MEMEST_EV_ALLOC, phase, cat, node, t->next_id, bytes) < 0)
        return -1;
    if (id)
        *id = t->next_id;
    t->next_id++;
    return 0;
}

int memest_timeline_free(struct memest_timeline *t, uint8_t phase, uint8_t cat,
                         uint32_t node, uint32_t id, uint64_t bytes)
{
    return push(t, MEMEST_EV_FREE, phase, cat, node, id, bytes);
}

void memest_timeline_reset(struct memest_timeline *t)
{
    t->n = 0;
    t->next_id = 0;
    t->nseg = 0;
}

void memest_timeline_dispose(struct memest_timeline *t)
{
    free(t->ev);
    free(t->seg);
    free(t->addr);
    *t = (struct memest_timeline){0};
}

/* Live bytes go up by each ALLOC and down by each FREE (never below 0). The
 * peak is the largest value reached after an event; *at_event is the first
 * event that reaches it, or 0 when the timeline is empty or never holds a
 * byte. Sums saturate at UINT64_MAX. */
uint64_t memest_timeline_peak(const struct memest_timeline *t, size_t *at_event)
{
    uint64_t live = 0, peak = 0;
    size_t at = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct memest_event *e = &t->ev[i];
        if (e->kind == MEMEST_EV_ALLOC) {
            live = memest_sat_add(live, e->bytes);
            if (live > peak) {
                peak = live;
                at = i;
            }
        } else {
            live = e->bytes < live ? live - e->bytes : 0;
        }
    }
    if (at_event)
        *at_event = at;
    return peak;
}

uint8_t memest_live_apply(struct memest_live *l, const struct memest_event *e,
                          enum memest_live_measure m)
{
    uint8_t c = e->category < MEMEST_CAT_COUNT ? e->category : 0;
    uint64_t v = m == MEMEST_LIVE_BLOCKS ? e->block : e->bytes;
    if (e->kind == MEMEST_EV_ALLOC) {
        l->cat[c] += v;
        l->total += v;
    } else {
        l->cat[c] -= v;
        l->total -= v;
    }
    return c;
}
