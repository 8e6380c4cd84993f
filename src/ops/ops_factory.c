/* ops_factory.c - the tensor factories: zeros, ones, full (sizes given,
 * no input) and zeros_like, ones_like, full_like (the sizes of their input,
 * laid out like it: torch.*_like keeps the input's memory format). Their
 * results require no grad, so nothing is saved and no gradient flows to a
 * *_like op's input (tests/reference/ops_b_saved_*.txt). No MACs. (arange
 * is in ops_elementwise.c.) */
#include "ops_common.h"

/* The result's dtype: `dtype` when given (a floating type is the run's
 * float dtype, as for model inputs), else `dflt`. */
static int factory_dtype(struct memest_ictx *c, int idx, enum memest_dtype dflt,
                         enum memest_dtype *out)
{
    const struct memest_argval *a = memest_arg(c, idx);
    *out = dflt;
    return a->none ? 0 : arg_dtype(c, a->s, out);
}

/* ---- zeros, ones, full ---- */

enum { FA_SIZE, FA_DTYPE, FA_FILL };
static const struct memest_argspec zeros_args[] = {
    [FA_SIZE] = {"size", MEMEST_ARG_SHAPE, .required = true,
                 .doc = "sizes (\"batch\" is the batch size)"},
    [FA_DTYPE] = {"dtype", MEMEST_ARG_STR, .optional = true, .doc = "default: float"},
};
static const struct memest_argspec full_args[] = {
    [FA_SIZE] = {"size", MEMEST_ARG_SHAPE, .required = true,
                 .doc = "sizes (\"batch\" is the batch size)"},
    [FA_DTYPE] = {"dtype", MEMEST_ARG_STR, .optional = true,
                  .doc = "default: int64 for an integer fill_value, else float (torch.full's "
                         "inference)"},
    [FA_FILL] = {"fill_value", MEMEST_ARG_FLOAT, .required = true},
};

static int infer_sized(struct memest_ictx *c, enum memest_dtype dflt)
{
    const struct memest_argval *a = memest_arg(c, FA_SIZE);
    int64_t size[MEMEST_MAX_DIMS];
    for (int i = 0; i < a->n; i++) {
        size[i] = a->v[i] == MEMEST_SHAPE_BATCH ? memest_batch(c) : a->v[i];
        if (size[i] < 0)
            return memest_fail(c, "negative dimension %lld", (long long)size[i]);
    }
    enum memest_dtype dt;
    if (factory_dtype(c, FA_DTYPE, dflt, &dt) != 0 || memest_out_new(c, a->n, size, dt) < 0)
        return -1;
    memest_out_set_requires_grad(c, 0, false);
    return 0;
}

static int infer_zeros(struct memest_ictx *c) { return infer_sized(c, memest_float_dtype(c)); }

static int infer_full(struct memest_ictx *c)
{
    return infer_sized(c, integral(memest_arg_float(c, FA_FILL)) ? MEMEST_I64
                                                                 : memest_float_dtype(c));
}

/* ---- zeros_like, ones_like, full_like ---- */

enum { FL_DTYPE, FL_FILL };
static const struct memest_argspec like_args[] = {
    [FL_DTYPE] = {"dtype", MEMEST_ARG_STR, .optional = true, .doc = "default: the input's"},
};
static const struct memest_argspec full_like_args[] = {
    [FL_DTYPE] = {"dtype", MEMEST_ARG_STR, .optional = true, .doc = "default: the input's"},
    [FL_FILL] = {"fill_value", MEMEST_ARG_FLOAT, .required = true},
};

static int infer_like(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    enum memest_dtype dt;
    if (factory_dtype(c, FL_DTYPE, memest_in_dtype(c, 0), &dt) != 0)
        return -1;
    memest_grad_none(c, 0);
    if (memest_out_like(c, &s, 0, dt) < 0)
        return -1;
    memest_out_set_requires_grad(c, 0, false);
    return 0;
}

#define FACTORY(nm, lo, argv, fn, text)                                                         \
    {                                                                                           \
        .name = nm, .min_in = lo, .max_in = lo, .args = argv, .nargs = NARGS(argv),            \
        .infer = fn, .doc = text,                                                               \
    }

const struct memest_op_desc memest_ops_factory[] = {
    FACTORY("zeros", 0, zeros_args, infer_zeros, "torch.zeros (no gradient)"),
    FACTORY("ones", 0, zeros_args, infer_zeros, "torch.ones (no gradient)"),
    FACTORY("full", 0, full_args, infer_full, "torch.full (no gradient)"),
    FACTORY("zeros_like", 1, like_args, infer_like, "torch.zeros_like (no gradient)"),
    FACTORY("ones_like", 1, like_args, infer_like, "torch.ones_like (no gradient)"),
    FACTORY("full_like", 1, full_like_args, infer_like, "torch.full_like (no gradient)"),
};
const int memest_ops_factory_count = NOPS(memest_ops_factory);
