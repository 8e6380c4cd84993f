#!/usr/bin/python3
"""Reference figures for the Qwen2.5-VL template (models/arch/qwen2_5_vl.json on models/arch/lib/qwen_vision.json),
from real PyTorch 2.6:

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_figures_qwenvl.py \
        tests/reference/hf_figures_qwenvl.json

(run from the checkout root; CPU only). As tests/tools/hf_figures.py (whose measurement this reuses), for the
model of tests/tools/hf_models_qwenvl.py:

* "configs": tests/hf/published/qwen2.5-vl-7b-instruct.json built on torch.device("meta"): params_total,
  param_tensors, buffers; the published figure, checked equal here (an assertion) and against the arithmetic
  written out in PUBLISHED_ARITHMETIC.
* "tiny": tests/hf/tiny/qwen2_5_vl.json and qwen2_5_vl_nested.json (text_config nested with rope_parameters, a
  tied lm_head, MHA, the window larger than the image: one window, gelu_pytorch_tanh in the vision MLP) measured in train() mode, one forward of input_ids [B, S] (the image's
  merged tokens at positions 1 .. image_tokens, the other ids random below image_token_id) and pixel_values
  [B * grid^2, C * T * P * P] (randn, in the model's dtype; one IMAGE_SIZE x IMAGE_SIZE image per sample:
  image_grid_thw [1, grid, grid] each) to logits.float().view(-1, V), float32 and bfloat16, attention "eager"
  and "sdpa": saved activations by saved_tensors_hooks, storages de-duplicated, parameters and buffers
  excluded, with hf_figures.py's CUDA corrections (the vision tower's per-chunk SDPA calls included).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_models_qwenvl import BUILDERS  # noqa: E402
from hf_figures import TINY_BATCH, published_configs, tiny_entry, write_figures  # noqa: E402

torch.set_num_threads(2)

CONFIGS = ["qwen2.5-vl-7b-instruct"]
TINY = ["qwen2_5_vl", "qwen2_5_vl_nested"]
TINY_SEQ = 24  # the image's 16 merged tokens and 8 of text
IMAGE_SIZE = 16  # memest --set image_size=16: grid 8 x 8 patches of 2, 16 merged tokens, 4 windows of 16 patches


def qwen2_5_vl(V, H, L, I, heads, kv, vD, vL, vI, channels, T, P, merge, out):
    """Qwen2_5_VLTextModel's parameters (q/k/v_proj with bias, o_proj without, gate/up/down_proj, two RMSNorms
    per layer, the final norm, embed_tokens, an untied lm_head), the vision tower's (patch_embed Conv3d without
    bias; per block norm1, norm2, qkv and proj with bias, gate/up/down_proj with bias) and the merger's (ln_q,
    two linears with bias)."""
    hd = H // heads
    layer = (H * heads * hd + heads * hd) + 2 * (H * kv * hd + kv * hd) + heads * hd * H + 3 * H * I + 2 * H
    text = 2 * V * H + L * layer + H
    block = 2 * vD + (vD * 3 * vD + 3 * vD) + (vD * vD + vD) + 2 * (vD * vI + vI) + (vI * vD + vD)
    ctx = vD * merge * merge
    vision = channels * T * P * P * vD + vL * block + vD + (ctx * ctx + ctx) + (ctx * out + out)
    return text + vision


# Qwen/Qwen2.5-VL-7B-Instruct: "8.29B params" on its model page, 8,292,166,656 its safetensors total (both
# recalled, not checked here: no network); the arithmetic:
# 2*152064*3584 + 28*((3584*3584 + 3584) + 2*(3584*512 + 512) + 3584*3584 + 3*3584*18944 + 2*3584) + 3584
# + 3*2*14*14*1280 + 32*(2*1280 + (1280*3840 + 3840) + (1280*1280 + 1280) + 2*(1280*3420 + 3420)
#   + (3420*1280 + 1280)) + 1280 + (5120*5120 + 5120) + (5120*3584 + 3584)
PUBLISHED = {"qwen2.5-vl-7b-instruct": 8292166656}
PUBLISHED_ARITHMETIC = {"qwen2.5-vl-7b-instruct": qwen2_5_vl(152064, 3584, 28, 18944, 28, 4,
                                                             1280, 32, 3420, 3, 2, 14, 2, 3584)}


def tiny_inputs(cfg, model, dtype, seq):
    """input_ids with the image's merged tokens at 1 .. image_tokens (the others random below image_token_id),
    and the model's pixel_values (randn in the model's dtype) and image_grid_thw."""
    v = model.model.vision_cfg
    grid = IMAGE_SIZE // v["patch_size"]
    n_img = (grid // v["spatial_merge_size"]) ** 2
    image_token = cfg["image_token_id"]
    ids = torch.randint(0, image_token, (TINY_BATCH, seq))
    ids[:, 1:1 + n_img] = image_token
    dim = v["in_channels"] * v["temporal_patch_size"] * v["patch_size"] ** 2
    model.pixel_values = torch.randn(TINY_BATCH * grid * grid, dim, dtype=dtype)
    model.image_grid_thw = torch.tensor([[1, grid, grid]] * TINY_BATCH)
    return ids


def tiny_figures():
    def build(cfg, attn):
        return BUILDERS[cfg["model_type"]](cfg, attn)
    return {name: tiny_entry(name + ".json", build, seq=TINY_SEQ, inputs=tiny_inputs, image_size=IMAGE_SIZE)
            for name in TINY}


def main(argv):
    follows = ("qwen2_5_vl at 00b676f8f0489b88652a31d70751cc540dd06305 (configuration_qwen2_5_vl.py at "
               "018c8e0394c47749c55861e11f5f7e2a577973d7), the Qwen2 decoder layers at v4.48.0 "
               "(tests/tools/hf_models_qwenvl.py)")
    write_figures(argv, "tests/tools/hf_figures_qwenvl.py", follows,
                  published_configs(BUILDERS, CONFIGS, PUBLISHED, PUBLISHED_ARITHMETIC,
                                    folder=("tests", "hf", "published")),
                  tiny_figures())


if __name__ == "__main__":
    main(sys.argv)
