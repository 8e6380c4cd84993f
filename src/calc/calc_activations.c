/* calc_activations.c - activation memory saved for backward: the distinct
 * storages that nodes save (a storage saved by several nodes, or a view of
 * a saved tensor, counts once), attributed to the first node saving it. */
#include "memest/calc.h"
#include "memest/checked.h"

uint64_t memest_calc_activations(struct memest_run *r)
{
    uint64_t total = 0;
    for (uint32_t s = 0; s < r->nstorages; s++)
        r->storages[s].saved = false;
    for (uint32_t n = 0; n < r->g->nnodes; n++) {
        struct memest_nodeinfo *ni = &r->nodes[n];
        ni->act_bytes = 0;
        for (uint32_t k = ni->save_first; k < ni->save_first + ni->nsave; k++) {
            struct memest_storage *st = &r->storages[r->saves[k]];
            if (st->saved || st->kind == MEMEST_ST_PARAM || st->kind == MEMEST_ST_BUFFER)
                continue;
            st->saved = true;
            ni->act_bytes = memest_sat_add(ni->act_bytes, st->bytes);
            total = memest_sat_add(total, st->bytes);
        }
    }
    return total;
}
