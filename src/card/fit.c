/* fit.c - the fit verdict (--fit), its one-line text, and the largest batch
 * that fits (--max-batch) by a doubling search and bisection. */
#include "memest/fit.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "memest/checked.h"

uint64_t memest_fit_needs(const struct memest_estimate *e, bool inference)
{
    return inference ? e->infer_total_device : e->total_device;
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
    out->fits = needs <= out->usable;
}

/* bytes in the IEC unit of unit_of, with `dec` decimals */
static char *fmt_size(uint64_t bytes, uint64_t unit_of, int dec, char *buf, size_t n)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    double div = 1;
    while (u < 6 && (double)unit_of >= div * 1024) {
        div *= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, n, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, n, "%.*f %s", dec, (double)bytes / div, units[u]);
    return buf;
}

char *memest_fmt_size1(uint64_t bytes, uint64_t unit_of, char *buf, size_t n)
{
    return fmt_size(bytes, unit_of, 1, buf, n);
}

char *memest_fit_line(const struct memest_fit *f, char *buf, size_t n)
{
    char need[32], card[32], rest[32], other_s[32];
    /* one decimal, or for a step that does not fit as many as it takes (up
     * to 4) to tell apart the two figures the verdict compares */
    uint64_t other = f->needs > f->card ? f->card : f->usable;
    int dec = 1;
    for (; !f->fits && dec < 4; dec++) {
        fmt_size(f->needs, f->needs, dec, need, sizeof need);
        fmt_size(other, other, dec, other_s, sizeof other_s);
        if (f->needs == other || strcmp(need, other_s) != 0)
            break;
    }
    fmt_size(f->needs, f->needs, dec, need, sizeof need);
    fmt_size(f->card, f->card, dec, card, sizeof card);
    if (f->fits) {
        double pct = f->card ? 100.0 * (double)f->needs / (double)f->card : 0;
        long shown = lround(pct);
        if (shown >= 100 && f->needs < f->card)
            shown = 99;
        uint64_t free_b = f->card - f->needs;
        snprintf(buf, n, "fits: %s of %s (%ld%%), headroom %s", need, card, shown,
                 fmt_size(free_b, free_b, dec, rest, sizeof rest));
    } else if (f->needs > f->card) {
        snprintf(buf, n, "does not fit: needs %s, card has %s", need, card);
    } else {
        snprintf(buf, n, "does not fit: needs %s, card has %s (%s with %g%% headroom)", need, card,
                 fmt_size(f->usable, f->usable, dec, rest, sizeof rest), f->headroom_pct);
    }
    return buf;
}

/* The largest b in [1, limit] with pred(b) for a predicate that holds up to
 * some point and not after: doubling from 1, then bisection. which: 0 tests
 * fits, 1 may_fit. */
static int search(memest_fits_fn fn, void *ctx, int64_t limit, int which, int64_t *out,
                  int *calls, struct memest_error *err)
{
    bool v[2];
#define TEST(b) (++*calls, fn(ctx, (b), &v[0], &v[1], err) != 0 ? -1 : (int)v[which])
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
    if (search(fits, ctx, limit, 0, &out->steady, &out->calls, err) != 0 ||
        search(fits, ctx, limit, 1, &out->bound, &out->calls, err) != 0)
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
        out->calls++;
        if (fits(ctx, b, &f, &may, err) != 0)
            return -1;
        if (f) {
            out->best = b;
            break;
        }
    }
    return 0;
}
