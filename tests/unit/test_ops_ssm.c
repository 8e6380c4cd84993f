/* test_ops_ssm.c - mamba2_scan (src/ops/ops_ssm.c): the Mamba-2 mixer after
 * in_proj as mamba_ssm's fused mamba_split_conv1d_scan_combined runs it: its
 * output, parameters, saved tensors (zxbcdt, out_x, rstd, A and exp(A_log)'s
 * result, by hand from state-spaces/mamba's ssd_combined.py save_for_backward
 * and transformers' BambaMixer.cuda_kernels_forward), MACs and errors.
 *
 * The case: hidden 64, 8 heads of 16 (dim 128), 2 groups of state 16, conv 4:
 * conv_dim 128 + 2*2*16 = 192, zxbcdt 128 + 192 + 8 = 328 wide. */
#include "check.h"
#include "ops_test.h"

#define SSM_JSON(BIAS)                                                                          \
    "{'inputs': [{'name': 'x', 'shape': [16, 64]}],"                                            \
    " 'layers': [{'name': 'in_proj', 'type': 'linear', 'out_features': 328, 'bias': false},"     \
    "  {'name': 'ssd', 'type': 'mamba2_scan', 'num_heads': 8, 'head_dim': 16, 'n_groups': 2,"   \
    "   'state_size': 16, 'conv_kernel': 4, 'out_features': 64, 'out_bias': " #BIAS ","         \
    "   'chunk_size': 8}]}"

/* Batch 2, seq 16. float32: zxbcdt 2*16*328*4 = 41,984, out_x 2*16*128*4 =
 * 16,384, rstd [2*16*2] float32 256, A and exp(A_log.float()) 2 * 8*4 = 64:
 * 58,688 bytes. bfloat16: 20,992 + 8,192 + 256 + 64 = 29,504 (rstd and A
 * float32 whatever the input). Parameters: conv1d 192*4 + 192, dt_bias,
 * A_log, D 3*8, norm 128, out_proj 128*64 (+ 64 with out_bias). MACs: rows
 * 32 times conv 192*4, C B^T 8*2*16, states and their outputs 2*8*16*16,
 * the diagonal blocks 8*128, out_proj 128*64: 458,752; backward twice. */
static void test_mamba2_scan(void)
{
    struct t_model t;
    LOAD(&t, SSM_JSON(false), 2);
    CHECK_STR_EQ(t_shape(&t, "ssd", 0), "[2, 16, 64]");
    CHECK(t_out(&t, "ssd", 0)->dtype == MEMEST_F32);
    CHECK_EQ_U64(t_saved(&t, "ssd"), 41984 + 16384 + 256 + 64);
    CHECK_EQ_U64(t_param(&t, "ssd", "conv1d.weight"), 192 * 4);
    CHECK_EQ_U64(t_param(&t, "ssd", "conv1d.bias"), 192);
    CHECK_EQ_U64(t_param(&t, "ssd", "A_log"), 8);
    CHECK_EQ_U64(t_param(&t, "ssd", "out_proj.weight"), 128 * 64);
    CHECK_EQ_U64(t_param(&t, "ssd", "out_proj.bias"), 0);
    CHECK_EQ_U64(t_params_total(&t, "ssd"), 192 * 4 + 192 + 3 * 8 + 128 + 128 * 64);
    CHECK(t_fwd(&t, "ssd") == 458752.0);
    CHECK(t_bwd(&t, "ssd") == 2 * 458752.0);
    /* workspaces (src/ops/ops_ssm_kernel.c, mamba_ssm v2.2.4's allocations),
     * 2 chunks of 8 per sequence. Forward: xBC_conv 32*192*4 = 24,576, dt_out
     * and dA_cumsum 2 * 2*8*2*8*4 = 2,048, float32 chunk states 2*2*8*16*16*4
     * = 32,768, passed states 32,768 and final states 2*8*256*4 = 16,384
     * (108,544, then the float32 states go: 75,776), CB 2*2*2*8*8*4 = 2,048,
     * out_x 16,384 (CB goes), the normed 16,384, rstd 256, F.linear's output
     * 8,192: 116,992 at the fullest, less out_x, rstd and the output (memest
     * declares them): 92,160. Backward: out_recompute 16,384, xBC_conv 24,576,
     * dzxbcdt 41,984, dxBC 24,576, F.linear's dout 16,384, _layer_norm_bwd's
     * dx 16,384 and _dw [ceil(132 * 4 / 2) = 264, 128] float32 135,168 with
     * its sum 512: 275,968 at the fullest (the scan's backward later reaches
     * 243,424); what survives, the gradients: dzxbcdt, norm 512, dD, ddt_bias,
     * dA 3 * 32, out_proj 32,768, conv1d 3,072 + 768 = 79,200: 196,768. */
    CHECK_EQ_U64(t_info(&t, "ssd")->work_bytes, 92160);
    CHECK_EQ_U64(t_info(&t, "ssd")->bwd_work_bytes, 196768);
    t_free(&t);
    LOAD_OPTS(&t, SSM_JSON(true), .batch = 2, .dtype = MEMEST_BF16);
    CHECK(t_out(&t, "ssd", 0)->dtype == MEMEST_BF16);
    CHECK_EQ_U64(t_saved(&t, "ssd"), 20992 + 8192 + 256 + 64);
    CHECK_EQ_U64(t_params_total(&t, "ssd"), 192 * 4 + 192 + 3 * 8 + 128 + 128 * 64 + 64);
    t_free(&t);
}

/* fused false, BambaMixer.torch_forward (src/ops/ops_ssm.c lists the saved
 * tensors), the same case, 2 chunks of 8, no padding. float32: zxbcdt
 * 41,984; the conv output 2*192*19*4 = 29,184; the act's output 2*16*192*4
 * = 24,576 (hidden_states.float() is a view of it); exp(A) and A 64; dt +
 * dt_bias, softplus, clamp 3 * 1,024; D's pad, the chunked x*dt,
 * C_times_states.sum and y 4 * 16,384; masks 2*64 + 2*9; L 8,192; chunked
 * C, B and B_decay 3 * 16,384; G, M 2 * 8,192; decay_states, exp(A_cumsum)
 * 2 * 1,024; decay_chunk 576; the states' cat and new_states 2 * 49,152;
 * the norm's silu(gate), y * silu, normed 3 * 16,384 and rsqrt 128;
 * out_proj's input 16,384: 404,882 bytes (what PyTorch 2.6 saved in the
 * tiny Bamba's Mamba layer, tests/reference/hf_figures_ssm.json, less its
 * norms, in_proj's input and MLP). bfloat16: zxbcdt 20,992, the conv output
 * 14,592, hidden_states' float32 copy 16,384 (not the act's output), dt's
 * 3 * 512, gate's float32 copy 16,384 more, out_proj's input 8,192, the
 * rest float32 as before: 367,762. */
static void test_mamba2_scan_torch(void)
{
    struct t_model t;
    static const char json[] =
        "{'inputs': [{'name': 'x', 'shape': [16, 64]}],"
        " 'layers': [{'name': 'in_proj', 'type': 'linear', 'out_features': 328, 'bias': false},"
        "  {'name': 'ssd', 'type': 'mamba2_scan', 'num_heads': 8, 'head_dim': 16, 'n_groups': 2,"
        "   'state_size': 16, 'conv_kernel': 4, 'out_features': 64, 'chunk_size': 8, 'fused': false}]}";
    LOAD(&t, json, 2);
    CHECK_EQ_U64(t_saved(&t, "ssd"), 404882);
    /* the backward at C_times_states' MulBackward0 (ops_ssm.c
     * m2_torch_bwd_scratch): its two products 2 * 2*16*8*16*16*4 = 524,288,
     * the first sum 2*16*8*16*4 = 16,384, the gradients in flight of gate, y
     * and C_times_states.sum(-1) 3 * 16,384 and of exp(A_cumsum)'s permute
     * 1,024: 590,848; less what is released by then (out_proj's input, silu,
     * the product, the normed 4 * 16,384, rsqrt 128, y and C_times_states.
     * sum(-1) 2 * 16,384: 98,432) and the gradients not made yet (zxbcdt's
     * 41,984, conv1d's 192*5*4 = 3,840, dt_bias, A_log, D 96): 446,496.
     * bfloat16: gate's gradient 8,192 and gate's float32 copy released
     * 16,384 more, out_proj's input 8,192, zxbcdt's 20,992, conv1d's 1,920,
     * the heads' 48: 582,656 - 129,584 = 453,072. */
    CHECK_EQ_U64(t_info(&t, "ssd")->bwd_work_bytes, 446496);
    t_free(&t);
    LOAD_OPTS(&t, json, .batch = 2, .dtype = MEMEST_BF16);
    CHECK_EQ_U64(t_saved(&t, "ssd"), 367762);
    CHECK_EQ_U64(t_info(&t, "ssd")->bwd_work_bytes, 453072);
    t_free(&t);
}

static void test_mamba2_scan_errors(void)
{
    struct t_model t;
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [16, 327]}],"
                           " 'layers': [{'name': 'ssd', 'type': 'mamba2_scan', 'num_heads': 8, 'head_dim': 16,"
                           "  'n_groups': 2, 'state_size': 16, 'out_features': 64}]}",
                           2),
                   "must be 2 dim + 2 n_groups state_size + num_heads = 328");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [16, 328]}],"
                           " 'layers': [{'name': 'ssd', 'type': 'mamba2_scan', 'num_heads': 8, 'head_dim': 16,"
                           "  'n_groups': 3, 'state_size': 16, 'out_features': 64}]}",
                           2),
                   "must be a multiple of n_groups");
    t_free(&t);
}

int main(void)
{
    test_mamba2_scan();
    test_mamba2_scan_torch();
    test_mamba2_scan_errors();
    return CHECK_DONE();
}
