/* test_ops_resample.c - F.interpolate, nn.Upsample*, pixel (un)shuffle and
 * F.pad: output sizes (hand-computed from PyTorch's rules), saved bytes and
 * views (the figures of tests/reference/vision_ops_saved_*.md, identical
 * under PyTorch 1.13 and 2.6), errors. */
#include "check.h"
#include "ops_test.h"

#define X4 "{'inputs': [{'name': 'x', 'shape': [3, 5, 7], 'requires_grad': true}], 'layers': ["

/* A layer list after X4 and the message its error must contain. */
struct err_case {
    const char *layers, *message;
};

/* Node `name`'s output 0 has the sizes `shape`. */
struct shape_case {
    const char *name, *shape;
};

static void check_shapes(const struct t_model *t, const struct shape_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        CHECK_STR_EQ(t_shape(t, cases[i].name, 0), cases[i].shape);
}

static void check_errors(const struct err_case *cases, size_t n)
{
    struct t_model t;
    for (size_t i = 0; i < n; i++) {
        char json[600];
        snprintf(json, sizeof json, "%s%s", X4, cases[i].layers);
        CHECK_CONTAINS(t_error(&t, json, 2), cases[i].message);
        t_free(&t);
    }
}

/* On [2, 3, 5, 7]: scale 2 -> [10, 14]; scale 1.5 -> floor(7.5) = 7,
 * floor(10.5) = 10; size (9, 4) as given; size 11 broadcast to every
 * spatial dim. No upsample mode saves anything; every output is a new
 * tensor; no MACs. */
static void test_interpolate_sizes(void)
{
    struct t_model t;
    LOAD(&t,
         X4 "{'name': 's2', 'type': 'interpolate', 'scale_factor': 2},"
            "{'name': 's15', 'type': 'interpolate', 'inputs': ['x'], 'scale_factor': 1.5},"
            "{'name': 'bl', 'type': 'interpolate', 'inputs': ['x'], 'size': [9, 4],"
            " 'mode': 'bilinear', 'align_corners': false},"
            "{'name': 'aa', 'type': 'interpolate', 'inputs': ['x'], 'size': [9, 4],"
            " 'mode': 'bicubic', 'antialias': true},"
            "{'name': 'ne', 'type': 'interpolate', 'inputs': ['x'], 'size': 11,"
            " 'mode': 'nearest-exact'},"
            "{'name': 'rc', 'type': 'interpolate', 'inputs': ['x'], 'scale_factor': 0.5,"
            " 'mode': 'bilinear', 'recompute_scale_factor': true},"
            "{'name': 'up', 'type': 'upsample', 'inputs': ['x'], 'scale_factor': 2},"
            "{'name': 'un', 'type': 'upsamplingnearest2d', 'inputs': ['x'], 'scale_factor': 2},"
            "{'name': 'ub', 'type': 'upsamplingbilinear2d', 'inputs': ['x'], 'size': [9, 4]}]}",
         2);
    static const struct shape_case shapes[] = {
        {"s2", "[2, 3, 10, 14]"},
        {"s15", "[2, 3, 7, 10]"},
        {"bl", "[2, 3, 9, 4]"},
        {"aa", "[2, 3, 9, 4]"},
        {"ne", "[2, 3, 11, 11]"},
        {"rc", "[2, 3, 2, 3]"},
        {"up", "[2, 3, 10, 14]"},
        {"un", "[2, 3, 10, 14]"},
        {"ub", "[2, 3, 9, 4]"},
    };
    check_shapes(&t, shapes, sizeof shapes / sizeof *shapes);
    const char *nodes[] = {"s2", "s15", "bl", "aa", "ne", "rc", "up", "un", "ub"};
    for (size_t i = 0; i < sizeof nodes / sizeof *nodes; i++) {
        CHECK_EQ_U64(t_nsaved(&t, nodes[i]), 0);
        CHECK(t_storage(&t, nodes[i], 0) != t_storage(&t, "x", 0));
        CHECK(t_fwd(&t, nodes[i]) == 0);
        CHECK(t_out(&t, nodes[i], 0)->requires_grad);
    }
    t_free(&t);
    /* linear on [2, 3, 5] to 11; trilinear (1,2,2) needs a tuple: as a size,
     * [2, 3, 4, 5, 6] -> [4, 10, 12]; nearest 3-D scale 2 -> [8, 10, 12] */
    LOAD(&t,
         "{'inputs': [{'name': 'a', 'shape': [3, 5]}, {'name': 'b', 'shape': [3, 4, 5, 6]}],"
         " 'layers': [{'name': 'lin', 'type': 'interpolate', 'inputs': ['a'], 'size': 11,"
         "             'mode': 'linear'},"
         "            {'name': 'tri', 'type': 'interpolate', 'inputs': ['b'],"
         "             'size': [4, 10, 12], 'mode': 'trilinear'},"
         "            {'name': 'n3', 'type': 'interpolate', 'inputs': ['b'], 'scale_factor': 2}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "lin", 0), "[2, 3, 11]");
    CHECK_STR_EQ(t_shape(&t, "tri", 0), "[2, 3, 4, 10, 12]");
    CHECK_STR_EQ(t_shape(&t, "n3", 0), "[2, 3, 8, 10, 12]");
    t_free(&t);
}

/* Mode "area" is adaptive_avg_pool2d: to (2, 3) it saves the input
 * 2*3*5*7*4 = 840 bytes; to (1, 1) the mean (nothing in 2.x, the input in
 * 1.13). */
static void test_interpolate_area(void)
{
    struct t_model t;
    const char *json = X4 "{'name': 'a', 'type': 'interpolate', 'size': [2, 3], 'mode': 'area'},"
                          "{'name': 'a1', 'type': 'interpolate', 'inputs': ['x'], 'size': 1,"
                          " 'mode': 'area'}]}";
    LOAD(&t, json, 2);
    CHECK_STR_EQ(t_shape(&t, "a", 0), "[2, 3, 2, 3]");
    CHECK_EQ_U64(t_saved(&t, "a"), 840);
    CHECK(t_saves_storage(&t, "a", t_storage(&t, "x", 0)));
    CHECK_EQ_U64(t_nsaved(&t, "a1"), 0);
    t_free(&t);
    LOAD_OPTS(&t, json, .batch = 2, .dtype = MEMEST_F32, .torch = 113);
    CHECK_EQ_U64(t_saved(&t, "a1"), 840);
    t_free(&t);
}

static void test_interpolate_errors(void)
{
    static const struct err_case cases[] = {
        {"{'type': 'interpolate'}]}", "either size or scale_factor should be defined"},
        {"{'type': 'interpolate', 'size': 4, 'scale_factor': 2}]}",
         "only one of size or scale_factor should be defined"},
        {"{'type': 'interpolate', 'size': 4, 'recompute_scale_factor': true}]}",
         "recompute_scale_factor is not meaningful with an explicit size"},
        {"{'type': 'interpolate', 'size': [4, 4, 4]}]}",
         "an input with 2 spatial dimensions and an output size of 3"},
        /* floor(5 * 0.1) = 0 */
        {"{'type': 'interpolate', 'scale_factor': 0.1}]}",
         "input and output sizes should be greater than 0, but got input [2, 3, 5, 7] and "
         "output [2, 3, 0, 0]"},
        {"{'type': 'interpolate', 'scale_factor': 2, 'mode': 'trilinear'}]}",
         "got a 4-D input, but mode \"trilinear\" needs a 5-D input"},
        {"{'type': 'interpolate', 'scale_factor': 2, 'align_corners': true}]}",
         "align_corners can only be set with the interpolating modes"},
        {"{'type': 'interpolate', 'scale_factor': 2, 'mode': 'nearest', 'antialias': true}]}",
         "antialias is restricted to the bilinear and bicubic modes"},
        {"{'type': 'flatten'}, {'type': 'interpolate', 'scale_factor': 2}]}",
         "only 3-D, 4-D and 5-D inputs (N, C, spatial...) are supported, got [2, 105]"},
        {"{'type': 'pixelshuffle', 'upscale_factor': 2}]}",
         "pixel_shuffle expects the channel dimension (size 3) to be divisible by "
         "upscale_factor squared (4)"},
        {"{'type': 'pixelunshuffle', 'downscale_factor': 5}]}",
         "pixel_unshuffle expects height (5) and width (7) to be divisible by "
         "downscale_factor (5)"},
    };
    check_errors(cases, sizeof cases / sizeof *cases);
}

/* PixelShuffle(2) on [2, 8, 3, 5] -> [2, 2, 6, 10]; PixelUnshuffle(2) on
 * [2, 2, 6, 4] -> [2, 8, 3, 2]; new tensors, nothing saved; the first
 * reshape of math_pixel_shuffle only splits dims, so even a channels-last
 * input is viewed, not copied (no workspace). */
static void test_pixelshuffle(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [8, 3, 5], 'requires_grad': true},"
         "            {'name': 'y', 'shape': [2, 6, 4], 'requires_grad': true},"
         "            {'name': 'z', 'shape': [3, 5, 8], 'requires_grad': true}],"
         " 'layers': [{'name': 'ps', 'type': 'pixelshuffle', 'inputs': ['x'],"
         "             'upscale_factor': 2},"
         "            {'name': 'pu', 'type': 'pixelunshuffle', 'inputs': ['y'],"
         "             'downscale_factor': 2},"
         "            {'name': 'cl', 'type': 'permute', 'inputs': ['z'], 'dims': [0, 3, 1, 2]},"
         "            {'name': 'pc', 'type': 'pixelshuffle', 'upscale_factor': 2}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "ps", 0), "[2, 2, 6, 10]");
    CHECK_EQ_U64(t_nsaved(&t, "ps"), 0);
    CHECK(t_storage(&t, "ps", 0) != t_storage(&t, "x", 0));
    CHECK_EQ_U64(t_info(&t, "ps")->work_bytes, 0);
    CHECK_STR_EQ(t_shape(&t, "pu", 0), "[2, 8, 3, 2]");
    CHECK_EQ_U64(t_nsaved(&t, "pu"), 0);
    CHECK_STR_EQ(t_shape(&t, "pc", 0), "[2, 2, 6, 10]");
    CHECK_EQ_U64(t_info(&t, "pc")->work_bytes, 0);
    t_free(&t);
}

/* F.pad on [2, 3, 5, 7] (pairs from the last dim):
 *   (1, 2): W 7 + 3 = 10; (1, 2, 3, 0): [8, 10]; (-1, -2): W 4 (crop,
 *   still a new tensor); (2, -1, 0, 1): [6, 8]; constant saves nothing;
 *   reflect and replicate (1, 2, 3, 0): [8, 10], save the input (840);
 *   circular: [8, 10], nothing; reflect (1, 2) on [2, 3, 5]: 8, saves 120;
 *   replicate (1,1,1,1,1,1) on [2, 3, 4, 5, 6]: [6, 7, 8], saves 2880;
 *   Swin's window padding (0, 0, 1, 2, 3, 1) on the channel-last
 *   [2, 5, 7, 6]: [2, 9, 10, 6]. */
static void test_pad(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [3, 5, 7], 'requires_grad': true},"
         "            {'name': 'a', 'shape': [3, 5], 'requires_grad': true},"
         "            {'name': 'b', 'shape': [3, 4, 5, 6], 'requires_grad': true},"
         "            {'name': 'w', 'shape': [5, 7, 6], 'requires_grad': true}],"
         " 'layers': [{'name': 'c1', 'type': 'pad', 'inputs': ['x'], 'pad': [1, 2]},"
         "            {'name': 'c2', 'type': 'pad', 'inputs': ['x'], 'pad': [1, 2, 3, 0],"
         "             'value': 1.5},"
         "            {'name': 'crop', 'type': 'pad', 'inputs': ['x'], 'pad': [-1, -2]},"
         "            {'name': 'mix', 'type': 'pad', 'inputs': ['x'], 'pad': [2, -1, 0, 1]},"
         "            {'name': 'rf', 'type': 'pad', 'inputs': ['x'], 'pad': [1, 2, 3, 0],"
         "             'mode': 'reflect'},"
         "            {'name': 'rp', 'type': 'pad', 'inputs': ['x'], 'pad': [1, 2, 3, 0],"
         "             'mode': 'replicate'},"
         "            {'name': 'ci', 'type': 'pad', 'inputs': ['x'], 'pad': [1, 2, 3, 0],"
         "             'mode': 'circular'},"
         "            {'name': 'r1', 'type': 'pad', 'inputs': ['a'], 'pad': [1, 2],"
         "             'mode': 'reflect'},"
         "            {'name': 'r3', 'type': 'pad', 'inputs': ['b'], 'pad': [1, 1, 1, 1, 1, 1],"
         "             'mode': 'replicate'},"
         "            {'name': 'sw', 'type': 'pad', 'inputs': ['w'], 'pad': [0, 0, 1, 2, 3, 1]}]}",
         2);
    static const struct shape_case shapes[] = {
        {"c1", "[2, 3, 5, 10]"},
        {"c2", "[2, 3, 8, 10]"},
        {"crop", "[2, 3, 5, 4]"},
        {"mix", "[2, 3, 6, 8]"},
        {"rf", "[2, 3, 8, 10]"},
        {"rp", "[2, 3, 8, 10]"},
        {"ci", "[2, 3, 8, 10]"},
        {"r1", "[2, 3, 8]"},
        {"r3", "[2, 3, 6, 7, 8]"},
        {"sw", "[2, 9, 10, 6]"},
    };
    check_shapes(&t, shapes, sizeof shapes / sizeof *shapes);
    CHECK(t_storage(&t, "crop", 0) != t_storage(&t, "x", 0));
    const char *none[] = {"c1", "c2", "crop", "mix", "ci", "sw"};
    for (size_t i = 0; i < sizeof none / sizeof *none; i++)
        CHECK_EQ_U64(t_nsaved(&t, none[i]), 0);
    CHECK_EQ_U64(t_saved(&t, "rf"), 840);
    CHECK(t_saves_storage(&t, "rf", t_storage(&t, "x", 0)));
    CHECK_EQ_U64(t_saved(&t, "rp"), 840);
    CHECK_EQ_U64(t_saved(&t, "r1"), 120);
    CHECK_EQ_U64(t_saved(&t, "r3"), 2880);
    t_free(&t);
}

/* The limits checked with both PyTorch versions on [2, 3, 5] (and the 4-D
 * input): a constant pad may crop to 0 but not below; reflect pads must be
 * smaller than the dim and the output at least 1; circular pads at most
 * the dim. */
static void test_pad_errors(void)
{
    struct t_model t;
    static const struct err_case cases[] = {
        {"{'type': 'pad', 'pad': [1]}]}", "padding length must be divisible by 2"},
        {"{'type': 'pad', 'pad': [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]}]}",
         "padding length should be at most twice the input's dimensions"},
        {"{'type': 'pad', 'pad': [-4, -4]}]}",
         "the input size 7 with padding (-4, -4) gives the invalid output size -1 in "
         "dimension 3"},
        {"{'type': 'pad', 'pad': [7, 0, 0, 0], 'mode': 'reflect'}]}",
         "padding size should be less than the corresponding input dimension, but got padding "
         "(7, 0) at dimension 3"},
        {"{'type': 'pad', 'pad': [-3, -4, 0, 0], 'mode': 'replicate'}]}",
         "invalid output size 0 in dimension 3"},
        {"{'type': 'pad', 'pad': [8, 0, 0, 0], 'mode': 'circular'}]}",
         "wraps around more than once"},
        {"{'type': 'pad', 'pad': [1, 1], 'mode': 'reflect'}]}",
         "mode \"reflect\" pads the last 1, 2 or 3 dims of a batched or unbatched input"},
        {"{'type': 'pad', 'pad': [1, 1, 1, 1], 'mode': 'reflect', 'value': 1}]}",
         "padding mode \"reflect\" doesn't take a value argument"},
    };
    check_errors(cases, sizeof cases / sizeof *cases);
    /* cropping to 0 is allowed for constant; value 0 is allowed for reflect */
    LOAD(&t,
         X4 "{'name': 'z', 'type': 'pad', 'pad': [-3, -4]},"
            "{'name': 'r', 'type': 'pad', 'inputs': ['x'], 'pad': [1, 1, 1, 1],"
            " 'mode': 'reflect', 'value': 0}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "z", 0), "[2, 3, 5, 0]");
    CHECK_STR_EQ(t_shape(&t, "r", 0), "[2, 3, 7, 9]");
    t_free(&t);
}

int main(void)
{
    test_interpolate_sizes();
    test_interpolate_area();
    test_interpolate_errors();
    test_pixelshuffle();
    test_pad();
    test_pad_errors();
    return CHECK_DONE();
}
