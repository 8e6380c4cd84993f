/* event_bound.c - an upper bound of the allocation events the step
 * simulator (sim.h) makes for a run and a step configuration, derived from
 * the simulator's code path by path (event_bound.h). The fuzzer and
 * test_cost check that no simulation makes more events than this bound. */
#include "memest/event_bound.h"

#include <stdlib.h>

#include "memest/calc.h"
#include "memest/checked.h"
#include "memest/optim.h"
#include "memest/sim.h"

/* ---- the event bound ----
 * Every allocation the simulator makes is freed once (by the teardown at
 * the latest), so events = 2 x allocations. Allocations, with the names
 * below (the simulator's functions in brackets, src/sim/sim_*.c, sim_ left out):
 *   setup [setup, early_state]: each persistent storage (parameters,
 *     buffers, model inputs) once, the loss target, Adagrad's state
 *     (copies per trainable parameter), the cuBLAS workspaces once (in
 *     training the forward's and the backward's, sim_cublas; none under
 *     PyTorch 1.13);
 *   per micro-batch (two with --grad-accum > 1), per step (two: warm-up
 *     and step, one with --first-step):
 *     forward [forward_node]: each other storage once, each node's
 *       forward workspace (when not 0);
 *     recomputation [recompute] with --checkpoint: the forward again, at
 *       most once per node;
 *     loss [loss_step]: at most 8;
 *     with --fused linear-ce [fused_ce_forward, _loss, _backward] (sim.h:
 *       memest_fused_ce_plan), besides the above (the head's and later
 *       nodes' storages are then not made, their bound stays): its
 *       gradients, loss_1d, the target mask and its sum, the loss, the
 *       seed and the 1.0 it is compared with (9: the loss's 8 and 8 more),
 *       and per chunk at most 9 (the logits and their sum with the bias,
 *       the bias gradient's sum, the grad_input temporary, and under
 *       autocast the cast of the weight, the weight's uncached copy, the
 *       cast of the input chunk, the logits promoted by a bias cast back
 *       to autocast's dtype, the logits copied to the input's dtype for
 *       grad_weight);
 *     backward [bwd_node, input_grad, deliver]: per node a contiguous copy
 *       of its incoming gradient (MEMEST_BWD_CONTIG_OUT) and its backward
 *       scratch (when not 0); per node input that takes a gradient, that
 *       gradient unless it is a view (grad_allocates), a conversion for an
 *       autocast copy, and per value that receives more than one gradient
 *       (the loss's included), one sum;
 *       per trainable parameter its gradient, and for a slice of a fused
 *       parameter (graph.h: fuse_group) its select gradient [fused_accumulate];
 *       per autocast parameter copy,
 *       the conversion of its gradient;
 *   optimizer [optimizer], per step: the temporaries (lists of one tensor
 *     per trainable parameter: foreach Adam/AdamW/RMSprop 1, Adagrad 2;
 *     PyTorch 1.13's foreach Adam/AdamW 2, Adagrad 4; for-loop Adam/AdamW
 *     2, RMSprop and Adagrad 1; bitsandbytes' none; Adafactor's per group),
 *     and once, the state (each parameter's tensors as its shape gives
 *     them, those in unified memory left out, bitsandbytes' qmaps once,
 *     plus the fused step counters);
 * and the no-grad pass: its setup, and its forward twice (warm-up, step). */

struct tally {
    uint64_t persistent, other;      /* storages */
    uint64_t param_casts;            /* autocast copies of parameters */
    uint64_t work_nodes, contig_nodes, scratch_nodes;
    uint64_t grad_inputs, cast_inputs, sums;
    uint64_t trainable, untied;      /* trainable parameters; of them, not tied */
    uint64_t untied_matrices;        /* of those, with more than one dimension */
    uint64_t optim_temps;            /* the optimizer's temporaries over those (optim.h) */
    uint64_t fused;                  /* trainable slices of fused parameters */
};

static bool persistent(uint8_t kind)
{
    return kind == MEMEST_ST_PARAM || kind == MEMEST_ST_BUFFER || kind == MEMEST_ST_INPUT;
}

/* The number of dimensions of the output whose gradient input `in` of node
 * n takes (SAME, RESHAPE, PERMUTE, SLICE), and of the input itself. */
static int from_ndim(const struct memest_run *r, uint32_t n, const struct memest_nodein *in)
{
    const struct memest_nodeinfo *ni = &r->nodes[n];
    return r->values[ni->out_first + (in->from < ni->nout ? in->from : 0)].shape.ndim;
}
static int in_ndim(const struct memest_run *r, const struct memest_nodein *in)
{
    return r->values[in->value].shape.ndim;
}

/* Whether the gradient of input `in` of node n may be a new tensor
 * (sim_backward.c: input_grad). NEW is; RESHAPE copies when the gradient's
 * layout allows no view; SAME is the output's gradient itself, and PERMUTE
 * and SLICE are views of it unless the gradient has another number of
 * dimensions than the input. A gradient has its value's number of
 * dimensions, except after a SAME between tensors of different ones (no op
 * declares one: identity, add, contiguous and dropout keep the shape), so
 * `odd` (some SAME does) makes every PERMUTE and SLICE count. */
static bool grad_allocates(const struct memest_run *r, uint32_t n,
                           const struct memest_nodein *in, bool odd)
{
    switch (in->grad) {
    case MEMEST_GRAD_SAME:
        return false;
    case MEMEST_GRAD_PERMUTE:
    case MEMEST_GRAD_SLICE:
        return odd || from_ndim(r, n, in) != in_ndim(r, in);
    default:
        return true;
    }
}

static int tally(const struct memest_run *r, const struct memest_step_cfg *cfg, struct tally *t)
{
    const struct memest_graph *g = r->g;
    bool odd = false;
    for (uint32_t n = 0; n < g->nnodes && !odd; n++)
        for (uint32_t i = 0; i < g->nodes[n].nin; i++) {
            const struct memest_nodein *in = &r->ins[r->nodes[n].in_first + i];
            odd |= in->grad == MEMEST_GRAD_SAME && from_ndim(r, n, in) != in_ndim(r, in);
        }
    for (uint32_t s = 0; s < r->nstorages; s++) {
        const struct memest_storage *st = &r->storages[s];
        if (persistent(st->kind))
            t->persistent++;
        else
            t->other++;
        if (st->kind == MEMEST_ST_CAST && st->src != UINT32_MAX &&
            r->storages[st->src].kind == MEMEST_ST_PARAM)
            t->param_casts++;
    }
    /* per value, the gradients it receives (0, 1, 2 or more): the second
     * is a sum, a new tensor unless one of the two is dense and its sole
     * owner; the sum is, and every later one is added into it in place */
    uint8_t *got = calloc(r->nvalues ? r->nvalues : 1, 1);
    if (!got)
        return -1;
    if (g->noutputs) {   /* the loss's gradient of the last output */
        struct memest_ref o = g->outputs[g->noutputs - 1];
        got[r->nodes[o.node].out_first + o.out] = 1;
    }
    for (uint32_t n = 0; n < g->nnodes; n++) {
        const struct memest_nodeinfo *ni = &r->nodes[n];
        t->work_nodes += ni->work_bytes > 0;
        t->contig_nodes += (ni->bwd_flags & MEMEST_BWD_CONTIG_OUT) != 0;
        t->scratch_nodes += ni->bwd_work_bytes > 0;
        for (uint32_t i = 0; i < g->nodes[n].nin; i++) {
            const struct memest_nodein *in = &r->ins[ni->in_first + i];
            if (in->grad == MEMEST_GRAD_NONE || !r->values[in->src].requires_grad)
                continue;
            t->grad_inputs += grad_allocates(r, n, in, odd);
            t->cast_inputs += in->value != in->src;
            if (got[in->src] == 1)
                t->sums++;
            if (got[in->src] < 2)
                got[in->src]++;
        }
    }
    free(got);
    for (uint32_t p = 0; p < r->nparams; p++) {
        if (!r->params[p].trainable)
            continue;
        t->trainable++;
        t->fused += r->g->nodes[r->params[p].node].fuse_group != 0;
        t->untied += r->params[p].tied_to < 0;
        t->untied_matrices += r->params[p].tied_to < 0 && r->params[p].shape.ndim > 1;
        if (r->params[p].tied_to < 0 && cfg) {
            struct memest_optim_param op = memest_optim_param_run(r, p);
            t->optim_temps = memest_sat_add(t->optim_temps, memest_optim_param_temporaries(cfg, &op));
        }
    }
    return 0;
}

/* The optimizer state's allocations: each trainable parameter's device
 * tensors as its shape gives them (paged ones are not the allocator's),
 * its device step scalar when fused, the tensors made once. */
static uint64_t optim_state_events(const struct memest_run *r, const struct memest_step_cfg *cfg,
                                   bool fused_steps)
{
    const struct memest_optim_desc *d = memest_optim_desc(cfg->optim.kind);
    uint64_t n = 0;
    bool shared = false;
    for (uint32_t p = 0; p < r->nparams; p++) {
        const struct memest_param *pp = &r->params[p];
        if (!pp->trainable || pp->tied_to >= 0)
            continue;
        struct memest_optim_param op = memest_optim_param_run(r, p);
        struct memest_optim_state st;
        memest_optim_shaped_state(&cfg->optim, &op, &st);
        for (unsigned k = 0; k < st.n; k++)
            n += !(st.paged & (1u << k));
        n += fused_steps;
        shared |= st.shared;
    }
    return n + (shared ? d->nshared : 0);
}

int memest_cost_count(const struct memest_run *r, const struct memest_step_cfg *cfg,
                      struct memest_cost *c)
{
    memest_cost_records(r, c);
    struct tally t = {0};
    if (tally(r, cfg, &t) != 0)
        return -1;
    uint64_t steps = cfg->first_step ? 1 : 2;
    uint64_t micro = cfg->grad_accum > 1 ? 2 : 1;
    uint64_t fwd = t.other + t.work_nodes;
    uint64_t bwd = t.contig_nodes + t.scratch_nodes + t.grad_inputs + t.cast_inputs + t.sums +
                   t.trainable + t.fused + t.param_casts;
    uint64_t batch = fwd + (cfg->checkpoint ? fwd : 0) + 8 + bwd;
    struct memest_fused_ce f;
    struct memest_error ignored = {0};   /* a step the simulator refuses: no events */
    if (memest_fused_ce_plan(r, cfg, false, &f, &ignored) == 0 && f.on)
        batch = memest_sat_add(batch, memest_sat_add(8, memest_sat_mul(9, f.nchunks)));
    /* the optimizer's (optim.h): its state and device step scalars, its
       temporaries per updated parameter */
    bool fused_steps = memest_optim_device_steps(cfg);
    uint64_t state = optim_state_events(r, cfg, fused_steps);
    uint64_t step = micro * batch + t.optim_temps;
    uint64_t ws = cfg->torch_version == 113 ? 0 : 1;   /* cuBLAS's, per thread (sim_cublas) */
    uint64_t train = t.persistent + 1 + 2 * ws + state + steps * step;   /* 1: the target */
    uint64_t nograd = t.persistent + ws + 2 * fwd;
    c->train_events = 2 * train;
    c->events = 2 * (train + nograd);
    c->total = c->records + c->events;
    return 0;
}
