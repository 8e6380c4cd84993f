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

int memest_app_cost(struct memest_app *a, int64_t batch, const struct memest_step_cfg *step,
                    enum memest_dtype dtype, uint64_t *units, struct memest_error *err)
{
    struct memest_run_opts ro = a->o->run;   /* --attention, --fused, ... */
    ro.batch = batch;
    ro.dtype = dtype;
    struct memest_error e1 = {0};
    struct memest_cost c;
    if (memest_run_infer(&a->r, &a->g, &ro, &e1) == 0 &&
        memest_estimate_cost(&a->r, step, &c, &e1) == 0) {
        *units = c.total;
        return 0;
    }
    if (e1.code != MEMEST_ERR_LIMIT) {
        *err = e1;
        return memest_app_overrides_note(a, err);
    }
    memest_cost_records(&a->r, &c);   /* refused: what shape inference made */
    *units = c.records;
    return 0;
}

int64_t memest_app_affordable(const struct memest_app *a)
{
    uint64_t max = budget(a);
    if (a->top_cost == 0 || a->work >= max)
        return 0;
    uint64_t n = (max - a->work) / a->top_cost;
    return n > INT64_MAX ? INT64_MAX : (int64_t)n;
}
