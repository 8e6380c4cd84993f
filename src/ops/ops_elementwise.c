/* ops_elementwise.c - arithmetic (add, sub, mul, div with broadcasting or a
 * scalar), matmul, bmm, reductions (mean, sum), masked_fill with a causal
 * mask, and the tensor factory arange (zeros, ones, full: ops_factory.c).
 *
 * Saved for backward (PyTorch 1.13, the catalog, and 2.x where not said):
 *   add, sub: nothing;
 *   mul: each operand whose partner requires grad (a * b saves b for
 *     grad(a) and a for grad(b));
 *   div: the divisor whenever it records, the dividend when the divisor
 *     requires grad;
 *   with a Python scalar: the scalar is wrapped into a 0-d float64 tensor
 *     that mul/div save; it lives on the CPU when the tensor is on CUDA, so
 *     nothing is counted (the CPU catalog shows 8 bytes);
 *   in place (x.mul_(y), x.div_(y)): where the formula needs the original x,
 *     autograd saves a clone of it;
 *   matmul: as at::native::matmul (1.13) dispatches: dot, mv, mm, a folded
 *     mm when one side is >= 3-D and the other <= 2-D (the larger operand
 *     reshaped to a matrix, a copy when it cannot be viewed; the 2-D-first
 *     case folds the transposed right operand), else bmm on both operands
 *     expanded to the broadcast batch and reshaped to 3-D (a copy when the
 *     expansion cannot be viewed that way). mm/bmm save each operand when
 *     the other requires grad;
 *   mean over dims: nothing in PyTorch 2.x (MeanBackward1 keeps only
 *     sym_sizes and sym_numel, derivatives.yaml mean.dim: mean_backward(grad,
 *     self.sym_sizes(), dim, self.sym_numel(), keepdim); measured 0 bytes
 *     with PyTorch 2.6); its input under --torch 1.13 (1.13's MeanBackward1
 *     keeps self: the catalog); a full mean(), sum: nothing;
 *   masked_fill: only its bool mask, a buffer here, so nothing.
 * MACs: matmul/bmm only (m*n*k per product; backward: once more per operand
 * that requires grad). */
#include <math.h>

#include "ops_common.h"

#include "memest/run.h"

/* ---- add, sub, mul, div ---- */

enum { BIN_OTHER, BIN_INPLACE, BIN_ALPHA };

static const struct memest_argspec addsub_args[] = {
    [BIN_OTHER] = {"other", MEMEST_ARG_FLOAT, .optional = true,
                   .doc = "a scalar operand, instead of a second input"},
    [BIN_INPLACE] = {"inplace", MEMEST_ARG_BOOL, .idef = 0,
                     .doc = "x.add_(y): the result overwrites the first input"},
    [BIN_ALPHA] = {"alpha", MEMEST_ARG_FLOAT, .fdef = 1.0},
};
static const struct memest_argspec muldiv_args[] = {
    [BIN_OTHER] = {"other", MEMEST_ARG_FLOAT, .optional = true,
                   .doc = "a scalar operand, instead of a second input"},
    [BIN_INPLACE] = {"inplace", MEMEST_ARG_BOOL, .idef = 0,
                     .doc = "x.mul_(y): the result overwrites the first input"},
};

enum binop { OP_ADD, OP_SUB, OP_MUL, OP_DIV };

/* Result dtype of `a op b` for tensors (a 0-d tensor does not raise the
 * dtype of a dimensioned one within the same category). */
static enum memest_dtype result_dtype(const struct memest_ictx *c)
{
    enum memest_dtype a = memest_in_dtype(c, 0), b = memest_in_dtype(c, 1);
    bool za = memest_in_shape(c, 0)->ndim == 0, zb = memest_in_shape(c, 1)->ndim == 0;
    if (za != zb) {
        enum memest_dtype dim = za ? b : a, zero = za ? a : b;
        if (dtype_category(zero) <= dtype_category(dim))
            return dim;
        return dtype_category(zero) == 2 ? zero : MEMEST_I64;
    }
    return promote_dtypes(a, b);
}

static int infer_binary(struct memest_ictx *c, enum binop op)
{
    const struct memest_argval *other = memest_arg(c, BIN_OTHER);
    bool inplace = memest_arg_bool(c, BIN_INPLACE);
    int nin = memest_in_count(c);
    if (nin == 2 && !other->none)
        return memest_fail(c, "give either a second input or a scalar \"other\", not both");
    if (nin == 1 && other->none)
        return memest_fail(c, "needs a second input or a scalar \"other\"");
    const struct memest_shape a_in = *memest_in_shape(c, 0), *a = &a_in;
    enum memest_dtype adt = memest_in_dtype(c, 0), dt;
    struct memest_shape out;
    bool rg0 = memest_in_requires_grad(c, 0), rg1 = false;
    if (nin == 2) {
        const struct memest_shape b_in = *memest_in_shape(c, 1), *b = &b_in;
        if (!memest_shape_broadcast(a, b, &out))
            return memest_fail(c, "shapes %s and %s are not broadcastable", IN_STR(c, 0),
                               IN_STR(c, 1));
        dt = result_dtype(c);
        rg1 = memest_in_requires_grad(c, 1);
    } else {
        out = *a;
        dt = adt;
        if (dtype_category(adt) < 2 && !integral(other->f))
            dt = memest_float_dtype(c);
        else if (adt == MEMEST_BOOL)
            dt = MEMEST_I64;
    }
    if (op == OP_DIV && !memest_dtype_is_float(dt))
        dt = memest_float_dtype(c); /* true division */
    int k;
    if (inplace) {
        if (!memest_shape_equal(&out, a))
            return memest_fail(c, "in place: the result's shape %s differs from the first "
                                  "input's %s",
                               shp_of(&out).s, IN_STR(c, 0));
        if (dtype_category(dt) > dtype_category(adt))
            return memest_fail(c, "in place: the result type %s can't be cast to the first "
                                  "input's type %s",
                               memest_dtype_name(dt), memest_dtype_name(adt));
        k = memest_out_inplace(c, 0);
    } else {
        int like = nin == 2 && !memest_shape_equal(&out, a) ? 1 : 0;
        k = memest_out_like(c, &out, like, dt);
    }
    if (k < 0)
        return -1;
    /* backward: add (and sub for its first operand) with alpha 1 hands the
     * result's gradient itself to an operand of the result's shape and
     * dtype; a broadcast operand gets a new sum_to reduction, a different
     * dtype a converted copy, and mul/div new products */
    if (op == OP_ADD || op == OP_SUB) {
        bool unit = memest_arg_float(c, BIN_ALPHA) == 1.0;
        for (int i = 0; i < nin; i++) {
            bool same = memest_shape_equal(memest_in_shape(c, i), &out) &&
                        memest_in_dtype(c, i) == dt;
            if (same && (i == 0 || (op == OP_ADD && unit)))
                memest_grad_same(c, i, 0);
        }
    }
    if (nin == 1 || op == OP_ADD || op == OP_SUB)
        return 0;

    /* mul, div by a tensor */
    int rc = 0;
    if (rg1) { /* the first operand (or its clone, when overwritten) */
        if (inplace)
            rc = save_new_if(c, a->ndim, a->size, adt);
        else
            rc = memest_save_in(c, 0);
    }
    if (rc == 0 && (op == OP_MUL ? rg0 : (rg0 || rg1)))
        rc = memest_save_in(c, 1);
    return rc;
}

static int infer_add(struct memest_ictx *c) { return infer_binary(c, OP_ADD); }
static int infer_sub(struct memest_ictx *c) { return infer_binary(c, OP_SUB); }
static int infer_mul(struct memest_ictx *c) { return infer_binary(c, OP_MUL); }
static int infer_div(struct memest_ictx *c) { return infer_binary(c, OP_DIV); }

/* ---- matmul, bmm ---- */

static int check_mm_dtypes(struct memest_ictx *c)
{
    if (need_float(c, 0) != 0 || need_float(c, 1) != 0)
        return -1;
    if (memest_in_dtype(c, 0) != memest_in_dtype(c, 1))
        return memest_fail(c, "expected both operands to have the same dtype, got %s and %s",
                           memest_dtype_name(memest_in_dtype(c, 0)),
                           memest_dtype_name(memest_in_dtype(c, 1)));
    return 0;
}

static int mm_mismatch(struct memest_ictx *c)
{
    return memest_fail(c, "shapes %s and %s cannot be multiplied", IN_STR(c, 0), IN_STR(c, 1));
}

/* Saves (when `save`) input i expanded to batch + [r, q] and reshaped to
 * [prod(batch), r, q], as matmul's batched path does. */
static int save_expanded(struct memest_ictx *c, int i, int nb, const int64_t *batch, int64_t r,
                         int64_t q, int64_t bprod, bool save)
{
    const struct memest_shape s_in = *memest_in_shape(c, i), *s = &s_in;
    struct memest_shape g = {.ndim = nb + 2};
    for (int k = g.ndim - 1; k >= 0; k--) {
        int d = k - (g.ndim - s->ndim);
        int64_t size = d >= 0 ? s->size[d] : 1, stride = d >= 0 ? s->stride[d] : 0;
        int64_t target = k < nb ? batch[k] : (k == nb ? r : q);
        if (size != target)
            stride = 0;
        g.size[k] = target;
        g.stride[k] = stride;
    }
    int64_t flat[3] = {bprod, r, q};
    return save_geom_reshaped(c, i, &g, 3, flat, save);
}

static int infer_matmul(struct memest_ictx *c)
{
    if (check_mm_dtypes(c) != 0)
        return -1;
    const struct memest_shape a_in = *memest_in_shape(c, 0), *a = &a_in;
    const struct memest_shape b_in = *memest_in_shape(c, 1), *b = &b_in;
    int da = a->ndim, db = b->ndim;
    if (da == 0 || db == 0)
        return memest_fail(c, "both arguments to matmul need to be at least 1-D, got %d-D and %d-D",
                           da, db);
    bool rg0 = memest_in_requires_grad(c, 0), rg1 = memest_in_requires_grad(c, 1);
    enum memest_dtype dt = memest_in_dtype(c, 0);
    int64_t size[MEMEST_MAX_DIMS];
    int nd = 0;
    double macs;
    int rc = 0;

    if (da <= 2 && db <= 2) { /* dot, mv, mm (1-D left: unsqueeze(0).mm) */
        int64_t n = a->size[da - 1], m = da == 2 ? a->size[0] : 1;
        int64_t kk = b->size[0], p = db == 2 ? b->size[1] : 1;
        if (n != kk)
            return mm_mismatch(c);
        if (da == 2)
            size[nd++] = m;
        if (db == 2)
            size[nd++] = p;
        if (memest_out_new(c, nd, size, dt) < 0)
            return -1;
        if (rg1)
            rc = memest_save_in(c, 0);
        if (rc == 0 && rg0)
            rc = memest_save_in(c, 1);
        macs = (double)m * (double)n * (double)p;
    } else if (da >= 3 && db <= 2) { /* fold the left operand: [rows, n] @ b */
        int64_t n = a->size[da - 1], rows = 1, p = db == 2 ? b->size[1] : 1;
        if (b->size[0] != n)
            return mm_mismatch(c);
        for (int d = 0; d + 1 < da; d++) {
            size[nd++] = a->size[d];
            rows *= a->size[d];
        }
        if (db == 2)
            size[nd++] = p;
        if (memest_out_new(c, nd, size, dt) < 0)
            return -1;
        int64_t fold[2] = {rows, n};
        rc = save_geom_reshaped(c, 0, a, 2, fold, rg1);
        if (rc == 0 && rg0)
            rc = memest_save_in(c, 1);
        macs = (double)rows * (double)n * (double)p;
    } else if (da <= 2 && db >= 3) { /* fold b^T: [rows, n] @ a^T, transposed back */
        int64_t n = b->size[db - 2], p = b->size[db - 1], m = da == 2 ? a->size[0] : 1;
        if (a->size[da - 1] != n)
            return mm_mismatch(c);
        int64_t rows = p;
        for (int d = 0; d < db - 2; d++) {
            size[nd++] = b->size[d];
            rows *= b->size[d];
        }
        if (da == 2)
            size[nd++] = m;
        size[nd++] = p;
        if (memest_out_new(c, nd, size, dt) < 0)
            return -1;
        struct memest_shape bt = *b;
        geom_transpose(&bt, db - 2, db - 1);
        int64_t fold[2] = {rows, n};
        rc = save_geom_reshaped(c, 1, &bt, 2, fold, rg0);
        if (rc == 0 && rg1)
            rc = memest_save_in(c, 0);
        macs = (double)rows * (double)n * (double)m;
    } else { /* both >= 3-D: bmm on the broadcast batch */
        int64_t n = a->size[da - 2], m1 = a->size[da - 1], m2 = b->size[db - 2],
                p = b->size[db - 1];
        if (m1 != m2)
            return mm_mismatch(c);
        struct memest_shape ba = {.ndim = da - 2}, bb = {.ndim = db - 2}, bc;
        for (int d = 0; d < da - 2; d++)
            ba.size[d] = a->size[d];
        for (int d = 0; d < db - 2; d++)
            bb.size[d] = b->size[d];
        if (!memest_shape_broadcast(&ba, &bb, &bc))
            return memest_fail(c, "the batch dimensions of %s and %s are not broadcastable",
                               IN_STR(c, 0), IN_STR(c, 1));
        int64_t bprod = 1;
        for (int d = 0; d < bc.ndim; d++) {
            size[nd++] = bc.size[d];
            bprod *= bc.size[d];
        }
        size[nd++] = n;
        size[nd++] = p;
        if (memest_out_new(c, nd, size, dt) < 0)
            return -1;
        rc = save_expanded(c, 0, bc.ndim, bc.size, n, m1, bprod, rg1);
        if (rc == 0)
            rc = save_expanded(c, 1, bc.ndim, bc.size, m2, p, bprod, rg0);
        macs = (double)bprod * (double)n * (double)m1 * (double)p;
    }
    if (rc != 0)
        return -1;
    if (da >= 3 || db >= 3)
        memest_bwd_contiguous(c);   /* the folded/batched result is reshaped back */
    memest_macs(c, macs);
    memest_macs_bwd(c, macs * ((rg0 ? 1 : 0) + (rg1 ? 1 : 0)));
    return 0;
}

static int infer_bmm(struct memest_ictx *c)
{
    if (check_mm_dtypes(c) != 0)
        return -1;
    const struct memest_shape a_in = *memest_in_shape(c, 0), *a = &a_in;
    const struct memest_shape b_in = *memest_in_shape(c, 1), *b = &b_in;
    if (a->ndim != 3 || b->ndim != 3)
        return memest_fail(c, "expects two 3-D tensors (b, n, m) and (b, m, p), got %s and %s",
                           IN_STR(c, 0), IN_STR(c, 1));
    if (a->size[0] != b->size[0])
        return memest_fail(c, "batch1 and batch2 must have the same number of batches, got %lld "
                              "and %lld",
                           (long long)a->size[0], (long long)b->size[0]);
    if (a->size[2] != b->size[1])
        return mm_mismatch(c);
    int64_t size[3] = {a->size[0], a->size[1], b->size[2]};
    if (memest_out_new(c, 3, size, memest_in_dtype(c, 0)) < 0)
        return -1;
    bool rg0 = memest_in_requires_grad(c, 0), rg1 = memest_in_requires_grad(c, 1);
    if ((rg1 && memest_save_in(c, 0) != 0) || (rg0 && memest_save_in(c, 1) != 0))
        return -1;
    double macs = (double)a->size[0] * (double)a->size[1] * (double)a->size[2] * (double)b->size[2];
    memest_macs(c, macs);
    memest_macs_bwd(c, macs * ((rg0 ? 1 : 0) + (rg1 ? 1 : 0)));
    return 0;
}

/* ---- mean, sum ---- */

enum { RED_DIM, RED_KEEPDIM };
static const struct memest_argspec reduce_args[] = {
    [RED_DIM] = {"dim", MEMEST_ARG_INTS, .optional = true,
                 .doc = "dim(s) to reduce (default: all, to a 0-d tensor)"},
    [RED_KEEPDIM] = {"keepdim", MEMEST_ARG_BOOL, .idef = 0},
};

static int infer_reduce(struct memest_ictx *c, bool mean)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    enum memest_dtype dt = memest_in_dtype(c, 0);
    if (mean && !memest_dtype_is_float(dt))
        return memest_fail(c, "mean needs a floating-point input, got %s", memest_dtype_name(dt));
    if (!mean && !memest_dtype_is_float(dt))
        dt = MEMEST_I64;
    const struct memest_argval *a = memest_arg(c, RED_DIM);
    int64_t size[MEMEST_MAX_DIMS];
    int n = 0;
    if (reduced_sizes(c, s, a, memest_arg_bool(c, RED_KEEPDIM), size, &n) != 0)
        return -1;
    if (memest_out_new(c, n, size, dt) < 0)
        return -1;
    if (mean && !a->none && torch113(c))
        return memest_save_in(c, 0);
    return 0;
}

static int infer_mean(struct memest_ictx *c) { return infer_reduce(c, true); }
static int infer_sum(struct memest_ictx *c) { return infer_reduce(c, false); }

/* ---- masked_fill ----
 *
 * x.masked_fill(mask, value) (or torch.where(mask, x, value)) with a causal
 * mask that the module keeps as a bool buffer, as Hugging Face's GPT-2 does
 * (self.bias = tril(ones(P, P)).view(1, 1, P, P), sliced to
 * [..., S - L : S, :S]). The buffer is declared here ("mask", bool); being a
 * buffer, the saved mask is not an activation. */

enum { MF_MASK, MF_VALUE, MF_INPLACE, MF_MAX_POSITIONS };
static const struct memest_argspec masked_fill_args[] = {
    [MF_MASK] = {"mask", MEMEST_ARG_STR, .required = true, .choices = "causal",
                 .doc = "\"causal\": a bool buffer over the last two dims (not an activation)"},
    [MF_VALUE] = {"value", MEMEST_ARG_FLOAT, .optional = true,
                  .doc = "the fill value (-inf in most models; no effect on memory)"},
    [MF_INPLACE] = {"inplace", MEMEST_ARG_BOOL, .idef = 0, .doc = "masked_fill_"},
    [MF_MAX_POSITIONS] = {"max_positions", MEMEST_ARG_INT, .optional = true, .lo = 1,
                          .hi = ARG_MAX,
                          .doc = "P of the [1, 1, P, P] mask buffer (default: the key length)"},
};

static int infer_masked_fill(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    if (s->ndim < 2)
        return memest_fail(c, "a causal mask needs an input with at least 2 dimensions, got %s",
                           IN_STR(c, 0));
    int64_t L = s->size[s->ndim - 2], S = s->size[s->ndim - 1];
    const struct memest_argval *mp = memest_arg(c, MF_MAX_POSITIONS);
    int64_t P = mp->none ? S : mp->v[0];
    if (L > S)
        return memest_fail(c, "a causal mask needs the query length (%lld) to be at most the "
                              "key length (%lld)",
                           (long long)L, (long long)S);
    if (S > P)
        return memest_fail(c, "the key length %lld exceeds max_positions %lld", (long long)S,
                           (long long)P);
    int64_t buf[4] = {1, 1, P, P};
    if (memest_buffer(c, "mask", 4, buf, MEMEST_BOOL) != 0)
        return -1;
    int k = memest_arg_bool(c, MF_INPLACE) ? memest_out_inplace(c, 0)
                                           : memest_out_like(c, s, 0, memest_in_dtype(c, 0));
    return k < 0 ? -1 : 0;
}

/* ---- arange (the other factories: ops_factory.c) ---- */

enum { AR_START, AR_END, AR_STEP, AR_DTYPE };
static const struct memest_argspec arange_args[] = {
    [AR_START] = {"start", MEMEST_ARG_FLOAT, .fdef = 0},
    [AR_END] = {"end", MEMEST_ARG_FLOAT, .required = true},
    [AR_STEP] = {"step", MEMEST_ARG_FLOAT, .fdef = 1},
    [AR_DTYPE] = {"dtype", MEMEST_ARG_STR, .optional = true,
                  .doc = "default: int64 when start, end and step are integers, else float"},
};

static int infer_arange(struct memest_ictx *c)
{
    double start = memest_arg_float(c, AR_START), end = memest_arg_float(c, AR_END),
           step = memest_arg_float(c, AR_STEP);
    if (step == 0)
        return memest_fail(c, "step must be nonzero");
    if ((step > 0 && end < start) || (step < 0 && end > start))
        return memest_fail(c, "upper bound and larger bound inconsistent with step sign");
    double n = ceil((end - start) / step);
    if (!(n <= (double)MEMEST_DIM_MAX))
        return memest_fail(c, "arange would have more than 2^53 elements");
    enum memest_dtype dt;
    const struct memest_argval *ad = memest_arg(c, AR_DTYPE);
    if (!ad->none) {
        if (arg_dtype(c, ad->s, &dt) != 0)
            return -1;
    } else {
        dt = integral(start) && integral(end) && integral(step) ? MEMEST_I64
                                                               : memest_float_dtype(c);
    }
    int64_t size = (int64_t)n;
    if (memest_out_new(c, 1, &size, dt) < 0)
        return -1;
    memest_out_set_requires_grad(c, 0, false);
    return 0;
}

#define EW_OP(nm, lo, hi, argv, fn, text)                                                      \
    {                                                                                           \
        .name = nm, .min_in = lo, .max_in = hi, .args = argv, .nargs = NARGS(argv),            \
        .infer = fn, .doc = text,                                                               \
    }
#define EW_OP0(nm, lo, hi, fn, text)                                                           \
    {                                                                                           \
        .name = nm, .min_in = lo, .max_in = hi, .args = NULL, .nargs = 0, .infer = fn,         \
        .doc = text,                                                                            \
    }

const struct memest_op_desc memest_ops_elementwise[] = {
    EW_OP("add", 1, 2, addsub_args, infer_add, "torch.add: a + alpha * b (broadcasting)"),
    EW_OP("sub", 1, 2, addsub_args, infer_sub, "torch.sub: a - alpha * b (broadcasting)"),
    EW_OP("mul", 1, 2, muldiv_args, infer_mul, "torch.mul: a * b (broadcasting)"),
    EW_OP("div", 1, 2, muldiv_args, infer_div, "torch.div: a / b (broadcasting)"),
    {.name = "matmul", .min_in = 2, .max_in = 2, .infer = infer_matmul,
     .doc = "torch.matmul (broadcasting batch dims)", .amp = MEMEST_AMPP_LOW,
     .lib = MEMEST_LIB_CUBLAS},
    {.name = "bmm", .min_in = 2, .max_in = 2, .infer = infer_bmm,
     .doc = "torch.bmm on (b, n, m) and (b, m, p)", .amp = MEMEST_AMPP_LOW,
     .lib = MEMEST_LIB_CUBLAS},
    EW_OP("mean", 1, 1, reduce_args, infer_mean, "Tensor.mean over dims"),
    EW_OP("sum", 1, 1, reduce_args, infer_sum, "Tensor.sum over dims"),
    EW_OP("masked_fill", 1, 1, masked_fill_args, infer_masked_fill,
          "Tensor.masked_fill with a causal mask over the last two dims"),
    EW_OP("arange", 0, 0, arange_args, infer_arange,
          "torch.arange (no batch dim, no gradient)"),
};
const int memest_ops_elementwise_count = NOPS(memest_ops_elementwise);
