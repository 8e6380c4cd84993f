/* test_ops_flags.c - what the op table says about each op beyond its shapes:
 * the math library its CUDA kernels call, whether model.eval() makes it
 * return its input, whether it is the model-input op. The expectations are
 * written here from PyTorch's sources, not read from the table:
 *   cuDNN:  nn.Conv{1,2,3}d and nn.ConvTranspose{1,2,3}d (at::_convolution
 *           picks ConvBackend::Cudnn / CudnnTranspose on CUDA), and
 *           torchvision's RPNHead (its nn.Conv2d layers);
 *   cuBLAS: nn.Linear (addmm / matmul), nn.Bilinear (at::_trilinear: bmm),
 *           torch.matmul, torch.bmm, nn.MultiheadAttention (in_proj addmm,
 *           the bmm of the scores), nn.LSTM/GRU/RNN on the non-cuDNN path
 *           memest models (the gates' mm), scaled_dot_product_attention
 *           (its eager and math paths are matmuls; the fused kernels are
 *           not, but a model reaches them after its cuBLAS projections),
 *           torch.einsum (sumproduct_pair's at::bmm, Linear.cpp);
 *   everything else (activations, norms, pools, embedding, views, elementwise
 *           and reductions): ATen's own kernels;
 *   eval identity: nn.Dropout and nn.Dropout2d (F.dropout with
 *           training=False returns its input) and torchvision's
 *           StochasticDepth (stochastic_depth: `if not training or p == 0.0:
 *           return input`) only; nn.Identity returns its input in both
 *           modes, so eval() changes nothing there. */
#include <string.h>

#include "check.h"
#include "memest/ops.h"

static const char *const cudnn_ops[] = {"conv1d",          "conv2d",          "conv3d",
                                        "convtranspose1d", "convtranspose2d", "convtranspose3d",
                                        "rpnhead"};
static const char *const cublas_ops[] = {"linear", "bilinear", "matmul", "bmm",
                                         "multiheadattention", "lstm", "gru", "rnn",
                                         "scaled_dot_product_attention", "einsum"};
static const char *const eval_identity_ops[] = {"dropout", "dropout2d", "stochasticdepth"};

#define COUNT(a) (sizeof(a) / sizeof *(a))

static bool listed(const char *const *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0)
            return true;
    return false;
}

/* Each op named above exists and has its flag. */
static void test_named_ops(void)
{
    for (size_t i = 0; i < COUNT(cudnn_ops); i++) {
        const struct memest_op_desc *op = memest_op_find(cudnn_ops[i]);
        CHECK(op != NULL);
        if (op)
            CHECK_EQ_INT(op->lib, MEMEST_LIB_CUDNN);
    }
    for (size_t i = 0; i < COUNT(cublas_ops); i++) {
        const struct memest_op_desc *op = memest_op_find(cublas_ops[i]);
        CHECK(op != NULL);
        if (op)
            CHECK_EQ_INT(op->lib, MEMEST_LIB_CUBLAS);
    }
    for (size_t i = 0; i < COUNT(eval_identity_ops); i++) {
        const struct memest_op_desc *op = memest_op_find(eval_identity_ops[i]);
        CHECK(op != NULL);
        if (op)
            CHECK(op->eval_identity);
    }
    const char *plain[] = {"relu", "identity", "embedding", "layernorm", "add", "softmax"};
    for (size_t i = 0; i < COUNT(plain); i++) {
        const struct memest_op_desc *op = memest_op_find(plain[i]);
        CHECK(op != NULL);
        if (op) {
            CHECK_EQ_INT(op->lib, MEMEST_LIB_NONE);
            CHECK(!op->eval_identity);
            CHECK(!op->model_input);
        }
    }
}

/* Every op of the table: the library and eval identity it has are the ones
 * listed above, or none; no node type is the model-input op; the dropout
 * family and stochastic depth, and only they, are eval identities. Each op is found by its name
 * (none left out of the lookup, none listed twice: the names are sorted
 * strictly). */
static void test_every_op(void)
{
    int n;
    const struct memest_op_desc *const *ops = memest_op_all(&n);
    CHECK(n > 0);
    for (int i = 0; i < n; i++) {
        const struct memest_op_desc *op = ops[i];
        enum memest_mathlib lib = listed(cudnn_ops, COUNT(cudnn_ops), op->name)
                                      ? MEMEST_LIB_CUDNN
                                  : listed(cublas_ops, COUNT(cublas_ops), op->name)
                                      ? MEMEST_LIB_CUBLAS
                                      : MEMEST_LIB_NONE;
        if (op->lib != lib)
            fprintf(stderr, "op %s\n", op->name);
        CHECK_EQ_INT(op->lib, lib);
        CHECK(op->eval_identity == listed(eval_identity_ops, COUNT(eval_identity_ops), op->name));
        CHECK(op->eval_identity == (strncmp(op->name, "dropout", 7) == 0 ||
                                    strcmp(op->name, "stochasticdepth") == 0));
        CHECK(!op->model_input);
        CHECK(memest_op_find(op->name) == op);
        if (i > 0)
            CHECK(strcmp(ops[i - 1]->name, op->name) < 0);
    }
}

/* The model inputs' op: the input, nothing else; not a type a node names. */
static void test_input(void)
{
    CHECK(memest_op_input.model_input);
    CHECK_EQ_INT(memest_op_input.lib, MEMEST_LIB_NONE);
    CHECK(!memest_op_input.eval_identity);
    CHECK(memest_op_find(memest_op_input.name) == NULL);
}

int main(void)
{
    test_named_ops();
    test_every_op();
    test_input();
    return CHECK_DONE();
}
