/* test_ops_sample.c - grid_sample and unfold (src/ops/ops_sample.c): sizes,
 * strides, storages and what is saved, against PyTorch (the grid_sample and
 * unfold cases at the end of tests/reference/ops_b_saved_113.txt and
 * _26.txt) and hand-worked geometry. The tensors are linear layers'
 * outputs, activations that require grad as the measured ones do:
 * x [2, 3, 5, 7] (float32: 210 elements, 840 bytes) and the grid
 * g [2, 4, 6, 2] (48 elements, 384 bytes). */
#include "check.h"
#include "ops_test.h"

#define XG_MODEL(layers)                                                                        \
    "{'inputs': [{'name': 'a', 'shape': [3, 5, 7]}, {'name': 'b', 'shape': [4, 6, 2]}],"        \
    " 'layers': [{'name': 'x', 'type': 'linear', 'inputs': ['a'], 'out_features': 7},"          \
    " {'name': 'g', 'type': 'linear', 'inputs': ['b'], 'out_features': 2}, " layers "]}"

/* Output (N, C, H_out, W_out) = [2, 3, 4, 6], contiguous (strides
 * [3*4*6, 4*6, 6, 1] = [72, 24, 6, 1]), a new storage. Saved: x and g
 * themselves, 840 + 384 = 1224 bytes, for every mode and padding mode and
 * under both versions ("grid_sample bilinear" ... "bicubic reflection":
 * saved 1224). No MACs. */
static void test_grid_sample(void)
{
    static const char *const modes[] = {"'mode': 'bilinear'",
                                        "'mode': 'bilinear', 'align_corners': true",
                                        "'mode': 'nearest', 'padding_mode': 'border'",
                                        "'mode': 'bicubic', 'padding_mode': 'reflection'"};
    for (int torch = 0; torch < 2; torch++)
        for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
            char json[1024];
            snprintf(json, sizeof json,
                     XG_MODEL("{'name': 's', 'type': 'grid_sample', 'inputs': ['x', 'g'], %s}"),
                     modes[i]);
            struct t_model t;
            LOAD_OPTS(&t, json, .batch = 2, .dtype = MEMEST_F32, .torch = torch ? 113 : 0);
            CHECK_STR_EQ(t_shape(&t, "s", 0), "[2, 3, 4, 6]");
            CHECK_STR_EQ(t_strides(&t, "s", 0), "[72, 24, 6, 1]");
            CHECK(t_storage(&t, "s", 0) != t_storage(&t, "x", 0));
            CHECK(t_storage(&t, "s", 0) != t_storage(&t, "g", 0));
            CHECK_EQ_U64(t_saved(&t, "s"), 1224);
            CHECK(t_saves_storage(&t, "s", t_storage(&t, "x", 0)));
            CHECK(t_saves_storage(&t, "s", t_storage(&t, "g", 0)));
            CHECK(t_fwd(&t, "s") == 0 && t_bwd(&t, "s") == 0);
            t_free(&t);
        }
}

/* A grid that requires no grad (a model input: "grid_sample grid frozen")
 * is saved all the same: 840 + 384 = 1224. 5-D: x5 [2, 3, 4, 5, 6] (720
 * elements, 2880 bytes), g5 [2, 3, 4, 5, 3] (360, 1440 bytes): output
 * [2, 3, 3, 4, 5] (strides [180, 60, 20, 5, 1]), saved 4320 ("grid_sample
 * 5-D"). */
static void test_grid_sample_frozen_5d(void)
{
    struct t_model t;
    LOAD(&t,
         XG_MODEL("{'name': 's', 'type': 'grid_sample', 'inputs': ['x', 'b']}"), 2);
    CHECK(!t_out(&t, "b", 0)->requires_grad);
    CHECK_EQ_U64(t_saved(&t, "s"), 1224);
    t_free(&t);
    LOAD(&t,
         "{'inputs': [{'name': 'a', 'shape': [3, 4, 5, 6]}, {'name': 'b', 'shape': [3, 4, 5, 3]}],"
         " 'layers': [{'name': 'x', 'type': 'linear', 'inputs': ['a'], 'out_features': 6},"
         " {'name': 'g', 'type': 'linear', 'inputs': ['b'], 'out_features': 3},"
         " {'name': 's', 'type': 'grid_sample', 'inputs': ['x', 'g'], 'mode': 'nearest'}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "s", 0), "[2, 3, 3, 4, 5]");
    CHECK_STR_EQ(t_strides(&t, "s", 0), "[180, 60, 20, 5, 1]");
    CHECK_EQ_U64(t_saved(&t, "s"), 4320);
    t_free(&t);
}

/* Under autocast x is float16 (a linear's output) and the grid float32
 * (cast back): grid_sampler's "promote" reads a float32 copy of x, which is
 * saved instead of x: 210 * 4 = 840 bytes, plus the grid's 384 = 1224; the
 * output is float32. */
static void test_grid_sample_amp(void)
{
    struct t_model t;
    LOAD_OPTS(&t,
              XG_MODEL("{'name': 'g32', 'type': 'to', 'inputs': ['g'], 'dtype': 'float32'},"
                       "{'name': 's', 'type': 'grid_sample', 'inputs': ['x', 'g32']}"),
              .batch = 2, .dtype = MEMEST_F32, .amp = true, .amp_dtype = MEMEST_F16);
    CHECK(t_out(&t, "x", 0)->dtype == MEMEST_F16);
    CHECK(t_out(&t, "s", 0)->dtype == MEMEST_F32);
    CHECK(!t_saves_storage(&t, "s", t_storage(&t, "x", 0)));
    CHECK(t_saves_storage(&t, "s", t_storage(&t, "g32", 0)));
    CHECK_EQ_U64(t_saved(&t, "s"), 1224);
    t_free(&t);
}

static void check_error(const char *layers, const char *want)
{
    char json[1024];
    snprintf(json, sizeof json, XG_MODEL("%s"), layers);
    struct t_model t;
    CHECK_CONTAINS(t_error(&t, json, 2), want);
    t_free(&t);
}

static void test_grid_sample_errors(void)
{
    check_error("{'name': 'p', 'type': 'parameter', 'shape': [3, 4, 6, 2]},"
                "{'type': 'grid_sample', 'inputs': ['x', 'p']}",
                "grid_sampler(): expected grid and input to have same batch size, but got input "
                "with sizes [2, 3, 5, 7] and grid with sizes [3, 4, 6, 2]");
    check_error("{'name': 'p', 'type': 'parameter', 'shape': [2, 4, 6, 3]},"
                "{'type': 'grid_sample', 'inputs': ['x', 'p']}",
                "grid_sampler(): expected grid to have size 2 in last dimension, but got grid "
                "with sizes [2, 4, 6, 3]");
    check_error("{'name': 'p', 'type': 'parameter', 'shape': [2, 4, 6, 5, 2]},"
                "{'type': 'grid_sample', 'inputs': ['x', 'p']}",
                "grid_sampler(): expected 4D input and grid with same number of dimensions, but "
                "got input with sizes [2, 3, 5, 7] and grid with sizes [2, 4, 6, 5, 2]");
    check_error("{'type': 'grid_sample', 'inputs': ['x', 'g'], 'mode': 'linear'}",
                "\"linear\" is not one of bilinear|nearest|bicubic");
    check_error("{'type': 'grid_sample', 'inputs': ['x', 'g'], 'padding_mode': 'x'}",
                "\"x\" is not one of zeros|border|reflection");
    check_error("{'name': 'h', 'type': 'to', 'inputs': ['g'], 'dtype': 'float16'},"
                "{'type': 'grid_sample', 'inputs': ['x', 'h']}",
                "grid_sampler(): expected input and grid to have same dtype, but input has "
                "fp32 and grid has fp16");
    check_error("{'name': 'x5', 'type': 'unsqueeze', 'inputs': ['x'], 'dim': 2},"
                "{'name': 'p', 'type': 'parameter', 'shape': [2, 1, 4, 6, 3]},"
                "{'type': 'grid_sample', 'inputs': ['x5', 'p'], 'mode': 'bicubic'}",
                "grid_sampler(): bicubic interpolation only supports 4D input");
}

/* unfold of x [2, 3, 5, 7]:
 *   k 3: out = (5 - 2 - 1) / 1 + 1 = 3, (7 - 3) + 1 = 5: L = 15, C*k*k = 27:
 *     [2, 27, 15], strides [405, 15, 1];
 *   k (2, 3), dilation 2, padding 1, stride 2: floor((5 + 2 - 2 - 1) / 2) + 1
 *     = 3, floor((7 + 2 - 4 - 1) / 2) + 1 = 3: L = 9, 3 * 6 = 18: [2, 18, 9];
 *   k 2, stride 2 (nn.Unfold): floor(3 / 2) + 1 = 2, floor(5 / 2) + 1 = 3:
 *     [2, 12, 6].
 * A new storage each. Saved: nothing under 2.x ("unfold k3": saved 0), x
 * itself (840 bytes) under 1.13 ("unfold k3": saved 840). */
static void test_unfold(void)
{
    for (int torch = 0; torch < 2; torch++) {
        struct t_model t;
        LOAD_OPTS(&t,
                  XG_MODEL("{'name': 'u', 'type': 'unfold', 'inputs': ['x'], 'kernel_size': 3},"
                           "{'name': 'v', 'type': 'unfold', 'inputs': ['x'],"
                           " 'kernel_size': [2, 3], 'dilation': 2, 'padding': 1, 'stride': 2},"
                           "{'name': 'w', 'type': 'unfold', 'inputs': ['x'],"
                           " 'kernel_size': 2, 'stride': [2, 2]}"),
                  .batch = 2, .dtype = MEMEST_F32, .torch = torch ? 113 : 0);
        CHECK_STR_EQ(t_shape(&t, "u", 0), "[2, 27, 15]");
        CHECK_STR_EQ(t_strides(&t, "u", 0), "[405, 15, 1]");
        CHECK_STR_EQ(t_shape(&t, "v", 0), "[2, 18, 9]");
        CHECK_STR_EQ(t_shape(&t, "w", 0), "[2, 12, 6]");
        CHECK(t_storage(&t, "u", 0) != t_storage(&t, "x", 0));
        uint64_t want = torch ? 840 : 0;
        CHECK_EQ_U64(t_saved(&t, "u"), want);
        CHECK_EQ_U64(t_saved(&t, "v"), want);
        CHECK_EQ_U64(t_saved(&t, "w"), want);
        CHECK(t_fwd(&t, "u") == 0);
        t_free(&t);
    }
}

/* Unbatched (C, H, W) = [3, 5, 7] (batch 1, x[0]): [27, 15]; under 1.13
 * the input's storage, 105 * 4 = 420 bytes, is saved ("unfold unbatched
 * k3"). */
static void test_unfold_unbatched(void)
{
    struct t_model t;
    LOAD_OPTS(&t,
              XG_MODEL("{'name': 'x0', 'type': 'select', 'inputs': ['x'], 'dim': 0, 'index': 0},"
                       "{'name': 'u', 'type': 'unfold', 'inputs': ['x0'], 'kernel_size': 3}"),
              .batch = 1, .dtype = MEMEST_F32, .torch = 113);
    CHECK_STR_EQ(t_shape(&t, "u", 0), "[27, 15]");
    CHECK_STR_EQ(t_strides(&t, "u", 0), "[15, 1]");
    CHECK_EQ_U64(t_saved(&t, "u"), 420);
    t_free(&t);
}

static void test_unfold_errors(void)
{
    check_error("{'type': 'unfold', 'inputs': ['x'], 'kernel_size': [4, 9]}",
                "Given input with spatial size (5, 7), kernel_size=(4, 9), dilation=(1, 1), "
                "padding=(0, 0), calculated shape of the array of sliding blocks as (2, -1), but "
                "its components must be at least one.");
    check_error("{'name': 'x5', 'type': 'unsqueeze', 'inputs': ['x'], 'dim': 2},"
                "{'type': 'unfold', 'inputs': ['x5'], 'kernel_size': 1}",
                "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
                "non-zero dimensions for input, but got: [2, 3, 1, 5, 7]");
    check_error("{'type': 'unfold', 'inputs': ['g'], 'kernel_size': 1, 'stride': 0}",
                "stride");
    check_error("{'type': 'unfold', 'inputs': ['x'], 'kernel_size': [4503599627370496, 1],"
                " 'dilation': [4503599627370496, 1]}",
                "too large");
}

int main(void)
{
    test_grid_sample();
    test_grid_sample_frozen_5d();
    test_grid_sample_amp();
    test_grid_sample_errors();
    test_unfold();
    test_unfold_unbatched();
    test_unfold_errors();
    return CHECK_DONE();
}
