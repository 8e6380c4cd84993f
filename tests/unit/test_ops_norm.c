/* test_ops_norm.c - batch, layer, group and instance norm: parameters,
 * buffers, saved bytes (statistics dtypes as on CUDA), errors. */
#include "check.h"
#include "ops_test.h"

/* BatchNorm2d(8) on [2, 8, 4, 4]: weight 8 + bias 8; buffers running_mean 8,
 * running_var 8, num_batches_tracked 1 (0-d); saved: the input
 * 2*8*4*4*4 = 1024 bytes + save_mean and save_invstd [8] fp32 = 32 + 32:
 * 1088 bytes, even when the input does not require grad (the catalog). */
static void test_batchnorm2d(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [8, 4, 4]}],"
         " 'layers': [{'name': 'bn', 'type': 'batchnorm2d', 'num_features': 8}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "bn", 0), "[2, 8, 4, 4]");
    CHECK_EQ_U64(t_params_total(&t, "bn"), 16);
    CHECK_EQ_U64(t_buffer(&t, "bn", "running_mean"), 8);
    CHECK_EQ_U64(t_buffer(&t, "bn", "running_var"), 8);
    CHECK_EQ_U64(t_buffer(&t, "bn", "num_batches_tracked"), 1);
    CHECK_EQ_U64(t_saved(&t, "bn"), 1088);
    CHECK(t_saves_storage(&t, "bn", t_storage(&t, "x", 0)));
    t_free(&t);
    /* affine=False, no running stats: no params, no buffers, same saves */
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [8, 4, 4], 'requires_grad': true}],"
         " 'layers': [{'name': 'bn', 'type': 'batchnorm2d', 'affine': false,"
         "             'track_running_stats': false}]}",
         2);
    CHECK_EQ_U64(t_params_total(&t, "bn"), 0);
    CHECK_EQ_U64(t_buffer(&t, "bn", "running_mean"), 0);
    CHECK_EQ_U64(t_saved(&t, "bn"), 1088);
    t_free(&t);
}

/* fp16: the statistics stay fp32 on CUDA (accumulate type):
 * input 2*8*4*4*2 = 512 bytes + 2 * 8*4 = 64. */
static void test_batchnorm_half(void)
{
    struct t_model t;
    if (t_load_dt(&t,
                  "{'inputs': [{'name': 'x', 'shape': [8, 4, 4]}],"
                  " 'layers': [{'name': 'bn', 'type': 'batchnorm2d'}]}",
                  2, MEMEST_F16) != 0) {
        fprintf(stderr, "%s\n", t.msg);
        CHECK(!"load");
        t_free(&t);
        return;
    }
    CHECK_EQ_U64(t_saved(&t, "bn"), 512 + 64);
    t_free(&t);
}

/* BatchNorm1d on (N, C) and (N, C, L); errors. */
static void test_batchnorm1d(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [8, 5]}],"
         " 'layers': [{'name': 'bn', 'type': 'batchnorm1d'}]}",
         4);
    /* 4*8*5*4 = 640 + 64 */
    CHECK_EQ_U64(t_saved(&t, "bn"), 704);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [8]}],"
                           " 'layers': [{'type': 'batchnorm1d'}]}",
                           1),
                   "expected more than 1 value per channel when training, got [1, 8]");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [3, 8, 8]}],"
                           " 'layers': [{'type': 'batchnorm2d', 'num_features': 64}]}",
                           2),
                   "num_features is 64 but the input has 3 channels");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [3, 8, 8]}],"
                           " 'layers': [{'type': 'batchnorm1d'}]}",
                           2),
                   "expects a 2-D (N, C) or 3-D (N, C, L) input, got [2, 3, 8, 8]");
    t_free(&t);
}

/* LayerNorm(16) on [2, 5, 16]: weight 16 + bias 16; saved: input
 * 2*5*16*4 = 640 + mean and rstd [2, 5, 1] fp32 = 40 + 40: 720 (catalog).
 * normalized_shape [5, 16]: stats [2, 1, 1], 8 + 8 bytes. */
static void test_layernorm(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [5, 16]}],"
         " 'layers': [{'name': 'ln', 'type': 'layernorm'},"
         "            {'name': 'ln2', 'type': 'layernorm', 'inputs': ['x'],"
         "             'normalized_shape': [5, 16], 'elementwise_affine': false}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "ln", 0), "[2, 5, 16]");
    CHECK_EQ_U64(t_params_total(&t, "ln"), 32);
    CHECK_EQ_U64(t_saved(&t, "ln"), 720);
    CHECK_EQ_U64(t_params_total(&t, "ln2"), 0);
    /* no parameters and an input without grad: nothing recorded */
    CHECK_EQ_U64(t_nsaved(&t, "ln2"), 0);
    t_free(&t);
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [5, 16], 'requires_grad': true}],"
         " 'layers': [{'name': 'ln2', 'type': 'layernorm', 'normalized_shape': [5, 16],"
         "             'elementwise_affine': false}]}",
         2);
    CHECK_EQ_U64(t_saved(&t, "ln2"), 640 + 16);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [5, 16]}],"
                           " 'layers': [{'type': 'layernorm', 'normalized_shape': 8}]}",
                           2),
                   "normalized_shape [8] does not match the input's trailing dimensions");
    t_free(&t);
}

/* fp16 LayerNorm: input 2*5*16*2 = 320 bytes, mean/rstd fp32 [2, 5, 1]:
 * 40 + 40 (CUDA; the CPU keeps the input's dtype). */
static void test_layernorm_half(void)
{
    struct t_model t;
    if (t_load_dt(&t,
                  "{'inputs': [{'name': 'x', 'shape': [5, 16]}],"
                  " 'layers': [{'name': 'ln', 'type': 'layernorm'}]}",
                  2, MEMEST_F16) != 0) {
        fprintf(stderr, "%s\n", t.msg);
        CHECK(!"load");
        t_free(&t);
        return;
    }
    CHECK_EQ_U64(t_saved(&t, "ln"), 400);
    t_free(&t);
}

/* GroupNorm(2, 8) on [2, 8, 4, 4]: weight 8 + bias 8; saved: input 1024 +
 * mean and rstd [N, G] = [2, 2] fp32: 16 + 16 = 1056 (catalog). On a
 * permuted (non-contiguous) input, the contiguous copy is saved instead. */
static void test_groupnorm(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [8, 4, 4]}],"
         " 'layers': [{'name': 'gn', 'type': 'groupnorm', 'num_groups': 2, 'num_channels': 8}]}",
         2);
    CHECK_EQ_U64(t_params_total(&t, "gn"), 16);
    CHECK_EQ_U64(t_saved(&t, "gn"), 1056);
    CHECK(t_saves_storage(&t, "gn", t_storage(&t, "x", 0)));
    t_free(&t);
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [4, 4, 8]}],"
         " 'layers': [{'name': 'p', 'type': 'permute', 'dims': [0, 3, 1, 2]},"
         "            {'name': 'gn', 'type': 'groupnorm', 'num_groups': 2, 'num_channels': 8}]}",
         2);
    CHECK_EQ_U64(t_saved(&t, "gn"), 1056);
    CHECK(!t_saves_storage(&t, "gn", t_storage(&t, "x", 0)));
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [8, 4, 4]}],"
                           " 'layers': [{'type': 'groupnorm', 'num_groups': 3,"
                           "             'num_channels': 8}]}",
                           2),
                   "num_channels (8) must be divisible by num_groups (3)");
    t_free(&t);
}

/* InstanceNorm2d(3, affine=True) on [2, 3, 8, 8]: batch_norm on the input
 * viewed as [1, 6, 8, 8]: saves the input (1536 bytes), save_mean and
 * save_invstd [6] fp32 (24 + 24) and weight.repeat(2) [6] (24): 1608. */
static void test_instancenorm(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [3, 8, 8]}],"
         " 'layers': [{'name': 'in', 'type': 'instancenorm2d', 'num_features': 3,"
         "             'affine': true}]}",
         2);
    CHECK_EQ_U64(t_params_total(&t, "in"), 6);
    CHECK_EQ_U64(t_saved(&t, "in"), 1608);
    t_free(&t);
}

/* BatchNorm3d(4) on [2, 4, 3, 6, 6]: weight 4 + bias 4; saves the input
 * 2*4*3*6*6*4 = 3456 bytes + save_mean and save_invstd [4] fp32 = 16 + 16:
 * 3488 (tests/reference/vision_ops_saved_*.md, 1.13 and 2.6). */
static void test_batchnorm3d(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [4, 3, 6, 6], 'requires_grad': true}],"
         " 'layers': [{'name': 'bn', 'type': 'batchnorm3d', 'num_features': 4}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "bn", 0), "[2, 4, 3, 6, 6]");
    CHECK_EQ_U64(t_params_total(&t, "bn"), 8);
    CHECK_EQ_U64(t_buffer(&t, "bn", "running_var"), 4);
    CHECK_EQ_U64(t_saved(&t, "bn"), 3488);
    CHECK(t_saves_storage(&t, "bn", t_storage(&t, "x", 0)));
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [4, 6, 6]}],"
                           " 'layers': [{'type': 'batchnorm3d'}]}",
                           2),
                   "expects a 5-D (N, C, D, H, W) input, got [2, 4, 6, 6]");
    t_free(&t);
}

/* Norms on a permuted input, as vision_ops_saved_*.md measures them:
 *   LayerNorm(6) on x[2, 6, 4, 5].permute(0, 2, 3, 1) (ConvNeXt): saves the
 *     permuted input itself (x's storage, 2*6*4*5*4 = 960 bytes) and mean
 *     and rstd [2, 4, 5, 1] (160 + 160): 1280; the output is a new
 *     contiguous [2, 4, 5, 6]; native_layer_norm's contiguous copy of the
 *     input (960 bytes) lives only inside the forward, and again inside
 *     the backward (the torch.profiler memory events of aten::contiguous
 *     under native_layer_norm and its backward, PyTorch 2.6);
 *   BatchNorm2d(6) on x[2, 5, 6, 4].permute(0, 2, 1, 3): 960 + 24 + 24 =
 *     1008 bytes, as measured; on CUDA cuDNN gets the input's contiguous
 *     copy, which is what it saves (not x's storage; the CPU saves the
 *     view). A channels-last input (x[2, 5, 4, 6].permute(0, 3, 1, 2)) is
 *     no copy: x's storage is saved. */
static void test_norms_permuted(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [6, 4, 5], 'requires_grad': true}],"
         " 'layers': [{'name': 'p', 'type': 'permute', 'dims': [0, 2, 3, 1]},"
         "            {'name': 'ln', 'type': 'layernorm', 'normalized_shape': 6}]}",
         2);
    CHECK_EQ_U64(t_saved(&t, "ln"), 1280);
    CHECK(t_saves_storage(&t, "ln", t_storage(&t, "x", 0)));
    CHECK_STR_EQ(t_strides(&t, "ln", 0), "[120, 30, 6, 1]");
    CHECK_EQ_U64(t_info(&t, "ln")->work_bytes, 960);
    CHECK_EQ_U64(t_info(&t, "ln")->bwd_work_bytes, 960);
    /* and its backward reads the output's gradient contiguous (a copy when
     * LayerNorm2d's permute back hands it a permuted view: the profile of
     * NativeLayerNormBackward0 in PyTorch 2.6 shows two 960-byte copies) */
    CHECK(t_info(&t, "ln")->bwd_flags & MEMEST_BWD_CONTIG_OUT);
    t_free(&t);
    /* contiguous: no copy either way */
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [4, 5, 6], 'requires_grad': true}],"
         " 'layers': [{'name': 'ln', 'type': 'layernorm', 'normalized_shape': 6}]}",
         2);
    CHECK_EQ_U64(t_info(&t, "ln")->work_bytes, 0);
    CHECK_EQ_U64(t_info(&t, "ln")->bwd_work_bytes, 0);
    t_free(&t);
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [5, 6, 4], 'requires_grad': true},"
         "            {'name': 'y', 'shape': [5, 4, 6], 'requires_grad': true}],"
         " 'layers': [{'name': 'p', 'type': 'permute', 'inputs': ['x'], 'dims': [0, 2, 1, 3]},"
         "            {'name': 'bn', 'type': 'batchnorm2d'},"
         "            {'name': 'q', 'type': 'permute', 'inputs': ['y'], 'dims': [0, 3, 1, 2]},"
         "            {'name': 'cl', 'type': 'batchnorm2d'}]}",
         2);
    CHECK_EQ_U64(t_saved(&t, "bn"), 1008);
    CHECK(!t_saves_storage(&t, "bn", t_storage(&t, "x", 0)));
    CHECK_EQ_U64(t_saved(&t, "cl"), 1008);
    CHECK(t_saves_storage(&t, "cl", t_storage(&t, "y", 0)));
    t_free(&t);
}

int main(void)
{
    test_batchnorm2d();
    test_batchnorm_half();
    test_batchnorm1d();
    test_layernorm();
    test_layernorm_half();
    test_groupnorm();
    test_instancenorm();
    test_batchnorm3d();
    test_norms_permuted();
    return CHECK_DONE();
}
