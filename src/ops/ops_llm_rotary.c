/* ops_llm_rotary.c - rotary position embeddings (RoPE) as transformers
 * v4.48.0 computes them: the cos/sin tables of LlamaRotaryEmbedding, and
 * apply_rotary_pos_emb on one of q or k (eager, or Liger's fused kernel).
 *
 * rotary_embedding: LlamaRotaryEmbedding (models/llama/modeling_llama.py;
 * Mistral, Qwen2, Gemma, Phi-3, GPT-NeoX have copies) keeps inv_freq
 * [dim/2] float32 as a non-persistent buffer (the rope init computes it from
 * torch.arange(...).float(), so it stays float32 whatever the default
 * dtype) and its forward, under @torch.no_grad() and with autocast
 * disabled, computes for position_ids [1, S]:
 *     freqs = (inv_freq[None, :, None].float().expand(1, -1, 1)
 *              @ position_ids[:, None, :].float()).transpose(1, 2)  # [1, S, dim/2]
 *     emb = torch.cat((freqs, freqs), dim=-1)                        # [1, S, dim]
 *     cos = emb.cos() * attention_scaling; sin = emb.sin() * attention_scaling
 *     return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)
 * Nothing is recorded (no_grad): no saves, no gradient. The Python locals
 * (position ids as float, freqs, emb, and the float32 cos and sin before
 * their .to) live until it returns: the forward workspace.
 *
 * apply_rotary: apply_rotary_pos_emb (v4.48.0) for one tensor x:
 *     cos = cos.unsqueeze(1); sin = sin.unsqueeze(1)
 *     x_embed = (x * cos) + (rotate_half(x) * sin)
 *     rotate_half(x) = torch.cat((-x[..., D/2:], x[..., :D/2]), dim=-1)
 * and with a partial rotary dim rd (GPT-NeoX, Phi, Phi-3: rotary_pct /
 * partial_rotary_factor): x_embed of x[..., :rd], then
 * torch.cat((x_embed, x[..., rd:]), dim=-1). Saved (PyTorch 2.x): x * cos
 * saves cos, rotate_half(x) * sin saves sin (MulBackward0, each when x needs
 * a gradient; cos and sin never require grad, so x is not saved); neg, cat,
 * slicing and add save nothing. cos and sin are the rotary_embedding outputs
 * themselves (unsqueeze is a view), shared by q and k. The result has
 * promote(x, cos)'s dtype: under autocast q is bfloat16 but cos float32
 * (the embeddings stay float32), so x_embed is float32. Olmo2 keeps cos and
 * sin float32 (rotary_embedding's float32) and casts x_embed back to x's
 * dtype (cast_back: the promoted x_embed a temporary of the cast).
 * form "halves" is gpt-oss's _apply_rotary_emb (models/gpt_oss/
 * modular_gpt_oss.py at transformers 0261a467) on tables [1, S, D/2] (its
 * GptOssRotaryEmbedding returns emb = freqs, rotary_embedding cat false):
 *     first_half, second_half = torch.chunk(x, 2, dim=-1)
 *     cat((first_half * cos - second_half * sin,
 *          second_half * cos + first_half * sin), dim=-1)
 * The four products save cos and sin (x's halves are not saved: the tables
 * need no gradient): the same saved set as rotate_half's.
 *
 * Fused (Liger LigerRopeFunction, liger_kernel/ops/rope.py): rope_forward
 * takes q.transpose(1, 2).contiguous() - q itself when, as in the modeling
 * code, q is the transposed view of a [B, S, nh, D] projection - rotates it
 * in place and returns its transpose; it saves cos and sin (made
 * contiguous) only. So the output here is x's own storage when x's
 * transpose(1, 2) is contiguous, else a new tensor (the copy; memest gives
 * it the contiguous [B, nh, S, D] layout rather than the copy's transposed
 * one: same bytes). The kernel rotates the whole head: a partial rotary dim
 * is eager only. Its backward rotates dq.transpose(1, 2).contiguous() in
 * place: counted as the usual new gradient of x.
 *
 * The complex form (Llama 4: Llama4TextRotaryEmbedding and apply_rotary_emb
 * in models/llama4/modeling_llama4.py, transformers 000c33f):
 *     freqs = (inv_freq[None, :, None].float().expand(1, -1, 1)
 *              @ position_ids[:, None, :].float()).transpose(1, 2)  # [1, S, dim/2]
 *     freqs_cis = torch.polar(torch.ones_like(freqs), freqs) * attention_scaling
 * (no_grad, autocast off) is one complex64 [1, S, dim/2] table, which memest
 * writes as its view_as_real, a float32 [1, S, dim] of the same bytes
 * (rotary_embedding's complex: one output). apply_rotary's form "complex"
 * then takes x as the [B, S, heads, D] view of the projection (before the
 * transpose) and that table:
 *     x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
 *     out = torch.view_as_real(x_ * freqs_cis[:, :, None, :]).flatten(3).type_as(x)
 * Saved: the complex mul's other, freqs_cis itself (MulBackward0 saves it as
 * x_ needs a gradient; freqs_cis needs none, so x_ is not saved); .float(),
 * reshape, view_as_complex, view_as_real, flatten and type_as save nothing.
 * The output is a new [B, S, heads, D] tensor of x's dtype (for float32 x,
 * the product's own storage: .float() and type_as return their input). */
#include "ops_common.h"

/* ---- rotary_embedding ---- */

enum { RE_DIM, RE_F32, RE_CAT, RE_COMPLEX };

static const struct memest_argspec rotary_embedding_args[] = {
    [RE_DIM] = {"dim", MEMEST_ARG_INT, .required = true, .lo = 2, .hi = ARG_MAX,
                .doc = "rotary dim (even): head_dim * partial_rotary_factor"},
    [RE_F32] = {"float32", MEMEST_ARG_BOOL, .idef = 0,
                .doc = "cos, sin returned float32, not cast to x's dtype (Olmo2RotaryEmbedding)"},
    [RE_CAT] = {"cat", MEMEST_ARG_BOOL, .idef = 1,
                .doc = "emb = cat((freqs, freqs), -1); false: emb = freqs, tables [1, S, dim/2] "
                       "(GptOssRotaryEmbedding)"},
    [RE_COMPLEX] = {"complex", MEMEST_ARG_BOOL, .idef = 0,
                    .doc = "one output, Llama 4's complex64 freqs_cis [1, S, dim/2] (torch.polar), "
                           "as its float32 view_as_real [1, S, dim]"},
};

static int infer_rotary_embedding(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    if (s.ndim != 3)
        return memest_fail(c, "expects the hidden states (B, S, H), got %s", IN_STR(c, 0));
    if (need_float(c, 0) != 0)
        return -1;
    int64_t dim = memest_arg_int(c, RE_DIM), S = s.size[1];
    if (dim % 2 != 0)
        return memest_fail(c, "dim must be even, got %lld", (long long)dim);
    bool cat = memest_arg_bool(c, RE_CAT);
    int64_t half = dim / 2, tab[3] = {1, S, cat ? dim : half};
    int64_t pos = S;
    if (memest_arg_bool(c, RE_COMPLEX)) {
        if (!cat)
            return memest_fail(c, "cat false (half-width cos, sin) does not apply to the complex "
                                  "table");
        tab[2] = dim;
        if (memest_buffer(c, "inv_freq", 1, &half, MEMEST_F32) != 0 ||
            memest_out_new(c, 3, tab, MEMEST_F32) < 0)
            return -1;
        memest_out_set_requires_grad(c, 0, false);
        memest_grad_none(c, 0);
        /* freqs (U/2), ones_like (U/2) and the polar result (U) live at the
         * * attention_scaling that makes the output; the float position ids */
        memest_workspace(c, memest_sat_add(memest_sat_mul(sat_bytes(3, tab, MEMEST_F32), 2),
                                           sat_bytes(1, &pos, MEMEST_F32)));
        return 0;
    }
    enum memest_dtype dt = memest_arg_bool(c, RE_F32) ? MEMEST_F32 : memest_in_dtype(c, 0);
    if (memest_buffer(c, "inv_freq", 1, &half, MEMEST_F32) != 0 ||
        memest_out_new(c, 3, tab, dt) < 0 || memest_out_new(c, 3, tab, dt) < 0)
        return -1;
    memest_out_set_requires_grad(c, 0, false);
    memest_out_set_requires_grad(c, 1, false);
    memest_grad_none(c, 0);
    /* forward workspace, in units of a float32 [1, S, dim] table (U): at
     * cos * scaling, freqs (U/2), emb, cos, sin and the scaled cos are
     * live: 4.5 U; for a float32 x the scaled tables are the outputs
     * (3.5 U); plus the position ids as float32 [1, 1, S]. Without the cat
     * (U/2 the table): freqs, the scaled cos, sin and its scaled copy: 2 U
     * (1 U for float32 x) */
    uint64_t u2 = sat_bytes(3, tab, MEMEST_F32) / (cat ? 2 : 1); /* U/2 */
    uint64_t units = cat ? (dt == MEMEST_F32 ? 7 : 9) : (dt == MEMEST_F32 ? 2 : 4);
    memest_workspace(c, memest_sat_add(memest_sat_mul(u2, units), sat_bytes(1, &pos, MEMEST_F32)));
    return 0;
}

/* ---- apply_rotary ---- */

enum { AR_ROTARY_DIM, AR_IMPL, AR_CAST, AR_FORM };

static const struct memest_argspec apply_rotary_args[] = {
    [AR_ROTARY_DIM] = {"rotary_dim", MEMEST_ARG_INT, .optional = true, .lo = 2, .hi = ARG_MAX,
                       .doc = "dims rotated (default: all, D); the rest pass through"},
    [AR_IMPL] = {"impl", MEMEST_ARG_STR, .sdef = "auto", .choices = "auto|eager|fused",
                 .doc = "fused: Liger's kernel; auto: fused under --fused rotary"},
    [AR_CAST] = {"cast_back", MEMEST_ARG_BOOL, .idef = 0,
                 .doc = "the result cast back to x's dtype (Olmo2's q_embed.to(q_type)); "
                        "default: promote(x, cos)"},
    [AR_FORM] = {"form", MEMEST_ARG_STR, .sdef = "rotate_half",
                 .choices = "rotate_half|halves|complex",
                 .doc = "rotate_half: with cos, sin; halves: gpt-oss's _apply_rotary_emb on "
                        "tables [1, S, D/2] (chunk, a*cos - b*sin, b*cos + a*sin, cat); complex: "
                        "Llama 4's apply_rotary_emb, x [B, S, heads, D] times the complex "
                        "freqs_cis (rotary_embedding's complex), 2 inputs"},
};

/* Checks cos/sin (input i) against x [B, nh, S, D] and rd. */
static int check_table(struct memest_ictx *c, int i, const struct memest_shape *x, int64_t rd)
{
    /* rd: the tables' width (rotary_dim, or its half for form "halves") */
    const struct memest_shape *t = memest_in_shape(c, i);
    if (need_float(c, i) != 0)
        return -1;
    if (t->ndim != 3 || (t->size[0] != 1 && t->size[0] != x->size[0]) ||
        t->size[1] != x->size[2] || t->size[2] != rd)
        return memest_fail(c, "%s must be [1, S, rotary_dim] = [1, %lld, %lld] (or batch %lld "
                              "first), got %s",
                           i == 1 ? "cos" : "sin", (long long)x->size[2], (long long)rd,
                           (long long)x->size[0], IN_STR(c, i));
    return 0;
}

static int rotary_fused(struct memest_ictx *c, const struct memest_shape *x)
{
    struct memest_shape tr = *x;
    geom_transpose(&tr, 1, 2);
    int k = memest_shape_is_contiguous(&tr) ? memest_out_view(c, 0, x, 0)
                                            : memest_out_new(c, 4, x->size, memest_in_dtype(c, 0));
    if (k < 0 || !memest_needs_grad(c))
        return k < 0 ? -1 : 0;
    for (int i = 1; i <= 2; i++) {
        const struct memest_shape t = *memest_in_shape(c, i);
        if (memest_save_in_reshaped(c, i, t.ndim, t.size) != 0)
            return -1; /* cos.contiguous(), sin.contiguous() */
    }
    return 0;
}

/* form "complex" (the comment at the top): x [B, S, nh, D], freqs_cis as
 * float32 [1, S, D] */
static int rotary_complex(struct memest_ictx *c, const struct memest_shape *x)
{
    const struct memest_shape *t = memest_in_shape(c, 1);
    if (memest_in_count(c) != 2)
        return memest_fail(c, "form \"complex\" takes x and freqs_cis (2 inputs), got %d",
                           memest_in_count(c));
    if (!memest_arg(c, AR_ROTARY_DIM)->none || strcmp(memest_arg(c, AR_IMPL)->s, "fused") == 0 ||
        memest_arg_bool(c, AR_CAST))
        return memest_fail(c, "form \"complex\" rotates the whole head, eager, in x's dtype: "
                              "rotary_dim, impl \"fused\" and cast_back do not apply");
    if (memest_in_dtype(c, 1) != MEMEST_F32 || t->ndim != 3 || t->size[0] != 1 ||
        t->size[1] != x->size[1] || t->size[2] != x->size[3])
        return memest_fail(c, "freqs_cis must be rotary_embedding's complex table, float32 [1, S, "
                              "head_dim] = [1, %lld, %lld], got %s",
                           (long long)x->size[1], (long long)x->size[3], IN_STR(c, 1));
    enum memest_dtype xdt = memest_in_dtype(c, 0);
    uint64_t n;
    if (!memest_numel(c, 4, x->size, &n) || memest_out_new(c, 4, x->size, xdt) < 0)
        return -1;
    memest_grad_none(c, 1);
    if (memest_in_requires_grad(c, 0) && memest_save_in(c, 1) != 0)
        return -1;
    /* a non-float32 x: its float32 copy and the complex product, the
     * temporaries of type_as; backward likewise: the float32 gradient and
     * its product with conj(freqs_cis), before the cast to x's gradient */
    uint64_t f = xdt == MEMEST_F32 ? 0 : memest_sat_mul(n, 8);
    memest_workspace(c, f);
    memest_bwd_workspace(c, f);
    return 0;
}

static int infer_apply_rotary(struct memest_ictx *c)
{
    const struct memest_shape x = *memest_in_shape(c, 0);
    bool cplx = strcmp(memest_arg(c, AR_FORM)->s, "complex") == 0;
    if (cplx && x.ndim != 4)
        return memest_fail(c, "expects x as (B, S, heads, head_dim), got %s", IN_STR(c, 0));
    if (cplx)
        return need_float(c, 0) != 0 ? -1 : rotary_complex(c, &x);
    if (memest_in_count(c) != 3)
        return memest_fail(c, "expects x, cos and sin (3 inputs), got %d", memest_in_count(c));
    if (x.ndim != 4)
        return memest_fail(c, "expects x as (B, heads, S, head_dim), got %s", IN_STR(c, 0));
    if (need_float(c, 0) != 0)
        return -1;
    int64_t D = x.size[3];
    const struct memest_argval *ard = memest_arg(c, AR_ROTARY_DIM);
    int64_t rd = ard->none ? D : ard->v[0];
    if (rd > D || rd % 2 != 0)
        return memest_fail(c, "rotary_dim must be even and at most head_dim (%lld), got %lld",
                           (long long)D, (long long)rd);
    const bool halves = strcmp(memest_arg(c, AR_FORM)->s, "halves") == 0;
    if (halves && rd != D)
        return memest_fail(c, "form \"halves\" rotates the whole head: rotary_dim (%lld) must "
                              "equal head_dim (%lld)",
                           (long long)rd, (long long)D);
    if (check_table(c, 1, &x, halves ? rd / 2 : rd) != 0 ||
        check_table(c, 2, &x, halves ? rd / 2 : rd) != 0)
        return -1;
    bool fused = strcmp(memest_arg(c, AR_IMPL)->s, "fused") == 0 ||
                 (strcmp(memest_arg(c, AR_IMPL)->s, "auto") == 0 &&
                  (memest_run_options(c)->fused & MEMEST_FUSED_ROTARY) != 0 && rd == D);
    if (fused && halves)
        return memest_fail(c, "Liger's fused rotary kernel is rotate_half's: form \"halves\" "
                              "is eager only (impl \"eager\")");
    if (fused && rd != D)
        return memest_fail(c, "Liger's fused rotary kernel rotates the whole head: rotary_dim "
                              "(%lld) must equal head_dim (%lld), or use impl \"eager\"",
                           (long long)rd, (long long)D);
    if (fused && strcmp(memest_arg(c, AR_IMPL)->s, "auto") == 0)
        memest_run_option_used(c, MEMEST_FUSED_ROTARY);
    if (fused)
        return rotary_fused(c, &x);

    enum memest_dtype xdt = memest_in_dtype(c, 0);
    enum memest_dtype dt = promote_dtypes(promote_dtypes(xdt, memest_in_dtype(c, 1)),
                                          memest_in_dtype(c, 2));
    /* cast_back: x_embed (promoted) is a temporary of .to(x.dtype), the output */
    const bool cast = memest_arg_bool(c, AR_CAST) && dt != xdt;
    uint64_t n;
    if (!memest_numel(c, 4, x.size, &n) || memest_out_like(c, &x, 0, cast ? xdt : dt) < 0)
        return -1;
    if (memest_in_requires_grad(c, 0) && (memest_save_in(c, 1) != 0 || memest_save_in(c, 2) != 0))
        return -1;
    /* forward: x*cos, then -x2 and the cat of rotate_half, then rot*sin:
     * peak max(x*cos + -x2 + cat, x*cos + cat + rot*sin); with a partial
     * rotary dim, on the rotated part, then x_embed during the final cat */
    uint64_t nr = n / (uint64_t)D * (uint64_t)rd; /* rd <= D: no overflow */
    uint64_t no = memest_sat_mul(nr, memest_dtype_size(dt)),
             nx = memest_sat_mul(nr, memest_dtype_size(xdt));
    uint64_t a = memest_sat_add(memest_sat_add(no, nx / 2), nx);
    uint64_t b = memest_sat_add(memest_sat_mul(no, 2), nx);
    if (halves) /* first_ with second_ and its two products (n/2 each) */
        a = b = memest_sat_mul(no, 2);
    memest_workspace(c, a > b ? a : b);
    /* backward: grad*cos, grad*sin, the negated half and the slices'
     * zero-filled gradients of rotate_half, less the input's gradient; with
     * a partial rotary dim the rotated part's gradient is scratch too */
    uint64_t bw = memest_sat_add(memest_sat_mul(no, 2), no / 2);
    if (rd < D)
        bw = memest_sat_add(bw, nx);
    memest_bwd_workspace(c, bw);
    return 0;
}

const struct memest_op_desc memest_ops_llm_rotary[] = {
    {.name = "rotary_embedding", .min_in = 1, .max_in = 1, .args = rotary_embedding_args,
     .nargs = NARGS(rotary_embedding_args), .infer = infer_rotary_embedding,
     .doc = "LlamaRotaryEmbedding: input hidden states (B, S, H); outputs 0 = cos, 1 = sin "
            "[1, S, dim] (no grad); complex: one output, Llama 4's freqs_cis"},
    {.name = "apply_rotary", .min_in = 2, .max_in = 3, .args = apply_rotary_args,
     .nargs = NARGS(apply_rotary_args), .infer = infer_apply_rotary,
     .doc = "apply_rotary_pos_emb on x (B, heads, S, head_dim) with cos, sin (eager or "
            "Liger's fused kernel), or Llama 4's complex form on x (B, S, heads, head_dim) "
            "with freqs_cis"},
};
const int memest_ops_llm_rotary_count = NOPS(memest_ops_llm_rotary);
