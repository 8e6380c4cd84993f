/* ops_index.c - reading a tensor at positions another tensor gives:
 * gather, index_select, index (x[..., idx0, idx1, ...] advanced indexing by
 * integer tensors) and where (the elements of one tensor or another by a
 * bool condition).
 *
 * Saved for backward (tests/reference/ops_b_saved_*.txt, the same under
 * PyTorch 1.13 and 2.6), when the data input requires grad:
 *   gather: GatherBackward0 saves self and index (its backward scatters into
 *     a new zeros of self's size);
 *   index_select: IndexSelectBackward0 saves index only;
 *   index: IndexBackward0 saves the index tensors (the list `indices`);
 *   where: WhereBackward0 saves the bool condition (when either value input
 *     requires grad);
 *   masked_scatter: MaskedScatterBackward0 saves the bool mask (when self or
 *     source requires grad: self's gradient is grad.masked_fill(mask, 0),
 *     source's masked_scatter_backward(grad, mask, source sizes)).
 * The index tensors, the condition and the mask get no gradient; the outputs are new
 * contiguous tensors (where's laid out like its inputs, as TensorIterator
 * does). No MACs. */
#include "ops_common.h"

static bool is_index_dtype(enum memest_dtype t)
{
    return t == MEMEST_I64 || t == MEMEST_I32;
}

/* The data input's gradient only: index inputs from `first` on get none. */
static void no_grad_from(struct memest_ictx *c, int first)
{
    for (int i = first; i < memest_in_count(c); i++)
        memest_grad_none(c, i);
}

/* ---- gather ---- */

enum { GA_DIM };
static const struct memest_argspec dim_args[] = {
    [GA_DIM] = {"dim", MEMEST_ARG_INT, .required = true},
};

static int infer_gather(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0), ix = *memest_in_shape(c, 1);
    int d;
    if (wrap_dim(c, memest_arg_int(c, GA_DIM), s.ndim, &d) != 0)
        return -1;
    if (memest_in_dtype(c, 1) != MEMEST_I64)
        return memest_fail(c, "Expected dtype int64 for index, got %s",
                           memest_dtype_name(memest_in_dtype(c, 1)));
    int sd = s.ndim > 0 ? s.ndim : 1, id = ix.ndim > 0 ? ix.ndim : 1;
    if (sd != id)
        return memest_fail(c, "Index tensor must have the same number of dimensions as input "
                              "tensor (%s and %s)",
                           IN_STR(c, 1), IN_STR(c, 0));
    for (int k = 0; k < s.ndim && ix.ndim > 0; k++)
        if (k != d && ix.size[k] > s.size[k])
            return memest_fail(c, "Size does not match at dimension %d expected index %s to be "
                                  "smaller than self %s apart from dimension %d",
                               k, IN_STR(c, 1), IN_STR(c, 0), d);
    no_grad_from(c, 1);
    if (memest_out_new(c, ix.ndim, ix.size, memest_in_dtype(c, 0)) < 0)
        return -1;
    if (!memest_in_requires_grad(c, 0))
        return 0;
    return memest_save_in(c, 0) != 0 ? -1 : memest_save_in(c, 1);
}

/* ---- index_select ---- */

static int infer_index_select(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0), ix = *memest_in_shape(c, 1);
    int d;
    if (wrap_dim(c, memest_arg_int(c, GA_DIM), s.ndim, &d) != 0)
        return -1;
    if (!is_index_dtype(memest_in_dtype(c, 1)))
        return memest_fail(c, "Expected dtype int32 or int64 for index, got %s",
                           memest_dtype_name(memest_in_dtype(c, 1)));
    if (ix.ndim > 1)
        return memest_fail(c, "Index is supposed to be a vector, got %s",
                           IN_STR(c, 1));
    int64_t size[MEMEST_MAX_DIMS];
    for (int k = 0; k < s.ndim; k++)
        size[k] = s.size[k];
    if (s.ndim > 0)
        size[d] = ix.ndim == 1 ? ix.size[0] : 1;
    no_grad_from(c, 1);
    if (memest_out_new(c, s.ndim, size, memest_in_dtype(c, 0)) < 0)
        return -1;
    return memest_in_requires_grad(c, 0) ? memest_save_in(c, 1) : 0;
}

/* ---- index ---- */

enum { IX_DIM };
static const struct memest_argspec index_args[] = {
    [IX_DIM] = {"dim", MEMEST_ARG_INT, .idef = 0,
                .doc = "the dim the first index tensor indexes; the next ones index the dims "
                       "after it"},
};

/* x[(slice(None),) * dim + (idx0, idx1, ...)]: the index tensors broadcast
 * together to B and replace dims dim .. dim + k - 1, in place (adjacent
 * advanced indices keep their position). */
static int infer_index(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    int k = memest_in_count(c) - 1, d;
    if (wrap_dim(c, memest_arg_int(c, IX_DIM), s.ndim, &d) != 0)
        return -1;
    if (d + k > s.ndim)
        return memest_fail(c, "too many indices for tensor of dimension %d (%d index tensors "
                              "from dim %d)",
                           s.ndim, k, d);
    struct memest_shape b = {.ndim = 0};
    for (int i = 1; i <= k; i++) {
        enum memest_dtype t = memest_in_dtype(c, i);
        if (t == MEMEST_BOOL || t == MEMEST_U8)
            return memest_fail(c, "index %d is a mask (%s): its result's size depends on the "
                                  "data; index with the int64 positions instead",
                               i, memest_dtype_name(t));
        if (!is_index_dtype(t))
            return memest_fail(c, "tensors used as indices must be long, int, byte or bool "
                                  "tensors, got %s for index %d",
                               memest_dtype_name(t), i);
        struct memest_shape nb;
        if (!memest_shape_broadcast(&b, memest_in_shape(c, i), &nb))
            return memest_fail(c, "shape mismatch: indexing tensors could not be broadcast "
                                  "together with shapes %s and %s",
                               shp_of(&b).s, IN_STR(c, i));
        b = nb;
    }
    int n = s.ndim - k + b.ndim;
    if (n > MEMEST_MAX_DIMS)
        return memest_fail(c, "the result would have more than %d dimensions", MEMEST_MAX_DIMS);
    int64_t size[MEMEST_MAX_DIMS];
    int m = 0;
    for (int q = 0; q < d; q++)
        size[m++] = s.size[q];
    for (int q = 0; q < b.ndim; q++)
        size[m++] = b.size[q];
    for (int q = d + k; q < s.ndim; q++)
        size[m++] = s.size[q];
    no_grad_from(c, 1);
    if (memest_out_new(c, n, size, memest_in_dtype(c, 0)) < 0)
        return -1;
    if (!memest_in_requires_grad(c, 0))
        return 0;
    for (int i = 1; i <= k; i++)
        if (memest_save_in(c, i) != 0)
            return -1;
    return 0;
}

/* ---- where ---- */

enum { WH_INPUT, WH_OTHER };
static const struct memest_argspec where_args[] = {
    [WH_INPUT] = {"input", MEMEST_ARG_FLOAT, .optional = true,
                  .doc = "a number instead of the second tensor input"},
    [WH_OTHER] = {"other", MEMEST_ARG_FLOAT, .optional = true,
                  .doc = "a number instead of the last tensor input"},
};

/* torch.where(condition, input, other): the listed inputs are the tensors,
 * condition first. A number takes no part in the dtype unless every value
 * is a number (then the default float dtype: memest's float dtype). */
static int infer_where(struct memest_ictx *c)
{
    bool in_num = !memest_arg(c, WH_INPUT)->none, oth_num = !memest_arg(c, WH_OTHER)->none;
    int want = 1 + !in_num + !oth_num;
    if (memest_in_count(c) != want)
        return memest_fail(c, "where takes %d tensor inputs with %s, got %d", want,
                           in_num && oth_num   ? "numbers for input and other"
                           : in_num || oth_num ? "a number for one of input and other"
                                               : "no numbers",
                           memest_in_count(c));
    if (memest_in_dtype(c, 0) != MEMEST_BOOL)
        return memest_fail(c, "where expected condition to be a boolean tensor, but got a tensor "
                              "with dtype %s",
                           memest_dtype_name(memest_in_dtype(c, 0)));
    struct memest_shape out = *memest_in_shape(c, 0);
    enum memest_dtype dt = memest_float_dtype(c);
    for (int i = 1; i < want; i++) {
        struct memest_shape nb;
        if (!memest_shape_broadcast(&out, memest_in_shape(c, i), &nb))
            return memest_fail(c, "shapes %s and %s are not broadcastable", shp_of(&out).s,
                               IN_STR(c, i));
        out = nb;
        dt = i == 1 ? memest_in_dtype(c, 1) : promote_dtypes(dt, memest_in_dtype(c, i));
    }
    memest_grad_none(c, 0);
    int like = 0;
    for (int i = 1; i < want; i++)
        if (memest_shape_equal(memest_in_shape(c, i), &out))
            like = i;
    if (memest_out_like(c, &out, like, dt) < 0)
        return -1;
    bool rg = false;
    for (int i = 1; i < want; i++)
        rg = rg || memest_in_requires_grad(c, i);
    return rg ? memest_save_in(c, 0) : 0;
}

/* ---- masked_scatter ---- */

/* self.masked_scatter(mask, source): inputs self, mask (bool, broadcast to
 * self), source (self's dtype, any sizes: its first mask.sum() elements are
 * read, a count the data gives). A new tensor of self's sizes and dtype
 * (Gemma3Model's inputs_embeds.masked_scatter(special_image_mask,
 * image_features): the image features at the image tokens' positions). */
static int infer_masked_scatter(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    if (memest_in_dtype(c, 1) != MEMEST_BOOL)
        return memest_fail(c, "masked_scatter_ only supports boolean masks, but got mask with "
                              "dtype %s",
                           memest_dtype_name(memest_in_dtype(c, 1)));
    if (memest_in_dtype(c, 2) != memest_in_dtype(c, 0))
        return memest_fail(c, "masked_scatter_: expected self and source to have same dtypes "
                              "but got %s and %s",
                           memest_dtype_name(memest_in_dtype(c, 0)),
                           memest_dtype_name(memest_in_dtype(c, 2)));
    struct memest_shape b;
    if (!memest_shape_broadcast(&s, memest_in_shape(c, 1), &b) || !memest_shape_equal(&b, &s))
        return memest_fail(c, "the mask %s cannot be broadcast to self %s", IN_STR(c, 1),
                           IN_STR(c, 0));
    memest_grad_none(c, 1);
    if (memest_out_new(c, s.ndim, s.size, memest_in_dtype(c, 0)) < 0)
        return -1;
    bool rg = memest_in_requires_grad(c, 0) || memest_in_requires_grad(c, 2);
    return rg ? memest_save_in(c, 1) : 0;
}

const struct memest_op_desc memest_ops_index[] = {
    {.name = "gather", .min_in = 2, .max_in = 2, .args = dim_args, .nargs = NARGS(dim_args),
     .infer = infer_gather, .doc = "torch.gather(input, dim, index): inputs input, index"},
    {.name = "index_select", .min_in = 2, .max_in = 2, .args = dim_args,
     .nargs = NARGS(dim_args), .infer = infer_index_select,
     .doc = "torch.index_select(input, dim, index): inputs input, 1-D index"},
    {.name = "index", .min_in = 2, .max_in = 1 + MEMEST_MAX_DIMS, .args = index_args,
     .nargs = NARGS(index_args), .infer = infer_index,
     .doc = "x[..., idx0, idx1, ...] by integer tensors: inputs x, idx0, idx1, ..."},
    {.name = "where", .min_in = 1, .max_in = 3, .args = where_args, .nargs = NARGS(where_args),
     .infer = infer_where,
     .doc = "torch.where(condition, input, other): the tensor inputs, condition first"},
    {.name = "masked_scatter", .min_in = 3, .max_in = 3, .infer = infer_masked_scatter,
     .doc = "Tensor.masked_scatter(mask, source): inputs self, bool mask, source (a new "
            "tensor like self; saves the mask)"},
};
const int memest_ops_index_count = NOPS(memest_ops_index);
