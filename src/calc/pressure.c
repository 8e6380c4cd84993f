/* pressure.c - the step on a card that is its constraint: the least memory
 * it runs in, and whether it runs on the card, from the replays of its
 * allocation requests under a capacity (src/sim/alloc_replay.c). */
#include <stdlib.h>
#include <string.h>

#include "memest/alloc.h"
#include "memest/calc.h"

/* Replays the search may take: each is one pass over the step's requests
 * (under a millisecond for an 8B model's 8,000). At most 256, and about
 * 2^20 requests replayed in all (at least 4 replays), so that the search
 * costs a few estimates at most, whatever the graph. */
#define MAX_REPLAYS 256u
#define MAX_REPLAYED ((size_t)1 << 20)

static unsigned replay_budget(const struct memest_alloc_trace *t)
{
    size_t n = t->n ? MAX_REPLAYED / t->n : MAX_REPLAYS;
    return n > MAX_REPLAYS ? MAX_REPLAYS : n < 4 ? 4u : (unsigned)n;
}

static int fail(int rc, struct memest_error *err)
{
    if (rc == -1)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    return memest_errf(err, MEMEST_ERR_LIMIT, NULL,
                       "the step needs more than 2^62 bytes in one allocation, or more than "
                       "2^63 - 1 bytes of memory in all");
}

int memest_calc_pressure(const struct memest_alloc_trace *t, const struct memest_step_cfg *cfg,
                         bool least, const struct memest_peak *pk, uint64_t overhead,
                         struct memest_pressure *out, struct memest_error *err)
{
    memset(out, 0, sizeof *out);
    int rc;
    if (least) {
        /* the simulator's own replay gave the top (reserved only grows
         * without a capacity) and a floor (the step's allocated peak) */
        struct memest_alloc_least l = {.top = pk->reserved, .floor = pk->bytes};
        if ((rc = memest_alloc_least_known(t, &cfg->alloc, cfg->fraction_cap != 0,
                                           replay_budget(t), &l)) != 0)
            return fail(rc, err);
        out->searched = true;
        out->least = l.least;
        out->least_exact = l.exact;
        out->replays = l.replays;
    }
    if (!cfg->card_usable)
        return 0;
    out->judged = true;
    out->capacity = cfg->card_usable > overhead ? cfg->card_usable - overhead : 0;
    /* set_per_process_memory_fraction: its check before each segment, where
     * it is the tighter limit */
    bool fraction = cfg->fraction_cap && cfg->fraction_cap < out->capacity;
    if (fraction)
        out->capacity = cfg->fraction_cap;
    out->fraction = fraction;
    out->reserved = pk->reserved;
    if (out->capacity >= pk->reserved && !fraction) {   /* the unconstrained replay */
        out->completes = true;
        return 0;
    }
    struct memest_alloc_run run;
    if ((rc = memest_alloc_replay(t, &cfg->alloc, out->capacity, fraction, &run)) != 0)
        return fail(rc, err);
    out->completes = run.completes;
    out->reserved = run.max_reserved;
    out->retries = run.retries;
    out->released = run.released;
    return 0;
}

/* The requests of a timeline's events (0-byte ones never reach the
 * allocator), with each request's event in at[]. 0 / -1. */
static int timeline_trace(const struct memest_timeline *tl, struct memest_alloc_trace *t,
                          size_t **at)
{
    *at = malloc(sizeof **at * (tl->n ? tl->n : 1));
    if (!*at || memest_alloc_trace_reserve(t, tl->n) != 0)
        return -1;
    for (size_t i = 0; i < tl->n; i++) {
        const struct memest_event *e = &tl->ev[i];
        if (e->bytes == 0)
            continue;
        (*at)[t->n] = i;
        if (memest_alloc_trace_push_on(t, e->kind == MEMEST_EV_FREE, e->id, e->bytes,
                                       (uint8_t)(e->stream & ~MEMEST_EV_RECORDED),
                                       (e->stream & MEMEST_EV_RECORDED) != 0) != 0)
            return -1;
    }
    return 0;
}

int memest_calc_device_replay(const struct memest_timeline *tl, const struct memest_alloc_conf *c,
                              const struct memest_device_segments *d,
                              struct memest_device_replay *out, struct memest_error *err)
{
    memset(out, 0, sizeof *out);
    if (c && c->expandable)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "the probe does not replay expandable segments under memory "
                           "pressure (their pages are mapped, not cudaMalloc'd)");
    struct memest_alloc_trace t = {0};
    size_t *at = NULL;
    int rc = timeline_trace(tl, &t, &at);
    struct memest_alloc_least l;
    if (rc == 0)
        rc = memest_alloc_least_capacity(&t, c, false, replay_budget(&t), &l);
    struct memest_alloc_run run;
    struct memest_alloc_device dev = {d->seg_alloc, d->seg_free, d->ctx};
    if (rc == 0)
        rc = memest_alloc_replay_device(&t, c, &dev, &run);
    if (rc == 0) {
        out->least = l.least;
        out->least_exact = l.exact;
        out->completes = run.completes;
        out->failed_event = run.completes ? tl->n : at[run.failed_at];
        out->max_reserved = run.max_reserved;
        out->retries = run.retries;
        out->released = run.released;
    }
    free(at);
    memest_alloc_trace_dispose(&t);
    if (rc == -3)
        return memest_errf(err, MEMEST_ERR_PROBE, NULL,
                           "CUDA driver error while replaying under memory pressure");
    return rc == 0 ? 0 : fail(rc, err);
}
