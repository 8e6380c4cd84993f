/* calc_params.c - parameter and buffer totals, and a node's own parameters;
 * a tied parameter counts once. */
#include <stdlib.h>

#include "memest/calc.h"
#include "memest/checked.h"
#include "memest/ops.h"

/* An int argument of a node (its value or default), or -1 without one. */
static int64_t node_int_arg(const struct memest_node *n, const char *name)
{
    int k = memest_op_arg_index(n->op, name);
    return k >= 0 && n->args[k].v ? n->args[k].v[0] : -1;
}

/* inner[n]: the innermost block instance around node n (UINT32_MAX: none).
 * Instances are recorded as their expansion ends, so an inner one comes
 * before those around it: the first recorded that holds n is the
 * innermost. Each node is visited once per instance around it (the
 * nesting depth). */
static void innermost_blocks(const struct memest_graph *g, uint32_t *inner)
{
    for (uint32_t n = 0; n < g->nnodes; n++)
        inner[n] = UINT32_MAX;
    for (uint32_t b = 0; b < g->nblocks; b++)
        for (uint32_t n = g->blocks[b].first; n <= g->blocks[b].last && n < g->nnodes; n++)
            if (inner[n] == UINT32_MAX)
                inner[n] = b;
}

struct expert_sum {
    int64_t E;           /* experts of the layer */
    uint64_t q, rem;     /* sum of pe * (E - k), as q * E + rem (rem < E) */
};

/* The parameters of the experts a token is not routed to: for each
 * moe_gather (one per expert), the innermost block instance around it is
 * the expert; (1 - top_k / num_experts) of its parameters, summed per
 * expert count E so that a layer's experts add up exactly before the
 * division. 0 / -1 (out of memory). */
static int unrouted_params(const struct memest_run *r, uint64_t *out)
{
    const struct memest_graph *g = r->g;
    *out = 0;
    uint32_t first = 0;
    while (first < g->nnodes && !g->nodes[first].op->moe_expert_tokens)
        first++;
    if (first == g->nnodes)
        return 0;
    uint32_t *inner = malloc(sizeof *inner * g->nnodes);
    if (!inner)
        return -1;
    innermost_blocks(g, inner);
    struct expert_sum acc[16];
    int nacc = 0;
    uint64_t skip = 0;
    for (uint32_t n = first; n < g->nnodes; n++) {
        if (!g->nodes[n].op->moe_expert_tokens || inner[n] == UINT32_MAX)
            continue;
        int64_t E = node_int_arg(&g->nodes[n], "num_experts");
        int64_t k = node_int_arg(&g->nodes[n], "top_k");
        const struct memest_block_inst *in = &g->blocks[inner[n]];
        if (E < 1 || k < 0 || k > E)
            continue;
        uint64_t pe = 0;
        for (uint32_t m = in->first; m <= in->last && m < g->nnodes; m++)
            pe = memest_sat_add(pe, memest_node_params(r, m));
        uint64_t e = (uint64_t)E, part = memest_sat_mul(pe % e, (uint64_t)(E - k));
        int a = 0;
        while (a < nacc && acc[a].E != E)
            a++;
        if (a == nacc && nacc < 16)
            acc[nacc++] = (struct expert_sum){E, 0, 0};
        /* pe * (E - k) / E = (pe / E) * (E - k) + (pe % E) * (E - k) / E */
        skip = memest_sat_add(skip, memest_sat_mul(pe / e, (uint64_t)(E - k)));
        if (a < nacc) {
            acc[a].q = memest_sat_add(acc[a].q, part / e);
            acc[a].rem += part % e;
            acc[a].q += acc[a].rem / e;
            acc[a].rem %= e;
        } else {   /* more than 16 expert counts: this one rounded alone */
            skip = memest_sat_add(skip, part / e);
        }
    }
    for (int a = 0; a < nacc; a++)
        skip = memest_sat_add(skip, acc[a].q);
    free(inner);
    *out = skip;
    return 0;
}

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
    uint64_t skip;
    if (unrouted_params(r, &skip) != 0)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    t.active = skip < t.total ? t.total - skip : 0;
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
