/* sim_replay.c - the allocator replayed over the simulated events: the peaks,
 * and the step's timeline exported (sim_internal.h). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"
#include "memest/alloc.h"

/* ---- allocator replay, export, peaks ---- */

struct idinfo {
    uint64_t bytes, block, addr;
    uint32_t handle;
    uint8_t cat;
    uint8_t early_free;   /* freed before the step starts */
};

static_assert(MEMEST_TIMELINE_RESERVED_UNIT == MEMEST_ALLOC_SMALL_BUFFER,
              "events count reserved memory in the allocator's smallest segments");

static uint32_t reserved_units(uint64_t reserved)
{
    uint64_t u = reserved / MEMEST_TIMELINE_RESERVED_UNIT;
    return u > UINT32_MAX ? UINT32_MAX : (uint32_t)u;
}

/* The allocator's layout, when the caller asks for it (timeline.h). */
struct layout {
    bool on;
    uint64_t *addr;             /* per event of the full list */
    struct memest_segment *seg;
    size_t nseg, cap;
};

static int layout_segment(struct layout *L, uint64_t addr, uint64_t bytes, size_t event)
{
    if (L->nseg == L->cap) {
        size_t cap = L->cap ? 2 * L->cap : 64;
        struct memest_segment *p = realloc(L->seg, cap * sizeof *p);
        if (!p)
            return -1;
        L->seg = p;
        L->cap = cap;
    }
    L->seg[L->nseg++] = (struct memest_segment){addr, bytes, event};
    return 0;
}

/* Replays the allocator over the full list (filling each event's block and
 * reserved), finds the peaks of the step (events from `start` on, the live
 * set at `start` standing for the setup), and when out is not NULL exports
 * the step: the allocations alive at `start` as its setup, then the
 * events from `start` on (and with out->layout set, the allocator's
 * segments and each event's block address). */
int sim_finish(struct sim *S, size_t start, struct memest_timeline *out, struct memest_peak *pk)
{
    struct memest_timeline *tl = S->tl;
    uint32_t nid = tl->next_id;
    struct idinfo *info = calloc(nid ? nid : 1, sizeof *info);
    struct memest_alloc *a = memest_alloc_create();
    struct layout L = {.on = out && out->layout};
    int rc = -1;
    if (L.on)
        L.addr = malloc(sizeof *L.addr * (tl->n ? tl->n : 1));
    if (!info || !a || (L.on && !L.addr)) {
        sim_nomem(S);
        goto end;
    }
    memset(pk, 0, sizeof *pk);
    pk->node = NONE;
    uint64_t live[MEMEST_CAT_COUNT] = {0}, total = 0, tensors = 0;
    size_t nlive = 0, nsetup = 0;
    for (size_t e = 0; e <= tl->n; e++) {
        if (e == start) {
            /* the step starts: reset_peak_memory_stats(); the live set is
             * the exported setup, which reaches its total last */
            memest_alloc_reset_peak(a);
            nsetup = nlive;
            pk->bytes = total;
            pk->tensor_bytes = tensors;
            pk->event = pk->tensor_event = nsetup ? nsetup - 1 : 0;
            pk->phase = MEMEST_PH_SETUP;
            memcpy(pk->at_peak, live, sizeof live);
        }
        if (e == tl->n)
            break;
        struct memest_event *ev = &tl->ev[e];
        struct idinfo *in = &info[ev->id];
        bool ws = ev->category == MEMEST_CAT_WORKSPACE;
        if (ev->kind == MEMEST_EV_ALLOC) {
            in->bytes = ev->bytes;
            in->cat = ev->category;
            uint64_t segs = memest_alloc_stats(a)->segments;
            uint64_t res = memest_alloc_stats(a)->reserved;
            int arc = ev->bytes > 0 ? memest_alloc_malloc(a, ev->bytes, &in->handle, &in->block)
                                    : 0;
            if (arc == -2) {
                sim_nomem(S);
                goto end;
            }
            if (arc != 0) {
                memest_errf(S->err, MEMEST_ERR_LIMIT, NULL,
                            "the step needs more than 2^62 bytes in one allocation, or "
                            "more than 2^63 - 1 bytes of memory in all");
                goto end;
            }
            in->addr = ev->bytes > 0 ? memest_alloc_addr(a, in->handle) : 0;
            if (L.on && memest_alloc_stats(a)->segments > segs &&
                layout_segment(&L, in->addr, memest_alloc_stats(a)->reserved - res,
                               e < start ? 0 : nsetup + (e - start)) != 0) {
                sim_nomem(S);
                goto end;
            }
            ev->block = in->block;
            live[ev->category] += in->block;
            total += in->block;
            if (!ws)
                tensors += ev->bytes;
            nlive++;
        } else {
            ev->bytes = in->bytes;
            ev->category = in->cat;
            ev->block = in->block;
            if (in->bytes > 0)
                memest_alloc_free(a, in->handle);
            if (e < start)
                in->early_free = 1;
            live[in->cat] -= in->block;
            total -= in->block;
            if (in->cat != MEMEST_CAT_WORKSPACE)
                tensors -= in->bytes;
            nlive--;
        }
        ev->reserved = reserved_units(memest_alloc_stats(a)->reserved);
        if (L.on)
            L.addr[e] = in->addr;
        if (e < start)
            continue;
        size_t x = nsetup + (e - start);   /* its index in the exported step */
        if (total > pk->bytes) {
            pk->bytes = total;
            pk->event = x;
            pk->phase = ev->phase & (uint8_t)~WARM;
            pk->node = ev->node;
            memcpy(pk->at_peak, live, sizeof live);
        }
        if (tensors > pk->tensor_bytes) {
            pk->tensor_bytes = tensors;
            pk->tensor_event = x;
        }
    }
    const struct memest_alloc_stats *st = memest_alloc_stats(a);
    pk->reserved = st->max_reserved;
    pk->segments = st->segments;
    if (out) {
        /* compacted in place (each event moves to a lower index) and
         * handed over: no second copy of the step */
        uint32_t res0 = start ? tl->ev[start - 1].reserved : 0;
        size_t k = 0;
        for (size_t e = 0; e < start; e++) {
            struct memest_event ev = tl->ev[e];
            if (ev.kind != MEMEST_EV_ALLOC || info[ev.id].early_free)
                continue;
            ev.phase = MEMEST_PH_SETUP;
            ev.reserved = res0;
            if (L.on)
                L.addr[k] = L.addr[e];
            tl->ev[k++] = ev;
        }
        for (size_t e = start; e < tl->n; e++) {
            struct memest_event ev = tl->ev[e];
            ev.phase &= (uint8_t)~WARM;
            if (L.on)
                L.addr[k] = L.addr[e];
            tl->ev[k++] = ev;
        }
        const char *const *names = out->node_names;
        memest_timeline_dispose(out);
        *out = *tl;
        out->n = k;
        out->next_id = nid;
        out->node_names = names;
        out->layout = L.on;
        out->seg = L.seg;
        out->nseg = L.nseg;
        out->addr = L.addr;
        L = (struct layout){0};
        *tl = (struct memest_timeline){0};
    }
    rc = 0;
end:
    free(L.addr);
    free(L.seg);
    free(info);
    memest_alloc_destroy(a);
    return rc;
}
