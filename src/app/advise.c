/* advise.c - --advise: the standard ways to save memory for the model, batch
 * and card, each with the figure memest computes by running the same
 * calculators with the changed configuration (never a rule of thumb), sorted
 * by the memory saved, and marked when they make the step fit.
 *
 * In-place activations are computed by rebuilding nothing: the graph's
 * nodes whose op has an "inplace" argument set to false are switched to
 * in place where that is safe, and shape inference and the calculators run
 * again. Safe means what PyTorch needs for the backward pass to stay
 * correct: the input is an op's output (not a model input, a parameter or a
 * buffer), no other node saves it for backward, no later node reads it, and
 * it is not a model output. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memest/app.h"
#include "memest/checked.h"
#include "memest/format.h"
#include "memest/ops.h"
#include "memest/optim.h"
#include "memest/progress.h"
#include "memest/report.h"

#define MAX_OPTIONS 20
#define MAX_SINGLE 256  /* in-place candidates evaluated one at a time, at most */
/* Estimates kept for what follows the in-place trials (the step options,
 * and the two largest-batch searches' doubling and bisection) when the work
 * budget decides how many candidates are tried one at a time. */
#define RESERVE_AFTER_INPLACE (8 + 4 * 110)

struct advisor {
    struct memest_app *a;
    const struct memest_cli *o;
    struct memest_advice_option base;
    struct memest_advice_option opts[MAX_OPTIONS];
    int n;
    struct memest_progress pg;   /* estimates run, on a terminal's stderr */
};

/* Figures of one configuration into *res. A configuration beyond memest's
 * limits leaves res->computed false with a note; other errors return -1. */
static int eval(struct advisor *ad, int64_t batch, const struct memest_step_cfg *step,
                struct memest_advice_option *res, struct memest_error *err)
{
    struct memest_app *a = ad->a;
    struct memest_error e1 = {0};
    struct memest_estimate e;
    res->batch = batch;
    /* an option's figures read the simulation of the command's mode only */
    a->est.sims = a->o->inference ? MEMEST_SIM_INFER : MEMEST_SIM_TRAIN;
    int erc = memest_app_estimate_model(a, batch, step, a->dtype, &e, NULL, NULL, &e1);
    a->est.sims = 0;
    memest_progress_update(&ad->pg, a->estimates, NULL);
    if (erc != 0) {
        if (e1.code != MEMEST_ERR_LIMIT) {
            *err = e1;
            return -1;
        }
        res->computed = false;
        snprintf(res->note, sizeof res->note, "beyond memest's limits");
        return 0;
    }
    struct memest_fit f;
    memest_fit_judge(&e, a->o->inference, a->card.memory, a->o->headroom, &f);
    res->computed = true;
    res->needs = f.needs;
    res->fits = f.fits;
    uint64_t peak = a->o->inference ? e.infer_peak.bytes : e.train_peak.bytes;
    res->may_fit = memest_sat_add(peak, e.overhead) <= f.usable;
    res->saves = (int64_t)ad->base.needs - (int64_t)f.needs;
    struct memest_time_opts t;
    struct memest_time tm;
    int rc = memest_app_time_opts(a, step, a->dtype, &t, NULL, NULL)
                 ? memest_roofline(a->est.r, &e, &t, &tm, NULL) : -1;
    if (rc == -2)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    res->has_time = rc == 0;
    if (res->has_time) {
        res->step_s = tm.step_s;
        res->samples_per_s = tm.samples_per_s;
    }
    return 0;
}

static struct memest_advice_option *add(struct advisor *ad, const char *key)
{
    struct memest_advice_option *op = &ad->opts[ad->n++];
    memset(op, 0, sizeof *op);
    op->key = key;
    return op;
}

/* ---- in-place activations ---- */

static int inplace_arg(const struct memest_node *node)
{
    int k = memest_op_arg_index(node->op, "inplace");
    return k >= 0 && node->args[k].v ? k : -1;
}

/* Nodes (of the current run) that could safely run in place: cand[] gets
 * their indices, *nfalse counts every node with inplace=false. */
static int inplace_candidates(const struct memest_run *r, uint32_t *cand, uint32_t *ncand,
                              uint32_t *nfalse)
{
    const struct memest_graph *g = r->g;
    /* per storage: how many nodes save it, and the last one */
    uint32_t *nsavers = calloc(r->nstorages + 1, sizeof *nsavers);
    uint32_t *saver = calloc(r->nstorages + 1, sizeof *saver);
    if (!nsavers || !saver) {
        free(nsavers);
        free(saver);
        return -1;
    }
    for (uint32_t n = 0; n < g->nnodes; n++) {
        const struct memest_nodeinfo *ni = &r->nodes[n];
        for (uint32_t s = ni->save_first; s < ni->save_first + ni->nsave; s++) {
            uint32_t st = r->saves[s];
            if (nsavers[st] && saver[st] == n)
                continue;
            nsavers[st]++;
            saver[st] = n;
        }
    }
    *ncand = *nfalse = 0;
    for (uint32_t n = 0; n < g->nnodes; n++) {
        const struct memest_node *node = &g->nodes[n];
        int k = inplace_arg(node);
        if (k < 0 || node->args[k].v[0] != 0 || node->nin == 0)
            continue;
        (*nfalse)++;
        const struct memest_value *v = memest_run_value(r, node->in[0]);
        const struct memest_storage *st = &r->storages[v->storage];
        bool safe = st->kind == MEMEST_ST_ACT && st->last_use == n &&
                    (nsavers[v->storage] == 0 || (nsavers[v->storage] == 1 && saver[v->storage] == n));
        for (uint32_t i = 1; safe && i < node->nin; i++)
            safe = memest_run_value(r, node->in[i])->storage != v->storage;
        if (safe)
            cand[(*ncand)++] = n;
    }
    free(nsavers);
    free(saver);
    return 0;
}

static void set_inplace(struct memest_graph *g, const uint32_t *nodes, uint32_t n, bool on)
{
    for (uint32_t i = 0; i < n; i++) {
        struct memest_node *node = &g->nodes[nodes[i]];
        node->args[inplace_arg(node)].v[0] = on;
    }
}

static int advise_inplace(struct advisor *ad, struct memest_error *err)
{
    struct memest_app *a = ad->a;
    struct memest_advice_option *op = add(ad, "inplace");
    uint32_t *cand = malloc(sizeof *cand * (a->est.g->nnodes ? a->est.g->nnodes : 1));
    uint32_t ncand, nfalse, nkept = 0;
    int rc = -1;
    if (!cand || inplace_candidates(a->est.r, cand, &ncand, &nfalse) != 0) {
        memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
        goto end;
    }
    if (nfalse == 0) {
        snprintf(op->change, sizeof op->change, "in-place activations");
        snprintf(op->note, sizeof op->note, "no node has an \"inplace\" argument set to false");
        rc = 0;
        goto end;
    }
    if (ncand == 0) {
        snprintf(op->change, sizeof op->change, "in-place activations");
        snprintf(op->note, sizeof op->note,
                 "none of the %u nodes with \"inplace\": false can safely be in place (each "
                 "input is saved for backward or read again)",
                 nfalse);
        rc = 0;
        goto end;
    }
    /* One at a time: keep the switches that lower the figure (an op whose
     * backward needs its original input clones it when run in place, which
     * costs memory), then all the kept ones together. Past MAX_SINGLE
     * candidates, or as many as the command's work budget affords beside
     * what follows, the rest are tried as one group. */
    int64_t afford = memest_app_affordable(a) - RESERVE_AFTER_INPLACE;
    uint32_t single = afford < 0 ? 0 : afford < MAX_SINGLE ? (uint32_t)afford : MAX_SINGLE;
    struct memest_advice_option trial;
    for (uint32_t i = 0; i < ncand; i++) {
        uint32_t group = i < single ? 1 : ncand - i;
        memset(&trial, 0, sizeof trial);
        set_inplace(a->est.g, &cand[i], group, true);
        int r1 = eval(ad, a->batch, &a->step, &trial, err);
        set_inplace(a->est.g, &cand[i], group, false);
        if (r1 != 0) {
            if (err->code != MEMEST_ERR_SHAPE && err->code != MEMEST_ERR_SCHEMA)
                goto end;
            memset(err, 0, sizeof *err); /* the op refuses to run in place here */
        } else if (trial.computed && trial.needs < ad->base.needs) {
            memmove(&cand[nkept], &cand[i], sizeof *cand * group);
            nkept += group;
        }
        i += group - 1;
    }
    if (nkept > 0) {
        set_inplace(a->est.g, cand, nkept, true);
        int r2 = eval(ad, a->batch, &a->step, op, err);
        set_inplace(a->est.g, cand, nkept, false);
        if (r2 != 0)
            goto end;
    }
    size_t len = (size_t)snprintf(op->change, sizeof op->change,
                                  "\"inplace\": true on %u of the %u nodes with inplace=false:",
                                  nkept, nfalse);
    for (uint32_t i = 0; i < nkept && i < 3 && len < sizeof op->change; i++)
        len += (size_t)snprintf(op->change + len, sizeof op->change - len, "%s %s",
                                i ? "," : "", a->est.g->nodes[cand[i]].name);
    if (nkept > 3 && len < sizeof op->change)
        snprintf(op->change + len, sizeof op->change - len, ", ...");
    if (nkept == 0) {
        snprintf(op->change, sizeof op->change, "in-place activations");
        snprintf(op->note, sizeof op->note,
                 "none of the %u nodes with \"inplace\": false saves memory in place: %u "
                 "cannot (their input is saved for backward or read again), %u would cost "
                 "memory or are refused",
                 nfalse, nfalse - ncand, ncand);
    } else if (nkept < nfalse) {
        snprintf(op->note, sizeof op->note,
                 "of the other %u, %u cannot be in place (input saved for backward or read "
                 "again) and %u would not save memory",
                 nfalse - nkept, nfalse - ncand, ncand - nkept);
    }
    rc = 0;
end:
    free(cand);
    return rc;
}

/* ---- gradient accumulation ---- */

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

struct accum_ctx {
    struct advisor *ad;
    const int64_t *divs;     /* divisors of the effective batch below the batch, ascending */
    int64_t effective;
};

/* The estimates the command can still afford (the largest-batch searches'
 * scans), keeping a few for the options that follow. */
static int64_t afford_scan(struct advisor *ad)
{
    int64_t n = memest_app_affordable(ad->a);
    return n > 8 ? n - 8 : 0;
}
static int64_t accum_afford(void *ctx) { return afford_scan(((struct accum_ctx *)ctx)->ad); }
static int64_t batch_afford(void *ctx) { return afford_scan(ctx); }

static int accum_fits(void *ctx, int64_t i, bool *fits, bool *may_fit, struct memest_error *err)
{
    struct accum_ctx *c = ctx;
    struct memest_step_cfg step = c->ad->a->step;
    int64_t micro = c->divs[i - 1];
    step.grad_accum = c->effective / micro;
    struct memest_advice_option res = {0};
    if (eval(c->ad, micro, &step, &res, err) != 0)
        return -1;
    *fits = res.computed && res.fits;
    *may_fit = res.computed && res.may_fit;
    return 0;
}

static int advise_accum(struct advisor *ad, struct memest_error *err)
{
    const struct memest_app *a = ad->a;
    int64_t effective;
    if (a->batch < 2 || __builtin_mul_overflow(a->batch, a->step.grad_accum, &effective) ||
        effective > ((int64_t)1 << 53))
        return 0;
    struct memest_advice_option *op = add(ad, "grad_accum");
    /* the divisors of the effective batch that are smaller micro-batches */
    size_t cap = 64, n = 0;
    int64_t *divs = malloc(sizeof *divs * cap);
    if (!divs)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    for (int64_t d = 1; d <= effective / d; d++) {
        if (effective % d)
            continue;
        int64_t pair[2] = {d, effective / d};
        for (int k = 0; k < (pair[0] == pair[1] ? 1 : 2); k++) {
            if (pair[k] >= a->batch)
                continue;
            if (n == cap) {
                int64_t *bigger = realloc(divs, sizeof *divs * cap * 2);
                if (!bigger) {
                    free(divs);
                    return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
                }
                divs = bigger;
                cap *= 2;
            }
            divs[n++] = pair[k];
        }
    }
    qsort(divs, n, sizeof *divs, cmp_i64);
    /* the largest divisor that fits, by bisection over the sorted list */
    struct accum_ctx ctx = {ad, divs, effective};
    struct memest_max_batch mb;
    int rc = memest_fit_max_batch(accum_fits, accum_afford, &ctx, (int64_t)n, &mb, err);
    int64_t best = mb.best;
    if (rc == 0) {
        int64_t micro = divs[best > 0 ? best - 1 : 0];
        struct memest_step_cfg step = ad->a->step;
        step.grad_accum = effective / micro;
        rc = eval(ad, micro, &step, op, err);
        snprintf(op->change, sizeof op->change,
                 "--batch %" PRId64 " --grad-accum %" PRId64 ": the same effective batch %" PRId64,
                 micro, step.grad_accum, effective);
        if (best == 0)
            snprintf(op->note, sizeof op->note, "the smallest micro-batch; none fits");
    }
    free(divs);
    return rc;
}

/* ---- a smaller batch ---- */

static int batch_fits(void *ctx, int64_t batch, bool *fits, bool *may_fit,
                      struct memest_error *err)
{
    struct advisor *ad = ctx;
    struct memest_advice_option res = {0};
    if (eval(ad, batch, &ad->a->step, &res, err) != 0)
        return -1;
    *fits = res.computed && res.fits;
    *may_fit = res.computed && res.may_fit;
    return 0;
}

static int advise_batch(struct advisor *ad, struct memest_error *err)
{
    const struct memest_app *a = ad->a;
    if (a->batch < 2)
        return 0;
    struct memest_advice_option *op = add(ad, "smaller_batch");
    if (ad->base.fits) {
        snprintf(op->change, sizeof op->change, "a smaller batch");
        snprintf(op->note, sizeof op->note, "it already fits at --batch %" PRId64, a->batch);
        return 0;
    }
    struct memest_max_batch mb;
    if (memest_fit_max_batch(batch_fits, batch_afford, ad, a->batch - 1, &mb, err) != 0)
        return -1;
    int64_t best = mb.best;
    int64_t b = best > 0 ? best : 1;
    if (eval(ad, b, &ad->a->step, op, err) != 0)
        return -1;
    snprintf(op->change, sizeof op->change, "--batch %" PRId64 "%s", b,
             best > 0 ? ": the largest batch that fits" : "");
    snprintf(op->note, sizeof op->note, "%s",
             best > 0 ? "it changes the effective batch: adjust the learning rate"
                      : "not even batch 1 fits");
    return 0;
}

/* ---- step options ---- */

static int advise_step(struct advisor *ad, const char *key, const struct memest_step_cfg *step,
                       const char *change, struct memest_error *err)
{
    struct memest_advice_option *op = add(ad, key);
    snprintf(op->change, sizeof op->change, "%s", change);
    if (eval(ad, ad->a->batch, step, op, err) != 0) {
        if (err->code != MEMEST_ERR_USAGE || ad->a->over_budget)
            return -1;
        /* the change does not apply to this model (e.g. --checkpoint
         * without blocks): say why instead of a figure */
        op->computed = false;
        snprintf(op->note, sizeof op->note, "%s", err->msg);
        memset(err, 0, sizeof *err);
        return 0;
    }
    if (op->computed && op->saves == 0)
        snprintf(op->note, sizeof op->note, "no change in memest's figures");
    return 0;
}

/* Several GPUs (--gpus N with data-parallel ranks): the other engines, and
 * ZeRO-Offload of the sharded ones, each its own rank view (dist.h). */
static int advise_strategies(struct advisor *ad, struct memest_error *err)
{
    struct memest_app *a = ad->a;
    const struct memest_dist_cfg *now = &a->dist;
    if (!ad->o->dist.set || memest_dist_dp(now) < 2 || now->ep > 1)
        return 0;
    static const enum memest_strategy alts[] = {MEMEST_STRAT_ZERO1, MEMEST_STRAT_ZERO2,
                                                MEMEST_STRAT_ZERO3, MEMEST_STRAT_FSDP};
    bool half = memest_dtype_is_half(a->dtype);
    for (size_t i = 0; i < sizeof alts / sizeof *alts; i++) {
        for (int off = 0; off < 2; off++) {
            struct memest_dist_cfg c = *now;
            c.strategy = alts[i];
            c.offload = off ? MEMEST_OFFLOAD_OPTIMIZER : MEMEST_OFFLOAD_NONE;
            if (off && alts[i] != MEMEST_STRAT_ZERO2 && alts[i] != MEMEST_STRAT_ZERO3)
                continue;   /* ZeRO-Offload: stages 2 and 3 */
            if (c.strategy == now->strategy && c.offload == now->offload)
                continue;   /* the configuration as given */
            struct memest_rank_view v;
            memest_rank_view_init(&c, half, &v);
            struct memest_step_cfg s = a->step;
            s.rank = &v;
            bool ds = alts[i] != MEMEST_STRAT_FSDP;
            if (ds && !ad->o->impl_set && memest_optim_desc(s.optim.kind)->fused_since)
                s.impl = MEMEST_IMPL_FUSED;   /* DeepSpeed's FusedAdam (app_dist.c) */
            static const char *const keys[][2] = {
                {"strategy_zero1", "strategy_zero1_offload"},
                {"strategy_zero2", "strategy_zero2_offload"},
                {"strategy_zero3", "strategy_zero3_offload"},
                {"strategy_fsdp", "strategy_fsdp_offload"},
            };
            char change[160];
            snprintf(change, sizeof change, "--strategy %s%s", memest_strategy_name(alts[i]),
                     off ? " --offload optimizer: ZeRO-Offload (the optimizer on the host)" : "");
            if (advise_step(ad, keys[i][off], &s, change, err) != 0)
                return -1;
        }
    }
    return 0;
}

static int by_saves(const void *x, const void *y)
{
    const struct memest_advice_option *a = x, *b = y;
    if (a->computed != b->computed)
        return a->computed ? -1 : 1;
    if (a->saves != b->saves)
        return a->saves > b->saves ? -1 : 1;
    return strcmp(a->key, b->key);
}

int memest_flow_advise(struct memest_app *a)
{
    const struct memest_cli *o = a->o;
    struct advisor *ad = calloc(1, sizeof *ad);
    struct memest_error err = {0};
    if (!ad) {
        memest_errf(&err, MEMEST_ERR_NOMEM, NULL, "out of memory");
        return memest_app_fail(o, &err);
    }
    ad->a = a;
    ad->o = o;
    a->flow = "--advise";
    memest_progress_begin(&ad->pg, a->flow, "estimates", 0);
    int rc = MEMEST_EXIT_OK;
    /* the current configuration; its run is the one in-place candidates are read from */
    struct memest_error e0 = {0};
    struct memest_estimate e;
    if (memest_app_estimate_model(a, a->batch, &a->step, a->dtype, &e, NULL, NULL, &e0) != 0) {
        rc = memest_app_fail(o, &e0);
        goto end;
    }
    ad->base.needs = memest_fit_needs(&e, o->inference);
    if (eval(ad, a->batch, &a->step, &ad->base, &err) != 0 ||
        advise_inplace(ad, &err) != 0)
        goto fail;
    if (!o->inference) {
        bool fp32 = a->dtype == MEMEST_F32 && a->step.amp == MEMEST_AMP_NONE;
        struct memest_step_cfg s;
        if (fp32) {
            s = ad->a->step;
            s.amp = MEMEST_AMP_BF16;
            if (advise_step(ad, "amp_bf16", &s, "--amp bf16: autocast mixed precision", &err) != 0)
                goto fail;
            s.amp = MEMEST_AMP_FP16;
            if (advise_step(ad, "amp_fp16", &s, "--amp fp16: autocast mixed precision", &err) != 0)
                goto fail;
        }
        if (!a->step.checkpoint) {
            s = ad->a->step;
            s.checkpoint = true;
            if (advise_step(ad, "checkpoint", &s, "--checkpoint: activation checkpointing of every "
                            "block", &err) != 0)
                goto fail;
        }
        if (advise_accum(ad, &err) != 0 || advise_strategies(ad, &err) != 0)
            goto fail;
        enum memest_optim k = a->step.optim.kind;
        const struct memest_optim_cfg *lean = &memest_optim_lean.cfg;   /* optim.h */
        if (k != lean->kind) {
            s = ad->a->step;
            s.optim = *lean;
            char change[120];
            snprintf(change, sizeof change, "--optim %s --momentum %g instead of %s",
                     memest_optim_name(lean->kind), lean->momentum, memest_optim_name(k));
            if (advise_step(ad, memest_optim_lean.key, &s, change, &err) != 0)
                goto fail;
        }
        struct memest_optim_cfg q8;
        if (memest_optim_8bit(&a->step.optim, &q8) == 0) {   /* bitsandbytes' 8-bit states */
            s = ad->a->step;
            s.optim = q8;
            s.impl = MEMEST_IMPL_FOREACH;   /* its own kernel; --optim-impl fused is refused */
            char change[120];
            snprintf(change, sizeof change, "--optim %s instead of %s (bitsandbytes)",
                     memest_optim_name(q8.kind), memest_optim_name(k));
            if (advise_step(ad, MEMEST_OPTIM_8BIT_KEY, &s, change, &err) != 0)
                goto fail;
        }
    }
    if (advise_batch(ad, &err) != 0)
        goto fail;
    qsort(ad->opts, (size_t)ad->n, sizeof *ad->opts, by_saves);
    struct memest_advice doc = {
        .model = a->g.name, .file = a->g.file, .batch = a->batch,
        .optimizer = memest_optim_name(a->step.optim.kind), .dtype = memest_dtype_name(a->dtype),
        .card = &a->card, .headroom_pct = o->headroom, .mfu = o->mfu,
        .has_time = ad->base.has_time, .now_samples_per_s = ad->base.samples_per_s,
        .opts = ad->opts, .nopts = ad->n,
        .strategies = o->dist.set && memest_dist_dp(&a->dist) > 1,
    };
    memest_fit_judge(&e, o->inference, a->card.memory, o->headroom, &doc.now);
    memest_progress_end(&ad->pg);
    memest_render_advice(stdout, o->format, &doc);
    /* with --fit as well, the exit code is the current configuration's verdict */
    if (o->fit)
        rc = doc.now.fits ? MEMEST_EXIT_OK : MEMEST_EXIT_NOFIT;
    goto end;
fail:
    memest_progress_end(&ad->pg);
    rc = memest_app_fail(o, &err);
end:
    memest_progress_end(&ad->pg);
    free(ad);
    return rc;
}
