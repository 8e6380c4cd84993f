"""Plain-PyTorch hybrid state-space LMs, following transformers op by op (no transformers import). The
rotary embedding, apply_rotary_pos_emb, repeat_kv, the eager and SDPA attention functions, LlamaRMSNorm and
the causal mask are hf_models.py's; this file adds:

  models/bamba/modeling_bamba.py at 00511f5df3b63c48b31496072ec35d6ff3ffa6c6
      BambaMixer (in_proj [intermediate + conv_dim + num_heads], nn.Conv1d depthwise over xBC with
      padding d_conv - 1, dt_bias, A_log, D, BambaRMSNormGated, out_proj; conv_dim = intermediate +
      2 n_groups d_state), both of its paths:
        - torch_forward (the slow path transformers runs on the CPU, or on CUDA without mamba_ssm /
          causal_conv1d): the naive chunked SSD, line by line;
        - cuda_kernels_forward in training (self.training and no cache): A = -torch.exp(A_log.float()),
          then mamba_ssm's mamba_split_conv1d_scan_combined, emulated by FusedSplitConv1dScan below, an
          autograd.Function whose forward saves what state-spaces/mamba's MambaSplitConv1dScanCombinedFn
          saves (mamba_ssm/ops/triton/ssd_combined.py at 01b717ae0db0f51b82738b9ca46e5deb73e3a807):
              ctx.save_for_backward(zxbcdt, conv1d_weight, conv1d_bias, out_x, A, D, dt_bias,
                                    initial_states, seq_idx, rmsnorm_weight, rstd, outproj_weight,
                                    outproj_bias)
          with out_x [B, S, nh, head_dim] in x's dtype (the scan's output before the gated norm) and
          rstd [ngroups * B * S] float32 (_layer_norm_fwd's); the values it computes are the slow path's
          (the same math), under no_grad as inside a Function's forward.
      BambaAttention (LlamaAttention without biases: BambaConfig fixes attention_bias False; the rotary
      tables over the whole head_dim: compute_default_rope_parameters reads no partial_rotary_factor),
      BambaMLP (gate/up/down_proj, mlp_bias False), BambaDecoderLayer (input_layernorm, mamba or
      self_attn, residual; pre_ff_layernorm, feed_forward, residual), BambaModel (embed_tokens, layers,
      final_layernorm), lm_head untied by default.
The causal-LM head ends as ForCausalLMLoss starts: logits.float().view(-1, V).

build(cfg, attn="eager"|"sdpa", path="fused"|"torch") -> nn.Module whose forward(input_ids) returns those
logits; module names are transformers' (model.layers.N.mamba.in_proj, model.layers.N.feed_forward.up_proj).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import hf_models as base

MASK_ARCH = {"window": None}


def layer_types(cfg):
    """BambaConfig.layers_block_type."""
    idx = cfg.get("attn_layer_indices")
    return ["attention" if (idx and i in idx) else "mamba" for i in range(cfg["num_hidden_layers"])]


class BambaRMSNormGated(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states, gate=None):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        if gate is not None:
            hidden_states = hidden_states * F.silu(gate.to(torch.float32))
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def pad_tensor_by_size(input_tensor, pad_size):
    pad_shape = (0, 0, 0, 0, 0, pad_size, 0, 0) if len(input_tensor.shape) == 4 else (0, 0, 0, pad_size, 0, 0)
    return F.pad(input_tensor, pad_shape, mode="constant", value=0)


def reshape_into_chunks(input_tensor, pad_size, chunk_size):
    input_tensor = pad_tensor_by_size(input_tensor, pad_size)
    if len(input_tensor.shape) == 3:
        return input_tensor.reshape(input_tensor.shape[0], -1, chunk_size, input_tensor.shape[2])
    return input_tensor.reshape(input_tensor.shape[0], -1, chunk_size, input_tensor.shape[2], input_tensor.shape[3])


def segment_sum(input_tensor):
    chunk_size = input_tensor.size(-1)
    input_tensor = input_tensor[..., None].expand(*input_tensor.size(), chunk_size)
    mask = torch.tril(torch.ones(chunk_size, chunk_size, dtype=torch.bool), diagonal=-1)
    input_tensor = input_tensor.masked_fill(~mask, 0)
    tensor_segsum = torch.cumsum(input_tensor, dim=-2)
    mask = torch.tril(torch.ones(chunk_size, chunk_size, dtype=torch.bool), diagonal=0)
    return tensor_segsum.masked_fill(~mask, -torch.inf)


def ssd_naive(m, hidden_states, B, C, dt, A, batch_size, seq_len):
    """torch_forward's "ssd naive implementation without einsums" (no cache): y [B, S, nh * head_dim]
    float32."""
    dt = F.softplus(dt + m.dt_bias)
    dt = torch.clamp(dt, m.time_step_limit[0], m.time_step_limit[1])
    hidden_states = hidden_states.reshape(batch_size, seq_len, -1, m.head_dim).float()
    B = B.reshape(batch_size, seq_len, -1, m.ssm_state_size).float()
    C = C.reshape(batch_size, seq_len, -1, m.ssm_state_size).float()
    B = B.repeat_interleave(m.num_heads // m.n_groups, dim=2, output_size=m.num_heads)
    C = C.repeat_interleave(m.num_heads // m.n_groups, dim=2, output_size=m.num_heads)
    pad_size = (m.chunk_size - seq_len % m.chunk_size) % m.chunk_size
    D_residual = m.D[..., None] * pad_tensor_by_size(hidden_states, pad_size)
    hidden_states = hidden_states * dt[..., None]
    A = A.to(hidden_states.dtype) * dt
    hidden_states, A, B, C = [reshape_into_chunks(t, pad_size, m.chunk_size) for t in (hidden_states, A, B, C)]
    A = A.permute(0, 3, 1, 2)
    A_cumsum = torch.cumsum(A, dim=-1)
    L = torch.exp(segment_sum(A))
    G_intermediate = C[:, :, :, None, :, :] * B[:, :, None, :, :, :]
    G = G_intermediate.sum(dim=-1)
    M_intermediate = G[..., None] * L.permute(0, 2, 3, 4, 1)[..., None]
    M = M_intermediate.sum(dim=-1)
    Y_diag = (M[..., None] * hidden_states[:, :, None]).sum(dim=3)
    decay_states = torch.exp(A_cumsum[:, :, :, -1:] - A_cumsum)
    B_decay = B * decay_states.permute(0, -2, -1, 1)[..., None]
    states = (B_decay[..., None, :] * hidden_states[..., None]).sum(dim=2)
    previous_states = torch.zeros_like(states[:, :1])
    states = torch.cat([previous_states, states], dim=1)
    decay_chunk = torch.exp(segment_sum(F.pad(A_cumsum[:, :, :, -1], (1, 0))))
    decay_chunk = decay_chunk.transpose(1, 3)
    new_states = (decay_chunk[..., None, None] * states[:, :, None, ...]).sum(dim=1)
    states = new_states[:, :-1]
    state_decay_out = torch.exp(A_cumsum)
    C_times_states = (C[..., None, :] * states[:, :, None, ...])
    state_decay_out_permuted = state_decay_out.permute(0, 2, 3, 1)
    Y_off = (C_times_states.sum(-1) * state_decay_out_permuted[..., None])
    y = Y_diag + Y_off
    y = y.reshape(batch_size, -1, m.num_heads, m.head_dim)
    y = y + D_residual
    if pad_size > 0:
        y = y[:, :seq_len, :, :]
    return y.reshape(batch_size, seq_len, -1)


class FusedSplitConv1dScan(torch.autograd.Function):
    """mamba_split_conv1d_scan_combined(zxbcdt, conv1d.weight.squeeze(1), conv1d.bias, dt_bias, A, D,
    chunk_size, activation, rmsnorm_weight, rmsnorm_eps, outproj_weight, outproj_bias, headdim, ngroups,
    norm_before_gate=False): the values by the slow path's math, the saved set the kernel's."""

    @staticmethod
    def forward(ctx, zxbcdt, conv_w, conv_b, dt_bias, A, D, rms_w, out_w, out_b, m):
        batch_size, seq_len, _ = zxbcdt.shape
        gate, xBC, dt = zxbcdt.split([m.intermediate_size, m.conv_dim, m.num_heads], dim=-1)
        xBC = m.act(F.conv1d(xBC.transpose(1, 2), conv_w.unsqueeze(1), conv_b, padding=m.conv_kernel_size - 1,
                             groups=m.conv_dim)[..., :seq_len].transpose(1, 2))
        x, B, C = torch.split(xBC, [m.intermediate_size, m.n_groups * m.ssm_state_size,
                                    m.n_groups * m.ssm_state_size], dim=-1)
        y = ssd_naive(m, x, B, C, dt, A, batch_size, seq_len)
        out_x = y.view(batch_size, seq_len, m.num_heads, m.head_dim).to(zxbcdt.dtype).clone()
        rstd = torch.empty(m.n_groups * batch_size * seq_len, dtype=torch.float32)  # _layer_norm_fwd's
        normed = m.norm(y.to(zxbcdt.dtype), gate).to(zxbcdt.dtype)
        ctx.save_for_backward(zxbcdt, conv_w, conv_b, out_x, A, D, dt_bias, None, None, rms_w, rstd, out_w, out_b)
        return F.linear(normed, out_w, out_b)

    @staticmethod
    def backward(ctx, dout):
        raise NotImplementedError("measured forward only")


class BambaMixer(nn.Module):
    def __init__(self, cfg, path):
        super().__init__()
        self.path = path
        H = cfg["hidden_size"]
        self.num_heads = cfg.get("mamba_n_heads", 128)
        self.ssm_state_size = cfg.get("mamba_d_state", 256)
        self.conv_kernel_size = cfg.get("mamba_d_conv", 4)
        self.intermediate_size = int(cfg.get("mamba_expand", 2) * H)
        self.act = base.ACT[cfg.get("hidden_act", "silu")]
        self.n_groups = cfg.get("mamba_n_groups", 1)
        d_head = cfg.get("mamba_d_head", "auto")
        self.head_dim = self.intermediate_size // self.num_heads if d_head == "auto" else d_head
        self.chunk_size = cfg.get("mamba_chunk_size", 256)
        self.time_step_limit = tuple(cfg.get("time_step_limit", (0.0, float("inf"))))
        self.conv_dim = self.intermediate_size + 2 * self.n_groups * self.ssm_state_size
        self.conv1d = nn.Conv1d(self.conv_dim, self.conv_dim, bias=cfg.get("mamba_conv_bias", True),
                                kernel_size=self.conv_kernel_size, groups=self.conv_dim,
                                padding=self.conv_kernel_size - 1)
        projection_size = self.intermediate_size + self.conv_dim + self.num_heads
        bias = cfg.get("mamba_proj_bias", False)
        self.in_proj = nn.Linear(H, projection_size, bias=bias)
        self.dt_bias = nn.Parameter(torch.ones(self.num_heads))
        self.A_log = nn.Parameter(torch.log(torch.arange(1, self.num_heads + 1).to(torch.get_default_dtype())))
        self.norm = BambaRMSNormGated(self.intermediate_size, eps=cfg.get("rms_norm_eps", 1e-5))
        self.D = nn.Parameter(torch.ones(self.num_heads))
        self.out_proj = nn.Linear(self.intermediate_size, H, bias=bias)

    def cuda_kernels_forward(self, hidden_states):
        projected_states = self.in_proj(hidden_states)
        A = -torch.exp(self.A_log.float())
        return FusedSplitConv1dScan.apply(projected_states, self.conv1d.weight.squeeze(1), self.conv1d.bias,
                                          self.dt_bias, A, self.D, self.norm.weight, self.out_proj.weight,
                                          self.out_proj.bias, self)

    def torch_forward(self, input_states):
        batch_size, seq_len, _ = input_states.shape
        dtype = input_states.dtype
        projected_states = self.in_proj(input_states)
        gate, hidden_states_B_C, dt = projected_states.split(
            [self.intermediate_size, self.conv_dim, self.num_heads], dim=-1)
        hidden_states_B_C = self.act(self.conv1d(hidden_states_B_C.transpose(1, 2))[..., :seq_len].transpose(1, 2))
        hidden_states, B, C = torch.split(
            hidden_states_B_C,
            [self.intermediate_size, self.n_groups * self.ssm_state_size, self.n_groups * self.ssm_state_size],
            dim=-1)
        A = -torch.exp(self.A_log.float())
        y = ssd_naive(self, hidden_states, B, C, dt, A, batch_size, seq_len)
        scan_output = self.norm(y, gate)
        return self.out_proj(scan_output.to(dtype))

    def forward(self, hidden_states):
        if self.path == "fused":
            return self.cuda_kernels_forward(hidden_states)
        return self.torch_forward(hidden_states)


class BambaAttention(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        self.attn = attn
        H, nh = cfg["hidden_size"], cfg["num_attention_heads"]
        nkv = cfg.get("num_key_value_heads") or nh
        self.head_dim = H // nh
        self.num_key_value_groups = nh // nkv
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = cfg.get("attention_dropout", 0.0)
        self.q_proj = nn.Linear(H, nh * self.head_dim, bias=False)
        self.k_proj = nn.Linear(H, nkv * self.head_dim, bias=False)
        self.v_proj = nn.Linear(H, nkv * self.head_dim, bias=False)
        self.o_proj = nn.Linear(nh * self.head_dim, H, bias=False)

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        rotary_dim = cos.shape[-1]  # Bamba's apply_rotary_pos_emb: rotated part, then cat with the rest
        q_rot, q_pass = query_states[..., :rotary_dim], query_states[..., rotary_dim:]
        k_rot, k_pass = key_states[..., :rotary_dim], key_states[..., rotary_dim:]
        q_embed = (q_rot * cos) + (base.rotate_half(q_rot) * sin)
        k_embed = (k_rot * cos) + (base.rotate_half(k_rot) * sin)
        query_states = torch.cat([q_embed, q_pass], dim=-1)
        key_states = torch.cat([k_embed, k_pass], dim=-1)
        fn = base.eager_attention_forward if self.attn == "eager" else base.sdpa_attention_forward
        attn_output, _ = fn(self, query_states, key_states, value_states, attention_mask,
                            dropout=0.0 if not self.training else self.attention_dropout, scaling=self.scaling)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class BambaMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        H, I = cfg["hidden_size"], cfg["intermediate_size"]
        self.gate_proj = nn.Linear(H, I, bias=False)
        self.up_proj = nn.Linear(H, I, bias=False)
        self.down_proj = nn.Linear(I, H, bias=False)
        self.act_fn = base.ACT[cfg.get("hidden_act", "silu")]

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class BambaDecoderLayer(nn.Module):
    def __init__(self, cfg, attn, layer_type, path):
        super().__init__()
        H, eps = cfg["hidden_size"], cfg.get("rms_norm_eps", 1e-5)
        self.feed_forward = BambaMLP(cfg)
        self.input_layernorm = base.LlamaRMSNorm(H, eps=eps)
        self.pre_ff_layernorm = base.LlamaRMSNorm(H, eps=eps)
        self.layer_type = layer_type
        if layer_type == "mamba":
            self.mamba = BambaMixer(cfg, path)
        else:
            self.self_attn = BambaAttention(cfg, attn)

    def forward(self, hidden_states, attention_mask, position_embeddings):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        if self.layer_type == "mamba":
            hidden_states = self.mamba(hidden_states)
        else:
            hidden_states = self.self_attn(hidden_states, position_embeddings, attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.pre_ff_layernorm(hidden_states)
        hidden_states = self.feed_forward(hidden_states)
        return residual + hidden_states


class BambaModel(nn.Module):
    def __init__(self, cfg, attn, path):
        super().__init__()
        H = cfg["hidden_size"]
        self.cfg, self.attn = cfg, attn
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], H, cfg.get("pad_token_id", 0))
        self.layers = nn.ModuleList(BambaDecoderLayer(cfg, attn, t, path) for t in layer_types(cfg))
        self.final_layernorm = base.LlamaRMSNorm(H, eps=cfg.get("rms_norm_eps", 1e-5))
        self.rotary_emb = base.RotaryEmbedding(cfg, H // cfg["num_attention_heads"])

    def forward(self, input_ids):
        hidden_states = self.embed_tokens(input_ids)
        B, S = input_ids.shape
        position_ids = torch.arange(0, S).unsqueeze(0)
        mask = base.causal_mask(self.cfg, MASK_ARCH, self.attn, B, S, hidden_states.dtype, self.training)
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            # mamba layers get the 2-D mamba_mask: None (no attention_mask given)
            hidden_states = layer(hidden_states, mask if layer.layer_type == "attention" else None,
                                  position_embeddings)
        return self.final_layernorm(hidden_states)


class BambaForCausalLM(base.CausalLM):
    def __init__(self, cfg, attn="eager", path="fused"):
        super().__init__(cfg, "model", BambaModel(cfg, attn, path), "embed_tokens", False,
                         cfg.get("tie_word_embeddings", False))


def build(cfg, attn="eager", path="fused"):
    return BambaForCausalLM(cfg, attn, path)


BUILDERS = {"bamba": build}
