/* sim_replay.c - the allocator replayed over the simulated events as they
 * are made: the peaks, and the step's timeline exported (sim_internal.h).
 *
 * Each event goes through the caching-allocator model the moment the
 * simulator makes it (sim_ev_alloc, sim_ev_free), so that an estimate that
 * exports no timeline (a sweep's row, a search's point, the no-grad pass of
 * a plain estimate) keeps no event list at all: its memory and its work do
 * not grow with a second pass over the events. With a timeline asked for,
 * the events are stored as they replay and sim_finish() compacts them into
 * the step's timeline. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"
#include "memest/alloc.h"

struct idinfo {
    uint64_t bytes, block, addr;
    uint32_t handle;
    uint8_t cat;
    uint8_t stream;
    uint8_t early_free;   /* freed before the step starts */
};

static_assert(MEMEST_TIMELINE_RESERVED_UNIT == MEMEST_ALLOC_SMALL_BUFFER,
              "events count reserved memory in the allocator's smallest segments");

static uint32_t reserved_units(uint64_t reserved)
{
    uint64_t u = reserved / MEMEST_TIMELINE_RESERVED_UNIT;
    return u > UINT32_MAX ? UINT32_MAX : (uint32_t)u;
}

/* The replay's state: the allocator, what each allocation id got, what is
 * live (per category, in all, as exact tensor bytes, as saved activations),
 * the events so far and the peak of the step. */
struct sim_replay {
    struct memest_alloc *a;
    struct idinfo *info;
    size_t capinfo;
    /* the allocator's layout, when the caller asks for it (timeline.h) */
    bool layout;
    uint64_t *addr;             /* per event of the full list */
    size_t capaddr;
    struct memest_segment *seg;
    size_t nseg, capseg;
    uint64_t live[MEMEST_CAT_COUNT], total, tensors, saved;
    uint64_t saved_max;   /* the most `saved` has been since sim_replay_saved_mark */
    size_t nlive, nsetup, nev, start;
    bool started;
    struct memest_peak pk;
};

int sim_replay_begin(struct sim *S, bool layout, struct memest_alloc_trace *trace,
                     uint64_t events)
{
    S->trace = trace;
    if (trace && events && memest_alloc_trace_reserve(trace, events) != 0)
        return sim_nomem(S);
    struct sim_replay *rp = calloc(1, sizeof *rp);
    if (!rp || !(rp->a = memest_alloc_create_with(&S->cfg->alloc))) {
        free(rp);
        return sim_nomem(S);
    }
    rp->layout = layout;
    rp->pk.node = NONE;
    S->rp = rp;
    return 0;
}

void sim_replay_free(struct sim *S)
{
    struct sim_replay *rp = S->rp;
    if (!rp)
        return;
    memest_alloc_destroy(rp->a);
    free(rp->info);
    free(rp->addr);
    free(rp->seg);
    free(rp);
    S->rp = NULL;
}

uint64_t sim_replay_saved(const struct sim *S) { return S->rp->saved; }

uint64_t sim_replay_saved_mark(struct sim *S)
{
    uint64_t m = S->rp->saved_max;
    S->rp->saved_max = S->rp->saved;
    return m;
}

size_t sim_replay_events(const struct sim *S) { return S->rp->nev; }

/* Room for n entries of size sz in *p (capacity *cap, doubling). 0 / -1. */
static int reserve(void **p, size_t *cap, size_t n, size_t sz)
{
    if (n <= *cap)
        return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < n) {
        if (c > SIZE_MAX / 2 / sz)
            return -1;
        c *= 2;
    }
    void *q = realloc(*p, c * sz);
    if (!q)
        return -1;
    memset((char *)q + *cap * sz, 0, (c - *cap) * sz);
    *p = q;
    *cap = c;
    return 0;
}

void sim_replay_start(struct sim *S)
{
    /* the step starts: reset_peak_memory_stats(); the live set is the
     * exported setup, which reaches its total last */
    struct sim_replay *rp = S->rp;
    struct memest_peak *pk = &rp->pk;
    memest_alloc_reset_peak(rp->a);
    rp->nsetup = rp->nlive;
    rp->start = rp->nev;
    rp->started = true;
    pk->bytes = rp->total;
    pk->tensor_bytes = rp->tensors;
    pk->event = pk->tensor_event = rp->nsetup ? rp->nsetup - 1 : 0;
    pk->phase = MEMEST_PH_SETUP;
    memcpy(pk->at_peak, rp->live, sizeof rp->live);
}

/* Replays event ev (the next of the full list): fills its block and the
 * reserved memory after it (and a FREE's bytes and category), and moves
 * the peaks. 0 / -1 (the error set). */
int sim_replay_event(struct sim *S, struct memest_event *ev)
{
    struct sim_replay *rp = S->rp;
    size_t e = rp->nev;
    if (reserve((void **)&rp->info, &rp->capinfo, (size_t)ev->id + 1, sizeof *rp->info) != 0 ||
        (rp->layout && reserve((void **)&rp->addr, &rp->capaddr, e + 1, sizeof *rp->addr) != 0))
        return sim_nomem(S);
    struct idinfo *in = &rp->info[ev->id];
    const struct memest_alloc_stats *st = memest_alloc_stats(rp->a);
    if (ev->kind == MEMEST_EV_ALLOC) {
        in->bytes = ev->bytes;
        in->cat = ev->category;
        in->stream = MEMEST_EV_STREAM(ev->stream);
        ev->stream = in->stream;
        uint64_t segs = st->segments, res = st->reserved;
        int arc = ev->bytes > 0 ? memest_alloc_malloc_on(rp->a, ev->bytes, in->stream,
                                                         &in->handle, &in->block)
                                : 0;
        if (arc == -2)
            return sim_nomem(S);
        if (arc != 0)
            return memest_errf(S->err, MEMEST_ERR_LIMIT, NULL,
                               "the step needs more than 2^62 bytes in one allocation, or "
                               "more than 2^63 - 1 bytes of memory in all");
        if (ev->bytes == 0)
            in->block = 0;
        else if (S->trace && memest_alloc_trace_push_on(S->trace, false, ev->id, ev->bytes,
                                                        in->stream, false) != 0)
            return sim_nomem(S);
        in->addr = ev->bytes > 0 ? memest_alloc_addr(rp->a, in->handle) : 0;
        if (rp->layout && st->segments > segs) {
            if (reserve((void **)&rp->seg, &rp->capseg, rp->nseg + 1, sizeof *rp->seg) != 0)
                return sim_nomem(S);
            rp->seg[rp->nseg++] = (struct memest_segment){
                in->addr, st->reserved - res, rp->started ? rp->nsetup + (e - rp->start) : 0};
        }
        ev->block = in->block;
        rp->live[ev->category] += in->block;
        rp->total += in->block;
        if (ev->category != MEMEST_CAT_WORKSPACE)
            rp->tensors += ev->bytes;
        if (ev->category == MEMEST_CAT_SAVED)
            rp->saved += ev->bytes;
        if (rp->saved > rp->saved_max)
            rp->saved_max = rp->saved;
        rp->nlive++;
    } else {
        ev->bytes = in->bytes;
        ev->category = in->cat;
        ev->block = in->block;
        bool recorded = (ev->stream & MEMEST_EV_RECORDED) != 0;
        ev->stream = (uint8_t)(in->stream | (recorded ? MEMEST_EV_RECORDED : 0));
        if (in->bytes > 0) {
            (recorded ? memest_alloc_free_deferred : memest_alloc_free)(rp->a, in->handle);
            if (S->trace &&
                memest_alloc_trace_push_on(S->trace, true, ev->id, 0, 0, recorded) != 0)
                return sim_nomem(S);
        }
        if (!rp->started)
            in->early_free = 1;
        rp->live[in->cat] -= in->block;
        rp->total -= in->block;
        if (in->cat != MEMEST_CAT_WORKSPACE)
            rp->tensors -= in->bytes;
        if (in->cat == MEMEST_CAT_SAVED)
            rp->saved -= in->bytes;
        rp->nlive--;
    }
    ev->reserved = reserved_units(st->reserved);
    if (rp->layout)
        rp->addr[e] = in->addr;
    rp->nev++;
    if (!rp->started)
        return 0;
    struct memest_peak *pk = &rp->pk;
    size_t x = rp->nsetup + (e - rp->start);   /* its index in the exported step */
    if (rp->total > pk->bytes) {
        pk->bytes = rp->total;
        pk->event = x;
        pk->phase = ev->phase & (uint8_t)~WARM;
        pk->node = ev->node;
        memcpy(pk->at_peak, rp->live, sizeof rp->live);
    }
    if (rp->tensors > pk->tensor_bytes) {
        pk->tensor_bytes = rp->tensors;
        pk->tensor_event = x;
    }
    return 0;
}

/* The peaks of the step (the events from the start on; the live set at the
 * start stands for the setup), and when out is not NULL the step exported:
 * the allocations alive at the start as its setup, then the events from the
 * start on (and with out->layout set, the allocator's segments and each
 * event's block address). The events must have been stored in S->tl. */
int sim_finish(struct sim *S, struct memest_timeline *out, struct memest_peak *pk)
{
    struct sim_replay *rp = S->rp;
    if (!rp->started)
        sim_replay_start(S);
    const struct memest_alloc_stats *st = memest_alloc_stats(rp->a);
    *pk = rp->pk;
    pk->reserved = st->max_reserved;
    pk->segments = st->segments;
    /* --activation-offload's figures (sim_offload.c) */
    pk->offload_host = S->host_peak, pk->offload_d2h = S->d2h, pk->offload_h2d = S->h2d;
    if (!out)
        return 0;
    /* compacted in place (each event moves to a lower index) and handed
     * over: no second copy of the step */
    struct memest_timeline *tl = S->tl;
    size_t start = rp->start;
    uint32_t nid = tl->next_id;
    uint32_t res0 = start ? tl->ev[start - 1].reserved : 0;
    uint64_t *addr = rp->addr;
    size_t k = 0;
    for (size_t e = 0; e < start; e++) {
        struct memest_event ev = tl->ev[e];
        if (ev.kind != MEMEST_EV_ALLOC || rp->info[ev.id].early_free)
            continue;
        ev.phase = MEMEST_PH_SETUP;
        ev.reserved = res0;
        if (addr)
            addr[k] = addr[e];
        tl->ev[k++] = ev;
    }
    for (size_t e = start; e < tl->n; e++) {
        struct memest_event ev = tl->ev[e];
        ev.phase &= (uint8_t)~WARM;
        if (addr)
            addr[k] = addr[e];
        tl->ev[k++] = ev;
    }
    const char *const *names = out->node_names;
    memest_timeline_dispose(out);
    *out = *tl;
    out->n = k;
    out->next_id = nid;
    out->node_names = names;
    out->layout = rp->layout;
    out->seg = rp->seg;
    out->nseg = rp->nseg;
    out->addr = addr;
    rp->seg = NULL;
    rp->addr = NULL;
    *tl = (struct memest_timeline){0};
    return 0;
}
