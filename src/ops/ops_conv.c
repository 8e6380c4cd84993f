/* ops_conv.c - nn.Conv1d/2d/3d and nn.ConvTranspose1d/2d/3d.
 *
 * Shapes follow the formulas in PyTorch's docs:
 *   conv:       out = floor((in + 2p - d(k-1) - 1) / s) + 1
 *   transposed: out = (in - 1)s - 2p + d(k-1) + output_padding + 1
 * Saved for backward: ConvolutionBackward0 keeps the input and the weight
 * whenever it records, whichever gradients are needed (the weight is a
 * parameter, not an activation). A padding_mode other than "zeros" pads
 * first with F.pad (a new tensor, which the convolution then saves;
 * reflect/replicate padding also saves its own input) and convolves with
 * padding 0. Unbatched inputs (C, *spatial) are unsqueezed to a batch of 1.
 * The cuDNN workspace is not modelled. */
#include "ops_common.h"

enum {
    CV_IN_CH,
    CV_OUT_CH,
    CV_KERNEL,
    CV_STRIDE,
    CV_PADDING,
    CV_DILATION,
    CV_GROUPS,
    CV_BIAS,
    CV_PADDING_MODE,
    CV_OUTPUT_PADDING, /* transposed only */
};

#define CONV_ARGS(D)                                                                            \
    [CV_IN_CH] = {"in_channels", MEMEST_ARG_INT, .optional = true, .lo = 1, .hi = ARG_MAX,     \
                  .doc = "input channels (inferred; checked when given)"},                     \
    [CV_OUT_CH] = {"out_channels", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX},  \
    [CV_KERNEL] = {"kernel_size", MEMEST_ARG_INTS, .required = true, .n = D, .lo = 1,          \
                   .hi = ARG_MAX},                                                              \
    [CV_STRIDE] = {"stride", MEMEST_ARG_INTS, .n = D, .lo = 1, .hi = ARG_MAX, .idef = 1},      \
    [CV_PADDING] = {"padding", MEMEST_ARG_INTS, .n = D, .lo = 0, .hi = ARG_MAX, .idef = 0},    \
    [CV_DILATION] = {"dilation", MEMEST_ARG_INTS, .n = D, .lo = 1, .hi = ARG_MAX, .idef = 1},  \
    [CV_GROUPS] = {"groups", MEMEST_ARG_INT, .lo = 1, .hi = ARG_MAX, .idef = 1},               \
    [CV_BIAS] = {"bias", MEMEST_ARG_BOOL, .idef = 1}

static const struct memest_argspec conv1d_args[] = {
    CONV_ARGS(1),
    [CV_PADDING_MODE] = {"padding_mode", MEMEST_ARG_STR, .sdef = "zeros",
                         .choices = "zeros|reflect|replicate|circular"},
};
static const struct memest_argspec conv2d_args[] = {
    CONV_ARGS(2),
    [CV_PADDING_MODE] = {"padding_mode", MEMEST_ARG_STR, .sdef = "zeros",
                         .choices = "zeros|reflect|replicate|circular"},
};
static const struct memest_argspec conv3d_args[] = {
    CONV_ARGS(3),
    [CV_PADDING_MODE] = {"padding_mode", MEMEST_ARG_STR, .sdef = "zeros",
                         .choices = "zeros|reflect|replicate|circular"},
};
#define CONVT_ARGS(D)                                                                           \
    CONV_ARGS(D),                                                                               \
        [CV_PADDING_MODE] = {"padding_mode", MEMEST_ARG_STR, .sdef = "zeros",                   \
                             .choices = "zeros",                                                \
                             .doc = "only \"zeros\" is supported for ConvTranspose"},          \
        [CV_OUTPUT_PADDING] = {"output_padding", MEMEST_ARG_INTS, .n = D, .lo = 0,              \
                               .hi = ARG_MAX, .idef = 0}
static const struct memest_argspec convt1d_args[] = {CONVT_ARGS(1)};
static const struct memest_argspec convt2d_args[] = {CONVT_ARGS(2)};
static const struct memest_argspec convt3d_args[] = {CONVT_ARGS(3)};

static const char *const layout_name[] = {"", "(N, C, L)", "(N, C, H, W)", "(N, C, D, H, W)"};
static const char *const unbatched_name[] = {"", "(C, L)", "(C, H, W)", "(C, D, H, W)"};

/* A convolution's output spatial sizes into osz (D of them) from the
 * input s (channels at dim cd), kernel k, stride st, padding pad, dilation
 * dil and padding mode pmode, with ConvNd's and ConvTransposeNd's checks;
 * a transposed one adds output_padding. */
static int conv_out_sizes(struct memest_ictx *c, int D, bool transposed,
                          const struct memest_shape *s, int cd, const int64_t *k,
                          const int64_t *st, const int64_t *pad, const int64_t *dil,
                          const char *pmode, int64_t *osz)
{
    for (int i = 0; i < D; i++) {
        int64_t in = s->size[cd + 1 + i], ek; /* ek: dilated kernel extent - 1 */
        if (!mul_i64(dil[i], k[i] - 1, &ek) || ek >= MEMEST_DIM_MAX)
            return memest_fail(c, "dilation * (kernel_size - 1) is too large in spatial dim %d",
                               i);
        if (!transposed) {
            int64_t padded = in + 2 * pad[i];
            if (padded < ek + 1)
                return memest_fail(c,
                                   "padded input size %lld is smaller than the dilated kernel "
                                   "size %lld in spatial dim %d",
                                   (long long)padded, (long long)(ek + 1), i);
            if (strcmp(pmode, "reflect") == 0 && pad[i] >= in)
                return memest_fail(c,
                                   "reflect padding %lld must be smaller than the input size "
                                   "%lld in spatial dim %d",
                                   (long long)pad[i], (long long)in, i);
            if (strcmp(pmode, "circular") == 0 && pad[i] > in)
                return memest_fail(c,
                                   "circular padding %lld must not exceed the input size %lld "
                                   "in spatial dim %d",
                                   (long long)pad[i], (long long)in, i);
            osz[i] = (padded - ek - 1) / st[i] + 1;
        } else {
            int64_t op = memest_arg(c, CV_OUTPUT_PADDING)->v[i], a;
            if (op >= st[i] && op >= dil[i])
                return memest_fail(c,
                                   "output_padding (%lld) must be smaller than either stride "
                                   "(%lld) or dilation (%lld) in spatial dim %d",
                                   (long long)op, (long long)st[i], (long long)dil[i], i);
            if (in < 1)
                return memest_fail(c, "expects a non-empty spatial input");
            if (!mul_i64(in - 1, st[i], &a) || a >= MEMEST_DIM_MAX)
                return memest_fail(c, "output size is too large in spatial dim %d", i);
            osz[i] = a - 2 * pad[i] + ek + op + 1;
            if (osz[i] < 1)
                return memest_fail(c, "output size %lld in spatial dim %d is not positive",
                                   (long long)osz[i], i);
        }
    }
    return 0;
}

static int infer_conv_nd(struct memest_ictx *c, int D, bool transposed)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    if (s->ndim != D + 2 && s->ndim != D + 1)
        return memest_fail(c, "expects a %d-D %s input or a %d-D unbatched %s one, got %s", D + 2,
                           layout_name[D], D + 1, unbatched_name[D], IN_STR(c, 0));
    if (need_float(c, 0) != 0)
        return -1;
    bool batched = s->ndim == D + 2;
    int cd = batched ? 1 : 0; /* channel dim */
    int64_t n = batched ? s->size[0] : 1, cin = s->size[cd];
    const struct memest_argval *ain = memest_arg(c, CV_IN_CH);
    if (!ain->none && ain->v[0] != cin)
        return memest_fail(c, "in_channels is %lld but the input has %lld channels",
                           (long long)ain->v[0], (long long)cin);
    int64_t cout = memest_arg_int(c, CV_OUT_CH), groups = memest_arg_int(c, CV_GROUPS);
    if (cin % groups != 0)
        return memest_fail(c, "in_channels (%lld) must be divisible by groups (%lld)",
                           (long long)cin, (long long)groups);
    if (cout % groups != 0)
        return memest_fail(c, "out_channels (%lld) must be divisible by groups (%lld)",
                           (long long)cout, (long long)groups);
    const int64_t *k = memest_arg(c, CV_KERNEL)->v, *st = memest_arg(c, CV_STRIDE)->v,
                  *pad = memest_arg(c, CV_PADDING)->v, *dil = memest_arg(c, CV_DILATION)->v;
    const char *pmode = transposed ? "zeros" : memest_arg(c, CV_PADDING_MODE)->s;
    bool zeros = strcmp(pmode, "zeros") == 0;

    /* output spatial sizes */
    int64_t osz[3];
    if (conv_out_sizes(c, D, transposed, s, cd, k, st, pad, dil, pmode, osz) != 0)
        return -1;

    /* parameters */
    int64_t w[5];
    w[0] = transposed ? cin : cout;
    w[1] = transposed ? cout / groups : cin / groups;
    for (int i = 0; i < D; i++)
        w[2 + i] = k[i];
    if (memest_param(c, "weight", D + 2, w) != 0)
        return -1;
    if (memest_arg_bool(c, CV_BIAS) && memest_param(c, "bias", 1, &cout) != 0)
        return -1;

    /* output */
    int64_t size[5];
    int nd = 0;
    if (batched)
        size[nd++] = n;
    size[nd++] = cout;
    for (int i = 0; i < D; i++)
        size[nd++] = osz[i];
    if (memest_out_new(c, nd, size, memest_in_dtype(c, 0)) < 0)
        return -1;

    /* saved tensors (under autocast the weight's fp16/bf16 copy too; cuDNN
     * wants a contiguous gradient in backward) */
    if (memest_save_param(c, "weight") != 0)
        return -1;
    memest_bwd_contiguous(c);
    if (zeros) {
        if (memest_save_in(c, 0) != 0)
            return -1;
    } else {
        int64_t psz[5];
        for (int d = 0; d < s->ndim; d++)
            psz[d] = s->size[d];
        for (int i = 0; i < D; i++)
            psz[cd + 1 + i] += 2 * pad[i];
        if (strcmp(pmode, "circular") != 0 && memest_save_in(c, 0) != 0)
            return -1; /* ReflectionPadNd / ReplicationPadNd save their input */
        if (save_new_if(c, s->ndim, psz, memest_in_dtype(c, 0)) != 0)
            return -1; /* the padded tensor, saved by the convolution */
        if (!memest_needs_grad(c))
            memest_workspace(c, sat_bytes(s->ndim, psz, memest_in_dtype(c, 0)));
    }

    /* MACs: each output position of a convolution (each input position of
     * a transposed one) costs one multiply-add per weight element:
     * C_out * C_in/groups * prod(k). */
    double kprod = dprod(D, k);
    double positions = (double)n * dprod(D, transposed ? &s->size[cd + 1] : osz);
    double fwd = positions * (double)cout * (double)(cin / groups) * kprod;
    memest_macs(c, fwd);
    int nb = (memest_in_requires_grad(c, 0) ? 1 : 0) +
             (memest_param_trainable(c, "weight") ? 1 : 0);
    memest_macs_bwd(c, fwd * nb);
    return 0;
}

static int infer_conv1d(struct memest_ictx *c) { return infer_conv_nd(c, 1, false); }
static int infer_conv2d(struct memest_ictx *c) { return infer_conv_nd(c, 2, false); }
static int infer_conv3d(struct memest_ictx *c) { return infer_conv_nd(c, 3, false); }
static int infer_convt1d(struct memest_ictx *c) { return infer_conv_nd(c, 1, true); }
static int infer_convt2d(struct memest_ictx *c) { return infer_conv_nd(c, 2, true); }
static int infer_convt3d(struct memest_ictx *c) { return infer_conv_nd(c, 3, true); }

/* Convolutions (transposed too) run cuDNN on CUDA (at::_convolution picks
 * ConvBackend::Cudnn / CudnnTranspose for float inputs), not cuBLAS. */
#define CONV_OP(nm, argv, fn, text)                                                             \
    {                                                                                           \
        .name = nm, .min_in = 1, .max_in = 1, .args = argv, .nargs = NARGS(argv), .infer = fn, \
        .doc = text, .amp = MEMEST_AMPP_LOW, .lib = MEMEST_LIB_CUDNN,                           \
    }

const struct memest_op_desc memest_ops_conv[] = {
    CONV_OP("conv1d", conv1d_args, infer_conv1d, "nn.Conv1d on (N, C, L)"),
    CONV_OP("conv2d", conv2d_args, infer_conv2d, "nn.Conv2d on (N, C, H, W)"),
    CONV_OP("conv3d", conv3d_args, infer_conv3d, "nn.Conv3d on (N, C, D, H, W)"),
    CONV_OP("convtranspose1d", convt1d_args, infer_convt1d, "nn.ConvTranspose1d on (N, C, L)"),
    CONV_OP("convtranspose2d", convt2d_args, infer_convt2d,
            "nn.ConvTranspose2d on (N, C, H, W)"),
    CONV_OP("convtranspose3d", convt3d_args, infer_convt3d,
            "nn.ConvTranspose3d on (N, C, D, H, W)"),
};
const int memest_ops_conv_count = NOPS(memest_ops_conv);
