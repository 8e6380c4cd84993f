/* fit.c - the fit verdict (--fit) and the largest batch that fits
 * (--max-batch) by a doubling search and bisection. Its one-line text is
 * the report layer's (src/report/report_fit.c). */
#include "memest/fit.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "memest/checked.h"

uint64_t memest_fit_needs(const struct memest_estimate *e, bool inference)
{
    const struct memest_pressure *p = inference ? &e->infer_pressure : &e->pressure;
    if (p->searched)
        return memest_sat_add(p->least, e->overhead);
    return inference ? e->infer_total_device : e->total_device;
}

void memest_fit_judge(const struct memest_estimate *e, bool inference, uint64_t card,
                      double headroom_pct, struct memest_fit *out)
{
    const struct memest_pressure *p = inference ? &e->infer_pressure : &e->pressure;
    memest_fit_check(memest_fit_needs(e, inference), card, headroom_pct, out);
    out->unconstrained = inference ? e->infer_total_device : e->total_device;
    out->has_least = p->searched;
    out->least_exact = p->least_exact;
    if (p->judged) {
        out->judged = true;
        out->fraction = p->fraction;
        out->allowed = p->capacity;
        out->least_allocator = p->searched ? p->least : 0;
        out->fits = p->completes;
        out->retries = p->retries;
        out->released = p->released;
    }
}

void memest_fit_check(uint64_t needs, uint64_t card, double headroom_pct, struct memest_fit *out)
{
    out->needs = needs;
    out->card = card;
    out->headroom_pct = headroom_pct;
    double usable = floor((double)card * (1.0 - headroom_pct / 100.0));
    if (usable < 0)
        usable = 0;
    /* (double)card may round up past card for cards above 2^53 bytes */
    out->usable = usable >= (double)card ? card : (uint64_t)usable;
    out->free = needs <= card ? (int64_t)(card - needs) : -(int64_t)(needs - card);
    out->fits = needs <= out->usable;
}

/* The predicates' values at the batches the two searches evaluated: the
 * second search and the scan reuse them (each search evaluates at most 2 x
 * 63 batches: doubling, then bisection). */
#define MEMO_MAX 256

struct memo {
    memest_fits_fn fn;
    void *ctx;
    int *calls;
    int n;
    int64_t b[MEMO_MAX];
    bool f[MEMO_MAX], may[MEMO_MAX];
};

/* fits() and may_fit() at b, evaluated once. 0 / -1. */
static int eval(struct memo *m, int64_t b, bool *f, bool *may, struct memest_error *err)
{
    for (int i = 0; i < m->n; i++)
        if (m->b[i] == b) {
            *f = m->f[i];
            *may = m->may[i];
            return 0;
        }
    ++*m->calls;
    if (m->fn(m->ctx, b, f, may, err) != 0)
        return -1;
    if (m->n < MEMO_MAX) {
        m->b[m->n] = b;
        m->f[m->n] = *f;
        m->may[m->n++] = *may;
    }
    return 0;
}

/* The largest b in [1, limit] with pred(b) for a predicate that holds up to
 * some point and not after: doubling from 1, then bisection. which: 0 tests
 * fits, 1 may_fit. */
static int search(struct memo *m, int64_t limit, int which, int64_t *out,
                  struct memest_error *err)
{
    bool v[2];
#define TEST(b) (eval(m, (b), &v[0], &v[1], err) != 0 ? -1 : (int)v[which])
    *out = 0;
    int f = TEST(1);
    if (f <= 0)
        return f < 0 ? -1 : 0;
    int64_t lo = 1, hi = 0; /* lo holds; hi (when set) does not */
    while (lo <= limit / 2) {
        f = TEST(lo * 2);
        if (f < 0)
            return -1;
        if (!f) {
            hi = lo * 2;
            break;
        }
        lo *= 2;
    }
    if (hi == 0) {
        if (lo == limit) {
            *out = lo;
            return 0;
        }
        f = TEST(limit);
        if (f < 0)
            return -1;
        if (f) {
            *out = limit;
            return 0;
        }
        hi = limit;
    }
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        f = TEST(mid);
        if (f < 0)
            return -1;
        *(f ? &lo : &hi) = mid;
    }
#undef TEST
    *out = lo;
    return 0;
}

int memest_fit_max_batch(memest_fits_fn fits, memest_afford_fn afford, void *ctx, int64_t limit,
                         struct memest_max_batch *out, struct memest_error *err)
{
    memset(out, 0, sizeof *out);
    if (limit < 1)
        return 0;
    struct memo m = {.fn = fits, .ctx = ctx, .calls = &out->calls};
    if (search(&m, limit, 0, &out->steady, err) != 0 ||
        search(&m, limit, 1, &out->bound, err) != 0)
        return -1;
    out->best = out->steady;
    out->scan_max = MEMEST_MAX_BATCH_SCAN;
    if (afford && out->bound > out->steady) {
        int64_t n = afford(ctx);
        out->scan_max = n < 0 ? 0 : n < MEMEST_MAX_BATCH_SCAN ? n : MEMEST_MAX_BATCH_SCAN;
    }
    int64_t stop = out->steady;
    if (out->bound - out->steady > out->scan_max) {
        out->capped = true;
        stop = out->bound - out->scan_max;
    }
    for (int64_t b = out->bound; b > stop; b--) {
        bool f, may;
        if (eval(&m, b, &f, &may, err) != 0)
            return -1;
        if (f) {
            out->best = b;
            break;
        }
    }
    return 0;
}
