#!/usr/bin/python3
"""Reference figures for the dense templates built on models/arch/lib/dense.json (starcoder2, glm4), from
real PyTorch 2.6:

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_figures_dense.py \
        tests/reference/hf_figures_dense.json

(run from the checkout root; CPU only). As tests/tools/hf_figures.py (whose measurement this reuses), for
the models of tests/tools/hf_models_dense.py:

* "configs": each shipped example config (CONFIGS) built on torch.device("meta"): params_total,
  param_tensors, buffers; the published figure, checked equal here (an assertion) and against the
  arithmetic written out in PUBLISHED_ARITHMETIC.
* "tiny": tests/hf/tiny/<model_type>.json measured in train() mode, one forward of input_ids [B, S] to
  logits.float().view(-1, V), float32 and bfloat16, attention "eager" and "sdpa": saved activations by
  saved_tensors_hooks, storages de-duplicated, parameters and buffers excluded, with hf_figures.py's CUDA
  corrections, and one more (layernorm_cuda below): LayerNorm's saved mean and rstd [B, S, 1] are in the
  accumulate type on CUDA (layer_norm_cuda: float32 for a bfloat16 input), in the input's dtype on the CPU.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_models_dense import BUILDERS  # noqa: E402
from hf_figures import here, load, static_info, tiny_entry, write_figures  # noqa: E402

torch.set_num_threads(2)

CONFIGS = ["starcoder2-3b", "glm-4-9b-0414"]
TINY = ["starcoder2", "glm4"]


def starcoder2(V, H, L, I, heads, kv, hd):
    """Starcoder2: q/k/v/o_proj and c_fc/c_proj with biases, two LayerNorms (weight and bias) per layer, a
    final LayerNorm, lm_head tied to the embeddings."""
    attn = H * heads * hd + heads * hd + 2 * (H * kv * hd + kv * hd) + heads * hd * H + H
    mlp = H * I + I + I * H + H
    return V * H + L * (attn + mlp + 4 * H) + 2 * H


def glm4(V, H, L, I, heads, kv, hd):
    """Glm4: q/k/v_proj with biases, o_proj without, gate_up_proj [2I, H] and down_proj, four RMSNorms per
    layer, the final RMSNorm, lm_head untied."""
    attn = H * heads * hd + heads * hd + 2 * (H * kv * hd + kv * hd) + heads * hd * H
    mlp = H * 2 * I + I * H
    return 2 * V * H + L * (attn + mlp + 4 * H) + H


# bigcode/starcoder2-3b: "3.03B params" (its model card; safetensors total 3,030,371,328)
# THUDM/GLM-4-9B-0414: "9.4B params" (its model page; the arithmetic gives 9,400,279,040)
PUBLISHED = {"starcoder2-3b": 3030371328, "glm-4-9b-0414": 9400279040}
PUBLISHED_ARITHMETIC = {"starcoder2-3b": starcoder2(49152, 3072, 30, 12288, 24, 2, 128),
                        "glm-4-9b-0414": glm4(151552, 4096, 40, 13696, 32, 2, 128)}


def layernorm_cuda(r):
    """The CUDA correction of NativeLayerNormBackward0's saved mean and rstd (result1, result2) of a bfloat16 or float16 input:
    float32 on CUDA (twice the CPU kernel's bytes). Applied to measure()'s result in place, from its
    per-storage lines ("module grad_fn.attr dtype [shape] layer cuda_bytes")."""
    for i, line in enumerate(r["storages"]):
        parts = line.split(" ")
        key, dtype, layer, cuda = parts[1], parts[2], parts[-2], int(parts[-1])
        if key not in ("NativeLayerNormBackward0._saved_result1", "NativeLayerNormBackward0._saved_result2"):
            continue
        if dtype not in ("bfloat16", "float16"):
            continue
        extra = cuda  # the same numel in 4 bytes instead of 2
        r["saved_activation_bytes_cuda_corrected"] += extra
        r["per_layer_cuda_corrected"][layer] += extra
        r["by_grad_fn"][key]["bytes_cuda_corrected"] += extra
        r["storages"][i] = " ".join(parts[:-1] + [str(cuda + extra)])
    return r


def config_figures():
    out = {}
    for name in CONFIGS:
        cfg = load(here("models", "hf", name + ".json"))
        with torch.device("meta"):
            model = BUILDERS[cfg["model_type"]](cfg)
        info = static_info(model)
        info["model_type"] = cfg["model_type"]
        info["published_params"] = PUBLISHED[name]
        assert PUBLISHED_ARITHMETIC[name] == PUBLISHED[name], (name, PUBLISHED_ARITHMETIC[name])
        assert info["params_total"] == PUBLISHED[name], (name, info["params_total"], PUBLISHED[name])
        out[name] = info
    return out


def tiny_figures():
    def build(cfg, attn):
        return BUILDERS[cfg["model_type"]](cfg, attn)
    return {name: tiny_entry(name + ".json", build, lambda model, r: layernorm_cuda(r)) for name in TINY}


def main(argv):
    follows = ("starcoder2 at 73faa33f3c3a8588747d42dc7ca666d97b1a2a2c, glm4 at "
               "257314f8c283566a238faf183f44f272e9e0e352 (tests/tools/hf_models_dense.py)")
    write_figures(argv, "tests/tools/hf_figures_dense.py", follows, config_figures(), tiny_figures())


if __name__ == "__main__":
    main(sys.argv)
