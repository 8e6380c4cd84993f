/* fuzz_model.c - libFuzzer target over the whole input path: read the bytes
 * as a model file, build the graph, infer shapes at several batch sizes, run
 * every calculator and write both reports (to /dev/null).
 *
 * Besides crashes, leaks and undefined behaviour (ASan + UBSan), it aborts
 * when a result breaks an invariant, i.e. when memest would print a wrong
 * number or a bad message:
 *   - a failure carries an error code, a one-line message without control
 *     characters, the file name, and maps to exit code 3 (never 7 "internal"
 *     or 5, never a message with "internal:"; exit 2 only for a step option that
 *     does not apply to the model), and the --json error is valid JSON;
 *   - a success has every byte count and total at most 2^63 - 1, finite
 *     non-negative FLOPs, per-category live bytes summing to the peak, a
 *     training peak holding at least the parameters and buffers, and a
 *     --json report that is valid JSON;
 *   - redoing batch 1 on the same run after other batch sizes gives the same
 *     figures (a run is reused across batch sizes by --sweep);
 *   - the same model written another way gives the same figures: flat, with
 *     every node unnamed (referenced by index) or renamed, with its
 *     unreferenced names stripped, with its repeats unrolled, each node in
 *     a block of its own, chains rolled into repeats, the nodes in another
 *     valid order (tests/support/metamorphic.h: which figures must match
 *     for each). A rewrite that runs into a limit (it may cost the builder
 *     more) is not compared; graphs of more than METAMORPHIC_MAX_NODES
 *     nodes are not rewritten;
 *   - the simulations make no more events than the cost model's bound
 *     (cost.h), and no estimate costs more than the graph's limit.
 *
 * Built with -fsanitize=fuzzer when MEMEST_FUZZ=ON (clang), otherwise with
 * standalone_runner.c, which feeds it files: that is the ctest "fuzz.model".
 * The builder's node limit is lowered (FUZZ_MAX_NODES), and with it the cost
 * limit of an estimate (memest_cost_limit), so that no input takes more than
 * a fraction of a second; the limit logic is the same. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memest/app.h"
#include "memest/calc.h"
#include "memest/checked.h"
#include "memest/cli.h"
#include "memest/cost.h"
#include "memest/model.h"
#include "memest/report.h"
#include "memest/run.h"
#include "metamorphic.h"

#define FUZZ_MAX_NODES 5000u
#define LABEL "fuzz.json"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

__attribute__((noreturn, format(printf, 1, 2)))
static void bug(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz_model: invariant broken: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

/* Runs a report writer into memory and checks that the text is one valid
 * JSON document (so no NaN, no broken escape, no half UTF-8 sequence). */
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
        bug("%s is not valid JSON near offset %td: %.300s", what, end ? end - text : -1, text);
    cJSON_Delete(doc);
    free(text);
}

static void write_error_json(FILE *f, const void *err) { memest_report_error_json(f, err); }
static void write_report_json(FILE *f, const void *rep) { memest_report_json(f, rep); }

static void check_error(const struct memest_error *err, const char *stage)
{
    if (err->code == MEMEST_ERR_NONE || err->code >= MEMEST_ERR_COUNT)
        bug("%s failed with error code %d", stage, (int)err->code);
    char msg[1200];
    memest_error_format(err, msg, sizeof msg);
    if (!err->msg[0])
        bug("%s failed with an empty message: %s", stage, msg);
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
        if (*p < 0x20 || *p == 0x7F)
            bug("%s: control character 0x%02X in the message: %s", stage, *p, msg);
    if (strncmp(msg, LABEL ":", strlen(LABEL ":")) != 0)
        bug("%s: the message does not start with the file name: %s", stage, msg);
    /* "internal: ..." marks a memest bug; user text comes quoted, later */
    const char *internal = strstr(err->msg, "internal:"), *quote = strchr(err->msg, '"');
    if (internal && (!quote || internal < quote))
        bug("%s: internal error: %s", stage, msg);
    /* a step option that does not apply to the model (--checkpoint without
     * blocks) is a usage error, exit 2; anything else about the file, 3 */
    bool usage_ok = strcmp(stage, "estimate") == 0 && err->code == MEMEST_ERR_USAGE;
    if (memest_error_exit(err) != MEMEST_EXIT_MODEL && !usage_ok)
        bug("%s: exit code %d instead of 3: %s", stage, memest_error_exit(err), msg);
    check_json_output(write_error_json, err, "the --json error");
}

static void check_size(uint64_t v, const char *what)
{
    if (v > MEMEST_SIZE_MAX)
        bug("%s = %" PRIu64 " exceeds 2^63 - 1 without an error", what, v);
}

static void check_flops(double v, const char *what)
{
    if (!isfinite(v) || v < 0)
        bug("%s = %g is not a finite non-negative number", what, v);
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
        bug("%s: the categories sum to %" PRIu64 ", the peak is %" PRIu64, what, sum, p->bytes);
    if (p->node != UINT32_MAX && p->node >= nnodes)
        bug("%s: peak at node %u of %u", what, p->node, nnodes);
}

static void check_estimate(const struct memest_estimate *e, uint32_t nnodes)
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
    if (e->train_peak.sim_events > e->cost.train_events ||
        e->train_peak.sim_events + e->infer_peak.sim_events > e->cost.events)
        bug("the simulations made %" PRIu64 " + %" PRIu64 " events, above the cost model's "
            "bound %" PRIu64 " (training %" PRIu64 ")", e->train_peak.sim_events,
            e->infer_peak.sim_events, e->cost.events, e->cost.train_events);
    if (e->cost.total > memest_cost_limit(FUZZ_MAX_NODES))
        bug("an estimate cost %" PRIu64 " units, above the limit %" PRIu64, e->cost.total,
            memest_cost_limit(FUZZ_MAX_NODES));
    if (e->params.frozen > e->params.total)
        bug("frozen parameters %" PRIu64 " > total %" PRIu64, e->params.frozen, e->params.total);
    uint64_t resident;
    if (!memest_add(e->params.bytes, e->params.buffer_bytes, &resident) ||
        e->train_peak.bytes < resident)
        bug("training peak %" PRIu64 " below parameters + buffers (%" PRIu64 " + %" PRIu64 ")",
            e->train_peak.bytes, e->params.bytes, e->params.buffer_bytes);
}

static bool same_estimate(const struct memest_estimate *a, const struct memest_estimate *b)
{
    return a->params.total == b->params.total && a->params.bytes == b->params.bytes &&
           a->gradients == b->gradients && a->opt.device_bytes == b->opt.device_bytes &&
           a->activations == b->activations && a->train_peak.bytes == b->train_peak.bytes &&
           a->infer_peak.bytes == b->infer_peak.bytes && a->flops.fwd_macs == b->flops.fwd_macs &&
           a->flops.bwd_macs == b->flops.bwd_macs;
}

static FILE *devnull(void)
{
    static FILE *f;
    if (!f)
        f = fopen("/dev/null", "w");
    return f;
}

/* One batch size: inference, every calculator, both reports. Returns true
 * when the estimate succeeded. */
static bool run_batch(struct memest_run *r, const struct memest_graph *g, int64_t batch,
                      enum memest_dtype dt, const struct memest_step_cfg *cfg,
                      struct memest_estimate *e)
{
    struct memest_error err = {0};
    struct memest_run_opts ro = {.batch = batch, .dtype = dt};
    struct memest_step_cfg step = *cfg;   /* with the model's loss, as memest_app_open */
    if (memest_step_cfg_resolve_loss(&step, g->loss, &err) != 0) {
        check_error(&err, "the model's loss");
        return false;
    }
    if (memest_run_infer(r, g, &ro, &err) != 0) {
        check_error(&err, "shape inference");
        return false;
    }
    if (memest_estimate(r, &step, e, NULL, NULL, &err) != 0) {
        check_error(&err, "estimate");
        return false;
    }
    if (err.code != MEMEST_ERR_NONE)
        bug("estimate succeeded with an error set: %s", err.msg);
    check_estimate(e, g->nnodes);
    FILE *f = devnull();
    if (f) {
        char arg_batch[32];
        snprintf(arg_batch, sizeof arg_batch, "--batch=%" PRId64, batch);
        char *argv[] = {"memest", arg_batch, "--layers", LABEL, NULL};
        struct memest_cli o;
        struct memest_error cerr = {0};
        if (memest_cli_parse(4, argv, &o, &cerr) != 0)
            bug("the options for the reports do not parse: %s", cerr.msg);
        o.step = step;
        o.dtype = dt;
        struct memest_app app = {.o = &o, .dtype = dt};
        struct memest_report rep = {.opts = memest_app_report_opts(&app), .step = &step, .g = g, .r = r, .e = e};
        memest_report_text(f, &rep);
        check_json_output(write_report_json, &rep, "the --json report");
    }
    return true;
}

/* The figures of a document at batch 2 with the default step. */
static void figures(const cJSON *doc, struct mm_figures *f)
{
    struct memest_step_cfg cfg;
    memest_step_cfg_default(&cfg);
    mm_figures_of(doc, LABEL, FUZZ_MAX_NODES, 2, MEMEST_F32, &cfg, f);
}

/* Compares rewrite v with the figures `from` of the document it was made
 * from; a rewrite that runs into a limit is not compared. */
static void same_figures(const char *variant, const struct mm_figures *from, const cJSON *v,
                         enum mm_compare how)
{
    if (!v)
        return; /* does not apply (or out of memory) */
    struct mm_figures b;
    figures(v, &b);
    if (from->code == MEMEST_ERR_LIMIT || b.code == MEMEST_ERR_LIMIT)
        return;
    char why[300];
    if (!mm_same(from, &b, how, why, sizeof why))
        bug("metamorphic: %s: %s", variant, why);
}

/* Graphs larger than this skip the metamorphic invariants (about ten more
 * estimates each), so that every input stays well under a second. */
#define METAMORPHIC_MAX_NODES 600u

/* The metamorphic invariants of a model that builds (g from m). */
static void metamorphic(const struct memest_model *m, const struct memest_graph *g)
{
    if (g->nnodes > METAMORPHIC_MAX_NODES)
        return;
    struct mm_figures orig, fl;
    figures(m->root, &orig);
    cJSON *v = mm_strip_names(m->root);
    same_figures("unreferenced names stripped", &orig, v, MM_ALL);
    cJSON_Delete(v);
    v = mm_unroll_repeats(m->root);
    same_figures("repeats unrolled", &orig, v, MM_ALL);
    cJSON_Delete(v);
    /* full names longer than a name may be (nested blocks) cannot be
     * written flat */
    for (uint32_t n = 0; n < g->nnodes; n++)
        if (strlen(g->nodes[n].name) > 100)
            return;
    cJSON *flat = mm_flat(g);
    if (!flat)
        return;
    same_figures("flat", &orig, flat, MM_ORDER_FREE);
    figures(flat, &fl);
    v = mm_index_names(flat);
    same_figures("flat, unnamed, referenced by index", &fl, v, MM_ALL);
    cJSON_Delete(v);
    v = mm_rename(flat, (uint32_t)g->nnodes);
    same_figures("flat, renamed", &fl, v, MM_ALL);
    cJSON_Delete(v);
    v = mm_wrap_blocks(flat);
    same_figures("flat, a block per node", &fl, v, MM_ALL);
    cJSON_Delete(v);
    v = mm_roll_repeats(flat);
    same_figures("flat, runs rolled into repeat", &fl, v, MM_ALL);
    cJSON_Delete(v);
    struct memest_run r = {0};
    struct memest_error err = {0};
    struct memest_run_opts ro = {.batch = 2, .dtype = MEMEST_F32};
    if (memest_run_infer(&r, g, &ro, &err) == 0) {
        v = mm_reorder(flat, g, &r, (uint32_t)g->nnodes * 7 + 1);
        same_figures("flat, reordered", &fl, v, MM_ORDER_FREE);
        cJSON_Delete(v);
    }
    memest_run_free(&r);
    cJSON_Delete(flat);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct memest_model m;
    struct memest_error err = {0};
    if (memest_model_read_string((const char *)data, size, LABEL, &m, &err) != 0) {
        check_error(&err, "read");
        return 0;
    }
    m.max_nodes = FUZZ_MAX_NODES;
    struct memest_graph g;
    if (memest_model_build(&m, NULL, 0, &g, &err) != 0) {
        check_error(&err, "build");
        memest_model_free(&m);
        return 0;
    }
    if (g.nnodes == 0 || g.noutputs == 0)
        bug("built a graph with %u nodes and %u outputs", g.nnodes, g.noutputs);

    /* the default step, and two others that take the simulator's other paths */
    struct memest_step_cfg adam, sgd, rms;
    memest_step_cfg_default(&adam);
    memest_step_cfg_default(&sgd);
    sgd.optim.kind = MEMEST_OPT_SGD;
    sgd.optim.momentum = 0.9;
    sgd.impl = MEMEST_IMPL_FORLOOP;
    sgd.first_step = true;
    sgd.grad_accum = 4;
    sgd.amp = MEMEST_AMP_FP16;
    sgd.checkpoint = true;
    memest_step_cfg_default(&rms);
    rms.optim.kind = MEMEST_OPT_RMSPROP;
    rms.optim.centered = true;
    rms.impl = MEMEST_IMPL_FUSED;
    rms.zero_grad_zeros = true;
    rms.amp = MEMEST_AMP_BF16;

    struct memest_run r = {0};
    struct memest_estimate first, e;
    bool ok1 = run_batch(&r, &g, 1, MEMEST_F32, &adam, &first);
    run_batch(&r, &g, 3, MEMEST_F16, &sgd, &e);
    run_batch(&r, &g, (int64_t)1 << 40, MEMEST_F32, &rms, &e);
    bool ok2 = run_batch(&r, &g, 1, MEMEST_F32, &adam, &e);
    if (ok1 != ok2 || (ok1 && !same_estimate(&first, &e)))
        bug("batch 1 gives a different result after other batch sizes on the same run");

    metamorphic(&m, &g);
    memest_run_free(&r);
    memest_graph_free(&g);

    /* --set on the first variable, as --set and --sweep-var do: a rebuild
     * from the same document succeeds or fails cleanly (a kind mismatch is
     * a usage error) */
    const cJSON *vars = cJSON_GetObjectItemCaseSensitive(m.root, "variables");
    if (cJSON_IsObject(vars) && vars->child) {
        struct memest_override ov = {.name = vars->child->string, .value = "3"};
        struct memest_error oerr = {0};
        if (memest_model_build(&m, &ov, 1, &g, &oerr) == 0) {
            struct memest_run r2 = {0};
            run_batch(&r2, &g, 2, MEMEST_F32, &adam, &e);
            memest_run_free(&r2);
            memest_graph_free(&g);
        } else if (oerr.code != MEMEST_ERR_USAGE) {
            check_error(&oerr, "build with --set");
        }
    }
    memest_model_free(&m);
    return 0;
}
