/* sim_optimizer.c - the optimizer step: its temporaries per implementation and
 * the state it creates in the first step (sim_internal.h), as the optimizer
 * table (optim.h) describes them. */
#include <stdlib.h>

#include "memest/optim.h"
#include "sim_internal.h"

/* ---- the optimizer ----
 * Everything optimizer-specific is the optimizer table's (optim.h, with the
 * torch/optim sources it follows in optim.c): the state tensors and when
 * they are made, the `step` scalars of a fused update, and the temporaries
 * per implementation, laid out here as:
 *   foreach: the table's program of whole-list allocations, each list one
 *     temporary per updated parameter, all alive together;
 *   for-loop: per parameter, forloop_temps temporaries each dying when the
 *     next is made; the last (denom, avg, std: a Python local) lives until
 *     the next parameter's replaces it: peak p[i-1] + 2 p[i] for two;
 *   fused: none; the `step` counters are 0-d float32 tensors on the device
 *     (one 512-byte block each), made with the state.
 * First step: state made in _init_group is allocated per parameter before
 * the update; state lazily cloned from the gradient (SGD's momentum buffer)
 * or made by bitsandbytes' init_state during it, parameter by parameter;
 * state made in the constructor exists before the step (sim_step.c).
 * bitsandbytes' paged state lives in unified memory, not in the caching
 * allocator: it makes no event here (calc_optimizer.c reports it). */

/* Records one optimizer state tensor of `bytes` for parameter node `node`. */
static int state_alloc(struct sim *S, uint32_t node, uint64_t bytes)
{
    uint32_t id;
    if (sim_ev_alloc(S, MEMEST_CAT_OPTSTATE, node, bytes, &id) != 0)
        return -1;
    if (sim_grow_u32(&S->state, &S->capstate, S->nstate + 1) != 0)
        return sim_nomem(S);
    S->state[S->nstate++] = id;
    return 0;
}

/* Allocates one parameter's state tensors (sim_internal.h), then its
 * device `step` scalar with dev_step, and records them in S->state: first
 * the tensors made once when this is the first state using them
 * (bitsandbytes' qmaps); tensors in unified memory (paged) are not the
 * caching allocator's and are left out (calc_optimizer.c reports them). */
int sim_optim_state(struct sim *S, const struct memest_param *pp, bool dev_step)
{
    const struct memest_optim_cfg *oc = &S->cfg->optim;
    const struct memest_optim_desc *d = memest_optim_desc(oc->kind);
    struct memest_optim_state st;
    struct memest_optim_param op = memest_optim_param_run(S->r, (uint32_t)(pp - S->r->params));
    memest_optim_shaped_state(oc, &op, &st);
    if (st.shared && !S->shared_state) {
        for (unsigned k = 0; k < d->nshared; k++)
            if (state_alloc(S, pp->node, d->shared_bytes) != 0)
                return -1;
        S->shared_state = true;
    }
    for (unsigned c = 0; c < st.n; c++)
        if (!(st.paged & (1u << c)) && state_alloc(S, pp->node, st.bytes[c]) != 0)
            return -1;
    return dev_step ? state_alloc(S, pp->node, 4) : 0;
}

/* A foreach program's lists (optim.h: memest_optim_prog), one temporary
 * per parameter of a group. */
struct tlist {
    uint32_t *ids;
    uint32_t n;
    const uint32_t *ps;   /* the group's parameters */
};

/* Frees list t's temporaries (last item first; none after a failure:
 * failed set) and the list. */
static int drop_list(struct sim *S, struct tlist *t, bool at_end, bool failed)
{
    int rc = 0;
    for (uint32_t i = t->n; !failed && t->ids && i-- > 0 && rc == 0;)
        rc = sim_ev_free(S, at_end ? NONE : S->r->params[t->ps[i]].node, t->ids[i]);
    free(t->ids);
    *t = (struct tlist){0};
    return rc;
}

/* prog over the group ps[0..np): +l makes list l (each temporary of the
 * program's size for its parameter), replacing once made a list l of the
 * group before; -l drops it. */
static int run_prog(struct sim *S, const struct memest_optim_prog *prog, const uint32_t *ps,
                    uint32_t np, struct tlist *lists)
{
    const struct memest_run *r = S->r;
    int rc = 0;
    for (size_t k = 0; k < prog->n && rc == 0; k++) {
        int l = prog->op[k] > 0 ? prog->op[k] : -prog->op[k];
        if (prog->op[k] < 0) {
            rc = drop_list(S, &lists[l], false, false);
            continue;
        }
        struct tlist t = {malloc(sizeof *t.ids * (np ? np : 1)), 0, ps};
        if (!t.ids)
            return sim_nomem(S);
        for (uint32_t i = 0; i < np && rc == 0; i++) {
            const struct memest_param *pp = &r->params[ps[i]];
            struct memest_optim_param op = memest_optim_param_of(
                pp->numel, r->storages[pp->storage].bytes, pp->shape.ndim, pp->shape.size);
            rc = sim_ev_alloc(S, MEMEST_CAT_OPTTEMP, pp->node,
                              memest_optim_temp_bytes(&op, (enum memest_optim_tsize)prog->size[l]),
                              &t.ids[i]);
            t.n += rc == 0;
        }
        if (rc == 0)   /* the name rebound: the old list goes */
            rc = drop_list(S, &lists[l], false, false);
        else
            drop_list(S, &lists[l], false, true);
        lists[l] = t;
    }
    return rc;
}

/* The foreach update: one program over every updated parameter, or (by_dim:
 * Adafactor's _group_tensors_by_device_dtype_and_is_multidim) one over the
 * matrices and one over the others, the group whose first parameter comes
 * first first. */
static int foreach_update(struct sim *S, const struct memest_optim_desc *d,
                          const struct memest_optim_prog *prog, const uint32_t *ps, uint32_t np)
{
    struct tlist lists[MEMEST_OPTIM_MAX_LISTS + 1] = {{0}};
    uint32_t *grp = d->by_dim ? malloc(sizeof *grp * (np ? np : 1)) : NULL;
    if (d->by_dim && !grp)
        return sim_nomem(S);
    int rc = 0;
    if (!d->by_dim) {
        rc = run_prog(S, prog, ps, np, lists);
    } else {
        /* the matrices at the front of grp, the others at its back */
        uint32_t nm = 0, nv = 0;
        for (uint32_t i = 0; i < np; i++) {
            bool m = S->r->params[ps[i]].shape.ndim > 1;
            if (m)
                grp[nm++] = ps[i];
            else
                grp[np - 1 - nv++] = ps[i];
        }
        uint32_t *vec = grp + nm;
        for (uint32_t a = 0; a < nv / 2; a++) {   /* back to the parameters' order */
            uint32_t t = vec[a];
            vec[a] = vec[nv - 1 - a];
            vec[nv - 1 - a] = t;
        }
        bool mat_first = nm && (!nv || grp[0] < vec[0]);
        for (int g = 0; g < 2 && rc == 0; g++) {
            bool mat = (g == 0) == mat_first;
            uint32_t n = mat ? nm : nv;
            if (n)
                rc = run_prog(S, mat ? prog : &d->foreach_vec, mat ? grp : vec, n, lists);
        }
    }
    for (int l = MEMEST_OPTIM_MAX_LISTS; l > 0; l--)
        if (drop_list(S, &lists[l], true, rc != 0) != 0)
            rc = -1;
    free(grp);
    return rc;
}

/* The state _init_group makes in the first step, for every trainable
 * parameter (aux: only those of the auxiliary optimizer, memest_optim_state
 * .aux; else, with one, only the others). */
static int first_state(struct sim *S, bool aux)
{
    const struct memest_run *r = S->r;
    const struct memest_optim_cfg *oc = &S->cfg->optim;
    bool with_aux = memest_optim_desc(oc->kind)->with_aux;
    bool dev_steps = memest_optim_device_steps(S->cfg);
    for (uint32_t p = 0; p < r->nparams; p++) {
        const struct memest_param *pp = &r->params[p];
        if (pp->tied_to >= 0 || !pp->trainable)
            continue;
        if (with_aux) {
            struct memest_optim_param op = memest_optim_param_run(r, p);
            struct memest_optim_state st;
            memest_optim_shaped_state(oc, &op, &st);
            if (st.aux != aux)
                continue;
        }
        if (sim_optim_state(S, pp, dev_steps) != 0)
            return -1;
    }
    return 0;
}

/* The for-loop update: per parameter, nt temporaries of its size each
 * dying when the next is made, the last until the next parameter's. */
static int forloop_update(struct sim *S, unsigned nt, const uint32_t *ps, uint32_t np)
{
    const struct memest_run *r = S->r;
    uint32_t prev = NONE;
    int rc = 0;
    for (uint32_t i = 0; i < np && rc == 0 && nt; i++) {
        const struct memest_param *pp = &r->params[ps[i]];
        uint64_t b = r->storages[pp->storage].bytes;
        uint32_t t1, t2;
        rc = sim_ev_alloc(S, MEMEST_CAT_OPTTEMP, pp->node, b, &t1);
        for (unsigned k = 1; k < nt && rc == 0; k++) {
            /* e.g. sqrt() then "/ bias_correction2_sqrt": t1 dies after the division */
            rc = sim_ev_alloc(S, MEMEST_CAT_OPTTEMP, pp->node, b, &t2);
            if (rc == 0)
                rc = sim_ev_free(S, pp->node, t1);
            t1 = t2;
        }
        if (rc == 0 && prev != NONE)   /* the previous denom/avg/std is rebound */
            rc = sim_ev_free(S, pp->node, prev);
        prev = t1;
    }
    if (rc == 0 && prev != NONE)
        rc = sim_ev_free(S, NONE, prev);
    return rc;
}

/* Frees slot k of a per-parameter program (none: nothing). */
static int slot_free(struct sim *S, uint32_t *slot, uint32_t node)
{
    int rc = *slot != NONE ? sim_ev_free(S, node, *slot) : 0;
    *slot = NONE;
    return rc;
}

/* One parameter's program (optim.h: memest_optim_pprog) over the slots
 * left by the one before; its state first made at state_at with
 * make_state (the first step of a MEMEST_INIT_PER_PARAM optimizer). */
static int pprog_run(struct sim *S, const struct memest_param *pp, const struct memest_optim_pprog *o,
                     uint32_t *slots, bool make_state)
{
    int rc = 0;
    for (unsigned k = 0; k <= o->n && rc == 0; k++) {
        if (make_state && k == o->state_at)
            rc = sim_optim_state(S, pp, false);
        if (k == o->n || rc != 0)
            break;
        int s = o->op[k] > 0 ? o->op[k] : -o->op[k];
        if (o->op[k] < 0) {
            rc = slot_free(S, &slots[s], pp->node);
            continue;
        }
        uint32_t id;
        rc = sim_ev_alloc(S, MEMEST_CAT_OPTTEMP, pp->node, o->bytes[s], &id);
        if (rc == 0)   /* the name rebound: the old tensor goes */
            rc = slot_free(S, &slots[s], pp->node);
        slots[s] = rc == 0 ? id : NONE;
    }
    return rc;
}

int sim_optim_gather(struct sim *S, uint64_t ranks, bool by_rows, uint64_t elem)
{
    const struct memest_run *r = S->r;
    uint32_t slots[MEMEST_OPTIM_MAX_SLOTS + 1];
    for (unsigned k = 0; k <= MEMEST_OPTIM_MAX_SLOTS; k++)
        slots[k] = NONE;
    int rc = 0;
    for (uint32_t i = 0; i < r->nparams && rc == 0; i++) {
        const struct memest_param *pp = &r->params[i];
        if (pp->tied_to >= 0 || !pp->trainable)
            continue;
        struct memest_optim_param op = memest_optim_param_run(r, i);
        struct memest_optim_pprog o;
        memest_optim_gather_prog(&S->cfg->optim, &op, ranks, by_rows, elem, &o);
        rc = pprog_run(S, pp, &o, slots, false);
    }
    for (unsigned k = MEMEST_OPTIM_MAX_SLOTS; k > 0 && rc == 0; k--)
        rc = slot_free(S, &slots[k], NONE);
    return rc;
}

/* An optimizer updating parameter by parameter (memest_optim_desc.pprog):
 * its programs in order, then its auxiliary optimizer's step over the
 * parameters they leave (Muon's AdamW), under --optim-impl. */
static int pprog_update(struct sim *S, const struct memest_optim_desc *d, const uint32_t *ps,
                        uint32_t np, bool first)
{
    const struct memest_run *r = S->r;
    uint32_t slots[MEMEST_OPTIM_MAX_SLOTS + 1];
    for (unsigned k = 0; k <= MEMEST_OPTIM_MAX_SLOTS; k++)
        slots[k] = NONE;
    uint32_t *aux = malloc(sizeof *aux * (np ? np : 1));
    if (!aux)
        return sim_nomem(S);
    uint32_t na = 0;
    int rc = 0;
    bool per_param = first && d->init == MEMEST_INIT_PER_PARAM;
    for (uint32_t i = 0; i < np && rc == 0; i++) {
        struct memest_optim_param op = memest_optim_param_run(r, ps[i]);
        struct memest_optim_pprog o;
        d->pprog(&op, &o);
        if (o.n == 0 && d->with_aux)
            aux[na++] = ps[i];
        else
            rc = pprog_run(S, &r->params[ps[i]], &o, slots, per_param);
    }
    for (unsigned k = MEMEST_OPTIM_MAX_SLOTS; k > 0 && rc == 0; k--)   /* step() returns */
        rc = slot_free(S, &slots[k], NONE);
    if (rc == 0 && first && d->with_aux && d->init == MEMEST_INIT_FIRST_STEP)
        rc = first_state(S, true);   /* AdamW's _init_group */
    if (rc == 0 && na) {
        const struct memest_optim_desc *ad = memest_optim_desc(d->aux);
        const struct memest_optim_prog *prog = memest_optim_foreach(d->aux, S->cfg->torch_version);
        if (S->cfg->impl == MEMEST_IMPL_FOREACH && prog->n)
            rc = foreach_update(S, ad, prog, aux, na);
        else if (S->cfg->impl == MEMEST_IMPL_FORLOOP)
            rc = forloop_update(S, ad->forloop_temps, aux, na);
    }
    free(aux);
    return rc;
}

int sim_optimizer(struct sim *S, bool first)
{
    const struct memest_run *r = S->r;
    const struct memest_optim_cfg *oc = &S->cfg->optim;
    const struct memest_optim_desc *d = memest_optim_desc(oc->kind);
    enum memest_optim_impl impl = S->cfg->impl;
    int took = SIM_EXT(S, optimizer, S, first);   /* over the rank's partition */
    if (took != 0)
        return took < 0 ? -1 : 0;
    S->ph = (uint8_t)((S->ph & WARM) | MEMEST_PH_OPTIMIZER);
    /* state created at the start of this step (_init_group); the
       auxiliary optimizer's at the start of its step, after this one's */
    if (first && d->init == MEMEST_INIT_FIRST_STEP && first_state(S, false) != 0)
        return -1;
    /* state made parameter by parameter during the update: SGD's lazy
       clone, bitsandbytes' init_state (its update makes no temporaries) */
    bool lazy_clone = first && !d->pprog &&
                      (d->init == MEMEST_INIT_LAZY_CLONE || d->init == MEMEST_INIT_PER_PARAM);
    const struct memest_optim_prog *prog = memest_optim_foreach(oc->kind, S->cfg->torch_version);
    /* the parameters the step updates (those with a gradient), in order */
    uint32_t *ps = malloc(sizeof *ps * (r->nparams ? r->nparams : 1));
    if (!ps)
        return sim_nomem(S);
    uint32_t np = 0;
    int rc = 0;
    for (uint32_t p = 0; p < r->nparams && rc == 0; p++) {
        const struct memest_param *pp = &r->params[p];
        if (pp->tied_to >= 0 || !pp->trainable ||
            (S->pg[pp->storage] == NONE && sim_fused_grad_of(S, pp->storage) == NONE))
            continue;
        ps[np++] = p;
        if (lazy_clone)   /* momentum_buffer = clone(grad); bnb's init_state */
            rc = sim_optim_state(S, pp, false);
    }
    if (rc == 0 && d->pprog)
        rc = pprog_update(S, d, ps, np, first);
    else if (rc == 0 && impl == MEMEST_IMPL_FOREACH && (prog->n || d->by_dim))
        rc = foreach_update(S, d, prog, ps, np);
    else if (rc == 0 && impl == MEMEST_IMPL_FORLOOP)
        rc = forloop_update(S, d->forloop_temps, ps, np);
    free(ps);
    return rc;
}
