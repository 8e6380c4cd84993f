/* cli_dist.c - the several-GPU options (README "Several GPUs"): their
 * values into struct memest_dist_cfg (dist.h), and the checks that need
 * them all; cli.c hands each option it does not know to cli_dist_opt. */
#include <string.h>

#include "memest/cli.h"
#include "memest/format.h"

static int bad(struct memest_error *err, const char *opt, const char *val, const char *expected)
{
    return memest_errf(err, MEMEST_ERR_USAGE, NULL, "%s: expected %s, got '%s'", opt, expected, val);
}

/* A size of the layout: 1 .. 2^20 (a million GPUs, far past any cluster). */
static int count(const char *opt, const char *arg, int64_t *out, struct memest_error *err)
{
    uint64_t u;
    if (memest_parse_u64(arg, 1, 1u << 20, &u) != 0)
        return bad(err, opt, arg, "a whole number between 1 and 1048576");
    *out = (int64_t)u;
    return 0;
}

int memest_cli_dist_opt(int c, const char *arg, struct memest_cli *o, struct memest_error *err)
{
    struct memest_dist_cfg *d = &o->dist;
    d->set = true;
    switch (c) {
    case MEMEST_OPT_GPUS:
        d->gpus_set = true;
        return count("--gpus", arg, &d->gpus, err);
    case MEMEST_OPT_GPUS_PER_NODE:
        return count("--gpus-per-node", arg, &d->gpus_per_node, err);
    case MEMEST_OPT_TP:
        return count("--tp", arg, &d->tp, err);
    case MEMEST_OPT_CP:
        return count("--cp", arg, &d->cp, err);
    case MEMEST_OPT_PP:
        return count("--pp", arg, &d->pp, err);
    case MEMEST_OPT_EP:
        return count("--ep", arg, &d->ep, err);
    case MEMEST_OPT_MICRO_BATCHES:
        return count("--micro-batches", arg, &d->micro_batches, err);
    case MEMEST_OPT_VIRTUAL_STAGES:
        return count("--virtual-stages", arg, &d->virtual_stages, err);
    case MEMEST_OPT_SEQUENCE_PARALLEL:
        d->sequence_parallel = true;
        return 0;
    case MEMEST_OPT_STRATEGY:
        if (memest_strategy_parse(arg, &d->strategy) != 0 || d->strategy == MEMEST_STRAT_NONE)
            return bad(err, "--strategy", arg,
                       "ddp, zero1, zero2, zero3, fsdp, fsdp-grad-op or hsdp");
        d->strategy_set = true;
        return 0;
    case MEMEST_OPT_SCHEDULE:
        if (memest_schedule_parse(arg, &d->schedule) != 0)
            return bad(err, "--schedule", arg, "1f1b or interleaved");
        return 0;
    case MEMEST_OPT_OFFLOAD:
        if (memest_offload_parse(arg, &d->offload) != 0 || d->offload == MEMEST_OFFLOAD_NONE)
            return bad(err, "--offload", arg, "optimizer or optimizer+params");
        return 0;
    case MEMEST_OPT_DEEPSPEED:
        if (!*arg)
            return bad(err, "--deepspeed", arg, "a DeepSpeed config file (ds_config.json)");
        d->config_path = arg;
        return 0;
    case MEMEST_OPT_FSDP_WRAP:
        if (!*arg)
            return bad(err, "--fsdp-wrap", arg, "a block name (the transformer layer class)");
        d->eng.wrap_block = arg;
        return 0;
    case MEMEST_OPT_FSDP_CONFIG:
        if (!*arg)
            return bad(err, "--fsdp-config", arg, "an accelerate config (YAML) or fsdp_config JSON");
        d->fsdp_path = arg;
        return 0;
    case MEMEST_OPT_BUCKET_VIEW:
        d->eng.ddp_grad_as_bucket_view = true;
        return 0;
    }
    return memest_errf(err, MEMEST_ERR_INTERNAL, NULL, "internal: option %d", c);
}

int memest_cli_dist_check(struct memest_cli *o, struct memest_error *err)
{
    struct memest_dist_cfg *d = &o->dist;
    if (!d->set)
        return 0;
    if (d->micro_batches == 0)
        d->micro_batches = d->pp;
    if (d->config_path && d->fsdp_path)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--deepspeed and --fsdp-config are two engines: give one");
    if (d->fsdp_path)   /* the file's layout is checked once it is read */
        return o->inference || o->generate
                   ? memest_errf(err, MEMEST_ERR_USAGE, NULL,
                                 "the several-GPU options describe a training step: they "
                                 "exclude --inference and --generate")
                   : 0;
    if (!d->strategy_set && !d->config_path && memest_dist_dp(d) > 1)
        d->strategy = MEMEST_STRAT_DDP;   /* data parallel without a word: DDP */
    if (d->eng.wrap_block && d->strategy != MEMEST_STRAT_FSDP &&
        d->strategy != MEMEST_STRAT_FSDP_GRAD_OP && d->strategy != MEMEST_STRAT_HSDP)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--fsdp-wrap needs --strategy fsdp, "
                                                        "fsdp-grad-op or hsdp");
    if (d->eng.ddp_grad_as_bucket_view && d->strategy != MEMEST_STRAT_DDP)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--ddp-bucket-view needs --strategy ddp");
    if (d->ep > 1 && d->strategy >= MEMEST_STRAT_ZERO1)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--ep with --strategy %s is not modelled: the expert parameters shard "
                           "over the expert-data-parallel ranks, not all of them (--strategy ddp "
                           "is)", memest_strategy_name(d->strategy));
    if (o->inference || o->generate)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "the several-GPU options describe a training step: they exclude "
                           "--inference and --generate");
    return memest_dist_check(d, err);
}
