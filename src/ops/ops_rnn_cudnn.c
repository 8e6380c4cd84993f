/* ops_rnn_cudnn.c - nn.LSTM / nn.GRU / nn.RNN as PyTorch runs them on CUDA
 * by default (--rnn-kernel cudnn): one _cudnn_rnn per module call
 * (aten/src/ATen/native/cudnn/RNN.cpp: _cudnn_impl -> at::_cudnn_rnn), whose
 * CudnnRnnBackward0 keeps, per tools/autograd/derivatives.yaml's entry
 * `_cudnn_rnn` ("input, hx, cx, weight: _cudnn_rnn_backward_symint(input,
 * weight, weight_stride0, result4, hx, cx, result0, ..., dropout_state,
 * retain_variables ? result3.clone() : result3, grad_input_mask)"):
 *   input                the module's input (x, [T, B, in]);
 *   weight, result4      the parameters and the flat weight buffer they
 *                        are views of: nn.RNNBase puts _flat_weights in one
 *                        buffer at creation and after .cuda()/.to()
 *                        (flatten_parameters), and RNN.cpp's
 *                        try_get_weight_buf hands that buffer on, so no
 *                        bytes besides the parameters. (Weights that are not
 *                        one chunk are compacted into a new buffer at every
 *                        call, with the "RNN module weights are not part of
 *                        single contiguous chunk of memory" warning: not
 *                        modelled.) Under autocast, the low-precision copies
 *                        of the weights the op reads (AutocastRNN.cpp casts
 *                        and re-flattens them into one buffer; counted here
 *                        as one copy per parameter, the same bytes);
 *   hx, cx               the zero initial states the module makes,
 *                        [L*D, B, Hr] and, for LSTM, [L*D, B, H];
 *   result0              the output [T, B, D*Hr];
 *   result3              cuDNN's reserve space (bytes, below).
 * The layers' inner outputs, gates and dropout masks are all inside the
 * reserve space. cuDNN's dropout state (get_dropout_state: one cached
 * buffer per device, when dropout > 0) is not modelled.
 *
 * Sizes (an estimate, not measured on a GPU by memest; cuDNN documents
 * none: cudnnGetRNNTempSpaceSizes returns them from the descriptors):
 *   reserve   = T * B * (D * (L * k * H + (L - 1) * Hr)
 *                        + (dropout > 0 ? (L - 1) * D * Hr : 0)) * dtype bytes
 *     with k the per-step values each layer and direction keeps besides its
 *     output h: LSTM 5 (the 4 gates and c; 6 with proj_size, the cell's h
 *     before W_hr), GRU 6 (the 3 gates and the 3 hidden-side products the
 *     reset gate multiplies), RNN 0 (tanh' and relu' read the output); the
 *     last layer's h is the op's output (y, passed to the backward), so it
 *     is not kept twice; with dropout, the dropped input of each layer but
 *     the first.
 *     Source: the one published pair of cuDNN figures found, by Natalia
 *     Gimelshein in pytorch/pytorch#2895 (cuDNN 6/7, P100, fp32): reserve
 *     736,000,000 B (LSTM) and 864,000,000 B (GRU) for the 4-layer,
 *     320-unit, 123-feature models (read back from its 3,038,090 /
 *     2,279,370 / 761,930 parameter counts with a Linear(320, 10) head).
 *     The formula gives T*B*4*320*23 and T*B*4*320*27: both figures for
 *     T*B = 25,000, the one unknown; the issue does not print T and B, so
 *     this is a fit, not a check. Newer cuDNN releases may lay it out
 *     otherwise.
 *   workspace = L * D * B * (G + 2) * H * dtype bytes: one step's gate
 *     pre-activations and the two states for every layer and direction (a
 *     guess: the 17.7 MB / 13.2 MB workspaces do not fit a formula
 *     without its B); _cudnn_rnn allocates it for the forward and
 *     _cudnn_rnn_backward_input again for the backward, freed at the end
 *     of each.
 * Besides, the forward copies a batch_first input to [T, B, in]
 * (input.transpose(0, 1).contiguous()), and _cudnn_rnn_backward_input
 * makes dx always ("NB: unconditionally compute this gradient, because it
 * mutates reserve": dx = at::empty(input.sizes()), a temporary when the
 * input needs no gradient), dhx and dcx, zeros for the gradients of h_n
 * and c_n (taken as unused, as `out, _ = lstm(x)` leaves them) and, with
 * batch_first, contiguous copies of the transposed input and output
 * gradient: all counted in the backward's workspace.
 * PyTorch sources read: pytorch/pytorch aten/src/ATen/native/cudnn/RNN.cpp
 * (_cudnn_rnn: "if (fn_train)" allocates the reserve, none in eval mode;
 * _cudnn_rnn_backward, _cudnn_rnn_backward_input) and derivatives.yaml's
 * _cudnn_rnn entry, as stored by this session's code index: a 2.x
 * snapshot (c10::optional, USE_CUDNN_RNN_V8_API), not the v2.6.0 tag
 * itself, so no line numbers are cited. */
#include "ops_rnn.h"

uint64_t memest_rnn_cudnn_reserve(const struct rnn *R)
{
    uint64_t k = R->cell == RNN_CELL_LSTM ? (R->P > 0 ? 6 : 5) : R->cell == RNN_CELL_GRU ? 6 : 0;
    uint64_t L = (uint64_t)R->L, H = (uint64_t)R->H, Hr = (uint64_t)R->Hr;
    uint64_t D = (uint64_t)R->D;
    uint64_t per = memest_sat_add(memest_sat_mul(memest_sat_mul(L, k), H),
                                  memest_sat_mul(L - 1, Hr));
    per = memest_sat_mul(D, per);
    if (R->p > 0)
        per = memest_sat_add(per, memest_sat_mul(memest_sat_mul(L - 1, D), Hr));
    uint64_t tb = memest_sat_mul((uint64_t)R->T, (uint64_t)R->B);
    return memest_sat_mul(memest_sat_mul(tb, per), memest_dtype_size(R->dt));
}

uint64_t memest_rnn_cudnn_workspace(const struct rnn *R)
{
    uint64_t G = (uint64_t)(R->GH / R->H);
    uint64_t n = memest_sat_mul(memest_sat_mul((uint64_t)R->L, (uint64_t)R->D), (uint64_t)R->B);
    n = memest_sat_mul(n, memest_sat_mul(G + 2, (uint64_t)R->H));
    return memest_sat_mul(n, memest_dtype_size(R->dt));
}

/* The forward's and the backward's temporaries besides cuDNN's workspace
 * ws (the head of the file). */
static void rnn_cudnn_temporaries(struct memest_ictx *c, const struct rnn *R, uint64_t ws)
{
    uint64_t sz = memest_dtype_size(R->dt);
    uint64_t TB = memest_sat_mul((uint64_t)R->T, (uint64_t)R->B);
    uint64_t x = memest_sat_mul(memest_sat_mul(TB, (uint64_t)R->in), sz);
    uint64_t dy = memest_sat_mul(memest_sat_mul(TB, (uint64_t)R->DHr), sz);
    uint64_t LDB = memest_sat_mul((uint64_t)(R->L * R->D), (uint64_t)R->B);
    uint64_t h = memest_sat_mul(memest_sat_mul(LDB, (uint64_t)R->Hr), sz);
    uint64_t cl = R->cell == RNN_CELL_LSTM ? memest_sat_mul(memest_sat_mul(LDB, (uint64_t)R->H), sz)
                                           : 0;
    memest_workspace(c, memest_sat_add(ws, R->bf ? x : 0));
    /* dhx, dcx and the zero gradients of h_n, c_n */
    uint64_t bw = memest_sat_add(ws, memest_sat_mul(2, memest_sat_add(h, cl)));
    if (!memest_in_requires_grad(c, 0))
        bw = memest_sat_add(bw, x);   /* dx */
    if (R->bf)
        bw = memest_sat_add(bw, memest_sat_add(x, dy));
    memest_bwd_workspace(c, bw);
}

int memest_rnn_cudnn_saves(struct memest_ictx *c, const struct rnn *R)
{
    int64_t LD = R->L * R->D;
    int64_t hx[3] = {LD, R->B, R->Hr}, cx[3] = {LD, R->B, R->H};
    uint64_t reserve = memest_rnn_cudnn_reserve(R), ws = memest_rnn_cudnn_workspace(R);
    if (reserve > (uint64_t)INT64_MAX)
        return memest_fail(c, "cuDNN's reserve space for this RNN overflows 64 bits");
    int rc = 0;
    if (memest_needs_grad(c)) {
        rc = memest_save_in(c, 0);
        rc = rc ? rc : memest_save_new(c, 3, hx, R->dt);
        if (R->cell == RNN_CELL_LSTM)
            rc = rc ? rc : memest_save_new(c, 3, cx, R->dt);
        rc = rc ? rc : memest_save_out(c, 0);
        int64_t rs = (int64_t)reserve;
        if (reserve > 0)
            rc = rc ? rc : memest_save_new(c, 1, &rs, MEMEST_U8);
    }
    rnn_cudnn_temporaries(c, R, ws);
    return rc != 0 ? -1 : 0;
}
