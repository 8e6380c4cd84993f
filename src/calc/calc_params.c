/* calc_params.c - parameter and buffer totals, and a node's own parameters;
 * a tied parameter counts once. */
#include "memest/calc.h"
#include "memest/checked.h"
#include "memest/ops.h"

/* An int argument of a node (its value or default), or -1 without one. */
static int64_t node_int_arg(const struct memest_node *n, const char *name)
{
    int k = memest_op_arg_index(n->op, name);
    return k >= 0 && n->args[k].v ? n->args[k].v[0] : -1;
}

/* The parameters of the experts a token is not routed to: for each
 * moe_gather (one per expert), the innermost block instance around it is
 * the expert; (1 - top_k / num_experts) of its parameters. Block instances
 * nest, so the innermost is the shortest one holding the node. */
struct expert_sum {
    int64_t E;           /* experts of the layer */
    uint64_t q, rem;     /* sum of pe * (E - k), as q * E + rem (rem < E) */
};

static uint64_t unrouted_params(const struct memest_run *r)
{
    const struct memest_graph *g = r->g;
    /* per expert count E, so that the experts of a layer add up exactly
     * before the division */
    struct expert_sum acc[16];
    int nacc = 0;
    uint64_t skip = 0;
    for (uint32_t n = 0; n < g->nnodes; n++) {
        if (!g->nodes[n].op->moe_expert_tokens)
            continue;
        int64_t E = node_int_arg(&g->nodes[n], "num_experts");
        int64_t k = node_int_arg(&g->nodes[n], "top_k");
        const struct memest_block_inst *in = NULL;
        for (uint32_t b = 0; b < g->nblocks; b++) {
            const struct memest_block_inst *bl = &g->blocks[b];
            if (bl->first <= n && n <= bl->last &&
                (!in || bl->last - bl->first < in->last - in->first))
                in = bl;
        }
        if (!in || E < 1 || k < 0 || k > E)
            continue;
        uint64_t pe = 0;
        for (uint32_t m = in->first; m <= in->last; m++)
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
    return skip;
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
    uint64_t skip = unrouted_params(r);
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
