/* calc_peak.c - one step as a timeline of allocations and frees, and its
 * peak (first estimate; no allocator rounding yet).
 *
 * Training, steady state (second step, zero_grad(set_to_none=True)):
 *   setup     parameters, buffers and optimizer state are resident;
 *   forward   each node allocates its outputs; a tensor is freed after its
 *             last reader unless some node saved it for backward;
 *   loss      a gradient for each model output; outputs no one saved go;
 *   backward  nodes in reverse: gradients of inputs that require grad are
 *             allocated (a view's gradient is a view of its output's),
 *             output gradients freed, a saved tensor freed once the earliest
 *             node saving it is done, parameter gradients born on first use;
 *   teardown  everything still live is freed.
 * Inference: parameters and buffers, then the forward pass with every tensor
 * freed after its last reader. */
#include <stdlib.h>
#include <string.h>

#include "memest/calc.h"
#include "memest/checked.h"

#define NONE UINT32_MAX

struct tb {
    const struct memest_run *r;
    struct memest_timeline *tl;
    struct memest_error *err;
    bool inference;
    uint32_t *sid;       /* storage -> live allocation id */
    uint8_t *scat;       /* storage -> category of its allocation */
    uint32_t *release;   /* storage -> node whose backward frees it */
    uint32_t *head;      /* node -> first storage whose last use it is */
    uint32_t *next;      /* storage -> next in that list */
    uint32_t *vgrad;     /* value -> gradient allocation id */
    uint32_t *pgrad;     /* storage of a parameter -> its gradient id */
};

static int alloc_ev(struct tb *t, uint8_t ph, uint8_t cat, uint32_t node, uint64_t bytes,
                    uint32_t *id)
{
    if (memest_timeline_alloc(t->tl, ph, cat, node, bytes, id) != 0)
        return memest_errf(t->err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    return 0;
}

static int free_ev(struct tb *t, uint8_t ph, uint8_t cat, uint32_t node, uint32_t id, uint64_t bytes)
{
    if (memest_timeline_free(t->tl, ph, cat, node, id, bytes) != 0)
        return memest_errf(t->err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    return 0;
}

static int transient(struct tb *t, uint8_t ph, uint8_t cat, uint32_t node, uint64_t bytes)
{
    uint32_t id;
    if (bytes == 0)
        return 0;
    return alloc_ev(t, ph, cat, node, bytes, &id) || free_ev(t, ph, cat, node, id, bytes) ? -1 : 0;
}

static int free_storage(struct tb *t, uint8_t ph, uint32_t node, uint32_t s)
{
    if (t->sid[s] == NONE)
        return 0;
    uint32_t id = t->sid[s];
    t->sid[s] = NONE;
    return free_ev(t, ph, t->scat[s], node, id, t->r->storages[s].bytes);
}

/* Tensors of the step, as opposed to parameters and buffers. */
static bool activation_kind(uint8_t kind)
{
    return kind != MEMEST_ST_PARAM && kind != MEMEST_ST_BUFFER;
}

static uint64_t value_bytes(const struct memest_run *r, uint32_t v)
{
    uint64_t n;
    if (!memest_shape_numel(&r->values[v].shape, &n))
        return UINT64_MAX;
    return memest_sat_mul(n, memest_dtype_size((enum memest_dtype)r->values[v].dtype));
}

static int setup(struct tb *t, const struct memest_optstate *opt)
{
    const struct memest_run *r = t->r;
    for (uint32_t s = 0; s < r->nstorages; s++) {
        uint8_t kind = r->storages[s].kind;
        if (kind != MEMEST_ST_PARAM && kind != MEMEST_ST_BUFFER)
            continue;
        t->scat[s] = kind == MEMEST_ST_PARAM ? MEMEST_CAT_PARAMS : MEMEST_CAT_BUFFERS;
        if (alloc_ev(t, MEMEST_PH_SETUP, t->scat[s], r->storages[s].node, r->storages[s].bytes,
                     &t->sid[s]) != 0)
            return -1;
    }
    if (t->inference || !opt)
        return 0;
    for (uint32_t p = 0; p < r->nparams; p++) {
        const struct memest_param *pp = &r->params[p];
        if (pp->tied_to >= 0 || !pp->trainable)
            continue;
        for (unsigned k = 0; k < opt->copies; k++) {
            uint32_t id;
            if (alloc_ev(t, MEMEST_PH_SETUP, MEMEST_CAT_OPTSTATE, pp->node,
                         r->storages[pp->storage].bytes, &id) != 0)
                return -1;
        }
    }
    return 0;
}

static int forward(struct tb *t)
{
    const struct memest_run *r = t->r;
    uint32_t s = 0;
    for (uint32_t n = 0; n < r->g->nnodes; n++) {
        for (; s < r->nstorages && r->storages[s].node <= n; s++) {
            const struct memest_storage *st = &r->storages[s];
            if (st->node != n || st->kind == MEMEST_ST_PARAM || st->kind == MEMEST_ST_BUFFER)
                continue;
            bool saved = st->saved && !t->inference;
            if (st->kind == MEMEST_ST_EXTRA && !saved) {
                if (transient(t, MEMEST_PH_FORWARD, MEMEST_CAT_TRANSIENT, n, st->bytes) != 0)
                    return -1;
                continue;
            }
            t->scat[s] = saved ? MEMEST_CAT_SAVED
                         : st->kind == MEMEST_ST_INPUT ? MEMEST_CAT_INPUTS : MEMEST_CAT_TRANSIENT;
            if (alloc_ev(t, MEMEST_PH_FORWARD, t->scat[s], n, st->bytes, &t->sid[s]) != 0)
                return -1;
        }
        if (transient(t, MEMEST_PH_FORWARD, MEMEST_CAT_TRANSIENT, n, r->nodes[n].work_bytes) != 0)
            return -1;
        for (uint32_t d = t->head[n]; d != NONE; d = t->next[d])
            if (activation_kind(r->storages[d].kind) && (t->inference || !r->storages[d].saved) &&
                free_storage(t, MEMEST_PH_FORWARD, n, d) != 0)
                return -1;
    }
    return 0;
}

static int grad_for_input(struct tb *t, uint32_t n, uint32_t vin)
{
    const struct memest_run *r = t->r;
    const struct memest_nodeinfo *ni = &r->nodes[n];
    uint64_t bytes = value_bytes(r, vin);
    /* a view or in-place op: the input's gradient is a view of the output's */
    for (uint32_t k = ni->out_first; k < ni->out_first + ni->nout; k++) {
        if (r->values[k].storage == r->values[vin].storage && t->vgrad[k] != NONE &&
            t->vgrad[vin] == NONE) {
            t->vgrad[vin] = t->vgrad[k];
            t->vgrad[k] = NONE;
            return 0;
        }
    }
    if (t->vgrad[vin] == NONE)
        return alloc_ev(t, MEMEST_PH_BACKWARD, MEMEST_CAT_ACTGRADS, n, bytes, &t->vgrad[vin]);
    return transient(t, MEMEST_PH_BACKWARD, MEMEST_CAT_ACTGRADS, n, bytes); /* accumulated */
}

static int backward(struct tb *t)
{
    const struct memest_run *r = t->r;
    const struct memest_graph *g = r->g;
    for (uint32_t o = 0; o < g->noutputs; o++) {
        uint32_t v = r->nodes[g->outputs[o].node].out_first + g->outputs[o].out;
        if (r->values[v].requires_grad && t->vgrad[v] == NONE &&
            alloc_ev(t, MEMEST_PH_LOSS, MEMEST_CAT_ACTGRADS, g->outputs[o].node,
                     value_bytes(r, v), &t->vgrad[v]) != 0)
            return -1;
    }
    for (uint32_t d = t->head[g->nnodes]; d != NONE; d = t->next[d])
        if (activation_kind(r->storages[d].kind) && !r->storages[d].saved &&
            free_storage(t, MEMEST_PH_LOSS, NONE, d) != 0)
            return -1;
    for (uint32_t n = g->nnodes; n-- > 0;) {
        const struct memest_nodeinfo *ni = &r->nodes[n];
        const struct memest_node *node = &g->nodes[n];
        if (ni->needs_grad) {
            for (uint32_t i = 0; i < node->nin; i++) {
                uint32_t vin = r->nodes[node->in[i].node].out_first + node->in[i].out;
                if (r->values[vin].requires_grad && grad_for_input(t, n, vin) != 0)
                    return -1;
            }
            for (uint32_t p = ni->param_first; p < ni->param_first + ni->nparam; p++) {
                const struct memest_param *pp = &r->params[p];
                if (!pp->trainable)
                    continue;
                uint64_t bytes = r->storages[pp->storage].bytes;
                int rc = t->pgrad[pp->storage] == NONE
                             ? alloc_ev(t, MEMEST_PH_BACKWARD, MEMEST_CAT_GRADS, n, bytes,
                                        &t->pgrad[pp->storage])
                             : transient(t, MEMEST_PH_BACKWARD, MEMEST_CAT_GRADS, n, bytes);
                if (rc != 0)
                    return -1;
            }
        }
        for (uint32_t k = ni->out_first; k < ni->out_first + ni->nout; k++) {
            if (t->vgrad[k] != NONE) {
                if (free_ev(t, MEMEST_PH_BACKWARD, MEMEST_CAT_ACTGRADS, n, t->vgrad[k],
                            value_bytes(r, k)) != 0)
                    return -1;
                t->vgrad[k] = NONE;
            }
        }
        for (uint32_t k = ni->save_first; k < ni->save_first + ni->nsave; k++) {
            uint32_t s = r->saves[k];
            if (t->release[s] == n && free_storage(t, MEMEST_PH_BACKWARD, n, s) != 0)
                return -1;
        }
    }
    return 0;
}

static int teardown(struct tb *t)
{
    const struct memest_run *r = t->r;
    for (uint32_t v = 0; v < r->nvalues; v++)
        if (t->vgrad[v] != NONE &&
            free_ev(t, MEMEST_PH_TEARDOWN, MEMEST_CAT_ACTGRADS, NONE, t->vgrad[v], value_bytes(r, v)) != 0)
            return -1;
    for (uint32_t s = 0; s < r->nstorages; s++) {
        if (t->pgrad[s] != NONE &&
            free_ev(t, MEMEST_PH_TEARDOWN, MEMEST_CAT_GRADS, NONE, t->pgrad[s], r->storages[s].bytes) != 0)
            return -1;
        if (free_storage(t, MEMEST_PH_TEARDOWN, NONE, s) != 0)
            return -1;
    }
    /* optimizer state: the ids allocated in setup that are still open */
    size_t n = t->tl->n;
    for (size_t e = 0; e < n; e++) {
        const struct memest_event ev = t->tl->ev[e];
        if (ev.kind == MEMEST_EV_ALLOC && ev.category == MEMEST_CAT_OPTSTATE &&
            free_ev(t, MEMEST_PH_TEARDOWN, MEMEST_CAT_OPTSTATE, ev.node, ev.id, ev.bytes) != 0)
            return -1;
    }
    return 0;
}

static void find_peak(const struct memest_timeline *tl, struct memest_peak *out)
{
    uint64_t live[MEMEST_CAT_COUNT] = {0}, total = 0;
    memset(out, 0, sizeof *out);
    out->node = NONE;
    for (size_t e = 0; e < tl->n; e++) {
        const struct memest_event *ev = &tl->ev[e];
        if (ev->kind == MEMEST_EV_ALLOC) {
            live[ev->category] = memest_sat_add(live[ev->category], ev->bytes);
            total = memest_sat_add(total, ev->bytes);
            if (total > out->bytes) {
                out->bytes = total;
                out->event = e;
                out->phase = ev->phase;
                out->node = ev->node;
                memcpy(out->at_peak, live, sizeof live);
            }
        } else {
            live[ev->category] -= ev->bytes;
            total -= ev->bytes;
        }
    }
}

int memest_calc_peak(const struct memest_run *r, const struct memest_peak_opts *o,
                     struct memest_timeline *tl, struct memest_peak *out, struct memest_error *err)
{
    uint32_t ns = r->nstorages, nv = r->nvalues, nn = r->g->nnodes;
    struct tb t = {.r = r, .tl = tl, .err = err, .inference = o->inference};
    t.sid = malloc(sizeof *t.sid * (ns + 1));
    t.scat = calloc(ns + 1, 1);
    t.release = malloc(sizeof *t.release * (ns + 1));
    t.head = malloc(sizeof *t.head * (nn + 1));
    t.next = malloc(sizeof *t.next * (ns + 1));
    t.vgrad = malloc(sizeof *t.vgrad * (nv + 1));
    t.pgrad = malloc(sizeof *t.pgrad * (ns + 1));
    int rc = -1;
    if (!t.sid || !t.scat || !t.release || !t.head || !t.next || !t.vgrad || !t.pgrad) {
        memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
        goto end;
    }
    memset(t.sid, 0xFF, sizeof *t.sid * (ns + 1));
    memset(t.release, 0xFF, sizeof *t.release * (ns + 1));
    memset(t.head, 0xFF, sizeof *t.head * (nn + 1));
    memset(t.vgrad, 0xFF, sizeof *t.vgrad * (nv + 1));
    memset(t.pgrad, 0xFF, sizeof *t.pgrad * (ns + 1));
    for (uint32_t s = ns; s-- > 0;) {
        uint32_t lu = r->storages[s].last_use < nn ? r->storages[s].last_use : nn;
        t.next[s] = t.head[lu];
        t.head[lu] = s;
    }
    for (uint32_t n = 0; n < nn; n++)
        for (uint32_t k = r->nodes[n].save_first; k < r->nodes[n].save_first + r->nodes[n].nsave; k++)
            if (t.release[r->saves[k]] == NONE)
                t.release[r->saves[k]] = n;
    memest_timeline_reset(tl);
    if (setup(&t, o->opt) != 0 || forward(&t) != 0)
        goto end;
    if (!o->inference && backward(&t) != 0)
        goto end;
    if (teardown(&t) != 0)
        goto end;
    find_peak(tl, out);
    rc = 0;
end:
    free(t.sid);
    free(t.scat);
    free(t.release);
    free(t.head);
    free(t.next);
    free(t.vgrad);
    free(t.pgrad);
    return rc;
}
