/* pipeline.c - a pipeline-parallel stage of a graph (pipeline.h): the cut
 * of the layers into equal runs, the values received from the stage before
 * as new model inputs, and the value sent to the next stage as the output. */
#include "memest/pipeline.h"

#include <stdlib.h>
#include <string.h>

#include "memest/ops.h"

#define NOUT UINT32_MAX

static int by_first(const void *a, const void *b)
{
    const struct memest_block_inst *x = a, *y = b;
    return (x->first > y->first) - (x->first < y->first);
}

/* The top-level block instances in graph order (malloc'ed), their count. */
static struct memest_block_inst *layers(const struct memest_graph *g, uint32_t *n)
{
    *n = 0;
    struct memest_block_inst *l = malloc(sizeof *l * (g->nblocks ? g->nblocks : 1));
    if (!l)
        return NULL;
    for (uint32_t b = 0; b < g->nblocks; b++)
        if (g->blocks[b].depth == 0)
            l[(*n)++] = g->blocks[b];
    qsort(l, *n, sizeof *l, by_first);
    return l;
}

uint32_t memest_pipeline_layers(const struct memest_graph *g)
{
    uint32_t n = 0;
    for (uint32_t b = 0; b < g->nblocks; b++)
        n += g->blocks[b].depth == 0;
    return n;
}

/* The arguments of a model-input node: per-sample shape, dtype, batch_dim,
 * requires_grad (pipeline.h). */
static int input_node(struct memest_graph *out, const struct memest_graph *g, uint32_t src,
                      const struct memest_value *v1, const struct memest_value *v2,
                      struct memest_node *n, struct memest_error *err)
{
    const struct memest_op_desc *op = &memest_op_input;
    struct memest_argval *av = memest_arena_alloc(&out->arena, sizeof *av * (size_t)op->nargs);
    int64_t *dims = memest_arena_alloc(&out->arena, sizeof *dims * MEMEST_MAX_DIMS);
    int64_t *one = memest_arena_alloc(&out->arena, sizeof *one * 3);
    if (!av || !dims || !one)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    int bd = -1, nd = 0;
    if (v1->shape.ndim != v2->shape.ndim)
        bd = -2;
    for (int k = 0; bd != -2 && k < v1->shape.ndim; k++) {
        int64_t a = v1->shape.size[k], b = v2->shape.size[k];
        if (a == b) {
            dims[nd++] = a;
        } else if (b == 2 * a && a == 1 && bd == -1) {
            bd = k;
        } else {
            bd = -2;
        }
    }
    if (bd == -2)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--pp: node \"%s\" passes a value to the next pipeline stage whose "
                           "batch dimension is not one of its own (a flattened batch): not "
                           "modelled", g->nodes[src].name);
    if (nd == 0) {   /* a 0-d value: one element every sample shares */
        dims[nd++] = 1;
    }
    for (int i = 0; i < op->nargs; i++) {
        av[i].n = 1;
        av[i].none = op->args[i].optional;
        av[i].v = &one[i < 3 ? i : 0];
    }
    int is = memest_op_arg_index(op, "shape"), id = memest_op_arg_index(op, "dtype");
    int ib = memest_op_arg_index(op, "batch_dim"), ir = memest_op_arg_index(op, "requires_grad");
    int in = memest_op_arg_index(op, "name");
    av[is] = (struct memest_argval){.given = true, .n = nd, .list = true, .v = dims};
    av[id] = (struct memest_argval){.given = true, .n = 1,
                                    .s = memest_dtype_name((enum memest_dtype)v1->dtype)};
    one[0] = bd;
    one[1] = v1->requires_grad;
    av[ib] = (struct memest_argval){.given = true, .n = 1, .v = &one[0]};
    av[ir] = (struct memest_argval){.given = true, .n = 1, .v = &one[1]};
    if (in >= 0)
        av[in] = (struct memest_argval){.given = true, .n = 1, .s = g->nodes[src].name};
    char *name = memest_arena_concat(&out->arena, g->nodes[src].name, ":received", (char *)NULL);
    if (!name)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    *n = (struct memest_node){.name = name, .path = g->nodes[src].path, .op = op, .args = av,
                              .trainable = true, .tie_node = -1};
    return 0;
}

/* A stage's cut of graph g: its nodes lo..hi; map: a node of g -> its
 * index in the stage (NOUT outside it); ext: per (node, out<2) before the
 * stage, the index of the input node made for it (NOUT for none), nin of
 * them. */
struct cut {
    uint32_t lo, hi, nin;
    uint32_t *map, *ext;
};

static int nomem(struct memest_error *err)
{
    return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
}

/* The nodes of stage `stage` of pp: c->lo and c->hi, from the nl layers l
 * (graph order). ceil(L / pp) layers a stage; the layers missing to pp of
 * them come off the first and the last stage (the first one more), as the
 * Llama 3 paper lays out 126 layers on 16 stages: 7, 8 x 14, 7
 * (Megatron-LM's decoder_first/last_pipeline_num_layers). */
static int stage_nodes(const struct memest_graph *g, const struct memest_block_inst *l,
                       uint32_t nl, int64_t pp, int64_t stage, struct cut *c,
                       struct memest_error *err)
{
    uint32_t p = (uint32_t)pp, s = (uint32_t)stage;
    uint32_t per = nl ? (nl + p - 1) / p : 0, lack = per * p - nl;
    uint32_t cut_first = (lack + 1) / 2, cut_last = lack / 2;
    if (nl == 0 || (p > 1 && (cut_first >= per || cut_last >= per)) || (p == 1 && lack))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--pp %lld: the model's %lld top-level block instances (its layers) "
                           "do not split into pipeline stages of at least one layer each",
                           (long long)pp, (long long)nl);
    /* the first layer of stage k: k * per, less what the first stage lacks */
    uint32_t first_layer = s == 0 ? 0 : s * per - cut_first;
    uint32_t next_layer = s + 1 == p ? nl : (s + 1) * per - cut_first;
    c->lo = s == 0 ? 0 : l[first_layer].first;
    c->hi = s + 1 == p ? g->nnodes - 1 : l[next_layer].first - 1;
    return 0;
}

/* The values the stage reads from before it, numbered into c->ext and
 * counted in c->nin: inputs first, in order of their producers. */
static int received_values(const struct memest_graph *g, struct cut *c, struct memest_error *err)
{
    c->nin = 0;
    for (uint32_t i = c->lo; i <= c->hi; i++)
        for (uint32_t k = 0; k < g->nodes[i].nin; k++) {
            struct memest_ref rf = g->nodes[i].in[k];
            if (rf.node >= c->lo)
                continue;
            if (rf.out > 1)
                return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                                   "--pp: node \"%s\" reads output %u of \"%s\" across a "
                                   "pipeline stage: not modelled", g->nodes[i].name,
                                   (unsigned)rf.out, g->nodes[rf.node].name);
            if (c->ext[2 * rf.node + rf.out] == NOUT)
                c->ext[2 * rf.node + rf.out] = c->nin++;
        }
    return 0;
}

/* The stage's first nodes: a model input node per value received, with
 * the values r1 and r2 give it. */
static int add_received(struct memest_graph *out, const struct memest_graph *g,
                        const struct memest_run *r1, const struct memest_run *r2,
                        const struct cut *c, struct memest_error *err)
{
    for (uint32_t src = 0; src < c->lo; src++)
        for (uint32_t o = 0; o < 2; o++) {
            uint32_t at = c->ext[2 * src + o];
            if (at == NOUT)
                continue;
            if (g->nodes[src].op->model_input && o == 0) {   /* a model input stays one */
                out->nodes[at] = g->nodes[src];
                continue;
            }
            struct memest_ref rf = {src, (uint16_t)o};
            if (input_node(out, g, src, memest_run_value(r1, rf), memest_run_value(r2, rf),
                           &out->nodes[at], err) != 0)
                return -1;
        }
    return 0;
}

/* The stage's own nodes, after the received ones, their inputs and ties
 * renumbered (filling c->map). */
static int add_stage_nodes(struct memest_graph *out, const struct memest_graph *g, struct cut *c,
                           struct memest_error *err)
{
    for (uint32_t i = c->lo; i <= c->hi; i++) {
        uint32_t at = c->nin + (i - c->lo);
        c->map[i] = at;
        struct memest_node *d = &out->nodes[at];
        *d = g->nodes[i];
        if (d->tie_node >= 0)   /* a weight shared with another stage is its own here */
            d->tie_node = (uint32_t)d->tie_node >= c->lo ? (int64_t)c->map[d->tie_node] : -1;
        if (d->held_to)    /* a local of the stage's code: no later than its end */
            d->held_to = at + (d->held_to <= c->hi ? d->held_to - i : c->hi - i);
        if (d->nin) {
            struct memest_ref *in = memest_arena_alloc(&out->arena, sizeof *in * d->nin);
            if (!in)
                return nomem(err);
            for (uint32_t k = 0; k < d->nin; k++) {
                struct memest_ref rf = g->nodes[i].in[k];
                in[k] = rf.node >= c->lo ? (struct memest_ref){c->map[rf.node], rf.out}
                                         : (struct memest_ref){c->ext[2 * rf.node + rf.out], 0};
            }
            d->in = in;
        }
    }
    return 0;
}

/* The outputs of a stage before the last: the values later stages read,
 * the one carrying a gradient (from the latest node) last; *nout of them
 * into outs (NULL: out of memory). */
static int sent_values(struct memest_graph *out, const struct memest_graph *g,
                       const struct memest_run *r1, int64_t stage, const struct cut *c,
                       struct memest_ref *outs, uint32_t *nout, struct memest_error *err)
{
    uint32_t lo = c->lo, hi = c->hi;
    uint32_t grad_node = NOUT, grad_out = 0, ngrad = 0;
    uint8_t *seen = calloc((size_t)(hi - lo + 1) * 2, 1);
    for (uint32_t i = hi + 1; seen && outs && i < g->nnodes; i++)
        for (uint32_t k = 0; k < g->nodes[i].nin; k++) {
            struct memest_ref rf = g->nodes[i].in[k];
            if (rf.node < lo || rf.node > hi || rf.out > 1 || seen[2 * (rf.node - lo) + rf.out])
                continue;
            seen[2 * (rf.node - lo) + rf.out] = 1;
            if (memest_run_value(r1, rf)->requires_grad) {
                ngrad++;
                if (grad_node == NOUT || rf.node > grad_node)
                    grad_node = rf.node, grad_out = rf.out;
                continue;
            }
            outs[(*nout)++] = (struct memest_ref){c->map[rf.node], rf.out};
        }
    free(seen);
    if (!outs)
        return nomem(err);
    if (ngrad != 1)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--pp: pipeline stage %lld passes %lld values with gradients to the "
                           "stages after it (one is modelled)", (long long)stage,
                           (long long)ngrad);
    outs[(*nout)++] = (struct memest_ref){c->map[grad_node], (uint16_t)grad_out};
    out->loss = "none";   /* out.backward(grad from the next stage) */
    return 0;
}

/* The stage's outputs: the model's on the last stage; else the values
 * later stages read (sent_values). */
static int stage_outputs(struct memest_graph *out, const struct memest_graph *g,
                         const struct memest_run *r1, int64_t stage, const struct cut *c,
                         struct memest_error *err)
{
    uint32_t nout = 0;
    struct memest_ref *outs = NULL;
    if (c->hi == g->nnodes - 1) {
        outs = memest_arena_alloc(&out->arena, sizeof *outs * (g->noutputs ? g->noutputs : 1));
        for (uint32_t o = 0; outs && o < g->noutputs; o++)
            outs[nout++] = (struct memest_ref){c->map[g->outputs[o].node], g->outputs[o].out};
        out->loss = g->loss;
        out->loss_class_dim = g->loss_class_dim;
    } else {
        outs = memest_arena_alloc(&out->arena, sizeof *outs * (c->hi - c->lo + 1) * 2);
        if (sent_values(out, g, r1, stage, c, outs, &nout, err) != 0)
            return -1;
    }
    if (!outs)
        return nomem(err);
    out->outputs = outs;
    out->noutputs = nout;
    return 0;
}

/* The block instances inside the stage, renumbered. */
static int stage_blocks(struct memest_graph *out, const struct memest_graph *g,
                        const struct cut *c, struct memest_error *err)
{
    out->blocks = malloc(sizeof *out->blocks * (g->nblocks ? g->nblocks : 1));
    if (!out->blocks)
        return nomem(err);
    for (uint32_t b = 0; b < g->nblocks; b++) {
        const struct memest_block_inst *bl = &g->blocks[b];
        if (bl->first < c->lo || bl->last > c->hi)
            continue;
        struct memest_block_inst bc = *bl;
        bc.first = c->map[bl->first];
        bc.last = c->map[bl->last];
        bc.arg = bl->arg.node >= c->lo ? (struct memest_ref){c->map[bl->arg.node], bl->arg.out}
                                       : (struct memest_ref){c->ext[2 * bl->arg.node + bl->arg.out], 0};
        out->blocks[out->nblocks++] = bc;
    }
    out->cap_blocks = g->nblocks;
    return 0;
}

int memest_pipeline_stage(const struct memest_graph *g, const struct memest_run *r1,
                          const struct memest_run *r2, int64_t pp, int64_t stage,
                          struct memest_graph *out, struct memest_error *err)
{
    memset(out, 0, sizeof *out);
    uint32_t nl;
    struct memest_block_inst *l = layers(g, &nl);
    if (!l)
        return nomem(err);
    int rc = -1;
    struct cut c = {0};
    if (stage_nodes(g, l, nl, pp, stage, &c, err) != 0)
        goto end;
    c.map = malloc(sizeof *c.map * g->nnodes);
    c.ext = malloc(sizeof *c.ext * g->nnodes * 2);   /* per (node, out<2) the input made */
    if (!c.map || !c.ext) {
        nomem(err);
        goto end;
    }
    for (uint32_t i = 0; i < g->nnodes; i++)
        c.map[i] = c.ext[2 * i] = c.ext[2 * i + 1] = NOUT;
    if (received_values(g, &c, err) != 0)
        goto end;
    uint32_t total = c.nin + (c.hi - c.lo + 1);
    out->nodes = calloc(total, sizeof *out->nodes);
    if (!out->nodes) {
        nomem(err);
        goto end;
    }
    out->nnodes = total;
    if (add_received(out, g, r1, r2, &c, err) != 0 || add_stage_nodes(out, g, &c, err) != 0 ||
        stage_outputs(out, g, r1, stage, &c, err) != 0 || stage_blocks(out, g, &c, err) != 0)
        goto end;
    out->name = g->name;
    out->file = g->file;
    out->overrides = g->overrides;
    out->max_cost = g->max_cost;
    out->quant = g->quant;
    rc = 0;
end:
    if (rc != 0)
        memest_graph_free(out);
    free(l);
    free(c.map);
    free(c.ext);
    return rc;
}
