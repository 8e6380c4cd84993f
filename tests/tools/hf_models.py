"""Plain-PyTorch decoder LMs following transformers v4.48.0, op by op (no transformers import: Debian 13,
where the torch2 chroot comes from, has no python3-transformers).

Followed, at tag v4.48.0 (src/transformers/...):
  models/llama/modeling_llama.py    LlamaRMSNorm, LlamaRotaryEmbedding, rotate_half, apply_rotary_pos_emb,
                                    LlamaMLP, repeat_kv, eager_attention_forward, LlamaAttention,
                                    LlamaDecoderLayer, LlamaModel, LlamaForCausalLM
  modeling_rope_utils.py            _compute_default_rope_parameters, _compute_llama3_parameters
                                    (the inv_freq buffer: dim/2 float32, non-persistent)
  integrations/sdpa_attention.py    sdpa_attention_forward (repeat_kv, .contiguous(), is_causal when no mask)
  models/mistral/modeling_mistral.py  Llama + sliding_window (the causal mask then also hides keys more than
                                    sliding_window back, and SDPA gets it as attn_mask once seq >= window)
  models/qwen2/modeling_qwen2.py    Llama + q/k/v biases (o_proj without); sliding window only when
                                    use_sliding_window (layers >= max_window_layers)
  models/phi3/modeling_phi3.py      fused qkv_proj sliced into q, k, v; gate_up_proj chunked,
                                    up * act(gate); resid_attn_dropout / resid_mlp_dropout (resid_pdrop)
  models/gemma/modeling_gemma.py    GemmaRMSNorm (float32, * (1 + weight)), embeddings * sqrt(hidden_size)
                                    as a 0-d tensor of the hidden dtype, head_dim from the config, tied lm_head
  models/gemma2/modeling_gemma2.py  Gemma + post_attention / pre_feedforward / post_feedforward norms,
                                    attention scale query_pre_attn_scalar**-0.5, attention logit soft-capping
                                    (eager only: sdpa_attention_forward ignores softcap), sliding window on
                                    even layers, final logit soft-capping; the 4-D mask is always built (also
                                    for sdpa); Gemma2PreTrainedModel._check_and_enable_sdpa turns the default
                                    sdpa into eager.
Followed at transformers main (the files' commits in models/arch/<model_type>.json's "follows"):
  models/qwen3/modeling_qwen3.py    Llama + Qwen3RMSNorm q_norm/k_norm over head_dim (after the view, before the
                                    transpose), attention_bias on q/k/v/o, head_dim 128 by default
  models/olmo2/modeling_olmo2.py    no input_layernorm: self_attn, post_attention_layernorm, add; mlp,
                                    post_feedforward_layernorm, add; q_norm/k_norm over the whole q_proj/k_proj
                                    output before the view; Olmo2RMSNorm (weight * x).to(dtype); cos/sin left
                                    float32 and q/k cast back after the rotation
  models/smollm3/modeling_smollm3.py  Llama without RoPE on the layers no_rope_layers marks 0 (every
                                    no_rope_layer_interval-th by default), tied embeddings by default
  models/granite/modular_granite.py inputs_embeds * embedding_multiplier, residual + h * residual_multiplier,
                                    attention scaling = attention_multiplier, logits / logits_scaling
The causal-LM head ends as ForCausalLMLoss (loss/loss_utils.py) starts: logits.float().view(-1, V).

build(cfg, attn="eager"|"sdpa") -> nn.Module whose forward(input_ids) returns those logits; module names are
transformers' (model.embed_tokens, model.layers.N.self_attn.q_proj, ..., lm_head).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

ACT = {
    "silu": F.silu, "swish": F.silu, "gelu": F.gelu, "relu": F.relu,
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
}

# model_type -> architecture features
ARCH = {
    "llama": dict(norm="llama", qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias="mlp_bias",
                  fused_qkv=False, window=None, embed_scale=False, sandwich=False, tie_default=False),
    "mistral": dict(norm="llama", qkv_bias=False, o_bias=False, mlp_bias=False, fused_qkv=False,
                    window="sliding_window", embed_scale=False, sandwich=False, tie_default=False),
    "qwen2": dict(norm="llama", qkv_bias=True, o_bias=False, mlp_bias=False, fused_qkv=False,
                  window="qwen2", embed_scale=False, sandwich=False, tie_default=False),
    "phi3": dict(norm="llama", qkv_bias=False, o_bias=False, mlp_bias=False, fused_qkv=True,
                 window="sliding_window", embed_scale=False, sandwich=False, tie_default=False),
    "gemma": dict(norm="gemma", qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias=False,
                  fused_qkv=False, window=None, embed_scale=True, sandwich=False, tie_default=True),
    "gemma2": dict(norm="gemma", qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias=False,
                   fused_qkv=False, window="gemma2", embed_scale=True, sandwich=True, tie_default=True),
    "qwen3": dict(norm="llama", qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias=False,
                  fused_qkv=False, window="qwen2", embed_scale=False, sandwich=False, tie_default=False,
                  qk_norm="head", head_dim_default=128),
    "olmo2": dict(norm="olmo2", qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias=False,
                  fused_qkv=False, window=None, embed_scale=False, sandwich=False, tie_default=False,
                  qk_norm="full", post_norm=True, rope_float32=True),
    "smollm3": dict(norm="llama", qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias="mlp_bias",
                    fused_qkv=False, window="smollm3", embed_scale=False, sandwich=False, tie_default=True,
                    nope=True),
    "gemma3_text": dict(norm="gemma", qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias=False,
                        fused_qkv=False, window="gemma3", embed_scale="buffer", sandwich=True, tie_default=True,
                        qk_norm="head_gemma", local_rope=True),
    "granite": dict(norm="llama", qkv_bias="attention_bias", o_bias="attention_bias", mlp_bias="mlp_bias",
                    fused_qkv=False, window=None, embed_scale=False, sandwich=False, tie_default=False,
                    mup=True),
}


def head_dim_of(cfg, arch):
    return cfg.get("head_dim") or arch.get("head_dim_default") or cfg["hidden_size"] // cfg["num_attention_heads"]


def uses_rope(cfg, arch, layer_idx):
    """SmolLM3Attention.use_rope = config.no_rope_layers[layer_idx] (default: int((i + 1) % interval != 0))."""
    if not arch.get("nope"):
        return True
    nrl = cfg.get("no_rope_layers")
    if nrl is None:
        return bool((layer_idx + 1) % cfg.get("no_rope_layer_interval", 4) != 0)
    return bool(nrl[layer_idx])


def _flag(cfg, spec):
    return bool(cfg.get(spec, False)) if isinstance(spec, str) else spec


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class Olmo2RMSNorm(LlamaRMSNorm):
    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return (self.weight * hidden_states).to(input_dtype)


def norm_class(arch):
    return {"gemma": GemmaRMSNorm, "olmo2": Olmo2RMSNorm}.get(arch["norm"], LlamaRMSNorm)


class GemmaRMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


def rope_inv_freq(cfg, dim):
    """modeling_rope_utils: default and llama3 inv_freq (float32 [dim/2]); other types: their shape is the
    same, but only these two are exercised here."""
    base = cfg.get("rope_theta", (cfg.get("rope_parameters") or {}).get("rope_theta", 10000.0))
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    rs = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    rope_type = rs.get("rope_type", rs.get("type", "default"))
    if rope_type == "llama3":
        factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        low_wl, high_wl = old / lo, old / hi
        wavelen = 2 * math.pi / inv_freq
        inv_l = torch.where(wavelen > low_wl, inv_freq / factor, inv_freq)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
        is_med = ~(wavelen < high_wl) * ~(wavelen > low_wl)
        inv_freq = torch.where(is_med, smoothed, inv_l)
    elif rope_type not in ("default", "linear", "dynamic"):
        raise ValueError("rope type %s not modelled by this reference" % rope_type)
    return inv_freq


class RotaryEmbedding(nn.Module):
    """LlamaRotaryEmbedding (v4.48: one per model, its cos/sin shared by every layer)."""

    def __init__(self, cfg, dim, keep_float32=False, interleave=False):
        super().__init__()
        self.keep_float32 = keep_float32  # Olmo2RotaryEmbedding: return cos, sin (float32)
        self.interleave = interleave  # CohereRotaryEmbedding: repeat_interleave(freqs, 2, dim=-1), not cat
        inv_freq = rope_inv_freq(cfg, dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_scaling = 1.0

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        with torch.autocast(device_type="cpu", enabled=False):
            freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
            if self.interleave:
                emb = torch.repeat_interleave(freqs, 2, dim=-1)
            else:
                emb = torch.cat((freqs, freqs), dim=-1)
            cos = emb.cos()
            sin = emb.sin()
        cos = cos * self.attention_scaling
        sin = sin * self.attention_scaling
        if self.keep_float32:
            return cos, sin
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def titan_rotary(x, freqs_cis):
    """torchtitan v0.2.0 apply_rotary_emb for one of xq, xk ([bs, seqlen, heads, head_dim]); freqs_cis complex64
    [seqlen, head_dim // 2] (reshape_for_broadcast: [1, seqlen, 1, head_dim // 2])."""
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    fc = freqs_cis.view(1, x_.shape[1], 1, x_.shape[-1])
    return torch.view_as_real(x_ * fc).flatten(3).type_as(x)


def titan_repeat_kv(x, n_rep):
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return torch.unsqueeze(x, dim=3).expand(bs, slen, n_kv_heads, n_rep, head_dim).reshape(
        bs, slen, n_kv_heads * n_rep, head_dim)


def set_stack(loop, release):
    """The replica's stack for one measurement under memest's --loop LOOP and --transformers RELEASE (400 +
    minor, 500 for 5.x): the model computes its own loss unless torchtitan's loop calls it, whose own
    attention it then runs."""
    global LABELS, TRANSFORMERS, NATIVE
    LABELS, TRANSFORMERS = loop != "torchtitan", release
    NATIVE = "torchtitan" if loop == "torchtitan" else None


def reset_stack():
    """The replica as it is built by default (LABELS, TRANSFORMERS, NATIVE as declared above)."""
    global LABELS, TRANSFORMERS, NATIVE
    LABELS, TRANSFORMERS, NATIVE = True, None, None


def native_prepare(model, seqlen):
    """NATIVE == "torchtitan": torchtitan's Transformer buffer freqs_cis (precompute_freqs_cis: complex64
    [max_seq_len, head_dim // 2], max_seq_len = training.seq_len, register_buffer(persistent=True)), one
    per model, which every layer's attention reads (as an attribute here, registered once on the model)."""
    attn = next(m for m in model.modules() if hasattr(m, "head_dim") and hasattr(m, "q_proj"))
    D = attn.head_dim
    freqs = torch.outer(torch.arange(seqlen, dtype=torch.float32),
                        1.0 / (10000.0 ** (torch.arange(0, D, 2)[: D // 2].float() / D)))
    model.register_buffer("freqs_cis", torch.polar(torch.ones_like(freqs), freqs), persistent=True)
    for m in model.modules():
        if hasattr(m, "head_dim") and hasattr(m, "q_proj"):
            m.titan_freqs_cis = model.freqs_cis


def titan_attention(module, hidden_states, position_embeddings):
    """torchtitan's Attention.forward (NATIVE), reading the model's freqs_cis (native_prepare)."""
    bs, seqlen, _ = hidden_states.shape
    D = module.head_dim
    xq = module.q_proj(hidden_states).view(bs, seqlen, -1, D)
    xk = module.k_proj(hidden_states).view(bs, seqlen, -1, D)
    xv = module.v_proj(hidden_states).view(bs, seqlen, -1, D)
    freqs_cis = module.titan_freqs_cis[0:seqlen]
    xq, xk = titan_rotary(xq, freqs_cis), titan_rotary(xk, freqs_cis)
    keys = titan_repeat_kv(xk, module.num_key_value_groups)
    values = titan_repeat_kv(xv, module.num_key_value_groups)
    xq, xk, xv = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
    output = F.scaled_dot_product_attention(xq, xk, xv, scale=module.scaling, is_causal=True)
    output = output.transpose(1, 2).contiguous().view(bs, seqlen, -1)
    return module.o_proj(output)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, softcap=None):
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if softcap is not None:  # gemma2
        attn_weights = attn_weights / softcap
        attn_weights = torch.tanh(attn_weights)
        attn_weights = attn_weights * softcap
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


SDPA_HOOKS = []  # fn(query, mask, sdpa output, its transpose(1, 2).contiguous()) after each SDPA call

# The transformers release the replica follows (major * 100 + minor; 500: 5.x), which tests/tools/
# release_peak.py and loop_peak.py set (memest --transformers); None, every other generator's: v4.48.0's
# attention and the caller's loss over all B * S positions, which is 4.49's to 4.53's code for what memest
# models (their tests pass --transformers 4.49):
#   sdpa_attention_forward: q, k, v .contiguous() from 4.48 to 4.55 (up to 4.47 only on CUDA with a mask:
#     LlamaSdpaAttention); none from 4.56 (transformers main integrations/sdpa_attention.py, 00c238bd);
#     use_gqa_in_sdpa from 4.54: torch >= 2.5 and no mask -> enable_gqa=True instead of repeat_kv;
#   ForCausalLMLoss up to 4.48: logits[..., :-1, :].contiguous() of the float32 logits; 4.49 on the labels
#     are padded and the logits viewed whole;
#   DynamicCache (use_cache in training without checkpointing): references to the post-RoPE key and the
#     value up to 4.55, torch.cat([empty, key_states], dim=-2) copies from 4.56, which the attention reads.
TRANSFORMERS = None  # None: the original replica (4.48's attention, the caller's loss over all B * S rows)
# The forward's DynamicCache: None (no use_cache), "drop" (built, not kept: the caller keeps only the
# last output, memest --loop plain), or a list the caller keeps (the Trainer's outputs)
CACHE = None
# "torchtitan": the SDPA attention is torchtitan's own (v0.2.0 torchtitan/models/llama3/model/model.py
# Attention.forward and apply_rotary_emb, lines 114-160 and 225-258): the q, k, v projections viewed
# [bs, seqlen, heads, head_dim], RoPE in complex float32 (view_as_complex(x.float().reshape(..., -1, 2)) *
# freqs_cis, view_as_real, flatten(3), type_as(x)), repeat_kv's expand + reshape (a copy at the query
# heads), transpose(1, 2) without .contiguous(), F.scaled_dot_product_attention(q, k, v, is_causal=True),
# output.transpose(1, 2).contiguous(); None: transformers' code (memest --loop torchtitan: native_model)
NATIVE = None
# fn(tensor) for each tensor autograd saves inside the GQA emulation below (whose saved_tensors_hooks
# replace the caller's): tests/tools/release_peak.py's saved-bytes record
SAVED_PACK = None


def _gqa_flash_cuda(query, key, value, n_rep, scaling, is_causal):
    """CUDA's flash kernel with native GQA (PyTorch 2.6 cuda/attention.cu; flash_api.cpp reads k, v at Hkv
    heads and saves them so), which the CPU cannot run: it takes the math path for any enable_gqa=True call.
    Emulated: repeat_kv copies for the CPU's flash kernel, and saved_tensors_hooks that save the Hkv key and
    value in their place (the repeat made again in backward: a transient the size of CUDA's dk_expanded,
    dv_expanded [B, S, Hq, D] of mha_bwd)."""
    kr, vr = repeat_kv(key, n_rep), repeat_kv(value, n_rep)
    src = {kr.untyped_storage().data_ptr(): key, vr.untyped_storage().data_ptr(): value}

    def pack(t):
        orig = src.get(t.untyped_storage().data_ptr())
        if orig is not None and t.shape == (orig.shape[0], orig.shape[1] * n_rep) + tuple(orig.shape[2:]):
            if SAVED_PACK:
                SAVED_PACK(orig)
            return ("repeat", orig)
        if SAVED_PACK:
            SAVED_PACK(t)
        return t

    def unpack(p):
        if not isinstance(p, tuple):
            return p
        return repeat_kv(p[1], n_rep).contiguous()

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        return F.scaled_dot_product_attention(query, kr, vr, scale=scaling, is_causal=is_causal)


def sdpa_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, softcap=None):
    # integrations/sdpa_attention.py: softcap (and sliding_window) arrive in **kwargs and are ignored
    rel = 448 if TRANSFORMERS is None else TRANSFORMERS
    gqa = rel >= 454 and attention_mask is None and module.num_key_value_groups > 1
    if not gqa:
        key = repeat_kv(key, module.num_key_value_groups)
        value = repeat_kv(value, module.num_key_value_groups)
    causal_mask = attention_mask
    if attention_mask is not None:
        causal_mask = causal_mask[:, :, :, : key.shape[-2]]
    if 448 <= rel < 456 or (rel < 448 and causal_mask is not None):
        query = query.contiguous()
        key = key.contiguous()
        value = value.contiguous()
    is_causal = causal_mask is None and query.shape[2] > 1
    if gqa and query.dtype != torch.float32:  # CUDA flash with native GQA (float32: math on both)
        attn_output = _gqa_flash_cuda(query, key, value, module.num_key_value_groups, scaling, is_causal)
    else:
        attn_output = F.scaled_dot_product_attention(query, key, value, attn_mask=causal_mask, dropout_p=dropout,
                                                     scale=scaling, is_causal=is_causal, enable_gqa=gqa)
    out = attn_output
    attn_output = attn_output.transpose(1, 2).contiguous()
    for hook in SDPA_HOOKS:  # not transformers': lets the reference name the tensors (hf_figures.py)
        hook(query, causal_mask, out, attn_output)
    return attn_output, None


class Attention(nn.Module):
    def __init__(self, cfg, arch, layer_idx, attn):
        super().__init__()
        self.attn = attn
        H, nh = cfg["hidden_size"], cfg["num_attention_heads"]
        nkv = cfg.get("num_key_value_heads") or nh
        self.head_dim = head_dim_of(cfg, arch)
        self.num_heads, self.num_kv = nh, nkv
        self.num_key_value_groups = nh // nkv
        self.attention_dropout = cfg.get("attention_dropout", 0.0)
        if arch is ARCH["gemma2"] or arch is ARCH["gemma3_text"]:
            self.scaling = cfg["query_pre_attn_scalar"] ** -0.5
            self.softcap = cfg.get("attn_logit_softcapping")
        elif arch.get("mup"):  # GraniteAttention
            self.scaling = cfg.get("attention_multiplier", 1.0)
            self.softcap = None
        else:
            self.scaling = self.head_dim ** -0.5
            self.softcap = None
        self.qk_norm = arch.get("qk_norm")
        self.use_rope = uses_rope(cfg, arch, layer_idx)
        self.rope_cast = bool(arch.get("rope_float32"))
        eps = cfg.get("rms_norm_eps", 1e-6)
        if self.qk_norm == "head":  # Qwen3Attention
            self.q_norm = LlamaRMSNorm(self.head_dim, eps=eps)
            self.k_norm = LlamaRMSNorm(self.head_dim, eps=eps)
        elif self.qk_norm == "head_gemma":  # Gemma3Attention: Gemma3RMSNorm(head_dim)
            self.q_norm = GemmaRMSNorm(self.head_dim, eps=eps)
            self.k_norm = GemmaRMSNorm(self.head_dim, eps=eps)
        elif self.qk_norm == "full":  # Olmo2Attention
            self.q_norm = Olmo2RMSNorm(nh * self.head_dim, eps=eps)
            self.k_norm = Olmo2RMSNorm(nkv * self.head_dim, eps=eps)
        qkv_bias, o_bias = _flag(cfg, arch["qkv_bias"]), _flag(cfg, arch["o_bias"])
        self.fused = arch["fused_qkv"]
        if self.fused:  # Phi3Attention
            op_size = nh * self.head_dim + 2 * (nkv * self.head_dim)
            self.o_proj = nn.Linear(nh * self.head_dim, H, bias=False)
            self.qkv_proj = nn.Linear(H, op_size, bias=False)
        else:
            self.q_proj = nn.Linear(H, nh * self.head_dim, bias=qkv_bias)
            self.k_proj = nn.Linear(H, nkv * self.head_dim, bias=qkv_bias)
            self.v_proj = nn.Linear(H, nkv * self.head_dim, bias=qkv_bias)
            self.o_proj = nn.Linear(nh * self.head_dim, H, bias=o_bias)

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        if NATIVE == "torchtitan" and self.attn != "eager":
            assert not self.fused and not self.qk_norm and self.use_rope and attention_mask is None
            return titan_attention(self, hidden_states, position_embeddings)
        if self.fused:
            qkv = self.qkv_proj(hidden_states)
            query_pos = self.num_heads * self.head_dim
            query_states = qkv[..., :query_pos]
            key_states = qkv[..., query_pos: query_pos + self.num_kv * self.head_dim]
            value_states = qkv[..., query_pos + self.num_kv * self.head_dim:]
            query_states = query_states.view(hidden_shape).transpose(1, 2)
            key_states = key_states.view(hidden_shape).transpose(1, 2)
            value_states = value_states.view(hidden_shape).transpose(1, 2)
        elif self.qk_norm in ("head", "head_gemma"):
            query_states = self.q_norm(self.q_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
            key_states = self.k_norm(self.k_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
            value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        elif self.qk_norm == "full":
            query_states = self.q_norm(self.q_proj(hidden_states)).view(hidden_shape).transpose(1, 2)
            key_states = self.k_norm(self.k_proj(hidden_states)).view(hidden_shape).transpose(1, 2)
            value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        else:
            query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
            key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
            value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        if self.use_rope:
            cos, sin = position_embeddings
            q_type, k_type = query_states.dtype, key_states.dtype
            query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
            if self.rope_cast:  # Olmo2's apply_rotary_pos_emb: q_embed.to(q_type), k_embed.to(k_type)
                query_states, key_states = query_states.to(q_type), key_states.to(k_type)
        if CACHE is not None:  # past_key_values.update(key_states, value_states, self.layer_idx, ...)
            if TRANSFORMERS is not None and TRANSFORMERS >= 456:
                empty = torch.tensor([], dtype=key_states.dtype)
                key_states = torch.cat([empty, key_states], dim=-2)
                value_states = torch.cat([empty, value_states], dim=-2)
            if isinstance(CACHE, list):
                CACHE.append((key_states, value_states))
        fn = eager_attention_forward if self.attn == "eager" else sdpa_attention_forward
        attn_output, _ = fn(self, query_states, key_states, value_states, attention_mask,
                            dropout=0.0 if not self.training else self.attention_dropout, scaling=self.scaling,
                            softcap=self.softcap)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class MLP(nn.Module):
    def __init__(self, cfg, arch):
        super().__init__()
        H, I = cfg["hidden_size"], cfg["intermediate_size"]
        act = (cfg.get("hidden_activation", "gelu_pytorch_tanh") if arch in (ARCH["gemma2"], ARCH["gemma3_text"])
               else cfg.get("hidden_act", "silu"))
        if arch is ARCH["gemma"]:
            act = cfg.get("hidden_act", "gelu_pytorch_tanh")
        self.act_fn = ACT[act]
        self.fused = arch["fused_qkv"]
        if self.fused:  # Phi3MLP
            self.gate_up_proj = nn.Linear(H, 2 * I, bias=False)
            self.down_proj = nn.Linear(I, H, bias=False)
        else:
            b = _flag(cfg, arch["mlp_bias"])
            self.gate_proj = nn.Linear(H, I, bias=b)
            self.up_proj = nn.Linear(H, I, bias=b)
            self.down_proj = nn.Linear(I, H, bias=b)

    def forward(self, x):
        if self.fused:
            up_states = self.gate_up_proj(x)
            gate, up_states = up_states.chunk(2, dim=-1)
            up_states = up_states * self.act_fn(gate)
            return self.down_proj(up_states)
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg, arch, layer_idx, attn):
        super().__init__()
        Norm = norm_class(arch)
        H, eps = cfg["hidden_size"], cfg.get("rms_norm_eps", 1e-6)
        self.arch = arch
        self.residual_multiplier = cfg.get("residual_multiplier", 1.0) if arch.get("mup") else None
        self.self_attn = Attention(cfg, arch, layer_idx, attn)
        self.mlp = MLP(cfg, arch)
        if not arch.get("post_norm"):
            self.input_layernorm = Norm(H, eps=eps)
        self.post_attention_layernorm = Norm(H, eps=eps)
        if arch.get("post_norm"):  # Olmo2DecoderLayer
            self.post_feedforward_layernorm = Norm(H, eps=eps)
        if arch["sandwich"]:
            self.pre_feedforward_layernorm = Norm(H, eps=eps)
            self.post_feedforward_layernorm = Norm(H, eps=eps)
        if arch["fused_qkv"]:  # Phi3DecoderLayer
            self.resid_attn_dropout = nn.Dropout(cfg.get("resid_pdrop", 0.0))
            self.resid_mlp_dropout = nn.Dropout(cfg.get("resid_pdrop", 0.0))
        self.sliding_window = None
        w = arch["window"]
        if w == "sliding_window":
            self.sliding_window = cfg.get("sliding_window")
        elif w == "gemma2" and not bool(layer_idx % 2):
            self.sliding_window = cfg.get("sliding_window")
        elif w == "qwen2" and cfg.get("use_sliding_window") and layer_idx >= cfg.get("max_window_layers", 28):
            self.sliding_window = cfg.get("sliding_window")
        elif w == "smollm3" and cfg.get("use_sliding_window") and not uses_rope(cfg, arch, layer_idx):
            self.sliding_window = cfg.get("sliding_window")
        elif w == "gemma3" and bool((layer_idx + 1) % cfg.get("sliding_window_pattern", 6)):
            self.sliding_window = cfg.get("sliding_window")  # Gemma3Attention.is_sliding
        self.local_rope = bool(arch.get("local_rope")) and self.sliding_window is not None

    def forward(self, hidden_states, attention_mask, position_embeddings):
        if isinstance(position_embeddings, dict):  # Gemma3DecoderLayer: the local pair on sliding layers
            position_embeddings = position_embeddings["local" if self.local_rope else "global"]
        if self.arch["sandwich"] and self.sliding_window is not None and attention_mask is not None:
            # Gemma2DecoderLayer (eager/sdpa): torch.where(tril(ones_like(mask, bool), -window), min, mask)
            min_dtype = torch.finfo(hidden_states.dtype).min
            sliding_window_mask = torch.tril(torch.ones_like(attention_mask, dtype=torch.bool),
                                             diagonal=-self.sliding_window)
            attention_mask = torch.where(sliding_window_mask, min_dtype, attention_mask)
        residual = hidden_states
        if self.arch.get("post_norm"):  # Olmo2DecoderLayer
            hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask)
            hidden_states = residual + self.post_attention_layernorm(hidden_states)
            residual = hidden_states
            hidden_states = self.post_feedforward_layernorm(self.mlp(hidden_states))
            return residual + hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask)
        if self.residual_multiplier is not None:  # GraniteDecoderLayer
            hidden_states = residual + hidden_states * self.residual_multiplier
            residual = hidden_states
            hidden_states = self.mlp(self.post_attention_layernorm(hidden_states))
            return residual + hidden_states * self.residual_multiplier
        if self.arch["sandwich"]:
            hidden_states = self.post_attention_layernorm(hidden_states)
            hidden_states = residual + hidden_states
            residual = hidden_states
            hidden_states = self.pre_feedforward_layernorm(hidden_states)
            hidden_states = self.mlp(hidden_states)
            hidden_states = self.post_feedforward_layernorm(hidden_states)
            return residual + hidden_states
        if self.arch["fused_qkv"]:
            hidden_states = residual + self.resid_attn_dropout(hidden_states)
        else:
            hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        if self.arch["fused_qkv"]:
            return residual + self.resid_mlp_dropout(hidden_states)
        return residual + hidden_states


def causal_mask(cfg, arch, attn, B, S, dtype, training):
    """The 4-D float mask _update_causal_mask builds (None when SDPA may use is_causal instead):
    _prepare_4d_causal_attention_mask_with_cache_position with the model's sliding window (mistral, phi3,
    qwen2 when used); gemma2 always builds the plain causal one (windows are applied per layer)."""
    window = None
    if arch["window"] == "sliding_window":
        window = cfg.get("sliding_window")
    elif arch["window"] == "qwen2" and cfg.get("use_sliding_window"):
        window = cfg.get("sliding_window")
    if attn == "sdpa" and arch["window"] not in ("gemma2", "gemma3"):
        # AttentionMaskConverter._ignore_causal_mask_sdpa(None mask, training): ignorable unless the window
        # is shorter than the keys
        if window is None or S < window:
            return None
    min_dtype = torch.finfo(dtype).min
    mask = torch.full((S, S), fill_value=min_dtype, dtype=dtype)
    diagonal_attend_mask = torch.arange(S) > torch.arange(S).reshape(-1, 1)
    if window is not None:
        sliding_attend_mask = torch.arange(S) <= (torch.arange(S).reshape(-1, 1) - window)
        diagonal_attend_mask = diagonal_attend_mask | sliding_attend_mask
    mask = mask * diagonal_attend_mask
    return mask[None, None, :, :].expand(B, 1, -1, -1)


class Model(nn.Module):
    def __init__(self, cfg, arch, attn):
        super().__init__()
        H = cfg["hidden_size"]
        self.cfg, self.arch, self.attn = cfg, arch, attn
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], H, cfg.get("pad_token_id"))
        self.layers = nn.ModuleList(DecoderLayer(cfg, arch, i, attn) for i in range(cfg["num_hidden_layers"]))
        Norm = norm_class(arch)
        self.norm = Norm(H, eps=cfg.get("rms_norm_eps", 1e-6))
        self.rotary_emb = RotaryEmbedding(cfg, head_dim_of(cfg, arch), keep_float32=bool(arch.get("rope_float32")))
        if arch.get("local_rope"):  # Gemma3TextModel.rotary_emb_local: rope_local_base_freq, default rope
            local = dict(cfg, rope_theta=cfg.get("rope_local_base_freq", 10000.0), rope_scaling=None)
            self.rotary_emb_local = RotaryEmbedding(local, head_dim_of(cfg, arch))
        if arch["embed_scale"] == "buffer":  # Gemma3TextScaledWordEmbedding's non-persistent 0-d buffer
            self.embed_tokens.register_buffer("embed_scale", torch.tensor(H ** 0.5), persistent=False)

    def forward(self, input_ids):
        inputs_embeds = self.embed_tokens(input_ids)
        if self.arch.get("mup"):  # GraniteModel
            inputs_embeds = inputs_embeds * self.cfg.get("embedding_multiplier", 1.0)
        B, S = input_ids.shape
        cache_position = torch.arange(0, S)
        position_ids = cache_position.unsqueeze(0)
        mask = causal_mask(self.cfg, self.arch, self.attn, B, S, inputs_embeds.dtype, self.training)
        if self.arch["embed_scale"] == "buffer":  # self.weight[input_ids, :] * self.embed_scale.to(weight dtype)
            inputs_embeds = inputs_embeds * self.embed_tokens.embed_scale.to(self.embed_tokens.weight.dtype)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        if self.arch.get("local_rope"):
            position_embeddings = {"global": position_embeddings,
                                   "local": self.rotary_emb_local(hidden_states, position_ids)}
        if self.arch["embed_scale"] is True:
            normalizer = torch.tensor(self.cfg["hidden_size"] ** 0.5, dtype=hidden_states.dtype)
            hidden_states = hidden_states * normalizer
        for layer in self.layers:
            hidden_states = layer(hidden_states, mask, position_embeddings)
        return self.norm(hidden_states)


class CausalLM(nn.Module):
    """<Family>ForCausalLM: lm_head on the base model's output (tied to its embeddings with tie), then
    ForCausalLMLoss's logits.float().view(-1, V). hidden and vocab: the head's sizes (the config's
    hidden_size and vocab_size unless given); keep_all: the head reads hidden_states[:, slice(0, None), :]
    (transformers' slice(-logits_to_keep, None) with logits_to_keep 0) as the newer modeling code writes it."""

    def __init__(self, cfg, prefix, base_model, embed_name, bias, tie, hidden=None, vocab=None,
                 keep_all=False):
        super().__init__()
        self.cfg, self.prefix, self.keep_all = cfg, prefix, keep_all
        self.vocab = cfg["vocab_size"] if vocab is None else vocab
        setattr(self, prefix, base_model)
        self.lm_head = nn.Linear(cfg["hidden_size"] if hidden is None else hidden, self.vocab, bias=bias)
        if tie:
            self.lm_head.weight = getattr(base_model, embed_name).weight

    def forward(self, input_ids):
        hidden_states = getattr(self, self.prefix)(input_ids)
        if self.keep_all:
            hidden_states = hidden_states[:, slice(0, None), :]
        return self.lm_head(hidden_states).float().view(-1, self.vocab)


class ForCausalLM(nn.Module):
    def __init__(self, cfg, attn="eager"):
        super().__init__()
        arch = ARCH[cfg["model_type"]]
        self.cfg = cfg
        self.model = Model(cfg, arch, attn)
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        if cfg.get("tie_word_embeddings", arch["tie_default"]):
            self.lm_head.weight = self.model.embed_tokens.weight
        self.final_softcap = (cfg.get("final_logit_softcapping") if arch in (ARCH["gemma2"], ARCH["gemma3_text"])
                              else None)
        self.logits_scaling = cfg.get("logits_scaling", 1.0) if arch.get("mup") else None

    def loss_rows(self, b, s):
        """The rows ForCausalLMLoss takes: B * (S - 1) after the shift copy up to 4.48, else B * S."""
        return b * (s - 1) if LABELS and TRANSFORMERS is not None and TRANSFORMERS < 449 else b * s

    def forward(self, input_ids, target=None):
        hidden_states = self.model(input_ids)
        logits = self.lm_head(hidden_states[:, slice(0, None), :])  # num_logits_to_keep = 0
        if self.final_softcap is not None:
            logits = logits / self.final_softcap
            logits = torch.tanh(logits)
            logits = logits * self.final_softcap
        if self.logits_scaling is not None:  # GraniteForCausalLM
            logits = logits / self.logits_scaling
        # ForCausalLMLoss: logits.float(), then cross-entropy over logits.view(-1, vocab_size); called
        # without labels (LABELS False: torchtitan's loop upcasts in its loss) the logits as they are
        if not LABELS:
            return logits.view(-1, self.cfg["vocab_size"])
        lf = logits.float()
        shift_logits = lf  # 4.49 on: the labels padded instead (no copy)
        if TRANSFORMERS is not None and TRANSFORMERS < 449:
            shift_logits = lf[..., :-1, :].contiguous()  # lf stays ForCausalLMLoss's `logits`, alive
        if target is None:  # the caller's loss (memest --loop plain): the float32 logits returned
            return shift_logits.view(-1, self.cfg["vocab_size"])
        # the loss inside the model, as transformers computes it with labels: the half logits are a local of
        # the forward (then the outputs'), the float32 copies ForCausalLMLoss's locals until it returns
        return F.cross_entropy(shift_logits.view(-1, self.cfg["vocab_size"]), target), logits


# whether the model is called with labels (its forward ends in ForCausalLMLoss's logits.float());
# tests/tools/loop_peak.py sets it False for torchtitan's loop
LABELS = True


def build(cfg, attn="eager"):
    return ForCausalLM(cfg, attn)


BUILDERS = {t: build for t in ARCH}
