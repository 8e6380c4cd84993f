/* ops_pad.c - F.pad: constant, reflect, replicate and circular padding.
 *
 * `pad` lists (left, right) pairs from the last dim backwards, as F.pad
 * takes them; a negative pad crops. The rules are aten/src/ATen/native/
 * PadNd.cpp (_pad_enum; F.pad in 1.13's torch/nn/functional.py checks the
 * same): an even length of at most twice the input's rank; "constant"
 * (constant_pad_nd) pads any dims of any input, each resulting size at
 * least 0; the other modes pad the last 1, 2 or 3 dims of a batched or
 * unbatched input (pad length 2 on 2-D/3-D, 4 on 3-D/4-D, 6 on 4-D/5-D) and
 * take no `value` (but 0): reflect needs each pad smaller than its dim
 * (reflection_pad*d) and, as replicate, an output of at least 1; circular
 * pads of at most the dim's size (_pad_circular; batched inputs only in
 * 1.13). Negative pads crop in every mode. Checked with both versions.
 *
 * The output is a new tensor (constant_pad_nd clones even when it only
 * crops). Saved for backward (tests/reference/vision_ops_saved_*.md, 1.13
 * and 2.6 alike): reflect and replicate save the input (ReflectionPad*
 * / ReplicationPad*Backward0: self); constant and circular save nothing
 * (the backward narrows or pads the gradient back to the input's size). */
#include "ops_common.h"

enum { PAD_PAD, PAD_MODE, PAD_VALUE };
static const struct memest_argspec pad_args[] = {
    [PAD_PAD] = {"pad", MEMEST_ARG_INTS, .required = true, .lo = -ARG_MAX, .hi = ARG_MAX,
                 .doc = "(left, right) pairs from the last dim backwards; negative crops"},
    [PAD_MODE] = {"mode", MEMEST_ARG_STR, .sdef = "constant",
                  .choices = "constant|reflect|replicate|circular"},
    [PAD_VALUE] = {"value", MEMEST_ARG_FLOAT, .optional = true,
                   .doc = "the fill of mode constant (default 0)"},
};

static int infer_pad(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    const struct memest_argval *pad = memest_arg(c, PAD_PAD), *value = memest_arg(c, PAD_VALUE);
    const char *mode = memest_arg(c, PAD_MODE)->s;
    bool constant = strcmp(mode, "constant") == 0;
    int np = pad->n / 2;
    if (pad->n % 2 != 0)
        return memest_fail(c, "padding length must be divisible by 2, got %d values", pad->n);
    if (np > s->ndim)
        return memest_fail(c, "padding length should be at most twice the input's dimensions, "
                              "but got %d values for the %d-D input %s",
                           pad->n, s->ndim, IN_STR(c, 0));
    if (!constant) {
        if (!value->none && value->f != 0)
            return memest_fail(c, "padding mode \"%s\" doesn't take a value argument", mode);
        if (np < 1 || np > 3 || (s->ndim != np + 1 && s->ndim != np + 2))
            return memest_fail(c, "mode \"%s\" pads the last 1, 2 or 3 dims of a batched or "
                                  "unbatched input (2, 4 or 6 pad values for a 2-3-D, 3-4-D or "
                                  "4-5-D input), got %d values for %s",
                               mode, pad->n, IN_STR(c, 0));
    }
    bool reflect = strcmp(mode, "reflect") == 0, circular = strcmp(mode, "circular") == 0;
    if (circular && torch113(c) && s->ndim != np + 2) /* 1.13's _pad_circular: batched only */
        return memest_fail(c, "mode \"circular\" in PyTorch 1.13 needs a batched input "
                              "(%d-D for %d pad values), got %s",
                           np + 2, pad->n, IN_STR(c, 0));
    int64_t size[MEMEST_MAX_DIMS];
    memcpy(size, s->size, sizeof size);
    for (int i = 0; i < np; i++) {
        int d = s->ndim - 1 - i;
        int64_t l = pad->v[2 * i], r = pad->v[2 * i + 1], in = s->size[d];
        if (reflect && (l >= in || r >= in))
            return memest_fail(c, "padding size should be less than the corresponding input "
                                  "dimension, but got padding (%lld, %lld) at dimension %d of %s",
                               (long long)l, (long long)r, d, IN_STR(c, 0));
        if (circular && (l > in || r > in))
            return memest_fail(c, "padding (%lld, %lld) at dimension %d of %s wraps around "
                                  "more than once",
                               (long long)l, (long long)r, d, IN_STR(c, 0));
        size[d] = in + l + r; /* each below 2^53 in magnitude */
        if (size[d] < (constant || circular ? 0 : 1) || size[d] >= MEMEST_DIM_MAX)
            return memest_fail(c, "the input size %lld with padding (%lld, %lld) gives the "
                                  "invalid output size %lld in dimension %d",
                               (long long)in, (long long)l, (long long)r, (long long)size[d], d);
    }
    if (memest_out_new(c, s->ndim, size, memest_in_dtype(c, 0)) < 0)
        return -1;
    if (constant || circular)
        return 0;
    return memest_save_in(c, 0);
}

const struct memest_op_desc memest_ops_pad[] = {
    {.name = "pad", .min_in = 1, .max_in = 1, .args = pad_args, .nargs = NARGS(pad_args),
     .infer = infer_pad, .doc = "F.pad / nn.ZeroPad2d etc.: pads (or crops) the trailing dims"},
};
const int memest_ops_pad_count = NOPS(memest_ops_pad);
