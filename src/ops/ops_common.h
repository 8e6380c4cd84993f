/* ops_common.h - small helpers shared by the src/ops_<family>.c files: shape
 * strings for messages, dtype rules, view geometries, overflow-checked
 * arithmetic on user-given sizes, and the dropout model. Everything here is
 * static inline; nothing is exported. */
#pragma once

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "memest/checked.h"
#include "memest/dtype.h"
#include "memest/ops.h"
#include "memest/run.h"
#include "memest/shape.h"
#include "ops_families.h"

#define NARGS(a) ((int)(sizeof(a) / sizeof *(a)))
#define NOPS(a) ((int)(sizeof(a) / sizeof *(a)))
/* Upper bound for "no upper bound" in an argspec (lo == hi == 0 means none). */
#define ARG_MAX MEMEST_DIM_MAX

/* A shape as "[2, 3, 4]", for messages. */
struct shp {
    char s[160];
};
static inline struct shp shp_of(const struct memest_shape *s)
{
    struct shp r;
    memest_shape_str(s, r.s, sizeof r.s);
    return r;
}
static inline struct shp shp_sizes(int ndim, const int64_t *size)
{
    struct memest_shape t;
    memest_shape_set(&t, ndim, size);
    return shp_of(&t);
}
#define IN_STR(c, i) (shp_of(memest_in_shape((c), (i))).s)

/* ---- PyTorch versions ----
 * The run option torch (--torch) picks whose autograd rules apply: 0 (the
 * default) PyTorch 2.x, 113 PyTorch 1.13, whose rules the catalog and the
 * reference measurements of tests/reference/ (torch 1.13) follow. Where the
 * two differ, an op asks: */
static inline bool torch113(const struct memest_ictx *c)
{
    return memest_run_options(c)->torch == 113;
}

/* Whether adaptive average pooling (adaptive_avg_pool{1,2,3}d, and
 * F.interpolate's mode "area") to the spatial sizes osz[0..D) saves its
 * input. To an all-ones size ATen takes x.mean(spatial dims, keepdim=True)
 * instead (AdaptiveAveragePooling.cpp, AdaptiveAveragePooling3d.cpp), whose
 * MeanBackward1 saves nothing in 2.x (only sizes) and the input in 1.13
 * (tests/reference/vision_ops_saved_*.md, saved_tensors_catalog.md). */
static inline bool adaptive_avg_saves_input(const struct memest_ictx *c, int D,
                                            const int64_t *osz)
{
    for (int i = 0; i < D; i++)
        if (osz[i] != 1)
            return true;
    return torch113(c);
}
/* A table entry for an op of one input and the arguments `argv`. */
#define OP1(nm, argv, fn, text)                                                                 \
    {                                                                                           \
        .name = nm, .min_in = 1, .max_in = 1, .args = argv, .nargs = NARGS(argv), .infer = fn, \
        .doc = text,                                                                            \
    }

/* ---- dims ---- */

/* Wraps `dim` for an ndim-D tensor (maybe_wrap_dim: a 0-d tensor takes -1
 * and 0), failing with PyTorch's range. 0 / -1 after memest_fail. */
static inline int wrap_dim(struct memest_ictx *c, int64_t dim, int ndim, int *out)
{
    int w = memest_wrap_dim(dim, ndim);
    *out = 0;
    if (w < 0) {
        int n = ndim > 0 ? ndim : 1;
        return memest_fail(c, "dimension out of range (expected to be in range of [%d, %d], "
                              "but got %lld)",
                           -n, n - 1, (long long)dim);
    }
    *out = w;
    return 0;
}

/* The sizes of a reduction of s over the dims `dims` lists (None or an
 * empty list: every dim), kept as 1s when `keep` (mean, sum, norm). 0 /
 * -1 after memest_fail. */
static inline int reduced_sizes(struct memest_ictx *c, const struct memest_shape *s,
                                const struct memest_argval *dims, bool keep, int64_t *size,
                                int *n)
{
    bool red[MEMEST_MAX_DIMS] = {false};
    if (dims->none || dims->n == 0) {
        for (int d = 0; d < s->ndim; d++)
            red[d] = true;
    } else {
        for (int i = 0; i < dims->n; i++) {
            int d = memest_wrap_dim(dims->v[i], s->ndim);
            if (d < 0)
                return memest_fail(c, "dim %lld is out of range for a %d-D input",
                                   (long long)dims->v[i], s->ndim);
            if (s->ndim == 0)
                continue;
            if (red[d])
                return memest_fail(c, "dim %d appears multiple times in the list of dims", d);
            red[d] = true;
        }
    }
    *n = 0;
    for (int d = 0; d < s->ndim; d++) {
        if (!red[d])
            size[(*n)++] = s->size[d];
        else if (keep)
            size[(*n)++] = 1;
    }
    return 0;
}

/* The most outputs an op that splits a tensor (split, chunk, unbind,
 * tensor_split) may make. */
#define MAX_SPLITS 255

/* ---- dtypes ---- */

/* at::toAccumulateType(t, is_cuda=true): half and bfloat16 accumulate in
 * float32; the statistics that normalisations save on CUDA have this type. */
static inline enum memest_dtype acc_dtype(enum memest_dtype t)
{
    return memest_dtype_is_half(t) ? MEMEST_F32 : t;
}

/* 0 bool, 1 integer, 2 floating point (PyTorch's promotion categories). */
static inline int dtype_category(enum memest_dtype t)
{
    if (t == MEMEST_BOOL)
        return 0;
    return memest_dtype_is_float(t) ? 2 : 1;
}

/* torch.promote_types for the dtypes memest knows. */
static inline enum memest_dtype promote_dtypes(enum memest_dtype a, enum memest_dtype b)
{
    if (a == b)
        return a;
    int ca = dtype_category(a), cb = dtype_category(b);
    if (ca != cb)
        return ca > cb ? a : b;
    if (ca == 2) {
        if (memest_dtype_is_half(a) && memest_dtype_is_half(b))   /* fp16 with bf16 */
            return MEMEST_F32;
        return memest_dtype_size(a) >= memest_dtype_size(b) ? a : b;
    }
    /* integers: uint8 with a signed type needs the next wider signed type */
    if (a == MEMEST_U8 || b == MEMEST_U8) {
        enum memest_dtype o = a == MEMEST_U8 ? b : a;
        return o == MEMEST_I8 ? MEMEST_I16 : o;
    }
    return memest_dtype_size(a) >= memest_dtype_size(b) ? a : b;
}

/* Parses a "dtype" argument; floating types become the run's float dtype
 * (as model inputs do). 0 / -1 after memest_fail. */
static inline int arg_dtype(struct memest_ictx *c, const char *s, enum memest_dtype *out)
{
    if (memest_dtype_parse(s, out) != 0)
        return memest_fail(c, "unknown dtype \"%s\" (one of %s)", s, memest_dtype_names());
    if (memest_dtype_is_float(*out))
        *out = memest_float_dtype(c);
    return 0;
}

/* Parses a dtype argument that names the type itself (Tensor.to(dtype),
 * F.softmax(dtype=...)): "float" is the run's float dtype, any other name
 * that exact type. 0 / -1 after memest_fail. */
static inline int arg_dtype_exact(struct memest_ictx *c, const char *s, enum memest_dtype *out)
{
    if (strcmp(s, "float") == 0) {
        *out = memest_float_dtype(c);
        return 0;
    }
    if (memest_dtype_parse(s, out) != 0)
        return memest_fail(c, "unknown dtype \"%s\" (one of %s, or \"float\")", s,
                           memest_dtype_names());
    return 0;
}

/* True for a number with no fractional part (a Python int, as far as type
 * promotion is concerned). */
static inline bool integral(double v)
{
    return isfinite(v) && v == floor(v);
}

static inline int need_float(struct memest_ictx *c, int i)
{
    enum memest_dtype t = memest_in_dtype(c, i);
    if (!memest_dtype_is_float(t))
        return memest_fail(c, "expects a floating-point input, got %s", memest_dtype_name(t));
    return 0;
}

/* ---- saving ---- */

/* memest_save_new only when autograd records the node, so that a node that
 * needs no gradient declares no op-internal storage at all. */
static inline int save_new_if(struct memest_ictx *c, int ndim, const int64_t *size,
                              enum memest_dtype dt)
{
    if (!memest_needs_grad(c))
        return 0;
    return memest_save_new(c, ndim, size, dt);
}

/* Bytes of a tensor of the given sizes, saturating (for workspaces). */
static inline uint64_t sat_bytes(int ndim, const int64_t *size, enum memest_dtype dt)
{
    uint64_t n = memest_dtype_size(dt);
    for (int d = 0; d < ndim; d++)
        n = memest_sat_mul(n, size[d] > 0 ? (uint64_t)size[d] : 0);
    return n;
}

static inline double dprod(int n, const int64_t *v)
{
    double p = 1;
    for (int i = 0; i < n; i++)
        p *= (double)v[i];
    return p;
}

/* The GPU's multiprocessors, torch.cuda.get_device_properties()
 * .multi_processor_count, for kernels whose partial sums have a row per SM
 * (Liger's RMSNorm backward, mamba_ssm's scan and gated-norm backward): an
 * H100 SXM's (an H200's too). */
#define OPS_SM_COUNT 132

/* The transient memory of a composite op's forward (or backward): the
 * intermediates that are neither its outputs nor saved, allocated and freed
 * in the order the eager code makes them; `peak` is what the op declares as
 * its workspace. */
struct transient {
    uint64_t cur, peak;
};
static inline void tr_alloc(struct transient *t, uint64_t bytes)
{
    t->cur = memest_sat_add(t->cur, bytes);
    if (t->cur > t->peak)
        t->peak = t->cur;
}
static inline void tr_free(struct transient *t, uint64_t bytes)
{
    t->cur = t->cur > bytes ? t->cur - bytes : 0;
}

/* ---- view geometry (sizes and strides in elements) ---- */

static inline void geom_transpose(struct memest_shape *s, int a, int b)
{
    int64_t t = s->size[a];
    s->size[a] = s->size[b];
    s->size[b] = t;
    t = s->stride[a];
    s->stride[a] = s->stride[b];
    s->stride[b] = t;
}

/* Tensor.unsqueeze(dim) geometry (at::inferUnsqueezeGeometry); dim in [0, ndim]. */
static inline void geom_unsqueeze(struct memest_shape *s, int dim)
{
    int64_t st = 1;
    if (dim < s->ndim && __builtin_mul_overflow(s->size[dim], s->stride[dim], &st))
        st = INT64_MAX; /* only for a tensor too large to pass the numel check */
    for (int d = s->ndim; d > dim; d--) {
        s->size[d] = s->size[d - 1];
        s->stride[d] = s->stride[d - 1];
    }
    s->size[dim] = 1;
    s->stride[dim] = st;
    s->ndim++;
}

static inline void geom_remove_dim(struct memest_shape *s, int dim)
{
    for (int d = dim; d + 1 < s->ndim; d++) {
        s->size[d] = s->size[d + 1];
        s->stride[d] = s->stride[d + 1];
    }
    s->ndim--;
}

/* True when `from` can be viewed with sizes `size` (reshape without a copy). */
static inline bool geom_viewable(const struct memest_shape *from, int ndim, const int64_t *size)
{
    struct memest_shape to;
    memest_shape_set(&to, ndim, size);
    return memest_shape_view_strides(from, &to);
}

/* For a tensor derived from input i by views only (geometry `g` on the
 * input's storage) and then reshaped to `size`: when `save`, saves it as
 * reshape sees it (the input's storage when viewable, else a fresh
 * contiguous copy); when not saved but the reshape copies, counts the copy
 * as a transient forward workspace. 0 / -1. */
static inline int save_geom_reshaped(struct memest_ictx *c, int i, const struct memest_shape *g,
                                     int ndim, const int64_t *size, bool save)
{
    if (geom_viewable(g, ndim, size))
        return save ? memest_save_in(c, i) : 0;
    if (save)
        return save_new_if(c, ndim, size, memest_in_dtype(c, i));
    memest_workspace(c, sat_bytes(ndim, size, memest_in_dtype(c, i)));
    return 0;
}

/* Output: a view of input i with its own geometry (the input itself, as an
 * identity or a no-op view returns it). Input geometries live in an array
 * that declaring an output may move, so callers hold copies, never the
 * pointers memest_in_shape() returns, across memest_out_* calls. */
static inline int out_alias_view(struct memest_ictx *c, int i)
{
    struct memest_shape g = *memest_in_shape(c, i);
    return memest_out_view(c, i, &g, 0) < 0 ? -1 : 0;
}

/* ---- checked arithmetic on user values (each at most 2^53) ---- */

static inline bool mul_i64(int64_t a, int64_t b, int64_t *r)
{
    return !__builtin_mul_overflow(a, b, r);
}

/* Floor division for b > 0 (PyTorch's div_rtn). */
static inline int64_t div_floor(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && (a < 0))
        q--;
    return q;
}

/* Ceil division for a >= 0, b > 0. */
static inline int64_t div_ceil(int64_t a, int64_t b)
{
    return a / b + (a % b != 0);
}

/* ---- dropout (training mode) ----
 *
 * Models ATen's dropout for an input of `ndim`/`size` and dtype dt, with
 * probability p, as on CUDA in PyTorch 1.13 / 2.x:
 *   p == 0: returns the input itself (no node; the caller aliases);
 *   0 < p < 1, not in place: at::native_dropout (the fused kernel is used on
 *     CUDA): a new output and a bool mask of the input's size, saved;
 *   0 < p < 1, in place (dropout_): _dropout_impl, noise = empty_like(x)
 *     .bernoulli_(1-p).div_(1-p); x.mul_(noise): the float noise is saved;
 *   p == 1: x * zeros({}): a 0-d tensor is saved.
 * feature (Dropout2d): _dropout_impl with noise [N, C, 1, ...] of the input
 * dtype, in place or not.
 * The CPU differs (the catalog's figures): non-inplace dropout also goes
 * through _dropout_impl and saves a float mask of the input's size.
 * Only the saved tensors are declared here; the caller declares the output. */
static inline int dropout_saves(struct memest_ictx *c, int ndim, const int64_t *size,
                                enum memest_dtype dt, double p, bool inplace, bool feature)
{
    if (p <= 0)
        return 0;
    if (p >= 1)
        return save_new_if(c, 0, NULL, dt);
    if (feature) {
        int64_t ns[MEMEST_MAX_DIMS];
        for (int d = 0; d < ndim; d++)
            ns[d] = d < 2 ? size[d] : 1;
        return save_new_if(c, ndim, ns, dt);
    }
    return save_new_if(c, ndim, size, inplace ? dt : MEMEST_BOOL);
}
