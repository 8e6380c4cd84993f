/* fuzz_hf.c - libFuzzer target of the Hugging Face config reader: the bytes
 * as a config.json (memest_model_read_file through a memfd; a config with
 * "model_type" is read through its architecture template, hf_config.c), the
 * graph built from the template with the config's values, the graph passes
 * (the config's quantization_config; LoRA), estimates and the --json report,
 * as memest_app_open and the single-estimate flow run them but with the
 * builder's node limit lowered (HF_MAX_NODES). Inputs that read as a plain
 * model file (no "model_type") are fuzz_model's and skipped here.
 *
 * Besides crashes, leaks and undefined behaviour, it aborts when:
 *   - an error has no code, no message or one with control characters, an
 *     "internal:" message, names another file than the config, or maps to
 *     another exit code than 3 (the config alone: every fault is the file's;
 *     exit 2 only when an option is given: --seq, --lora, --checkpoint);
 *   - a read config has no model_type or template, or an override without
 *     a variable, a value or the key it came from, or of a variable the
 *     template does not declare; the hidden size for DeepSpeed's "auto"
 *     (memest_ds_model_hidden) out of range;
 *   - an estimate breaks the invariants of fuzz_common.h or its --json
 *     report is not valid JSON;
 *   - the same config with its keys in reverse order (every object) and
 *     pretty-printed gives other figures or another parameter type, or fails
 *     where it succeeded, with or without the options: a config means the
 *     same whatever its layout;
 *   - reading it twice gives other figures (determinism).
 * A config whose graph has more than MAX_REPEAT_NODES nodes is estimated
 * once, without the options, the second reading and the reversed keys. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memest/app.h"
#include "memest/cli.h"
#include "memest/cost.h"
#include "memest/ds_config.h"
#include "memest/model.h"

#include "fuzz_common.h"

/* The builder's node limit here: lower than fuzz_model's (FUZZ_MAX_NODES),
 * as a config's few numbers make graphs of any size (num_hidden_layers):
 * building 5,000 nodes takes about 2 s under the sanitizers and coverage,
 * the whole of -timeout=2. */
#define HF_MAX_NODES 2000u
/* Graphs larger than this are estimated once: a config of a few hundred
 * nodes (gemma-2b, 515) run five times under the sanitizers takes about
 * as long as -timeout=2 allows. */
#define MAX_REPEAT_NODES 300u

/* memest_app_open for a Hugging Face config with the node limit lowered
 * (the tool's is 250,000: far too slow for a fuzzer). Returns 0, or -1 with
 * err set; *is_hf false (and 0) when the file is a plain model file. Call
 * memest_app_close in every case. */
static int open_app(struct memest_app *a, const struct memest_cli *o, bool *is_hf,
                    struct memest_error *err)
{
    memset(a, 0, sizeof *a);
    a->o = o;
    a->batch = o->batch;
    a->est.g = &a->g;
    a->est.r = &a->est.run;
    a->step = o->step;
    a->max_work = MEMEST_MAX_WORK;
    *is_hf = false;
    if (memest_model_read_file(o->model, &a->m, err) != 0)
        return -1;
    if (!a->m.arch)
        return 0;
    *is_hf = true;
    if (!a->m.model_type)
        fuzz_bug("a config read through %s without its model_type", a->m.arch);
    for (int i = 0; i < a->m.npreset; i++) {
        const struct memest_override *p = &a->m.preset[i];
        if (!p->name || !p->value || !p->opt)
            fuzz_bug("override %d of the config lacks its variable, value or key", i);
        if (!memest_model_has_variable(&a->m, p->name, NULL))
            fuzz_bug("the config sets \"%s\" (key %s), not a variable of %s", p->name, p->opt,
                     a->m.arch);
    }
    a->m.max_nodes = HF_MAX_NODES;
    if (memest_model_build(&a->m, o->sets, o->nsets, &a->g, err) != 0 ||
        memest_step_cfg_resolve_loss(&a->step, a->g.loss, err) != 0)
        return -1;
    if (a->g.nnodes == 0 || a->g.noutputs == 0)
        fuzz_bug("built a graph with %u nodes and %u outputs", a->g.nnodes, a->g.noutputs);
    a->dtype = o->dtype;
    if (!o->dtype_set && o->step.amp == MEMEST_AMP_NONE && a->m.has_dtype)
        a->dtype = a->m.dtype;
    int64_t hidden = memest_ds_model_hidden(&a->m);
    if (hidden < 0 || hidden >= 1000000000)
        fuzz_bug("the model's hidden size for DeepSpeed's \"auto\" is %lld",
                 (long long)hidden);
    return memest_app_dist(a, err) != 0 || memest_app_graph_passes(a, &a->g, err) != 0 ? -1 : 0;
}

/* The outcome of one command line on the config. */
struct outcome {
    bool is_hf, ok;
    uint32_t nodes;                 /* the graph's, when it built */
    enum memest_dtype dtype;        /* the parameters' (the config's torch_dtype, dtype) */
    struct memest_estimate e;
    enum memest_errcode code;
};

/* Runs memest's single estimate of argv (argv[1]: the config) as the tool
 * would, checking every invariant; an error may map to an exit code in
 * `exits`. */
static void run(int argc, char **argv, unsigned exits, struct outcome *out)
{
    memset(out, 0, sizeof *out);
    struct memest_cli o;
    struct memest_error err = {0};
    if (memest_cli_parse(argc, argv, &o, &err) != 0)
        fuzz_bug("the target's options do not parse: %s", err.msg);
    struct memest_app a;
    bool is_hf;
    int rc = open_app(&a, &o, &is_hf, &err);
    out->is_hf = is_hf;
    out->nodes = a.g.nnodes;
    out->dtype = a.dtype;
    if (rc == 0 && is_hf) {
        out->ok = fuzz_app_estimate(&a, o.batch, NULL, &out->e, &err);
        if (!out->ok)
            rc = -1;
    }
    if (rc != 0) {
        /* a read that fails, a config that does not build: the config's fault */
        fuzz_check_error(&err, "the config", o.model, exits);
        out->code = err.code;
    }
    memest_app_close(&a);
}

/* The config as given (a) and with its keys reversed (b, text) under the
 * same options: b succeeds with a's figures when a succeeds (only this way
 * round: a file cJSON reads but memest refuses, say a number past the
 * double range, may print as one memest takes). */
static void same_outcome(const char *opts, const struct outcome *a, const struct outcome *b,
                         const char *text)
{
    if (!a->ok)
        return;
    if (!b->is_hf || !b->ok)
        fuzz_bug("the config with its keys reversed fails (%s), the config as given "
                 "succeeds%s: %s", memest_errcode_name(b->code), opts, text);
    if (a->dtype != b->dtype)
        fuzz_bug("the config with its keys reversed gives the parameters another type%s (%s, "
                 "was %s): %s", opts, memest_dtype_name(b->dtype), memest_dtype_name(a->dtype),
                 text);
    if (!fuzz_same_estimate(&a->e, &b->e))
        fuzz_bug("the config with its keys reversed gives other figures%s (training peak %llu, "
                 "was %llu; parameters %llu, were %llu): %s", opts,
                 (unsigned long long)b->e.train_peak.bytes,
                 (unsigned long long)a->e.train_peak.bytes,
                 (unsigned long long)b->e.params.total,
                 (unsigned long long)a->e.params.total, text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct fuzz_file cfg, variant;
    fuzz_init();
    unsetenv("MEMEST_ARCH_PATH");   /* the built-in templates only */
    const char *path = fuzz_file_set(&cfg, "config.json", data, size);
    char p[64];
    snprintf(p, sizeof p, "%s", path);

    /* the config alone: every error is the file's (exit 3) */
    struct outcome plain;
    char *argv1[] = {"memest", p, NULL};
    run(2, argv1, FUZZ_EXIT(MEMEST_EXIT_MODEL), &plain);
    /* the rest runs the config four more times: only on graphs small
     * enough for every input to stay well under a second (a full-size
     * model's seed takes about as long as the limit, -timeout=2, allows
     * for five estimates under the sanitizers) */
    if (!plain.is_hf || plain.nodes > MAX_REPEAT_NODES)
        return 0;

    /* determinism: the same again */
    struct outcome again;
    char *argv1b[] = {"memest", p, NULL};
    run(2, argv1b, FUZZ_EXIT(MEMEST_EXIT_MODEL), &again);
    if (again.ok != plain.ok || again.code != plain.code ||
        (plain.ok && !fuzz_same_estimate(&plain.e, &again.e)))
        fuzz_bug("reading the same config twice gives other results");

    /* options over it: LoRA on PEFT's default targets, autocast,
     * checkpointing, a sequence length; the options may be refused (exit 2) */
    struct outcome opts;
    char *argv2[] = {"memest", p, "--seq", "48", "--batch", "2", "--lora", "8", "--amp", "bf16",
                     "--checkpoint", "--optim", "adamw", NULL};
    run(13, argv2, FUZZ_EXIT(MEMEST_EXIT_MODEL) | FUZZ_EXIT(MEMEST_EXIT_USAGE), &opts);

    /* the same config written another way: keys reversed, pretty-printed */
    char *text = fuzz_json_reversed(data, size);
    if (!text)
        return 0;   /* read as a config, but not by cJSON alone: nothing to rewrite */
    const char *vpath = fuzz_file_set(&variant, "config-reversed.json", text, strlen(text));
    char vp[64];
    snprintf(vp, sizeof vp, "%s", vpath);
    struct outcome rev;
    char *argv3[] = {"memest", vp, NULL};
    run(2, argv3, FUZZ_EXIT(MEMEST_EXIT_MODEL), &rev);
    same_outcome("", &plain, &rev, text);
    char *argv4[] = {"memest", vp, "--seq", "48", "--batch", "2", "--lora", "8", "--amp", "bf16",
                     "--checkpoint", "--optim", "adamw", NULL};
    run(13, argv4, FUZZ_EXIT(MEMEST_EXIT_MODEL) | FUZZ_EXIT(MEMEST_EXIT_USAGE), &rev);
    same_outcome(" (with --seq 48, --lora 8, ...)", &opts, &rev, text);
    free(text);
    return 0;
}
