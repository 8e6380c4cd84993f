/* cli.c - option parsing with getopt_long; every value is checked here, and
 * conflicting options are rejected, so the features can trust the struct. */
#include "memest/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "memest/format.h"
#include "memest/optim.h"
#include "memest/sweep.h"

enum {
    OPT_MOMENTUM = 256,
    OPT_AMSGRAD,
    OPT_CENTERED,
    OPT_DTYPE,
    OPT_LAYERS,
    OPT_JSON,
    OPT_CSV,
    OPT_SET,
    OPT_PROBE,
    OPT_DEVICE,
    OPT_VERSION,
    OPT_LIST_OPS,
    OPT_LIST_GPUS,
    OPT_OPTIM_IMPL,
    OPT_FIRST_STEP,
    OPT_ZERO_GRAD,
    OPT_INFERENCE,
    OPT_GRAD_ACCUM,
    OPT_CHECKPOINT,
    OPT_AMP,
    OPT_LOSS,
    OPT_OVERHEAD,
    OPT_TIMELINE,
    OPT_PLOT,
    OPT_GPU,
    OPT_PRICE,
    OPT_MEM,
    OPT_FIT,
    OPT_HEADROOM,
    OPT_SWEEP,
    OPT_SWEEP_VAR,
    OPT_MAX_BATCH,
    OPT_MFU,
    OPT_ADVISE,
    OPT_SEQ,
    OPT_ATTENTION,
    OPT_FUSED,
    OPT_MOE_IMBALANCE,
    OPT_TORCH,
    OPT_LORA,
    OPT_LORA_ALPHA,
    OPT_LORA_DROPOUT,
    OPT_LORA_TARGETS,
    OPT_LORA_RSLORA,
    OPT_GENERATE,
    OPT_CONTEXT,
    OPT_NEW_TOKENS,
    OPT_KV_DTYPE,
    OPT_CACHE,
    OPT_ALL_LOGITS,
    OPT_KV_BLOCK,
    OPT_GPU_UTIL,
    OPT_MAX_CONTEXT,
    OPT_SWEEP_CONTEXT,
    OPT_WEIGHTS,
    OPT_GROUP_SIZE,
    OPT_DOUBLE_QUANT,
    OPT_COMPUTE_DTYPE,
    OPT_KBIT_PREP,
};

#define SHORT_OPTS ":b:o:h"

static const struct option long_opts[] = {
    {"batch", required_argument, NULL, 'b'},
    {"optim", required_argument, NULL, 'o'},
    {"momentum", required_argument, NULL, OPT_MOMENTUM},
    {"amsgrad", no_argument, NULL, OPT_AMSGRAD},
    {"centered", no_argument, NULL, OPT_CENTERED},
    {"optim-impl", required_argument, NULL, OPT_OPTIM_IMPL},
    {"first-step", no_argument, NULL, OPT_FIRST_STEP},
    {"zero-grad", required_argument, NULL, OPT_ZERO_GRAD},
    {"dtype", required_argument, NULL, OPT_DTYPE},
    {"amp", required_argument, NULL, OPT_AMP},
    {"inference", no_argument, NULL, OPT_INFERENCE},
    {"grad-accum", required_argument, NULL, OPT_GRAD_ACCUM},
    {"checkpoint", optional_argument, NULL, OPT_CHECKPOINT},
    {"loss", required_argument, NULL, OPT_LOSS},
    {"overhead", required_argument, NULL, OPT_OVERHEAD},
    {"set", required_argument, NULL, OPT_SET},
    {"seq", required_argument, NULL, OPT_SEQ},
    {"attention", required_argument, NULL, OPT_ATTENTION},
    {"fused", required_argument, NULL, OPT_FUSED},
    {"moe-imbalance", required_argument, NULL, OPT_MOE_IMBALANCE},
    {"torch", required_argument, NULL, OPT_TORCH},
    {"lora", required_argument, NULL, OPT_LORA},
    {"lora-alpha", required_argument, NULL, OPT_LORA_ALPHA},
    {"lora-dropout", required_argument, NULL, OPT_LORA_DROPOUT},
    {"lora-targets", required_argument, NULL, OPT_LORA_TARGETS},
    {"lora-rslora", no_argument, NULL, OPT_LORA_RSLORA},
    {"generate", no_argument, NULL, OPT_GENERATE},
    {"context", required_argument, NULL, OPT_CONTEXT},
    {"new-tokens", required_argument, NULL, OPT_NEW_TOKENS},
    {"kv-dtype", required_argument, NULL, OPT_KV_DTYPE},
    {"cache", required_argument, NULL, OPT_CACHE},
    {"all-logits", no_argument, NULL, OPT_ALL_LOGITS},
    {"kv-block", required_argument, NULL, OPT_KV_BLOCK},
    {"gpu-util", required_argument, NULL, OPT_GPU_UTIL},
    {"max-context", no_argument, NULL, OPT_MAX_CONTEXT},
    {"sweep-context", required_argument, NULL, OPT_SWEEP_CONTEXT},
    {"weights", required_argument, NULL, OPT_WEIGHTS},
    {"group-size", required_argument, NULL, OPT_GROUP_SIZE},
    {"double-quant", no_argument, NULL, OPT_DOUBLE_QUANT},
    {"compute-dtype", required_argument, NULL, OPT_COMPUTE_DTYPE},
    {"kbit-prep", no_argument, NULL, OPT_KBIT_PREP},
    {"layers", no_argument, NULL, OPT_LAYERS},
    {"json", no_argument, NULL, OPT_JSON},
    {"csv", no_argument, NULL, OPT_CSV},
    {"timeline", required_argument, NULL, OPT_TIMELINE},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"gpu", required_argument, NULL, OPT_GPU},
    {"price", required_argument, NULL, OPT_PRICE},
    {"mem", required_argument, NULL, OPT_MEM},
    {"fit", no_argument, NULL, OPT_FIT},
    {"headroom", required_argument, NULL, OPT_HEADROOM},
    {"sweep", required_argument, NULL, OPT_SWEEP},
    {"sweep-var", required_argument, NULL, OPT_SWEEP_VAR},
    {"max-batch", no_argument, NULL, OPT_MAX_BATCH},
    {"mfu", required_argument, NULL, OPT_MFU},
    {"advise", no_argument, NULL, OPT_ADVISE},
    {"probe", no_argument, NULL, OPT_PROBE},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"list-ops", no_argument, NULL, OPT_LIST_OPS},
    {"list-gpus", no_argument, NULL, OPT_LIST_GPUS},
    {"gpus", required_argument, NULL, MEMEST_OPT_GPUS},
    {"gpus-per-node", required_argument, NULL, MEMEST_OPT_GPUS_PER_NODE},
    {"strategy", required_argument, NULL, MEMEST_OPT_STRATEGY},
    {"tp", required_argument, NULL, MEMEST_OPT_TP},
    {"cp", required_argument, NULL, MEMEST_OPT_CP},
    {"pp", required_argument, NULL, MEMEST_OPT_PP},
    {"ep", required_argument, NULL, MEMEST_OPT_EP},
    {"sequence-parallel", no_argument, NULL, MEMEST_OPT_SEQUENCE_PARALLEL},
    {"micro-batches", required_argument, NULL, MEMEST_OPT_MICRO_BATCHES},
    {"schedule", required_argument, NULL, MEMEST_OPT_SCHEDULE},
    {"virtual-stages", required_argument, NULL, MEMEST_OPT_VIRTUAL_STAGES},
    {"offload", required_argument, NULL, MEMEST_OPT_OFFLOAD},
    {"deepspeed", required_argument, NULL, MEMEST_OPT_DEEPSPEED},
    {"fsdp-wrap", required_argument, NULL, MEMEST_OPT_FSDP_WRAP},
    {"ddp-bucket-view", no_argument, NULL, MEMEST_OPT_BUCKET_VIEW},
    {"fsdp-config", required_argument, NULL, MEMEST_OPT_FSDP_CONFIG},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

static int bad(struct memest_error *err, const char *opt, const char *val, const char *expected)
{
    return memest_errf(err, MEMEST_ERR_USAGE, NULL, "%s: expected %s, got '%s'", opt, expected, val);
}

static int usage(struct memest_error *err, const char *msg)
{
    return memest_errf(err, MEMEST_ERR_USAGE, NULL, "%s", msg);
}

/* --price NAME=X[,NAME=X...] (repeatable): a price per hour, a positive
 * real, for each named card; the names are resolved by the comparison. */
static int parse_prices(const char *arg, struct memest_cli *o, struct memest_error *err)
{
    const char *p = arg;
    for (;;) {
        size_t len = strcspn(p, ",");
        const char *eq = memchr(p, '=', len);
        if (!eq || eq == p || eq + 1 == p + len)
            return bad(err, "--price", arg, "NAME=PRICE items, e.g. h100-80gb=2.5,a100-80gb=1.8");
        size_t nlen = (size_t)(eq - p), vlen = len - nlen - 1;
        char val[64];
        if (o->nprices == MEMEST_MAX_PRICES)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--price: at most %d cards",
                               MEMEST_MAX_PRICES);
        struct memest_price *pr = &o->prices[o->nprices];
        if (nlen >= sizeof pr->name || vlen >= sizeof val)
            return bad(err, "--price", arg, "NAME=PRICE items with a preset's name");
        memcpy(pr->name, p, nlen);
        pr->name[nlen] = 0;
        memcpy(val, eq + 1, vlen);
        val[vlen] = 0;
        if (memest_parse_double(val, 1e-9, 1e12, &pr->per_hour) != 0 || pr->per_hour <= 0)
            return bad(err, "--price", arg, "a positive price per hour after each NAME=");
        for (int i = 0; i < o->nprices; i++)
            if (strcmp(o->prices[i].name, pr->name) == 0)
                return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--price: %s is priced twice",
                                   pr->name);
        o->nprices++;
        if (!p[len])
            return 0;
        p += len + 1;
    }
}

/* The error for getopt_long's ':' (a missing value) or '?' (an unknown or
 * ambiguous option, or a value given to an option that takes none). optopt
 * is the short option, or the long option's val (0 when unknown). The
 * argument getopt was reading is argv[optind - 1] when it moved past it, or
 * argv[optind] when the option was inside a cluster such as "-xyz" and
 * more letters follow: `before` (optind before the call) tells which. */
static int bad_option(int c, int argc, char **argv, int before, struct memest_error *err)
{
    int i = optind;
    if (optind > before && optind - 1 < argc && argv[optind - 1][0] == '-' &&
        argv[optind - 1][1] != '\0')
        i = optind - 1; /* (the non-options getopt skips never start with '-') */
    const char *arg = i < argc ? argv[i] : "";
    bool is_long = strncmp(arg, "--", 2) == 0;
    const char *name = NULL; /* the long option's full name */
    for (const struct option *lo = long_opts; is_long && optopt && lo->name; lo++)
        if (lo->val == optopt)
            name = lo->name;
    int len = (int)strcspn(arg, "=");
    if (c == ':' && name)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--%s needs a value", name);
    if (c == ':')
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "-%c needs a value", optopt);
    if (name)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--%s takes no value, got '%s'", name,
                           arg);
    if (is_long) {
        char cands[256] = "";
        int n = 0;
        for (const struct option *lo = long_opts; lo->name; lo++)
            if (len > 2 && strncmp(lo->name, arg + 2, (size_t)len - 2) == 0) {
                size_t k = strlen(cands);
                snprintf(cands + k, sizeof cands - k, "%s--%s", n++ ? ", " : "", lo->name);
            }
        if (n > 1)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                               "ambiguous option '%.*s' (it could be %s)", len, arg, cands);
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "unknown option '%.*s'", len, arg);
    }
    bool file_like = strchr(arg, '.') || strchr(arg, '/');
    if (optopt > ' ' && optopt < 0x7F && (arg[1] != optopt || arg[2] != '\0'))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "unknown option '-%c' in '%s'%s%s%s",
                           optopt, arg, file_like ? " (a file whose name starts with '-' is "
                                                    "written ./" : "",
                           file_like ? arg : "", file_like ? ")" : "");
    return memest_errf(err, MEMEST_ERR_USAGE, NULL, "unknown option '%s'", arg);
}

/* --checkpoint=a,b,c: block names, kept pointing into argv. */
static int parse_checkpoint(char *arg, struct memest_step_cfg *s, struct memest_error *err)
{
    s->checkpoint = true;
    if (!arg)
        return 0;
    for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
        if (s->ncheckpoint_names == MEMEST_MAX_CHECKPOINT_NAMES)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--checkpoint: at most %d names",
                               MEMEST_MAX_CHECKPOINT_NAMES);
        s->checkpoint_names[s->ncheckpoint_names++] = tok;
    }
    if (s->ncheckpoint_names == 0)
        return bad(err, "--checkpoint", arg, "block names separated by commas");
    return 0;
}

/* --weights int8|nf4|fp4|int4|gptq|awq, --group-size G, --double-quant,
 * --kbit-prep (quantize.h) */
static int parse_quant(int c, const char *arg, struct memest_quant_cfg *q, struct memest_error *err)
{
    static const struct { const char *name; uint8_t f; } fmts[] = {
        {"int8", MEMEST_WF_INT8}, {"nf4", MEMEST_WF_NF4}, {"fp4", MEMEST_WF_FP4},
        {"int4", MEMEST_WF_GPTQ4}, {"gptq", MEMEST_WF_GPTQ4}, {"awq", MEMEST_WF_AWQ4}};
    uint64_t u;
    switch (c) {
    case OPT_WEIGHTS:
        for (size_t i = 0; i < sizeof fmts / sizeof *fmts; i++)
            if (strcmp(arg, fmts[i].name) == 0) {
                q->format = fmts[i].f;
                q->int4 = i == 3;
                return 0;
            }
        return bad(err, "--weights", arg, "int8, nf4, fp4, int4, gptq or awq");
    case OPT_GROUP_SIZE:
        /* GPTQConfig / AwqConfig group_size: a positive size or -1 (one
         * group over a row) */
        if (strcmp(arg, "-1") == 0)
            q->p.group_size = -1;
        else if (memest_parse_u64(arg, 1, (uint64_t)1 << 31, &u) == 0)
            q->p.group_size = (int64_t)u;
        else
            return bad(err, "--group-size", arg, "a whole number between 1 and 2^31, or -1");
        q->group_set = true;
        return 0;
    case OPT_DOUBLE_QUANT:
        q->p.double_quant = q->dq_set = true;
        return 0;
    case OPT_COMPUTE_DTYPE: {
        /* BitsAndBytesConfig(bnb_4bit_compute_dtype=...): float32 unless given */
        enum memest_dtype t;
        if (memest_dtype_parse(arg, &t) != 0 ||
            (t != MEMEST_F32 && t != MEMEST_F16 && t != MEMEST_BF16))
            return bad(err, "--compute-dtype", arg, "fp32, fp16 or bf16");
        q->p.compute_dtype = (uint8_t)(t + 1);
        q->compute_set = q->compute_cli = true;
        return 0;
    }
    default:
        q->kbit_prep = true;
        return 0;
    }
}

/* csv: --csv was given (o->format says JSON when --json was as well, which
 * this refuses) */
static int check_conflicts(const struct memest_cli *o, bool csv, struct memest_error *err)
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
    if (memest_step_cfg_check(s, err) != 0)   /* fused rmsprop, ... */
        return -1;
    if (s->amp != MEMEST_AMP_NONE && o->dtype != MEMEST_F32)
        return usage(err, "--amp keeps fp32 parameters: it cannot be combined with --dtype fp16/bf16");
    if (o->format == MEMEST_OUTPUT_JSON && csv)
        return usage(err, "--json and --csv exclude each other");
    if (o->sweep && o->sweep_var)
        return usage(err, "--sweep and --sweep-var exclude each other");
    if (csv && !o->sweep && !o->sweep_var && !o->compare)
        return usage(err, "--csv is for sweeps (--sweep or --sweep-var) and card comparisons "
                          "(--gpu all or a list)");
    if (o->gpu && o->mem_set)
        return usage(err, "--gpu and --mem exclude each other");
    if (o->nprices && !o->compare)
        return usage(err, "--price adds samples per unit of price to a comparison of cards: it "
                          "needs --gpu all or a list of cards");
    if (o->compare && (o->fit || o->sweep || o->sweep_var || o->max_batch || o->advise ||
                       o->probe || o->plot_path || o->timeline_path || o->layers || o->generate))
        return usage(err, "--gpu all (or a list of cards) compares the cards at one batch and "
                          "finds each one's largest batch: it excludes --fit, --max-batch, "
                          "sweeps, --advise, --probe, --generate, --timeline, --plot and --layers");
    bool card = o->gpu || o->mem_set;
    if (o->fit && !card)
        return usage(err, "--fit needs a target card: --gpu NAME or --mem SIZE");
    if (o->max_batch && !card)
        return usage(err, "--max-batch needs a target card: --gpu NAME or --mem SIZE");
    if (o->max_batch && (o->sweep || o->sweep_var))
        return usage(err, "--max-batch and sweeps exclude each other");
    if (o->advise && !card)
        return usage(err, "--advise needs a target card: --gpu NAME or --mem SIZE");
    if (o->sweep || o->sweep_var) { /* the LIST, checked before the model is read */
        const char *list = o->sweep;
        if (o->sweep_var) {
            const char *eq = strchr(o->sweep_var, '=');
            if (!eq || eq == o->sweep_var || !eq[1])
                return bad(err, "--sweep-var", o->sweep_var, "NAME=LIST");
            list = eq + 1;
        }
        struct memest_sweep_list l;
        if (memest_sweep_parse(list, o->sweep ? "--sweep" : "--sweep-var", &l, err) != 0)
            return -1;
        memest_sweep_list_free(&l);
    }
    if (o->fit && (o->sweep || o->sweep_var || o->max_batch))
        return usage(err, "--fit checks one batch size: it excludes sweeps and --max-batch");
    if (o->advise && (o->sweep || o->sweep_var || o->max_batch || o->probe))
        return usage(err, "--advise works on one batch size: it excludes sweeps, --max-batch "
                          "and --probe");
    if (o->gpu && strcmp(o->gpu, "auto") == 0 && !o->probe)
        return usage(err, "--gpu auto takes the probed device's memory: it needs --probe");
    if (o->probe && (o->sweep || o->sweep_var || o->max_batch))
        return usage(err, "--probe checks one batch size: it excludes sweeps and --max-batch");
    if (o->lora_extra && o->lora.r == 0)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "%s needs --lora R", o->lora_extra);
    /* an output asked for is produced, or refused here: the files and the
     * per-layer table describe one step (one estimate, or --max-batch's) */
    const char *file_opt = o->plot_path ? "--plot" : o->timeline_path ? "--timeline" : NULL;
    if (file_opt && (o->sweep || o->sweep_var || o->advise))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "%s writes one step: it excludes sweeps and --advise", file_opt);
    if (o->layers && (o->sweep || o->sweep_var || o->advise))
        return usage(err, "--layers adds a table to the report of one step: it excludes sweeps "
                          "and --advise");
    const struct memest_quant_cfg *q = &o->quant;
    if (q->group_set && q->format != MEMEST_WF_DENSE && q->format != MEMEST_WF_GPTQ4 &&
        q->format != MEMEST_WF_AWQ4)
        return usage(err, "--group-size is the group of GPTQ and AWQ (--weights int4, gptq, awq)");
    if (q->dq_set && q->format != MEMEST_WF_DENSE && !memest_wformat_bnb4(q->format))
        return usage(err, "--double-quant is bitsandbytes' 4-bit option (--weights nf4 or fp4)");
    if (q->compute_cli && q->format != MEMEST_WF_DENSE && !memest_wformat_bnb4(q->format))
        return usage(err, "--compute-dtype is bitsandbytes' 4-bit option (--weights nf4 or fp4)");
    if (o->layers && o->fit && o->format != MEMEST_OUTPUT_JSON)
        return usage(err, "--fit prints a one-line verdict: --layers needs --json with it");
    return 0;
}

/* --generate and its options; --context becomes the override seq_len = C
 * (the prefill's graph). */
static int check_generate(struct memest_cli *o, bool csv, struct memest_error *err)
{
    bool any = o->gen_context || o->kv_dtype_set || o->gen_cache || o->all_logits || o->kv_block ||
               o->max_context || o->gen_sweep;
    if (!o->generate) {
        if (any)
            return usage(err, "--context, --kv-dtype, --cache, --all-logits, --kv-block, "
                              "--max-context and --sweep-context need --generate");
        if (o->new_tokens_set)
            return usage(err, "--new-tokens needs --generate: it is the number of tokens "
                              "generation adds");
        if (o->gpu_util_set)
            return usage(err, "--gpu-util is vLLM's gpu_memory_utilization: it needs --generate "
                              "with --kv-block B (vLLM's paged cache)");
        return 0;
    }
    if (!o->gen_context && !o->gen_sweep && !o->max_context)
        return usage(err, "--generate needs --context C (the prompt's tokens)");
    if (o->gen_context && o->gen_sweep)
        return usage(err, "--sweep-context gives the contexts: it excludes --context");
    if (o->inference || o->sweep || o->sweep_var || o->advise || o->probe || o->timeline_path ||
        o->plot_path || o->layers || csv || o->fit)
        return usage(err, "--generate excludes --inference, --sweep, --sweep-var, --advise, "
                          "--probe, --timeline, --plot, --layers, --csv and --fit");
    bool card = o->gpu || o->mem_set;
    if ((o->kv_block || o->max_context) && !card)
        return usage(err, "--kv-block and --max-context need a target card: --gpu NAME or --mem SIZE");
    if (o->max_batch + o->max_context + (o->gen_sweep != NULL) > 1)
        return usage(err, "--max-batch, --max-context and --sweep-context exclude each other");
    if (o->gen_sweep && o->kv_block)
        return usage(err, "--kv-block reports one context: it excludes --sweep-context");
    if (o->max_context && o->gen_context)
        return usage(err, "--max-context searches the prompt's length: it excludes --context");
    if (o->gpu_util_set && !o->kv_block)
        return usage(err, "--gpu-util is vLLM's gpu_memory_utilization, the share of the card "
                          "its paged cache may fill: it needs --kv-block B");
    if (o->gen_sweep) {
        struct memest_sweep_list l;
        if (memest_sweep_parse(o->gen_sweep, "--sweep-context", &l, err) != 0)
            return -1;
        memest_sweep_list_free(&l);
    }
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
};

/* The variables of --set, --seq, --context and --sweep-var: none set twice,
 * none a several-GPU option's. */
static int check_overrides(const struct memest_cli *o, struct memest_error *err)
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
        return usage(err, "--sweep-var seq_len with --cp: the context-parallel ranks split the "
                          "--seq S the model opens with; give one --seq per command");
    for (int i = 0; i < o->nsets; i++)
        if (strlen(o->sets[i].name) == len && strncmp(o->sweep_var, o->sets[i].name, len) == 0)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                               "--sweep-var %.*s gives the variable's values: it excludes %s",
                               (int)len, o->sweep_var, override_text(&o->sets[i], a, sizeof a));
    return 0;
}

/* Options given where they change nothing: each is refused, saying what
 * it needs, rather than dropped. */
static int check_dropped(const struct memest_cli *o, struct memest_error *err)
{
    const struct memest_step_cfg *s = &o->step;
    if (o->inference || o->generate) {   /* no optimizer step, gradient or loss */
        const struct {
            bool given;
            const char *opt;
        } train[] = {
            {o->optim_set, "--optim"},          {o->momentum_set, "--momentum"},
            {s->optim.amsgrad, "--amsgrad"},    {s->optim.centered, "--centered"},
            {o->impl_set, "--optim-impl"},      {s->first_step, "--first-step"},
            {o->zero_grad_set, "--zero-grad"},  {o->grad_accum_set, "--grad-accum"},
            {s->checkpoint, "--checkpoint"},    {s->loss_set, "--loss"},
            {o->fused_ce_named, "--fused linear-ce"},
            {o->lora_dropout_set, "--lora-dropout"},   /* dropout is the identity in eval() */
        };
        for (size_t i = 0; i < sizeof train / sizeof *train; i++)
            if (train[i].given)
                return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                                   "%s is the training step's: %s runs no training step (no "
                                   "optimizer, gradients, loss or dropout), so it would change "
                                   "nothing", train[i].opt,
                                   o->generate ? "--generate" : "--inference");
    }
    bool card = o->gpu || o->mem_set;
    if (o->device_set && !o->probe)
        return usage(err, "--device picks the CUDA device of --probe: it needs --probe");
    if (o->headroom_set && !card)
        return usage(err, "--headroom is the share of the card kept free: it needs a target card "
                          "(--gpu NAME or --mem SIZE)");
    if (o->mfu_set && !o->gpu)
        return usage(err, "--mfu scales the time estimates, which need a card preset's peak "
                          "FLOP/s: it needs --gpu NAME (--mem gives no time estimate)");
    if (o->batch_set && o->max_batch)
        return usage(err, "--max-batch searches the batch size: it excludes --batch");
    if (o->batch_set && o->sweep)
        return usage(err, "--sweep gives the batch sizes: it excludes --batch (which is the "
                          "batch of a --sweep-var sweep)");
    return check_overrides(o, err);
}

/* Whether argv asks for --json, read as getopt_long reads it (an option's
 * value or an operand after "--" is not the option), so that an error found
 * before the parser reaches it still gets the JSON error document. The
 * leading "-" returns operands in place (as option 1) instead of moving
 * them after the options, which would change what the parse reads. */
static bool wants_json(int argc, char **argv)
{
    bool json = false;
    int c;
    optind = 0; /* glibc: start over */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "-" SHORT_OPTS, long_opts, NULL)) != -1)
        json = json || c == OPT_JSON;
    return json;
}

int memest_cli_parse(int argc, char **argv, struct memest_cli *o, struct memest_error *err)
{
    memset(o, 0, sizeof *o);
    o->batch = 1;
    memest_step_cfg_default(&o->step);
    o->dtype = MEMEST_F32;
    o->headroom = 5;
    o->mfu = 0.4;
    o->lora.alpha = 8;   /* peft LoraConfig: lora_alpha=8, lora_dropout=0.0 */
    o->gen_new_tokens = 128;
    o->gpu_util = 0.9;
    memest_dist_default(&o->dist);
    o->format = wants_json(argc, argv) ? MEMEST_OUTPUT_JSON : MEMEST_OUTPUT_TEXT;
    bool csv = false;
    /* glibc: 0, not 1, starts over in the default order (not wants_json's)
     * and forgets a cluster a previous parse left half read */
    optind = 0;
    opterr = 0;
    int c, longidx, before = 1;
    while ((c = getopt_long(argc, argv, SHORT_OPTS, long_opts, &longidx)) != -1) {
        uint64_t u;
        switch (c) {
        case 'b':
            if (memest_parse_u64(optarg, 1, ((uint64_t)1 << 53) - 1, &u) != 0)
                return bad(err, "--batch", optarg, "a whole number between 1 and 2^53-1");
            o->batch = (int64_t)u;
            o->batch_set = true;
            break;
        case 'o':
            o->optim_set = true;
            if (memest_optim_parse(optarg, &o->step.optim.kind) != 0) {
                char names[160], expected[180];
                snprintf(expected, sizeof expected, "one of %s",
                         memest_optim_names(names, sizeof names));
                return bad(err, "--optim", optarg, expected);
            }
            break;
        case OPT_MOMENTUM:
            if (memest_parse_double(optarg, 0, 1, &o->step.optim.momentum) != 0)
                return bad(err, "--momentum", optarg, "a number between 0 and 1");
            o->momentum_set = true;
            break;
        case OPT_AMSGRAD:
            o->step.optim.amsgrad = true;
            break;
        case OPT_CENTERED:
            o->step.optim.centered = true;
            break;
        case OPT_OPTIM_IMPL:
            if (memest_optim_impl_parse(optarg, &o->step.impl) != 0)
                return bad(err, "--optim-impl", optarg, "foreach, for-loop or fused");
            o->impl_set = true;
            break;
        case OPT_FIRST_STEP:
            o->step.first_step = true;
            break;
        case OPT_ZERO_GRAD:
            if (strcmp(optarg, "none") == 0)
                o->step.zero_grad_zeros = false;
            else if (strcmp(optarg, "zeros") == 0)
                o->step.zero_grad_zeros = true;
            else
                return bad(err, "--zero-grad", optarg, "none or zeros");
            o->zero_grad_set = true;
            break;
        case OPT_DTYPE:
            if (memest_dtype_parse(optarg, &o->dtype) != 0 || !memest_dtype_is_float(o->dtype) ||
                o->dtype == MEMEST_F64)
                return bad(err, "--dtype", optarg, "fp32, fp16 or bf16");
            o->dtype_set = true;
            break;
        case OPT_AMP:
            if (memest_amp_parse(optarg, &o->step.amp) != 0)
                return bad(err, "--amp", optarg, "fp16 or bf16");
            break;
        case OPT_INFERENCE:
            o->inference = true;
            break;
        case OPT_GRAD_ACCUM:
            if (memest_parse_u64(optarg, 1, 1u << 20, &u) != 0)
                return bad(err, "--grad-accum", optarg, "a whole number between 1 and 1048576");
            o->step.grad_accum = (int64_t)u;
            o->grad_accum_set = true;
            break;
        case OPT_CHECKPOINT:
            if (parse_checkpoint(optarg, &o->step, err) != 0)
                return -1;
            break;
        case OPT_LOSS: {
            char names[MEMEST_LOSS_NAMES_LEN];
            if (memest_loss_parse(optarg, &o->step.loss) != 0)
                return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                                   "--loss: unknown loss \"%s\" (one of %s)", optarg,
                                   memest_loss_names(names, sizeof names));
            o->step.loss_set = true;
            break;
        }
        case OPT_OVERHEAD:
            if (memest_parse_size(optarg, &o->step.overhead) != 0 ||
                o->step.overhead > MEMEST_MAX_OVERHEAD)
                return bad(err, "--overhead", optarg,
                           "a size up to 1TiB such as 500MiB, 1GiB or 300000000");
            o->step.overhead_set = true;
            break;
        case OPT_SET: {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg || !eq[1])
                return bad(err, "--set", optarg, "NAME=VALUE");
            if (o->nsets == MEMEST_MAX_SETS)
                return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--set: at most %d overrides",
                                   MEMEST_MAX_SETS);
            *eq = '\0';
            o->sets[o->nsets++] = (struct memest_override){optarg, eq + 1, NULL};
            break;
        }
        case OPT_SEQ:
            if (memest_parse_u64(optarg, 1, ((uint64_t)1 << 53) - 1, &u) != 0)
                return bad(err, "--seq", optarg, "a whole number between 1 and 2^53-1");
            if (o->nsets == MEMEST_MAX_SETS)
                return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--set: at most %d overrides",
                                   MEMEST_MAX_SETS);
            /* the sequence length is the model variable seq_len (the
             * architecture templates of models/arch/ all have it) */
            o->sets[o->nsets++] = (struct memest_override){"seq_len", optarg, "--seq"};
            break;
        case OPT_ATTENTION:
            if (memest_attention_parse(optarg, &o->run.attention) != 0)
                return bad(err, "--attention", optarg, "auto, eager, math, flash, efficient or cudnn");
            /* eager is what a model without SDPA runs anyway (T5's only
             * attention): true of it, not a kernel it cannot have */
            if (o->run.attention != MEMEST_ATTN_AUTO && o->run.attention != MEMEST_ATTN_EAGER)
                o->run_named |= MEMEST_USED_ATTENTION;
            else
                o->run_named &= ~(uint32_t)MEMEST_USED_ATTENTION;
            break;
        case OPT_FUSED:
            if (memest_fused_parse(optarg, &o->run.fused) != 0)
                return bad(err, "--fused", optarg,
                           "a comma-separated list of rmsnorm, rotary, swiglu, linear-ce; or all, none");
            /* "all" is every kernel that applies; a list names each one */
            o->fused_ce_named = strcmp(optarg, "all") != 0 &&
                                (o->run.fused & (uint32_t)MEMEST_FUSED_LINEAR_CE);
            o->run_named = (o->run_named & ~((1u << MEMEST_FUSED_COUNT) - 1)) |
                           (strcmp(optarg, "all") != 0 ? o->run.fused : 0);
            break;
        case OPT_MOE_IMBALANCE:
            if (memest_parse_double(optarg, 1, 1e6, &o->run.moe_imbalance) != 0)
                return bad(err, "--moe-imbalance", optarg,
                           "a factor of at least 1 (the busiest expert's tokens over the balanced share)");
            o->run_named |= MEMEST_USED_MOE_IMBALANCE;
            break;
        case OPT_TORCH:
            if (memest_torch_parse(optarg, &o->run.torch) != 0)
                return bad(err, "--torch", optarg, "2 (default) or 1.13");
            break;
        case OPT_LORA:
            if (memest_parse_u64(optarg, 1, MEMEST_LORA_MAX_R, &u) != 0)
                return bad(err, "--lora", optarg, "a rank between 1 and 65536");
            o->lora.r = (int64_t)u;
            break;
        case OPT_LORA_ALPHA:
            if (memest_parse_double(optarg, 0, 1e6, &o->lora.alpha) != 0)
                return bad(err, "--lora-alpha", optarg, "a number between 0 and 1000000");
            o->lora_extra = "--lora-alpha";
            break;
        case OPT_LORA_DROPOUT:
            if (memest_parse_double(optarg, 0, 1, &o->lora.dropout) != 0)
                return bad(err, "--lora-dropout", optarg, "a probability between 0 and 1");
            o->lora_extra = "--lora-dropout";
            o->lora_dropout_set = true;
            break;
        case OPT_LORA_TARGETS:
            if (!*optarg || optarg[strspn(optarg, ", ")] == '\0')
                return bad(err, "--lora-targets", optarg,
                           "layer names separated by commas, or all-linear");
            o->lora.targets = optarg;
            o->lora_extra = "--lora-targets";
            break;
        case OPT_LORA_RSLORA:
            o->lora.rslora = true;
            o->lora_extra = "--lora-rslora";
            break;
        case OPT_GENERATE:
            o->generate = true;
            break;
        case OPT_CONTEXT:
            if (memest_parse_u64(optarg, 1, (uint64_t)1 << 40, &u) != 0)
                return bad(err, "--context", optarg, "a whole number between 1 and 2^40");
            o->gen_context = (int64_t)u;
            break;
        case OPT_NEW_TOKENS:
            if (memest_parse_u64(optarg, 1, (uint64_t)1 << 40, &u) != 0)
                return bad(err, "--new-tokens", optarg, "a whole number between 1 and 2^40");
            o->gen_new_tokens = (int64_t)u;
            o->new_tokens_set = true;
            break;
        case OPT_KV_DTYPE:
            if (strcmp(optarg, "int8") == 0)
                o->kv_dtype = MEMEST_I8;
            else if (strcmp(optarg, "fp8") == 0)
                o->kv_dtype = MEMEST_U8;   /* one byte, as vLLM's fp8 cache stores it */
            else if (memest_dtype_parse(optarg, &o->kv_dtype) != 0 ||
                     (o->kv_dtype != MEMEST_F16 && o->kv_dtype != MEMEST_BF16))
                return bad(err, "--kv-dtype", optarg, "fp16, bf16, fp8 or int8");
            o->kv_dtype_set = true;
            o->kv_fp8 = strcmp(optarg, "fp8") == 0;
            break;
        case OPT_CACHE:
            if (strcmp(optarg, "dynamic") == 0)
                o->gen_cache = 0;
            else if (strcmp(optarg, "static") == 0)
                o->gen_cache = 1;
            else
                return bad(err, "--cache", optarg, "dynamic or static");
            break;
        case OPT_ALL_LOGITS:
            o->all_logits = true;
            break;
        case OPT_KV_BLOCK:
            if (memest_parse_u64(optarg, 1, 1u << 16, &u) != 0)
                return bad(err, "--kv-block", optarg, "a whole number between 1 and 65536");
            o->kv_block = (int64_t)u;
            break;
        case OPT_GPU_UTIL:
            if (memest_parse_double(optarg, 0.01, 1, &o->gpu_util) != 0)
                return bad(err, "--gpu-util", optarg, "a fraction between 0.01 and 1");
            o->gpu_util_set = true;
            break;
        case OPT_MAX_CONTEXT:
            o->max_context = true;
            break;
        case OPT_SWEEP_CONTEXT:
            o->gen_sweep = optarg;
            break;
        case OPT_WEIGHTS:
        case OPT_GROUP_SIZE:
        case OPT_DOUBLE_QUANT:
        case OPT_COMPUTE_DTYPE:
        case OPT_KBIT_PREP:
            if (parse_quant(c, optarg, &o->quant, err) != 0)
                return -1;
            break;
        case OPT_LAYERS:
            o->layers = true;
            break;
        case OPT_JSON:   /* wants_json has set o->format */
            break;
        case OPT_CSV:
            csv = true;
            break;
        case OPT_TIMELINE:
            o->timeline_path = optarg;
            break;
        case OPT_PLOT:
            o->plot_path = optarg;
            break;
        case OPT_GPU:
            if (!*optarg)
                return bad(err, "--gpu", optarg, "a GPU name (see --list-gpus) or auto");
            o->gpu = optarg;
            break;
        case OPT_PRICE:
            if (parse_prices(optarg, o, err) != 0)
                return -1;
            break;
        case OPT_MEM:
            if (memest_parse_size(optarg, &o->mem) != 0 || o->mem == 0)
                return bad(err, "--mem", optarg, "a size such as 24GiB, 16GB or 8000000000");
            o->mem_set = true;
            break;
        case OPT_FIT:
            o->fit = true;
            break;
        case OPT_HEADROOM:
            if (memest_parse_double(optarg, 0, 99, &o->headroom) != 0)
                return bad(err, "--headroom", optarg, "a percentage between 0 and 99");
            o->headroom_set = true;
            break;
        case OPT_SWEEP:
            o->sweep = optarg;
            break;
        case OPT_SWEEP_VAR:
            o->sweep_var = optarg;
            break;
        case OPT_MAX_BATCH:
            o->max_batch = true;
            break;
        case OPT_MFU:
            if (memest_parse_double(optarg, 0.001, 1, &o->mfu) != 0)
                return bad(err, "--mfu", optarg, "a fraction between 0.001 and 1");
            o->mfu_set = true;
            break;
        case OPT_ADVISE:
            o->advise = true;
            break;
        case OPT_PROBE:
            o->probe = true;
            break;
        case OPT_DEVICE:
            if (memest_parse_u64(optarg, 0, 1023, &u) != 0)
                return bad(err, "--device", optarg, "a device number between 0 and 1023");
            o->device = (int)u;
            o->device_set = true;
            break;
        case 'h':
            o->help = true;
            return 0;
        case OPT_VERSION:
            o->version = true;
            return 0;
        case OPT_LIST_OPS:
            o->list_ops = true;
            return 0;
        case OPT_LIST_GPUS:
            o->list_gpus = true;
            return 0;
        case ':':
        default:
            if (c >= MEMEST_OPT_GPUS && c < MEMEST_OPT_DIST_END) {
                if (memest_cli_dist_opt(c, optarg, o, err) != 0)
                    return -1;
                break;
            }
            return bad_option(c, argc, argv, before, err);
        }
        before = optind;
    }
    /* --gpu all or a list: the comparison of cards */
    o->compare = o->gpu && (strcmp(o->gpu, "all") == 0 || strchr(o->gpu, ','));
    if (check_conflicts(o, csv, err) != 0 || check_generate(o, csv, err) != 0 ||
        memest_cli_dist_check(o, err) != 0 || check_dropped(o, err) != 0)
        return -1;
    if (csv)
        o->format = MEMEST_OUTPUT_CSV;
    if (optind >= argc)
        return usage(err, "no model file given");
    if (optind + 1 < argc)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "unexpected argument '%s' (one model file only)", argv[optind + 1]);
    o->model = argv[optind];
    return 0;
}
