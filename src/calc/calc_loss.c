/* calc_loss.c - what the step's loss reads: the model's last output and the
 * target the step makes for it. */
#include "memest/calc.h"

bool memest_calc_loss(const struct memest_graph *g, const struct memest_run *r,
                      const struct memest_step_cfg *step, bool inference,
                      struct memest_loss_shapes *ls, const struct memest_value **in)
{
    if (inference || step->loss == MEMEST_LOSS_NONE || g->noutputs == 0)
        return false;
    const struct memest_ref o = g->outputs[g->noutputs - 1];
    *in = &r->values[r->nodes[o.node].out_first + o.out];
    struct memest_error err = {0};   /* the simulation already refused a misfit */
    return memest_loss_shapes(step->loss, g->loss_class_dim, &(*in)->shape,
                              (enum memest_dtype)(*in)->dtype, ls, &err) == 0;
}
