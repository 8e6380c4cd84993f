/* optim.c - the optimizer table (optim.h): one descriptor per torch.optim
 * class, as torch/optim/<class>.py of PyTorch 2.x computes one step with the
 * default hyper-parameters (no weight decay, no maximize, not capturable),
 * and PyTorch 1.13's where it differs (its foreach programs); and
 * bitsandbytes' 8-bit and paged optimizers (bnb.optim, see bnb_state below).
 *
 * Adding an optimizer takes: its enumerator in optim.h's enum memest_optim
 * (before MEMEST_OPT_COUNT), its descriptor in `table` below (name, the flags
 * the command line accepts, its state function, when the state is created,
 * its step scalars, fused version, foreach programs and for-loop
 * temporaries; for a library's optimizer also the tensors it makes once,
 * whether it pages, its report note and kernel), its row in doc/options.md's
 * --optim list (generated from the option rows), and tests: its
 * expectations in tests/unit/test_optim.c, from its torch/optim source. No
 * other file names an optimizer: the calculators, the simulator, the event
 * bound, the command line's checks, the advice and the reports read this
 * table.
 *
 * State per parameter (torch.optim's `state[p]`), each tensor
 * zeros_like(p) or clone(grad), so as large as the parameter:
 *   SGD: nothing; with momentum: momentum_buffer (cloned from the first
 *     gradient in _single_tensor_sgd / _multi_tensor_sgd).
 *   Adam / AdamW: exp_avg, exp_avg_sq (+ max_exp_avg_sq with amsgrad), step;
 *     created in _init_group.
 *   RMSprop: square_avg (+ momentum_buffer with momentum, + grad_avg when
 *     centered), step; created in _init_group.
 *   Adagrad: sum, step; created in Adagrad.__init__.
 *   Adafactor (torch/optim/_adafactor.py, PyTorch 2.5 on; read at 2.6):
 *     for a gradient of more than one dimension, sizes [..., m, n],
 *     row_var = grad.new_zeros([..., m, 1]) and col_var = [..., 1, n];
 *     else variance = zeros_like(grad); step; created in _init_group, in
 *     the gradient's dtype.
 * "step" is a 0-d float32 tensor, on the host unless capturable or fused.
 *
 * Temporaries of one update (see sim_optimizer.c for how they are laid out):
 *   foreach (_multi_tensor_*: each torch._foreach_* op that is not in place
 *     returns a new tensor per parameter, all alive together):
 *     sgd (with or without momentum): none (_foreach_mul_/_foreach_add_);
 *     adam, adamw: exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs), then
 *       divided, incremented and used in place: one list;
 *     rmsprop: avg = _foreach_sqrt(square_avgs) (centered: _foreach_addcmul):
 *       one list;
 *     adagrad: std = _foreach_sqrt(state_sums) and numerator =
 *       _foreach_mul(grads, minus_clr): two lists;
 *     adafactor (_multi_tensor_adafactor): the parameters grouped by
 *       dtype and by whether they have more than one dimension, each group
 *       in turn; matrices: row_means = [norm(grad, dim=-1, keepdim=True)]
 *       (numel / n each) made and deleted, col_means (numel / m) likewise,
 *       var_estimates = [row_var @ col_var] (the parameter's size) and
 *       row_var_means = [row_var.mean(dim=-2, keepdim=True)] (numel / m n,
 *       deleted); vectors: grads_squared = _foreach_mul(grads, grads) made
 *       and deleted, var_estimates = [v.clone()]; var_estimates (`updates`)
 *       lives until the next group's replaces it, then to the end.
 *   PyTorch 1.13's foreach: Adam/AdamW keep exp_avg_sq_sqrt and denom =
 *     _foreach_add(exp_avg_sq_sqrt, eps) (two lists); Adagrad makes
 *     sqrt(state_sums), std = that + eps (sqrt dropped), then
 *     _foreach_mul(grads, minus_clr) and toAdd = its quotient by std (the
 *     product dropped): +1 +2 -1 +3 +4 -3.
 *   for-loop (_single_tensor_*, Python locals rebound per parameter):
 *     adam, adamw: denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt)
 *       .add_(eps): sqrt() and the quotient (2 temporaries, the first dying
 *       at the division); rmsprop: avg = square_avg.sqrt() (centered:
 *       addcmul(...).sqrt_()): 1; adagrad: std = state_sum.sqrt().add_(eps):
 *       1; sgd: none.
 *   fused (_fused_adam_, _fused_adamw_, _fused_sgd_): none.
 * Muon (torch/optim/_muon.py, PyTorch 2.9 on; read at pytorch/pytorch
 *   commit b5ee4d7, the stored version, whose Muon has no use_addmm
 *   argument, as 2.9.0's; the tag itself not checked here): Muon.__init__
 *   raises ValueError for a parameter whose ndim != 2, and the docstring
 *   says biases and embeddings "should be optimized by a standard method
 *   such as AdamW". memest follows KellerJordan/Muon's README (MuonWithAuxAdam:
 *   hidden matrices to Muon, embeddings, the head and the gains and biases
 *   to Adam): `--optim muon` is torch.optim.Muon over every 2-D parameter
 *   that is neither an embedding table (op .lookup_table) nor the output
 *   head, and torch.optim.AdamW (its state, step scalars and --optim-impl's
 *   temporaries) over the others, Muon.step() first. State: _init_group's
 *   momentum_buffer = zeros_like(p.grad): one copy in the parameter's dtype,
 *   no step. The update (_single_tensor_muon, a Python loop: foreach raises)
 *   per parameter: update = grad.lerp(buf, momentum) (nesterov=True, the
 *   default: a new tensor of the parameter's), then
 *   _zeropower_via_newtonschulz (_muon.py:56-71): ortho_grad =
 *   grad.bfloat16() (the same tensor when it is bf16, else a bf16 copy),
 *   transposed (a view) so that it is [m, n], m <= n; div_ by its norm (two
 *   0-d tensors, left out); ns_steps = 5 times gram_matrix = X @ X.T
 *   ([m, m] bf16), gram_update = addmm(gram_matrix, gram_matrix,
 *   gram_matrix) ([m, m]) and X = addmm(X, gram_update, X) ([m, n]), each
 *   name rebound (the old tensor freed once the new one is made); the
 *   caller's `update` rebound to the result frees the lerp tensor, and the
 *   result stays bound until the next parameter's lerp; param.mul_ and
 *   param.add_ work in place. In the first step Muon's momentum buffers are
 *   made before its update and AdamW's state at the start of AdamW's step
 *   (sim_optimizer.c). Peak of one parameter (from the second
 *   iteration): the lerp tensor + two [m, n] and two [m, m] bf16 tensors.
 *   Under DDP every rank updates every whole parameter, as one GPU does.
 *   Under ZeRO and FSDP memest models Moonlight's Distributed Muon
 *   (muon_gather_prog below: each rank's partition of the momentum, each
 *   matrix gathered whole for Newton-Schulz); tensor, context, pipeline and
 *   expert parallelism and --offload stay refused (step.c). transformers'
 *   Adafactor is refused under ZeRO and FSDP too (whole_params: ZeRO hands
 *   it flat partitions).
 * transformers' Adafactor (transformers.optimization.Adafactor, the
 *   Trainer's optim="adafactor" with scale_parameter=False,
 *   relative_step=False and its lr; read at huggingface/transformers commit
 *   005edac, src/transformers/optimization.py, class Adafactor, the stored
 *   version; the class reads the same in the 4.4x and 4.5x releases): a
 *   Python loop over the parameters, no foreach or fused variant (the
 *   scale_parameter / relative_step options change the learning rate, not
 *   the memory). grad = p.grad, .float() when it is 16-bit; the state,
 *   made in the first step just before the parameter's update: for a
 *   gradient of two dimensions or more (factored) exp_avg_sq_row =
 *   zeros(grad_shape[:-1]).to(grad) and exp_avg_sq_col = zeros([..., n]),
 *   else exp_avg_sq = zeros_like(grad), all float32 (grad's) whatever the
 *   parameter's dtype, and exp_avg with beta1 (None by default: not
 *   modelled); state["RMS"] = self._rms(p_data_fp32), a 0-d float32 device
 *   tensor kept per parameter; state["step"] a Python int. Temporaries:
 *   grad.float() and p_data_fp32 = p.float() (16-bit parameters),
 *   update = (grad**2) + eps (grad**2 freed after the sum), factored:
 *   update.mean(dim=-1) and .mean(dim=-2) (rows, then cols), then
 *   _approx_sq_grad: exp_avg_sq_row.mean(dim=-1, keepdim=True) (one per
 *   leading index), the quotient (rows, rsqrt_ in place), c_factor =
 *   exp_avg_sq_col.unsqueeze(-2).rsqrt() (cols) and torch.mul(r_factor,
 *   c_factor), a full float32 tensor that `update` is rebound to; not
 *   factored: update = exp_avg_sq.rsqrt() (full); then p_data_fp32.add_(-update):
 *   -update a full float32 tensor freed at once. grad, p_data_fp32 and
 *   update stay bound into the next parameter (grad = p.grad and
 *   p_data_fp32 = p free theirs first; update is rebound after its new
 *   value is made). The 0-d norms of _rms are left out.
 * Fused CUDA kernels (versions from PyTorch's release notes, not checked
 * against each release's sources here): torch/optim/adam.py's fused= since 1.13, adamw.py's
 * since 2.0, sgd.py's since 2.3; rmsprop.py has none, adagrad.py's fused
 * (2.5 on) runs on the CPU only. */
#include "memest/optim.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "memest/checked.h"
#include "memest/dtype.h"
#include "memest/graph.h"
#include "memest/ops.h"
#include "memest/run.h"
#include "memest/step.h"

/* ---- state functions: the tensors each keeps per parameter ---- */

static void copies(uint64_t param_bytes, unsigned n, struct memest_optim_state *s)
{
    for (unsigned i = 0; i < n; i++)
        s->bytes[i] = param_bytes;
    s->n = n;
}

static void sgd_state(const struct memest_optim_param *p, const struct memest_optim_cfg *c,
                      struct memest_optim_state *s)
{
    copies(p->bytes, c->momentum != 0 ? 1 : 0, s);   /* momentum_buffer */
}

static void adam_state(const struct memest_optim_param *p, const struct memest_optim_cfg *c,
                       struct memest_optim_state *s)
{
    /* exp_avg, exp_avg_sq, max_exp_avg_sq */
    copies(p->bytes, 2 + (c->amsgrad ? 1 : 0), s);
}

static void rmsprop_state(const struct memest_optim_param *p, const struct memest_optim_cfg *c,
                          struct memest_optim_state *s)
{
    /* square_avg, momentum_buffer, grad_avg */
    copies(p->bytes, 1 + (c->momentum != 0 ? 1 : 0) + (c->centered ? 1 : 0), s);
}

static void adafactor_state(const struct memest_optim_param *p, const struct memest_optim_cfg *c,
                            struct memest_optim_state *s)
{
    (void)c;
    uint64_t elem = p->numel ? p->bytes / p->numel : 0;
    if (p->rows && p->cols) {   /* row_var, col_var */
        s->bytes[0] = memest_sat_mul(p->rows, elem);
        s->bytes[1] = memest_sat_mul(p->cols, elem);
        s->n = 2;
    } else {
        copies(p->bytes, 1, s);   /* variance */
    }
}

/* Muon's hidden matrices: momentum_buffer; the others AdamW's */
static void muon_state(const struct memest_optim_param *p, const struct memest_optim_cfg *c,
                       struct memest_optim_state *s)
{
    (void)c;
    if (p->ndim == 2 && p->rows && p->cols && !p->nonhidden) {
        copies(p->bytes, 1, s);   /* momentum_buffer */
    } else {
        copies(p->bytes, 2, s);   /* AdamW's exp_avg, exp_avg_sq */
        s->aux = true;
    }
}

/* transformers' Adafactor: float32 whatever the parameter's dtype */
static void hf_adafactor_state(const struct memest_optim_param *p, const struct memest_optim_cfg *c,
                               struct memest_optim_state *s)
{
    (void)c;
    if (p->rows && p->cols) {   /* exp_avg_sq_row, exp_avg_sq_col */
        s->bytes[0] = memest_sat_mul(p->rows, 4);
        s->bytes[1] = memest_sat_mul(p->cols, 4);
        s->n = 2;
    } else {
        s->bytes[0] = memest_sat_mul(p->numel, 4);   /* exp_avg_sq */
        s->n = 1;
    }
    s->bytes[s->n++] = 4;   /* RMS, a 0-d float32 tensor */
}

static void adagrad_state(const struct memest_optim_param *p, const struct memest_optim_cfg *c,
                          struct memest_optim_state *s)
{
    (void)c;
    copies(p->bytes, 1, s);   /* sum */
}

/* bitsandbytes' Optimizer2State.init_state (bitsandbytes 0.44.0 to 0.50,
 * bitsandbytes/optim/optimizer.py; read at 0.50.2.dev0, commit 95f9af3):
 *   dtype = uint8 with optim_bits 8, float32 with 32, and float32 whatever
 *     the parameter's dtype when p.numel() < min_8bit_size (4096);
 *   state1, state2 = get_state_buffer(p, dtype): zeros_like(p, dtype), or
 *     with is_paged and p.numel() >= 1e5, F.get_paged (functional.py:
 *     cget_managed_ptr, cudaMallocManaged(..., cudaMemAttachHost)) filled
 *     with zeros: unified memory, outside the caching allocator;
 *   with uint8: absmax1, absmax2 = torch.zeros(blocks, float32) on the
 *     device (never paged), blocks = ceil(numel / 256) (blocksize = 256
 *     since 0.44.0, 2048 before), and qmap1, qmap2: the optimizer's
 *     create_dynamic_map(signed=True / False), 256 float32 each, made on
 *     the host in __init__ and moved to the device (.to(p.device)) by the
 *     first init_state with uint8 state, then shared by every parameter;
 *   state["step"]: a Python int (no tensor).
 * The update (optimizer_update_8bit_blockwise / optimizer_update_32bit)
 * is one kernel over the tensors in place: no temporaries (max_unorm 0,
 * the default, makes no unorm_vec). */
#define BNB_MIN_8BIT_SIZE 4096u
#define BNB_BLOCKSIZE 256u
#define BNB_PAGED_MIN_NUMEL 100000u
#define BNB_QMAP_BYTES (256u * 4u)

static void bnb_state(const struct memest_optim_param *p, unsigned bits, bool paged,
                      struct memest_optim_state *s)
{
    bool q8 = bits == 8 && p->numel >= BNB_MIN_8BIT_SIZE;
    uint64_t each = q8 ? p->numel : memest_sat_mul(p->numel, 4);
    s->bytes[0] = s->bytes[1] = each;   /* state1, state2 */
    s->n = 2;
    if (paged && p->numel >= BNB_PAGED_MIN_NUMEL)
        s->paged = 1u | 2u;
    if (q8) {
        uint64_t blocks = p->numel / BNB_BLOCKSIZE + (p->numel % BNB_BLOCKSIZE != 0);
        s->bytes[2] = s->bytes[3] = blocks * 4;   /* absmax1, absmax2 */
        s->n = 4;
        s->shared = true;                         /* qmap1, qmap2 */
    }
}

/* bitsandbytes' Optimizer1State.init_state (the same commit,
 * bitsandbytes/optim/optimizer.py, class Optimizer1State): one state,
 * state1, float32 with optim_bits 32 or below min_8bit_size, else uint8
 * with absmax1 = zeros(ceil(numel / 256), float32) and qmap1, the signed
 * dynamic map moved to the device once (fill_qmap, the .to(p.device) of
 * name2qmap["dynamic"]): one shared tensor; get_state_buffer pages as for
 * Optimizer2State. bnb.optim.Lion / PagedLion: optim_bits 32; Lion8bit /
 * PagedLion8bit: 8 (bitsandbytes/optim/lion.py). */
static void bnb1_state(const struct memest_optim_param *p, unsigned bits, bool paged,
                       struct memest_optim_state *s)
{
    bool q8 = bits == 8 && p->numel >= BNB_MIN_8BIT_SIZE;
    s->bytes[0] = q8 ? p->numel : memest_sat_mul(p->numel, 4);   /* state1 */
    s->n = 1;
    if (paged && p->numel >= BNB_PAGED_MIN_NUMEL)
        s->paged = 1u;
    if (q8) {
        s->bytes[1] = (p->numel / BNB_BLOCKSIZE + (p->numel % BNB_BLOCKSIZE != 0)) * 4;  /* absmax1 */
        s->n = 2;
        s->shared = true;   /* qmap1 */
    }
}

#define BNB1_FN(fn, bits, pg)                                                                   \
    static void fn(const struct memest_optim_param *p, const struct memest_optim_cfg *c,      \
                   struct memest_optim_state *s)                                             \
    {                                                                                        \
        (void)c;                                                                             \
        bnb1_state(p, bits, pg, s);                                                          \
    }
BNB1_FN(lion32_state, 32, false)
BNB1_FN(lion8_state, 8, false)
BNB1_FN(paged_lion32_state, 32, true)
BNB1_FN(paged_lion8_state, 8, true)

static void bnb8_state(const struct memest_optim_param *p, const struct memest_optim_cfg *c,
                       struct memest_optim_state *s)
{
    (void)c;
    bnb_state(p, 8, false, s);
}

static void paged8_state(const struct memest_optim_param *p, const struct memest_optim_cfg *c,
                         struct memest_optim_state *s)
{
    (void)c;
    bnb_state(p, 8, true, s);
}

static void paged32_state(const struct memest_optim_param *p, const struct memest_optim_cfg *c,
                          struct memest_optim_state *s)
{
    (void)c;
    bnb_state(p, 32, true, s);
}

/* ---- per-parameter programs (optim.h: memest_optim_pprog) ---- */

static void pp_op(struct memest_optim_pprog *o, int slot)
{
    assert(o->n < MEMEST_OPTIM_MAX_PSTEP);
    o->op[o->n++] = (int8_t)slot;
}

/* Newton-Schulz over slot 1's bf16 [m, n] matrix (slots: 2 X, 3
 * gram_matrix, 4 gram_update): each name rebound, the function's locals
 * dropped at its return, then the caller's `update` rebound to the result
 * (slot 2), freeing slot 1. */
#define MUON_NS_STEPS 5   /* DEFAULT_NS_STEPS */
static void muon_ns(struct memest_optim_pprog *o)
{
    for (int i = 0; i < MUON_NS_STEPS; i++) {
        pp_op(o, 3);
        pp_op(o, 4);
        pp_op(o, 2);
    }
    pp_op(o, -3);   /* the function's locals */
    pp_op(o, -4);
    pp_op(o, -1);   /* update = the result */
}

/* Whether p is a hidden matrix (Muon's; the others are AdamW's) */
static bool muon_matrix(const struct memest_optim_param *p)
{
    return p->ndim == 2 && p->rows && p->cols && !p->nonhidden;
}

/* Newton-Schulz's sizes for p [m, n]: X bf16 [m, n] (slot 2), gram_matrix
 * and gram_update bf16 [m, m] (slots 3, 4), m <= n */
static void muon_ns_bytes(const struct memest_optim_param *p, struct memest_optim_pprog *o)
{
    uint64_t k = p->rows < p->cols ? p->rows : p->cols;
    o->bytes[2] = memest_sat_mul(p->numel, 2);
    o->bytes[3] = o->bytes[4] = memest_sat_mul(memest_sat_mul(k, k), 2);
}

/* torch.optim.Muon's update of one hidden matrix [m, n] (slots: 1 the lerp
 * tensor, 2 ortho_grad, 3 gram_matrix, 4 gram_update); nothing for the
 * parameters AdamW updates. */
static void muon_prog(const struct memest_optim_param *p, struct memest_optim_pprog *o)
{
    memset(o, 0, sizeof *o);
    if (!muon_matrix(p))
        return;
    muon_ns_bytes(p, o);
    o->bytes[1] = p->bytes;                           /* grad.lerp(buf, momentum) */
    pp_op(o, 1);
    pp_op(o, -2);   /* the previous parameter's result, rebound */
    if (p->dtype != MEMEST_BF16)
        pp_op(o, 2);   /* grad.bfloat16(): a copy */
    muon_ns(o);
}

/* Distributed Muon (Moonlight, "Muon is Scalable for LLM Training", arXiv
 * 2502.16982, Algorithm 1 "Distributed Muon", read in MoonshotAI/Moonlight
 * @c2ad5b2:Moonlight.pdf, sec. 2.3): ZeRO-1 style, each rank keeps the
 * momentum of its DP partition (lines 3-4: g' = update_with_momentum(g, m)
 * on the local partition); "DP Gather" (lines 5-6) gathers g' into the full
 * matrix, in bf16 ("Muon only requires the Newton-Schulz iteration steps in
 * bf16, thus further reducing the communication overhead to 50%"), Newton-
 * Schulz runs on the full matrix (lines 7-8) and the rank keeps its
 * partition of U (line 9: a view, "discard the rest"). One matrix at a time,
 * on a rank holding part elements of p (memest_optim_part_elems) of elem
 * bytes each among `ranks`:
 * slot 5 the Nesterov update of the partition (torch.optim.Muon's
 * grad.lerp(buf) on it), slot 6 its bf16 copy (none in bf16), slot 1 the
 * gathered bf16 matrix (ranks x part elements, the all-gather's padded
 * output), then Newton-Schulz at full size (the gathered matrix is bf16
 * already: no copy), all freed before the next matrix. */
static void muon_gather_prog(const struct memest_optim_param *p, uint64_t part, uint64_t ranks,
                             uint64_t elem, struct memest_optim_pprog *o)
{
    memset(o, 0, sizeof *o);
    if (!muon_matrix(p))
        return;
    muon_ns_bytes(p, o);
    o->bytes[1] = memest_sat_mul(memest_sat_mul(part, ranks), 2);
    o->bytes[5] = memest_sat_mul(part, elem);
    o->bytes[6] = memest_sat_mul(part, 2);
    pp_op(o, 5);
    if (elem != 2)
        pp_op(o, 6);
    pp_op(o, 1);    /* DP Gather */
    pp_op(o, -6);
    pp_op(o, -5);
    muon_ns(o);
    pp_op(o, -2);   /* the rank's partition of U applied: the matrix goes */
}

/* The multiply-accumulates of Newton-Schulz on one hidden matrix, as
 * _zeropower_via_newtonschulz runs it (pytorch/pytorch@098e03f:
 * torch/optim/_muon.py:60-77, the stored version): X = grad.bfloat16()
 * (:60), transposed when size(0) > size(1) (:61-62), so X is [m, n], m <= n;
 * each of the ns_steps = 5 (DEFAULT_NS_STEPS, :29) iterations multiplies
 *   gram_matrix = X @ X.T                        (:68, :75)  m * m * n
 *   gram_matrix @ gram_matrix (addmm's or c * gram_matrix @ gram_matrix)
 *                                                (:69-71, :76) m * m * m
 *   gram_update @ X (addmm's or a * X + gram_update @ X)
 *                                                (:72, :77)  m * m * n
 * use_addmm (:66) changes the temporaries, not the products. The norm (:64),
 * the lerp and the parameter's update are elementwise: not counted (only
 * multiply-accumulating products count, as in calc_flops.c). 0 for the
 * parameters AdamW updates. */
static uint64_t muon_macs(const struct memest_optim_param *p)
{
    if (!muon_matrix(p))
        return 0;
    uint64_t m = p->rows < p->cols ? p->rows : p->cols;
    uint64_t n = p->rows < p->cols ? p->cols : p->rows;
    uint64_t mm = memest_sat_mul(m, m);
    uint64_t iter = memest_sat_add(memest_sat_mul(memest_sat_mul(mm, n), 2), memest_sat_mul(mm, m));
    return memest_sat_mul(iter, MUON_NS_STEPS);
}

/* transformers' Adafactor.step for one parameter (slots: 1 grad.float(),
 * 2 p_data_fp32, 3 update, 4 grad**2, 5 a row-sized and 6 a column-sized
 * float32 temporary, 7 the mean of exp_avg_sq_row, 8 -update) */
static void hf_adafactor_prog(const struct memest_optim_param *p, struct memest_optim_pprog *o)
{
    memset(o, 0, sizeof *o);
    bool half = p->dtype == MEMEST_F16 || p->dtype == MEMEST_BF16;
    bool factored = p->rows && p->cols;
    uint64_t full = memest_sat_mul(p->numel, 4);
    o->bytes[1] = o->bytes[2] = o->bytes[3] = o->bytes[4] = o->bytes[8] = full;
    o->bytes[5] = memest_sat_mul(p->rows, 4);
    o->bytes[6] = memest_sat_mul(p->cols, 4);
    o->bytes[7] = factored && p->numel / p->cols ? memest_sat_mul(p->rows / (p->numel / p->cols), 4) : 0;
    pp_op(o, -1);   /* grad = p.grad */
    if (half)
        pp_op(o, 1);   /* grad.float() */
    o->state_at = o->n;
    pp_op(o, -2);   /* p_data_fp32 = p */
    if (half)
        pp_op(o, 2);   /* .float() */
    pp_op(o, 4);    /* grad**2 */
    pp_op(o, 3);    /* + eps */
    pp_op(o, -4);
    if (factored) {
        static const int8_t f[] = {5, -5, 6, -6,    /* update.mean(dim=-1), (dim=-2) */
                                   7, 5, -7, 6,     /* r_factor, c_factor */
                                   3, -5, -6};      /* torch.mul(r_factor, c_factor) */
        for (size_t i = 0; i < sizeof f; i++)
            pp_op(o, f[i]);
    } else {
        pp_op(o, 3);   /* exp_avg_sq.rsqrt() */
    }
    pp_op(o, 8);    /* -update */
    pp_op(o, -8);
}

/* ---- the table ---- */

#define PROG(...) {.op = {__VA_ARGS__}, .n = sizeof((int8_t[]){__VA_ARGS__})}
/* Adafactor's matrices: row_means (list 1), col_means (2), var_estimates
 * (3), row_var_means (4); its vectors: grads_squared (1), var_estimates (3) */
#define ADAFACTOR_MATRIX {.op = {1, -1, 2, -2, 3, 4, -4}, .n = 7, \
                          .size = {0, MEMEST_OTS_ROWS, MEMEST_OTS_COLS, MEMEST_OTS_FULL, MEMEST_OTS_CORNER}}
#define ADAFACTOR_VECTOR {.op = {1, -1, 3}, .n = 3}

/* bitsandbytes' (bitsandbytes/optim/adam.py, adamw.py): Adam and AdamW
 * differ in weight decay only, inside the kernel; PagedAdamW and
 * PagedAdamW32bit are the same class (optim_bits=32). No amsgrad (Adam8bit
 * raises for it), no `step` tensor, one kernel whatever --optim-impl says. */
#define BNB(nm, fn, pg, nt)                                                                    \
    {.name = nm, .accepts = 0, .state = fn, .nshared = 2, .shared_bytes = BNB_QMAP_BYTES,      \
     .paged = pg, .note = nt, .kernel = "bitsandbytes", .init = MEMEST_INIT_PER_PARAM, .step_scalar = false,             \
     .fused_since = 0, .forloop_temps = 0}
/* Optimizer1State's: one map (qmap1) */
#define BNB1(nm, fn, pg, nt)                                                                   \
    {.name = nm, .accepts = 0, .state = fn, .nshared = 1, .shared_bytes = BNB_QMAP_BYTES,      \
     .paged = pg, .note = nt, .kernel = "bitsandbytes", .init = MEMEST_INIT_PER_PARAM,         \
     .step_scalar = false, .fused_since = 0, .forloop_temps = 0}
#define LION8_NOTE "bitsandbytes: 1 uint8 copy + float32 absmax per 256 elements; float32 below 4096"
#define LION32_NOTE "bitsandbytes: 1 float32 copy of the trainable parameters"
#define BNB8_NOTE "bitsandbytes: 2 uint8 copies + float32 absmax per 256 elements; float32 below 4096"
#define BNB32_NOTE "bitsandbytes: 2 float32 copies of the trainable parameters"
#define BNB_PAGED_NOTE "; paged from 100000 elements"

static const struct memest_optim_desc table[] = {
    [MEMEST_OPT_SGD] = {
        .name = "sgd", .accepts = MEMEST_OPTF_MOMENTUM | MEMEST_OPTF_FUSED,
        .state = sgd_state, .init = MEMEST_INIT_LAZY_CLONE, .step_scalar = false,
        .fused_since = 203, .forloop_temps = 0,
    },
    [MEMEST_OPT_ADAM] = {
        .name = "adam", .accepts = MEMEST_OPTF_AMSGRAD | MEMEST_OPTF_FUSED,
        .state = adam_state, .init = MEMEST_INIT_FIRST_STEP, .step_scalar = true,
        .fused_since = 113, .foreach = PROG(1), .foreach113 = PROG(1, 2), .forloop_temps = 2,
    },
    [MEMEST_OPT_ADAMW] = {
        .name = "adamw", .accepts = MEMEST_OPTF_AMSGRAD | MEMEST_OPTF_FUSED,
        .state = adam_state, .init = MEMEST_INIT_FIRST_STEP, .step_scalar = true,
        .fused_since = 200, .foreach = PROG(1), .foreach113 = PROG(1, 2), .forloop_temps = 2,
    },
    [MEMEST_OPT_RMSPROP] = {
        .name = "rmsprop", .accepts = MEMEST_OPTF_MOMENTUM | MEMEST_OPTF_CENTERED,
        .state = rmsprop_state, .init = MEMEST_INIT_FIRST_STEP, .step_scalar = true,
        .fused_since = 0, .foreach = PROG(1), .foreach113 = PROG(1), .forloop_temps = 1,
    },
    [MEMEST_OPT_ADAGRAD] = {
        .name = "adagrad", .accepts = 0,
        .state = adagrad_state, .init = MEMEST_INIT_CONSTRUCTOR, .step_scalar = true,
        .fused_since = 0, .foreach = PROG(1, 2), .foreach113 = PROG(1, 2, -1, 3, 4, -3),
        .forloop_temps = 1,
    },
    /* bitsandbytes */
    [MEMEST_OPT_ADAM8BIT] = BNB("adam8bit", bnb8_state, false, BNB8_NOTE),
    [MEMEST_OPT_ADAMW8BIT] = BNB("adamw8bit", bnb8_state, false, BNB8_NOTE),
    [MEMEST_OPT_PAGED_ADAM8BIT] = BNB("paged_adam8bit", paged8_state, true, BNB8_NOTE BNB_PAGED_NOTE),
    [MEMEST_OPT_PAGED_ADAMW8BIT] = BNB("paged_adamw8bit", paged8_state, true, BNB8_NOTE BNB_PAGED_NOTE),
    [MEMEST_OPT_PAGED_ADAMW] = BNB("paged_adamw", paged32_state, true, BNB32_NOTE BNB_PAGED_NOTE),
    [MEMEST_OPT_PAGED_ADAMW32BIT] = BNB("paged_adamw32bit", paged32_state, true, BNB32_NOTE BNB_PAGED_NOTE),
    [MEMEST_OPT_ADAFACTOR] = {
        .name = "adafactor", .accepts = 0,
        .state = adafactor_state, .init = MEMEST_INIT_FIRST_STEP, .step_scalar = true,
        .note = "factored second moments: a row and a column vector per matrix, a copy of "
                "each other parameter",
        .fused_since = 0, .foreach = ADAFACTOR_MATRIX, .foreach113 = ADAFACTOR_MATRIX,
        .by_dim = true, .foreach_vec = ADAFACTOR_VECTOR, .no_forloop = true, .since = 205,
    },
    [MEMEST_OPT_LION] = BNB1("lion", lion32_state, false, LION32_NOTE),
    [MEMEST_OPT_LION8BIT] = BNB1("lion8bit", lion8_state, false, LION8_NOTE),
    [MEMEST_OPT_PAGED_LION] = BNB1("paged_lion", paged_lion32_state, true, LION32_NOTE BNB_PAGED_NOTE),
    [MEMEST_OPT_PAGED_LION8BIT] = BNB1("paged_lion8bit", paged_lion8_state, true,
                                       LION8_NOTE BNB_PAGED_NOTE),
    [MEMEST_OPT_MUON] = {
        .name = "muon", .accepts = 0,
        .state = muon_state, .init = MEMEST_INIT_FIRST_STEP, .step_scalar = false,
        .note = "1 copy (momentum_buffer) of the 2-D hidden matrices; AdamW's 2 copies of "
                "the others (embeddings, the head, 1-D)",
        .pprog = muon_prog, .macs = muon_macs, .with_aux = true, .aux = MEMEST_OPT_ADAMW,
        .gprog = muon_gather_prog,
        .since = 209,
    },
    [MEMEST_OPT_HF_ADAFACTOR] = {
        .name = "hf_adafactor", .accepts = 0,
        .state = hf_adafactor_state, .init = MEMEST_INIT_PER_PARAM, .step_scalar = false,
        .note = "float32 factored second moments: a row and a column vector per matrix, a "
                "float32 copy of each other parameter, a 0-d RMS each",
        .library = "transformers", .pprog = hf_adafactor_prog, .whole_params = true,
    },
};
static_assert(sizeof table / sizeof *table == MEMEST_OPT_COUNT, "one descriptor per optimizer");

const struct memest_optim_alt memest_optim_lean = {
    .key = "sgd_momentum", .cfg = {.kind = MEMEST_OPT_SGD, .momentum = 0.9},
};

int memest_optim_8bit(const struct memest_optim_cfg *cur, struct memest_optim_cfg *out)
{
    static const struct {
        enum memest_optim from, to;
    } map[] = {
        {MEMEST_OPT_ADAM, MEMEST_OPT_ADAM8BIT},
        {MEMEST_OPT_ADAMW, MEMEST_OPT_ADAMW8BIT},
        {MEMEST_OPT_PAGED_ADAMW, MEMEST_OPT_PAGED_ADAMW8BIT},
        {MEMEST_OPT_PAGED_ADAMW32BIT, MEMEST_OPT_PAGED_ADAMW8BIT},
        {MEMEST_OPT_LION, MEMEST_OPT_LION8BIT},
        {MEMEST_OPT_PAGED_LION, MEMEST_OPT_PAGED_LION8BIT},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map && !cur->amsgrad; i++) {
        if (map[i].from == cur->kind) {
            *out = (struct memest_optim_cfg){.kind = map[i].to};
            return 0;
        }
    }
    return -1;
}

/* ---- reading it ---- */

const struct memest_optim_desc *memest_optim_desc(enum memest_optim k) { return &table[k]; }

const char *memest_optim_name(enum memest_optim k) { return table[k].name; }

int memest_optim_parse(const char *s, enum memest_optim *out)
{
    for (int i = 0; i < MEMEST_OPT_COUNT; i++) {
        if (strcmp(s, table[i].name) == 0) {
            *out = (enum memest_optim)i;
            return 0;
        }
    }
    return -1;
}

void memest_optim_shaped_state(const struct memest_optim_cfg *cfg, const struct memest_optim_param *p,
                               struct memest_optim_state *s)
{
    memset(s, 0, sizeof *s);
    table[cfg->kind].state(p, cfg, s);
    assert(s->n <= MEMEST_OPTIM_MAX_STATE);
}

void memest_optim_param_state(const struct memest_optim_cfg *cfg, uint64_t numel, uint64_t bytes,
                              struct memest_optim_state *s)
{
    const struct memest_optim_param p = {.numel = numel, .bytes = bytes};
    memest_optim_shaped_state(cfg, &p, s);
}

struct memest_optim_param memest_optim_param_of(uint64_t numel, uint64_t bytes, int ndim,
                                                const int64_t *size)
{
    struct memest_optim_param p = {.numel = numel, .bytes = bytes,
                                   .ndim = (uint8_t)(ndim > 0 && ndim < 255 ? ndim : 0)};
    if (ndim > 1 && size[ndim - 1] > 0 && size[ndim - 2] > 0) {
        p.rows = numel / (uint64_t)size[ndim - 1];
        p.cols = numel / (uint64_t)size[ndim - 2];
    }
    return p;
}

struct memest_optim_param memest_optim_param_run(const struct memest_run *r, uint32_t i)
{
    const struct memest_param *pp = &r->params[i];
    const struct memest_storage *st = &r->storages[pp->storage];
    struct memest_optim_param p = memest_optim_param_of(pp->numel, st->bytes, pp->shape.ndim,
                                                        pp->shape.size);
    p.dtype = st->dtype;
    if (r->g && pp->node < r->g->nnodes)
        p.nonhidden = r->g->nodes[pp->node].op->lookup_table ||
                      memest_graph_output_head(r->g) == (int64_t)pp->node;
    return p;
}

bool memest_optim_state_steps(const struct memest_optim_cfg *cfg, const struct memest_optim_state *st)
{
    const struct memest_optim_desc *d = &table[cfg->kind];
    return st->aux && d->with_aux ? table[d->aux].step_scalar : d->step_scalar;
}

void memest_optim_param_prog(const struct memest_optim_cfg *cfg, const struct memest_optim_param *p,
                             struct memest_optim_pprog *out)
{
    memset(out, 0, sizeof *out);
    if (table[cfg->kind].pprog)
        table[cfg->kind].pprog(p, out);
}

uint64_t memest_optim_part_elems(const struct memest_optim_param *p, uint64_t ranks, bool by_rows)
{
    uint64_t k = ranks ? ranks : 1;
    if (by_rows && p->ndim == 2 && p->rows && p->cols)   /* ceil(dim0 / k) rows */
        return memest_sat_mul(p->rows / k + (p->rows % k != 0), p->cols);
    return p->numel / k + (p->numel % k != 0);
}

void memest_optim_gather_prog(const struct memest_optim_cfg *cfg, const struct memest_optim_param *p,
                              uint64_t ranks, bool by_rows, uint64_t elem,
                              struct memest_optim_pprog *out)
{
    memset(out, 0, sizeof *out);
    if (table[cfg->kind].gprog)
        table[cfg->kind].gprog(p, memest_optim_part_elems(p, ranks, by_rows), ranks ? ranks : 1,
                               elem, out);
}

void memest_optim_part_state(const struct memest_optim_cfg *cfg, uint64_t numel, uint64_t bytes,
                             uint64_t matrices, struct memest_optim_state *s)
{
    const struct memest_optim_desc *d = &table[cfg->kind];
    if (!d->gprog) {
        memest_optim_param_state(cfg, numel, bytes, s);
        return;
    }
    uint64_t elem = numel ? bytes / numel : 0;
    uint64_t mat = matrices < numel ? matrices : numel, rest = numel - mat;
    struct memest_optim_state a;
    struct memest_optim_cfg ac = {.kind = d->aux};
    memest_optim_param_state(&ac, rest, memest_sat_mul(rest, elem), &a);
    memset(s, 0, sizeof *s);
    s->bytes[s->n++] = memest_sat_mul(mat, elem);   /* the matrices' momentum */
    for (unsigned k = 0; k < a.n && s->n < MEMEST_OPTIM_MAX_STATE; k++)
        s->bytes[s->n++] = a.bytes[k];
}

uint64_t memest_optim_part_matrices(const struct memest_optim_cfg *cfg, const struct memest_run *r,
                                    uint64_t ranks, bool by_rows, const uint32_t *unit_of,
                                    uint32_t u, uint32_t nunits)
{
    uint64_t n = 0;
    if (!table[cfg->kind].gprog)
        return 0;
    for (uint32_t i = 0; i < r->nparams; i++) {
        const struct memest_param *pp = &r->params[i];
        if (pp->tied_to >= 0 || !pp->trainable)
            continue;
        if (unit_of && (unit_of[pp->node] == UINT32_MAX ? nunits : unit_of[pp->node]) != u)
            continue;
        struct memest_optim_param p = memest_optim_param_run(r, i);
        struct memest_optim_pprog o;
        memest_optim_gather_prog(cfg, &p, ranks, by_rows, 4, &o);
        if (o.n)
            n = memest_sat_add(n, memest_optim_part_elems(&p, ranks, by_rows));
    }
    return n;
}

uint64_t memest_optim_param_macs(const struct memest_optim_cfg *cfg, const struct memest_optim_param *p)
{
    return table[cfg->kind].macs ? table[cfg->kind].macs(p) : 0;
}

uint64_t memest_optim_temp_bytes(const struct memest_optim_param *p, enum memest_optim_tsize t)
{
    uint64_t elem = p->numel ? p->bytes / p->numel : 0;
    switch (t) {
    case MEMEST_OTS_ROWS:
        return p->rows ? memest_sat_mul(p->rows, elem) : p->bytes;
    case MEMEST_OTS_COLS:
        return p->cols ? memest_sat_mul(p->cols, elem) : p->bytes;
    case MEMEST_OTS_CORNER:   /* numel / (m n) = rows * cols / numel */
        return p->rows && p->cols ? memest_sat_mul(p->rows / (p->numel / p->cols), elem) : p->bytes;
    case MEMEST_OTS_FULL:
        break;
    }
    return p->bytes;
}

unsigned memest_optim_state_count(const struct memest_optim_cfg *cfg)
{
    struct memest_optim_state s;
    memest_optim_param_state(cfg, 0, 0, &s);
    return s.n;
}

unsigned memest_optim_state_max(const struct memest_optim_cfg *cfg)
{
    /* the state functions make no fewer tensors for a larger parameter:
       ask for an empty one and a very large one (2^40 elements) */
    struct memest_optim_state s0, s1, s2;
    memest_optim_param_state(cfg, 0, 0, &s0);
    memest_optim_param_state(cfg, (uint64_t)1 << 40, (uint64_t)1 << 42, &s1);
    const int64_t mat[2] = {(int64_t)1 << 20, (int64_t)1 << 20};   /* and a matrix */
    struct memest_optim_param m = memest_optim_param_of((uint64_t)1 << 40, (uint64_t)1 << 42, 2, mat);
    memest_optim_shaped_state(cfg, &m, &s2);
    unsigned n = s0.n > s1.n ? s0.n : s1.n;
    return (n > s2.n ? n : s2.n) + table[cfg->kind].nshared;
}

const struct memest_optim_prog *memest_optim_foreach(enum memest_optim k, unsigned torch_version)
{
    return torch_version == 113 ? &table[k].foreach113 : &table[k].foreach;
}

/* The temporaries a program makes: its positive entries. */
static unsigned made(const int8_t *op, unsigned n)
{
    unsigned m = 0;
    for (unsigned i = 0; i < n; i++)
        m += op[i] > 0;
    return m;
}

unsigned memest_optim_temporaries(const struct memest_step_cfg *cfg)
{
    const struct memest_optim_desc *d = &table[cfg->optim.kind];
    unsigned n = 0;
    if (d->pprog) {
        unsigned a = memest_optim_temporaries_of(cfg, true), b = memest_optim_temporaries_of(cfg, false);
        return a > b ? a : b;
    }
    switch (cfg->impl) {
    case MEMEST_IMPL_FOREACH: {
        const struct memest_optim_prog *p = memest_optim_foreach(cfg->optim.kind,
                                                                 cfg->torch_version);
        n = made(p->op, p->n);
        /* a parameter is in one group: the larger program counts */
        unsigned nv = d->by_dim ? made(d->foreach_vec.op, d->foreach_vec.n) : 0;
        n = n > nv ? n : nv;
        break;
    }
    case MEMEST_IMPL_FORLOOP:
        n = d->forloop_temps;
        break;
    case MEMEST_IMPL_FUSED:
    case MEMEST_IMPL_COUNT:
        break;
    }
    return n;
}

/* The temporaries a per-parameter program makes for the largest program
 * of a parameter (matrix or not: an fp32 one, which copies most), and its
 * auxiliary optimizer's under cfg's implementation. */
static unsigned pprog_temporaries(const struct memest_step_cfg *cfg, bool matrix)
{
    const struct memest_optim_desc *d = &table[cfg->optim.kind];
    const int64_t mat[2] = {64, 32};
    struct memest_optim_param p = memest_optim_param_of(matrix ? 2048 : 64, matrix ? 8192 : 256,
                                                        matrix ? 2 : 1, mat);
    unsigned n = memest_optim_param_temporaries(cfg, &p);
    if (d->with_aux) {
        p.nonhidden = true;
        unsigned na = memest_optim_param_temporaries(cfg, &p);
        n = n > na ? n : na;
    }
    return n;
}

unsigned memest_optim_temporaries_of(const struct memest_step_cfg *cfg, bool matrix)
{
    const struct memest_optim_desc *d = &table[cfg->optim.kind];
    if (d->pprog)
        return pprog_temporaries(cfg, matrix);
    if (cfg->impl != MEMEST_IMPL_FOREACH || !d->by_dim)
        return memest_optim_temporaries(cfg);
    const struct memest_optim_prog *p = matrix ? memest_optim_foreach(cfg->optim.kind,
                                                                      cfg->torch_version)
                                               : &d->foreach_vec;
    return made(p->op, p->n);
}

unsigned memest_optim_param_temporaries(const struct memest_step_cfg *cfg,
                                        const struct memest_optim_param *p)
{
    const struct memest_optim_desc *d = &table[cfg->optim.kind];
    bool matrix = p->ndim > 1;
    if (!d->pprog)
        return memest_optim_temporaries_of(cfg, matrix);
    struct memest_optim_pprog o;
    d->pprog(p, &o);
    if (o.n == 0 && d->with_aux) {
        struct memest_step_cfg a = *cfg;
        a.optim = (struct memest_optim_cfg){.kind = d->aux};
        return memest_optim_temporaries_of(&a, matrix);
    }
    unsigned n = made(o.op, o.n);
    if (d->gprog) {   /* the gathering program's, under ZeRO and FSDP (elem 4: all its tensors) */
        d->gprog(p, 1, 2, 4, &o);
        n = made(o.op, o.n) > n ? made(o.op, o.n) : n;
    }
    return n;
}

bool memest_optim_device_steps(const struct memest_step_cfg *cfg)
{
    return cfg->impl == MEMEST_IMPL_FUSED && table[cfg->optim.kind].step_scalar;
}

/* The names of the optimizers accepting flag (0: all), in table order,
 * separated by ", " and before the last by `last`; truncated to buf's n
 * bytes. */
static const char *join(unsigned flag, const char *last, char *buf, size_t n)
{
    int k[MEMEST_OPT_COUNT], nk = 0;
    for (int i = 0; i < MEMEST_OPT_COUNT; i++)
        if (!flag || (table[i].accepts & flag))
            k[nk++] = i;
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < nk && len < n; i++) {
        const char *sep = i == 0 ? "" : i == nk - 1 ? last : ", ";
        int w = snprintf(buf + len, n - len, "%s%s", sep, table[k[i]].name);
        len += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

const char *memest_optim_accepting(unsigned flag, char *buf, size_t n)
{
    return join(flag, " and ", buf, n);
}

const char *memest_optim_names(char *buf, size_t n) { return join(0, ", ", buf, n); }
