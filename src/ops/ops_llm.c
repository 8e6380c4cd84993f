/* ops_llm.c - the pieces of a decoder-only LLM block that are not linear
 * layers or attention, as transformers v4.48.0 writes them and PyTorch 2.6
 * records them: RMSNorm (LlamaRMSNorm, GemmaRMSNorm, or a fused kernel),
 * the gated MLP product act(gate) * up (SwiGLU, GeGLU), Gemma 2's logit
 * soft-capping, Tensor.pow, Tensor.to / type_as, and module buffers.
 * Rotary position embeddings are in ops_llm_rotary.c.
 *
 * Each op here is one node for what the modeling code does in several
 * PyTorch ops; it declares what the eager ops save for backward (PyTorch
 * 2.x, tools/autograd/derivatives.yaml), the intermediates they allocate and
 * free (the forward workspace: whatever is neither an output nor saved,
 * taken at its peak in the order the Python code makes it; a Python local
 * lives until the function returns), and the scratch of the backward chain
 * beyond the gradients the engine already allocates (the input's and the
 * weight's), as the peak of that chain less the input's final gradient.
 *
 * Autocast: none of these is in aten/src/ATen/autocast_mode.cpp's lists
 * except pow (fp32 policy: pow.Tensor_Scalar is in AT_FORALL_FP32, as is
 * rsqrt; RMSNorm casts to float32 explicitly before them, so autocast has
 * nothing left to do there). mul, div, tanh, silu, gelu, _to_copy, mean are
 * not listed: they run in their inputs' dtype, promoted.
 *
 * The fused kernels (impl "fused", or "auto" with the run's --fused bit) are
 * Liger-Kernel's (linkedin/Liger-Kernel, src/liger_kernel/ops/): their
 * autograd.Function forward saves only what its save_for_backward lists. */
#include "ops_common.h"

/* bytes of numel elements of dt, saturating (workspaces only) */
static uint64_t nbytes(uint64_t numel, enum memest_dtype dt)
{
    return memest_sat_mul(numel, memest_dtype_size(dt));
}

static uint64_t sub_sat(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

/* impl "fused" / "eager", or "auto": fused when the run's --fused has `bit`. */
static bool want_fused(struct memest_ictx *c, int idx, uint32_t bit)
{
    const char *s = memest_arg(c, idx)->s;
    if (strcmp(s, "auto") == 0) {
        bool on = (memest_run_options(c)->fused & bit) != 0;
        if (on)
            memest_run_option_used(c, bit);
        return on;
    }
    return strcmp(s, "fused") == 0;
}

/* ---- rmsnorm ----
 *
 * LlamaRMSNorm.forward (transformers v4.48.0, models/llama/modeling_llama.py;
 * Mistral, Qwen2, Mixtral, Phi-3 copy it):
 *     input_dtype = hidden_states.dtype
 *     hidden_states = hidden_states.to(torch.float32)              # h
 *     variance = hidden_states.pow(2).mean(-1, keepdim=True)       # v
 *     hidden_states = hidden_states * torch.rsqrt(variance + eps)  # n32 = h * r
 *     return self.weight * hidden_states.to(input_dtype)           # w * n
 * GemmaRMSNorm.forward (models/gemma/modeling_gemma.py; Gemma 2 the same):
 *     output = self._norm(x.float())        # h * rsqrt(h.pow(2).mean(-1, keepdim) + eps)
 *     output = output * (1.0 + self.weight.float())
 *     return output.type_as(x)
 * (the weight starts at zeros there, ones in Llama: no effect on memory).
 * Saved by the eager ops (derivatives.yaml, PyTorch 2.x; each operand only
 * when the other side's gradient is needed, as the generated code checks
 * should_compute_output):
 *   h = x.to(float32): ToCopyBackward0 saves nothing; h is x itself when x is
 *     already float32 (no copy), else a new float32 tensor;
 *   pow(h, 2): PowBackward0 saves self (h);
 *   mean(-1, keepdim=True): MeanBackward1 saves only sizes in 2.x (1.13
 *     saved self: h again, already counted);
 *   v + eps: nothing; rsqrt: RsqrtBackward0 saves its result r [..., 1] f32;
 *   h * r: MulBackward0 saves h and r (both need gradients when x does);
 *   Llama: n = n32.to(input_dtype) (n32 itself for float32 inputs); weight * n
 *     saves n when the weight trains (the weight itself is a parameter);
 *   Gemma: w1 = 1.0 + weight.float() is a new [H] float32 tensor; n32 * w1
 *     saves w1 when x needs a gradient and n32 when the weight trains.
 * So Llama on a float32 [2, 8, 16] with x and the weight trainable saves x
 * (1024 bytes), r (2*8*4 = 64) and n32 (1024); in bfloat16, h (1024), r
 * (64) and n (512), not x (tests/unit/test_ops_llm.c has the cases).
 * The result: Llama: promote(weight dtype, input dtype) (float32 under
 * autocast, whose parameters stay float32); Gemma: the input's dtype.
 *
 * Fused (Liger LigerRMSNormFunction, ops/rms_norm.py): rms_norm_forward views
 * X as [rows, H], writes Y (X's dtype) and RSTD [rows] (float32 in the llama
 * and gemma casting modes), and saves X, W, RSTD. Its backward writes dX into
 * dY (in_place=True, the default of LigerRMSNorm and LigerRMSNormForGemma;
 * Gemma 2's sets False and gets a new dX: not distinguished here), so the
 * input's gradient is the output's, and sums a float32 [sm_count, H]
 * partial dW (sm_count: the GPU's
 * multiprocessors, 132 on an H100 SXM, the figure used here). */

enum { RMS_SHAPE, RMS_EPS, RMS_AFFINE, RMS_STYLE, RMS_IMPL };

static const struct memest_argspec rmsnorm_args[] = {
    [RMS_SHAPE] = {"normalized_shape", MEMEST_ARG_INT, .optional = true, .lo = 0, .hi = ARG_MAX,
                   .doc = "H, the last dim (default: its size; checked when given)"},
    [RMS_EPS] = {"eps", MEMEST_ARG_FLOAT, .fdef = 1e-6},
    [RMS_AFFINE] = {"elementwise_affine", MEMEST_ARG_BOOL, .idef = 1, .doc = "a weight [H]"},
    [RMS_STYLE] = {"style", MEMEST_ARG_STR, .sdef = "llama", .choices = "llama|gemma|olmo2",
                   .doc = "llama: weight * x_norm.to(dtype); gemma: (x_norm * (1 + weight))"
                          ".type_as(x); olmo2: (weight * x_norm).to(dtype)"},
    [RMS_IMPL] = {"impl", MEMEST_ARG_STR, .sdef = "auto", .choices = "auto|eager|fused",
                  .doc = "fused: Liger's kernel; auto: fused under --fused rmsnorm"},
};


struct rms {
    struct memest_shape s;
    enum memest_dtype dt, wdt;   /* input, weight */
    uint64_t n, rows;            /* elements, rows (elements / H) */
    int64_t stat[MEMEST_MAX_DIMS];
    bool rg, wtr, affine;        /* x requires grad, the weight trains */
};

/* The statistics both styles compute, h = x.float() to r = rsqrt(mean(h^2)
 * + eps): declares the saved h and r when x needs a gradient (keep_hr) and
 * tracks the transients; the variance stays allocated when it is a Python
 * local (Llama's `variance`), else it goes after the addition (Gemma). */
static int rms_stats(struct memest_ictx *c, const struct rms *m, struct transient *t,
                     bool keep_hr, bool variance_local)
{
    const uint64_t N32 = nbytes(m->n, MEMEST_F32), R = nbytes(m->rows, MEMEST_F32);
    if (m->dt != MEMEST_F32) { /* h: a float32 copy (saved by pow and mul) */
        if (keep_hr && memest_save_new(c, m->s.ndim, m->s.size, MEMEST_F32) != 0)
            return -1;
        if (!keep_hr)
            tr_alloc(t, N32);
    } else if (keep_hr && memest_save_in(c, 0) != 0) { /* h: x itself */
        return -1;
    }
    if (keep_hr)
        memest_save_repack(c);   /* pow's and mul's */
    tr_alloc(t, N32); /* h.pow(2) */
    tr_alloc(t, R);   /* its mean */
    tr_free(t, N32);
    tr_alloc(t, R);   /* + eps */
    if (!variance_local)
        tr_free(t, R);
    if (keep_hr && memest_save_new(c, m->s.ndim, m->stat, MEMEST_F32) != 0)
        return -1;    /* r = rsqrt(...) */
    if (keep_hr)
        memest_save_repack(c);   /* rsqrt's result, and mul's */
    if (!keep_hr)
        tr_alloc(t, R);
    tr_free(t, R);    /* + eps */
    return 0;
}

/* After n32 = h * r: h (a copy) and r go when nothing saved them. */
static void rms_drop_hr(struct transient *t, const struct rms *m, bool keep_hr)
{
    if (keep_hr)
        return;
    tr_free(t, m->dt == MEMEST_F32 ? 0 : nbytes(m->n, MEMEST_F32));
    tr_free(t, nbytes(m->rows, MEMEST_F32));
}

/* Backward scratch of the eager styles: the float32 chain of h's gradient
 * peaks at four [.., H] float32 tensors (mul's grad_h, mean's expanded
 * gradient, pow_backward's self.pow(1) and 2 * that) before the input's
 * gradient exists; with only the weight training, `weight_only`. */
static void rms_bwd(struct memest_ictx *c, const struct rms *m, uint64_t weight_only)
{
    if (m->rg)
        memest_bwd_workspace(c, sub_sat(memest_sat_mul(4, nbytes(m->n, MEMEST_F32)),
                                        nbytes(m->n, m->dt)));
    else if (m->affine && m->wtr)
        memest_bwd_workspace(c, weight_only);
}

/* Eager LlamaRMSNorm. */
static int rms_llama(struct memest_ictx *c, const struct rms *m)
{
    const bool f32in = m->dt == MEMEST_F32, grad = memest_needs_grad(c);
    const bool keep_hr = grad && m->rg, keep_n = grad && m->affine && m->wtr;
    const uint64_t N32 = nbytes(m->n, MEMEST_F32), Nd = nbytes(m->n, m->dt);
    enum memest_dtype out_dt = m->affine ? promote_dtypes(m->wdt, m->dt) : m->dt;
    struct transient t = {0};
    if (memest_out_like(c, &m->s, 0, out_dt) < 0 || rms_stats(c, m, &t, keep_hr, true) != 0)
        return -1;
    /* n32 = h * r: the output (float32 input, no weight), saved (float32
     * input, weight trains), else transient */
    bool n32_out = f32in && !m->affine, n32_saved = f32in && keep_n;
    if (n32_saved && memest_save_new(c, m->s.ndim, m->s.size, MEMEST_F32) != 0)
        return -1;
    if (!n32_out && !n32_saved)
        tr_alloc(&t, N32);
    rms_drop_hr(&t, m, keep_hr);
    if (!f32in) { /* n = n32.to(input_dtype): the output, saved, or transient */
        if (keep_n && memest_save_new(c, m->s.ndim, m->s.size, m->dt) != 0)
            return -1;
        if (m->affine && !keep_n)
            tr_alloc(&t, Nd);
        tr_free(&t, N32); /* n32, a temporary of the expression */
    }
    memest_workspace(c, t.peak);
    rms_bwd(c, m, nbytes(m->n, out_dt)); /* grad * n before its sum over rows */
    return 0;
}

/* Eager GemmaRMSNorm. */
static int rms_gemma(struct memest_ictx *c, const struct rms *m)
{
    const bool f32in = m->dt == MEMEST_F32, grad = memest_needs_grad(c);
    const bool keep_hr = grad && m->rg, keep_n32 = grad && m->affine && m->wtr;
    const bool keep_w1 = grad && m->affine && m->rg;
    const uint64_t N32 = nbytes(m->n, MEMEST_F32);
    const int64_t H = m->s.size[m->s.ndim - 1];
    struct transient t = {0};
    if (memest_out_like(c, &m->s, 0, m->dt) < 0 || rms_stats(c, m, &t, keep_hr, false) != 0)
        return -1;
    /* n32 = h * r: the output when there is no weight and x is float32 */
    bool n32_out = !m->affine && f32in;
    if (keep_n32 && memest_save_new(c, m->s.ndim, m->s.size, MEMEST_F32) != 0)
        return -1;
    if (!n32_out && !keep_n32)
        tr_alloc(&t, N32);
    rms_drop_hr(&t, m, keep_hr);
    if (m->affine) {
        /* weight.float() (a copy unless float32), 1.0 + that (saved) */
        uint64_t wcopy = m->wdt == MEMEST_F32 ? 0 : nbytes((uint64_t)H, MEMEST_F32);
        tr_alloc(&t, wcopy);
        if (keep_w1 && memest_save_new(c, 1, &H, MEMEST_F32) != 0)
            return -1;
        if (!keep_w1)
            tr_alloc(&t, nbytes((uint64_t)H, MEMEST_F32));
        tr_free(&t, wcopy);
        if (!f32in) /* the float32 product before .type_as(x) */
            tr_alloc(&t, N32);
    }
    memest_workspace(c, t.peak);
    /* with only the weight training: grad.to(float32) and grad * n32 */
    rms_bwd(c, m, memest_sat_mul(2, N32));
    return 0;
}

/* Eager Olmo2RMSNorm: (weight * n32).to(input_dtype), the product taken
 * in float32, so that the weight's gradient needs n32 itself (saved, float32
 * whatever the input dtype) where Llama's saves n32.to(input_dtype). */
static int rms_olmo2(struct memest_ictx *c, const struct rms *m)
{
    const bool f32in = m->dt == MEMEST_F32, grad = memest_needs_grad(c);
    const bool keep_hr = grad && m->rg, keep_n32 = grad && m->affine && m->wtr;
    const uint64_t N32 = nbytes(m->n, MEMEST_F32);
    struct transient t = {0};
    if (memest_out_like(c, &m->s, 0, m->dt) < 0 || rms_stats(c, m, &t, keep_hr, true) != 0)
        return -1;
    /* n32 = h * r: the output when there is no weight and x is float32 */
    if (keep_n32 && memest_save_new(c, m->s.ndim, m->s.size, MEMEST_F32) != 0)
        return -1;
    if (!(f32in && !m->affine) && !keep_n32)
        tr_alloc(&t, N32);
    rms_drop_hr(&t, m, keep_hr);
    if (m->affine && !f32in) /* the float32 product before .to(input_dtype) */
        tr_alloc(&t, N32);
    memest_workspace(c, t.peak);
    rms_bwd(c, m, N32); /* grad * n32 before its sum over rows */
    return 0;
}

/* Liger's fused RMSNorm: saves X (viewed as [rows, H]) and RSTD [rows]
 * float32; dX is written into dY. */
static int rms_fused(struct memest_ictx *c, const struct rms *m)
{
    if (memest_out_like(c, &m->s, 0, m->dt) < 0)
        return -1;
    int64_t view[2] = {(int64_t)m->rows, m->s.size[m->s.ndim - 1]}, rows = (int64_t)m->rows;
    if (memest_save_in_reshaped(c, 0, 2, view) != 0 || save_new_if(c, 1, &rows, MEMEST_F32) != 0)
        return -1;
    memest_grad_same(c, 0, 0);
    if (m->affine && m->wtr)
        memest_bwd_workspace(c, nbytes((uint64_t)OPS_SM_COUNT * (uint64_t)view[1], MEMEST_F32));
    return 0;
}

static int infer_rmsnorm(struct memest_ictx *c)
{
    struct rms m = {.s = *memest_in_shape(c, 0)};
    if (m.s.ndim < 1)
        return memest_fail(c, "expects an input with at least 1 dimension (..., H)");
    if (need_float(c, 0) != 0)
        return -1;
    int64_t H = m.s.size[m.s.ndim - 1];
    const struct memest_argval *ns = memest_arg(c, RMS_SHAPE);
    if (!ns->none && ns->v[0] != H)
        return memest_fail(c, "normalized_shape is %lld but the input's last dimension is %lld",
                           (long long)ns->v[0], (long long)H);
    m.affine = memest_arg_bool(c, RMS_AFFINE);
    if (m.affine && memest_param(c, "weight", 1, &H) != 0)
        return -1;
    for (int d = 0; d < m.s.ndim; d++)
        m.stat[d] = d + 1 < m.s.ndim ? m.s.size[d] : 1;
    if (!memest_numel(c, m.s.ndim, m.s.size, &m.n) || !memest_numel(c, m.s.ndim, m.stat, &m.rows))
        return -1;
    m.dt = memest_in_dtype(c, 0);
    m.wdt = memest_param_dtype(c);
    m.rg = memest_in_requires_grad(c, 0);
    m.wtr = m.affine && memest_param_trainable(c, "weight");
    if (want_fused(c, RMS_IMPL, MEMEST_FUSED_RMSNORM))
        return rms_fused(c, &m);
    if (strcmp(memest_arg(c, RMS_STYLE)->s, "gemma") == 0)
        return rms_gemma(c, &m);
    if (strcmp(memest_arg(c, RMS_STYLE)->s, "olmo2") == 0)
        return rms_olmo2(c, &m);
    return rms_llama(c, &m);
}

/* ---- act_mul ----
 *
 * The gated MLP's act(gate) * up (LlamaMLP.forward, v4.48.0:
 * down_proj(act_fn(gate_proj(x)) * up_proj(x)); GemmaMLP the same with
 * gelu_pytorch_tanh). Eager, PyTorch 2.x:
 *   act(gate): SiluBackward0 / GeluBackward0 save self (gate) when gate
 *     requires grad; the result a is a new tensor of gate's dtype;
 *   a * up: MulBackward0 saves a when up requires grad and up when a does.
 * Backward: MulBackward0 makes a's gradient (grad * up) and up's, then the
 * engine frees the incoming gradient (its input buffer, PyTorch 2.x
 * engine.cpp call_function) before SiluBackward0 / GeluBackward0 turns a's
 * gradient into gate's: the live gradients are {grad, ga, gu}, then
 * {ga, gu, gg}. The default model holds {grad, gg, gu}: the same bytes when
 * a's gradient is no wider than gate's, else the difference is scratch
 * (tests/tools/qlora_peak.py measured the whole step).
 * Fused (Liger LigerSiLUMulFunction / LigerGELUMulFunction, ops/swiglu.py,
 * ops/geglu.py): views gate and up as [rows, n], writes c = empty_like(gate)
 * and saves gate and up only (the activation is recomputed in backward,
 * which writes the two gradients into the saved tensors' storage; here the
 * engine's usual new gradients are counted instead). Liger has SiLU and the
 * tanh GELU; "auto" keeps the exact GELU eager, "fused" refuses it. */

enum { AM_ACT, AM_IMPL };

static const struct memest_argspec act_mul_args[] = {
    [AM_ACT] = {"activation", MEMEST_ARG_STR, .sdef = "silu", .choices = "silu|gelu|gelu_tanh",
                .doc = "silu: SwiGLU; gelu / gelu_tanh: GeGLU"},
    [AM_IMPL] = {"impl", MEMEST_ARG_STR, .sdef = "auto", .choices = "auto|eager|fused",
                 .doc = "fused: Liger's kernel; auto: fused under --fused swiglu"},
};

static int infer_act_mul(struct memest_ictx *c)
{
    if (need_float(c, 0) != 0 || need_float(c, 1) != 0)
        return -1;
    const struct memest_shape g = *memest_in_shape(c, 0), u = *memest_in_shape(c, 1);
    if (!memest_shape_equal(&g, &u))
        return memest_fail(c, "gate and up must have the same shape, got %s and %s",
                           IN_STR(c, 0), IN_STR(c, 1));
    enum memest_dtype gdt = memest_in_dtype(c, 0), udt = memest_in_dtype(c, 1);
    bool exact_gelu = strcmp(memest_arg(c, AM_ACT)->s, "gelu") == 0;
    bool fused = want_fused(c, AM_IMPL, MEMEST_FUSED_SWIGLU);
    if (fused && exact_gelu) {
        if (strcmp(memest_arg(c, AM_IMPL)->s, "fused") == 0)
            return memest_fail(c, "Liger's fused GeGLU uses the tanh approximation: use "
                                  "activation \"gelu_tanh\" or impl \"eager\"");
        fused = false;
    }
    uint64_t n;
    if (!memest_numel(c, g.ndim, g.size, &n))
        return -1;
    if (fused) {
        if (gdt != udt)
            return memest_fail(c, "the fused kernel needs gate and up of one dtype, got %s and %s",
                               memest_dtype_name(gdt), memest_dtype_name(udt));
        int64_t rows = 1, cols = g.ndim ? g.size[g.ndim - 1] : 1;
        for (int d = 0; d + 1 < g.ndim; d++)
            rows *= g.size[d]; /* <= n, which memest_numel bounded */
        int64_t view[2] = {rows, cols};
        if (memest_out_like(c, &g, 0, gdt) < 0 || memest_save_in_reshaped(c, 0, 2, view) != 0 ||
            memest_save_in_reshaped(c, 1, 2, view) != 0)
            return -1;
        return 0;
    }
    bool rg_g = memest_in_requires_grad(c, 0), rg_u = memest_in_requires_grad(c, 1);
    if (memest_out_like(c, &g, 0, promote_dtypes(gdt, udt)) < 0)
        return -1;
    if (rg_g && (memest_save_in(c, 0) != 0 || memest_save_in(c, 1) != 0))
        return -1; /* act saves gate; the product saves up for a's gradient */
    bool keep_a = rg_u && memest_needs_grad(c);
    if (keep_a && memest_save_new(c, g.ndim, g.size, gdt) != 0)
        return -1;
    if (!keep_a)
        memest_workspace(c, nbytes(n, gdt));
    /* Python evaluates act_fn(gate_proj(x)) whole before up_proj(x) */
    memest_in0_first(c);
    size_t wa = memest_dtype_size(promote_dtypes(gdt, udt)), wg = memest_dtype_size(gdt);
    if (rg_g && wa > wg)
        memest_bwd_workspace(c, memest_sat_mul(n, wa - wg));
    return 0;
}

/* ---- softcap ----
 *
 * Gemma 2's logit soft-capping (Gemma2ForCausalLM.forward, v4.48.0):
 *     logits = logits / cap; logits = torch.tanh(logits); logits = logits * cap
 * Division and product by a Python number save no tensor (PyTorch 2.6
 * measured: tests/tools/llm_ops_saved.py); TanhBackward0 saves its result
 * y. Forward transient: x / cap (and y too when nothing is saved).
 * Backward: grad * cap, tanh_backward, / cap: one tensor beyond the
 * input's gradient at the peak. */

enum { SC_CAP };

static const struct memest_argspec softcap_args[] = {
    [SC_CAP] = {"cap", MEMEST_ARG_FLOAT, .required = true,
                .doc = "> 0 (final_logit_softcapping, attn_logit_softcapping)"},
};

static int infer_softcap(struct memest_ictx *c)
{
    if (need_float(c, 0) != 0)
        return -1;
    if (!(memest_arg_float(c, SC_CAP) > 0))
        return memest_fail(c, "cap must be greater than 0");
    const struct memest_shape s = *memest_in_shape(c, 0);
    enum memest_dtype dt = memest_in_dtype(c, 0);
    uint64_t n;
    if (!memest_numel(c, s.ndim, s.size, &n) || memest_out_like(c, &s, 0, dt) < 0)
        return -1;
    bool keep = memest_needs_grad(c);
    if (keep && memest_save_new(c, s.ndim, s.size, dt) != 0)
        return -1; /* tanh's result */
    memest_workspace(c, nbytes(n, dt) * (keep ? 1 : 2));
    memest_bwd_workspace(c, nbytes(n, dt));
    return 0;
}

/* ---- pow ----
 *
 * Tensor.pow(exponent) with a Python number (pow.Tensor_Scalar):
 * PowBackward0 saves self (and the exponent, a Scalar), in 2.x as in 1.13.
 * Result dtype: the input's for floating inputs; an integer input keeps its
 * type for an integral exponent and becomes the default float type
 * otherwise (bool becomes int64). Autocast: fp32 policy (AT_FORALL_FP32).
 * Backward: pow_backward computes grad * (exponent * self.pow(exponent - 1)):
 * one tensor beyond the input's gradient at the peak.
 * With a tensor exponent (torch.pow(x, y), pow.Tensor_Tensor, 2 inputs):
 * broadcast, the promoted dtype; PowBackward1 saves self, exponent and the
 * result whichever of the two requires grad (measured under 1.13 and 2.6:
 * tests/reference/ops_b_saved_*.txt). */

enum { PW_EXP };

static const struct memest_argspec pow_args[] = {
    [PW_EXP] = {"exponent", MEMEST_ARG_FLOAT, .optional = true,
                .doc = "a number; unset with 2 inputs: the second is the exponent"},
};

static int infer_pow_tensor(struct memest_ictx *c)
{
    struct memest_shape out;
    if (!memest_shape_broadcast(memest_in_shape(c, 0), memest_in_shape(c, 1), &out))
        return memest_fail(c, "shapes %s and %s are not broadcastable", IN_STR(c, 0),
                           IN_STR(c, 1));
    int like = memest_shape_equal(&out, memest_in_shape(c, 0)) ? 0 : 1;
    int k = memest_out_like(c, &out, like,
                            promote_dtypes(memest_in_dtype(c, 0), memest_in_dtype(c, 1)));
    if (k < 0 || memest_save_in(c, 0) != 0 || memest_save_in(c, 1) != 0)
        return -1;
    return memest_save_out(c, k);
}

static int infer_pow(struct memest_ictx *c)
{
    bool num = !memest_arg(c, PW_EXP)->none;
    if (memest_in_count(c) == 2 && num)
        return memest_fail(c, "give either a second input or a number \"exponent\", not both");
    if (memest_in_count(c) == 1 && !num)
        return memest_fail(c, "needs a number \"exponent\" or a second input");
    if (!num)
        return infer_pow_tensor(c);
    const struct memest_shape s = *memest_in_shape(c, 0);
    enum memest_dtype dt = memest_in_dtype(c, 0);
    double e = memest_arg_float(c, PW_EXP);
    if (!memest_dtype_is_float(dt)) {
        if (e != (double)(int64_t)e)
            dt = memest_float_dtype(c);
        else if (dt == MEMEST_BOOL)
            dt = MEMEST_I64;
    }
    uint64_t n;
    if (!memest_numel(c, s.ndim, s.size, &n) || memest_out_like(c, &s, 0, dt) < 0 ||
        memest_save_in(c, 0) != 0)
        return -1;
    memest_bwd_workspace(c, nbytes(n, memest_in_dtype(c, 0)));
    return 0;
}

/* ---- to ----
 *
 * Tensor.to(dtype) / .float() / .type_as(other): _to_copy into a new tensor
 * of the input's layout when the dtype changes; the input itself when it
 * does not (no copy, no node). ToCopyBackward0 saves nothing; its backward
 * converts the gradient back (a new tensor of the input's dtype). The second
 * input of type_as gives only its dtype. */

enum { TO_DTYPE };

static const struct memest_argspec to_args[] = {
    [TO_DTYPE] = {"dtype", MEMEST_ARG_STR, .optional = true,
                  .choices = "float32|float16|bfloat16|float",
                  .doc = "float: the run's float dtype; unset with 2 inputs: type_as(input 1)"},
};

static int infer_to(struct memest_ictx *c)
{
    const struct memest_argval *a = memest_arg(c, TO_DTYPE);
    int nin = memest_in_count(c);
    enum memest_dtype dt;
    if (nin == 2) {
        if (!a->none)
            return memest_fail(c, "give either a dtype or a second input (type_as), not both");
        dt = memest_in_dtype(c, 1);
        memest_grad_none(c, 1);
    } else if (a->none) {
        return memest_fail(c, "needs a dtype, or a second input whose dtype to take");
    } else if (arg_dtype_exact(c, a->s, &dt) != 0) {
        return -1;
    }
    if (dt == memest_in_dtype(c, 0)) {
        memest_grad_same(c, 0, 0);
        return out_alias_view(c, 0);
    }
    const struct memest_shape s = *memest_in_shape(c, 0);
    return memest_out_like(c, &s, 0, dt) < 0 ? -1 : 0;
}

/* ---- buffer ----
 *
 * A tensor a module registers with register_buffer and reads in forward
 * (LlamaRotaryEmbedding's inv_freq, a causal mask, position ids): allocated
 * once with the model, no gradient. persistent=False keeps it out of the
 * state_dict; memest has no checkpoint figure, so both count the same. */

enum { BUF_SHAPE, BUF_DTYPE, BUF_PERSISTENT };

static const struct memest_argspec buffer_args[] = {
    [BUF_SHAPE] = {"shape", MEMEST_ARG_SHAPE, .required = true,
                   .doc = "sizes (no batch dimension)"},
    [BUF_DTYPE] = {"dtype", MEMEST_ARG_STR, .sdef = "float32",
                   .doc = "a dtype name, or float: the run's float dtype"},
    [BUF_PERSISTENT] = {"persistent", MEMEST_ARG_BOOL, .idef = 1,
                        .doc = "in the state_dict (no effect on memory)"},
};

static int infer_buffer(struct memest_ictx *c)
{
    const struct memest_argval *a = memest_arg(c, BUF_SHAPE);
    int64_t size[MEMEST_MAX_DIMS];
    if (a->n > MEMEST_MAX_DIMS)
        return memest_fail(c, "shape has more than %d dimensions", MEMEST_MAX_DIMS);
    for (int i = 0; i < a->n; i++) {
        if (a->v[i] == MEMEST_SHAPE_BATCH || a->v[i] < 0)
            return memest_fail(c, "shape must list sizes >= 0 (a buffer has no batch dimension)");
        size[i] = a->v[i];
    }
    enum memest_dtype dt;
    if (arg_dtype_exact(c, memest_arg(c, BUF_DTYPE)->s, &dt) != 0)
        return -1;
    return memest_out_buffer(c, "buffer", a->n, size, dt) < 0 ? -1 : 0;
}

#define LLM_OP(nm, lo, hi, argv, fn, text, policy)                                             \
    {                                                                                           \
        .name = nm, .min_in = lo, .max_in = hi, .args = argv, .nargs = NARGS(argv),            \
        .infer = fn, .doc = text, .amp = policy,                                                \
    }

const struct memest_op_desc memest_ops_llm[] = {
    LLM_OP("rmsnorm", 1, 1, rmsnorm_args, infer_rmsnorm,
           "RMSNorm over the last dim (LlamaRMSNorm, GemmaRMSNorm, Liger's fused kernel)",
           MEMEST_AMPP_ANY),
    LLM_OP("act_mul", 2, 2, act_mul_args, infer_act_mul,
           "act(gate) * up of a gated MLP (SwiGLU, GeGLU; Liger's fused kernel)",
           MEMEST_AMPP_ANY),
    LLM_OP("softcap", 1, 1, softcap_args, infer_softcap,
           "tanh(x / cap) * cap (Gemma 2 logit soft-capping)", MEMEST_AMPP_ANY),
    LLM_OP("pow", 1, 2, pow_args, infer_pow, "Tensor.pow(exponent): a number or a tensor",
           MEMEST_AMPP_FP32),
    /* the values of its input, cast (ops.h: same_data) */
    {.name = "to", .min_in = 1, .max_in = 2, .args = to_args, .nargs = NARGS(to_args),
     .infer = infer_to, .amp = MEMEST_AMPP_ANY, .same_data = true,
     .doc = "Tensor.to(dtype), or type_as(input 1); the input itself when the dtype is the same"},
    {.name = "buffer", .min_in = 0, .max_in = 0, .args = buffer_args,
     .nargs = NARGS(buffer_args), .infer = infer_buffer, .amp = MEMEST_AMPP_ANY,
     .module_state = true,
     .doc = "a module buffer (register_buffer): allocated with the model, no gradient"},
};
const int memest_ops_llm_count = NOPS(memest_ops_llm);
