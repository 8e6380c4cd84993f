/* compare.c - the order of a card comparison's rows (compare.h). */
#include "memest/compare.h"

/* The samples/s a fitting row is ranked by (0 without a time). */
static double speed(const struct memest_compare_row *r)
{
    return r->has_time ? r->time.samples_per_s : 0;
}

static bool fits(const struct memest_compare_row *r)
{
    return !r->limit && r->fit.fits;
}

/* < 0 when a comes before b. */
static int cmp_rows(const struct memest_compare_row *a, const struct memest_compare_row *b,
                    bool by_price)
{
    if (fits(a) != fits(b))
        return fits(a) ? -1 : 1;
    if (fits(a)) {
        if (by_price) {
            bool pa = a->per_price > 0, pb = b->per_price > 0;
            if (pa != pb)
                return pa ? -1 : 1;
            if (a->per_price != b->per_price)
                return a->per_price > b->per_price ? -1 : 1;
        }
        if (speed(a) != speed(b))
            return speed(a) > speed(b) ? -1 : 1;
    } else if (a->mb.best != b->mb.best) {
        return a->mb.best > b->mb.best ? -1 : 1;
    }
    return a->index < b->index ? -1 : a->index > b->index;
}

/* An insertion sort: a comparison has one row per preset at most, and the
 * order needs the by_price flag, which qsort cannot pass. */
void memest_compare_sort(struct memest_compare_row *rows, size_t n, bool by_price)
{
    for (size_t i = 1; i < n; i++) {
        struct memest_compare_row x = rows[i];
        size_t j = i;
        for (; j > 0 && cmp_rows(&x, &rows[j - 1], by_price) < 0; j--)
            rows[j] = rows[j - 1];
        rows[j] = x;
    }
}
