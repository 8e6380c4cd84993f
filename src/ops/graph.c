/* graph.c - questions about a built layer graph (graph.h). */
#include "memest/graph.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memest/error.h"
#include "memest/ops.h"

void memest_graph_free(struct memest_graph *g)
{
    free(g->nodes);
    free(g->blocks);
    memest_arena_free(&g->arena);
    memset(g, 0, sizeof *g);
}

int64_t memest_graph_find(const struct memest_graph *g, const char *name)
{
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0)
            return i;
    return -1;
}

/* The model inputs (inputs) or the other nodes (!inputs) whose outputs no
 * node reads and that are no model output; a parameter or buffer node is
 * the module's state, used or not. */
static int unused(const struct memest_graph *g, bool inputs, uint32_t *count, uint32_t *first,
                  struct memest_error *err)
{
    uint32_t ninputs = 0; /* the inputs are the first nodes */
    while (ninputs < g->nnodes && g->nodes[ninputs].op->model_input)
        ninputs++;
    bool *used = calloc(g->nnodes ? g->nnodes : 1, sizeof *used);
    if (!used)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    for (uint32_t o = 0; o < g->noutputs; o++)
        used[g->outputs[o].node] = true;
    for (uint32_t n = ninputs; n < g->nnodes; n++)
        for (uint32_t k = 0; k < g->nodes[n].nin; k++)
            used[g->nodes[n].in[k].node] = true;   /* any of its outputs */
    *count = 0;
    uint32_t lo = inputs ? 0 : ninputs, hi = inputs ? ninputs : g->nnodes;
    for (uint32_t i = hi; i-- > lo;)
        if (!used[i] && !g->nodes[i].op->module_state && !g->nodes[i].discarded &&
            !g->nodes[i].held_output) {
            ++*count;
            *first = i;
        }
    free(used);
    return 0;
}

int memest_graph_unused_inputs(const struct memest_graph *g, uint32_t *count, uint32_t *first,
                               struct memest_error *err)
{
    return unused(g, true, count, first, err);
}

int memest_graph_unused_nodes(const struct memest_graph *g, uint32_t *count, uint32_t *first,
                              struct memest_error *err)
{
    return unused(g, false, count, first, err);
}

int64_t memest_graph_output_head(const struct memest_graph *g)
{
    if (g->noutputs == 0)
        return -1;
    uint32_t n = g->outputs[g->noutputs - 1].node;
    /* each step goes to an earlier node (topological order): it ends */
    while (!g->nodes[n].op->ce_head) {
        if (!g->nodes[n].op->same_data || g->nodes[n].nin < 1)
            return -1;
        n = g->nodes[n].in[0].node;
    }
    return n;
}

uint32_t memest_graph_quantized(const struct memest_graph *g, enum memest_wformat *format)
{
    uint32_t n = 0;
    enum memest_wformat f = MEMEST_WF_DENSE;
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].wformat != MEMEST_WF_DENSE) {
            if (n++ == 0)
                f = (enum memest_wformat)g->nodes[i].wformat;
        }
    if (format)
        *format = f;
    return n;
}
