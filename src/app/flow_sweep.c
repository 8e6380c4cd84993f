/* flow_sweep.c - --sweep LIST (batch sizes), --sweep-var NAME=LIST (a model
 * variable) and --max-batch: their figures, handed to the report layer
 * (report.h) in the format asked for. A batch sweep reuses the graph built
 * once and re-runs only shape inference and the calculators per batch; a
 * variable sweep rebuilds the graph per value from the document parsed
 * once. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memest/app.h"
#include "memest/checked.h"
#include "memest/format.h"
#include "memest/plot.h"
#include "memest/progress.h"
#include "memest/report.h"
#include "memest/suggest.h"
#include "memest/sweep.h"

/* A row's figures from its estimate e on run r. 0, or -1 with err set. */
static int row_figures(const struct memest_app *a, const struct memest_run *r,
                       const struct memest_estimate *e, struct memest_sweep_row *row,
                       struct memest_error *err)
{
    const struct memest_cli *o = a->o;
    int64_t k = o->inference ? 1 : a->step.grad_accum;
    row->peak = o->inference ? e->infer_peak.bytes : e->train_peak.bytes;
    row->reserved = o->inference ? e->infer_reserved_peak : e->reserved_peak;
    row->total_device = o->inference ? e->infer_total_device : e->total_device;
    const struct memest_pressure *pr = o->inference ? &e->infer_pressure : &e->pressure;
    row->least = pr->searched ? memest_fit_needs(e, o->inference) : 0;
    row->least_exact = pr->least_exact;
    /* the exact tensor bytes at the peak grow steadily with the batch; the
     * allocated peak (rounded blocks, unsplit remainders) may dip by the
     * caching allocator's rounding */
    row->lower = memest_sat_add(o->inference ? e->infer_peak.tensor_bytes
                                             : e->train_peak.tensor_bytes, e->overhead);
    /* one optimizer step per k micro-batches (calc.h: memest_flops) */
    row->step_flops = o->inference ? e->flops.fwd_flops
                                   : e->flops.step_flops * (double)k + e->flops.optim_flops;
    if (a->has_card) {
        struct memest_fit f;
        memest_fit_judge(e, o->inference, a->card.memory, o->headroom, &f);
        row->fits = f.fits;
        row->may_fit = row->lower <= f.usable;
    }
    struct memest_time_opts t;
    int rc = memest_app_time_opts(a, &a->step, a->dtype, &t, NULL, NULL)
                 ? memest_roofline(r, e, &t, &row->time, NULL) : -1;
    if (rc == -2)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    row->has_time = rc == 0;
    return 0;
}

/* A row before its estimate. */
static void row_init(const struct memest_app *a, int64_t batch, struct memest_sweep_row *row)
{
    memset(row, 0, sizeof *row);
    row->value = batch;
    row->batch = batch;
    row->has_fit = a->has_card;
}

/* A row whose estimate was refused at a limit (e1): marked `limit`, it
 * does not fit. */
static void row_limit(const struct memest_error *e1, struct memest_sweep_row *row)
{
    row->limit = true;
    memest_error_format(e1, row->limit_msg, sizeof row->limit_msg);
}

int memest_app_row(struct memest_app *a, int64_t batch, struct memest_sweep_row *row,
                    struct memest_error *err)
{
    struct memest_error e1 = {0};
    struct memest_estimate e;
    row_init(a, batch, row);
    /* a row reads the simulation of its mode only */
    a->est.sims = a->o->inference ? MEMEST_SIM_INFER : MEMEST_SIM_TRAIN;
    int erc = memest_app_estimate_model(a, batch, &a->step, a->dtype, &e, NULL, NULL, &e1);
    a->est.sims = 0;
    if (erc != 0) {
        if (e1.code != MEMEST_ERR_LIMIT) {
            *err = e1;
            return -1;
        }
        row_limit(&e1, row);
        return 0;
    }
    return row_figures(a, a->est.r, &e, row, err);
}

/* ---- a batch sweep's rows, computed by several threads ---- */

/* The rows of a batch sweep are independent estimates of one graph: each
 * thread runs shape inference and the simulation on a run of its own
 * (memest_app_prepare, memest_estimate_sims), and the command's accounting
 * (the work charged, the estimates counted, the first error) is then done
 * row by row in order, as one thread would have done it: the output is the
 * same whatever the number of threads. */

enum { ROW_DONE, ROW_REFUSED, ROW_FAILED };   /* the estimate ran; was refused by
                                                 shape inference or its cost;
                                                 failed in the simulation */

struct par_row {
    uint64_t cost;   /* the work it is charged */
    uint8_t state;   /* ROW_* */
    bool error;      /* an error that ends the sweep (not a limit) */
};

struct par_sweep {
    const struct memest_app *a;
    const int64_t *batches;
    struct memest_sweep_row *rows;
    struct par_row *pr;
    size_t n;
    atomic_size_t next;       /* the next row to compute */
    atomic_size_t stop;       /* the first row whose error ends the sweep (n: none):
                                 no row after it is needed */
    pthread_mutex_t lock;     /* err and stop's decrease */
    struct memest_error err;  /* row stop's error */
    atomic_size_t done;       /* rows computed, for the progress line */
    struct memest_progress *pg;
};

static void par_fail(struct par_sweep *p, size_t i, const struct memest_error *e)
{
    pthread_mutex_lock(&p->lock);
    if (i < atomic_load(&p->stop)) {
        p->err = *e;
        atomic_store(&p->stop, i);
    }
    pthread_mutex_unlock(&p->lock);
}

static void *par_work(void *arg)
{
    struct par_sweep *p = arg;
    const struct memest_app *a = p->a;
    unsigned sims = a->o->inference ? MEMEST_SIM_INFER : MEMEST_SIM_TRAIN;
    struct memest_run r = {0};
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n || i > atomic_load(&p->stop))
            break;
        struct memest_sweep_row *row = &p->rows[i];
        struct par_row *pr = &p->pr[i];
        struct memest_error e1 = {0};
        struct memest_cost c;
        struct memest_estimate e;
        row_init(a, p->batches[i], row);
        int rc = memest_app_prepare(a, &a->g, &r, p->batches[i], &a->step, a->dtype, &c, &e1);
        pr->cost = c.total;
        pr->state = rc != 0 ? ROW_REFUSED
                    : memest_estimate_sims(&r, &a->step, sims, &e, NULL, NULL, &e1) != 0
                        ? ROW_FAILED
                        : ROW_DONE;
        if (pr->state != ROW_DONE) {
            memest_app_overrides_note(a, &e1);
            if (e1.code == MEMEST_ERR_LIMIT)
                row_limit(&e1, row);
            else
                pr->error = true;
        } else if (row_figures(a, &r, &e, row, &e1) != 0) {
            pr->error = true;
        }
        if (pr->error)
            par_fail(p, i, &e1);
        memest_progress_update(p->pg, atomic_fetch_add(&p->done, 1) + 1, NULL);
    }
    memest_run_free(&r);
    return NULL;
}

/* The threads a batch sweep of n rows uses: MEMEST_THREADS when set (1 to
 * 256), else the processors online, at most 16 and at most n. 0 with err
 * set when MEMEST_THREADS is not such a number. */
static unsigned sweep_threads(size_t n, struct memest_error *err)
{
    const char *env = getenv("MEMEST_THREADS");
    uint64_t t;
    if (env && *env) {
        if (memest_parse_u64(env, 1, 256, &t) != 0) {
            memest_errf(err, MEMEST_ERR_USAGE, NULL,
                        "MEMEST_THREADS: expected a number of threads from 1 to 256, got '%s'",
                        env);
            return 0;
        }
    } else {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        t = cpus < 1 ? 1 : cpus > 16 ? 16 : (uint64_t)cpus;
    }
    return (unsigned)(t < n ? t : n ? n : 1);
}

/* The rows of a batch sweep by `threads` threads (this one among them; a
 * thread that cannot be started leaves its share to the others), then
 * charged in order. 0, or -1 with err set. */
static int par_rows(struct memest_app *a, const struct memest_sweep_list *list,
                    struct memest_sweep_row *rows, unsigned threads, struct memest_progress *pg,
                    struct memest_error *err)
{
    struct par_sweep p = {.a = a, .batches = list->v, .rows = rows, .n = list->n, .pg = pg};
    pthread_t tid[256];
    unsigned started = 0;
    p.pr = calloc(list->n, sizeof *p.pr);
    if (!p.pr)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    atomic_init(&p.next, 0);
    atomic_init(&p.stop, list->n);
    atomic_init(&p.done, 0);
    pthread_mutex_init(&p.lock, NULL);
    while (started + 1 < threads && pthread_create(&tid[started], NULL, par_work, &p) == 0)
        started++;
    par_work(&p);
    for (unsigned k = 0; k < started; k++)
        pthread_join(tid[k], NULL);
    pthread_mutex_destroy(&p.lock);
    int rc = 0;
    for (size_t i = 0; i < list->n && rc == 0; i++) {
        const struct par_row *pr = &p.pr[i];
        if (memest_app_charge(a, 0, err) != 0) {   /* the budget may be spent already */
            rc = -1;
            break;
        }
        if (pr->state == ROW_REFUSED) {
            a->work += pr->cost;
        } else {
            a->estimates++;
            if (pr->cost > a->top_cost)
                a->top_cost = pr->cost;
            if (memest_app_charge(a, pr->cost, err) != 0) {
                rc = -1;
                break;
            }
        }
        if (pr->error) {   /* the first: row stop */
            *err = p.err;
            rc = -1;
        }
    }
    free(p.pr);
    return rc;
}

static void report_init(const struct memest_app *a, struct memest_sweep_report *s)
{
    const struct memest_cli *o = a->o;
    memset(s, 0, sizeof *s);
    s->model = a->g.name;
    s->file = a->g.file;
    s->batch = a->batch;
    s->optimizer = memest_optim_name(a->step.optim.kind);
    s->dtype = memest_dtype_name(a->dtype);
    s->inference = o->inference;
    s->card = a->has_card ? &a->card : NULL;
    s->headroom_pct = o->headroom;
    s->mfu = o->mfu;
    struct memest_time_opts t;
    enum memest_precision p;
    if (memest_app_time_opts(a, &a->step, a->dtype, &t, &p, &s->peak_fallback)) {
        s->precision = memest_precision_name(s->peak_fallback ? MEMEST_PREC_FP32 : p);
        s->peak_flops = t.peak_flops;
    }
}

/* The model's variable names, for --sweep-var's check and suggestion. */
static int check_variable(const struct memest_app *a, const char *name, struct memest_error *err)
{
    const char *near;
    if (memest_model_has_variable(&a->m, name, &near))
        return 0;
    char dym[sizeof err->msg];
    return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                       "--sweep-var: the model has no variable \"%s\"%s", name,
                       memest_suggest_clause(near, dym, sizeof dym));
}

/* Rebuilds a->g with the --set overrides and NAME=VALUE (which replaces a
 * --set of the same variable), and the variables the several-GPU options
 * own (--tp, --sequence-parallel, --ep; --cp's share of seq_len), as the
 * graph the command opened with; with --pp, cut into its stages again. */
static int rebuild(struct memest_app *a, const char *name, int64_t value,
                   struct memest_error *err)
{
    const struct memest_cli *o = a->o;
    struct memest_override ov[MEMEST_MAX_SETS + 1 + MEMEST_DIST_VARS + MEMEST_STACK_VARS];
    struct memest_dist_vars dv;
    struct memest_stack_vars sv;
    char text[32];
    int n = 0;
    for (int i = 0; i < o->nsets; i++)
        if (strcmp(o->sets[i].name, name) != 0)
            ov[n++] = o->sets[i];
    snprintf(text, sizeof text, "%" PRId64, value);
    ov[n++] = (struct memest_override){name, text, "--sweep-var"};
    if ((n = memest_cli_dist_sets(o, ov, n, &dv, err)) < 0)
        return -1;
    n = memest_cli_stack_sets(o, &a->m, &a->step, ov, n, &sv);
    memest_run_free(&a->est.run); /* its node array is sized for the old graph */
    memest_app_stages_free(a);   /* the old stages (the whole graph back in g) */
    memest_graph_free(&a->g);
    memset(&a->g, 0, sizeof a->g);
    if (memest_model_build(&a->m, ov, n, &a->g, err) != 0) {
        if (err->code == MEMEST_ERR_USAGE) /* about an override, which it names */
            return -1;
        char msg[sizeof err->msg + 200];
        snprintf(msg, sizeof msg, "--sweep-var %s=%" PRId64 ": %s", name, value, err->msg);
        size_t len = strlen(msg);
        if (len >= sizeof err->msg)
            len = sizeof err->msg - 1;
        memcpy(err->msg, msg, len);
        err->msg[len] = '\0';
        return -1;
    }
    if (memest_app_graph_passes(a, &a->g, err) != 0)
        return -1;
    return memest_app_stages(a, err);
}

/* The work a whole sweep needs, counted before any step is simulated: for
 * a batch sweep, the costlier of its first and last batch times the
 * number of batches (the graph is the same; the cost barely moves with the
 * batch); for a variable sweep, each value's graph built and costed in
 * turn (MEMEST_COST_PER_BUILD_STEP per expansion step, plus its estimate),
 * that costing charged to the command as it goes, stopping as soon as what
 * the sweep will then need passes what the command may still spend. A
 * usage error (exit 2) when it does. */
static int check_sweep_work(struct memest_app *a, const char *name,
                            const struct memest_sweep_list *list, struct memest_error *err)
{
    const struct memest_cli *o = a->o;
    uint64_t max = a->max_work - a->work, need = 0, per = 0;   /* work <= max_work */
    char b[3][32];
    if (!o->sweep_var) {
        uint64_t first, last;
        if (memest_app_cost(a, list->v[0], &a->step, a->dtype, &first, err) != 0 ||
            memest_app_cost(a, list->v[list->n - 1], &a->step, a->dtype, &last, err) != 0)
            return -1;
        per = first > last ? first : last;
        if (per == 0 || per <= max / list->n)
            return 0;
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--sweep: %zu batch sizes of up to %s cost units each need more "
                           "work than memest does for one command (%s units, a few seconds); "
                           "this model allows at most %llu batch sizes per sweep",
                           list->n, memest_fmt_count(per, b[0], sizeof b[0]),
                           memest_fmt_count(a->max_work, b[1], sizeof b[1]),
                           (unsigned long long)(max / per));
    }
    for (size_t i = 0; i < list->n; i++) {
        uint64_t units;
        struct memest_cost rec;
        if (rebuild(a, name, list->v[i], err) != 0 ||
            memest_app_cost(a, a->batch, &a->step, a->dtype, &units, err) != 0)
            return -1;
        uint64_t build = a->g.build_work * MEMEST_COST_PER_BUILD_STEP;
        memest_cost_records(a->est.r, &rec);
        a->work += build + rec.records;   /* this costing: the graph, shape inference */
        need += build + units;            /* the value's row */
        if (a->work > a->max_work || need > a->max_work - a->work)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                               "--sweep-var %s: the values up to %s=%lld (%zu of %zu) need %s "
                               "cost units of work (their graphs built twice, shape inference "
                               "and estimates), more than memest does for one command (%s "
                               "units, a few seconds); sweep fewer or smaller values",
                               o->sweep_var, name, (long long)list->v[i], i + 1, list->n,
                               memest_fmt_count(memest_sat_add(need, a->work), b[0], sizeof b[0]),
                               memest_fmt_count(a->max_work, b[1], sizeof b[1]));
    }
    return 0;
}

int memest_flow_sweep(struct memest_app *a)
{
    const struct memest_cli *o = a->o;
    struct memest_error err = {0};
    struct memest_sweep_list list = {0};
    struct memest_sweep_row *rows = NULL;
    char *name = NULL;
    int rc = MEMEST_EXIT_OK;
    const char *spec = o->sweep;
    struct memest_progress pg = {0};   /* what = NULL: ended until it begins */
    if (o->sweep_var) {
        const char *eq = strchr(o->sweep_var, '=');
        size_t len = eq ? (size_t)(eq - o->sweep_var) : 0;
        if (!eq || len == 0 || !eq[1]) {
            memest_errf(&err, MEMEST_ERR_USAGE, NULL, "--sweep-var: expected NAME=LIST, got '%s'",
                        o->sweep_var);
            goto fail;
        }
        name = malloc(len + 1);
        if (!name) {
            memest_errf(&err, MEMEST_ERR_NOMEM, NULL, "out of memory");
            goto fail;
        }
        memcpy(name, o->sweep_var, len);
        name[len] = '\0';
        spec = eq + 1;
        if (check_variable(a, name, &err) != 0)
            goto fail;
    }
    a->flow = o->sweep_var ? "--sweep-var" : "--sweep";
    if (memest_sweep_parse(spec, a->flow, &list, &err) != 0 ||
        check_sweep_work(a, name, &list, &err) != 0)
        goto fail;
    rows = calloc(list.n, sizeof *rows);
    if (!rows) {
        memest_errf(&err, MEMEST_ERR_NOMEM, NULL, "out of memory");
        goto fail;
    }
    /* a batch sweep on one graph runs its rows in parallel (a variable
     * sweep rebuilds the graph per row; pipeline stages swap graphs) */
    unsigned threads = o->sweep_var || a->nstages > 1 ? 1 : sweep_threads(list.n, &err);
    if (threads == 0)
        goto fail;
    memest_progress_begin(&pg, a->flow, o->sweep_var ? "values" : "batches", list.n);
    if (threads > 1) {
        if (par_rows(a, &list, rows, threads, &pg, &err) != 0)
            goto fail;
    }
    for (size_t i = 0; threads == 1 && i < list.n; i++) {
        int64_t batch = list.v[i];
        if (o->sweep_var) {
            if (rebuild(a, name, list.v[i], &err) != 0 ||
                memest_app_charge(a, a->g.build_work * MEMEST_COST_PER_BUILD_STEP,
                                  &err) != 0)
                goto fail;
            batch = a->batch;
        }
        if (memest_app_row(a, batch, &rows[i], &err) != 0)
            goto fail;
        rows[i].value = list.v[i];
        memest_progress_update(&pg, i + 1, NULL);
    }
    memest_progress_end(&pg);
    struct memest_sweep_report s;
    report_init(a, &s);
    s.variable = o->sweep_var ? name : NULL;
    s.rows = rows;
    s.nrows = list.n;
    memest_render_sweep(stdout, o->format, &s);
    goto end;
fail:
    memest_progress_end(&pg);
    rc = memest_app_fail(o, &err);
end:
    free(name);
    free(rows);
    memest_sweep_list_free(&list);
    return rc;
}

void memest_app_fit_from(const struct memest_app *a, uint64_t least, uint64_t total,
                         bool least_exact, struct memest_fit *f)
{
    memest_fit_check(least ? least : total, a->card.memory, a->o->headroom, f);
    f->unconstrained = total;
    f->has_least = least != 0;
    f->least_exact = least_exact;
}

void memest_app_row_fit(const struct memest_app *a, const struct memest_sweep_row *row,
                        struct memest_fit *f)
{
    memest_app_fit_from(a, row->least, row->total_device, row->least_exact, f);
    f->judged = true;
    f->fits = row->fits;
}

int memest_app_row_verdict(struct memest_app *a, int64_t batch, struct memest_sweep_row *row,
                           struct memest_error *err)
{
    bool least = a->step.least;
    a->step.least = false;
    int rc = memest_app_row(a, batch, row, err);
    a->step.least = least;
    return rc;
}

/* ---- --max-batch ---- */

struct fits_ctx {
    struct memest_app *a;
    struct memest_progress pg;
    uint64_t calls;
};

/* The scan's estimates that the command can still afford, keeping two for
 * the answer's figures. */
static int64_t afford(void *ctx)
{
    struct fits_ctx *c = ctx;
    int64_t n = memest_app_affordable(c->a);
    return n > 2 ? n - 2 : 0;
}

static int fits_at(void *ctx, int64_t batch, bool *fits, bool *may_fit, struct memest_error *err)
{
    struct fits_ctx *c = ctx;
    struct memest_sweep_row row;
    /* a point of the search needs its verdict only */
    if (memest_app_row_verdict(c->a, batch, &row, err) != 0)
        return -1;
    memest_progress_update(&c->pg, ++c->calls, NULL);
    *fits = !row.limit && row.fits;
    *may_fit = !row.limit && row.may_fit;
    return 0;
}

int memest_flow_max_batch(struct memest_app *a)
{
    const struct memest_cli *o = a->o;
    struct memest_error err = {0};
    struct memest_node_time *nodes = NULL;
    struct memest_timeline tl = {0};
    struct fits_ctx ctx = {.a = a};
    struct memest_max_batch mb;
    a->flow = "--max-batch";
    memest_progress_begin(&ctx.pg, a->flow, "estimates", 0);
    int src = memest_fit_max_batch(fits_at, afford, &ctx, MEMEST_SWEEP_MAX_VALUE, &mb, &err);
    memest_progress_end(&ctx.pg);
    if (src != 0)
        return memest_app_fail(o, &err);
    int64_t best = mb.best;
    /* the figures at the answer (or at batch 1 when nothing fits), and the
     * --timeline and --plot files of that step (with --pp, every stage's) */
    int64_t at = best > 0 ? best : 1;
    struct memest_estimate e;
    struct memest_max_batch_result res = {.mb = mb};
    if (best > 0 && best < MEMEST_SWEEP_MAX_VALUE) {
        struct memest_sweep_row next;
        if (memest_app_row(a, best + 1, &next, &err) != 0)
            return memest_app_fail(o, &err);
        res.has_next = true;
        res.next_limit = next.limit;
        if (!next.limit)
            memest_app_row_fit(a, &next, &res.next_fit);
    }
    bool files = o->timeline_path || o->plot_path;
    if (memest_app_estimate_model(a, at, &a->step, a->dtype, &e, files && !o->inference ? &tl : NULL,
                            files && o->inference ? &tl : NULL, &err) != 0 ||
        memest_write_step_files(o->timeline_path, o->plot_path, o->inference, a->est.r, &e, &tl,
                                &err) != 0 ||
        memest_app_stage_files(a, at, &a->step, a->dtype, &e, &err) != 0) {
        memest_timeline_dispose(&tl);
        return memest_app_fail(o, &err);
    }
    memest_timeline_dispose(&tl);
    nodes = calloc(a->est.g->nnodes ? a->est.g->nnodes : 1, sizeof *nodes);
    if (!nodes) {
        memest_errf(&err, MEMEST_ERR_NOMEM, NULL, "out of memory");
        return memest_app_fail(o, &err);
    }
    struct memest_card_report cr;
    if (memest_app_card_report(a, &e, &a->step, a->dtype, &cr, nodes, &err) != 0) {
        free(nodes);
        return memest_app_fail(o, &err);
    }
    int rc = best > 0 ? MEMEST_EXIT_OK : MEMEST_EXIT_NOFIT;
    if (best == MEMEST_SWEEP_MAX_VALUE)   /* the search's top, not the card's */
        fprintf(stderr,
                "memest: note: --max-batch searched up to %lld (2^53-1, memest's largest batch) "
                "and every batch fits: the card holds at least that\n",
                (long long)MEMEST_SWEEP_MAX_VALUE);
    if (mb.capped)
        fprintf(stderr,
                "memest: note: batches %lld to %lld were not all checked (more than %lld%s); "
                "--max-batch %lld is the largest fitting batch found\n",
                (long long)mb.steady + 1, (long long)mb.bound, (long long)mb.scan_max,
                mb.scan_max < MEMEST_MAX_BATCH_SCAN ? ", what this command's work budget allows"
                                                    : "",
                (long long)best);
    struct memest_report rep = {.opts = memest_app_report_opts(a), .step = &a->step, .g = a->est.g, .r = a->est.r, .e = &e,
                             .figs = a->est.figs, .nfigs = a->nstages, .binding = a->est.binding, .card = &cr,
                                .max_batch = &res};
    memest_render_max_batch(stdout, o->format, &rep);
    free(nodes);
    return rc;
}
