/* ops_moe.c - the sparse mixture-of-experts block of transformers v4.48.0
 * (MixtralSparseMoeBlock.forward in models/mixtral/modeling_mixtral.py,
 * Qwen2MoeSparseMoeBlock.forward in models/qwen2_moe/modeling_qwen2_moe.py),
 * cut into the three ops a model file chains around each expert's MLP:
 *
 *   routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
 *   routing_weights, selected_experts = torch.topk(routing_weights, top_k, -1)
 *   routing_weights /= routing_weights.sum(dim=-1, keepdim=True)  # Mixtral;
 *                                              # Qwen2-MoE if norm_topk_prob
 *   routing_weights = routing_weights.to(hidden_states.dtype)
 *   final_hidden_states = torch.zeros((T, H), dtype=hidden_states.dtype)
 *   expert_mask = one_hot(selected_experts, num_experts).permute(2, 1, 0)
 *                                            ^ moe_router (from the logits)
 *   for expert_idx in range(num_experts):
 *       idx, top_x = torch.where(expert_mask[expert_idx])
 *       current_state = hidden_states[None, top_x].reshape(-1, H)
 *       w = routing_weights[top_x, idx, None]
 *                                            ^ moe_gather
 *       current_hidden_states = expert(current_state) * w
 *                                            ^ the expert's linears, act_mul, mul
 *       final_hidden_states.index_add_(0, top_x, current_hidden_states.to(dtype))
 *                                            ^ moe_index_add
 *
 * What autograd saves (PyTorch 2.6, tools/autograd/derivatives.yaml):
 *   softmax with dtype=float: at::softmax (aten/src/ATen/native/SoftMax.cpp)
 *     calls _softmax(x, dim, half_to_float=true) for a CUDA half input, else
 *     _softmax(x.to(float32)); SoftmaxBackward0 saves `result`, the float32
 *     [T, E] probabilities (the float32 copy of a bfloat16 input is a
 *     temporary, ToCopyBackward0 saving nothing);
 *   topk: TopkBackward0 saves `indices` (value_selecting_reduction_backward),
 *     the int64 [T, k] selected experts;
 *   routing_weights /= s (s = sum(-1, keepdim), SumBackward1 saves sizes only):
 *     div_.Tensor uses div.Tensor's formulas, self's needing `other` (the
 *     float32 [T, 1] sum) and other's needing `self`, which for an in-place
 *     op the generated code saves as `original_self = self.clone()`
 *     (tools/autograd/gen_variable_type.py): a float32 [T, k] clone;
 *   .to(dtype): ToCopyBackward0 saves nothing (no copy for the same dtype);
 *   one_hot, permute, where (nonzero().unbind(1)): integer results, no grad;
 *   hidden_states[None, top_x] and routing_weights[top_x, idx, None]:
 *     index.Tensor, IndexBackward0 saves `indices` (and self's sizes): top_x
 *     and idx, both views of torch.where's one int64 [n_e, 2] result
 *     (at::nonzero_numpy = nonzero().unbind(1)), a storage of 16 * n_e bytes;
 *   expert_out * w: mul saves both operands (the mul op of the model file);
 *   index_add_: self's gradient is grad itself, source's is
 *     grad.index_select(dim, index).expand_as(source) (source.dim() > 0
 *     picks the branch): `index` (top_x again) and `source`, the expert's
 *     weighted output [n_e, H] (or its cast copy, see below), are saved.
 * So per expert the saved int64 storage is torch.where's [n_e, 2]: moe_gather
 * declares it as its output 2, and moe_index_add reads it as an optional
 * third input (the same storage, counted once). Checked in PyTorch 2.6 with
 * saved_tensors_hooks on the block's statements (bfloat16, T 6, E 4, k 2).
 *
 * What the forward allocates: moe_router's outputs (the weights [T, k],
 * the experts [T, k] int64, the one-hot mask [E, k, T] int64, which PyTorch
 * keeps until the block returns: a model file passes it to each moe_gather
 * so that it stays alive), the saved softmax, clone and sum, and as
 * temporaries the float32 copy of bfloat16 logits [T, E] and the float32
 * topk values [T, k] when .to() casts them; moe_gather's [n_e, 2] where
 * result and its two gathered tensors [n_e, H] and [n_e, 1]; moe_index_add
 * adds in place (the source cast to the accumulator's dtype when they
 * differ, as .to(hidden_states.dtype) does under autocast: saved in training,
 * a temporary otherwise).
 *
 * n_e, the tokens routed to expert e, depends on the data; memest assumes
 * the T*k assignments split evenly (the remainder to the lowest experts), or
 * with the run option moe_imbalance F > 1 (--moe-imbalance) expert 0 gets
 * min(T, ceil(F*T*k/E)) and the others share the rest evenly.
 *
 * moe_router with scoring "sigmoid" is DeepSeek-V3's router instead
 * (DeepseekV3TopkRouter.forward, models/deepseek_v3/modeling_deepseek_v3.py
 * at transformers commit 00b676f8f0489b88652a31d70751cc540dd06305), on the
 * float32 logits F.linear(hidden.float(), weight.float()) the model file
 * computes:
 *
 *   scores = router_logits.sigmoid()
 *   topk_indices = get_topk_indices(scores)     # @torch.no_grad: + the
 *       e_score_correction_bias, per group (n_group of E / n_group experts)
 *       the sum of its top 2, the topk_group best groups kept (scatter_ a
 *       mask, expand, reshape, masked_fill the others to 0), topk(top_k)
 *   topk_weights = scores.gather(1, topk_indices)
 *   if norm_topk_prob: topk_weights /= topk_weights.sum(-1, keepdim=True) + 1e-20
 *   topk_weights = topk_weights * routed_scaling_factor
 *   expert_mask = one_hot(topk_indices, E).permute(2, 0, 1)   # in the MoE
 *
 * What autograd saves (PyTorch 2.6 derivatives.yaml): sigmoid: SigmoidBackward0
 * saves `result`, the float32 [T, E] scores; gather: GatherBackward0 saves
 * `self` (the same scores: gather_backward reads self) and `index`, the
 * int64 [T, k] topk_indices (the no_grad selection saves nothing); the sum
 * and the + 1e-20 save no tensor (sizes; a Python scalar); the in-place
 * division saves `other` (the float32 [T, 1] denominator) and the clone of
 * its self, float32 [T, k], as above; * routed_scaling_factor (a Python
 * scalar: MulBackward0's wrapped number, a 0-d CPU tensor, no GPU memory)
 * saves no tensor of the GPU. The weights stay float32 (no .to()); the mask
 * is [E, T, k] there, output 2 keeps the [E, k, T] shape of the softmax
 * path (the same int64 storage, which moe_gather reads). Temporaries of the
 * selection: scores_for_choice [T, E] float32, masked_fill's copy of it and
 * the bool ~score_mask [T, E] (twice: bool(), ~) at once, the group tensors
 * [T, n_group] being smaller. Backward: sigmoid's gradient [T, E] float32
 * and gather's (zeros [T, E], scattered). Checked in PyTorch 2.6 against
 * the replica tests/tools/hf_models_moe.py (tests/hf/tiny/deepseek_v3.json).
 *
 * moe_router with scoring "topk_softmax" is JetMoE's and Granite-MoE's gating
 * instead (JetMoeTopKGating.forward, models/jetmoe/modeling_jetmoe.py, which
 * GraniteMoeTopKGating is in transformers main's modular_granitemoe.py):
 *
 *   logits = self.layer(hidden_states).float()
 *   top_k_logits, top_k_indices = logits.topk(self.top_k, dim=1)
 *   top_k_gates = torch.softmax(top_k_logits, dim=1).type_as(hidden_states)
 *
 * What autograd saves: TopkBackward0 `indices`, the int64 [T, k] experts;
 * SoftmaxBackward0 `result`, the float32 [T, k] gates before the cast (the
 * cast saves nothing). norm_topk_prob does not apply (an error). Forward
 * temporaries: the float32 copy of non-float32 logits [T, E]; backward:
 * topk's float32 [T, E] gradient (zeros, scattered), and the cast to the
 * logits' dtype for non-float32 logits. The tokens sorted by expert that
 * GraniteMoeMoE gathers at once (layer_input[batch_index], the
 * GraniteMoeParallelExperts split and cat, batch_gates) save, in all, what
 * moe_gather, the expert's linears and moe_index_add save per expert: the
 * int64 index_sorted_experts and batch_index [T*k] each (moe_gather's
 * [n_e, 2] where results, 16 bytes per assignment), the gathered inputs
 * [T*k, H], the cat of the gate/up outputs, the activation's and the
 * product's [T*k, I], the output cat [T*k, H] and the gates [T*k], the
 * weighted output [T*k, H] index_add saves.
 *
 * GptOssTopKRouter (models/gpt_oss/modular_gpt_oss.py at transformers
 * 0261a467) runs the same without the .float(): topk of the logits and
 * softmax(dtype=their dtype) over the k (float32 false), saving the
 * indices and the [T, k] result in the logits' dtype.
 *
 * moe_router with scoring "sigmoid_scatter" is Llama 4's router instead
 * (Llama4Router.forward, models/llama4/modeling_llama4.py at transformers
 * 000c33fdfde12e1ffafbfcdb3c926df5727a00b6), on the logits of the router's
 * linear in the hidden dtype:
 *
 *   router_top_value, router_indices = torch.topk(router_logits, top_k, dim=1)
 *   router_scores = torch.full_like(router_logits, float("-inf")).scatter_(
 *       1, router_indices, router_top_value)
 *   router_scores = torch.nn.functional.sigmoid(router_scores.float()).to(router_scores.dtype)
 *
 * Its outputs are the dense scores [T, E] (the logits' dtype: 0 for the
 * experts not chosen, which Llama4TextMoe multiplies into every expert's copy
 * of the tokens) and the experts [T, k] int64; no mask. Saved: TopkBackward0's
 * and the in-place scatter_'s (ScatterBackward1) `index`, the same int64
 * [T, k] indices; SigmoidBackward0's float32 [T, E] result (the output itself
 * for float32 logits; the .float() copy and the .to() cast save nothing).
 * Forward temporaries: the full_like/scatter_ tensor [T, E] and the topk
 * values [T, k] in the logits' dtype, and the float32 copy of non-float32
 * logits [T, E]; backward: sigmoid's float32 gradient [T, E] (and its cast
 * for non-float32 logits) and the gathered gradient of the values [T, k].
 *
 * Not modelled: the small scratch of nonzero and of the sort that
 * index_put_(accumulate=true) runs in the index backward on CUDA. */
#include <math.h>
#include <string.h>

#include "memest/run.h"
#include "ops_common.h"

/* ---- n_e: tokens routed to one expert ---- */

/* The rule above for T tokens, top_k of num_experts, expert e; the run's
 * moe_imbalance F. T*k is checked by the caller (<= 2^63 - 1). */
static int64_t tokens_of_expert(int64_t T, int64_t top_k, int64_t num_experts, int64_t e,
                                double imbalance)
{
    int64_t total = T * top_k;
    int64_t first = 0, others = num_experts;
    if (imbalance > 1) {
        double share = ceil(imbalance * (double)total / (double)num_experts);
        int64_t n0 = share >= (double)T ? T : (int64_t)share;
        if (e == 0)
            return n0;
        total -= n0;
        first = 1;
        others = num_experts - 1;
    }
    int64_t q = total / others, r = total % others;
    return q + (e - first < r ? 1 : 0);
}

/* The arguments of moe_gather and moe_index_add (expert_args below). */
enum { MX_EXPERTS, MX_TOPK, MX_EXPERT, MX_EP };

/* n_e of the expert a moe_gather / moe_index_add node names, from T. */
static int expert_tokens(struct memest_ictx *c, int64_t T, int64_t top_k, int64_t num_experts,
                         int64_t e, int64_t *n_e)
{
    int64_t total, ep = memest_arg_int(c, MX_EP);
    /* expert parallelism: the all-to-all brings this rank's experts the
     * tokens of ep ranks, routed alike */
    if (!mul_i64(T, ep, &T))
        return memest_fail(c, "tokens * ep overflows");
    if (top_k > num_experts)
        return memest_fail(c, "top_k %lld is more than num_experts %lld", (long long)top_k,
                           (long long)num_experts);
    if (e >= num_experts)
        return memest_fail(c, "expert %lld is out of range (num_experts %lld)", (long long)e,
                           (long long)num_experts);
    if (!mul_i64(T, top_k, &total))
        return memest_fail(c, "tokens * top_k overflows");
    *n_e = tokens_of_expert(T, top_k, num_experts, e, memest_run_options(c)->moe_imbalance);
    memest_run_option_used(c, MEMEST_USED_MOE_IMBALANCE);
    return 0;
}

static int need_2d(struct memest_ictx *c, int i, const char *what)
{
    if (memest_in_shape(c, i)->ndim != 2)
        return memest_fail(c, "expects %s as a 2-D tensor, got %s", what, IN_STR(c, i));
    return 0;
}

static int need_int64(struct memest_ictx *c, int i, const char *what)
{
    if (memest_in_dtype(c, i) != MEMEST_I64)
        return memest_fail(c, "expects %s of dtype int64, got %s", what,
                           memest_dtype_name(memest_in_dtype(c, i)));
    return 0;
}

/* ---- moe_router ---- */

enum { RT_TOPK, RT_NORM, RT_SCORING, RT_NGROUP, RT_TOPKGROUP, RT_F32 };
static const struct memest_argspec router_args[] = {
    [RT_TOPK] = {"top_k", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX,
                 .doc = "experts per token (num_experts_per_tok)"},
    [RT_NORM] = {"norm_topk_prob", MEMEST_ARG_BOOL, .idef = 0,
                 .doc = "routing_weights /= routing_weights.sum(-1, keepdim=True)"},
    [RT_SCORING] = {"scoring", MEMEST_ARG_STR, .sdef = "softmax",
                    .choices = "softmax|sigmoid|topk_softmax|sigmoid_scatter",
                    .doc = "softmax in float32 (Mixtral, Qwen2-MoE), sigmoid with group-limited "
                           "selection (DeepSeek-V3, float32 logits), topk of the float32 "
                           "logits and softmax over the k (JetMoE, Granite-MoE), or the sigmoid "
                           "of the top-k logits scattered into -inf (Llama 4: outputs the dense "
                           "scores [T, E] and the experts [T, k])"},
    [RT_NGROUP] = {"n_group", MEMEST_ARG_INT, .idef = 1, .lo = 1, .hi = ARG_MAX,
                   .doc = "sigmoid: expert groups (they must divide the experts)"},
    [RT_TOPKGROUP] = {"topk_group", MEMEST_ARG_INT, .idef = 1, .lo = 1, .hi = ARG_MAX,
                      .doc = "sigmoid: groups kept per token"},
    [RT_F32] = {"float32", MEMEST_ARG_BOOL, .idef = 1,
                .doc = "topk_softmax: on the float32 logits (.float()); false: topk and softmax "
                       "in the logits' dtype (GptOssTopKRouter)"},
};

/* Both scorings: the outputs (weights [T, k] in wdt, experts [T, k] int64,
 * the one-hot mask [E, k, T] int64), and what they save: the float32 [T, E]
 * probabilities (softmax's or sigmoid's result), the int64 experts (topk's
 * or gather's index), with norm_topk_prob the in-place division's clone of
 * its float32 [T, k] self and its float32 [T, 1] divisor. */
static int router_outputs(struct memest_ictx *c, int64_t T, int64_t E, int64_t k,
                          enum memest_dtype wdt)
{
    int64_t tk[2] = {T, k}, mask[3] = {E, k, T}, te[2] = {T, E}, t1[2] = {T, 1};
    if (memest_out_new(c, 2, tk, wdt) < 0 || memest_out_new(c, 2, tk, MEMEST_I64) < 0 ||
        memest_out_new(c, 3, mask, MEMEST_I64) < 0)
        return -1;
    memest_out_set_requires_grad(c, 1, false);
    memest_out_set_requires_grad(c, 2, false);
    if (save_new_if(c, 2, te, MEMEST_F32) != 0 || memest_save_out(c, 1) != 0)
        return -1;
    if (memest_arg_bool(c, RT_NORM) &&
        (save_new_if(c, 2, tk, MEMEST_F32) != 0 || save_new_if(c, 2, t1, MEMEST_F32) != 0))
        return -1;
    return 0;
}

/* scoring "sigmoid" (the comment at the top): the logits are float32, the
 * weights stay float32 unless a hidden-states input gives them its dtype */
static int infer_router_sigmoid(struct memest_ictx *c, int64_t T, int64_t E, int64_t k,
                                enum memest_dtype wdt)
{
    int64_t G = memest_arg_int(c, RT_NGROUP), kg = memest_arg_int(c, RT_TOPKGROUP);
    if (E % G != 0)
        return memest_fail(c, "n_group %lld must divide the %lld experts", (long long)G,
                           (long long)E);
    if (kg > G)
        return memest_fail(c, "topk_group %lld is more than n_group %lld", (long long)kg,
                           (long long)G);
    if (E / G < 2)
        return memest_fail(c, "each of the n_group %lld groups needs 2 experts at least "
                              "(topk(2) of its scores)",
                           (long long)G);
    if (k > kg * (E / G))
        return memest_fail(c, "top_k %lld is more than the %lld experts of topk_group %lld "
                              "groups",
                           (long long)k, (long long)(kg * (E / G)), (long long)kg);
    int64_t te[2] = {T, E};
    /* SigmoidBackward0: result (GatherBackward0's self is the same storage);
     * GatherBackward0: index; the in-place division: the clone of its self
     * and the denominator */
    if (router_outputs(c, T, E, k, wdt) != 0)
        return -1;
    /* the no_grad selection: scores_for_choice and masked_fill's result
     * (float32), bool() and ~ of the mask, [T, E] each */
    memest_workspace(c, memest_sat_add(memest_sat_mul(sat_bytes(2, te, MEMEST_F32), 2),
                                       memest_sat_mul(sat_bytes(2, te, MEMEST_BOOL), 2)));
    /* backward: gather's scattered gradient and sigmoid's, float32 [T, E] */
    memest_bwd_workspace(c, memest_sat_mul(sat_bytes(2, te, MEMEST_F32), 2));
    return 0;
}

/* scoring "topk_softmax" (the comment at the top): topk of the float32
 * logits, softmax over the k, cast to the hidden dtype */
static int infer_router_topk_softmax(struct memest_ictx *c, int64_t T, int64_t E, int64_t k,
                                     enum memest_dtype ldt, enum memest_dtype wdt)
{
    int64_t tk[2] = {T, k}, mask[3] = {E, k, T}, te[2] = {T, E};
    if (memest_arg_bool(c, RT_NORM))
        return memest_fail(c, "norm_topk_prob does not apply to scoring \"topk_softmax\" (the "
                              "softmax over the k selected logits already sums to 1)");
    if (memest_out_new(c, 2, tk, wdt) < 0 || memest_out_new(c, 2, tk, MEMEST_I64) < 0 ||
        memest_out_new(c, 3, mask, MEMEST_I64) < 0)
        return -1;
    memest_out_set_requires_grad(c, 1, false);
    memest_out_set_requires_grad(c, 2, false);
    /* TopkBackward0: indices; SoftmaxBackward0: its float32 [T, k] result
     * (float32 false: in the logits' dtype, which the weights keep) */
    bool f32 = memest_arg_bool(c, RT_F32);
    enum memest_dtype sdt = f32 ? MEMEST_F32 : ldt;
    if (memest_save_out(c, 1) != 0 || save_new_if(c, 2, tk, sdt) != 0)
        return -1;
    if (sdt != ldt)
        memest_workspace(c, sat_bytes(2, te, MEMEST_F32));
    memest_bwd_workspace(c, memest_sat_add(sat_bytes(2, te, sdt),
                                           sdt != ldt ? sat_bytes(2, te, ldt) : 0));
    return 0;
}

/* scoring "sigmoid_scatter" (the comment at the top): Llama 4's dense scores */
static int infer_router_sigmoid_scatter(struct memest_ictx *c, int64_t T, int64_t E, int64_t k,
                                        enum memest_dtype ldt)
{
    int64_t tk[2] = {T, k}, te[2] = {T, E};
    if (memest_arg_bool(c, RT_NORM))
        return memest_fail(c, "norm_topk_prob does not apply to scoring \"sigmoid_scatter\" "
                              "(Llama4Router takes the sigmoid of each top-k logit)");
    if (memest_in_count(c) != 1)
        return memest_fail(c, "scoring \"sigmoid_scatter\" takes the router logits only (the "
                              "scores keep their dtype)");
    if (memest_out_new(c, 2, te, ldt) < 0 || memest_out_new(c, 2, tk, MEMEST_I64) < 0)
        return -1;
    memest_out_set_requires_grad(c, 1, false);
    /* SigmoidBackward0: result; TopkBackward0 and ScatterBackward1: index */
    if ((ldt == MEMEST_F32 ? memest_save_out(c, 0) : save_new_if(c, 2, te, MEMEST_F32)) != 0 ||
        memest_save_out(c, 1) != 0)
        return -1;
    uint64_t te_l = sat_bytes(2, te, ldt), tk_l = sat_bytes(2, tk, ldt);
    uint64_t f32 = ldt == MEMEST_F32 ? 0 : sat_bytes(2, te, MEMEST_F32);
    memest_workspace(c, memest_sat_add(memest_sat_add(te_l, tk_l), f32));
    memest_bwd_workspace(c, memest_sat_add(memest_sat_add(sat_bytes(2, te, MEMEST_F32), tk_l),
                                           ldt == MEMEST_F32 ? 0 : te_l));
    return 0;
}

static int infer_router(struct memest_ictx *c)
{
    if (need_2d(c, 0, "router logits [tokens, experts]") != 0 || need_float(c, 0) != 0)
        return -1;
    const struct memest_shape lg = *memest_in_shape(c, 0);
    int64_t T = lg.size[0], E = lg.size[1], k = memest_arg_int(c, RT_TOPK);
    enum memest_dtype ldt = memest_in_dtype(c, 0), wdt = ldt;
    if (k <= E && strcmp(memest_arg(c, RT_SCORING)->s, "sigmoid_scatter") == 0)
        return infer_router_sigmoid_scatter(c, T, E, k, ldt);
    if (memest_in_count(c) == 2) {
        const struct memest_shape *h = memest_in_shape(c, 1);
        if (h->ndim != 2 || h->size[0] != T)
            return memest_fail(c, "expects the hidden states as [%lld, hidden], got %s",
                               (long long)T, IN_STR(c, 1));
        if (need_float(c, 1) != 0)
            return -1;
        wdt = memest_in_dtype(c, 1); /* .to(hidden_states.dtype) */
        memest_grad_none(c, 1);     /* read for its dtype only */
    }
    if (k > E)
        return memest_fail(c, "top_k %lld is more than the %lld experts", (long long)k,
                           (long long)E);
    int64_t tk[2] = {T, k}, te[2] = {T, E};
    if (!memest_arg_bool(c, RT_F32) && strcmp(memest_arg(c, RT_SCORING)->s, "topk_softmax") != 0)
        return memest_fail(c, "float32 false applies to scoring \"topk_softmax\" only (the "
                              "softmax and sigmoid scorings run in float32)");
    if (strcmp(memest_arg(c, RT_SCORING)->s, "sigmoid") == 0)
        return infer_router_sigmoid(c, T, E, k, wdt);
    if (strcmp(memest_arg(c, RT_SCORING)->s, "topk_softmax") == 0)
        return infer_router_topk_softmax(c, T, E, k, ldt, wdt);
    /* SoftmaxBackward0: result; TopkBackward0: indices; the in-place div_:
     * the clone of its self and the sum */
    if (router_outputs(c, T, E, k, wdt) != 0)
        return -1;
    /* temporaries: the float32 copy of non-half logits for _softmax (a half
     * input is read directly, half_to_float), else the float32 topk values
     * that .to() casts (the smaller, k <= E) */
    if (ldt != MEMEST_F32 && ldt != MEMEST_F16)
        memest_workspace(c, sat_bytes(2, te, MEMEST_F32));
    else if (wdt != MEMEST_F32)
        memest_workspace(c, sat_bytes(2, tk, MEMEST_F32));
    /* backward: topk's gradient is a float32 [T, E] (zeros, scattered),
     * softmax's another for logits that are not float32 or half before
     * ToCopyBackward0 casts it to the logits' gradient */
    memest_bwd_workspace(c, memest_sat_mul(sat_bytes(2, te, MEMEST_F32),
                                           ldt != MEMEST_F32 && ldt != MEMEST_F16 ? 2 : 1));
    return 0;
}

/* ---- moe_gather ---- */

static const struct memest_argspec expert_args[] = {
    [MX_EXPERTS] = {"num_experts", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX},
    [MX_TOPK] = {"top_k", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX},
    [MX_EXPERT] = {"expert", MEMEST_ARG_INT, .required = true, .lo = 0, .hi = ARG_MAX,
                   .doc = "expert index, 0 .. num_experts - 1"},
    [MX_EP] = {"ep", MEMEST_ARG_INT, .idef = 1, .lo = 1, .hi = 1 << 20,
               .doc = "expert-parallel ranks: this rank's experts receive the tokens of ep ranks "
                      "(each of ep ranks routes its tokens over all num_experts)"},
};

static int infer_gather(struct memest_ictx *c)
{
    if (need_2d(c, 0, "the hidden states [tokens, hidden]") != 0 ||
        need_2d(c, 1, "the routing weights [tokens, top_k]") != 0)
        return -1;
    const struct memest_shape h = *memest_in_shape(c, 0), w = *memest_in_shape(c, 1);
    int64_t E = memest_arg_int(c, MX_EXPERTS), k = memest_arg_int(c, MX_TOPK), T = h.size[0];
    if (w.size[0] != T || w.size[1] != k)
        return memest_fail(c, "expects routing weights [%lld, %lld] (tokens, top_k)",
                           (long long)T, (long long)k);
    if (memest_in_count(c) == 3) {
        const struct memest_shape *m = memest_in_shape(c, 2);
        if (need_int64(c, 2, "the expert mask") != 0)
            return -1;
        if (m->ndim != 3 || m->size[0] != E || m->size[1] != k || m->size[2] != T)
            return memest_fail(c, "expects the expert mask [%lld, %lld, %lld]", (long long)E,
                               (long long)k, (long long)T);
        memest_grad_none(c, 2);
    }
    int64_t n;
    if (expert_tokens(c, T, k, E, memest_arg_int(c, MX_EXPERT), &n) != 0)
        return -1;
    int64_t nh[2] = {n, h.size[1]}, n1[2] = {n, 1}, n2[2] = {n, 2};
    if (memest_out_new(c, 2, nh, memest_in_dtype(c, 0)) < 0 ||
        memest_out_new(c, 2, n1, memest_in_dtype(c, 1)) < 0 ||
        memest_out_new(c, 2, n2, MEMEST_I64) < 0)
        return -1;
    memest_out_set_requires_grad(c, 0, memest_in_requires_grad(c, 0));
    memest_out_set_requires_grad(c, 1, memest_in_requires_grad(c, 1));
    memest_out_set_requires_grad(c, 2, false);
    /* IndexBackward0 of either index op: the where result (top_x, idx) */
    return memest_save_out(c, 2);
}

/* ---- moe_index_add ---- */

static int infer_index_add(struct memest_ictx *c)
{
    if (need_2d(c, 0, "the accumulator [tokens, hidden]") != 0 ||
        need_2d(c, 1, "the expert's output [tokens of the expert, hidden]") != 0)
        return -1;
    const struct memest_shape acc = *memest_in_shape(c, 0), src = *memest_in_shape(c, 1);
    int64_t n;
    if (expert_tokens(c, acc.size[0], memest_arg_int(c, MX_TOPK), memest_arg_int(c, MX_EXPERTS),
                      memest_arg_int(c, MX_EXPERT), &n) != 0)
        return -1;
    if (src.size[0] != n || src.size[1] != acc.size[1])
        return memest_fail(c, "expects the expert's output as [%lld, %lld] (its tokens, hidden)",
                           (long long)n, (long long)acc.size[1]);
    enum memest_dtype adt = memest_in_dtype(c, 0), sdt = memest_in_dtype(c, 1);
    if (dtype_category(sdt) > dtype_category(adt))
        return memest_fail(c, "in place: the source type %s can't be cast to the accumulator's "
                              "type %s",
                           memest_dtype_name(sdt), memest_dtype_name(adt));
    int64_t n2[2] = {n, 2};
    bool have_index = memest_in_count(c) == 3;
    if (have_index) {
        const struct memest_shape *ix = memest_in_shape(c, 2);
        if (need_int64(c, 2, "the index") != 0)
            return -1;
        if (ix->ndim != 2 || ix->size[0] != n || ix->size[1] != 2)
            return memest_fail(c, "expects the index as moe_gather's output 2, [%lld, 2]",
                               (long long)n);
        memest_grad_none(c, 2);
    }
    if (memest_out_inplace(c, 0) < 0)
        return -1;
    memest_grad_same(c, 0, 0); /* index_add: self: grad */
    bool save = memest_in_requires_grad(c, 1); /* only source's formula saves */
    if (sdt != adt && !save) /* current_hidden_states.to(hidden_states.dtype) */
        memest_workspace(c, sat_bytes(2, src.size, adt));
    if (!save)
        return 0;
    if (sdt != adt ? save_new_if(c, 2, src.size, adt) != 0 : memest_save_in(c, 1) != 0)
        return -1;
    return have_index ? memest_save_in(c, 2) : save_new_if(c, 2, n2, MEMEST_I64);
}

const struct memest_op_desc memest_ops_moe[] = {
    {
        .name = "moe_router",
        .min_in = 1,
        .max_in = 2,
        .args = router_args,
        .nargs = NARGS(router_args),
        .infer = infer_router,
        .doc = "MoE routing: softmax (float32), topk, optional renormalisation of router "
               "logits [T, E] (input 2, optional: the hidden states, whose dtype the weights "
               "take), DeepSeek-V3's sigmoid with group-limited top-k, or Granite-MoE's softmax "
               "over the top-k logits (scoring); outputs "
               "weights [T, k], experts [T, k] int64, one-hot mask [E, k, T] (Llama 4's "
               "sigmoid_scatter: scores [T, E], experts [T, k])",
    },
    {
        .name = "moe_gather",
        .min_in = 2,
        .max_in = 3,
        .args = expert_args,
        .nargs = NARGS(expert_args),
        .infer = infer_gather,
        .doc = "one expert's tokens: hidden [T, H], weights [T, k] (and the router's mask) to "
               "[n_e, H], their weights [n_e, 1] and the torch.where index [n_e, 2]",
        .moe_expert_tokens = true,
    },
    {
        .name = "moe_index_add",
        .min_in = 2,
        .max_in = 3,
        .args = expert_args,
        .nargs = NARGS(expert_args),
        .infer = infer_index_add,
        .doc = "acc.index_add_(0, top_x, src): an expert's output [n_e, H] into acc [T, H] "
               "in place (input 3: moe_gather's index)",
    },
};
const int memest_ops_moe_count = NOPS(memest_ops_moe);
