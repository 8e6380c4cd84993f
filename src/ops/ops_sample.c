/* ops_sample.c - sampling an image at computed places: F.grid_sample
 * (bilinear / nearest / bicubic reads at the normalised coordinates of a
 * grid: torchvision's RAFT warps its feature maps and indexes its
 * correlation pyramid with it) and F.unfold / nn.Unfold (im2col: every
 * sliding block of the input as one column).
 *
 * grid_sample (torch/nn/functional.py grid_sample, then
 * aten/src/ATen/native/GridSampler.cpp grid_sampler and the checks of
 * GridSamplerUtils.h check_grid_sampler_common / _2d / _3d): input
 * (N, C, H_in, W_in) and grid (N, H_out, W_out, 2), or (N, C, D, H, W) and
 * (N, D_out, H_out, W_out, 3); the output (N, C, grid's spatial sizes) is a
 * new contiguous tensor of the input's dtype (at::empty with the input's
 * options). On CUDA a 4-D bilinear, zeros, align_corners=True sample runs
 * cuDNN's spatial transformer (cudnn_grid_sampler) instead of
 * grid_sampler_2d; either way autograd saves the input and the grid
 * themselves, whichever of them requires grad (derivatives.yaml: one
 * formula "input, grid: grid_sampler_2d_backward(grad, input, grid, ...)";
 * GridSampler2DBackward0 / GridSampler3DBackward0, measured alike under
 * 1.13 and 2.6: the grid_sample lines of tests/reference/ops_b_saved_*.txt).
 * The backward gives both inputs a new gradient, the default. Autocast lists
 * grid_sampler as "promote" (autocast_mode.cpp): the narrower float input is
 * cast to the wider one's type, and that copy is what the op reads and
 * saves; outside autocast different dtypes are PyTorch's error.
 *
 * unfold (torch/nn/functional.py unfold -> torch._C._nn.im2col;
 * aten/src/ATen/native/im2col_shape_check.h): input (N, C, H, W) or
 * unbatched (C, H, W); output (N, C*kh*kw, L), L = out_h * out_w with
 * out = floor((size + 2*pad - dil*(k-1) - 1) / stride) + 1 per spatial dim,
 * each at least 1; a new contiguous tensor. Saved: in 2.x nothing (the
 * formula col2im_symint(grad, {self.sym_size(-2), self.sym_size(-1)}, ...)
 * keeps two sizes), in 1.13 Im2ColBackward0 keeps the input itself
 * (measured: ops_b_saved_113.txt); --torch 1.13 applies that.
 *
 * Neither op counts MACs (memest counts matmul-like MACs only, as the
 * resampling ops of ops_resample.c). */
#include "ops_common.h"

/* ---- grid_sample ---- */

enum { GS_MODE, GS_PADDING, GS_ALIGN };
static const struct memest_argspec grid_sample_args[] = {
    [GS_MODE] = {"mode", MEMEST_ARG_STR, .sdef = "bilinear", .choices = "bilinear|nearest|bicubic",
                 .doc = "bicubic: 4-D input only"},
    [GS_PADDING] = {"padding_mode", MEMEST_ARG_STR, .sdef = "zeros",
                    .choices = "zeros|border|reflection"},
    [GS_ALIGN] = {"align_corners", MEMEST_ARG_BOOL, .optional = true,
                  .doc = "None is False (with PyTorch's warning); no effect on memory"},
};

/* ATen's checks in its order (the mode and padding_mode choices are
 * checked with the arguments, as F.grid_sample does before ATen). */
static int grid_sample_check(struct memest_ictx *c, const struct memest_shape *x,
                             const struct memest_shape *g)
{
    if (x->ndim >= 1 && g->ndim >= 1) {
        if (x->size[0] != g->size[0])
            return memest_fail(c, "grid_sampler(): expected grid and input to have same batch "
                                  "size, but got input with sizes %s and grid with sizes %s",
                               IN_STR(c, 0), IN_STR(c, 1));
        if (g->size[g->ndim - 1] != x->ndim - 2)
            return memest_fail(c, "grid_sampler(): expected grid to have size %d in last "
                                  "dimension, but got grid with sizes %s",
                               x->ndim - 2, IN_STR(c, 1));
        for (int d = 2; d < x->ndim; d++)
            if (x->size[d] == 0)
                return memest_fail(c, "grid_sampler(): expected input to have non-empty spatial "
                                      "dimensions, but input has sizes %s with dimension %d "
                                      "being empty",
                                   IN_STR(c, 0), d);
    }
    int want = x->ndim == 4 ? 4 : 5;
    if (x->ndim != want || g->ndim != want)
        return memest_fail(c, "grid_sampler(): expected %dD input and grid with same number of "
                              "dimensions, but got input with sizes %s and grid with sizes %s",
                           want, IN_STR(c, 0), IN_STR(c, 1));
    if (want == 5 && strcmp(memest_arg(c, GS_MODE)->s, "bicubic") == 0)
        return memest_fail(c, "grid_sampler(): bicubic interpolation only supports 4D input");
    return 0;
}

/* Saves input i as the kernel reads it: itself, or (autocast's promote)
 * its copy in dtype `to`, which lives only through the forward when nothing
 * is saved. */
static int grid_sample_save(struct memest_ictx *c, int i, enum memest_dtype to)
{
    if (memest_in_dtype(c, i) == to)
        return memest_save_in(c, i);
    const struct memest_shape s = *memest_in_shape(c, i);
    if (!memest_needs_grad(c)) {
        memest_workspace(c, sat_bytes(s.ndim, s.size, to));
        return 0;
    }
    return memest_save_new(c, s.ndim, s.size, to);
}

static int infer_grid_sample(struct memest_ictx *c)
{
    const struct memest_shape x = *memest_in_shape(c, 0), g = *memest_in_shape(c, 1);
    if (need_float(c, 0) != 0 || need_float(c, 1) != 0)
        return -1;
    enum memest_dtype xdt = memest_in_dtype(c, 0), gdt = memest_in_dtype(c, 1);
    if (xdt != gdt && !memest_run_options(c)->amp)
        return memest_fail(c, "grid_sampler(): expected input and grid to have same dtype, but "
                              "input has %s and grid has %s",
                           memest_dtype_name(xdt), memest_dtype_name(gdt));
    if (grid_sample_check(c, &x, &g) != 0)
        return -1;
    enum memest_dtype dt = promote_dtypes(xdt, gdt);
    int64_t size[MEMEST_MAX_DIMS] = {x.size[0], x.size[1]};
    for (int d = 1; d + 1 < g.ndim; d++)
        size[1 + d] = g.size[d];
    if (memest_out_new(c, x.ndim, size, dt) < 0)
        return -1;
    return grid_sample_save(c, 0, dt) != 0 || grid_sample_save(c, 1, dt) != 0 ? -1 : 0;
}

/* ---- unfold (im2col) ---- */

enum { UF_KERNEL, UF_DILATION, UF_PADDING, UF_STRIDE };
static const struct memest_argspec unfold_args[] = {
    [UF_KERNEL] = {"kernel_size", MEMEST_ARG_INTS, .required = true, .n = 2, .lo = 1,
                   .hi = ARG_MAX},
    [UF_DILATION] = {"dilation", MEMEST_ARG_INTS, .n = 2, .lo = 1, .hi = ARG_MAX, .idef = 1},
    [UF_PADDING] = {"padding", MEMEST_ARG_INTS, .n = 2, .lo = 0, .hi = ARG_MAX, .idef = 0},
    [UF_STRIDE] = {"stride", MEMEST_ARG_INTS, .n = 2, .lo = 1, .hi = ARG_MAX, .idef = 1},
};

/* Sliding blocks along one spatial dim: floor((in + 2p - d(k-1) - 1) / s) + 1,
 * overflow-checked (the arguments are at most 2^53 each). false on overflow. */
static bool unfold_blocks(int64_t in, int64_t k, int64_t d, int64_t p, int64_t s, int64_t *out)
{
    int64_t span, pp, num;
    if (!mul_i64(d, k - 1, &span) || !mul_i64(p, 2, &pp) ||
        __builtin_add_overflow(in, pp, &num) || __builtin_sub_overflow(num, span, &num) ||
        __builtin_sub_overflow(num, 1, &num))
        return false;
    *out = div_floor(num, s) + 1;
    return true;
}

static int infer_unfold(struct memest_ictx *c)
{
    const struct memest_shape x = *memest_in_shape(c, 0);
    bool valid = x.ndim == 3 || x.ndim == 4;
    for (int d = x.ndim == 4 ? 1 : 0; valid && d < x.ndim; d++)
        valid = x.size[d] != 0;
    if (!valid)
        return memest_fail(c, "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                              "and other non-zero dimensions for input, but got: %s",
                           IN_STR(c, 0));
    if (need_float(c, 0) != 0)
        return -1;
    const int64_t *k = memest_arg(c, UF_KERNEL)->v, *dil = memest_arg(c, UF_DILATION)->v,
                  *pad = memest_arg(c, UF_PADDING)->v, *st = memest_arg(c, UF_STRIDE)->v;
    int h = x.ndim - 2;
    int64_t blocks[2];
    for (int i = 0; i < 2; i++)
        if (!unfold_blocks(x.size[h + i], k[i], dil[i], pad[i], st[i], &blocks[i]))
            return memest_fail(c, "kernel_size, dilation and padding are too large");
    if (blocks[0] < 1 || blocks[1] < 1)
        return memest_fail(c, "Given input with spatial size (%lld, %lld), kernel_size=(%lld, "
                              "%lld), dilation=(%lld, %lld), padding=(%lld, %lld), calculated "
                              "shape of the array of sliding blocks as (%lld, %lld), but its "
                              "components must be at least one.",
                           (long long)x.size[h], (long long)x.size[h + 1], (long long)k[0],
                           (long long)k[1], (long long)dil[0], (long long)dil[1],
                           (long long)pad[0], (long long)pad[1], (long long)blocks[0],
                           (long long)blocks[1]);
    int64_t size[3], kk;
    int n = 0;
    if (x.ndim == 4)
        size[n++] = x.size[0];
    if (!mul_i64(k[0], k[1], &kk) || !mul_i64(x.size[h - 1], kk, &size[n]) ||
        !mul_i64(blocks[0], blocks[1], &size[n + 1]))
        return memest_fail(c, "the unfolded output is too large");
    if (memest_out_new(c, n + 2, size, memest_in_dtype(c, 0)) < 0)
        return -1;
    return torch113(c) ? memest_save_in(c, 0) : 0;
}

const struct memest_op_desc memest_ops_sample[] = {
    {.name = "grid_sample", .min_in = 2, .max_in = 2, .args = grid_sample_args,
     .nargs = NARGS(grid_sample_args), .infer = infer_grid_sample,
     .doc = "F.grid_sample: input (N, C, H, W) read at grid (N, Ho, Wo, 2) (or 5-D with a 3 "
            "coordinate grid) -> (N, C, Ho, Wo)"},
    OP1("unfold", unfold_args, infer_unfold,
        "F.unfold / nn.Unfold (im2col): (N, C, H, W) -> (N, C*kh*kw, L), every sliding block a "
        "column"),
};
const int memest_ops_sample_count = NOPS(memest_ops_sample);
