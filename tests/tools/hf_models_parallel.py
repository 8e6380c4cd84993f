"""Plain-PyTorch decoder LMs whose layers run the attention and the MLP in parallel, following transformers op by
op (no transformers import). The rotary embedding, repeat_kv, the eager and SDPA attention functions and the
causal mask are hf_models.py's (Llama's code, which Phi copies); this file adds:

  models/phi/modular_phi.py at b39782da06db496e7c2528808f42718e54157709 (modeling_phi.py generated from it)
      PhiAttention (q/k/v_proj with bias; view, transpose(1, 2); qk_layernorm: nn.LayerNorm(head_dim) of the
      transposed q and k; q[..., :rotary_ndims] rotated by apply_rotary_pos_emb, cat with q[..., rotary_ndims:];
      the attention function; reshape; dense with bias), PhiMLP (CLIPMLP: fc1, ACT2FN[hidden_act], fc2),
      PhiDecoderLayer (input_layernorm; resid_dropout(attn) + resid_dropout(mlp) + residual), PhiModel
      (embed_dropout after the embeddings, one rotary embedding over int(head_dim * partial_rotary_factor)
      dims, final_layernorm), PhiForCausalLM (lm_head with bias=True, as modeling_phi.py at
      0faeaf39a9176bb1581969e51565851bfcc2dc98 builds it)
  models/falcon/modeling_falcon.py, the version with FalconModel.rotary_emb and the per-attention rotary_emb
  kept for BC ("TODO (raushan): remove in v4.46"; models/arch/falcon.json's "follows")
      FalconLinear (input @ weight.T, then + bias), FalconAttention (query_key_value fused; _split_heads for
      new_decoder_architecture (broadcast_to and flatten(2, 3): copies), multi_query (views of q, x[..., [-2], :]
      and x[..., [-1], :]: copies) or neither (views); transpose(1, 2).reshape; RoPE; SDPA without .contiguous()
      (training: no mask, is_causal; dropout_p 0) or eager (q @ k^T, /= sqrt(head_dim) in place, softmax in the
      hidden dtype of scores + mask, no dropout, @ v); view, permute(0, 2, 1, 3), reshape; dense), FalconMLP
      (dense_h_to_4h, get_activation(activation), dense_4h_to_h), FalconDecoderLayer (input_layernorm or
      ln_attn/ln_mlp; parallel_attn: mlp_output += attention_output; dropout_add(mlp_output, residual,
      hidden_dropout); without parallel_attn: dropout_add(attention_output, residual, attention_dropout),
      post_attention_layernorm, mlp, dropout_add), FalconModel (word_embeddings, rotary_emb, h, ln_f),
      FalconForCausalLM (lm_head tied to word_embeddings: PretrainedConfig's tie_word_embeddings=True)
The causal-LM head ends as ForCausalLMLoss starts: logits.float().view(-1, V).

build(cfg, attn="eager"|"sdpa") -> nn.Module whose forward(input_ids) returns those logits; module names are
transformers' (model.layers.N.self_attn.q_proj, transformer.h.N.self_attention.query_key_value, ...).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import hf_models as base

ACT = dict(base.ACT)
ACT["gelu_new"] = lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def _sdpa_hooks(query, out, merged):
    """hf_models.SDPA_HOOKS after an SDPA call whose query and key have the same heads (fp32: CUDA's efficient
    kernel). merged: the caller's permute(0, 2, 1, 3).reshape of the output: the copy the efficient kernel's
    [B, L, H, D] output spares, unless it is a view of the output already."""
    if merged.untyped_storage().data_ptr() == out.untyped_storage().data_ptr():
        merged = torch.empty(1)
    for hook in base.SDPA_HOOKS:
        hook(query, None, out, merged)


def run_decoder(model, input_ids, embed, dropout, layers, norm):
    """PhiModel.forward / FalconModel.forward in training without a cache or padding mask: the embeddings, the
    causal mask _update_causal_mask builds (None for sdpa), the dropout of the embeddings (Phi's), the rotary
    cos/sin of model.rotary_emb shared by every layer, the layers, the final norm."""
    inputs_embeds = embed(input_ids)
    B, S = input_ids.shape
    position_ids = torch.arange(0, S).unsqueeze(0)
    mask = base.causal_mask(model.cfg, {"window": None}, model.attn, B, S, inputs_embeds.dtype, model.training)
    hidden_states = dropout(inputs_embeds)
    position_embeddings = model.rotary_emb(hidden_states, position_ids)
    for layer in layers:
        hidden_states = layer(hidden_states, mask, position_embeddings)
    return norm(hidden_states)


class PhiAttention(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        self.attn = attn
        H, nh = cfg["hidden_size"], cfg["num_attention_heads"]
        nkv = cfg.get("num_key_value_heads") or nh
        self.head_dim = H // nh
        self.num_key_value_groups = nh // nkv
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = cfg.get("attention_dropout", 0.0)
        self.rotary_ndims = int(self.head_dim * cfg.get("partial_rotary_factor", 0.5))
        self.q_proj = nn.Linear(H, nh * self.head_dim, bias=True)
        self.k_proj = nn.Linear(H, nkv * self.head_dim, bias=True)
        self.v_proj = nn.Linear(H, nkv * self.head_dim, bias=True)
        self.dense = nn.Linear(nh * self.head_dim, H, bias=True)
        self.qk_layernorm = cfg.get("qk_layernorm", False)
        if self.qk_layernorm:
            eps = cfg.get("layer_norm_eps", 1e-5)
            self.q_layernorm = nn.LayerNorm(self.head_dim, eps=eps, elementwise_affine=True)
            self.k_layernorm = nn.LayerNorm(self.head_dim, eps=eps, elementwise_affine=True)

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        if self.qk_layernorm:
            query_states = self.q_layernorm(query_states)
            key_states = self.k_layernorm(key_states)
        cos, sin = position_embeddings
        rd = self.rotary_ndims
        query_rot, query_pass = query_states[..., :rd], query_states[..., rd:]
        key_rot, key_pass = key_states[..., :rd], key_states[..., rd:]
        query_rot, key_rot = base.apply_rotary_pos_emb(query_rot, key_rot, cos, sin)
        query_states = torch.cat((query_rot, query_pass), dim=-1)
        key_states = torch.cat((key_rot, key_pass), dim=-1)
        fn = base.eager_attention_forward if self.attn == "eager" else base.sdpa_attention_forward
        attn_output, _ = fn(self, query_states, key_states, value_states, attention_mask,
                            dropout=0.0 if not self.training else self.attention_dropout, scaling=self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.dense(attn_output)


class PhiMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.activation_fn = ACT[cfg.get("hidden_act", "gelu_new")]
        self.fc1 = nn.Linear(cfg["hidden_size"], cfg["intermediate_size"])
        self.fc2 = nn.Linear(cfg["intermediate_size"], cfg["hidden_size"])

    def forward(self, x):
        return self.fc2(self.activation_fn(self.fc1(x)))


class PhiDecoderLayer(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        self.self_attn = PhiAttention(cfg, attn)
        self.mlp = PhiMLP(cfg)
        self.input_layernorm = nn.LayerNorm(cfg["hidden_size"], eps=cfg.get("layer_norm_eps", 1e-5))
        self.resid_dropout = nn.Dropout(cfg.get("resid_pdrop", 0.0))

    def forward(self, hidden_states, attention_mask, position_embeddings):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        attn_outputs = self.self_attn(hidden_states, position_embeddings, attention_mask)
        attn_outputs = self.resid_dropout(attn_outputs)
        feed_forward_hidden_states = self.resid_dropout(self.mlp(hidden_states))
        return attn_outputs + feed_forward_hidden_states + residual


class PhiModel(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        H = cfg["hidden_size"]
        self.cfg, self.attn = cfg, attn
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], H, cfg.get("pad_token_id"))
        self.layers = nn.ModuleList(PhiDecoderLayer(cfg, attn) for _ in range(cfg["num_hidden_layers"]))
        self.embed_dropout = nn.Dropout(cfg.get("embd_pdrop", 0.0))
        self.final_layernorm = nn.LayerNorm(H, eps=cfg.get("layer_norm_eps", 1e-5))
        head_dim = H // cfg["num_attention_heads"]
        self.rotary_emb = base.RotaryEmbedding(cfg, int(head_dim * cfg.get("partial_rotary_factor", 0.5)))

    def forward(self, input_ids):
        return run_decoder(self, input_ids, self.embed_tokens, self.embed_dropout, self.layers, self.final_layernorm)


def PhiForCausalLM(cfg, attn="eager"):
    return base.CausalLM(cfg, "model", PhiModel(cfg, attn), "embed_tokens", True, cfg.get("tie_word_embeddings", False))


class FalconLinear(nn.Linear):
    def forward(self, input):
        hidden_states = input @ self.weight.T
        if self.bias is None:
            return hidden_states
        return hidden_states + self.bias


def dropout_add(x, residual, prob, training):
    out = F.dropout(x, p=prob, training=training)
    return residual + out


def falcon_kv_heads(cfg):
    nh = cfg["num_attention_heads"]
    nkv = cfg.get("num_kv_heads") or nh
    new = cfg.get("new_decoder_architecture", False)
    return nkv if (new or not cfg.get("multi_query", True)) else 1


class FalconAttention(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        self.attn = attn
        H, nh = cfg["hidden_size"], cfg["num_attention_heads"]
        self.num_heads, self.head_dim = nh, H // nh
        self.new_decoder_architecture = cfg.get("new_decoder_architecture", False)
        self.multi_query = cfg.get("multi_query", True)
        self.num_kv_heads = falcon_kv_heads(cfg)
        if self.new_decoder_architecture:
            qkv_out_dim = (self.num_kv_heads * 2 + nh) * self.head_dim
        elif self.multi_query:
            qkv_out_dim = H + 2 * self.head_dim
        else:
            qkv_out_dim = 3 * H
        bias = cfg.get("bias", False)
        self.query_key_value = FalconLinear(H, qkv_out_dim, bias=bias)
        self.dense = FalconLinear(H, H, bias=bias)
        # the per-attention rotary embedding kept for BC: only its inv_freq buffer, never called
        self.rotary_emb = base.RotaryEmbedding(cfg, self.head_dim)

    def _split_heads(self, fused_qkv):
        if self.new_decoder_architecture:
            batch, seq_len, _ = fused_qkv.shape
            qkv = fused_qkv.view(batch, seq_len, -1, self.num_heads // self.num_kv_heads + 2, self.head_dim)
            query = qkv[:, :, :, :-2]
            key = qkv[:, :, :, [-2]]
            value = qkv[:, :, :, [-1]]
            key = torch.broadcast_to(key, query.shape)
            value = torch.broadcast_to(value, query.shape)
            query, key, value = [x.flatten(2, 3) for x in (query, key, value)]
            return query, key, value
        batch_size, seq_length, _ = fused_qkv.shape
        if not self.multi_query:
            fused_qkv = fused_qkv.view(batch_size, seq_length, self.num_heads, 3, self.head_dim)
            return fused_qkv[..., 0, :], fused_qkv[..., 1, :], fused_qkv[..., 2, :]
        fused_qkv = fused_qkv.view(batch_size, seq_length, self.num_heads + 2, self.head_dim)
        return fused_qkv[..., :-2, :], fused_qkv[..., [-2], :], fused_qkv[..., [-1], :]

    def forward(self, hidden_states, attention_mask, position_embeddings):
        fused_qkv = self.query_key_value(hidden_states)
        num_kv_heads = self.num_heads if self.new_decoder_architecture else self.num_kv_heads
        query_layer, key_layer, value_layer = self._split_heads(fused_qkv)
        batch_size, query_length, _, _ = query_layer.shape
        query_layer = query_layer.transpose(1, 2).reshape(batch_size, self.num_heads, query_length, self.head_dim)
        key_layer = key_layer.transpose(1, 2).reshape(batch_size, num_kv_heads, query_length, self.head_dim)
        value_layer = value_layer.transpose(1, 2).reshape(batch_size, num_kv_heads, query_length, self.head_dim)
        cos, sin = position_embeddings
        query_layer, key_layer = base.apply_rotary_pos_emb(query_layer, key_layer, cos, sin)
        if self.attn == "sdpa":
            # training, no padding mask: _update_causal_mask returns None and SDPA gets is_causal
            attn_output = F.scaled_dot_product_attention(query_layer, key_layer, value_layer, attn_mask=None,
                                                         dropout_p=0.0, is_causal=query_length > 1)
        else:
            attention_scores = query_layer @ key_layer.transpose(-1, -2)
            attention_scores /= math.sqrt(self.head_dim)
            attention_scores = F.softmax(attention_scores + attention_mask, dim=-1, dtype=hidden_states.dtype)
            attn_output = attention_scores @ value_layer
        out = attn_output
        attn_output = attn_output.view(batch_size, self.num_heads, query_length, self.head_dim)
        attn_output = attn_output.permute(0, 2, 1, 3)
        attn_output = attn_output.reshape(batch_size, query_length, self.num_heads * self.head_dim)
        if self.attn == "sdpa" and num_kv_heads == self.num_heads:
            _sdpa_hooks(query_layer, out, attn_output)
        return self.dense(attn_output)


class FalconMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        H = cfg["hidden_size"]
        ffn = cfg.get("ffn_hidden_size") or 4 * H
        bias = cfg.get("bias", False)
        self.dense_h_to_4h = FalconLinear(H, ffn, bias=bias)
        self.act = {"gelu": F.gelu, "relu": F.relu, "silu": F.silu}[cfg.get("activation", "gelu")]
        self.dense_4h_to_h = FalconLinear(ffn, H, bias=bias)

    def forward(self, x):
        return self.dense_4h_to_h(self.act(self.dense_h_to_4h(x)))


class FalconDecoderLayer(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        H, eps = cfg["hidden_size"], cfg.get("layer_norm_epsilon", 1e-5)
        self.self_attention = FalconAttention(cfg, attn)
        self.mlp = FalconMLP(cfg)
        self.hidden_dropout = cfg.get("hidden_dropout", 0.0)
        self.attention_dropout = cfg.get("attention_dropout", 0.0)
        self.new = cfg.get("new_decoder_architecture", False)
        self.parallel = cfg.get("parallel_attn", True)
        self.num_ln = cfg.get("num_ln_in_parallel_attn")
        if self.num_ln is None and self.new:
            self.num_ln = 2
        if not self.parallel:
            self.post_attention_layernorm = nn.LayerNorm(H, eps=eps)
            self.input_layernorm = nn.LayerNorm(H, eps=eps)
        elif self.num_ln == 2:
            self.ln_attn = nn.LayerNorm(H, eps=eps)
            self.ln_mlp = nn.LayerNorm(H, eps=eps)
        else:
            self.input_layernorm = nn.LayerNorm(H, eps=eps)

    def forward(self, hidden_states, attention_mask, position_embeddings):
        residual = hidden_states
        if self.new and self.num_ln == 2:
            attention_layernorm_out = self.ln_attn(hidden_states)
            mlp_layernorm_out = self.ln_mlp(hidden_states)
        else:
            attention_layernorm_out = self.input_layernorm(hidden_states)
        attention_output = self.self_attention(attention_layernorm_out, attention_mask, position_embeddings)
        if not self.new:
            if self.parallel:
                mlp_layernorm_out = attention_layernorm_out
            else:
                residual = dropout_add(attention_output, residual, self.attention_dropout, training=self.training)
                mlp_layernorm_out = self.post_attention_layernorm(residual)
        if self.new and self.parallel and self.num_ln == 1:
            mlp_layernorm_out = attention_layernorm_out
        mlp_output = self.mlp(mlp_layernorm_out)
        if self.new or self.parallel:
            mlp_output += attention_output
        return dropout_add(mlp_output, residual, self.hidden_dropout, training=self.training)


class FalconModel(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        H = cfg["hidden_size"]
        self.cfg, self.attn = cfg, attn
        self.word_embeddings = nn.Embedding(cfg["vocab_size"], H)
        self.h = nn.ModuleList(FalconDecoderLayer(cfg, attn) for _ in range(cfg["num_hidden_layers"]))
        self.ln_f = nn.LayerNorm(H, eps=cfg.get("layer_norm_epsilon", 1e-5))
        self.rotary_emb = base.RotaryEmbedding(cfg, H // cfg["num_attention_heads"])

    def forward(self, input_ids):
        return run_decoder(self, input_ids, self.word_embeddings, lambda x: x, self.h, self.ln_f)


def FalconForCausalLM(cfg, attn="eager"):
    assert not cfg.get("alibi", False), "alibi is not followed here (models/arch/falcon.json refuses it)"
    return base.CausalLM(cfg, "transformer", FalconModel(cfg, attn), "word_embeddings", False,
                    cfg.get("tie_word_embeddings", True))


BUILDERS = {"phi": PhiForCausalLM, "falcon": FalconForCausalLM}
