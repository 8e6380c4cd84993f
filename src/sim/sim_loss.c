/* sim_loss.c - the loss: its forward and its backward down to the gradient
 * of the model's last output (sim_internal.h). */
#include "sim_internal.h"

/* ---- the loss ---- */

/* Cross-entropy's log_softmax forward over output value v (ls: the loss's
 * shapes), of lbytes: *L gets the saved result. fp32 under autocast: an
 * fp16 input is read directly, a bf16 one converted first. Classes last
 * (class_dim -1, or an (N, C) output): out.reshape(-1, C) copies a
 * non-viewable output; classes along dim 1 of (N, C, d1, ...): log_softmax
 * over dim 1 reads the output contiguous (host_softmax,
 * aten/src/ATen/native/cuda/SoftMax.cu: input_.contiguous()), and
 * nll_loss_nd views its contiguous result as (N, C, 1, -1) for
 * nll_loss2d, as the target [N, d1, ...] as (N, 1, -1): no copies. */
static int log_softmax_forward(struct sim *S, uint32_t v, const struct memest_loss_shapes *ls,
                               uint64_t lbytes, uint32_t *L)
{
    const struct memest_run *r = S->r;
    const struct memest_value *o = &r->values[v];
    enum memest_dtype dt = (enum memest_dtype)o->dtype;
    uint32_t cp = NONE, cv = NONE;
    struct memest_shape to;
    int64_t sz[2] = {(int64_t)ls->rows, ls->classes};
    memest_shape_set(&to, 2, sz);
    bool copy = ls->class_dim == o->shape.ndim - 1 || o->shape.ndim < 3
                    ? !memest_shape_view_strides(&o->shape, &to)
                    : !memest_shape_is_contiguous(&o->shape);
    if (copy && sim_ev_alloc(S, MEMEST_CAT_TRANSIENT, NONE, value_bytes(r, v), &cp) != 0)
        return -1;
    /* autocast converts a bf16 input first; torchtitan's and torchtune's
     * losses upcast the half logits (.float()), torchtune one chunk at a time */
    unsigned chunks = memest_loop_upcast_chunks((enum memest_loop)S->cfg->loop);
    uint64_t cvb = r->opts.amp && dt == MEMEST_BF16 ? lbytes
                   : chunks && memest_dtype_is_half(dt) ? (lbytes + chunks - 1) / chunks : 0;
    if (cvb && sim_ev_alloc(S, MEMEST_CAT_TRANSIENT, NONE, cvb, &cv) != 0)
        return -1;
    if (sim_ev_alloc(S, MEMEST_CAT_SAVED, NONE, lbytes, L) != 0)
        return -1;
    if ((cv != NONE && sim_ev_free(S, NONE, cv) != 0) ||
        (cp != NONE && sim_ev_free(S, NONE, cp) != 0))
        return -1;
    return 0;
}

/* A loss over a class index (cross-entropy, NLL) of output value v, its
 * loss value lsize bytes: forward and backward. */
static int class_index_loss(struct sim *S, uint32_t v, const struct memest_loss_shapes *ls,
                            unsigned lsize)
{
    const struct memest_run *r = S->r;
    const struct memest_value *o = &r->values[v];
    enum memest_dtype dt = (enum memest_dtype)o->dtype;
    uint64_t obytes = value_bytes(r, v);
    bool ce = S->loss == MEMEST_LOSS_CROSSENTROPY;
    unsigned chunks = memest_loop_upcast_chunks((enum memest_loop)S->cfg->loop);
    bool upcast = chunks > 0 && memest_dtype_is_half(dt);
    enum memest_dtype ldt = (r->opts.amp || upcast) && ce ? MEMEST_F32 : dt;
    uint64_t lbytes =
        memest_sat_mul(memest_sat_mul(ls->rows, (uint64_t)ls->classes), memest_dtype_size(ldt));
    uint32_t L = NONE, tw, loss_id;
    if (ce && log_softmax_forward(S, v, ls, lbytes, &L) != 0)
        return -1;
    if (sim_ev_alloc(S, MEMEST_CAT_TRANSIENT, NONE, lsize, &loss_id) != 0 ||
        sim_ev_alloc(S, MEMEST_CAT_SAVED, NONE, lsize, &tw) != 0 ||
        sim_remember_held(S, loss_id) != 0 || sim_drop_outputs(S) != 0)
        return -1;
    if (!o->requires_grad)
        return sim_ev_free(S, NONE, tw) || (L != NONE && sim_ev_free(S, NONE, L)) ? -1 : 0;
    /* backward: the seed, nll_loss_backward's zeros [N, C], then
     * log_softmax's gradient in the output's dtype */
    uint32_t seed, gnll;
    if (sim_ev_alloc(S, MEMEST_CAT_ACTGRADS, NONE, lsize, &seed) != 0 ||
        sim_ev_alloc(S, MEMEST_CAT_ACTGRADS, NONE, ce ? lbytes : obytes, &gnll) != 0 ||
        sim_ev_free(S, NONE, seed) != 0 || sim_ev_free(S, NONE, tw) != 0)
        return -1;
    uint32_t slot;
    if (!ce) {
        struct memest_shape g = o->shape;
        memest_shape_contiguous_strides(&g);
        uint32_t b;   /* nll_loss_backward's result is the output's gradient */
        if (sim_adopt_gbuf(S, gnll, &b) != 0 || sim_new_slot(S, b, &g, &slot) != 0)
            return -1;
        S->vg[v] = slot;
        return 0;
    }
    if (upcast) {   /* log_softmax_backward's float32 gradient (one chunk's), then
                       ToCopyBackward's conversion to the logits' dtype */
        uint32_t gi;
        if (sim_ev_alloc(S, MEMEST_CAT_ACTGRADS, NONE, (lbytes + chunks - 1) / chunks, &gi) != 0 ||
            sim_ev_free(S, NONE, gnll) != 0 || sim_ev_free(S, NONE, L) != 0 ||
            sim_new_grad(S, NONE, v, MEMEST_CAT_ACTGRADS, &slot) != 0)
            return -1;
        S->vg[v] = slot;
        return sim_ev_free(S, NONE, gi);
    }
    if (sim_new_grad(S, NONE, v, MEMEST_CAT_ACTGRADS, &slot) != 0)
        return -1;
    S->vg[v] = slot;
    return sim_ev_free(S, NONE, gnll) || sim_ev_free(S, NONE, L) ? -1 : 0;
}

/* An elementwise loss of output value v, its loss value lsize bytes: the
 * unreduced loss is a temporary of the output's size; the output (cast to
 * float32 under autocast: that copy is saved) and the target are saved;
 * backward makes one gradient of the output's size (bce_with_logits: plus
 * sigmoid(x) - target). */
static int elementwise_loss(struct sim *S, uint32_t v, unsigned lsize)
{
    const struct memest_run *r = S->r;
    const struct memest_value *o = &r->values[v];
    enum memest_dtype dt = (enum memest_dtype)o->dtype;
    uint64_t numel;
    if (!memest_shape_numel(&o->shape, &numel))
        numel = UINT64_MAX;
    uint32_t cast = NONE, loss_id;
    uint64_t cbytes = value_bytes(r, v);
    if (r->opts.amp && dt != MEMEST_F32 && memest_dtype_is_float(dt)) {
        cbytes = memest_sat_mul(numel, 4);
        if (sim_ev_alloc(S, MEMEST_CAT_SAVED, NONE, cbytes, &cast) != 0)
            return -1;
    }
    if (sim_ev_transient(S, MEMEST_CAT_TRANSIENT, NONE, cbytes) != 0 ||
        sim_ev_alloc(S, MEMEST_CAT_TRANSIENT, NONE, lsize, &loss_id) != 0 ||
        sim_remember_held(S, loss_id) != 0)
        return -1;
    if (!o->requires_grad)
        return (cast != NONE && sim_ev_free(S, NONE, cast) != 0) || sim_drop_outputs(S) ? -1 : 0;
    uint32_t seed;
    if (sim_ev_alloc(S, MEMEST_CAT_ACTGRADS, NONE, lsize, &seed) != 0)
        return -1;
    if (S->loss == MEMEST_LOSS_BCEWITHLOGITS &&
        sim_ev_transient(S, MEMEST_CAT_ACTGRADS, NONE, cbytes) != 0)
        return -1;
    uint32_t gfp = NONE;
    if (cast != NONE && sim_ev_alloc(S, MEMEST_CAT_ACTGRADS, NONE, cbytes, &gfp) != 0)
        return -1;
    if (sim_ev_free(S, NONE, seed) != 0 || (cast != NONE && sim_ev_free(S, NONE, cast) != 0))
        return -1;
    uint32_t slot;   /* the loss saved the output: the loop drops it now */
    if (sim_new_grad(S, NONE, v, MEMEST_CAT_ACTGRADS, &slot) != 0)
        return -1;
    S->vg[v] = slot;
    return (gfp != NONE && sim_ev_free(S, NONE, gfp) != 0) || sim_drop_outputs(S) ? -1 : 0;
}

/* The loss forward and backward; leaves the gradient of the root value in
 * S->vg. The model's outputs and the loss scalar are the caller's until the
 * step ends. */
int sim_loss_step(struct sim *S)
{
    const struct memest_run *r = S->r;
    if (S->fce.on)   /* the fused function computed the loss in the forward */
        return sim_fused_ce_loss(S);
    S->ph = (uint8_t)((S->ph & WARM) | MEMEST_PH_LOSS);
    uint32_t v = root_value(S);
    const struct memest_value *o = &r->values[v];
    enum memest_dtype dt = (enum memest_dtype)o->dtype;
    if (S->loss == MEMEST_LOSS_NONE) {
        if (sim_drop_outputs(S) != 0)
            return -1;
        if (!o->requires_grad)
            return 0;
        uint32_t slot;   /* out.backward(torch.ones_like(out)) */
        if (sim_new_grad(S, NONE, v, MEMEST_CAT_ACTGRADS, &slot) != 0)
            return -1;
        S->vg[v] = slot;
        return 0;
    }
    /* the loss value itself (a 0-d tensor, float32 under autocast) */
    unsigned lsize = memest_dtype_size(r->opts.amp ? MEMEST_F32 : dt);
    struct memest_loss_shapes ls;
    if (memest_loss_shapes(S->loss, S->g->loss_class_dim, &o->shape, dt, &ls, S->err) != 0)
        return -1;
    if (ls.class_index)
        return class_index_loss(S, v, &ls, lsize);
    return elementwise_loss(S, v, lsize);
}
