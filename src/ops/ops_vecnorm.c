/* ops_vecnorm.c - vector norms: Tensor.norm / torch.linalg.vector_norm over
 * dims, and F.normalize.
 *
 * Saved for backward (the same under PyTorch 1.13 and 2.6,
 * tests/reference/ops_b_saved_*.txt):
 *   norm, linalg_vector_norm: the input and the result (NormBackward1 /
 *     LinalgVectorNormBackward0 keep self and result, for any p);
 *   normalize (torch/nn/functional.py: denom = input.norm(p, dim,
 *     keepdim=True).clamp_min(eps).expand_as(input); input / denom): the
 *     norm's input and result n, clamp_min's self (n again), and div's self
 *     (the input again) and other (the expanded clamp_min result c): the
 *     input plus two new tensors of the reduced size, n and c.
 * Autocast runs norm in float32 (autocast_mode.cpp's fp32 list has norm
 * and linalg_vector_norm). No MACs. */
#include "ops_common.h"

enum { NO_P, NO_DIM, NO_KEEPDIM };

#define NORM_ARGS(pname)                                                                        \
    {                                                                                           \
        [NO_P] = {pname, MEMEST_ARG_FLOAT, .fdef = 2.0},                                       \
        [NO_DIM] = {"dim", MEMEST_ARG_INTS, .optional = true,                                  \
                    .doc = "dim(s) to reduce (default: all, to a 0-d tensor)"},                \
        [NO_KEEPDIM] = {"keepdim", MEMEST_ARG_BOOL, .idef = 0},                                \
    }
static const struct memest_argspec norm_args[] = NORM_ARGS("p");
static const struct memest_argspec vector_norm_args[] = NORM_ARGS("ord");

static int infer_norm(struct memest_ictx *c)
{
    if (need_float(c, 0) != 0)
        return -1;
    const struct memest_shape s = *memest_in_shape(c, 0);
    int64_t size[MEMEST_MAX_DIMS];
    int n = 0;
    if (reduced_sizes(c, &s, memest_arg(c, NO_DIM), memest_arg_bool(c, NO_KEEPDIM), size, &n) !=
        0)
        return -1;
    int k = memest_out_new(c, n, size, memest_in_dtype(c, 0));
    if (k < 0 || memest_save_in(c, 0) != 0)
        return -1;
    return memest_save_out(c, k);
}

enum { NZ_P, NZ_DIM, NZ_EPS };
static const struct memest_argspec normalize_args[] = {
    [NZ_P] = {"p", MEMEST_ARG_FLOAT, .fdef = 2.0},
    [NZ_DIM] = {"dim", MEMEST_ARG_INT, .idef = 1},
    [NZ_EPS] = {"eps", MEMEST_ARG_FLOAT, .fdef = 1e-12},
};

static int infer_normalize(struct memest_ictx *c)
{
    if (need_float(c, 0) != 0)
        return -1;
    const struct memest_shape s = *memest_in_shape(c, 0);
    int d;
    if (wrap_dim(c, memest_arg_int(c, NZ_DIM), s.ndim, &d) != 0)
        return -1;
    int64_t red[MEMEST_MAX_DIMS];
    for (int k = 0; k < s.ndim; k++)
        red[k] = k == d ? 1 : s.size[k];
    enum memest_dtype dt = memest_in_dtype(c, 0);
    if (memest_out_like(c, &s, 0, dt) < 0 || memest_save_in(c, 0) != 0)
        return -1;
    /* n = the norm (saved by norm and clamp_min), c = clamp_min(n, eps) */
    if (save_new_if(c, s.ndim, red, dt) != 0 || save_new_if(c, s.ndim, red, dt) != 0)
        return -1;
    return 0;
}

const struct memest_op_desc memest_ops_vecnorm[] = {
    {.name = "norm", .min_in = 1, .max_in = 1, .args = norm_args, .nargs = NARGS(norm_args),
     .infer = infer_norm, .doc = "Tensor.norm(p, dim, keepdim): the p-norm over dims",
     .amp = MEMEST_AMPP_FP32},
    {.name = "linalg_vector_norm", .min_in = 1, .max_in = 1, .args = vector_norm_args,
     .nargs = NARGS(vector_norm_args), .infer = infer_norm,
     .doc = "torch.linalg.vector_norm(x, ord, dim, keepdim)", .amp = MEMEST_AMPP_FP32},
    {.name = "normalize", .min_in = 1, .max_in = 1, .args = normalize_args,
     .nargs = NARGS(normalize_args), .infer = infer_normalize,
     .doc = "F.normalize: x / x.norm(p, dim, keepdim=True).clamp_min(eps)",
     .amp = MEMEST_AMPP_FP32},
};
const int memest_ops_vecnorm_count = NOPS(memest_ops_vecnorm);
