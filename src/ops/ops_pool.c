/* ops_pool.c - max, average and adaptive pooling (1-D, 2-D and 3-D: one
 * implementation over the number of spatial dims D).
 *
 * Output sizes follow ATen's pooling_output_shape:
 *   out = floor_or_ceil((in + 2p - d(k-1) - 1) / s) + 1, and in ceil_mode
 *   out -= 1 when the last window would start past in + p (it must start
 *   inside the input or the left padding);
 * with PyTorch's checks (padding at most half the kernel, output >= 1).
 * The 1-D ops are computed by ATen as their 2-D versions on x.unsqueeze(-2),
 * which changes no figure here; the 3-D ops (max_pool3d_with_indices,
 * avg_pool3d, adaptive_{avg,max}_pool3d: aten/src/ATen/native/Pool.h
 * pool3d_shape_check) apply the same rules per spatial dim.
 *
 * Saved for backward (PyTorch 1.13 and 2.x, device-independent):
 *   max pool: the input and the int64 indices (output-sized);
 *   avg pool: the input;
 *   adaptive avg pool: the input. For output 1 (x1; the 1-D op is the 2-D
 *     one on x.unsqueeze(-2)) ATen's adaptive_avg_pool2d computes
 *     x.mean((-1, -2), keepdim=True) instead, whose MeanBackward1 saves
 *     nothing in 2.x (only sizes; measured with PyTorch 2.6) and the input
 *     in 1.13 (the catalog): --torch 1.13; adaptive_avg_pool3d to (1, 1, 1)
 *     likewise takes x.mean((-1, -2, -3), keepdim=True)
 *     (tests/reference/vision_ops_saved_*.md);
 *   adaptive max pool: the input and the int64 indices. */
#include "ops_common.h"

enum { MP_KERNEL, MP_STRIDE, MP_PADDING, MP_DILATION, MP_RETURN_INDICES, MP_CEIL };

#define MAXPOOL_ARGS(D)                                                                         \
    [MP_KERNEL] = {"kernel_size", MEMEST_ARG_INTS, .required = true, .n = D, .lo = 1,          \
                   .hi = ARG_MAX},                                                              \
    [MP_STRIDE] = {"stride", MEMEST_ARG_INTS, .optional = true, .n = D, .lo = 1,               \
                   .hi = ARG_MAX, .doc = "default: kernel_size"},                               \
    [MP_PADDING] = {"padding", MEMEST_ARG_INTS, .n = D, .lo = 0, .hi = ARG_MAX, .idef = 0},    \
    [MP_DILATION] = {"dilation", MEMEST_ARG_INTS, .n = D, .lo = 1, .hi = ARG_MAX, .idef = 1},  \
    [MP_RETURN_INDICES] = {"return_indices", MEMEST_ARG_BOOL, .idef = 0,                        \
                           .doc = "output 1 is the int64 indices"},                            \
    [MP_CEIL] = {"ceil_mode", MEMEST_ARG_BOOL, .idef = 0}

static const struct memest_argspec maxpool1d_args[] = {MAXPOOL_ARGS(1)};
static const struct memest_argspec maxpool2d_args[] = {MAXPOOL_ARGS(2)};
static const struct memest_argspec maxpool3d_args[] = {MAXPOOL_ARGS(3)};

enum { AP_KERNEL, AP_STRIDE, AP_PADDING, AP_CEIL, AP_COUNT_PAD, AP_DIVISOR };

#define AVGPOOL_ARGS(D)                                                                         \
    [AP_KERNEL] = {"kernel_size", MEMEST_ARG_INTS, .required = true, .n = D, .lo = 1,          \
                   .hi = ARG_MAX},                                                              \
    [AP_STRIDE] = {"stride", MEMEST_ARG_INTS, .optional = true, .n = D, .lo = 1,               \
                   .hi = ARG_MAX, .doc = "default: kernel_size"},                               \
    [AP_PADDING] = {"padding", MEMEST_ARG_INTS, .n = D, .lo = 0, .hi = ARG_MAX, .idef = 0},    \
    [AP_CEIL] = {"ceil_mode", MEMEST_ARG_BOOL, .idef = 0},                                      \
    [AP_COUNT_PAD] = {"count_include_pad", MEMEST_ARG_BOOL, .idef = 1}

#define DIVISOR_ARG                                                                             \
    [AP_DIVISOR] = {"divisor_override", MEMEST_ARG_INT, .optional = true, .lo = 1, .hi = ARG_MAX}

static const struct memest_argspec avgpool1d_args[] = {AVGPOOL_ARGS(1)};
static const struct memest_argspec avgpool2d_args[] = {AVGPOOL_ARGS(2), DIVISOR_ARG};
static const struct memest_argspec avgpool3d_args[] = {AVGPOOL_ARGS(3), DIVISOR_ARG};

enum { AD_OUTPUT_SIZE, AD_RETURN_INDICES };

#define ADAPTIVE_SIZE_ARG(D)                                                                    \
    [AD_OUTPUT_SIZE] = {"output_size", MEMEST_ARG_INTS, .required = true, .n = D, .lo = 1,     \
                        .hi = ARG_MAX}
#define ADAPTIVE_INDICES_ARG                                                                    \
    [AD_RETURN_INDICES] = {"return_indices", MEMEST_ARG_BOOL, .idef = 0,                        \
                           .doc = "output 1 is the int64 indices"}

static const struct memest_argspec adaptiveavg1d_args[] = {ADAPTIVE_SIZE_ARG(1)};
static const struct memest_argspec adaptiveavg2d_args[] = {ADAPTIVE_SIZE_ARG(2)};
static const struct memest_argspec adaptiveavg3d_args[] = {ADAPTIVE_SIZE_ARG(3)};
static const struct memest_argspec adaptivemax1d_args[] = {ADAPTIVE_SIZE_ARG(1),
                                                           ADAPTIVE_INDICES_ARG};
static const struct memest_argspec adaptivemax2d_args[] = {ADAPTIVE_SIZE_ARG(2),
                                                           ADAPTIVE_INDICES_ARG};
static const struct memest_argspec adaptivemax3d_args[] = {ADAPTIVE_SIZE_ARG(3),
                                                           ADAPTIVE_INDICES_ARG};

#define MAX_SPATIAL 3
static const char *const pool_layout[MAX_SPATIAL + 1] = {
    "", "(N, C, L) or (C, L)", "(N, C, H, W) or (C, H, W)", "(N, C, D, H, W) or (C, D, H, W)"};

/* Checks that the input has D spatial dims plus channels and an optional
 * batch, all non-empty. */
static int check_pool_input(struct memest_ictx *c, int D)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    if (s->ndim != D + 1 && s->ndim != D + 2)
        return memest_fail(c, "expects a %d-D or %d-D %s input, got %s", D + 2, D + 1,
                           pool_layout[D], IN_STR(c, 0));
    for (int d = s->ndim == D + 2 ? 1 : 0; d < s->ndim; d++)
        if (s->size[d] < 1)
            return memest_fail(c, "expects non-empty non-batch dimensions, got %s", IN_STR(c, 0));
    return need_float(c, 0);
}

/* ATen's pooling_output_shape_pad_lr with symmetric padding. */
static int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil)
{
    int64_t ek = dil * (k - 1); /* callers check it fits */
    int64_t num = in + 2 * pad - ek - 1 + (ceil ? stride - 1 : 0);
    int64_t out = div_floor(num, stride) + 1, start;
    if (ceil && (!mul_i64(out - 1, stride, &start) || start >= in + pad))
        out--;
    return out;
}

/* Output sizes of a (max or avg) pool, with PyTorch's checks. */
static int pool_sizes(struct memest_ictx *c, int D, const int64_t *k, const int64_t *st,
                      const int64_t *pad, const int64_t *dil, bool ceil, int64_t *osz)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    int first = s->ndim - D;
    for (int i = 0; i < D; i++) {
        if (pad[i] > k[i] / 2)
            return memest_fail(c,
                               "padding %lld should be at most half of kernel_size %lld "
                               "(spatial dim %d)",
                               (long long)pad[i], (long long)k[i], i);
        int64_t ek;
        if (!mul_i64(dil[i], k[i] - 1, &ek) || ek >= MEMEST_DIM_MAX)
            return memest_fail(c, "dilation * (kernel_size - 1) is too large");
        osz[i] = pool_out(s->size[first + i], k[i], pad[i], st[i], dil[i], ceil);
        if (osz[i] < 1)
            return memest_fail(c,
                               "output size is too small: input size %lld, kernel %lld, "
                               "padding %lld, dilation %lld give %lld in spatial dim %d",
                               (long long)s->size[first + i], (long long)k[i],
                               (long long)pad[i], (long long)dil[i], (long long)osz[i], i);
    }
    return 0;
}

/* Declares output 0 (and the indices as output 1 when asked) with the
 * input's leading dims and the given spatial sizes; saves what the op
 * saves. */
static int pool_outputs(struct memest_ictx *c, int D, const int64_t *osz, bool indices,
                        bool return_indices, bool save_input)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    int64_t size[MEMEST_MAX_DIMS];
    int lead = s->ndim - D;
    for (int d = 0; d < lead; d++)
        size[d] = s->size[d];
    for (int i = 0; i < D; i++)
        size[lead + i] = osz[i];
    if (memest_out_new(c, s->ndim, size, memest_in_dtype(c, 0)) < 0)
        return -1;
    if (save_input && memest_save_in(c, 0) != 0)
        return -1;
    if (!indices)
        return 0;
    if (return_indices) {
        if (memest_out_new(c, s->ndim, size, MEMEST_I64) < 0)
            return -1;
        memest_out_set_requires_grad(c, 1, false);
        return memest_save_out(c, 1);
    }
    return save_new_if(c, s->ndim, size, MEMEST_I64);
}

static int infer_maxpool(struct memest_ictx *c, int D)
{
    if (check_pool_input(c, D) != 0)
        return -1;
    const int64_t *k = memest_arg(c, MP_KERNEL)->v;
    const struct memest_argval *as = memest_arg(c, MP_STRIDE);
    const int64_t *st = as->none ? k : as->v;
    int64_t osz[MAX_SPATIAL];
    if (pool_sizes(c, D, k, st, memest_arg(c, MP_PADDING)->v, memest_arg(c, MP_DILATION)->v,
                   memest_arg_bool(c, MP_CEIL), osz) != 0)
        return -1;
    return pool_outputs(c, D, osz, true, memest_arg_bool(c, MP_RETURN_INDICES), true);
}

static int infer_avgpool(struct memest_ictx *c, int D)
{
    if (check_pool_input(c, D) != 0)
        return -1;
    const int64_t *k = memest_arg(c, AP_KERNEL)->v;
    const struct memest_argval *as = memest_arg(c, AP_STRIDE);
    const int64_t *st = as->none ? k : as->v;
    static const int64_t ones[MAX_SPATIAL] = {1, 1, 1};
    int64_t osz[MAX_SPATIAL];
    if (pool_sizes(c, D, k, st, memest_arg(c, AP_PADDING)->v, ones, memest_arg_bool(c, AP_CEIL),
                   osz) != 0)
        return -1;
    return pool_outputs(c, D, osz, false, false, true);
}

static int infer_adaptive(struct memest_ictx *c, int D, bool max)
{
    if (check_pool_input(c, D) != 0)
        return -1;
    const int64_t *osz = memest_arg(c, AD_OUTPUT_SIZE)->v;
    bool save = max || adaptive_avg_saves_input(c, D, osz);
    return pool_outputs(c, D, osz, max, max && memest_arg_bool(c, AD_RETURN_INDICES), save);
}

/* One infer function per op and D (the table takes plain function pointers). */
#define POOL_INFERS(D)                                                                          \
    static int infer_maxpool##D##d(struct memest_ictx *c) { return infer_maxpool(c, D); }      \
    static int infer_avgpool##D##d(struct memest_ictx *c) { return infer_avgpool(c, D); }      \
    static int infer_adaptiveavg##D##d(struct memest_ictx *c)                                  \
    {                                                                                           \
        return infer_adaptive(c, D, false);                                                     \
    }                                                                                           \
    static int infer_adaptivemax##D##d(struct memest_ictx *c)                                  \
    {                                                                                           \
        return infer_adaptive(c, D, true);                                                      \
    }
POOL_INFERS(1)
POOL_INFERS(2)
POOL_INFERS(3)

#define POOL_OP(nm, argv, fn, text)                                                     \
    {                                                                                           \
        .name = nm, .min_in = 1, .max_in = 1, .args = argv, .nargs = NARGS(argv), .infer = fn, \
        .doc = text,                                                                            \
    }

/* The four pools of spatial rank D, documented as their nn classes. */
#define POOL_OPS(D)                                                                             \
    POOL_OP("maxpool" #D "d", maxpool##D##d_args, infer_maxpool##D##d, "nn.MaxPool" #D "d"),     \
    POOL_OP("avgpool" #D "d", avgpool##D##d_args, infer_avgpool##D##d, "nn.AvgPool" #D "d"),     \
    POOL_OP("adaptiveavgpool" #D "d", adaptiveavg##D##d_args, infer_adaptiveavg##D##d,          \
            "nn.AdaptiveAvgPool" #D "d"),                                                       \
    POOL_OP("adaptivemaxpool" #D "d", adaptivemax##D##d_args, infer_adaptivemax##D##d,          \
            "nn.AdaptiveMaxPool" #D "d")

const struct memest_op_desc memest_ops_pool[] = {POOL_OPS(1), POOL_OPS(2), POOL_OPS(3)};
const int memest_ops_pool_count = NOPS(memest_ops_pool);
