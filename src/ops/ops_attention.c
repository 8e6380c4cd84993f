/* ops_attention.c - nn.MultiheadAttention in training mode, as PyTorch 1.13
 * computes it, and PyTorch 2.x with need_weights (F.multi_head_attention_
 * forward; the fast path is never taken when autograd records; 2.x without
 * the weights: below):
 *
 *   q, k, v = in-projection (one linear with in_proj_weight [3E, E] for
 *             self-attention, else three linears; inputs (L, N, E) seq-first,
 *             batch_first inputs transposed to that first);
 *   k, v    += bias_k / bias_v rows (add_bias_kv), a zero row (add_zero_attn);
 *   q, k, v = x.contiguous().view(len, N*H, E/H).transpose(0, 1)
 *             (copies of the projection's chunks in the packed case);
 *   w       = softmax(bmm(q / sqrt(E/H), k^T) (+ mask), -1);  dropout(w);
 *   out     = out_proj(bmm(w, v).transpose(0, 1).contiguous().view(L*N, E));
 *   weights = w.view(N, H, L, S), averaged over heads by default.
 *
 * Saved for backward (the catalog's figures, with the CUDA dropout):
 *   each projection's input as [len*N, E_x] (the input's storage when
 *     viewable, a copy otherwise, e.g. batch_first) when its weight
 *     requires grad;
 *   q / sqrt(E/H) [N*H, L, E/H] and k [N*H, S, E/H] (the first bmm);
 *   the softmax output [N*H, L, S];
 *   with dropout > 0: native_dropout's bool mask and its output (the second
 *     bmm's left operand) (CPU: a float mask instead);
 *   v [N*H, S, E/H] (the second bmm);
 *   the attention output made contiguous [L*N, E] (out_proj's mat1) when
 *     out_proj.weight requires grad;
 *   the scalars of the scaling and of the head average are 0-d CPU tensors
 *     on CUDA (8 bytes each in the CPU catalog): not counted.
 * With need_weights and average_attn_weights=false the returned weights are
 * the (post-dropout) attention tensor itself, so output 1 is that saved
 * storage. batch_first outputs are transposed views of a (L, N, E) tensor
 * in PyTorch; here they are contiguous (N, L, E).
 *
 * PyTorch >= 2.0 (not --torch 1.13) with need_weights=false
 * (torch/nn/functional.py multi_head_attention_forward, 2.6): no explicit
 * softmax. The self-attention projection is made one contiguous
 * [3, L, N, E] storage (_in_projection_packed: unflatten, transpose,
 * .contiguous()) whose [i] are q, k, v; q, k, v are viewed, not copied, as
 * (N, H, len, E/H) ([len, N, H, E/H] memory) and
 * scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
 * runs: what it saves is src/ops/ops_sdpa.c's model of the kernel
 * PyTorch's dispatcher picks on an sm80+ GPU (sdpa_call_saves: flash for
 * fp16/bf16 without a mask, memory-efficient for float32 or with the causal
 * mask tensor, math else; --attention forces one): q, k and v's storages
 * (the whole packed projection; with add_bias_kv / add_zero_attn torch.cat
 * makes new k and v and q alone keeps the projection), the output, the
 * float32 logsumexp, (efficient) the mask padded to a multiple of 8.
 * out_proj then reads attn_output.permute(2, 0, 1, 3).contiguous(): flash
 * allocates its output like q, so that is the saved output itself; the
 * efficient kernel's output is [N, L, H, E/H] memory, so it is a copy
 * [L*N, E], saved (when out_proj.weight requires grad). The projection
 * inputs are saved as above. Measured on PyTorch 2.6's CPU, whose flash
 * kernel saves what CUDA's does: tests/tools/mha_sdpa_saved.py.
 * MACs: the projections, both bmm's (the SDPA kernel's: the same forward;
 * the fused kernels' backward recomputes the scores, five products). */
#include "ops_sdpa.h"

enum {
    MHA_EMBED,
    MHA_HEADS,
    MHA_DROPOUT,
    MHA_BIAS,
    MHA_BIAS_KV,
    MHA_ZERO_ATTN,
    MHA_KDIM,
    MHA_VDIM,
    MHA_BATCH_FIRST,
    MHA_NEED_WEIGHTS,
    MHA_AVERAGE,
    MHA_MASK,
};

static const struct memest_argspec mha_args[] = {
    [MHA_EMBED] = {"embed_dim", MEMEST_ARG_INT, .optional = true, .lo = 1, .hi = ARG_MAX,
                   .doc = "E (inferred from the query; checked when given)"},
    [MHA_HEADS] = {"num_heads", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX},
    [MHA_DROPOUT] = {"dropout", MEMEST_ARG_FLOAT, .fdef = 0, .flo = 0, .fhi = 1,
                     .doc = "dropout on the attention weights"},
    [MHA_BIAS] = {"bias", MEMEST_ARG_BOOL, .idef = 1},
    [MHA_BIAS_KV] = {"add_bias_kv", MEMEST_ARG_BOOL, .idef = 0},
    [MHA_ZERO_ATTN] = {"add_zero_attn", MEMEST_ARG_BOOL, .idef = 0},
    [MHA_KDIM] = {"kdim", MEMEST_ARG_INT, .optional = true, .lo = 1, .hi = ARG_MAX,
                  .doc = "key features (default embed_dim)"},
    [MHA_VDIM] = {"vdim", MEMEST_ARG_INT, .optional = true, .lo = 1, .hi = ARG_MAX,
                  .doc = "value features (default embed_dim)"},
    [MHA_BATCH_FIRST] = {"batch_first", MEMEST_ARG_BOOL, .idef = 0},
    /* arguments of forward(query, key, value, ..., need_weights, attn_mask,
     * average_attn_weights), not of the constructor */
    [MHA_NEED_WEIGHTS] = {"need_weights", MEMEST_ARG_BOOL, .idef = 1,
                          .doc = "output 1 is the attention weights", .forward = true},
    [MHA_AVERAGE] = {"average_attn_weights", MEMEST_ARG_BOOL, .idef = 1, .forward = true},
    [MHA_MASK] = {"attn_mask", MEMEST_ARG_STR, .sdef = "none", .choices = "none|causal",
                  .forward = true},
};

/* Geometry of input i as the (len, N, E_x) tensor the forward works on, and
 * its len, N and E_x. */
static void seq_first_geom(const struct memest_ictx *c, int i, bool bf, struct memest_shape *g,
                           int64_t *len, int64_t *n, int64_t *e)
{
    *g = *memest_in_shape(c, i);
    if (g->ndim == 2)
        geom_unsqueeze(g, 1);
    else if (bf)
        geom_transpose(g, 0, 1);
    *len = g->size[0];
    *n = g->size[1];
    *e = g->size[2];
}

static int save_if(struct memest_ictx *c, bool cond, int ndim, const int64_t *size,
                   enum memest_dtype dt)
{
    return cond ? save_new_if(c, ndim, size, dt) : 0;
}

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* What the attention between the projections and out_proj needs. */
struct mha {
    int64_t L, N, E, S, S2, H; /* S2: the key length after add_bias_kv / add_zero_attn */
    enum memest_dtype dt;
    double p;
    bool inner;    /* autograd records inside (the projections need grads) */
    bool causal;   /* a causal attn_mask tensor */
    bool wo_tr;    /* out_proj.weight requires grad */
    bool w_is_out; /* output 1 is the attention tensor itself */
    bool packed;   /* self-attention: one in-projection */
};

/* PyTorch 1.13's path (and need_weights in any version): the scores, their
 * softmax and dropout explicit. Saves, forward workspace, the backward
 * workspace of the scores. */
static int attention_explicit(struct memest_ictx *c, const struct mha *m)
{
    enum memest_dtype dt = m->dt;
    bool inner = m->inner;
    int64_t NH = m->N * m->H, Dh = m->E / m->H, L = m->L, S2 = m->S2;
    int64_t qh[3] = {NH, L, Dh}, kh[3] = {NH, S2, Dh}, att[3] = {NH, L, S2};
    if (save_if(c, inner, 3, qh, dt) != 0 || save_if(c, inner, 3, kh, dt) != 0)
        return -1; /* q / sqrt(d), k */
    if (m->p <= 0 && m->w_is_out) {
        if (inner && memest_save_out(c, 1) != 0)
            return -1; /* softmax output = returned weights */
    } else if (save_if(c, inner, 3, att, dt) != 0) {
        return -1; /* softmax output */
    }
    if (m->p > 0) {
        if (inner && dropout_saves(c, 3, att, dt, m->p, false, false) != 0)
            return -1;
        if (m->w_is_out) { /* the tensor that bmm(w, v) saves */
            if (inner && memest_save_out(c, 1) != 0)
                return -1;
        } else if (save_if(c, inner, 3, att, dt) != 0) {
            return -1; /* dropout output */
        }
    }
    int64_t ao[2] = {L * m->N, m->E};
    if (save_if(c, inner, 3, kh, dt) != 0 || save_if(c, m->wo_tr, 2, ao, dt) != 0)
        return -1; /* v, contiguous attention output */

    /* transient forward memory: the packed projection and q's copy, the
     * scores before softmax (and the float causal mask), bmm(w, v) before
     * its contiguous copy, the head sum */
    uint64_t elt = memest_dtype_size(dt);
    int64_t proj[2] = {L * m->N, m->packed ? 4 * m->E : m->E};
    uint64_t work = max_u64(sat_bytes(2, proj, dt), sat_bytes(3, att, dt));
    work = max_u64(work, sat_bytes(3, qh, dt));
    if (m->causal)
        work = memest_sat_add(work, memest_sat_mul(memest_sat_mul((uint64_t)L, (uint64_t)S2), elt));
    memest_workspace(c, work);
    /* backward: the gradients of the weights before and after softmax (and
     * dropout) [N*H, L, S] */
    memest_bwd_workspace(c, memest_sat_mul(sat_bytes(3, att, dt), m->p > 0 ? 3 : 2));
    return 0;
}

/* PyTorch >= 2.0 with need_weights=False (functional.py
 * multi_head_attention_forward): q, k, v viewed as [N, H, len, E/H] and
 * scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal),
 * the kernel modelled by ops_sdpa.c; then out_proj of
 * attn_output.permute(2, 0, 1, 3).contiguous(). Called when autograd records
 * inside (m->inner). */
static int attention_sdpa(struct memest_ictx *c, const struct mha *m)
{
    int64_t L = m->L, N = m->N, E = m->E;
    struct sdpa_call sc = {.B = N, .H = m->H, .L = L, .S = m->S2, .D = E / m->H, .dt = m->dt,
                           .p = m->p, .mask = m->causal};
    /* _in_projection_packed's self-attention: one [3, L, N, E] contiguous
     * storage whose [i] are q, k, v (torch.cat makes new k and v with
     * add_bias_kv / add_zero_attn: q alone views it then); otherwise three
     * linears' outputs */
    int64_t proj[2] = {L * N, 3 * E};
    if (m->packed) {
        for (int i = 0; i < (m->S2 == m->S ? 3 : 1); i++) {
            sc.whole[i][0] = 3;
            sc.whole[i][1] = L * N * E;
            sc.shared[i] = i > 0;
        }
        memest_workspace(c, sat_bytes(2, proj, m->dt)); /* the linear's [L, N, 3E] output */
    }
    bool out_like_q;
    if (sdpa_call_saves(c, &sc, &out_like_q) != 0)
        return -1;
    /* out_proj's mat1: the kernel's output itself when laid out like q
     * ([L, N, H, D] memory), else the contiguous copy */
    int64_t ao[2] = {L * N, E};
    if (out_like_q)
        return 0;
    if (m->wo_tr)
        return save_new_if(c, 2, ao, m->dt);
    memest_workspace(c, sat_bytes(2, ao, m->dt));
    return 0;
}

/* MultiheadAttention's inputs as multi_head_attention_forward checks them
 * (_mha_shape_check and the asserts after it): sequence-first geometries
 * and sizes, heads, kdim and vdim, a causal mask. */
struct mha_in {
    int nin, iq, ik, iv;
    bool batched, bf;
    struct memest_shape gq, gk, gv;   /* query, key, value seen sequence first */
    int64_t L, N, E, S, H, kdim, vdim;
    enum memest_dtype dt;
    bool causal;
};

static int mha_shape_check(struct memest_ictx *c, struct mha_in *a)
{
    int nin = a->nin = memest_in_count(c);
    if (nin == 2)
        return memest_fail(c, "expects 1 input (self-attention) or 3 (query, key, value), got 2");
    int iq = a->iq = 0, ik = a->ik = nin == 3 ? 1 : 0, iv = a->iv = nin == 3 ? 2 : 0;
    for (int i = 0; i < nin; i++)
        if (need_float(c, i) != 0)
            return -1;
    enum memest_dtype dt = a->dt = memest_in_dtype(c, 0);
    for (int i = 1; i < nin; i++)
        if (memest_in_dtype(c, i) != dt)
            return memest_fail(c, "query, key and value must have the same dtype");
    const struct memest_shape qs_in = *memest_in_shape(c, iq), *qs = &qs_in;
    if (qs->ndim != 2 && qs->ndim != 3)
        return memest_fail(c, "expects a 3-D (L, N, E) query ((N, L, E) with batch_first) or a "
                              "2-D unbatched (L, E) one, got %s",
                           IN_STR(c, iq));
    for (int i = 1; i < nin; i++)
        if (memest_in_shape(c, i)->ndim != qs->ndim)
            return memest_fail(c, "for a %d-D query, key and value must be %d-D too, got %s and "
                                  "%s",
                               qs->ndim, qs->ndim, IN_STR(c, ik), IN_STR(c, iv));
    a->batched = qs->ndim == 3;
    a->bf = a->batched && memest_arg_bool(c, MHA_BATCH_FIRST);
    int64_t L, N, E, S, Nk, Ek, Sv, Nv, Ev;
    seq_first_geom(c, iq, a->bf, &a->gq, &L, &N, &E);
    seq_first_geom(c, ik, a->bf, &a->gk, &S, &Nk, &Ek);
    seq_first_geom(c, iv, a->bf, &a->gv, &Sv, &Nv, &Ev);

    const struct memest_argval *ae = memest_arg(c, MHA_EMBED), *akd = memest_arg(c, MHA_KDIM),
                               *avd = memest_arg(c, MHA_VDIM);
    if (!ae->none && ae->v[0] != E)
        return memest_fail(c, "embed_dim is %lld but the query has %lld features",
                           (long long)ae->v[0], (long long)E);
    if (E < 1)
        return memest_fail(c, "the query has no features (E = 0)");
    int64_t H = memest_arg_int(c, MHA_HEADS);
    int64_t kdim = akd->none ? E : akd->v[0], vdim = avd->none ? E : avd->v[0];
    if (E % H != 0)
        return memest_fail(c, "embed_dim (%lld) must be divisible by num_heads (%lld)",
                           (long long)E, (long long)H);
    if (nin == 1 && (kdim != E || vdim != E))
        return memest_fail(c, "kdim/vdim differ from embed_dim, so key and value must be given "
                              "as inputs 1 and 2");
    if (Ek != kdim)
        return memest_fail(c, "kdim is %lld but the key has %lld features", (long long)kdim,
                           (long long)Ek);
    if (Ev != vdim)
        return memest_fail(c, "vdim is %lld but the value has %lld features", (long long)vdim,
                           (long long)Ev);
    if (Nk != N || Nv != N)
        return memest_fail(c, "query, key and value must have the same batch size, got %lld, "
                              "%lld and %lld",
                           (long long)N, (long long)Nk, (long long)Nv);
    if (S != Sv)
        return memest_fail(c, "key and value must have the same length, got %lld and %lld",
                           (long long)S, (long long)Sv);
    bool causal = strcmp(memest_arg(c, MHA_MASK)->s, "causal") == 0;
    if (causal && L != S)
        return memest_fail(c, "a causal attn_mask needs equal query and key lengths, got %lld "
                              "and %lld",
                           (long long)L, (long long)S);
    a->L = L, a->N = N, a->E = E, a->S = S, a->H = H, a->kdim = kdim, a->vdim = vdim;
    a->causal = causal;
    return 0;
}

/* MultiheadAttention's parameters, in named_parameters() order: one
 * in_proj_weight when kdim and vdim are embed_dim (`same`), else three. */
static int mha_params(struct memest_ictx *c, const struct mha_in *a, bool same, bool bias,
                      bool bias_kv)
{
    int64_t E = a->E;
    int64_t w3[2] = {3 * E, E}, wq[2] = {E, E}, wk[2] = {E, a->kdim}, wv[2] = {E, a->vdim},
            b3 = 3 * E, bkv[3] = {1, 1, E};
    if (same) {
        if (memest_param(c, "in_proj_weight", 2, w3) != 0)
            return -1;
    } else if (memest_param(c, "q_proj_weight", 2, wq) != 0 ||
               memest_param(c, "k_proj_weight", 2, wk) != 0 ||
               memest_param(c, "v_proj_weight", 2, wv) != 0) {
        return -1;
    }
    if (bias && memest_param(c, "in_proj_bias", 1, &b3) != 0)
        return -1;
    if (bias_kv && (memest_param(c, "bias_k", 3, bkv) != 0 ||
                    memest_param(c, "bias_v", 3, bkv) != 0))
        return -1;
    if (memest_param(c, "out_proj.weight", 2, wq) != 0)
        return -1;
    if (bias && memest_param(c, "out_proj.bias", 1, &E) != 0)
        return -1;
    return 0;
}

/* MultiheadAttention's outputs: attn_output, and with need_weights the
 * attention weights [N, (H,) L, S2] (averaged over the heads with
 * average_attn_weights). */
static int mha_outputs(struct memest_ictx *c, const struct mha_in *a, int64_t S2, bool need_w,
                       bool avg)
{
    int64_t o[3];
    int nd = 0;
    if (a->batched) {
        o[nd++] = a->bf ? a->N : a->L;
        o[nd++] = a->bf ? a->L : a->N;
    } else {
        o[nd++] = a->L;
    }
    o[nd++] = a->E;
    if (memest_out_new(c, nd, o, a->dt) < 0)
        return -1;
    if (need_w) {
        int64_t w[4];
        int nw = 0;
        if (a->batched)
            w[nw++] = a->N;
        if (!avg)
            w[nw++] = a->H;
        w[nw++] = a->L;
        w[nw++] = S2;
        if (memest_out_new(c, nw, w, a->dt) < 0)
            return -1;
    }
    return 0;
}

static int infer_mha(struct memest_ictx *c)
{
    struct mha_in a;
    if (mha_shape_check(c, &a) != 0)
        return -1;
    int nin = a.nin, iq = a.iq, ik = a.ik, iv = a.iv;
    int64_t L = a.L, N = a.N, E = a.E, S = a.S, H = a.H, kdim = a.kdim, vdim = a.vdim;
    enum memest_dtype dt = a.dt;
    bool causal = a.causal;
    bool same = kdim == E && vdim == E, bias = memest_arg_bool(c, MHA_BIAS);
    bool bias_kv = memest_arg_bool(c, MHA_BIAS_KV), zero_attn = memest_arg_bool(c, MHA_ZERO_ATTN);

    /* parameters, in named_parameters() order */
    if (mha_params(c, &a, same, bias, bias_kv) != 0)
        return -1;

    bool wq_tr = memest_param_trainable(c, same ? "in_proj_weight" : "q_proj_weight");
    bool wk_tr = memest_param_trainable(c, same ? "in_proj_weight" : "k_proj_weight");
    bool wv_tr = memest_param_trainable(c, same ? "in_proj_weight" : "v_proj_weight");
    bool wo_tr = memest_param_trainable(c, "out_proj.weight");
    bool rg_q = memest_in_requires_grad(c, iq), rg_k = memest_in_requires_grad(c, ik),
         rg_v = memest_in_requires_grad(c, iv);
    bool inner = rg_q || rg_k || rg_v || wq_tr || wk_tr || wv_tr ||
                 (bias && memest_param_trainable(c, "in_proj_bias")) ||
                 (bias_kv && (memest_param_trainable(c, "bias_k") ||
                              memest_param_trainable(c, "bias_v")));

    int64_t S2 = S + (bias_kv ? 1 : 0) + (zero_attn ? 1 : 0);

    /* outputs */
    bool need_w = memest_arg_bool(c, MHA_NEED_WEIGHTS), avg = memest_arg_bool(c, MHA_AVERAGE);
    if (mha_outputs(c, &a, S2, need_w, avg) != 0)
        return -1;
    bool w_is_out = need_w && !avg; /* output 1 is the attention tensor itself */

    /* saved tensors */
    double p = memest_arg_float(c, MHA_DROPOUT);
    int64_t fq[2] = {L * N, E}, fk[2] = {S * N, kdim}, fv[2] = {S * N, vdim};
    if (save_geom_reshaped(c, iq, &a.gq, 2, fq, wq_tr) != 0)
        return -1;
    if (nin == 3 && (save_geom_reshaped(c, ik, &a.gk, 2, fk, wk_tr) != 0 ||
                     save_geom_reshaped(c, iv, &a.gv, 2, fv, wv_tr) != 0))
        return -1;
    struct mha m = {.L = L, .N = N, .E = E, .S = S, .S2 = S2, .H = H, .dt = dt, .p = p,
                    .inner = inner, .causal = causal, .wo_tr = wo_tr, .w_is_out = w_is_out,
                    .packed = nin == 1};
    /* PyTorch >= 2.0 without the weights: scaled_dot_product_attention */
    bool fused = !need_w && !torch113(c) && inner;
    if ((fused ? attention_sdpa(c, &m) : attention_explicit(c, &m)) != 0)
        return -1;
    /* under autocast (the projections and bmm's run in fp16/bf16) the weight
     * copies are saved for the inputs' gradients */
    if (inner && (memest_save_param(c, same ? "in_proj_weight" : "q_proj_weight") != 0 ||
                  (!same && (memest_save_param(c, "k_proj_weight") != 0 ||
                             memest_save_param(c, "v_proj_weight") != 0)) ||
                  memest_save_param(c, "out_proj.weight") != 0))
        return -1;
    /* backward inside the module: the gradients of the attention output
     * [L*N, E], of q, k, v and of the packed projection [L*N, 3E] (and
     * the attention's own: attention_explicit, the SDPA kernel) */
    int64_t ao[2] = {L * N, E};
    memest_bwd_workspace(c, memest_sat_mul(sat_bytes(2, ao, dt), 7));

    /* MACs */
    double fq_m = (double)L * (double)N * (double)E * (double)E;
    double fk_m = (double)S * (double)N * (double)E * (double)kdim;
    double fv_m = (double)S * (double)N * (double)E * (double)vdim;
    double bmm = (double)N * (double)L * (double)S2 * (double)E; /* each of the two */
    double fo = fq_m;
    /* the SDPA kernel counts its own (the same forward, its backward) */
    memest_macs(c, fq_m + fk_m + fv_m + (fused ? 0 : 2 * bmm) + fo);
    double bwd = fq_m * ((wq_tr ? 1 : 0) + (rg_q ? 1 : 0)) +
                 fk_m * ((wk_tr ? 1 : 0) + (rg_k ? 1 : 0)) +
                 fv_m * ((wv_tr ? 1 : 0) + (rg_v ? 1 : 0)) + (inner && !fused ? 4 * bmm : 0) +
                 fo * ((wo_tr ? 1 : 0) + (inner ? 1 : 0));
    memest_macs_bwd(c, bwd);
    return 0;
}

const struct memest_op_desc memest_ops_attention[] = {
    {
        .name = "multiheadattention",
        .min_in = 1,
        .max_in = 3,
        .args = mha_args,
        .nargs = NARGS(mha_args),
        .infer = infer_mha,
        .doc = "nn.MultiheadAttention: 1 input (self-attention) or query, key, value; "
               "outputs 0 = attn_output, 1 = attn weights (need_weights)",
        .amp = MEMEST_AMPP_LOW,
        .lib = MEMEST_LIB_CUBLAS, /* the projections (addmm) and the bmm of the scores */
    },
};
const int memest_ops_attention_count = NOPS(memest_ops_attention);
