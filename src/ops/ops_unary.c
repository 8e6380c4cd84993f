/* ops_unary.c - elementwise math on one tensor: sqrt, rsqrt, exp, log, neg,
 * abs, sin, cos, reciprocal, erf, and clamp with number bounds.
 *
 * Saved for backward (tools/autograd/derivatives.yaml; measured the same
 * under PyTorch 1.13 and 2.6, tests/reference/ops_b_saved_*.txt):
 *   the result: sqrt, rsqrt, exp, reciprocal (their gradients are written
 *     with `result`; in place, the result is the input's storage);
 *   the input (self): log, abs, sin, cos, erf, clamp; in place (x.log_()
 *     ...), autograd saves a clone of the original input, a new tensor of
 *     its size, before overwriting it (as ops_activation.c's hardtanh_);
 *   nothing: neg.
 * Integer inputs give a floating-point result where PyTorch's ops promote
 * (sqrt, rsqrt, exp, log, sin, cos, reciprocal, erf: the run's float
 * dtype); neg, abs and clamp keep the input's dtype. No MACs. */
#include <math.h>

#include "ops_common.h"

enum saves { SAVES_NOTHING, SAVES_RESULT, SAVES_SELF };

enum { UN_INPLACE };
static const struct memest_argspec unary_args[] = {
    [UN_INPLACE] = {"inplace", MEMEST_ARG_BOOL, .idef = 0,
                    .doc = "x.op_(): the result overwrites the input"},
};

/* The output (in place or new, laid out like the input) of dtype dt and
 * what the op saves. */
static int unary_common(struct memest_ictx *c, bool inplace, enum memest_dtype dt,
                        enum saves what)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    if (inplace && dt != memest_in_dtype(c, 0))
        return memest_fail(c, "in place: the result type %s can't be cast to the input's type %s",
                           memest_dtype_name(dt), memest_dtype_name(memest_in_dtype(c, 0)));
    int k = inplace ? memest_out_inplace(c, 0) : memest_out_like(c, &s, 0, dt);
    if (k < 0)
        return -1;
    switch (what) {
    case SAVES_NOTHING:
        return 0;
    case SAVES_RESULT:
        return memest_save_out(c, k);
    case SAVES_SELF:
        return inplace ? save_new_if(c, s.ndim, s.size, dt) : memest_save_in(c, 0);
    }
    return 0;
}

/* The ops whose integer inputs give a floating-point result. */
static int unary_float(struct memest_ictx *c, enum saves what)
{
    enum memest_dtype dt = memest_in_dtype(c, 0);
    if (!memest_dtype_is_float(dt))
        dt = memest_float_dtype(c);
    return unary_common(c, memest_arg_bool(c, UN_INPLACE), dt, what);
}

static int infer_saves_result(struct memest_ictx *c) { return unary_float(c, SAVES_RESULT); }
static int infer_saves_self(struct memest_ictx *c) { return unary_float(c, SAVES_SELF); }

static int infer_neg(struct memest_ictx *c)
{
    if (memest_in_dtype(c, 0) == MEMEST_BOOL)
        return memest_fail(c, "negation, the `-` operator, on a bool tensor is not supported");
    return unary_common(c, memest_arg_bool(c, UN_INPLACE), memest_in_dtype(c, 0), SAVES_NOTHING);
}

static int infer_abs(struct memest_ictx *c)
{
    return unary_common(c, memest_arg_bool(c, UN_INPLACE), memest_in_dtype(c, 0), SAVES_SELF);
}

/* ---- clamp ---- */

enum { CL_MIN, CL_MAX, CL_INPLACE };
static const struct memest_argspec clamp_args[] = {
    [CL_MIN] = {"min", MEMEST_ARG_FLOAT, .optional = true},
    [CL_MAX] = {"max", MEMEST_ARG_FLOAT, .optional = true},
    [CL_INPLACE] = {"inplace", MEMEST_ARG_BOOL, .idef = 0, .doc = "x.clamp_()"},
};

static int infer_clamp(struct memest_ictx *c)
{
    const struct memest_argval *lo = memest_arg(c, CL_MIN), *hi = memest_arg(c, CL_MAX);
    if (lo->none && hi->none)
        return memest_fail(c, "torch.clamp: At least one of 'min' or 'max' must not be None");
    enum memest_dtype dt = memest_in_dtype(c, 0);
    /* a fractional bound promotes an integer tensor (result_type with a
     * float scalar) */
    bool frac = (!lo->none && lo->f != floor(lo->f)) || (!hi->none && hi->f != floor(hi->f));
    if (!memest_dtype_is_float(dt) && frac)
        dt = memest_float_dtype(c);
    return unary_common(c, memest_arg_bool(c, CL_INPLACE), dt, SAVES_SELF);
}

#define UNARY_AMP(nm, fn, text, policy)                                                         \
    {                                                                                           \
        .name = nm, .min_in = 1, .max_in = 1, .args = unary_args, .nargs = NARGS(unary_args),  \
        .infer = fn, .doc = text, .amp = policy,                                                \
    }
#define UNARY(nm, fn, text) UNARY_AMP(nm, fn, text, MEMEST_AMPP_ANY)
/* autocast_mode.cpp lists exp, log, reciprocal and rsqrt as fp32 ops */
#define UNARY_FP32(nm, fn, text) UNARY_AMP(nm, fn, text, MEMEST_AMPP_FP32)

const struct memest_op_desc memest_ops_unary[] = {
    UNARY("sqrt", infer_saves_result, "torch.sqrt (saves its result)"),
    UNARY_FP32("rsqrt", infer_saves_result, "torch.rsqrt (saves its result)"),
    UNARY_FP32("exp", infer_saves_result, "torch.exp (saves its result)"),
    UNARY_FP32("reciprocal", infer_saves_result, "torch.reciprocal (saves its result)"),
    UNARY_FP32("log", infer_saves_self, "torch.log (saves its input)"),
    UNARY("sin", infer_saves_self, "torch.sin (saves its input)"),
    UNARY("cos", infer_saves_self, "torch.cos (saves its input)"),
    UNARY("erf", infer_saves_self, "torch.erf (saves its input)"),
    UNARY("abs", infer_abs, "torch.abs (saves its input)"),
    UNARY("neg", infer_neg, "torch.neg / -x (saves nothing)"),
    {.name = "clamp", .min_in = 1, .max_in = 1, .args = clamp_args, .nargs = NARGS(clamp_args),
     .infer = infer_clamp, .doc = "torch.clamp / clip with number bounds (saves its input)"},
};
const int memest_ops_unary_count = NOPS(memest_ops_unary);
