/* ops_resample.c - resampling the spatial dims: F.interpolate and its
 * modules (nn.Upsample, nn.UpsamplingNearest2d, nn.UpsamplingBilinear2d),
 * nn.PixelShuffle and nn.PixelUnshuffle.
 *
 * Output sizes (torch/nn/functional.py interpolate, PyTorch 1.13 and 2.x;
 * aten/src/ATen/native/UpSample.cpp compute_output_size): `size` as given
 * (an int for every spatial dim), or floor(in * scale_factor) per spatial
 * dim, which recompute_scale_factor does not change (it computes the same
 * floor in Python and drops the scale the kernel would use for the
 * coordinates). Mode "area" is adaptive_avg_pool{1,2,3}d to that size. The
 * mode fixes the input's rank: linear 3-D, bilinear and bicubic 4-D,
 * trilinear 5-D, nearest, nearest-exact and area 3-D to 5-D; every input and
 * output size must be at least 1 (upsample_*_common_check).
 *
 * Saved for backward (tests/reference/vision_ops_saved_*.md, 1.13 and 2.6
 * alike): nothing for every upsample kernel, antialiased or not (the
 * backward needs only the sizes and scales); area saves what adaptive
 * average pooling saves (the input; nothing for an all-ones output in 2.x).
 * The output is a new contiguous tensor (a channels-last input would give a
 * channels-last one: not modelled). Autocast runs the upsample kernels in
 * float32 (aten/src/ATen/autocast_mode.cpp's fp32 list names
 * upsample_nearest*, _upsample_nearest_exact*, upsample_linear1d,
 * upsample_bilinear2d(_aa), upsample_trilinear3d, upsample_bicubic2d(_aa));
 * area is not on it but shares the type's policy here.
 *
 * Pixel shuffle (aten/src/ATen/native/PixelShuffle.cpp): (*, C*r*r, H, W)
 * -> (*, C, H*r, W*r) and back; CUDA runs math_pixel_shuffle, which
 * reshapes the input (splitting dims only: always a view), permutes and
 * clones into the new contiguous output. Nothing saved (the backward is the inverse
 * shuffle of the gradient, a new tensor of the input's size). */
#include "ops_common.h"

enum { IP_SIZE, IP_SCALE, IP_MODE, IP_ALIGN, IP_RECOMPUTE, IP_ANTIALIAS };

#define RESAMPLE_SIZE_ARGS                                                                      \
    [IP_SIZE] = {"size", MEMEST_ARG_INTS, .optional = true, .lo = 1, .hi = ARG_MAX,            \
                 .doc = "output spatial size (an int: every spatial dim)"},                     \
    [IP_SCALE] = {"scale_factor", MEMEST_ARG_FLOAT, .optional = true,                           \
                  .doc = "multiplier of every spatial size (output floor(in * scale)); a "       \
                         "per-dim tuple: give size instead"}
#define RESAMPLE_MODE_ARGS                                                                      \
    [IP_MODE] = {"mode", MEMEST_ARG_STR, .sdef = "nearest",                                     \
                 .choices = "nearest|nearest-exact|linear|bilinear|bicubic|trilinear|area"},    \
    [IP_ALIGN] = {"align_corners", MEMEST_ARG_BOOL, .optional = true,                           \
                  .doc = "only for the (bi/tri)linear and bicubic modes"},                      \
    [IP_RECOMPUTE] = {"recompute_scale_factor", MEMEST_ARG_BOOL, .optional = true,              \
                      .doc = "not with size; the output size is the same either way"}

static const struct memest_argspec interpolate_args[] = {
    RESAMPLE_SIZE_ARGS,
    RESAMPLE_MODE_ARGS,
    [IP_ANTIALIAS] = {"antialias", MEMEST_ARG_BOOL, .idef = 0,
                      .doc = "bilinear and bicubic on 4-D inputs only"},
};
static const struct memest_argspec upsample_args[] = {RESAMPLE_SIZE_ARGS, RESAMPLE_MODE_ARGS};
static const struct memest_argspec upsampling2d_args[] = {RESAMPLE_SIZE_ARGS};

/* The modes, and the input rank each needs (0: 3-D to 5-D). */
enum mode { M_NEAREST, M_NEAREST_EXACT, M_LINEAR, M_BILINEAR, M_BICUBIC, M_TRILINEAR, M_AREA };
static const struct {
    const char *name;
    int ndim;
} modes[] = {
    [M_NEAREST] = {"nearest", 0},   [M_NEAREST_EXACT] = {"nearest-exact", 0},
    [M_LINEAR] = {"linear", 3},     [M_BILINEAR] = {"bilinear", 4},
    [M_BICUBIC] = {"bicubic", 4},   [M_TRILINEAR] = {"trilinear", 5},
    [M_AREA] = {"area", 0},
};

struct resample {
    enum mode mode;
    bool align_given, recompute, antialias;
};

/* The output's spatial sizes from `size` or `scale_factor`, with
 * F.interpolate's checks. */
static int resample_sizes(struct memest_ictx *c, const struct resample *r, int64_t *osz)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    int D = s->ndim - 2;
    const struct memest_argval *size = memest_arg(c, IP_SIZE), *scale = memest_arg(c, IP_SCALE);
    if (!size->none && !scale->none)
        return memest_fail(c, "only one of size or scale_factor should be defined");
    if (size->none && scale->none)
        return memest_fail(c, "either size or scale_factor should be defined");
    if (!size->none && r->recompute)
        return memest_fail(c, "recompute_scale_factor is not meaningful with an explicit size");
    if (!size->none) {
        if (size->n != 1 && size->n != D)
            return memest_fail(c, "input and output must have the same number of spatial "
                                  "dimensions, but got an input with %d spatial dimensions and "
                                  "an output size of %d",
                               D, size->n);
        for (int i = 0; i < D; i++)
            osz[i] = size->v[size->n == 1 ? 0 : i];
        return 0;
    }
    for (int i = 0; i < D; i++) {
        double o = (double)s->size[2 + i] * scale->f; /* the same double product as ATen */
        if (!(o < (double)MEMEST_DIM_MAX))
            return memest_fail(c, "scale_factor %g makes spatial dim %d too large", scale->f, i);
        osz[i] = o >= 1 ? (int64_t)o : 0; /* floor; anything below 1 fails below */
    }
    return 0;
}

static int infer_resample(struct memest_ictx *c, const struct resample *r)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    const char *mode = modes[r->mode].name;
    int need = modes[r->mode].ndim;
    if (s->ndim < 3 || s->ndim > 5)
        return memest_fail(c, "only 3-D, 4-D and 5-D inputs (N, C, spatial...) are supported, "
                              "got %s for mode \"%s\"",
                           IN_STR(c, 0), mode);
    if (need && s->ndim != need)
        return memest_fail(c, "got a %d-D input, but mode \"%s\" needs a %d-D input", s->ndim,
                           mode, need);
    bool interpolating = r->mode == M_LINEAR || r->mode == M_BILINEAR ||
                         r->mode == M_BICUBIC || r->mode == M_TRILINEAR;
    if (r->align_given && !interpolating)
        return memest_fail(c, "align_corners can only be set with the interpolating modes: "
                              "linear | bilinear | bicubic | trilinear");
    if (r->antialias && !((r->mode == M_BILINEAR || r->mode == M_BICUBIC) && s->ndim == 4))
        return memest_fail(c, "antialias is restricted to the bilinear and bicubic modes and "
                              "needs a 4-D input");
    if (r->mode != M_NEAREST && r->mode != M_NEAREST_EXACT && need_float(c, 0) != 0)
        return -1;
    int D = s->ndim - 2;
    int64_t size[MEMEST_MAX_DIMS] = {s->size[0], s->size[1]};
    if (resample_sizes(c, r, size + 2) != 0)
        return -1;
    for (int i = 0; i < D; i++)
        if (s->size[2 + i] < 1 || size[2 + i] < 1)
            return memest_fail(c, "input and output sizes should be greater than 0, but got "
                                  "input %s and output %s",
                               IN_STR(c, 0), shp_sizes(s->ndim, size).s);
    if (memest_out_new(c, s->ndim, size, memest_in_dtype(c, 0)) < 0)
        return -1;
    if (r->mode == M_AREA && adaptive_avg_saves_input(c, D, size + 2))
        return memest_save_in(c, 0);
    return 0;
}

static int infer_interpolate_any(struct memest_ictx *c, bool antialias_arg)
{
    struct resample r = {.mode = M_NEAREST};
    const char *m = memest_arg(c, IP_MODE)->s;
    for (int i = 0; i < NOPS(modes); i++)
        if (strcmp(m, modes[i].name) == 0)
            r.mode = (enum mode)i; /* the argument's choices are the modes */
    const struct memest_argval *align = memest_arg(c, IP_ALIGN),
                               *recompute = memest_arg(c, IP_RECOMPUTE);
    r.align_given = !align->none;
    r.recompute = !recompute->none && recompute->v[0];
    r.antialias = antialias_arg && memest_arg_bool(c, IP_ANTIALIAS);
    return infer_resample(c, &r);
}

static int infer_interpolate(struct memest_ictx *c) { return infer_interpolate_any(c, true); }
static int infer_upsample(struct memest_ictx *c) { return infer_interpolate_any(c, false); }

/* nn.UpsamplingNearest2d: F.interpolate(x, size, scale_factor, mode="nearest");
 * nn.UpsamplingBilinear2d: ... mode="bilinear", align_corners=True. */
static int infer_upsampling_nearest2d(struct memest_ictx *c)
{
    const struct resample r = {.mode = M_NEAREST};
    return infer_resample(c, &r);
}
static int infer_upsampling_bilinear2d(struct memest_ictx *c)
{
    const struct resample r = {.mode = M_BILINEAR, .align_given = true};
    return infer_resample(c, &r);
}

/* ---- pixel shuffle ---- */

enum { PS_FACTOR };
static const struct memest_argspec pixelshuffle_args[] = {
    [PS_FACTOR] = {"upscale_factor", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX},
};
static const struct memest_argspec pixelunshuffle_args[] = {
    [PS_FACTOR] = {"downscale_factor", MEMEST_ARG_INT, .required = true, .lo = 1,
                   .hi = ARG_MAX},
};

/* up: (*, C*r*r, H, W) -> (*, C, H*r, W*r); else the inverse. */
static int infer_shuffle(struct memest_ictx *c, bool up)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    const char *op = up ? "pixel_shuffle" : "pixel_unshuffle";
    if (s->ndim < 3)
        return memest_fail(c, "%s expects an input with at least 3 dimensions, got %s", op,
                           IN_STR(c, 0));
    int64_t r = memest_arg_int(c, PS_FACTOR), r2;
    int n = s->ndim;
    int64_t ch = s->size[n - 3], h = s->size[n - 2], w = s->size[n - 1];
    int64_t size[MEMEST_MAX_DIMS];
    memcpy(size, s->size, sizeof size);
    if (!mul_i64(r, r, &r2))
        return memest_fail(c, "the factor %lld is too large", (long long)r);
    if (up) {
        if (ch % r2 != 0)
            return memest_fail(c, "pixel_shuffle expects the channel dimension (size %lld) to "
                                  "be divisible by upscale_factor squared (%lld)",
                               (long long)ch, (long long)r2);
        size[n - 3] = ch / r2;
        if (!mul_i64(h, r, &size[n - 2]) || !mul_i64(w, r, &size[n - 1]))
            return memest_fail(c, "the output is too large");
    } else {
        if (h % r != 0 || w % r != 0)
            return memest_fail(c, "pixel_unshuffle expects height (%lld) and width (%lld) to "
                                  "be divisible by downscale_factor (%lld)",
                               (long long)h, (long long)w, (long long)r);
        if (!mul_i64(ch, r2, &size[n - 3]))
            return memest_fail(c, "the output is too large");
        size[n - 2] = h / r;
        size[n - 1] = w / r;
    }
    return memest_out_new(c, n, size, memest_in_dtype(c, 0)) < 0 ? -1 : 0;
}

static int infer_pixelshuffle(struct memest_ictx *c) { return infer_shuffle(c, true); }
static int infer_pixelunshuffle(struct memest_ictx *c) { return infer_shuffle(c, false); }

#define RESAMPLE_OP(nm, argv, fn, text)                                                         \
    {                                                                                           \
        .name = nm, .min_in = 1, .max_in = 1, .args = argv, .nargs = NARGS(argv), .infer = fn, \
        .doc = text, .amp = MEMEST_AMPP_FP32,                                                   \
    }

const struct memest_op_desc memest_ops_resample[] = {
    RESAMPLE_OP("interpolate", interpolate_args, infer_interpolate,
                "F.interpolate: resizes the spatial dims of (N, C, ...) (a new tensor)"),
    RESAMPLE_OP("upsample", upsample_args, infer_upsample, "nn.Upsample (F.interpolate)"),
    RESAMPLE_OP("upsamplingnearest2d", upsampling2d_args, infer_upsampling_nearest2d,
                "nn.UpsamplingNearest2d (mode nearest)"),
    RESAMPLE_OP("upsamplingbilinear2d", upsampling2d_args, infer_upsampling_bilinear2d,
                "nn.UpsamplingBilinear2d (mode bilinear, align_corners=True)"),
    {.name = "pixelshuffle", .min_in = 1, .max_in = 1, .args = pixelshuffle_args,
     .nargs = NARGS(pixelshuffle_args), .infer = infer_pixelshuffle,
     .doc = "nn.PixelShuffle: (*, C*r*r, H, W) -> (*, C, H*r, W*r)"},
    {.name = "pixelunshuffle", .min_in = 1, .max_in = 1, .args = pixelunshuffle_args,
     .nargs = NARGS(pixelunshuffle_args), .infer = infer_pixelunshuffle,
     .doc = "nn.PixelUnshuffle: (*, C, H*r, W*r) -> (*, C*r*r, H, W)"},
};
const int memest_ops_resample_count = NOPS(memest_ops_resample);
