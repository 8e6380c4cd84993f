"""Plain-PyTorch Llama4ForConditionalGeneration following transformers op by op (no transformers import: the
torch2 chroot has none). The text model is hf_models_llama4.py's Llama4TextModel (run on inputs_embeds) and
its lm_head; this file adds, from

  huggingface/transformers@000c33fdfde12e1ffafbfcdb3c926df5727a00b6 src/transformers/models/llama4/modeling_llama4.py
  (defaults: configuration_llama4.py Llama4VisionConfig, Llama4Config at 008e574391258935f3ecc3035c882e73bbcac419):
    Llama4UnfoldConvolution      nn.Unfold(kernel = stride = patch_size), permute(0, 2, 1), linear without bias
    Llama4VisionRotaryEmbedding  freqs_ci, a complex64 [P, 1, D/2] plain attribute made in __init__ (the 2-D
                                 patch coordinates' frequencies, the CLS position's zeroed); forward returns it
                                 .to(device)
    vision_apply_rotary_emb      view_as_complex(x.float().reshape(..., -1, 2)) * freqs_ci viewed [1, P, 1, D/2],
                                 view_as_real, flatten(3), type_as(x)
    vision_eager_attention_forward  matmul * head_dim**-0.5, softmax in the hidden dtype, dropout, matmul,
                                 transpose(1, 2).contiguous(); SDPA: integrations/sdpa_attention.py at main
                                 (00c238bd242b4c6ddfb2c17d4573174ec2daaec8): is_causal False, q, k, v as the
                                 transposed views (the text model keeps hf_models.py's, with .contiguous())
    Llama4VisionAttention        q/k/v/o_proj with bias, the rotary on the [B, P, heads, D] views, transpose, the
                                 attention (no mask, not causal), reshape(B, P, -1).contiguous(), o_proj
    Llama4VisionMLP              fc1, nn.GELU(), fc2 (bias)
    Llama4VisionEncoderLayer     nn.LayerNorm input_layernorm / post_attention_layernorm, pre-norm residuals
    pixel_shuffle                view(B, s, s, -1), view(B, s, s * r, C / r), permute(0, 2, 1, 3).contiguous(),
                                 view(B, s * r, s * r, C / r^2), permute(0, 2, 1, 3).contiguous(), view(B, -1, C / r^2)
    Llama4VisionMLP2             fc1 (intermediate_size -> projector_input_dim) and fc2 without bias, each followed
                                 by nn.GELU(), F.dropout(projector_dropout) between
    Llama4VisionModel            patch_embedding, cat([patches, class_embedding.expand(B, 1, -1)], 1), reshape
                                 (B, 1, P, E) + positional_embedding_vlm, layernorm_pre, view(B, P, E), the encoder,
                                 layernorm_post, [:, :-1, :], vision_adapter
    Llama4MultiModalProjector    linear_1 (vision_output_dim -> text hidden_size, no bias)
    Llama4ForConditionalGeneration  embed_tokens(input_ids); vision_model(pixel_values); view(-1, vision_output_dim);
                                 multi_modal_projector; .to(dtype); get_placeholder_mask (input_ids ==
                                 image_token_id, sum, unsqueeze(-1).expand_as, the check inputs_embeds[mask].numel());
                                 masked_scatter; Llama4ForCausalLM without labels (the logits in the model's dtype);
                                 the loss's logits[..., :-1, :].contiguous().view(-1, V)

build(cfg, attn) -> nn.Module whose forward(input_ids) returns those flat logits on self.pixel_values (which the
generator sets: one image per sample); the wrapped model's names are transformers' (vision_model.model.layers.N...,
multi_modal_projector.linear_1, language_model.model.layers.N...).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import hf_models as base
import hf_models_llama4 as l4

VISION_DEFAULTS = dict(hidden_size=768, num_hidden_layers=34, num_attention_heads=16, num_channels=3,
                       intermediate_size=5632, vision_output_dim=7680, image_size=448, patch_size=14,
                       pixel_shuffle_ratio=0.5, projector_input_dim=4096, projector_output_dim=4096,
                       projector_dropout=0.0, attention_dropout=0.0, rope_theta=10000.0)


def vision_apply_rotary_emb(query, key, freqs_ci):
    query_ = torch.view_as_complex(query.float().reshape(*query.shape[:-1], -1, 2))
    key_ = torch.view_as_complex(key.float().reshape(*key.shape[:-1], -1, 2))
    shape = [d if i == 1 or i == query_.ndim - 1 else 1 for i, d in enumerate(query_.shape)]  # reshape_for_broadcast
    freqs_ci = freqs_ci.view(*shape)
    query_out = torch.view_as_real(query_ * freqs_ci).flatten(3)
    key_out = torch.view_as_real(key_ * freqs_ci).flatten(3)
    return query_out.type_as(query), key_out.type_as(key)


def vision_eager_attention_forward(module, query, key, value, dropout=0.0):
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * module.head_dim ** -0.5
    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value)
    return attn_output.transpose(1, 2).contiguous()


def vision_sdpa_attention_forward(query, key, value, dropout=0.0):
    """integrations/sdpa_attention.py at transformers main (00c238bd242b4c6ddfb2c17d4573174ec2daaec8) for the vision
    attention: num_key_value_groups 1 (no repeat_kv), is_causal False, no mask, the default scale (scaling=None),
    q, k, v passed as the transposed views they are (no .contiguous() copies)."""
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=dropout, scale=None,
                                         is_causal=False)
    attn_output = out.transpose(1, 2).contiguous()
    for hook in base.SDPA_HOOKS:  # lets hf_figures.measure apply its CUDA kernel corrections
        hook(query, None, out, attn_output)
    return attn_output


class Llama4VisionAttention(nn.Module):
    def __init__(self, v, attn):
        super().__init__()
        self.attn = attn
        E = v["hidden_size"]
        self.num_heads = v["num_attention_heads"]
        self.head_dim = E // self.num_heads
        self.attention_dropout = v["attention_dropout"]
        self.q_proj = nn.Linear(E, E, bias=True)
        self.k_proj = nn.Linear(E, E, bias=True)
        self.v_proj = nn.Linear(E, E, bias=True)
        self.o_proj = nn.Linear(E, E, bias=True)

    def forward(self, hidden_states, freqs_ci):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape)
        key_states = self.k_proj(hidden_states).view(hidden_shape)
        value_states = self.v_proj(hidden_states).view(hidden_shape)
        query_states, key_states = vision_apply_rotary_emb(query_states, key_states, freqs_ci)
        query_states = query_states.transpose(1, 2)
        key_states = key_states.transpose(1, 2)
        value_states = value_states.transpose(1, 2)
        p = 0.0 if not self.training else self.attention_dropout
        if self.attn == "eager":
            attn_output = vision_eager_attention_forward(self, query_states, key_states, value_states, p)
        else:
            attn_output = vision_sdpa_attention_forward(query_states, key_states, value_states, p)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class Llama4VisionMLP(nn.Module):
    def __init__(self, v):
        super().__init__()
        self.activation_fn = nn.GELU()
        self.fc1 = nn.Linear(v["hidden_size"], v["intermediate_size"], bias=True)
        self.fc2 = nn.Linear(v["intermediate_size"], v["hidden_size"], bias=True)

    def forward(self, x):
        return self.fc2(self.activation_fn(self.fc1(x)))


class Llama4VisionEncoderLayer(nn.Module):
    def __init__(self, v, attn):
        super().__init__()
        self.self_attn = Llama4VisionAttention(v, attn)
        self.mlp = Llama4VisionMLP(v)
        self.input_layernorm = nn.LayerNorm(v["hidden_size"])
        self.post_attention_layernorm = nn.LayerNorm(v["hidden_size"])

    def forward(self, hidden_state, freqs_ci):
        residual = hidden_state
        hidden_state = self.self_attn(self.input_layernorm(hidden_state), freqs_ci)
        hidden_state = residual + hidden_state
        residual = hidden_state
        hidden_state = self.mlp(self.post_attention_layernorm(hidden_state))
        return residual + hidden_state


class Llama4VisionEncoder(nn.Module):
    def __init__(self, v, attn):
        super().__init__()
        self.layers = nn.ModuleList(Llama4VisionEncoderLayer(v, attn) for _ in range(v["num_hidden_layers"]))

    def forward(self, hidden_states, freqs_ci):
        for layer in self.layers:
            hidden_states = layer(hidden_states, freqs_ci)
        return hidden_states


class Llama4UnfoldConvolution(nn.Module):
    def __init__(self, v):
        super().__init__()
        k = v["patch_size"]
        self.unfold = torch.nn.Unfold(kernel_size=(k, k), stride=k)
        self.linear = nn.Linear(v["num_channels"] * k * k, v["hidden_size"], bias=False)

    def forward(self, hidden_states):
        hidden_states = self.unfold(hidden_states)
        hidden_states = hidden_states.permute(0, 2, 1)
        return self.linear(hidden_states)


class Llama4VisionRotaryEmbedding(nn.Module):
    def __init__(self, v):
        super().__init__()
        idx = v["image_size"] // v["patch_size"]
        img_idx = torch.arange(idx ** 2, dtype=torch.int32).reshape(idx ** 2, 1)
        img_idx = torch.cat([img_idx, img_idx[:1]], dim=0)
        img_idx[-1, -1] = -2  # ID_CLS_TOKEN
        frequencies_x = img_idx % idx
        frequencies_y = img_idx // idx
        freq_dim = v["hidden_size"] // v["num_attention_heads"] // 2
        rope_freq = 1.0 / (v["rope_theta"] ** (torch.arange(0, freq_dim, 2)[: (freq_dim // 2)].float() / freq_dim))
        freqs_x = ((frequencies_x + 1)[..., None] * rope_freq[None, None, :]).repeat_interleave(2, dim=-1)
        freqs_y = ((frequencies_y + 1)[..., None] * rope_freq[None, None, :]).repeat_interleave(2, dim=-1)
        freqs = torch.cat([freqs_x, freqs_y], dim=-1).float().contiguous()[..., ::2]
        freqs = freqs.masked_fill(img_idx.reshape(-1, 1, 1) < 0, 0)
        self.freqs_ci = torch.view_as_complex(torch.stack([torch.cos(freqs), torch.sin(freqs)], dim=-1))

    def forward(self, hidden_states):
        return self.freqs_ci.to(hidden_states.device)


def pixel_shuffle(input_tensor, shuffle_ratio):
    batch_size, num_patches, channels = input_tensor.shape
    patch_size = int(math.sqrt(num_patches))
    input_tensor = input_tensor.view(batch_size, patch_size, patch_size, -1)
    batch_size, height, width, channels = input_tensor.size()
    reshaped_tensor = input_tensor.view(batch_size, height, int(width * shuffle_ratio), int(channels / shuffle_ratio))
    reshaped_tensor = reshaped_tensor.permute(0, 2, 1, 3).contiguous()
    reshaped_tensor = reshaped_tensor.view(batch_size, int(height * shuffle_ratio), int(width * shuffle_ratio),
                                           int(channels / (shuffle_ratio ** 2)))
    reshaped_tensor = reshaped_tensor.permute(0, 2, 1, 3).contiguous()
    return reshaped_tensor.view(batch_size, -1, reshaped_tensor.shape[-1])


class Llama4VisionMLP2(nn.Module):
    def __init__(self, v):
        super().__init__()
        self.fc1 = nn.Linear(v["intermediate_size"], v["projector_input_dim"], bias=False)
        self.fc2 = nn.Linear(v["projector_output_dim"], v["projector_output_dim"], bias=False)
        self.activation_fn = nn.GELU()
        self.dropout = v["projector_dropout"]

    def forward(self, hidden_states):
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = F.dropout(hidden_states, p=self.dropout, training=self.training)
        return self.activation_fn(self.fc2(hidden_states))


class Llama4VisionPixelShuffleMLP(nn.Module):
    def __init__(self, v):
        super().__init__()
        self.pixel_shuffle_ratio = v["pixel_shuffle_ratio"]
        self.mlp = Llama4VisionMLP2(v)

    def forward(self, encoded_patches):
        return self.mlp(pixel_shuffle(encoded_patches, self.pixel_shuffle_ratio))


class Llama4VisionModel(nn.Module):
    def __init__(self, v, attn):
        super().__init__()
        self.hidden_size = E = v["hidden_size"]
        self.num_patches = (v["image_size"] // v["patch_size"]) ** 2 + 1
        scale = E ** -0.5
        self.patch_embedding = Llama4UnfoldConvolution(v)
        self.class_embedding = nn.Parameter(scale * torch.randn(E))
        self.positional_embedding_vlm = nn.Parameter(scale * torch.randn(self.num_patches, E))
        self.rotary_embedding = Llama4VisionRotaryEmbedding(v)
        self.layernorm_pre = nn.LayerNorm(E)
        self.layernorm_post = nn.LayerNorm(E)
        self.model = Llama4VisionEncoder(v, attn)
        self.vision_adapter = Llama4VisionPixelShuffleMLP(v)

    def forward(self, pixel_values):
        n = pixel_values.shape[0]
        hidden_state = self.patch_embedding(pixel_values)
        _, num_patches, hidden_dim = hidden_state.shape
        hidden_state = hidden_state.reshape(n, num_patches, hidden_dim)
        class_embedding = self.class_embedding.expand(hidden_state.shape[0], 1, hidden_state.shape[-1])
        hidden_state = torch.cat([hidden_state, class_embedding], dim=1)
        num_patches += 1
        hidden_state = hidden_state.reshape(n, 1, num_patches, hidden_dim)
        hidden_state = hidden_state + self.positional_embedding_vlm.to(dtype=hidden_state.dtype)
        hidden_state = self.layernorm_pre(hidden_state)
        hidden_state = hidden_state.view(n, -1, hidden_dim)
        freqs_ci = self.rotary_embedding(pixel_values)
        hidden_state = self.model(hidden_state, freqs_ci)
        hidden_state = self.layernorm_post(hidden_state)
        hidden_state = hidden_state[:, :-1, :]
        return self.vision_adapter(hidden_state)


class Llama4MultiModalProjector(nn.Module):
    def __init__(self, v, text_hidden):
        super().__init__()
        self.linear_1 = nn.Linear(v["vision_output_dim"], text_hidden, bias=False)

    def forward(self, image_features):
        return self.linear_1(image_features)


class Llama4ForCausalLM(l4.Llama4ForCausalLM):
    def forward(self, inputs_embeds):
        """Without labels: the logits in the model's dtype."""
        hidden_states = self.model(inputs_embeds=inputs_embeds)
        return self.lm_head(hidden_states[:, slice(0, None), :])


class Llama4ForConditionalGeneration(nn.Module):
    def __init__(self, cfg, attn="eager"):
        super().__init__()
        self.cfg = cfg
        self.vision_cfg = dict(VISION_DEFAULTS, **cfg.get("vision_config", {}))
        text = cfg["text_config"]
        self.vocab_size = l4.g(text, "vocab_size")
        self.vision_model = Llama4VisionModel(self.vision_cfg, attn)
        self.multi_modal_projector = Llama4MultiModalProjector(self.vision_cfg, l4.g(text, "hidden_size"))
        self.language_model = Llama4ForCausalLM(text, attn)
        self.image_token_id = cfg.get("image_token_index", 200092)
        self.pixel_values = None

    def forward(self, input_ids, pixel_values=None):
        pixel_values = self.pixel_values if pixel_values is None else pixel_values
        inputs_embeds = self.language_model.model.embed_tokens(input_ids)
        image_features = self.vision_model(pixel_values)
        vision_flat = image_features.view(-1, image_features.size(-1))
        projected_vision_flat = self.multi_modal_projector(vision_flat).to(inputs_embeds.device, inputs_embeds.dtype)
        special_image_mask = input_ids == self.image_token_id  # get_placeholder_mask
        special_image_mask.sum()
        special_image_mask = special_image_mask.unsqueeze(-1).expand_as(inputs_embeds).to(inputs_embeds.device)
        if inputs_embeds[special_image_mask].numel() != projected_vision_flat.numel():
            raise ValueError("Image features and image tokens do not match")
        inputs_embeds = inputs_embeds.masked_scatter(special_image_mask, projected_vision_flat)
        logits = self.language_model(inputs_embeds)
        shift_logits = logits[..., :-1, :].contiguous()
        return shift_logits.view(-1, shift_logits.size(-1))

    @staticmethod
    def loss_rows(b, s):
        """The rows of the flat logits, the loss's targets (tests/tools/hf_peak.py)."""
        return b * (s - 1)


def build(cfg, attn="eager"):
    return Llama4ForConditionalGeneration(cfg, attn)


BUILDERS = {"llama4": build}
