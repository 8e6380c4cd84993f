/* sim_fused_ce.c - --fused linear-ce: the model's head linear (lm_head) and
 * the cross-entropy loss after it replaced by Liger-Kernel's fused linear +
 * cross-entropy, which never makes the logits [BT, V] (sim_internal.h, sim.h).
 *
 * Modelled on LigerFusedLinearCrossEntropyFunction as Liger-Kernel v0.5.10
 * writes it (src/liger_kernel/ops/fused_linear_cross_entropy.py), called by
 * its causal-LM forward with the hidden states viewed as _input [BT, H],
 * lm_head.weight [V, H] (and bias) and the labels [BT]:
 *
 *   fused_linear_cross_entropy_forward:
 *     inc_factor = cdiv(V, H); chunk_size = next_power_of_2(cdiv(BT, inc_factor))
 *     grad_weight = zeros_like(weight) if weight.requires_grad else None
 *     grad_input = zeros_like(_input)                 # [BT, H]
 *     grad_bias = zeros_like(bias) if bias is not None else None
 *     loss_1d = zeros(BT, dtype=float32)
 *     target_mask = target != ignore_index; target_mask.sum().item()
 *     per chunk of rows start:end:
 *       logits_chunk = _input_chunk @ weight.t()      # [rows, V], the input's dtype
 *       (+ bias: logits_chunk + bias, a new tensor)
 *       liger_cross_entropy_kernel writes the loss into loss_1d and the
 *         logits' gradient into logits_chunk, in place
 *       grad_logits_chunk = logits_chunk             # drops the previous chunk's
 *       grad_input[start:end] = grad_logits_chunk @ weight   # a [rows, H] temporary
 *       torch.addmm(grad_weight, logits_chunk.t(), _input_chunk, out=grad_weight)
 *       (grad_bias: torch.add(grad_bias, logits_chunk.sum(dim=0), out=grad_bias))
 *     loss = torch.sum(loss_1d)
 *   forward() saves grad_input, grad_weight, grad_bias (ctx.save_for_backward);
 *   backward(grad_output) scales them in place unless grad_output is 1.0 (it
 *   is: loss.backward() seeds ones) and returns them as the gradients of
 *   _input, weight and bias.
 *
 * So the forward, at the head's place, makes grad_weight, grad_input,
 * grad_bias (kept until the backward), loss_1d and the target mask (freed
 * when it returns), and per chunk the logits chunk (alive until the next
 * chunk's CE kernel has run) and the grad_input chunk temporary; the loss is
 * the caller's. The head and the ops after it (views, reshapes, the float32
 * cast) make nothing. The backward hands grad_input to the head's input
 * (through its view: the same storage) and grad_weight / grad_bias to
 * AccumulateGrad. The head's MACs stay the linear's and its backward's: the
 * fused function does the same products.
 *
 * Under autocast (--amp) the function runs with autocast on
 * (amp_custom_fwd): the logits chunk is in the autocast dtype; weight.t()
 * and the input chunk are views, so autocast casts them at every chunk
 * (autocast_mode.h, cached_cast caches only leaves that are not views); the
 * weight itself, a trainable leaf, is cast once for grad_logits @ weight and
 * cached until autocast exits; addmm(out=...) is not autocast, so
 * logits_chunk.t().to(_input_chunk.dtype) copies the chunk back to the
 * input's dtype; and a float32 bias added to the logits (add is not
 * autocast) promotes them to float32, cast back for grad_logits @ weight. */
#include <stdlib.h>

#include "sim_internal.h"

/* ---- the plan ---- */

static uint64_t cdiv(uint64_t a, uint64_t b)
{
    return b ? a / b + (a % b != 0) : 0;
}

/* triton.next_power_of_2: the least power of two >= n (1 for 0). */
static uint64_t next_pow2(uint64_t n)
{
    uint64_t p = 1;
    while (p < n && p <= UINT64_MAX / 2)
        p *= 2;
    return p;
}

static int not_head(const struct memest_run *r, uint32_t at, const char *why,
                    struct memest_error *err)
{
    const struct memest_graph *g = r->g;
    const struct memest_ref o = g->outputs[g->noutputs - 1];
    return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                       "--fused linear-ce needs the model's last output to be a linear layer's "
                       "output (lm_head), seen through views, reshapes and dtype casts only; "
                       "the last output is node \"%s\" (%s), and node \"%s\" (%s) %s",
                       g->nodes[o.node].name, g->nodes[o.node].op->name, g->nodes[at].name,
                       g->nodes[at].op->name, why);
}

/* The values that node n's input 0 is, and that node n makes (its only one). */
static uint32_t input_value(const struct memest_run *r, uint32_t n)
{
    return r->ins[r->nodes[n].in_first].src;
}

/* Whether value v is read by no node but `reader` (NONE: by none) and is
 * not a model output other than the last. */
static bool read_only_by(const struct memest_run *r, uint32_t v, uint32_t reader)
{
    const struct memest_graph *g = r->g;
    for (uint32_t n = 0; n < g->nnodes; n++)
        for (uint32_t i = 0; i < g->nodes[n].nin; i++)
            if (r->ins[r->nodes[n].in_first + i].src == v && n != reader)
                return false;
    for (uint32_t k = 0; k + 1 < g->noutputs; k++)
        if (r->nodes[g->outputs[k].node].out_first + g->outputs[k].out == v)
            return false;
    return true;
}

static uint64_t numel_of(const struct memest_run *r, uint32_t v)
{
    uint64_t n;
    return memest_shape_numel(&r->values[v].shape, &n) ? n : UINT64_MAX;
}

int memest_fused_ce_plan(const struct memest_run *r, const struct memest_step_cfg *cfg,
                         bool inference, struct memest_fused_ce *out, struct memest_error *err)
{
    const struct memest_graph *g = r->g;
    *out = (struct memest_fused_ce){.on = false, .head = NONE, .last = NONE};
    if (!(r->opts.fused & MEMEST_FUSED_LINEAR_CE) || inference || g->noutputs == 0)
        return 0;
    if (cfg->loss != MEMEST_LOSS_CROSSENTROPY)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--fused linear-ce fuses the linear head with the cross-entropy "
                           "loss, but the step's loss is %s", memest_loss_name(cfg->loss));
    const struct memest_ref o = g->outputs[g->noutputs - 1];
    uint32_t n = o.node, v = r->nodes[n].out_first + o.out, reader = NONE;
    if (r->values[v].shape.ndim > 2 && g->loss_class_dim != MEMEST_CLASS_DIM_LAST)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--fused linear-ce computes the loss of out.view(-1, V), but the "
                           "model's loss takes the classes along dim 1 of its last output "
                           "(node \"%s\"); a language model's loss says \"class_dim\": -1",
                           g->nodes[n].name);
    out->last = n;
    /* back from the last output through ops that keep their input's values */
    while (!g->nodes[n].op->ce_head) {
        const struct memest_op_desc *op = g->nodes[n].op;
        if (!op->same_data || g->nodes[n].nin < 1 || r->nodes[n].nout != 1)
            return not_head(r, n, "is neither a linear layer nor a view, reshape or cast", err);
        if (!read_only_by(r, v, reader))
            return not_head(r, n, "has an output that other nodes read (the logits would "
                                  "be made)", err);
        uint32_t in = input_value(r, n);
        if (numel_of(r, in) != numel_of(r, v))
            return not_head(r, n, "changes the number of elements", err);
        reader = n;
        v = in;
        n = g->nodes[n].in[0].node;
    }
    if (r->nodes[n].nout != 1 || r->nodes[n].nparam < 1 || !read_only_by(r, v, reader))
        return not_head(r, n, "has an output that other nodes read (the logits would be made)",
                        err);
    const struct memest_param *w = &r->params[r->nodes[n].param_first];
    const struct memest_value *root = &r->values[r->nodes[o.node].out_first + o.out];
    if (w->shape.ndim != 2 || root->shape.ndim < 1 ||
        root->shape.size[root->shape.ndim - 1] != w->shape.size[0])
        return not_head(r, o.node, "does not keep the classes (the head's out_features) in its "
                                   "last dimension", err);
    out->head = n;
    out->vocab = (uint64_t)w->shape.size[0];
    out->hidden = (uint64_t)w->shape.size[1];
    out->rows = numel_of(r, r->nodes[o.node].out_first + o.out) / out->vocab;
    /* Liger: inc_factor = cdiv(V, H), chunk_size = next_power_of_2(cdiv(BT, inc_factor)) */
    out->chunk = next_pow2(cdiv(out->rows, cdiv(out->vocab, out->hidden)));
    out->nchunks = cdiv(out->rows, out->chunk);
    out->on = true;
    return 0;
}

/* ---- the step ---- */

/* Marks the head and the nodes after it (its chain to the last output) as
 * the fused function's: the forward makes none of their tensors, and their
 * saved tensors are nobody's. */
int sim_fused_ce_setup(struct sim *S)
{
    S->fce_gi = S->fce_gw = S->fce_gb = S->fce_seed = NONE;
    if (memest_fused_ce_plan(S->r, S->cfg, S->inference, &S->fce, S->err) != 0)
        return -1;
    if (!S->fce.on)
        return 0;
    S->fused = calloc(S->nn ? S->nn : 1, 1);
    if (!S->fused)
        return sim_nomem(S);
    for (uint32_t n = S->fce.last;; n = S->g->nodes[n].in[0].node) {
        S->fused[n] = 1;
        if (S->ck_of[n] != NONE)
            return memest_errf(S->err, MEMEST_ERR_USAGE, NULL,
                               "--fused linear-ce: node \"%s\" is inside a checkpointed block "
                               "(--checkpoint); the fused loss cannot be recomputed",
                               S->g->nodes[n].name);
        if (n == S->fce.head)
            break;
    }
    return 0;
}

/* A transient tensor (made and freed) of `n` elements of `size` bytes. */
static int temp(struct sim *S, uint8_t cat, uint32_t node, uint64_t n, uint64_t size)
{
    return sim_ev_transient(S, cat, node, memest_sat_mul(n, size));
}

static int alloc_n(struct sim *S, uint8_t cat, uint32_t node, uint64_t n, uint64_t size,
                   uint32_t *id)
{
    return sim_ev_alloc(S, cat, node, memest_sat_mul(n, size), id);
}

/* The first matmul of a chunk: logits_chunk = _input_chunk @ weight.t()
 * (+ bias, in the logits' dtype ls): its result, after autocast's casts of
 * the two views. */
static int chunk_logits(struct sim *S, uint32_t n, uint64_t rows, bool cast_w, bool cast_x,
                        bool bias, unsigned ms, unsigned ls, uint32_t *L)
{
    const struct memest_fused_ce *f = &S->fce;
    uint32_t wc = NONE, xc = NONE;
    if ((cast_w && alloc_n(S, MEMEST_CAT_TRANSIENT, n, f->vocab * f->hidden, ms, &wc) != 0) ||
        (cast_x && alloc_n(S, MEMEST_CAT_TRANSIENT, n, rows * f->hidden, ms, &xc) != 0) ||
        alloc_n(S, MEMEST_CAT_TRANSIENT, n, rows * f->vocab, ms, L) != 0)
        return -1;
    if ((xc != NONE && sim_ev_free(S, n, xc) != 0) || (wc != NONE && sim_ev_free(S, n, wc) != 0))
        return -1;
    if (!bias)
        return 0;
    uint32_t b;   /* logits_chunk = logits_chunk + bias */
    if (alloc_n(S, MEMEST_CAT_TRANSIENT, n, rows * f->vocab, ls, &b) != 0 ||
        sim_ev_free(S, n, *L) != 0)
        return -1;
    *L = b;
    return 0;
}

/* The forward of the fused function, at the head's place (sim_forward). */
int sim_fused_ce_forward(struct sim *S, uint32_t n)
{
    const struct memest_run *r = S->r;
    const struct memest_fused_ce *f = &S->fce;
    const struct memest_nodeinfo *ni = &r->nodes[n];
    uint32_t x = input_value(r, n);
    const struct memest_param *w = &r->params[ni->param_first];
    const struct memest_param *b = ni->nparam > 1 ? &r->params[ni->param_first + 1] : NULL;
    enum memest_dtype xdt = (enum memest_dtype)r->values[x].dtype;
    enum memest_dtype wdt = (enum memest_dtype)r->storages[w->storage].dtype;
    bool amp = r->opts.amp;
    enum memest_dtype mdt = amp ? r->opts.amp_dtype : xdt;   /* the matmuls' dtype */
    unsigned xs = memest_dtype_size(xdt), ms = memest_dtype_size(mdt);
    bool cast_w = amp && wdt != mdt, cast_x = amp && xdt != mdt;
    /* the logits chunk's dtype: a float32 bias added to autocast's result
     * promotes it (add is not autocast) */
    enum memest_dtype ldt = mdt;
    if (b && amp && r->storages[b->storage].dtype == MEMEST_F32)
        ldt = MEMEST_F32;
    unsigned ls = memest_dtype_size(ldt);
    S->fce_gi = S->fce_gw = S->fce_gb = NONE;
    uint32_t loss_1d, mask, loss;
    if ((w->trainable && alloc_n(S, MEMEST_CAT_GRADS, n, f->vocab * f->hidden,
                                 memest_dtype_size(wdt), &S->fce_gw) != 0) ||
        alloc_n(S, MEMEST_CAT_ACTGRADS, n, f->rows * f->hidden, xs, &S->fce_gi) != 0 ||
        (b && sim_ev_alloc(S, MEMEST_CAT_GRADS, n, r->storages[b->storage].bytes,
                           &S->fce_gb) != 0) ||
        alloc_n(S, MEMEST_CAT_TRANSIENT, n, f->rows, 4, &loss_1d) != 0 ||
        alloc_n(S, MEMEST_CAT_TRANSIENT, n, f->rows, 1, &mask) != 0 ||   /* bool */
        temp(S, MEMEST_CAT_TRANSIENT, n, 1, 8) != 0)                     /* its sum, int64 */
        return -1;
    uint32_t prev = NONE;
    for (uint64_t k = 0; k < f->nchunks; k++) {
        uint64_t start = k * f->chunk;
        uint64_t rows = f->rows - start < f->chunk ? f->rows - start : f->chunk;
        uint32_t L;
        if (chunk_logits(S, n, rows, cast_w, cast_x, b != NULL, ms, ls, &L) != 0)
            return -1;
        /* grad_logits_chunk = logits_chunk drops the previous chunk's */
        if (prev != NONE && sim_ev_free(S, n, prev) != 0)
            return -1;
        prev = L;
        /* grad_input[start:end] = grad_logits_chunk @ weight; under autocast
         * the weight's copy is cached when it is a trainable leaf */
        if (cast_w) {
            uint32_t cs = r->storages[w->storage].cast;
            if (w->trainable && cs != NONE) {
                if (sim_alloc_storage(S, cs, MEMEST_CAT_TRANSIENT, n) != 0)
                    return -1;
            } else if (temp(S, MEMEST_CAT_TRANSIENT, n, f->vocab * f->hidden, ms) != 0) {
                return -1;
            }
        }
        if ((amp && ldt != mdt && temp(S, MEMEST_CAT_TRANSIENT, n, rows * f->vocab, ms) != 0) ||
            temp(S, MEMEST_CAT_ACTGRADS, n, rows * f->hidden, ms) != 0)
            return -1;
        /* addmm(out=grad_weight) with logits_chunk.t().to(_input_chunk.dtype) */
        if (S->fce_gw != NONE && ldt != xdt &&
            temp(S, MEMEST_CAT_TRANSIENT, n, rows * f->vocab, xs) != 0)
            return -1;
        if (b && temp(S, MEMEST_CAT_TRANSIENT, n, f->vocab, ls) != 0)   /* logits_chunk.sum(0) */
            return -1;
    }
    /* loss = torch.sum(loss_1d), the caller's; the function's locals go */
    if (alloc_n(S, MEMEST_CAT_TRANSIENT, n, 1, 4, &loss) != 0 || sim_remember_held(S, loss) != 0)
        return -1;
    if ((prev != NONE && sim_ev_free(S, n, prev) != 0) || sim_ev_free(S, n, loss_1d) != 0 ||
        sim_ev_free(S, n, mask) != 0)
        return -1;
    if (r->values[root_value(S)].requires_grad)
        return 0;
    /* nothing requires grad: no graph keeps ctx, its saved tensors go */
    uint32_t *ids[3] = {&S->fce_gi, &S->fce_gw, &S->fce_gb};
    for (int i = 0; i < 3; i++) {
        if (*ids[i] != NONE && sim_ev_free(S, n, *ids[i]) != 0)
            return -1;
        *ids[i] = NONE;
    }
    return 0;
}

/* loss.backward()'s seed, ones_like(loss): the function's grad_output. */
int sim_fused_ce_loss(struct sim *S)
{
    S->ph = (uint8_t)((S->ph & WARM) | MEMEST_PH_LOSS);
    S->fce_seed = NONE;
    if (sim_drop_outputs(S) != 0)
        return -1;
    if (!S->r->values[root_value(S)].requires_grad)
        return 0;
    return sim_ev_alloc(S, MEMEST_CAT_ACTGRADS, NONE, 4, &S->fce_seed);
}

/* The function's backward, at the head's place: grad_output == 1.0 (a
 * float32 torch.tensor(1.0) to compare with), then its saved gradients go
 * to the head's input and to AccumulateGrad; the nodes after the head have
 * nothing to do. */
int sim_fused_ce_backward(struct sim *S, uint32_t n)
{
    const struct memest_run *r = S->r;
    if (n != S->fce.head)
        return 0;
    if (S->fce_seed != NONE) {
        if (temp(S, MEMEST_CAT_ACTGRADS, n, 1, 4) != 0 || sim_ev_free(S, n, S->fce_seed) != 0)
            return -1;
        S->fce_seed = NONE;
    }
    const struct memest_nodeinfo *ni = &r->nodes[n];
    uint32_t x = input_value(r, n);
    if (S->fce_gi != NONE) {
        if (r->values[x].requires_grad) {
            /* grad_input is [BT, H]; ViewBackward gives it x's sizes, a view */
            struct memest_shape geom = r->values[x].shape;
            uint32_t buf, slot;
            memest_shape_contiguous_strides(&geom);
            if (sim_adopt_gbuf(S, S->fce_gi, &buf) != 0 ||
                sim_new_slot(S, buf, &geom, &slot) != 0 || sim_deliver(S, n, x, slot) != 0)
                return -1;
        } else if (sim_ev_free(S, n, S->fce_gi) != 0) {
            return -1;
        }
        S->fce_gi = NONE;
    }
    uint32_t *ids[2] = {&S->fce_gw, &S->fce_gb};
    for (uint32_t p = 0; p < 2 && p < ni->nparam; p++) {
        const struct memest_param *pp = &r->params[ni->param_first + p];
        if (*ids[p] == NONE)
            continue;
        if (pp->trainable ? sim_accumulate_param(S, n, pp->storage, *ids[p]) != 0
                          : sim_ev_free(S, n, *ids[p]) != 0)
            return -1;
        *ids[p] = NONE;
    }
    return 0;
}
