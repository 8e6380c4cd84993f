"""Plain-PyTorch Gemma3ForConditionalGeneration, following transformers op by op (no transformers import).
The Gemma 3 text decoder (Gemma3DecoderLayer, GemmaRMSNorm, the two rotary embeddings, the eager and SDPA
attention functions) is hf_models.py's gemma3_text; this file adds:

  models/siglip/modeling_siglip.py at 00b206564aa29563b46bfce0511de4a4f1eefc8c
      SiglipVisionEmbeddings (patch_embedding Conv2d with bias, kernel = stride = patch_size, padding "valid";
      flatten(2).transpose(1, 2) + position_embedding(position_ids), position_ids a non-persistent buffer
      arange(num_patches).expand((1, -1))), SiglipAttention (eager: matmul * scale, softmax float32 .to(dtype),
      dropout, matmul) and SiglipSdpaAttention (F.scaled_dot_product_attention, no mask, is_causal False),
      transpose(1, 2).contiguous(), reshape, out_proj; SiglipMLP (fc1, ACT2FN[hidden_act], fc2);
      SiglipEncoderLayer (layer_norm1, self_attn, add, layer_norm2, mlp, add); SiglipVisionTransformer
      (embeddings, encoder, post_layernorm; vision_use_head false: no head); v4.50's (4.50.0.dev0, which
      Gemma 3 shipped with) is the same but for pixel_values.to(dtype=patch_embedding.weight.dtype) before the
      patch embedding (kept here, a no-op)
  models/gemma3/modeling_gemma3.py at 008f5c8c29be84d4721dc6d1e0fcd72300580be4 (v4.50)
      Gemma3MultiModalProjector (transpose(1, 2).reshape(B, C, side, side).contiguous(), AvgPool2d(kernel),
      flatten(2).transpose(1, 2), mm_soft_emb_norm Gemma3RMSNorm, matmul with mm_input_projection_weight,
      type_as), Gemma3ForConditionalGeneration.forward (llm_input_ids, get_input_embeddings()(ids) (the scaled
      embedding), special_image_mask = (input_ids == image_token_index).unsqueeze(-1).expand_as(inputs_embeds),
      inputs_embeds.masked_scatter(special_image_mask, image_features), _update_causal_mask with token_type_ids
      (training: image tokens attend to each other; the mask [B, 1, S, S + 1] cloned), the language model on
      inputs_embeds, and the loss's logits.float()[..., :-1, :].contiguous().view(-1, V))

build(cfg, attn) -> nn.Module whose forward(input_ids) returns those flat logits: it makes pixel_values
[B * num_images, 3, image_size, image_size] (a generator seeded 1, the model's dtype) and writes the image
tokens into input_ids (positions 1 .. num_images * mm_tokens_per_image), the token_type_ids 1 there; the
wrapped model is self.model (names model.vision_tower.vision_model..., model.multi_modal_projector...,
model.language_model.model.layers.N...).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import hf_models as base


class SiglipVisionEmbeddings(nn.Module):
    def __init__(self, v):
        super().__init__()
        E, p = v["hidden_size"], v["patch_size"]
        self.patch_embedding = nn.Conv2d(v.get("num_channels", 3), E, kernel_size=p, stride=p, padding="valid")
        self.num_patches = (v["image_size"] // p) ** 2
        self.position_embedding = nn.Embedding(self.num_patches, E)
        self.register_buffer("position_ids", torch.arange(self.num_patches).expand((1, -1)), persistent=False)

    def forward(self, pixel_values):
        # v4.50's: pixel_values.to(dtype=self.patch_embedding.weight.dtype) (a no-op: made in the model's dtype)
        patch_embeds = self.patch_embedding(pixel_values.to(dtype=self.patch_embedding.weight.dtype))
        embeddings = patch_embeds.flatten(2).transpose(1, 2)
        return embeddings + self.position_embedding(self.position_ids)


class SiglipAttention(nn.Module):
    def __init__(self, v, attn):
        super().__init__()
        self.attn = attn
        self.embed_dim = v["hidden_size"]
        self.num_heads = v["num_attention_heads"]
        self.head_dim = self.embed_dim // self.num_heads
        self.scale = self.head_dim ** -0.5
        self.dropout = v.get("attention_dropout", 0.0)
        self.k_proj = nn.Linear(self.embed_dim, self.embed_dim)
        self.v_proj = nn.Linear(self.embed_dim, self.embed_dim)
        self.q_proj = nn.Linear(self.embed_dim, self.embed_dim)
        self.out_proj = nn.Linear(self.embed_dim, self.embed_dim)

    def forward(self, hidden_states):
        B, L, _ = hidden_states.size()
        q = self.q_proj(hidden_states)
        k = self.k_proj(hidden_states)
        v = self.v_proj(hidden_states)
        q = q.view(B, L, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(B, L, self.num_heads, self.head_dim).transpose(1, 2)
        v = v.view(B, L, self.num_heads, self.head_dim).transpose(1, 2)
        p = self.dropout if self.training else 0.0
        if self.attn == "eager":
            w = torch.matmul(q, k.transpose(2, 3)) * self.scale
            w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
            w = nn.functional.dropout(w, p=p, training=self.training)
            out = torch.matmul(w, v).transpose(1, 2).contiguous()
        else:  # SiglipSdpaAttention (no mask: no .contiguous() of q, k, v)
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=p, is_causal=False)
            out = o.transpose(1, 2).contiguous()
            for hook in base.SDPA_HOOKS:  # lets hf_figures.measure apply its CUDA kernel corrections
                hook(q, None, o, out)
        return self.out_proj(out.reshape(B, L, self.embed_dim))


class SiglipMLP(nn.Module):
    def __init__(self, v):
        super().__init__()
        self.activation_fn = base.ACT[v.get("hidden_act", "gelu_pytorch_tanh")]
        self.fc1 = nn.Linear(v["hidden_size"], v["intermediate_size"])
        self.fc2 = nn.Linear(v["intermediate_size"], v["hidden_size"])

    def forward(self, x):
        return self.fc2(self.activation_fn(self.fc1(x)))


class SiglipEncoderLayer(nn.Module):
    def __init__(self, v, attn):
        super().__init__()
        eps = v.get("layer_norm_eps", 1e-6)
        self.self_attn = SiglipAttention(v, attn)
        self.layer_norm1 = nn.LayerNorm(v["hidden_size"], eps=eps)
        self.mlp = SiglipMLP(v)
        self.layer_norm2 = nn.LayerNorm(v["hidden_size"], eps=eps)

    def forward(self, hidden_states):
        hidden_states = hidden_states + self.self_attn(self.layer_norm1(hidden_states))
        return hidden_states + self.mlp(self.layer_norm2(hidden_states))


class SiglipEncoder(nn.Module):
    def __init__(self, v, attn):
        super().__init__()
        self.layers = nn.ModuleList(SiglipEncoderLayer(v, attn) for _ in range(v["num_hidden_layers"]))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class SiglipVisionTransformer(nn.Module):
    def __init__(self, v, attn):
        super().__init__()
        assert v.get("vision_use_head") is False, "the pooling head is not replicated"
        self.embeddings = SiglipVisionEmbeddings(v)
        self.encoder = SiglipEncoder(v, attn)
        self.post_layernorm = nn.LayerNorm(v["hidden_size"], eps=v.get("layer_norm_eps", 1e-6))

    def forward(self, pixel_values):
        return self.post_layernorm(self.encoder(self.embeddings(pixel_values)))


class SiglipVisionModel(nn.Module):
    def __init__(self, v, attn):
        super().__init__()
        self.vision_model = SiglipVisionTransformer(v, attn)

    def forward(self, pixel_values):
        return self.vision_model(pixel_values)


class Gemma3MultiModalProjector(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        v, t = cfg["vision_config"], cfg["text_config"]
        self.mm_input_projection_weight = nn.Parameter(torch.zeros(v["hidden_size"], t["hidden_size"]))
        self.mm_soft_emb_norm = base.GemmaRMSNorm(v["hidden_size"], eps=v.get("layer_norm_eps", 1e-6))
        self.patches_per_image = int(v["image_size"] // v["patch_size"])
        self.tokens_per_side = int(cfg.get("mm_tokens_per_image", 256) ** 0.5)
        self.kernel_size = self.patches_per_image // self.tokens_per_side
        self.avg_pool = nn.AvgPool2d(kernel_size=self.kernel_size, stride=self.kernel_size)

    def forward(self, vision_outputs):
        batch_size, _, seq_length = vision_outputs.shape
        x = vision_outputs.transpose(1, 2)
        x = x.reshape(batch_size, seq_length, self.patches_per_image, self.patches_per_image)
        x = x.contiguous()
        x = self.avg_pool(x)
        x = x.flatten(2).transpose(1, 2)
        x = self.mm_soft_emb_norm(x)
        x = torch.matmul(x, self.mm_input_projection_weight)
        return x.type_as(vision_outputs)


class Gemma3TextModel(base.Model):
    """hf_models.Model (gemma3_text) run on inputs_embeds with the mask it is given."""

    def forward(self, inputs_embeds, mask):
        S = inputs_embeds.shape[1]
        position_ids = torch.arange(0, S).unsqueeze(0)
        hidden_states = inputs_embeds
        position_embeddings = {"global": self.rotary_emb(hidden_states, position_ids),
                               "local": self.rotary_emb_local(hidden_states, position_ids)}
        for layer in self.layers:
            hidden_states = layer(hidden_states, mask, position_embeddings)
        return self.norm(hidden_states)


class Gemma3ForCausalLM(nn.Module):
    def __init__(self, t, attn):
        super().__init__()
        arch = base.ARCH["gemma3_text"]
        self.model = Gemma3TextModel(t, arch, attn)
        self.lm_head = nn.Linear(t["hidden_size"], t["vocab_size"], bias=False)
        if t.get("tie_word_embeddings", True):
            self.lm_head.weight = self.model.embed_tokens.weight
        self.final_softcap = t.get("final_logit_softcapping")

    def forward(self, inputs_embeds, mask):
        logits = self.lm_head(self.model(inputs_embeds, mask)[:, slice(0, None), :])
        if self.final_softcap is not None:
            logits = torch.tanh(logits / self.final_softcap) * self.final_softcap
        return logits


def update_causal_mask(token_type_ids, B, S, dtype):
    """Gemma3ForConditionalGeneration._update_causal_mask (v4.50) in training, no attention_mask, no cache:
    target_length = cache_position[0] + S + 1; the image tokens' bidirectional block by token_type_ids."""
    min_dtype = torch.finfo(dtype).min
    cache_position = torch.arange(S)
    target_length = S + 1
    causal_mask = torch.full((S, target_length), fill_value=min_dtype, dtype=dtype)
    causal_mask = torch.triu(causal_mask, diagonal=1)
    causal_mask *= torch.arange(target_length) > cache_position.reshape(-1, 1)
    causal_mask = causal_mask[None, None, :, :].expand(B, 1, -1, -1)
    token_type_mask = token_type_ids.unsqueeze(1) == token_type_ids.unsqueeze(2)
    token_type_mask[token_type_ids == 0] = False
    token_type_mask = token_type_mask.unsqueeze(1).to(dtype=torch.bool)
    causal_mask = causal_mask.clone()
    causal_mask[:, :, :, :S] = causal_mask[:, :, :, :S].masked_fill(token_type_mask, 0.0)
    return causal_mask


class Gemma3ForConditionalGeneration(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        self.cfg = cfg
        t = dict(cfg["text_config"], model_type="gemma3_text")
        self.vocab_size = t["vocab_size"]
        self.image_token_index = cfg.get("image_token_index", 262144)
        self.vision_tower = SiglipVisionModel(cfg["vision_config"], attn)
        self.multi_modal_projector = Gemma3MultiModalProjector(cfg)
        self.language_model = Gemma3ForCausalLM(t, attn)  # embed_tokens.embed_scale: hf_models.Model's

    def embed(self, ids):  # Gemma3TextScaledWordEmbedding.forward
        e = self.language_model.model.embed_tokens
        return e(ids) * e.embed_scale.to(e.weight.dtype)

    def forward(self, input_ids, pixel_values, token_type_ids):
        if self.image_token_index >= self.vocab_size:
            special_image_mask = input_ids == self.image_token_index
            llm_input_ids = input_ids.clone()
            llm_input_ids[special_image_mask] = 0
        else:
            llm_input_ids = input_ids
        inputs_embeds = self.embed(llm_input_ids)
        image_features = self.multi_modal_projector(self.vision_tower(pixel_values))
        special_image_mask = (input_ids == self.image_token_index).unsqueeze(-1)
        special_image_mask = special_image_mask.expand_as(inputs_embeds)
        assert inputs_embeds[special_image_mask].numel() == image_features.numel()
        image_features = image_features.to(inputs_embeds.device, inputs_embeds.dtype)
        inputs_embeds = inputs_embeds.masked_scatter(special_image_mask, image_features)
        B, S = input_ids.shape
        mask = update_causal_mask(token_type_ids, B, S, inputs_embeds.dtype)
        logits = self.language_model(inputs_embeds, mask)
        logits = logits.float()
        shift_logits = logits[..., :-1, :].contiguous()
        return shift_logits.view(-1, self.vocab_size)


class WithImages(nn.Module):
    """forward(input_ids): the model on input_ids with num_images images per sequence."""

    def __init__(self, cfg, attn, num_images=1):
        super().__init__()
        self.model = Gemma3ForConditionalGeneration(cfg, attn)
        self.num_images = num_images

    @staticmethod
    def loss_rows(b, s):
        """The rows of the flat logits, the loss's targets (tests/tools/hf_peak.py)."""
        return b * (s - 1)

    def forward(self, input_ids):
        cfg, n = self.model.cfg, self.num_images
        T = cfg.get("mm_tokens_per_image", 256)
        v = cfg["vision_config"]
        B = input_ids.shape[0]
        ids = input_ids.clone()
        ids[ids == self.model.image_token_index] = 0
        ids[:, 1:1 + n * T] = self.model.image_token_index
        token_type_ids = (ids == self.model.image_token_index).long()
        g = torch.Generator().manual_seed(1)
        dtype = self.model.vision_tower.vision_model.embeddings.patch_embedding.weight.dtype  # the model's
        pixel_values = torch.randn(B * n, v.get("num_channels", 3), v["image_size"], v["image_size"], generator=g,
                                   dtype=dtype)
        return self.model(ids, pixel_values, token_type_ids)


def build(cfg, attn="eager"):
    return WithImages(cfg, attn)


BUILDERS = {"gemma3": build}
