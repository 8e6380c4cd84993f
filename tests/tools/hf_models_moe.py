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
        if qwen:
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
        if self.qwen:
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
        qwen = cfg["model_type"] == "qwen2_moe"
        self.moe_name = "mlp" if qwen else "block_sparse_moe"
        if sparse_layer(cfg, layer_idx):
            del self.mlp
            setattr(self, self.moe_name, SparseMoeBlock(cfg, qwen, balanced))
        else:
            self.moe_name = "mlp"  # Qwen2MoeMLP(config, intermediate_size=config.intermediate_size)
        if qwen:  # Qwen2MoeAttention.__init__: self.rotary_emb = Qwen2MoeRotaryEmbedding(config=self.config)
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


def build(cfg, attn="eager", balanced=False):
    return MoeForCausalLM(cfg, attn, balanced)


BUILDERS = {t: build for t in MOE_ARCH}
