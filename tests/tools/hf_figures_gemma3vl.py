#!/usr/bin/python3
"""Reference figures for models/arch/gemma3.json (Gemma3ForConditionalGeneration: the SigLIP vision tower of
models/arch/lib/siglip.json, the multimodal projector, the Gemma 3 text model), from real PyTorch 2.6:

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_figures_gemma3vl.py \
        tests/reference/hf_figures_gemma3vl.json

(run from the checkout root; CPU only). As tests/tools/hf_figures.py (whose measurement this reuses), for the
model of tests/tools/hf_models_gemma3vl.py:

* "configs": tests/hf/published/gemma-3-4b-pt.json and gemma-3-27b-pt.json built on torch.device("meta"): params_total,
  param_tensors, buffers; the published figure, checked equal here (an assertion) and against the arithmetic
  written out in gemma3_params.
* "tiny": tests/hf/tiny/gemma3.json (vision tower image_size 32, patch 8, hidden 32, 2 layers;
  mm_tokens_per_image 4; the text model of tests/hf/tiny/gemma3_text.json) measured in train() mode, one
  forward of input_ids [B, S] with one image per sequence (its 4 image tokens at positions 1 .. 4, counted in
  S) and pixel_values [B, 3, 32, 32], to the loss's flat logits, float32 and bfloat16, attention "eager" and
  "sdpa": saved activations by saved_tensors_hooks, storages de-duplicated, parameters and buffers excluded,
  with hf_figures.py's CUDA corrections and hf_figures_dense.py's layernorm_cuda (LayerNorm's mean and rstd
  float32 on CUDA for a bfloat16 input).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_models_gemma3vl import BUILDERS  # noqa: E402
from hf_figures import here, load, meta_entry, tiny_entry, write_figures  # noqa: E402
from hf_figures_dense import layernorm_cuda  # noqa: E402

torch.set_num_threads(2)


def gemma3_params(V, H, L, heads, kv, hd, I, vE, vI, vL, patch, image, C=3):
    """Gemma3ForConditionalGeneration: the text model (q/k/v/o_proj, q_norm/k_norm [hd], the GeGLU mlp, four
    RMSNorms a layer, the final norm, lm_head tied), the SigLIP tower (patch_embedding with bias, the position
    embedding of (image // patch)^2 positions, per layer q/k/v/out_proj and fc1/fc2 with biases and two
    LayerNorms, post_layernorm) and the projector (mm_input_projection_weight [vE, H], mm_soft_emb_norm [vE])."""
    text = V * H + L * (H * heads * hd + 2 * H * kv * hd + heads * hd * H + 2 * hd + 3 * H * I + 4 * H) + H
    patches = (image // patch) ** 2
    vlayer = 4 * (vE * vE + vE) + (vE * vI + vI) + (vI * vE + vE) + 4 * vE
    vision = C * patch * patch * vE + vE + patches * vE + vL * vlayer + 2 * vE
    return text + vision + vE * H + vE


# google/gemma-3-4b-pt: 4,300,079,472 (the model card's "4B"; the safetensors total, recalled, and equal to
# this arithmetic): text 262208*2560 + 34*94382592 + 2560 = 3,880,263,168; vision 678,528 + 4,718,592
# + 27*15239504 + 2304 = 416,866,032; projector 1152*2560 + 1152 = 2,950,272.
# google/gemma-3-27b-pt: 27,432,406,640 (the card's "27B"; the safetensors total, recalled): text
# 262208*5376 + 62*412898560 + 5376 = 27,009,346,304; the same vision tower; projector 1152*5376 + 1152.
PUBLISHED = {"gemma-3-4b-pt": 4300079472, "gemma-3-27b-pt": 27432406640}
PUBLISHED_ARITHMETIC = {"gemma-3-4b-pt": gemma3_params(262208, 2560, 34, 8, 4, 256, 10240,
                                                       1152, 4304, 27, 14, 896),
                        "gemma-3-27b-pt": gemma3_params(262208, 5376, 62, 32, 16, 128, 21504,
                                                        1152, 4304, 27, 14, 896)}
TEXT_DEFAULTS = {"vocab_size": 262208, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                 "query_pre_attn_scalar": 256, "max_position_embeddings": 131072}  # Gemma3TextConfig's


def config_figures():
    out = {}
    for name in PUBLISHED:
        cfg = load(here("tests", "hf", "published", name + ".json"))
        cfg["text_config"] = dict(TEXT_DEFAULTS, **cfg["text_config"])
        out[name] = meta_entry(name, cfg, BUILDERS[cfg["model_type"]], PUBLISHED[name], PUBLISHED_ARITHMETIC[name])
    return out


def tiny_figures():
    def build(cfg, attn):
        return BUILDERS[cfg["model_type"]](cfg, attn)
    return {"gemma3": tiny_entry("gemma3.json", build, lambda model, r: layernorm_cuda(r), num_images=1)}


if __name__ == "__main__":
    write_figures(sys.argv, "tests/tools/hf_figures_gemma3vl.py",
                  "gemma3 at 008f5c8c29be84d4721dc6d1e0fcd72300580be4 (v4.50), siglip at "
                  "00b206564aa29563b46bfce0511de4a4f1eefc8c (tests/tools/hf_models_gemma3vl.py)",
                  config_figures(), tiny_figures())
