/* ops_rearrange.c - the ops that copy their input's values into a new
 * arrangement: roll, tile (torch.tile and Tensor.repeat), repeat_interleave.
 *
 * Saved for backward (tests/reference/ops_b_saved_*.txt):
 *   roll, tile: nothing (RollBackward0 keeps the shifts and dims,
 *     RepeatBackward0 the repeats; the backward rolls the gradient back or
 *     sums it into a new tensor of the input's size);
 *   repeat_interleave with an int `repeats`: PyTorch 2.x writes it as
 *     input.unsqueeze(dim + 1).expand(...).clone().flatten(dim, dim + 1)
 *     (aten/src/ATen/native/Repeat.cpp): nothing saved; PyTorch 1.13 as
 *     input.index_select(dim, repeat_interleave(repeats_tensor)), whose
 *     IndexSelectBackward0 saves that int64 index, one element per output
 *     position along dim (measured: [24] int64 for 3 repeats of 8).
 * No MACs. */
#include "ops_common.h"

/* ---- roll ---- */

enum { RO_SHIFTS, RO_DIMS };
static const struct memest_argspec roll_args[] = {
    [RO_SHIFTS] = {"shifts", MEMEST_ARG_INTS, .required = true, .lo = -ARG_MAX, .hi = ARG_MAX},
    [RO_DIMS] = {"dims", MEMEST_ARG_INTS, .optional = true,
                 .doc = "default: the flattened tensor is rolled"},
};

/* roll_common (aten/src/ATen/native/TensorTransformations.h, the path CUDA
 * takes for more than one dim) rolls the first dim and recurses on the
 * rest, each step a new tensor alive until the call returns: k dims keep
 * k - 1 intermediates of the input's size. Without dims the input is
 * flattened first (a copy when it is not contiguous). */
static int infer_roll(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    const struct memest_argval *sh = memest_arg(c, RO_SHIFTS), *dm = memest_arg(c, RO_DIMS);
    enum memest_dtype dt = memest_in_dtype(c, 0);
    int ndims = dm->none ? 0 : dm->n;
    if (ndims == 0 && sh->n != 1)
        return memest_fail(c, "shifts and dimensions must align. shifts: %d, dims: 0", sh->n);
    if (ndims > 0 && sh->n != ndims)
        return memest_fail(c, "shifts and dimensions must align. shifts: %d, dims: %d", sh->n,
                           ndims);
    for (int i = 0; i < ndims; i++) {
        int d;
        if (wrap_dim(c, dm->v[i], s.ndim, &d) != 0)
            return -1;
    }
    uint64_t bytes = sat_bytes(s.ndim, s.size, dt), work = 0;
    if (ndims > 1)
        work = memest_sat_mul(bytes, (uint64_t)(ndims - 1));
    else if (ndims == 0 && !memest_shape_is_contiguous(&s))
        work = bytes;
    memest_workspace(c, work);
    return memest_out_like(c, &s, 0, dt) < 0 ? -1 : 0;
}

/* ---- tile ---- */

enum { TI_DIMS };
static const struct memest_argspec tile_args[] = {
    [TI_DIMS] = {"dims", MEMEST_ARG_INTS, .required = true, .lo = 0, .hi = ARG_MAX,
                 .doc = "repeats per dim, aligned to the last dims (Tensor.repeat's sizes)"},
};

/* torch.tile pads `dims` with leading 1s to the input's rank, then
 * Tensor.repeat unsqueezes the input to the rank of `dims`. */
static int infer_tile(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    const struct memest_argval *a = memest_arg(c, TI_DIMS);
    int n = a->n > s.ndim ? a->n : s.ndim;
    if (n > MEMEST_MAX_DIMS)
        return memest_fail(c, "the result would have more than %d dimensions", MEMEST_MAX_DIMS);
    int64_t size[MEMEST_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        int di = i - (n - s.ndim), ri = i - (n - a->n);
        int64_t in = di >= 0 ? s.size[di] : 1, r = ri >= 0 ? a->v[ri] : 1;
        if (!mul_i64(in, r, &size[i]))
            return memest_fail(c, "the tiled size of dim %d overflows", i);
    }
    return memest_out_new(c, n, size, memest_in_dtype(c, 0)) < 0 ? -1 : 0;
}

/* ---- repeat_interleave ---- */

enum { RI_REPEATS, RI_DIM, RI_OUTPUT_SIZE };
static const struct memest_argspec repeat_interleave_args[] = {
    [RI_REPEATS] = {"repeats", MEMEST_ARG_INT, .required = true, .lo = 0, .hi = ARG_MAX},
    [RI_DIM] = {"dim", MEMEST_ARG_INT, .optional = true,
                .doc = "default: the flattened input, a 1-D result"},
    [RI_OUTPUT_SIZE] = {"output_size", MEMEST_ARG_INT, .optional = true, .lo = 0, .hi = ARG_MAX,
                        .doc = "the result's size along dim (checked when given)"},
};

static int infer_repeat_interleave(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    const struct memest_argval *dm = memest_arg(c, RI_DIM), *os = memest_arg(c, RI_OUTPUT_SIZE);
    int64_t r = memest_arg_int(c, RI_REPEATS);
    int64_t size[MEMEST_MAX_DIMS];
    int n = 1, d = 0;
    if (dm->none) {
        uint64_t numel = 0;
        memest_shape_numel(&s, &numel); /* checked when the input was made */
        size[0] = (int64_t)numel;
        if (!memest_shape_is_contiguous(&s)) /* flatten() copies */
            memest_workspace(c, sat_bytes(s.ndim, s.size, memest_in_dtype(c, 0)));
    } else {
        if (wrap_dim(c, dm->v[0], s.ndim, &d) != 0)
            return -1;
        n = s.ndim > 0 ? s.ndim : 1;
        for (int i = 0; i < s.ndim; i++)
            size[i] = s.size[i];
        if (s.ndim == 0)
            size[0] = 1;
    }
    if (!mul_i64(size[d], r, &size[d]) || size[d] > MEMEST_DIM_MAX)
        return memest_fail(c, "the repeated size overflows");
    if (!os->none && os->v[0] != size[d])
        return memest_fail(c, "output_size %lld does not match the repeated size %lld",
                           (long long)os->v[0], (long long)size[d]);
    if (memest_out_new(c, n, size, memest_in_dtype(c, 0)) < 0)
        return -1;
    if (torch113(c)) /* index_select's int64 index */
        return save_new_if(c, 1, &size[d], MEMEST_I64);
    return 0;
}

const struct memest_op_desc memest_ops_rearrange[] = {
    OP1("roll", roll_args, infer_roll, "torch.roll: shifts along dims (a new tensor)"),
    OP1("tile", tile_args, infer_tile, "torch.tile / Tensor.repeat(*dims) (a new tensor)"),
    OP1("repeat_interleave", repeat_interleave_args, infer_repeat_interleave,
          "torch.repeat_interleave with an int repeats (a new tensor)"),
};
const int memest_ops_rearrange_count = NOPS(memest_ops_rearrange);
