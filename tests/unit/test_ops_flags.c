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
 *           modes, so eval() changes nothing there;
 *   module state: a bare nn.Parameter and a registered buffer, which exist
 *           whether forward() reads them or not;
 *   forward() arguments: nn.MultiheadAttention.forward's need_weights,
 *           attn_mask and average_attn_weights (torch/nn/modules/
 *           activation.py); the other ops' arguments are constructor or
 *           function arguments.
 * And the names PyTorch users type for a type or an argument (ops_alias.c)
 * come before the look-alikes in "did you mean". */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "memest/ops.h"

static const char *const cudnn_ops[] = {"conv1d",          "conv2d",          "conv3d",
                                        "convtranspose1d", "convtranspose2d", "convtranspose3d",
                                        "rpnhead"};
static const char *const cublas_ops[] = {"linear", "bilinear", "matmul", "bmm",
                                         "multiheadattention", "lstm", "gru", "rnn",
                                         "scaled_dot_product_attention", "einsum", "mamba2_scan"};
static const char *const eval_identity_ops[] = {"dropout", "dropout2d", "stochasticdepth"};
static const char *const state_ops[] = {"parameter", "buffer"};
static const char *const forward_args[] = {"multiheadattention.need_weights",
                                           "multiheadattention.attn_mask",
                                           "multiheadattention.average_attn_weights"};

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
        CHECK(op->module_state == listed(state_ops, COUNT(state_ops), op->name));
        for (int k = 0; k < op->nargs; k++) {
            char full[128];
            snprintf(full, sizeof full, "%s.%s", op->name, op->args[k].name);
            CHECK(op->args[k].forward == listed(forward_args, COUNT(forward_args), full));
        }
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

/* swish is SiLU's other name, not a look-alike of mish; an alias of a
 * type not registered (interpolate, added by another family) is skipped;
 * an argument alias only for an op that has its target. */
static void test_aliases(void)
{
    CHECK_STR_EQ(memest_op_suggest("swish"), "silu");
    CHECK_STR_EQ(memest_op_suggest("Swish"), "silu");
    CHECK_STR_EQ(memest_op_suggest("sdpa"), "scaled_dot_product_attention");
    CHECK_STR_EQ(memest_op_suggest("dense"), "linear");
    CHECK_STR_EQ(memest_op_suggest("mha"), "multiheadattention");
    CHECK_STR_EQ(memest_op_suggest("gelu_new"), "gelu");
    CHECK_STR_EQ(memest_op_suggest("leaky_relu"), "leakyrelu");
    CHECK_STR_EQ(memest_op_suggest("batchnorm"), "batchnorm2d");
    CHECK_STR_EQ(memest_op_suggest("misch"), "mish");   /* no alias: the look-alike */
    CHECK(memest_op_alias("relu") == NULL);
    const char *up = memest_op_alias("upsample_bilinear");
    if (memest_op_find("interpolate"))
        CHECK_STR_EQ(up, "interpolate");
    else
        CHECK(up == NULL);
    const struct memest_op_desc *ln = memest_op_find("layernorm"), *lin = memest_op_find("linear");
    const struct memest_op_desc *sm = memest_op_find("softmax");
    CHECK(ln && lin && sm);
    if (ln && lin && sm) {
        CHECK_STR_EQ(memest_op_arg_alias(ln, "epsilon"), "eps");
        CHECK_STR_EQ(memest_op_arg_alias(ln, "EPSILON"), "eps");
        CHECK(memest_op_arg_alias(lin, "epsilon") == NULL);   /* linear has no eps */
        CHECK_STR_EQ(memest_op_arg_alias(sm, "axis"), "dim");
        CHECK_STR_EQ(memest_op_arg_alias(lin, "units"), "out_features");
    }
}

int main(void)
{
    test_aliases();
    test_named_ops();
    test_every_op();
    test_input();
    return CHECK_DONE();
}
