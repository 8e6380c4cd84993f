/* app_dist.c - several GPUs for every flow: the layout from the options
 * and a --deepspeed config (the options win), the step's rank view, and
 * the checks that need both. */
#include <stdio.h>
#include <string.h>

#include "memest/app.h"
#include "memest/escape.h"
#include "memest/optim.h"

/* --fsdp-config: an accelerate config or the Trainer's fsdp_config; the
 * options given on the command line win. */
static int fsdp_config(struct memest_app *a, struct memest_error *err)
{
    const struct memest_cli *o = a->o;
    struct memest_dist_cfg from = a->dist;
    if (memest_fsdp_config_read(a->dist.fsdp_path, &from, &a->fsdp, err) != 0)
        return -1;
    if (!o->dist.strategy_set)
        a->dist.strategy = from.strategy;
    if (o->dist.offload == MEMEST_OFFLOAD_NONE)
        a->dist.offload = from.offload;
    if (!o->dist.eng.wrap_block)
        a->dist.eng.wrap_block = from.eng.wrap_block;
    a->dist.eng.backward_prefetch = from.eng.backward_prefetch;
    a->dist.eng.forward_prefetch = from.eng.forward_prefetch;
    if (!o->dist.gpus_set && a->fsdp.processes)
        a->dist.gpus = a->fsdp.processes;
    /* accelerate launches num_processes // num_machines processes on each
     * machine (commands/launch.py: --nproc_per_node for torchrun): a world
     * size that is not a multiple of the machines is not the one it starts */
    if (a->fsdp.machines && a->dist.gpus % a->fsdp.machines != 0) {
        memest_err_file(err, a->dist.fsdp_path);
        return memest_errf(err, MEMEST_ERR_SCHEMA, "num_machines",
                           "%lld processes (%s) do not split over %lld machines: accelerate "
                           "starts num_processes // num_machines on each",
                           (long long)a->dist.gpus, o->dist.gpus_set ? "--gpus" : "num_processes",
                           (long long)a->fsdp.machines);
    }
    if (!o->dist.gpus_per_node && a->fsdp.machines)
        a->dist.gpus_per_node = a->dist.gpus / a->fsdp.machines;
    if (a->fsdp.half_set && !o->dtype_set && o->step.amp == MEMEST_AMP_NONE)
        a->dtype = a->fsdp.half;   /* MixedPrecision(param_dtype=...): fp32 shards */
    if (a->fsdp.checkpoint)
        a->step.checkpoint = true;
    if (a->fsdp.ignored[0]) {
        char file[MEMEST_ESC_NAME];
        fprintf(stderr, "memest: note: %s: ignored, as they change no memory: %s\n",
                memest_esc_text(a->dist.fsdp_path, file, sizeof file), a->fsdp.ignored);
    }
    return memest_dist_check(&a->dist, err);
}

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
    if (a->dist.fsdp_path && fsdp_config(a, err) != 0)
        return -1;
    if (a->dist.eng.wrap_block) {   /* the wrap class must be one of the model's blocks */
        bool found = false;
        for (uint32_t b = 0; b < a->g.nblocks && !found; b++)
            found = strcmp(a->g.blocks[b].type, a->dist.eng.wrap_block) == 0;
        if (!found)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                               "the FSDP wrap class \"%s\" is none of the model's blocks",
                               a->dist.eng.wrap_block);
    }
    bool half = a->dtype == MEMEST_F16 || a->dtype == MEMEST_BF16;
    memest_rank_view_init(&a->dist, half, &a->view);
    a->step.rank = &a->view;
    return 0;
}
