/* calc_flops.c - forward and backward multiply-accumulates, and the
 * optimizer's. Only ops that multiply-accumulate (convolutions, linear
 * layers, matrix products, RNN gates, attention) count, as torchvision's and
 * fvcore's tables do; of the optimizer only its matrix products (Muon's
 * Newton-Schulz iterations, memest_optim_desc.macs), none of the elementwise
 * updates. */
#include "memest/calc.h"
#include "memest/checked.h"
#include "memest/optim.h"

void memest_calc_flops(const struct memest_run *r, struct memest_flops *out)
{
    struct memest_flops f = {0};
    for (uint32_t n = 0; n < r->g->nnodes; n++) {
        f.fwd_macs += r->nodes[n].fwd_macs;
        f.bwd_macs += r->nodes[n].bwd_macs;
    }
    f.step_macs = f.fwd_macs + f.bwd_macs;
    f.fwd_flops = 2 * f.fwd_macs;
    f.bwd_flops = 2 * f.bwd_macs;
    f.step_flops = f.fwd_flops + f.bwd_flops;
    *out = f;
}

void memest_calc_optim_flops(const struct memest_run *r, const struct memest_optim_cfg *oc,
                             struct memest_flops *f)
{
    uint64_t macs = 0;
    for (uint32_t i = 0; i < r->nparams; i++) {
        const struct memest_param *p = &r->params[i];
        if (p->tied_to >= 0 || !p->trainable)
            continue;
        struct memest_optim_param op = memest_optim_param_run(r, i);
        macs = memest_sat_add(macs, memest_optim_param_macs(oc, &op));
    }
    f->optim_macs = (double)macs;
    f->optim_flops = 2 * (double)macs;
}
