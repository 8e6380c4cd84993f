/* test_ops_conv.c - conv1d/2d/3d and transposed convolutions: output sizes,
 * parameters, saved bytes and MACs against hand calculations. */
#include "check.h"
#include "ops_test.h"

/* ResNet stem: Conv2d(3, 64, 7, stride 2, padding 3, bias False) on
 * x[2, 3, 224, 224]:
 *   out = floor((224 + 2*3 - 1*(7-1) - 1) / 2) + 1 = floor(223/2) + 1 = 112
 *   weight 64*3*7*7 = 9408
 *   saved: the input, 2*3*224*224*4 = 1204224 bytes
 *   MACs = B * Cout * Cin * k*k * Hout*Wout = 2 * 64*3*49 * 112*112
 *        = 2 * 9408 * 12544 = 236027904; backward: grad(weight) only. */
static void test_conv2d_stem(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [3, 224, 224]}],"
         " 'layers': [{'name': 'conv1', 'type': 'conv2d', 'out_channels': 64, 'kernel_size': 7,"
         "             'stride': 2, 'padding': 3, 'bias': false}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "conv1", 0), "[2, 64, 112, 112]");
    CHECK_EQ_U64(t_param(&t, "conv1", "weight"), 9408);
    CHECK_EQ_U64(t_param(&t, "conv1", "bias"), 0);
    CHECK_EQ_U64(t_saved(&t, "conv1"), 1204224);
    CHECK(t_saves_storage(&t, "conv1", t_storage(&t, "x", 0)));
    CHECK(t_fwd(&t, "conv1") == 236027904.0);
    CHECK(t_bwd(&t, "conv1") == 236027904.0);
    t_free(&t);
}

/* Depthwise Conv2d(32, 32, 3, padding 1, groups 32) on [1, 32, 56, 56]:
 *   out 56 = floor((56 + 2 - 2 - 1)/1) + 1; weight 32*1*3*3 = 288, bias 32;
 *   MACs 32 * 1 * 9 * 56*56 = 903168. A middle layer (input requires
 *   grad): backward = 2 * 903168. */
static void test_conv2d_depthwise(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [32, 56, 56], 'requires_grad': true}],"
         " 'layers': [{'name': 'dw', 'type': 'conv2d', 'in_channels': 32, 'out_channels': 32,"
         "             'kernel_size': 3, 'padding': 1, 'groups': 32}]}",
         1);
    CHECK_STR_EQ(t_shape(&t, "dw", 0), "[1, 32, 56, 56]");
    CHECK_EQ_U64(t_param(&t, "dw", "weight"), 288);
    CHECK_EQ_U64(t_param(&t, "dw", "bias"), 32);
    CHECK(t_fwd(&t, "dw") == 903168.0);
    CHECK(t_bwd(&t, "dw") == 2 * 903168.0);
    t_free(&t);
}

/* Conv1d(16, 33, 3, stride 2) on [4, 16, 50]: out floor((50 - 2 - 1)/2) + 1
 * = 24; params 33*16*3 + 33 = 1617. Dilation: Conv2d k3 d2 on 10x10: out
 * floor((10 - 2*2 - 1)/1) + 1 = 6. Conv3d(2, 4, 3) on [1, 2, 5, 6, 7]:
 * out 3 x 4 x 5, weight 4*2*27 = 216. */
static void test_conv_other_dims(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [16, 50]}],"
         " 'layers': [{'name': 'c', 'type': 'conv1d', 'out_channels': 33, 'kernel_size': 3,"
         "             'stride': 2}]}",
         4);
    CHECK_STR_EQ(t_shape(&t, "c", 0), "[4, 33, 24]");
    CHECK_EQ_U64(t_params_total(&t, "c"), 1617);
    t_free(&t);
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [1, 10, 10]}],"
         " 'layers': [{'name': 'c', 'type': 'conv2d', 'out_channels': 1, 'kernel_size': 3,"
         "             'dilation': 2}]}",
         1);
    CHECK_STR_EQ(t_shape(&t, "c", 0), "[1, 1, 6, 6]");
    t_free(&t);
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [2, 5, 6, 7]}],"
         " 'layers': [{'name': 'c', 'type': 'conv3d', 'out_channels': 4, 'kernel_size': 3,"
         "             'bias': false}]}",
         1);
    CHECK_STR_EQ(t_shape(&t, "c", 0), "[1, 4, 3, 4, 5]");
    CHECK_EQ_U64(t_param(&t, "c", "weight"), 216);
    t_free(&t);
}

/* A 3-D input to conv2d is unbatched (C, H, W): Conv2d(3, 8, 3) on
 * [3, 10, 10] gives [8, 8, 8]. Here the "batch" is the channel dim. */
static void test_conv2d_unbatched(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [10, 10]}],"
         " 'layers': [{'name': 'c', 'type': 'conv2d', 'out_channels': 8, 'kernel_size': 3}]}",
         3);
    CHECK_STR_EQ(t_shape(&t, "c", 0), "[8, 8, 8]");
    CHECK(t_fwd(&t, "c") == 8.0 * 3 * 9 * 8 * 8);
    t_free(&t);
}

/* ConvTranspose2d(16, 8, 3, stride 2, padding 1, output_padding 1) on
 * [1, 16, 7, 7]: out = (7-1)*2 - 2*1 + 1*(3-1) + 1 + 1 = 14;
 * weight [in, out/groups, k, k] = 16*8*9 = 1152, bias 8;
 * MACs per input position Cin*Cout*k*k: 7*7 * 16*8*9 = 56448. */
static void test_convtranspose2d(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [16, 7, 7]}],"
         " 'layers': [{'name': 'up', 'type': 'convtranspose2d', 'out_channels': 8,"
         "             'kernel_size': 3, 'stride': 2, 'padding': 1, 'output_padding': 1}]}",
         1);
    CHECK_STR_EQ(t_shape(&t, "up", 0), "[1, 8, 14, 14]");
    CHECK_EQ_U64(t_param(&t, "up", "weight"), 1152);
    CHECK_EQ_U64(t_param(&t, "up", "bias"), 8);
    CHECK(t_fwd(&t, "up") == 56448.0);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [16, 7, 7]}],"
                           " 'layers': [{'type': 'convtranspose2d', 'out_channels': 8,"
                           "  'kernel_size': 3, 'stride': 1, 'output_padding': 1}]}",
                           1),
                   "output_padding (1) must be smaller than either stride (1) or dilation (1)");
    t_free(&t);
}

/* padding_mode: F.pad makes a padded [2, 3, 10, 10] tensor (2400 bytes)
 * that the convolution saves; reflect/replicate padding also saves its own
 * input [2, 3, 8, 8] (1536 bytes); circular saves nothing of its own. */
static void test_conv2d_padding_mode(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [3, 8, 8]}],"
         " 'layers': [{'name': 'c', 'type': 'conv2d', 'out_channels': 4, 'kernel_size': 3,"
         "             'padding': 1, 'padding_mode': 'reflect'}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "c", 0), "[2, 4, 8, 8]");
    CHECK_EQ_U64(t_saved(&t, "c"), 1536 + 2400);
    t_free(&t);
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [3, 8, 8]}],"
         " 'layers': [{'name': 'c', 'type': 'conv2d', 'out_channels': 4, 'kernel_size': 3,"
         "             'padding': 1, 'padding_mode': 'circular'}]}",
         2);
    CHECK_EQ_U64(t_saved(&t, "c"), 2400);
    t_free(&t);
}

/* The catalog: a conv saves its input even with frozen weights when the
 * input requires grad (backward = grad(input) only); frozen with an input
 * that does not require grad, nothing is recorded. */
static void test_conv2d_frozen(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [3, 8, 8], 'requires_grad': true}],"
         " 'layers': [{'name': 'c', 'type': 'conv2d', 'out_channels': 8, 'kernel_size': 3,"
         "             'padding': 1, 'trainable': false}]}",
         2);
    CHECK_EQ_U64(t_saved(&t, "c"), 2 * 3 * 8 * 8 * 4);
    CHECK(t_bwd(&t, "c") == t_fwd(&t, "c"));
    t_free(&t);
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [3, 8, 8]}],"
         " 'layers': [{'name': 'c', 'type': 'conv2d', 'out_channels': 8, 'kernel_size': 3,"
         "             'padding': 1, 'trainable': false}]}",
         2);
    CHECK_EQ_U64(t_nsaved(&t, "c"), 0);
    CHECK(t_bwd(&t, "c") == 0);
    t_free(&t);
}

static void test_conv_errors(void)
{
    struct t_model t;
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [3]}],"
                           " 'layers': [{'type': 'conv2d', 'out_channels': 8, 'kernel_size': 3}]}",
                           2),
                   "expects a 4-D (N, C, H, W) input or a 3-D unbatched (C, H, W) one, got [2, 3]");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [3, 32, 32]}],"
                           " 'layers': [{'type': 'conv2d', 'in_channels': 64, 'out_channels': 8,"
                           "  'kernel_size': 3}]}",
                           2),
                   "in_channels is 64 but the input has 3 channels");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [6, 32, 32]}],"
                           " 'layers': [{'type': 'conv2d', 'out_channels': 8, 'kernel_size': 3,"
                           "  'groups': 4}]}",
                           2),
                   "in_channels (6) must be divisible by groups (4)");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [3, 5, 5]}],"
                           " 'layers': [{'type': 'conv2d', 'out_channels': 8, 'kernel_size': 7}]}",
                           2),
                   "padded input size 5 is smaller than the dilated kernel size 7");
    t_free(&t);
}

int main(void)
{
    test_conv2d_stem();
    test_conv2d_depthwise();
    test_conv_other_dims();
    test_conv2d_unbatched();
    test_convtranspose2d();
    test_conv2d_padding_mode();
    test_conv2d_frozen();
    test_conv_errors();
    return CHECK_DONE();
}
