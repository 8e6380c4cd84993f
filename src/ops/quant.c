/* quant.c - the bytes of quantised linear weights and the transient
 * copies the quantised layers make, as the libraries allocate them:
 *
 * - bitsandbytes 0.49.2 (bitsandbytes-foundation/bitsandbytes, tag 0.49.2):
 *   nn/modules.py Params4bit / Linear4bit / Int8Params / Linear8bitLt,
 *   functional.py quantize_4bit / quantize_blockwise / dequantize_4bit,
 *   backends/cuda/ops.py (the kernels' output tensors) and
 *   autograd/_functions.py MatMul4Bit / MatMul8bitLt / matmul_4bit.
 *   (0.50 replaced the forward's dequantisation by gemm_4bit kernels; the
 *   figures here are 0.49's, the last release before.)
 * - AutoGPTQ (AutoGPTQ/AutoGPTQ auto_gptq/nn_modules/qlinear/qlinear_cuda.py
 *   at 058fd80): QuantLinear's buffers and its PyTorch dequantisation path,
 *   the one it takes when trainable or for 128 rows and more.
 * - AutoAWQ (casper-hansen/AutoAWQ awq/modules/linear/gemm.py at 030fe2a):
 *   WQLinear_GEMM's buffers and its no-grad forward. */
#include "memest/quant.h"

#include <stdio.h>

#include "memest/checked.h"

void memest_quant_defaults(struct memest_quant_params *p)
{
    /* Params4bit(blocksize=None) -> 64; BitsAndBytesConfig:
     * bnb_4bit_use_double_quant=False, bnb_4bit_compute_dtype=None ->
     * torch.float32, bnb_4bit_quant_storage=None -> torch.uint8;
     * GPTQConfig / AwqConfig group_size=128; FineGrainedFP8Config
     * weight_block_size=(128, 128) */
    *p = (struct memest_quant_params){.blocksize = 64, .group_size = 128, .fp8_block = {128, 128},
                                      .nvfp4_group = 16};
}

const char *memest_wformat_name(enum memest_wformat f)
{
    static const char *const names[MEMEST_WF_COUNT] = {"dense", "int8", "nf4", "fp4", "gptq",
                                                       "awq", "mxfp4", "fp8", "nvfp4"};
    return (unsigned)f < MEMEST_WF_COUNT ? names[f] : "?";
}

bool memest_wformat_bnb4(enum memest_wformat f)
{
    return f == MEMEST_WF_NF4 || f == MEMEST_WF_FP4;
}

static void put(struct memest_quant_layout *l, const char *name, int ndim, int64_t a, int64_t b,
                enum memest_dtype dt)
{
    l->t[l->n++] = (struct memest_quant_tensor){name, ndim, {a, b, 0}, dt};
}

static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

static enum memest_dtype dt_or(uint8_t v, enum memest_dtype def)
{
    return v != 0 && v <= MEMEST_DTYPE_COUNT ? (enum memest_dtype)(v - 1) : def;
}

/* bitsandbytes 4-bit: quantize_4bit (functional.py) on an [out, in] weight
 * of n = out * in elements. The CUDA kernel's outputs (backends/cuda/ops.py)
 * are the packed data, torch.empty(((n + 1) // (quant_storage.itemsize * 2),
 * 1)), and absmax, float32 [-(n // -blocksize)]; the QuantState adds
 * code = get_4bit_type(quant_type), 16 float32 values made per call. With
 * compress_statistics (double quantisation) the absmax is quantised again:
 * offset = absmax.mean() (a 0-d float32), quantize_blockwise(absmax -
 * offset, blocksize=256) giving uint8 [blocks] and a nested state whose
 * absmax is float32 [ceil(blocks / 256)] and whose code is
 * name2qmap["dynamic"].to(device, copy=True): 256 float32 per layer. */
static void layout_bnb4(const struct memest_quant_params *p, int64_t out, int64_t in,
                        struct memest_quant_layout *l)
{
    enum memest_dtype st = dt_or(p->quant_storage, MEMEST_U8);
    int64_t n = out * in, per = 2 * (int64_t)memest_dtype_size(st);
    int64_t blocks = ceil_div(n, p->blocksize > 0 ? p->blocksize : 64);
    put(l, "weight", 2, (n + 1) / per, 1, st);
    if (p->double_quant) {
        put(l, "weight.absmax", 1, blocks, 0, MEMEST_U8);
        put(l, "weight.quant_map", 1, 16, 0, MEMEST_F32);
        put(l, "weight.nested_absmax", 1, ceil_div(blocks, 256), 0, MEMEST_F32);
        put(l, "weight.nested_quant_map", 1, 256, 0, MEMEST_F32);
        put(l, "weight.nested_offset", 0, 1, 0, MEMEST_F32);
    } else {
        put(l, "weight.absmax", 1, blocks, 0, MEMEST_F32);
        put(l, "weight.quant_map", 1, 16, 0, MEMEST_F32);
    }
}

int memest_quant_layout(enum memest_wformat f, const struct memest_quant_params *p,
                        int64_t out, int64_t in, bool bias, struct memest_quant_layout *l,
                        char *why, size_t whylen)
{
    *l = (struct memest_quant_layout){0};
    /* sizes of an existing tensor: out * in does not overflow */
    int64_t g = p->group_size > 0 ? p->group_size : in;
    switch (f) {
    case MEMEST_WF_DENSE:
    case MEMEST_WF_COUNT:
        break;
    case MEMEST_WF_INT8:
        /* Int8Params._quantize: CB, SCB = int8_vectorwise_quant(weight):
         * int8 [out, in] (the parameter's data) and float32 [out] */
        put(l, "weight", 2, out, in, MEMEST_I8);
        put(l, "weight.SCB", 1, out, 0, MEMEST_F32);
        break;
    case MEMEST_WF_NF4:
    case MEMEST_WF_FP4:
        layout_bnb4(p, out, in, l);
        break;
    case MEMEST_WF_GPTQ4:
        /* QuantLinear.__init__ (bits = 4): qweight int32 [in // 32 * bits,
         * out], qzeros int32 [ceil(in / group), out // 32 * bits], scales
         * [ceil(in / group), out] and bias [out] in weight_dtype (float16),
         * g_idx int32 [in] */
        /* the packed rows and columns must hold the weight: forward()
         * unpacks qweight into [in // 32 * 32, out] and qzeros into
         * [groups, out // 32 * 32], then reshapes them to the scales and
         * indexes them by g_idx [in], which fails unless both are whole */
        if (in % 32 != 0 || out % 32 != 0) {
            snprintf(why, whylen, "GPTQ's QuantLinear packs the weight in rows of 32 (qweight "
                     "[in // 32 * 4, out], qzeros [groups, out // 32 * 4]): in_features (%lld) and "
                     "out_features (%lld) must be multiples of 32", (long long)in, (long long)out);
            return -1;
        }
        l->buffers = true;
        put(l, "qweight", 2, in / 32 * 4, out, MEMEST_I32);
        put(l, "qzeros", 2, ceil_div(in, g), out / 32 * 4, MEMEST_I32);
        put(l, "scales", 2, ceil_div(in, g), out, MEMEST_F16);
        put(l, "g_idx", 1, in, 0, MEMEST_I32);
        if (bias)
            put(l, "bias", 1, out, 0, MEMEST_F16);
        break;
    case MEMEST_WF_AWQ4:
        /* WQLinear_GEMM.__init__ (w_bit = 4) asserts in % group == 0 and
         * out % 8 == 0: qweight int32 [in, out // 8], qzeros int32
         * [in // group, out // 8], scales float16 [in // group, out], bias
         * float16 [out] */
        if (in % g != 0 || out % 8 != 0) {
            snprintf(why, whylen, "AWQ needs in_features (%lld) divisible by the group size "
                     "(%lld) and out_features (%lld) by 8", (long long)in, (long long)g,
                     (long long)out);
            return -1;
        }
        l->buffers = true;
        put(l, "qweight", 2, in, out / 8, MEMEST_I32);
        put(l, "qzeros", 2, in / g, out / 8, MEMEST_I32);
        put(l, "scales", 2, in / g, out, MEMEST_F16);
        if (bias)
            put(l, "bias", 1, out, 0, MEMEST_F16);
        break;
    case MEMEST_WF_MXFP4:
        /* transformers' integrations/mxfp4.py Mxfp4GptOssExperts: per expert
         * and projection, <proj>_blocks uint8 [out, in / 32, 16] (two e2m1
         * values a byte) and <proj>_scales uint8 [out, in / 32] (one e8m0
         * exponent per 32), nn.Parameters with requires_grad False; the
         * bias a float32 parameter (requires_grad False). memest counts the
         * weight as its out x in elements, in the blocks' and scales' bytes.
         * The checkpoints (openai/gpt-oss-*) stack each over the experts:
         * <proj>_blocks [E, out, in / 32, 16], <proj>_scales [E, out, in / 32] */
        if (in % 32 != 0) {
            snprintf(why, whylen, "MXFP4 packs the weight in blocks of 32 along in_features "
                     "(%lld): it must be a multiple of 32", (long long)in);
            return -1;
        }
        put(l, "blocks", 3, out, in / 32, MEMEST_U8);
        l->t[l->n - 1].size[2] = 16;   /* 32 e2m1 values in 16 bytes */
        put(l, "scales", 2, out, in / 32, MEMEST_U8);
        if (bias)
            put(l, "bias", 1, out, 0, MEMEST_F32);
        break;
    case MEMEST_WF_FP8: {
        /* transformers' integrations/finegrained_fp8.py FP8Linear: weight
         * float8_e4m3fn [out, in] (one byte, counted as uint8) and
         * weight_scale_inv float32 [ceil(out / b0), ceil(in / b1)], both
         * nn.Parameters; the bias in the model's dtype (not this layout's) */
        int64_t b0 = p->fp8_block[0] > 0 ? p->fp8_block[0] : 128,
                b1 = p->fp8_block[1] > 0 ? p->fp8_block[1] : 128;
        put(l, "weight", 2, out, in, MEMEST_U8);
        put(l, "weight_scale_inv", 2, ceil_div(out, b0), ceil_div(in, b1), MEMEST_F32);
        break;
    }
    case MEMEST_WF_NVFP4: {
        /* a ModelOpt NVFP4 checkpoint as vLLM's ModelOptNvFp4LinearMethod
         * loads it (model_executor/layers/quantization/modelopt.py,
         * create_weights): weight uint8 [out, in / 2] (two e2m1 values a
         * byte), weight_scale float8_e4m3fn [out, in / group], weight_scale_2
         * and input_scale float32 [1]; in_features a multiple of 16. The
         * swizzled copy of the block scales some versions add on loading is
         * not counted. */
        int64_t gs = p->nvfp4_group > 0 ? p->nvfp4_group : 16;
        if (in % 16 != 0 || in % gs != 0) {
            snprintf(why, whylen, "NVFP4 needs in_features (%lld) a multiple of 16 and of the "
                     "group size (%lld)", (long long)in, (long long)gs);
            return -1;
        }
        put(l, "weight", 2, out, in / 2, MEMEST_U8);
        put(l, "weight_scale", 2, out, in / gs, MEMEST_U8);
        put(l, "weight_scale_2", 1, 1, 0, MEMEST_F32);
        put(l, "input_scale", 1, 1, 0, MEMEST_F32);
        break;
    }
    }
    return 0;
}

uint64_t memest_quant_tensor_bytes(const struct memest_quant_tensor *t)
{
    uint64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n = memest_sat_mul(n, (uint64_t)t->size[d]);
    return memest_sat_mul(n, memest_dtype_size(t->dtype));
}

uint64_t memest_quant_layout_bytes(const struct memest_quant_layout *l)
{
    uint64_t b = 0;
    for (int i = 0; i < l->n; i++)
        b = memest_sat_add(b, memest_quant_tensor_bytes(&l->t[i]));
    return b;
}

static uint64_t mul3(int64_t a, int64_t b, uint64_t c)
{
    return memest_sat_mul(memest_sat_mul((uint64_t)a, (uint64_t)b), c);
}

static uint64_t max2(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* The figures below are taken at the moments of the library code where
 * the live set is largest: each moment sums the tensors alive then (the
 * node's own output or input gradient included when it exists), and the
 * transient is the largest moment less that output / gradient, which the
 * simulator holds besides (it allocates the workspace after the output).
 * Checked against a replica of the library code by tests/tools/
 * quant_replica.py (tests/reference/quant_replica.json). */
static uint64_t sum3(uint64_t a, uint64_t b, uint64_t c)
{
    return memest_sat_add(memest_sat_add(a, b), c);
}

static uint64_t less(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

/* Linear4bit.forward: x = x.to(compute_dtype) (cd; x keeps it until the
 * forward returns), then matmul_4bit(...).to(inp_dtype). One row that
 * requires no grad, with in % blocksize == 0, goes to gemv_4bit: the
 * nested absmax when double-quantised (F.gemv_4bit dequantises it first)
 * and the [1, out] result in cd, no dequantised weight. Else
 * MatMul4Bit.forward: F.linear(A, dequantize_4bit(B).to(A.dtype).t()),
 * where dequantize_4bit makes the nested absmax (float32 [blocks]) and
 * then the weight in the dtype it was quantised from (w); .to(cd) copies
 * it when w != cd. MatMul4Bit saves only B (the packed parameter: no
 * activation). The backward: the last cast's ToCopyBackward makes
 * grad_output in cd, MatMul4Bit.backward dequantises (and casts) again and
 * makes grad_A in cd, x.to(cd)'s backward casts it to the input's dtype. */
static void transient_bnb4(const struct memest_quant_params *p, int64_t out, int64_t in,
                           int64_t rows, enum memest_dtype x, enum memest_dtype w,
                           bool input_grad, struct memest_quant_transient *t)
{
    enum memest_dtype cd = dt_or(p->compute_dtype, MEMEST_F32);
    uint64_t cds = memest_dtype_size(cd), xs = memest_dtype_size(x);
    int64_t bs = p->blocksize > 0 ? p->blocksize : 64;
    uint64_t absmax = p->double_quant ? mul3(ceil_div(out * in, bs), 1, 4) : 0;
    uint64_t fin = mul3(rows, out, xs);                  /* the layer's output */
    uint64_t xcast = x != cd ? mul3(rows, in, cds) : 0;
    uint64_t outc = x != cd ? mul3(rows, out, cds) : fin; /* the result in cd */
    uint64_t back = x != cd ? sum3(xcast, outc, fin) : 0; /* .to(inp_dtype) */
    if (rows == 1 && !input_grad && in % bs == 0) {
        t->gemv = true;
        t->fwd = less(max2(sum3(xcast, absmax, outc), back), fin);
        return;
    }
    uint64_t dq = mul3(out, in, memest_dtype_size(w));
    uint64_t conv = w != cd ? mul3(out, in, cds) : 0;
    uint64_t wread = conv ? conv : dq;                   /* what F.linear reads */
    uint64_t m = max2(sum3(xcast, absmax, dq), sum3(xcast, dq, conv));
    m = max2(m, max2(sum3(xcast, wread, outc), back));
    t->fwd = less(m, fin);
    if (!input_grad)
        return;
    uint64_t gx = mul3(rows, in, xs);                    /* the input's gradient */
    uint64_t gout = x != cd ? mul3(rows, out, cds) : 0;  /* grad_output.to(cd) */
    uint64_t ga = x != cd ? mul3(rows, in, cds) : gx;    /* grad_A in cd */
    uint64_t b = max2(sum3(gout, absmax, dq), sum3(gout, dq, conv));
    b = max2(b, sum3(gout, wread, ga));
    if (x != cd)
        b = max2(b, memest_sat_add(ga, gx));
    t->bwd = less(b, gx);
}

/* Linear8bitLt.forward -> MatMul8bitLt.forward (the weight frozen, so
 * int8_vectorwise_quant, not int8_double_quant) on A.to(float16), a
 * temporary unless the input is fp16: the kernel's row_stats (SCA,
 * float32 [rows]) and out_row (CA, int8 [rows, in]), then, with
 * transformers' llm_int8_threshold 6.0, the outlier test A.abs() >=
 * threshold (an fp16 and a bool [rows, in]); after it returns,
 * int8_scaled_mm's int32 [rows, out] product, alive while
 * int8_mm_dequant writes the output. Outlier columns (subA, a few
 * columns, data-dependent) are taken as none. The node keeps A
 * (ctx.tensors = (CAt, subA, A)) when an input needs grad; the backward
 * makes CB = state.CB.to(A.dtype, copy=True) [out, in] and
 * SCB.unsqueeze(1).mul(1 / 127) (float32 [out, 1]) before grad_A. */
static void transient_int8(int64_t out, int64_t in, int64_t rows, enum memest_dtype x,
                           bool input_grad, struct memest_quant_transient *t)
{
    uint64_t xs = memest_dtype_size(x), fin = mul3(rows, out, xs);
    uint64_t a16 = x != MEMEST_F16 ? mul3(rows, in, 2) : 0;
    uint64_t ca = mul3(rows, in, 1), sca = mul3(rows, 1, 4);
    uint64_t quant = sum3(a16, sca, memest_sat_add(ca, mul3(rows, in, 3)));
    uint64_t mm = sum3(ca, sca, memest_sat_add(mul3(rows, out, 4), fin));
    t->fwd = less(max2(quant, mm), fin);
    t->saves_input = input_grad;
    if (input_grad) {
        uint64_t cb = mul3(out, in, xs), gx = mul3(rows, in, xs);
        t->bwd = max2(less(memest_sat_add(cb, mul3(out, 1, 4)), gx), cb);
    }
}

/* QuantLinear.forward's PyTorch path (AutoGPTQ qlinear_cuda): the bit
 * shift of qweight expanded to int32 [in / 8, 8, out] cast to int8, the
 * mask, then scales[g_idx] * (weight - zeros[g_idx]): at that product the
 * int8 codes (n), the gathered scales (fp16, 2n), the difference (n) and
 * the product (fp16, 2n) are alive: 6n bytes, above the 5n of the shift
 * (n = in * out; the int64 g_idx.long() copies are left out).
 * torch.matmul(x, weights) (the codes still referenced: 3n with the
 * output) then saves the fp16 dequantised weight (2n) for the input's
 * gradient, which needs no other copy. */
static void transient_gptq(int64_t out, int64_t in, int64_t rows, enum memest_dtype x,
                           bool input_grad, struct memest_quant_transient *t)
{
    /* below kernel_switch_threshold (128 rows) an untrainable layer calls
     * the vecquant4matmul kernel: no dequantised copy */
    if (!input_grad && rows < 128)
        return;
    /* the product's moment, before the output; then the matmul: the fp16
     * weight and the int8 codes with the output */
    t->fwd = max2(less(mul3(out, in, 6), mul3(rows, out, memest_dtype_size(x))), mul3(out, in, 3));
    if (input_grad)
        t->saved = mul3(out, in, 2);
}

/* WQLinear_GEMM.forward (@torch.no_grad): x.half() when the input is not
 * fp16, awq_ext.gemm_forward_cuda into an fp16 [rows, out], cast back. */
static void transient_awq(int64_t out, int64_t in, int64_t rows, enum memest_dtype x,
                          struct memest_quant_transient *t)
{
    t->no_grad = true;
    if (x != MEMEST_F16)
        t->fwd = memest_sat_add(mul3(rows, in, 2), mul3(rows, out, 2));
}

void memest_quant_transient(enum memest_wformat f, const struct memest_quant_params *p,
                            int64_t out, int64_t in, int64_t rows, enum memest_dtype x,
                            enum memest_dtype w, bool input_grad,
                            struct memest_quant_transient *t)
{
    *t = (struct memest_quant_transient){0};
    switch (f) {
    case MEMEST_WF_DENSE:
    case MEMEST_WF_COUNT:
        break;
    case MEMEST_WF_INT8:
        transient_int8(out, in, rows, x, input_grad, t);
        break;
    case MEMEST_WF_NF4:
    case MEMEST_WF_FP4:
        transient_bnb4(p, out, in, rows, x, w, input_grad, t);
        break;
    case MEMEST_WF_GPTQ4:
        transient_gptq(out, in, rows, x, input_grad, t);
        break;
    case MEMEST_WF_AWQ4:
        transient_awq(out, in, rows, x, t);
        break;
    case MEMEST_WF_MXFP4:
        /* triton_kernels' matmul_ogs reads the blocks directly (no
         * dequantised copy) and records no autograd graph */
        t->no_grad = true;
        break;
    case MEMEST_WF_FP8: {
        /* FP8Linear.forward: act_quant(input, b1) makes the float8 input
         * [rows, in] and its float32 scales [rows, ceil(in / b1)];
         * w8a8_block_fp8_matmul_triton writes the output in the input's
         * dtype; + bias a new tensor. Triton kernels: no autograd. */
        int64_t b1 = p->fp8_block[1] > 0 ? p->fp8_block[1] : 128;
        t->no_grad = true;
        t->fwd = memest_sat_add(mul3(rows, in, 1), mul3(rows, ceil_div(in, b1), 4));
        (void)w;
        break;
    }
    case MEMEST_WF_NVFP4: {
        /* the activation quantised to NVFP4 for the FP4 GEMM: [rows, in / 2]
         * packed and a float8 scale per 16; no autograd (serving) */
        int64_t gs = p->nvfp4_group > 0 ? p->nvfp4_group : 16;
        t->no_grad = true;
        t->fwd = memest_sat_add(mul3(rows, in / 2, 1), mul3(rows, in / gs, 1));
        break;
    }
    }
}
