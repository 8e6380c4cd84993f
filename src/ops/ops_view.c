/* ops_view.c - the views that cut a tensor along one dim: slice (x[a:b:c]),
 * unbind, tensor_split; and detach (the whole input, without gradient).
 *
 * Each output is a view of the input (aten/src/ATen/native/TensorShape.cpp:
 * slice multiplies the dim's stride by the step and moves the offset by
 * start * stride; unbind is select(dim, i) for every i; tensor_split slices
 * between its split points). Nothing is saved for backward (SliceBackward0,
 * UnbindBackward0 and the SliceBackward0 of each tensor_split piece keep
 * sizes only: tests/reference/ops_b_saved_*.txt), no MACs; the backward
 * builds a new gradient of the input's size (zeros plus the slice, or the
 * stack of the pieces' gradients), the default. */
#include "ops_common.h"

/* aten::slice's bounds: negative start/end count from the end, then both
 * are clamped into [0, size] with end >= start. */
static void slice_bounds(int64_t size, const struct memest_argval *s, const struct memest_argval *e,
                         int64_t *start, int64_t *end)
{
    int64_t a = s->none ? 0 : s->v[0], b = e->none ? size : e->v[0];
    if (a < 0)
        a += size;
    if (b < 0)
        b += size;
    a = a < 0 ? 0 : (a > size ? size : a);
    b = b < a ? a : (b > size ? size : b);
    *start = a;
    *end = b;
}

/* Output: a view of input 0 taking [start, end) of dim d with `step`. */
static int out_slice(struct memest_ictx *c, int d, int64_t start, int64_t end, int64_t step)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    struct memest_shape g = s;
    g.size[d] = (end - start + step - 1) / step;
    g.stride[d] = s.stride[d] * step; /* below the input's extent: no overflow */
    return memest_out_view(c, 0, &g, start * s.stride[d]) < 0 ? -1 : 0;
}

/* ---- slice ---- */

enum { SL_DIM, SL_START, SL_END, SL_STEP };
static const struct memest_argspec slice_args[] = {
    [SL_DIM] = {"dim", MEMEST_ARG_INT, .idef = 0},
    [SL_START] = {"start", MEMEST_ARG_INT, .optional = true, .lo = -ARG_MAX, .hi = ARG_MAX,
                  .doc = "first index (default: 0; negative counts from the end)"},
    [SL_END] = {"end", MEMEST_ARG_INT, .optional = true, .lo = -ARG_MAX, .hi = ARG_MAX,
                .doc = "index after the last (default: the dim's size)"},
    [SL_STEP] = {"step", MEMEST_ARG_INT, .idef = 1, .lo = 1, .hi = ARG_MAX},
};

static int infer_slice(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    if (s.ndim == 0)
        return memest_fail(c, "slice() cannot be applied to a 0-dim tensor");
    int d;
    if (wrap_dim(c, memest_arg_int(c, SL_DIM), s.ndim, &d) != 0)
        return -1;
    int64_t start, end;
    slice_bounds(s.size[d], memest_arg(c, SL_START), memest_arg(c, SL_END), &start, &end);
    return out_slice(c, d, start, end, memest_arg_int(c, SL_STEP));
}

/* ---- unbind ---- */

enum { UB_DIM };
static const struct memest_argspec unbind_args[] = {
    [UB_DIM] = {"dim", MEMEST_ARG_INT, .idef = 0},
};

static int infer_unbind(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    if (s.ndim == 0)
        return memest_fail(c, "unbind() cannot be applied to a 0-dim tensor");
    int d;
    if (wrap_dim(c, memest_arg_int(c, UB_DIM), s.ndim, &d) != 0)
        return -1;
    if (s.size[d] < 1 || s.size[d] > MAX_SPLITS)
        return memest_fail(c, "unbind along dim %d of size %lld: memest needs 1 to %d outputs", d,
                           (long long)s.size[d], MAX_SPLITS);
    struct memest_shape g = s;
    geom_remove_dim(&g, d);
    for (int64_t i = 0; i < s.size[d]; i++)
        if (memest_out_view(c, 0, &g, i * s.stride[d]) < 0)
            return -1;
    return 0;
}

/* ---- tensor_split ---- */

enum { TS_SPLIT, TS_DIM };
static const struct memest_argspec tensor_split_args[] = {
    [TS_SPLIT] = {"indices_or_sections", MEMEST_ARG_INTS, .required = true, .lo = -ARG_MAX,
                  .hi = ARG_MAX,
                  .doc = "an int n: n near-equal pieces; a list: the indices to split at"},
    [TS_DIM] = {"dim", MEMEST_ARG_INT, .idef = 0},
};

static int infer_tensor_split(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    if (s.ndim == 0)
        return memest_fail(c, "tensor_split expected at least a 1-dimensional tensor, but got a "
                              "tensor with 0 dims");
    int d;
    if (wrap_dim(c, memest_arg_int(c, TS_DIM), s.ndim, &d) != 0)
        return -1;
    const struct memest_argval *a = memest_arg(c, TS_SPLIT);
    int64_t size = s.size[d];
    if (!a->list) { /* sections: the first size % n pieces one longer */
        int64_t n = a->v[0];
        if (n <= 0)
            return memest_fail(c, "number of sections must be larger than 0, got %lld",
                               (long long)n);
        if (n > MAX_SPLITS)
            return memest_fail(c, "%lld sections: memest supports at most %d outputs",
                               (long long)n, MAX_SPLITS);
        int64_t start = 0, q = size / n, r = size % n;
        for (int64_t i = 0; i < n; i++) {
            int64_t len = q + (i < r ? 1 : 0);
            if (out_slice(c, d, start, start + len, 1) != 0)
                return -1;
            start += len;
        }
        return 0;
    }
    if (a->n + 1 > MAX_SPLITS)
        return memest_fail(c, "%d indices: memest supports at most %d outputs", a->n, MAX_SPLITS);
    struct memest_argval lo = {.n = 1}, hi = {.n = 1};
    int64_t lov = 0, hiv = 0;
    lo.v = &lov;
    hi.v = &hiv;
    for (int i = 0; i <= a->n; i++) { /* piece i: slice(prev index, this index) */
        lo.none = i == 0;
        hi.none = i == a->n;
        lov = i > 0 ? a->v[i - 1] : 0;
        hiv = i < a->n ? a->v[i] : 0;
        int64_t start, end;
        slice_bounds(size, &lo, &hi, &start, &end);
        if (out_slice(c, d, start, end, 1) != 0)
            return -1;
    }
    return 0;
}

/* ---- detach ---- */

/* x.detach(): a view of the whole input that requires no grad; no gradient
 * flows back through it (detach saves nothing and has no backward). */
static int infer_detach(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    memest_grad_none(c, 0);
    if (memest_out_view(c, 0, &s, 0) < 0)
        return -1;
    memest_out_set_requires_grad(c, 0, false);
    return 0;
}

const struct memest_op_desc memest_ops_view[] = {
    {.name = "detach", .min_in = 1, .max_in = 1, .infer = infer_detach,
     .doc = "Tensor.detach: the input's storage, without gradient (a view)"},
    OP1("slice", slice_args, infer_slice, "x[start:end:step] along dim (view)"),
    OP1("unbind", unbind_args, infer_unbind, "torch.unbind: outputs 0 .. n-1 (views)"),
    OP1("tensor_split", tensor_split_args, infer_tensor_split,
            "torch.tensor_split: outputs 0, 1, ... (views)"),
};
const int memest_ops_view_count = NOPS(memest_ops_view);
