/* cli_parsers.c - the options whose argument is more than one generic
 * value (options.h: K_CUSTOM), and the steps a few generic ones take after
 * their value is stored. Each is a row's parse function (cli_options.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "memest/format.h"
#include "memest/fp8.h"
#include "memest/sweep.h"

/* The row's "expected ..." words for a bad arg. */
static int bad_row(const struct memest_opt *row, const char *arg, struct memest_error *err)
{
    char opt[48], expected[320];
    snprintf(opt, sizeof opt, "--%s", row->name);
    return memest_opt_bad(err, opt, arg, memest_opt_expected(row, expected, sizeof expected));
}

static int add_override(struct memest_cli *o, struct memest_override ov, struct memest_error *err)
{
    if (o->nsets == MEMEST_MAX_SETS)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--set: at most %d overrides",
                           MEMEST_MAX_SETS);
    o->sets[o->nsets++] = ov;
    return 0;
}

/* --checkpoint[=a,b,c]: block names, kept pointing into argv. */
int memest_optp_checkpoint(const struct memest_opt *row, char *arg, struct memest_cli *o,
                           struct memest_error *err)
{
    (void)row;
    struct memest_step_cfg *s = &o->step;
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
        return memest_opt_bad(err, "--checkpoint", arg, "block names separated by commas");
    return 0;
}

/* --checkpoint-policy full|torchtitan-op: checkpointing every top-level block
 * (the names of --checkpoint B are refused with it: sim_analyze_checkpoint). */
int memest_optp_checkpoint_policy(const struct memest_opt *row, char *arg, struct memest_cli *o,
                                  struct memest_error *err)
{
    (void)row;
    struct memest_step_cfg *s = &o->step;
    if (strcmp(arg, "full") == 0)
        s->checkpoint_policy = MEMEST_CKPT_FULL;
    else if (strcmp(arg, "torchtitan-op") == 0)
        s->checkpoint_policy = MEMEST_CKPT_TORCHTITAN_OP;
    else
        return memest_opt_bad(err, "--checkpoint-policy", arg, "full or torchtitan-op");
    s->checkpoint_policy_set = true;
    s->checkpoint = true;
    return 0;
}

/* --checkpoint-early-stop on|off (implies nothing: checked with the loop,
 * memest_step_cfg_check). */
int memest_optp_checkpoint_early_stop(const struct memest_opt *row, char *arg,
                                      struct memest_cli *o, struct memest_error *err)
{
    (void)row;
    if (strcmp(arg, "on") == 0)
        o->step.checkpoint_early_stop = MEMEST_EARLY_STOP_ON;
    else if (strcmp(arg, "off") == 0)
        o->step.checkpoint_early_stop = MEMEST_EARLY_STOP_OFF;
    else
        return memest_opt_bad(err, "--checkpoint-early-stop", arg, "on or off");
    return 0;
}

/* --checkpoint-every N: torchtitan's selective_ac_option "N" (N >= 1). */
int memest_optp_checkpoint_every(const struct memest_opt *row, char *arg, struct memest_cli *o,
                                 struct memest_error *err)
{
    (void)row;
    uint64_t n;
    if (memest_parse_u64(arg, 1, 1048576, &n) != 0)
        return memest_opt_bad(err, "--checkpoint-every", arg, "an integer from 1 to 1048576");
    o->step.checkpoint_every = (uint32_t)n;
    o->step.checkpoint = true;
    return 0;
}

/* --set NAME=VALUE */
int memest_optp_set(const struct memest_opt *row, char *arg, struct memest_cli *o,
                    struct memest_error *err)
{
    (void)row;
    char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return memest_opt_bad(err, "--set", arg, "NAME=VALUE");
    if (o->nsets == MEMEST_MAX_SETS)
        return add_override(o, (struct memest_override){0}, err);
    *eq = '\0';
    return add_override(o, (struct memest_override){arg, eq + 1, NULL}, err);
}

/* --seq N: the model variable seq_len (the architecture templates of
 * models/arch/ all have it) */
int memest_optp_seq(const struct memest_opt *row, char *arg, struct memest_cli *o,
                    struct memest_error *err)
{
    (void)row;
    uint64_t u;
    if (memest_parse_u64(arg, 1, ((uint64_t)1 << 53) - 1, &u) != 0)
        return memest_opt_bad(err, "--seq", arg, "a whole number between 1 and 2^53-1");
    return add_override(o, (struct memest_override){"seq_len", arg, "--seq"}, err);
}

/* A run of decimal digits at s (no sign, no space) into *v; *end after it.
 * false if there is none or it overflows. */
static bool digits(const char *s, char **end, unsigned long *v)
{
    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    *v = strtoul(s, end, 10);
    return errno == 0;
}

/* --transformers V: the release a template's rules follow, as
 * major * 100 + minor (4.48 -> 448); every 5.x release is 500 (the rules
 * memest writes do not part within 5.x). 4.46 is the first release whose
 * causal LMs upcast the logits only inside the loss (ForCausalLMLoss), the
 * oldest code the templates follow. A patch release (4.48.2) has its
 * minor's rules. */
int memest_optp_transformers(const struct memest_opt *row, char *arg, struct memest_cli *o,
                             struct memest_error *err)
{
    (void)row;
    const char *want = "a release 4.46 to 4.57 (4.N or 4.N.P), or 5 (5, 5.x, 5.N or 5.N.P)";
    char *end;
    unsigned long major, minor = 0, patch;
    bool ok = digits(arg, &end, &major);
    if (ok && *end == '.' && major == 5 && strcmp(end + 1, "x") == 0)
        end += 2;
    else if (ok && *end == '.' && (ok = digits(end + 1, &end, &minor)) && *end == '.')
        ok = digits(end + 1, &end, &patch);
    if (ok && !*end && major == 5 && minor < 100)
        o->transformers = 500;
    else if (ok && !*end && major == 4 && minor >= 46 && minor <= 57)
        o->transformers = (uint16_t)(400 + minor);
    else
        return memest_opt_bad(err, "--transformers", arg, want);
    return 0;
}

/* --attention K: eager is what a model without SDPA runs anyway (T5's
 * only attention), true of it, not a kernel it cannot have; every other
 * kernel is named, and refused where no op runs it */
int memest_optp_after_attention(const struct memest_opt *row, char *arg, struct memest_cli *o,
                                struct memest_error *err)
{
    (void)row, (void)arg, (void)err;
    if (o->run.attention != MEMEST_ATTN_AUTO && o->run.attention != MEMEST_ATTN_EAGER)
        o->run_named |= MEMEST_USED_ATTENTION;
    else
        o->run_named &= ~(uint32_t)MEMEST_USED_ATTENTION;
    return 0;
}

/* --fused LIST: "all" is every kernel that applies; a list names each one */
int memest_optp_fused(const struct memest_opt *row, char *arg, struct memest_cli *o,
                      struct memest_error *err)
{
    char words[160], expected[200];
    if (memest_fused_parse(arg, &o->run.fused) != 0) {
        snprintf(expected, sizeof expected, "a comma-separated list of %s; or all, none",
                 memest_vocab_words(row->vocab, ", ", words, sizeof words));
        return memest_opt_bad(err, "--fused", arg, expected);
    }
    o->fused_ce_named = strcmp(arg, "all") != 0 && (o->run.fused & (uint32_t)MEMEST_FUSED_LINEAR_CE);
    o->run_named = (o->run_named & ~((1u << MEMEST_FUSED_COUNT) - 1)) |
                   (strcmp(arg, "all") != 0 ? o->run.fused : 0);
    return 0;
}

/* Notes run option `bit` as named (checked against the ops that applied
 * it) when its value is not the default, else clears it. */
static int run_named(struct memest_cli *o, bool named, uint32_t bit)
{
    if (named)
        o->run_named |= bit;
    else
        o->run_named &= ~bit;
    return 0;
}

/* --fp8 R: refused where no linear layer runs it (none named "none") */
int memest_optp_after_fp8(const struct memest_opt *row, char *arg, struct memest_cli *o,
                          struct memest_error *err)
{
    (void)row, (void)arg, (void)err;
    return run_named(o, o->run.fp8 != MEMEST_FP8_NONE, MEMEST_USED_FP8);
}

/* --rnn-kernel native: refused where no recurrent op runs it; cudnn, the
 * default, is what any model runs */
int memest_optp_after_rnn_kernel(const struct memest_opt *row, char *arg, struct memest_cli *o,
                                 struct memest_error *err)
{
    (void)row, (void)arg, (void)err;
    return run_named(o, o->run.rnn_kernel != MEMEST_RNN_CUDNN, MEMEST_USED_RNN);
}

int memest_optp_after_moe(const struct memest_opt *row, char *arg, struct memest_cli *o,
                          struct memest_error *err)
{
    (void)row, (void)arg, (void)err;
    o->run_named |= MEMEST_USED_MOE_IMBALANCE;
    return 0;
}

/* --weights int8|nf4|fp4|int4|gptq|awq|mxfp4|fp8|nvfp4|dense (quantize.h) */
int memest_optp_weights(const struct memest_opt *row, char *arg, struct memest_cli *o,
                        struct memest_error *err)
{
    int k = memest_vocab_find(row->vocab, arg);
    if (k < 0)
        return bad_row(row, arg, err);
    o->quant.format = memest_weights_names[k].format;
    o->quant.int4 = strcmp(arg, "int4") == 0;
    o->quant.dense = o->quant.format == MEMEST_WF_DENSE;
    return 0;
}

/* --group-size: GPTQConfig / AwqConfig group_size, a positive size or -1
 * (one group over a row) */
int memest_optp_group_size(const struct memest_opt *row, char *arg, struct memest_cli *o,
                           struct memest_error *err)
{
    uint64_t u;
    if (strcmp(arg, "-1") == 0)
        o->quant.p.group_size = -1;
    else if (memest_parse_u64(arg, 1, (uint64_t)1 << 31, &u) == 0)
        o->quant.p.group_size = (int64_t)u;
    else
        return bad_row(row, arg, err);
    o->quant.group_set = true;
    return 0;
}

/* --compute-dtype: BitsAndBytesConfig(bnb_4bit_compute_dtype=...), float32
 * unless given */
int memest_optp_compute_dtype(const struct memest_opt *row, char *arg, struct memest_cli *o,
                              struct memest_error *err)
{
    int t = memest_vocab_find(row->vocab, arg);
    if (t < 0)
        return bad_row(row, arg, err);
    o->quant.p.compute_dtype = (uint8_t)(t + 1);
    o->quant.compute_set = o->quant.compute_cli = true;
    return 0;
}

/* --quant-storage: BitsAndBytesConfig(bnb_4bit_quant_storage=...), uint8
 * unless given */
int memest_optp_quant_storage(const struct memest_opt *row, char *arg, struct memest_cli *o,
                              struct memest_error *err)
{
    int t = memest_vocab_find(row->vocab, arg);
    if (t < 0)
        return bad_row(row, arg, err);
    o->quant.p.quant_storage = (uint8_t)(t + 1);
    o->quant.storage_set = true;
    return 0;
}

int memest_optp_lora_targets(const struct memest_opt *row, char *arg, struct memest_cli *o,
                             struct memest_error *err)
{
    if (!*arg || arg[strspn(arg, ", ")] == '\0')
        return bad_row(row, arg, err);
    o->lora.targets = arg;
    return 0;
}

int memest_optp_after_kv_dtype(const struct memest_opt *row, char *arg, struct memest_cli *o,
                               struct memest_error *err)
{
    (void)row, (void)arg, (void)err;
    o->kv_fp8 = o->kv_dtype == MEMEST_U8;   /* one byte, as vLLM's fp8 cache stores it */
    return 0;
}

/* --gpu NAME, auto, all, or a list: all and a list are the comparison of
 * cards */
int memest_optp_gpu(const struct memest_opt *row, char *arg, struct memest_cli *o,
                    struct memest_error *err)
{
    if (!*arg)
        return bad_row(row, arg, err);
    o->gpu = arg;
    o->compare = strcmp(arg, "all") == 0 || strchr(arg, ',');
    return 0;
}

/* --price NAME=X[,NAME=X...] (repeatable): a price per hour, a positive
 * real, for each named card; the names are resolved by the comparison. */
int memest_optp_prices(const struct memest_opt *row, char *arg, struct memest_cli *o,
                       struct memest_error *err)
{
    (void)row;
    const char *p = arg;
    for (;;) {
        size_t len = strcspn(p, ",");
        const char *eq = memchr(p, '=', len);
        if (!eq || eq == p || eq + 1 == p + len)
            return memest_opt_bad(err, "--price", arg,
                                  "NAME=PRICE items, e.g. h100-80gb=2.5,a100-80gb=1.8");
        size_t nlen = (size_t)(eq - p), vlen = len - nlen - 1;
        char val[64];
        if (o->nprices == MEMEST_MAX_PRICES)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--price: at most %d cards",
                               MEMEST_MAX_PRICES);
        struct memest_price *pr = &o->prices[o->nprices];
        if (nlen >= sizeof pr->name || vlen >= sizeof val)
            return memest_opt_bad(err, "--price", arg, "NAME=PRICE items with a preset's name");
        memcpy(pr->name, p, nlen);
        pr->name[nlen] = 0;
        memcpy(val, eq + 1, vlen);
        val[vlen] = 0;
        if (memest_parse_double(val, 1e-9, 1e12, &pr->per_hour) != 0 || pr->per_hour <= 0)
            return memest_opt_bad(err, "--price", arg, "a positive price per hour after each NAME=");
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

/* A sweep's LIST (sweep.h), checked before the model is read. */
static int check_list(const char *opt, const char *list, struct memest_error *err)
{
    struct memest_sweep_list l;
    if (memest_sweep_parse(list, opt, &l, err) != 0)
        return -1;
    memest_sweep_list_free(&l);
    return 0;
}

/* --sweep LIST, --sweep-context LIST */
int memest_optp_after_sweep_list(const struct memest_opt *row, char *arg, struct memest_cli *o,
                                 struct memest_error *err)
{
    (void)o;
    char opt[48];
    snprintf(opt, sizeof opt, "--%s", row->name);
    return check_list(opt, arg, err);
}

/* --sweep-var NAME=LIST */
int memest_optp_sweep_var(const struct memest_opt *row, char *arg, struct memest_cli *o,
                          struct memest_error *err)
{
    (void)row;
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return memest_opt_bad(err, "--sweep-var", arg, "NAME=LIST");
    o->sweep_var = arg;
    return check_list("--sweep-var", eq + 1, err);
}

/* --json: memest_cli_parse has set o->format before the first option, so
 * that an error found before it is a JSON document too */
int memest_optp_json(const struct memest_opt *row, char *arg, struct memest_cli *o,
                     struct memest_error *err)
{
    (void)row, (void)arg, (void)o, (void)err;
    return 0;
}
