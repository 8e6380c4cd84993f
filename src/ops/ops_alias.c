/* ops_alias.c - the names PyTorch users type for memest's types and
 * arguments: a module or function spelled another way (F.leaky_relu for
 * leakyrelu, nn.SiLU's other name swish), a Keras or TensorFlow word
 * (dense, units, axis), a Hugging Face name (gelu_new). "Did you mean"
 * consults these before the look-alike names (memest_suggest), so `swish`
 * suggests `silu`, not its look-alike `mish`. One table each; an alias
 * whose target is not a registered type (or not an argument of the node's
 * op) is skipped, so the table may name types another family adds. */
#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "memest/ops.h"
#include "memest/suggest.h"

struct alias {
    const char *alias, *name;
};

static const struct alias type_aliases[] = {
    {"swish", "silu"},                 /* the SiLU paper's other name */
    {"gelu_new", "gelu"},              /* transformers' NewGELU: gelu approximate="tanh" */
    {"gelu_pytorch_tanh", "gelu"},
    {"quick_gelu", "gelu"},
    {"leaky_relu", "leakyrelu"},
    {"log_softmax", "logsoftmax"},
    {"softmax2d", "softmax"},          /* nn.Softmax2d: softmax over dim -3 */
    {"dense", "linear"},
    {"fc", "linear"},
    {"conv", "conv2d"},
    {"convolution", "conv2d"},
    {"conv_transpose2d", "convtranspose2d"},
    {"deconv", "convtranspose2d"},
    {"batchnorm", "batchnorm2d"},
    {"batch_norm", "batchnorm2d"},
    {"bn", "batchnorm2d"},
    {"layer_norm", "layernorm"},
    {"ln", "layernorm"},
    {"group_norm", "groupnorm"},
    {"instance_norm", "instancenorm2d"},
    {"rms_norm", "rmsnorm"},
    {"max_pool2d", "maxpool2d"},
    {"maxpool", "maxpool2d"},
    {"avg_pool2d", "avgpool2d"},
    {"avgpool", "avgpool2d"},
    {"adaptive_avg_pool2d", "adaptiveavgpool2d"},
    {"adaptive_max_pool2d", "adaptivemaxpool2d"},
    {"global_avg_pool", "adaptiveavgpool2d"},
    {"max_pool3d", "maxpool3d"},
    {"avg_pool3d", "avgpool3d"},
    {"batch_norm3d", "batchnorm3d"},
    {"upsample_bilinear", "interpolate"},   /* F.upsample_bilinear, F.upsample_nearest: */
    {"upsample_nearest", "interpolate"},    /* deprecated spellings of F.interpolate */
    {"upsample_bilinear2d", "interpolate"}, /* the aten ops F.interpolate calls */
    {"upsample_nearest2d", "interpolate"},
    {"upsamplebilinear2d", "upsamplingbilinear2d"},
    {"upsamplenearest2d", "upsamplingnearest2d"},
    {"resize", "interpolate"},
    {"pixel_shuffle", "pixelshuffle"},
    {"pixel_unshuffle", "pixelunshuffle"},
    {"drop_path", "stochasticdepth"},       /* timm's name */
    {"sdpa", "scaled_dot_product_attention"},
    {"flash_attention", "scaled_dot_product_attention"},
    {"mha", "multiheadattention"},
    {"attention", "multiheadattention"},
    {"self_attention", "multiheadattention"},
    {"embed", "embedding"},
    {"concat", "cat"},
    {"concatenate", "cat"},
    {"multiply", "mul"},
    {"mm", "matmul"},
};

static const struct alias arg_aliases[] = {
    {"epsilon", "eps"},
    {"axis", "dim"},
    {"keepdims", "keepdim"},
    {"kernel", "kernel_size"},
    {"filters", "out_channels"},
    {"units", "out_features"},
    {"strides", "stride"},
    {"dilation_rate", "dilation"},
    {"pool_size", "kernel_size"},
    {"use_bias", "bias"},
    {"rate", "p"},
    {"prob", "p"},
    {"drop_rate", "p"},
    {"dropout_rate", "p"},
    {"alpha", "negative_slope"},      /* Keras LeakyReLU(alpha) */
    {"slope", "negative_slope"},
    {"heads", "num_heads"},
    {"n_heads", "num_heads"},
    {"nheads", "num_heads"},
    {"num_attention_heads", "num_heads"},
    {"d_model", "embed_dim"},
    {"hidden_dim", "hidden_size"},
    {"vocab_size", "num_embeddings"},
    {"hidden_size", "embed_dim"},
    {"scale", "scale_factor"},
    {"causal", "is_causal"},
    {"in_place", "inplace"},
    {"shape", "size"},
};

static bool same(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != *b)
            return false;
    return !*a && !*b;
}

const char *memest_op_alias(const char *name)
{
    for (size_t i = 0; i < sizeof type_aliases / sizeof *type_aliases; i++)
        if (same(name, type_aliases[i].alias) && memest_op_find(type_aliases[i].name))
            return type_aliases[i].name;
    return NULL;
}

const char *memest_op_arg_alias(const struct memest_op_desc *op, const char *name)
{
    for (size_t i = 0; i < sizeof arg_aliases / sizeof *arg_aliases; i++)
        if (same(name, arg_aliases[i].alias) && memest_op_arg_index(op, arg_aliases[i].name) >= 0)
            return arg_aliases[i].name;
    return NULL;
}

const char *memest_op_suggest(const char *name)
{
    const char *alias = memest_op_alias(name);
    if (alias)
        return alias;
    int n;
    const struct memest_op_desc *const *ops = memest_op_all(&n);
    const char **names = malloc(sizeof *names * (size_t)(n ? n : 1));
    if (!names)
        return NULL;   /* no suggestion: the message stands without one */
    for (int i = 0; i < n; i++)
        names[i] = ops[i]->name;
    const char *near = memest_suggest(name, names, n);
    free(names);
    return near;
}
