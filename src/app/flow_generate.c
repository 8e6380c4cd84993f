/* flow_generate.c - --generate: the prefill's run on the graph the app
 * built (seq_len = --context), a decode step's run on the graph rebuilt
 * with seq_len = 1, the generation estimate (src/calc/generate.c), the
 * card's verdict, the speed estimates from its preset and vLLM's paged
 * cache (--kv-block), handed to the report (report_generate.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memest/app.h"
#include "memest/generate.h"
#include "memest/report.h"
#include "memest/sweep.h"

/* --max-batch and --max-context search up to this (2^40). */
#define MEMEST_GEN_MAX_SEARCH ((int64_t)1 << 40)

/* Shape inference of g at the command's batch into r, its cost charged to
 * the command's work. 0 / -1. */
static int infer(struct memest_app *a, const struct memest_graph *g, int64_t batch,
                 struct memest_run *r, struct memest_error *err)
{
    struct memest_run_opts ro = memest_app_run_opts(a, batch, &a->step, a->dtype);
    ro.fused &= ~(uint32_t)MEMEST_FUSED_LINEAR_CE;   /* no loss */
    ro.no_grad = true;   /* generate() runs under torch.no_grad() */
    struct memest_cost c;
    if (memest_app_charge(a, 0, err) != 0)
        return -1;
    if (memest_run_infer(r, g, &ro, err) != 0 || memest_estimate_cost(r, &a->step, &c, err) != 0)
        return memest_app_overrides_note(a, err);
    return memest_app_charge(a, c.total, err);
}

/* The graph with seq_len = `seq` (the command's other overrides kept). */
static int graph_at(struct memest_app *a, int64_t seq, struct memest_graph *g,
                    struct memest_error *err)
{
    const struct memest_cli *o = a->o;
    struct memest_override sets[MEMEST_MAX_SETS + MEMEST_STACK_VARS];
    struct memest_stack_vars sv;
    char value[24];
    snprintf(value, sizeof value, "%lld", (long long)seq);
    int n = 0;
    for (int i = 0; i < o->nsets; i++)
        if (strcmp(o->sets[i].name, "seq_len") != 0)
            sets[n++] = o->sets[i];
    if (n == MEMEST_MAX_SETS)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--set: at most %d overrides",
                           MEMEST_MAX_SETS - 1);
    sets[n++] = (struct memest_override){"seq_len", value, "--context"};
    n = memest_cli_stack_sets(o, &a->m, &a->step, sets, n, &sv);
    if (memest_model_build(&a->m, sets, n, g, err) != 0)
        return -1;
    return memest_app_graph_passes(a, g, err);   /* the same model: LoRA, quantisation */
}

/* What one generation estimate needs: the prefill's graph at its context
 * (a->g at --context, else pg), the decode step's (seq_len = 1) and their
 * runs; and how the last search ended when it did not end at the card:
 * every value up to its top fits, or the value past the answer is beyond
 * memest's limits (lim, its refusal). */
struct gen {
    struct memest_app *a;
    struct memest_graph pg, dg;
    bool have_pg;
    struct memest_run pr, dr;
    struct memest_gen_cfg cfg;
    bool top, limit;
    int64_t limit_at;
    struct memest_error lim;
};

/* The estimate at batch and context into *e. 0 / -1. */
static int gen_at(struct gen *G, int64_t batch, int64_t context, struct memest_gen_estimate *e,
                  struct memest_error *err)
{
    struct memest_app *a = G->a;
    const struct memest_graph *pre = &a->g;
    if (context != a->o->gen_context || !a->o->gen_context) {
        if (G->have_pg)
            memest_graph_free(&G->pg);
        G->have_pg = false;
        memset(&G->pg, 0, sizeof G->pg);
        if (graph_at(a, context, &G->pg, err) != 0)
            return -1;
        G->have_pg = true;
        pre = &G->pg;
    }
    struct memest_gen_cfg cfg = G->cfg;
    cfg.context = context;
    if (infer(a, pre, batch, &G->pr, err) != 0 || infer(a, &G->dg, batch, &G->dr, err) != 0)
        return -1;
    return memest_generate(&G->pr, &G->dr, &a->step, &cfg, e, err);
}

static bool fits(const struct memest_app *a, const struct memest_gen_estimate *e)
{
    struct memest_fit f;
    memest_fit_check(e->total_device, a->card.memory, a->o->headroom, &f);
    return f.fits;
}

/* Whether the estimate at value v (the batch when by_batch, else the
 * context) fits the card; a value beyond memest's limits does not (*limit
 * true, its refusal in *lim). 0 / -1. */
static int fits_at(struct gen *G, bool by_batch, int64_t v, bool *ok, bool *limit,
                   struct memest_error *lim, struct memest_error *err)
{
    struct memest_app *a = G->a;
    struct memest_gen_estimate e;
    struct memest_error e2 = {0};
    int rc = gen_at(G, by_batch ? v : a->batch, by_batch ? a->o->gen_context : v, &e, &e2);
    if (rc != 0 && e2.code != MEMEST_ERR_LIMIT) {
        *err = e2;
        return -1;
    }
    *ok = rc == 0 && fits(a, &e);
    *limit = rc != 0;
    if (*limit)
        *lim = e2;
    return 0;
}

/* The largest value in [1, hi] that fits, 0 when none: doubling, then
 * bisection (the memory grows with the batch and with the context).
 * G->top: it is hi (the card may hold more); G->limit: the value past it
 * is beyond memest's limits, not the card's (G->limit_at, G->lim). */
static int largest(struct gen *G, bool by_batch, int64_t hi, int64_t *out, struct memest_error *err)
{
    int64_t lo = 0, bad = 0, v = 1;
    bool ok, limit, bad_limit = false;
    struct memest_error lim = {0}, bad_lim = {0};
    while (!bad) {
        if (fits_at(G, by_batch, v, &ok, &limit, &lim, err) != 0)
            return -1;
        if (!ok) {
            bad = v;
            bad_limit = limit;
            bad_lim = lim;
        } else if ((lo = v) >= hi) {
            break;
        } else {
            v = v > hi / 2 ? hi : v * 2;
        }
    }
    while (bad && bad - lo > 1) {
        int64_t mid = lo + (bad - lo) / 2;
        if (fits_at(G, by_batch, mid, &ok, &limit, &lim, err) != 0)
            return -1;
        if (ok) {
            lo = mid;
        } else {
            bad = mid;
            bad_limit = limit;
            bad_lim = lim;
        }
    }
    *out = lo;
    G->top = !bad && lo == hi;
    G->limit = bad && bad_limit;
    G->limit_at = bad;
    G->lim = bad_lim;
    return 0;
}

/* A search that ended short of the card says so (stderr), and where. */
static void search_note(const struct gen *G, const char *opt, const char *what, int64_t hi)
{
    if (G->top)
        fprintf(stderr,
                "memest: note: %s searched up to %lld (2^40) and every %s fits: the card holds "
                "at least that, memest does not search further\n",
                opt, (long long)hi, what);
    if (G->limit) {
        char msg[1200];
        memest_error_format(&G->lim, msg, sizeof msg);
        fprintf(stderr,
                "memest: note: %s: %s %lld is beyond memest's limits (%s): the answer is the "
                "largest %s within them, not the largest the card holds\n",
                opt, what, (long long)G->limit_at, msg, what);
    }
}

/* Roofline estimates on the card's preset (doc/cards-and-fit.md: labelled estimates). */
static void speed(const struct memest_app *a, const struct memest_gen_estimate *e,
                  struct memest_gen_speed *s)
{
    memset(s, 0, sizeof *s);
    const struct memest_gpu *gpu = a->card.gpu;
    if (!a->has_card || !gpu || gpu->bandwidth <= 0)
        return;
    bool fb;
    s->peak_flops = memest_gpu_peak(gpu, memest_gpu_step_precision(a->dtype, a->step.amp), &fb);
    if (s->peak_flops <= 0)
        return;
    s->have = true;
    s->bandwidth = gpu->bandwidth;
    s->mfu = a->o->mfu;
    double pc = e->prefill.flops / (s->peak_flops * s->mfu), pm = (double)e->prefill.read_bytes / s->bandwidth;
    s->prefill_s = pc > pm ? pc : pm;
    double fm = (double)e->decode_read_first / s->bandwidth, fc = e->decode_flops_first / s->peak_flops;
    double lm = (double)e->decode.read_bytes / s->bandwidth, lc = e->decode.flops / s->peak_flops;
    s->decode_first_s = fm > fc ? fm : fc;
    s->decode_last_s = lm > lc ? lm : lc;
    s->decode_compute_bound = lc > lm;
    /* each step's time grows linearly with the cache: the mean of the first and last */
    double steps = (double)e->new_tokens * (s->decode_first_s + s->decode_last_s) / 2;
    s->decode_tok_s = steps > 0 ? (double)e->batch * (double)e->new_tokens / steps : 0;
    s->total_s = s->prefill_s + steps;
}

/* --sweep-context: one row per context. */
static int sweep(struct gen *G, struct memest_gen_report *rep, struct memest_error *err)
{
    struct memest_app *a = G->a;
    struct memest_sweep_list l;
    if (memest_sweep_parse(a->o->gen_sweep, "--sweep-context", &l, err) != 0)
        return -1;
    rep->rows = calloc(l.n ? l.n : 1, sizeof *rep->rows);
    if (!rep->rows) {
        memest_sweep_list_free(&l);
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; i < l.n; i++) {
        struct memest_gen_row *row = &rep->rows[i];
        struct memest_gen_estimate e;
        row->context = l.v[i];
        if (gen_at(G, a->batch, l.v[i], &e, err) != 0) {
            memest_sweep_list_free(&l);
            return -1;
        }
        row->kv = e.kv_bytes;
        row->prefill = e.prefill.peak.bytes;
        row->decode = e.decode.peak.bytes;
        row->total = e.total_device;
        row->has_fit = a->has_card;
        row->fits = a->has_card && fits(a, &e);
        struct memest_gen_speed sp;
        speed(a, &e, &sp);
        row->has_speed = sp.have;
        row->prefill_s = sp.prefill_s;
        row->tok_s = sp.decode_tok_s;
        rep->nrows++;
    }
    memest_sweep_list_free(&l);
    return 0;
}

int memest_flow_generate(struct memest_app *a)
{
    const struct memest_cli *o = a->o;
    struct memest_error err = {0};
    struct memest_gen_estimate e;
    struct memest_gen_speed sp;
    struct memest_paged paged;
    struct memest_peak profile = {0};
    int rc = MEMEST_EXIT_OK;
    a->flow = o->max_batch ? "--max-batch" : o->max_context ? "--max-context" : "--generate";
    struct gen G = {.a = a,
                    .cfg = {.context = o->gen_context, .new_tokens = o->gen_new_tokens,
                            .kv_dtype = o->kv_dtype, .kv_dtype_set = o->kv_dtype_set,
                            .kv_fp8 = o->kv_fp8, .cache = o->gen_cache,
                            .all_logits = o->all_logits}};
    struct memest_gen_report rep = {.model = a->g.name, .dtype = a->dtype, .e = &e,
                                    .kv_block = o->kv_block, .gpu_util = o->gpu_util};
    int64_t batch = a->batch, context = o->gen_context;
    if (graph_at(a, 1, &G.dg, &err) != 0)
        goto fail;
    if (o->gen_sweep) {
        if (sweep(&G, &rep, &err) != 0)
            goto fail;
        rep.e = NULL;
        memest_render_generate(stdout, o->format, &rep);
        goto end;
    }
    if (o->max_batch || o->max_context) {   /* the search; the estimate at its answer (or 1) */
        int64_t *v = o->max_batch ? &batch : &context;
        if (largest(&G, o->max_batch, MEMEST_GEN_MAX_SEARCH, v, &err) != 0)
            goto fail;
        search_note(&G, a->flow, o->max_batch ? "batch" : "context", MEMEST_GEN_MAX_SEARCH);
        rep.has_max_batch = o->max_batch;
        rep.has_max_context = o->max_context;
        *(o->max_batch ? &rep.max_batch : &rep.max_context) = *v;
        if (!*v)
            *v = 1;
    }
    if (gen_at(&G, batch, context, &e, &err) != 0 ||
        (o->kv_block && memest_generate_profile(&G.pr, &a->step, &G.cfg, &profile, &err) != 0))
        goto fail;
    if (a->has_card) {
        rep.card = &a->card;
        memest_fit_check(e.total_device, a->card.memory, o->headroom, &rep.fit);
        speed(a, &e, &sp);
        rep.speed = &sp;
    }
    if (o->kv_block && a->has_card) {
        /* vLLM: peak = what the profile run allocated (weights included) +
         * memory outside PyTorch (here the CUDA context) */
        rep.profile_peak = profile.bytes;
        memest_paged_blocks(a->card.memory, o->gpu_util, profile.bytes + e.overhead, e.kv_token_bytes,
                            o->kv_block, e.context + e.new_tokens, &paged);
        rep.paged = &paged;
    }
    memest_render_generate(stdout, o->format, &rep);
    /* nothing fits: exit 1, as --max-batch */
    if ((rep.has_max_batch && !rep.max_batch) || (rep.has_max_context && !rep.max_context))
        rc = MEMEST_EXIT_NOFIT;
    goto end;
fail:
    rc = memest_app_fail(o, &err);
end:
    free(rep.rows);
    memest_run_free(&G.pr);
    memest_run_free(&G.dr);
    if (G.have_pg)
        memest_graph_free(&G.pg);
    memest_graph_free(&G.dg);
    return rc;
}
