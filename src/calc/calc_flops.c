/* calc_flops.c - forward and backward multiply-accumulates. Only ops that
 * multiply-accumulate (convolutions, linear layers, matrix products, RNN
 * gates, attention) count, as torchvision's and fvcore's tables do. */
#include "memest/calc.h"

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
