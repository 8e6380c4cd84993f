/* test_ops_linear.c - linear, bilinear and parameter: shapes, parameters,
 * saved bytes and MACs against hand calculations. */
#include "check.h"
#include "ops_test.h"

/* nn.Linear(784, 512) on x[64, 784] (fp32, x does not require grad):
 *   out [64, 512]; weight 512*784 = 401408, bias 512;
 *   saved: x itself (addmm's mat1, since the weight requires grad)
 *     64*784*4 = 200704 bytes;
 *   MACs 64*784*512 = 25690112; backward: only grad(weight) = 25690112. */
static void test_linear_first_layer(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [784]}],"
         " 'layers': [{'name': 'fc', 'type': 'linear', 'out_features': 512}]}",
         64);
    CHECK_STR_EQ(t_shape(&t, "fc", 0), "[64, 512]");
    CHECK_EQ_U64(t_param(&t, "fc", "weight"), 401408);
    CHECK_EQ_U64(t_param(&t, "fc", "bias"), 512);
    CHECK_EQ_U64(t_saved(&t, "fc"), 200704);
    CHECK(t_saves_storage(&t, "fc", t_storage(&t, "x", 0)));
    CHECK(t_fwd(&t, "fc") == 25690112.0);
    CHECK(t_bwd(&t, "fc") == 25690112.0);
    t_free(&t);
}

/* Two layers: the second one's input requires grad, so its backward costs
 * grad(input) + grad(weight) = 2 * 8*512*10 = 81920. */
static void test_linear_middle_layer(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [784]}],"
         " 'layers': [{'name': 'fc1', 'type': 'linear', 'out_features': 512},"
         "            {'name': 'fc2', 'type': 'linear', 'in_features': 512, 'out_features': 10}]}",
         8);
    CHECK(t_fwd(&t, "fc2") == 8.0 * 512 * 10);
    CHECK(t_bwd(&t, "fc2") == 2.0 * 8 * 512 * 10);
    CHECK_EQ_U64(t_saved(&t, "fc2"), 8 * 512 * 4); /* fc1's output */
    t_free(&t);
}

/* Frozen weights, input requiring grad: addmm saves mat1 only for
 * grad(weight), so nothing is saved; backward = grad(input) = 4*16*32. */
static void test_linear_frozen(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [16], 'requires_grad': true}],"
         " 'layers': [{'name': 'fc', 'type': 'linear', 'out_features': 32, 'trainable': false}]}",
         4);
    CHECK_EQ_U64(t_saved(&t, "fc"), 0);
    CHECK(t_fwd(&t, "fc") == 4.0 * 16 * 32);
    CHECK(t_bwd(&t, "fc") == 4.0 * 16 * 32);
    t_free(&t);
    /* frozen, input without grad: autograd records nothing, no backward */
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [16]}],"
         " 'layers': [{'name': 'fc', 'type': 'linear', 'out_features': 32, 'trainable': false}]}",
         4);
    CHECK_EQ_U64(t_nsaved(&t, "fc"), 0);
    CHECK(t_bwd(&t, "fc") == 0);
    t_free(&t);
}

/* x = a[5, B, 16].transpose(0, 1) is [B, 5, 16] and not contiguous: linear
 * folds it with reshape(B*5, 16), which copies: saved 2*5*16*4 = 640 bytes
 * of new storage, not the input's (the catalog's "NON-contiguous 3D"). A
 * contiguous [2, 5, 16] input is saved as a view (the input's storage). */
static void test_linear_noncontiguous(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'a', 'shape': [5, 16], 'batch_dim': 1}],"
         " 'layers': [{'name': 'x', 'type': 'transpose', 'dim0': 0, 'dim1': 1},"
         "            {'name': 'fc', 'type': 'linear', 'out_features': 32}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "x", 0), "[2, 5, 16]");
    CHECK_STR_EQ(t_shape(&t, "fc", 0), "[2, 5, 32]");
    CHECK_EQ_U64(t_saved(&t, "fc"), 640);
    CHECK(!t_saves_storage(&t, "fc", t_storage(&t, "a", 0)));
    t_free(&t);
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [5, 16]}],"
         " 'layers': [{'name': 'fc', 'type': 'linear', 'out_features': 32}]}",
         2);
    CHECK_EQ_U64(t_saved(&t, "fc"), 640);
    CHECK(t_saves_storage(&t, "fc", t_storage(&t, "x", 0)));
    t_free(&t);
}

static void test_linear_errors(void)
{
    struct t_model t;
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [784]}],"
                           " 'layers': [{'type': 'linear', 'in_features': 100,"
                           "             'out_features': 10}]}",
                           2),
                   "in_features is 100 but the input's last dimension is 784");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [4], 'dtype': 'int64'}],"
                           " 'layers': [{'type': 'linear', 'out_features': 10}]}",
                           2),
                   "expects a floating-point input, got int64");
    t_free(&t);
}

/* nn.Bilinear(4, 5, 6) on x1[3, 4], x2[3, 5]: weight 6*4*5 = 120, bias 6;
 * out [3, 6]; _trilinear saves both inputs: 3*4*4 + 3*5*4 = 108 bytes;
 * MACs 3*6*4*5 = 360. */
static void test_bilinear(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x1', 'shape': [4]}, {'name': 'x2', 'shape': [5]}],"
         " 'layers': [{'name': 'bl', 'type': 'bilinear', 'inputs': ['x1', 'x2'],"
         "             'out_features': 6}]}",
         3);
    CHECK_STR_EQ(t_shape(&t, "bl", 0), "[3, 6]");
    CHECK_EQ_U64(t_params_total(&t, "bl"), 126);
    CHECK_EQ_U64(t_saved(&t, "bl"), 108);
    CHECK(t_fwd(&t, "bl") == 360.0);
    t_free(&t);
    /* frozen weight, only x1 requiring grad: PyTorch 2.x saves i2 (x2, 60
     * bytes: x1's gradient needs it) and not x1 (48); 1.13 both (108) */
    const char *fx = "{'inputs': [{'name': 'x1', 'shape': [4], 'requires_grad': true},"
                     "            {'name': 'x2', 'shape': [5]}],"
                     " 'layers': [{'name': 'bl', 'type': 'bilinear', 'inputs': ['x1', 'x2'],"
                     "             'out_features': 6, 'trainable': false}]}";
    LOAD(&t, fx, 3);
    CHECK_EQ_U64(t_saved(&t, "bl"), 60);
    CHECK(t_saves_storage(&t, "bl", t_storage(&t, "x2", 0)));
    t_free(&t);
    LOAD_OPTS(&t, fx, .batch = 3, .dtype = MEMEST_F32, .torch = 113);
    CHECK_EQ_U64(t_saved(&t, "bl"), 108);
    t_free(&t);
}

/* A bare parameter [1, 1, 768]: 768 elements, no batch dim; the output is
 * the parameter itself, requiring grad unless frozen. */
static void test_parameter(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [4]}],"
         " 'layers': [{'name': 'cls', 'type': 'parameter', 'inputs': [], 'shape': [1, 1, 768]},"
         "            {'name': 'frozen', 'type': 'parameter', 'inputs': [], 'shape': [3],"
         "             'trainable': false}]}",
         8);
    CHECK_STR_EQ(t_shape(&t, "cls", 0), "[1, 1, 768]");
    CHECK_EQ_U64(t_params_total(&t, "cls"), 768);
    CHECK(t_out(&t, "cls", 0)->requires_grad);
    CHECK(!t_out(&t, "frozen", 0)->requires_grad);
    CHECK(t.r.storages[t_storage(&t, "cls", 0)].kind == MEMEST_ST_PARAM);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [4]}],"
                           " 'layers': [{'type': 'parameter', 'inputs': [], 'shape': [-1, 3]}]}",
                           2),
                   "cannot contain -1");
    t_free(&t);
}

int main(void)
{
    test_linear_first_layer();
    test_linear_middle_layer();
    test_linear_frozen();
    test_linear_noncontiguous();
    test_linear_errors();
    test_bilinear();
    test_parameter();
    return CHECK_DONE();
}
