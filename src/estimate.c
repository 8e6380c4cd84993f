/* estimate.c - runs every calculator on a run, in dependency order. */
#include <string.h>

#include "memest/calc.h"

void memest_step_cfg_default(struct memest_step_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->optim.kind = MEMEST_OPT_ADAM;
    c->impl = MEMEST_IMPL_FOREACH;
    c->grad_accum = 1;
}

int memest_estimate(struct memest_run *r, const struct memest_step_cfg *cfg,
                    struct memest_estimate *e, struct memest_timeline *train_tl,
                    struct memest_error *err)
{
    memset(e, 0, sizeof *e);
    if (memest_calc_params(r, &e->params, err) != 0 ||
        memest_calc_optimizer(r, &cfg->optim, &e->opt, err) != 0)
        return -1;
    e->gradients = memest_calc_grads(r);
    e->activations = memest_calc_activations(r);
    memest_calc_flops(r, &e->flops);
    struct memest_timeline scratch = {0};
    struct memest_peak_opts inf = {.inference = true, .step = cfg};
    struct memest_peak_opts train = {.inference = false, .opt = &e->opt, .step = cfg};
    int rc = memest_calc_peak(r, &inf, &scratch, &e->infer_peak, err);
    if (rc == 0)
        rc = memest_calc_peak(r, &train, train_tl ? train_tl : &scratch, &e->train_peak, err);
    memest_timeline_dispose(&scratch);
    /* until the allocator model exists, reserved = allocated */
    e->reserved_peak = e->train_peak.bytes;
    e->infer_reserved_peak = e->infer_peak.bytes;
    e->overhead = cfg->overhead_set ? cfg->overhead : 0;
    e->total_device = e->reserved_peak + e->overhead;
    return rc;
}
