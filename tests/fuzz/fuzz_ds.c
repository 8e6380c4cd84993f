/* fuzz_ds.c - libFuzzer target of the DeepSpeed config reader: the bytes as
 * a ds_config.json (memest_ds_config_read through a memfd), then applied as
 * the tool applies it (memest_app_dist, --deepspeed FILE
 * --gpus 8, on a small Llama config: fuzz_common.c), one estimate of a
 * rank and its --json report; and once more under command-line options that
 * must win over the file (--strategy, --offload, --dtype, --grad-accum,
 * --optim, --batch).
 *
 * Besides crashes, leaks and undefined behaviour, it aborts when:
 *   - an error has no code, no message or one with control characters, an
 *     "internal:" message, or a reader's error does not name the file or
 *     maps to another exit code than 3;
 *   - the tool fails on the file otherwise than the reader does, or fails
 *     on a file the reader took otherwise than as the file's fault (exit 3,
 *     naming the file), or its layout is not the reader's;
 *   - a successful read gives values out of range: a strategy DeepSpeed's
 *     stages do not give, a bucket of 0 elements, a negative micro-batch or
 *     accumulation; the tool then runs an SGD momentum --momentum would
 *     refuse (0 to 1);
 *   - reading twice gives another result (determinism);
 *   - an option given on the command line does not win over the file;
 *   - an estimate breaks the invariants of fuzz_common.h, or its --json
 *     report is not valid JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memest/app.h"
#include "memest/cli.h"
#include "memest/ds_config.h"
#include "memest/dist.h"

#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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

static bool same_engine(const struct memest_engine_cfg *a, const struct memest_engine_cfg *b)
{
    return a->ddp_bucket_bytes == b->ddp_bucket_bytes &&
           a->ddp_grad_as_bucket_view == b->ddp_grad_as_bucket_view &&
           a->reduce_bucket_size == b->reduce_bucket_size &&
           a->allgather_bucket_size == b->allgather_bucket_size &&
           a->overlap_comm == b->overlap_comm && a->overlap_comm_set == b->overlap_comm_set &&
           a->contiguous_gradients == b->contiguous_gradients &&
           a->prefetch_bucket_size == b->prefetch_bucket_size &&
           a->max_live_parameters == b->max_live_parameters &&
           a->max_reuse_distance == b->max_reuse_distance &&
           a->param_persistence_threshold == b->param_persistence_threshold &&
           (a->wrap_block == b->wrap_block ||
            (a->wrap_block && b->wrap_block && strcmp(a->wrap_block, b->wrap_block) == 0)) &&
           a->backward_prefetch == b->backward_prefetch &&
           a->forward_prefetch == b->forward_prefetch &&
           a->limit_all_gathers == b->limit_all_gathers;
}

/* note: whether the note of ignored keys counts (it lists them in the
 * file's order) */
static bool same_settings(const struct memest_ds_settings *a, const struct memest_ds_settings *b,
                          bool note)
{
    return a->micro_batch == b->micro_batch && a->train_batch == b->train_batch &&
           a->grad_accum == b->grad_accum && a->half_set == b->half_set &&
           (!a->half_set || a->half == b->half) && a->optim_set == b->optim_set &&
           (!a->optim_set || (a->optim == b->optim && a->momentum == b->momentum)) &&
           (!note || strcmp(a->ignored, b->ignored) == 0);
}

/* The reader on its own, with the tool's defaults for --gpus 8. */
static int read_direct(const char *path, struct memest_dist_cfg *d, struct memest_ds_settings *s,
                       struct memest_error *err)
{
    memest_dist_default(d);
    d->set = true;
    d->gpus = 8;
    d->config_path = path;
    return memest_ds_config_read(path, FUZZ_TINY_LLAMA_HIDDEN, d, s, err);
}

static void check_read(const struct memest_dist_cfg *d, const struct memest_ds_settings *s)
{
    if (d->strategy != MEMEST_STRAT_DDP && d->strategy != MEMEST_STRAT_ZERO1 &&
        d->strategy != MEMEST_STRAT_ZERO2 && d->strategy != MEMEST_STRAT_ZERO3)
        fuzz_bug("a DeepSpeed config read as strategy %s", memest_strategy_name(d->strategy));
    if (d->offload >= MEMEST_OFFLOAD_COUNT)
        fuzz_bug("offload %d", (int)d->offload);
    if (d->eng.reduce_bucket_size == 0 || d->eng.allgather_bucket_size == 0)
        fuzz_bug("a bucket of 0 elements (reduce %llu, allgather %llu)",
                 (unsigned long long)d->eng.reduce_bucket_size,
                 (unsigned long long)d->eng.allgather_bucket_size);
    if (s->micro_batch < 0 || s->grad_accum < 0 || s->train_batch < 0)
        fuzz_bug("negative batch settings: micro %lld, accumulation %lld, train %lld",
                 (long long)s->micro_batch, (long long)s->grad_accum, (long long)s->train_batch);
    if (s->half_set && s->half != MEMEST_BF16 && s->half != MEMEST_F16)
        fuzz_bug("a half type that is neither bf16 nor fp16: %d", (int)s->half);
    if (s->optim_set && s->optim != MEMEST_OPT_ADAM && s->optim != MEMEST_OPT_ADAMW &&
        s->optim != MEMEST_OPT_SGD)
        fuzz_bug("optimizer %d from a DeepSpeed config", (int)s->optim);
    fuzz_check_cstr(s->ignored, sizeof s->ignored, "the note of ignored keys");
}

/* The single-estimate flow as memest_main runs it, after memest_app_open. */
static void estimate(struct memest_app *a, const struct memest_cli *o)
{
    struct memest_error err = {0};
    int64_t batch = o->batch;
    if (a->ds.micro_batch && !o->batch_set)
        batch = a->ds.micro_batch;   /* train_micro_batch_size_per_gpu */
    struct memest_estimate e;
    if (memest_app_estimate(a, batch, &a->step, a->dtype, &e, NULL, NULL, &err) != 0) {
        /* a micro-batch past memest's limits is the file's */
        fuzz_check_error(&err, "the estimate", NULL, FUZZ_EXIT(MEMEST_EXIT_MODEL));
        return;
    }
    if (!e.has_dist)
        fuzz_bug("an estimate under --deepspeed without the rank's view");
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
    snprintf(path, sizeof path, "%s", fuzz_file_set(&cfg, "ds_config.json", data, size));

    struct memest_dist_cfg d, d2;
    struct memest_ds_settings s, s2;
    struct memest_error rerr = {0}, rerr2 = {0};
    int rc = read_direct(path, &d, &s, &rerr);
    int rc2 = read_direct(path, &d2, &s2, &rerr2);
    if (rc != rc2 || strcmp(rerr.msg, rerr2.msg) != 0 ||
        (rc == 0 && (d.strategy != d2.strategy || d.offload != d2.offload ||
                     !same_engine(&d.eng, &d2.eng) || !same_settings(&s, &s2, true))))
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
    char *text = fuzz_json_reversed(data, size);
    if (text) {
        static struct fuzz_file rev;
        char rpath[64];
        snprintf(rpath, sizeof rpath, "%s",
                 fuzz_file_set(&rev, "ds_config-reversed.json", text, strlen(text)));
        struct memest_dist_cfg d3;
        struct memest_ds_settings s3;
        struct memest_error rerr3 = {0};
        int rc3 = read_direct(rpath, &d3, &s3, &rerr3);
        if (rc == 0 && (rc3 != 0 || d3.strategy != d.strategy || d3.offload != d.offload ||
                      !same_engine(&d3.eng, &d.eng) || !same_settings(&s3, &s, false)))
            fuzz_bug("the file with its keys in reverse order reads otherwise (%s): %s",
                     rc3 ? rerr3.msg : "other settings", text);
        free(text);
    }

    /* the file as the tool reads it, then with options that win over it */
    for (int variant = 0; variant < 2; variant++) {
        char *plain[] = {"memest", model_path, "--seq", "32", "--gpus", "8", "--deepspeed", path,
                         NULL};
        char *over[] = {"memest", model_path, "--seq", "32", "--gpus", "8", "--deepspeed", path,
                        "--strategy", "zero3", "--offload", "optimizer", "--dtype", "fp16",
                        "--grad-accum", "3", "--optim", "sgd", "--momentum", "0.5", "--batch",
                        "2", NULL};
        char **argv = variant ? over : plain;
        int argc = variant ? 22 : 8;
        struct memest_cli o;
        struct memest_error err = {0};
        if (memest_cli_parse(argc, argv, &o, &err) != 0)
            fuzz_bug("the target's options do not parse: %s", err.msg);
        struct memest_app *app = fuzz_tiny_app();
        int arc = fuzz_app_dist(app, &o, &err);
        if (rc != 0) {
            /* the reader's error, as it is */
            if (arc == MEMEST_EXIT_OK || strcmp(err.msg, rerr.msg) != 0 ||
                strcmp(err.file, rerr.file) != 0)
                fuzz_bug("the tool %s on a file the reader refuses (%s): %s",
                         arc == MEMEST_EXIT_OK ? "succeeds" : "fails otherwise", rerr.msg,
                         err.msg);
        } else if (arc != MEMEST_EXIT_OK) {
            /* options and file may not go together (exit 2); the file alone
             * is refused only as the file's fault (exit 3, naming it: what
             * needs the layout to tell, as a world size) */
            fuzz_check_error(&err, variant ? "the tool, with options" : "the tool",
                             variant ? NULL : path,
                             variant ? FUZZ_EXIT(MEMEST_EXIT_USAGE) | FUZZ_EXIT(MEMEST_EXIT_MODEL)
                                     : FUZZ_EXIT(MEMEST_EXIT_MODEL));
        } else {
            const struct memest_dist_cfg *ad = &app->dist;
            if (memest_dist_check(ad, &err) != 0)
                fuzz_bug("the tool's layout fails its own check: %s", err.msg);
            if (!same_engine(&ad->eng, &d.eng))
                fuzz_bug("the tool's engine settings are not the file's");
            /* torch.optim.SGD refuses a momentum below 0 ("Invalid momentum
             * value"), and --momentum takes 0 to 1: the file's must be checked
             * as the option is */
            if (!(app->step.optim.momentum >= 0 && app->step.optim.momentum <= 1))
                fuzz_bug("the step runs a momentum of %g (--momentum accepts 0 to 1, "
                         "torch.optim.SGD refuses a negative one)", app->step.optim.momentum);
            if (!variant) {
                if (ad->strategy != d.strategy || ad->offload != d.offload)
                    fuzz_bug("the tool runs %s, offload %s; the file says %s, offload %s",
                             memest_strategy_name(ad->strategy), memest_offload_name(ad->offload),
                             memest_strategy_name(d.strategy), memest_offload_name(d.offload));
                if (s.half_set && app->dtype != s.half)
                    fuzz_bug("the file's 16-bit type is not the parameters'");
                if (s.grad_accum && app->step.grad_accum != s.grad_accum)
                    fuzz_bug("the file's gradient accumulation is not the step's");
                if (s.optim_set && app->step.optim.kind != s.optim)
                    fuzz_bug("the file's optimizer is not the step's");
            } else if (ad->strategy != MEMEST_STRAT_ZERO3 ||
                       ad->offload != MEMEST_OFFLOAD_OPTIMIZER || app->dtype != MEMEST_F16 ||
                       app->step.grad_accum != 3 || app->step.optim.kind != MEMEST_OPT_SGD ||
                       app->step.optim.momentum != 0.5) {
                fuzz_bug("an option given on the command line does not win over the file "
                         "(strategy %s, offload %s, dtype %d, accumulation %lld, optimizer %d, "
                         "momentum %g)", memest_strategy_name(ad->strategy),
                         memest_offload_name(ad->offload), (int)app->dtype,
                         (long long)app->step.grad_accum, (int)app->step.optim.kind,
                         app->step.optim.momentum);
            }
            estimate(app, &o);
        }
        if (rc != 0)
            break;   /* the reader's error: the options change nothing of it */
    }
    return 0;
}
