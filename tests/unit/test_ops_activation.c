/* test_ops_activation.c - activations, softmax, dropout, identity: what is
 * saved (output, input, a clone, a mask), in place or not. All on
 * x[2, 8, 4, 4] fp32 requiring grad: 256 elements, 1024 bytes. */
#include "check.h"
#include "ops_test.h"

#define X_RG "{'inputs': [{'name': 'x', 'shape': [8, 4, 4], 'requires_grad': true}], 'layers': ["

/* relu saves its output: a new 1024-byte storage; in place, the output is
 * the input's storage and that is what is saved. */
static void test_relu(void)
{
    struct t_model t;
    LOAD(&t,
         X_RG "{'name': 'r', 'type': 'relu'},"
              "{'name': 'ri', 'type': 'relu', 'inputs': ['x'], 'inplace': true}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "r", 0), "[2, 8, 4, 4]");
    CHECK(t_storage(&t, "r", 0) != t_storage(&t, "x", 0));
    CHECK(t_saves_storage(&t, "r", t_storage(&t, "r", 0)));
    CHECK_EQ_U64(t_saved(&t, "r"), 1024);
    CHECK(t_storage(&t, "ri", 0) == t_storage(&t, "x", 0));
    CHECK(t_saves_storage(&t, "ri", t_storage(&t, "x", 0)));
    CHECK_EQ_U64(t_saved(&t, "ri"), 1024);
    t_free(&t);
}

/* Ops whose formula needs the input: gelu, silu, relu6 (hardtanh) save the
 * input; in place, autograd saves a clone of the input taken before it is
 * overwritten: a new 1024-byte storage (catalog: ReLU6/SiLU inplace "new").
 * leaky_relu_ and elu_ save their result instead (the input's storage). */
static void test_saves_input(void)
{
    struct t_model t;
    LOAD(&t,
         X_RG "{'name': 'g', 'type': 'gelu', 'approximate': 'tanh'},"
              "{'name': 's', 'type': 'silu', 'inputs': ['x']},"
              "{'name': 'r6', 'type': 'relu6', 'inputs': ['x']},"
              "{'name': 'sp', 'type': 'softplus', 'inputs': ['x']},"
              "{'name': 'lr', 'type': 'leakyrelu', 'inputs': ['x']}]}",
         2);
    const char *names[] = {"g", "s", "r6", "sp", "lr"};
    for (int i = 0; i < 5; i++) {
        CHECK(t_saves_storage(&t, names[i], t_storage(&t, "x", 0)));
        CHECK_EQ_U64(t_saved(&t, names[i]), 1024);
    }
    t_free(&t);
    LOAD(&t,
         X_RG "{'name': 'a', 'type': 'hardtanh', 'min_val': -2, 'max_val': 2},"
              "{'name': 'r6', 'type': 'relu6', 'inplace': true}]}",
         2);
    CHECK(t_storage(&t, "r6", 0) == t_storage(&t, "a", 0));
    CHECK(!t_saves_storage(&t, "r6", t_storage(&t, "a", 0)));
    CHECK_EQ_U64(t_saved(&t, "r6"), 1024);
    t_free(&t);
    LOAD(&t,
         X_RG "{'name': 'a', 'type': 'tanh'},"
              "{'name': 'lr', 'type': 'leakyrelu', 'negative_slope': 0.2, 'inplace': true},"
              "{'name': 'e', 'type': 'elu', 'inplace': true}]}",
         2);
    CHECK(t_storage(&t, "e", 0) == t_storage(&t, "a", 0));
    CHECK(t_saves_storage(&t, "lr", t_storage(&t, "a", 0)));
    CHECK(t_saves_storage(&t, "e", t_storage(&t, "a", 0)));
    CHECK_EQ_U64(t_saved(&t, "e"), 1024);
    t_free(&t);
}

/* sigmoid, tanh, softmax, log_softmax save their output. Softmax without
 * dim on a 4-D input uses dim 1 (legacy rule): the shape is unchanged. */
static void test_saves_output(void)
{
    struct t_model t;
    LOAD(&t,
         X_RG "{'name': 'sg', 'type': 'sigmoid'},"
              "{'name': 'sm', 'type': 'softmax', 'inputs': ['x']},"
              "{'name': 'lsm', 'type': 'logsoftmax', 'inputs': ['x'], 'dim': -1}]}",
         2);
    CHECK(t_saves_storage(&t, "sg", t_storage(&t, "sg", 0)));
    CHECK(t_saves_storage(&t, "sm", t_storage(&t, "sm", 0)));
    CHECK(t_saves_storage(&t, "lsm", t_storage(&t, "lsm", 0)));
    CHECK_EQ_U64(t_saved(&t, "lsm"), 1024);
    CHECK_STR_EQ(t_shape(&t, "sm", 0), "[2, 8, 4, 4]");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, X_RG "{'type': 'softmax', 'dim': 4}]}", 2),
                   "dim 4 is out of range for a 4-D input");
    t_free(&t);
}

/* Dropout(0.1), training, on CUDA: native_dropout saves a bool mask of the
 * input's size: 256 bytes (the CPU saves a float one, 1024). In place
 * (dropout_), the float noise is saved: 1024, and the output is the input.
 * p = 0 returns the input itself and saves nothing. Dropout2d(0.5) saves
 * noise [N, C, 1, 1] = [2, 8, 1, 1] fp32: 64 bytes. */
static void test_dropout(void)
{
    struct t_model t;
    LOAD(&t,
         X_RG "{'name': 'd', 'type': 'dropout', 'p': 0.1},"
              "{'name': 'a', 'type': 'relu', 'inputs': ['x']},"
              "{'name': 'di', 'type': 'dropout', 'p': 0.1, 'inplace': true},"
              "{'name': 'd0', 'type': 'dropout', 'inputs': ['x'], 'p': 0},"
              "{'name': 'd2', 'type': 'dropout2d', 'inputs': ['x']}]}",
         2);
    CHECK(t_storage(&t, "d", 0) != t_storage(&t, "x", 0));
    CHECK_EQ_U64(t_saved(&t, "d"), 256);
    CHECK(t_storage(&t, "di", 0) == t_storage(&t, "a", 0));
    CHECK_EQ_U64(t_saved(&t, "di"), 1024);
    CHECK(t_storage(&t, "d0", 0) == t_storage(&t, "x", 0));
    CHECK_EQ_U64(t_nsaved(&t, "d0"), 0);
    CHECK_EQ_U64(t_saved(&t, "d2"), 64);
    t_free(&t);
}

/* Identity is the input itself. An input without grad makes relu record
 * nothing. */
static void test_identity_and_no_grad(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [8]}],"
         " 'layers': [{'name': 'id', 'type': 'identity'},"
         "            {'name': 'r', 'type': 'relu'}]}",
         2);
    CHECK(t_storage(&t, "id", 0) == t_storage(&t, "x", 0));
    CHECK_EQ_U64(t_nsaved(&t, "r"), 0);
    CHECK(!t_out(&t, "r", 0)->requires_grad);
    t_free(&t);
}

static void test_activation_errors(void)
{
    struct t_model t;
    CHECK_CONTAINS(t_error(&t, X_RG "{'type': 'hardtanh', 'min_val': 1, 'max_val': 1}]}", 2),
                   "max_val (1) must be greater than min_val (1)");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [8], 'dtype': 'int64'}],"
                           " 'layers': [{'type': 'gelu'}]}",
                           2),
                   "expects a floating-point input, got int64");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           X_RG "{'type': 'relu'}, {'type': 'leakyrelu', 'negative_slope': -0.5,"
                                " 'inplace': true}]}",
                           2),
                   "in-place leaky_relu with a negative slope");
    t_free(&t);
}

/* torchvision.ops.StochasticDepth on [4, 8, 5, 5] (vision_ops_saved_*.md,
 * 1.13 and 2.6): "row" saves the noise [4, 1, 1, 1] fp32 = 16 bytes (also
 * for p = 1), "batch" [1, 1, 1, 1] = 4; the output is new; p = 0 returns
 * the input itself; without grad nothing is saved. */
static void test_stochasticdepth(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [8, 5, 5], 'requires_grad': true},"
         "            {'name': 'y', 'shape': [6, 10]}],"
         " 'layers': [{'name': 'row', 'type': 'stochasticdepth', 'p': 0.2, 'mode': 'row'},"
         "            {'name': 'b', 'type': 'stochasticdepth', 'inputs': ['x'], 'p': 0.2,"
         "             'mode': 'batch'},"
         "            {'name': 'p1', 'type': 'stochasticdepth', 'inputs': ['x'], 'p': 1,"
         "             'mode': 'row'},"
         "            {'name': 'p0', 'type': 'stochasticdepth', 'inputs': ['x'], 'p': 0,"
         "             'mode': 'row'},"
         "            {'name': 'ng', 'type': 'stochasticdepth', 'inputs': ['y'], 'p': 0.5,"
         "             'mode': 'row'}]}",
         4);
    CHECK_STR_EQ(t_shape(&t, "row", 0), "[4, 8, 5, 5]");
    CHECK(t_storage(&t, "row", 0) != t_storage(&t, "x", 0));
    CHECK_EQ_U64(t_saved(&t, "row"), 16);
    CHECK_EQ_U64(t_saved(&t, "b"), 4);
    CHECK_EQ_U64(t_saved(&t, "p1"), 16);
    CHECK(t_storage(&t, "p0", 0) == t_storage(&t, "x", 0));
    CHECK_EQ_U64(t_nsaved(&t, "p0"), 0);
    CHECK_EQ_U64(t_nsaved(&t, "ng"), 0);
    CHECK_STR_EQ(t_shape(&t, "ng", 0), "[4, 6, 10]");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, X_RG "{'type': 'stochasticdepth', 'p': 0.1, 'mode': 'col'}]}", 2),
                   "row|batch");
    t_free(&t);
}

int main(void)
{
    test_relu();
    test_saves_input();
    test_saves_output();
    test_dropout();
    test_identity_and_no_grad();
    test_activation_errors();
    test_stochasticdepth();
    return CHECK_DONE();
}
