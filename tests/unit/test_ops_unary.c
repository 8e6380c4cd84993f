/* test_ops_unary.c - the elementwise unary ops, clamp, the comparisons, the
 * vector norms and the factories: what each saves for backward, in place
 * and not, against PyTorch (tests/reference/ops_b_saved_113.txt and
 * _26.txt: the same under both). x is a linear layer's [2, 8, 6] float32
 * output, 2*8*6*4 = 384 bytes, so that it requires grad. */
#include "check.h"
#include "ops_test.h"

#define X_MODEL(layers)                                                                         \
    "{'inputs': [{'name': 'a', 'shape': [8, 6]}],"                                              \
    " 'layers': [{'name': 'x', 'type': 'linear', 'inputs': ['a'], 'out_features': 6}, " layers \
    "]}"

/* Each op on x, then in place on a fresh copy of x (x * 1, a new tensor):
 * sqrt, rsqrt, exp, reciprocal save their result (the output; in place the
 * input's storage), log, sin, cos, erf, abs, clamp their input (in place a
 * new clone), neg nothing. 384 bytes whenever something is saved. */
static void test_saves(void)
{
    static const struct {
        const char *op;
        int saves; /* 0 nothing, 1 result, 2 self */
    } ops[] = {{"sqrt", 1}, {"rsqrt", 1}, {"exp", 1}, {"reciprocal", 1}, {"log", 2},
               {"sin", 2},  {"cos", 2},   {"erf", 2}, {"abs", 2},        {"neg", 0}};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        char json[700];
        snprintf(json, sizeof json,
                 X_MODEL("{'name': 'o', 'type': '%s', 'inputs': ['x']},"
                         "{'name': 'y', 'type': 'mul', 'inputs': ['x'], 'other': 1},"
                         "{'name': 'ip', 'type': '%s', 'inputs': ['y'], 'inplace': true}"),
                 ops[i].op, ops[i].op);
        struct t_model t;
        LOAD(&t, json, 2);
        CHECK_STR_EQ(t_shape(&t, "o", 0), "[2, 8, 6]");
        CHECK_EQ_U64(t_saved(&t, "o"), ops[i].saves ? 384 : 0);
        CHECK_EQ_U64(t_saved(&t, "ip"), ops[i].saves ? 384 : 0);
        CHECK(t_storage(&t, "ip", 0) == t_storage(&t, "y", 0));
        if (ops[i].saves == 1) {
            CHECK(t_saves_storage(&t, "o", t_storage(&t, "o", 0)));
            CHECK(t_saves_storage(&t, "ip", t_storage(&t, "y", 0)));
        } else if (ops[i].saves == 2) {
            CHECK(t_saves_storage(&t, "o", t_storage(&t, "x", 0)));
            CHECK(!t_saves_storage(&t, "ip", t_storage(&t, "y", 0)));
        }
        t_free(&t);
    }
}

/* clamp(x, min=0.1) and clamp(x, -1, 1) save x (384); clamp_ a clone. An
 * int64 input with a fractional bound becomes float. Neither bound: the
 * error PyTorch gives. */
static void test_clamp(void)
{
    struct t_model t;
    LOAD(&t,
         X_MODEL("{'name': 'c', 'type': 'clamp', 'inputs': ['x'], 'min': 0.1},"
                 "{'name': 'c2', 'type': 'clamp', 'inputs': ['x'], 'min': -1, 'max': 1},"
                 "{'name': 'i', 'type': 'arange', 'end': 5},"
                 "{'name': 'ci', 'type': 'clamp', 'inputs': ['i'], 'max': 2.5}"),
         2);
    CHECK_EQ_U64(t_saved(&t, "c"), 384);
    CHECK_EQ_U64(t_saved(&t, "c2"), 384);
    CHECK(t_out(&t, "ci", 0)->dtype == MEMEST_F32);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, X_MODEL("{'type': 'clamp'}"), 2),
                   "At least one of 'min' or 'max' must not be None");
    t_free(&t);
}

/* Comparisons: bool results of the broadcast shape, no grad, nothing saved;
 * x < [6] broadcasts to [2, 8, 6]. */
static void test_compare(void)
{
    struct t_model t;
    LOAD(&t,
         X_MODEL("{'name': 'p', 'type': 'parameter', 'shape': [6]},"
                 "{'name': 'lt', 'type': 'lt', 'inputs': ['x', 'p']},"
                 "{'name': 'ge', 'type': 'ge', 'inputs': ['x'], 'other': 0.5}"),
         2);
    CHECK_STR_EQ(t_shape(&t, "lt", 0), "[2, 8, 6]");
    CHECK(t_out(&t, "lt", 0)->dtype == MEMEST_BOOL);
    CHECK(!t_out(&t, "lt", 0)->requires_grad);
    CHECK_EQ_U64(t_nsaved(&t, "lt"), 0);
    CHECK(!t_out(&t, "ge", 0)->requires_grad);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, X_MODEL("{'type': 'eq', 'inputs': ['x']}"), 2),
                   "needs a second input or a number \"other\"");
    t_free(&t);
}

/* norm(dim=-1, keepdim) saves x and its [2, 8, 1] result: 384 + 64 = 448;
 * the full norm x and a 0-d result: 388; linalg_vector_norm(ord=1, dim=1)
 * x and [2, 6]: 384 + 48 = 432. normalize(dim=1): x plus the norm and the
 * clamp_min result, [2, 1, 6] each: 384 + 48 + 48 = 480; dim -1: [2, 8, 1]
 * each, 384 + 64 + 64 = 512. */
static void test_norms(void)
{
    struct t_model t;
    LOAD(&t,
         X_MODEL("{'name': 'n', 'type': 'norm', 'inputs': ['x'], 'dim': -1, 'keepdim': true},"
                 "{'name': 'na', 'type': 'norm', 'inputs': ['x']},"
                 "{'name': 'v1', 'type': 'linalg_vector_norm', 'inputs': ['x'], 'ord': 1,"
                 " 'dim': 1},"
                 "{'name': 'z1', 'type': 'normalize', 'inputs': ['x']},"
                 "{'name': 'zl', 'type': 'normalize', 'inputs': ['x'], 'dim': -1}"),
         2);
    CHECK_STR_EQ(t_shape(&t, "n", 0), "[2, 8, 1]");
    CHECK_EQ_U64(t_saved(&t, "n"), 448);
    CHECK_STR_EQ(t_shape(&t, "na", 0), "[]");
    CHECK_EQ_U64(t_saved(&t, "na"), 388);
    CHECK_STR_EQ(t_shape(&t, "v1", 0), "[2, 6]");
    CHECK_EQ_U64(t_saved(&t, "v1"), 432);
    CHECK_STR_EQ(t_shape(&t, "z1", 0), "[2, 8, 6]");
    CHECK_EQ_U64(t_saved(&t, "z1"), 480);
    CHECK_EQ_U64(t_saved(&t, "zl"), 512);
    t_free(&t);
}

/* Factories: full/ones like zeros; full infers int64 from an integer fill;
 * *_like take the input's sizes and dtype, no grad, nothing saved. */
static void test_factories(void)
{
    struct t_model t;
    LOAD(&t,
         X_MODEL("{'name': 'o', 'type': 'ones', 'size': ['batch', 3]},"
                 "{'name': 'f', 'type': 'full', 'size': [4], 'fill_value': 7},"
                 "{'name': 'ff', 'type': 'full', 'size': [4], 'fill_value': 0.5},"
                 "{'name': 'zl', 'type': 'zeros_like', 'inputs': ['x']},"
                 "{'name': 'fl', 'type': 'full_like', 'inputs': ['x'], 'fill_value': 2,"
                 " 'dtype': 'int32'}"),
         2);
    CHECK_STR_EQ(t_shape(&t, "o", 0), "[2, 3]");
    CHECK(t_out(&t, "f", 0)->dtype == MEMEST_I64);
    CHECK(t_out(&t, "ff", 0)->dtype == MEMEST_F32);
    CHECK_STR_EQ(t_shape(&t, "zl", 0), "[2, 8, 6]");
    CHECK(!t_out(&t, "zl", 0)->requires_grad);
    CHECK_EQ_U64(t_nsaved(&t, "zl"), 0);
    CHECK(t_out(&t, "fl", 0)->dtype == MEMEST_I32);
    t_free(&t);
}

/* torch.pow(x, y) with a tensor exponent saves x, y and the result
 * whichever requires grad: 3 * 384 = 1152 bytes; y a model input (no
 * grad): still 1152 (PyTorch's "exponent frozen" case); a [6] exponent
 * broadcast (PyTorch's 384 + 24 + 384 = 792 for an activation; here a
 * parameter, not counted): 768. */
static void test_pow_tensor(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'a', 'shape': [8, 6]}, {'name': 'b', 'shape': [8, 6]}],"
         " 'layers': [{'name': 'x', 'type': 'linear', 'inputs': ['a'], 'out_features': 6},"
         "            {'name': 'y', 'type': 'linear', 'inputs': ['a'], 'out_features': 6},"
         "            {'name': 'e', 'type': 'parameter', 'shape': [6]},"
         "            {'name': 'p', 'type': 'pow', 'inputs': ['x', 'y']},"
         "            {'name': 'pb', 'type': 'pow', 'inputs': ['x', 'e']},"
         "            {'name': 'pf', 'type': 'pow', 'inputs': ['x', 'b']}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "p", 0), "[2, 8, 6]");
    CHECK_EQ_U64(t_saved(&t, "p"), 1152);
    CHECK_EQ_U64(t_saved(&t, "pb"), 384 + 384); /* the [6] exponent is a parameter */
    CHECK_EQ_U64(t_saved(&t, "pf"), 1152);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, X_MODEL("{'type': 'pow', 'inputs': ['x']}"), 2),
                   "needs a number \"exponent\" or a second input");
    t_free(&t);
}

int main(void)
{
    test_pow_tensor();
    test_saves();
    test_clamp();
    test_compare();
    test_norms();
    test_factories();
    return CHECK_DONE();
}
