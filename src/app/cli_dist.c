/* cli_dist.c - the checks of the several-GPU options (doc/several-gpus.md)
 * that need them all (their values are the option rows', cli_options.c),
 * the model variables they set, and the overrides of --set, --seq,
 * --context and --sweep-var, of which those variables are none. */
#include <stdio.h>
#include <string.h>

#include "memest/cli.h"
#include "memest/format.h"

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
    bool fsdp = d->strategy == MEMEST_STRAT_FSDP || d->strategy == MEMEST_STRAT_FSDP_GRAD_OP ||
                d->strategy == MEMEST_STRAT_HSDP;
    const char *fsdp_only = d->eng.policy != MEMEST_FSDP_POLICY_AUTO ? "--fsdp-policy"
                            : d->eng.use_orig_params                ? "--fsdp-orig-params"
                            : d->eng.fsdp2                          ? "--fsdp2"
                            : d->eng.no_mixed_precision             ? "--fsdp-no-mixed-precision"
                                                                    : NULL;
    if (fsdp_only && !fsdp)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "%s needs --strategy fsdp, fsdp-grad-op or hsdp", fsdp_only);
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

/* How an override reads on the command line: "--set width=8", "--seq 512". */
static const char *override_text(const struct memest_override *ov, char *buf, size_t n)
{
    if (ov->opt)
        snprintf(buf, n, "%s %s", ov->opt, ov->value);
    else
        snprintf(buf, n, "--set %s=%s", ov->name, ov->value);
    return buf;
}

/* The model variables that a several-GPU option sets, with the layout that
 * goes with it (cli_dist.c: memest_cli_dist_sets): --set and --sweep-var
 * cannot set them alone. */
static const struct {
    const char *name, *what;
} owned_vars[] = {
    {"tp", "the tensor-parallel size, which --tp T (with --gpus N) sets"},
    {"sp", "the sequence-parallel size, which --sequence-parallel (with --tp T) sets"},
    {"ep", "the expert-parallel size, which --ep E (with --gpus N) sets"},
    {"transformers", "the transformers release, which --transformers sets"},
    {"torch", "the PyTorch release, which --torch sets"},
    {"labels", "whether the model computes its loss, which --loop (and --inference) sets"},
    {"forward_cache", "whether the forward builds a DynamicCache, which --checkpoint, "
                      "--inference and --generate set"},
    {"native_model", "whether the loop trains its own model code, which --loop sets"},
};

/* The variables of --set, --seq, --context and --sweep-var: none set twice,
 * none a several-GPU option's. */
int memest_cli_check_overrides(const struct memest_cli *o, struct memest_error *err)
{
    char a[160], b[160];
    for (int i = 0; i < o->nsets; i++) {
        const struct memest_override *ov = &o->sets[i];
        for (size_t k = 0; !ov->opt && k < sizeof owned_vars / sizeof *owned_vars; k++)
            if (strcmp(ov->name, owned_vars[k].name) == 0)
                return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                                   "--set %s=%s: %s is %s, with the layout that goes with it",
                                   ov->name, ov->value, ov->name, owned_vars[k].what);
        for (int j = 0; j < i; j++)
            if (strcmp(o->sets[j].name, ov->name) == 0)
                return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                                   "%s is set twice, by %s and by %s: give it once", ov->name,
                                   override_text(&o->sets[j], a, sizeof a),
                                   override_text(ov, b, sizeof b));
    }
    if (!o->sweep_var)
        return 0;
    size_t len = strcspn(o->sweep_var, "=");
    for (size_t k = 0; k < sizeof owned_vars / sizeof *owned_vars; k++)
        if (strlen(owned_vars[k].name) == len && strncmp(o->sweep_var, owned_vars[k].name, len) == 0)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                               "--sweep-var %.*s: %.*s is %s, with the layout that goes with it: "
                               "it cannot be swept alone", (int)len, o->sweep_var, (int)len,
                               o->sweep_var, owned_vars[k].what);
    if (len == strlen("seq_len") && strncmp(o->sweep_var, "seq_len", len) == 0 &&
        o->dist.set && o->dist.cp > 1)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--sweep-var seq_len with --cp: the context-parallel ranks split the "
                           "--seq S the model opens with; give one --seq per command");
    for (int i = 0; i < o->nsets; i++)
        if (strlen(o->sets[i].name) == len && strncmp(o->sweep_var, o->sets[i].name, len) == 0)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                               "--sweep-var %.*s gives the variable's values: it excludes %s",
                               (int)len, o->sweep_var, override_text(&o->sets[i], a, sizeof a));
    return 0;
}

