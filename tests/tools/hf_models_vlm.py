"""Plain-PyTorch vision-language models following transformers op by op (no transformers import). The text
model is hf_models.py's LlamaModel (v4.48.0: its rotary embedding, decoder layers, eager and SDPA attention,
causal mask), run on inputs_embeds; this file adds:

  models/llava/modeling_llava.py at 00d3cdbeaab26587a543f75df7997a53a6fb146b
      LlavaMultiModalProjector (linear_1, ACT2FN[projector_hidden_act], linear_2, bias
      multimodal_projector_bias), LlavaModel.get_image_features (vision_tower(pixel_values,
      output_hidden_states=True).hidden_states[vision_feature_layer], [:, 1:] for the "default" strategy,
      the projector), LlavaModel.forward (inputs_embeds = embed_tokens(input_ids); special_image_mask =
      (input_ids == image_token_id).unsqueeze(-1).expand_as(inputs_embeds); the check
      inputs_embeds[special_image_mask].numel() == image_features.numel(); inputs_embeds.masked_scatter(
      special_image_mask, image_features); language_model(inputs_embeds=...)),
      LlavaForConditionalGeneration (lm_head untied; logits_to_keep 0)
  models/llava/configuration_llava.py at 053f59efe493c4f815f39f836494a1f2f73fbe0b (the defaults)
  models/clip/modeling_clip.py at 000f1ffdbf1ce6190cc8863af9a2fff817590937
      CLIPVisionEmbeddings (patch_embedding Conv2d without bias, class_embedding, position_embedding over the
      non-persistent position_ids buffer), CLIPAttention (q/k/v/out_proj with bias, is_causal False; CLIP's
      eager_attention_forward without a mask, softmax in float32; the SDPA of integrations/sdpa_attention.py at
      00c238bd242b4c6ddfb2c17d4573174ec2daaec8: no mask, not causal, q/k/v passed as they are), CLIPMLP (fc1,
      ACT2FN[hidden_act]: quick_gelu is input * torch.sigmoid(1.702 * input), fc2), CLIPEncoderLayer,
      CLIPEncoder (every layer; check_model_inputs records the hidden states: the encoder's input, then each
      layer's output), CLIPVisionTransformer (pre_layrnorm, post_layernorm of last_hidden_state[:, 0, :])
The causal-LM head ends as ForCausalLMLoss starts: logits.float().view(-1, V).

build(cfg, attn="eager"|"sdpa") -> nn.Module whose forward(input_ids, pixel_values) returns those logits;
pixel_values defaults to the module's attribute pixel_values (hf_figures.measure calls model(input_ids));
module names are transformers' (model.vision_tower.vision_model.encoder.layers.N..., model.multi_modal_projector
.linear_1, model.language_model.layers.N..., lm_head).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import hf_models as base

LLAMA_ARCH = base.ARCH["llama"]
ACT = dict(base.ACT, quick_gelu=lambda x: x * torch.sigmoid(1.702 * x))

# CLIPVisionConfig's defaults (configuration_clip.py)
CLIP_VISION_DEFAULTS = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                            num_channels=3, image_size=224, patch_size=32, hidden_act="quick_gelu",
                            layer_norm_eps=1e-5, attention_dropout=0.0)
# LlamaConfig's defaults that hf_models.py reads with cfg[...] (LlavaConfig builds LlamaConfig(**text_config))
LLAMA_DEFAULTS = dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                      num_attention_heads=32, max_position_embeddings=2048, rms_norm_eps=1e-6, model_type="llama")


class CLIPVisionEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_dim, self.image_size, self.patch_size = c["hidden_size"], c["image_size"], c["patch_size"]
        self.class_embedding = nn.Parameter(torch.randn(self.embed_dim))
        self.patch_embedding = nn.Conv2d(c["num_channels"], self.embed_dim, kernel_size=self.patch_size,
                                         stride=self.patch_size, bias=False)
        self.num_patches = (self.image_size // self.patch_size) ** 2
        self.num_positions = self.num_patches + 1
        self.position_embedding = nn.Embedding(self.num_positions, self.embed_dim)
        self.register_buffer("position_ids", torch.arange(self.num_positions).expand((1, -1)), persistent=False)

    def forward(self, pixel_values):
        batch_size = pixel_values.shape[0]
        target_dtype = self.patch_embedding.weight.dtype
        patch_embeds = self.patch_embedding(pixel_values.to(dtype=target_dtype))
        patch_embeds = patch_embeds.flatten(2).transpose(1, 2)
        class_embeds = self.class_embedding.expand(batch_size, 1, -1)
        embeddings = torch.cat([class_embeds, patch_embeds], dim=1)
        return embeddings + self.position_embedding(self.position_ids)


def clip_eager_attention(module, query, key, value, scaling, dropout=0.0):
    attn_weights = torch.matmul(query, key.transpose(-1, -2)) * scaling
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = F.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value)
    return attn_output.transpose(1, 2).contiguous()


def clip_sdpa_attention(module, query, key, value, scaling, dropout=0.0):
    # sdpa_attention_forward: no mask, module.is_causal False, so is_causal False; num_key_value_groups absent
    attn_output = F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=dropout,
                                                 scale=scaling, is_causal=False)
    out = attn_output
    attn_output = attn_output.transpose(1, 2).contiguous()
    for hook in base.SDPA_HOOKS:  # hf_figures.py's CUDA corrections name the tensors
        hook(query, None, out, attn_output)
    return attn_output


class CLIPAttention(nn.Module):
    def __init__(self, c, attn):
        super().__init__()
        self.attn = attn
        self.embed_dim, self.num_heads = c["hidden_size"], c["num_attention_heads"]
        self.head_dim = self.embed_dim // self.num_heads
        self.scale = self.head_dim ** -0.5
        self.dropout = c["attention_dropout"]
        self.is_causal = False
        self.k_proj = nn.Linear(self.embed_dim, self.embed_dim)
        self.v_proj = nn.Linear(self.embed_dim, self.embed_dim)
        self.q_proj = nn.Linear(self.embed_dim, self.embed_dim)
        self.out_proj = nn.Linear(self.embed_dim, self.embed_dim)

    def forward(self, hidden_states):
        batch_size, seq_length, _ = hidden_states.shape
        queries = self.q_proj(hidden_states)
        keys = self.k_proj(hidden_states)
        values = self.v_proj(hidden_states)
        queries = queries.view(batch_size, seq_length, -1, self.head_dim).transpose(1, 2)
        keys = keys.view(batch_size, seq_length, -1, self.head_dim).transpose(1, 2)
        values = values.view(batch_size, seq_length, -1, self.head_dim).transpose(1, 2)
        fn = clip_eager_attention if self.attn == "eager" else clip_sdpa_attention
        attn_output = fn(self, queries, keys, values, scaling=self.scale,
                         dropout=0.0 if not self.training else self.dropout)
        attn_output = attn_output.reshape(batch_size, seq_length, -1).contiguous()
        return self.out_proj(attn_output)


class CLIPMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.activation_fn = ACT[c["hidden_act"]]
        self.fc1 = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.fc2 = nn.Linear(c["intermediate_size"], c["hidden_size"])

    def forward(self, hidden_states):
        return self.fc2(self.activation_fn(self.fc1(hidden_states)))


class CLIPEncoderLayer(nn.Module):
    def __init__(self, c, attn):
        super().__init__()
        self.self_attn = CLIPAttention(c, attn)
        self.layer_norm1 = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.mlp = CLIPMLP(c)
        self.layer_norm2 = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.self_attn(self.layer_norm1(hidden_states))
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.mlp(self.layer_norm2(hidden_states))
        return residual + hidden_states


class CLIPEncoder(nn.Module):
    def __init__(self, c, attn):
        super().__init__()
        self.layers = nn.ModuleList(CLIPEncoderLayer(c, attn) for _ in range(c["num_hidden_layers"]))

    def forward(self, inputs_embeds):
        hidden_states = inputs_embeds
        all_hidden_states = [hidden_states]  # output_hidden_states=True
        for encoder_layer in self.layers:
            hidden_states = encoder_layer(hidden_states)
            all_hidden_states.append(hidden_states)
        return hidden_states, tuple(all_hidden_states)


class CLIPVisionTransformer(nn.Module):
    def __init__(self, c, attn):
        super().__init__()
        self.embeddings = CLIPVisionEmbeddings(c)
        self.pre_layrnorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.encoder = CLIPEncoder(c, attn)
        self.post_layernorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, pixel_values):
        hidden_states = self.pre_layrnorm(self.embeddings(pixel_values))
        last_hidden_state, hidden_states = self.encoder(hidden_states)
        pooled_output = self.post_layernorm(last_hidden_state[:, 0, :])
        return last_hidden_state, pooled_output, hidden_states


class CLIPVisionModel(nn.Module):
    def __init__(self, c, attn):
        super().__init__()
        self.vision_model = CLIPVisionTransformer(c, attn)

    def forward(self, pixel_values):
        return self.vision_model(pixel_values)


class LlavaMultiModalProjector(nn.Module):
    def __init__(self, cfg, vision_hidden, text_hidden):
        super().__init__()
        bias = cfg.get("multimodal_projector_bias", True)
        self.linear_1 = nn.Linear(vision_hidden, text_hidden, bias=bias)
        self.act = ACT[cfg.get("projector_hidden_act", "gelu")]
        self.linear_2 = nn.Linear(text_hidden, text_hidden, bias=bias)

    def forward(self, image_features):
        return self.linear_2(self.act(self.linear_1(image_features)))


class LlamaModel(base.Model):
    """hf_models.Model (LlamaModel at v4.48.0) given inputs_embeds instead of input_ids."""

    def forward(self, inputs_embeds):
        B, S = inputs_embeds.shape[:2]
        position_ids = torch.arange(0, S).unsqueeze(0)
        mask = base.causal_mask(self.cfg, self.arch, self.attn, B, S, inputs_embeds.dtype, self.training)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states, mask, position_embeddings)
        return self.norm(hidden_states)


class LlavaModel(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        self.cfg = cfg
        self.vision_cfg = dict(CLIP_VISION_DEFAULTS, **cfg.get("vision_config", {}))
        self.text_cfg = dict(LLAMA_DEFAULTS, **cfg.get("text_config", {}))
        self.vision_tower = CLIPVisionModel(self.vision_cfg, attn)
        self.multi_modal_projector = LlavaMultiModalProjector(cfg, self.vision_cfg["hidden_size"],
                                                              self.text_cfg["hidden_size"])
        self.language_model = LlamaModel(self.text_cfg, LLAMA_ARCH, attn)

    def get_image_features(self, pixel_values):
        image_outputs = self.vision_tower(pixel_values)
        selected_image_feature = image_outputs[2][self.cfg.get("vision_feature_layer", -2)]
        if self.cfg.get("vision_feature_select_strategy", "default") == "default":
            selected_image_feature = selected_image_feature[:, 1:]
        return self.multi_modal_projector(selected_image_feature)

    def forward(self, input_ids, pixel_values):
        inputs_embeds = self.language_model.embed_tokens(input_ids)
        image_features = self.get_image_features(pixel_values)
        image_token_id = self.cfg.get("image_token_index", 32000)
        special_image_mask = (input_ids == image_token_id).unsqueeze(-1)
        special_image_mask = special_image_mask.expand_as(inputs_embeds).to(inputs_embeds.device)
        if inputs_embeds[special_image_mask].numel() != image_features.numel():
            raise ValueError("Image features and image tokens do not match")
        image_features = image_features.to(inputs_embeds.device, inputs_embeds.dtype)
        inputs_embeds = inputs_embeds.masked_scatter(special_image_mask, image_features)
        return self.language_model(inputs_embeds)


class LlavaForConditionalGeneration(nn.Module):
    def __init__(self, cfg, attn="eager"):
        super().__init__()
        self.model = LlavaModel(cfg, attn)
        text = self.model.text_cfg
        self.vocab_size = text["vocab_size"]
        self.lm_head = nn.Linear(text["hidden_size"], text["vocab_size"], bias=False)
        if text.get("tie_word_embeddings", False):  # tie_weights: get_text_config().tie_word_embeddings
            self.lm_head.weight = self.model.language_model.embed_tokens.weight
        self.pixel_values = None

    def forward(self, input_ids, pixel_values=None):
        pixel_values = self.pixel_values if pixel_values is None else pixel_values
        hidden_states = self.model(input_ids, pixel_values)
        logits = self.lm_head(hidden_states[:, slice(0, None), :])
        return logits.float().view(-1, self.vocab_size)


def build(cfg, attn="eager"):
    return LlavaForConditionalGeneration(cfg, attn)


BUILDERS = {"llava": build}
