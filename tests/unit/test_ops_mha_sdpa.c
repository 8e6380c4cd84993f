/* test_ops_mha_sdpa.c - nn.MultiheadAttention under PyTorch >= 2.0 with
 * need_weights=False: F.multi_head_attention_forward runs
 * scaled_dot_product_attention, whose kernel (src/ops/ops_sdpa.c: auto
 * picks flash for fp16/bf16, memory-efficient for float32 on sm80+) decides
 * what is saved; need_weights=True and --torch 1.13 keep the explicit
 * softmax (test_ops_attention.c). The figures are hand calculations; each is
 * cross-checked against PyTorch 2.6 on the CPU
 * (tests/reference/mha_sdpa_saved_26.json, tests/tools/mha_sdpa_saved.py),
 * whose flash kernel saves what CUDA's flash saves: the bf16 cases are its
 * figures exactly; float32 runs flash there but the efficient kernel on
 * CUDA, whose differences are spelled out.
 *
 * Unless said otherwise: N = 2, E = 64, 4 heads (head dim 16), L = S = 10,
 * inputs that require grad, so LNE = L*N*E = 1280 elements (5120 bytes in
 * float32). */
#include "check.h"
#include "ops_test.h"

/* Sequence-first x [L, N, E] (batch dim 1). */
#define SEQ                                                                                    \
    "{'inputs': [{'name': 'x', 'shape': [10, 64], 'batch_dim': 1, 'requires_grad': true}],"   \
    " 'layers': ["
#define MHA(args) "{'name': 'mha', 'type': 'multiheadattention', 'num_heads': 4, " args "}]}"
#define NW "'need_weights': false"

static void load(struct t_model *t, const char *json, enum memest_dtype dt, uint16_t torch,
                 uint8_t attention, int *ok)
{
    struct memest_run_opts o = {.batch = 2, .dtype = dt, .torch = torch, .attention = attention};
    *ok = t_load_opts(t, json, &o) == 0;
    if (!*ok)
        fprintf(stderr, "load failed: %s\n", t->msg);
    CHECK(*ok);
}

#define LOADX(t, json, dt, torch, att)              \
    do {                                            \
        int ok_;                                    \
        load((t), (json), (dt), (torch), (att), &ok_); \
        if (!ok_) {                                 \
            t_free(t);                              \
            return;                                 \
        }                                           \
    } while (0)

/* Self-attention, float32 (efficient kernel):
 *   x viewed as [20, 64] (in_proj's mat1)                          5120
 *   the packed projection [3, L, N, E] (q, k, v are views of it)  15360
 *   the kernel's output [N, L, H, 16] memory                       5120
 *   its logsumexp float32 [N, H, ceil(10/32)*32 = 32]              1024
 *   out_proj's mat1: output.permute(2, 0, 1, 3).contiguous()       5120
 *   total                                                         31744
 * PyTorch 2.6 CPU (flash): 25920 = 31744 - 5120 (CPU flash allocates its
 * output like q, [L, N, H, 16] memory, so the permute is contiguous and
 * out_proj's mat1 is the saved output) - 704 (logsumexp [2, 4, 10]: 320).
 * MACs: in-projection 20*64*192 = 245760, the two products
 * N*H*L*S*16 = 12800 each, out_proj 20*64*64 = 81920: 353280, as 1.13.
 * Backward: the three projections' weight and input gradients 6*81920,
 * the fused kernel's five products (it recomputes the scores) 5*12800,
 * out_proj's 2*81920: 719360 (1.13's explicit path: 4*12800 instead). */
static void test_self(void)
{
    struct t_model t;
    LOADX(&t, SEQ MHA(NW), MEMEST_F32, 0, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_nout(&t, "mha"), 1);
    CHECK_STR_EQ(t_shape(&t, "mha", 0), "[10, 2, 64]");
    CHECK_EQ_U64(t_saved(&t, "mha"), 31744);
    CHECK_EQ_U64(t_saved(&t, "mha"), 25920 + 5120 + 704);
    CHECK(t_saves_storage(&t, "mha", t_storage(&t, "x", 0)));
    CHECK(t_fwd(&t, "mha") == 353280.0);
    CHECK(t_bwd(&t, "mha") == 719360.0);
    t_free(&t);

    /* batch_first: x [N, L, E] is transposed to [L, N, E]; in_proj's
     * reshape to [20, 64] copies it (MmBackward0's self in PyTorch): the
     * same bytes, not the input's storage. PyTorch: 25920 as seq-first. */
    LOADX(&t,
          "{'inputs': [{'name': 'x', 'shape': [10, 64], 'requires_grad': true}], 'layers': [" MHA(
              "'batch_first': true, " NW),
          MEMEST_F32, 0, MEMEST_ATTN_AUTO);
    CHECK_STR_EQ(t_shape(&t, "mha", 0), "[2, 10, 64]");
    CHECK_EQ_U64(t_saved(&t, "mha"), 31744);
    CHECK(!t_saves_storage(&t, "mha", t_storage(&t, "x", 0)));
    t_free(&t);
}

/* bfloat16 (flash; out_proj's mat1 is its output, laid out like q):
 *   x 1280*2 2560, the packed projection 3*2560 7680, the output 2560,
 *   the logsumexp float32 [2, 4, 10] 320: 13120 = PyTorch's figure. */
static void test_self_bf16(void)
{
    struct t_model t;
    LOADX(&t, SEQ MHA(NW), MEMEST_BF16, 0, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "mha"), 2560 + 7680 + 2560 + 320);
    CHECK_EQ_U64(t_saved(&t, "mha"), 13120);
    t_free(&t);
}

/* Cross-attention, kdim 32, vdim 48, S = 7: three linears.
 * float32: the inputs as the projections' mat1 q 5120, k [14, 32] 1792,
 * v [14, 48] 2688; their outputs q 5120, k and v [7, 2, 64] 3584 each; the
 * efficient output 5120, logsumexp 1024, out_proj's contiguous mat1 5120:
 * 33152 = PyTorch's 27328 + 5120 + 704 (as test_self).
 * bfloat16: 2560 + 896 + 1344 + 2560 + 1792 + 1792 + 2560 (output)
 * + 320 (logsumexp): 13824 = PyTorch's. */
#define CROSS                                                                               \
    "{'inputs': [{'name': 'q', 'shape': [10, 64], 'batch_dim': 1, 'requires_grad': true},"  \
    "            {'name': 'k', 'shape': [7, 32], 'batch_dim': 1, 'requires_grad': true},"   \
    "            {'name': 'v', 'shape': [7, 48], 'batch_dim': 1, 'requires_grad': true}],"  \
    " 'layers': [" MHA("'inputs': ['q', 'k', 'v'], 'kdim': 32, 'vdim': 48, " NW)
static void test_cross(void)
{
    struct t_model t;
    LOADX(&t, CROSS, MEMEST_F32, 0, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "mha"), 5120 + 1792 + 2688 + 5120 + 3584 + 3584 + 5120 + 1024 + 5120);
    CHECK_EQ_U64(t_saved(&t, "mha"), 27328 + 5120 + 704);
    t_free(&t);
    LOADX(&t, CROSS, MEMEST_BF16, 0, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "mha"), 2560 + 896 + 1344 + 2560 + 1792 + 1792 + 2560 + 320);
    CHECK_EQ_U64(t_saved(&t, "mha"), 13824);
    t_free(&t);
}

/* Dropout 0.1. CUDA's fused kernels keep no mask (the backward regenerates
 * it from the philox seed): float32 saves what test_self saves, 31744. The
 * CPU's fused kernels refuse dropout, so PyTorch there runs the math kernel
 * (45440 bytes, its dropout mask float32), which --attention math models:
 *   x 5120; v, a view of the packed projection, keeps it whole 15360;
 *   q * sqrt(scale) and k^T * sqrt(scale) (copies) 5120 each; _safe_softmax's
 *   result [2, 4, 10, 10] 3200; native_dropout's bool mask 800 and output
 *   3200; the math output [N, H, L, 16] is copied for out_proj 5120: 43040
 *   = 45440 - 2400 (CUDA's 1-byte mask instead of the CPU's float32 one).
 * Math without dropout: 43040 - 800 - 3200 = 39040 = PyTorch's figure with
 * the math kernel forced. */
static void test_dropout_math(void)
{
    struct t_model t;
    LOADX(&t, SEQ MHA("'dropout': 0.1, " NW), MEMEST_F32, 0, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "mha"), 31744);
    t_free(&t);
    LOADX(&t, SEQ MHA("'dropout': 0.1, " NW), MEMEST_F32, 0, MEMEST_ATTN_MATH);
    CHECK_EQ_U64(t_saved(&t, "mha"), 5120 + 15360 + 5120 + 5120 + 3200 + 800 + 3200 + 5120);
    CHECK_EQ_U64(t_saved(&t, "mha"), 45440 - 2400);
    t_free(&t);
    LOADX(&t, SEQ MHA(NW), MEMEST_F32, 0, MEMEST_ATTN_MATH);
    CHECK_EQ_U64(t_saved(&t, "mha"), 39040);
    t_free(&t);
    /* --attention flash cannot run float32: an error naming the node, as
     * PyTorch's "No available kernel" */
    struct memest_run_opts o = {.batch = 2, .dtype = MEMEST_F32, .attention = MEMEST_ATTN_FLASH};
    CHECK(t_load_opts(&t, SEQ MHA(NW), &o) != 0);
    CHECK_CONTAINS(t.msg, "flash attention needs float16 or bfloat16 inputs");
    t_free(&t);
}

/* add_bias_kv (S' = 11): torch.cat makes new k, v [11, 2, 64] (5632 each);
 * q alone views the packed projection, which it keeps whole (15360); x,
 * the output, logsumexp and out_proj's copy as test_self: 43008 =
 * PyTorch's 37184 + 5120 + 704. add_zero_attn: the same. */
static void test_bias_kv(void)
{
    struct t_model t;
    LOADX(&t, SEQ MHA("'add_bias_kv': true, " NW), MEMEST_F32, 0, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "mha"), 5120 + 15360 + 5632 + 5632 + 5120 + 1024 + 5120);
    CHECK_EQ_U64(t_saved(&t, "mha"), 37184 + 5120 + 704);
    t_free(&t);
    LOADX(&t, SEQ MHA("'add_zero_attn': true, " NW), MEMEST_F32, 0, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "mha"), 43008);
    t_free(&t);
}

/* A causal attn_mask tensor (is_causal=False, the module's default): flash
 * takes no mask, so bf16 runs the efficient kernel too, which pads the
 * [1, 1, 10, 10] mask's last dim to 16 (pad_bias<8>) and saves that copy:
 * bf16 2560 + 7680 + 2560 (output) + 1024 (logsumexp, 32 rows)
 * + 2560 (out_proj's copy) + 1*1*10*16*2 = 320: 16704. (The CPU's flash
 * takes the mask: PyTorch saves the model's mask itself there.) */
static void test_causal(void)
{
    struct t_model t;
    LOADX(&t, SEQ MHA("'attn_mask': 'causal', " NW), MEMEST_BF16, 0, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "mha"), 2560 + 7680 + 2560 + 1024 + 2560 + 320);
    t_free(&t);
}

/* need_weights=True keeps 1.13's explicit path in both versions: x 5120,
 * q / sqrt(16) 5120, k and v copies 5120 each, softmax [8, 10, 10] 3200,
 * out_proj's contiguous mat1 5120: 28800. --torch 1.13 with
 * need_weights=False: the same path, the same bytes. (PyTorch 2.6 itself
 * saves 33920 with need_weights=True: k and v are views of the packed
 * projection there, not copies, so their bmm's keep its whole [3, L, N, E]
 * storage, 15360 instead of 10240; not modelled.) */
static void test_explicit(void)
{
    struct t_model t;
    LOADX(&t, SEQ MHA("'need_weights': true"), MEMEST_F32, 0, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "mha"), 5120 * 5 + 3200);
    CHECK(t_bwd(&t, "mha") == 6 * 81920.0 + 4 * 12800.0 + 2 * 81920.0);
    t_free(&t);
    LOADX(&t, SEQ MHA("'need_weights': true"), MEMEST_F32, 113, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "mha"), 28800);
    t_free(&t);
    LOADX(&t, SEQ MHA(NW), MEMEST_F32, 113, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "mha"), 28800);
    CHECK(t_bwd(&t, "mha") == 6 * 81920.0 + 4 * 12800.0 + 2 * 81920.0);
    t_free(&t);
    /* 1.13 with dropout: + the bool mask [8, 10, 10] 800 + its output 3200 */
    LOADX(&t, SEQ MHA("'dropout': 0.1, " NW), MEMEST_F32, 113, MEMEST_ATTN_AUTO);
    CHECK_EQ_U64(t_saved(&t, "mha"), 28800 + 800 + 3200);
    t_free(&t);
}

int main(void)
{
    test_self();
    test_self_bf16();
    test_cross();
    test_dropout_math();
    test_bias_kv();
    test_causal();
    test_explicit();
    return CHECK_DONE();
}
