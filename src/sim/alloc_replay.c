/* alloc_replay.c - a step's allocation requests replayed on the allocator
 * model under a capacity, and the least capacity the step runs in (alloc.h
 * says why the search is exact). */
#include <stdlib.h>
#include <string.h>

#include "memest/alloc.h"

#define GRANULE MEMEST_ALLOC_SMALL_BUFFER   /* every segment and page is a multiple */
#define SCAN_REPLAYS 8u   /* the exact scan's replays, before the bisection */

int memest_alloc_trace_push(struct memest_alloc_trace *t, bool is_free, uint32_t id,
                            uint64_t bytes)
{
    return memest_alloc_trace_push_on(t, is_free, id, bytes, 0, false);
}

int memest_alloc_trace_push_on(struct memest_alloc_trace *t, bool is_free, uint32_t id,
                               uint64_t bytes, uint8_t stream, bool deferred)
{
    if (t->n == t->cap) {
        size_t c = t->cap ? t->cap * 2 : 4096;
        if (c > SIZE_MAX / sizeof *t->op)
            return -1;
        struct memest_alloc_op *p = realloc(t->op, c * sizeof *p);
        if (!p)
            return -1;
        t->op = p;
        t->cap = c;
    }
    t->op[t->n++] = (struct memest_alloc_op){.bytes = bytes, .id = id, .free = is_free,
                                             .stream = stream, .deferred = deferred};
    if (id >= t->nid)
        t->nid = id + 1;
    return 0;
}

int memest_alloc_trace_reserve(struct memest_alloc_trace *t, uint64_t n)
{
    if (n <= t->cap)
        return 0;
    if (n > SIZE_MAX / sizeof *t->op)
        return -1;
    struct memest_alloc_op *p = realloc(t->op, (size_t)n * sizeof *p);
    if (!p)
        return -1;
    t->op = p;
    t->cap = (size_t)n;
    return 0;
}

void memest_alloc_trace_dispose(struct memest_alloc_trace *t)
{
    free(t->op);
    memset(t, 0, sizeof *t);
}

/* A replay on allocator a (reset here) with h, room for a handle per id. */
static int replay_on(struct memest_alloc *a, uint32_t *h, const struct memest_alloc_trace *t,
                     const struct memest_alloc_conf *c, uint64_t capacity, bool fraction,
                     struct memest_alloc_run *out)
{
    memset(out, 0, sizeof *out);
    memest_alloc_reset(a, c);
    memest_alloc_set_capacity(a, capacity, fraction);
    int rc = 0;
    out->completes = true;
    for (size_t i = 0; i < t->n && rc == 0; i++) {
        const struct memest_alloc_op *op = &t->op[i];
        if (op->free) {
            (op->deferred ? memest_alloc_free_deferred : memest_alloc_free)(a, h[op->id]);
            continue;
        }
        uint64_t got;
        int arc = memest_alloc_malloc_on(a, op->bytes, op->stream, &h[op->id], &got);
        if (arc == -3) {
            out->completes = false;
            out->failed_at = i;
            break;
        }
        rc = arc == -2 ? -1 : arc == -1 ? -2 : arc == -4 ? -3 : 0;
    }
    const struct memest_alloc_stats *s = memest_alloc_stats(a);
    out->need_ok = s->need_ok;
    out->need_fail = s->need_fail;
    out->inexact = s->inexact;
    out->max_reserved = s->max_reserved;
    out->max_allocated = s->max_allocated;
    out->retries = s->retries;
    out->released = s->released;
    out->segment_frees = s->segment_frees;
    return rc;
}

/* The allocator and the handles the replays share. */
struct replayer {
    struct memest_alloc *a;
    uint32_t *h;
};

static int replayer_open(struct replayer *r, const struct memest_alloc_trace *t)
{
    r->h = malloc(sizeof *r->h * (t->nid ? t->nid : 1));
    r->a = memest_alloc_create();
    if (r->h && r->a)
        return 0;
    free(r->h);
    memest_alloc_destroy(r->a);
    return -1;
}

static void replayer_close(struct replayer *r)
{
    free(r->h);
    memest_alloc_destroy(r->a);
}

int memest_alloc_replay(const struct memest_alloc_trace *t, const struct memest_alloc_conf *c,
                        uint64_t capacity, bool fraction, struct memest_alloc_run *out)
{
    struct replayer r;
    if (replayer_open(&r, t) != 0)
        return -1;
    int rc = replay_on(r.a, r.h, t, c, capacity, fraction, out);
    replayer_close(&r);
    return rc;
}

static uint64_t up(uint64_t x) { return (x + GRANULE - 1) / GRANULE * GRANULE; }

int memest_alloc_replay_device(const struct memest_alloc_trace *t,
                               const struct memest_alloc_conf *c,
                               const struct memest_alloc_device *d, struct memest_alloc_run *out)
{
    struct replayer r;
    if (replayer_open(&r, t) != 0)
        return -1;
    memest_alloc_set_device(r.a, d);
    int rc = replay_on(r.a, r.h, t, c, UINT64_MAX, false, out);
    if (memest_alloc_device_close(r.a) != 0 && rc == 0)
        rc = -3;
    replayer_close(&r);
    return rc;
}

/* The search (alloc.h) on one replayer. */
/* The exact scan from *cap up, while out->replays < until and *cap is
 * below out->top: every capacity below the one replayed next is known to
 * fail. *found: one completed, out->least is it. */
static int scan_up(struct replayer *r, const struct memest_alloc_trace *t,
                   const struct memest_alloc_conf *c, bool fraction, unsigned until,
                   uint64_t *cap, struct memest_alloc_least *out, bool *found)
{
    struct memest_alloc_run run;
    *found = false;
    while (*cap < out->top && out->replays < until) {
        int rc = replay_on(r->a, r->h, t, c, *cap, fraction, &run);
        if (rc != 0)
            return rc;
        out->replays++;
        if (run.completes) {
            out->least = *cap;
            *found = true;
            return 0;
        }
        uint64_t next = run.inexact || run.need_fail == UINT64_MAX ? *cap + GRANULE
                                                                  : run.need_fail;
        *cap = next > *cap ? next : *cap + GRANULE;
    }
    return 0;
}

/* top and floor (out) known, or from an unconstrained replay when top is 0 */
static int least_on(struct replayer *r, const struct memest_alloc_trace *t,
                    const struct memest_alloc_conf *c, bool fraction, unsigned max_replays,
                    struct memest_alloc_least *out)
{
    struct memest_alloc_run run;
    int rc;
    if (!out->top) {
        if ((rc = replay_on(r->a, r->h, t, c, UINT64_MAX, fraction, &run)) != 0)
            return rc;
        out->replays = 1;
        out->top = run.max_reserved;
        out->floor = up(run.max_allocated);
    }
    out->floor = up(out->floor);
    out->least = out->top;
    out->exact = true;
    uint64_t cap = out->floor;
    /* the scan first, a few replays, which settle most steps exactly */
    unsigned scan = max_replays / 2 < SCAN_REPLAYS ? max_replays / 2 : SCAN_REPLAYS;
    bool found;
    if ((rc = scan_up(r, t, c, fraction, scan, &cap, out, &found)) != 0 || found ||
        cap >= out->top)
        return rc;
    /* then a bisection of [cap, top) for a capacity that completes, each
     * replay settling the interval it lies in: a failure every capacity up
     * to its need_fail, a completion every one down to its need_ok */
    uint64_t lo = cap, hi = out->top;   /* lo fails (or is untried), hi completes */
    unsigned bisect = out->replays + (max_replays - out->replays) / 2;
    while (hi - lo > GRANULE && out->replays < bisect) {
        uint64_t mid = lo + (hi - lo) / GRANULE / 2 * GRANULE;
        if ((rc = replay_on(r->a, r->h, t, c, mid, fraction, &run)) != 0)
            return rc;
        out->replays++;
        bool known = !run.inexact;
        if (run.completes)
            hi = known && run.need_ok > lo && run.need_ok < mid ? up(run.need_ok) : mid;
        else
            lo = known && run.need_fail != UINT64_MAX && run.need_fail - GRANULE > mid &&
                         run.need_fail - GRANULE < hi ? run.need_fail - GRANULE : mid;
    }
    out->least = hi;
    out->exact = false;
    /* what is left of the budget: the scan again, from where it stopped up
     * to hi; if it gets there, hi is exact (or it finds a smaller one) */
    uint64_t top = out->top;
    out->top = hi;
    rc = scan_up(r, t, c, fraction, max_replays, &cap, out, &found);
    out->exact = found || cap >= hi;
    if (!found)
        out->least = hi;
    out->top = top;
    return rc;
}

int memest_alloc_least_capacity(const struct memest_alloc_trace *t,
                                const struct memest_alloc_conf *c, bool fraction,
                                unsigned max_replays, struct memest_alloc_least *out)
{
    memset(out, 0, sizeof *out);
    return memest_alloc_least_known(t, c, fraction, max_replays, out);
}

int memest_alloc_least_known(const struct memest_alloc_trace *t,
                             const struct memest_alloc_conf *c, bool fraction,
                             unsigned max_replays, struct memest_alloc_least *out)
{
    out->replays = 0;
    struct replayer r;
    if (replayer_open(&r, t) != 0)
        return -1;
    int rc = least_on(&r, t, c, fraction, max_replays, out);
    replayer_close(&r);
    return rc;
}
