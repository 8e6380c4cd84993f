/* app_budget.c - the work budget of one command (cost.h): what the flows
 * charge for each estimate and each graph they build, and how many more
 * estimates they can afford. */
#include <stdio.h>

#include "memest/app.h"
#include "memest/format.h"

/* The command's budget (MEMEST_MAX_WORK unless a test lowered it). */
static uint64_t budget(const struct memest_app *a)
{
    return a->max_work ? a->max_work : MEMEST_MAX_WORK;
}

int memest_app_charge(struct memest_app *a, uint64_t units, struct memest_error *err)
{
    uint64_t max = budget(a);
    if (a->work <= max && units <= max - a->work) {
        a->work += units;
        return 0;
    }
    char b[4][32];
    a->over_budget = true;
    return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                       "%s%sthe command needs more work than memest does for one command "
                       "(%s cost units, a few seconds): %s units spent on %u estimates so far, "
                       "the costliest %s units, and %s more needed; ask for fewer estimates "
                       "(shorter sweeps) or use a smaller model",
                       a->flow ? a->flow : "", a->flow ? ": " : "",
                       memest_fmt_count(max, b[0], sizeof b[0]),
                       memest_fmt_count(a->work, b[1], sizeof b[1]), a->estimates,
                       memest_fmt_count(a->top_cost, b[2], sizeof b[2]),
                       memest_fmt_count(units, b[3], sizeof b[3]));
}

int64_t memest_app_affordable(const struct memest_app *a)
{
    uint64_t max = budget(a);
    if (a->top_cost == 0 || a->work >= max)
        return 0;
    uint64_t n = (max - a->work) / a->top_cost;
    return n > INT64_MAX ? INT64_MAX : (int64_t)n;
}
