/* cli_dist.c - the several-GPU options (README "Several GPUs"): their
 * values into struct memest_dist_cfg (dist.h), and the checks that need
 * them all; cli.c hands each option it does not know to cli_dist_opt. */
#include <stdio.h>
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
        d->gpus_per_node_set = true;
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
        d->micro_batches_set = true;
        return count("--micro-batches", arg, &d->micro_batches, err);
    case MEMEST_OPT_VIRTUAL_STAGES:
        d->virtual_stages_set = true;
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
        d->schedule_set = true;
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
    d->nodes_counted = o->compare;
    if (d->micro_batches == 0)
        d->micro_batches = d->pp;
    if (d->config_path && d->fsdp_path)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--deepspeed and --fsdp-config are two engines: give one");
    if (o->inference || o->generate)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "the several-GPU options describe a training step: they exclude "
                           "--inference and --generate");
    /* the pipeline's options, without a pipeline (no config file sets one) */
    const char *pipe = d->micro_batches_set  ? "--micro-batches"
                       : d->schedule_set       ? "--schedule"
                       : d->virtual_stages_set ? "--virtual-stages"
                                               : NULL;
    if (pipe && d->pp < 2)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "%s is the pipeline's: it needs --pp 2 or more", pipe);
    if (d->virtual_stages_set && d->schedule != MEMEST_SCHED_INTERLEAVED)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--virtual-stages needs --schedule interleaved");
    if (o->grad_accum_set && d->pp > 1)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--grad-accum with --pp: a pipeline accumulates the gradients of its "
                           "micro-batches; give --micro-batches M");
    if (d->fsdp_path)   /* the file's engine and layout are checked once it is read */
        return 0;
    if (!d->strategy_set && !d->config_path && memest_dist_dp(d) > 1)
        d->strategy = MEMEST_STRAT_DDP;   /* data parallel without a word: DDP */
    if (d->eng.wrap_block && d->strategy != MEMEST_STRAT_FSDP &&
        d->strategy != MEMEST_STRAT_FSDP_GRAD_OP && d->strategy != MEMEST_STRAT_HSDP)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--fsdp-wrap needs --strategy fsdp, "
                                                        "fsdp-grad-op or hsdp");
    if (d->config_path)   /* the file may give the engine: checked once it is read */
        return 0;
    return memest_dist_check(d, err);
}

int memest_cli_dist_sets(const struct memest_cli *o, struct memest_override *sets, int n,
                         struct memest_dist_vars *buf, struct memest_error *err)
{
    const struct memest_dist_cfg *d = &o->dist;
    if (!d->set)
        return n;
    if (d->ep > 1) {   /* the model's variable ep */
        snprintf(buf->ep, sizeof buf->ep, "%lld", (long long)d->ep);
        sets[n++] = (struct memest_override){"ep", buf->ep, "--ep"};
    }
    if (d->tp > 1) {
        snprintf(buf->tp, sizeof buf->tp, "%lld", (long long)d->tp);
        sets[n++] = (struct memest_override){"tp", buf->tp, "--tp"};
        if (d->sequence_parallel)   /* and its variable sp */
            sets[n++] = (struct memest_override){"sp", buf->tp, "--sequence-parallel"};
    }
    if (d->cp <= 1)
        return n;
    /* --cp C: each rank holds seq_len / C tokens of every activation */
    int k = -1;
    for (int i = 0; i < n; i++)
        if (strcmp(sets[i].name, "seq_len") == 0)
            k = i;
    uint64_t s = 0;
    if (k < 0 || memest_parse_u64(sets[k].value, 1, UINT32_MAX, &s) != 0 ||
        s % (uint64_t)d->cp != 0)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--cp %lld needs --seq S (a multiple of it): the sequence the "
                           "context-parallel ranks split", (long long)d->cp);
    snprintf(buf->seq, sizeof buf->seq, "%llu", (unsigned long long)(s / (uint64_t)d->cp));
    sets[k].value = buf->seq;
    return n;
}
