/* sim_optimizer.c - the optimizer step: its temporaries per implementation and
 * the state it creates in the first step (sim_internal.h). */
#include <stdlib.h>

#include "sim_internal.h"

/* ---- the optimizer ----
 * Temporaries per implementation, as torch/optim (2.x) computes one step
 * (default hyper-parameters: no weight decay, no maximize, not capturable):
 *   foreach (_multi_tensor_*: each torch._foreach_* op that is not in place
 *     returns a new tensor per parameter, all alive together):
 *     sgd, sgd with momentum: none (_foreach_mul_/_foreach_add_ in place);
 *     adam, adamw: exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs), then
 *       divided, incremented and used in place: one copy of the parameters;
 *     rmsprop: avg = _foreach_sqrt(square_avgs) (centered: _foreach_addcmul):
 *       one copy;
 *     adagrad: std = _foreach_sqrt(state_sums) and numerator =
 *       _foreach_mul(grads, minus_clr): two copies.
 *   for-loop (_single_tensor_*, per parameter, Python locals rebound by the
 *     next iteration):
 *     adam, adamw: denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt)
 *       .add_(eps): sqrt() and the division are alive together, and the
 *       previous parameter's denom until the assignment: peak p[i-1] + 2 p[i];
 *     rmsprop: avg = square_avg.sqrt() (centered: addcmul(...).sqrt_()):
 *       p[i-1] + p[i]; adagrad: std = state_sum.sqrt().add_(eps): the same;
 *     sgd: none.
 *   fused (_fused_adam_, _fused_adamw_, _fused_sgd_): none; the `step`
 *     counters are 0-d float32 tensors on the device (one 512-byte block each).
 * PyTorch 1.13 (cfg->torch_version 113) differs in foreach only: Adam/AdamW
 * keep exp_avg_sq_sqrt and denom = _foreach_add(exp_avg_sq_sqrt, eps) (two
 * copies); Adagrad makes sqrt(state_sums), std = that + eps, then
 * _foreach_mul(grads, minus_clr) and toAdd = its quotient by std (three
 * copies at once).
 * First step: Adam/AdamW and RMSprop create their state in _init_group
 * (zeros_like per parameter, before the update); SGD with momentum clones
 * each gradient into its buffer during the update; Adagrad creates its state
 * in the optimizer's constructor, so it exists before any step. */
int sim_optimizer(struct sim *S, bool first)
{
    const struct memest_run *r = S->r;
    const struct memest_optim_cfg *oc = &S->cfg->optim;
    enum memest_optim_impl impl = S->cfg->impl;
    S->ph = (uint8_t)((S->ph & WARM) | MEMEST_PH_OPTIMIZER);
    unsigned copies = S->opt_copies;
    bool fused_steps = impl == MEMEST_IMPL_FUSED &&
                       (oc->kind == MEMEST_OPT_ADAM || oc->kind == MEMEST_OPT_ADAMW);
    /* state created in this step */
    bool lazy_clone = oc->kind == MEMEST_OPT_SGD;   /* momentum buffers: clone(grad) */
    if (first && oc->kind != MEMEST_OPT_ADAGRAD && !lazy_clone) {
        for (uint32_t p = 0; p < r->nparams; p++) {
            const struct memest_param *pp = &r->params[p];
            if (pp->tied_to >= 0 || !pp->trainable)
                continue;
            for (unsigned c = 0; c < copies + (fused_steps ? 1 : 0); c++) {
                uint32_t id;
                uint64_t bytes = c < copies ? r->storages[pp->storage].bytes : 4;
                if (sim_ev_alloc(S, MEMEST_CAT_OPTSTATE, pp->node, bytes, &id) != 0 ||
                    sim_grow_u32(&S->state, &S->capstate, S->nstate + 1) != 0)
                    return memest_errf(S->err, MEMEST_ERR_NOMEM, NULL, "out of memory");
                S->state[S->nstate++] = id;
            }
        }
    }
    /* foreach: a program of whole-list allocations (+k: list k made, -k:
     * list k dropped); every list left is dropped when the step returns */
    bool v113 = S->cfg->torch_version == 113;
    static const int8_t prog_adam[] = {1}, prog_adam113[] = {1, 2}, prog_rms[] = {1},
                        prog_ada[] = {1, 2}, prog_ada113[] = {1, 2, -1, 3, 4, -3};
    const int8_t *prog = NULL;
    size_t nprog = 0;
    int nt = 0;   /* for-loop: temporaries per parameter (adam: 2, others: 1) */
    switch (oc->kind) {
    case MEMEST_OPT_SGD:
        break;
    case MEMEST_OPT_ADAM:
    case MEMEST_OPT_ADAMW:
        prog = v113 ? prog_adam113 : prog_adam;
        nprog = v113 ? sizeof prog_adam113 : sizeof prog_adam;
        nt = 2;
        break;
    case MEMEST_OPT_RMSPROP:
        prog = prog_rms;
        nprog = sizeof prog_rms;
        nt = 1;
        break;
    case MEMEST_OPT_ADAGRAD:
        prog = v113 ? prog_ada113 : prog_ada;
        nprog = v113 ? sizeof prog_ada113 : sizeof prog_ada;
        nt = 1;
        break;
    case MEMEST_OPT_COUNT:
        break;
    }
    /* the parameters the step updates (those with a gradient), in order */
    uint32_t *ps = malloc(sizeof *ps * (r->nparams ? r->nparams : 1));
    if (!ps)
        return sim_nomem(S);
    uint32_t np = 0;
    int rc = 0;
    for (uint32_t p = 0; p < r->nparams && rc == 0; p++) {
        const struct memest_param *pp = &r->params[p];
        if (pp->tied_to >= 0 || !pp->trainable || S->pg[pp->storage] == NONE)
            continue;
        ps[np++] = p;
        if (first && lazy_clone && copies) {   /* momentum_buffer = clone(grad) */
            uint32_t id;
            rc = sim_ev_alloc(S, MEMEST_CAT_OPTSTATE, pp->node, r->storages[pp->storage].bytes, &id);
            if (rc == 0 && sim_grow_u32(&S->state, &S->capstate, S->nstate + 1) != 0)
                rc = sim_nomem(S);
            if (rc == 0)
                S->state[S->nstate++] = id;
        }
    }
    if (rc == 0 && impl == MEMEST_IMPL_FOREACH && nprog) {
        uint32_t *lists[5] = {NULL};
        for (size_t k = 0; k < nprog && rc == 0; k++) {
            int l = prog[k] > 0 ? prog[k] : -prog[k];
            if (prog[k] > 0) {
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
        for (int l = 4; l > 0; l--) {
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
            if (rc == 0 && nt == 2) {
                /* sqrt() then "/ bias_correction2_sqrt": t1 dies after the division */
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
