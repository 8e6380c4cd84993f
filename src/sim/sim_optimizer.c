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
    memest_optim_param_state(oc, pp->numel, S->r->storages[pp->storage].bytes, &st);
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
    /* state created at the start of this step (_init_group) */
    if (first && d->init == MEMEST_INIT_FIRST_STEP) {
        bool dev_steps = memest_optim_device_steps(S->cfg);
        for (uint32_t p = 0; p < r->nparams; p++) {
            const struct memest_param *pp = &r->params[p];
            if (pp->tied_to >= 0 || !pp->trainable)
                continue;
            if (sim_optim_state(S, pp, dev_steps) != 0)
                return -1;
        }
    }
    /* state made parameter by parameter during the update: SGD's lazy
       clone, bitsandbytes' init_state (its update makes no temporaries) */
    bool lazy_clone = first && (d->init == MEMEST_INIT_LAZY_CLONE || d->init == MEMEST_INIT_PER_PARAM);
    const struct memest_optim_prog *prog = memest_optim_foreach(oc->kind, S->cfg->torch_version);
    unsigned nt = d->forloop_temps;
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
    if (rc == 0 && impl == MEMEST_IMPL_FOREACH && prog->n) {
        uint32_t *lists[MEMEST_OPTIM_MAX_LISTS + 1] = {NULL};
        for (size_t k = 0; k < prog->n && rc == 0; k++) {
            int l = prog->op[k] > 0 ? prog->op[k] : -prog->op[k];
            if (prog->op[k] > 0) {
                lists[l] = malloc(sizeof *lists[l] * (np ? np : 1));
                if (!lists[l]) {
                    rc = sim_nomem(S);
                    break;
                }
                for (uint32_t i = 0; i < np && rc == 0; i++) {
                    const struct memest_param *pp = &r->params[ps[i]];
                    rc = sim_ev_alloc(S, MEMEST_CAT_OPTTEMP, pp->node, r->storages[pp->storage].bytes,
                                  &lists[l][i]);
                }
            } else {
                for (uint32_t i = np; i-- > 0 && rc == 0;)   /* a list dies last item first */
                    rc = sim_ev_free(S, r->params[ps[i]].node, lists[l][i]);
                free(lists[l]);
                lists[l] = NULL;
            }
        }
        for (int l = MEMEST_OPTIM_MAX_LISTS; l > 0; l--) {
            for (uint32_t i = np; lists[l] && i-- > 0 && rc == 0;)
                rc = sim_ev_free(S, NONE, lists[l][i]);
            free(lists[l]);
        }
    } else if (rc == 0 && impl == MEMEST_IMPL_FORLOOP && nt) {
        uint32_t prev = NONE;
        for (uint32_t i = 0; i < np && rc == 0; i++) {
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
    }
    free(ps);
    return rc;
}
