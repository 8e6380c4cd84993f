"""Plain-PyTorch Llama 4 text model (Llama4ForCausalLM) following transformers main, op by op (no
transformers import: the torch2 chroot has none). The rope inv_freq, repeat_kv, the SDPA attention function
and the causal mask are hf_models.py's (Llama's code); this file adds, from

  huggingface/transformers@000c33fdfde12e1ffafbfcdb3c926df5727a00b6 src/transformers/models/llama4/modeling_llama4.py
  (defaults: configuration_llama4.py Llama4TextConfig at 008e574391258935f3ecc3035c882e73bbcac419):
    Llama4TextExperts          gate_up_proj [E, H, 2I], down_proj [E, I, H] parameters; view(E, -1, H), bmm, chunk(2),
                               up * act(gate), bmm, view(-1, H)
    Llama4TextMLP              gate/up/down_proj without bias (intermediate_size_mlp on the dense layers)
    Llama4TextL2Norm           x.float() * rsqrt(mean(x^2) + eps), type_as(x), no weight
    Llama4TextRMSNorm          the same times a weight
    Llama4Router               nn.Linear(H, E, bias=False); topk; full_like(-inf).scatter_; sigmoid(.float()).to(dtype)
    Llama4TextMoe              reshape(-1, H); router; hidden_states.repeat(E, 1) * scores.transpose(0, 1).reshape(-1, 1);
                               experts; shared_expert(hidden_states).add_(routed_out.reshape(E, -1, H).sum(0))
    Llama4TextRotaryEmbedding  freqs_cis = torch.polar(ones_like(freqs), freqs) * attention_scaling (complex64)
    apply_rotary_emb           view_as_complex(x.float().reshape(..., -1, 2)) * freqs_cis[:, :, None, :],
                               view_as_real, flatten(3), type_as(x)
    eager_attention_forward    Llama's without the float32 softmax
    Llama4TextAttention        q/k/v/o_proj (bias attention_bias); RoPE then the L2 qk_norm on the layers
                               no_rope_layers marks 1; temperature tuning on the NoPE ones; transpose; attention
    Llama4TextDecoderLayer     MoE on moe_layers (every interleave_moe_layer_step-th), dense MLP elsewhere
    Llama4TextModel            chunked mask on the RoPE layers (none for SDPA while the keys are fewer than
                               attention_chunk_size), causal on the NoPE layers
    Llama4ForCausalLM          lm_head (untied by default); ForCausalLMLoss's logits.float().view(-1, V)

build(cfg, attn="eager"|"sdpa") -> nn.Module whose forward(input_ids) returns those logits; module names are
transformers' (model.layers.N.self_attn.q_proj, model.layers.N.feed_forward.experts.gate_up_proj, ...).
"""
import torch
import torch.nn as nn

import hf_models as base

DEFAULTS = dict(vocab_size=202048, hidden_size=5120, intermediate_size=8192, intermediate_size_mlp=16384,
                num_hidden_layers=48, num_attention_heads=40, num_key_value_heads=8, head_dim=128, hidden_act="silu",
                rms_norm_eps=1e-5, tie_word_embeddings=False, attention_dropout=0.0, num_experts_per_tok=1,
                num_local_experts=16, interleave_moe_layer_step=1, use_qk_norm=True, no_rope_layer_interval=4,
                attention_chunk_size=8192, attn_temperature_tuning=True, floor_scale=8192, attn_scale=0.1,
                attention_bias=False, rope_theta=500000.0)


def g(cfg, key):
    """Llama4TextConfig's defaults."""
    return cfg[key] if cfg.get(key) is not None else DEFAULTS[key]


def no_rope_layers(cfg):
    return cfg.get("no_rope_layers") or [int((i + 1) % g(cfg, "no_rope_layer_interval") != 0)
                                         for i in range(g(cfg, "num_hidden_layers"))]


def moe_layers(cfg):
    if cfg.get("moe_layers") is not None:
        return cfg["moe_layers"]
    step = g(cfg, "interleave_moe_layer_step")
    return list(range(step - 1, g(cfg, "num_hidden_layers"), step))


class Llama4TextExperts(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.num_experts = g(cfg, "num_local_experts")
        self.hidden_size = g(cfg, "hidden_size")
        self.expert_dim = g(cfg, "intermediate_size")
        self.gate_up_proj = nn.Parameter(torch.zeros(self.num_experts, self.hidden_size, 2 * self.expert_dim))
        self.down_proj = nn.Parameter(torch.empty((self.num_experts, self.expert_dim, self.hidden_size)))
        nn.init.normal_(self.gate_up_proj, std=0.02)
        nn.init.normal_(self.down_proj, std=0.02)
        self.act_fn = base.ACT[g(cfg, "hidden_act")]

    def forward(self, hidden_states):
        hidden_states = hidden_states.view(self.gate_up_proj.shape[0], -1, self.hidden_size)
        gate_up = torch.bmm(hidden_states, self.gate_up_proj)
        gate, up = gate_up.chunk(2, dim=-1)
        next_states = torch.bmm((up * self.act_fn(gate)), self.down_proj)
        return next_states.view(-1, self.hidden_size)


class Llama4TextMLP(nn.Module):
    def __init__(self, cfg, intermediate_size=None):
        super().__init__()
        H = g(cfg, "hidden_size")
        intermediate_size = intermediate_size or g(cfg, "intermediate_size")
        self.gate_proj = nn.Linear(H, intermediate_size, bias=False)
        self.up_proj = nn.Linear(H, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, H, bias=False)
        self.activation_fn = base.ACT[g(cfg, "hidden_act")]

    def forward(self, x):
        down_proj = self.activation_fn(self.gate_proj(x)) * self.up_proj(x)
        return self.down_proj(down_proj)


class Llama4TextL2Norm(nn.Module):
    def __init__(self, eps=1e-6):
        super().__init__()
        self.eps = eps

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        return self._norm(x.float()).type_as(x)


class Llama4TextRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float()).type_as(x)
        return output * self.weight


class Llama4Router(nn.Linear):
    def __init__(self, cfg):
        super().__init__(g(cfg, "hidden_size"), g(cfg, "num_local_experts"), bias=False)
        self.top_k = g(cfg, "num_experts_per_tok")

    def forward(self, hidden_states):
        router_logits = super().forward(hidden_states)
        router_top_value, router_indices = torch.topk(router_logits, self.top_k, dim=1)
        router_scores = torch.full_like(router_logits, float("-inf")).scatter_(1, router_indices, router_top_value)
        router_scores = torch.nn.functional.sigmoid(router_scores.float()).to(router_scores.dtype)
        return router_scores, router_logits


class Llama4TextMoe(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.hidden_dim = g(cfg, "hidden_size")
        self.experts = Llama4TextExperts(cfg)
        self.router = Llama4Router(cfg)
        self.shared_expert = Llama4TextMLP(cfg)

    def forward(self, hidden_states):
        hidden_states = hidden_states.reshape(-1, self.hidden_dim)
        router_scores, router_logits = self.router(hidden_states)
        routed_in = hidden_states.repeat(router_scores.shape[1], 1)
        routed_in = routed_in * router_scores.transpose(0, 1).reshape(-1, 1)
        routed_out = self.experts(routed_in)
        out = self.shared_expert(hidden_states)
        out.add_(routed_out.reshape(router_scores.shape[1], -1, routed_out.shape[-1]).sum(dim=0))
        return out, router_logits


class Llama4TextRotaryEmbedding(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        dim = g(cfg, "head_dim")
        self.register_buffer("inv_freq", base.rope_inv_freq(dict(cfg, rope_theta=g(cfg, "rope_theta")), dim),
                             persistent=False)
        self.attention_scaling = 1.0

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        with torch.autocast(device_type="cpu", enabled=False):
            freqs = (inv_freq_expanded.to(x.device) @ position_ids_expanded).transpose(1, 2)
            freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
            freqs_cis = freqs_cis * self.attention_scaling
        return freqs_cis


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    xq_out = torch.view_as_real(xq_ * freqs_cis[:, :, None, :]).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis[:, :, None, :]).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
    key_states = base.repeat_kv(key, module.num_key_value_groups)
    value_states = base.repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


class Llama4TextAttention(nn.Module):
    def __init__(self, cfg, layer_idx, attn):
        super().__init__()
        self.attn = attn
        H, nh, nkv = g(cfg, "hidden_size"), g(cfg, "num_attention_heads"), g(cfg, "num_key_value_heads")
        self.head_dim = g(cfg, "head_dim")
        self.num_key_value_groups = nh // nkv
        self.scaling = self.head_dim ** -0.5
        self.attn_scale = g(cfg, "attn_scale")
        self.floor_scale = g(cfg, "floor_scale")
        self.attn_temperature_tuning = g(cfg, "attn_temperature_tuning")
        self.attention_dropout = g(cfg, "attention_dropout")
        self.use_rope = no_rope_layers(cfg)[layer_idx]
        b = g(cfg, "attention_bias")
        self.q_proj = nn.Linear(H, nh * self.head_dim, bias=b)
        self.k_proj = nn.Linear(H, nkv * self.head_dim, bias=b)
        self.v_proj = nn.Linear(H, nkv * self.head_dim, bias=b)
        self.o_proj = nn.Linear(nh * self.head_dim, H, bias=b)
        if g(cfg, "use_qk_norm") and self.use_rope:
            self.qk_norm = Llama4TextL2Norm(g(cfg, "rms_norm_eps"))

    def forward(self, hidden_states, position_embeddings, attention_mask, cache_position):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape)
        key_states = self.k_proj(hidden_states).view(*input_shape, -1, self.head_dim)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        if self.use_rope:
            query_states, key_states = apply_rotary_emb(query_states, key_states, position_embeddings)
        if hasattr(self, "qk_norm"):
            query_states = self.qk_norm(query_states)
            key_states = self.qk_norm(key_states)
        if self.attn_temperature_tuning and not self.use_rope:
            attn_scales = (torch.log1p(torch.floor((cache_position.float() + 1.0) / self.floor_scale))
                           * self.attn_scale + 1.0)
            attn_scales = attn_scales.view((1, input_shape[-1], 1, 1)).expand((*input_shape, 1, 1))
            query_states = (query_states * attn_scales).to(query_states.dtype)
        query_states = query_states.transpose(1, 2)
        key_states = key_states.transpose(1, 2)
        if self.attn == "eager":
            fn = eager_attention_forward
        else:
            fn = base.sdpa_attention_forward
        attn_output, _ = fn(self, query_states, key_states, value_states, attention_mask,
                            dropout=0.0 if not self.training else self.attention_dropout, scaling=self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class Llama4TextDecoderLayer(nn.Module):
    def __init__(self, cfg, layer_idx, attn):
        super().__init__()
        H, eps = g(cfg, "hidden_size"), g(cfg, "rms_norm_eps")
        self.attention_type = "chunked_attention" if no_rope_layers(cfg)[layer_idx] else "full_attention"
        self.self_attn = Llama4TextAttention(cfg, layer_idx, attn)
        self.is_moe_layer = layer_idx in moe_layers(cfg)
        if self.is_moe_layer:
            self.feed_forward = Llama4TextMoe(cfg)
        else:
            self.feed_forward = Llama4TextMLP(cfg, intermediate_size=g(cfg, "intermediate_size_mlp"))
        self.input_layernorm = Llama4TextRMSNorm(H, eps=eps)
        self.post_attention_layernorm = Llama4TextRMSNorm(H, eps=eps)

    def forward(self, hidden_states, attention_mask, position_embeddings, cache_position):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        attention_states = self.self_attn(hidden_states, position_embeddings, attention_mask, cache_position)
        hidden_states = residual + attention_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.feed_forward(hidden_states)
        if self.is_moe_layer:
            hidden_states, _ = hidden_states
        return residual + hidden_states.view(residual.shape)


class Llama4TextModel(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        self.cfg, self.attn = cfg, attn
        H = g(cfg, "hidden_size")
        self.embed_tokens = nn.Embedding(g(cfg, "vocab_size"), H, cfg.get("pad_token_id"))
        self.layers = nn.ModuleList(Llama4TextDecoderLayer(cfg, i, attn) for i in range(g(cfg, "num_hidden_layers")))
        self.norm = Llama4TextRMSNorm(H, eps=g(cfg, "rms_norm_eps"))
        self.rotary_emb = Llama4TextRotaryEmbedding(cfg)

    def forward(self, input_ids=None, inputs_embeds=None):
        if inputs_embeds is None:
            inputs_embeds = self.embed_tokens(input_ids)
        B, S = inputs_embeds.shape[:2]
        cache_position = torch.arange(0, S)
        position_ids = cache_position.unsqueeze(0)
        # create_causal_mask / create_chunked_causal_mask: SDPA skips both while S < attention_chunk_size; the
        # chunked mask then equals the causal one (eager: the same 4-D float mask, which no op saves)
        assert S < g(self.cfg, "attention_chunk_size"), "the chunked mask is not replicated"
        mask = base.causal_mask(self.cfg, {"window": None}, self.attn, B, S, inputs_embeds.dtype, self.training)
        masks = {"full_attention": mask, "chunked_attention": mask}
        hidden_states = inputs_embeds
        freq_cis = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states, masks[layer.attention_type], freq_cis, cache_position)
        return self.norm(hidden_states)


class Llama4ForCausalLM(base.CausalLM):
    def __init__(self, cfg, attn="eager"):
        super().__init__(cfg, "model", Llama4TextModel(cfg, attn), "embed_tokens", False,
                         g(cfg, "tie_word_embeddings"), g(cfg, "hidden_size"), g(cfg, "vocab_size"), True)


def build(cfg, attn="eager"):
    return Llama4ForCausalLM(cfg, attn)


BUILDERS = {"llama4_text": build}
