#!/usr/bin/python3
"""Reference figures for models/arch/llama4.json (Llama4ForConditionalGeneration: the vision tower of
models/arch/lib/llama4_vision.json, the multimodal projector, the llama4_text model), from real PyTorch 2.6:

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_figures_llama4vl.py \
        tests/reference/hf_figures_llama4vl.json

(run from the checkout root; CPU only). As tests/tools/hf_figures.py (whose measurement this reuses), for the
model of tests/tools/hf_models_llama4vl.py:

* "configs": tests/hf/published/llama-4-scout-17b-16e-vl.json (the hub's config.json, written from memory) built
  on torch.device("meta"): params_total, param_tensors, buffers; the figure checked equal here (an assertion)
  to the arithmetic written out in scout_vl.
* "tiny": tests/hf/tiny/llama4.json (the text model of tests/hf/tiny/llama4_text.json; a vision tower of image
  32, patch 8: 16 patches and the CLS position, hidden 32, 4 heads, 2 layers, pixel_shuffle_ratio 0.5 to 4
  image tokens of 128 features) measured in train() mode, one forward of input_ids [B, S] (the 4 image tokens
  at positions 1 .. 4, counted in S; the other ids random below image_token_index) and pixel_values
  [B, 3, 32, 32] (randn, the model's dtype) to the loss's flat logits, float32 and bfloat16, attention "eager"
  and "sdpa": saved activations by saved_tensors_hooks, storages de-duplicated, parameters and buffers excluded,
  with hf_figures.py's CUDA corrections, hf_figures_dense.py's layernorm_cuda and hf_figures_vlm.py's
  drop_unreachable (get_placeholder_mask's inputs_embeds[special_image_mask], whose graph dies at once).
  freqs_ci, the vision rotary's plain attribute (no buffer), counts as an activation: on CUDA each forward
  copies it to the device (.to(hidden_states.device)) and the layers' complex products save that copy.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_models_llama4vl import BUILDERS  # noqa: E402
from hf_figures import TINY_BATCH, published_configs, tiny_entry, write_figures  # noqa: E402
from hf_figures_dense import layernorm_cuda  # noqa: E402
from hf_figures_llama4 import llama4  # noqa: E402
from hf_figures_vlm import drop_unreachable  # noqa: E402

torch.set_num_threads(2)

CONFIGS = ["llama-4-scout-17b-16e-vl"]


def vision(E, I, L, C, image, patch, out_dim, proj_in, proj_out):
    """Llama4VisionModel: patch_embedding.linear [E, C p p] (no bias), class_embedding [E],
    positional_embedding_vlm [(image // patch)^2 + 1, E], layernorm_pre and layernorm_post; per layer q/k/v/o_proj
    and fc1/fc2 with bias and two LayerNorms; the adapter's fc1 [proj_in, I] and fc2 [proj_out, proj_out] (no
    bias). Then Llama4MultiModalProjector's linear_1 [H, out_dim] (no bias), added by the caller."""
    positions = (image // patch) ** 2 + 1
    layer = 4 * (E * E + E) + (E * I + I) + (I * E + E) + 4 * E
    return C * patch * patch * E + E + positions * E + 4 * E + L * layer + I * proj_in + proj_out * proj_out


# meta-llama/Llama-4-Scout-17B-16E: "17B active, 109B total" (the model card); 108,641,793,536 (the safetensors
# total as recalled, and this arithmetic): the text model 107,769,861,120 (hf_figures_llama4.py), the vision tower
# 827,904 + 1,408 + 577*1408 + 4*1408 + 34*23,807,872 + 5632*4096 + 4096*4096 = 850,960,896, the projector
# 4096*5120 = 20,971,520.
PUBLISHED = {"llama-4-scout-17b-16e-vl": 108641793536}
PUBLISHED_ARITHMETIC = {"llama-4-scout-17b-16e-vl": llama4(202048, 5120, 48, 40, 8, 128, 8192, 16384, 16, 1)
                        + vision(1408, 5632, 34, 3, 336, 14, 4096, 4096, 4096) + 4096 * 5120}


def tiny_inputs(cfg, model, dtype, seq):
    """input_ids with the image's tokens at 1 .. image_tokens (the others random below image_token_index), and
    the model's pixel_values (randn in the model's dtype)."""
    v = model.vision_cfg
    side = int((v["image_size"] // v["patch_size"]) * v["pixel_shuffle_ratio"])
    image_token = cfg["image_token_index"]
    ids = torch.randint(0, image_token, (TINY_BATCH, seq))
    ids[:, 1:1 + side * side] = image_token
    model.pixel_values = torch.randn(TINY_BATCH, v["num_channels"], v["image_size"], v["image_size"], dtype=dtype)
    return ids


def tiny_figures():
    def build(cfg, attn):
        return BUILDERS[cfg["model_type"]](cfg, attn)
    return {"llama4": tiny_entry("llama4.json", build, lambda model, r: drop_unreachable(layernorm_cuda(r)),
                                 inputs=tiny_inputs)}


def main(argv):
    follows = ("llama4 at 000c33fdfde12e1ffafbfcdb3c926df5727a00b6, configuration_llama4.py at "
               "008e574391258935f3ecc3035c882e73bbcac419 (tests/tools/hf_models_llama4vl.py)")
    write_figures(argv, "tests/tools/hf_figures_llama4vl.py", follows,
                  published_configs(BUILDERS, CONFIGS, PUBLISHED, PUBLISHED_ARITHMETIC,
                                    folder=("tests", "hf", "published")), tiny_figures())


if __name__ == "__main__":
    main(sys.argv)
