/* report_fit.c - the one-line fit verdict of --fit, --max-batch and
 * --advise, and of the card section of a report. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "memest/fit.h"
#include "memest/format.h"
#include "memest/report.h"

char *memest_fit_text(const struct memest_fit *f, char *buf, size_t n)
{
    char need[32], card[32], rest[32], other_s[32];
    /* one decimal, or for a step that does not fit as many as it takes (up
     * to 4) to tell apart the two figures the verdict compares */
    uint64_t other = f->needs > f->card ? f->card : f->usable;
    int dec = 1;
    for (; !f->fits && dec < 4; dec++) {
        memest_fmt_iec(f->needs, dec, need, sizeof need);
        memest_fmt_iec(other, dec, other_s, sizeof other_s);
        if (f->needs == other || strcmp(need, other_s) != 0)
            break;
    }
    memest_fmt_iec(f->needs, dec, need, sizeof need);
    memest_fmt_iec(f->card, dec, card, sizeof card);
    if (f->fraction) {   /* the allocator's own limit: set_per_process_memory_fraction */
        char lim[32], al[32];
        memest_fmt_iec(f->allowed, 2, lim, sizeof lim);
        memest_fmt_iec(f->least_allocator, 2, al, sizeof al);
        if (f->fits)
            snprintf(buf, n, "fits: within the %s set_per_process_memory_fraction allows%s%s%s",
                     lim, f->least_allocator ? " (it runs in " : "", f->least_allocator ? al : "",
                     f->least_allocator ? ")" : "");
        else
            snprintf(buf, n, "does not fit: set_per_process_memory_fraction allows %s%s%s", lim,
                     f->least_allocator ? ", the step runs in " : "",
                     f->least_allocator ? al : "");
        return buf;
    }
    if (f->fits) {
        double pct = f->card ? 100.0 * (double)f->needs / (double)f->card : 0;
        long shown = lround(pct);
        if (shown >= 100 && f->needs < f->card)
            shown = 99;
        int w = snprintf(buf, n, "fits: %s of %s (%ld%%), headroom %s", need, card, shown,
                         memest_fmt_iec((uint64_t)f->free, dec, rest, sizeof rest));
        if (f->has_least && f->unconstrained > f->usable && w > 0 && (size_t)w < n)
            snprintf(buf + w, n - (size_t)w, ", once PyTorch frees its cached blocks (%s "
                     "reserved without)", memest_fmt_iec(f->unconstrained, dec, rest,
                                                          sizeof rest));
    } else if (f->judged && f->needs <= f->usable) {
        snprintf(buf, n, "does not fit: runs out of memory on this card although it runs in "
                 "%s (the allocator's releases fall otherwise), card has %s", need, card);
    } else if (f->needs > f->card) {
        snprintf(buf, n, "does not fit: needs %s, card has %s", need, card);
    } else {
        snprintf(buf, n, "does not fit: needs %s, card has %s (%s with %g%% headroom)", need, card,
                 memest_fmt_iec(f->usable, dec, rest, sizeof rest), f->headroom_pct);
    }
    return buf;
}
