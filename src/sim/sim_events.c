/* sim_events.c - the simulator's state as allocations: every ALLOC and FREE
 * event, the storages, and the gradient slots and buffers (sim_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

/* ---- the simulator's state ---- */

int sim_grow_u32(uint32_t **a, uint32_t *cap, uint32_t need)
{
    if (need <= *cap)
        return 0;
    uint32_t n = *cap ? *cap : 64;
    while (n < need) {
        if (n > UINT32_MAX / 2)
            return -1;
        n *= 2;
    }
    uint32_t *p = realloc(*a, sizeof *p * n);
    if (!p)
        return -1;
    *a = p;
    *cap = n;
    return 0;
}

/* ---- events ---- */

int sim_ev_alloc(struct sim *S, uint8_t cat, uint32_t node, uint64_t bytes, uint32_t *id)
{
    return sim_ev_alloc_on(S, 0, cat, node, bytes, id);
}

int sim_ev_alloc_on(struct sim *S, uint8_t stream, uint8_t cat, uint32_t node, uint64_t bytes,
                    uint32_t *id)
{
    struct memest_timeline *t = S->tl;
    struct memest_event local = {.kind = MEMEST_EV_ALLOC, .phase = S->ph, .category = cat,
                                 .stream = stream, .node = node, .id = t->next_id,
                                 .bytes = bytes};
    struct memest_event *ev = &local;
    if (S->store) {
        if (memest_timeline_alloc(t, S->ph, cat, node, bytes, id) != 0)
            return memest_errf(S->err, MEMEST_ERR_NOMEM, NULL,
                               "out of memory (or more than 2^32 allocations)");
        ev = &t->ev[t->n - 1];
        ev->stream = stream;
    } else {
        if (t->next_id == UINT32_MAX)   /* ids exhausted, as memest_timeline_alloc says */
            return memest_errf(S->err, MEMEST_ERR_NOMEM, NULL,
                               "out of memory (or more than 2^32 allocations)");
        *id = t->next_id++;
    }
    if (*id >= S->capalive) {
        uint32_t n = S->capalive ? S->capalive : 1024;
        while (n <= *id)
            n *= 2;
        uint8_t *p = realloc(S->alive, n);
        if (!p)
            return sim_nomem(S);
        memset(p + S->capalive, 0, n - S->capalive);
        S->alive = p;
        S->capalive = n;
    }
    S->alive[*id] = 1;
    return sim_replay_event(S, ev);
}

int sim_ev_free(struct sim *S, uint32_t node, uint32_t id) { return sim_ev_free_on(S, node, id, false); }

int sim_ev_free_on(struct sim *S, uint32_t node, uint32_t id, bool recorded)
{
    if (id == NONE || id >= S->capalive || !S->alive[id])
        return memest_errf(S->err, MEMEST_ERR_INTERNAL, NULL,
                           "internal: the simulator frees allocation %u twice", id);
    S->alive[id] = 0;
    /* bytes and category are those of the ALLOC: the replay copies them */
    uint8_t st = recorded ? MEMEST_EV_RECORDED : 0;
    struct memest_event local = {.kind = MEMEST_EV_FREE, .phase = S->ph, .stream = st,
                                 .node = node, .id = id};
    struct memest_event *ev = &local;
    if (S->store) {
        if (memest_timeline_free(S->tl, S->ph, 0, node, id, 0) != 0)
            return sim_nomem(S);
        ev = &S->tl->ev[S->tl->n - 1];
        ev->stream = st;
    }
    return sim_replay_event(S, ev);
}

int sim_ev_transient(struct sim *S, uint8_t cat, uint32_t node, uint64_t bytes)
{
    uint32_t id;
    if (bytes == 0)
        return 0;
    return sim_ev_alloc(S, cat, node, bytes, &id) || sim_ev_free(S, node, id) ? -1 : 0;
}

/* ---- storages ---- */

int sim_alloc_storage(struct sim *S, uint32_t s, uint8_t cat, uint32_t node)
{
    if (S->sid[s] != NONE)
        return 0;
    return sim_ev_alloc(S, cat, node, S->r->storages[s].bytes, &S->sid[s]);
}

int sim_free_storage(struct sim *S, uint32_t s, uint32_t node)
{
    if (S->sid[s] == NONE)
        return 0;
    uint32_t id = S->sid[s];
    S->sid[s] = NONE;
    return sim_ev_free(S, node, id);
}

/* ---- gradient slots ---- */

/* A free index in the gradient-buffer pool. */
static int gbuf_index(struct sim *S, uint32_t *out)
{
    if (S->ngbfree) {
        *out = S->gbfree[--S->ngbfree];
        return 0;
    }
    if (S->ngb == S->capgb) {
        uint32_t n = S->capgb ? S->capgb * 2 : 64;
        struct gbuf *p = realloc(S->gb, sizeof *p * n);
        if (!p)
            return sim_nomem(S);
        S->gb = p;
        uint32_t *f = realloc(S->gbfree, sizeof *f * n);
        if (!f)
            return sim_nomem(S);
        S->gbfree = f;
        S->capgb = n;
    }
    *out = S->ngb++;
    return 0;
}

/* A gradient buffer over allocation id (already made). */
int sim_adopt_gbuf(struct sim *S, uint32_t id, uint32_t *out)
{
    if (gbuf_index(S, out) != 0)
        return -1;
    S->gb[*out] = (struct gbuf){.id = id, .refs = 0};
    return 0;
}

static int new_gbuf(struct sim *S, uint32_t node, uint64_t bytes, uint8_t cat, uint32_t *out)
{
    uint32_t id;
    *out = UINT32_MAX;   /* set on every path */
    if (sim_ev_alloc(S, cat, node, bytes, &id) != 0)
        return -1;
    return sim_adopt_gbuf(S, id, out);
}

int sim_new_slot(struct sim *S, uint32_t buf, const struct memest_shape *geom, uint32_t *out)
{
    uint32_t k;
    if (S->ngsfree) {
        k = S->gsfree[--S->ngsfree];
    } else {
        if (S->ngs == S->capgs) {
            uint32_t n = S->capgs ? S->capgs * 2 : 64;
            struct gslot *p = realloc(S->gs, sizeof *p * n);
            if (!p)
                return sim_nomem(S);
            S->gs = p;
            uint32_t *f = realloc(S->gsfree, sizeof *f * n);
            if (!f)
                return sim_nomem(S);
            S->gsfree = f;
            S->capgs = n;
        }
        k = S->ngs++;
    }
    S->gs[k].buf = buf;
    S->gs[k].geom = *geom;
    S->gb[buf].refs++;
    *out = k;
    return 0;
}

/* A new contiguous gradient of value v's sizes. */
int sim_new_grad(struct sim *S, uint32_t node, uint32_t v, uint8_t cat, uint32_t *slot)
{
    uint32_t b;
    struct memest_shape g = S->r->values[v].shape;
    memest_shape_contiguous_strides(&g);
    if (new_gbuf(S, node, value_bytes(S->r, v), cat, &b) != 0)
        return -1;
    return sim_new_slot(S, b, &g, slot);
}

int sim_drop_slot(struct sim *S, uint32_t node, uint32_t k)
{
    uint32_t b = S->gs[k].buf;
    S->gsfree[S->ngsfree++] = k;
    if (--S->gb[b].refs > 0)
        return 0;
    S->gbfree[S->ngbfree++] = b;
    return sim_ev_free(S, node, S->gb[b].id);
}

/* A gradient arrives for value v (InputBuffer::accumulate). */
int sim_deliver(struct sim *S, uint32_t node, uint32_t v, uint32_t slot)
{
    uint32_t e = S->vg[v];
    if (e == NONE) {
        S->vg[v] = slot;
        return 0;
    }
    if (S->gb[S->gs[e].buf].refs == 1 && memest_shape_is_dense(&S->gs[e].geom))
        return sim_drop_slot(S, node, slot);               /* old.add_(new) */
    if (S->gb[S->gs[slot].buf].refs == 1 && memest_shape_is_dense(&S->gs[slot].geom)) {
        S->vg[v] = slot;                               /* new.add_(old) */
        return sim_drop_slot(S, node, e);
    }
    uint32_t sum;                                      /* old + new */
    if (sim_new_grad(S, node, v, MEMEST_CAT_ACTGRADS, &sum) != 0)
        return -1;
    S->vg[v] = sum;
    return sim_drop_slot(S, node, slot) || sim_drop_slot(S, node, e) ? -1 : 0;
}

int sim_remember_held(struct sim *S, uint32_t id)
{
    if (sim_grow_u32(&S->held_ids, &S->capheld, S->nheld + 1) != 0)
        return sim_nomem(S);
    S->held_ids[S->nheld++] = id;
    return 0;
}

int sim_accumulate_into(struct sim *S, uint32_t node, uint32_t ps, uint32_t id, uint32_t *grad)
{
    int took = SIM_EXT(S, accumulate, S, node, ps, id);   /* DeepSpeed's buckets */
    if (took != 0)
        return took < 0 ? -1 : 0;
    if (*grad == NONE) {
        *grad = id;                /* .grad is None: the gradient is stolen */
        return 0;
    }
    return sim_ev_free(S, node, id);   /* .grad += new_grad, in place */
}

/* AccumulateGrad: the parameter (storage ps) receives gradient allocation id. */
int sim_accumulate_param(struct sim *S, uint32_t node, uint32_t ps, uint32_t id)
{
    if (S->flead && S->flead[ps] != NONE)   /* a slice of a fused parameter */
        return sim_fused_accumulate(S, node, ps, id);
    return sim_accumulate_into(S, node, ps, id, &S->pg[ps]);
}
