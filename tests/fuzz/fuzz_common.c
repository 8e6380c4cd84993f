/* fuzz_common.c - see fuzz_common.h. */
#define _GNU_SOURCE   /* memfd_create */
#include "fuzz_common.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memest/app.h"
#include "memest/checked.h"
#include "memest/cli.h"
#include "memest/cost.h"

/* The sanitizers' report descriptor (ASan, UBSan): weak, so that the
 * standalone build without sanitizers links too. */
extern void __sanitizer_set_report_fd(void *fd) __attribute__((weak));

static int report_fd = -1;

void fuzz_init(void)
{
    if (report_fd >= 0)
        return;
    report_fd = dup(STDERR_FILENO);
    if (report_fd < 0)
        report_fd = STDERR_FILENO;
    else if (__sanitizer_set_report_fd)
        __sanitizer_set_report_fd((void *)(intptr_t)report_fd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    fuzz_init();
    return 0;
}

void fuzz_bug(const char *fmt, ...)
{
    char msg[4096];
    int n = snprintf(msg, sizeof msg, "fuzz: invariant broken: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n - 1, fmt, ap);
    va_end(ap);
    strcat(msg, "\n");
    fuzz_init();
    if (write(report_fd, msg, strlen(msg)) < 0 && report_fd != STDERR_FILENO)
        fputs(msg, stderr);
    abort();
}

const char *fuzz_file_set(struct fuzz_file *f, const char *name, const void *data, size_t size)
{
    if (f->fd <= 0) {
        f->fd = memfd_create(name, MFD_CLOEXEC);
        if (f->fd < 0) {
            fprintf(stderr, "fuzz: memfd_create: %s\n", strerror(errno));
            abort();
        }
        snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
    }
    if (ftruncate(f->fd, 0) != 0) {
        fprintf(stderr, "fuzz: ftruncate: %s\n", strerror(errno));
        abort();
    }
    const char *p = data;
    for (size_t done = 0; done < size;) {
        ssize_t w = pwrite(f->fd, p + done, size - done, (off_t)done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            fprintf(stderr, "fuzz: pwrite: %s\n", strerror(errno));
            abort();
        }
        done += (size_t)w;
    }
    return f->path;
}

void fuzz_check_cstr(const char *s, size_t cap, const char *what)
{
    if (strnlen(s, cap) == cap)
        fuzz_bug("%s is not NUL-terminated within its %zu bytes", what, cap);
}

/* Runs a writer of a --json document into memory and checks that the text
 * is one valid JSON document (so no NaN, no broken escape, no half UTF-8
 * sequence). */
static void check_json_output(void (*write)(FILE *, const void *), const void *arg,
                              const char *what)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    write(f, arg);
    fclose(f);
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithLengthOpts(text, len + 1, &end, 1);
    if (!doc)
        fuzz_bug("%s is not valid JSON near offset %td: %.300s", what, end ? end - text : -1,
                 text);
    cJSON_Delete(doc);
    free(text);
}

static void write_error(FILE *f, const void *err) { memest_error_json(f, err); }
static void write_report(FILE *f, const void *rep) { memest_report_json(f, rep); }

void fuzz_check_error(const struct memest_error *err, const char *stage, const char *file,
                      unsigned exits)
{
    if (err->code == MEMEST_ERR_NONE || err->code >= MEMEST_ERR_COUNT)
        fuzz_bug("%s failed with error code %d", stage, (int)err->code);
    char msg[1200];
    memest_error_format(err, msg, sizeof msg);
    if (!err->msg[0])
        fuzz_bug("%s failed with an empty message: %s", stage, msg);
    /* the parts are the file's text as it is: the formatted message escapes them */
    fuzz_check_cstr(err->msg, sizeof err->msg, "the message");
    fuzz_check_cstr(err->path, sizeof err->path, "the error's path");
    fuzz_check_cstr(err->node, sizeof err->node, "the error's node");
    fuzz_check_cstr(err->file, sizeof err->file, "the error's file");
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
        if (*p < 0x20 || *p == 0x7F)
            fuzz_bug("%s: control character 0x%02X in the message: %s", stage, *p, msg);
    /* the file, or the file and what it was read through ("FILE [template ...]") */
    size_t fl = file ? strlen(file) : 0;
    if (file && (strncmp(err->file, file, fl) != 0 ||
                 (err->file[fl] != '\0' && strncmp(err->file + fl, " [", 2) != 0)))
        fuzz_bug("%s: the error names the file \"%s\", not \"%s\": %s", stage, err->file, file,
                 msg);
    /* "internal: ..." opens the message of a memest bug (the file's text may
     * hold the word anywhere); where the file's text comes quoted, the word
     * anywhere before the first quote */
    const char *internal = strstr(err->msg, "internal:"), *quote = strchr(err->msg, '"');
    if (err->code == MEMEST_ERR_INTERNAL || internal == err->msg ||
        ((exits & FUZZ_QUOTED) && internal && (!quote || internal < quote)))
        fuzz_bug("%s: internal error: %s", stage, msg);
    int ex = memest_error_exit(err);
    if (ex < 0 || ex >= 31 || !(exits & FUZZ_EXIT(ex)))
        fuzz_bug("%s: exit code %d (allowed: mask 0x%x): %s", stage, ex, exits & ~FUZZ_QUOTED,
                 msg);
    check_json_output(write_error, err, "the --json error");
}

static void check_size(uint64_t v, const char *what)
{
    if (v > MEMEST_SIZE_MAX)
        fuzz_bug("%s = %" PRIu64 " exceeds 2^63 - 1 without an error", what, v);
}

static void check_flops(double v, const char *what)
{
    if (!isfinite(v) || v < 0)
        fuzz_bug("%s = %g is not a finite non-negative number", what, v);
}

static void check_peak(const struct memest_peak *p, uint32_t nnodes, const char *what)
{
    check_size(p->bytes, what);
    uint64_t sum = 0;
    for (int c = 0; c < MEMEST_CAT_COUNT; c++) {
        check_size(p->at_peak[c], what);
        sum += p->at_peak[c];  /* each <= 2^63 - 1: two cannot wrap, and we check as we go */
        check_size(sum, what);
    }
    if (sum != p->bytes)
        fuzz_bug("%s: the categories sum to %" PRIu64 ", the peak is %" PRIu64, what, sum,
                 p->bytes);
    if (p->node != UINT32_MAX && p->node >= nnodes)
        fuzz_bug("%s: peak at node %u of %u", what, p->node, nnodes);
}

void fuzz_check_estimate(const struct memest_estimate *e, uint32_t nnodes)
{
    check_size(e->params.bytes, "params.bytes");
    check_size(e->params.total, "params.total");
    check_size(e->params.buffer_bytes, "params.buffer_bytes");
    check_size(e->gradients, "gradients");
    check_size(e->opt.device_bytes, "optimizer_state");
    check_size(e->activations, "activations");
    check_size(e->reserved_peak, "reserved_peak");
    check_size(e->total_device, "total_device");
    check_flops(e->flops.fwd_macs, "fwd_macs");
    check_flops(e->flops.bwd_macs, "bwd_macs");
    check_flops(e->flops.step_flops, "step_flops");
    check_peak(&e->train_peak, nnodes, "train_peak");
    check_peak(&e->infer_peak, nnodes, "infer_peak");
    if (e->reserved_peak < e->train_peak.bytes)
        fuzz_bug("reserved peak %" PRIu64 " below the allocated training peak %" PRIu64,
                 e->reserved_peak, e->train_peak.bytes);
    if (e->total_device < e->reserved_peak)
        fuzz_bug("device total %" PRIu64 " below the reserved peak %" PRIu64, e->total_device,
                 e->reserved_peak);
    if (e->train_peak.sim_events > e->cost.train_events ||
        e->train_peak.sim_events + e->infer_peak.sim_events > e->cost.events)
        fuzz_bug("the simulations made %" PRIu64 " + %" PRIu64 " events, above the cost "
                 "model's bound %" PRIu64 " (training %" PRIu64 ")", e->train_peak.sim_events,
                 e->infer_peak.sim_events, e->cost.events, e->cost.train_events);
    if (e->cost.total > memest_cost_limit(FUZZ_MAX_NODES))
        fuzz_bug("an estimate cost %" PRIu64 " units, above the limit %" PRIu64, e->cost.total,
                 memest_cost_limit(FUZZ_MAX_NODES));
    if (e->params.frozen > e->params.total)
        fuzz_bug("frozen parameters %" PRIu64 " > total %" PRIu64, e->params.frozen,
                 e->params.total);
    if (!e->has_dist) {
        uint64_t resident;
        if (!memest_add(e->params.bytes, e->params.buffer_bytes, &resident) ||
            e->train_peak.bytes < resident)
            fuzz_bug("training peak %" PRIu64 " below parameters + buffers (%" PRIu64
                     " + %" PRIu64 ")", e->train_peak.bytes, e->params.bytes,
                     e->params.buffer_bytes);
        return;
    }
    const struct memest_dist_states *d = &e->dist;
    check_size(d->params, "dist.params");
    check_size(d->grads, "dist.grads");
    check_size(d->optim, "dist.optim");
    check_size(d->master, "dist.master");
    check_size(d->total, "dist.total");
    check_size(d->host, "dist.host");
    check_size(d->buckets, "dist.buckets");
    check_size(d->gathered, "dist.gathered");
    uint64_t sum = 0;
    if (!memest_add(d->params, d->grads, &sum) || !memest_add(sum, d->optim, &sum) ||
        !memest_add(sum, d->master, &sum) || sum != d->total)
        fuzz_bug("the rank's model states (%" PRIu64 " + %" PRIu64 " + %" PRIu64 " + %" PRIu64
                 ") do not sum to their total %" PRIu64, d->params, d->grads, d->optim,
                 d->master, d->total);
    uint64_t at_rest = d->params + d->optim + d->master;   /* each <= 2^63 - 1, sum checked */
    if (e->train_peak.bytes < at_rest)
        fuzz_bug("training peak %" PRIu64 " below the rank's parameters, optimizer state and "
                 "master weights at rest (%" PRIu64 " + %" PRIu64 " + %" PRIu64 ")",
                 e->train_peak.bytes, d->params, d->optim, d->master);
}

void fuzz_check_report_json(const struct memest_report *rep)
{
    check_json_output(write_report, rep, "the --json report");
}

bool fuzz_same_estimate(const struct memest_estimate *a, const struct memest_estimate *b)
{
    return a->params.total == b->params.total && a->params.bytes == b->params.bytes &&
           a->gradients == b->gradients && a->opt.device_bytes == b->opt.device_bytes &&
           a->activations == b->activations && a->train_peak.bytes == b->train_peak.bytes &&
           a->infer_peak.bytes == b->infer_peak.bytes && a->flops.fwd_macs == b->flops.fwd_macs &&
           a->flops.bwd_macs == b->flops.bwd_macs && a->has_dist == b->has_dist &&
           (!a->has_dist || (a->dist.total == b->dist.total && a->dist.host == b->dist.host &&
                             a->dist.buckets == b->dist.buckets &&
                             a->dist.gathered == b->dist.gathered));
}

const char fuzz_tiny_llama[] =
    "{\"model_type\": \"llama\", \"hidden_size\": 64, \"intermediate_size\": 128,\n"
    " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,\n"
    " \"vocab_size\": 128, \"max_position_embeddings\": 64, \"hidden_act\": \"silu\",\n"
    " \"rms_norm_eps\": 1e-05, \"tie_word_embeddings\": false}\n";

/* Every object's keys in reverse order, recursively (arrays keep theirs). */
static void reverse_keys(cJSON *j)
{
    for (cJSON *c = j->child; c; c = c->next)
        reverse_keys(c);
    if (!cJSON_IsObject(j))
        return;
    int n = cJSON_GetArraySize(j);
    if (n < 2)
        return;
    cJSON **items = malloc(sizeof *items * (size_t)n);
    if (!items)
        return;
    int i = 0;
    for (cJSON *c = j->child; c; c = c->next)
        items[i++] = c;
    for (i = 0; i < n; i++)
        cJSON_DetachItemViaPointer(j, items[i]);
    for (i = n - 1; i >= 0; i--)
        cJSON_AddItemToArray(j, items[i]);   /* keeps the item's key */
    free(items);
}

char *fuzz_json_reversed(const void *data, size_t size)
{
    cJSON *doc = cJSON_ParseWithLengthOpts(data, size, NULL, 0);
    if (!doc)
        return NULL;
    reverse_keys(doc);
    char *text = cJSON_Print(doc);
    cJSON_Delete(doc);
    return text;
}

struct memest_app *fuzz_tiny_app(void)
{
    static struct fuzz_file model;
    static char path[64];
    static struct memest_cli o;
    static struct memest_app a;
    static bool open;
    if (open)
        return &a;
    fuzz_init();
    snprintf(path, sizeof path, "%s",
             fuzz_file_set(&model, "llama-tiny.json", fuzz_tiny_llama, strlen(fuzz_tiny_llama)));
    char *argv[] = {"memest", path, "--seq", "32", NULL};
    struct memest_error err = {0};
    if (memest_cli_parse(4, argv, &o, &err) != 0 || memest_app_open(&a, &o, &err) != 0)
        fuzz_bug("the small Llama does not open: %s", err.msg);
    open = true;
    return &a;
}

int fuzz_app_dist(struct memest_app *a, const struct memest_cli *o, struct memest_error *err)
{
    a->o = o;
    a->batch = o->batch;
    a->step = o->step;
    if (memest_step_cfg_resolve_loss(&a->step, a->g.loss, err) != 0)
        return memest_error_exit(err);
    a->dtype = o->dtype;
    if (!o->dtype_set && o->step.amp == MEMEST_AMP_NONE && a->m.has_dtype)
        a->dtype = a->m.dtype;
    memset(&a->dist, 0, sizeof a->dist);
    memset(&a->ds, 0, sizeof a->ds);
    memset(&a->fsdp, 0, sizeof a->fsdp);
    memset(&a->view, 0, sizeof a->view);
    a->work = a->top_cost = 0;
    a->estimates = 0;
    a->over_budget = false;
    return memest_app_dist(a, err) != 0 ? memest_error_exit(err) : MEMEST_EXIT_OK;
}

bool fuzz_app_estimate(struct memest_app *a, int64_t batch, const char *dist,
                       struct memest_estimate *e, struct memest_error *err)
{
    if (memest_app_estimate_model(a, batch, &a->step, a->dtype, e, NULL, NULL, err) != 0)
        return false;
    if (err->code != MEMEST_ERR_NONE)
        fuzz_bug("an estimate succeeded with an error set: %s", err->msg);
    if (dist && !e->has_dist)
        fuzz_bug("an estimate under %s without the rank's view", dist);
    fuzz_check_estimate(e, a->est.g->nnodes);
    struct memest_report rep = {.opts = memest_app_report_opts(a), .step = &a->step,
                                .g = a->est.g, .r = a->est.r, .e = e, .figs = a->est.figs,
                                .nfigs = a->nstages, .binding = a->est.binding};
    fuzz_check_report_json(&rep);
    return true;
}

/* The target's reading of the file at path into r, twice (the second into
 * r2): the same both times (determinism), refused only as the file's fault
 * (exit 3, naming it), taken without an error set, then by the target's
 * own checks. Returns the reader's return code, its error in err. */
static int read_twice(const struct fuzz_dist_target *t, const char *path,
                      struct fuzz_reading *r, struct fuzz_reading *r2, struct memest_error *err)
{
    struct memest_error err2 = {0};
    int rc = t->read(path, r, err);
    int rc2 = t->read(path, r2, &err2);
    if (rc != rc2 || strcmp(err->msg, err2.msg) != 0 || (rc == 0 && !t->same(r, r2, true)))
        fuzz_bug("reading the same file twice gives other results");
    if (rc != 0) {
        fuzz_check_error(err, "the reader", path, FUZZ_EXIT(MEMEST_EXIT_MODEL));
        return rc;
    }
    if (err->code != MEMEST_ERR_NONE)
        fuzz_bug("the reader succeeded with an error set: %s", err->msg);
    t->check_read(r);
    return rc;
}

/* The input (JSON) with its keys in reverse order, read into r3: where the
 * reader took the input (rc 0, r), it reads the same (only this way round:
 * a file cJSON reads but memest refuses, say a number past the double
 * range, may print as one memest takes). */
static void read_reversed(const struct fuzz_dist_target *t, const uint8_t *data, size_t size,
                          int rc, const struct fuzz_reading *r, struct fuzz_reading *r3)
{
    static struct fuzz_file rev;
    if (t->json && !t->json(data, size))
        return;
    char *text = fuzz_json_reversed(data, size);
    if (!text)
        return;
    char path[64];
    snprintf(path, sizeof path, "%s", fuzz_file_set(&rev, t->reversed, text, strlen(text)));
    struct memest_error err = {0};
    int rc3 = t->read(path, r3, &err);
    if (rc == 0 && (rc3 != 0 || !t->same(r3, r, false)))
        fuzz_bug("the file with its keys in reverse order reads otherwise (%s): %s",
                 rc3 ? err.msg : "other settings", text);
    free(text);
}

/* The tool on the file at path (the small Llama, --seq 32, the target's
 * options around option FILE; over: with those that win over the file),
 * where the reader gave rc, rerr and the reading r. */
static void run_tool(const struct fuzz_dist_target *t, const char *path, bool over, int rc,
                     const struct memest_error *rerr, const struct fuzz_reading *r)
{
    /* the model path: fuzz_tiny_app's, opened once; the name is not read
     * again */
    char *argv[6 + FUZZ_MAX_ARGS + 1] = {"memest", "llama-tiny.json", "--seq", "32"};
    int argc = 4;
    for (char *const *p = t->args; *p && argc < 4 + FUZZ_MAX_ARGS; p++)
        argv[argc++] = *p;
    argv[argc++] = t->option;
    argv[argc++] = (char *)path;
    for (char *const *p = t->over; over && *p && argc < 6 + FUZZ_MAX_ARGS; p++)
        argv[argc++] = *p;
    argv[argc] = NULL;
    struct memest_cli o;
    struct memest_error err = {0};
    if (memest_cli_parse(argc, argv, &o, &err) != 0)
        fuzz_bug("the target's options do not parse: %s", err.msg);
    struct memest_app *app = fuzz_tiny_app();
    int arc = fuzz_app_dist(app, &o, &err);
    if (rc != 0) {
        /* the reader's error, as it is */
        if (arc == MEMEST_EXIT_OK || strcmp(err.msg, rerr->msg) != 0 ||
            strcmp(err.file, rerr->file) != 0)
            fuzz_bug("the tool %s on a file the reader refuses (%s): %s",
                     arc == MEMEST_EXIT_OK ? "succeeds" : "fails otherwise", rerr->msg, err.msg);
        return;
    }
    if (arc != MEMEST_EXIT_OK) {
        t->check_refused(r, path, over, &err);
        return;
    }
    const struct memest_dist_cfg *ad = &app->dist, *d = &r->d;
    if (memest_dist_check(ad, &err) != 0)
        fuzz_bug("the tool's layout fails its own check: %s", err.msg);
    if (!over && (ad->strategy != d->strategy || ad->offload != d->offload))
        fuzz_bug("the tool runs %s, offload %s; the file says %s, offload %s",
                 memest_strategy_name(ad->strategy), memest_offload_name(ad->offload),
                 memest_strategy_name(d->strategy), memest_offload_name(d->offload));
    t->check_tool(r, app, over);
    /* the single-estimate flow as memest_main runs it, after memest_app_open;
     * a batch past memest's limits (a micro-batch) is the file's */
    struct memest_estimate e;
    struct memest_error eerr = {0};
    if (!fuzz_app_estimate(app, t->batch ? t->batch(app, &o) : o.batch, t->option, &e, &eerr))
        fuzz_check_error(&eerr, "the estimate", NULL, FUZZ_EXIT(MEMEST_EXIT_MODEL));
}

int fuzz_dist_input(const struct fuzz_dist_target *t, const uint8_t *data, size_t size)
{
    static struct fuzz_file cfg;
    fuzz_init();
    unsetenv("MEMEST_ARCH_PATH");
    fuzz_tiny_app();
    char path[64];
    snprintf(path, sizeof path, "%s", fuzz_file_set(&cfg, t->file, data, size));
    struct fuzz_reading r, r2;   /* r2: the other readings' */
    struct memest_error rerr = {0};
    int rc = read_twice(t, path, &r, &r2, &rerr);
    read_reversed(t, data, size, rc, &r, &r2);
    /* the file as the tool reads it, then with options that win over it;
     * the reader's error: the options change nothing of it */
    run_tool(t, path, false, rc, &rerr, &r);
    if (rc == 0)
        run_tool(t, path, true, rc, &rerr, &r);
    return 0;
}
