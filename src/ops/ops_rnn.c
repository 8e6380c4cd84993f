/* ops_rnn.c - nn.LSTM, nn.GRU and nn.RNN (tanh or relu), multi-layer,
 * optionally bidirectional, with LSTM projections (proj_size). Zero initial
 * states (the module creates them); the input is (T, B, in), (B, T, in)
 * with batch_first, or unbatched (T, in).
 *
 * Two kernels (--rnn-kernel): cuDNN's _cudnn_rnn, the default on CUDA
 * (ops_rnn_cudnn.c: its saved set and reserve space), and, with
 * --rnn-kernel native, PyTorch's native CUDA path (aten/src/ATen/native/RNN.cpp,
 * 1.13 / 2.x, i.e. with cuDNN disabled), which on CUDA runs every layer and
 * direction step by step (the input projection is *not* precomputed for the
 * whole sequence as on the CPU):
 *   LSTM step: igates = x_t W_ih^T, hgates = h W_hh^T (two mm), then
 *     _thnn_fused_lstm_cell(igates, hgates, c, b_ih, b_hh) -> hy, cy and a
 *     [B, 4H] workspace; with proj_size, h = hy W_hr^T.
 *     Saved: x_t (a view of the layer input, so the layer input once) when
 *     W_ih requires grad; h_{t-1} when W_hh does (the zero h0, then each
 *     step's h but the last); the fused cell's input_gates, hidden_gates, cx,
 *     cy and workspace (ThnnFusedLstmCellBackward0 keeps all of them: [B,4H]
 *     x3 and [B,H] per step, cx being c0 or the previous cy); with
 *     proj_size, the cell's hy [B,H] when W_hr requires grad.
 *   GRU step: igates, hgates (mm), _thnn_fused_gru_cell -> hy and a [B, 5H]
 *     workspace. Saved: x_t as above; h_{t-1} always (the fused cell keeps
 *     hx; also the mm's operand); input_gates, hidden_gates [B,3H] and the
 *     workspace per step.
 *   RNN step: tanh/relu(linear(x_t) + linear(h)). Saved: x_t and h0 as
 *     above (addmm's mat1 when the weight requires grad) and each step's
 *     result (TanhBackward0 / ReluBackward0 keep the output, which is the
 *     next step's h).
 *   Between layers: the layer output (stacked steps; for bidirectional, the
 *     cat of both directions) is the next layer's input, through dropout
 *     when dropout > 0 (native_dropout: bool mask saved).
 * The per-step tensors of one kind are declared as one storage of T times
 * the step size (same bytes, all alive from forward to backward).
 * The CPU path (whole-sequence input projection, unfused cell ops; the
 * catalog's figures) is not modelled: the tests whose references ran on
 * the CPU (corrected to CUDA's native path) use --rnn-kernel native.
 * MACs: the gate matmuls (and the projection), 0 for the cell math; the
 * same for both kernels but for cuDNN's backward, which always computes
 * the input's gradient (cudnnRNNBackwardData). */
#include "ops_rnn.h"

enum {
    RNN_INPUT_SIZE,
    RNN_HIDDEN,
    RNN_LAYERS,
    RNN_BIAS,
    RNN_BATCH_FIRST,
    RNN_DROPOUT,
    RNN_BIDIR,
    RNN_EXTRA, /* proj_size (LSTM), nonlinearity (RNN) */
};

#define RNN_MAX_LAYERS 64

#define RNN_COMMON_ARGS                                                                         \
    [RNN_INPUT_SIZE] = {"input_size", MEMEST_ARG_INT, .optional = true, .lo = 1,               \
                        .hi = ARG_MAX, .doc = "features per step (inferred; checked when given)"}, \
    [RNN_HIDDEN] = {"hidden_size", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX},  \
    [RNN_LAYERS] = {"num_layers", MEMEST_ARG_INT, .lo = 1, .hi = RNN_MAX_LAYERS, .idef = 1},   \
    [RNN_BIAS] = {"bias", MEMEST_ARG_BOOL, .idef = 1},                                          \
    [RNN_BATCH_FIRST] = {"batch_first", MEMEST_ARG_BOOL, .idef = 0},                            \
    [RNN_DROPOUT] = {"dropout", MEMEST_ARG_FLOAT, .fdef = 0, .flo = 0, .fhi = 1,               \
                     .doc = "dropout on the outputs of all layers but the last"},              \
    [RNN_BIDIR] = {"bidirectional", MEMEST_ARG_BOOL, .idef = 0}

static const struct memest_argspec lstm_args[] = {
    RNN_COMMON_ARGS,
    [RNN_EXTRA] = {"proj_size", MEMEST_ARG_INT, .lo = 0, .hi = ARG_MAX, .idef = 0},
};
static const struct memest_argspec gru_args[] = {RNN_COMMON_ARGS};
static const struct memest_argspec rnn_args[] = {
    RNN_COMMON_ARGS,
    [RNN_EXTRA] = {"nonlinearity", MEMEST_ARG_STR, .sdef = "tanh", .choices = "tanh|relu"},
};

/* Parameter names, per layer and direction (static: memest_param keeps the
 * pointer). */
enum { PN_W_IH, PN_W_HH, PN_B_IH, PN_B_HH, PN_W_HR };
#define RNN_NAMES(l)                                                                            \
    {{"weight_ih_l" #l, "weight_hh_l" #l, "bias_ih_l" #l, "bias_hh_l" #l, "weight_hr_l" #l},   \
     {"weight_ih_l" #l "_reverse", "weight_hh_l" #l "_reverse", "bias_ih_l" #l "_reverse",     \
      "bias_hh_l" #l "_reverse", "weight_hr_l" #l "_reverse"}}
static const char *const rnn_names[RNN_MAX_LAYERS][2][5] = {
    RNN_NAMES(0), RNN_NAMES(1), RNN_NAMES(2), RNN_NAMES(3), RNN_NAMES(4), RNN_NAMES(5),
    RNN_NAMES(6), RNN_NAMES(7), RNN_NAMES(8), RNN_NAMES(9), RNN_NAMES(10), RNN_NAMES(11),
    RNN_NAMES(12), RNN_NAMES(13), RNN_NAMES(14), RNN_NAMES(15), RNN_NAMES(16), RNN_NAMES(17),
    RNN_NAMES(18), RNN_NAMES(19), RNN_NAMES(20), RNN_NAMES(21), RNN_NAMES(22), RNN_NAMES(23),
    RNN_NAMES(24), RNN_NAMES(25), RNN_NAMES(26), RNN_NAMES(27), RNN_NAMES(28), RNN_NAMES(29),
    RNN_NAMES(30), RNN_NAMES(31), RNN_NAMES(32), RNN_NAMES(33), RNN_NAMES(34), RNN_NAMES(35),
    RNN_NAMES(36), RNN_NAMES(37), RNN_NAMES(38), RNN_NAMES(39), RNN_NAMES(40), RNN_NAMES(41),
    RNN_NAMES(42), RNN_NAMES(43), RNN_NAMES(44), RNN_NAMES(45), RNN_NAMES(46), RNN_NAMES(47),
    RNN_NAMES(48), RNN_NAMES(49), RNN_NAMES(50), RNN_NAMES(51), RNN_NAMES(52), RNN_NAMES(53),
    RNN_NAMES(54), RNN_NAMES(55), RNN_NAMES(56), RNN_NAMES(57), RNN_NAMES(58), RNN_NAMES(59),
    RNN_NAMES(60), RNN_NAMES(61), RNN_NAMES(62), RNN_NAMES(63),
};

/* The parameters, in PyTorch's order (layer, direction; weight_ih,
 * weight_hh, bias_ih, bias_hh, weight_hr). */
static int rnn_params(struct memest_ictx *c, const struct rnn *R)
{
    int64_t GH = R->GH;
    for (int64_t l = 0; l < R->L; l++) {
        int64_t in_l = l == 0 ? R->in : R->DHr;
        for (int d = 0; d < R->D; d++) {
            const char *const *nm = rnn_names[l][d];
            int64_t wih[2] = {GH, in_l}, whh[2] = {GH, R->Hr}, whr[2] = {R->P, R->H};
            if (memest_param(c, nm[PN_W_IH], 2, wih) != 0 ||
                memest_param(c, nm[PN_W_HH], 2, whh) != 0)
                return -1;
            if (R->bias && (memest_param(c, nm[PN_B_IH], 1, &GH) != 0 ||
                            memest_param(c, nm[PN_B_HH], 1, &GH) != 0))
                return -1;
            if (R->P > 0 && memest_param(c, nm[PN_W_HR], 2, whr) != 0)
                return -1;
        }
    }
    return 0;
}

/* The outputs: output, h_n (, c_n), batch first with bf. */
static int rnn_outputs(struct memest_ictx *c, const struct rnn *R, bool batched, bool bf)
{
    int64_t T = R->T, B = R->B, LD = R->L * R->D;
    int64_t o[3], h[3], cn[3];
    if (batched) {
        o[0] = bf ? B : T, o[1] = bf ? T : B, o[2] = R->DHr;
        h[0] = LD, h[1] = B, h[2] = R->Hr;
        cn[0] = LD, cn[1] = B, cn[2] = R->H;
    } else {
        o[0] = T, o[1] = R->DHr;
        h[0] = LD, h[1] = R->Hr;
        cn[0] = LD, cn[1] = R->H;
    }
    int nd = batched ? 3 : 2;
    if (memest_out_new(c, nd, o, R->dt) < 0 || memest_out_new(c, nd, h, R->dt) < 0)
        return -1;
    if (R->cell == RNN_CELL_LSTM && memest_out_new(c, nd, cn, R->dt) < 0)
        return -1;
    return 0;
}

/* What one direction of one layer (its parameters named nm) saves on the
 * native path: the fused cell's gates, workspace and states; w_hh, w_hr:
 * those weights are trainable; inner: autograd records inside; rg_x: the
 * layer's input needs a gradient. */
static int rnn_direction_saves(struct memest_ictx *c, const struct rnn *R,
                               const char *const *nm, bool w_hh, bool w_hr, bool inner,
                               bool rg_x)
{
    int64_t T = R->T, B = R->B, H = R->H;
    enum memest_dtype dt = R->dt;
    int64_t gates[3] = {T, B, R->GH}, hs[3] = {T, B, H}, hprev[3] = {T - 1, B, R->Hr};
    int rc = 0;
    if (R->cell == RNN_CELL_LSTM) {
        rc = save_new_if(c, 3, gates, dt);                 /* input_gates */
        rc = rc ? rc : save_new_if(c, 3, gates, dt);       /* hidden_gates */
        rc = rc ? rc : save_new_if(c, 3, gates, dt);       /* workspace */
        rc = rc ? rc : save_new_if(c, 3, hs, dt);          /* cy */
        if (w_hh && T > 1)
            rc = rc ? rc : save_new_if(c, 3, hprev, dt);   /* h_{t-1} */
        if (w_hr)
            rc = rc ? rc : save_new_if(c, 3, hs, dt);      /* hy before W_hr */
    } else if (R->cell == RNN_CELL_GRU) {
        int64_t ws[3] = {T, B, 5 * H};
        rc = save_new_if(c, 3, gates, dt);                 /* input_gates */
        rc = rc ? rc : save_new_if(c, 3, gates, dt);       /* hidden_gates */
        rc = rc ? rc : save_new_if(c, 3, ws, dt);          /* workspace */
        if (T > 1)
            rc = rc ? rc : save_new_if(c, 3, hprev, dt);   /* h_{t-1} */
    } else {
        rc = save_new_if(c, 3, hs, dt); /* each step's result */
    }
    /* under autocast the cells and products read fp16/bf16 weight
     * copies: W_hh's is saved for h's gradient, W_ih's for the
     * input's */
    if (rc == 0 && inner)
        rc = memest_save_param(c, nm[PN_W_HH]);
    if (rc == 0 && rg_x)
        rc = memest_save_param(c, nm[PN_W_IH]);
    return rc != 0 ? -1 : 0;
}

/* What the native kernels save per layer and direction (T steps, see the
 * head of the file), their forward and backward workspaces. */
static int rnn_native_saves(struct memest_ictx *c, const struct rnn *R)
{
    int64_t T = R->T, B = R->B, L = R->L, LD = L * R->D, DHr = R->DHr;
    enum memest_dtype dt = R->dt;
    bool inner = memest_needs_grad(c), in_rg = memest_in_requires_grad(c, 0);
    bool train = memest_trainable(c);
    bool any_hh = false;
    for (int64_t l = 0; l < L; l++)
        for (int d = 0; d < R->D; d++)
            any_hh = any_hh || memest_param_trainable(c, rnn_names[l][d][PN_W_HH]);
    int64_t z[3] = {LD, B, R->Hr}, zc[3] = {LD, B, R->H};
    if ((R->cell == RNN_CELL_GRU || any_hh) && save_new_if(c, 3, z, dt) != 0)
        return -1; /* h0 */
    if (R->cell == RNN_CELL_LSTM && save_new_if(c, 3, zc, dt) != 0)
        return -1; /* c0 */
    int64_t lay[3] = {T, B, DHr};
    /* Transient: a layer output that is not saved (or precedes dropout), or
     * the two directions' stacked outputs before their cat. */
    uint64_t work = L > 1 || R->D == 2 ? sat_bytes(3, lay, dt) : 0;
    for (int64_t l = 0; l < L; l++) {
        bool ih_any = false;
        for (int d = 0; d < R->D; d++)
            ih_any = ih_any || memest_param_trainable(c, rnn_names[l][d][PN_W_IH]);
        if (l == 0) {
            if (ih_any && memest_save_in(c, 0) != 0)
                return -1;
        } else {
            /* the previous layer's output, through dropout */
            if (dropout_saves(c, 3, lay, dt, R->p, false, false) != 0)
                return -1;
            if (ih_any && save_new_if(c, 3, lay, dt) != 0)
                return -1;
        }
        /* each parameter has the module's flag (none can be tied: only a
         * "weight" can), so no search by name per layer */
        for (int d = 0; d < R->D; d++)
            if (rnn_direction_saves(c, R, rnn_names[l][d], train, R->P > 0 && train, inner,
                                    l == 0 ? in_rg : inner) != 0)
                return -1;
    }
    memest_workspace(c, work);
    /* backward, step by step: the gates' and states' gradients ([B, G*H]
     * three times, [B, H] four), each step's weight gradients before they are
     * added into the parameters' (the largest layer's W_ih and W_hh), and the
     * gradient of a layer's whole input sequence */
    int64_t in_max = R->in > DHr ? R->in : DHr, GH = R->GH;
    uint64_t bw = 0;
    bw = memest_sat_add(bw, memest_sat_mul((uint64_t)GH, (uint64_t)(in_max + R->Hr)));
    bw = memest_sat_add(bw, memest_sat_mul((uint64_t)B, (uint64_t)(3 * GH + 4 * R->H)));
    bw = memest_sat_add(bw, memest_sat_mul(memest_sat_mul((uint64_t)T, (uint64_t)B), (uint64_t)DHr));
    memest_bwd_workspace(c, memest_sat_mul(bw, memest_dtype_size(dt)));
    return 0;
}

/* Under autocast, cuDNN reads low-precision copies of all the weights
 * (ops_rnn_cudnn.c); saved with the op. */
static int rnn_cudnn_weight_copies(struct memest_ictx *c, const struct rnn *R)
{
    for (int64_t l = 0; l < R->L; l++)
        for (int d = 0; d < R->D; d++) {
            const char *const *nm = rnn_names[l][d];
            int n = R->bias ? 4 : 2;
            for (int k = 0; k < n; k++)
                if (memest_save_param(c, nm[k]) != 0)
                    return -1;
            if (R->P > 0 && memest_save_param(c, nm[PN_W_HR]) != 0)
                return -1;
        }
    return 0;
}

/* Forward and backward MACs: the gate products (and the projection) per
 * step; cudnn: cuDNN's backward computes the input's gradient always. */
static void rnn_macs(struct memest_ictx *c, const struct rnn *R, bool cudnn)
{
    bool inner = memest_needs_grad(c), in_rg = memest_in_requires_grad(c, 0);
    bool train = memest_trainable(c), w_hr = R->P > 0 && train;
    double T = (double)R->T, TB = T * (double)R->B, GH = (double)R->GH;
    double fwd = 0, bwd = 0;
    for (int64_t l = 0; l < R->L; l++) {
        double in_l = (double)(l == 0 ? R->in : R->DHr);
        bool rg_in = cudnn ? inner : l == 0 ? in_rg : inner;
        double ih = TB * GH * in_l, hh = TB * GH * (double)R->Hr;
        double hr = R->P > 0 ? TB * (double)R->P * (double)R->H : 0;
        for (int d = 0; d < R->D; d++) {
            fwd += ih + hh + hr;
            bwd += ih * ((train ? 1 : 0) + (rg_in ? 1 : 0));
            bwd += hh * (train ? 1 : 0) + (inner ? hh * (T - 1) / T : 0);
            bwd += hr * ((w_hr ? 1 : 0) + (inner ? 1 : 0));
        }
    }
    memest_macs(c, fwd);
    memest_macs_bwd(c, bwd);
}

static int infer_rnn_any(struct memest_ictx *c, enum rnn_cell cell)
{
    static const char *const cell_name[] = {"LSTM", "GRU", "RNN"};
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    if (s->ndim != 2 && s->ndim != 3)
        return memest_fail(c, "%s expects a 3-D (T, B, input_size) input (B first with "
                              "batch_first) or a 2-D unbatched one, got %s",
                           cell_name[cell], IN_STR(c, 0));
    if (need_float(c, 0) != 0)
        return -1;
    bool batched = s->ndim == 3, bf = memest_arg_bool(c, RNN_BATCH_FIRST);
    int64_t T = batched && bf ? s->size[1] : s->size[0];
    int64_t B = batched ? (bf ? s->size[0] : s->size[1]) : 1;
    int64_t in = s->size[s->ndim - 1];
    const struct memest_argval *ai = memest_arg(c, RNN_INPUT_SIZE);
    if (!ai->none && ai->v[0] != in)
        return memest_fail(c, "input_size is %lld but the input has %lld features",
                           (long long)ai->v[0], (long long)in);
    if (T < 1)
        return memest_fail(c, "expected a sequence length larger than 0");
    int64_t H = memest_arg_int(c, RNN_HIDDEN), L = memest_arg_int(c, RNN_LAYERS);
    int64_t P = cell == RNN_CELL_LSTM ? memest_arg_int(c, RNN_EXTRA) : 0;
    if (P >= H && P > 0)
        return memest_fail(c, "proj_size (%lld) has to be smaller than hidden_size (%lld)",
                           (long long)P, (long long)H);
    int64_t Hr = P > 0 ? P : H;   /* size of h */
    int64_t G = cell == RNN_CELL_LSTM ? 4 : cell == RNN_CELL_GRU ? 3 : 1;
    int D = memest_arg_bool(c, RNN_BIDIR) ? 2 : 1;
    struct rnn R = {.cell = cell, .T = T, .B = B, .in = in, .H = H, .L = L, .P = P, .Hr = Hr,
                    .GH = G * H, .DHr = D * Hr, .D = D, .bias = memest_arg_bool(c, RNN_BIAS), .bf = batched && bf,
                    .p = memest_arg_float(c, RNN_DROPOUT), .dt = memest_in_dtype(c, 0)};
    /* parameters, in PyTorch's order; outputs: output, h_n (, c_n) */
    if (rnn_params(c, &R) != 0 || rnn_outputs(c, &R, batched, bf) != 0)
        return -1;
    bool cudnn = memest_run_options(c)->rnn_kernel == MEMEST_RNN_CUDNN;
    memest_run_option_used(c, MEMEST_USED_RNN);
    if (cudnn) {
        if (memest_rnn_cudnn_saves(c, &R) != 0 ||
            (memest_needs_grad(c) && rnn_cudnn_weight_copies(c, &R) != 0))
            return -1;
    } else if (rnn_native_saves(c, &R) != 0) {
        return -1;
    }
    rnn_macs(c, &R, cudnn);
    return 0;
}

static int infer_lstm(struct memest_ictx *c) { return infer_rnn_any(c, RNN_CELL_LSTM); }
static int infer_gru(struct memest_ictx *c) { return infer_rnn_any(c, RNN_CELL_GRU); }
static int infer_rnn(struct memest_ictx *c) { return infer_rnn_any(c, RNN_CELL_RNN); }

/* cuBLAS: the native path runs the gate products as mm (cuDNN's own GEMMs
 * run inside it: the cuBLAS workspace the library note adds is the native
 * path's). */
const struct memest_op_desc memest_ops_rnn[] = {
    {.name = "lstm", .min_in = 1, .max_in = 1, .args = lstm_args, .nargs = NARGS(lstm_args),
     .infer = infer_lstm, .doc = "nn.LSTM: outputs 0 = output, 1 = h_n, 2 = c_n",
     .amp = MEMEST_AMPP_LOW, .lib = MEMEST_LIB_CUBLAS},
    {.name = "gru", .min_in = 1, .max_in = 1, .args = gru_args, .nargs = NARGS(gru_args),
     .infer = infer_gru, .doc = "nn.GRU: outputs 0 = output, 1 = h_n", .amp = MEMEST_AMPP_LOW,
     .lib = MEMEST_LIB_CUBLAS},
    {.name = "rnn", .min_in = 1, .max_in = 1, .args = rnn_args, .nargs = NARGS(rnn_args),
     .infer = infer_rnn, .doc = "nn.RNN (tanh or relu): outputs 0 = output, 1 = h_n",
     .amp = MEMEST_AMPP_LOW, .lib = MEMEST_LIB_CUBLAS},
};
const int memest_ops_rnn_count = NOPS(memest_ops_rnn);
