/* ops_sdpa.c - scaled_dot_product_attention: attention over q [B, Hq, L, D],
 * k [B, Hkv, S, D], v [B, Hkv, S, Dv] (Hkv divides Hq: grouped-query
 * attention) into [B, Hq, L, Dv], as a transformers v4.48.0 model runs it in
 * training on an sm80+ GPU (A100, H100) with PyTorch 2.6. The kernel is the
 * node's `backend`, unless the run option --attention names one.
 *
 * eager: transformers' eager_attention_forward (models/llama/
 * modeling_llama.py; gemma2's adds the soft-capping):
 *   k, v = repeat_kv(k, Hq/Hkv), repeat_kv(v, ...)   x[:, :, None].expand(B,
 *          Hkv, n_rep, S, D).reshape(B, Hq, S, D): a copy when n_rep > 1,
 *          the input itself when n_rep == 1;
 *   w = matmul(q, k.transpose(2, 3)) * scaling      the bmm saves q and k^T
 *          as [B*Hq, L, D] / [B*Hq, D, S]: the operands' storages when they
 *          can be viewed so, else contiguous copies (q as transformers makes
 *          it, a transposed view of [B, L, Hq, D], is copied); mul by a
 *          Python float saves nothing;
 *   softcap: w = tanh(w / cap) * cap                  tanh saves its output;
 *   w = w + causal_mask                               add saves nothing; the
 *          mask is the model's [1, 1, L, S] tensor of the dtype (built once
 *          per forward by _update_causal_mask for a causal or sliding-window
 *          model): counted as this node's forward workspace;
 *   w = softmax(w, -1, dtype=float32).to(q.dtype)     _softmax saves its
 *          float32 result [B, Hq, L, S] (softmax_fp32; the .to copy is new
 *          and saved only when the matmul below reads it); softmax_fp32
 *          false: softmax in the dtype, saving that (GPT-2-era code, and
 *          Megatron's 2-byte softmax);
 *   w = dropout(w, p)                                 native_dropout on CUDA:
 *          a bool mask, saved, and its output;
 *   o = matmul(w, v)                                  saves w and v as
 *          [B*Hq, L, S] / [B*Hq, S, Dv] (v: its storage or a copy, as k).
 * Output: the bmm's result, contiguous [B, Hq, L, Dv].
 * With a fourth input, the attention sinks [Hq] of gpt-oss (models/gpt_oss/
 * modular_gpt_oss.py, eager_attention_forward at transformers 0261a467):
 *   combined = cat([w, sinks.reshape(1, -1, 1, 1).expand(B, -1, L, -1)], -1)
 *   combined = combined - combined.max(dim=-1, keepdim=True).values
 *   probs = softmax(combined, -1, dtype=combined.dtype); w = probs[..., :-1]
 * cat and sub save nothing; max saves its int64 indices [B, Hq, L, 1];
 * softmax its [B, Hq, L, S + 1] result (in the dtype: softmax_fp32 false
 * for gpt-oss), whose slice the matmul with v reads. Only eager has sinks
 * (GptOssPreTrainedModel._supports_sdpa is False), so auto takes eager.
 *
 * The others are transformers' sdpa_attention_forward
 * (integrations/sdpa_attention.py): repeat_kv on k and v (v4.48.0 always
 * repeats; enable_gqa true models a caller passing Hkv heads with
 * enable_gqa=True instead, as later transformers do), q, k, v .contiguous()
 * (copies of transformers' transposed views; contiguous false: the views as
 * they are, as GPT2SdpaAttention, BertSdpaSelfAttention and OPTSdpaAttention
 * pass them with PyTorch >= 2.2), then
 * F.scaled_dot_product_attention, whose C++ (aten/src/ATen/native/
 * transformers/attention.cpp, scaled_dot_product_attention) runs:
 *
 * math: _scaled_dot_product_attention_math. For fp16/bf16 inputs 2.6 first
 *   upcasts q, k, v to float32 (.to(kFloat), unless
 *   allow_fp16_bf16_reduction_math_sdp), then: q * sqrt(scale) and
 *   k^T * sqrt(scale) (new tensors, saved by the bmm), the causal mask
 *   ones(L, S, bool).tril() converted to a float [L, S] mask and added in
 *   place, _safe_softmax (softmax, an eq(-inf) bool tensor and where():
 *   saves the where() result), at::dropout (native_dropout: bool mask and
 *   output), matmul with v (saved: the float32 copy of v, or v itself for
 *   float32 inputs), and .to(q.dtype) of the result. enable_gqa: k and v
 *   are repeat_interleave'd to Hq heads (copies) first.
 * flash: _scaled_dot_product_flash_attention (cuda/attention.cu; saves per
 *   tools/autograd/derivatives.yaml: query, key, value, output, logsumexp,
 *   philox_seed, philox_offset). q, k, v are first padded to a multiple
 *   of 8 in the head dim (pad_last_dim<8>: copies, saved instead of the
 *   inputs) and the output is a narrow of the padded one. logsumexp is
 *   float32 [B, Hq, L] (flash_api.cpp mha_fwd: softmax_lse, unpadded).
 *   The output is empty_like(q.transpose(1, 2)).transpose(1, 2): q's
 *   layout (contiguous after .contiguous(); [B, L, Hq, D] memory for a
 *   transposed view passed as it is). The philox seed and offset are 0-d int64 CPU
 *   tensors outside CUDA graph capture: host memory, not counted. Dropout
 *   keeps no mask (the backward regenerates it from the seed); nothing
 *   L x S is saved. enable_gqa: k and v stay at Hkv heads (the kernel
 *   reads them natively). `window` is taken as the kernel's window_size
 *   (flash-attn 2 as transformers' flash_attention_2 runs it; it saves the
 *   same), so no mask.
 * efficient: _scaled_dot_product_efficient_attention (cutlass kernels;
 *   saves query, key, value, attn_bias, output, log_sumexp, philox_seed,
 *   philox_offset). log_sumexp is float32 [B, Hq, ceil(L/32)*32]; the
 *   output is a [B, L, Hq, Dv] buffer transposed to [B, Hq, L, Dv] (so the
 *   caller's transpose(1, 2).contiguous() copies nothing). A mask is the
 *   model's tensor, expanded (a view: one storage for all layers, not
 *   counted per node) unless its last dim is not a multiple of 8: then
 *   pad_bias<8> copies it, per node, and that copy is saved.
 * cudnn: _scaled_dot_product_cudnn_attention (saves query, key, value,
 *   output, logsumexp float32 [B, Hq, L, 1], philox seed and offset: 0-d
 *   int64 CUDA tensors, 8 bytes each, counted, and the attn_bias as above).
 *   Output in q's layout.
 *
 * auto: transformers passes is_causal (no mask tensor) unless a sliding
 * window shorter than the keys needs one (AttentionMaskConverter.
 * _ignore_causal_mask_sdpa); PyTorch 2.6's select_sdp_backend
 * (cuda/sdp_utils.cpp) tries flash, efficient, math, then cuDNN (2.5.1
 * moved cuDNN last, after math, so it is never picked by default):
 *   flash      fp16/bf16; D == Dk == Dv <= 256; no mask; is_causal only with
 *              L == S; Hq == Hkv, or enable_gqa with Hkv dividing Hq;
 *   efficient  fp16/bf16/fp32; D == Dk; D and Dv multiples of 8 (fp16/bf16)
 *              or 4 (fp32) (minimum_gemm_alignment on sm80+); masks; no GQA;
 *   math       anything.
 * softcap: only eager has it, so auto takes eager. A backend named by the
 * node or by --attention that cannot run the case is an error naming the
 * node, as PyTorch raises "No available kernel" (flash with float32, or a
 * head dim over 256, cuDNN with a head dim over 128 or GQA, ...).
 * Not modelled: sm86/sm89's flash limits, cuDNN's 256 head dim on H100 with
 * cuDNN >= 9.5.1, padding masks (the model has none here), the forward's
 * workspace inside the fused kernels.
 *
 * sdpa_call_saves (ops_sdpa.h) runs the same kernels for an op that calls
 * SDPA inside (multiheadattention under PyTorch >= 2.0, need_weights=False):
 * q, k, v and the output are that op's intermediate tensors (views of its
 * projections' storages, which the kernels save whole), and an attn_mask
 * tensor rules flash out (PyTorch's flash takes none).
 *
 * MACs: the two products, B*Hq*L*S*(D + Dv), in full for causal attention
 * too (torch.utils.flop_counter's sdpa_flop; fvcore counts the same).
 * Backward: the fused kernels recompute the scores:
 * B*Hq*L*S*(3*D + 2*Dv) (sdpa_backward_flop); eager and math differentiate
 * their two bmm's: the gradient of each operand that needs one. */
#include "ops_sdpa.h"

#include "memest/run.h"

enum {
    SD_DROPOUT,
    SD_CAUSAL,
    SD_SCALE,
    SD_GQA,
    SD_WINDOW,
    SD_SOFTCAP,
    SD_SOFTMAX_FP32,
    SD_BACKEND,
    SD_CONTIGUOUS,
    SD_MASK,
    SD_LAYER_MASK,
    SD_BATCH_LOOP,
};

#define SDPA_BACKENDS "auto|eager|math|flash|efficient|cudnn"

static const struct memest_argspec sdpa_args[] = {
    [SD_DROPOUT] = {"dropout_p", MEMEST_ARG_FLOAT, .fdef = 0, .flo = 0, .fhi = 1},
    [SD_CAUSAL] = {"is_causal", MEMEST_ARG_BOOL, .idef = 0},
    [SD_SCALE] = {"scale", MEMEST_ARG_FLOAT, .optional = true,
                  .doc = "default 1/sqrt(D); does not change memory"},
    [SD_GQA] = {"enable_gqa", MEMEST_ARG_BOOL, .idef = 0,
                .doc = "k, v keep Hkv heads (no repeat_kv) for the sdpa kernels"},
    [SD_WINDOW] = {"window", MEMEST_ARG_INT, .idef = 0, .lo = 0, .hi = ARG_MAX,
                   .doc = "sliding-window size (0: none)"},
    [SD_SOFTCAP] = {"softcap", MEMEST_ARG_FLOAT, .fdef = 0, .flo = 0, .fhi = 1e300,
                    .doc = "attention logit soft-capping (0: none; eager only)"},
    [SD_SOFTMAX_FP32] = {"softmax_fp32", MEMEST_ARG_BOOL, .idef = 1,
                         .doc = "eager: softmax in float32, then .to(dtype)"},
    [SD_BACKEND] = {"backend", MEMEST_ARG_STR, .sdef = "auto", .choices = SDPA_BACKENDS,
                    .doc = "--attention wins when given"},
    [SD_CONTIGUOUS] = {"contiguous", MEMEST_ARG_BOOL, .idef = 1,
                       .doc = "q, k, v .contiguous() before the kernel (sdpa_attention_forward); "
                              "false: the caller's views as they are"},
    [SD_MASK] = {"mask", MEMEST_ARG_BOOL, .idef = 0,
                 .doc = "an attn_mask tensor is passed whatever the window (the 4-D causal mask "
                        "Gemma2/3's _update_causal_mask always builds)"},
    [SD_LAYER_MASK] = {"layer_mask", MEMEST_ARG_BOOL, .idef = 0,
                       .doc = "the mask is this layer's own [B, 1, L, S] tensor (Gemma2/3's "
                              "sliding-window torch.where over the model's mask), which the "
                              "kernels that keep the mask save"},
    [SD_BATCH_LOOP] = {"batch_loop", MEMEST_ARG_BOOL, .idef = 0,
                       .doc = "the batch dim stands for a loop of calls on its batch-1 slices "
                              "(Qwen2.5-VL's vision attention per torch.split chunk): eager's "
                              "matmuls view each slice of q, k, v where they can"},
};

/* The kernels, in enum memest_attention's order. */
enum kernel { K_AUTO = MEMEST_ATTN_AUTO, K_EAGER, K_MATH, K_FLASH, K_EFFICIENT, K_CUDNN };
static const char *const kernel_names[] = {"auto", "eager", "math", "flash", "efficient", "cudnn"};
_Static_assert(MEMEST_ATTN_CUDNN == 5, "kernel_names follows enum memest_attention");

struct sdpa {
    int64_t B, Hq, Hkv, L, S, D, Dv;
    enum memest_dtype dt;
    double p;
    bool causal, gqa, softmax_fp32;
    bool contiguous; /* sdpa_attention_forward's q, k, v .contiguous() */
    int64_t window;
    double softcap;
    bool mask;   /* the caller passes an attn_mask tensor (sdpa_call, or the "mask"
                    argument) */
    bool nested; /* sdpa_call: the output is a tensor inside the calling op */
    bool layer_mask; /* the mask is a [B, 1, L, S] tensor of this layer's own */
    bool sinks;      /* a fourth input: gpt-oss's attention sinks [Hq], eager only */
    bool loop;       /* batch_loop: one call per batch-1 slice */
};

/* The mask tensor transformers builds for the sdpa path: only for a
 * sliding window the keys reach (S >= window); causal attention is
 * is_causal=True. */
static bool sdpa_mask(const struct sdpa *a)
{
    return a->mask || (a->window > 0 && a->S >= a->window);
}

/* Why `k` cannot run the case (PyTorch 2.6 on sm80+), or NULL. */
static const char *cannot_run(const struct sdpa *a, enum kernel k)
{
    bool half = memest_dtype_is_half(a->dt);
    bool gqa_native = a->gqa && a->Hkv != a->Hq;
    if (k == K_EAGER)
        return NULL;
    if (a->softcap > 0)
        return "softcap (attention logit soft-capping) runs only in the eager backend";
    if (a->sinks)
        return "attention sinks run only in the eager backend (transformers' GptOss: "
               "_supports_sdpa = False)";
    switch (k) {
    case K_FLASH:
        if (!half)
            return "flash attention needs float16 or bfloat16 inputs";
        if (a->D != a->Dv)
            return "flash attention needs the same head dim for q, k and v";
        if (a->D > 256)
            return "flash attention supports head dims up to 256";
        if (a->causal && a->L != a->S)
            return "flash attention does not support is_causal with L != S";
        if (a->mask)
            return "flash attention takes no attn_mask tensor";
        return NULL;
    case K_EFFICIENT: {
        int64_t align = half ? 8 : 4;
        if (!half && a->dt != MEMEST_F32)
            return "memory-efficient attention needs float16, bfloat16 or float32 inputs";
        if (a->D % align != 0 || a->Dv % align != 0)
            return half ? "memory-efficient attention needs head dims that are multiples of 8"
                        : "memory-efficient attention needs head dims that are multiples of 4";
        if (gqa_native)
            return "memory-efficient attention does not support enable_gqa in PyTorch 2.6";
        return NULL;
    }
    case K_CUDNN:
        if (!half)
            return "cuDNN attention needs float16 or bfloat16 inputs";
        if (a->D > 128 || a->Dv > 128 || a->D % 8 != 0 || a->Dv % 8 != 0)
            return "cuDNN attention needs head dims that are multiples of 8 up to 128";
        if (gqa_native)
            return "cuDNN attention does not support enable_gqa in PyTorch 2.6";
        return NULL;
    case K_MATH:
    case K_AUTO:
    case K_EAGER:
        return NULL;
    }
    return NULL;
}

/* A tensor the kernel reads: input `in` itself, or (in < 0) a copy of the
 * given sizes made on the way (repeat_kv, .contiguous(), padding, upcast),
 * or a tensor the calling op made (sdpa_call): with whole[0] > 0 a view of
 * a storage of whole[0] * whole[1] elements, which an earlier operand holds
 * when shared. */
struct operand {
    int in;
    int ndim;
    int64_t size[4];
    enum memest_dtype dt;
    int64_t whole[2];
    bool shared;
};

static struct operand op_input(int in)
{
    return (struct operand){.in = in};
}

static struct operand op_copy(int64_t b, int64_t h, int64_t s, int64_t d, enum memest_dtype dt)
{
    return (struct operand){.in = -1, .ndim = 4, .size = {b, h, s, d}, .dt = dt};
}

/* Saves operand o (save) or counts a copy that is not saved as transient
 * forward memory. */
static int keep_operand(struct memest_ictx *c, const struct operand *o, bool save)
{
    if (o->in >= 0)
        return save ? memest_save_in(c, o->in) : 0;
    if (o->shared)
        return 0;
    int ndim = o->whole[0] > 0 ? 2 : o->ndim;
    const int64_t *size = o->whole[0] > 0 ? o->whole : o->size;
    if (save)
        return save_new_if(c, ndim, size, o->dt);
    memest_workspace(c, sat_bytes(ndim, size, o->dt));
    return 0;
}

/* Saves operand o when the kernel keeps it alone (math keeps v, not q and
 * k): the storage it views, even when an earlier operand shares it. */
static int keep_operand_alone(struct memest_ictx *c, const struct operand *o)
{
    if (o->in < 0 && o->whole[0] > 0)
        return save_new_if(c, 2, o->whole, o->dt);
    return keep_operand(c, o, true);
}

static double macs2(const struct sdpa *a, int64_t d)
{
    return (double)a->B * (double)a->Hq * (double)a->L * (double)a->S * (double)d;
}

/* ---- transformers' eager_attention_forward ---- */

/* Saves eager's matmul operand i (geometry g, reshaped to f [B*H, rows,
 * cols]). With batch_loop each call reshapes its batch-1 slice: where that
 * is a view, the matmul saves a view of the input's whole storage. */
static bool eager_operand_view(const struct sdpa *a, const struct memest_shape *g,
                               const int64_t f[3])
{
    struct memest_shape g1 = *g;
    g1.size[0] = 1;
    int64_t f1[3] = {f[0] / a->B, f[1], f[2]};
    return (a->loop && geom_viewable(&g1, 3, f1)) || geom_viewable(g, 3, f);
}

/* ... and saves it: its bytes when that is a copy (0: a view) into *copy. */
static int save_eager_operand(struct memest_ictx *c, const struct sdpa *a, int i,
                              const struct memest_shape *g, const int64_t f[3], uint64_t *copy)
{
    if (eager_operand_view(a, g, f))
        return memest_save_in(c, i);
    if (memest_needs_grad(c))
        *copy = memest_sat_add(*copy, sat_bytes(3, f, memest_in_dtype(c, i)));
    return save_new_if(c, 3, f, memest_in_dtype(c, i));
}

/* A running byte count that may dip below zero (pos - neg) and its peak. */
struct tally {
    uint64_t pos, neg, peak;
};
static void t_add(struct tally *t, uint64_t b)
{
    t->pos = memest_sat_add(t->pos, b);
    if (t->pos > t->neg && t->pos - t->neg > t->peak)
        t->peak = t->pos - t->neg;
}
static void t_sub(struct tally *t, uint64_t b) { t->neg = memest_sat_add(t->neg, b); }

/* eager_attention_forward's backward, node by node (derivatives.yaml,
 * PyTorch 2.6): what it holds beyond the node's saves and the incoming
 * gradient dO before the input gradients exist (memest_bwd_work_first). v's
 * matmul (bmm) makes dP = dO @ v^T and dV = P^T @ dO, then releases the v
 * it saved (repeat_kv's copy) and the probabilities only it read (dropout's
 * output, the .to copy), dO going; dropout's backward replaces dP (its mask
 * released), the .to's converts it to float32; softmax's backward makes dS
 * and releases the probabilities; the float32 scores' .to, the mask's add
 * (nothing) and the scaling replace dS; q's and k's matmul makes dQ and the
 * repeated dK. */
static uint64_t eager_bwd_peak(const struct sdpa *a, enum memest_dtype dt, enum memest_dtype smdt,
                               bool to_copy, uint64_t *early)
{
    int64_t att[4] = {a->B, a->Hq, a->L, a->S}, vrep[4] = {a->B, a->Hq, a->S, a->Dv},
            o[4] = {a->B, a->Hq, a->L, a->Dv}, q[4] = {a->B, a->Hq, a->L, a->D},
            krep[4] = {a->B, a->Hq, a->S, a->D};
    uint64_t Ae = sat_bytes(4, att, dt), Af = sat_bytes(4, att, smdt);
    struct tally t = {0, 0, 0};
    t_add(&t, Ae);                       /* dP */
    t_add(&t, sat_bytes(4, vrep, dt));   /* dV */
    t_sub(&t, sat_bytes(4, o, dt));      /* dO */
    *early = 0;
    if (a->Hq != a->Hkv)
        *early = sat_bytes(4, vrep, dt);   /* v's repeat_kv copy */
    if (a->p > 0 || to_copy)
        *early = memest_sat_add(*early, Ae);   /* dropout's output, or the .to copy */
    t_sub(&t, *early);
    if (a->p > 0) {
        t_add(&t, Ae);
        t_sub(&t, Ae);
        t_sub(&t, sat_bytes(4, att, MEMEST_BOOL));   /* its mask */
    }
    if (smdt != dt) {   /* .to(q.dtype)'s backward */
        t_add(&t, Af);
        t_sub(&t, Ae);
    }
    t_add(&t, Af);   /* softmax's dS */
    t_sub(&t, Af);   /* the probabilities */
    t_sub(&t, Af);   /* dP */
    if (a->softmax_fp32 && dt == MEMEST_BF16) {   /* the scores' float32 copy */
        t_add(&t, Ae);
        t_sub(&t, Af);
    }
    t_add(&t, Ae);   /* the scaling (and softcap's steps, one at a time) */
    t_sub(&t, Ae);
    t_add(&t, sat_bytes(4, q, dt));      /* dQ */
    t_add(&t, sat_bytes(4, krep, dt));   /* dK, repeated */
    return t.peak;
}

static int run_eager(struct memest_ictx *c, const struct sdpa *a)
{
    enum memest_dtype dt = a->dt, smdt = a->softmax_fp32 ? MEMEST_F32 : dt;
    int64_t BH = a->B * a->Hq, rep = a->Hq / a->Hkv;
    int64_t qf[3] = {BH, a->L, a->D}, kf[3] = {BH, a->D, a->S}, vf[3] = {BH, a->S, a->Dv};
    int64_t att[4] = {a->B, a->Hq, a->L, a->S}, mask[4] = {1, 1, a->L, a->S};
    struct memest_shape qg = *memest_in_shape(c, 0), kg = *memest_in_shape(c, 1),
                        vg = *memest_in_shape(c, 2);
    int64_t out[4] = {a->B, a->Hq, a->L, a->Dv};
    if (memest_out_new(c, 4, out, dt) < 0)
        return -1;

    /* matmul(q, k^T): q as [B*Hq, L, D]; k^T from repeat_kv's copy, or the
     * input transposed */
    uint64_t pre = 0, unused = 0;   /* the copies the first matmul saves */
    if (save_eager_operand(c, a, 0, &qg, qf, &pre) != 0)
        return -1;
    struct operand kr = op_copy(a->B, a->Hq, a->S, a->D, dt);
    struct operand vr = op_copy(a->B, a->Hq, a->S, a->Dv, dt);
    if (rep > 1) {
        if (keep_operand(c, &kr, true) != 0)
            return -1;
        if (memest_needs_grad(c))
            pre = memest_sat_add(pre, sat_bytes(4, kr.size, dt));
    } else {
        geom_transpose(&kg, 2, 3);
        if (save_eager_operand(c, a, 1, &kg, kf, &pre) != 0)
            return -1;
    }
    memest_late_saves(c);   /* q's and k's matmul is the last to run backward */
    if (a->softcap > 0 && save_new_if(c, 4, att, dt) != 0)
        return -1; /* tanh's output */
    /* sinks: softmax over cat([w, sinks], -1) - max(..).values: [.., S + 1]
     * saved, and max's int64 indices [B, Hq, L, 1]; the matmul reads the
     * slice probs[..., :-1] of that storage */
    int64_t att1[4] = {a->B, a->Hq, a->L, a->S + 1}, idx[4] = {a->B, a->Hq, a->L, 1};
    if (save_new_if(c, 4, a->sinks ? att1 : att, smdt) != 0)
        return -1; /* the softmax output */
    bool to_copy = smdt != dt; /* .to(q.dtype) */
    if (memest_needs_grad(c) && !a->sinks && !to_copy && a->p <= 0)
        memest_save_repack(c);   /* softmax's, and the matmul's that reads it */
    if (a->sinks && save_new_if(c, 4, idx, MEMEST_I64) != 0)
        return -1;
    if (a->p > 0) {
        if (dropout_saves(c, 4, att, dt, a->p, false, false) != 0 || save_new_if(c, 4, att, dt) != 0)
            return -1; /* the mask, and the output the matmul reads */
    } else if (to_copy && save_new_if(c, 4, att, dt) != 0) {
        return -1; /* the .to copy the matmul reads */
    }
    if (rep > 1) {
        if (keep_operand(c, &vr, true) != 0)
            return -1;
    } else if (save_eager_operand(c, a, 2, &vg, vf, &unused) != 0) {
        return -1;
    }

    /* transient: the raw and the scaled scores live together (likewise the
     * softcap steps and the masked add); bf16 converts the scores to float32
     * before the softmax (fp16 reads them directly: _softmax half_to_float);
     * a .to copy that dropout consumes; the model's mask */
    uint64_t e = memest_dtype_size(dt), bhls = sat_bytes(4, att, MEMEST_U8);
    uint64_t per = 2 * e;
    if (a->softmax_fp32 && dt == MEMEST_BF16 && per < e + 4)
        per = e + 4;
    if (a->sinks) { /* the masked scores, the cat and its max-subtracted copy */
        memest_workspace(c, memest_sat_add(memest_sat_mul(bhls, e),
                                           memest_sat_mul(sat_bytes(4, att1, dt), 2)));
    } else {
        /* before the probabilities, v's copy and the output exist: after
         * the operands the first matmul saved (in the node's storages,
         * counted here until they are made) */
        memest_workspace(c, memest_sat_add(memest_sat_mul(bhls, per), pre));
        memest_work_first(c);
    }
    if (a->causal || a->window > 0)
        memest_model_mask(c, sat_bytes(4, mask, dt));
    if (memest_needs_grad(c) && !a->sinks) {
        uint64_t early;
        memest_bwd_workspace(c, eager_bwd_peak(a, dt, smdt, to_copy, &early));
        memest_bwd_early_release(c, early);
        memest_bwd_work_first(c);
    }

    memest_macs(c, macs2(a, a->D) + macs2(a, a->Dv));
    bool gq = memest_in_requires_grad(c, 0), gk = memest_in_requires_grad(c, 1),
         gv = memest_in_requires_grad(c, 2);
    memest_macs_bwd(c, (gq ? macs2(a, a->D) : 0) + (gk ? macs2(a, a->D) : 0) +
                           (gq || gk ? macs2(a, a->Dv) : 0) + (gv ? macs2(a, a->Dv) : 0));
    return 0;
}

/* ---- transformers' sdpa_attention_forward and the SDPA kernels ---- */

/* q, k, v as the kernel receives them: after repeat_kv (unless enable_gqa)
 * and .contiguous(). */
static void sdpa_operands(struct memest_ictx *c, const struct sdpa *a, struct operand ops[3])
{
    int64_t rows[3] = {a->L, a->S, a->S}, dims[3] = {a->D, a->D, a->Dv};
    bool repeat = a->Hkv != a->Hq && !a->gqa;
    for (int i = 0; i < 3; i++) {
        int64_t h = i == 0 ? a->Hq : a->Hkv;
        if (i > 0 && repeat)
            ops[i] = op_copy(a->B, a->Hq, rows[i], dims[i], a->dt);
        else if (!a->contiguous || memest_shape_is_contiguous(memest_in_shape(c, i)))
            ops[i] = op_input(i);
        else
            ops[i] = op_copy(a->B, h, rows[i], dims[i], a->dt);
    }
}

static int64_t op_heads(const struct sdpa *a, int i)
{
    return i == 0 || !a->gqa ? a->Hq : a->Hkv;
}

static void fused_macs(struct memest_ictx *c, const struct sdpa *a)
{
    memest_macs(c, macs2(a, a->D) + macs2(a, a->Dv));
    memest_macs_bwd(c, 3 * macs2(a, a->D) + 2 * macs2(a, a->Dv));
}

/* Whether q as the kernel reads it (an input, not a copy) is laid out as
 * [B, L, H, D] memory seen transposed: its length stride exceeds its head
 * stride. Flash and cuDNN allocate their output like q
 * (empty_like(q.transpose(1, 2)) keeps the order of q's strides), so the
 * caller's attn_output.transpose(1, 2).contiguous() then copies nothing. */
static bool q_length_major(const struct memest_ictx *c, const struct operand *q)
{
    if (q->in < 0)
        return false;
    const struct memest_shape *s = memest_in_shape(c, q->in);
    return s->size[1] > 1 && s->size[2] > 1 && s->stride[2] > s->stride[1];
}

/* The output of flash and cuDNN, saved when autograd records: [B, Hq, L, d]
 * allocated with head dim dalloc and narrowed to d, laid out as
 * empty_like(q.transpose(1, 2)).transpose(1, 2) lays it out: heads-major
 * unless q is a transposed view of [B, L, Hq, D] memory. */
static int output_like_q(struct memest_ictx *c, const struct sdpa *a, const struct operand *q,
                         int64_t dalloc, int64_t d)
{
    bool lh = q_length_major(c, q);
    int64_t osz[4] = {a->B, lh ? a->L : a->Hq, lh ? a->Hq : a->L, dalloc};
    if (a->nested)
        return save_new_if(c, 4, osz, a->dt);
    uint64_t n;
    if (!memest_numel(c, 4, osz, &n))
        return -1;
    struct memest_shape og;
    memest_shape_set(&og, 4, osz);
    if (lh)
        geom_transpose(&og, 1, 2);
    og.size[3] = d;
    if (memest_out_new_strided(c, &og, n, a->dt) < 0 ||
        (memest_needs_grad(c) && memest_save_out(c, 0) != 0))
        return -1;
    return 0;
}

static int run_flash(struct memest_ictx *c, const struct sdpa *a, struct operand ops[3])
{
    int64_t Dp = div_ceil(a->D, 8) * 8;
    for (int i = 0; i < 3; i++) {
        if (Dp != a->D) { /* pad_last_dim<8>: the contiguous operand is transient */
            if (keep_operand(c, &ops[i], false) != 0)
                return -1;
            ops[i] = op_copy(a->B, op_heads(a, i), i == 0 ? a->L : a->S, Dp, a->dt);
        }
        if (keep_operand(c, &ops[i], true) != 0)
            return -1;
    }
    /* post_process_flash_output: a narrow of the padded output */
    if (output_like_q(c, a, &ops[0], Dp, a->D) != 0)
        return -1;
    int64_t lse[3] = {a->B, a->Hq, a->L};
    if (memest_needs_grad(c)) {
        if (save_new_if(c, 3, lse, MEMEST_F32) != 0)
            return -1;
    } else {
        memest_workspace(c, sat_bytes(3, lse, MEMEST_F32));
    }
    /* backward (flash_api.cpp mha_bwd): dq_accum float32 [B, L rounded to
     * 128, Hq, D rounded to 32], softmax_d float32 [B, Hq, L rounded], and
     * with GQA the expanded dk, dv [B, S, Hq, D] before their head sums;
     * with batch_loop, one call's at a time (Bw 1) */
    int64_t Lr = div_ceil(a->L, 128) * 128, Dr = a->D <= 192 ? div_ceil(a->D, 32) * 32 : 256;
    int64_t Bw = a->loop ? 1 : a->B;
    int64_t acc[4] = {Bw, Lr, a->Hq, Dr}, sd[3] = {Bw, a->Hq, Lr}, kx[4] = {Bw, a->S, a->Hq, Dp};
    uint64_t bw = memest_sat_add(sat_bytes(4, acc, MEMEST_F32), sat_bytes(3, sd, MEMEST_F32));
    if (a->gqa && a->Hkv != a->Hq)
        bw = memest_sat_add(bw, memest_sat_mul(sat_bytes(4, kx, a->dt), 2));
    memest_bwd_workspace(c, bw);
    fused_macs(c, a);
    return 0;
}

/* The model's mask when the case has one: transient here; kernels that
 * keep it (efficient, cuDNN) save the model's one storage, except
 * efficient's pad_bias<8> copy when S is not a multiple of 8. A layer's own
 * mask (layer_mask: [B, 1, L, S], made before the call) is saved as a
 * storage of its own by those kernels and the math path. */
static int sdpa_mask_memory(struct memest_ictx *c, const struct sdpa *a, enum kernel k)
{
    int64_t mask[4] = {1, 1, a->L, a->S};
    if (!sdpa_mask(a) || k == K_FLASH)
        return 0;
    if (a->layer_mask) {
        mask[0] = a->B;
        if (k == K_EFFICIENT && a->S % 8 != 0)
            mask[3] = a->S + 8 - a->S % 8;
        return save_new_if(c, 4, mask, a->dt);
    }
    memest_model_mask(c, sat_bytes(4, mask, a->dt));
    if (k == K_EFFICIENT && a->S % 8 != 0) {
        mask[3] = a->S + 8 - a->S % 8;
        return save_new_if(c, 4, mask, a->dt);
    }
    return 0;
}

static int run_efficient(struct memest_ictx *c, const struct sdpa *a, struct operand ops[3])
{
    for (int i = 0; i < 3; i++)
        if (keep_operand(c, &ops[i], true) != 0)
            return -1;
    /* res = empty(B, L, Hq, Dv).transpose(1, 2) */
    int64_t osz[4] = {a->B, a->L, a->Hq, a->Dv};
    uint64_t n;
    if (a->nested) {
        if (save_new_if(c, 4, osz, a->dt) != 0)
            return -1;
    } else {
        if (!memest_numel(c, 4, osz, &n))
            return -1;
        struct memest_shape og;
        memest_shape_set(&og, 4, osz);
        geom_transpose(&og, 1, 2);
        if (memest_out_new_strided(c, &og, n, a->dt) < 0 ||
            (memest_needs_grad(c) && memest_save_out(c, 0) != 0))
            return -1;
    }
    /* compute_log_sumexp only when autograd records (should_compute_logsumexp) */
    int64_t lse[3] = {a->B, a->Hq, div_ceil(a->L, 32) * 32};
    if (save_new_if(c, 3, lse, MEMEST_F32) != 0 || sdpa_mask_memory(c, a, K_EFFICIENT) != 0)
        return -1;
    /* backward (mem_efficient attention_backward.cu): delta float32
     * [B, Hq, L] and, for fp16/bf16 (kNeedsAccumGradQ), a float32 dq
     * accumulator [B, L, Hq, D]; with batch_loop, one call's at a time */
    int64_t Bw = a->loop ? 1 : a->B;
    int64_t delta[3] = {Bw, a->Hq, a->L}, dq[4] = {Bw, a->L, a->Hq, a->D};
    uint64_t bw = sat_bytes(3, delta, MEMEST_F32);
    if (a->dt != MEMEST_F32)
        bw = memest_sat_add(bw, sat_bytes(4, dq, MEMEST_F32));
    memest_bwd_workspace(c, bw);
    fused_macs(c, a);
    return 0;
}

static int run_cudnn(struct memest_ictx *c, const struct sdpa *a, struct operand ops[3])
{
    for (int i = 0; i < 3; i++)
        if (keep_operand(c, &ops[i], true) != 0)
            return -1;
    int64_t lse[4] = {a->B, a->Hq, a->L, 1};
    if (output_like_q(c, a, &ops[0], a->Dv, a->Dv) != 0)
        return -1;
    if (save_new_if(c, 4, lse, MEMEST_F32) != 0 || save_new_if(c, 0, NULL, MEMEST_I64) != 0 ||
        save_new_if(c, 0, NULL, MEMEST_I64) != 0 || sdpa_mask_memory(c, a, K_CUDNN) != 0)
        return -1; /* logsumexp, philox seed, offset */
    fused_macs(c, a);
    return 0;
}

static int run_math(struct memest_ictx *c, const struct sdpa *a, struct operand ops[3])
{
    bool up = memest_dtype_is_half(a->dt);
    enum memest_dtype acc = up ? MEMEST_F32 : a->dt;
    int64_t out[4] = {a->B, a->Hq, a->L, a->Dv}, att[4] = {a->B, a->Hq, a->L, a->S};
    int64_t ls[2] = {a->L, a->S};
    if (a->nested)
        memest_workspace(c, sat_bytes(4, out, a->dt)); /* the caller copies it */
    else if (memest_out_new(c, 4, out, a->dt) < 0)
        return -1;
    /* q, k, v to float32: q and k are transient (their scaled copies are
     * what the bmm keeps), v is kept unless repeated; the kernel's own
     * copies (repeat_kv, .contiguous()) become transient once upcast */
    for (int i = 0; i < 3; i++) {
        if (up) {
            if (keep_operand(c, &ops[i], false) != 0)
                return -1;
            ops[i] = op_copy(a->B, op_heads(a, i), i == 0 ? a->L : a->S,
                             i == 2 ? a->Dv : a->D, acc);
        }
    }
    bool interleave = a->gqa && a->Hkv != a->Hq;
    if (keep_operand(c, &ops[0], false) != 0 || keep_operand(c, &ops[1], false) != 0)
        return -1;
    if (interleave) {
        if (keep_operand(c, &ops[2], false) != 0)
            return -1;
    } else if (ops[2].in >= 0) {
        /* v itself (float32, passed as it is): matmul(attn, v) reshapes it
         * to [B*Hq, S, Dv], its storage when viewable so, else a copy (a
         * split of a wider projection: DeepSeek-V3's value_states) */
        struct memest_shape vg = *memest_in_shape(c, ops[2].in);
        int64_t vf[3] = {a->B * a->Hq, a->S, a->Dv};
        if (save_geom_reshaped(c, ops[2].in, &vg, 3, vf, true) != 0)
            return -1;
    } else if (keep_operand_alone(c, &ops[2]) != 0) {
        return -1;
    }
    struct operand kq = op_copy(a->B, a->Hq, a->L, a->D, acc);   /* q * sqrt(scale) */
    struct operand kk = op_copy(a->B, a->Hq, a->S, a->D, acc);   /* k^T * sqrt(scale) */
    struct operand vv = op_copy(a->B, a->Hq, a->S, a->Dv, acc); /* repeat_interleave(v) */
    if (interleave && keep_operand(c, &kk, false) != 0)
        return -1; /* repeat_interleave(k), before its scaling */
    if (keep_operand(c, &kq, true) != 0 || keep_operand(c, &kk, true) != 0 ||
        save_new_if(c, 4, att, acc) != 0)
        return -1; /* the bmm's operands, _safe_softmax's result */
    if (a->p > 0 && (dropout_saves(c, 4, att, acc, a->p, false, false) != 0 ||
                     save_new_if(c, 4, att, acc) != 0))
        return -1;
    if (interleave && keep_operand(c, &vv, true) != 0)
        return -1;
    /* transient: the scores and softmax() inside _safe_softmax with its
     * eq(-inf) bool tensor; the causal mask (bool ones, tril, float);
     * the float32 result before .to() */
    memest_workspace(c, memest_sat_mul(sat_bytes(4, att, MEMEST_U8),
                                       2 * memest_dtype_size(acc) + 1));
    if (a->causal)
        memest_workspace(c, memest_sat_add(sat_bytes(2, ls, acc),
                                           memest_sat_mul(sat_bytes(2, ls, MEMEST_BOOL), 2)));
    if (up)
        memest_workspace(c, sat_bytes(4, out, acc));
    if (sdpa_mask_memory(c, a, K_MATH) != 0)
        return -1;
    memest_macs(c, macs2(a, a->D) + macs2(a, a->Dv));
    memest_macs_bwd(c, 2 * macs2(a, a->D) + 2 * macs2(a, a->Dv));
    return 0;
}

/* The kernel auto picks. */
static enum kernel pick_auto(const struct sdpa *a)
{
    if (a->softcap > 0 || a->sinks)
        return K_EAGER;
    if (!sdpa_mask(a) && cannot_run(a, K_FLASH) == NULL)
        return K_FLASH;
    if (cannot_run(a, K_EFFICIENT) == NULL)
        return K_EFFICIENT;
    return K_MATH;
}

/* A fused kernel's backward returns the gradients of the k and v it was
 * given: after repeat_kv (Hkv < Hq, no enable_gqa) [B, Hq, S, D] and
 * [B, Hq, S, Dv], which live to the end of the op while memest's gradients
 * of the node's inputs are [B, Hkv, S, ...] (repeat_kv's backward sums them
 * after): the difference is the op's backward workspace. */
static void repeated_kv_grads(struct memest_ictx *c, const struct sdpa *a)
{
    if (a->gqa || a->Hkv == a->Hq)
        return;
    int64_t kr[4] = {a->B, a->Hq, a->S, a->D}, vr[4] = {a->B, a->Hq, a->S, a->Dv};
    uint64_t rep = memest_sat_add(sat_bytes(4, kr, a->dt), sat_bytes(4, vr, a->dt));
    kr[1] = vr[1] = a->Hkv;
    uint64_t own = memest_sat_add(sat_bytes(4, kr, a->dt), sat_bytes(4, vr, a->dt));
    memest_bwd_workspace(c, rep > own ? rep - own : 0);
}

/* Runs kernel kern (not eager) on the operands. */
static int run_kernel(struct memest_ictx *c, const struct sdpa *a, enum kernel kern,
                      struct operand ops[3])
{
    if (kern == K_FLASH || kern == K_EFFICIENT || kern == K_CUDNN)
        repeated_kv_grads(c, a);   /* the fused kernels' backward */
    switch (kern) {
    case K_FLASH:
        return run_flash(c, a, ops);
    case K_EFFICIENT:
        return run_efficient(c, a, ops);
    case K_CUDNN:
        return run_cudnn(c, a, ops);
    case K_MATH:
    case K_AUTO:
    case K_EAGER:
        break;
    }
    return run_math(c, a, ops);
}

/* The kernel that runs: *kern as the node names it (K_AUTO: none), unless
 * --attention names one; auto's pick for K_AUTO. A kernel named that cannot
 * run the case is an error. sdpa_call (SDPA inside another op, which has no
 * eager path) takes --attention eager as auto. */
static int choose_kernel(struct memest_ictx *c, const struct sdpa *a, enum kernel *kern)
{
    uint8_t forced = memest_run_options(c)->attention;
    if (forced != MEMEST_ATTN_AUTO && forced <= MEMEST_ATTN_CUDNN &&
        !(a->nested && forced == MEMEST_ATTN_EAGER)) {
        *kern = (enum kernel)forced;
        memest_run_option_used(c, MEMEST_USED_ATTENTION);
    }
    if (*kern == K_AUTO) {
        *kern = pick_auto(a);
        return 0;
    }
    const char *why = cannot_run(a, *kern);
    if (why)
        return memest_fail(c, "the %s attention kernel cannot run this case: %s",
                           kernel_names[*kern], why);
    return 0;
}

/* The sinks input (3): a float [Hq] parameter, as GptOssAttention.sinks. */
static int check_sinks(struct memest_ictx *c, int64_t Hq)
{
    const struct memest_shape *s = memest_in_shape(c, 3);
    if (need_float(c, 3) != 0)
        return -1;
    if (s->ndim != 1 || s->size[0] != Hq)
        return memest_fail(c, "the attention sinks (input 4) must be [%lld], one per query "
                              "head, got %s",
                           (long long)Hq, IN_STR(c, 3));
    return 0;
}

static int infer_sdpa(struct memest_ictx *c)
{
    for (int i = 0; i < 3; i++)
        if (need_float(c, i) != 0)
            return -1;
    const struct memest_shape *q = memest_in_shape(c, 0), *k = memest_in_shape(c, 1),
                              *v = memest_in_shape(c, 2);
    if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4)
        return memest_fail(c, "expects 4-D q [B, Hq, L, D], k [B, Hkv, S, D] and v [B, Hkv, S, "
                              "Dv], got %s, %s and %s",
                           IN_STR(c, 0), IN_STR(c, 1), IN_STR(c, 2));
    enum memest_dtype dt = memest_in_dtype(c, 0);
    if (memest_in_dtype(c, 1) != dt || memest_in_dtype(c, 2) != dt)
        return memest_fail(c, "q, k and v must have the same dtype, got %s, %s and %s",
                           memest_dtype_name(dt), memest_dtype_name(memest_in_dtype(c, 1)),
                           memest_dtype_name(memest_in_dtype(c, 2)));
    struct sdpa a = {.B = q->size[0], .Hq = q->size[1], .Hkv = k->size[1], .L = q->size[2],
                     .S = k->size[2], .D = q->size[3], .Dv = v->size[3], .dt = dt,
                     .p = memest_arg_float(c, SD_DROPOUT),
                     .causal = memest_arg_bool(c, SD_CAUSAL),
                     .gqa = memest_arg_bool(c, SD_GQA),
                     .softmax_fp32 = memest_arg_bool(c, SD_SOFTMAX_FP32),
                     .window = memest_arg_int(c, SD_WINDOW),
                     .softcap = memest_arg_float(c, SD_SOFTCAP),
                     .contiguous = memest_arg_bool(c, SD_CONTIGUOUS),
                     .mask = memest_arg_bool(c, SD_MASK) || memest_arg_bool(c, SD_LAYER_MASK),
                     .layer_mask = memest_arg_bool(c, SD_LAYER_MASK),
                     .sinks = memest_in_count(c) == 4,
                     .loop = memest_arg_bool(c, SD_BATCH_LOOP)};
    if (k->size[0] != a.B || v->size[0] != a.B)
        return memest_fail(c, "q, k and v must have the same batch size, got %s, %s and %s",
                           IN_STR(c, 0), IN_STR(c, 1), IN_STR(c, 2));
    if (k->size[3] != a.D)
        return memest_fail(c, "q and k must have the same head dim, got %s and %s", IN_STR(c, 0),
                           IN_STR(c, 1));
    if (v->size[1] != a.Hkv || v->size[2] != a.S)
        return memest_fail(c, "k and v must have the same heads and length, got %s and %s",
                           IN_STR(c, 1), IN_STR(c, 2));
    if (a.Hkv < 1 || a.Hq % a.Hkv != 0)
        return memest_fail(c, "the key/value heads (%lld) must divide the query heads (%lld)",
                           (long long)a.Hkv, (long long)a.Hq);
    if (a.B < 1 || a.L < 1 || a.S < 1 || a.D < 1 || a.Dv < 1)
        return memest_fail(c, "empty q, k or v: %s, %s and %s", IN_STR(c, 0), IN_STR(c, 1),
                           IN_STR(c, 2));
    if (a.sinks && check_sinks(c, a.Hq) != 0)
        return -1;

    enum kernel kern = K_AUTO;
    const char *bs = memest_arg(c, SD_BACKEND)->s;
    for (int i = 0; i < (int)(sizeof kernel_names / sizeof *kernel_names); i++)
        if (strcmp(bs, kernel_names[i]) == 0)
            kern = (enum kernel)i;
    if (choose_kernel(c, &a, &kern) != 0)
        return -1;
    if (kern == K_EAGER)
        return run_eager(c, &a);
    if (kern == K_FLASH || kern == K_EFFICIENT || kern == K_CUDNN)
        memest_set_sac_op(c, MEMEST_SAC_ATTN);
    struct operand ops[3];
    sdpa_operands(c, &a, ops);
    return run_kernel(c, &a, kern, ops);
}

int sdpa_call_saves(struct memest_ictx *c, const struct sdpa_call *s, bool *out_like_q)
{
    struct sdpa a = {.B = s->B, .Hq = s->H, .Hkv = s->H, .L = s->L, .S = s->S, .D = s->D,
                     .Dv = s->D, .dt = s->dt, .p = s->p, .softmax_fp32 = true, .mask = s->mask,
                     .nested = true};
    enum kernel kern = K_AUTO;
    if (choose_kernel(c, &a, &kern) != 0)
        return -1;
    struct operand ops[3];
    int64_t rows[3] = {s->L, s->S, s->S};
    for (int i = 0; i < 3; i++) {
        ops[i] = op_copy(s->B, s->H, rows[i], s->D, s->dt);
        ops[i].whole[0] = s->whole[i][0];
        ops[i].whole[1] = s->whole[i][1];
        ops[i].shared = s->shared[i];
    }
    /* flash and cuDNN allocate the output like q (output_like_q), which the
     * caller gives as a view of [L, B, H, D] memory; a padded q is a new
     * contiguous [B, H, L, Dp] tensor */
    *out_like_q = (kern == K_FLASH && s->D % 8 == 0) || kern == K_CUDNN;
    return run_kernel(c, &a, kern, ops);
}


const struct memest_op_desc memest_ops_sdpa[] = {
    {
        .name = "scaled_dot_product_attention",
        .min_in = 3,
        .max_in = 4,
        .args = sdpa_args,
        .nargs = NARGS(sdpa_args),
        .infer = infer_sdpa,
        .doc = "attention over q [B, Hq, L, D], k, v [B, Hkv, S, D/Dv] as transformers runs it "
               "(eager, or SDPA's math/flash/efficient/cuDNN kernels); output [B, Hq, L, Dv]; "
               "a fourth input [Hq]: gpt-oss's attention sinks (eager)",
        .amp = MEMEST_AMPP_LOW, /* autocast_mode.cpp: lower_precision_fp */
        /* eager and math call cuBLAS; the fused kernels do not, but the
         * linear projections before them already have */
        .lib = MEMEST_LIB_CUBLAS,
        /* transformers' attention modules hand key_states and value_states
         * to past_key_value.update() before attention (cache_utils.py) */
        .kv_attention = true,
        .kv_window_arg = "window",
    },
};
const int memest_ops_sdpa_count = NOPS(memest_ops_sdpa);
