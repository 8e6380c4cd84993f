"""Plain-PyTorch sparse mixture-of-experts decoder LMs following transformers v4.48.0, op by op (no
transformers import: Debian 13, where the torch2 chroot comes from, has no python3-transformers).
The attention, RMSNorm, rotary embedding, masks, embedding, final norm and head are hf_models.py's
(Llama's code, which Mixtral and Qwen2-MoE copy); this file adds the MoE blocks.

Followed, at tag v4.48.0 (src/transformers/...):
  models/mixtral/modeling_mixtral.py      MixtralBlockSparseTop2MLP (w1, w2, w3: w2(act(w1(x)) * w3(x))),
                                          MixtralSparseMoeBlock (gate; softmax in float32, topk, renormalised,
                                          .to(hidden dtype); one_hot(...).permute(2, 1, 0); for every expert:
                                          torch.where, hidden_states[None, top_x], expert(x) *
                                          routing_weights[top_x, idx, None], index_add_), MixtralDecoderLayer
                                          (block_sparse_moe), Mistral's attention
  models/qwen2_moe/modeling_qwen2_moe.py  Qwen2MoeMLP, Qwen2MoeSparseMoeBlock (the same loop, renormalised only
                                          with norm_topk_prob, plus shared_expert gated by
                                          sigmoid(shared_expert_gate(x))), Qwen2MoeDecoderLayer (sparse where
                                          layer_idx not in mlp_only_layers and (layer_idx + 1) %
                                          decoder_sparse_step == 0, a dense Qwen2MoeMLP of intermediate_size
                                          elsewhere), Qwen2's attention (q/k/v biases) with its legacy per-layer
                                          Qwen2MoeRotaryEmbedding (an unused non-persistent inv_freq buffer)
Followed at transformers v4.51.0 (the per-expert loop before v5 fused the experts' parameters):
  models/qwen3_moe/modeling_qwen3_moe.py  Qwen3MoeSparseMoeBlock: Qwen2-MoE's loop without the shared expert
                                          (experts the routing does not hit are skipped: with the balanced
                                          routing below every expert is hit), Qwen3MoeMLP experts of
                                          moe_intermediate_size, Qwen3's attention (q_norm/k_norm), the same
                                          decoder_sparse_step / mlp_only_layers choice
The router's auxiliary loss (output_router_logits) and router_jitter_noise are left out (both off by
default, and the templates refuse them).

build(cfg, attn="eager"|"sdpa", balanced=False) -> nn.Module whose forward(input_ids) returns
logits.float().view(-1, V); module names are transformers' (model.layers.N.block_sparse_moe.gate,
...experts.E.w1, model.layers.N.mlp.shared_expert.gate_proj, ...). balanced=True forces round-robin
routing: token t picks experts (t*k + j) % E, j < k, by adding a constant to the router logits (an add,
which saves nothing for backward), so that every expert gets floor(T*k/E) or one more token, the lowest
experts the extra ones - the split memest assumes (src/ops/ops_moe.c); balanced=F > 1 forces the split of
--moe-imbalance F instead.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import hf_models as base

MOE_ARCH = {
    "mixtral": dict(base.ARCH["mistral"]),
    "qwen2_moe": dict(base.ARCH["qwen2"]),
    "qwen3_moe": dict(base.ARCH["qwen3"]),
}


class Expert(nn.Module):
    """MixtralBlockSparseTop2MLP (w1, w3, w2) or Qwen2MoeMLP (gate_proj, up_proj, down_proj)."""

    def __init__(self, cfg, size, names):
        super().__init__()
        H = cfg["hidden_size"]
        self.names = names
        self.act_fn = base.ACT[cfg.get("hidden_act", "silu")]
        setattr(self, names[0], nn.Linear(H, size, bias=False))
        setattr(self, names[1], nn.Linear(H, size, bias=False))
        setattr(self, names[2], nn.Linear(size, H, bias=False))

    def forward(self, x):
        gate, up, down = (getattr(self, n) for n in self.names)
        return down(self.act_fn(gate(x)) * up(x))


MIXTRAL_NAMES = ("w1", "w3", "w2")
QWEN_NAMES = ("gate_proj", "up_proj", "down_proj")


def round_robin_bias(T, E, k, dtype, imbalance=1.0):
    """A [T, E] constant whose top k per row are the experts (t*k + j) % E; with imbalance F > 1, expert 0
    is among the picks of the first min(T, ceil(F*T*k/E)) tokens and the other picks go round-robin to
    experts 1 .. E-1 (memest's --moe-imbalance split; needs k < E)."""
    bias = torch.zeros(T, E, dtype=dtype)
    if imbalance <= 1:
        for t in range(T):
            for j in range(k):
                bias[t, (t * k + j) % E] = 1e4
        return bias
    assert k < E
    n0 = min(T, math.ceil(imbalance * T * k / E))
    c = 0
    for t in range(T):
        picks = k
        if t < n0:
            bias[t, 0] = 1e4
            picks -= 1
        for _ in range(picks):
            bias[t, 1 + c % (E - 1)] = 1e4
            c += 1
    return bias


class SparseMoeBlock(nn.Module):
    def __init__(self, cfg, qwen, balanced):
        super().__init__()
        self.qwen = qwen
        self.balanced = balanced
        H = cfg["hidden_size"]
        if qwen:
            self.num_experts = cfg["num_experts"]
            self.norm_topk_prob = cfg.get("norm_topk_prob", False)
            size, names = cfg["moe_intermediate_size"], QWEN_NAMES
        else:
            self.num_experts = cfg["num_local_experts"]
            self.norm_topk_prob = True
            size, names = cfg["intermediate_size"], MIXTRAL_NAMES
        self.top_k = cfg["num_experts_per_tok"]
        self.gate = nn.Linear(H, self.num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(cfg, size, names) for _ in range(self.num_experts))
        self.shared = qwen and cfg["model_type"] == "qwen2_moe"   # Qwen3-MoE has none
        if self.shared:
            self.shared_expert = Expert(cfg, cfg["shared_expert_intermediate_size"], QWEN_NAMES)
            self.shared_expert_gate = nn.Linear(H, 1, bias=False)

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        if self.balanced:
            router_logits = router_logits + round_robin_bias(router_logits.shape[0], self.num_experts,
                                                             self.top_k, router_logits.dtype, self.balanced)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        if self.norm_topk_prob:
            routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim),
                                          dtype=hidden_states.dtype, device=hidden_states.device)
        expert_mask = torch.nn.functional.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        # not in transformers: the tokens each expert got, for the reference's record (integers, no grad)
        self.tokens_per_expert = expert_mask.sum(dim=(1, 2)).tolist()
        for expert_idx in range(self.num_experts):
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        if self.shared:
            shared_expert_output = self.shared_expert(hidden_states)
            shared_expert_output = F.sigmoid(self.shared_expert_gate(hidden_states)) * shared_expert_output
            final_hidden_states = final_hidden_states + shared_expert_output
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits


def sparse_layer(cfg, layer_idx):
    """Qwen2MoeDecoderLayer's choice (Mixtral: always)."""
    if cfg["model_type"] == "mixtral":
        return True
    return (layer_idx not in (cfg.get("mlp_only_layers") or [])) and (
        cfg["num_experts"] > 0 and (layer_idx + 1) % cfg.get("decoder_sparse_step", 1) == 0)


class MoeDecoderLayer(base.DecoderLayer):
    def __init__(self, cfg, arch, layer_idx, attn, balanced):
        super().__init__(cfg, arch, layer_idx, attn)
        qwen = cfg["model_type"] in ("qwen2_moe", "qwen3_moe")
        self.moe_name = "mlp" if qwen else "block_sparse_moe"
        if sparse_layer(cfg, layer_idx):
            del self.mlp
            setattr(self, self.moe_name, SparseMoeBlock(cfg, qwen, balanced))
        else:
            self.moe_name = "mlp"  # Qwen2MoeMLP(config, intermediate_size=config.intermediate_size)
        if cfg["model_type"] == "qwen2_moe":  # Qwen2MoeAttention.__init__: its legacy Qwen2MoeRotaryEmbedding
            self.self_attn.rotary_emb = base.RotaryEmbedding(cfg, self.self_attn.head_dim)

    def forward(self, hidden_states, attention_mask, position_embeddings):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = getattr(self, self.moe_name)(hidden_states)
        if isinstance(hidden_states, tuple):
            hidden_states, _router_logits = hidden_states
        return residual + hidden_states


class MoeForCausalLM(base.ForCausalLM):
    def __init__(self, cfg, attn="eager", balanced=False):
        nn.Module.__init__(self)
        arch = MOE_ARCH[cfg["model_type"]]
        self.cfg = cfg
        self.model = base.Model(cfg, arch, attn)
        # base.Model made dense layers: the MoE layers replace them
        self.model.layers = nn.ModuleList(MoeDecoderLayer(cfg, arch, i, attn, balanced)
                                          for i in range(cfg["num_hidden_layers"]))
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        if cfg.get("tie_word_embeddings", arch["tie_default"]):
            self.lm_head.weight = self.model.embed_tokens.weight
        self.final_softcap = None
        self.logits_scaling = None  # base.ForCausalLM's Granite divisor: no MoE family here has it


def build(cfg, attn="eager", balanced=False):
    return MoeForCausalLM(cfg, attn, balanced)


BUILDERS = {t: build for t in MOE_ARCH}


# ---- DeepSeek-V3 (models/deepseek_v3/modeling_deepseek_v3.py at transformers commit
# 00b676f8f0489b88652a31d70751cc540dd06305, generated from modular_deepseek_v3.py; DeepseekV3Config's defaults)
#   DeepseekV3Attention    multi-head latent attention: q_proj, or q_a_proj (bias attention_bias) ->
#                          q_a_layernorm -> q_b_proj; view/transpose, split into nope and rope parts;
#                          kv_a_proj_with_mqa -> split -> kv_a_layernorm -> kv_b_proj -> view/transpose ->
#                          split into k_pass and value; k_rot.view(B, 1, S, rope); apply_rotary_pos_emb
#                          (or its interleaved form: view/transpose/reshape first, with rope_interleave);
#                          k_rot.expand; cat; attention with v_head_dim != qk_head_dim; reshape; o_proj
#   DeepseekV3TopkRouter   weight [n_routed_experts, hidden] parameter, e_score_correction_bias buffer;
#                          F.linear in float32, sigmoid, group-limited top-k (no_grad), gather, norm_topk_prob
#                          division (in place), * routed_scaling_factor
#   DeepseekV3MoE          the expert loop into a float32 accumulator, .type(hidden dtype), + shared_experts
#   DeepseekV3DecoderLayer MoE from layer first_k_dense_replace on, DeepseekV3MLP of intermediate_size before
#   DeepseekV3Model        ignores model.layers.61.* (the multi-token-prediction module): not built here either
# SDPA: the newer integrations/sdpa_attention.py, which passes q, k, v as they are (no .contiguous()) and
# repeats k/v only for GQA (none here: num_key_value_heads = num_attention_heads). On the CPU, PyTorch 2.6
# runs _scaled_dot_product_attention_math when the v head dim differs from q's (check_head_dim_size_cpp),
# so the measured "sdpa" figure is the math kernel's (hf_figures_moe.py compares it with memest's
# --attention math); no CUDA correction applies to it (no hook is called).

def ds(cfg, key):
    """DeepseekV3Config's defaults."""
    defaults = dict(vocab_size=129280, hidden_size=7168, intermediate_size=18432, moe_intermediate_size=2048,
                    num_hidden_layers=61, num_attention_heads=128, num_key_value_heads=None,
                    n_shared_experts=1, n_routed_experts=256, routed_scaling_factor=2.5, kv_lora_rank=512,
                    q_lora_rank=1536, qk_rope_head_dim=64, v_head_dim=128, qk_nope_head_dim=128, n_group=8,
                    topk_group=4, num_experts_per_tok=8, first_k_dense_replace=3, norm_topk_prob=True,
                    hidden_act="silu", rms_norm_eps=1e-6, tie_word_embeddings=False, rope_interleave=True,
                    attention_bias=False, attention_dropout=0.0)
    return cfg.get(key, defaults[key])


def ds_attrs(obj, cfg, *keys):
    """obj.KEY = the config's KEY (or DeepseekV3Config's default), as the modules copy them from config."""
    for key in keys:
        setattr(obj, key, ds(cfg, key))


class DeepseekV3TopkRouter(nn.Module):
    def __init__(self, cfg, balanced):
        super().__init__()
        ds_attrs(self, cfg, "n_routed_experts", "routed_scaling_factor", "n_group", "topk_group", "norm_topk_prob",
                 "hidden_size")
        self.top_k = ds(cfg, "num_experts_per_tok")
        self.balanced = balanced
        self.weight = nn.Parameter(torch.empty((self.n_routed_experts, self.hidden_size)))
        nn.init.normal_(self.weight, std=0.02)
        self.register_buffer("e_score_correction_bias", torch.zeros(self.n_routed_experts))  # the default dtype

    @torch.no_grad()
    def get_topk_indices(self, scores):
        scores_for_choice = scores.view(-1, self.n_routed_experts) + self.e_score_correction_bias.unsqueeze(0)
        group_scores = (
            scores_for_choice.view(-1, self.n_group, self.n_routed_experts // self.n_group)
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
        scores_for_choice = scores_for_choice.masked_fill(~score_mask.bool(), 0.0)
        topk_indices = torch.topk(scores_for_choice, k=self.top_k, dim=-1, sorted=False)[1]
        return topk_indices

    def forward(self, hidden_states):
        hidden_states = hidden_states.view(-1, self.hidden_size)
        router_logits = F.linear(hidden_states.type(torch.float32), self.weight.type(torch.float32))
        if self.balanced:  # not transformers': the forced split (an add of a constant saves nothing)
            router_logits = router_logits + round_robin_bias(router_logits.shape[0], self.n_routed_experts,
                                                             self.top_k, router_logits.dtype, self.balanced)
        scores = router_logits.sigmoid()
        topk_indices = self.get_topk_indices(scores)
        topk_weights = scores.gather(1, topk_indices)
        if self.norm_topk_prob:
            denominator = topk_weights.sum(dim=-1, keepdim=True) + 1e-20
            topk_weights /= denominator
        topk_weights = topk_weights * self.routed_scaling_factor
        return topk_indices, topk_weights


class DeepseekV3MoE(nn.Module):
    def __init__(self, cfg, balanced):
        super().__init__()
        self.experts = nn.ModuleList(Expert(cfg, ds(cfg, "moe_intermediate_size"), QWEN_NAMES)
                                     for _ in range(ds(cfg, "n_routed_experts")))
        self.gate = DeepseekV3TopkRouter(cfg, balanced)
        self.shared_experts = Expert(cfg, ds(cfg, "moe_intermediate_size") * ds(cfg, "n_shared_experts"), QWEN_NAMES)

    def moe(self, hidden_states, topk_indices, topk_weights):
        final_hidden_states = torch.zeros_like(hidden_states, dtype=topk_weights.dtype)
        expert_mask = torch.nn.functional.one_hot(topk_indices, num_classes=len(self.experts))
        expert_mask = expert_mask.permute(2, 0, 1)
        # not in transformers: the tokens each expert got, for the reference's record (integers, no grad)
        self.tokens_per_expert = expert_mask.sum(dim=(1, 2)).tolist()
        for expert_idx in range(len(self.experts)):
            expert = self.experts[expert_idx]
            mask = expert_mask[expert_idx]
            token_indices, weight_indices = torch.where(mask)
            if token_indices.numel() > 0:
                expert_weights = topk_weights[token_indices, weight_indices]
                expert_input = hidden_states[token_indices]
                expert_output = expert(expert_input)
                weighted_output = expert_output * expert_weights.unsqueeze(-1)
                final_hidden_states.index_add_(0, token_indices, weighted_output)
        return final_hidden_states.type(hidden_states.dtype)

    def forward(self, hidden_states):
        residuals = hidden_states
        orig_shape = hidden_states.shape
        topk_indices, topk_weights = self.gate(hidden_states)
        hidden_states = hidden_states.view(-1, hidden_states.shape[-1])
        hidden_states = self.moe(hidden_states, topk_indices, topk_weights).view(*orig_shape)
        hidden_states = hidden_states + self.shared_experts(residuals)
        return hidden_states


def apply_rotary_pos_emb_interleave(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    b, h, s, d = q.shape
    q = q.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    b, h, s, d = k.shape
    k = k.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    q_embed = (q * cos) + (base.rotate_half(q) * sin)
    k_embed = (k * cos) + (base.rotate_half(k) * sin)
    return q_embed, k_embed


def ds_sdpa_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
    """integrations/sdpa_attention.py as the newer transformers has it: no .contiguous(), repeat_kv only
    where GQA is not passed on (n_rep 1 here)."""
    key = base.repeat_kv(key, module.num_key_value_groups)
    value = base.repeat_kv(value, module.num_key_value_groups)
    is_causal = query.shape[2] > 1 and attention_mask is None
    attn_output = F.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask, dropout_p=dropout,
                                                 scale=scaling, is_causal=is_causal)
    return attn_output.transpose(1, 2).contiguous(), None


class DeepseekV3Attention(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        H = ds(cfg, "hidden_size")
        self.attn = attn
        self.num_heads = ds(cfg, "num_attention_heads")
        kv = ds(cfg, "num_key_value_heads") or self.num_heads
        self.num_key_value_groups = self.num_heads // kv
        ds_attrs(self, cfg, "attention_dropout", "q_lora_rank", "qk_rope_head_dim", "kv_lora_rank", "v_head_dim",
                 "qk_nope_head_dim", "rope_interleave")
        self.qk_head_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
        bias = ds(cfg, "attention_bias")
        if self.q_lora_rank is None:
            self.q_proj = nn.Linear(H, self.num_heads * self.qk_head_dim, bias=False)
        else:
            self.q_a_proj = nn.Linear(H, self.q_lora_rank, bias=bias)
            self.q_a_layernorm = base.LlamaRMSNorm(self.q_lora_rank)
            self.q_b_proj = nn.Linear(self.q_lora_rank, self.num_heads * self.qk_head_dim, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(H, self.kv_lora_rank + self.qk_rope_head_dim, bias=bias)
        self.kv_a_layernorm = base.LlamaRMSNorm(self.kv_lora_rank)
        self.kv_b_proj = nn.Linear(self.kv_lora_rank, self.num_heads * (self.qk_nope_head_dim + self.v_head_dim),
                                   bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.v_head_dim, H, bias=bias)
        self.scaling = self.qk_head_dim ** (-0.5)

    def forward(self, hidden_states, position_embeddings, attention_mask):
        batch_size, seq_length = hidden_states.shape[:-1]
        query_shape = (batch_size, seq_length, -1, self.qk_head_dim)
        key_shape = (batch_size, seq_length, -1, self.qk_nope_head_dim + self.v_head_dim)
        if self.q_lora_rank is None:
            q_states = self.q_proj(hidden_states)
        else:
            q_states = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
        q_states = q_states.view(query_shape).transpose(1, 2)
        q_pass, q_rot = torch.split(q_states, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        compressed_kv = self.kv_a_proj_with_mqa(hidden_states)
        k_pass, k_rot = torch.split(compressed_kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_pass = self.kv_b_proj(self.kv_a_layernorm(k_pass)).view(key_shape).transpose(1, 2)
        k_pass, value_states = torch.split(k_pass, [self.qk_nope_head_dim, self.v_head_dim], dim=-1)
        k_rot = k_rot.view(batch_size, 1, seq_length, self.qk_rope_head_dim)
        cos, sin = position_embeddings
        if self.rope_interleave:
            q_rot, k_rot = apply_rotary_pos_emb_interleave(q_rot, k_rot, cos, sin)
        else:
            q_rot, k_rot = base.apply_rotary_pos_emb(q_rot, k_rot, cos, sin)
        k_rot = k_rot.expand(*k_pass.shape[:-1], -1)
        query_states = torch.cat((q_pass, q_rot), dim=-1)
        key_states = torch.cat((k_pass, k_rot), dim=-1)
        dropout = self.attention_dropout if self.training else 0.0
        if self.attn == "sdpa":
            attn_output, _ = ds_sdpa_attention_forward(self, query_states, key_states, value_states,
                                                       attention_mask, self.scaling, dropout)
        else:
            attn_output, _ = base.eager_attention_forward(self, query_states, key_states, value_states,
                                                          attention_mask, self.scaling, dropout)
        attn_output = attn_output.reshape(batch_size, seq_length, -1).contiguous()
        return self.o_proj(attn_output)


class DeepseekV3DecoderLayer(MoeDecoderLayer):
    """MoeDecoderLayer's forward (residual adds around self_attn and mlp), DeepseekV3DecoderLayer's modules."""

    def __init__(self, cfg, layer_idx, attn, balanced):
        nn.Module.__init__(self)
        H, eps = ds(cfg, "hidden_size"), ds(cfg, "rms_norm_eps")
        self.self_attn = DeepseekV3Attention(cfg, attn)
        self.moe_name = "mlp"
        if layer_idx >= ds(cfg, "first_k_dense_replace"):
            self.mlp = DeepseekV3MoE(cfg, balanced)
        else:  # DeepseekV3MLP(config): intermediate_size
            self.mlp = Expert(cfg, ds(cfg, "intermediate_size"), QWEN_NAMES)
        self.input_layernorm = base.LlamaRMSNorm(H, eps=eps)
        self.post_attention_layernorm = base.LlamaRMSNorm(H, eps=eps)


class DeepseekV3Model(nn.Module):
    def __init__(self, cfg, attn, balanced):
        super().__init__()
        H = ds(cfg, "hidden_size")
        self.cfg, self.attn = cfg, attn
        self.embed_tokens = nn.Embedding(ds(cfg, "vocab_size"), H, cfg.get("pad_token_id"))
        self.layers = nn.ModuleList(DeepseekV3DecoderLayer(cfg, i, attn, balanced)
                                    for i in range(ds(cfg, "num_hidden_layers")))
        self.norm = base.LlamaRMSNorm(H, eps=ds(cfg, "rms_norm_eps"))
        # DeepseekV3Config sets head_dim = qk_rope_head_dim: the rotary embedding's dim
        # (DeepSeek-V3's yarn: _compute_yarn_parameters gives an inv_freq of the same [dim / 2] float32 shape;
        # its values, which change no memory, are not computed here)
        rope_cfg = {k: v for k, v in cfg.items() if k != "rope_scaling"}
        self.rotary_emb = base.RotaryEmbedding(rope_cfg, ds(cfg, "qk_rope_head_dim"))

    def forward(self, input_ids):
        inputs_embeds = self.embed_tokens(input_ids)
        B, S = input_ids.shape
        position_ids = torch.arange(0, S).unsqueeze(0)
        # create_causal_mask: None for sdpa without padding (is_causal), the float causal mask for eager
        mask = base.causal_mask(self.cfg, base.ARCH["llama"], self.attn, B, S, inputs_embeds.dtype, self.training)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states, mask, position_embeddings)
        return self.norm(hidden_states)


class DeepseekV3ForCausalLM(nn.Module):
    def __init__(self, cfg, attn="eager", balanced=False):
        super().__init__()
        self.cfg = cfg
        self.model = DeepseekV3Model(cfg, attn, balanced)
        self.lm_head = nn.Linear(ds(cfg, "hidden_size"), ds(cfg, "vocab_size"), bias=False)
        if ds(cfg, "tie_word_embeddings"):
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids):
        hidden_states = self.model(input_ids)
        logits = self.lm_head(hidden_states[:, slice(0, None), :])
        return logits.float().view(-1, ds(self.cfg, "vocab_size"))


BUILDERS["deepseek_v3"] = lambda cfg, attn="eager", balanced=False: DeepseekV3ForCausalLM(cfg, attn, balanced)
