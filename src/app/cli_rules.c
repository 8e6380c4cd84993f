/* cli_rules.c - the checks over the whole command line, so that the
 * features can trust struct memest_cli: the mode (a subcommand, or the
 * flag that chooses it), then every option given against its row's modes
 * and needs (options.h) in one loop, then the few rules that relate two
 * options' values. */
#include <stdio.h>
#include <string.h>

#include "memest/fp8.h"
#include "memest/optim.h"
#include "memest/options.h"

static int usage(struct memest_error *err, const char *msg)
{
    return memest_errf(err, MEMEST_ERR_USAGE, NULL, "%s", msg);
}

/* What chose the mode, for messages: "memest fit", "--fit", "--gpu all". */
struct choice {
    int mode;
    bool sub;          /* a subcommand chose it */
    const char *by;    /* the flag that chose it (by_flag), or NULL */
    char by_flag[48];
};

static const char *by_text(const struct choice *ch, char *buf, size_t n)
{
    const struct memest_mode_desc *d = memest_mode_desc(ch->mode);
    if (ch->sub)
        snprintf(buf, n, "memest %s", d->name);
    else if (ch->by)
        snprintf(buf, n, "%s (%s)", d->noun, ch->by);
    else
        snprintf(buf, n, "%s", d->noun);
    return buf;
}

/* The mode: the subcommand; else the one the verbs given choose, the
 * first whose mode takes every other verb given (--generate --max-batch is
 * a search of generation, --advise --fit advice with a verdict), two others
 * excluding each other (check_rows); --gpu all or a list is the
 * comparison's verb. */
static int choose_mode(struct memest_cli *o, const bool *given, int sub, struct choice *ch,
                       struct memest_error *err)
{
    *ch = (struct choice){sub >= 0 ? sub : MEMEST_MODE_ESTIMATE, sub >= 0, NULL, ""};
    if (sub == MEMEST_MODE_COMPARE && !o->gpu)
        o->gpu = "all", o->compare = true;
    if (sub == MEMEST_MODE_COMPARE && !o->compare)
        return usage(err, "memest compare compares cards: --gpu all (the default) or a list "
                          "such as t4,l4,a100-80gb");
    if (sub >= 0 && sub != MEMEST_MODE_COMPARE && o->compare)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--gpu %s compares cards: it is for memest %s, not memest %s", o->gpu,
                           memest_mode_desc(MEMEST_MODE_COMPARE)->name,
                           memest_mode_desc(sub)->name);
    if (sub >= 0)
        return 0;
    const struct memest_opt *first = NULL, *best = NULL;
    for (size_t i = 0; i < memest_nopts && !best; i++) {
        if (!given[i] || memest_opts[i].verb < 0)
            continue;
        first = first ? first : &memest_opts[i];
        bool takes_all = true;
        for (size_t j = 0; j < memest_nopts; j++)
            takes_all = takes_all && (!given[j] || memest_opts[j].verb < 0 ||
                                      (memest_opts[j].modes >> memest_opts[i].verb) & 1);
        best = takes_all ? &memest_opts[i] : NULL;
    }
    const struct memest_opt *v = best ? best : first;
    if (v) {
        *ch = (struct choice){v->verb, false, NULL, ""};
        snprintf(ch->by_flag, sizeof ch->by_flag, "--%s", v->name);
        ch->by = ch->by_flag;
    }
    if (!o->compare)
        return 0;
    if (v)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--gpu %s (a comparison of cards) and %s exclude each other", o->gpu,
                           ch->by);
    *ch = (struct choice){MEMEST_MODE_COMPARE, false, "--gpu all", ""};
    return 0;
}

/* The mode's own flags, which the flows read. */
static int settle_mode(struct memest_cli *o, const struct choice *ch, struct memest_error *err)
{
    o->mode = (uint8_t)ch->mode;
    switch (ch->mode) {
    case MEMEST_MODE_FIT:
        o->fit = true;
        break;
    case MEMEST_MODE_MAX_BATCH:
        o->max_batch = true;
        break;
    case MEMEST_MODE_ADVISE:
        o->advise = true;
        break;
    case MEMEST_MODE_GENERATE:
        o->generate = true;
        break;
    case MEMEST_MODE_SWEEP:
        if (!o->sweep && !o->sweep_var)
            return usage(err, "memest sweep needs the batch sizes: memest sweep MODEL LIST, or "
                              "--sweep-var NAME=LIST");
        break;
    default:
        break;
    }
    return 0;
}

/* Whether need holds; the words of its refusal into why. */
static bool holds(const struct memest_cli *o, unsigned need, const struct choice *ch, char *why,
                  size_t n)
{
    char by[96];
    switch (need) {
    case MEMEST_NEED_TRAINING:
        snprintf(why, n, "is the training step's: %s runs no training step (no optimizer, "
                         "gradients, loss or dropout), so it would change nothing",
                 o->inference ? "--inference" : ch->sub ? by_text(ch, by, sizeof by) : ch->by);
        return !o->inference && ch->mode != MEMEST_MODE_GENERATE;
    case MEMEST_NEED_CARD:
        snprintf(why, n, "needs a target card: --gpu NAME or --mem SIZE");
        return o->gpu || o->mem_set;
    case MEMEST_NEED_PRESET:
        snprintf(why, n, "needs a card preset's peak FLOP/s: --gpu NAME (--mem gives no time "
                         "estimate)");
        return o->gpu;
    case MEMEST_NEED_GPU:
        snprintf(why, n, "adds GPU presets: it needs --gpu (NAME, auto with --probe, all or a "
                         "list) or --list-gpus");
        return o->gpu;
    case MEMEST_NEED_PROBE:
        snprintf(why, n, "needs --probe");
        return o->probe;
    case MEMEST_NEED_LORA:
        snprintf(why, n, "needs --lora R");
        return o->lora.r > 0;
    case MEMEST_NEED_KV_BLOCK:
        snprintf(why, n, "is vLLM's: it needs --kv-block B (vLLM's paged cache)");
        return o->kv_block > 0;
    case MEMEST_NEED_PP:
        snprintf(why, n, "is the pipeline's: it needs --pp 2 or more");
        return o->dist.pp >= 2;
    }
    return true;
}

/* "estimate, max-batch or fit": the modes of a mask */
static const char *mode_names(unsigned mask, char *buf, size_t n)
{
    int total = 0, seen = 0;
    for (int m = 0; m < MEMEST_MODE_COUNT; m++)
        total += (mask >> m) & 1;
    size_t len = 0;
    buf[0] = 0;
    for (int m = 0; m < MEMEST_MODE_COUNT && len < n; m++)
        if ((mask >> m) & 1) {
            int w = snprintf(buf + len, n - len, "%s%s", seen == 0 ? "" : seen + 1 == total
                                                                             ? " or " : ", ",
                             memest_mode_desc(m)->name);
            len += w > 0 ? (size_t)w : 0;
            seen++;
        }
    return buf;
}

/* Every option given: what it needs, then the modes that take it. */
static int check_rows(const struct memest_cli *o, const bool *given, const struct choice *ch,
                      struct memest_error *err)
{
    char why[320], names[96], by[96];
    unsigned mode_needs = ch->mode == MEMEST_MODE_FIT || ch->mode == MEMEST_MODE_MAX_BATCH ||
                                  ch->mode == MEMEST_MODE_ADVISE
                              ? MEMEST_NEED_CARD
                              : 0;
    if (mode_needs && !holds(o, mode_needs, ch, why, sizeof why))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "%s %s",
                           ch->sub ? by_text(ch, by, sizeof by) : ch->by, why);
    for (size_t i = 0; i < memest_nopts; i++) {
        const struct memest_opt *r = &memest_opts[i];
        if (!given[i])
            continue;
        for (unsigned need = 1; need <= r->needs; need <<= 1)
            if ((r->needs & need) && !holds(o, need, ch, why, sizeof why))
                return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--%s %s", r->name, why);
        if (r->modes & (1u << ch->mode))
            continue;
        if (r->verb >= 0 && !ch->sub)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--%s and %s exclude each other",
                               r->name, ch->by);
        /* one mode: its flag too, for `memest MODEL ...` */
        int one = 0;
        while (!((r->modes >> one) & 1))
            one++;
        const char *flag = r->modes == 1u << one ? memest_mode_desc(one)->flag : NULL;
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--%s is for memest %s%s%s%s, not %s",
                           r->name, mode_names(r->modes, names, sizeof names), flag ? " (" : "",
                           flag ? flag : "", flag ? ")" : "", by_text(ch, by, sizeof by));
    }
    return 0;
}

/* The options of the step that relate two values. */
static int check_step(const struct memest_cli *o, struct memest_error *err)
{
    const struct memest_step_cfg *s = &o->step;
    unsigned accepts = memest_optim_desc(s->optim.kind)->accepts;   /* optim.h */
    char names[160];
    if (o->momentum_set && !(accepts & MEMEST_OPTF_MOMENTUM))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--momentum applies to %s, not %s",
                           memest_optim_accepting(MEMEST_OPTF_MOMENTUM, names, sizeof names),
                           memest_optim_name(s->optim.kind));
    if (s->optim.amsgrad && !(accepts & MEMEST_OPTF_AMSGRAD))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--amsgrad applies to %s",
                           memest_optim_accepting(MEMEST_OPTF_AMSGRAD, names, sizeof names));
    if (s->optim.centered && !(accepts & MEMEST_OPTF_CENTERED))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--centered applies to %s",
                           memest_optim_accepting(MEMEST_OPTF_CENTERED, names, sizeof names));
    struct memest_step_cfg sc = *s;
    sc.torch_version = o->run.torch;   /* as the app gives it (app.c) */
    if (memest_step_cfg_check(&sc, err) != 0)   /* fused rmsprop, ... */
        return -1;
    if (s->amp != MEMEST_AMP_NONE && o->dtype != MEMEST_F32)
        return usage(err, "--amp keeps fp32 parameters: it cannot be combined with --dtype fp16/bf16");
    if (o->run.fp8 != MEMEST_FP8_NONE && s->amp != MEMEST_AMP_NONE)
        return usage(err, "--fp8 trains a model held in --dtype bf16 or fp32 (torchao's and "
                          "Transformer Engine's float8 linears cast their own operands): drop "
                          "--amp");
    if (o->run.fp8 != MEMEST_FP8_NONE && o->lora.r > 0)
        return usage(err, "--fp8 with --lora is not modelled (a frozen float8 base layer)");
    if (o->fused_ce_named && (o->inference || o->generate))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--fused linear-ce is the training step's: %s runs no training step "
                           "(no loss), so it would change nothing",
                           o->generate ? "generation" : "--inference");
    const struct memest_quant_cfg *q = &o->quant;
    if (q->group_set && q->format != MEMEST_WF_DENSE && q->format != MEMEST_WF_GPTQ4 &&
        q->format != MEMEST_WF_AWQ4)
        return usage(err, "--group-size is the group of GPTQ and AWQ (--weights int4, gptq, awq)");
    if (q->dq_set && q->format != MEMEST_WF_DENSE && !memest_wformat_bnb4(q->format))
        return usage(err, "--double-quant is bitsandbytes' 4-bit option (--weights nf4 or fp4)");
    if (q->compute_cli && q->format != MEMEST_WF_DENSE && !memest_wformat_bnb4(q->format))
        return usage(err, "--compute-dtype is bitsandbytes' 4-bit option (--weights nf4 or fp4)");
    if (q->storage_set && q->format != MEMEST_WF_DENSE && !memest_wformat_bnb4(q->format))
        return usage(err, "--quant-storage is bitsandbytes' 4-bit option (--weights nf4 or fp4)");
    return 0;
}

/* The outputs and the card. */
static int check_outputs(const struct memest_cli *o, struct memest_error *err)
{
    if (o->format == MEMEST_OUTPUT_JSON && o->csv)
        return usage(err, "--json and --csv exclude each other");
    if (o->sweep && o->sweep_var)
        return usage(err, "--sweep and --sweep-var exclude each other");
    if (o->gpu && o->mem_set)
        return usage(err, "--gpu and --mem exclude each other");
    if (o->gpu && strcmp(o->gpu, "auto") == 0 && !o->probe)
        return usage(err, "--gpu auto takes the probed device's memory: it needs --probe");
    if (o->layers && o->fit && o->format != MEMEST_OUTPUT_JSON)
        return usage(err, "--fit prints a one-line verdict: --layers needs --json with it");
    if (o->batch_set && o->max_batch)
        return usage(err, "--max-batch searches the batch size: it excludes --batch");
    if (((o->offload_bw_set && !o->step.act_offload) || o->cpu_optim_rate_set) && !o->dist.set)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "%s times an offload: it needs --offload (or a config that offloads)%s",
                           o->offload_bw_set ? "--offload-bw" : "--cpu-optim-rate",
                           o->offload_bw_set ? " or --activation-offload" : "");
    if (o->batch_set && o->sweep)
        return usage(err, "--sweep gives the batch sizes: it excludes --batch (which is the "
                          "batch of a --sweep-var sweep)");
    return 0;
}

/* Generation's options; --context becomes the override seq_len = C (the
 * prefill's graph). */
static int check_generate(struct memest_cli *o, struct memest_error *err)
{
    if (!o->generate)
        return 0;
    if (!o->gen_context && !o->gen_sweep && !o->max_context)
        return usage(err, "--generate needs --context C (the prompt's tokens)");
    if (o->gen_context && o->gen_sweep)
        return usage(err, "--sweep-context gives the contexts: it excludes --context");
    if (o->max_batch + o->max_context + (o->gen_sweep != NULL) > 1)
        return usage(err, "--max-batch, --max-context and --sweep-context exclude each other");
    if (o->gen_sweep && o->kv_block)
        return usage(err, "--kv-block reports one context: it excludes --sweep-context");
    if (o->max_context && o->gen_context)
        return usage(err, "--max-context searches the prompt's length: it excludes --context");
    for (int i = 0; i < o->nsets; i++)
        if (strcmp(o->sets[i].name, "seq_len") == 0)
            return usage(err, "--generate takes the prompt's length from --context: drop --seq "
                              "and --set seq_len");
    if (o->nsets == MEMEST_MAX_SETS)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--set: at most %d overrides",
                           MEMEST_MAX_SETS);
    if (!o->gen_context)
        return 0;
    snprintf(o->gen_context_str, sizeof o->gen_context_str, "%lld", (long long)o->gen_context);
    o->sets[o->nsets++] = (struct memest_override){"seq_len", o->gen_context_str, "--context"};
    return 0;
}

int memest_cli_check(struct memest_cli *o, const bool *given, int sub, struct memest_error *err)
{
    struct choice ch;
    for (size_t i = 0; i < memest_nopts; i++)
        o->dist.set = o->dist.set || (given[i] && memest_opts[i].group == MEMEST_GROUP_DIST);
    if (choose_mode(o, given, sub, &ch, err) != 0 || settle_mode(o, &ch, err) != 0 ||
        check_rows(o, given, &ch, err) != 0 || check_step(o, err) != 0 ||
        check_outputs(o, err) != 0 || check_generate(o, err) != 0 ||
        memest_cli_dist_check(o, err) != 0 || memest_cli_check_overrides(o, err) != 0)
        return -1;
    if (o->csv)
        o->format = MEMEST_OUTPUT_CSV;
    return 0;
}
