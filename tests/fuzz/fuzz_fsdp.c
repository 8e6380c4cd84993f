/* fuzz_fsdp.c - libFuzzer target of the FSDP config reader: the bytes as an
 * accelerate config (YAML, through libyaml) or the Trainer's fsdp_config
 * (JSON, when the first non-blank byte is '{'), read by
 * memest_fsdp_config_read through a memfd; then applied as the tool applies
 * it (memest_app_dist, --fsdp-config FILE on a small
 * Llama config whose blocks are LlamaDecoderLayer: fuzz_common.c), one
 * estimate of a rank and its --json report; and once more under options
 * that must win over the file (--gpus, --gpus-per-node, --strategy,
 * --dtype, --fsdp-wrap). The flow is fuzz_common.c's (fuzz_dist_input);
 * this file gives the reader and its own checks.
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
#include <string.h>

#include "memest/app.h"
#include "memest/cli.h"
#include "memest/dist.h"
#include "memest/fsdp_config.h"

#include "fuzz_common.h"

#define WRAP "LlamaDecoderLayer"

static int read_direct(const char *path, struct fuzz_reading *r, struct memest_error *err)
{
    memest_dist_default(&r->d);
    r->d.set = true;
    r->d.fsdp_path = path;
    return memest_fsdp_config_read(path, &r->d, &r->s.fsdp, err);
}

static bool same_read(const struct fuzz_reading *ra, const struct fuzz_reading *rb, bool note)
{
    const struct memest_dist_cfg *a = &ra->d, *b = &rb->d;
    const struct memest_fsdp_settings *sa = &ra->s.fsdp, *sb = &rb->s.fsdp;
    return a->strategy == b->strategy && a->offload == b->offload &&
           !a->eng.wrap_block == !b->eng.wrap_block &&
           (!a->eng.wrap_block || strcmp(a->eng.wrap_block, b->eng.wrap_block) == 0) &&
           a->eng.backward_prefetch == b->eng.backward_prefetch &&
           a->eng.forward_prefetch == b->eng.forward_prefetch && sa->processes == sb->processes &&
           sa->machines == sb->machines && sa->half_set == sb->half_set &&
           (!sa->half_set || sa->half == sb->half) && sa->checkpoint == sb->checkpoint &&
           strcmp(sa->wrap, sb->wrap) == 0 && (!note || strcmp(sa->ignored, sb->ignored) == 0);
}

/* The Trainer's fsdp_config JSON: the first non-blank byte '{' */
static bool is_json(const uint8_t *data, size_t size)
{
    size_t lead = 0;
    while (lead < size && strchr(" \t\r\n", data[lead]) && data[lead])
        lead++;
    return lead < size && data[lead] == '{';
}

static void check_read(const struct fuzz_reading *r)
{
    const struct memest_dist_cfg *d = &r->d;
    if (d->strategy != MEMEST_STRAT_FSDP && d->strategy != MEMEST_STRAT_FSDP_GRAD_OP &&
        d->strategy != MEMEST_STRAT_HSDP && d->strategy != MEMEST_STRAT_DDP)
        fuzz_bug("an FSDP config read as strategy %s", memest_strategy_name(d->strategy));
    if (d->offload != MEMEST_OFFLOAD_NONE && d->offload != MEMEST_OFFLOAD_OPTIMIZER_PARAMS)
        fuzz_bug("an FSDP config read as offload %s", memest_offload_name(d->offload));
    const struct memest_fsdp_settings *s = &r->s.fsdp;
    if (s->processes < 0 || s->processes > 1048576 || s->machines < 0 || s->machines > 1048576)
        fuzz_bug("%lld processes on %lld machines", (long long)s->processes,
                 (long long)s->machines);
    if (s->half_set && !memest_dtype_is_half(s->half))
        fuzz_bug("a half type that is neither bf16 nor fp16: %d", (int)s->half);
    fuzz_check_cstr(s->wrap, sizeof s->wrap, "the wrap class");
    if (d->eng.wrap_block && (d->eng.wrap_block != s->wrap || !s->wrap[0]))
        fuzz_bug("the wrap class is not the settings' text (\"%s\")", s->wrap);
    fuzz_check_cstr(s->ignored, sizeof s->ignored, "the note of ignored keys");
}

/* Options and file may not go together (exit 2); the file alone is refused
 * after the reader took it only as the file's fault (exit 3, naming it:
 * what needs the layout to tell, as a world size the machines do not
 * split), or for a wrap class that is none of the model's blocks (exit 2,
 * cases.tsv). */
static void check_refused(const struct fuzz_reading *r, const char *path, bool over,
                          const struct memest_error *err)
{
    fuzz_check_error(err, over ? "the tool, with options" : "the tool", NULL,
                     FUZZ_EXIT(MEMEST_EXIT_USAGE) | FUZZ_EXIT(MEMEST_EXIT_MODEL));
    bool wrap = r->d.eng.wrap_block && strcmp(r->d.eng.wrap_block, WRAP) != 0 &&
                strstr(err->msg, "wrap class");
    bool files = memest_error_exit(err) == MEMEST_EXIT_MODEL && strcmp(err->file, path) == 0;
    if (!over && !wrap && !files)
        fuzz_bug("the reader takes the file, the tool refuses it otherwise than as the "
                 "file's fault: %s", err->msg);
}

static void check_tool(const struct fuzz_reading *r, const struct memest_app *app, bool over)
{
    const struct memest_fsdp_settings *s = &r->s.fsdp;
    const struct memest_dist_cfg *ad = &app->dist, *d = &r->d;
    if (ad->eng.backward_prefetch != d->eng.backward_prefetch ||
        ad->eng.forward_prefetch != d->eng.forward_prefetch)
        fuzz_bug("the tool's prefetch is not the file's");
    if (s->checkpoint && !app->step.checkpoint)
        fuzz_bug("the file's activation checkpointing is not the step's");
    if (!over) {
        if (s->processes && ad->gpus != s->processes)
            fuzz_bug("%lld GPUs, the file says %lld processes", (long long)ad->gpus,
                     (long long)s->processes);
        if (s->half_set && app->dtype != s->half)
            fuzz_bug("the file's mixed precision is not the parameters' type");
        if (!ad->eng.wrap_block != !d->eng.wrap_block ||
            (d->eng.wrap_block && strcmp(ad->eng.wrap_block, d->eng.wrap_block) != 0))
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
}

static char *args[] = {NULL};
static char *over[] = {"--gpus", "4", "--gpus-per-node", "2", "--strategy", "fsdp-grad-op",
                       "--dtype", "fp16", "--fsdp-wrap", WRAP, NULL};
static const struct fuzz_dist_target target = {
    .file = "fsdp_config.yaml", .reversed = "fsdp_config-reversed.json",
    .option = "--fsdp-config", .args = args, .over = over, .read = read_direct,
    .same = same_read, .json = is_json, .check_read = check_read,
    .check_refused = check_refused, .check_tool = check_tool,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_dist_input(&target, data, size);
}
