/* ops_shape.c - views, reshapes and joins: flatten, unflatten, reshape,
 * view, permute, transpose, contiguous, squeeze, unsqueeze, expand, select,
 * narrow, split, chunk, cat, stack.
 *
 * Views share their input's storage with PyTorch's sizes, strides and
 * offsets (so later reshapes copy exactly when PyTorch's would); reshape
 * and flatten view when PyTorch can and copy otherwise; contiguous copies
 * only a non-contiguous input; cat and stack write new contiguous tensors.
 * None of them saves anything for backward (their backward needs only
 * sizes) and none has MACs. Dims wrap as PyTorch's maybe_wrap_dim does.
 *
 * Backward: a view's gradient is a view of its output's gradient (reshape,
 * view, flatten, unflatten, squeeze, unsqueeze: grad.reshape(input sizes),
 * which copies only when the incoming gradient's layout does not allow a
 * view; permute, transpose: the inverse permutation, always a view);
 * contiguous (a clone) passes its gradient through; cat hands each input a
 * narrowed view of its gradient; select, narrow, expand, split, chunk and
 * stack build a new gradient of the input's size (zeros plus the slice,
 * sum_to, or the cat of the outputs' gradients). */
#include "ops_common.h"

/* "[2, -1, batch]" for a SHAPE argument. */
static struct shp shape_arg_str(const struct memest_argval *a)
{
    struct shp r;
    size_t used = 0;
    used += (size_t)snprintf(r.s, sizeof r.s, "[");
    for (int i = 0; i < a->n && used < sizeof r.s; i++)
        if (a->v[i] == MEMEST_SHAPE_BATCH)
            used += (size_t)snprintf(r.s + used, sizeof r.s - used, "%sbatch", i ? ", " : "");
        else
            used += (size_t)snprintf(r.s + used, sizeof r.s - used, "%s%lld", i ? ", " : "",
                                     (long long)a->v[i]);
    if (used < sizeof r.s)
        snprintf(r.s + used, sizeof r.s - used, "]");
    return r;
}

/* Resolves a SHAPE argument ("batch", at most one -1) against `numel`
 * elements into out[0 .. a->n). */
static int resolve_shape(struct memest_ictx *c, const struct memest_argval *a, uint64_t numel,
                         int64_t *out)
{
    int infer = -1;
    uint64_t known = 1;
    for (int i = 0; i < a->n; i++) {
        int64_t v = a->v[i] == MEMEST_SHAPE_BATCH ? memest_batch(c) : a->v[i];
        if (v == -1) {
            if (infer >= 0)
                return memest_fail(c, "only one dimension can be inferred in shape %s",
                                   shape_arg_str(a).s);
            infer = i;
            continue;
        }
        if (v < 0)
            return memest_fail(c, "invalid shape dimension %lld", (long long)v);
        out[i] = v;
        known = memest_sat_mul(known, (uint64_t)v);
    }
    if (infer >= 0) {
        if (known == 0)
            return memest_fail(c, "cannot reshape a tensor of %llu elements into shape %s: the "
                                  "-1 is ambiguous",
                               (unsigned long long)numel, shape_arg_str(a).s);
        if (numel % known != 0)
            return memest_fail(c, "shape %s is invalid for an input of %llu elements",
                               shape_arg_str(a).s, (unsigned long long)numel);
        out[infer] = (int64_t)(numel / known);
    } else if (known != numel) {
        return memest_fail(c, "shape %s is invalid for an input of %llu elements",
                           shape_arg_str(a).s, (unsigned long long)numel);
    }
    return 0;
}

static uint64_t in_numel(const struct memest_ictx *c, int i)
{
    uint64_t n = 0;
    memest_shape_numel(memest_in_shape(c, i), &n); /* checked when the tensor was made */
    return n;
}

/* Output 0: a view of input 0 with sizes `size`, or an error like
 * Tensor.view's when the strides do not allow it. */
static int out_view_sizes(struct memest_ictx *c, int ndim, const int64_t *size)
{
    struct memest_shape to;
    memest_shape_set(&to, ndim, size);
    if (!memest_shape_view_strides(memest_in_shape(c, 0), &to))
        return memest_fail(c, "view size %s is not compatible with the input's size and stride "
                              "(at least one dimension spans two contiguous subspaces); use "
                              "reshape instead",
                           shp_of(&to).s);
    return memest_out_view(c, 0, &to, 0) < 0 ? -1 : 0;
}

/* ---- flatten, unflatten ---- */

enum { FL_START, FL_END };
static const struct memest_argspec flatten_args[] = {
    [FL_START] = {"start_dim", MEMEST_ARG_INT, .idef = 1},
    [FL_END] = {"end_dim", MEMEST_ARG_INT, .idef = -1},
};

static int infer_flatten(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    int a, b;
    if (wrap_dim(c, memest_arg_int(c, FL_START), s->ndim, &a) != 0 ||
        wrap_dim(c, memest_arg_int(c, FL_END), s->ndim, &b) != 0)
        return -1;
    memest_grad_reshape(c, 0, 0);
    if (s->ndim == 0) {
        int64_t one = 1;
        return memest_out_reshape(c, 0, 1, &one) < 0 ? -1 : 0;
    }
    if (a > b)
        return memest_fail(c, "start_dim (%d) cannot come after end_dim (%d)", a, b);
    if (a == b)
        return out_alias_view(c, 0);
    int64_t size[MEMEST_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < a; d++)
        size[n++] = s->size[d];
    int64_t m = 1;
    for (int d = a; d <= b; d++)
        m *= s->size[d];
    size[n++] = m;
    for (int d = b + 1; d < s->ndim; d++)
        size[n++] = s->size[d];
    return memest_out_reshape(c, 0, n, size) < 0 ? -1 : 0;
}

enum { UF_DIM, UF_SIZES };
static const struct memest_argspec unflatten_args[] = {
    [UF_DIM] = {"dim", MEMEST_ARG_INT, .required = true},
    [UF_SIZES] = {"unflattened_size", MEMEST_ARG_SHAPE, .required = true},
};

static int infer_unflatten(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    if (s->ndim == 0)
        return memest_fail(c, "cannot unflatten a 0-d tensor");
    int dim;
    if (wrap_dim(c, memest_arg_int(c, UF_DIM), s->ndim, &dim) != 0)
        return -1;
    const struct memest_argval *us = memest_arg(c, UF_SIZES);
    if (us->n < 1)
        return memest_fail(c, "unflattened_size must be non-empty");
    if (s->ndim - 1 + us->n > MEMEST_MAX_DIMS)
        return memest_fail(c, "the result would have more than %d dimensions", MEMEST_MAX_DIMS);
    int64_t part[MEMEST_MAX_DIMS];
    if (resolve_shape(c, us, (uint64_t)s->size[dim], part) != 0)
        return -1;
    int64_t size[MEMEST_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < dim; d++)
        size[n++] = s->size[d];
    for (int i = 0; i < us->n; i++)
        size[n++] = part[i];
    for (int d = dim + 1; d < s->ndim; d++)
        size[n++] = s->size[d];
    memest_grad_reshape(c, 0, 0);
    return out_view_sizes(c, n, size);
}

/* ---- reshape, view ---- */

enum { RS_SHAPE };
static const struct memest_argspec reshape_args[] = {
    [RS_SHAPE] = {"shape", MEMEST_ARG_SHAPE, .required = true,
                  .doc = "new shape; -1 infers one dimension, \"batch\" is the batch size"},
};

static int infer_reshape(struct memest_ictx *c)
{
    const struct memest_argval *a = memest_arg(c, RS_SHAPE);
    int64_t size[MEMEST_MAX_DIMS];
    if (resolve_shape(c, a, in_numel(c, 0), size) != 0)
        return -1;
    memest_grad_reshape(c, 0, 0);   /* a copying reshape's gradient is reshaped back too */
    return memest_out_reshape(c, 0, a->n, size) < 0 ? -1 : 0;
}

static int infer_view(struct memest_ictx *c)
{
    const struct memest_argval *a = memest_arg(c, RS_SHAPE);
    int64_t size[MEMEST_MAX_DIMS];
    if (resolve_shape(c, a, in_numel(c, 0), size) != 0)
        return -1;
    memest_grad_reshape(c, 0, 0);
    return out_view_sizes(c, a->n, size);
}

/* moe_experts_view: Tensor.view for fused experts that run every token
 * through every expert (Llama4TextExperts.forward: hidden_states.view(
 * num_experts, -1, hidden) before the bmm with the [E, H, 2I] gate_up_proj;
 * the unrouted tokens carry a score of 0). The op marks the block around it
 * as the experts (ops.h: moe_expert_tokens), whose parameters a token uses
 * top_k / num_experts of: the active-parameter count. */
enum { EV_SHAPE, EV_EXPERTS, EV_TOPK };
static const struct memest_argspec experts_view_args[] = {
    [EV_SHAPE] = {"shape", MEMEST_ARG_SHAPE, .required = true,
                  .doc = "new shape, num_experts first; -1 infers one dimension"},
    [EV_EXPERTS] = {"num_experts", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX},
    [EV_TOPK] = {"top_k", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX,
                 .doc = "experts a token is routed to (for the active parameters)"},
};

static int infer_experts_view(struct memest_ictx *c)
{
    int64_t E = memest_arg_int(c, EV_EXPERTS), k = memest_arg_int(c, EV_TOPK);
    if (k > E)
        return memest_fail(c, "top_k %lld is more than num_experts %lld", (long long)k,
                           (long long)E);
    if (infer_view(c) != 0)
        return -1;
    const struct memest_shape *o = memest_out_shape(c, 0);
    if (o->ndim < 1 || o->size[0] != E)
        return memest_fail(c, "the view's first dim must be num_experts %lld, got [%lld, ...]",
                           (long long)E, (long long)(o->ndim ? o->size[0] : 0));
    return 0;
}

/* ---- permute, transpose, contiguous ---- */

enum { PM_DIMS };
static const struct memest_argspec permute_args[] = {
    [PM_DIMS] = {"dims", MEMEST_ARG_INTS, .required = true, .doc = "the new order of the dims"},
};

static int infer_permute(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    const struct memest_argval *a = memest_arg(c, PM_DIMS);
    if (a->n != s->ndim)
        return memest_fail(c, "permute needs %d dims for a %d-D input, got %d", s->ndim,
                           s->ndim, a->n);
    struct memest_shape g = {.ndim = s->ndim};
    bool seen[MEMEST_MAX_DIMS] = {false};
    int inverse[MEMEST_MAX_DIMS];
    for (int i = 0; i < a->n; i++) {
        int d;
        if (wrap_dim(c, a->v[i], s->ndim, &d) != 0)
            return -1;
        if (seen[d])
            return memest_fail(c, "repeated dim %d in permute", d);
        seen[d] = true;
        g.size[i] = s->size[d];
        g.stride[i] = s->stride[d];
        inverse[d] = i;
    }
    memest_grad_permute(c, 0, 0, inverse);   /* grad.permute(inverse): a view */
    return memest_out_view(c, 0, &g, 0) < 0 ? -1 : 0;
}

enum { TR_DIM0, TR_DIM1 };
static const struct memest_argspec transpose_args[] = {
    [TR_DIM0] = {"dim0", MEMEST_ARG_INT, .required = true},
    [TR_DIM1] = {"dim1", MEMEST_ARG_INT, .required = true},
};

static int infer_transpose(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    int a, b;
    if (wrap_dim(c, memest_arg_int(c, TR_DIM0), s->ndim, &a) != 0 ||
        wrap_dim(c, memest_arg_int(c, TR_DIM1), s->ndim, &b) != 0)
        return -1;
    struct memest_shape g = *s;
    int perm[MEMEST_MAX_DIMS];
    for (int d = 0; d < MEMEST_MAX_DIMS; d++)
        perm[d] = d;
    if (s->ndim > 0) {
        geom_transpose(&g, a, b);
        perm[a] = b;
        perm[b] = a;
    }
    memest_grad_permute(c, 0, 0, perm);   /* grad.transpose(dim0, dim1): a view */
    return memest_out_view(c, 0, &g, 0) < 0 ? -1 : 0;
}

static int infer_contiguous(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    memest_grad_same(c, 0, 0);   /* CloneBackward0 passes the gradient through */
    if (memest_shape_is_contiguous(s))
        return out_alias_view(c, 0);
    return memest_out_new(c, s->ndim, s->size, memest_in_dtype(c, 0)) < 0 ? -1 : 0;
}

/* ---- squeeze, unsqueeze, expand ---- */

enum { SQ_DIM };
static const struct memest_argspec squeeze_args[] = {
    [SQ_DIM] = {"dim", MEMEST_ARG_INTS, .optional = true,
                .doc = "dim(s) to drop when of size 1 (default: every size-1 dim)"},
};

static int infer_squeeze(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    const struct memest_argval *a = memest_arg(c, SQ_DIM);
    bool drop[MEMEST_MAX_DIMS] = {false};
    if (a->none) {
        for (int d = 0; d < s->ndim; d++)
            drop[d] = s->size[d] == 1;
    } else {
        for (int i = 0; i < a->n; i++) {
            int d;
            if (wrap_dim(c, a->v[i], s->ndim, &d) != 0)
                return -1;
            if (s->ndim > 0 && s->size[d] == 1)
                drop[d] = true;
        }
    }
    struct memest_shape g = {.ndim = 0};
    for (int d = 0; d < s->ndim; d++) {
        if (drop[d])
            continue;
        g.size[g.ndim] = s->size[d];
        g.stride[g.ndim] = s->stride[d];
        g.ndim++;
    }
    memest_grad_reshape(c, 0, 0);
    return memest_out_view(c, 0, &g, 0) < 0 ? -1 : 0;
}

enum { USQ_DIM };
static const struct memest_argspec unsqueeze_args[] = {
    [USQ_DIM] = {"dim", MEMEST_ARG_INT, .required = true},
};

static int infer_unsqueeze(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    if (s->ndim + 1 > MEMEST_MAX_DIMS)
        return memest_fail(c, "the result would have more than %d dimensions", MEMEST_MAX_DIMS);
    int d = memest_wrap_dim(memest_arg_int(c, USQ_DIM), s->ndim + 1);
    if (d < 0)
        return memest_fail(c, "dimension out of range (expected to be in range of [%d, %d], "
                              "but got %lld)",
                           -(s->ndim + 1), s->ndim, (long long)memest_arg_int(c, USQ_DIM));
    struct memest_shape g = *s;
    geom_unsqueeze(&g, d);
    memest_grad_reshape(c, 0, 0);
    return memest_out_view(c, 0, &g, 0) < 0 ? -1 : 0;
}

enum { EX_SIZE };
static const struct memest_argspec expand_args[] = {
    [EX_SIZE] = {"size", MEMEST_ARG_SHAPE, .required = true,
                 .doc = "target sizes; -1 keeps a dim, \"batch\" is the batch size"},
};

/* at::inferExpandGeometry. */
static int infer_expand(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    const struct memest_argval *a = memest_arg(c, EX_SIZE);
    int n = a->n;
    if (n < s->ndim)
        return memest_fail(c, "the number of sizes provided (%d) must be greater or equal to "
                              "the number of dimensions in the tensor (%d)",
                           n, s->ndim);
    struct memest_shape g = {.ndim = n};
    for (int i = n - 1; i >= 0; i--) {
        int d = i - (n - s->ndim);
        int64_t size = d >= 0 ? s->size[d] : 1;
        int64_t stride = 1;
        if (d >= 0)
            stride = s->stride[d];
        else if (i + 1 < n && !mul_i64(g.size[i + 1], g.stride[i + 1], &stride))
            stride = 0; /* unreachable for tensors that fit in memory */
        int64_t target = a->v[i] == MEMEST_SHAPE_BATCH ? memest_batch(c) : a->v[i];
        if (target == -1) {
            if (d < 0)
                return memest_fail(c, "the expanded size -1 is not allowed in a leading, "
                                      "new dimension %d",
                                   i);
            target = size;
        }
        if (target < 0)
            return memest_fail(c, "invalid expanded size %lld", (long long)target);
        if (size != target) {
            if (size != 1)
                return memest_fail(c, "the expanded size (%lld) must match the existing size "
                                      "(%lld) at non-singleton dimension %d; target sizes %s",
                                   (long long)target, (long long)size, i, shape_arg_str(a).s);
            size = target;
            stride = 0;
        }
        g.size[i] = size;
        g.stride[i] = stride;
    }
    return memest_out_view(c, 0, &g, 0) < 0 ? -1 : 0;
}

/* ---- select, narrow ---- */

enum { SEL_DIM, SEL_INDEX };
static const struct memest_argspec select_args[] = {
    [SEL_DIM] = {"dim", MEMEST_ARG_INT, .required = true},
    [SEL_INDEX] = {"index", MEMEST_ARG_INT, .required = true},
};

static int infer_select(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    if (s->ndim == 0)
        return memest_fail(c, "select() cannot be applied to a 0-d tensor");
    int d;
    if (wrap_dim(c, memest_arg_int(c, SEL_DIM), s->ndim, &d) != 0)
        return -1;
    int64_t idx = memest_arg_int(c, SEL_INDEX), size = s->size[d];
    if (idx < -size || idx >= size)
        return memest_fail(c, "index %lld is out of range for dimension %d of size %lld",
                           (long long)idx, d, (long long)size);
    if (idx < 0)
        idx += size;
    struct memest_shape g = *s;
    int64_t offset = idx * s->stride[d];
    geom_remove_dim(&g, d);
    return memest_out_view(c, 0, &g, offset) < 0 ? -1 : 0;
}

enum { NW_DIM, NW_START, NW_LENGTH };
static const struct memest_argspec narrow_args[] = {
    [NW_DIM] = {"dim", MEMEST_ARG_INT, .required = true},
    [NW_START] = {"start", MEMEST_ARG_INT, .required = true},
    [NW_LENGTH] = {"length", MEMEST_ARG_INT, .required = true, .lo = 0, .hi = ARG_MAX},
};

static int infer_narrow(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    if (s->ndim == 0)
        return memest_fail(c, "narrow() cannot be applied to a 0-d tensor");
    int d;
    if (wrap_dim(c, memest_arg_int(c, NW_DIM), s->ndim, &d) != 0)
        return -1;
    int64_t size = s->size[d], start = memest_arg_int(c, NW_START),
            len = memest_arg_int(c, NW_LENGTH);
    if (start != size) {
        if (start < -size || start >= size)
            return memest_fail(c, "start %lld is out of range for dimension %d of size %lld",
                               (long long)start, d, (long long)size);
        if (start < 0)
            start += size;
    }
    if (start > size - len)
        return memest_fail(c, "start (%lld) + length (%lld) exceeds dimension size (%lld)",
                           (long long)start, (long long)len, (long long)size);
    struct memest_shape g = *s;
    g.size[d] = len;
    return memest_out_view(c, 0, &g, start * s->stride[d]) < 0 ? -1 : 0;
}

/* ---- split, chunk ---- */

/* Outputs: views of input 0 along `d` with the given lengths. */
static int split_views(struct memest_ictx *c, int d, int n, const int64_t *lens)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        struct memest_shape g = *s;
        g.size[d] = lens[i];
        if (memest_out_view(c, 0, &g, start * s->stride[d]) < 0)
            return -1;
        start += lens[i];
    }
    return 0;
}


/* Tensor.split(split_size, d): pieces of split_size, the last smaller. */
static int split_even(struct memest_ictx *c, int d, int64_t split)
{
    int64_t size = memest_in_shape(c, 0)->size[d];
    if (split == 0 && size != 0)
        return memest_fail(c, "split_size can only be 0 if dimension size is 0, but got "
                              "dimension size of %lld",
                           (long long)size);
    int64_t n = split == 0 ? 1 : div_ceil(size, split);
    if (n < 1)
        n = 1;
    if (n > MAX_SPLITS)
        return memest_fail(c, "the split would make %lld outputs; memest supports at most %d",
                           (long long)n, MAX_SPLITS);
    int64_t lens[MAX_SPLITS];
    for (int64_t i = 0; i < n; i++)
        lens[i] = i + 1 < n ? split : size - split * (n - 1);
    return split_views(c, d, (int)n, lens);
}

enum { SP_SIZES, SP_DIM };
static const struct memest_argspec split_args[] = {
    [SP_SIZES] = {"split_size_or_sections", MEMEST_ARG_INTS, .required = true, .lo = 0,
                  .hi = ARG_MAX,
                  .doc = "an int: pieces of that size; a list: the sizes (a 1-element list is "
                         "read as an int)"},
    [SP_DIM] = {"dim", MEMEST_ARG_INT, .idef = 0},
};

static int infer_split(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    if (s->ndim == 0)
        return memest_fail(c, "split expects at least a 1-dimensional tensor");
    int d;
    if (wrap_dim(c, memest_arg_int(c, SP_DIM), s->ndim, &d) != 0)
        return -1;
    const struct memest_argval *a = memest_arg(c, SP_SIZES);
    if (a->n == 1)
        return split_even(c, d, a->v[0]);
    if (a->n < 1)
        return memest_fail(c, "split_size_or_sections is an empty list");
    int64_t sum = 0;
    for (int i = 0; i < a->n; i++)
        sum += a->v[i]; /* at most 64 values below 2^53 */
    if (sum != s->size[d])
        return memest_fail(c, "split sizes sum to %lld but dimension %d has size %lld",
                           (long long)sum, d, (long long)s->size[d]);
    return split_views(c, d, a->n, a->v);
}

enum { CH_CHUNKS, CH_DIM };
static const struct memest_argspec chunk_args[] = {
    [CH_CHUNKS] = {"chunks", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX},
    [CH_DIM] = {"dim", MEMEST_ARG_INT, .idef = 0},
};

static int infer_chunk(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    if (s->ndim == 0)
        return memest_fail(c, "chunk expects at least a 1-dimensional tensor");
    int d;
    if (wrap_dim(c, memest_arg_int(c, CH_DIM), s->ndim, &d) != 0)
        return -1;
    int64_t chunks = memest_arg_int(c, CH_CHUNKS), size = s->size[d];
    if (size == 0) { /* `chunks` empty pieces */
        if (chunks > MAX_SPLITS)
            return memest_fail(c, "the chunk would make %lld outputs; memest supports at most %d",
                               (long long)chunks, MAX_SPLITS);
        int64_t lens[MAX_SPLITS] = {0};
        return split_views(c, d, (int)chunks, lens);
    }
    return split_even(c, d, div_ceil(size, chunks));
}

/* ---- cat, stack ---- */

enum { CAT_DIM };
static const struct memest_argspec cat_args[] = {
    [CAT_DIM] = {"dim", MEMEST_ARG_INT, .idef = 0},
};

static enum memest_dtype promote_inputs(const struct memest_ictx *c)
{
    enum memest_dtype t = memest_in_dtype(c, 0);
    for (int i = 1; i < memest_in_count(c); i++)
        t = promote_dtypes(t, memest_in_dtype(c, i));
    return t;
}

static int infer_cat(struct memest_ictx *c)
{
    int nin = memest_in_count(c), ref = -1;
    /* legacy: 1-D empty tensors are skipped */
    for (int i = 0; i < nin && ref < 0; i++) {
        const struct memest_shape s_in = *memest_in_shape(c, i), *s = &s_in;
        if (!(s->ndim == 1 && s->size[0] == 0))
            ref = i;
    }
    enum memest_dtype dt = promote_inputs(c);
    if (ref < 0) {
        int64_t zero = 0;
        return memest_out_new(c, 1, &zero, dt) < 0 ? -1 : 0;
    }
    const struct memest_shape r_in = *memest_in_shape(c, ref), *r = &r_in;
    if (r->ndim == 0)
        return memest_fail(c, "zero-dimensional tensor (input %d) cannot be concatenated", ref);
    int d;
    if (wrap_dim(c, memest_arg_int(c, CAT_DIM), r->ndim, &d) != 0)
        return -1;
    int64_t size[MEMEST_MAX_DIMS];
    for (int k = 0; k < r->ndim; k++)
        size[k] = r->size[k];
    size[d] = 0;
    for (int i = 0; i < nin; i++) {
        const struct memest_shape s_in = *memest_in_shape(c, i), *s = &s_in;
        if (s->ndim == 1 && s->size[0] == 0)
            continue;
        if (s->ndim != r->ndim)
            return memest_fail(c, "tensors must have the same number of dimensions: input %d "
                                  "has %d, input %d has %d",
                               ref, r->ndim, i, s->ndim);
        for (int k = 0; k < r->ndim; k++)
            if (k != d && s->size[k] != r->size[k])
                return memest_fail(c, "sizes of tensors must match except in dimension %d: "
                                      "expected size %lld but got size %lld for input %d",
                                   d, (long long)r->size[k], (long long)s->size[k], i);
        size[d] += s->size[d];
    }
    /* CatBackward0 narrows the gradient: each input's is a view of it */
    for (int i = 0; i < nin; i++)
        memest_grad_slice(c, i, 0, d);
    return memest_out_new(c, r->ndim, size, dt) < 0 ? -1 : 0;
}

static int infer_stack(struct memest_ictx *c)
{
    const struct memest_shape r_in = *memest_in_shape(c, 0), *r = &r_in;
    int nin = memest_in_count(c);
    if (r->ndim + 1 > MEMEST_MAX_DIMS)
        return memest_fail(c, "the result would have more than %d dimensions", MEMEST_MAX_DIMS);
    int d = memest_wrap_dim(memest_arg_int(c, CAT_DIM), r->ndim + 1);
    if (d < 0)
        return memest_fail(c, "dimension out of range (expected to be in range of [%d, %d], "
                              "but got %lld)",
                           -(r->ndim + 1), r->ndim, (long long)memest_arg_int(c, CAT_DIM));
    for (int i = 1; i < nin; i++) {
        const struct memest_shape s_in = *memest_in_shape(c, i), *s = &s_in;
        bool same = s->ndim == r->ndim;
        for (int k = 0; same && k < r->ndim; k++)
            same = s->size[k] == r->size[k];
        if (!same)
            return memest_fail(c, "stack expects each tensor to be equal size, but got %s at "
                                  "entry 0 and %s at entry %d",
                               IN_STR(c, 0), IN_STR(c, i), i);
    }
    int64_t size[MEMEST_MAX_DIMS];
    int n = 0;
    for (int k = 0; k <= r->ndim; k++)
        size[n++] = k == d ? nin : r->size[k < d ? k : k - 1];
    return memest_out_new(c, n, size, promote_inputs(c)) < 0 ? -1 : 0;
}

#define SHAPE_OP(nm, argv, fn, text)                                                            \
    {                                                                                           \
        .name = nm, .min_in = 1, .max_in = 1, .args = argv, .nargs = NARGS(argv), .infer = fn, \
        .doc = text,                                                                            \
    }
/* the ops whose output is their input's values, rearranged into other
 * sizes only (ops.h: same_data) */
#define SAME_DATA_OP(nm, argv, fn, text)                                                        \
    {                                                                                           \
        .name = nm, .min_in = 1, .max_in = 1, .args = argv, .nargs = NARGS(argv), .infer = fn, \
        .doc = text, .same_data = true,                                                         \
    }

const struct memest_op_desc memest_ops_shape[] = {
    SAME_DATA_OP("flatten", flatten_args, infer_flatten,
             "nn.Flatten / torch.flatten: merges dims start_dim..end_dim (view when possible)"),
    SHAPE_OP("unflatten", unflatten_args, infer_unflatten, "nn.Unflatten: splits one dim (view)"),
    SAME_DATA_OP("reshape", reshape_args, infer_reshape, "Tensor.reshape (view when possible)"),
    SAME_DATA_OP("view", reshape_args, infer_view, "Tensor.view (error when not viewable)"),
    {.name = "moe_experts_view", .min_in = 1, .max_in = 1, .args = experts_view_args,
     .nargs = NARGS(experts_view_args), .infer = infer_experts_view, .same_data = true,
     .moe_expert_tokens = true,
     .doc = "Tensor.view(num_experts, -1, hidden) of fused experts that every token goes through "
            "(Llama4TextExperts); marks the block around it as the experts (active parameters)"},
    SHAPE_OP("permute", permute_args, infer_permute, "Tensor.permute (view)"),
    SHAPE_OP("transpose", transpose_args, infer_transpose, "Tensor.transpose (view)"),
    {.name = "contiguous", .min_in = 1, .max_in = 1, .args = NULL, .nargs = 0,
     .infer = infer_contiguous, .doc = "Tensor.contiguous (copies a non-contiguous input)",
     .same_data = true},
    SAME_DATA_OP("squeeze", squeeze_args, infer_squeeze, "Tensor.squeeze (view)"),
    SAME_DATA_OP("unsqueeze", unsqueeze_args, infer_unsqueeze, "Tensor.unsqueeze (view)"),
    SHAPE_OP("expand", expand_args, infer_expand, "Tensor.expand (view, stride 0)"),
    SHAPE_OP("select", select_args, infer_select, "Tensor.select / x[:, i] (view)"),
    SHAPE_OP("narrow", narrow_args, infer_narrow, "Tensor.narrow / a slice (view)"),
    SHAPE_OP("split", split_args, infer_split, "torch.split: outputs 0, 1, ... (views)"),
    SHAPE_OP("chunk", chunk_args, infer_chunk, "torch.chunk: outputs 0, 1, ... (views)"),
    {.name = "cat", .min_in = 1, .max_in = -1, .args = cat_args, .nargs = NARGS(cat_args),
     .infer = infer_cat, .doc = "torch.cat along dim (a new tensor)"},
    {.name = "stack", .min_in = 1, .max_in = -1, .args = cat_args, .nargs = NARGS(cat_args),
     .infer = infer_stack, .doc = "torch.stack along a new dim (a new tensor)"},
};
const int memest_ops_shape_count = NOPS(memest_ops_shape);
