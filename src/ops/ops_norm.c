/* ops_norm.c - batch, layer, group and instance normalisation (training
 * mode: batch statistics, running statistics updated).
 *
 * Saved for backward, as PyTorch 1.13 / 2.x on CUDA:
 *   batchnorm (1d, 2d, 3d): the input, plus save_mean and save_invstd [C]
 *     in the accumulate type (float32 for half/bfloat16 inputs), with the
 *     native kernel and with cuDNN alike (cuDNN's reserve space is 0 bytes
 *     for a plain batch norm and is not modelled). Weight and running stats
 *     are parameters/buffers. On a non-contiguous input the cuDNN path
 *     (_batch_norm_impl_index in aten/src/ATen/native/Normalization.cpp,
 *     taken on CUDA for a >= 3-D input with weight and bias) passes
 *     input.contiguous(input.suggest_memory_format()) to cudnn_batch_norm,
 *     so that copy is what is saved (a channels-last input is not copied);
 *     the CPU kernel takes the input as it is (the measurement of
 *     tests/reference/vision_ops_saved_*.md saves the permuted view).
 *   layernorm: the input, plus mean and rstd of shape [outer..., 1...] in
 *     the accumulate type (layer_norm_cuda; the CPU kernel uses the input's
 *     dtype for half/bfloat16, the catalog's bf16 figures differ there).
 *     On a non-contiguous input (ConvNeXt's x.permute(0, 2, 3, 1) before
 *     its LayerNorm) native_layer_norm computes on X = input.expect_contiguous(),
 *     a copy freed when the op returns, and autograd saves the input itself,
 *     the permuted view (measured, 1.13 and 2.6: vision_ops_saved_*.md);
 *     the output is a new contiguous tensor; the backward copies the input
 *     again (layer_norm_backward_cuda: input.expect_contiguous()) and reads
 *     the output's gradient contiguous, a copy when it is not (LayerNorm2d's
 *     permute back makes it a permuted view); both copies show in the
 *     PyTorch 2.6 profiler's memory events of NativeLayerNormBackward0.
 *   groupnorm: the input made contiguous (a copy when it is not), plus mean
 *     and rstd [N, G] in the input's dtype.
 *   instancenorm: computed by ATen as batch_norm on the input viewed as
 *     [1, N*C, *] (input.contiguous().view): the input (or its contiguous
 *     copy), save_mean/save_invstd [N*C], and the weight and running stats
 *     repeated N times ([N*C] each: new tensors, not parameters). */
#include "ops_common.h"

/* Saves input 0 as x.contiguous() sees it. */
static int save_contiguous_in(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    if (memest_shape_is_contiguous(s))
        return memest_save_in(c, 0);
    if (!memest_needs_grad(c)) {
        memest_workspace(c, sat_bytes(s->ndim, s->size, memest_in_dtype(c, 0)));
        return 0;
    }
    return memest_save_new(c, s->ndim, s->size, memest_in_dtype(c, 0));
}

/* ---- batchnorm ---- */

enum { BN_NUM_FEATURES, BN_EPS, BN_MOMENTUM, BN_AFFINE, BN_TRACK };

static const struct memest_argspec batchnorm_args[] = {
    [BN_NUM_FEATURES] = {"num_features", MEMEST_ARG_INT, .optional = true, .lo = 1,
                         .hi = ARG_MAX, .doc = "channels C (inferred; checked when given)"},
    [BN_EPS] = {"eps", MEMEST_ARG_FLOAT, .fdef = 1e-5},
    [BN_MOMENTUM] = {"momentum", MEMEST_ARG_FLOAT, .optional = true, .fdef = 0.1,
                     .doc = "default 0.1; null: cumulative average"},
    [BN_AFFINE] = {"affine", MEMEST_ARG_BOOL, .idef = 1},
    [BN_TRACK] = {"track_running_stats", MEMEST_ARG_BOOL, .idef = 1},
};

/* Declares weight/bias and the running-stat buffers of a C-channel norm. */
static int norm_params(struct memest_ictx *c, int64_t ch, bool affine, bool track)
{
    if (affine && (memest_param(c, "weight", 1, &ch) != 0 || memest_param(c, "bias", 1, &ch) != 0))
        return -1;
    if (track) {
        enum memest_dtype f = memest_float_dtype(c);
        if (memest_buffer(c, "running_mean", 1, &ch, f) != 0 ||
            memest_buffer(c, "running_var", 1, &ch, f) != 0 ||
            memest_buffer(c, "num_batches_tracked", 0, NULL, MEMEST_I64) != 0)
            return -1;
    }
    return 0;
}

/* True when x.contiguous(x.suggest_memory_format()) makes no copy: the
 * input is contiguous, or channels-last (4-D) / channels-last-3d (5-D):
 * the channel stride 1, then the spatial dims from the last outwards, then
 * the batch (c10/core/MemoryFormat.h is_channels_last_strides_*). */
static bool contiguous_in_suggested_format(const struct memest_shape *s)
{
    if (memest_shape_is_contiguous(s))
        return true;
    if (s->ndim != 4 && s->ndim != 5)
        return false;
    int64_t expect = 1;
    int order[5] = {1, 0, 0, 0, 0}, n = 1; /* C, then W, H, (D), then N */
    for (int d = s->ndim - 1; d >= 2; d--)
        order[n++] = d;
    order[n++] = 0;
    for (int i = 0; i < n; i++) {
        int d = order[i];
        if (s->size[d] != 1 && s->stride[d] != expect)
            return false;
        if (!mul_i64(expect, s->size[d], &expect))
            return false;
    }
    return true;
}

/* spatial: 1 for BatchNorm1d ((N, C) or (N, C, L)), 2 or 3 for the 4-D and
 * 5-D ones (F.batch_norm itself takes any (N, C, *)). */
static int infer_batchnorm(struct memest_ictx *c, int spatial)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    if (spatial == 1 ? (s->ndim != 2 && s->ndim != 3) : s->ndim != spatial + 2) {
        if (spatial == 1)
            return memest_fail(c, "expects a 2-D (N, C) or 3-D (N, C, L) input, got %s",
                               IN_STR(c, 0));
        return memest_fail(c, "expects a %d-D %s input, got %s", spatial + 2,
                           spatial == 2 ? "(N, C, H, W)" : "(N, C, D, H, W)", IN_STR(c, 0));
    }
    if (need_float(c, 0) != 0)
        return -1;
    int64_t ch = s->size[1];
    const struct memest_argval *nf = memest_arg(c, BN_NUM_FEATURES);
    if (!nf->none && nf->v[0] != ch)
        return memest_fail(c, "num_features is %lld but the input has %lld channels",
                           (long long)nf->v[0], (long long)ch);
    uint64_t per_channel = (uint64_t)s->size[0];
    for (int d = 2; d < s->ndim; d++)
        per_channel *= (uint64_t)s->size[d];
    if (per_channel == 1)
        return memest_fail(c, "expected more than 1 value per channel when training, got %s",
                           IN_STR(c, 0));
    bool affine = memest_arg_bool(c, BN_AFFINE);
    if (norm_params(c, ch, affine, memest_arg_bool(c, BN_TRACK)) != 0)
        return -1;
    enum memest_dtype dt = memest_in_dtype(c, 0);
    /* cuDNN's conditions that a shape decides (the 32-bit index limit, the
     * batch limit in training); the input is copied only when not dense in
     * its own memory format */
    uint64_t numel = 0;
    memest_shape_numel(s, &numel);
    bool cudnn = s->ndim >= 3 && affine && numel < INT32_MAX && s->size[0] <= 880801;
    if (cudnn && !contiguous_in_suggested_format(s)) { /* the copy, then the output */
        if (save_contiguous_in(c) != 0 || memest_out_new(c, s->ndim, s->size, dt) < 0)
            return -1;
    } else if (memest_out_like(c, s, 0, dt) < 0 || memest_save_in(c, 0) != 0) {
        return -1;
    }
    if (save_new_if(c, 1, &ch, acc_dtype(dt)) != 0 || save_new_if(c, 1, &ch, acc_dtype(dt)) != 0)
        return -1;
    return 0;
}

static int infer_batchnorm1d(struct memest_ictx *c) { return infer_batchnorm(c, 1); }
static int infer_batchnorm2d(struct memest_ictx *c) { return infer_batchnorm(c, 2); }
static int infer_batchnorm3d(struct memest_ictx *c) { return infer_batchnorm(c, 3); }

/* ---- layernorm ---- */

enum { LN_SHAPE, LN_EPS, LN_AFFINE, LN_BIAS };

static const struct memest_argspec layernorm_args[] = {
    [LN_SHAPE] = {"normalized_shape", MEMEST_ARG_INTS, .optional = true, .lo = 0, .hi = ARG_MAX,
                  .doc = "trailing dims to normalise (default: the last dim's size)"},
    [LN_EPS] = {"eps", MEMEST_ARG_FLOAT, .fdef = 1e-5},
    [LN_AFFINE] = {"elementwise_affine", MEMEST_ARG_BOOL, .idef = 1},
    [LN_BIAS] = {"bias", MEMEST_ARG_BOOL, .idef = 1, .doc = "PyTorch >= 2.1"},
};

static int infer_layernorm(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    if (need_float(c, 0) != 0)
        return -1;
    const struct memest_argval *ns = memest_arg(c, LN_SHAPE);
    int64_t norm[MEMEST_MAX_DIMS];
    int nn;
    if (ns->none) {
        if (s->ndim < 1)
            return memest_fail(c, "expects an input with at least 1 dimension");
        nn = 1;
        norm[0] = s->size[s->ndim - 1];
    } else {
        nn = ns->n;
        if (nn < 1)
            return memest_fail(c, "normalized_shape must have at least one dimension");
        if (nn > MEMEST_MAX_DIMS)
            return memest_fail(c, "normalized_shape has more than %d dimensions",
                               MEMEST_MAX_DIMS);
        for (int i = 0; i < nn; i++)
            norm[i] = ns->v[i];
    }
    bool ok = s->ndim >= nn;
    for (int i = 0; ok && i < nn; i++)
        ok = s->size[s->ndim - nn + i] == norm[i];
    if (!ok)
        return memest_fail(c, "normalized_shape %s does not match the input's trailing dimensions",
                           shp_sizes(nn, norm).s);
    if (memest_arg_bool(c, LN_AFFINE)) {
        if (memest_param(c, "weight", nn, norm) != 0)
            return -1;
        if (memest_arg_bool(c, LN_BIAS) && memest_param(c, "bias", nn, norm) != 0)
            return -1;
    }
    enum memest_dtype dt = memest_in_dtype(c, 0);
    if (memest_out_new(c, s->ndim, s->size, dt) < 0 || memest_save_in(c, 0) != 0)
        return -1;
    if (!memest_shape_is_contiguous(s)) { /* X = input.expect_contiguous(), both ways */
        uint64_t copy = sat_bytes(s->ndim, s->size, dt);
        memest_workspace(c, copy);
        if (memest_needs_grad(c))
            memest_bwd_workspace(c, copy);
    }
    memest_bwd_contiguous(c); /* the kernel reads dY.contiguous() */
    int64_t stat[MEMEST_MAX_DIMS];
    for (int d = 0; d < s->ndim; d++)
        stat[d] = d < s->ndim - nn ? s->size[d] : 1;
    if (save_new_if(c, s->ndim, stat, acc_dtype(dt)) != 0 ||
        save_new_if(c, s->ndim, stat, acc_dtype(dt)) != 0)
        return -1;
    return 0;
}

/* ---- groupnorm ---- */

enum { GN_GROUPS, GN_CHANNELS, GN_EPS, GN_AFFINE };

static const struct memest_argspec groupnorm_args[] = {
    [GN_GROUPS] = {"num_groups", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX},
    [GN_CHANNELS] = {"num_channels", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX},
    [GN_EPS] = {"eps", MEMEST_ARG_FLOAT, .fdef = 1e-5},
    [GN_AFFINE] = {"affine", MEMEST_ARG_BOOL, .idef = 1},
};

static int infer_groupnorm(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    if (s->ndim < 2)
        return memest_fail(c, "expects an input of shape (N, C, *), got %s", IN_STR(c, 0));
    if (need_float(c, 0) != 0)
        return -1;
    int64_t g = memest_arg_int(c, GN_GROUPS), ch = memest_arg_int(c, GN_CHANNELS);
    if (ch % g != 0)
        return memest_fail(c, "num_channels (%lld) must be divisible by num_groups (%lld)",
                           (long long)ch, (long long)g);
    if (s->size[1] != ch)
        return memest_fail(c, "num_channels is %lld but the input has %lld channels",
                           (long long)ch, (long long)s->size[1]);
    if (memest_arg_bool(c, GN_AFFINE) &&
        (memest_param(c, "weight", 1, &ch) != 0 || memest_param(c, "bias", 1, &ch) != 0))
        return -1;
    enum memest_dtype dt = memest_in_dtype(c, 0);
    if (memest_out_new(c, s->ndim, s->size, dt) < 0 || save_contiguous_in(c) != 0)
        return -1;
    int64_t stat[2] = {s->size[0], g};
    if (save_new_if(c, 2, stat, dt) != 0 || save_new_if(c, 2, stat, dt) != 0)
        return -1;
    return 0;
}

/* ---- instancenorm ---- */

enum { IN_NUM_FEATURES, IN_EPS, IN_MOMENTUM, IN_AFFINE, IN_TRACK };

static const struct memest_argspec instancenorm_args[] = {
    [IN_NUM_FEATURES] = {"num_features", MEMEST_ARG_INT, .optional = true, .lo = 1,
                         .hi = ARG_MAX, .doc = "channels C (inferred; checked when given)"},
    [IN_EPS] = {"eps", MEMEST_ARG_FLOAT, .fdef = 1e-5},
    [IN_MOMENTUM] = {"momentum", MEMEST_ARG_FLOAT, .optional = true, .fdef = 0.1},
    [IN_AFFINE] = {"affine", MEMEST_ARG_BOOL, .idef = 0},
    [IN_TRACK] = {"track_running_stats", MEMEST_ARG_BOOL, .idef = 0},
};

static int infer_instancenorm(struct memest_ictx *c, int D)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    if (s->ndim != D + 2 && s->ndim != D + 1)
        return memest_fail(c, "expects a %d-D batched or %d-D unbatched input, got %s", D + 2,
                           D + 1, IN_STR(c, 0));
    if (need_float(c, 0) != 0)
        return -1;
    int cd = s->ndim - D - 1;
    int64_t n = cd ? s->size[0] : 1, ch = s->size[cd];
    bool affine = memest_arg_bool(c, IN_AFFINE), track = memest_arg_bool(c, IN_TRACK);
    const struct memest_argval *nf = memest_arg(c, IN_NUM_FEATURES);
    if (!nf->none && nf->v[0] != ch && (affine || track))
        return memest_fail(c, "num_features is %lld but the input has %lld channels",
                           (long long)nf->v[0], (long long)ch);
    uint64_t spatial = 1;
    for (int d = cd + 1; d < s->ndim; d++)
        spatial *= (uint64_t)s->size[d];
    if (spatial == 1)
        return memest_fail(c, "expected more than 1 spatial element when training, got %s",
                           IN_STR(c, 0));
    if (norm_params(c, ch, affine, track) != 0)
        return -1;
    enum memest_dtype dt = memest_in_dtype(c, 0);
    if (memest_out_new(c, s->ndim, s->size, dt) < 0 || save_contiguous_in(c) != 0)
        return -1;
    int64_t nc;
    if (!mul_i64(n, ch, &nc))
        return memest_fail(c, "N * C overflows");
    if (save_new_if(c, 1, &nc, acc_dtype(dt)) != 0 || save_new_if(c, 1, &nc, acc_dtype(dt)) != 0)
        return -1;
    enum memest_dtype f = memest_float_dtype(c);
    if (affine && save_new_if(c, 1, &nc, f) != 0) /* weight.repeat(N) */
        return -1;
    if (track && (save_new_if(c, 1, &nc, f) != 0 || save_new_if(c, 1, &nc, f) != 0))
        return -1; /* running_mean/var.repeat(N) */
    return 0;
}

static int infer_instancenorm1d(struct memest_ictx *c) { return infer_instancenorm(c, 1); }
static int infer_instancenorm2d(struct memest_ictx *c) { return infer_instancenorm(c, 2); }

/* Autocast runs layer_norm and group_norm in float32 (batch_norm and
 * instance_norm are not listed: they take the input's dtype). */
#define NORM_OP(nm, argv, fn, text, policy)                                                     \
    {                                                                                           \
        .name = nm, .min_in = 1, .max_in = 1, .args = argv, .nargs = NARGS(argv), .infer = fn, \
        .doc = text, .amp = policy,                                                             \
    }

const struct memest_op_desc memest_ops_norm[] = {
    NORM_OP("batchnorm1d", batchnorm_args, infer_batchnorm1d,
            "nn.BatchNorm1d on (N, C) or (N, C, L)", MEMEST_AMPP_ANY),
    NORM_OP("batchnorm2d", batchnorm_args, infer_batchnorm2d, "nn.BatchNorm2d on (N, C, H, W)",
            MEMEST_AMPP_ANY),
    NORM_OP("batchnorm3d", batchnorm_args, infer_batchnorm3d,
            "nn.BatchNorm3d on (N, C, D, H, W)", MEMEST_AMPP_ANY),
    NORM_OP("layernorm", layernorm_args, infer_layernorm, "nn.LayerNorm over the trailing dims",
            MEMEST_AMPP_FP32),
    NORM_OP("groupnorm", groupnorm_args, infer_groupnorm, "nn.GroupNorm on (N, C, *)",
            MEMEST_AMPP_FP32),
    NORM_OP("instancenorm1d", instancenorm_args, infer_instancenorm1d,
            "nn.InstanceNorm1d on (N, C, L) or (C, L)", MEMEST_AMPP_ANY),
    NORM_OP("instancenorm2d", instancenorm_args, infer_instancenorm2d,
            "nn.InstanceNorm2d on (N, C, H, W) or (C, H, W)", MEMEST_AMPP_ANY),
};
const int memest_ops_norm_count = NOPS(memest_ops_norm);
