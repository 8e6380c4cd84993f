/* calc_grads.c - gradient memory: one gradient per trainable parameter
 * (shared parameters once), in the parameter's dtype. */
#include "memest/calc.h"
#include "memest/checked.h"

uint64_t memest_calc_grads(const struct memest_run *r)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < r->nparams; i++) {
        const struct memest_param *p = &r->params[i];
        if (p->tied_to < 0 && p->trainable)
            total = memest_sat_add(total, r->storages[p->storage].bytes);
    }
    return total;
}
