/* test_ops_attention.c - nn.MultiheadAttention (training, 1.13's
 * F.multi_head_attention_forward): parameters, outputs, saved bytes (the
 * catalog's cases, with CUDA's dropout mask and without the CPU scalars),
 * MACs, errors. */
#include "check.h"
#include "ops_test.h"

/* Sequence-first x [L=5, N=3, E=16] (no grad). */
#define SEQ "{'inputs': [{'name': 'x', 'shape': [5, 16], 'batch_dim': 1}], 'layers': ["

/* MHA(16, 2) self-attention: in_proj_weight 48*16 = 768, in_proj_bias 48,
 * out_proj.weight 256, out_proj.bias 16: 1088. Outputs [5, 3, 16] and the
 * head-averaged weights [3, 5, 5]. Saved (catalog: 5416 bytes, of which 16
 * are two 0-d CPU scalars that are host memory on CUDA):
 *   x viewed as [15, 16] (in_proj's mat1)       960
 *   q / sqrt(8) [6, 5, 8], k [6, 5, 8]          960 + 960
 *   softmax [6, 5, 5]                           600
 *   v [6, 5, 8]                                 960
 *   attention output made contiguous [15, 16]   960
 *   total                                      5400
 * MACs: in-projection 15*16*48 = 11520, each bmm 3*5*5*16 = 1200,
 * out_proj 15*16*16 = 3840: 17760. Backward: grad(in_proj_weight) 11520
 * (x needs no grad), both operands of both bmm's 4*1200, out_proj
 * 2*3840: 24000. */
static void test_mha_self(void)
{
    struct t_model t;
    LOAD(&t, SEQ "{'name': 'mha', 'type': 'multiheadattention', 'num_heads': 2}]}", 3);
    CHECK_EQ_U64(t_param(&t, "mha", "in_proj_weight"), 768);
    CHECK_EQ_U64(t_param(&t, "mha", "in_proj_bias"), 48);
    CHECK_EQ_U64(t_param(&t, "mha", "out_proj.weight"), 256);
    CHECK_EQ_U64(t_param(&t, "mha", "out_proj.bias"), 16);
    CHECK_EQ_U64(t_params_total(&t, "mha"), 1088);
    CHECK_EQ_U64(t_nout(&t, "mha"), 2);
    CHECK_STR_EQ(t_shape(&t, "mha", 0), "[5, 3, 16]");
    CHECK_STR_EQ(t_shape(&t, "mha", 1), "[3, 5, 5]");
    CHECK_EQ_U64(t_saved(&t, "mha"), 5400);
    CHECK(t_saves_storage(&t, "mha", t_storage(&t, "x", 0)));
    CHECK(t_fwd(&t, "mha") == 17760.0);
    CHECK(t_bwd(&t, "mha") == 24000.0);
    t_free(&t);
}

/* batch_first: x [3, 5, 16] is transposed to [5, 3, 16]; in_proj's
 * reshape to [15, 16] copies it: still 5400 bytes, but the input's storage
 * is not among them. */
static void test_mha_batch_first(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [5, 16]}],"
         " 'layers': [{'name': 'mha', 'type': 'multiheadattention', 'num_heads': 2,"
         "             'batch_first': true}]}",
         3);
    CHECK_STR_EQ(t_shape(&t, "mha", 0), "[3, 5, 16]");
    CHECK_EQ_U64(t_saved(&t, "mha"), 5400);
    CHECK(!t_saves_storage(&t, "mha", t_storage(&t, "x", 0)));
    t_free(&t);
}

/* dropout 0.1 on the weights: + native_dropout's bool mask [6, 5, 5] (150
 * bytes) + its output (600), which the second bmm saves: 6150.
 * need_weights=false: one output; under --torch 1.13 5400 still, while
 * PyTorch >= 2.0 runs scaled_dot_product_attention (test_ops_mha_sdpa.c):
 * x 960, the packed projection [3, 5, 3, 16] 2880, the efficient kernel's
 * output 960 and logsumexp [3, 2, 32] 768, out_proj's contiguous copy 960:
 * 6528. average_attn_weights=false: the weights [3, 2, 5, 5] are the saved
 * softmax output itself: 5400. */
static void test_mha_variants(void)
{
    struct t_model t;
    LOAD(&t,
         SEQ "{'name': 'do', 'type': 'multiheadattention', 'num_heads': 2, 'dropout': 0.1},"
             "{'name': 'nw', 'type': 'multiheadattention', 'inputs': ['x'], 'num_heads': 2,"
             " 'need_weights': false},"
             "{'name': 'heads', 'type': 'multiheadattention', 'inputs': ['x'], 'num_heads': 2,"
             " 'average_attn_weights': false}]}",
         3);
    CHECK_EQ_U64(t_saved(&t, "do"), 6150);
    CHECK_EQ_U64(t_nout(&t, "nw"), 1);
    CHECK_EQ_U64(t_saved(&t, "nw"), 6528);
    CHECK_STR_EQ(t_shape(&t, "heads", 1), "[3, 2, 5, 5]");
    CHECK(t_saves_storage(&t, "heads", t_storage(&t, "heads", 1)));
    CHECK_EQ_U64(t_saved(&t, "heads"), 5400);
    t_free(&t);
    LOAD_OPTS(&t,
              SEQ "{'name': 'nw', 'type': 'multiheadattention', 'num_heads': 2,"
                  " 'need_weights': false}]}",
              .batch = 3, .dtype = MEMEST_F32, .torch = 113);
    CHECK_EQ_U64(t_saved(&t, "nw"), 5400);
    t_free(&t);
}

/* Cross-attention with kdim 8, vdim 4: q [5, 3, 16], k [7, 3, 8],
 * v [7, 3, 4]. q_proj_weight 256, k_proj_weight 16*8 = 128, v_proj_weight
 * 16*4 = 64, in_proj_bias 48, out_proj 256 + 16: 768. Weights [3, 5, 7].
 * Saved: the three inputs 960 + 672 + 336, q_scaled [6, 5, 8] 960,
 * k [6, 7, 8] 1344, softmax [6, 5, 7] 840, v [6, 7, 8] 1344, attention
 * output 960: 7416. */
static void test_mha_cross(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'q', 'shape': [5, 16], 'batch_dim': 1},"
         "            {'name': 'k', 'shape': [7, 8], 'batch_dim': 1},"
         "            {'name': 'v', 'shape': [7, 4], 'batch_dim': 1}],"
         " 'layers': [{'name': 'mha', 'type': 'multiheadattention', 'inputs': ['q', 'k', 'v'],"
         "             'embed_dim': 16, 'num_heads': 2, 'kdim': 8, 'vdim': 4}]}",
         3);
    CHECK_EQ_U64(t_param(&t, "mha", "k_proj_weight"), 128);
    CHECK_EQ_U64(t_param(&t, "mha", "in_proj_weight"), 0);
    CHECK_EQ_U64(t_params_total(&t, "mha"), 768);
    CHECK_STR_EQ(t_shape(&t, "mha", 1), "[3, 5, 7]");
    CHECK_EQ_U64(t_saved(&t, "mha"), 7416);
    t_free(&t);
}

/* add_bias_kv: bias_k, bias_v [1, 1, 16] (+32 parameters: 1120); the key
 * and value get one more row (S' = 6): weights [3, 5, 6]. Saved: x 960,
 * q_scaled [6, 5, 8] 960, k [6, 6, 8] 1152, softmax [6, 5, 6] 720,
 * v [6, 6, 8] 1152, attention output 960: 5904 (the causal mask is not
 * saved: baddbmm does not keep its additive input). */
static void test_mha_bias_kv(void)
{
    struct t_model t;
    LOAD(&t,
         SEQ "{'name': 'mha', 'type': 'multiheadattention', 'num_heads': 2,"
             " 'add_bias_kv': true, 'attn_mask': 'causal'}]}",
         3);
    CHECK_EQ_U64(t_params_total(&t, "mha"), 1120);
    CHECK_EQ_U64(t_param(&t, "mha", "bias_k"), 16);
    CHECK_STR_EQ(t_shape(&t, "mha", 1), "[3, 5, 6]");
    CHECK_EQ_U64(t_saved(&t, "mha"), 5904);
    t_free(&t);
}

static void test_mha_errors(void)
{
    struct t_model t;
    CHECK_CONTAINS(t_error(&t, SEQ "{'type': 'multiheadattention', 'num_heads': 3}]}", 3),
                   "embed_dim (16) must be divisible by num_heads (3)");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           SEQ "{'type': 'multiheadattention', 'embed_dim': 32, 'num_heads': 2}]}",
                           3),
                   "embed_dim is 32 but the query has 16 features");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           SEQ "{'type': 'multiheadattention', 'inputs': ['x', 'x'],"
                               " 'num_heads': 2}]}",
                           3),
                   "expects 1 input (self-attention) or 3 (query, key, value), got 2");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'q', 'shape': [5, 16], 'batch_dim': 1},"
                           "            {'name': 'k', 'shape': [7, 16], 'batch_dim': 1}],"
                           " 'layers': [{'type': 'multiheadattention', 'inputs': ['q', 'k', 'k'],"
                           "  'num_heads': 2, 'attn_mask': 'causal'}]}",
                           3),
                   "a causal attn_mask needs equal query and key lengths, got 5 and 7");
    t_free(&t);
}

int main(void)
{
    test_mha_self();
    test_mha_batch_first();
    test_mha_variants();
    test_mha_cross();
    test_mha_bias_kv();
    test_mha_errors();
    return CHECK_DONE();
}
