/* app_dist.c - several GPUs for every flow: the layout from the options
 * and a --deepspeed config (the options win), the step's rank view, and
 * the checks that need both. */
#include <stdio.h>
#include <string.h>

#include "memest/app.h"
#include "memest/escape.h"
#include "memest/optim.h"

int memest_app_dist(struct memest_app *a, struct memest_error *err)
{
    const struct memest_cli *o = a->o;
    if (!o->dist.set)
        return 0;
    a->dist = o->dist;
    if (a->dist.config_path) {
        struct memest_dist_cfg from = a->dist;
        if (memest_ds_config_read(a->dist.config_path, memest_ds_model_hidden(&a->m), &from,
                                  &a->ds, err) != 0)
            return -1;
        /* the file gives the engine, its settings and the offload; the
         * options given on the command line win */
        if (!o->dist.strategy_set)
            a->dist.strategy = from.strategy;
        if (o->dist.offload == MEMEST_OFFLOAD_NONE)
            a->dist.offload = from.offload;
        a->dist.eng = from.eng;
        if (a->ds.half_set && !o->dtype_set && o->step.amp == MEMEST_AMP_NONE)
            a->dtype = a->ds.half;
        if (a->ds.grad_accum && !o->grad_accum_set)
            a->step.grad_accum = a->ds.grad_accum;
        if (a->ds.optim_set && !o->optim_set) {
            a->step.optim.kind = a->ds.optim;
            a->step.optim.momentum = a->ds.momentum;
        }
        if (a->ds.ignored[0]) {
            char file[MEMEST_ESC_NAME];
            fprintf(stderr, "memest: note: %s: ignored, as they change no memory: %s\n",
                    memest_esc_text(a->dist.config_path, file, sizeof file), a->ds.ignored);
        }
        if (memest_dist_check(&a->dist, err) != 0)
            return -1;
    }
    /* DeepSpeed's Adam is its FusedAdam (multi_tensor_apply: no temporaries)
     * unless the options say otherwise (deepspeed/ops/adam/fused_adam.py) */
    bool ds = a->dist.strategy == MEMEST_STRAT_ZERO1 || a->dist.strategy == MEMEST_STRAT_ZERO2 ||
              a->dist.strategy == MEMEST_STRAT_ZERO3;
    if (ds && !o->impl_set && memest_optim_desc(a->step.optim.kind)->fused_since)
        a->step.impl = MEMEST_IMPL_FUSED;
    bool half = a->dtype == MEMEST_F16 || a->dtype == MEMEST_BF16;
    memest_rank_view_init(&a->dist, half, &a->view);
    a->step.rank = &a->view;
    return 0;
}
