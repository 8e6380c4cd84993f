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
 *     reserved peak at least the allocated one, a training peak holding at
 *     least the parameters and buffers, and a --json report that is valid
 *     JSON (the checks of fuzz_common.h, which every target applies);
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
 * The builder's node limit is lowered (FUZZ_MAX_NODES, fuzz_common.h), and
 * with it the cost limit of an estimate (memest_cost_limit), so that no
 * input takes more than a fraction of a second; the limit logic is the
 * same. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memest/app.h"
#include "memest/calc.h"
#include "memest/cli.h"
#include "memest/model.h"
#include "memest/report.h"
#include "memest/run.h"
#include "metamorphic.h"

#include "fuzz_common.h"

#define LABEL "fuzz.json"

/* An error as fuzz_check_error wants it, of the model file (whose text a
 * message quotes) and named first in the message; the exit code 3, or 2 for
 * a step option that does not apply to the model (--checkpoint without
 * blocks: a usage error at the estimate stage). */
static void check_error(const struct memest_error *err, const char *stage)
{
    unsigned exits = FUZZ_EXIT(MEMEST_EXIT_MODEL) | FUZZ_QUOTED;
    if (strcmp(stage, "estimate") == 0)
        exits |= FUZZ_EXIT(MEMEST_EXIT_USAGE);
    fuzz_check_error(err, stage, LABEL, exits);
    char msg[1200];
    memest_error_format(err, msg, sizeof msg);
    if (strncmp(msg, LABEL ":", strlen(LABEL ":")) != 0)
        fuzz_bug("%s: the message does not start with the file name: %s", stage, msg);
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
        fuzz_bug("estimate succeeded with an error set: %s", err.msg);
    fuzz_check_estimate(e, g->nnodes);
    FILE *f = devnull();
    if (f) {
        char arg_batch[32];
        snprintf(arg_batch, sizeof arg_batch, "--batch=%" PRId64, batch);
        char *argv[] = {"memest", arg_batch, "--layers", LABEL, NULL};
        struct memest_cli o;
        struct memest_error cerr = {0};
        if (memest_cli_parse(4, argv, &o, &cerr) != 0)
            fuzz_bug("the options for the reports do not parse: %s", cerr.msg);
        o.step = step;
        o.dtype = dt;
        struct memest_app app = {.o = &o, .dtype = dt};
        struct memest_report rep = {.opts = memest_app_report_opts(&app), .step = &step, .g = g, .r = r, .e = e};
        memest_summary_text(f, &rep);
        fuzz_check_report_json(&rep);
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
        fuzz_bug("metamorphic: %s: %s", variant, why);
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
        fuzz_bug("built a graph with %u nodes and %u outputs", g.nnodes, g.noutputs);

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
    if (ok1 != ok2 || (ok1 && !fuzz_same_estimate(&first, &e)))
        fuzz_bug("batch 1 gives a different result after other batch sizes on the same run");

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
