/* ops_linear.c - nn.Linear, nn.Bilinear and a bare nn.Parameter.
 *
 * Linear follows at::linear (1.13 / 2.x): a 2-D input goes to addmm, a
 * contiguous 3-D one is flattened by a view, anything else goes through
 * matmul, which folds the leading dims with reshape (a copy when the input
 * cannot be viewed that way). Autograd saves that [rows, in] operand only
 * when the weight requires grad (addmm/mm save mat1 for grad(mat2)); the
 * weight itself is a parameter, not an activation.
 *
 * A linear layer the quantisation pass gave a weight format (graph.h:
 * wformat, quant.h) is bitsandbytes' Linear8bitLt / Linear4bit, GPTQ's
 * QuantLinear or AWQ's WQLinear_GEMM instead: its weight is stored as
 * quant.c lays it out (a frozen packed parameter with its quantisation
 * state, or buffers), and its forward and backward make the transient
 * dequantised copies and save the tensors quant.c describes. */
#include "memest/fp8.h"
#include "memest/quant.h"
#include "memest/run.h"
#include "ops_common.h"

/* ---- linear ---- */

enum { LIN_IN, LIN_OUT, LIN_BIAS };

static const struct memest_argspec linear_args[] = {
    [LIN_IN] = {"in_features", MEMEST_ARG_INT, .optional = true, .lo = 1, .hi = ARG_MAX,
                .doc = "size of the input's last dimension (inferred; checked when given)"},
    [LIN_OUT] = {"out_features", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX},
    [LIN_BIAS] = {"bias", MEMEST_ARG_BOOL, .idef = 1},
};

/* --fp8: the recipe this linear layer runs (MEMEST_FP8_NONE: nn.Linear's
 * own): every one but the model's output head, of features the recipe's
 * GEMMs take (fp8.h). */
static enum memest_fp8 fp8_recipe(const struct memest_ictx *c, int64_t in, int64_t out)
{
    enum memest_fp8 r = (enum memest_fp8)memest_run_options(c)->fp8;
    if (r == MEMEST_FP8_NONE || !memest_fp8_eligible(r, in, out) ||
        memest_node_is_output_head(c))
        return MEMEST_FP8_NONE;
    return r;
}

/* A float8-trained linear (fp8.c): what it saves instead of nn.Linear's
 * input, its casts, its recipe state and, the first time, the library's
 * device workspace. */
static int linear_fp8(struct memest_ictx *c, enum memest_fp8 r, const struct memest_shape *s,
                      int64_t rows, int64_t in, int64_t out)
{
    int64_t m = memest_fp8_rows_multiple(r);
    if (rows % m != 0)
        return memest_fail(c, "--fp8 %s needs the input's rows (its leading dims, %lld) to be a "
                           "multiple of %lld, as its float8 GEMMs do", memest_fp8_name(r),
                           (long long)rows, (long long)m);
    enum memest_dtype x = memest_in_dtype(c, 0), pd = memest_param_dtype(c);
    struct memest_fp8_shape sh = {(uint64_t)rows, (uint64_t)in, (uint64_t)out,
                                  memest_dtype_size(x), memest_dtype_size(pd),
                                  memest_dtype_size(x), memest_arg_bool(c, LIN_BIAS),
                                  x == MEMEST_BF16};
    struct memest_fp8_linear p;
    memest_fp8_linear(r, &sh, &p);
    int64_t folded[2] = {rows, in};
    if (save_geom_reshaped(c, 0, s, 2, folded, p.saves_input) != 0)
        return -1;
    int64_t xi[1] = {(int64_t)p.saved_input}, xs[1] = {(int64_t)p.saved_input_scale};
    int64_t wi[1] = {(int64_t)p.saved_weight}, ws[1] = {(int64_t)p.saved_weight_scale};
    if ((p.saved_input && memest_save_new(c, 1, xi, MEMEST_U8) < 0) ||
        (p.saved_input_scale && memest_save_new(c, 1, xs, MEMEST_U8) < 0) ||
        (p.saved_weight && memest_save_new(c, 1, wi, MEMEST_U8) < 0) ||
        (p.saved_weight_scale && memest_save_new(c, 1, ws, MEMEST_U8) < 0))
        return -1;
    memest_workspace(c, p.fwd_work);
    memest_bwd_workspace(c, p.bwd_work);
    struct memest_fp8_state st[MEMEST_FP8_MAX_STATE];
    for (int i = 0, k = memest_fp8_state(r, st); i < k; i++)
        if (memest_buffer(c, st[i].name, 2, st[i].size, MEMEST_F32) != 0)
            return -1;
    uint64_t dev = memest_fp8_device_bytes(r);
    if (dev && !memest_run_option_was_used(c, MEMEST_USED_FP8)) {
        int64_t d[1] = {(int64_t)dev};
        if (memest_buffer(c, "fp8_cublas_workspace", 1, d, MEMEST_U8) != 0)
            return -1;
    }
    memest_run_option_used(c, MEMEST_USED_FP8);
    return 0;
}

/* The weight (and bias) of a quantised layer and what its forward and
 * backward allocate (quant.c). */
static int linear_quantized(struct memest_ictx *c, enum memest_wformat f,
                            const struct memest_shape *s, int64_t rows, int64_t in, int64_t out)
{
    const struct memest_quant_params *qp = memest_quant_params(c);
    bool bias = memest_arg_bool(c, LIN_BIAS);
    struct memest_quant_layout l;
    char why[256];
    if (memest_quant_layout(f, qp, out, in, bias, &l, why, sizeof why) != 0)
        return memest_fail(c, "cannot be stored as %s: %s", memest_wformat_name(f), why);
    if (l.buffers) {
        for (int i = 0; i < l.n; i++)
            if (memest_buffer(c, l.t[i].name, l.t[i].ndim, l.t[i].size, l.t[i].dtype) != 0)
                return -1;
    } else {
        /* the weight: one parameter of out x in elements, the layout's
         * bytes; a bias the layout holds (MXFP4's float32 one) is its own
         * parameter of that dtype, else one of the model's */
        int64_t w[2] = {out, in};
        enum memest_dtype dt[MEMEST_QUANT_MAX_TENSORS];
        uint64_t bytes[MEMEST_QUANT_MAX_TENSORS];
        int n = 0, lb = -1;
        for (int i = 0; i < l.n; i++) {
            if (strcmp(l.t[i].name, "bias") == 0) {
                lb = i;
                continue;
            }
            dt[n] = l.t[i].dtype;
            bytes[n++] = memest_quant_tensor_bytes(&l.t[i]);
        }
        if (memest_param_packed(c, "weight", 2, w, n, dt, bytes) != 0)
            return -1;
        if (lb >= 0) {
            uint64_t bb = memest_quant_tensor_bytes(&l.t[lb]);
            if (memest_param_packed(c, "bias", 1, &out, 1, &l.t[lb].dtype, &bb) != 0)
                return -1;
        } else if (bias && memest_param(c, "bias", 1, &out) != 0) {
            return -1;
        }
    }
    int64_t size[MEMEST_MAX_DIMS];
    for (int d = 0; d + 1 < s->ndim; d++)
        size[d] = s->size[d];
    size[s->ndim - 1] = out;
    enum memest_dtype x = memest_in_dtype(c, 0);
    if (memest_out_new(c, s->ndim, size, x) < 0)
        return -1;
    bool rg = memest_in_requires_grad(c, 0);
    struct memest_quant_transient t;
    memest_quant_transient(f, qp, out, in, rows, x, memest_float_dtype(c), rg, &t);
    memest_workspace(c, t.fwd);
    int64_t folded[2] = {rows, in}, wt[2] = {in, out};
    if (save_geom_reshaped(c, 0, s, 2, folded, t.saves_input) != 0 ||
        (t.saved && memest_save_new(c, 2, wt, MEMEST_F16) < 0))
        return -1;
    if (t.no_grad) {   /* AWQ: no graph through the layer */
        memest_grad_none(c, 0);
        memest_out_set_requires_grad(c, 0, false);
        rg = false;
    }
    memest_bwd_workspace(c, t.bwd);
    if (s->ndim >= 3)
        memest_bwd_contiguous(c);
    double fwd = (double)rows * (double)in * (double)out;
    memest_macs(c, fwd);
    memest_macs_bwd(c, rg ? fwd : 0);
    return 0;
}

static int infer_linear(struct memest_ictx *c)
{
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    if (s->ndim < 1)
        return memest_fail(c, "expects an input of shape (*, in_features), got a 0-d tensor");
    if (need_float(c, 0) != 0)
        return -1;
    int64_t in = s->size[s->ndim - 1];
    const struct memest_argval *ain = memest_arg(c, LIN_IN);
    if (!ain->none && ain->v[0] != in)
        return memest_fail(c, "in_features is %lld but the input's last dimension is %lld",
                           (long long)ain->v[0], (long long)in);
    int64_t out = memest_arg_int(c, LIN_OUT);
    int64_t size[MEMEST_MAX_DIMS];
    int64_t rows = 1;
    for (int d = 0; d + 1 < s->ndim; d++) {
        size[d] = s->size[d];
        rows *= s->size[d];   /* bounded: numel of an existing tensor */
    }
    enum memest_wformat f = memest_wformat(c);
    if (f != MEMEST_WF_DENSE)
        return linear_quantized(c, f, s, rows, in, out);
    int64_t w[2] = {out, in};
    if (memest_param(c, "weight", 2, w) != 0)
        return -1;
    if (memest_arg_bool(c, LIN_BIAS) && memest_param(c, "bias", 1, &out) != 0)
        return -1;

    size[s->ndim - 1] = out;
    if (memest_out_new(c, s->ndim, size, memest_in_dtype(c, 0)) < 0)
        return -1;

    bool w_tr = memest_param_trainable(c, "weight");
    int64_t folded[2] = {rows, in};
    enum memest_fp8 r8 = fp8_recipe(c, in, out);
    if (r8 != MEMEST_FP8_NONE) {
        if (linear_fp8(c, r8, s, rows, in, out) != 0)
            return -1;
    } else if (save_geom_reshaped(c, 0, s, 2, folded, w_tr) != 0) {
        return -1;
    } else if (!memest_arg_bool(c, LIN_BIAS)) {
        memest_set_sac_op(c, MEMEST_SAC_MM);   /* at::linear without a bias: matmul's mm */
    }
    /* under autocast the fp16/bf16 weight copy is addmm's mat2, saved for the
     * input's gradient (--fp8 is refused with --amp) */
    if (memest_in_requires_grad(c, 0) && memest_save_param(c, "weight") != 0)
        return -1;
    if (s->ndim >= 3)
        memest_bwd_contiguous(c);   /* the gradient is viewed as [rows, out] */

    double fwd = (double)rows * (double)in * (double)out;
    memest_macs(c, fwd);
    memest_macs_bwd(c, fwd * ((memest_in_requires_grad(c, 0) ? 1 : 0) + (w_tr ? 1 : 0)));
    return 0;
}

/* ---- bilinear ----
 *
 * at::bilinear reshapes both inputs to [rows, in_k] and calls _trilinear,
 * whose backward node (TrilinearBackward0) saves i1, i2 (the weight) and i3
 * whenever it records in 1.13 (--torch 1.13); 2.x saves each only when
 * another one's gradient needs it (derivatives.yaml _trilinear:
 * wrap_opt_if(i1, grad_input_mask[1] || grad_input_mask[2]), ...; measured
 * with PyTorch 2.6: x1 alone requiring grad saves only x2). The
 * intermediate [rows, out, in2] product is a transient. */

enum { BIL_IN1, BIL_IN2, BIL_OUT, BIL_BIAS };

static const struct memest_argspec bilinear_args[] = {
    [BIL_IN1] = {"in1_features", MEMEST_ARG_INT, .optional = true, .lo = 1, .hi = ARG_MAX},
    [BIL_IN2] = {"in2_features", MEMEST_ARG_INT, .optional = true, .lo = 1, .hi = ARG_MAX},
    [BIL_OUT] = {"out_features", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX},
    [BIL_BIAS] = {"bias", MEMEST_ARG_BOOL, .idef = 1},
};

static int infer_bilinear(struct memest_ictx *c)
{
    const struct memest_shape a_in = *memest_in_shape(c, 0), *a = &a_in;
    const struct memest_shape b_in = *memest_in_shape(c, 1), *b = &b_in;
    if (a->ndim < 1 || b->ndim < 1)
        return memest_fail(c, "expects inputs of shape (*, in1_features) and (*, in2_features)");
    if (need_float(c, 0) != 0 || need_float(c, 1) != 0)
        return -1;
    if (a->ndim != b->ndim)
        return memest_fail(c, "input batch dimensions do not match: %s and %s", IN_STR(c, 0),
                           IN_STR(c, 1));
    for (int d = 0; d + 1 < a->ndim; d++)
        if (a->size[d] != b->size[d])
            return memest_fail(c, "input batch dimensions do not match: %s and %s",
                               IN_STR(c, 0), IN_STR(c, 1));
    int64_t in1 = a->size[a->ndim - 1], in2 = b->size[b->ndim - 1];
    const struct memest_argval *g1 = memest_arg(c, BIL_IN1), *g2 = memest_arg(c, BIL_IN2);
    if (!g1->none && g1->v[0] != in1)
        return memest_fail(c, "in1_features is %lld but the first input's last dimension is %lld",
                           (long long)g1->v[0], (long long)in1);
    if (!g2->none && g2->v[0] != in2)
        return memest_fail(c,
                           "in2_features is %lld but the second input's last dimension is %lld",
                           (long long)g2->v[0], (long long)in2);
    int64_t out = memest_arg_int(c, BIL_OUT);
    int64_t w[3] = {out, in1, in2};
    if (memest_param(c, "weight", 3, w) != 0)
        return -1;
    if (memest_arg_bool(c, BIL_BIAS) && memest_param(c, "bias", 1, &out) != 0)
        return -1;

    int64_t size[MEMEST_MAX_DIMS], rows = 1;
    for (int d = 0; d + 1 < a->ndim; d++) {
        size[d] = a->size[d];
        rows *= a->size[d];
    }
    size[a->ndim - 1] = out;
    if (memest_out_new(c, a->ndim, size, memest_in_dtype(c, 0)) < 0)
        return -1;
    int64_t f1[2] = {rows, in1}, f2[2] = {rows, in2};
    bool rg1 = memest_in_requires_grad(c, 0), rg2 = memest_in_requires_grad(c, 1);
    bool w_tr = memest_param_trainable(c, "weight"), all = torch113(c);
    if (save_geom_reshaped(c, 0, a, 2, f1, all || rg2 || w_tr) != 0 ||
        save_geom_reshaped(c, 1, b, 2, f2, all || rg1 || w_tr) != 0)
        return -1;
    int64_t mid[3] = {rows, out, in2};
    memest_workspace(c, sat_bytes(3, mid, memest_in_dtype(c, 0)));

    double fwd = (double)rows * (double)out * (double)in1 * (double)in2;
    memest_macs(c, fwd);
    int nb = (rg1 ? 1 : 0) + (rg2 ? 1 : 0) + (w_tr ? 1 : 0);
    memest_macs_bwd(c, fwd * nb);
    return 0;
}

/* ---- parameter ----
 *
 * A bare nn.Parameter used in forward (a class token, a position table...).
 * Its full name is the node's name, so the parameter's own name is empty. */

enum { PAR_SHAPE };

static const struct memest_argspec parameter_args[] = {
    [PAR_SHAPE] = {"shape", MEMEST_ARG_SHAPE, .required = true,
                   .doc = "the parameter's shape (\"batch\" allowed, -1 not)"},
};

static int infer_parameter(struct memest_ictx *c)
{
    const struct memest_argval *sh = memest_arg(c, PAR_SHAPE);
    int64_t size[MEMEST_MAX_DIMS];
    for (int d = 0; d < sh->n; d++) {
        if (sh->v[d] == MEMEST_SHAPE_BATCH)
            size[d] = memest_batch(c);
        else if (sh->v[d] < 0)
            return memest_fail(c, "a parameter's shape cannot contain -1");
        else
            size[d] = sh->v[d];
    }
    if (memest_param(c, "", sh->n, size) != 0)
        return -1;
    return memest_out_param(c, "") < 0 ? -1 : 0;
}

const struct memest_op_desc memest_ops_linear[] = {
    {
        .name = "linear",
        .min_in = 1,
        .max_in = 1,
        .args = linear_args,
        .nargs = NARGS(linear_args),
        .infer = infer_linear,
        .doc = "nn.Linear: y = x W^T + b over the last dimension",
        .amp = MEMEST_AMPP_LOW,
        .lib = MEMEST_LIB_CUBLAS, /* addmm / matmul */
        .saves_weight_view = true,
        .ce_head = true,
    },
    {
        .name = "bilinear",
        .min_in = 2,
        .max_in = 2,
        .args = bilinear_args,
        .nargs = NARGS(bilinear_args),
        .infer = infer_bilinear,
        .doc = "nn.Bilinear: y = x1^T A x2 + b",
        .lib = MEMEST_LIB_CUBLAS, /* at::_trilinear's bmm */
    },
    {
        .name = "parameter",
        .min_in = 0,
        .max_in = 0,
        .args = parameter_args,
        .nargs = NARGS(parameter_args),
        .infer = infer_parameter,
        .doc = "a bare nn.Parameter (no batch dimension); its output is the parameter itself",
        .module_state = true,
    },
};
const int memest_ops_linear_count = NOPS(memest_ops_linear);
