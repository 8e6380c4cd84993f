/* flow_compare.c - --gpu all, or a list of presets (--gpu t4,l4,h100-80gb):
 * the cards compared for the model and step as given (compare.h). For each
 * card: the fit at --batch, the largest batch that fits (the --max-batch
 * search), and the time at that batch; --price adds samples per unit of the
 * user's price. The rows are handed, sorted, to the report layer.
 *
 * A step's memory depends on the card only through its compute capability
 * (the cuBLAS workspace, sim/cuda_overhead.c): the cards of one generation
 * share their estimates, by batch, and each card's search reads them against
 * its own memory: a card with room for the unconstrained reserved peak runs
 * the step, one with less than the least memory it runs in (searched
 * exactly) does not, and one in between is told by the step replayed on it
 * (an estimate of its own, not shared). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memest/app.h"
#include "memest/checked.h"
#include "memest/compare.h"
#include "memest/progress.h"
#include "memest/report.h"
#include "memest/sweep.h"

/* ---- the estimates by compute capability and batch ---- */

struct memo_ent {
    bool used, limit;
    unsigned cc;
    int64_t batch;
    uint64_t total, lower;   /* the row's total_device and lower bound */
    uint64_t least;          /* its least device memory (0: not searched) */
    bool least_exact;
};

struct memo {
    struct memo_ent *t;
    size_t cap, n;           /* cap: a power of two, or 0 */
};

static size_t memo_hash(unsigned cc, int64_t batch, size_t cap)
{
    uint64_t h = ((uint64_t)batch * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)cc * 0xC2B2AE3D27D4EB4Full);
    return (size_t)(h >> 17) & (cap - 1);
}

/* The slot of (cc, batch): its entry, or the empty slot it would take. */
static struct memo_ent *memo_slot(const struct memo *m, unsigned cc, int64_t batch)
{
    for (size_t i = memo_hash(cc, batch, m->cap);; i = (i + 1) & (m->cap - 1)) {
        struct memo_ent *e = &m->t[i];
        if (!e->used || (e->cc == cc && e->batch == batch))
            return e;
    }
}

/* Room for one more entry (the table at most half full). 0 / -1. */
static int memo_reserve(struct memo *m)
{
    if (m->cap && (m->n + 1) * 2 <= m->cap)
        return 0;
    size_t cap = m->cap ? m->cap * 2 : 256;
    struct memo old = *m;
    m->t = calloc(cap, sizeof *m->t);
    if (!m->t) {
        *m = old;
        return -1;
    }
    m->cap = cap;
    for (size_t i = 0; i < old.cap; i++)
        if (old.t[i].used)
            *memo_slot(m, old.t[i].cc, old.t[i].batch) = old.t[i];
    free(old.t);
    return 0;
}

struct cmp {
    struct memest_app *a;
    struct memo memo;
    struct memest_progress pg;
    size_t card, ncards;     /* the card being searched, for the progress line */
    int64_t gpus, gpus_per_node, nodes;   /* the layout: world size, its nodes */
};

/* The entry of `batch` on the current card's compute capability, estimated
 * when no card of that capability needed it before. NULL with err set. */
static const struct memo_ent *entry(struct cmp *c, int64_t batch, struct memest_error *err)
{
    /* the compute capability, and NVSwitch (NCCL's memory, nccl_mem.h) */
    unsigned cc = c->a->step.gpu_arch * 2 + c->a->step.nvswitch;
    if (memo_reserve(&c->memo) != 0) {
        memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
        return NULL;
    }
    struct memo_ent *e = memo_slot(&c->memo, cc, batch);
    if (e->used)
        return e;
    struct memest_sweep_row row;
    uint64_t usable = c->a->step.card_usable;
    c->a->step.card_usable = 0;   /* no card's replay: the entry is every card's */
    int rc = memest_app_row(c->a, batch, &row, err);
    c->a->step.card_usable = usable;
    if (rc != 0)
        return NULL;
    *e = (struct memo_ent){.used = true, .limit = row.limit, .cc = cc, .batch = batch,
                           .total = row.total_device, .lower = row.lower, .least = row.least,
                           .least_exact = row.least_exact};
    c->memo.n++;
    memest_progress_update(&c->pg, c->card, c->a->card.name);
    return e;
}

/* The verdict of entry e on the current card: from its figures where they
 * decide it, else from the step replayed on the card. 0 / -1. */
static int card_fit(struct cmp *c, const struct memo_ent *e, struct memest_fit *f,
                    struct memest_error *err)
{
    struct memest_app *a = c->a;
    memest_app_fit_from(a, e->least, e->total, e->least_exact, f);
    uint64_t room = a->step.card_usable;   /* the card less the headroom and --used */
    if (e->limit)
        return 0;
    if (e->total <= room || (e->least_exact && e->least > room)) {
        f->fits = e->total <= room;
        return 0;
    }
    struct memest_sweep_row row;
    if (memest_app_row_verdict(a, e->batch, &row, err) != 0)
        return -1;
    f->judged = true;
    f->fits = row.fits;
    return 0;
}

static int fits_at(void *ctx, int64_t batch, bool *fits, bool *may_fit, struct memest_error *err)
{
    struct cmp *c = ctx;
    const struct memo_ent *e = entry(c, batch, err);
    if (!e)
        return -1;
    struct memest_fit f;
    if (card_fit(c, e, &f, err) != 0)
        return -1;
    *fits = !e->limit && f.fits;
    *may_fit = !e->limit && e->lower <= f.usable;
    return 0;
}

/* The scan's estimates the command can still afford: an even share of
 * what is left among this card and those after it, keeping two per card
 * for their figures at the largest batch. */
static int64_t afford(void *ctx)
{
    struct cmp *c = ctx;
    int64_t n = memest_app_affordable(c->a);
    int64_t left = (int64_t)(c->ncards - c->card), keep = 2 * left;
    return n > keep ? (n - keep) / left : 0;
}

/* ---- the cards ---- */

/* The cards --gpu names: every preset for "all", else the comma list, each
 * once. *out (free it) and *n. 0 / -1. */
static int resolve_cards(const struct memest_app *a, const struct memest_gpu ***out, size_t *n,
                         struct memest_error *err)
{
    const char *list = a->o->gpu;
    const struct memest_gpu **cards = calloc(a->gpus.n ? a->gpus.n : 1, sizeof *cards);
    if (!cards)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    size_t k = 0;
    if (strcmp(list, "all") == 0) {
        for (; k < a->gpus.n; k++)
            cards[k] = &a->gpus.gpus[k];
    } else {
        for (const char *p = list;; p++) {
            size_t len = strcspn(p, ",");
            char name[64];
            if (len == 0 || len >= sizeof name) {
                free(cards);
                return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                                   "--gpu: expected preset names separated by commas, got '%s'",
                                   list);
            }
            memcpy(name, p, len);
            name[len] = 0;
            if (strcmp(name, "all") == 0 || strcmp(name, "auto") == 0) {
                free(cards);
                return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                                   "--gpu: %s stands alone, not in a list ('%s')", name, list);
            }
            const struct memest_gpu *g = memest_gpu_lookup(&a->gpus, name, err);
            if (!g) {
                free(cards);
                return -1;
            }
            for (size_t i = 0; i < k; i++)
                if (cards[i] == g) {
                    free(cards);
                    return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                                       "--gpu: %s is listed twice ('%s')", g->name, list);
                }
            if (k == a->gpus.n) {   /* unreachable: each preset once */
                free(cards);
                return memest_errf(err, MEMEST_ERR_INTERNAL, NULL, "--gpu: too many cards");
            }
            cards[k++] = g;
            p += len;
            if (!*p)
                break;
        }
    }
    *out = cards;
    *n = k;
    return 0;
}

/* --price: each name a preset among the cards compared. 0 / -1. */
static int apply_prices(const struct memest_app *a, struct memest_compare_row *rows, size_t n,
                        struct memest_error *err)
{
    const struct memest_cli *o = a->o;
    for (int k = 0; k < o->nprices; k++) {
        const struct memest_gpu *g = memest_gpu_lookup_opt(&a->gpus, o->prices[k].name,
                                                           "--price", err);
        if (!g)
            return -1;
        size_t i = 0;
        while (i < n && rows[i].gpu != g)
            i++;
        if (i == n)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                               "--price: %s is not among the cards compared (--gpu %s)",
                               o->prices[k].name, o->gpu);
        if (rows[i].has_price)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--price: %s is priced twice",
                               g->name);
        rows[i].has_price = true;
        rows[i].price = o->prices[k].per_hour;
    }
    return 0;
}

/* One card's row: the fit at --batch, the largest batch, its time. */
static int card_row(struct cmp *c, struct memest_compare_row *row, struct memest_error *err)
{
    struct memest_app *a = c->a;
    const struct memest_gpu *g = row->gpu;
    a->card = (struct memest_card){MEMEST_CARD_PRESET, g->name, g->label, g->memory, g};
    a->has_card = true;
    a->step.gpu_arch = g->compute_capability;
    a->step.nvswitch = g->nvswitch;
    memest_app_card_usable(a);

    const struct memo_ent *e = entry(c, a->batch, err);
    if (!e || card_fit(c, e, &row->fit, err) != 0)
        return -1;
    if (e->limit) {   /* the message, from the estimate again */
        struct memest_sweep_row lr;
        if (memest_app_row(a, a->batch, &lr, err) != 0)
            return -1;
        row->limit = true;
        memcpy(row->limit_msg, lr.limit_msg, sizeof row->limit_msg);
        row->fit.fits = false;
    }
    if (memest_fit_max_batch(fits_at, afford, c, MEMEST_SWEEP_MAX_VALUE, &row->mb, err) != 0)
        return -1;
    if (row->mb.best == 0)
        return 0;
    struct memest_sweep_row br;   /* the time needs the run at that batch */
    if (memest_app_row(a, row->mb.best, &br, err) != 0)
        return -1;
    row->best_needs = br.least ? br.least : br.total_device;
    struct memest_time_opts t;
    row->has_time = br.has_time &&
                    memest_app_time_opts(a, &a->step, a->dtype, &t, &row->precision,
                                         &row->peak_fallback);
    if (!row->has_time)
        return 0;
    row->time = br.time;
    row->peak_flops = t.peak_flops;
    row->per_node = c->nodes > 1 ? row->time.samples_per_s / (double)c->nodes : 0;
    if (row->has_price)   /* the job's price per hour: every GPU of it */
        row->per_price = row->time.samples_per_s * 3600.0 / (row->price * (double)c->gpus);
    return 0;
}

int memest_flow_compare(struct memest_app *a)
{
    const struct memest_cli *o = a->o;
    struct memest_error err = {0};
    const struct memest_gpu **cards = NULL;
    struct memest_compare_row *rows = NULL;
    size_t n = 0;
    a->flow = "--gpu all";
    if (resolve_cards(a, &cards, &n, &err) != 0)
        return memest_app_fail(o, &err);
    rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows) {
        free(cards);
        memest_errf(&err, MEMEST_ERR_NOMEM, NULL, "out of memory");
        return memest_app_fail(o, &err);
    }
    for (size_t i = 0; i < n; i++)
        rows[i] = (struct memest_compare_row){.gpu = cards[i], .index = i};
    free(cards);
    if (apply_prices(a, rows, n, &err) != 0) {
        free(rows);
        return memest_app_fail(o, &err);
    }
    /* several GPUs: the layout's nodes (gpus_per_node 0: N up to 8) */
    struct cmp c = {.a = a, .ncards = n, .gpus = a->dist.gpus > 1 ? a->dist.gpus : 1};
    c.gpus_per_node = memest_dist_gpus_per_node(&a->dist);
    c.nodes = (c.gpus + c.gpus_per_node - 1) / c.gpus_per_node;
    memest_progress_begin(&c.pg, "--gpu all", "cards", n);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        c.card = i;
        memest_progress_update(&c.pg, i, rows[i].gpu->name);
        rc = card_row(&c, &rows[i], &err);
    }
    memest_progress_end(&c.pg);
    free(c.memo.t);
    a->has_card = false;
    memest_app_card_usable(a);
    if (rc != 0) {
        free(rows);
        return memest_app_fail(o, &err);
    }
    bool by_price = o->nprices > 0;
    memest_compare_sort(rows, n, by_price);
    size_t fitting = 0;
    for (size_t i = 0; i < n; i++)
        fitting += !rows[i].limit && rows[i].fit.fits;
    struct memest_compare_report rep = {
        .model = a->g.name, .file = a->g.file, .optimizer = memest_optim_name(a->step.optim.kind),
        .dtype = memest_dtype_name(a->dtype), .inference = o->inference, .batch = a->batch,
        .headroom_pct = o->headroom, .mfu = o->mfu, .gpus = c.gpus,
        .gpus_per_node = c.gpus_per_node, .nodes = c.nodes, .by_price = by_price,
        .rows = rows, .n = n, .fitting = fitting};
    memest_render_compare(stdout, o->format, &rep);
    for (size_t i = 0; i < n; i++)   /* a search that reached its top, not the card's */
        if (rows[i].mb.best == MEMEST_SWEEP_MAX_VALUE)
            fprintf(stderr, "memest: note: %s: the largest batch was searched up to %lld (2^53-1, "
                    "memest's largest batch) and every batch fits: the card holds at least that\n",
                    rows[i].gpu->name, (long long)MEMEST_SWEEP_MAX_VALUE);
    free(rows);
    return fitting ? MEMEST_EXIT_OK : MEMEST_EXIT_NOFIT;
}
