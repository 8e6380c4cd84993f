#!/usr/bin/python3
"""Reference figures for the vision-language templates (llava: models/arch/llava.json on
models/arch/lib/vision.json), from real PyTorch 2.6:

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_figures_vlm.py \
        tests/reference/hf_figures_vlm.json

(run from the checkout root; CPU only). As tests/tools/hf_figures.py (whose measurement this reuses), for the
models of tests/tools/hf_models_vlm.py:

* "configs": each shipped example config (CONFIGS) built on torch.device("meta"): params_total,
  param_tensors, buffers; the published figure, checked equal here (an assertion) and against the
  arithmetic written out in PUBLISHED_ARITHMETIC.
* "tiny": tests/hf/tiny/llava.json and llava_full.json (every vision layer kept, the CLS position too, a tied
  lm_head) measured in train() mode, one forward of input_ids [B, S] (image
  tokens at positions 1 .. image_tokens, the other ids random below image_token_index) and pixel_values
  [B, C, image_size, image_size] (randn, in the model's dtype) to logits.float().view(-1, V), float32 and
  bfloat16, attention "eager" and "sdpa": saved activations by saved_tensors_hooks, storages de-duplicated,
  parameters and buffers excluded, with hf_figures.py's CUDA corrections and hf_figures_dense.py's
  layernorm_cuda (LayerNorm's mean and rstd float32 on CUDA for a bfloat16 input). One more step: the
  storages saved only by autograd nodes the logits' graph does not reach (hf_figures.measure names them
  "(unnamed)") are left out: the vision layers after vision_feature_layer, post_layernorm, and the check's
  inputs_embeds[special_image_mask], whose outputs nothing reads. transformers runs them, but their graph
  dies when get_image_features (the check: at once) returns, so what they saved is freed in the forward
  and never reaches the backward (the figure listed as dropped_unreachable_bytes).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_models_vlm import BUILDERS  # noqa: E402
from hf_figures import TINY_BATCH, published_configs, tiny_entry, write_figures  # noqa: E402
from hf_figures_dense import layernorm_cuda  # noqa: E402

torch.set_num_threads(2)

CONFIGS = ["llava-1.5-7b-hf"]
TINY = ["llava", "llava_full"]
TINY_SEQ = 24  # the image's 16 tokens and 8 of text


def llava(V, H, L, I, heads, kv, hd, vH, vL, vI, channels, image, patch):
    """LlamaForCausalLM's parameters (q/k/v/o_proj, gate/up/down_proj, two RMSNorms per layer, the final
    norm, embed_tokens and an untied lm_head), CLIPVisionModel's (patch_embedding without bias,
    class_embedding, position_embedding over num_patches + 1 positions, pre_layrnorm, per layer q/k/v/out_proj
    with bias, two LayerNorms, fc1 and fc2 with bias; post_layernorm) and the projector's (linear_1, linear_2
    with bias)."""
    text = 2 * V * H + L * (H * heads * hd + 2 * H * kv * hd + heads * hd * H + 3 * H * I + 2 * H) + H
    positions = (image // patch) ** 2 + 1
    vlayer = 4 * (vH * vH + vH) + 2 * 2 * vH + (vH * vI + vI) + (vI * vH + vH)
    vision = channels * patch * patch * vH + vH + positions * vH + 2 * vH + vL * vlayer + 2 * vH
    projector = (vH * H + H) + (H * H + H)
    return text + vision + projector


# llava-hf/llava-1.5-7b-hf: "7.06B params" on its model page (recalled, not checked here: no network); the
# arithmetic below gives 7,063,427,072 (14,126,854,144 bytes of float16 weights)
PUBLISHED = {"llava-1.5-7b-hf": 7063427072}
# 2*32064*4096 + 32*(4*4096*4096 + 3*4096*11008 + 2*4096) + 4096
# + 3*14*14*1024 + 1024 + 577*1024 + 2*1024 + 24*(4*(1024*1024 + 1024) + 4*1024 + 1024*4096 + 4096 + 4096*1024
#   + 1024) + 2*1024
# + (1024*4096 + 4096) + (4096*4096 + 4096)
PUBLISHED_ARITHMETIC = {"llava-1.5-7b-hf": llava(32064, 4096, 32, 11008, 32, 32, 128,
                                                 1024, 24, 4096, 3, 336, 14)}


def drop_unreachable(r):
    """Leaves out of measure()'s figures the storages no node of the logits' graph saved (grad_fn
    "(unnamed)"): freed in the forward (module docstring)."""
    kept, dropped = [], 0
    for line in r["storages"]:
        parts = line.split(" ")
        if parts[1] != "(unnamed).-":
            kept.append(line)
            continue
        cuda, layer = int(parts[-1]), parts[-2]
        dropped += cuda
        r["per_layer_cuda_corrected"][layer] -= cuda
    for k in [k for k in r["by_grad_fn"] if k == "(unnamed).-"]:
        r["saved_activation_bytes"] -= r["by_grad_fn"].pop(k)["bytes"]
    r["saved_activation_bytes_cuda_corrected"] -= dropped
    r["saved_storages"] = len(kept)
    r["storages"] = kept
    r["dropped_unreachable_bytes"] = dropped
    return r


def tiny_inputs(cfg, model, dtype, seq):
    """input_ids with the image's tokens at 1 .. image_tokens (the others random below image_token_index),
    and the model's pixel_values (randn in the model's dtype)."""
    v = model.model.vision_cfg
    n_img = (v["image_size"] // v["patch_size"]) ** 2
    if cfg.get("vision_feature_select_strategy", "default") == "full":
        n_img += 1
    image_token = cfg["image_token_index"]
    ids = torch.randint(0, image_token, (TINY_BATCH, seq))
    ids[:, 1:1 + n_img] = image_token
    model.pixel_values = torch.randn(TINY_BATCH, v["num_channels"], v["image_size"], v["image_size"], dtype=dtype)
    return ids


def tiny_figures():
    def build(cfg, attn):
        return BUILDERS[cfg["model_type"]](cfg, attn)
    return {name: tiny_entry(name + ".json", build, lambda model, r: drop_unreachable(layernorm_cuda(r)),
                             seq=TINY_SEQ, inputs=tiny_inputs) for name in TINY}


def main(argv):
    follows = ("llava at 00d3cdbeaab26587a543f75df7997a53a6fb146b (configuration_llava.py at "
               "053f59efe493c4f815f39f836494a1f2f73fbe0b), clip at 000f1ffdbf1ce6190cc8863af9a2fff817590937, "
               "llama at v4.48.0 (tests/tools/hf_models_vlm.py)")
    write_figures(argv, "tests/tools/hf_figures_vlm.py", follows,
                  published_configs(BUILDERS, CONFIGS, PUBLISHED, PUBLISHED_ARITHMETIC), tiny_figures())


if __name__ == "__main__":
    main(sys.argv)
