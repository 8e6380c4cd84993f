/* app_stages.c - pipeline parallelism for every flow: the stages' graphs
 * (pipeline.h), cut once after the graph passes, and one estimate as the
 * estimates of every stage, each holding the activations of the
 * micro-batches its schedule keeps in flight; the binding stage answers
 * (--fit, --max-batch and sweeps judge it). */
#include <stdlib.h>
#include <string.h>

#include "memest/app.h"
#include "memest/checked.h"
#include "memest/pipeline.h"
#include "memest/plot.h"

int memest_app_stages(struct memest_app *a, struct memest_error *err)
{
    a->est.binding = 0;
    int64_t pp = a->o->dist.set ? a->dist.pp : 1;
    if (pp <= 1)
        return 0;
    uint32_t nl = memest_pipeline_layers(&a->g);
    if ((uint64_t)pp > nl)   /* before a graph per stage is made */
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--pp %lld: the model's %u top-level block instances (its layers) do "
                           "not split into pipeline stages of at least one layer each",
                           (long long)pp, nl);
    /* the values stages pass, at batch 1 and 2 (their batch dimension) */
    struct memest_run r1 = {0}, r2 = {0};
    struct memest_run_opts ro = memest_app_run_opts(a, 1, &a->step, a->dtype);
    int rc = memest_run_infer(&r1, &a->g, &ro, err);
    if (rc == 0)
        rc = memest_app_options_used(a, &r1, err);
    ro.batch = 2;
    if (rc == 0)
        rc = memest_run_infer(&r2, &a->g, &ro, err);
    a->stages = rc == 0 ? calloc((size_t)pp, sizeof *a->stages) : NULL;
    a->est.stage_runs = rc == 0 ? calloc((size_t)pp, sizeof *a->est.stage_runs) : NULL;
    a->est.figs = rc == 0 ? calloc((size_t)pp, sizeof *a->est.figs) : NULL;
    if (rc == 0 && (!a->stages || !a->est.stage_runs || !a->est.figs))
        rc = memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    for (int64_t s = 0; rc == 0 && s < pp; s++) {
        rc = memest_pipeline_stage(&a->g, &r1, &r2, pp, s, &a->stages[s], err);
        if (rc == 0)
            a->nstages = s + 1;
        /* the interleaved schedule cuts each stage into V model chunks */
        int64_t v = a->dist.virtual_stages;
        uint32_t sl = rc == 0 ? memest_pipeline_layers(&a->stages[s]) : 0;
        if (rc == 0 && a->dist.schedule == MEMEST_SCHED_INTERLEAVED && sl % (uint64_t)v != 0)
            rc = memest_errf(err, MEMEST_ERR_USAGE, NULL,
                             "--virtual-stages %lld: pipeline stage %lld has %u layers, not a "
                             "multiple of the model chunks", (long long)v, (long long)s, sl);
    }
    memest_run_free(&r1);
    memest_run_free(&r2);
    return rc == 0 ? 0 : memest_app_overrides_note(a, err);
}

void memest_app_stages_free(struct memest_app *a)
{
    for (int64_t s = 0; a->stages && s < a->nstages; s++) {
        memest_run_free(&a->est.stage_runs[s]);
        memest_graph_free(&a->stages[s]);
    }
    free(a->stages);
    free(a->est.stage_runs);
    free(a->est.figs);
    a->stages = NULL;
    a->est.stage_runs = NULL;
    a->est.figs = NULL;
    a->nstages = 0;
    a->est.g = &a->g;   /* the model's graph and run answer again */
    a->est.r = &a->est.run;
}

/* The micro-batch activations stage s holds at once, as chunks of 1/per
 * of the stage (PipeDream-Flush, Narayanan et al. 2021; Megatron-LM's
 * schedules.py): 1F1B min(P - s, M) whole micro-batches; interleaved with V
 * virtual stages, (P - s - 1) x 2 + (V - 1) x P warm-up chunks plus the
 * one running, at most M x V, each a V-th of the stage. */
static void in_flight(const struct memest_dist_cfg *c, int64_t s, int64_t *chunks, int64_t *per)
{
    int64_t p = c->pp, m = c->micro_batches > 0 ? c->micro_batches : p;
    if (c->schedule == MEMEST_SCHED_INTERLEAVED) {
        int64_t v = c->virtual_stages, w = (p - s - 1) * 2 + (v - 1) * p + 1;
        *chunks = w < m * v ? w : m * v;
        *per = v;
        return;
    }
    *chunks = p - s < m ? p - s : m;
    *per = 1;
}

/* Stage s's estimate into e, its graph and run left in a->est.g and
 * a->est.r. */
static int estimate_stage(struct memest_app *a, int64_t s, int64_t batch,
                          const struct memest_step_cfg *st, enum memest_dtype dtype,
                          struct memest_estimate *e, struct memest_timeline *train_tl,
                          struct memest_timeline *infer_tl, struct memest_error *err)
{
    a->est.g = &a->stages[s];
    a->est.r = &a->est.stage_runs[s];
    return memest_app_estimate(a, a->est.g, a->est.r, batch, st, dtype, e, train_tl, infer_tl,
                               err);
}

/* One estimate of every pipeline stage (memest_app_estimate_model). */
static int estimate_stages(struct memest_app *a, int64_t batch, const struct memest_step_cfg *step,
                           enum memest_dtype dtype, struct memest_estimate *e,
                           struct memest_timeline *train_tl, struct memest_timeline *infer_tl,
                           struct memest_error *err)
{
    const struct memest_dist_cfg *c = &a->dist;
    struct memest_rank_view view = step->rank ? *step->rank : a->view;
    struct memest_step_cfg st = *step;
    st.rank = &view;
    int rc = 0;
    int64_t best = 0;
    for (int64_t s = 0; s < a->nstages && rc == 0; s++) {
        struct memest_rank_fig *f = &a->est.figs[s];
        memset(f, 0, sizeof *f);
        f->stage = s;
        st.loss = s + 1 == a->nstages ? step->loss : MEMEST_LOSS_NONE;
        in_flight(c, s, &f->chunks, &f->per);
        view.in_flight = f->chunks;
        view.inflight_bytes = 0;
        rc = estimate_stage(a, s, batch, &st, dtype, e, NULL, NULL, err);
        if (rc != 0)
            break;
        /* the other micro-batches' saved activations (what one forward
         * leaves for its backward, checkpointing included), held through
         * the step */
        uint64_t act = e->train_peak.fwd_saved;
        f->activations = act;
        uint64_t held = memest_sat_mul(act / (uint64_t)f->per, (uint64_t)f->chunks);
        view.inflight_bytes = held > act ? held - act : 0;
        if (view.inflight_bytes)
            rc = estimate_stage(a, s, batch, &st, dtype, e, NULL, NULL, err);
        if (rc != 0)
            break;
        f->inflight = view.inflight_bytes;
        f->params = e->params.total;
        f->layers = memest_pipeline_layers(a->est.g);
        f->model_states = e->dist.total;
        f->peak = e->train_peak.bytes;
        f->reserved = e->reserved_peak;
        f->total_device = e->total_device;
        f->phase = e->train_peak.phase;
        f->node = e->train_peak.node < a->est.g->nnodes ? a->est.g->nodes[e->train_peak.node].name
                                                          : NULL;
        if (f->total_device > a->est.figs[best].total_device)
            best = s;
    }
    if (rc == 0) {   /* the binding stage again, with its timelines, left in g and r */
        const struct memest_rank_fig *f = &a->est.figs[best];
        st.loss = best + 1 == a->nstages ? step->loss : MEMEST_LOSS_NONE;
        view.in_flight = f->chunks;
        view.inflight_bytes = f->inflight;
        a->est.binding = best;
        rc = estimate_stage(a, best, batch, &st, dtype, e, train_tl, infer_tl, err);
    }
    return rc;
}

int memest_app_estimate_model(struct memest_app *a, int64_t batch,
                              const struct memest_step_cfg *step, enum memest_dtype dtype,
                              struct memest_estimate *e, struct memest_timeline *train_tl,
                              struct memest_timeline *infer_tl, struct memest_error *err)
{
    if (a->nstages > 1)
        return estimate_stages(a, batch, step, dtype, e, train_tl, infer_tl, err);
    a->est.g = &a->g;
    a->est.r = &a->est.run;
    return memest_app_estimate(a, &a->g, &a->est.run, batch, step, dtype, e, train_tl, infer_tl,
                               err);
}

/* path with "-stage<s>" before its extension ("step.svg" -> "step-stage2.svg",
 * "dir.d/step" -> "dir.d/step-stage2"); NULL when out of memory. */
static char *stage_path(const char *path, int64_t s)
{
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash) || dot == (slash ? slash + 1 : path))
        dot = path + strlen(path);
    char mid[32];
    int k = snprintf(mid, sizeof mid, "-stage%lld", (long long)s);
    size_t head = (size_t)(dot - path), tail = strlen(dot);
    char *r = k > 0 ? malloc(head + (size_t)k + tail + 1) : NULL;
    if (!r)
        return NULL;
    memcpy(r, path, head);
    memcpy(r + head, mid, (size_t)k);
    memcpy(r + head + (size_t)k, dot, tail + 1);
    return r;
}

void memest_app_output_paths_free(struct memest_app_outputs *p)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->v[i].path != p->v[i].given)
            free((char *)p->v[i].path);
    free(p->v);
    memset(p, 0, sizeof *p);
}

int memest_app_output_paths(const struct memest_cli *o, int64_t nstages,
                            struct memest_app_outputs *out, struct memest_error *err)
{
    memset(out, 0, sizeof *out);
    const struct {
        const char *opt, *path;
    } named[] = {{"--plot", o->plot_path}, {"--timeline", o->timeline_path}};
    size_t per = nstages > 1 ? (size_t)nstages : 0, cap = 0;
    for (size_t j = 0; j < 2; j++)
        cap += named[j].path ? 1 + per : 0;
    out->v = calloc(cap ? cap : 1, sizeof *out->v);
    if (!out->v)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    for (size_t j = 0; j < 2; j++)   /* the files named first */
        if (named[j].path)
            out->v[out->n++] = (struct memest_outpath){named[j].opt, named[j].path, named[j].path};
    for (size_t j = 0; j < 2; j++)   /* then every stage's beside them */
        for (size_t s = 0; named[j].path && *named[j].path && s < per; s++) {
            char *p = stage_path(named[j].path, (int64_t)s);
            if (!p) {
                memest_app_output_paths_free(out);
                return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
            }
            out->v[out->n++] = (struct memest_outpath){named[j].opt, named[j].path, p};
        }
    return 0;
}

int memest_app_stage_files(struct memest_app *a, int64_t batch, const struct memest_step_cfg *step,
                           enum memest_dtype dtype, struct memest_estimate *e,
                           struct memest_error *err)
{
    const struct memest_cli *o = a->o;
    if (a->nstages <= 1 || (!o->timeline_path && !o->plot_path))
        return 0;
    struct memest_rank_view view = step->rank ? *step->rank : a->view;
    struct memest_step_cfg st = *step;
    st.rank = &view;
    int rc = 0;
    for (int64_t s = 0; s < a->nstages && rc == 0; s++) {
        const struct memest_rank_fig *f = &a->est.figs[s];
        struct memest_timeline tl = {0};
        char *tp = o->timeline_path ? stage_path(o->timeline_path, s) : NULL;
        char *pp = o->plot_path ? stage_path(o->plot_path, s) : NULL;
        if ((o->timeline_path && !tp) || (o->plot_path && !pp)) {
            free(tp);
            free(pp);
            rc = memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
            break;
        }
        st.loss = s + 1 == a->nstages ? step->loss : MEMEST_LOSS_NONE;
        view.in_flight = f->chunks;
        view.inflight_bytes = f->inflight;
        rc = estimate_stage(a, s, batch, &st, dtype, e, &tl, NULL, err);
        if (rc == 0)
            rc = memest_write_step_files(tp, pp, false, a->est.r, e, &tl, err);
        memest_timeline_dispose(&tl);
        free(tp);
        free(pp);
    }
    if (rc == 0) {   /* the binding stage back in g, r and e, for the report */
        int64_t b = a->est.binding;
        const struct memest_rank_fig *f = &a->est.figs[b];
        st.loss = b + 1 == a->nstages ? step->loss : MEMEST_LOSS_NONE;
        view.in_flight = f->chunks;
        view.inflight_bytes = f->inflight;
        rc = estimate_stage(a, b, batch, &st, dtype, e, NULL, NULL, err);
    }
    return rc;
}
