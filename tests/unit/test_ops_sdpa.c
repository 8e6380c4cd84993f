/* test_ops_sdpa.c - scaled_dot_product_attention as transformers v4.48.0
 * runs it with PyTorch 2.6 on an sm80+ GPU: what each kernel (eager, math,
 * flash, efficient, cuDNN) saves, auto's choice, the --attention override,
 * MACs and errors. The figures are hand calculations from the ATen sources
 * cited in src/ops/ops_sdpa.c; tests/tools/sdpa_saved.py measures the
 * eager, math and flash cases on PyTorch 2.6 (CPU, with CUDA's bool dropout
 * masks) and gets the same bytes.
 *
 * Unless said otherwise: batch B = 2, L = S = 8, and q, k, v made as
 * transformers makes them: a projection's output [B, L, H*D] (here a model
 * input requiring grad) viewed as [B, L, H, D] and transposed to
 * [B, H, L, D], a non-contiguous view. */
#include "check.h"
#include "ops_test.h"

/* Inputs xq [B, L, QC], xk and xv [B, L, KC]; q, k, v their views
 * [B, ., L, .] (QV and KV: "heads, head dim"). */
#define QKV(L, QC, KC, QV, KV)                                                                 \
    "{'inputs': [{'name': 'xq', 'shape': [" L ", " QC "], 'requires_grad': true},"             \
    "            {'name': 'xk', 'shape': [" L ", " KC "], 'requires_grad': true},"             \
    "            {'name': 'xv', 'shape': [" L ", " KC "], 'requires_grad': true}],"            \
    " 'layers': [{'name': 'q4', 'type': 'view', 'inputs': ['xq'], 'shape': [-1, " L ", " QV    \
    "]},"                                                                                      \
    "            {'name': 'q', 'type': 'transpose', 'inputs': ['q4'], 'dim0': 1, 'dim1': 2}," \
    "            {'name': 'k4', 'type': 'view', 'inputs': ['xk'], 'shape': [-1, " L ", " KV    \
    "]},"                                                                                      \
    "            {'name': 'k', 'type': 'transpose', 'inputs': ['k4'], 'dim0': 1, 'dim1': 2}," \
    "            {'name': 'v4', 'type': 'view', 'inputs': ['xv'], 'shape': [-1, " L ", " KV    \
    "]},"                                                                                      \
    "            {'name': 'v', 'type': 'transpose', 'inputs': ['v4'], 'dim0': 1, 'dim1': 2},"

/* Hq = Hkv = 4, D = 16. */
#define MHA QKV("8", "64", "64", "4, 16", "4, 16")
/* Hq = 4, Hkv = 2, D = 16 (grouped-query attention). */
#define GQA QKV("8", "64", "32", "4, 16", "2, 16")
#define ATT(args)                                                                             \
    "{'name': 'att', 'type': 'scaled_dot_product_attention', 'inputs': ['q', 'k', 'v'], " args \
    "}]}"

/* Loads with batch 2, the dtype and the --attention option. */
static int load(struct t_model *t, const char *json, enum memest_dtype dt, uint8_t attention)
{
    struct memest_run_opts o = {.batch = 2, .dtype = dt, .attention = attention};
    return t_load_opts(t, json, &o);
}

#define LOADK(t, json, dt, att)                       \
    do {                                              \
        int rc_ = load((t), (json), (dt), (att));     \
        if (rc_ != 0)                                 \
            fprintf(stderr, "load failed: %s\n", (t)->msg); \
        CHECK(rc_ == 0);                              \
        if (rc_ != 0) {                               \
            t_free(t);                                \
            return;                                   \
        }                                             \
    } while (0)

/* Eager, fp16, causal, no dropout (BHLS = 2*4*8*8 = 512 scores,
 * BHLD = 1024 elements of q, k or v):
 *   matmul(q, k^T): q as [8, 8, 16], a copy of the transposed view   2048
 *                   k^T as [8, 16, 8], likewise a copy               2048
 *   softmax(dtype=float32): its float32 result 512 * 4               2048
 *   .to(float16): the copy the second matmul reads 512 * 2           1024
 *   matmul(w, v): v as [8, 8, 16], a copy                            2048
 *   total                                                            9216
 * Output [2, 4, 8, 16] contiguous. MACs: two products of 512 * 16 = 8192
 * each: 16384; backward: grad q, k (8192 each), grad of the weights and of
 * v (8192 each): 32768. */
static void test_eager(void)
{
    struct t_model t;
    LOADK(&t, MHA ATT("'is_causal': true, 'backend': 'eager'"), MEMEST_F16, MEMEST_ATTN_AUTO);
    CHECK_STR_EQ(t_shape(&t, "att", 0), "[2, 4, 8, 16]");
    CHECK_STR_EQ(t_strides(&t, "att", 0), "[512, 128, 16, 1]");
    CHECK_EQ_U64(t_saved(&t, "att"), 9216);
    CHECK(!t_saves_storage(&t, "att", t_storage(&t, "xq", 0)));
    CHECK(t_fwd(&t, "att") == 16384.0);
    CHECK(t_bwd(&t, "att") == 32768.0);
    t_free(&t);
}

/* batch_loop (Qwen2.5-VL's vision attention: one call per batch-1 slice):
 * each call's matmuls reshape a [1, 4, 8, 16] slice of the transposed view
 * to [4, 8, 16], which is a view, so q, k^T and v are saved as views of the
 * inputs' storages (2048 each, the size the copies had in test_eager: the
 * same 9216 bytes, of the inputs themselves). A batch of 2 reshaped at once
 * copies (test_eager). SDPA's kernels save q, k, v as they are either way. */
static void test_eager_batch_loop(void)
{
    struct t_model t;
    LOADK(&t, MHA ATT("'is_causal': true, 'backend': 'eager', 'batch_loop': true"), MEMEST_F16,
          MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "att"), 9216);
    CHECK(t_saves_storage(&t, "att", t_storage(&t, "xq", 0)));
    CHECK(t_saves_storage(&t, "att", t_storage(&t, "xk", 0)));
    CHECK(t_saves_storage(&t, "att", t_storage(&t, "xv", 0)));
    t_free(&t);
    /* flash's backward scratch (dq_accum float32 [B, 128, 4, 32] and
     * softmax_d [B, 4, 128]) is one call's with batch_loop: 65536 + 2048,
     * half the batch of 2's 131072 + 4096 */
    LOADK(&t, MHA ATT("'is_causal': true"), MEMEST_F16, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_info(&t, "att")->bwd_work_bytes, 131072 + 4096);
    t_free(&t);
    LOADK(&t, MHA ATT("'is_causal': true, 'batch_loop': true"), MEMEST_F16, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_info(&t, "att")->bwd_work_bytes, 65536 + 2048);
    t_free(&t);
}

/* Eager with dropout 0.1: native_dropout's bool mask (512) and its output
 * (1024) instead of the .to copy: 3 * 2048 + 2048 + 512 + 1024 = 9728.
 * softmax_fp32 false: the softmax in fp16 (1024) instead of float32:
 * 6144 + 1024 + 512 + 1024 = 8704 - Korthikanti et al.'s 5 bytes per
 * score (2 softmax, 1 mask, 2 dropout output) plus 2 bytes of each of q, k,
 * v. bf16 with softcap 50: tanh's output (512 * 2 = 1024) more than the
 * first case: 10240. */
static void test_eager_variants(void)
{
    struct t_model t;
    LOADK(&t, MHA ATT("'is_causal': true, 'dropout_p': 0.1, 'backend': 'eager'"), MEMEST_F16,
          MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "att"), 9728);
    t_free(&t);
    LOADK(&t,
          MHA ATT("'is_causal': true, 'dropout_p': 0.1, 'softmax_fp32': false, 'backend': "
                  "'eager'"),
          MEMEST_F16, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "att"), 8704);
    t_free(&t);
    LOADK(&t, MHA ATT("'is_causal': true, 'softcap': 50, 'backend': 'eager'"), MEMEST_BF16,
          MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "att"), 10240);
    t_free(&t);
    /* auto takes eager for softcap */
    LOADK(&t, MHA ATT("'is_causal': true, 'softcap': 50"), MEMEST_BF16, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "att"), 10240);
    t_free(&t);
}

/* Eager with grouped-query attention (Hkv = 2): repeat_kv copies k and v
 * to [2, 4, 8, 16] (2048 each, contiguous, so the matmuls view them): the
 * same 9216 bytes as with 4 heads, none of them the inputs'. With q, k, v
 * contiguous inputs [B, 4, 8, 16], the matmuls save the inputs themselves
 * (k^T [8, 16, 8] is a view of contiguous k): 2048 * 3 + 2048 + 1024. */
static void test_eager_gqa_contiguous(void)
{
    struct t_model t;
    LOADK(&t, GQA ATT("'is_causal': true, 'backend': 'eager'"), MEMEST_F16, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "att"), 9216);
    CHECK(!t_saves_storage(&t, "att", t_storage(&t, "xk", 0)));
    t_free(&t);
    LOADK(&t,
          "{'inputs': [{'name': 'q', 'shape': [4, 8, 16], 'requires_grad': true},"
          "            {'name': 'k', 'shape': [4, 8, 16], 'requires_grad': true},"
          "            {'name': 'v', 'shape': [4, 8, 16], 'requires_grad': true}],"
          " 'layers': [" ATT("'backend': 'eager'"),
          MEMEST_F16, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "att"), 9216);
    CHECK(t_saves_storage(&t, "att", t_storage(&t, "q", 0)));
    CHECK(t_saves_storage(&t, "att", t_storage(&t, "k", 0)));
    CHECK(t_saves_storage(&t, "att", t_storage(&t, "v", 0)));
    t_free(&t);
}

/* auto, fp16: flash. sdpa_attention_forward makes q, k, v contiguous
 * (copies of the views, 2048 each); flash saves them, its output [2, 4, 8,
 * 16] (2048, q's layout: contiguous) and the float32 logsumexp [2, 4, 8]
 * (256): 8448. MACs: forward 16384; backward recomputes the scores:
 * 512 * (3 * 16 + 2 * 16) = 40960. The same with the node's backend
 * "eager" but --attention flash. */
static void test_flash(void)
{
    struct t_model t;
    LOADK(&t, MHA ATT("'is_causal': true"), MEMEST_F16, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "att"), 8448);
    CHECK_EQ_U64(t_nsaved(&t, "att"), 5);
    CHECK(t_saves_storage(&t, "att", t_storage(&t, "att", 0)));
    CHECK_STR_EQ(t_strides(&t, "att", 0), "[512, 128, 16, 1]");
    CHECK(t_fwd(&t, "att") == 16384.0);
    CHECK(t_bwd(&t, "att") == 40960.0);
    t_free(&t);
    LOADK(&t, MHA ATT("'is_causal': true, 'backend': 'eager'"), MEMEST_BF16, MEMEST_ATTN_FLASH);
    CHECK_EQ_U64(t_saved(&t, "att"), 8448);
    t_free(&t);
}

/* Flash with GQA (Hkv = 2): v4.48.0 repeats k and v to 4 heads (2048
 * each): 8448 again. enable_gqa: k and v keep 2 heads, their contiguous
 * copies 1024 each: 2048 + 1024 + 1024 + 2048 + 256 = 6400.
 * The backward's workspace: dq_accum float32 [2, 128, 4, 32] 131072 and
 * softmax_d float32 [2, 4, 128] 4096: 135168 with 4 kv heads. Repeated,
 * the kernel returns the gradients of the repeated k and v, [2, 4, 8, 16]
 * (2048 each), which live to the op's end while the node's own gradients
 * are [2, 2, 8, 16] (1024 each; repeat_kv's backward sums into them): 2048
 * more, 137216. enable_gqa: the expanded dk, dv [2, 8, 4, 16] before the
 * kernel's head sums, 2048 each: 139264. */
static void test_flash_gqa(void)
{
    struct t_model t;
    LOADK(&t, MHA ATT("'is_causal': true"), MEMEST_F16, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_info(&t, "att")->bwd_work_bytes, 135168);
    t_free(&t);
    LOADK(&t, GQA ATT("'is_causal': true"), MEMEST_F16, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "att"), 8448);
    CHECK_EQ_U64(t_info(&t, "att")->bwd_work_bytes, 137216);
    t_free(&t);
    LOADK(&t, GQA ATT("'is_causal': true, 'enable_gqa': true"), MEMEST_F16, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "att"), 6400);
    CHECK_EQ_U64(t_info(&t, "att")->bwd_work_bytes, 139264);
    t_free(&t);
}

/* Head dim 12: flash pads q, k, v to 16 (copies [2, 4, 8, 16], 2048 each,
 * saved instead of the contiguous ones) and its output [2, 4, 8, 16]
 * (2048) is returned narrowed to [2, 4, 8, 12] with the padded strides;
 * logsumexp 256: 8448. */
static void test_flash_pad(void)
{
    struct t_model t;
    LOADK(&t, QKV("8", "48", "48", "4, 12", "4, 12") ATT("'is_causal': true"), MEMEST_F16,
          MEMEST_ATTN_AUTO);
    CHECK_STR_EQ(t_shape(&t, "att", 0), "[2, 4, 8, 12]");
    CHECK_STR_EQ(t_strides(&t, "att", 0), "[512, 128, 16, 1]");
    CHECK_EQ_U64(t_saved(&t, "att"), 8448);
    t_free(&t);
}

/* auto, float32: flash needs fp16/bf16, so memory-efficient attention
 * (head dim 16 % 4 == 0). q, k, v copies 4096 each, the output 4096 and
 * log_sumexp [2, 4, ceil(8/32)*32 = 32] float32 (1024): 17408. The output
 * is a [2, 8, 4, 16] buffer transposed: strides [512, 16, 64, 1]. */
static void test_efficient(void)
{
    struct t_model t;
    LOADK(&t, MHA ATT("'is_causal': true"), MEMEST_F32, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "att"), 17408);
    CHECK_STR_EQ(t_strides(&t, "att", 0), "[512, 16, 64, 1]");
    CHECK(t_bwd(&t, "att") == 40960.0);
    t_free(&t);
}

/* A sliding window the keys reach (window 4, S = 6) makes transformers
 * build a mask, which flash cannot take: efficient (fp16, head dim 16).
 * L = S = 6: q, k, v copies 2*4*6*16*2 = 1536 each, output 1536,
 * log_sumexp [2, 4, 32] float32 1024, and pad_bias<8>'s copy of the mask
 * [1, 1, 6, 8] fp16 (96, S = 6 not being a multiple of 8): 7264. */
static void test_window_efficient(void)
{
    struct t_model t;
    LOADK(&t, QKV("6", "64", "64", "4, 16", "4, 16") ATT("'window': 4"), MEMEST_F16,
          MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "att"), 7264);
    CHECK_STR_EQ(t_strides(&t, "att", 0), "[384, 16, 64, 1]");
    t_free(&t);
}

/* The mask and a head dim of 12 (not a multiple of 8) leave the math
 * kernel to auto. fp16 is upcast to float32: q * sqrt(scale) and
 * k^T * sqrt(scale) [2, 4, 8, 12] float32 (3072 each), _safe_softmax's
 * result 512 * 4 = 2048, the float32 copy of v 3072: 11264. MACs: forward
 * 512 * 24 = 12288; backward both operands of both bmm's 24576. */
static void test_math(void)
{
    struct t_model t;
    LOADK(&t, QKV("8", "48", "48", "4, 12", "4, 12") ATT("'window': 4"), MEMEST_F16,
          MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "att"), 11264);
    CHECK(t_fwd(&t, "att") == 12288.0);
    CHECK(t_bwd(&t, "att") == 24576.0);
    t_free(&t);
}

/* Math forced, float32, dropout 0.1 (no upcast): q and k scaled (4096
 * each), the softmax 2048, the bool mask 512 and the dropout output 2048,
 * v's contiguous copy 4096: 16896. With GQA through enable_gqa (fp16,
 * Hkv = 2): repeat_interleave of the float32 k and v to 4 heads; saved q
 * and k scaled (4096 each), softmax 2048, the repeated v 4096: 14336. */
static void test_math_variants(void)
{
    struct t_model t;
    LOADK(&t, MHA ATT("'is_causal': true, 'dropout_p': 0.1, 'backend': 'math'"), MEMEST_F32,
          MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "att"), 16896);
    t_free(&t);
    LOADK(&t, GQA ATT("'is_causal': true, 'enable_gqa': true"), MEMEST_F16, MEMEST_ATTN_MATH);
    CHECK_EQ_U64(t_saved(&t, "att"), 14336);
    t_free(&t);
}

/* cuDNN (--attention cudnn): q, k, v copies 6144, output 2048, logsumexp
 * [2, 4, 8, 1] float32 256, philox seed and offset (0-d int64 on the GPU,
 * 8 each): 8464. */
static void test_cudnn(void)
{
    struct t_model t;
    LOADK(&t, MHA ATT("'is_causal': true"), MEMEST_F16, MEMEST_ATTN_CUDNN);
    CHECK_EQ_U64(t_saved(&t, "att"), 8464);
    t_free(&t);
}

/* contiguous false (GPT2SdpaAttention, BertSdpaSelfAttention and
 * OPTSdpaAttention pass their transposed views as they are): flash, fp16,
 * saves the inputs xq, xk, xv themselves (2048 each), its output (2048)
 * and logsumexp (256): 8448 as before, but the output is allocated like
 * q, [2, 8, 4, 16] memory seen transposed (strides [512, 16, 64, 1]), so
 * the caller's transpose(1, 2).contiguous() is the output's storage.
 * cuDNN allocates like q too (8464 as in test_cudnn). */
#define MERGE                                                                                  \
    "{'name': 'att', 'type': 'scaled_dot_product_attention', 'inputs': ['q', 'k', 'v'], "      \
    "'is_causal': true, 'contiguous': false},"                                                  \
    "{'name': 'tr', 'type': 'transpose', 'dim0': 1, 'dim1': 2},"                               \
    "{'name': 'merged', 'type': 'contiguous'}]}"
static void test_no_contiguous(void)
{
    struct t_model t;
    LOADK(&t, MHA MERGE, MEMEST_F16, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "att"), 8448);
    CHECK(t_saves_storage(&t, "att", t_storage(&t, "xq", 0)));
    CHECK(t_saves_storage(&t, "att", t_storage(&t, "xv", 0)));
    CHECK_STR_EQ(t_strides(&t, "att", 0), "[512, 16, 64, 1]");
    CHECK(t_storage(&t, "merged", 0) == t_storage(&t, "att", 0));
    t_free(&t);
    LOADK(&t, MHA MERGE, MEMEST_F16, MEMEST_ATTN_CUDNN);
    CHECK_EQ_U64(t_saved(&t, "att"), 8464);
    CHECK(t_storage(&t, "merged", 0) == t_storage(&t, "att", 0));
    t_free(&t);
    /* with .contiguous() (the default), flash's output is contiguous and
     * the merge copies it */
    LOADK(&t, MHA ATT("'is_causal': true"), MEMEST_F16, MEMEST_ATTN_AUTO);
    CHECK(!t_saves_storage(&t, "att", t_storage(&t, "xq", 0)));
    t_free(&t);
}

/* Without gradients (inputs that do not require grad) nothing is saved. */
static void test_no_grad(void)
{
    struct t_model t;
    LOADK(&t,
          "{'inputs': [{'name': 'q', 'shape': [4, 8, 16]}, {'name': 'k', 'shape': [4, 8, 16]},"
          "            {'name': 'v', 'shape': [4, 8, 16]}],"
          " 'layers': [" ATT("'dropout_p': 0.1"),
          MEMEST_F16, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_nsaved(&t, "att"), 0);
    CHECK(t_bwd(&t, "att") == 0.0);
    t_free(&t);
}

static const char *err(struct t_model *t, const char *json, enum memest_dtype dt, uint8_t att)
{
    if (load(t, json, dt, att) == 0)
        snprintf(t->msg, sizeof t->msg, "(no error)");
    return t->msg;
}

/* gpt-oss's attention sinks: a fourth input, a [Hq] parameter; eager (auto
 * takes it), fp16, causal, softmax in the dtype (softmax_fp32 false):
 *   q and k^T copies                                          2048 + 2048
 *   softmax over cat([w, sinks], -1) - max: [2, 4, 8, 9] fp16        1152
 *   max's int64 indices [2, 4, 8, 1]                                  512
 *   v copy (the matmul reads the slice probs[..., :-1])              2048
 *   total                                                            7808
 * Workspace: the masked scores (512 * 2) and the cat with its
 * max-subtracted copy (2 * 576 * 2) = 3328, and the causal mask [1, 1, 8,
 * 8] fp16 (128). */
#define SINKS(args)                                                                                "{'name': 'sinks', 'type': 'parameter', 'shape': [4]},"                                        "{'name': 'att', 'type': 'scaled_dot_product_attention', 'inputs': ['q', 'k', 'v', "           "'sinks'], " args "}]}"
static void test_sinks(void)
{
    struct t_model t;
    LOADK(&t, MHA SINKS("'is_causal': true, 'softmax_fp32': false"), MEMEST_F16, MEMEST_ATTN_AUTO);
    CHECK_STR_EQ(t_shape(&t, "att", 0), "[2, 4, 8, 16]");
    CHECK_EQ_U64(t_saved(&t, "att"), 7808);
    CHECK_EQ_U64(t_info(&t, "att")->work_bytes, 3328 + 128);
    t_free(&t);
    CHECK_CONTAINS(err(&t, MHA SINKS("'is_causal': true"), MEMEST_F16, MEMEST_ATTN_FLASH),
                   "attention sinks run only in the eager backend");
    t_free(&t);
    CHECK_CONTAINS(err(&t,
                       MHA "{'name': 'sinks', 'type': 'parameter', 'shape': [3]},"
                           "{'name': 'att', 'type': 'scaled_dot_product_attention', "
                           "'inputs': ['q', 'k', 'v', 'sinks']}]}",
                       MEMEST_F16, MEMEST_ATTN_AUTO),
                   "the attention sinks (input 4) must be [4], one per query head");
    t_free(&t);
}

static void test_errors(void)
{
    struct t_model t;
    CHECK_CONTAINS(err(&t, MHA ATT("'is_causal': true"), MEMEST_F32, MEMEST_ATTN_FLASH),
                   "node 'att'");
    CHECK_CONTAINS(t.msg, "the flash attention kernel cannot run this case: flash attention "
                          "needs float16 or bfloat16 inputs");
    t_free(&t);
    CHECK_CONTAINS(err(&t,
                       QKV("8", "1056", "1056", "4, 264", "4, 264")
                           ATT("'backend': 'flash'"),
                       MEMEST_F16, MEMEST_ATTN_AUTO),
                   "flash attention supports head dims up to 256");
    t_free(&t);
    CHECK_CONTAINS(err(&t, MHA ATT("'softcap': 30, 'backend': 'efficient'"), MEMEST_F16,
                       MEMEST_ATTN_AUTO),
                   "softcap (attention logit soft-capping) runs only in the eager backend");
    t_free(&t);
    CHECK_CONTAINS(err(&t, GQA ATT("'enable_gqa': true"), MEMEST_F16, MEMEST_ATTN_EFFICIENT),
                   "memory-efficient attention does not support enable_gqa");
    t_free(&t);
    CHECK_CONTAINS(err(&t, QKV("8", "64", "48", "4, 16", "3, 16") ATT("'is_causal': false"), MEMEST_F16,
                       MEMEST_ATTN_AUTO),
                   "the key/value heads (3) must divide the query heads (4)");
    t_free(&t);
    CHECK_CONTAINS(err(&t,
                       "{'inputs': [{'name': 'q', 'shape': [8, 16]}, {'name': 'k', 'shape': [8, "
                       "16]}, {'name': 'v', 'shape': [8, 16]}], 'layers': [" ATT("'is_causal': false"),
                       MEMEST_F16, MEMEST_ATTN_AUTO),
                   "expects 4-D q [B, Hq, L, D]");
    t_free(&t);
}

int main(void)
{
    test_eager();
    test_eager_batch_loop();
    test_eager_variants();
    test_eager_gqa_contiguous();
    test_flash();
    test_flash_gqa();
    test_flash_pad();
    test_efficient();
    test_window_efficient();
    test_math();
    test_math_variants();
    test_cudnn();
    test_no_contiguous();
    test_no_grad();
    test_sinks();
    test_errors();
    return CHECK_DONE();
}
