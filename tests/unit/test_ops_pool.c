/* test_ops_pool.c - max, average and adaptive pooling: output sizes (with
 * padding, dilation, ceil_mode), saved bytes, errors. */
#include "check.h"
#include "ops_test.h"

/* MaxPool2d(3, stride 2, padding 1) on [1, 64, 112, 112] (ResNet):
 *   out = floor((112 + 2 - 2 - 1)/2) + 1 = floor(111/2) + 1 = 56
 *   saved: the input 64*112*112*4 = 3211264 bytes + int64 indices of the
 *   output's size 64*56*56*8 = 1605632 bytes = 4816896. */
static void test_maxpool2d_resnet(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [64, 112, 112], 'requires_grad': true}],"
         " 'layers': [{'name': 'pool', 'type': 'maxpool2d', 'kernel_size': 3, 'stride': 2,"
         "             'padding': 1}]}",
         1);
    CHECK_STR_EQ(t_shape(&t, "pool", 0), "[1, 64, 56, 56]");
    CHECK_EQ_U64(t_saved(&t, "pool"), 4816896);
    CHECK(t_saves_storage(&t, "pool", t_storage(&t, "x", 0)));
    CHECK(t_fwd(&t, "pool") == 0);
    t_free(&t);
}

/* ceil_mode: k3 s2 on 8: ceil((8 - 2 - 1)/2) + 1 = ceil(2.5) + 1 = 4, and
 * the last window starts at (4-1)*2 = 6 < 8: kept, 4 (floor mode: 3).
 * k2 s2 p1 on 5: ceil((5 + 2 - 1 - 1)/2) + 1 = 4, but the last window would
 * start at (4-1)*2 = 6 >= 5 + 1: dropped, 3. */
static void test_maxpool2d_ceil(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [4, 8, 8]}, {'name': 'y', 'shape': [1, 5, 5]}],"
         " 'layers': [{'name': 'ceil', 'type': 'maxpool2d', 'kernel_size': 3, 'stride': 2,"
         "             'ceil_mode': true},"
         "            {'name': 'floor', 'type': 'maxpool2d', 'inputs': ['x'], 'kernel_size': 3,"
         "             'stride': 2},"
         "            {'name': 'drop', 'type': 'maxpool2d', 'inputs': ['y'], 'kernel_size': 2,"
         "             'stride': 2, 'padding': 1, 'ceil_mode': true}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "ceil", 0), "[2, 4, 4, 4]");
    CHECK_STR_EQ(t_shape(&t, "floor", 0), "[2, 4, 3, 3]");
    CHECK_STR_EQ(t_shape(&t, "drop", 0), "[2, 1, 3, 3]");
    t_free(&t);
}

/* Dilation: k3 d2 on 9: floor((9 - 2*2 - 1)/1) + 1 = 5 (stride = kernel = 3
 * by default: floor(4/3) + 1 = 2). return_indices: output 1 is the int64
 * indices, saved (no second copy): input 2*9*9*4 = 648 + 2*2*2*8 = 64. */
static void test_maxpool2d_dilation_indices(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [1, 9, 9], 'requires_grad': true}],"
         " 'layers': [{'name': 'p', 'type': 'maxpool2d', 'kernel_size': 3, 'dilation': 2,"
         "             'return_indices': true}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "p", 0), "[2, 1, 2, 2]");
    CHECK_EQ_U64(t_nout(&t, "p"), 2);
    CHECK(t_out(&t, "p", 1)->dtype == MEMEST_I64);
    CHECK(!t_out(&t, "p", 1)->requires_grad);
    CHECK_EQ_U64(t_saved(&t, "p"), 648 + 64);
    CHECK(t_saves_storage(&t, "p", t_storage(&t, "p", 1)));
    t_free(&t);
}

/* MaxPool1d(2) on [2, 3, 8]: out 4; saved input 2*3*8*4 = 192 + indices
 * 2*3*4*8 = 192. AvgPool1d(3, stride 2, padding 1) on 8: floor((8 + 2 - 2
 * - 1)/2) + 1 = 4; saves only its input. */
static void test_pool1d(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [3, 8], 'requires_grad': true}],"
         " 'layers': [{'name': 'mp', 'type': 'maxpool1d', 'kernel_size': 2},"
         "            {'name': 'ap', 'type': 'avgpool1d', 'inputs': ['x'], 'kernel_size': 3,"
         "             'stride': 2, 'padding': 1}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "mp", 0), "[2, 3, 4]");
    CHECK_EQ_U64(t_saved(&t, "mp"), 384);
    CHECK_STR_EQ(t_shape(&t, "ap", 0), "[2, 3, 4]");
    CHECK_EQ_U64(t_saved(&t, "ap"), 192);
    t_free(&t);
}

/* AvgPool2d(2) on [2, 4, 8, 8]: out 4 (stride defaults to the kernel);
 * saves the input 2*4*8*8*4 = 2048 bytes (the catalog). */
static void test_avgpool2d(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [4, 8, 8], 'requires_grad': true}],"
         " 'layers': [{'name': 'p', 'type': 'avgpool2d', 'kernel_size': 2}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "p", 0), "[2, 4, 4, 4]");
    CHECK_EQ_U64(t_saved(&t, "p"), 2048);
    t_free(&t);
}

/* Adaptive pools: the output size is the argument. AdaptiveAvgPool2d((7,7))
 * on [2, 4, 14, 14] saves the input (6272 bytes); (1) is computed as
 * mean(), which saves nothing in PyTorch 2.x and the input (6272) in 1.13,
 * as does AdaptiveAvgPool1d(1) (the 2-D op on x.unsqueeze(-2)).
 * AdaptiveMaxPool2d(1) saves the input and int64 indices [2, 4, 1, 1] =
 * 64 bytes in both. */
static void test_adaptive(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [4, 14, 14], 'requires_grad': true}],"
         " 'layers': [{'name': 'a7', 'type': 'adaptiveavgpool2d', 'output_size': [7, 7]},"
         "            {'name': 'a1', 'type': 'adaptiveavgpool2d', 'inputs': ['x'],"
         "             'output_size': 1},"
         "            {'name': 'm1', 'type': 'adaptivemaxpool2d', 'inputs': ['x'],"
         "             'output_size': 1}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "a7", 0), "[2, 4, 7, 7]");
    CHECK_STR_EQ(t_shape(&t, "a1", 0), "[2, 4, 1, 1]");
    CHECK_EQ_U64(t_saved(&t, "a7"), 6272);
    CHECK_EQ_U64(t_saved(&t, "a1"), 0);
    CHECK_EQ_U64(t_saved(&t, "m1"), 6272 + 64);
    t_free(&t);
    LOAD_OPTS(&t,
              "{'inputs': [{'name': 'x', 'shape': [4, 14, 14], 'requires_grad': true}],"
              " 'layers': [{'name': 'a1', 'type': 'adaptiveavgpool2d', 'output_size': [1, 1]}]}",
              .batch = 2, .dtype = MEMEST_F32, .torch = 113);
    CHECK_EQ_U64(t_saved(&t, "a1"), 6272);
    t_free(&t);
    /* 1-D on [2, 4, 14] (448 bytes): output 1 is the mean (2.x: nothing;
     * 1.13: the input), output 2 the pool (the input) */
    const char *one = "{'inputs': [{'name': 'x', 'shape': [4, 14], 'requires_grad': true}],"
                      " 'layers': [{'name': 'l1', 'type': 'adaptiveavgpool1d', 'output_size': 1},"
                      "            {'name': 'l2', 'type': 'adaptiveavgpool1d', 'inputs': ['x'],"
                      "             'output_size': 2}]}";
    LOAD(&t, one, 2);
    CHECK_EQ_U64(t_saved(&t, "l1"), 0);
    CHECK_EQ_U64(t_saved(&t, "l2"), 448);
    t_free(&t);
    LOAD_OPTS(&t, one, .batch = 2, .dtype = MEMEST_F32, .torch = 113);
    CHECK_EQ_U64(t_saved(&t, "l1"), 448);
    CHECK_EQ_U64(t_saved(&t, "l2"), 448);
    t_free(&t);
    /* a 1-d pool takes (N, C, L) or (C, L): 4-D is too many dims */
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [4, 14, 14]}],"
                           " 'layers': [{'type': 'adaptiveavgpool1d', 'output_size': 5}]}",
                           2),
                   "expects a 3-D or 2-D (N, C, L) or (C, L) input, got [2, 4, 14, 14]");
    t_free(&t);
}

/* The 3-D pools on [2, 4, 3, 6, 6] (input 2*4*3*6*6*4 = 3456 bytes; the
 * figures of tests/reference/vision_ops_saved_*.md, 1.13 and 2.6):
 *   MaxPool3d((1,3,3), (1,2,2), (0,1,1)) (the video ResNets' stem):
 *     D floor((3 - 0 - 1)/1) + 1 = 3, H = W floor((6 + 2 - 2 - 1)/2) + 1 = 3;
 *     saves the input + int64 indices 2*4*3*3*3*8 = 1728: 5184;
 *   MaxPool3d(3, 2, ceil_mode): D ceil((3 - 2 - 1)/2) + 1 = 1, H = W
 *     ceil((6 - 3)/2) + 1 = 3 (last window at 4 < 6); 3456 + 2*4*9*8 = 4032;
 *   AvgPool3d(2): [2, 4, 1, 3, 3], saves the input: 3456;
 *   AdaptiveAvgPool3d((1,2,2)): the input, 3456; to 1: the mean, nothing in
 *     2.x and the input in 1.13;
 *   AdaptiveMaxPool3d((1,2,2)): 3456 + indices 2*4*1*2*2*8 = 256: 3712. */
static void test_pool3d(void)
{
    struct t_model t;
    const char *json =
        "{'inputs': [{'name': 'x', 'shape': [4, 3, 6, 6], 'requires_grad': true}],"
        " 'layers': [{'name': 'stem', 'type': 'maxpool3d', 'kernel_size': [1, 3, 3],"
        "             'stride': [1, 2, 2], 'padding': [0, 1, 1]},"
        "            {'name': 'ceil', 'type': 'maxpool3d', 'inputs': ['x'], 'kernel_size': 3,"
        "             'stride': 2, 'ceil_mode': true},"
        "            {'name': 'avg', 'type': 'avgpool3d', 'inputs': ['x'], 'kernel_size': 2},"
        "            {'name': 'aa', 'type': 'adaptiveavgpool3d', 'inputs': ['x'],"
        "             'output_size': [1, 2, 2]},"
        "            {'name': 'a1', 'type': 'adaptiveavgpool3d', 'inputs': ['x'],"
        "             'output_size': 1},"
        "            {'name': 'am', 'type': 'adaptivemaxpool3d', 'inputs': ['x'],"
        "             'output_size': [1, 2, 2]}]}";
    LOAD(&t, json, 2);
    CHECK_STR_EQ(t_shape(&t, "stem", 0), "[2, 4, 3, 3, 3]");
    CHECK_EQ_U64(t_saved(&t, "stem"), 5184);
    CHECK_STR_EQ(t_shape(&t, "ceil", 0), "[2, 4, 1, 3, 3]");
    CHECK_EQ_U64(t_saved(&t, "ceil"), 4032);
    CHECK_STR_EQ(t_shape(&t, "avg", 0), "[2, 4, 1, 3, 3]");
    CHECK_EQ_U64(t_saved(&t, "avg"), 3456);
    CHECK_STR_EQ(t_shape(&t, "aa", 0), "[2, 4, 1, 2, 2]");
    CHECK_EQ_U64(t_saved(&t, "aa"), 3456);
    CHECK_STR_EQ(t_shape(&t, "a1", 0), "[2, 4, 1, 1, 1]");
    CHECK_EQ_U64(t_saved(&t, "a1"), 0);
    CHECK_EQ_U64(t_saved(&t, "am"), 3712);
    CHECK(t_fwd(&t, "stem") == 0 && t_fwd(&t, "am") == 0);
    t_free(&t);
    LOAD_OPTS(&t, json, .batch = 2, .dtype = MEMEST_F32, .torch = 113);
    CHECK_EQ_U64(t_saved(&t, "a1"), 3456);
    CHECK_EQ_U64(t_saved(&t, "stem"), 5184);
    t_free(&t);
    /* unbatched (C, D, H, W) */
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [3, 6, 6]}],"
         " 'layers': [{'name': 'p', 'type': 'maxpool3d', 'kernel_size': 3, 'padding': 1}]}",
         4);
    CHECK_STR_EQ(t_shape(&t, "p", 0), "[4, 1, 2, 2]");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [6, 6]}],"
                           " 'layers': [{'type': 'avgpool3d', 'kernel_size': 2}]}",
                           2),
                   "expects a 5-D or 4-D (N, C, D, H, W) or (C, D, H, W) input, got [2, 6, 6]");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [4, 3, 6, 6]}],"
                           " 'layers': [{'type': 'maxpool3d', 'kernel_size': [1, 2, 2],"
                           "             'padding': [0, 0, 2]}]}",
                           2),
                   "padding 2 should be at most half of kernel_size 2 (spatial dim 2)");
    t_free(&t);
}

static void test_pool_errors(void)
{
    struct t_model t;
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [4, 8, 8]}],"
                           " 'layers': [{'type': 'maxpool2d', 'kernel_size': 2, 'padding': 2}]}",
                           2),
                   "padding 2 should be at most half of kernel_size 2");
    t_free(&t);
    /* k5 on 3x3: floor((3 - 4 - 1)/5) + 1 = floor(-2/5) + 1 = 0 */
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [4, 3, 3]}],"
                           " 'layers': [{'type': 'avgpool2d', 'kernel_size': 5}]}",
                           2),
                   "output size is too small");
    t_free(&t);
}

int main(void)
{
    test_maxpool2d_resnet();
    test_maxpool2d_ceil();
    test_maxpool2d_dilation_indices();
    test_pool1d();
    test_avgpool2d();
    test_adaptive();
    test_pool3d();
    test_pool_errors();
    return CHECK_DONE();
}
