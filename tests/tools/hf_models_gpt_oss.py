"""Plain-PyTorch gpt-oss (GptOssForCausalLM) following transformers, op by op (no transformers import: the
torch2 chroot has none). repeat_kv is hf_models.py's (Llama's, which GptOss imports); the round-robin routing
helper is hf_models_moe.py's.

Followed: huggingface/transformers@0261a467116de4a9103b58200f9d82f8fb5a0e86
src/transformers/models/gpt_oss/modular_gpt_oss.py, with configuration_gpt_oss.py at
02b8f42b4240dddea1b27c45d2dc95fb2682f841 (GptOssConfig's defaults):
  GptOssRMSNorm         (weight * x.float() * rsqrt(mean(x^2) + eps)).to(input dtype)
  GptOssRotaryEmbedding emb = freqs (no cat): cos, sin [1, S, head_dim / 2], * attention_scaling, .to(x.dtype)
  _apply_rotary_emb     chunk(2) of q and k; first * cos - second * sin, second * cos + first * sin; cat
  eager_attention_forward  repeat_kv; q @ k^T * scaling + mask; cat with the sinks expanded [B, H, L, 1];
                        minus max(dim=-1).values; softmax in the dtype; [..., :-1]; dropout; @ v
  GptOssAttention       q/k/v/o_proj with bias attention_bias; sinks [num_attention_heads]; sliding_window on
                        the layers layer_types calls sliding_attention
  GptOssTopKRouter      F.linear(x, weight, bias); topk; softmax(dim=1, dtype=its dtype)
  GptOssExperts         the loop over the experts hit: hidden_states[token_idx] @ gate_up_proj[e] + bias[e];
                        gate = [..., ::2].clamp(max=limit), up = [..., 1::2].clamp(-limit, limit);
                        glu = gate * sigmoid(gate * alpha); (up + 1) * glu @ down_proj[e] + bias[e];
                        * routing_weights[token_idx, top_k_pos, None]; index_add_ into zeros_like
  GptOssDecoderLayer    Llama's: residual + attn(input_layernorm(x)); residual + mlp(post_attention_layernorm)
The masks are create_causal_mask's and create_sliding_window_causal_mask's eager 4-D float masks [B, 1, S, S]
(min_dtype where masked; built once per forward: not saved, adding a mask saves nothing). The YaRN rope's
inv_freq values are not computed (the default formula is used: the same [head_dim / 2] float32 buffer, the
same memory; attention_scaling multiplies the tables either way).

build(cfg, attn="eager", balanced=False): attn must be "eager" (GptOssPreTrainedModel._supports_sdpa is
False); balanced=True forces the round-robin routing of hf_models_moe.py (a constant added to the router
logits before topk; it saves nothing).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import hf_models as base
from hf_models_moe import round_robin_bias

DEFAULTS = dict(num_hidden_layers=36, num_local_experts=128, vocab_size=201088, hidden_size=2880,
                intermediate_size=2880, head_dim=64, num_attention_heads=64, num_key_value_heads=8,
                sliding_window=128, tie_word_embeddings=False, rms_norm_eps=1e-5, attention_dropout=0.0,
                num_experts_per_tok=4, swiglu_alpha=1.702, swiglu_limit=7.0, attention_bias=True,
                rope_theta=150000.0)


def g(cfg, key):
    """GptOssConfig's defaults."""
    return cfg[key] if cfg.get(key) is not None else DEFAULTS[key]


def layer_types(cfg):
    return cfg.get("layer_types") or ["sliding_attention" if bool((i + 1) % 2) else "full_attention"
                                      for i in range(g(cfg, "num_hidden_layers"))]


GptOssRMSNorm = base.Olmo2RMSNorm  # (weight * x_norm).to(input dtype): Olmo2's form


class GptOssRotaryEmbedding(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        dim = g(cfg, "head_dim")
        base_ = cfg.get("rope_theta", DEFAULTS["rope_theta"])
        inv_freq = 1.0 / (base_ ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        rs = cfg.get("rope_scaling") or {}
        factor = rs.get("factor", 1.0)
        self.attention_scaling = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0  # YaRN get_mscale

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        with torch.autocast(device_type="cpu", enabled=False):
            freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
            emb = freqs
            cos = emb.cos() * self.attention_scaling
            sin = emb.sin() * self.attention_scaling
        return cos.to(x.dtype), sin.to(x.dtype)


def _apply_rotary_emb(x, cos, sin):
    first_half, second_half = torch.chunk(x, 2, dim=-1)
    first_ = first_half * cos - second_half * sin
    second_ = second_half * cos + first_half * sin
    return torch.cat((first_, second_), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return _apply_rotary_emb(q, cos, sin), _apply_rotary_emb(k, cos, sin)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
    key_states = base.repeat_kv(key, module.num_key_value_groups)
    value_states = base.repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
    sinks = module.sinks.reshape(1, -1, 1, 1).expand(query.shape[0], -1, query.shape[-2], -1)
    combined_logits = torch.cat([attn_weights, sinks], dim=-1)
    combined_logits = combined_logits - combined_logits.max(dim=-1, keepdim=True).values
    probs = F.softmax(combined_logits, dim=-1, dtype=combined_logits.dtype)
    scores = probs[..., :-1]
    attn_weights = nn.functional.dropout(scores, p=dropout, training=module.training).to(value_states.dtype)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


class GptOssAttention(nn.Module):
    def __init__(self, cfg, layer_idx):
        super().__init__()
        H, nh, nkv, hd = (g(cfg, "hidden_size"), g(cfg, "num_attention_heads"), g(cfg, "num_key_value_heads"),
                          g(cfg, "head_dim"))
        bias = g(cfg, "attention_bias")
        self.head_dim = hd
        self.num_key_value_groups = nh // nkv
        self.scaling = hd ** -0.5
        self.attention_dropout = g(cfg, "attention_dropout")
        self.q_proj = nn.Linear(H, nh * hd, bias=bias)
        self.k_proj = nn.Linear(H, nkv * hd, bias=bias)
        self.v_proj = nn.Linear(H, nkv * hd, bias=bias)
        self.o_proj = nn.Linear(nh * hd, H, bias=bias)
        self.sinks = nn.Parameter(torch.empty(nh))
        nn.init.normal_(self.sinks, std=0.02)
        self.sliding = layer_types(cfg)[layer_idx] == "sliding_attention"

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        attn_output, _ = eager_attention_forward(self, query_states, key_states, value_states, attention_mask,
                                                 dropout=0.0 if not self.training else self.attention_dropout,
                                                 scaling=self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class GptOssExperts(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        E, H, I = g(cfg, "num_local_experts"), g(cfg, "hidden_size"), g(cfg, "intermediate_size")
        self.num_experts = E
        self.gate_up_proj = nn.Parameter(torch.empty(E, H, 2 * I))
        self.gate_up_proj_bias = nn.Parameter(torch.empty(E, 2 * I))
        self.down_proj = nn.Parameter(torch.empty((E, I, H)))
        self.down_proj_bias = nn.Parameter(torch.empty(E, H))
        for p in (self.gate_up_proj, self.down_proj):
            nn.init.normal_(p, std=0.02)
        for p in (self.gate_up_proj_bias, self.down_proj_bias):
            nn.init.zeros_(p)
        self.alpha = g(cfg, "swiglu_alpha")
        self.limit = g(cfg, "swiglu_limit")

    def _apply_gate(self, gate_up):
        gate, up = gate_up[..., ::2], gate_up[..., 1::2]
        gate = gate.clamp(min=None, max=self.limit)
        up = up.clamp(min=-self.limit, max=self.limit)
        glu = gate * torch.sigmoid(gate * self.alpha)
        return (up + 1) * glu

    def forward(self, hidden_states, router_indices, routing_weights):
        next_states = torch.zeros_like(hidden_states, dtype=hidden_states.dtype, device=hidden_states.device)
        with torch.no_grad():
            expert_mask = torch.nn.functional.one_hot(router_indices, num_classes=self.num_experts)
            expert_mask = expert_mask.permute(2, 1, 0)
            expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        # not in transformers: the tokens each expert got, for the reference's record (integers, no grad)
        self.tokens_per_expert = expert_mask.sum(dim=(1, 2)).tolist()
        for expert_idx in expert_hit:
            expert_idx = expert_idx[0]
            if expert_idx == self.num_experts:
                continue
            with torch.no_grad():
                top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[token_idx]
            gate_up = current_state @ self.gate_up_proj[expert_idx] + self.gate_up_proj_bias[expert_idx]
            gated_output = self._apply_gate(gate_up)
            out = gated_output @ self.down_proj[expert_idx] + self.down_proj_bias[expert_idx]
            weighted_output = out * routing_weights[token_idx, top_k_pos, None]
            next_states.index_add_(0, token_idx, weighted_output.to(hidden_states.dtype))
        return next_states


class GptOssTopKRouter(nn.Module):
    def __init__(self, cfg, balanced):
        super().__init__()
        self.top_k = g(cfg, "num_experts_per_tok")
        self.num_experts = g(cfg, "num_local_experts")
        self.hidden_dim = g(cfg, "hidden_size")
        self.weight = nn.Parameter(torch.zeros(self.num_experts, self.hidden_dim))
        self.bias = nn.Parameter(torch.zeros(self.num_experts))
        self.balanced = balanced

    def forward(self, hidden_states):
        router_logits = F.linear(hidden_states, self.weight, self.bias)
        if self.balanced:  # not transformers': the forced split (an add of a constant saves nothing)
            router_logits = router_logits + round_robin_bias(router_logits.shape[0], self.num_experts, self.top_k,
                                                             router_logits.dtype, self.balanced)
        router_top_value, router_indices = torch.topk(router_logits, self.top_k, dim=-1)
        router_top_value = torch.nn.functional.softmax(router_top_value, dim=1, dtype=router_top_value.dtype)
        return router_logits, router_top_value, router_indices


class GptOssMLP(nn.Module):
    def __init__(self, cfg, balanced):
        super().__init__()
        self.router = GptOssTopKRouter(cfg, balanced)
        self.experts = GptOssExperts(cfg)

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        _, router_scores, router_indices = self.router(hidden_states)
        hidden_states = self.experts(hidden_states, router_indices, router_scores)
        return hidden_states.view(batch_size, sequence_length, hidden_dim)


class GptOssDecoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx, balanced):
        super().__init__()
        H, eps = g(cfg, "hidden_size"), g(cfg, "rms_norm_eps")
        self.self_attn = GptOssAttention(cfg, layer_idx)
        self.mlp = GptOssMLP(cfg, balanced)
        self.input_layernorm = GptOssRMSNorm(H, eps=eps)
        self.post_attention_layernorm = GptOssRMSNorm(H, eps=eps)
        self.attention_type = layer_types(cfg)[layer_idx]

    def forward(self, hidden_states, attention_mask, position_embeddings):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


def eager_mask(B, S, dtype, window=None):
    """masking_utils' eager 4-D mask: 0 where attended, min_dtype elsewhere; sliding: i - j < window."""
    i = torch.arange(S).reshape(-1, 1)
    j = torch.arange(S)
    allowed = j <= i
    if window is not None:
        allowed = allowed & (i - j < window)
    mask = torch.where(allowed, torch.tensor(0.0, dtype=dtype), torch.tensor(torch.finfo(dtype).min, dtype=dtype))
    return mask[None, None, :, :].expand(B, 1, -1, -1)


class GptOssModel(nn.Module):
    def __init__(self, cfg, balanced):
        super().__init__()
        H = g(cfg, "hidden_size")
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(g(cfg, "vocab_size"), H, cfg.get("pad_token_id"))
        self.layers = nn.ModuleList(GptOssDecoderLayer(cfg, i, balanced) for i in range(g(cfg, "num_hidden_layers")))
        self.norm = GptOssRMSNorm(H, eps=g(cfg, "rms_norm_eps"))
        self.rotary_emb = GptOssRotaryEmbedding(cfg)

    def forward(self, input_ids):
        inputs_embeds = self.embed_tokens(input_ids)
        B, S = input_ids.shape
        position_ids = torch.arange(0, S).unsqueeze(0)
        window = self.cfg.get("sliding_window", DEFAULTS["sliding_window"])
        masks = {"full_attention": eager_mask(B, S, inputs_embeds.dtype),
                 "sliding_attention": eager_mask(B, S, inputs_embeds.dtype, window)}
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states, masks[layer.attention_type], position_embeddings)
        return self.norm(hidden_states)


class GptOssForCausalLM(base.CausalLM):
    def __init__(self, cfg, attn="eager", balanced=False):
        if attn != "eager":
            raise ValueError("GptOss runs eager attention only (_supports_sdpa = False)")
        super().__init__(cfg, "model", GptOssModel(cfg, balanced), "embed_tokens", False,
                         g(cfg, "tie_word_embeddings"), g(cfg, "hidden_size"), g(cfg, "vocab_size"), True)


BUILDERS = {"gpt_oss": lambda cfg, attn="eager", balanced=False: GptOssForCausalLM(cfg, attn, balanced)}
