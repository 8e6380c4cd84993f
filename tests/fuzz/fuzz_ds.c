/* fuzz_ds.c - libFuzzer target of the DeepSpeed config reader: the bytes as
 * a ds_config.json (memest_ds_config_read through a memfd), then applied as
 * the tool applies it (memest_app_dist, --deepspeed FILE
 * --gpus 8, on a small Llama config: fuzz_common.c), one estimate of a
 * rank and its --json report; and once more under command-line options that
 * must win over the file (--strategy, --offload, --dtype, --grad-accum,
 * --optim, --batch). The flow is fuzz_common.c's (fuzz_dist_input); this
 * file gives the reader and its own checks.
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
#include <string.h>

#include "memest/app.h"
#include "memest/cli.h"
#include "memest/ds_config.h"
#include "memest/dist.h"

#include "fuzz_common.h"

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
           a->sub_group_size == b->sub_group_size &&
           a->param_persistence_threshold == b->param_persistence_threshold &&
           (a->wrap_block == b->wrap_block ||
            (a->wrap_block && b->wrap_block && strcmp(a->wrap_block, b->wrap_block) == 0)) &&
           a->backward_prefetch == b->backward_prefetch &&
           a->forward_prefetch == b->forward_prefetch &&
           a->limit_all_gathers == b->limit_all_gathers;
}

static bool same_read(const struct fuzz_reading *ra, const struct fuzz_reading *rb, bool note)
{
    const struct memest_ds_settings *a = &ra->s.ds, *b = &rb->s.ds;
    return ra->d.strategy == rb->d.strategy && ra->d.offload == rb->d.offload &&
           same_engine(&ra->d.eng, &rb->d.eng) && a->micro_batch == b->micro_batch &&
           a->train_batch == b->train_batch && a->grad_accum == b->grad_accum &&
           a->half_set == b->half_set && (!a->half_set || a->half == b->half) &&
           a->optim_set == b->optim_set &&
           (!a->optim_set || (a->optim == b->optim && a->momentum == b->momentum)) &&
           (!note || strcmp(a->ignored, b->ignored) == 0);
}

/* The reader on its own, with the tool's defaults for --gpus 8. */
static int read_direct(const char *path, struct fuzz_reading *r, struct memest_error *err)
{
    memest_dist_default(&r->d);
    r->d.set = true;
    r->d.gpus = 8;
    r->d.config_path = path;
    return memest_ds_config_read(path, FUZZ_TINY_LLAMA_HIDDEN, &r->d, &r->s.ds, err);
}

static void check_read(const struct fuzz_reading *r)
{
    const struct memest_dist_cfg *d = &r->d;
    if (d->strategy != MEMEST_STRAT_DDP && d->strategy != MEMEST_STRAT_ZERO1 &&
        d->strategy != MEMEST_STRAT_ZERO2 && d->strategy != MEMEST_STRAT_ZERO3)
        fuzz_bug("a DeepSpeed config read as strategy %s", memest_strategy_name(d->strategy));
    if (d->offload >= MEMEST_OFFLOAD_COUNT)
        fuzz_bug("offload %d", (int)d->offload);
    if (d->eng.reduce_bucket_size == 0 || d->eng.allgather_bucket_size == 0)
        fuzz_bug("a bucket of 0 elements (reduce %llu, allgather %llu)",
                 (unsigned long long)d->eng.reduce_bucket_size,
                 (unsigned long long)d->eng.allgather_bucket_size);
    const struct memest_ds_settings *s = &r->s.ds;
    if (s->micro_batch < 0 || s->grad_accum < 0 || s->train_batch < 0)
        fuzz_bug("negative batch settings: micro %lld, accumulation %lld, train %lld",
                 (long long)s->micro_batch, (long long)s->grad_accum, (long long)s->train_batch);
    if (s->half_set && !memest_dtype_is_half(s->half))
        fuzz_bug("a half type that is neither bf16 nor fp16: %d", (int)s->half);
    if (s->optim_set && s->optim != MEMEST_OPT_ADAM && s->optim != MEMEST_OPT_ADAMW &&
        s->optim != MEMEST_OPT_SGD)
        fuzz_bug("optimizer %d from a DeepSpeed config", (int)s->optim);
    fuzz_check_cstr(s->ignored, sizeof s->ignored, "the note of ignored keys");
}

/* Options and file may not go together (exit 2); the file alone is refused
 * only as the file's fault (exit 3, naming it: what needs the layout to
 * tell, as a world size). */
static void check_refused(const struct fuzz_reading *r, const char *path, bool over,
                          const struct memest_error *err)
{
    (void)r;
    if (over)
        fuzz_check_error(err, "the tool, with options", NULL,
                         FUZZ_EXIT(MEMEST_EXIT_USAGE) | FUZZ_EXIT(MEMEST_EXIT_MODEL));
    else
        fuzz_check_error(err, "the tool", path, FUZZ_EXIT(MEMEST_EXIT_MODEL));
}

static void check_tool(const struct fuzz_reading *r, const struct memest_app *app, bool over)
{
    const struct memest_ds_settings *s = &r->s.ds;
    const struct memest_dist_cfg *ad = &app->dist;
    if (!same_engine(&ad->eng, &r->d.eng))
        fuzz_bug("the tool's engine settings are not the file's");
    /* torch.optim.SGD refuses a momentum below 0 ("Invalid momentum
     * value"), and --momentum takes 0 to 1: the file's must be checked as
     * the option is */
    if (!(app->step.optim.momentum >= 0 && app->step.optim.momentum <= 1))
        fuzz_bug("the step runs a momentum of %g (--momentum accepts 0 to 1, "
                 "torch.optim.SGD refuses a negative one)", app->step.optim.momentum);
    if (!over) {
        if (s->half_set && app->dtype != s->half)
            fuzz_bug("the file's 16-bit type is not the parameters'");
        if (s->grad_accum && app->step.grad_accum != s->grad_accum)
            fuzz_bug("the file's gradient accumulation is not the step's");
        if (s->optim_set && app->step.optim.kind != s->optim)
            fuzz_bug("the file's optimizer is not the step's");
    } else if (ad->strategy != MEMEST_STRAT_ZERO3 || ad->offload != MEMEST_OFFLOAD_OPTIMIZER ||
               app->dtype != MEMEST_F16 || app->step.grad_accum != 3 ||
               app->step.optim.kind != MEMEST_OPT_SGD || app->step.optim.momentum != 0.5) {
        fuzz_bug("an option given on the command line does not win over the file "
                 "(strategy %s, offload %s, dtype %d, accumulation %lld, optimizer %d, "
                 "momentum %g)", memest_strategy_name(ad->strategy),
                 memest_offload_name(ad->offload), (int)app->dtype,
                 (long long)app->step.grad_accum, (int)app->step.optim.kind,
                 app->step.optim.momentum);
    }
}

/* The file's train_micro_batch_size_per_gpu, unless --batch */
static int64_t batch(const struct memest_app *a, const struct memest_cli *o)
{
    return a->ds.micro_batch && !o->batch_set ? a->ds.micro_batch : o->batch;
}

static char *args[] = {"--gpus", "8", NULL};
static char *over[] = {"--strategy", "zero3", "--offload", "optimizer", "--dtype", "fp16",
                       "--grad-accum", "3", "--optim", "sgd", "--momentum", "0.5", "--batch", "2",
                       NULL};
static const struct fuzz_dist_target target = {
    .file = "ds_config.json", .reversed = "ds_config-reversed.json", .option = "--deepspeed",
    .args = args, .over = over, .read = read_direct, .same = same_read,
    .check_read = check_read, .check_refused = check_refused, .check_tool = check_tool,
    .batch = batch,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_dist_input(&target, data, size);
}
