/* test_ops_llm.c - the LLM ops (ops_llm.c, ops_llm_rotary.c) and softmax's
 * dtype: outputs, parameters, buffers, the bytes saved for backward, the
 * forward workspace and the backward scratch, eager (the transformers
 * v4.48.0 decompositions as PyTorch 2.x records them) and fused (Liger's
 * kernels), in float32 and bfloat16. Every figure is worked out by hand in
 * the comment above its check. */
#include "check.h"
#include "memest/ops.h"
#include "ops_test.h"

#define F32 MEMEST_F32
#define BF16 MEMEST_BF16

static uint64_t t_work(const struct t_model *t, const char *name)
{
    return t_info(t, name)->work_bytes;
}
static uint64_t t_bwork(const struct t_model *t, const char *name)
{
    return t_info(t, name)->bwd_work_bytes;
}
static enum memest_dtype t_dtype(const struct t_model *t, const char *name, uint32_t k)
{
    return (enum memest_dtype)t_out(t, name, k)->dtype;
}
static uint8_t t_grad_kind(const struct t_model *t, const char *name, uint32_t i)
{
    return t->r.ins[t_info(t, name)->in_first + i].grad;
}

/* x [2, 8, 16] (batch 2) requiring grad, then an RMSNorm */
#define RMS_JSON(style, impl)                                                                   \
    "{'inputs': [{'name': 'x', 'shape': [8, 16], 'requires_grad': true}],"                     \
    " 'layers': [{'name': 'n', 'type': 'rmsnorm', 'style': '" style "', 'impl': '" impl "'}]}"

/* LlamaRMSNorm on float32 [2, 8, 16] (256 elements, 16 rows):
 *   h = x.to(float32) is x itself; pow saves x: 256*4 = 1024;
 *   rsqrt saves r [2, 8, 1] float32: 16*4 = 64;
 *   h * r saves h (x) and r; n32 = h * r is n (no .to), saved by
 *     weight * n: 1024.  Total 2112, 3 storages; weight 16.
 * Forward workspace, in order: pow(2) 1024, the variance [2, 8, 1] 64
 * (a local), pow freed, + eps 64, freed after rsqrt: peak 1024 + 64 = 1088.
 * Backward scratch: 4 float32 [2, 8, 16] (4096) less x's gradient (1024):
 * 3072. */
static void test_rmsnorm_llama_f32(void)
{
    struct t_model t;
    LOAD(&t, RMS_JSON("llama", "eager"), 2);
    CHECK_STR_EQ(t_shape(&t, "n", 0), "[2, 8, 16]");
    CHECK_EQ_INT(t_dtype(&t, "n", 0), F32);
    CHECK_EQ_U64(t_param(&t, "n", "weight"), 16);
    CHECK_EQ_U64(t_saved(&t, "n"), 1024 + 64 + 1024);
    CHECK_EQ_U64(t_nsaved(&t, "n"), 3);
    CHECK(t_saves_storage(&t, "n", t_storage(&t, "x", 0)));
    CHECK_EQ_U64(t_work(&t, "n"), 1088);
    CHECK_EQ_U64(t_bwork(&t, "n"), 3072);
    t_free(&t);
    /* impl auto without --fused rmsnorm is eager: the same */
    LOAD(&t, RMS_JSON("llama", "auto"), 2);
    CHECK_EQ_U64(t_saved(&t, "n"), 2112);
    t_free(&t);
}

/* The same in bfloat16 (input and weight bf16):
 *   h = x.to(float32) is a new float32 copy, saved by pow and mul: 1024;
 *   r 64; n32 float32 is a temporary; n = n32.to(bf16) saved by
 *     weight * n: 256*2 = 512.  x itself is not saved: 1600.
 * Workspace: pow 1024 + variance 64 = 1088 at the mean; later variance 64 +
 * n32 1024 = 1088 again. Backward: 4096 - x's bf16 gradient 512 = 3584. */
static void test_rmsnorm_llama_bf16(void)
{
    struct t_model t;
    LOAD_OPTS(&t, RMS_JSON("llama", "eager"), .batch = 2, .dtype = BF16);
    CHECK_EQ_INT(t_dtype(&t, "n", 0), BF16);
    CHECK_EQ_U64(t_saved(&t, "n"), 1024 + 64 + 512);
    CHECK(!t_saves_storage(&t, "n", t_storage(&t, "x", 0)));
    CHECK_EQ_U64(t_work(&t, "n"), 1088);
    CHECK_EQ_U64(t_bwork(&t, "n"), 3584);
    t_free(&t);
}

/* Under autocast the residual stream is float32 and a bf16 input comes from
 * a bf16 op: here x (float32 run) .to(bfloat16) then LlamaRMSNorm with its
 * float32 weight: saves h (float32 copy, 1024), r (64), n (bf16, 512) =
 * 1600; the result is promote(float32 weight, bf16) = float32. */
static void test_rmsnorm_llama_mixed(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [8, 16], 'requires_grad': true}],"
         " 'layers': [{'name': 'h', 'type': 'to', 'dtype': 'bfloat16'},"
         "            {'name': 'n', 'type': 'rmsnorm'}]}",
         2);
    CHECK_EQ_INT(t_dtype(&t, "h", 0), BF16);
    CHECK_EQ_INT(t_dtype(&t, "n", 0), F32);
    CHECK_EQ_U64(t_saved(&t, "n"), 1600);
    t_free(&t);
}

/* Only the weight trains (x needs no gradient): pow, rsqrt and h * r record
 * nothing; weight * n saves n (float32, 1024). Workspace: pow 1024 +
 * variance 64 = 1088. Backward: the product grad * n (1024) before its sum.
 * A frozen weight and an input without grad: nothing recorded at all. */
static void test_rmsnorm_weight_only(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [8, 16]}],"
         " 'layers': [{'name': 'n', 'type': 'rmsnorm'}]}",
         2);
    CHECK_EQ_U64(t_saved(&t, "n"), 1024);
    CHECK(!t_saves_storage(&t, "n", t_storage(&t, "x", 0)));
    CHECK_EQ_U64(t_work(&t, "n"), 1088);
    CHECK_EQ_U64(t_bwork(&t, "n"), 1024);
    t_free(&t);
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [8, 16]}],"
         " 'layers': [{'name': 'n', 'type': 'rmsnorm', 'trainable': false}]}",
         2);
    CHECK_EQ_U64(t_saved(&t, "n"), 0);
    CHECK(!t_info(&t, "n")->needs_grad);
    /* every intermediate is transient: at h * r, the variance (64), r (64)
     * and n32 (1024) are live: 1152 (more than pow + variance, 1088) */
    CHECK_EQ_U64(t_work(&t, "n"), 1152);
    t_free(&t);
}

/* GemmaRMSNorm on float32 [2, 8, 16]: saves x (h, 1024), r (64), n32 =
 * h * r (1024, for the weight's gradient) and w1 = 1 + weight.float()
 * [16] float32 (64, for x's gradient): 2176. In bfloat16: h is a float32
 * copy (1024) instead of x, the rest the same: 2176; the result is bf16
 * (.type_as(x)). Workspace, bf16: pow 1024 + mean 64, then later n32 is
 * saved and the float32 product (1024) precedes .type_as, with the weight's
 * float32 copy [16] (64) freed before: 1088. */
static void test_rmsnorm_gemma(void)
{
    struct t_model t;
    LOAD(&t, RMS_JSON("gemma", "eager"), 2);
    CHECK_EQ_INT(t_dtype(&t, "n", 0), F32);
    CHECK_EQ_U64(t_param(&t, "n", "weight"), 16);
    CHECK_EQ_U64(t_saved(&t, "n"), 1024 + 64 + 1024 + 64);
    CHECK(t_saves_storage(&t, "n", t_storage(&t, "x", 0)));
    t_free(&t);
    LOAD_OPTS(&t, RMS_JSON("gemma", "eager"), .batch = 2, .dtype = BF16);
    CHECK_EQ_INT(t_dtype(&t, "n", 0), BF16);
    CHECK_EQ_U64(t_saved(&t, "n"), 2176);
    CHECK(!t_saves_storage(&t, "n", t_storage(&t, "x", 0)));
    CHECK_EQ_U64(t_work(&t, "n"), 1088);
    t_free(&t);
}

/* Liger's fused RMSNorm saves X and RSTD [16] float32 (64): float32 1024 +
 * 64 = 1088, bf16 512 + 64 = 576; the output has x's dtype; x's gradient is
 * written into the output's (in_place); the partial dW is float32
 * [132, 16]: 132*16*4 = 8448 bytes of backward scratch. impl "auto" follows
 * the run's --fused rmsnorm bit. */
static void test_rmsnorm_fused(void)
{
    struct t_model t;
    LOAD(&t, RMS_JSON("llama", "fused"), 2);
    CHECK_EQ_U64(t_saved(&t, "n"), 1024 + 64);
    CHECK(t_saves_storage(&t, "n", t_storage(&t, "x", 0)));
    CHECK_EQ_U64(t_work(&t, "n"), 0);
    CHECK_EQ_U64(t_bwork(&t, "n"), 8448);
    CHECK_EQ_INT(t_grad_kind(&t, "n", 0), MEMEST_GRAD_SAME);
    t_free(&t);
    LOAD_OPTS(&t, RMS_JSON("gemma", "auto"), .batch = 2, .dtype = BF16,
           .fused = MEMEST_FUSED_RMSNORM);
    CHECK_EQ_U64(t_saved(&t, "n"), 512 + 64);
    CHECK_EQ_INT(t_dtype(&t, "n", 0), BF16);
    t_free(&t);
    /* the bit for another kernel leaves it eager (llama bf16: 1600) */
    LOAD_OPTS(&t, RMS_JSON("llama", "auto"), .batch = 2, .dtype = BF16,
           .fused = MEMEST_FUSED_SWIGLU);
    CHECK_EQ_U64(t_saved(&t, "n"), 1600);
    t_free(&t);
    /* impl eager wins over the bit */
    LOAD_OPTS(&t, RMS_JSON("llama", "eager"), .batch = 2, .dtype = F32,
           .fused = MEMEST_FUSED_RMSNORM);
    CHECK_EQ_U64(t_saved(&t, "n"), 2112);
    t_free(&t);
}

static void test_rmsnorm_errors(void)
{
    struct t_model t;
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [8, 16]}],"
                           " 'layers': [{'type': 'rmsnorm', 'normalized_shape': 32}]}",
                           2),
                   "normalized_shape is 32 but the input's last dimension is 16");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [8], 'dtype': 'int64'}],"
                           " 'layers': [{'type': 'rmsnorm'}]}",
                           2),
                   "rmsnorm");
    t_free(&t);
    /* elementwise_affine false: no parameter; float32 x: saves x and r
     * (1024 + 64), the output is n32 itself */
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [8, 16], 'requires_grad': true}],"
         " 'layers': [{'name': 'n', 'type': 'rmsnorm', 'elementwise_affine': false}]}",
         2);
    CHECK_EQ_U64(t_params_total(&t, "n"), 0);
    CHECK_EQ_U64(t_saved(&t, "n"), 1088);
    t_free(&t);
}

/* gate and up [2, 8, 32] (512 elements) from two inputs requiring grad */
#define ACT_JSON(act, impl)                                                                     \
    "{'inputs': [{'name': 'g', 'shape': [8, 32], 'requires_grad': true},"                      \
    "            {'name': 'u', 'shape': [8, 32], 'requires_grad': true}],"                     \
    " 'layers': [{'name': 'm', 'type': 'act_mul', 'inputs': ['g', 'u'], 'activation': '" act  \
    "', 'impl': '" impl "'}]}"

/* SwiGLU eager, float32: silu saves gate (2048), the product saves up
 * (2048) and a = silu(gate) (2048): 6144. Fused (Liger): gate and up only,
 * 4096. bf16: 3072 and 2048. Backward: MulBackward0 makes a's gradient
 * (grad * up) and up's, the engine frees grad, SiluBackward0 makes gate's:
 * at most 3 * 2048 live, which the node's own gradients (grad, gate's,
 * up's) already are: no scratch. A bfloat16 gate times a float32 up: a's
 * gradient is float32 (2048), gate's bfloat16 (1024): the live
 * {grad, ga, gu} = 6144 exceed {grad, gg, gu} = 5120 by 1024 of scratch. */
static void test_act_mul(void)
{
    struct t_model t;
    LOAD(&t, ACT_JSON("silu", "eager"), 2);
    CHECK_STR_EQ(t_shape(&t, "m", 0), "[2, 8, 32]");
    CHECK_EQ_U64(t_saved(&t, "m"), 6144);
    CHECK(t_saves_storage(&t, "m", t_storage(&t, "g", 0)));
    CHECK(t_saves_storage(&t, "m", t_storage(&t, "u", 0)));
    CHECK_EQ_U64(t_work(&t, "m"), 0);
    CHECK_EQ_U64(t_bwork(&t, "m"), 0);
    t_free(&t);
    LOAD(&t,
         "{'inputs': [{'name': 'g', 'shape': [8, 32], 'requires_grad': true},"
         "            {'name': 'u', 'shape': [8, 32], 'requires_grad': true}],"
         " 'layers': [{'name': 'gb', 'type': 'to', 'inputs': ['g'], 'dtype': 'bfloat16'},"
         "            {'name': 'm', 'type': 'act_mul', 'inputs': ['gb', 'u'], 'impl': 'eager'}]}",
         2);
    CHECK_EQ_INT(t_dtype(&t, "m", 0), F32);
    CHECK_EQ_U64(t_bwork(&t, "m"), 1024);
    t_free(&t);
    LOAD(&t, ACT_JSON("gelu_tanh", "fused"), 2);
    CHECK_EQ_U64(t_saved(&t, "m"), 4096);
    t_free(&t);
    LOAD_OPTS(&t, ACT_JSON("silu", "auto"), .batch = 2, .dtype = BF16,
           .fused = MEMEST_FUSED_SWIGLU);
    CHECK_EQ_U64(t_saved(&t, "m"), 2048);
    CHECK_EQ_INT(t_dtype(&t, "m", 0), BF16);
    t_free(&t);
    LOAD_OPTS(&t, ACT_JSON("gelu", "eager"), .batch = 2, .dtype = BF16);
    CHECK_EQ_U64(t_saved(&t, "m"), 3072);
    t_free(&t);
    /* auto with the bit keeps the exact GELU eager (Liger has only tanh) */
    LOAD_OPTS(&t, ACT_JSON("gelu", "auto"), .batch = 2, .dtype = F32, .fused = MEMEST_FUSED_SWIGLU);
    CHECK_EQ_U64(t_saved(&t, "m"), 6144);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, ACT_JSON("gelu", "fused"), 2), "tanh approximation");
    t_free(&t);
}

/* Only gate requires grad: silu saves gate, the product up (a's gradient
 * needs it): 4096; a is not saved, a transient of 2048. Only up requires
 * grad: the product saves a (2048), silu records nothing. */
static void test_act_mul_partial(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'g', 'shape': [8, 32], 'requires_grad': true},"
         "            {'name': 'u', 'shape': [8, 32]}],"
         " 'layers': [{'name': 'm', 'type': 'act_mul', 'inputs': ['g', 'u']}]}",
         2);
    CHECK_EQ_U64(t_saved(&t, "m"), 4096);
    CHECK_EQ_U64(t_work(&t, "m"), 2048);
    t_free(&t);
    LOAD(&t,
         "{'inputs': [{'name': 'g', 'shape': [8, 32]},"
         "            {'name': 'u', 'shape': [8, 32], 'requires_grad': true}],"
         " 'layers': [{'name': 'm', 'type': 'act_mul', 'inputs': ['g', 'u']}]}",
         2);
    CHECK_EQ_U64(t_saved(&t, "m"), 2048);
    CHECK(!t_saves_storage(&t, "m", t_storage(&t, "g", 0)));
    CHECK_EQ_U64(t_bwork(&t, "m"), 0);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'g', 'shape': [8, 32]},"
                           "            {'name': 'u', 'shape': [8, 16]}],"
                           " 'layers': [{'type': 'act_mul', 'inputs': ['g', 'u']}]}",
                           2),
                   "gate and up must have the same shape");
    t_free(&t);
}

/* hidden (B=2, S=8, H=64), rotary dim 16: cos and sin [1, 8, 16] float32
 * (512 bytes each), no grad; inv_freq [8] float32, a buffer; nothing saved.
 * Workspace, U = 8*16*4 = 512: at cos * scaling freqs (256) + emb (512) +
 * cos + sin + scaled cos (3 * 512) = 4.5 U = 2304 for bf16 outputs; a
 * float32 x makes the scaled tables the outputs: 3.5 U = 1792; plus the
 * float32 position ids [1, 1, 8] (32): 1824 and 2336. */
#define ROPE_JSON                                                                               \
    "{'inputs': [{'name': 'x', 'shape': [8, 64], 'requires_grad': true},"                      \
    "            {'name': 'q', 'shape': [4, 8, 16], 'requires_grad': true}],"                  \
    " 'layers': [{'name': 'rope', 'type': 'rotary_embedding', 'inputs': ['x'], 'dim': 16},"    \
    "            {'name': 'qe', 'type': 'apply_rotary', 'inputs': ['q', 'rope:0', 'rope:1']}]}"

static void test_rotary_embedding(void)
{
    struct t_model t;
    LOAD(&t, ROPE_JSON, 2);
    CHECK_EQ_U64(t_nout(&t, "rope"), 2);
    CHECK_STR_EQ(t_shape(&t, "rope", 0), "[1, 8, 16]");
    CHECK_STR_EQ(t_shape(&t, "rope", 1), "[1, 8, 16]");
    CHECK(!t_out(&t, "rope", 0)->requires_grad);
    CHECK(!t_out(&t, "rope", 1)->requires_grad);
    CHECK_EQ_U64(t_buffer(&t, "rope", "inv_freq"), 8);
    CHECK_EQ_U64(t_saved(&t, "rope"), 0);
    CHECK_EQ_INT(t_grad_kind(&t, "rope", 0), MEMEST_GRAD_NONE);
    CHECK_EQ_U64(t_work(&t, "rope"), 1824);
    t_free(&t);
    LOAD_OPTS(&t, ROPE_JSON, .batch = 2, .dtype = BF16);
    CHECK_EQ_INT(t_dtype(&t, "rope", 0), BF16);
    CHECK_EQ_U64(t_work(&t, "rope"), 2336);
    /* the buffer stays float32 */
    CHECK_EQ_INT(t.r.buffers[t_info(&t, "rope")->buffer_first].dtype, F32);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [8, 64]}],"
                           " 'layers': [{'type': 'rotary_embedding', 'dim': 15}]}",
                           2),
                   "dim must be even");
    t_free(&t);
}

/* q [2, 4, 8, 16] (1024 elements, 4096 bytes) requiring grad: eager saves
 * cos and sin, the rotary_embedding outputs themselves (512 + 512 = 1024).
 * Workspace: x*cos (4096) + cat (4096) + rot*sin (4096) = 12288 (the other
 * moment, x*cos + -x2 (2048) + cat, is 10240). Backward scratch: grad*cos,
 * grad*sin and -half: 4096 * 2.5 = 10240. */
static void test_apply_rotary(void)
{
    struct t_model t;
    LOAD(&t, ROPE_JSON, 2);
    CHECK_STR_EQ(t_shape(&t, "qe", 0), "[2, 4, 8, 16]");
    CHECK_EQ_U64(t_saved(&t, "qe"), 1024);
    CHECK(t_saves_storage(&t, "qe", t_storage(&t, "rope", 0)));
    CHECK(t_saves_storage(&t, "qe", t_storage(&t, "rope", 1)));
    CHECK_EQ_U64(t_work(&t, "qe"), 12288);
    CHECK_EQ_U64(t_bwork(&t, "qe"), 10240);
    t_free(&t);
    /* bf16 q with float32 tables (autocast's case): the result is float32;
     * workspace with no = 4096 (f32), nx = 2048 (bf16): max(4096 + 1024 +
     * 2048, 8192 + 2048) = 10240 */
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [8, 64]},"
         "            {'name': 'q', 'shape': [4, 8, 16], 'requires_grad': true}],"
         " 'layers': [{'name': 'rope', 'type': 'rotary_embedding', 'inputs': ['x'], 'dim': 16},"
         "            {'name': 'qb', 'type': 'to', 'inputs': ['q'], 'dtype': 'bfloat16'},"
         "            {'name': 'qe', 'type': 'apply_rotary', 'inputs': ['qb', 'rope:0', "
         "'rope:1']}]}",
         2);
    CHECK_EQ_INT(t_dtype(&t, "qe", 0), F32);
    CHECK_EQ_U64(t_work(&t, "qe"), 10240);
    t_free(&t);
}

/* gpt-oss's rotary: rotary_embedding cat false gives half-width tables
 * [1, 8, 8] (256 bytes each in float32; inv_freq [8] still); workspace
 * freqs and the scaled tables: 2 tables for a float32 x (512), 4 for bf16
 * (1024), plus the position ids (32). apply_rotary form "halves" on q [2,
 * 4, 8, 16] float32 (4096 bytes) saves cos and sin (512); workspace
 * first_ with second_ and its two products: 2 * 4096. */
#define ROPE_HALVES_JSON(DIM, RD)                                                               \
    "{'inputs': [{'name': 'x', 'shape': [8, 64]},"                                             \
    "            {'name': 'q', 'shape': [4, 8, 16], 'requires_grad': true}],"                  \
    " 'layers': [{'name': 'rope', 'type': 'rotary_embedding', 'inputs': ['x'], 'dim': " DIM ","   \
    "             'cat': false},"                                                              \
    "            {'name': 'qe', 'type': 'apply_rotary', 'inputs': ['q', 'rope:0', 'rope:1'],"   \
    "             'form': 'halves'" RD "}]}"
static void test_apply_rotary_halves(void)
{
    struct t_model t;
    LOAD(&t, ROPE_HALVES_JSON("16", ""), 2);
    CHECK_STR_EQ(t_shape(&t, "rope", 0), "[1, 8, 8]");
    CHECK_EQ_U64(t_buffer(&t, "rope", "inv_freq"), 8);
    CHECK_EQ_U64(t_work(&t, "rope"), 512 + 32);
    CHECK_STR_EQ(t_shape(&t, "qe", 0), "[2, 4, 8, 16]");
    CHECK_EQ_U64(t_saved(&t, "qe"), 512);
    CHECK(t_saves_storage(&t, "qe", t_storage(&t, "rope", 0)));
    CHECK_EQ_U64(t_work(&t, "qe"), 8192);
    t_free(&t);
    LOAD_OPTS(&t, ROPE_HALVES_JSON("16", ""), .batch = 2, .dtype = BF16);
    CHECK_EQ_U64(t_work(&t, "rope"), 1024 + 32);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, ROPE_HALVES_JSON("8", ", 'rotary_dim': 8"), 2),
                   "form \"halves\" rotates the whole head");
    t_free(&t);
    /* full-width tables (cat true) are not the halves' */
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [8, 64]},"
                           "            {'name': 'q', 'shape': [4, 8, 16]}],"
                           " 'layers': [{'name': 'rope', 'type': 'rotary_embedding', "
                           "'inputs': ['x'], 'dim': 16},"
                           "            {'type': 'apply_rotary', 'inputs': ['q', 'rope:0', "
                           "'rope:1'], 'form': 'halves'}]}",
                           2),
                   "cos must be [1, S, rotary_dim] = [1, 8, 8]");
    t_free(&t);
}

/* Partial rotary: dim 8 of head 16 (GPT-NeoX, Phi): cos, sin [1, 8, 8]
 * (256 each): saves 512. The rotated part has 512 elements (2048 bytes):
 * workspace max(2048 + 1024 + 2048, 4096 + 2048) = 6144. */
static void test_apply_rotary_partial(void)
{
    struct t_model t;
    const char *json =
        "{'inputs': [{'name': 'x', 'shape': [8, 64]},"
        "            {'name': 'q', 'shape': [4, 8, 16], 'requires_grad': true}],"
        " 'layers': [{'name': 'rope', 'type': 'rotary_embedding', 'inputs': ['x'], 'dim': 8},"
        "            {'name': 'qe', 'type': 'apply_rotary', 'inputs': ['q', 'rope:0', 'rope:1'],"
        "             'rotary_dim': 8, 'impl': 'auto'}]}";
    LOAD_OPTS(&t, json, .batch = 2, .dtype = F32, .fused = MEMEST_FUSED_ROTARY);
    CHECK_STR_EQ(t_shape(&t, "qe", 0), "[2, 4, 8, 16]");
    CHECK_EQ_U64(t_saved(&t, "qe"), 512);
    CHECK_EQ_U64(t_work(&t, "qe"), 6144);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [8, 64]},"
                           "            {'name': 'q', 'shape': [4, 8, 16]}],"
                           " 'layers': [{'name': 'rope', 'type': 'rotary_embedding', "
                           "'inputs': ['x'], 'dim': 8},"
                           "            {'type': 'apply_rotary', 'inputs': ['q', 'rope:0', "
                           "'rope:1'], 'rotary_dim': 8, 'impl': 'fused'}]}",
                           2),
                   "rotates the whole head");
    t_free(&t);
    /* default rotary_dim = head_dim 16 against 8-wide tables */
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [8, 64]},"
                           "            {'name': 'q', 'shape': [4, 8, 16]}],"
                           " 'layers': [{'name': 'rope', 'type': 'rotary_embedding', "
                           "'inputs': ['x'], 'dim': 8},"
                           "            {'type': 'apply_rotary', 'inputs': ['q', 'rope:0', "
                           "'rope:1']}]}",
                           2),
                   "cos must be [1, S, rotary_dim] = [1, 8, 16]");
    t_free(&t);
}

/* Llama 4's complex form: rotary_embedding complex gives one float32 [1, 8,
 * 16] table (the complex64 [1, 8, 8] freqs_cis as its view_as_real, 512
 * bytes), no grad; workspace freqs (256) + ones_like (256) + the polar result
 * (512) + the float32 position ids (32) = 1056. apply_rotary form complex on
 * q [2, 8, 4, 16] (the view before the transpose, 1024 elements) saves the
 * table itself (512); float32 q: no workspace (.float() and type_as return
 * their input); bfloat16 q: its float32 copy and the complex product, 8 bytes
 * an element (8192), forward and backward. */
#define ROPE_COMPLEX_JSON(DT)                                                                   \
    "{'inputs': [{'name': 'x', 'shape': [8, 64]},"                                             \
    "            {'name': 'p', 'shape': [8, 4, 16], 'requires_grad': true}],"                  \
    " 'layers': [{'name': 'rope', 'type': 'rotary_embedding', 'inputs': ['x'], 'dim': 16,"     \
    "             'complex': true},"                                                            \
    "            {'name': 'q', 'type': 'to', 'inputs': ['p'], 'dtype': '" DT "'},"             \
    "            {'name': 'qe', 'type': 'apply_rotary', 'inputs': ['q', 'rope'],"              \
    "             'form': 'complex'}]}"

static void test_apply_rotary_complex(void)
{
    struct t_model t;
    LOAD(&t, ROPE_COMPLEX_JSON("float32"), 2);
    CHECK_EQ_U64(t_nout(&t, "rope"), 1);
    CHECK_STR_EQ(t_shape(&t, "rope", 0), "[1, 8, 16]");
    CHECK_EQ_INT(t_dtype(&t, "rope", 0), F32);
    CHECK(!t_out(&t, "rope", 0)->requires_grad);
    CHECK_EQ_U64(t_buffer(&t, "rope", "inv_freq"), 8);
    CHECK_EQ_U64(t_work(&t, "rope"), 1056);
    CHECK_STR_EQ(t_shape(&t, "qe", 0), "[2, 8, 4, 16]");
    CHECK_EQ_U64(t_saved(&t, "qe"), 512);
    CHECK(t_saves_storage(&t, "qe", t_storage(&t, "rope", 0)));
    CHECK_EQ_U64(t_work(&t, "qe"), 0);
    CHECK_EQ_U64(t_bwork(&t, "qe"), 0);
    t_free(&t);
    LOAD(&t, ROPE_COMPLEX_JSON("bfloat16"), 2);
    CHECK_EQ_INT(t_dtype(&t, "rope", 0), F32);
    CHECK_EQ_INT(t_dtype(&t, "qe", 0), BF16);
    CHECK_EQ_U64(t_saved(&t, "qe"), 512);
    CHECK_EQ_U64(t_work(&t, "qe"), 8192);
    CHECK_EQ_U64(t_bwork(&t, "qe"), 8192);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [8, 64]},"
                           "            {'name': 'q', 'shape': [8, 4, 16]}],"
                           " 'layers': [{'name': 'rope', 'type': 'rotary_embedding', "
                           "'inputs': ['x'], 'dim': 16},"
                           "            {'type': 'apply_rotary', 'inputs': ['q', 'rope:0', "
                           "'rope:1'], 'form': 'complex'}]}",
                           2),
                   "takes x and freqs_cis (2 inputs)");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [8, 64]},"
                           "            {'name': 'q', 'shape': [8, 4, 32]}],"
                           " 'layers': [{'name': 'rope', 'type': 'rotary_embedding', "
                           "'inputs': ['x'], 'dim': 16, 'complex': true},"
                           "            {'type': 'apply_rotary', 'inputs': ['q', 'rope'], "
                           "'form': 'complex'}]}",
                           2),
                   "freqs_cis must be rotary_embedding's complex table");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [8, 64]},"
                           "            {'name': 'q', 'shape': [4, 8, 16]}],"
                           " 'layers': [{'name': 'rope', 'type': 'rotary_embedding', "
                           "'inputs': ['x'], 'dim': 16},"
                           "            {'type': 'apply_rotary', 'inputs': ['q', 'rope:0']}]}",
                           2),
                   "expects x, cos and sin (3 inputs)");
    t_free(&t);
}

/* Liger's fused rotary: q as the modeling code makes it, the transpose(1, 2)
 * view of a [2, 8, 4, 16] projection: rotated in place (the output is q's
 * own storage), saves cos and sin (1024), no workspace. A q that is
 * contiguous as [B, heads, S, D] is copied first: a new output. */
static void test_apply_rotary_fused(void)
{
    struct t_model t;
    LOAD_OPTS(&t,
           "{'inputs': [{'name': 'x', 'shape': [8, 64]},"
           "            {'name': 'p', 'shape': [8, 4, 16], 'requires_grad': true}],"
           " 'layers': [{'name': 'rope', 'type': 'rotary_embedding', 'inputs': ['x'], 'dim': 16},"
           "            {'name': 'q', 'type': 'transpose', 'inputs': ['p'], 'dim0': 1,"
           "             'dim1': 2},"
           "            {'name': 'qe', 'type': 'apply_rotary', 'inputs': ['q', 'rope:0', "
           "'rope:1']}]}",
           .batch = 2, .dtype = F32, .fused = MEMEST_FUSED_ROTARY);
    CHECK_EQ_U64(t_storage(&t, "qe", 0), t_storage(&t, "p", 0));
    CHECK_STR_EQ(t_strides(&t, "qe", 0), "[512, 16, 64, 1]");
    CHECK_EQ_U64(t_saved(&t, "qe"), 1024);
    CHECK_EQ_U64(t_work(&t, "qe"), 0);
    t_free(&t);
    LOAD_OPTS(&t, ROPE_JSON, .batch = 2, .dtype = F32, .fused = MEMEST_FUSED_ROTARY);
    CHECK(t_storage(&t, "qe", 0) != t_storage(&t, "q", 0));
    CHECK_EQ_U64(t_saved(&t, "qe"), 1024);
    t_free(&t);
}

/* Tensor.to: a new bf16 tensor from float32 (nothing saved); to float32 the
 * input itself; type_as takes the second input's dtype. */
static void test_to(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [8], 'requires_grad': true}],"
         " 'layers': [{'name': 'b', 'type': 'to', 'inputs': ['x'], 'dtype': 'bfloat16'},"
         "            {'name': 's', 'type': 'to', 'inputs': ['x'], 'dtype': 'float32'},"
         "            {'name': 'f', 'type': 'to', 'inputs': ['x'], 'dtype': 'float'},"
         "            {'name': 'ta', 'type': 'to', 'inputs': ['x', 'b']},"
         "            {'name': 'back', 'type': 'to', 'inputs': ['b'], 'dtype': 'float32'}]}",
         2);
    CHECK_EQ_INT(t_dtype(&t, "b", 0), BF16);
    CHECK(t_storage(&t, "b", 0) != t_storage(&t, "x", 0));
    CHECK_EQ_U64(t_saved(&t, "b"), 0);
    CHECK_EQ_U64(t_storage(&t, "s", 0), t_storage(&t, "x", 0));
    CHECK_EQ_U64(t_storage(&t, "f", 0), t_storage(&t, "x", 0));
    CHECK_EQ_INT(t_dtype(&t, "ta", 0), BF16);
    CHECK_EQ_INT(t_grad_kind(&t, "ta", 1), MEMEST_GRAD_NONE);
    CHECK_EQ_INT(t_dtype(&t, "back", 0), F32);
    CHECK(t_out(&t, "b", 0)->requires_grad);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [8]}],"
                           " 'layers': [{'type': 'to'}]}",
                           2),
                   "needs a dtype");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [8]}],"
                           " 'layers': [{'name': 'a', 'type': 'to', 'dtype': 'float16'},"
                           "            {'type': 'to', 'inputs': ['x', 'a'], 'dtype': 'float'}]}",
                           2),
                   "not both");
    t_free(&t);
}

/* pow(x, 2) on float32 [2, 8] requiring grad saves x (64 bytes); backward
 * scratch one tensor (64). An int64 input stays int64 for exponent 2 and
 * becomes float for 0.5. Autocast (fp32 policy): a bf16 input is cast to
 * float32 first (a 64-byte copy, the tensor pow reads and saves). */
static void test_pow(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [8], 'requires_grad': true},"
         "            {'name': 'i', 'shape': [8], 'dtype': 'int64'}],"
         " 'layers': [{'name': 'p', 'type': 'pow', 'inputs': ['x'], 'exponent': 2},"
         "            {'name': 'pi', 'type': 'pow', 'inputs': ['i'], 'exponent': 2},"
         "            {'name': 'pf', 'type': 'pow', 'inputs': ['i'], 'exponent': 0.5}]}",
         2);
    CHECK_EQ_U64(t_saved(&t, "p"), 64);
    CHECK(t_saves_storage(&t, "p", t_storage(&t, "x", 0)));
    CHECK_EQ_U64(t_bwork(&t, "p"), 64);
    CHECK_EQ_INT(t_dtype(&t, "pi", 0), MEMEST_I64);
    CHECK_EQ_INT(t_dtype(&t, "pf", 0), F32);
    t_free(&t);
    CHECK_EQ_INT(memest_op_find("pow")->amp, MEMEST_AMPP_FP32);
    LOAD_OPTS(&t,
           "{'inputs': [{'name': 'x', 'shape': [8], 'requires_grad': true}],"
           " 'layers': [{'name': 'b', 'type': 'to', 'dtype': 'bfloat16'},"
           "            {'name': 'p', 'type': 'pow', 'exponent': 2}]}",
           .batch = 2, .dtype = F32, .amp = true, .amp_dtype = BF16);
    CHECK_EQ_INT(t_dtype(&t, "p", 0), F32);
    CHECK_EQ_U64(t_saved(&t, "p"), 64);
    CHECK(!t_saves_storage(&t, "p", t_storage(&t, "b", 0)));
    t_free(&t);
}

/* softcap on float32 [2, 8, 32] (2048 bytes), cap 30: saves tanh's result
 * (2048), neither x nor the output; workspace x / cap (2048); backward
 * scratch 2048. Without grad: the division and tanh both transient, 4096. */
static void test_softcap(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [8, 32], 'requires_grad': true}],"
         " 'layers': [{'name': 's', 'type': 'softcap', 'cap': 30}]}",
         2);
    CHECK_EQ_U64(t_saved(&t, "s"), 2048);
    CHECK(!t_saves_storage(&t, "s", t_storage(&t, "x", 0)));
    CHECK(!t_saves_storage(&t, "s", t_storage(&t, "s", 0)));
    CHECK_EQ_U64(t_work(&t, "s"), 2048);
    CHECK_EQ_U64(t_bwork(&t, "s"), 2048);
    t_free(&t);
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [8, 32]}],"
         " 'layers': [{'name': 's', 'type': 'softcap', 'cap': 30}]}",
         2);
    CHECK_EQ_U64(t_saved(&t, "s"), 0);
    CHECK_EQ_U64(t_work(&t, "s"), 4096);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [8]}],"
                           " 'layers': [{'type': 'softcap', 'cap': 0}]}",
                           2),
                   "cap must be greater than 0");
    t_free(&t);
}

/* buffer [4, 16] float32: 64 elements, the output is the buffer itself
 * (no grad); dtype "float" follows the run (bf16 here). */
static void test_buffer(void)
{
    struct t_model t;
    LOAD_OPTS(&t,
                  "{'inputs': [{'name': 'x', 'shape': [8]}],"
                  " 'layers': [{'name': 'b', 'type': 'buffer', 'shape': [4, 16]},"
                  "            {'name': 'f', 'type': 'buffer', 'shape': [3], 'dtype': 'float',"
                  "             'persistent': false}]}", .batch = 2, .dtype = BF16);
    CHECK_STR_EQ(t_shape(&t, "b", 0), "[4, 16]");
    CHECK_EQ_U64(t_buffer(&t, "b", "buffer"), 64);
    CHECK_EQ_INT(t_dtype(&t, "b", 0), F32);
    CHECK_EQ_INT(t.r.storages[t_storage(&t, "b", 0)].kind, MEMEST_ST_BUFFER);
    CHECK_EQ_U64(t.r.storages[t_storage(&t, "b", 0)].bytes, 256);
    CHECK(!t_out(&t, "b", 0)->requires_grad);
    CHECK_EQ_INT(t_dtype(&t, "f", 0), BF16);
    CHECK_EQ_U64(t.r.storages[t_storage(&t, "f", 0)].bytes, 6);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [8]}],"
                           " 'layers': [{'type': 'buffer', 'shape': ['batch', 4]}]}",
                           2),
                   "no batch dimension");
    t_free(&t);
}

/* F.softmax(x, -1, dtype=torch.float32) on a bf16 [2, 8]: x converted to
 * float32 first (64 bytes, transient), the float32 result saved (64); the
 * backward's float32 gradient before its conversion back (64). From fp16
 * (half_to_float): no copy. Same dtype: the plain softmax. */
static void test_softmax_dtype(void)
{
    struct t_model t;
    const char *json = "{'inputs': [{'name': 'x', 'shape': [8], 'requires_grad': true}],"
                       " 'layers': [{'name': 's', 'type': 'softmax', 'dim': -1,"
                       "             'dtype': 'float32'}]}";
    LOAD_OPTS(&t, json, .batch = 2, .dtype = BF16);
    CHECK_EQ_INT(t_dtype(&t, "s", 0), F32);
    CHECK_EQ_U64(t_saved(&t, "s"), 64);
    CHECK(t_saves_storage(&t, "s", t_storage(&t, "s", 0)));
    CHECK_EQ_U64(t_work(&t, "s"), 64);
    CHECK_EQ_U64(t_bwork(&t, "s"), 64);
    t_free(&t);
    LOAD_OPTS(&t, json, .batch = 2, .dtype = MEMEST_F16);
    CHECK_EQ_U64(t_saved(&t, "s"), 64);
    CHECK_EQ_U64(t_work(&t, "s"), 0);
    t_free(&t);
    LOAD(&t, json, 2);
    CHECK_EQ_U64(t_saved(&t, "s"), 64);
    CHECK_EQ_U64(t_work(&t, "s"), 0);
    t_free(&t);
}

int main(void)
{
    test_apply_rotary_halves();
    test_rmsnorm_llama_f32();
    test_rmsnorm_llama_bf16();
    test_rmsnorm_llama_mixed();
    test_rmsnorm_weight_only();
    test_rmsnorm_gemma();
    test_rmsnorm_fused();
    test_rmsnorm_errors();
    test_act_mul();
    test_act_mul_partial();
    test_rotary_embedding();
    test_apply_rotary();
    test_apply_rotary_partial();
    test_apply_rotary_fused();
    test_apply_rotary_complex();
    test_to();
    test_pow();
    test_softcap();
    test_buffer();
    test_softmax_dtype();
    return CHECK_DONE();
}
