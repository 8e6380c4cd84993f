/* ops_ssm.c - state-space mixers: mamba2_scan, the Mamba-2 mixer after its
 * in_proj as transformers' Bamba runs it on CUDA for training.
 *
 * BambaMixer.cuda_kernels_forward (transformers
 * src/transformers/models/bamba/modeling_bamba.py at
 * 00511f5df3b63c48b31496072ec35d6ff3ffa6c6), with mamba_ssm and
 * causal_conv1d installed, self.training and no cache:
 *     projected_states = self.in_proj(hidden_states)     # zxbcdt (a linear node)
 *     A = -torch.exp(self.A_log.float())                 # ExpBackward0 saves its
 *                                                        # result [nh] float32
 *     out = mamba_split_conv1d_scan_combined(projected_states, conv1d.weight,
 *         conv1d.bias, dt_bias, A, D=D, chunk_size, activation, rmsnorm_weight=
 *         norm.weight, rmsnorm_eps, outproj_weight=out_proj.weight,
 *         outproj_bias, headdim, ngroups, norm_before_gate=False)
 * MambaSplitConv1dScanCombinedFn.forward (state-spaces/mamba
 * mamba_ssm/ops/triton/ssd_combined.py, read at
 * 01b717ae0db0f51b82738b9ca46e5deb73e3a807) splits zxbcdt into z [dim], xBC
 * [dim + 2 g n] and dt [nh] (dim = nh * head_dim), runs causal_conv1d_fwd on
 * xBC, the chunked scan (_mamba_chunk_scan_combined_fwd, z None: its output
 * out_x [B, S, nh, head_dim] in x's dtype), the gated grouped RMSNorm
 * (_layer_norm_fwd: rstd [g * B * S] float32) and F.linear with out_proj,
 * all inside the Function (nothing else recorded), and saves
 *     ctx.save_for_backward(zxbcdt, conv1d_weight, conv1d_bias, out_x, A, D,
 *         dt_bias, initial_states, seq_idx, rmsnorm_weight, rstd,
 *         outproj_weight, outproj_bias)
 * so the activations are zxbcdt (the op's input), out_x, rstd and A, plus
 * exp's result (the parameters are not activations). The backward recomputes
 * xBC_conv and the normed output. The forward's and backward's temporaries
 * (the workspaces) follow mamba_ssm v2.2.4's code tensor by tensor:
 * ops_ssm_kernel.c.
 *
 * Parameters as the module holds them: conv1d.weight [conv_dim, 1, d_conv],
 * conv1d.bias [conv_dim] (conv_bias), dt_bias, A_log, D [nh], norm.weight
 * [dim], out_proj.weight [hidden, dim], out_proj.bias [hidden] (out_bias);
 * conv_dim = dim + 2 g n. */
#include "ops_ssm_kernel.h"

enum { M2_HEADS, M2_HEAD_DIM, M2_GROUPS, M2_STATE, M2_CONV, M2_CONV_BIAS, M2_OUT, M2_OUT_BIAS,
       M2_CHUNK, M2_EPS, M2_FUSED };

static const struct memest_argspec mamba2_args[] = {
    [M2_HEADS] = {"num_heads", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX,
                  .doc = "nh: mamba_n_heads"},
    [M2_HEAD_DIM] = {"head_dim", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX,
                     .doc = "mamba_d_head; dim = num_heads * head_dim"},
    [M2_GROUPS] = {"n_groups", MEMEST_ARG_INT, .idef = 1, .lo = 1, .hi = ARG_MAX,
                   .doc = "g: B and C groups (mamba_n_groups), also the RMSNorm's groups"},
    [M2_STATE] = {"state_size", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX,
                  .doc = "n: mamba_d_state"},
    [M2_CONV] = {"conv_kernel", MEMEST_ARG_INT, .idef = 4, .lo = 1, .hi = ARG_MAX,
                 .doc = "d_conv: the causal depthwise conv1d's width"},
    [M2_CONV_BIAS] = {"conv_bias", MEMEST_ARG_BOOL, .idef = 1, .doc = "conv1d.bias"},
    [M2_OUT] = {"out_features", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX,
                .doc = "out_proj's output (hidden_size)"},
    [M2_OUT_BIAS] = {"out_bias", MEMEST_ARG_BOOL, .idef = 0, .doc = "out_proj.bias"},
    [M2_CHUNK] = {"chunk_size", MEMEST_ARG_INT, .idef = 256, .lo = 1, .hi = ARG_MAX,
                  .doc = "the scan's chunk (mamba_chunk_size): sizes the forward's chunk states"},
    [M2_EPS] = {"eps", MEMEST_ARG_FLOAT, .fdef = 1e-6, .doc = "the gated RMSNorm's epsilon"},
    [M2_FUSED] = {"fused", MEMEST_ARG_BOOL, .idef = 1,
                  .doc = "mamba_ssm's kernel; false: BambaMixer.torch_forward, the eager chunked scan"},
};

static int m2_params(struct memest_ictx *c, const struct m2 *m)
{
    int64_t cw[3] = {m->conv_dim, 1, m->k}, ow[2] = {m->out, m->dim};
    if (memest_param(c, "conv1d.weight", 3, cw) != 0 ||
        (memest_arg_bool(c, M2_CONV_BIAS) && memest_param(c, "conv1d.bias", 1, &m->conv_dim) != 0) ||
        memest_param(c, "dt_bias", 1, &m->nh) != 0 || memest_param(c, "A_log", 1, &m->nh) != 0 ||
        memest_param(c, "D", 1, &m->nh) != 0 || memest_param(c, "norm.weight", 1, &m->dim) != 0 ||
        memest_param(c, "out_proj.weight", 2, ow) != 0 ||
        (memest_arg_bool(c, M2_OUT_BIAS) && memest_param(c, "out_proj.bias", 1, &m->out) != 0))
        return -1;
    return 0;
}

/* The kernel's workspaces (ops_ssm_kernel.c: what its forward and
 * backward allocate beyond the declared output, saved tensors and
 * gradients, read from mamba_ssm's code) and the MACs: the conv, the scan's
 * four contractions per chunk (C B^T, the chunk states, the diagonal
 * blocks' outputs, the states' outputs) and out_proj; the backward about
 * twice the forward. */
static void m2_costs(struct memest_ictx *c, const struct m2 *m, int64_t rows, int64_t S,
                     enum memest_dtype dt, bool fused)
{
    int64_t B = S > 0 ? rows / S : 0;
    if (fused)
        memest_workspace(c, m2_kernel_fwd_workspace(m, B, S, dt));
    if (fused && memest_needs_grad(c))
        memest_bwd_workspace(c, m2_kernel_bwd_workspace(m, B, S, dt, memest_arg_bool(c, M2_CONV_BIAS),
                                                        memest_arg_bool(c, M2_OUT_BIAS)));
    double r = (double)rows;
    double fwd = r * (double)(m->conv_dim * m->k) + r * (double)(m->chunk * m->g * m->n) +
                 2.0 * r * (double)(m->nh * m->hd * m->n) + r * (double)(m->chunk * m->dim) +
                 r * (double)m->dim * (double)m->out;
    memest_macs(c, fwd);
    memest_macs_bwd(c, memest_needs_grad(c) ? 2.0 * fwd : 0.0);
}

/* The slow path's backward at its first broadcast product's backward,
 * C_times_states = C[..., None, :] * states[:, :, None, ...] (the last of
 * ssd_naive's products, so the first in the backward): MulBackward0 returns
 * grad * states and grad * C, both [B, Sp, nh, head_dim, n] float32, and
 * validate_outputs sums the first to C's [B, Sp, nh, 1, n] while the second
 * is alive. Also live then: the gradients in flight, of gate ([B, S, dim] e,
 * waiting for the split's backward), of y (float32 [B, Sp, dim], for
 * D_residual's branch), of C_times_states.sum(-1) ([B, Sp, dim], whose
 * expand the product reads) and of exp(A_cumsum)'s permute ([B, Sp, nh]),
 * all float32 but gate's; the parameter gradients of out_proj and the norm
 * (declared). Already released: what out_proj, the gated norm and Y_off's
 * product saved (out_proj's input [B, S, dim] e; silu(gate), y * silu, the
 * normed [B, S, dim] and, unless e is float32, gate's float32 copy; rsqrt's
 * [B, S, 1]; y and C_times_states.sum(-1) [B, Sp, dim], float32); not made
 * yet: zxbcdt's gradient and conv1d's, dt_bias', A_log's and D's. The
 * scratch is what is live beyond memest's node-level account (every saved
 * tensor and gradient at once). Later products' backwards (G_intermediate's
 * [B, Sp, chunk, nh, n], Y_diag's [B, Sp, chunk, nh, head_dim], new_states')
 * are not modelled: the peak when their sizes, less what is released by
 * then, pass this one's. */
static uint64_t m2_torch_bwd_scratch(const struct m2 *m, int64_t B, int64_t S, enum memest_dtype e)
{
    const enum memest_dtype f = MEMEST_F32;
    int64_t nc = (S + m->chunk - 1) / m->chunk, Sp = nc * m->chunk;
    int64_t prod[5] = {B, Sp, m->nh, m->hd, m->n}, red[4] = {B, Sp, m->nh, m->n}, bsd[3] = {B, S, m->dim},
            bpd[3] = {B, Sp, m->dim}, bph[3] = {B, Sp, m->nh}, bs[2] = {B, S}, bsp[3] = {B, S, m->proj},
            conv[2] = {m->conv_dim, m->k + 1}, heads[2] = {3, m->nh};
    uint64_t live = memest_sat_mul(sat_bytes(5, prod, f), 2);
    live = memest_sat_add(live, sat_bytes(4, red, f));
    live = memest_sat_add(live, memest_sat_add(sat_bytes(3, bsd, e), memest_sat_mul(sat_bytes(3, bpd, f), 2)));
    live = memest_sat_add(live, sat_bytes(3, bph, f));
    uint64_t gone = memest_sat_add(sat_bytes(3, bsd, e), memest_sat_mul(sat_bytes(3, bsd, f), e == f ? 3 : 4));
    gone = memest_sat_add(gone, memest_sat_add(sat_bytes(2, bs, f), memest_sat_mul(sat_bytes(3, bpd, f), 2)));
    gone = memest_sat_add(gone, memest_sat_add(sat_bytes(3, bsp, e), sat_bytes(2, conv, e)));
    gone = memest_sat_add(gone, sat_bytes(2, heads, e));
    return live > gone ? live - gone : 0;
}

/* BambaMixer.torch_forward (the slow path: no mamba_ssm / causal_conv1d, or
 * not CUDA) in training, line by line (tests/tools/hf_models_ssm.py runs it):
 * e is the input's dtype, Sp = nc * chunk the padded length, r = nh / g.
 * Saved, each a storage of its own:
 *   conv1d: ConvolutionBackward0 its input, a view of zxbcdt (the input);
 *   act(conv(...)[..., :S]): the conv output [B, conv_dim, S + d_conv - 1] e;
 *   -exp(A_log.float()): exp's result; A (the negation) by A * dt [nh] f32;
 *   softplus(dt + dt_bias), clamp: the sum, softplus's output and the clamp's
 *     output (by hidden_states * dt[..., None]) [B, S, nh] e;
 *   hidden_states * dt: hidden_states.float(): in float32 a view of the act's
 *     output [B, S, conv_dim], else a float32 copy [B, S, dim];
 *   D[..., None] * pad(hidden_states): the padded copy [B, Sp, dim] f32;
 *   segment_sum's two masked_fill masks, bool [chunk, chunk] and
 *     [nc + 1, nc + 1];
 *   L = exp(segment_sum(A)) [B, nh, nc, chunk, chunk]; the chunked C and B
 *     (F.pad copies of the repeat_interleave'd [B, Sp, nh, n]); G and M
 *     [B, nc, chunk, chunk, nh]; the chunked hidden_states * dt [B, Sp, dim];
 *     decay_states and exp(A_cumsum) [B, nh, nc, chunk]; B_decay [B, Sp, nh,
 *     n]; decay_chunk [B, nh, nc + 1, nc + 1]; the cat of the states and
 *     new_states [B, nc + 1, nh, head_dim, n]; C_times_states.sum(-1)
 *     [B, Sp, dim], all float32;
 *   BambaRMSNormGated on y (float32; y[:, :S].reshape(B, S, -1) is a view
 *     of the padded [B, Sp, dim]): gate.to(float32) (a copy unless e is
 *     float32) by silu, y and silu's output by the product, that product
 *     (pow, mul), rsqrt's [B, S, 1] and the normed [B, S, dim], float32;
 *   out_proj: its input, weight * normed cast to e, [B, S, dim] e.
 * The largest transient, one at a time: the broadcast products before their
 * sums, [B, Sp, chunk, nh, n] (G's), [B, Sp, nh, head_dim, n] (the states'
 * and C_times_states), [B, nc + 1, nc + 1, nh, head_dim, n]. */
static int m2_torch_saves(struct memest_ictx *c, const struct m2 *m, int64_t B, int64_t S,
                          enum memest_dtype e)
{
    int64_t nc = (S + m->chunk - 1) / m->chunk, Sp = nc * m->chunk, nc1 = nc + 1;
    bool f32 = e == MEMEST_F32;
    const struct { int nd; int64_t sz[5]; enum memest_dtype dt; int times; } t[] = {
        {3, {B, m->conv_dim, S + m->k - 1}, e, 1},
        {1, {m->nh}, MEMEST_F32, 2},
        {3, {B, S, m->nh}, e, 3},
        {3, {B, S, f32 ? m->conv_dim : m->dim}, MEMEST_F32, 1},
        {3, {B, Sp, m->dim}, MEMEST_F32, 4},   /* D's pad, chunked x*dt, C_times_states, y */
        {2, {m->chunk, m->chunk}, MEMEST_BOOL, 2},
        {2, {nc1, nc1}, MEMEST_BOOL, 2},
        {5, {B, m->nh, nc, m->chunk, m->chunk}, MEMEST_F32, 1},
        {4, {B, Sp, m->nh, m->n}, MEMEST_F32, 3},      /* chunked C, B, B_decay */
        {5, {B, nc, m->chunk, m->chunk, m->nh}, MEMEST_F32, 2},
        {4, {B, m->nh, nc, m->chunk}, MEMEST_F32, 2},
        {4, {B, m->nh, nc1, nc1}, MEMEST_F32, 1},
        {5, {B, nc1, m->nh, m->hd, m->n}, MEMEST_F32, 2},
        {3, {B, S, m->dim}, MEMEST_F32, f32 ? 3 : 4},   /* silu(gate), y * silu, normed (gate) */
        {3, {B, S, 1}, MEMEST_F32, 1},
        {3, {B, S, m->dim}, e, 1},
    };
    if (memest_save_in(c, 0) != 0)
        return -1;
    for (int i = 0; i < (int)(sizeof t / sizeof *t); i++)
        for (int j = 0; j < t[i].times; j++)
            if (memest_save_new(c, t[i].nd, t[i].sz, t[i].dt) != 0)
                return -1;
    uint64_t w1 = memest_sat_mul((uint64_t)(B * Sp), (uint64_t)(m->chunk * m->nh * m->n));
    uint64_t w2 = memest_sat_mul((uint64_t)(B * Sp), (uint64_t)(m->nh * m->hd * m->n));
    uint64_t w3 = memest_sat_mul((uint64_t)(B * nc1 * nc1), (uint64_t)(m->nh * m->hd * m->n));
    uint64_t w = w1 > w2 ? w1 : w2;
    memest_workspace(c, memest_sat_mul(w > w3 ? w : w3, 4));
    if (memest_needs_grad(c))
        memest_bwd_workspace(c, m2_torch_bwd_scratch(m, B, S, e));
    return 0;
}

static int infer_mamba2_scan(struct memest_ictx *c)
{
    const struct memest_shape *s = memest_in_shape(c, 0);
    if (s->ndim != 3)
        return memest_fail(c, "expects zxbcdt [batch, seq, 2 dim + 2 n_groups state_size + num_heads]");
    if (need_float(c, 0) != 0)
        return -1;
    struct m2 m = {.nh = memest_arg_int(c, M2_HEADS), .hd = memest_arg_int(c, M2_HEAD_DIM),
                   .g = memest_arg_int(c, M2_GROUPS), .n = memest_arg_int(c, M2_STATE),
                   .k = memest_arg_int(c, M2_CONV), .out = memest_arg_int(c, M2_OUT),
                   .chunk = memest_arg_int(c, M2_CHUNK)};
    if (m.nh % m.g != 0)
        return memest_fail(c, "num_heads (%lld) must be a multiple of n_groups (%lld)",
                           (long long)m.nh, (long long)m.g);
    uint64_t dim, gn, proj;
    if (!memest_mul((uint64_t)m.nh, (uint64_t)m.hd, &dim) ||
        !memest_mul((uint64_t)m.g, (uint64_t)m.n, &gn) || dim > ARG_MAX || gn > ARG_MAX)
        return memest_fail(c, "num_heads * head_dim or n_groups * state_size is too large");
    m.dim = (int64_t)dim;
    m.conv_dim = m.dim + 2 * (int64_t)gn;
    proj = (uint64_t)m.dim + (uint64_t)m.conv_dim + (uint64_t)m.nh;
    m.proj = (int64_t)proj;
    if (s->size[2] != (int64_t)proj)
        return memest_fail(c, "the last dimension must be 2 dim + 2 n_groups state_size + num_heads "
                              "= %llu (dim = num_heads * head_dim = %lld), got %lld",
                           (unsigned long long)proj, (long long)m.dim, (long long)s->size[2]);
    if (m2_params(c, &m) != 0)
        return -1;
    enum memest_dtype dt = memest_in_dtype(c, 0);
    int64_t osz[3] = {s->size[0], s->size[1], m.out};
    if (memest_out_new(c, 3, osz, dt) < 0)
        return -1;
    if (!memest_arg_bool(c, M2_FUSED)) {
        m2_costs(c, &m, s->size[0] * s->size[1], s->size[1], dt, false);
        return m2_torch_saves(c, &m, s->size[0], s->size[1], dt);
    }
    int64_t xsz[3] = {s->size[0], s->size[1], m.dim}, rsz[3] = {s->size[0], s->size[1], m.g};
    if (memest_save_in(c, 0) != 0 || memest_save_new(c, 3, xsz, dt) != 0 ||
        memest_save_new(c, 3, rsz, MEMEST_F32) != 0 || memest_save_new(c, 1, &m.nh, MEMEST_F32) != 0 ||
        memest_save_new(c, 1, &m.nh, MEMEST_F32) != 0)
        return -1;
    m2_costs(c, &m, s->size[0] * s->size[1], s->size[1], dt, true);
    return 0;
}

/* HybridMambaAttentionDynamicCache (modeling_bamba.py): per Mamba layer
 * conv_states [B, conv_dim, d_conv] and ssm_states [B, nh, head_dim, n],
 * made by BambaForCausalLM.prepare_inputs_for_generation in the model's
 * dtype before the prefill and updated in place (copy_). */
static uint64_t mamba2_state_elems(const struct memest_argval *a)
{
    uint64_t nh = (uint64_t)a[M2_HEADS].v[0], hd = (uint64_t)a[M2_HEAD_DIM].v[0];
    uint64_t conv_dim = memest_sat_add(memest_sat_mul(nh, hd),
                                       memest_sat_mul(2, memest_sat_mul((uint64_t)a[M2_GROUPS].v[0],
                                                                        (uint64_t)a[M2_STATE].v[0])));
    return memest_sat_add(memest_sat_mul(conv_dim, (uint64_t)a[M2_CONV].v[0]),
                          memest_sat_mul(memest_sat_mul(nh, hd), (uint64_t)a[M2_STATE].v[0]));
}

const struct memest_op_desc memest_ops_ssm[] = {
    {.name = "mamba2_scan", .min_in = 1, .max_in = 1, .args = mamba2_args,
     .nargs = NARGS(mamba2_args), .infer = infer_mamba2_scan, .amp = MEMEST_AMPP_ANY,
     .lib = MEMEST_LIB_CUBLAS, .gen_state_elems = mamba2_state_elems,
     .doc = "the Mamba-2 mixer after in_proj as mamba_ssm's fused mamba_split_conv1d_scan_combined "
            "runs it (conv1d, chunked SSD scan, gated RMSNorm, out_proj): saves zxbcdt, out_x, rstd, A"},
};
const int memest_ops_ssm_count = NOPS(memest_ops_ssm);
