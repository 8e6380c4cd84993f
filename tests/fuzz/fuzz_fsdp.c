/* fuzz_fsdp.c - libFuzzer target of the FSDP config reader: the bytes as an
 * accelerate config (YAML, through libyaml) or the Trainer's fsdp_config
 * (JSON, when the first non-blank byte is '{'), read by
 * memest_fsdp_config_read through a memfd; then applied as the tool applies
 * it (memest_app_dist, --fsdp-config FILE on a small
 * Llama config whose blocks are LlamaDecoderLayer: fuzz_common.c), one
 * estimate of a rank and its --json report; and once more under options
 * that must win over the file (--gpus, --gpus-per-node, --strategy,
 * --dtype, --fsdp-wrap).
 *
 * Besides crashes, leaks, undefined behaviour and time (an alias bomb, deep
 * nesting: -timeout), it aborts when:
 *   - an error has no code, no message or one with control characters, an
 *     "internal:" message, or a reader's error does not name the file or
 *     maps to another exit code than 3;
 *   - the tool fails on the file otherwise than the reader does, or fails on
 *     a file the reader took otherwise than as the file's fault (exit 3,
 *     naming the file) or for the wrap class (which names no block of the
 *     model: exit 2, tests/errors/cases.tsv), or its layout is not the
 *     reader's;
 *   - a successful read gives values out of range: a strategy or offload
 *     FSDP has not, a process or machine count out of 0..1048576, a wrap
 *     class that is not the settings' text, a note that is no text;
 *   - reading twice gives another result;
 *   - an option given on the command line does not win over the file;
 *   - an estimate breaks the invariants of fuzz_common.h, or its --json
 *     report is not valid JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memest/app.h"
#include "memest/cli.h"
#include "memest/dist.h"
#include "memest/fsdp_config.h"

#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define WRAP "LlamaDecoderLayer"

/* the model path on the targets' command lines: the small Llama's, opened
 * once (fuzz_tiny_app); the name is not read again */
static char model_path[] = "llama-tiny.json";

/* Once: from LLVMFuzzerInitialize (before libFuzzer's -close_fd_mask=2
 * closes the standard error that fuzz_bug keeps), or at the first input
 * (the standalone runner calls no LLVMFuzzerInitialize). */
static void init(void)
{
    fuzz_init();
    unsetenv("MEMEST_ARCH_PATH");
    fuzz_tiny_app();
}

static int read_direct(const char *path, struct memest_dist_cfg *d,
                       struct memest_fsdp_settings *s, struct memest_error *err)
{
    memest_dist_default(d);
    d->set = true;
    d->fsdp_path = path;
    return memest_fsdp_config_read(path, d, s, err);
}

/* note: whether the note of ignored keys counts (it lists them in the
 * file's order) */
static bool same_read(const struct memest_dist_cfg *a, const struct memest_fsdp_settings *sa,
                      const struct memest_dist_cfg *b, const struct memest_fsdp_settings *sb,
                      bool note)
{
    return a->strategy == b->strategy && a->offload == b->offload &&
           !a->eng.wrap_block == !b->eng.wrap_block &&
           (!a->eng.wrap_block || strcmp(a->eng.wrap_block, b->eng.wrap_block) == 0) &&
           a->eng.backward_prefetch == b->eng.backward_prefetch &&
           a->eng.forward_prefetch == b->eng.forward_prefetch && sa->processes == sb->processes &&
           sa->machines == sb->machines && sa->half_set == sb->half_set &&
           (!sa->half_set || sa->half == sb->half) && sa->checkpoint == sb->checkpoint &&
           strcmp(sa->wrap, sb->wrap) == 0 && (!note || strcmp(sa->ignored, sb->ignored) == 0);
}

static void check_read(const struct memest_dist_cfg *d, const struct memest_fsdp_settings *s)
{
    if (d->strategy != MEMEST_STRAT_FSDP && d->strategy != MEMEST_STRAT_FSDP_GRAD_OP &&
        d->strategy != MEMEST_STRAT_HSDP && d->strategy != MEMEST_STRAT_DDP)
        fuzz_bug("an FSDP config read as strategy %s", memest_strategy_name(d->strategy));
    if (d->offload != MEMEST_OFFLOAD_NONE && d->offload != MEMEST_OFFLOAD_OPTIMIZER_PARAMS)
        fuzz_bug("an FSDP config read as offload %s", memest_offload_name(d->offload));
    if (s->processes < 0 || s->processes > 1048576 || s->machines < 0 || s->machines > 1048576)
        fuzz_bug("%lld processes on %lld machines", (long long)s->processes,
                 (long long)s->machines);
    if (s->half_set && s->half != MEMEST_BF16 && s->half != MEMEST_F16)
        fuzz_bug("a half type that is neither bf16 nor fp16: %d", (int)s->half);
    fuzz_check_cstr(s->wrap, sizeof s->wrap, "the wrap class");
    if (d->eng.wrap_block && (d->eng.wrap_block != s->wrap || !s->wrap[0]))
        fuzz_bug("the wrap class is not the settings' text (\"%s\")", s->wrap);
    fuzz_check_cstr(s->ignored, sizeof s->ignored, "the note of ignored keys");
}

static void estimate(struct memest_app *a, const struct memest_cli *o)
{
    struct memest_error err = {0};
    struct memest_estimate e;
    if (memest_app_estimate(a, o->batch, &a->step, a->dtype, &e, NULL, NULL, &err) != 0) {
        fuzz_check_error(&err, "the estimate", NULL, FUZZ_EXIT(MEMEST_EXIT_MODEL));
        return;
    }
    if (!e.has_dist)
        fuzz_bug("an estimate under --fsdp-config without the rank's view");
    fuzz_check_estimate(&e, a->g.nnodes);
    struct memest_report rep = {.opts = memest_app_report_opts(a), .step = &a->step, .g = &a->g,
                                .r = &a->r, .e = &e, .figs = a->figs, .nfigs = a->nstages,
                                .binding = a->binding};
    fuzz_check_report_json(&rep);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct fuzz_file cfg;
    init();
    char path[64];
    snprintf(path, sizeof path, "%s", fuzz_file_set(&cfg, "fsdp_config.yaml", data, size));

    struct memest_dist_cfg d, d2;
    struct memest_fsdp_settings s, s2;
    struct memest_error rerr = {0}, rerr2 = {0};
    int rc = read_direct(path, &d, &s, &rerr);
    int rc2 = read_direct(path, &d2, &s2, &rerr2);
    if (rc != rc2 || strcmp(rerr.msg, rerr2.msg) != 0 ||
        (rc == 0 && !same_read(&d, &s, &d2, &s2, true)))
        fuzz_bug("reading the same file twice gives other results");
    if (rc != 0) {
        fuzz_check_error(&rerr, "the reader", path, FUZZ_EXIT(MEMEST_EXIT_MODEL));
    } else {
        if (rerr.code != MEMEST_ERR_NONE)
            fuzz_bug("the reader succeeded with an error set: %s", rerr.msg);
        check_read(&d, &s);
    }

    /* the same file (JSON) with its keys in reverse order reads the same
     * (only this way round: a file cJSON reads but memest refuses, say a
     * number past the double range, may print as one memest takes) */
    size_t lead = 0;
    while (lead < size && strchr(" \t\r\n", data[lead]) && data[lead])
        lead++;
    char *text = lead < size && data[lead] == '{' ? fuzz_json_reversed(data, size) : NULL;
    if (text) {
        static struct fuzz_file rev;
        char rpath[64];
        snprintf(rpath, sizeof rpath, "%s",
                 fuzz_file_set(&rev, "fsdp_config-reversed.json", text, strlen(text)));
        struct memest_dist_cfg d3;
        struct memest_fsdp_settings s3;
        struct memest_error rerr3 = {0};
        int rc3 = read_direct(rpath, &d3, &s3, &rerr3);
        if (rc == 0 && (rc3 != 0 || !same_read(&d, &s, &d3, &s3, false)))
            fuzz_bug("the file with its keys in reverse order reads otherwise (%s): %s",
                     rc3 ? rerr3.msg : "other settings", text);
        free(text);
    }

    for (int variant = 0; variant < 2; variant++) {
        char *plain[] = {"memest", model_path, "--seq", "32", "--fsdp-config", path, NULL};
        char *over[] = {"memest", model_path, "--seq", "32", "--fsdp-config", path, "--gpus", "4",
                        "--gpus-per-node", "2", "--strategy", "fsdp-grad-op", "--dtype", "fp16",
                        "--fsdp-wrap", WRAP, NULL};
        char **argv = variant ? over : plain;
        int argc = variant ? 16 : 6;
        struct memest_cli o;
        struct memest_error err = {0};
        if (memest_cli_parse(argc, argv, &o, &err) != 0)
            fuzz_bug("the target's options do not parse: %s", err.msg);
        struct memest_app *app = fuzz_tiny_app();
        int arc = fuzz_app_dist(app, &o, &err);
        if (rc != 0) {
            if (arc == MEMEST_EXIT_OK || strcmp(err.msg, rerr.msg) != 0 ||
                strcmp(err.file, rerr.file) != 0)
                fuzz_bug("the tool %s on a file the reader refuses (%s): %s",
                         arc == MEMEST_EXIT_OK ? "succeeds" : "fails otherwise", rerr.msg,
                         err.msg);
        } else if (arc != MEMEST_EXIT_OK) {
            fuzz_check_error(&err, variant ? "the tool, with options" : "the tool", NULL,
                             FUZZ_EXIT(MEMEST_EXIT_USAGE) | FUZZ_EXIT(MEMEST_EXIT_MODEL));
            /* the file alone: refused after the reader took it only as the
             * file's fault (exit 3, naming it: what needs the layout to tell,
             * as a world size the machines do not split), or for a wrap class
             * that is none of the model's blocks (exit 2, cases.tsv) */
            bool wrap = d.eng.wrap_block && strcmp(d.eng.wrap_block, WRAP) != 0 &&
                        strstr(err.msg, "wrap class");
            bool files = memest_error_exit(&err) == MEMEST_EXIT_MODEL &&
                         strcmp(err.file, path) == 0;
            if (!variant && !wrap && !files)
                fuzz_bug("the reader takes the file, the tool refuses it otherwise than as the "
                         "file's fault: %s", err.msg);
        } else {
            const struct memest_dist_cfg *ad = &app->dist;
            if (memest_dist_check(ad, &err) != 0)
                fuzz_bug("the tool's layout fails its own check: %s", err.msg);
            if (ad->eng.backward_prefetch != d.eng.backward_prefetch ||
                ad->eng.forward_prefetch != d.eng.forward_prefetch)
                fuzz_bug("the tool's prefetch is not the file's");
            if (s.checkpoint && !app->step.checkpoint)
                fuzz_bug("the file's activation checkpointing is not the step's");
            if (!variant) {
                if (ad->strategy != d.strategy || ad->offload != d.offload)
                    fuzz_bug("the tool runs %s, offload %s; the file says %s, offload %s",
                             memest_strategy_name(ad->strategy), memest_offload_name(ad->offload),
                             memest_strategy_name(d.strategy), memest_offload_name(d.offload));
                if (s.processes && ad->gpus != s.processes)
                    fuzz_bug("%lld GPUs, the file says %lld processes", (long long)ad->gpus,
                             (long long)s.processes);
                if (s.half_set && app->dtype != s.half)
                    fuzz_bug("the file's mixed precision is not the parameters' type");
                if (!ad->eng.wrap_block != !d.eng.wrap_block ||
                    (d.eng.wrap_block && strcmp(ad->eng.wrap_block, d.eng.wrap_block) != 0))
                    fuzz_bug("the tool's wrap class is not the file's");
            } else if (ad->gpus != 4 || ad->gpus_per_node != 2 ||
                       ad->strategy != MEMEST_STRAT_FSDP_GRAD_OP || app->dtype != MEMEST_F16 ||
                       !ad->eng.wrap_block || strcmp(ad->eng.wrap_block, WRAP) != 0) {
                fuzz_bug("an option given on the command line does not win over the file "
                         "(%lld GPUs, %lld per node, strategy %s, dtype %d, wrap %s)",
                         (long long)ad->gpus, (long long)ad->gpus_per_node,
                         memest_strategy_name(ad->strategy), (int)app->dtype,
                         ad->eng.wrap_block ? ad->eng.wrap_block : "(none)");
            }
            estimate(app, &o);
        }
        if (rc != 0)
            break;   /* the reader's error: the options change nothing of it */
    }
    return 0;
}
