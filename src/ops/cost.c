/* cost.c - the cost units of an estimate (cost.h): the records shape
 * inference makes, the limits, and the checks against them. What the
 * simulations add (the event bound) is the calculators' (event_bound.c). */
#include "memest/cost.h"

#include <stdio.h>

#include "memest/format.h"
#include "memest/graph.h"

uint64_t memest_cost_limit(uint32_t max_nodes)
{
    if (max_nodes == 0 || max_nodes >= MEMEST_MAX_NODES)
        return MEMEST_MAX_COST;
    return (uint64_t)MEMEST_MAX_COST * max_nodes / MEMEST_MAX_NODES;
}

uint64_t memest_cost_graph_limit(const struct memest_graph *g)
{
    return g->max_cost ? g->max_cost : MEMEST_MAX_COST;
}

/* The records' units for these counts. */
static uint64_t weigh(uint64_t nodes, uint64_t inputs, uint64_t values, uint64_t storages,
                      uint64_t params, uint64_t saves, uint64_t buffers)
{
    return MEMEST_COST_NODE * nodes + MEMEST_COST_INPUT * inputs + MEMEST_COST_VALUE * values +
           MEMEST_COST_STORAGE * storages + MEMEST_COST_PARAM * params +
           MEMEST_COST_SAVE * saves + MEMEST_COST_BUFFER * buffers;
}

void memest_cost_records(const struct memest_run *r, struct memest_cost *c)
{
    /* r->g is unset when shape inference failed before it began (out of
     * memory on its first allocation) */
    *c = (struct memest_cost){
        .nodes = r->g ? r->g->nnodes : 0, .inputs = r->nins, .values = r->nvalues,
        .storages = r->nstorages, .params = r->nparams, .saves = r->nsaves,
        .buffers = r->nbuffers,
    };
    c->records = weigh(c->nodes, c->inputs, c->values, c->storages, c->params, c->saves,
                       c->buffers);
    c->total = c->records;
}

/* "12,000 nodes, 24,000 inputs, ..." into buf. */
static void describe(const struct memest_cost *c, char *buf, size_t n)
{
    char a[7][32];
    snprintf(buf, n,
             "%s nodes, %s node inputs, %s values, %s storages, %s parameter tensors, "
             "%s saved tensors, %s buffers",
             memest_fmt_count(c->nodes, a[0], sizeof a[0]),
             memest_fmt_count(c->inputs, a[1], sizeof a[1]),
             memest_fmt_count(c->values, a[2], sizeof a[2]),
             memest_fmt_count(c->storages, a[3], sizeof a[3]),
             memest_fmt_count(c->params, a[4], sizeof a[4]),
             memest_fmt_count(c->saves, a[5], sizeof a[5]),
             memest_fmt_count(c->buffers, a[6], sizeof a[6]));
}

int memest_cost_check_records(const struct memest_run *r, uint32_t node, struct memest_error *err)
{
    uint64_t limit = memest_cost_graph_limit(r->g);
    /* the records so far, the graph's nodes counted up to this one */
    uint64_t records = weigh((uint64_t)node + 1, r->nins, r->nvalues, r->nstorages, r->nparams,
                             r->nsaves, r->nbuffers);
    if (records <= limit)
        return 0;
    struct memest_cost c;
    memest_cost_records(r, &c);
    c.nodes = (uint64_t)node + 1;
    c.records = c.total = records;
    char what[320], b[3][32];
    describe(&c, what, sizeof what);
    memest_errf(err, MEMEST_ERR_LIMIT, r->g->nodes[node].path,
                "the model is too large: up to this node (of %s), shape inference "
                "made records costing %s units (%s), more than the %s one estimate may cost; "
                "use fewer or smaller layers (repeat counts, num_layers)",
                memest_fmt_count(r->g->nnodes, b[0], sizeof b[0]),
                memest_fmt_count(records, b[1], sizeof b[1]), what,
                memest_fmt_count(limit, b[2], sizeof b[2]));
    return memest_err_node(err, r->g->nodes[node].name);
}

int memest_cost_check(const struct memest_run *r, const struct memest_cost *c,
                      struct memest_error *err)
{
    uint64_t limit = memest_cost_graph_limit(r->g);
    if (c->total <= limit)
        return 0;
    char what[320], tot[32], ev[32], lim[32];
    describe(c, what, sizeof what);
    return memest_errf(err, MEMEST_ERR_LIMIT, NULL,
                       "the model is too large: one estimate costs %s units (%s; up "
                       "to %s allocation events simulated), more than the limit of %s; use "
                       "fewer or smaller layers (repeat counts, num_layers), or fewer "
                       "micro-batches or checkpointed blocks",
                       memest_fmt_count(c->total, tot, sizeof tot), what,
                       memest_fmt_count(c->events, ev, sizeof ev),
                       memest_fmt_count(limit, lim, sizeof lim));
}
