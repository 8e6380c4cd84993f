/* sim_backward.c - the backward pass in reverse graph order, as autograd's
 * engine runs it, and the recomputation of checkpointed blocks
 * (sim_internal.h). */
#include <stdlib.h>

#include "sim_internal.h"

/* ---- backward ---- */

static int bwd_range(struct sim *S, uint32_t hi, uint32_t lo, const struct ckpt *inner);

/* The gradient of input i of node n, as the op's rule makes it from the
 * incoming gradients; NONE when no gradient flows. */
static int input_grad(struct sim *S, uint32_t n, uint32_t i, uint32_t *slot)
{
    const struct memest_run *r = S->r;
    const struct memest_nodein *in = node_in(r, n, i);
    *slot = NONE;
    if (in->grad == MEMEST_GRAD_NONE || !r->values[in->src].requires_grad)
        return 0;
    uint32_t v = in->value;
    /* the virtual copy of an fp16 softmax input: the gradient is the input's */
    if (v != in->src && r->storages[r->values[v].storage].bytes == 0)
        v = in->src;
    if (in->grad == MEMEST_GRAD_NEW)
        return sim_new_grad(S, n, v, MEMEST_CAT_ACTGRADS, slot);
    uint32_t from = in->from < r->nodes[n].nout ? in->from : 0;
    uint32_t og = S->vg[out_value(r, n, from)];
    if (og == NONE)
        return 0;   /* an undefined gradient passes through as undefined */
    const struct gslot src = S->gs[og];
    struct memest_shape g = r->values[v].shape;
    switch (in->grad) {
    case MEMEST_GRAD_SAME:
        return sim_new_slot(S, src.buf, &src.geom, slot);
    case MEMEST_GRAD_RESHAPE: {
        uint64_t a, b;
        if (memest_shape_numel(&src.geom, &a) && memest_shape_numel(&g, &b) && a == b &&
            memest_shape_view_strides(&src.geom, &g))
            return sim_new_slot(S, src.buf, &g, slot);
        return sim_new_grad(S, n, v, MEMEST_CAT_ACTGRADS, slot);   /* reshape copies */
    }
    case MEMEST_GRAD_PERMUTE: {
        if (src.geom.ndim != g.ndim)
            return sim_new_grad(S, n, v, MEMEST_CAT_ACTGRADS, slot);
        for (int d = 0; d < g.ndim; d++) {
            int p = in->perm[d] < g.ndim ? in->perm[d] : d;
            g.size[d] = src.geom.size[p];
            g.stride[d] = src.geom.stride[p];
        }
        return sim_new_slot(S, src.buf, &g, slot);
    }
    case MEMEST_GRAD_SLICE:
        if (src.geom.ndim != g.ndim)
            return sim_new_grad(S, n, v, MEMEST_CAT_ACTGRADS, slot);
        for (int d = 0; d < g.ndim; d++)
            g.stride[d] = src.geom.stride[d];
        return sim_new_slot(S, src.buf, &g, slot);
    default:
        return sim_new_grad(S, n, v, MEMEST_CAT_ACTGRADS, slot);
    }
}

/* Whether node n uses the autocast copy of its parameters. */
static bool uses_param_casts(const struct memest_run *r, uint32_t n)
{
    return r->opts.amp && r->g->nodes[n].op->amp == MEMEST_AMPP_LOW;
}

static int release_node(struct sim *S, uint32_t n, const struct ckpt *inner)
{
    for (uint32_t s = S->rhead[n]; s != NONE; s = S->rnext[s])
        if (!sim_held(S, s) && !sim_offload_holds(S, s) && sim_free_storage(S, s, n) != 0)
            return -1;
    if (inner)
        for (uint32_t s = S->ihead[n]; s != NONE; s = S->inext[s])
            if (!sim_held(S, s) && S->lastuse[s] <= inner->last &&
                sim_free_storage(S, s, n) != 0)
                return -1;
    return 0;
}

/* A node has at most MEMEST_MAX_NODE_INPUTS inputs (the builder refuses
 * more); its parameters may be many more (an LSTM has 4 per layer and
 * direction, shape inference refuses more than MEMEST_MAX_NODE_PARAMS):
 * S->pids holds those of the node with the most, none left out. */

/* Step 2 of bwd_node, the parameters: a gradient buffer for each trainable
 * parameter of node n into S->pids (NONE for the others); low: the node
 * uses the autocast copies, whose gradients are the copies' size. */
static int alloc_param_grads(struct sim *S, uint32_t n, bool low)
{
    const struct memest_run *r = S->r;
    const struct memest_nodeinfo *ni = &r->nodes[n];
    uint32_t *pids = S->pids;
    for (uint32_t p = 0; p < ni->nparam; p++) {
        const struct memest_param *pp = &r->params[ni->param_first + p];
        pids[p] = NONE;
        if (!pp->trainable)
            continue;
        /* a node whose output is the parameter itself ("parameter"): the
         * incoming gradient is the parameter's, handed to AccumulateGrad */
        uint32_t *og = &S->vg[ni->out_first];
        if (r->values[ni->out_first].storage == pp->storage && *og != NONE) {
            uint32_t b = S->gs[*og].buf;
            if (S->gb[b].refs == 1) {
                pids[p] = S->gb[b].id;
                S->gsfree[S->ngsfree++] = *og;
                S->gbfree[S->ngbfree++] = b;
                *og = NONE;
                continue;
            }
        }
        uint32_t cast = r->storages[pp->storage].cast;
        uint64_t bytes = low && cast != NONE ? r->storages[cast].bytes : r->storages[pp->storage].bytes;
        if (sim_ev_alloc(S, MEMEST_CAT_GRADS, n, bytes, &pids[p]) != 0)
            return -1;
    }
    return 0;
}

/* Step 4 of bwd_node: node n's incoming gradients go. */
static int drop_incoming(struct sim *S, uint32_t n)
{
    const struct memest_nodeinfo *ni = &S->r->nodes[n];
    for (uint32_t k = 0; k < ni->nout; k++) {
        uint32_t *g = &S->vg[ni->out_first + k];
        if (*g != NONE) {
            if (sim_drop_slot(S, n, *g) != 0)
                return -1;
            *g = NONE;
        }
    }
    return 0;
}

/* Step 5 of bwd_node: the gradient `slot` of input i of node n to its
 * producer (through ToCopyBackward for an autocast copy). */
static int deliver_input_grad(struct sim *S, uint32_t n, uint32_t i, uint32_t slot)
{
    const struct memest_run *r = S->r;
    const struct memest_nodein *in = node_in(r, n, i);
    if (in->value != in->src && r->storages[r->values[in->value].storage].bytes > 0 &&
        !param_cast(r, r->values[in->value].storage)) {
        uint32_t conv;
        if (sim_new_grad(S, n, in->src, MEMEST_CAT_ACTGRADS, &conv) != 0 ||
            sim_drop_slot(S, n, slot) != 0)
            return -1;
        slot = conv;
    }
    if (in->value != in->src && param_cast(r, r->values[in->value].storage)) {
        /* a bare parameter (op "parameter") read through its cached copy:
         * its gradient goes to the copy, then to the parameter */
        uint32_t cs = r->values[in->value].storage, id;
        if (sim_ev_alloc(S, MEMEST_CAT_GRADS, n, r->storages[cs].bytes, &id) != 0 ||
            sim_drop_slot(S, n, slot) != 0)
            return -1;
        if (S->cg[cs] == NONE)
            S->cg[cs] = id;
        else if (sim_ev_free(S, n, id) != 0)
            return -1;
        return 0;
    }
    return sim_deliver(S, n, in->src, slot);
}

/* Step 6 of bwd_node: node n's parameter gradients (S->pids) to
 * AccumulateGrad (under autocast, first summed on the copy, converted when
 * the copy's first user is done). */
static int accumulate_param_grads(struct sim *S, uint32_t n, bool low)
{
    const struct memest_run *r = S->r;
    const struct memest_nodeinfo *ni = &r->nodes[n];
    const uint32_t *pids = S->pids;
    for (uint32_t p = 0; p < ni->nparam; p++) {
        if (pids[p] == NONE)
            continue;
        const struct memest_param *pp = &r->params[ni->param_first + p];
        uint32_t cast = r->storages[pp->storage].cast;
        if (low && cast != NONE) {
            if (S->cg[cast] == NONE)
                S->cg[cast] = pids[p];
            else if (sim_ev_free(S, n, pids[p]) != 0)
                return -1;
            continue;
        }
        if (sim_accumulate_param(S, n, pp->storage, pids[p]) != 0)
            return -1;
    }
    return 0;
}

/* The autocast casts node n made are now complete: their gradients are
 * converted and handed to AccumulateGrad. */
static int convert_cast_grads(struct sim *S, uint32_t n)
{
    const struct memest_run *r = S->r;
    for (uint32_t s = S->sfirst[n]; s < S->sfirst[n + 1]; s++) {
        if (!param_cast(r, s) || S->cg[s] == NONE)
            continue;
        uint32_t ps = r->storages[s].src, id;
        if (sim_ev_alloc(S, MEMEST_CAT_GRADS, n, r->storages[ps].bytes, &id) != 0 ||
            sim_ev_free(S, n, S->cg[s]) != 0)
            return -1;
        S->cg[s] = NONE;
        if (sim_accumulate_param(S, n, ps, id) != 0)
            return -1;
    }
    return 0;
}

static int bwd_node(struct sim *S, uint32_t n, const struct ckpt *inner)
{
    const struct memest_run *r = S->r;
    const struct memest_nodeinfo *ni = &r->nodes[n];
    const struct memest_node *node = &S->g->nodes[n];
    if (fused_node(S, n))
        return sim_fused_ce_backward(S, n);
    bool any = false;
    for (uint32_t k = 0; k < ni->nout; k++)
        any |= S->vg[ni->out_first + k] != NONE;
    if (!ni->needs_grad || !S->reach[n] || !any)
        return release_node(S, n, inner);
    /* --activation-offload: its saves come back as the node runs */
    if (sim_offload_unpack(S, n, false) != 0 || sim_cublas(S, n, true) != 0)
        return -1;
    /* 1. a contiguous copy of the incoming gradient */
    uint32_t copy = NONE, og0 = S->vg[ni->out_first];
    if ((ni->bwd_flags & MEMEST_BWD_CONTIG_OUT) && og0 != NONE &&
        !geom_contiguous(&S->gs[og0].geom) &&
        sim_ev_alloc(S, MEMEST_CAT_ACTGRADS, n, value_bytes(r, ni->out_first), &copy) != 0)
        return -1;
    /* 2. input and parameter gradients (3. first: the op's inner nodes
     * before the ones making them) */
    bool first = ni->bwd_flags & MEMEST_BWD_WORK_FIRST;
    if (first && (sim_offload_inner_hook(S, n) != 0 ||
                  sim_ev_transient(S, MEMEST_CAT_ACTGRADS, n,
                                   memest_sat_add(ni->bwd_work_bytes,
                                                  sim_offload_held_early(S, n))) != 0))
        return -1;
    if (sim_offload_unpack(S, n, true) != 0)
        return -1;
    uint32_t slots[MEMEST_MAX_NODE_INPUTS];
    uint32_t nin = node->nin;
    if (nin > MEMEST_MAX_NODE_INPUTS)
        return memest_errf(S->err, MEMEST_ERR_INTERNAL, NULL, "internal: more than %d inputs",
                           MEMEST_MAX_NODE_INPUTS);
    for (uint32_t i = 0; i < nin; i++)
        if (input_grad(S, n, i, &slots[i]) != 0)
            return -1;
    bool low = uses_param_casts(r, n);
    if (alloc_param_grads(S, n, low) != 0)
        return -1;
    /* 3. scratch */
    if (!first && sim_ev_transient(S, MEMEST_CAT_ACTGRADS, n, ni->bwd_work_bytes) != 0)
        return -1;
    /* 4. the incoming gradients go, then the saved tensors */
    if (drop_incoming(S, n) != 0)
        return -1;
    if (copy != NONE && sim_ev_free(S, n, copy) != 0)
        return -1;
    if (release_node(S, n, inner) != 0)
        return -1;
    /* 5. input gradients to their producers */
    for (uint32_t i = 0; i < nin; i++)
        if (slots[i] != NONE && deliver_input_grad(S, n, i, slots[i]) != 0)
            return -1;
    /* 6. parameter gradients to AccumulateGrad */
    if (accumulate_param_grads(S, n, low) != 0)
        return -1;
    /* casts made by this node are now complete: convert their gradients */
    if (r->opts.amp && convert_cast_grads(S, n) != 0)
        return -1;
    return sim_offload_hook(S, n);   /* the offloading's post-hook */
}

/* The non-reentrant checkpoint's recomputation returns the block's outputs
 * to nobody (torch.utils.checkpoint's recompute_fn): those no node inside
 * saved die when it ends, before the block's backward. */
static int recompute_drop(struct sim *S, const struct ckpt *k, uint32_t first_s)
{
    const struct memest_run *r = S->r;
    for (uint32_t s = first_s; s < S->ns && r->storages[s].node <= k->last; s++) {
        if (S->sid[s] == NONE || persistent_kind(r->storages[s].kind) || sim_held(S, s) ||
            param_cast(r, s) || (S->relin[s] != NONE && S->relin[s] <= k->last))
            continue;
        if (sim_free_storage(S, s, k->last) != 0)
            return -1;
    }
    return 0;
}

/* early_stop: the recomputation ends with the last node of the block that
 * packs a saved tensor (the pack that fills the frame's last weak holder
 * raises _StopRecomputationError, PyTorch 2.6 torch/utils/checkpoint.py
 * _recomputation_hook); the nodes after it are not run again. An op saves
 * its inputs before its kernel runs (the generated VariableType code), so
 * a last node saving none of its own storages (a linear's mm: its input
 * and weight.t()) makes nothing: the recomputation stops before it. The
 * result: one past the last node run (k->first: none). */
static uint32_t early_stop(const struct sim *S, const struct ckpt *k)
{
    const struct memest_run *r = S->r;
    for (uint32_t n = k->last + 1; n-- > k->first;) {
        const struct memest_nodeinfo *ni = &r->nodes[n];
        if (!ni->needs_grad || !S->reach[n] || ni->nsave == 0)
            continue;
        for (uint32_t i = ni->save_first; i < ni->save_first + ni->nsave; i++)
            if (r->storages[r->saves[i]].node == n)
                return n + 1;   /* it saves what it makes */
        return n;
    }
    return k->last + 1;
}

/* The reentrant CheckpointFunction.backward(ctx, *args) holds the incoming
 * gradients (args) until torch.autograd.backward(outputs, args) returns:
 * an extra slot on each gradient that reached the block, *nh of them into
 * *hold (drop_held releases them). */
static int hold_incoming(struct sim *S, const struct ckpt *k, uint32_t **hold, uint32_t *nh)
{
    const struct memest_run *r = S->r;
    uint32_t cap = 0;
    for (uint32_t n = k->first; n <= k->last; n++) {
        const struct memest_nodeinfo *ni = &r->nodes[n];
        for (uint32_t v = ni->out_first; v < ni->out_first + ni->nout; v++) {
            uint32_t g = S->vg[v];
            if (g == NONE)
                continue;
            if (sim_grow_u32(hold, &cap, *nh + 1) != 0)
                return sim_nomem(S);
            if (sim_new_slot(S, S->gs[g].buf, &S->gs[g].geom, &(*hold)[*nh]) != 0)
                return -1;
            ++*nh;
        }
    }
    return 0;
}

static int drop_held(struct sim *S, const struct ckpt *k, uint32_t *hold, uint32_t nh)
{
    int rc = 0;
    for (uint32_t i = 0; i < nh && rc == 0; i++)
        rc = sim_drop_slot(S, k->first, hold[i]);
    free(hold);
    return rc;
}

/* A checkpointed block instance: recompute its forward with grad, run its
 * backward, drop what the recomputation left. */
static int recompute(struct sim *S, const struct ckpt *k)
{
    const struct memest_run *r = S->r;
    uint8_t ph = S->ph;
    uint32_t first_s = S->sfirst[k->first];
    /* the original outputs may still be alive (saved by a consumer): the
     * recomputed ones are new tensors */
    uint32_t nst = 0, *stash = NULL, cap = 0;
    for (uint32_t s = first_s; s < S->ns && r->storages[s].node <= k->last; s++) {
        if (S->sid[s] == NONE || sim_sac(S, s))
            continue;   /* (the selective checkpoint's cache: the same tensors) */
        if (sim_grow_u32(&stash, &cap, 2 * (nst + 1)) != 0) {
            free(stash);
            return sim_nomem(S);
        }
        stash[2 * nst] = s;
        stash[2 * nst + 1] = S->sid[s];
        nst++;
        S->sid[s] = NONE;
    }
    uint32_t sfirst = first_s;
    int rc = sim_offload_ck_unpack(S, (uint32_t)(k - S->ck));
    uint32_t stop = S->ck_early_stop ? early_stop(S, k) : k->last + 1;
    for (uint32_t n = k->first; n < stop && rc == 0; n++)
        rc = sim_forward_node(S, n, FM_RECOMPUTE, k, &sfirst);
    if (rc == 0)
        rc = sim_clear_cast_cache(S, k->first, k->last, FM_RECOMPUTE, k);
    if (rc == 0 && S->ck_nonreentrant)
        rc = recompute_drop(S, k, first_s);
    S->ph = ph;
    uint32_t *hold = NULL, nh = 0;
    if (rc == 0 && !S->ck_nonreentrant)
        rc = hold_incoming(S, k, &hold, &nh);
    if (rc == 0)
        rc = bwd_range(S, k->last, k->first, k);
    if (drop_held(S, k, hold, nh) != 0)
        rc = -1;
    /* the recomputed outputs (`outputs` of CheckpointFunction.backward) */
    for (uint32_t s = first_s; rc == 0 && s < S->ns && r->storages[s].node <= k->last; s++)
        if (!persistent_kind(r->storages[s].kind))
            rc = sim_free_storage(S, s, k->first);
    for (uint32_t i = 0; i < nst; i++)
        S->sid[stash[2 * i]] = stash[2 * i + 1];
    free(stash);
    if (rc == 0)   /* the reentrant checkpoint node's post-hook */
        rc = sim_offload_ck_done(S, (uint32_t)(k - S->ck));
    return rc;
}

static int bwd_range(struct sim *S, uint32_t hi, uint32_t lo, const struct ckpt *inner)
{
    for (uint32_t n = hi + 1; n-- > lo;) {
        if (!inner && S->ck_of[n] != NONE) {
            const struct ckpt *k = &S->ck[S->ck_of[n]];
            if (SIM_EXT(S, bwd_enter, S, k->first, k->last) != 0 || recompute(S, k) != 0 ||
                release_node(S, k->first, NULL) != 0 || SIM_EXT(S, bwd_leave, S, k->first) != 0)
                return -1;
            if (S->ck_of[n] == S->mask_ck && S->mask_id != NONE) {
                if (sim_ev_free(S, k->first, S->mask_id) != 0)
                    return -1;
                S->mask_id = NONE;   /* the last checkpoint keeping the mask is done */
            }
            n = k->first;
            continue;
        }
        if ((!inner && SIM_EXT(S, bwd_enter, S, n, n) != 0) || bwd_node(S, n, inner) != 0 ||
            (!inner && SIM_EXT(S, bwd_leave, S, n) != 0))
            return -1;
    }
    return 0;
}

int sim_backward(struct sim *S)
{
    S->ph = (uint8_t)((S->ph & WARM) | MEMEST_PH_BACKWARD);
    if (S->nn == 0)
        return 0;
    sim_fused_backward_begin(S);
    if (SIM_EXT(S, bwd_begin, S) != 0 || bwd_range(S, S->nn - 1, 0, NULL) != 0 ||
        sim_fused_backward_end(S) != 0 || sim_offload_backward_end(S) != 0)
        return -1;
    return SIM_EXT(S, bwd_end, S);
}
