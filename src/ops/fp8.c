/* fp8.c - what a float8-trained linear layer allocates, recipe by recipe
 * (fp8.h), read from the libraries' code:
 *
 * - torchao (pytorch/ao v0.13.0 to v0.18.0, identical there):
 *   torchao/float8/float8_linear.py matmul_with_hp_or_float8_args saves
 *   input_hp and weight_hp_t (the high-precision input and a view of the
 *   weight: what nn.Linear saves; v0.12 and older saved the float8 weight
 *   instead) and casts each operand per GEMM with hp_tensor_to_float8_dynamic
 *   (float8_scaling_utils.py): tensor_to_amax's torch.abs copy, then
 *   _ToFloat8ConstrFunc's tensor.to(float32) * scale and to_fp8_saturated's
 *   clamp (float32 copies) and .to(float8): 9 bytes per element at its
 *   height, 1 byte and a float32 scale after. Forward: the input, then the
 *   weight, then torch._scaled_mm (reciprocal scales, float8_ops.py
 *   addmm_float8_unwrapped), then + bias.to(dtype). Backward: grad_output
 *   (dim 0), the weight again, grad_input (preprocess_addmm copies the
 *   row-major weight operand: b.t().contiguous().t()), the input (dim 1),
 *   grad_output again (dim 1), grad_weight (both operands copied to the
 *   layouts _scaled_mm takes), the casts held as locals until it returns.
 *   The "rowwise" recipe (config.py from_recipe_name) scales per row or
 *   column (float32 scales of the axis kept), and addmm_float8_unwrapped
 *   without fast accumulation (the backward's GEMMs) scales the output
 *   after the GEMM by a float32 [M, N] post_inverse_scale; a float32 or
 *   float16 output comes from a bfloat16 GEMM output.
 * - Transformer Engine (NVIDIA/TransformerEngine v2.18):
 *   transformer_engine/pytorch/module/linear.py _linear_forward quantises
 *   the input rowwise and columnwise, keeps only the columnwise copy for
 *   backward ("Discard row-wise data since it is not needed"), quantises the
 *   weight with both usages and saves it (wt_save = weightmat); backward
 *   quantises grad_output with both usages. Float8Tensor on Hopper keeps the
 *   columnwise data as a transpose (1 byte per element) and one float32
 *   scale_inv; MXFP8Tensor keeps E8M0 scales per 32 elements, padded
 *   (mxfp8_tensor.py get_scale_shape: rowwise [ru(R, 128), ru(C / 32, 4)],
 *   columnwise [ru(R / 32, 4), ru(C, 128)]). DelayedScaling's recipe state
 *   (quantization.py DelayedScalingRecipeState) per module: amax_history
 *   [amax_history_len = 1024, 3] and scale [3] for the forward's input,
 *   weight and output, [1024, 2] and [2] for the backward's; current
 *   scaling and MXFP8 keep none. Its cuBLAS workspace (cpp_extensions/
 *   gemm.py get_cublas_workspace_size_bytes): 32 MiB + 1024 on sm90 and
 *   newer, once per device. */
#include "memest/fp8.h"

#include <string.h>

#include "memest/checked.h"
#include "ops_common.h"

static const char *const names[MEMEST_FP8_COUNT] = {"none", "ao-tensorwise", "ao-rowwise",
                                                    "te-delayed", "te-current", "te-mxfp8"};

const char *memest_fp8_name(int r) { return r >= 0 && r < MEMEST_FP8_COUNT ? names[r] : "?"; }

int memest_fp8_parse(const char *s, uint8_t *out)
{
    for (int r = 0; r < MEMEST_FP8_COUNT; r++)
        if (strcmp(s, names[r]) == 0) {
            *out = (uint8_t)r;
            return 0;
        }
    return -1;
}

bool memest_fp8_eligible(enum memest_fp8 r, int64_t in, int64_t out)
{
    int64_t m = r == MEMEST_FP8_TE_MXFP8 ? 32 : 16;
    return r != MEMEST_FP8_NONE && in % m == 0 && out % m == 0;
}

int64_t memest_fp8_rows_multiple(enum memest_fp8 r)
{
    return r == MEMEST_FP8_TE_MXFP8                                    ? 32
           : r == MEMEST_FP8_AO_TENSORWISE || r == MEMEST_FP8_AO_ROWWISE ? 16
                                                                         : 8;
}

uint64_t memest_fp8_device_bytes(enum memest_fp8 r)
{
    return r == MEMEST_FP8_TE_DELAYED || r == MEMEST_FP8_TE_CURRENT || r == MEMEST_FP8_TE_MXFP8
               ? 32u * 1024 * 1024 + 1024
               : 0;
}

#define SCALE 4u   /* a float32 scale (torchao's 0-d, TE's [1] scale_inv) */

static uint64_t add(uint64_t a, uint64_t b) { return memest_sat_add(a, b); }
static uint64_t mul(uint64_t a, uint64_t b) { return memest_sat_mul(a, b); }
static uint64_t sub0(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

/* hp_tensor_to_float8_dynamic of m elements of b bytes with r float32
 * scales (1: tensorwise; rowwise: one per row or column), as eager runs it:
 * tensor_to_amax's abs copy, the scale, .to(float32) (none for a float32
 * tensor) and its product with the scale, the clamp, the float8 result.
 * What stays: the float8 data and the scale. */
static uint64_t ao_cast(struct transient *t, uint64_t m, uint64_t b, uint64_t r)
{
    uint64_t f32 = mul(m, 4);
    tr_alloc(t, mul(m, b));   /* torch.abs */
    tr_free(t, mul(m, b));
    tr_alloc(t, mul(r, SCALE));
    if (b != 4)
        tr_alloc(t, f32);     /* .to(torch.float32) */
    tr_alloc(t, f32);         /* * scale */
    if (b != 4)
        tr_free(t, f32);
    tr_alloc(t, f32);         /* clamp */
    tr_alloc(t, m);           /* .to(float8) */
    tr_free(t, mul(f32, 2));
    return add(m, mul(r, SCALE));
}

/* addmm_float8_unwrapped of an [M, N] product of out_b-byte output whose
 * operands have ra and rb scales: the reciprocal scales (with rowwise
 * scaling and no fast accumulation, the backward's GEMMs: their float32
 * [M, N] product post_inverse_scale, the reciprocals then replaced by ones
 * scalars), torch._scaled_mm's output (rowwise for a float32 or float16
 * output: bfloat16, then .to() the output dtype). The output stays. */
static void ao_gemm(struct transient *t, bool rowwise, bool post, bool via_bf16, uint64_t M,
                    uint64_t N, uint64_t out_b, uint64_t ra, uint64_t rb)
{
    uint64_t mn = mul(M, N), recips = mul(add(ra, rb), SCALE), scratch = recips;
    tr_alloc(t, recips);
    if (rowwise && post) {
        tr_alloc(t, mul(mn, 4));
        tr_free(t, recips);
        tr_alloc(t, 2 * SCALE);
        scratch = add(mul(mn, 4), 2 * SCALE);
    }
    bool via = rowwise && via_bf16;
    if (via)
        tr_alloc(t, mul(mn, 2));
    tr_alloc(t, mul(mn, out_b));
    tr_free(t, add(scratch, via ? mul(mn, 2) : 0));
}

static void ao(bool rw, const struct memest_fp8_shape *s, struct memest_fp8_linear *p)
{
    uint64_t n = mul(s->rows, s->in), w = mul(s->out, s->in), g = mul(s->rows, s->out);
    uint64_t G = mul(g, s->out_b), gi = mul(n, s->in_b), GW = mul(w, s->w_b);
    /* the scales of each cast (rowwise: the axis each keeps) */
    uint64_t one = 1, r_rows = rw ? s->rows : one, r_in = rw ? s->in : one, r_out = rw ? s->out : one;
    bool via = !s->out_bf16;
    p->saves_input = true;
    /* forward: the input (dim -1), the weight's transpose (dim 0), the GEMM
     * (fast accumulation: no post scale), the bias add (the GEMM's result
     * and the bias cast go) */
    struct transient f = {0, 0};
    ao_cast(&f, n, s->in_b, r_rows);
    ao_cast(&f, w, s->w_b, r_out);
    ao_gemm(&f, rw, false, via, s->rows, s->out, s->out_b, r_rows, r_out);
    if (s->bias)
        tr_alloc(&f, add(G, s->w_b != s->out_b ? mul(s->out, s->out_b) : 0));
    p->fwd_work = sub0(f.peak, G);
    /* backward: grad_output (dim -1), the weight again (dim -1), grad_input
     * (preprocess_addmm copies the row-major weight operand), the input
     * (dim 0), grad_output (dim 0), grad_weight (both operands copied), the
     * casts held until it returns; the engine casts grad_weight to the
     * weight's dtype */
    struct transient b = {0, 0};
    uint64_t held = ao_cast(&b, g, s->out_b, r_rows);   /* one cast after the other */
    held = add(held, ao_cast(&b, w, s->w_b, r_in));
    tr_alloc(&b, w);
    ao_gemm(&b, rw, true, via, s->rows, s->in, s->in_b, r_rows, r_in);
    tr_free(&b, w);
    held = add(held, ao_cast(&b, n, s->in_b, r_in));
    held = add(held, ao_cast(&b, g, s->out_b, r_out));
    tr_alloc(&b, add(g, n));
    ao_gemm(&b, rw, true, via, s->out, s->in, s->out_b, r_out, r_in);
    tr_free(&b, add(held, add(g, n)));
    if (s->w_b != s->out_b)
        tr_alloc(&b, GW);
    p->bwd_work = sub0(b.peak, add(gi, GW));
}

static uint64_t ru(uint64_t v, uint64_t m) { return (v + m - 1) / m * m; }
/* MXFP8's E8M0 scales of an R x C tensor, rowwise and columnwise */
static uint64_t mx_rows(uint64_t R, uint64_t C) { return mul(ru(R, 128), ru(C / 32, 4)); }
static uint64_t mx_cols(uint64_t R, uint64_t C) { return mul(ru(R / 32, 4), ru(C, 128)); }

static void te(enum memest_fp8 r, const struct memest_fp8_shape *s, struct memest_fp8_linear *p)
{
    uint64_t n = mul(s->rows, s->in), w = mul(s->out, s->in), g = mul(s->rows, s->out);
    bool mx = r == MEMEST_FP8_TE_MXFP8;
    p->saves_input = false;
    p->saved_input = n;   /* the columnwise copy */
    p->saved_input_scale = mx ? mx_cols(s->rows, s->in) : SCALE;
    p->saved_weight = mul(w, 2);   /* rowwise and columnwise */
    p->saved_weight_scale = mx ? add(mx_rows(s->out, s->in), mx_cols(s->out, s->in)) : SCALE;
    /* the rowwise input, freed when the forward returns */
    p->fwd_work = add(n, mx ? mx_rows(s->rows, s->in) : 0);
    uint64_t b = add(mul(g, 2), mx ? add(mx_rows(s->rows, s->out), mx_cols(s->rows, s->out)) : SCALE);
    if (s->w_b != s->out_b)
        b = add(b, mul(w, s->out_b));
    p->bwd_work = b;
}

int memest_fp8_state(enum memest_fp8 r, struct memest_fp8_state *out)
{
    if (r != MEMEST_FP8_TE_DELAYED)
        return 0;
    /* float32, named as the module's fp8_meta holds them */
    out[0] = (struct memest_fp8_state){"fp8_meta.scaling_fwd.amax_history", {1024, 3}};
    out[1] = (struct memest_fp8_state){"fp8_meta.scaling_fwd.scale", {3, 1}};
    out[2] = (struct memest_fp8_state){"fp8_meta.scaling_bwd.amax_history", {1024, 2}};
    out[3] = (struct memest_fp8_state){"fp8_meta.scaling_bwd.scale", {2, 1}};
    return 4;
}

void memest_fp8_linear(enum memest_fp8 r, const struct memest_fp8_shape *s,
                       struct memest_fp8_linear *p)
{
    *p = (struct memest_fp8_linear){0};
    if (r == MEMEST_FP8_AO_TENSORWISE || r == MEMEST_FP8_AO_ROWWISE)
        ao(r == MEMEST_FP8_AO_ROWWISE, s, p);
    else if (r != MEMEST_FP8_NONE)
        te(r, s, p);
}
