/* sim_step.c - the step driver: setup, the warm-up and simulated steps
 * (micro-batches, zero_grad), teardown, and the entry point memest_sim_step()
 * (sim.h, sim_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "memest/optim.h"
#include "sim_internal.h"

/* ---- the step ---- */

/* Frees the HELD_OUTPUT storages still alive; with `saved_too` false,
 * those a backward release still waits for are left to it. */
static int free_held_outputs(struct sim *S, bool saved_too)
{
    for (uint32_t s = 0; S->held_outputs && s < S->ns; s++)
        if (S->held[s] == HELD_OUTPUT && S->sid[s] != NONE &&
            (saved_too || S->inference || S->release[s] == NONE) &&
            sim_free_storage(S, s, NONE) != 0)
            return -1;
    return 0;
}

/* Frees what the caller held (`out`, `loss`, the outputs the model
 * returned) from index `from` on. */
static int drop_held(struct sim *S, uint32_t from)
{
    for (uint32_t i = from; i < S->nheld; i++)
        if (sim_ev_free(S, NONE, S->held_ids[i]) != 0)
            return -1;
    S->nheld = from;
    S->out_id = NONE;
    return free_held_outputs(S, true);
}

int sim_drop_outputs(struct sim *S)
{
    if (S->inference || !memest_loop_drops_outputs((enum memest_loop)S->cfg->loop) ||
        S->outs_dropped)
        return 0;
    S->outs_dropped = true;
    uint32_t s = S->r->values[root_value(S)].storage;
    for (uint32_t i = 0; S->out_id != NONE && S->release[s] == NONE && i < S->nheld; i++)
        if (S->held_ids[i] == S->out_id) {   /* `del logits`: no backward keeps it */
            if (sim_ev_free(S, NONE, S->out_id) != 0)
                return -1;
            memmove(S->held_ids + i, S->held_ids + i + 1, sizeof *S->held_ids * (S->nheld - i - 1));
            S->nheld--;
            S->out_id = NONE;
            break;
        }
    return free_held_outputs(S, false);
}

/* Moves the last output's storage into the caller's hands (its id goes
 * with `out`, freed when it is rebound or the step ends). */
static int take_outputs(struct sim *S)
{
    const struct memest_run *r = S->r;
    uint32_t s = r->values[root_value(S)].storage;
    while (S->alias[s] != NONE)
        s = S->alias[s];
    if (S->sid[s] == NONE || persistent_kind(r->storages[s].kind))
        return 0;
    if (sim_remember_held(S, S->sid[s]) != 0)
        return -1;
    S->out_id = S->sid[s];
    S->sid[s] = NONE;
    return 0;
}

/* The exact bytes of the saved activations alive now, and of the model
 * inputs that require grad (what a pipeline stage received, kept for its
 * backward). */
static uint64_t saved_now(const struct sim *S)
{
    uint64_t sum = 0;
    const struct memest_run *r = S->r;
    for (uint32_t n = 0; n < S->nn; n++)
        if (S->g->nodes[n].op->model_input && r->values[r->nodes[n].out_first].requires_grad)
            sum = memest_sat_add(sum, value_bytes(r, r->nodes[n].out_first));
    return memest_sat_add(sum, sim_replay_saved(S));
}

static int micro_batch(struct sim *S, uint32_t mb)
{
    uint32_t old = S->nheld;
    /* the previous micro-batch's returned outputs (a storage is made once
     * at a time: they go as the forward starts, not as `out` is rebound) */
    if (mb > 0 && free_held_outputs(S, true) != 0)
        return -1;
    S->outs_dropped = false;
    if (sim_forward(S, FM_TRAIN) != 0 || take_outputs(S) != 0)
        return -1;
    if (!(S->ph & WARM) && dist_on(S))   /* a pipeline stage's in-flight share */
        S->fwd_saved = saved_now(S) - (S->rv->inflight_bytes ? S->rv->inflight_bytes : 0);
    if (mb > 0) {   /* out = model(x) rebinds `out` of the previous micro-batch */
        uint32_t keep = S->nheld - old;
        for (uint32_t i = 0; i < old; i++)
            if (sim_ev_free(S, NONE, S->held_ids[i]) != 0)
                return -1;
        memmove(S->held_ids, S->held_ids + old, sizeof *S->held_ids * keep);
        S->nheld = keep;
        old = 0;
    }
    (void)sim_replay_saved_mark(S);
    if (sim_loss_step(S) != 0)
        return -1;
    if (!(S->ph & WARM))   /* what autograd keeps, the loss's saved tensors at most */
        S->bwd_saved = memest_sat_add(sim_replay_saved_mark(S), S->saved_inputs) -
                       (S->rv ? S->rv->inflight_bytes : 0);
    if (sim_clear_cast_cache(S, 0, S->nn ? S->nn - 1 : 0, FM_TRAIN, NULL) != 0)
        return -1;
    return sim_backward(S);
}

static int train_step(struct sim *S, bool first)
{
    int64_t mbs = S->cfg->grad_accum > 1 ? 2 : 1;
    for (int64_t mb = 0; mb < mbs; mb++)
        if (micro_batch(S, (uint32_t)mb) != 0)
            return -1;
    return sim_optimizer(S, first);
}

static int infer_step(struct sim *S)
{
    if (sim_forward(S, FM_NOGRAD) != 0 || take_outputs(S) != 0)
        return -1;
    return sim_clear_cast_cache(S, 0, S->nn ? S->nn - 1 : 0, FM_NOGRAD, NULL);
}

/* The model inputs some node saves for backward, once each. */
static int count_saved_inputs(struct sim *S)
{
    const struct memest_run *r = S->r;
    uint8_t *seen = calloc(S->ns ? S->ns : 1, 1);
    if (!seen)
        return sim_nomem(S);
    S->saved_inputs = 0;
    for (uint32_t n = 0; n < S->nn; n++)
        for (uint32_t k = r->nodes[n].save_first; k < r->nodes[n].save_first + r->nodes[n].nsave; k++) {
            uint32_t s = r->saves[k];
            if (r->storages[s].kind == MEMEST_ST_INPUT && !seen[s]) {
                seen[s] = 1;
                S->saved_inputs = memest_sat_add(S->saved_inputs, r->storages[s].bytes);
            }
        }
    free(seen);
    return 0;
}

/* Parameters, buffers, the model inputs and the loss target. */
static int setup(struct sim *S)
{
    const struct memest_run *r = S->r;
    S->ph = MEMEST_PH_SETUP;
    if (count_saved_inputs(S) != 0)
        return -1;
    for (uint32_t s = 0; s < S->ns; s++) {
        uint8_t kind = r->storages[s].kind;
        uint8_t cat = kind == MEMEST_ST_PARAM ? MEMEST_CAT_PARAMS
                      : kind == MEMEST_ST_BUFFER ? MEMEST_CAT_BUFFERS : MEMEST_CAT_INPUTS;
        if (kind == MEMEST_ST_PARAM && dist_on(S))
            continue;   /* the rank's own (sim_dist_setup) */
        if (persistent_kind(kind) && sim_alloc_storage(S, s, cat, r->storages[s].node) != 0)
            return -1;
    }
    if (SIM_EXT(S, setup, S) != 0)
        return -1;
    if (S->inference || S->loss == MEMEST_LOSS_NONE)
        return 0;
    /* the target: class indices (int64, one per row: step.h) or a tensor of
     * the output's shape and dtype */
    uint32_t v = root_value(S), id;
    struct memest_loss_shapes ls;
    if (memest_loss_shapes(S->loss, S->g->loss_class_dim, &r->values[v].shape,
                           (enum memest_dtype)r->values[v].dtype, &ls, S->err) != 0)
        return -1;
    uint64_t bytes = ls.class_index ? memest_sat_mul(ls.rows, 8) : value_bytes(r, v);
    return sim_ev_alloc(S, MEMEST_CAT_INPUTS, NONE, bytes, &id);
}

/* The optimizer state that exists before the first step: made in the
 * optimizer's constructor (optim.h: MEMEST_INIT_CONSTRUCTOR, Adagrad's). */
static int early_state(struct sim *S)
{
    const struct memest_run *r = S->r;
    const struct memest_optim_cfg *oc = &S->cfg->optim;
    const struct memest_optim_desc *d = memest_optim_desc(oc->kind);
    if (S->inference || d->init != MEMEST_INIT_CONSTRUCTOR ||
        (dist_on(S) && S->rv->shard_optim))   /* the partition's: sim_dist_optimizer */
        return 0;
    S->ph = MEMEST_PH_SETUP;
    for (uint32_t p = 0; p < r->nparams; p++) {
        const struct memest_param *pp = &r->params[p];
        if (pp->tied_to >= 0 || !pp->trainable)
            continue;
        if (sim_optim_state(S, pp, false) != 0)
            return -1;
    }
    return 0;
}

/* zero_grad() at the start of the step: set_to_none frees every .grad;
 * zeros keeps them (zeroed in place). */
static int zero_grad(struct sim *S)
{
    if (S->cfg->zero_grad_zeros)
        return 0;
    if (SIM_EXT(S, zero_grad, S) != 0)
        return -1;
    for (uint32_t s = 0; s < S->ns; s++) {
        if (S->pg[s] != NONE) {
            if (sim_ev_free(S, NONE, S->pg[s]) != 0)
                return -1;
            S->pg[s] = NONE;
        }
    }
    return sim_fused_zero_grad(S);
}

static int teardown(struct sim *S)
{
    S->ph = MEMEST_PH_TEARDOWN;
    uint32_t n = S->tl->next_id;
    for (uint32_t id = 0; id < n; id++)
        if (id < S->capalive && S->alive[id] && sim_ev_free(S, NONE, id) != 0)
            return -1;
    return 0;
}

static void sim_free(struct sim *S)
{
    sim_offload_free(S);
    free(S->release);
    free(S->relin);
    free(S->rhead);
    free(S->rnext);
    free(S->ihead);
    free(S->inext);
    free(S->fhead);
    free(S->fnext);
    free(S->lastuse);
    free(S->alias);
    free(S->sfirst);
    free(S->held);
    free(S->reach);
    free(S->ck_of);
    free(S->ck);
    free(S->sac);
    free(S->sid);
    free(S->vg);
    free(S->pg);
    free(S->cg);
    free(S->gb);
    free(S->gbfree);
    free(S->gs);
    free(S->gsfree);
    free(S->state);
    free(S->held_ids);
    free(S->pids);
    free(S->alive);
    free(S->fused);
    free(S->gen_ids);
    sim_fused_grad_free(S);
    sim_dist_free(S);
    sim_replay_free(S);
}

/* The first storage of each node (storages are made in node order), with
 * entries up to nnodes + 1 holding nstorages; NULL when out of memory. */
static uint32_t *index_storages(const struct memest_run *r)
{
    uint32_t nn = r->g->nnodes, *first = malloc(sizeof *first * ((size_t)nn + 2));
    if (!first)
        return NULL;
    uint32_t s = 0;
    for (uint32_t n = 0; n <= nn + 1; n++) {
        while (s < r->nstorages && r->storages[s].node < n)
            s++;
        first[n] = s;
    }
    return first;
}

static uint32_t *filled(size_t n)
{
    uint32_t *p = malloc(sizeof *p * (n ? n : 1));
    if (p)
        memset(p, 0xFF, sizeof *p * (n ? n : 1));
    return p;
}

int memest_sim_step(const struct memest_run *r, const struct memest_peak_opts *o,
                    struct memest_timeline *tl, struct memest_peak *out, struct memest_error *err)
{
    struct memest_step_cfg defaults;
    memest_step_cfg_default(&defaults);
    struct memest_timeline full = {0};
    struct sim S = {.r = r, .g = r->g, .cfg = o->step ? o->step : &defaults,
                    .tl = &full, .err = err, .inference = o->inference || o->gen,
                    .gen = o->gen, .rv = o->step ? o->step->rank : NULL,
                    .ext = o->step && o->step->rank ? &sim_dist_ext : NULL,
                    .nn = r->g->nnodes, .ns = r->nstorages, .nv = r->nvalues, .cublas = NONE,
                    .cublas_bwd = NONE, .out_id = NONE, .mask_ck = NONE, .mask_id = NONE};
    int rc = -1;
    memset(out, 0, sizeof *out);
    out->node = NONE;
    /* the loss, resolved when the run was set up (step.h); a step PyTorch
     * cannot run is refused (the command line refuses it first) */
    S.loss = S.cfg->loss;
    if (memest_step_cfg_check(S.cfg, err) != 0)
        return -1;
    if (r->g->noutputs == 0)
        return memest_errf(err, MEMEST_ERR_INTERNAL, NULL, "internal: the model has no output");
    size_t ns = S.ns, nn = S.nn;
    S.release = filled(ns);
    S.relin = filled(ns);
    S.rhead = filled(nn);
    S.rnext = filled(ns);
    S.ihead = filled(nn);
    S.inext = filled(ns);
    S.fhead = filled(nn);
    S.fnext = filled(ns);
    S.lastuse = filled(ns);
    S.alias = filled(ns);
    S.held = calloc(ns ? ns : 1, 1);
    S.reach = calloc(nn ? nn : 1, 1);
    S.ck_of = filled(nn);
    S.sid = filled(ns);
    S.vg = filled(S.nv);
    S.pg = filled(ns);
    S.cg = filled(ns);
    S.sfirst = index_storages(r);
    uint32_t maxp = 1;
    for (uint32_t n = 0; n < nn; n++)
        if (r->nodes[n].nparam > maxp)
            maxp = r->nodes[n].nparam;
    S.pids = malloc(sizeof *S.pids * maxp);
    S.gen_ids = filled(S.gen ? S.gen->nslots : 0);
    uint8_t *vreach = calloc(S.nv ? S.nv : 1, 1);
    if (!S.sfirst || !S.release || !S.relin || !S.rhead || !S.rnext || !S.ihead || !S.inext ||
        !S.fhead || !S.fnext || !S.lastuse || !S.alias || !S.held || !S.reach || !S.ck_of ||
        !S.sid || !S.vg || !S.pg || !S.cg || !S.pids || !S.gen_ids || !vreach) {
        sim_nomem(&S);
        goto end;
    }
    if (!S.inference && sim_analyze_reach(&S, vreach) != 0)
        goto end;
    if (sim_analyze_checkpoint(&S) != 0 || sim_fused_ce_setup(&S) != 0 || sim_offload_setup(&S) != 0)
        goto end;
    sim_analyze_lastuse(&S);
    sim_analyze_release(&S);
    if (sim_analyze_sac(&S) != 0 || sim_dist_analyze(&S) != 0 || sim_fused_grad_setup(&S) != 0)
        goto end;

    /* the events are stored only for the timeline exported; then room for
     * them up front: the cost model's bound, or a guess (a warm-up and a
     * step, each about two allocations per storage and parameter, each
     * freed once); pages never written cost nothing */
    S.store = tl != NULL;
    if (S.store) {
        size_t want = o->events && o->events < SIZE_MAX / sizeof *full.ev
                          ? (size_t)o->events
                          : 8 * ((size_t)ns + r->nparams) + 1024;
        full.ev = malloc(sizeof *full.ev * want);
        if (full.ev)
            full.cap = want;
    }
    if (sim_replay_begin(&S, tl && tl->layout, o->trace, o->events) != 0)
        goto end;
    if (setup(&S) != 0 || early_state(&S) != 0 || sim_gen_setup(&S) != 0)
        goto end;
    if (S.gen) {   /* one generate() forward, the cache made in setup */
        sim_replay_start(&S);
        S.ph = 0;
        if (infer_step(&S) != 0)
            goto end;
    } else if (S.inference) {
        S.ph = WARM;
        if (infer_step(&S) != 0 || drop_held(&S, 0) != 0)
            goto end;
        sim_replay_start(&S);
        S.ph = 0;
        if (infer_step(&S) != 0)
            goto end;
    } else if (S.cfg->first_step) {
        sim_replay_start(&S);
        S.ph = 0;
        if (train_step(&S, true) != 0)
            goto end;
    } else {
        S.ph = WARM;
        if (train_step(&S, true) != 0 || drop_held(&S, 0) != 0 || zero_grad(&S) != 0)
            goto end;
        sim_replay_start(&S);
        S.ph = 0;
        if (train_step(&S, false) != 0)
            goto end;
    }
    if (teardown(&S) != 0)
        goto end;
    if (sim_finish(&S, tl, out) != 0)   /* it hands the stored list over to tl */
        goto end;
    out->sim_events = sim_replay_events(&S);
    out->fwd_saved = S.fwd_saved, out->bwd_saved = S.bwd_saved;
    rc = 0;
end:
    free(vreach);
    sim_free(&S);
    memest_timeline_dispose(&full);
    return rc;
}
