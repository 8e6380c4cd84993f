/* ops_write.c - copies and writes: clone, fill, copy (Tensor.copy_) and
 * copyslices, the base of a view after an in-place write through the view.
 *
 * `x[1:] += y`, `x[:, 0] = y`, `x[2:4].zero_()`: PyTorch writes into a view
 * of x's storage, and autograd rebases x's history on a CopySlices node
 * (torch/csrc/autograd/functions/tensor.cpp) that wraps the write's own
 * backward. In a memest file the write is the op on the view (add with
 * inplace, fill, copy), and a copyslices node with inputs (x, the written
 * view) stands for x afterwards: its output is x's storage again, and what
 * reads x later reads the copyslices node. memest-export writes these.
 *
 * Saved for backward: nothing (CloneBackward0, FillBackward*, CopyBackwards
 * and CopySlices keep sizes, strides and dtypes only:
 * tests/reference/ops_b_saved_*.txt, the write cases). No MACs.
 * Backward: clone passes its gradient through; fill sends none to its input
 * (every element is overwritten); copy sends none to the destination and
 * the gradient itself to a source of the same sizes and dtype (else a new
 * one, summed to its sizes / converted); CopySlices allocates a gradient of
 * the base's sizes (result = grad copied) and hands the wrapped backward a
 * contiguous clone of the view's part (grad_slice.clone()): a new gradient
 * for each input, the default. */
#include "ops_common.h"

/* ---- clone ---- */

static int infer_clone(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    memest_grad_same(c, 0, 0); /* CloneBackward0: the gradient itself */
    /* memory_format=torch.preserve_format: a dense input keeps its strides
     * (empty_like), as TensorIterator-laid outputs do */
    return memest_out_like(c, &s, 0, memest_in_dtype(c, 0)) < 0 ? -1 : 0;
}

/* ---- fill ---- */

enum { FI_VALUE, FI_INPLACE };
static const struct memest_argspec fill_args[] = {
    [FI_VALUE] = {"value", MEMEST_ARG_FLOAT, .fdef = 0,
                  .doc = "the fill value (no effect on memory; Tensor.zero_ is 0)"},
    [FI_INPLACE] = {"inplace", MEMEST_ARG_BOOL, .idef = 0, .doc = "Tensor.fill_ / zero_"},
};

static int infer_fill(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    memest_grad_none(c, 0); /* every element overwritten: no gradient to the input */
    if (memest_arg_bool(c, FI_INPLACE))
        return memest_out_inplace(c, 0) < 0 ? -1 : 0;
    if (memest_out_like(c, &s, 0, memest_in_dtype(c, 0)) < 0)
        return -1;
    memest_out_set_requires_grad(c, 0, false); /* torch.fill(x, v): a constant */
    return 0;
}

/* ---- copy ---- */

static int infer_copy(struct memest_ictx *c)
{
    const struct memest_shape d = *memest_in_shape(c, 0), s = *memest_in_shape(c, 1);
    struct memest_shape b;
    if (!memest_shape_broadcast(&d, &s, &b) || b.ndim != d.ndim ||
        !memest_shape_equal(&b, &d))
        return memest_fail(c, "the source %s cannot be broadcast to the destination %s",
                           IN_STR(c, 1), IN_STR(c, 0));
    memest_grad_none(c, 0); /* the destination's elements are all overwritten */
    bool same = s.ndim == d.ndim && memest_in_dtype(c, 0) == memest_in_dtype(c, 1);
    for (int i = 0; same && i < d.ndim; i++)
        same = s.size[i] == d.size[i];
    if (same)
        memest_grad_same(c, 1, 0); /* CopyBackwards: grad itself */
    return memest_out_inplace(c, 0) < 0 ? -1 : 0;
}

/* ---- copyslices ---- */

static int infer_copyslices(struct memest_ictx *c)
{
    if (!memest_in_same_storage(c, 0, 1))
        return memest_fail(c, "input 2 (%s) is not a view of input 1's storage (%s): copyslices "
                              "takes a tensor and a view of it written in place",
                           IN_STR(c, 1), IN_STR(c, 0));
    return memest_out_inplace(c, 0) < 0 ? -1 : 0;
}

const struct memest_op_desc memest_ops_write[] = {
    {.name = "clone", .min_in = 1, .max_in = 1, .infer = infer_clone,
     .doc = "Tensor.clone (a new tensor laid out like the input)"},
    OP1("fill", fill_args, infer_fill, "torch.fill / Tensor.fill_, zero_ (nothing saved)"),
    {.name = "copy", .min_in = 2, .max_in = 2, .infer = infer_copy,
     .doc = "Tensor.copy_: input 2 (broadcast) written into input 1 in place"},
    {.name = "copyslices", .min_in = 2, .max_in = 2, .infer = infer_copyslices,
     .doc = "a tensor after an in-place write through its view (input 2): x[i] = y, "
            "x[i] += y (autograd's CopySlices; the output is input 1's storage)"},
};
const int memest_ops_write_count = NOPS(memest_ops_write);
