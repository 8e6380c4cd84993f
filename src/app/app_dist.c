/* app_dist.c - several GPUs for every flow: the layout from the options
 * and a --deepspeed config (the options win), the step's rank view, and
 * the checks that need both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "memest/app.h"
#include "memest/escape.h"
#include "memest/format.h"
#include "memest/optim.h"

/* A config that is the model file itself (also one standard input named
 * twice) is refused: read twice, a pipe would give the second reader
 * nothing, and a file the first reader's text. */
static int not_the_model(const struct memest_app *a, const char *opt, const char *path,
                         struct memest_error *err)
{
    struct stat sm, sc;
    if (stat(a->o->model, &sm) == 0 && stat(path, &sc) == 0 && sm.st_dev == sc.st_dev &&
        sm.st_ino == sc.st_ino)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "%s %s is the model file %s: give each "
                           "its own file", opt, path, a->o->model);
    return 0;
}

/* The layout with a config's settings merged: its checks (dist.c) name the
 * options; a failure the file's settings bring is the file's, a schema
 * error saying which options they stand for. */
static int layout_check(const struct memest_app *a, const char *file, struct memest_error *err)
{
    struct memest_error e = {0};
    if (memest_dist_check(&a->dist, &e) == 0)
        return 0;
    if (e.code != MEMEST_ERR_USAGE) {
        *err = e;
        return -1;
    }
    memest_err_file(err, file);
    return memest_errf(err, MEMEST_ERR_SCHEMA, NULL, "its layout, as the options --gpus %lld "
                       "--strategy %s%s%s: %s", (long long)a->dist.gpus,
                       memest_strategy_name(a->dist.strategy),
                       a->dist.offload != MEMEST_OFFLOAD_NONE ? " --offload " : "",
                       a->dist.offload != MEMEST_OFFLOAD_NONE ? memest_offload_name(a->dist.offload)
                                                              : "", e.msg);
}

/* ---- settings of a config file that stand for options ---- */

/* Whether the options args[0..n) pass the command line's parser (its value
 * checks and its rules between options), as if given alone. On failure, the
 * parser's message is the error's, named after the config file and its key
 * (a schema error: exit 3). One validation path: a config passes exactly the
 * checks of the options it stands for. */
static int as_options(const char *file, const char *key, const char *const *args, int n,
                      struct memest_error *err)
{
    enum { MAX_ARGS = 12 };
    char *argv[MAX_ARGS + 3];
    struct memest_cli *o = malloc(sizeof *o);
    int k = 0, rc = -1;
    if (!o || n > MAX_ARGS) {
        free(o);
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    }
    argv[k++] = (char *)"memest";
    for (int i = 0; i < n; i++)
        if (!(argv[k++] = strdup(args[i])))
            goto end;
    argv[k++] = (char *)"-";   /* the parser wants a model file */
    argv[k] = NULL;
    struct memest_error e = {0};
    rc = memest_cli_parse(k, argv, o, &e);
    if (rc != 0) {
        char opts[200] = "";
        for (int i = 0; i < n; i++) {
            size_t len = strlen(opts);
            snprintf(opts + len, sizeof opts - len, "%s%s", i ? " " : "", args[i]);
        }
        memest_err_file(err, file);
        memest_errf(err, MEMEST_ERR_SCHEMA, key, "as the options %s: %s", opts, e.msg);
    }
end:
    for (int i = 1; i <= n && i < k; i++)
        free(argv[i]);
    free(o);
    return rc == 0 ? 0 : err->code != MEMEST_ERR_NONE ? -1
                                                      : memest_errf(err, MEMEST_ERR_NOMEM, NULL,
                                                                    "out of memory");
}

/* What a DeepSpeed config sets that an option stands for: the micro-batch
 * (train_micro_batch_size_per_gpu, --batch), the accumulation
 * (gradient_accumulation_steps, --grad-accum), both as DeepSpeed derives
 * them with train_batch_size, and the optimizer (optimizer.type, --optim;
 * params.momentum, --momentum), each checked as its option is. Options
 * given on the command line win. */
static int ds_options(struct memest_app *a, struct memest_error *err)
{
    const struct memest_cli *o = a->o;
    const struct memest_ds_settings *ds = &a->ds;
    const char *file = a->dist.config_path;
    int64_t micro, accum;
    if (memest_ds_batch(file, ds, o->batch_set ? o->batch : 0,
                        o->grad_accum_set ? o->step.grad_accum : 0, memest_dist_dp(&a->dist), &micro,
                        &accum, err) != 0)
        return -1;
    if (ds->train_batch && (o->sweep || o->max_batch || o->compare))
        return memest_errf(err, MEMEST_ERR_USAGE, "train_batch_size",
                           "fixes the micro-batch (with the accumulation and the GPUs): it "
                           "excludes --sweep, --max-batch and --gpu all, which vary it (give "
                           "train_micro_batch_size_per_gpu, or \"auto\")");
    char mtext[24], gtext[24], mom[32];
    snprintf(mtext, sizeof mtext, "%lld", (long long)micro);
    snprintf(gtext, sizeof gtext, "%lld", (long long)accum);
    const char *bkey = ds->micro_batch ? "train_micro_batch_size_per_gpu" : "train_batch_size";
    const char *gkey = ds->grad_accum ? "gradient_accumulation_steps" : "train_batch_size";
    if (!o->batch_set && (ds->micro_batch || ds->train_batch) &&
        as_options(file, bkey, (const char *const[]){"--batch", mtext}, 2, err) != 0)
        return -1;
    char gpus[24], pp[24];   /* with its layout: --grad-accum is refused with --pp */
    snprintf(gpus, sizeof gpus, "%lld", (long long)a->dist.gpus);
    snprintf(pp, sizeof pp, "%lld", (long long)a->dist.pp);
    if (!o->grad_accum_set && (ds->grad_accum || ds->train_batch) &&
        as_options(file, gkey,
                   (const char *const[]){"--grad-accum", gtext, "--gpus", gpus, "--pp", pp},
                   accum > 1 && a->dist.pp > 1 ? 6 : 2, err) != 0)
        return -1;
    a->ds.micro_batch = o->batch_set ? 0 : micro;
    if (!o->batch_set && micro)   /* train_micro_batch_size_per_gpu: the app's batch */
        a->batch = micro;
    if (!o->grad_accum_set)
        a->step.grad_accum = accum;
    if (!ds->optim_set || o->optim_set)
        return 0;
    /* the file's optimizer with the optimizer options of the command line */
    const char *args[8];
    int n = 0;
    args[n++] = "--optim";
    args[n++] = memest_optim_name(ds->optim);
    if (ds->momentum_set) {
        args[n++] = "--momentum";
        args[n++] = memest_fmt_double(ds->momentum, mom, sizeof mom);
    }
    if (o->step.optim.amsgrad)
        args[n++] = "--amsgrad";
    if (o->step.optim.centered)
        args[n++] = "--centered";
    if (as_options(file, ds->momentum_set ? "optimizer.params.momentum" : "optimizer.type", args,
                   n, err) != 0)
        return -1;
    a->step.optim.kind = ds->optim;
    a->step.optim.momentum = ds->momentum_set ? ds->momentum : 0;
    return 0;
}

/* --fsdp-config: an accelerate config or the Trainer's fsdp_config; the
 * options given on the command line win. */
static int fsdp_config(struct memest_app *a, struct memest_error *err)
{
    const struct memest_cli *o = a->o;
    struct memest_dist_cfg from = a->dist;
    if (not_the_model(a, "--fsdp-config", a->dist.fsdp_path, err) != 0 ||
        memest_fsdp_config_read(a->dist.fsdp_path, &from, &a->fsdp, err) != 0)
        return -1;
    if (!o->dist.strategy_set)
        a->dist.strategy = from.strategy;
    if (o->dist.offload == MEMEST_OFFLOAD_NONE)
        a->dist.offload = from.offload;
    if (!o->dist.eng.wrap_block)
        a->dist.eng.wrap_block = from.eng.wrap_block;
    a->dist.eng.backward_prefetch = from.eng.backward_prefetch;
    a->dist.eng.forward_prefetch = from.eng.forward_prefetch;
    a->dist.eng.use_orig_params |= from.eng.use_orig_params;
    a->dist.eng.fsdp2 |= from.eng.fsdp2;
    a->dist.eng.no_mixed_precision |= from.eng.no_mixed_precision;
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
    return layout_check(a, a->dist.fsdp_path, err);
}

int memest_app_dist(struct memest_app *a, struct memest_error *err)
{
    const struct memest_cli *o = a->o;
    if (!o->dist.set)
        return 0;
    a->dist = o->dist;
    if (a->dist.config_path) {
        struct memest_dist_cfg from = a->dist;
        if (not_the_model(a, "--deepspeed", a->dist.config_path, err) != 0 ||
            memest_ds_config_read(a->dist.config_path, memest_ds_model_hidden(&a->m), &from,
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
        if (a->ds.ignored[0]) {
            char file[MEMEST_ESC_NAME];
            fprintf(stderr, "memest: note: %s: ignored, as they change no memory: %s\n",
                    memest_esc_text(a->dist.config_path, file, sizeof file), a->ds.ignored);
        }
        if (layout_check(a, a->dist.config_path, err) != 0 || ds_options(a, err) != 0)
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
    if (((o->offload_bw_set && !o->step.act_offload) || o->cpu_optim_rate_set) &&
        a->dist.offload == MEMEST_OFFLOAD_NONE)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "%s times an offload: it needs --offload (or a config that offloads)%s",
                           o->offload_bw_set ? "--offload-bw" : "--cpu-optim-rate",
                           o->offload_bw_set ? " or --activation-offload" : "");
    if (a->step.nccl_set && a->dist.gpus < 2)   /* one GPU has no communicator */
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--nccl-mem is NCCL's memory on several GPUs: it needs --gpus 2 or more");
    bool half = memest_dtype_is_half(a->dtype);
    if (o->dist.eng.no_mixed_precision && !half)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--fsdp-no-mixed-precision keeps the shards in --dtype: it changes "
                           "nothing unless --dtype is fp16 or bf16");
    /* the Trainer wraps a LoRA model by PEFT's policy (dist_units.c) */
    if (a->dist.eng.policy == MEMEST_FSDP_POLICY_AUTO)   /* FSDP2 needs no adapter units */
        a->dist.eng.policy = o->lora.r > 0 && !a->dist.eng.fsdp2 ? MEMEST_FSDP_POLICY_PEFT
                                                                 : MEMEST_FSDP_POLICY_LAYERS;
    memest_rank_view_init(&a->dist, half, &a->view);
    a->step.rank = &a->view;
    return 0;
}
