/* ops_input.c - the model inputs (the file's "inputs" list), as nodes. The
 * shape in the file is per sample; the batch is inserted at batch_dim. */
#include "memest/ops.h"

#include <string.h>

enum { IN_SHAPE, IN_DTYPE, IN_BATCH_DIM, IN_REQUIRES_GRAD, IN_NAME };

static const struct memest_argspec input_args[] = {
    [IN_SHAPE] = {"shape", MEMEST_ARG_INTS, .required = true, .lo = 1, .hi = MEMEST_DIM_MAX,
                  .doc = "per-sample shape, without the batch dimension"},
    [IN_DTYPE] = {"dtype", MEMEST_ARG_STR, .sdef = "float32",
                  .doc = "element type; float inputs follow --dtype"},
    [IN_BATCH_DIM] = {"batch_dim", MEMEST_ARG_INT, .lo = -1, .hi = MEMEST_MAX_DIMS - 1,
                      .doc = "where the batch dimension goes (1 for sequence-first inputs; -1: "
                             "none, a tensor every sample shares)"},
    [IN_REQUIRES_GRAD] = {"requires_grad", MEMEST_ARG_BOOL, .idef = 0},
    [IN_NAME] = {"name", MEMEST_ARG_STR, .doc = "input name"},
};

static int infer_input(struct memest_ictx *c)
{
    const struct memest_argval *shape = memest_arg(c, IN_SHAPE);
    int64_t bd = memest_arg_int(c, IN_BATCH_DIM);
    if (shape->n + (bd >= 0) > MEMEST_MAX_DIMS)
        return memest_fail(c, "an input has at most %d dimensions besides the batch",
                           MEMEST_MAX_DIMS - 1);
    if (bd > shape->n)
        return memest_fail(c, "batch_dim %lld is past the %d per-sample dimensions",
                           (long long)bd, shape->n);
    enum memest_dtype dt;
    if (memest_dtype_parse(memest_arg(c, IN_DTYPE)->s, &dt) != 0)
        return memest_fail(c, "unknown dtype \"%s\" (one of %s)", memest_arg(c, IN_DTYPE)->s,
                           memest_dtype_names());
    if (memest_dtype_is_float(dt))
        dt = memest_float_dtype(c);
    int64_t size[MEMEST_MAX_DIMS];
    int n = 0;
    for (int i = 0; i <= shape->n; i++) {
        if (i == bd)
            size[n++] = memest_batch(c);
        if (i < shape->n)
            size[n++] = shape->v[i];
    }
    if (memest_out_new(c, n, size, dt) < 0)
        return -1;
    memest_out_set_requires_grad(c, 0, memest_arg_bool(c, IN_REQUIRES_GRAD));
    return 0;
}

const struct memest_op_desc memest_op_input = {
    .name = "input",
    .min_in = 0,
    .max_in = 0,
    .args = input_args,
    .nargs = sizeof input_args / sizeof *input_args,
    .infer = infer_input,
    .doc = "a model input (the \"inputs\" list)",
    .model_input = true,
};
