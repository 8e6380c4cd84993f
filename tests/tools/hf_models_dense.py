"""Plain-PyTorch dense decoder LMs whose layers are not Llama's, following transformers op by op (no
transformers import). The rotary embedding, repeat_kv, the eager and SDPA attention functions and the
causal mask are hf_models.py's (Llama's and Mistral's code, which these families copy); this file adds:

  models/starcoder2/modeling_starcoder2.py at 73faa33f3c3a8588747d42dc7ca666d97b1a2a2c
      Starcoder2MLP (c_fc, ACT2FN[hidden_act], c_proj with bias use_bias, F.dropout residual_dropout),
      Starcoder2Attention (q/k/v/o_proj with bias use_bias, RoPE, sliding_window, F.dropout residual_dropout
      after o_proj), Starcoder2DecoderLayer (nn.LayerNorm input_layernorm / post_attention_layernorm,
      norm_epsilon), Starcoder2Model (F.dropout embedding_dropout on the embeddings, the Mistral-style mask
      with the sliding window, final nn.LayerNorm), lm_head tied (PretrainedConfig's default)
  models/glm4/modeling_glm4.py at 257314f8c283566a238faf183f44f272e9e0e352
      Glm4MLP (gate_up_proj chunked, up * act(gate), down_proj), Glm4Attention (q/k/v_proj with bias
      attention_bias, o_proj without), apply_rotary_pos_emb (cos/sin halves repeat_interleave(2) in each call,
      partial rotary over cos.shape[-1] dims, interleaved rotate_half, cat with the pass-through part),
      Glm4DecoderLayer (input_layernorm, post_self_attn_layernorm, post_attention_layernorm,
      post_mlp_layernorm: Glm4RMSNorm = LlamaRMSNorm), Glm4RotaryEmbedding over
      int(head_dim * partial_rotary_factor) dims
The causal-LM head ends as ForCausalLMLoss starts: logits.float().view(-1, V).

build(cfg, attn="eager"|"sdpa") -> nn.Module whose forward(input_ids) returns those logits; module names are
transformers' (model.layers.N.self_attn.q_proj, model.layers.N.mlp.c_fc, ...).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import hf_models as base

MASK_ARCH = {"starcoder2": {"window": "sliding_window"}, "glm4": {"window": None}}


def head_dim_of(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


def rotary_dim_of(cfg):
    if cfg["model_type"] == "glm4":
        return int(head_dim_of(cfg) * cfg.get("partial_rotary_factor", 0.5))
    return head_dim_of(cfg)


def rotate_half_interleaved(x):
    """Glm4's rotate_half."""
    x1 = x[..., 0::2]
    x2 = x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def glm4_apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    cos = cos[..., : cos.shape[-1] // 2].repeat_interleave(2, dim=-1)
    sin = sin[..., : sin.shape[-1] // 2].repeat_interleave(2, dim=-1)
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    q_embed = (q_rot * cos) + (rotate_half_interleaved(q_rot) * sin)
    k_embed = (k_rot * cos) + (rotate_half_interleaved(k_rot) * sin)
    q_embed = torch.cat([q_embed, q_pass], dim=-1)
    k_embed = torch.cat([k_embed, k_pass], dim=-1)
    return q_embed, k_embed


class Attention(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        self.attn = attn
        self.glm = cfg["model_type"] == "glm4"
        H, nh = cfg["hidden_size"], cfg["num_attention_heads"]
        nkv = cfg.get("num_key_value_heads") or nh
        self.head_dim = head_dim_of(cfg)
        self.num_key_value_groups = nh // nkv
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = cfg.get("attention_dropout", 0.0)
        if self.glm:
            qkv_bias, o_bias = cfg.get("attention_bias", True), False
            self.residual_dropout = 0.0
        else:
            qkv_bias = o_bias = cfg.get("use_bias", True)
            self.residual_dropout = cfg.get("residual_dropout", 0.0)
        self.q_proj = nn.Linear(H, nh * self.head_dim, bias=qkv_bias)
        self.k_proj = nn.Linear(H, nkv * self.head_dim, bias=qkv_bias)
        self.v_proj = nn.Linear(H, nkv * self.head_dim, bias=qkv_bias)
        self.o_proj = nn.Linear(nh * self.head_dim, H, bias=o_bias)

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        rope = glm4_apply_rotary_pos_emb if self.glm else base.apply_rotary_pos_emb
        query_states, key_states = rope(query_states, key_states, cos, sin)
        fn = base.eager_attention_forward if self.attn == "eager" else base.sdpa_attention_forward
        attn_output, _ = fn(self, query_states, key_states, value_states, attention_mask,
                            dropout=0.0 if not self.training else self.attention_dropout, scaling=self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        if not self.glm:
            attn_output = F.dropout(attn_output, p=self.residual_dropout, training=self.training)
        return attn_output


class Starcoder2MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        H, I, b = cfg["hidden_size"], cfg["intermediate_size"], cfg.get("use_bias", True)
        self.c_fc = nn.Linear(H, I, bias=b)
        self.c_proj = nn.Linear(I, H, bias=b)
        self.act = base.ACT[cfg.get("hidden_act", "gelu_pytorch_tanh")]
        self.residual_dropout = cfg.get("residual_dropout", 0.0)

    def forward(self, x):
        x = self.c_proj(self.act(self.c_fc(x)))
        return F.dropout(x, p=self.residual_dropout, training=self.training)


class Glm4MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        H, I = cfg["hidden_size"], cfg["intermediate_size"]
        self.gate_up_proj = nn.Linear(H, 2 * I, bias=False)
        self.down_proj = nn.Linear(I, H, bias=False)
        self.activation_fn = base.ACT[cfg.get("hidden_act", "silu")]

    def forward(self, x):
        up_states = self.gate_up_proj(x)
        gate, up_states = up_states.chunk(2, dim=-1)
        up_states = up_states * self.activation_fn(gate)
        return self.down_proj(up_states)


class DecoderLayer(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        H = cfg["hidden_size"]
        self.glm = cfg["model_type"] == "glm4"
        self.self_attn = Attention(cfg, attn)
        if self.glm:
            eps = cfg.get("rms_norm_eps", 1.5625e-07)
            self.mlp = Glm4MLP(cfg)
            self.input_layernorm = base.LlamaRMSNorm(H, eps=eps)
            self.post_attention_layernorm = base.LlamaRMSNorm(H, eps=eps)
            self.post_self_attn_layernorm = base.LlamaRMSNorm(H, eps=eps)
            self.post_mlp_layernorm = base.LlamaRMSNorm(H, eps=eps)
        else:
            eps = cfg.get("norm_epsilon", 1e-5)
            self.mlp = Starcoder2MLP(cfg)
            self.input_layernorm = nn.LayerNorm(H, eps=eps)
            self.post_attention_layernorm = nn.LayerNorm(H, eps=eps)

    def forward(self, hidden_states, attention_mask, position_embeddings):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask)
        if self.glm:
            hidden_states = self.post_self_attn_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        if self.glm:
            hidden_states = self.post_mlp_layernorm(hidden_states)
        return residual + hidden_states


class Model(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        H = cfg["hidden_size"]
        self.cfg, self.attn = cfg, attn
        self.glm = cfg["model_type"] == "glm4"
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], H, cfg.get("pad_token_id"))
        self.layers = nn.ModuleList(DecoderLayer(cfg, attn) for _ in range(cfg["num_hidden_layers"]))
        if self.glm:
            self.norm = base.LlamaRMSNorm(H, eps=cfg.get("rms_norm_eps", 1.5625e-07))
        else:
            self.norm = nn.LayerNorm(H, eps=cfg.get("norm_epsilon", 1e-5))
        self.rotary_emb = base.RotaryEmbedding(cfg, rotary_dim_of(cfg))
        self.embedding_dropout = 0.0 if self.glm else cfg.get("embedding_dropout", 0.0)

    def forward(self, input_ids):
        inputs_embeds = self.embed_tokens(input_ids)
        B, S = input_ids.shape
        position_ids = torch.arange(0, S).unsqueeze(0)
        mask = base.causal_mask(self.cfg, MASK_ARCH[self.cfg["model_type"]], self.attn, B, S,
                                inputs_embeds.dtype, self.training)
        hidden_states = inputs_embeds
        if not self.glm:
            hidden_states = F.dropout(hidden_states, p=self.embedding_dropout, training=self.training)
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states, mask, position_embeddings)
        return self.norm(hidden_states)


class ForCausalLM(base.CausalLM):
    def __init__(self, cfg, attn="eager"):
        tie_default = cfg["model_type"] == "starcoder2"  # Starcoder2Config keeps PretrainedConfig's True
        super().__init__(cfg, "model", Model(cfg, attn), "embed_tokens", False,
                         cfg.get("tie_word_embeddings", tie_default))


def build(cfg, attn="eager"):
    return ForCausalLM(cfg, attn)


BUILDERS = {"starcoder2": build, "glm4": build}
