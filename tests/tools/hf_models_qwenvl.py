"""Plain-PyTorch Qwen2.5-VL following transformers op by op (no transformers import):

  models/qwen2_5_vl/modeling_qwen2_5_vl.py at 00b676f8f0489b88652a31d70751cc540dd06305
      Qwen2_5_VisionPatchEmbed (view(-1, C, T, P, P), Conv3d kernel = stride = [T, P, P], no bias,
      view(-1, embed_dim)), Qwen2_5_VisionRotaryEmbedding, Qwen2_5_VLVisionAttention (fused qkv with bias,
      apply_rotary_pos_emb_vision in float32, the eager or SDPA attention on each chunk of cu_seqlens:
      torch.split, torch.cat; proj), Qwen2_5_VLVisionBlock (Qwen2RMSNorm eps 1e-6, Qwen2_5_VLMLP with bias),
      Qwen2_5_VLPatchMerger, Qwen2_5_VisionTransformerPretrainedModel (rot_pos_emb, get_window_index,
      the window reordering, fullatt_block_indexes, the reverse reordering), Qwen2_5_VLRotaryEmbedding (cos,
      sin [3, B, S, head_dim] under no_grad), apply_multimodal_rotary_pos_emb (the per-layer cat of the
      mrope_section slices), Qwen2_5_VLAttention (its own rotary_emb module: an unused inv_freq buffer),
      Qwen2_5_VLModel.forward (embed_tokens, get_image_features: split and cat, image_mask, masked_scatter),
      Qwen2_5_VLForConditionalGeneration (lm_head; logits_to_keep 0)
  models/qwen2_5_vl/configuration_qwen2_5_vl.py at 018c8e0394c47749c55861e11f5f7e2a577973d7 (the defaults;
      the text keys at the config's top level, as Qwen2_5_VLConfig reads them without a text_config)
The text decoder layers are hf_models.py's Qwen2 ones (v4.48.0: eager and SDPA attention, causal mask; the
eager/SDPA attention functions of that version), fed each layer's M-RoPE tables. get_rope_index's position ids
are int64 [3, B, S] values without grad (they change no memory): the text positions 0 .. S-1 here. The vision
SDPA is integrations/sdpa_attention.py as hf_models_vlm.py's CLIP runs it (no mask, not causal, q/k/v passed as
the views they are). The causal-LM head ends as ForCausalLMLoss starts: logits.float().view(-1, V).

build(cfg, attn="eager"|"sdpa") -> nn.Module whose forward(input_ids, pixel_values, image_grid_thw) returns
those logits; pixel_values and image_grid_thw default to the module's attributes (hf_figures.measure calls
model(input_ids)).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import hf_models as base
import hf_models_vlm as vlm

QWEN2_ARCH = base.ARCH["qwen2"]

VISION_DEFAULTS = dict(depth=32, hidden_size=3584, hidden_act="silu", intermediate_size=3420, num_heads=16,
                       in_channels=3, patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=112,
                       out_hidden_size=3584, fullatt_block_indexes=[7, 15, 23, 31])
TEXT_DEFAULTS = dict(vocab_size=152064, hidden_size=8192, intermediate_size=29568, num_hidden_layers=80,
                     num_attention_heads=64, num_key_value_heads=8, hidden_act="silu", max_position_embeddings=32768,
                     rms_norm_eps=1e-5, tie_word_embeddings=False, use_sliding_window=False, sliding_window=4096,
                     max_window_layers=80, attention_dropout=0.0, rope_theta=1000000.0)


class Qwen2_5_VisionPatchEmbed(nn.Module):
    def __init__(self, patch_size, temporal_patch_size, in_channels, embed_dim):
        super().__init__()
        self.patch_size, self.temporal_patch_size = patch_size, temporal_patch_size
        self.in_channels, self.embed_dim = in_channels, embed_dim
        kernel_size = [temporal_patch_size, patch_size, patch_size]
        self.proj = nn.Conv3d(in_channels, embed_dim, kernel_size=kernel_size, stride=kernel_size, bias=False)

    def forward(self, hidden_states):
        target_dtype = self.proj.weight.dtype
        hidden_states = hidden_states.view(-1, self.in_channels, self.temporal_patch_size, self.patch_size,
                                           self.patch_size)
        return self.proj(hidden_states.to(dtype=target_dtype)).view(-1, self.embed_dim)


class Qwen2_5_VisionRotaryEmbedding(nn.Module):
    def __init__(self, dim, theta=10000.0):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, seqlen):
        seq = torch.arange(seqlen, device=self.inv_freq.device, dtype=self.inv_freq.dtype)
        return torch.outer(seq, self.inv_freq)


def apply_rotary_pos_emb_vision(q, k, cos, sin):
    orig_q_dtype, orig_k_dtype = q.dtype, k.dtype
    q, k = q.float(), k.float()
    cos, sin = cos.unsqueeze(-2).float(), sin.unsqueeze(-2).float()
    q_embed = (q * cos) + (base.rotate_half(q) * sin)
    k_embed = (k * cos) + (base.rotate_half(k) * sin)
    return q_embed.to(orig_q_dtype), k_embed.to(orig_k_dtype)


# eager_attention_forward of modeling_qwen2_5_vl.py with num_key_value_groups 1 (repeat_kv returns its input)
# and no mask is CLIP's (softmax in float32, .to(query.dtype), dropout, matmul, transpose(1, 2).contiguous());
# sdpa_attention_forward likewise: no mask, is_causal False, q, k, v as they are
vision_eager_attention = vlm.clip_eager_attention
vision_sdpa_attention = vlm.clip_sdpa_attention


class Qwen2_5_VLVisionAttention(nn.Module):
    def __init__(self, c, attn):
        super().__init__()
        self.attn = attn
        self.dim, self.num_heads = c["hidden_size"], c["num_heads"]
        self.head_dim = self.dim // self.num_heads
        self.qkv = nn.Linear(self.dim, self.dim * 3, bias=True)
        self.proj = nn.Linear(self.dim, self.dim)
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = 0.0

    def forward(self, hidden_states, cu_seqlens, position_embeddings):
        seq_length = hidden_states.shape[0]
        query_states, key_states, value_states = (
            self.qkv(hidden_states).reshape(seq_length, 3, self.num_heads, -1).permute(1, 0, 2, 3).unbind(0))
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb_vision(query_states, key_states, cos, sin)
        query_states = query_states.transpose(0, 1).unsqueeze(0)
        key_states = key_states.transpose(0, 1).unsqueeze(0)
        value_states = value_states.transpose(0, 1).unsqueeze(0)
        fn = vision_eager_attention if self.attn == "eager" else vision_sdpa_attention
        lengths = cu_seqlens[1:] - cu_seqlens[:-1]
        splits = [torch.split(t, lengths.tolist(), dim=2) for t in (query_states, key_states, value_states)]
        attn_outputs = [fn(self, q, k, v, scaling=self.scaling,
                           dropout=0.0 if not self.training else self.attention_dropout)
                        for q, k, v in zip(*splits)]
        attn_output = torch.cat(attn_outputs, dim=1)
        attn_output = attn_output.reshape(seq_length, -1).contiguous()
        return self.proj(attn_output)


class Qwen2_5_VLMLP(nn.Module):
    def __init__(self, c, bias=False):
        super().__init__()
        H, I = c["hidden_size"], c["intermediate_size"]
        self.gate_proj = nn.Linear(H, I, bias=bias)
        self.up_proj = nn.Linear(H, I, bias=bias)
        self.down_proj = nn.Linear(I, H, bias=bias)
        self.act_fn = base.ACT[c["hidden_act"]]

    def forward(self, hidden_state):
        return self.down_proj(self.act_fn(self.gate_proj(hidden_state)) * self.up_proj(hidden_state))


class Qwen2_5_VLVisionBlock(nn.Module):
    def __init__(self, c, attn):
        super().__init__()
        self.norm1 = base.LlamaRMSNorm(c["hidden_size"], eps=1e-6)  # Qwen2RMSNorm
        self.norm2 = base.LlamaRMSNorm(c["hidden_size"], eps=1e-6)
        self.attn = Qwen2_5_VLVisionAttention(c, attn)
        self.mlp = Qwen2_5_VLMLP(c, bias=True)

    def forward(self, hidden_states, cu_seqlens, position_embeddings):
        hidden_states = hidden_states + self.attn(self.norm1(hidden_states), cu_seqlens, position_embeddings)
        return hidden_states + self.mlp(self.norm2(hidden_states))


class Qwen2_5_VLPatchMerger(nn.Module):
    def __init__(self, dim, context_dim, spatial_merge_size=2):
        super().__init__()
        self.hidden_size = context_dim * (spatial_merge_size ** 2)
        self.ln_q = base.LlamaRMSNorm(context_dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(self.hidden_size, self.hidden_size), nn.GELU(),
                                 nn.Linear(self.hidden_size, dim))

    def forward(self, x):
        return self.mlp(self.ln_q(x).view(-1, self.hidden_size))


class Qwen2_5_VisionTransformerPretrainedModel(nn.Module):
    def __init__(self, c, attn):
        super().__init__()
        self.spatial_merge_size = c["spatial_merge_size"]
        self.patch_size = c["patch_size"]
        self.fullatt_block_indexes = c["fullatt_block_indexes"]
        self.window_size = c["window_size"]
        self.spatial_merge_unit = self.spatial_merge_size * self.spatial_merge_size
        self.patch_embed = Qwen2_5_VisionPatchEmbed(c["patch_size"], c["temporal_patch_size"], c["in_channels"],
                                                    c["hidden_size"])
        head_dim = c["hidden_size"] // c["num_heads"]
        self.rotary_pos_emb = Qwen2_5_VisionRotaryEmbedding(head_dim // 2)
        self.blocks = nn.ModuleList(Qwen2_5_VLVisionBlock(c, attn) for _ in range(c["depth"]))
        self.merger = Qwen2_5_VLPatchMerger(c["out_hidden_size"], c["hidden_size"], c["spatial_merge_size"])

    def rot_pos_emb(self, grid_thw):
        m = self.spatial_merge_size
        pos_ids = []
        for t, h, w in grid_thw:
            hpos_ids = torch.arange(h).unsqueeze(1).expand(-1, w)
            hpos_ids = hpos_ids.reshape(h // m, m, w // m, m).permute(0, 2, 1, 3).flatten()
            wpos_ids = torch.arange(w).unsqueeze(0).expand(h, -1)
            wpos_ids = wpos_ids.reshape(h // m, m, w // m, m).permute(0, 2, 1, 3).flatten()
            pos_ids.append(torch.stack([hpos_ids, wpos_ids], dim=-1).repeat(t, 1))
        pos_ids = torch.cat(pos_ids, dim=0)
        max_grid_size = grid_thw[:, 1:].max()
        rotary_pos_emb_full = self.rotary_pos_emb(max_grid_size)
        return rotary_pos_emb_full[pos_ids].flatten(1)

    def get_window_index(self, grid_thw):
        window_index, cu_window_seqlens, window_index_id = [], [0], 0
        vit_merger_window_size = self.window_size // self.spatial_merge_size // self.patch_size
        for grid_t, grid_h, grid_w in grid_thw:
            llm_grid_h, llm_grid_w = grid_h // self.spatial_merge_size, grid_w // self.spatial_merge_size
            index = torch.arange(grid_t * llm_grid_h * llm_grid_w).reshape(grid_t, llm_grid_h, llm_grid_w)
            pad_h = vit_merger_window_size - llm_grid_h % vit_merger_window_size
            pad_w = vit_merger_window_size - llm_grid_w % vit_merger_window_size
            num_windows_h = (llm_grid_h + pad_h) // vit_merger_window_size
            num_windows_w = (llm_grid_w + pad_w) // vit_merger_window_size
            index_padded = F.pad(index, (0, pad_w, 0, pad_h), "constant", -100)
            index_padded = index_padded.reshape(grid_t, num_windows_h, vit_merger_window_size, num_windows_w,
                                                vit_merger_window_size)
            index_padded = index_padded.permute(0, 1, 3, 2, 4).reshape(
                grid_t, num_windows_h * num_windows_w, vit_merger_window_size, vit_merger_window_size)
            seqlens = (index_padded != -100).sum([2, 3]).reshape(-1)
            index_padded = index_padded.reshape(-1)
            index_new = index_padded[index_padded != -100]
            window_index.append(index_new + window_index_id)
            cu_seqlens_tmp = seqlens.cumsum(0) * self.spatial_merge_unit + cu_window_seqlens[-1]
            cu_window_seqlens.extend(cu_seqlens_tmp.tolist())
            window_index_id += (grid_t * llm_grid_h * llm_grid_w).item()
        return torch.cat(window_index, dim=0), cu_window_seqlens

    def forward(self, hidden_states, grid_thw):
        hidden_states = self.patch_embed(hidden_states)
        rotary_pos_emb = self.rot_pos_emb(grid_thw)
        window_index, cu_window_seqlens = self.get_window_index(grid_thw)
        cu_window_seqlens = torch.tensor(cu_window_seqlens, dtype=torch.int32)
        cu_window_seqlens = torch.unique_consecutive(cu_window_seqlens)
        seq_len, _ = hidden_states.size()
        hidden_states = hidden_states.reshape(seq_len // self.spatial_merge_unit, self.spatial_merge_unit, -1)
        hidden_states = hidden_states[window_index, :, :]
        hidden_states = hidden_states.reshape(seq_len, -1)
        rotary_pos_emb = rotary_pos_emb.reshape(seq_len // self.spatial_merge_unit, self.spatial_merge_unit, -1)
        rotary_pos_emb = rotary_pos_emb[window_index, :, :]
        rotary_pos_emb = rotary_pos_emb.reshape(seq_len, -1)
        emb = torch.cat((rotary_pos_emb, rotary_pos_emb), dim=-1)
        position_embeddings = (emb.cos(), emb.sin())
        cu_seqlens = torch.repeat_interleave(grid_thw[:, 1] * grid_thw[:, 2], grid_thw[:, 0]).cumsum(
            dim=0, dtype=torch.int32)
        cu_seqlens = F.pad(cu_seqlens, (1, 0), value=0)
        for layer_num, blk in enumerate(self.blocks):
            cu_seqlens_now = cu_seqlens if layer_num in self.fullatt_block_indexes else cu_window_seqlens
            hidden_states = blk(hidden_states, cu_seqlens_now, position_embeddings)
        hidden_states = self.merger(hidden_states)
        reverse_indices = torch.argsort(window_index)
        return hidden_states[reverse_indices, :]


class Qwen2_5_VLRotaryEmbedding(base.RotaryEmbedding):
    """Qwen2_5_VLRotaryEmbedding: position_ids [3, B, S]; cos, sin [3, B, S, head_dim] in x's dtype."""

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, None, :, None].float().expand(3, position_ids.shape[1], -1, 1)
        position_ids_expanded = position_ids[:, :, None, :].float()
        with torch.autocast(device_type="cpu", enabled=False):
            freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(2, 3)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos = emb.cos() * self.attention_scaling
            sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def mrope_tables(cos, sin, mrope_section):
    """apply_multimodal_rotary_pos_emb's per-layer tables, before the unsqueeze(1) that hf_models.py's
    apply_rotary_pos_emb makes."""
    mrope_section = mrope_section * 2
    cos = torch.cat([m[i % 3] for i, m in enumerate(cos.split(mrope_section, dim=-1))], dim=-1)
    sin = torch.cat([m[i % 3] for i, m in enumerate(sin.split(mrope_section, dim=-1))], dim=-1)
    return cos, sin


class Qwen2_5_VLDecoderLayer(base.DecoderLayer):
    def __init__(self, cfg, layer_idx, attn):
        super().__init__(cfg, QWEN2_ARCH, layer_idx, attn)
        self.mrope_section = (cfg.get("rope_scaling") or cfg["rope_parameters"])["mrope_section"]
        # Qwen2_5_VLAttention.rotary_emb: built, never called (its inv_freq buffer counts)
        self.self_attn.rotary_emb = Qwen2_5_VLRotaryEmbedding(rope_cfg(cfg), base.head_dim_of(cfg, QWEN2_ARCH))

    def forward(self, hidden_states, attention_mask, position_embeddings):
        return super().forward(hidden_states, attention_mask, mrope_tables(*position_embeddings, self.mrope_section))


def rope_cfg(cfg):
    """The text config as rope_inv_freq reads it: rope type mrope is "default" (Qwen2_5_VLTextConfig)."""
    return dict(cfg, rope_scaling=None)


class Qwen2_5_VLTextModel(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        self.cfg, self.attn = cfg, attn
        H = cfg["hidden_size"]
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], H, cfg.get("pad_token_id"))
        self.layers = nn.ModuleList(Qwen2_5_VLDecoderLayer(cfg, i, attn) for i in range(cfg["num_hidden_layers"]))
        self.norm = base.LlamaRMSNorm(H, eps=cfg["rms_norm_eps"])
        self.rotary_emb = Qwen2_5_VLRotaryEmbedding(rope_cfg(cfg), base.head_dim_of(cfg, QWEN2_ARCH))

    def forward(self, inputs_embeds, position_ids):
        B, S = inputs_embeds.shape[:2]
        mask = base.causal_mask(self.cfg, QWEN2_ARCH, self.attn, B, S, inputs_embeds.dtype, self.training)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states, mask, position_embeddings)
        return self.norm(hidden_states)


class Qwen2_5_VLModel(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        self.cfg = cfg
        self.vision_cfg = dict(VISION_DEFAULTS, **cfg.get("vision_config", {}))
        text = {k: v for k, v in cfg.items() if k not in ("vision_config", "text_config")}
        self.text_cfg = dict(TEXT_DEFAULTS, **cfg.get("text_config", text))
        self.visual = Qwen2_5_VisionTransformerPretrainedModel(self.vision_cfg, attn)
        self.language_model = Qwen2_5_VLTextModel(self.text_cfg, attn)

    def get_image_features(self, pixel_values, image_grid_thw):
        pixel_values = pixel_values.type(self.visual.patch_embed.proj.weight.dtype)
        image_embeds = self.visual(pixel_values, grid_thw=image_grid_thw)
        split_sizes = (image_grid_thw.prod(-1) // self.visual.spatial_merge_size ** 2).tolist()
        return torch.split(image_embeds, split_sizes)

    def forward(self, input_ids, pixel_values, image_grid_thw):
        inputs_embeds = self.language_model.embed_tokens(input_ids)
        image_embeds = torch.cat(self.get_image_features(pixel_values, image_grid_thw), dim=0)
        image_mask = input_ids == self.cfg.get("image_token_id", 151655)
        n_image_tokens = image_mask.sum()
        image_mask = image_mask.unsqueeze(-1).expand_as(inputs_embeds).to(inputs_embeds.device)
        if n_image_tokens != image_embeds.shape[0]:
            raise ValueError("Image features and image tokens do not match")
        image_embeds = image_embeds.to(inputs_embeds.device, inputs_embeds.dtype)
        inputs_embeds = inputs_embeds.masked_scatter(image_mask, image_embeds)
        B, S = input_ids.shape
        position_ids = torch.arange(S).view(1, 1, -1).expand(3, B, -1)  # get_rope_index: values only
        return self.language_model(inputs_embeds, position_ids)


class Qwen2_5_VLForConditionalGeneration(nn.Module):
    def __init__(self, cfg, attn="eager"):
        super().__init__()
        self.model = Qwen2_5_VLModel(cfg, attn)
        text = self.model.text_cfg
        self.vocab_size = text["vocab_size"]
        self.lm_head = nn.Linear(text["hidden_size"], text["vocab_size"], bias=False)
        if text.get("tie_word_embeddings", False):
            self.lm_head.weight = self.model.language_model.embed_tokens.weight
        self.pixel_values = None
        self.image_grid_thw = None

    def forward(self, input_ids, pixel_values=None, image_grid_thw=None):
        pixel_values = self.pixel_values if pixel_values is None else pixel_values
        image_grid_thw = self.image_grid_thw if image_grid_thw is None else image_grid_thw
        hidden_states = self.model(input_ids, pixel_values, image_grid_thw)
        logits = self.lm_head(hidden_states[:, slice(0, None), :])
        return logits.float().view(-1, self.vocab_size)


def build(cfg, attn="eager"):
    return Qwen2_5_VLForConditionalGeneration(cfg, attn)


BUILDERS = {"qwen2_5_vl": build}
