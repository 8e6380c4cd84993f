/* ops_activation.c - activations, softmax, dropout, stochastic depth and
 * identity.
 *
 * What autograd saves (PyTorch 1.13, the catalog; device-independent unless
 * noted):
 *   output ("result"): relu, sigmoid, tanh, softmax, log_softmax, and the
 *     in-place leaky_relu_ and elu_ (LeakyReluBackward1 / EluBackward1);
 *   input ("self"): relu6/hardtanh, leakyrelu, elu, gelu, silu, mish,
 *     hardswish, hardsigmoid, softplus;
 *   in place, for ops whose formula needs the original input (hardtanh_,
 *     relu6 in place, silu_, mish_, hardswish_, hardsigmoid_): autograd
 *     clones the input before overwriting it and saves the clone (a new
 *     tensor of the input's size);
 *   dropout: see dropout_saves() in ops_common.h (CUDA's native_dropout
 *     saves a bool mask; the CPU saves a float one);
 *   stochastic depth (torchvision.ops.stochastic_depth, training, p > 0):
 *     noise = empty([N, 1, ...] for "row", [1, ...] for "batch")
 *     .bernoulli_(1 - p).div_(1 - p) in the input's dtype, then input *
 *     noise: MulBackward0 saves the noise (1.13 and 2.6 alike,
 *     tests/reference/vision_ops_saved_*.md); p == 0 returns the input.
 * Backward: a new gradient of the input's size (threshold_backward,
 * softmax_backward, the mask product...); identity and dropout with p = 0
 * pass theirs through.
 * An in-place op's output aliases its input (relu(inplace=True) saves its
 * output, which is then the input's storage). None of these has MACs. */
#include "memest/format.h"
#include "ops_common.h"

enum save_what { SAVE_OUT, SAVE_IN };

/* The common shape of an elementwise activation: the output is the input's
 * shape, in place or in new storage laid out like the input. */
static int act_common(struct memest_ictx *c, bool floats_only, bool inplace, enum save_what what)
{
    if (floats_only && need_float(c, 0) != 0)
        return -1;
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    enum memest_dtype dt = memest_in_dtype(c, 0);
    int k = inplace ? memest_out_inplace(c, 0) : memest_out_like(c, s, 0, dt);
    if (k < 0)
        return -1;
    if (what == SAVE_OUT)
        return memest_save_out(c, k);
    if (inplace) /* the original input, cloned before it is overwritten */
        return save_new_if(c, s->ndim, s->size, dt);
    return memest_save_in(c, 0);
}

/* ---- ops with only `inplace` ---- */

enum { A_INPLACE };
static const struct memest_argspec inplace_args[] = {
    [A_INPLACE] = {"inplace", MEMEST_ARG_BOOL, .idef = 0},
};

static int infer_relu(struct memest_ictx *c)
{
    return act_common(c, false, memest_arg_bool(c, A_INPLACE), SAVE_OUT);
}
/* relu6, silu, mish, hardswish, hardsigmoid: save the input (a clone of it
 * when in place). */
static int infer_saves_input(struct memest_ictx *c)
{
    return act_common(c, true, memest_arg_bool(c, A_INPLACE), SAVE_IN);
}

/* ---- ops without arguments: sigmoid, tanh ---- */

static int infer_saves_output(struct memest_ictx *c)
{
    return act_common(c, true, false, SAVE_OUT);
}

/* ---- leakyrelu, elu ---- */

enum { LR_SLOPE, LR_INPLACE };
static const struct memest_argspec leakyrelu_args[] = {
    [LR_SLOPE] = {"negative_slope", MEMEST_ARG_FLOAT, .fdef = 0.01},
    [LR_INPLACE] = {"inplace", MEMEST_ARG_BOOL, .idef = 0},
};

static int infer_leakyrelu(struct memest_ictx *c)
{
    bool inplace = memest_arg_bool(c, LR_INPLACE);
    double slope = memest_arg_float(c, LR_SLOPE);
    if (act_common(c, true, inplace, inplace ? SAVE_OUT : SAVE_IN) != 0)
        return -1;
    char v[32];
    if (inplace && slope < 0 && memest_needs_grad(c))
        return memest_fail(c, "in-place leaky_relu with a negative slope (%s) has no backward "
                              "in PyTorch; use inplace=false",
                           memest_fmt_double(slope, v, sizeof v));
    return 0;
}

enum { ELU_ALPHA, ELU_INPLACE };
static const struct memest_argspec elu_args[] = {
    [ELU_ALPHA] = {"alpha", MEMEST_ARG_FLOAT, .fdef = 1.0},
    [ELU_INPLACE] = {"inplace", MEMEST_ARG_BOOL, .idef = 0},
};

static int infer_elu(struct memest_ictx *c)
{
    bool inplace = memest_arg_bool(c, ELU_INPLACE);
    double alpha = memest_arg_float(c, ELU_ALPHA);
    if (act_common(c, true, inplace, inplace ? SAVE_OUT : SAVE_IN) != 0)
        return -1;
    char v[32];
    if (inplace && alpha < 0 && memest_needs_grad(c))
        return memest_fail(c, "in-place elu with a negative alpha (%s) has no backward in "
                              "PyTorch; use inplace=false", memest_fmt_double(alpha, v, sizeof v));
    return 0;
}

/* ---- gelu, softplus, hardtanh ---- */

enum { GELU_APPROX };
static const struct memest_argspec gelu_args[] = {
    [GELU_APPROX] = {"approximate", MEMEST_ARG_STR, .sdef = "none", .choices = "none|tanh"},
};
static int infer_gelu(struct memest_ictx *c) { return act_common(c, true, false, SAVE_IN); }

enum { SP_BETA, SP_THRESHOLD };
static const struct memest_argspec softplus_args[] = {
    [SP_BETA] = {"beta", MEMEST_ARG_FLOAT, .fdef = 1.0},
    [SP_THRESHOLD] = {"threshold", MEMEST_ARG_FLOAT, .fdef = 20.0},
};
static int infer_softplus(struct memest_ictx *c) { return act_common(c, true, false, SAVE_IN); }

enum { HT_MIN, HT_MAX, HT_INPLACE };
static const struct memest_argspec hardtanh_args[] = {
    [HT_MIN] = {"min_val", MEMEST_ARG_FLOAT, .fdef = -1.0},
    [HT_MAX] = {"max_val", MEMEST_ARG_FLOAT, .fdef = 1.0},
    [HT_INPLACE] = {"inplace", MEMEST_ARG_BOOL, .idef = 0},
};
static int infer_hardtanh(struct memest_ictx *c)
{
    char hi[32], lo[32];
    if (!(memest_arg_float(c, HT_MAX) > memest_arg_float(c, HT_MIN)))
        return memest_fail(c, "max_val (%s) must be greater than min_val (%s)",
                           memest_fmt_double(memest_arg_float(c, HT_MAX), hi, sizeof hi),
                           memest_fmt_double(memest_arg_float(c, HT_MIN), lo, sizeof lo));
    return act_common(c, true, memest_arg_bool(c, HT_INPLACE), SAVE_IN);
}

/* ---- softmax, logsoftmax ---- */

enum { SM_DIM, SM_DTYPE };
static const struct memest_argspec softmax_args[] = {
    [SM_DIM] = {"dim", MEMEST_ARG_INT, .optional = true,
                .doc = "default (deprecated): 0 for 0-, 1- and 3-D inputs, else 1"},
    [SM_DTYPE] = {"dtype", MEMEST_ARG_STR, .optional = true,
                  .choices = "float32|float16|bfloat16|float",
                  .doc = "F.softmax(x, dim, dtype=...): the result's dtype"},
};

/* F.softmax(x, dim, dtype=t) (aten/src/ATen/native/SoftMax.cpp, softmax()):
 * a CUDA float16 input with t = float32 is read directly (_softmax with
 * half_to_float); any other change converts x first (input.toType(t), a
 * transient copy) and runs _softmax on the copy. The result, of dtype t, is
 * saved. In backward, _softmax_backward_data gives the gradient in x's
 * dtype for half_to_float; after a conversion it gives it in t and
 * ToCopyBackward0 converts it back (that first gradient is scratch). Under
 * autocast (fp32_set_opt_dtype, which leaves an explicit dtype alone) the
 * engine has already made x float32 when t is. */
static int softmax_to(struct memest_ictx *c, enum memest_dtype to)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    enum memest_dtype from = memest_in_dtype(c, 0);
    int k = memest_out_like(c, &s, 0, to);
    if (k < 0 || memest_save_out(c, k) != 0)
        return -1;
    if (from == MEMEST_F16 && to == MEMEST_F32)
        return 0;
    memest_workspace(c, sat_bytes(s.ndim, s.size, to));
    memest_bwd_workspace(c, sat_bytes(s.ndim, s.size, to));
    return 0;
}

static int infer_softmax(struct memest_ictx *c)
{
    if (need_float(c, 0) != 0)
        return -1;
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    const struct memest_argval *ad = memest_arg(c, SM_DIM);
    int64_t dim = ad->none ? (s->ndim == 0 || s->ndim == 1 || s->ndim == 3 ? 0 : 1) : ad->v[0];
    if (memest_wrap_dim(dim, s->ndim) < 0)
        return memest_fail(c, "dim %lld is out of range for a %d-D input", (long long)dim,
                           s->ndim);
    const struct memest_argval *at = memest_arg(c, SM_DTYPE);
    enum memest_dtype to;
    if (!at->none) {
        if (arg_dtype_exact(c, at->s, &to) != 0)
            return -1;
        if (to != memest_in_dtype(c, 0))
            return softmax_to(c, to);
    }
    return act_common(c, true, false, SAVE_OUT);
}

/* ---- dropout, dropout2d, identity ---- */

enum { DO_P, DO_INPLACE };
static const struct memest_argspec dropout_args[] = {
    [DO_P] = {"p", MEMEST_ARG_FLOAT, .fdef = 0.5, .flo = 0, .fhi = 1},
    [DO_INPLACE] = {"inplace", MEMEST_ARG_BOOL, .idef = 0},
};

static int infer_dropout_any(struct memest_ictx *c, bool feature)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    double p = memest_arg_float(c, DO_P);
    bool inplace = memest_arg_bool(c, DO_INPLACE);
    if (feature && s->ndim < 2)
        return memest_fail(c, "feature dropout needs at least 2 dimensions, got %s",
                           IN_STR(c, 0));
    if (need_float(c, 0) != 0)
        return -1;
    if (p <= 0) { /* _dropout_impl returns the input itself */
        memest_grad_same(c, 0, 0);
        return memest_out_view(c, 0, s, 0) < 0 ? -1 : 0;
    }
    enum memest_dtype dt = memest_in_dtype(c, 0);
    int k = inplace ? memest_out_inplace(c, 0) : memest_out_like(c, s, 0, dt);
    if (k < 0)
        return -1;
    return dropout_saves(c, s->ndim, s->size, dt, p, inplace, feature);
}

static int infer_dropout(struct memest_ictx *c) { return infer_dropout_any(c, false); }
static int infer_dropout2d(struct memest_ictx *c) { return infer_dropout_any(c, true); }

enum { SD_P, SD_MODE };
static const struct memest_argspec stochasticdepth_args[] = {
    [SD_P] = {"p", MEMEST_ARG_FLOAT, .required = true, .flo = 0, .fhi = 1,
              .doc = "probability of zeroing a row (a sample) or the whole batch"},
    [SD_MODE] = {"mode", MEMEST_ARG_STR, .required = true, .choices = "row|batch",
                 .doc = "row: one draw per sample; batch: one for the whole input"},
};

static int infer_stochasticdepth(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    bool row = strcmp(memest_arg(c, SD_MODE)->s, "row") == 0;
    if (row && s->ndim < 1)
        return memest_fail(c, "mode \"row\" needs an input with a batch dimension, got %s",
                           IN_STR(c, 0));
    if (need_float(c, 0) != 0)
        return -1;
    if (memest_arg_float(c, SD_P) <= 0) { /* `if not training or p == 0.0: return input` */
        memest_grad_same(c, 0, 0);
        return out_alias_view(c, 0);
    }
    enum memest_dtype dt = memest_in_dtype(c, 0);
    int64_t noise[MEMEST_MAX_DIMS];
    for (int d = 0; d < s->ndim; d++)
        noise[d] = row && d == 0 ? s->size[0] : 1;
    if (memest_needs_grad(c)) { /* the noise, then input * noise */
        if (memest_save_new(c, s->ndim, noise, dt) != 0)
            return -1;
    } else {
        memest_workspace(c, sat_bytes(s->ndim, noise, dt));
    }
    return memest_out_like(c, s, 0, dt) < 0 ? -1 : 0;
}

static int infer_identity(struct memest_ictx *c)
{
    memest_grad_same(c, 0, 0);
    return out_alias_view(c, 0);
}

#define ACT_OP(nm, argv, fn, text)                                                              \
    {                                                                                           \
        .name = nm, .min_in = 1, .max_in = 1, .args = argv, .nargs = NARGS(argv), .infer = fn, \
        .doc = text,                                                                            \
    }
#define ACT_OP0(nm, fn, text)                                                                   \
    {                                                                                           \
        .name = nm, .min_in = 1, .max_in = 1, .args = NULL, .nargs = 0, .infer = fn,           \
        .doc = text,                                                                            \
    }
#define DROPOUT_OP(nm, fn, text)                                                                \
    {                                                                                           \
        .name = nm, .min_in = 1, .max_in = 1, .args = dropout_args,                             \
        .nargs = NARGS(dropout_args), .infer = fn, .doc = text, .eval_identity = true,          \
    }

const struct memest_op_desc memest_ops_activation[] = {
    ACT_OP("relu", inplace_args, infer_relu, "nn.ReLU"),
    ACT_OP("relu6", inplace_args, infer_saves_input, "nn.ReLU6 (hardtanh to [0, 6])"),
    ACT_OP("leakyrelu", leakyrelu_args, infer_leakyrelu, "nn.LeakyReLU"),
    ACT_OP("elu", elu_args, infer_elu, "nn.ELU"),
    ACT_OP("gelu", gelu_args, infer_gelu, "nn.GELU"),
    ACT_OP("silu", inplace_args, infer_saves_input, "nn.SiLU (swish)"),
    ACT_OP("mish", inplace_args, infer_saves_input, "nn.Mish"),
    ACT_OP0("sigmoid", infer_saves_output, "nn.Sigmoid"),
    ACT_OP0("tanh", infer_saves_output, "nn.Tanh"),
    ACT_OP("hardswish", inplace_args, infer_saves_input, "nn.Hardswish"),
    ACT_OP("hardsigmoid", inplace_args, infer_saves_input, "nn.Hardsigmoid"),
    ACT_OP("hardtanh", hardtanh_args, infer_hardtanh, "nn.Hardtanh"),
    /* autocast: softplus in float32, softmax/log_softmax with a float32 result */
    {.name = "softplus", .min_in = 1, .max_in = 1, .args = softplus_args,
     .nargs = NARGS(softplus_args), .infer = infer_softplus, .doc = "nn.Softplus",
     .amp = MEMEST_AMPP_FP32},
    {.name = "softmax", .min_in = 1, .max_in = 1, .args = softmax_args,
     .nargs = NARGS(softmax_args), .infer = infer_softmax, .doc = "nn.Softmax",
     .amp = MEMEST_AMPP_FP32_OUT},
    {.name = "logsoftmax", .min_in = 1, .max_in = 1, .args = softmax_args,
     .nargs = NARGS(softmax_args), .infer = infer_softmax, .doc = "nn.LogSoftmax",
     .amp = MEMEST_AMPP_FP32_OUT},
    /* eval(): F.dropout / F.dropout2d with training=False return the input */
    DROPOUT_OP("dropout", infer_dropout, "nn.Dropout (training mode)"),
    DROPOUT_OP("dropout2d", infer_dropout2d, "nn.Dropout2d: zeroes whole channels (training mode)"),
    {.name = "stochasticdepth", .min_in = 1, .max_in = 1, .args = stochasticdepth_args,
     .nargs = NARGS(stochasticdepth_args), .infer = infer_stochasticdepth,
     .doc = "torchvision.ops.StochasticDepth: drops whole samples (training mode)",
     .eval_identity = true},
    {.name = "identity", .min_in = 1, .max_in = 1, .infer = infer_identity,
     .doc = "nn.Identity: the input itself", .same_data = true},
};
const int memest_ops_activation_count = NOPS(memest_ops_activation);
