"""Plain-PyTorch Cohere decoder LMs, following transformers op by op (no transformers import). repeat_kv, the
eager and SDPA attention functions, the gated MLP and the causal mask are hf_models.py's (Llama's code, which
Cohere copies); this file adds, from transformers at 015bfeb86891c5f5e450f48942260ac3e2cd2bf2:

  models/cohere/modeling_cohere.py
      CohereLayerNorm (float32: mean, (x - mean) twice, pow, rsqrt, weight.to(float32) * x, .to(input dtype);
      no bias; a [heads, head_dim] weight for the q/k norm), CohereRotaryEmbedding (freqs repeat_interleave'd,
      cos/sin in the hidden dtype), rotate_half (stack([-x[..., 1::2], x[..., ::2]], -1).flatten(-2)),
      apply_rotary_pos_emb (q.float(), k.float(), the products in float32, cast back), CohereAttention
      (q/k/v/o_proj with bias attention_bias, q_norm/k_norm after the view when use_qk_norm),
      CohereDecoderLayer (one input_layernorm; residual + attn + mlp), CohereModel (final CohereLayerNorm),
      CohereForCausalLM (lm_head tied by default, logits * logit_scale)
  models/cohere2/modeling_cohere2.py
      Cohere2Attention (no q/k norm; sliding_window and RoPE where (layer_idx + 1) % sliding_window_pattern
      != 0, no RoPE elsewhere), Cohere2DecoderLayer (the sliding layers' mask torch.where(tril(ones_like(mask,
      bool), -window), min, mask)[..., offset: offset + max(S, window)]), Cohere2Model._update_causal_mask (the
      4-D causal mask always built, for eager and SDPA), head_dim = hidden_size // num_attention_heads
The causal-LM head ends as ForCausalLMLoss starts: logits.float().view(-1, V).

build(cfg, attn="eager"|"sdpa") -> nn.Module whose forward(input_ids) returns those logits; module names are
transformers' (model.layers.N.input_layernorm, model.layers.N.self_attn.q_norm, ...).
"""
import torch
import torch.nn as nn

import hf_models as base

GATED_MLP_ARCH = {"fused_qkv": False, "mlp_bias": False}


class CohereLayerNorm(base.LlamaRMSNorm):
    """The weight (ones of hidden_size: an int, or (heads, head_dim)) and variance_epsilon as LlamaRMSNorm's."""

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        mean = hidden_states.mean(-1, keepdim=True)
        variance = (hidden_states - mean).pow(2).mean(-1, keepdim=True)
        hidden_states = (hidden_states - mean) * torch.rsqrt(variance + self.variance_epsilon)
        hidden_states = self.weight.to(torch.float32) * hidden_states
        return hidden_states.to(input_dtype)


def rotate_half(x):
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    return torch.stack([-x2, x1], dim=-1).flatten(-2)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    dtype = q.dtype
    q = q.float()
    k = k.float()
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed.to(dtype=dtype), k_embed.to(dtype=dtype)


def is_sliding(cfg, layer_idx):
    """Cohere2: (layer_idx + 1) % sliding_window_pattern != 0; Cohere has no sliding layers."""
    if cfg["model_type"] != "cohere2":
        return False
    return bool((layer_idx + 1) % cfg.get("sliding_window_pattern", 4) != 0)


class Attention(nn.Module):
    def __init__(self, cfg, layer_idx, attn):
        super().__init__()
        self.attn = attn
        H, nh = cfg["hidden_size"], cfg["num_attention_heads"]
        nkv = cfg.get("num_key_value_heads") or nh
        self.head_dim = H // nh
        if cfg["model_type"] == "cohere":  # getattr(config, "head_dim", ...): a config's own head_dim wins
            self.head_dim = cfg.get("head_dim") or self.head_dim
        self.num_key_value_groups = nh // nkv
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = cfg.get("attention_dropout", 0.0)
        bias = cfg.get("attention_bias", False)
        self.q_proj = nn.Linear(H, nh * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(H, nkv * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(H, nkv * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(nh * self.head_dim, H, bias=bias)
        self.use_qk_norm = cfg["model_type"] == "cohere" and cfg.get("use_qk_norm", False)
        if self.use_qk_norm:
            eps = cfg.get("layer_norm_eps", 1e-5)
            self.q_norm = CohereLayerNorm((nh, self.head_dim), eps=eps)
            self.k_norm = CohereLayerNorm((nkv, self.head_dim), eps=eps)
        self.use_rope = cfg["model_type"] == "cohere" or is_sliding(cfg, layer_idx)

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        # q/k/v_proj(hidden_states).view(hidden_shape) in turn, the q_norm and k_norm, then transpose(1, 2)
        states = [proj(hidden_states).view(hidden_shape) for proj in (self.q_proj, self.k_proj, self.v_proj)]
        if self.use_qk_norm:
            states[0], states[1] = self.q_norm(states[0]), self.k_norm(states[1])
        query_states, key_states, value_states = (s.transpose(1, 2) for s in states)
        if self.use_rope:
            query_states, key_states = apply_rotary_pos_emb(query_states, key_states, *position_embeddings)
        fn = base.eager_attention_forward if self.attn == "eager" else base.sdpa_attention_forward
        attn_output, _ = fn(self, query_states, key_states, value_states, attention_mask,
                            dropout=0.0 if not self.training else self.attention_dropout, scaling=self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class DecoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx, attn):
        super().__init__()
        self.self_attn = Attention(cfg, layer_idx, attn)
        self.mlp = base.MLP(cfg, GATED_MLP_ARCH)
        self.input_layernorm = CohereLayerNorm(cfg["hidden_size"], eps=cfg.get("layer_norm_eps", 1e-5))
        self.is_sliding = is_sliding(cfg, layer_idx)
        self.sliding_window = cfg.get("sliding_window", 4096)

    def forward(self, hidden_states, attention_mask, position_embeddings):
        if self.is_sliding and attention_mask is not None:  # Cohere2DecoderLayer (eager / sdpa)
            effective_seq_len = max(hidden_states.shape[1], self.sliding_window)
            min_dtype = torch.finfo(hidden_states.dtype).min
            sliding_window_mask = torch.tril(torch.ones_like(attention_mask, dtype=torch.bool),
                                             diagonal=-self.sliding_window)
            attention_mask = torch.where(sliding_window_mask, min_dtype, attention_mask)
            offset = max(0, 0 - effective_seq_len)  # last_cache_position 0: no cache in training
            attention_mask = attention_mask[:, :, :, offset: offset + effective_seq_len]
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states_attention = self.self_attn(hidden_states, position_embeddings, attention_mask)
        hidden_states_mlp = self.mlp(hidden_states)
        return residual + hidden_states_attention + hidden_states_mlp


class Model(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        H = cfg["hidden_size"]
        self.cfg, self.attn = cfg, attn
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], H, cfg.get("pad_token_id", 0))
        self.layers = nn.ModuleList(DecoderLayer(cfg, i, attn) for i in range(cfg["num_hidden_layers"]))
        self.norm = CohereLayerNorm(H, eps=cfg.get("layer_norm_eps", 1e-5))
        self.rotary_emb = base.RotaryEmbedding(cfg, self.layers[0].self_attn.head_dim, interleave=True)
        # Cohere: LlamaModel's mask (None for SDPA without padding); Cohere2: the 4-D mask always (Gemma2's)
        self.mask_arch = {"window": "gemma2" if cfg["model_type"] == "cohere2" else None}

    def forward(self, input_ids):
        inputs_embeds = self.embed_tokens(input_ids)
        B, S = input_ids.shape
        position_ids = torch.arange(0, S).unsqueeze(0)
        mask = base.causal_mask(self.cfg, self.mask_arch, self.attn, B, S, inputs_embeds.dtype, self.training)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states, mask, position_embeddings)
        return self.norm(hidden_states)


class ForCausalLM(nn.Module):
    def __init__(self, cfg, attn="eager"):
        super().__init__()
        self.cfg = cfg
        self.model = Model(cfg, attn)
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        self.logit_scale = cfg.get("logit_scale", 0.0625)
        if cfg.get("tie_word_embeddings", True):
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids):
        logits = self.lm_head(self.model(input_ids))
        logits = logits * self.logit_scale
        return logits.float().view(-1, self.cfg["vocab_size"])


def build(cfg, attn="eager"):
    return ForCausalLM(cfg, attn)


BUILDERS = {"cohere": build, "cohere2": build}
