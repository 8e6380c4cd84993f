/* calc_params.c - parameter and buffer totals, and a node's own parameters;
 * a tied parameter counts once. */
#include "memest/calc.h"
#include "memest/checked.h"

int memest_calc_params(const struct memest_run *r, struct memest_param_totals *out,
                       struct memest_error *err)
{
    struct memest_param_totals t = {0};
    bool ok = true;
    for (uint32_t i = 0; i < r->nparams; i++) {
        const struct memest_param *p = &r->params[i];
        if (p->tied_to >= 0)
            continue;
        /* a quantised weight's state lies in storages of its own */
        uint64_t bytes = memest_sat_add(r->storages[p->storage].bytes, p->state_bytes);
        ok &= memest_add(t.total, p->numel, &t.total) && memest_add(t.bytes, bytes, &t.bytes);
        t.tensors++;
        if (p->trainable) {
            ok &= memest_add(t.trainable, p->numel, &t.trainable) &&
                  memest_add(t.trainable_bytes, bytes, &t.trainable_bytes);
            t.trainable_tensors++;
        }
    }
    t.frozen = t.total - t.trainable;
    for (uint32_t i = 0; i < r->nbuffers; i++) {
        const struct memest_buffer *b = &r->buffers[i];
        uint64_t bytes;
        ok &= memest_mul(b->numel, memest_dtype_size((enum memest_dtype)b->dtype), &bytes) &&
              memest_add(t.buffer_elems, b->numel, &t.buffer_elems) &&
              memest_add(t.buffer_bytes, bytes, &t.buffer_bytes);
        t.buffer_tensors++;
    }
    if (!ok)
        return memest_errf(err, MEMEST_ERR_LIMIT, NULL, "the parameters exceed 2^63 bytes");
    *out = t;
    return 0;
}

uint64_t memest_node_params(const struct memest_run *r, uint32_t node)
{
    const struct memest_nodeinfo *ni = &r->nodes[node];
    uint64_t n = 0;
    for (uint32_t p = ni->param_first; p < ni->param_first + ni->nparam; p++)
        if (r->params[p].tied_to < 0)
            n += r->params[p].numel;
    return n;
}
