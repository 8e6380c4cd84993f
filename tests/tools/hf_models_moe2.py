"""Plain-PyTorch GLM-4.5 (Glm4MoeForCausalLM) following transformers main, op by op (no transformers
import: the torch2 chroot has none). The RMSNorm, rotary embedding, attention functions and causal mask are
hf_models.py's (Llama's code, which Glm4Moe copies); the MoE routing helper is hf_models_moe.py's.

Followed: huggingface/transformers@000c33fdfde12e1ffafbfcdb3c926df5727a00b6
src/transformers/models/glm4_moe/modeling_glm4_moe.py (generated from modular_glm4_moe.py):
  Glm4MoeAttention     q/k/v_proj (bias attention_bias), o_proj (no bias); view(*input_shape, -1, head_dim);
                       q_norm/k_norm per head with use_qk_norm (before the transpose); apply_rotary_pos_emb with
                       a partial rotary dim (cos.shape[-1] = int(head_dim * partial_rotary_factor): q[..., :rd]
                       rotated, cat with q[..., rd:]); eager or sdpa (hf_models.py's functions); reshape; o_proj
  Glm4MoeTopkRouter    weight [n_routed_experts, hidden], e_score_correction_bias float32 buffer; float32 logits
  Glm4MoeNaiveMoe      gate_up_proj [E, 2 I, H], down_proj [E, H, I] parameters (I = moe_intermediate_size, as in
                       the later versions of the file; the commit above reads config.intermediate_size there);
                       the loop over the experts hit: torch.where, hidden_states[token_idx], F.linear, chunk(2),
                       act(gate) * up, F.linear, * top_k_weights[token_idx, top_k_pos, None], index_add_ of
                       .to(final dtype) into zeros_like(hidden_states)
  Glm4MoeMoE           route_tokens_to_experts (sigmoid, + e_score_correction_bias, group-limited top-k, gather,
                       norm_topk_prob, * routed_scaling_factor: NOT under no_grad), experts, + shared_experts
  Glm4MoeDecoderLayer  Glm4MoeMoE from layer first_k_dense_replace on, Glm4MoeMLP(intermediate_size) before
  Glm4MoeModel         the MTP layers (num_nextn_predict_layers) are not built (_keys_to_ignore_on_load_unexpected)
route_tokens_to_experts runs the expert selection with grad enabled: the TopkBackward0 nodes of the group
scores and the MaskedFillBackward0 node save int64 indices and a bool mask, but no tensor that reaches the
output refers to those nodes (topk_indices has no grad_fn; the values are dropped), so they and what they saved
are freed when the function returns. hf_figures.measure counts every tensor packed during the forward; the
replica runs those statements under a pass-through saved_tensors_hooks (unmeasured) so that the figure is what
stays saved for backward, and records the bytes they packed (selection_packed_bytes) for the record.

build(cfg, attn="eager"|"sdpa", balanced=False): balanced=True forces round-robin routing as hf_models_moe.py
does (a constant added to the router logits before the sigmoid; the tiny config's groups are chosen so that the
round-robin picks stay within topk_group groups).
"""
import contextlib

import torch
import torch.nn as nn
import torch.nn.functional as F

import hf_models as base
from hf_models_moe import round_robin_bias

DEFAULTS = dict(vocab_size=151552, hidden_size=4096, intermediate_size=10944, num_hidden_layers=46,
                num_attention_heads=96, partial_rotary_factor=0.5, num_key_value_heads=8, hidden_act="silu",
                rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False, attention_dropout=0.0,
                moe_intermediate_size=1408, num_experts_per_tok=8, n_shared_experts=1, n_routed_experts=128,
                routed_scaling_factor=1.0, n_group=1, topk_group=1, first_k_dense_replace=1, norm_topk_prob=True,
                use_qk_norm=False, head_dim=128)


def g(cfg, key):
    """Glm4MoeConfig's defaults."""
    return cfg[key] if cfg.get(key) is not None else DEFAULTS[key]


SELECTION_PACKED = []  # bytes each unmeasured selection packed (the record, not the figure)
# False measures the selection like the rest: its storages then show as "(unnamed)" in by_grad_fn (no node
# reachable from the output saved them), selection_packed_bytes more in all
SELECTION_UNMEASURED = True


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    q_embed = (q_rot * cos) + (base.rotate_half(q_rot) * sin)
    k_embed = (k_rot * cos) + (base.rotate_half(k_rot) * sin)
    q_embed = torch.cat([q_embed, q_pass], dim=-1)
    k_embed = torch.cat([k_embed, k_pass], dim=-1)
    return q_embed, k_embed


class Glm4MoeAttention(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        H, nh = g(cfg, "hidden_size"), g(cfg, "num_attention_heads")
        nkv = g(cfg, "num_key_value_heads")
        self.attn = attn
        self.head_dim = g(cfg, "head_dim")
        self.num_key_value_groups = nh // nkv
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = g(cfg, "attention_dropout")
        bias = g(cfg, "attention_bias")
        self.q_proj = nn.Linear(H, nh * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(H, nkv * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(H, nkv * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(nh * self.head_dim, H, bias=False)
        self.use_qk_norm = g(cfg, "use_qk_norm")
        if self.use_qk_norm:
            self.q_norm = base.LlamaRMSNorm(self.head_dim, eps=g(cfg, "rms_norm_eps"))
            self.k_norm = base.LlamaRMSNorm(self.head_dim, eps=g(cfg, "rms_norm_eps"))

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape)
        key_states = self.k_proj(hidden_states).view(hidden_shape)
        value_states = self.v_proj(hidden_states).view(hidden_shape)
        if self.use_qk_norm:
            query_states = self.q_norm(query_states)
            key_states = self.k_norm(key_states)
        query_states = query_states.transpose(1, 2)
        key_states = key_states.transpose(1, 2)
        value_states = value_states.transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        fn = base.sdpa_attention_forward if self.attn == "sdpa" else base.eager_attention_forward
        dropout = 0.0 if not self.training else self.attention_dropout
        attn_output, _ = fn(self, query_states, key_states, value_states, attention_mask, self.scaling, dropout)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class Glm4MoeMLP(nn.Module):
    def __init__(self, cfg, intermediate_size=None):
        super().__init__()
        H = g(cfg, "hidden_size")
        inter = g(cfg, "intermediate_size") if intermediate_size is None else intermediate_size
        self.gate_proj = nn.Linear(H, inter, bias=False)
        self.up_proj = nn.Linear(H, inter, bias=False)
        self.down_proj = nn.Linear(inter, H, bias=False)
        self.act_fn = base.ACT[g(cfg, "hidden_act")]

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Glm4MoeTopkRouter(nn.Module):
    def __init__(self, cfg, balanced):
        super().__init__()
        self.hidden_size = g(cfg, "hidden_size")
        self.n_routed_experts = g(cfg, "n_routed_experts")
        self.top_k = g(cfg, "num_experts_per_tok")
        self.balanced = balanced
        self.weight = nn.Parameter(torch.empty((self.n_routed_experts, self.hidden_size)))
        nn.init.normal_(self.weight, std=0.02)
        self.register_buffer("e_score_correction_bias", torch.zeros((self.n_routed_experts), dtype=torch.float32))

    def forward(self, hidden_states):
        hidden_states = hidden_states.view(-1, self.hidden_size)
        router_logits = F.linear(hidden_states.type(torch.float32), self.weight.type(torch.float32))
        if self.balanced:  # not transformers': the forced split (an add of a constant saves nothing)
            router_logits = router_logits + round_robin_bias(router_logits.shape[0], self.n_routed_experts,
                                                             self.top_k, router_logits.dtype, self.balanced)
        return router_logits


class Glm4MoeNaiveMoe(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.num_experts = g(cfg, "n_routed_experts")
        self.hidden_dim = g(cfg, "hidden_size")
        self.intermediate_dim = g(cfg, "moe_intermediate_size")
        self.gate_up_proj = nn.Parameter(torch.empty(self.num_experts, 2 * self.intermediate_dim, self.hidden_dim))
        self.down_proj = nn.Parameter(torch.empty(self.num_experts, self.hidden_dim, self.intermediate_dim))
        nn.init.normal_(self.gate_up_proj, std=0.02)
        nn.init.normal_(self.down_proj, std=0.02)
        self.act_fn = base.ACT[g(cfg, "hidden_act")]

    def forward(self, hidden_states, top_k_index, top_k_weights):
        final_hidden_states = torch.zeros_like(hidden_states)
        with torch.no_grad():
            expert_mask = torch.nn.functional.one_hot(top_k_index, num_classes=self.num_experts)
            expert_mask = expert_mask.permute(2, 1, 0)
            expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        # not in transformers: the tokens each expert got, for the reference's record (integers, no grad)
        self.tokens_per_expert = expert_mask.sum(dim=(1, 2)).tolist()
        for expert_idx in expert_hit:
            expert_idx = expert_idx[0]
            if expert_idx == self.num_experts:
                continue
            top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[token_idx]
            gate, up = nn.functional.linear(current_state, self.gate_up_proj[expert_idx]).chunk(2, dim=-1)
            current_hidden_states = self.act_fn(gate) * up
            current_hidden_states = nn.functional.linear(current_hidden_states, self.down_proj[expert_idx])
            current_hidden_states = current_hidden_states * top_k_weights[token_idx, top_k_pos, None]
            final_hidden_states.index_add_(0, token_idx, current_hidden_states.to(final_hidden_states.dtype))
        return final_hidden_states


class Glm4MoeMoE(nn.Module):
    def __init__(self, cfg, balanced):
        super().__init__()
        self.experts = Glm4MoeNaiveMoe(cfg)
        self.gate = Glm4MoeTopkRouter(cfg, balanced)
        self.shared_experts = Glm4MoeMLP(cfg, g(cfg, "moe_intermediate_size") * g(cfg, "n_shared_experts"))
        self.n_routed_experts = g(cfg, "n_routed_experts")
        self.n_group = g(cfg, "n_group")
        self.topk_group = g(cfg, "topk_group")
        self.norm_topk_prob = g(cfg, "norm_topk_prob")
        self.routed_scaling_factor = g(cfg, "routed_scaling_factor")
        self.top_k = g(cfg, "num_experts_per_tok")

    def route_tokens_to_experts(self, router_logits):
        router_logits = router_logits.sigmoid()
        packed = []

        def pack(t):  # not transformers': the selection's nodes die on return (the module docstring)
            packed.append(t)
            return t

        unmeasured = torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t)
        with unmeasured if SELECTION_UNMEASURED else contextlib.nullcontext():
            router_logits_for_choice = router_logits + self.gate.e_score_correction_bias
            group_scores = (
                router_logits_for_choice.view(-1, self.n_group, self.n_routed_experts // self.n_group)
                .topk(2, dim=-1)[0]
                .sum(dim=-1)
            )
            group_idx = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
            group_mask = torch.zeros_like(group_scores)
            group_mask.scatter_(1, group_idx, 1)
            score_mask = (
                group_mask.unsqueeze(-1)
                .expand(-1, self.n_group, self.n_routed_experts // self.n_group)
                .reshape(-1, self.n_routed_experts)
            )
            scores_for_choice = router_logits_for_choice.masked_fill(~score_mask.bool(), 0.0)
            topk_indices = torch.topk(scores_for_choice, k=self.top_k, dim=-1, sorted=False)[1]
        SELECTION_PACKED.append(sum(t.untyped_storage().nbytes() for t in
                                    {t.untyped_storage().data_ptr(): t for t in packed}.values()))
        topk_weights = router_logits.gather(1, topk_indices)
        if self.norm_topk_prob:
            denominator = topk_weights.sum(dim=-1, keepdim=True) + 1e-20
            topk_weights /= denominator
        topk_weights = topk_weights * self.routed_scaling_factor
        return topk_indices, topk_weights

    def forward(self, hidden_states):
        residuals = hidden_states
        orig_shape = hidden_states.shape
        router_logits = self.gate(hidden_states)
        topk_indices, topk_weights = self.route_tokens_to_experts(router_logits)
        hidden_states = hidden_states.view(-1, hidden_states.shape[-1])
        hidden_states = self.experts(hidden_states, topk_indices, topk_weights).view(*orig_shape)
        hidden_states = hidden_states + self.shared_experts(residuals)
        return hidden_states


class Glm4MoeDecoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx, attn, balanced):
        super().__init__()
        H, eps = g(cfg, "hidden_size"), g(cfg, "rms_norm_eps")
        self.self_attn = Glm4MoeAttention(cfg, attn)
        if layer_idx >= g(cfg, "first_k_dense_replace"):
            self.mlp = Glm4MoeMoE(cfg, balanced)
        else:
            self.mlp = Glm4MoeMLP(cfg)
        self.input_layernorm = base.LlamaRMSNorm(H, eps=eps)
        self.post_attention_layernorm = base.LlamaRMSNorm(H, eps=eps)

    def forward(self, hidden_states, attention_mask, position_embeddings):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


class Glm4MoeModel(nn.Module):
    def __init__(self, cfg, attn, balanced):
        super().__init__()
        H = g(cfg, "hidden_size")
        self.cfg, self.attn = cfg, attn
        self.embed_tokens = nn.Embedding(g(cfg, "vocab_size"), H, cfg.get("pad_token_id"))
        self.layers = nn.ModuleList(Glm4MoeDecoderLayer(cfg, i, attn, balanced)
                                    for i in range(g(cfg, "num_hidden_layers")))
        self.norm = base.LlamaRMSNorm(H, eps=g(cfg, "rms_norm_eps"))
        # Glm4MoeRotaryEmbedding: dim = int(head_dim * partial_rotary_factor)
        self.rotary_emb = base.RotaryEmbedding(cfg, int(g(cfg, "head_dim") * g(cfg, "partial_rotary_factor")))

    def forward(self, input_ids):
        inputs_embeds = self.embed_tokens(input_ids)
        B, S = input_ids.shape
        position_ids = torch.arange(0, S).unsqueeze(0)
        mask = base.causal_mask(self.cfg, base.ARCH["llama"], self.attn, B, S, inputs_embeds.dtype, self.training)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states, mask, position_embeddings)
        return self.norm(hidden_states)


class Glm4MoeForCausalLM(base.CausalLM):
    def __init__(self, cfg, attn="eager", balanced=False):
        super().__init__(cfg, "model", Glm4MoeModel(cfg, attn, balanced), "embed_tokens", False,
                         g(cfg, "tie_word_embeddings"), g(cfg, "hidden_size"), g(cfg, "vocab_size"), True)


BUILDERS = {"glm4_moe": lambda cfg, attn="eager", balanced=False: Glm4MoeForCausalLM(cfg, attn, balanced)}


# ---- Granite-MoE: huggingface/transformers@023633dd63876e9f65e733a9f547952052b63d6a
# src/transformers/models/granitemoe/modular_granitemoe.py (GraniteMoeMoE; GraniteMoeParallelExperts and
# GraniteMoeTopKGating are models/jetmoe/modeling_jetmoe.py's JetMoeParallelExperts and JetMoeTopKGating);
# the rest is Granite's (hf_models.py "granite": the muP scalars, GraniteAttention with attention_multiplier,
# GraniteDecoderLayer's residual_multiplier; MixtralDecoderLayer's module is named block_sparse_moe, here the
# MoE takes the dense MLP's attribute name mlp, which changes no tensor). The saved bytes do not depend on the
# routing (every tensor is [T * k, ...] in all); balanced=True forces the round-robin split all the same.

class GraniteMoeParallelExperts(nn.Module):
    def __init__(self, num_experts, input_size, output_size):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_experts, output_size, input_size))
        nn.init.normal_(self.weight, std=0.02)
        self.num_experts = num_experts

    def forward(self, inputs, expert_size):
        input_list = inputs.split(expert_size, dim=0)
        output_list = []
        for i in range(self.num_experts):
            output_list.append(F.linear(input_list[i], self.weight[i]))
        return torch.cat(output_list, dim=0)


class GraniteMoeTopKGating(nn.Module):
    def __init__(self, input_size, num_experts, top_k, balanced):
        super().__init__()
        self.num_experts = num_experts
        self.top_k = top_k
        self.balanced = balanced
        self.layer = nn.Linear(input_size, num_experts, bias=False)

    def forward(self, hidden_states):
        logits = self.layer(hidden_states).float()
        if self.balanced:  # not transformers': the forced split (an add of a constant saves nothing)
            logits = logits + round_robin_bias(logits.shape[0], self.num_experts, self.top_k, logits.dtype,
                                               self.balanced)
        top_k_logits, top_k_indices = logits.topk(self.top_k, dim=1)
        top_k_gates = torch.softmax(top_k_logits, dim=1).type_as(hidden_states)
        zeros = torch.zeros([top_k_gates.size(0), self.num_experts], dtype=top_k_gates.dtype,
                            device=top_k_gates.device)
        gates = zeros.scatter(1, top_k_indices, 1)
        expert_size = gates.long().sum(0)
        expert_size = expert_size.tolist()
        top_k_experts = top_k_indices.flatten()
        _, index_sorted_experts = top_k_experts.sort(0)
        batch_index = index_sorted_experts.div(self.top_k, rounding_mode="trunc")
        top_k_gates = top_k_gates.flatten()
        batch_gates = top_k_gates[index_sorted_experts]
        return index_sorted_experts, batch_index, batch_gates, expert_size, logits


class GraniteMoeMoE(nn.Module):
    def __init__(self, cfg, balanced):
        super().__init__()
        self.input_size = cfg["hidden_size"]
        self.hidden_size = cfg["intermediate_size"]
        self.activation = base.ACT[cfg.get("hidden_act", "silu")]
        E = cfg.get("num_local_experts", 8)
        self.input_linear = GraniteMoeParallelExperts(E, self.input_size, self.hidden_size * 2)
        self.output_linear = GraniteMoeParallelExperts(E, self.hidden_size, self.input_size)
        self.router = GraniteMoeTopKGating(self.input_size, E, cfg.get("num_experts_per_tok", 2), balanced)

    def forward(self, layer_input):
        bsz, length, emb_size = layer_input.size()
        layer_input = layer_input.reshape(-1, emb_size)
        _, batch_index, batch_gates, expert_size, _ = self.router(layer_input)
        self.tokens_per_expert = list(expert_size)  # not transformers': the record
        expert_inputs = layer_input[batch_index]
        hidden_states = self.input_linear(expert_inputs, expert_size)
        chunked_hidden_states = hidden_states.chunk(2, dim=-1)
        hidden_states = self.activation(chunked_hidden_states[0]) * chunked_hidden_states[1]
        expert_outputs = self.output_linear(hidden_states, expert_size)
        expert_outputs = expert_outputs * batch_gates[:, None]
        zeros = torch.zeros((bsz * length, self.input_size), dtype=expert_outputs.dtype, device=expert_outputs.device)
        layer_output = zeros.index_add(0, batch_index, expert_outputs)
        return layer_output.view(bsz, length, self.input_size)


def build_granitemoe(cfg, attn="eager", balanced=False):
    """GraniteMoeForCausalLM: Granite's model (hf_models.py) with GraniteMoeMoE in every layer."""
    gcfg = dict(cfg, model_type="granite")
    model = base.ForCausalLM(gcfg, attn)
    for layer in model.model.layers:
        layer.mlp = GraniteMoeMoE(cfg, balanced)
    return model


BUILDERS["granitemoe"] = build_granitemoe
