/* estimate.c - runs every calculator on a run, in dependency order. */
#include <string.h>

#include "memest/calc.h"

int memest_estimate(struct memest_run *r, const struct memest_optim_cfg *cfg,
                    struct memest_estimate *e, struct memest_timeline *train_tl,
                    struct memest_error *err)
{
    memset(e, 0, sizeof *e);
    if (memest_calc_params(r, &e->params, err) != 0 ||
        memest_calc_optimizer(r, cfg, &e->opt, err) != 0)
        return -1;
    e->gradients = memest_calc_grads(r);
    e->activations = memest_calc_activations(r);
    memest_calc_flops(r, &e->flops);
    struct memest_timeline scratch = {0};
    struct memest_peak_opts inf = {.inference = true};
    struct memest_peak_opts train = {.inference = false, .opt = &e->opt};
    int rc = memest_calc_peak(r, &inf, &scratch, &e->infer_peak, err);
    if (rc == 0)
        rc = memest_calc_peak(r, &train, train_tl ? train_tl : &scratch, &e->train_peak, err);
    memest_timeline_dispose(&scratch);
    return rc;
}
