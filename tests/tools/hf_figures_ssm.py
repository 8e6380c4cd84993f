#!/usr/bin/python3
"""Reference figures for the hybrid state-space template (models/arch/bamba.json, lib/hybrid.json), from
real PyTorch 2.6:

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_figures_ssm.py \
        tests/reference/hf_figures_ssm.json

(run from the checkout root; CPU only). As tests/tools/hf_figures.py (whose measurement this reuses), for
the model of tests/tools/hf_models_ssm.py:

* "configs": the published Bamba-9B config (tests/hf/published/bamba-9b.json) built on torch.device("meta"):
  params_total, param_tensors, buffers; checked equal to the arithmetic of PUBLISHED_ARITHMETIC.
* "tiny": tests/hf/tiny/bamba.json measured in train() mode, float32 and bfloat16, attention "eager" and
  "sdpa", with hf_figures.py's CUDA corrections, and one more, the CUDA kernel correction of the Mamba
  mixers: on the CPU transformers runs BambaMixer.torch_forward (the slow path: mamba_ssm and
  causal_conv1d are CUDA-only), whose naive chunked SSD saves many intermediates; on CUDA with the kernels
  installed, training runs cuda_kernels_forward, whose mamba_split_conv1d_scan_combined (an
  autograd.Function) saves zxbcdt, out_x, rstd and A only. The reference therefore runs the mixers as
  hf_models_ssm.FusedSplitConv1dScan, a Function whose forward saves the kernel's set (tensor for tensor,
  as state-spaces/mamba's ssd_combined.py lists it), the way hf_figures.py emulates CUDA's SDPA kernel:
  "tiny.bamba" is that CUDA figure (what memest models by default), "tiny.bamba_torch_forward" the slow
  path's (memest's --set mamba_kernels=false); the same for tests/hf/tiny/bamba_chunk6.json.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_models_ssm import BUILDERS  # noqa: E402
from hf_figures import published_configs, tiny_entry, write_json  # noqa: E402
from provenance import stamp  # noqa: E402

torch.set_num_threads(2)

CONFIGS = ["bamba-9b"]
# bamba_chunk6: 16 tokens in chunks of 6 (the slow path pads to 18), 1 group, proj biases, no conv bias,
# the attention layer first
TINY = ["bamba", "bamba_chunk6"]


def bamba(V, H, L, I, heads, kv, nh, hd_m, g, n, k, attn_layers):
    """Bamba: per Mamba layer in_proj [H, 2 dim + 2 g n + nh] (dim = nh * hd_m), conv1d weight
    [conv_dim, 1, k] and bias (conv_dim = dim + 2 g n), dt_bias, A_log, D [nh], norm [dim], out_proj
    [dim, H]; per attention layer q/k/v/o_proj without biases (head_dim H / heads); each layer the gated
    MLP and two RMSNorms; untied embedding and head, the final norm."""
    dim, conv_dim = nh * hd_m, nh * hd_m + 2 * g * n
    mixer = H * (dim + conv_dim + nh) + conv_dim * k + conv_dim + 3 * nh + dim + dim * H
    hd = H // heads
    attn = H * heads * hd + 2 * H * kv * hd + heads * hd * H
    common = 3 * H * I + 2 * H
    return 2 * V * H + (L - attn_layers) * (mixer + common) + attn_layers * (attn + common) + H


# ibm-ai-platform/Bamba-9B: "9.78B" parameters (its model card); the arithmetic gives 9,780,235,392
PUBLISHED = {"bamba-9b": 9780235392}
PUBLISHED_ARITHMETIC = {"bamba-9b": bamba(128256, 4096, 32, 14336, 32, 8, 128, 64, 1, 128, 4, 3)}


def tiny_figures():
    def fused(cfg, attn):
        return BUILDERS[cfg["model_type"]](cfg, attn, "fused")

    def slow(cfg, attn):
        return BUILDERS[cfg["model_type"]](cfg, attn, "torch")
    out = {}
    for name in TINY:
        out[name] = tiny_entry(name + ".json", fused, mixer="cuda_kernels_forward (mamba_ssm's fused kernel)")
        out[name + "_torch_forward"] = tiny_entry(name + ".json", slow, mixer="torch_forward (the slow path)")
    return out


def main(argv):
    follows = ("bamba at 00511f5df3b63c48b31496072ec35d6ff3ffa6c6 (configuration_bamba.py at "
               "001f85b38fb432858ace93f18622f07cec46d874); state-spaces/mamba ssd_combined.py at "
               "01b717ae0db0f51b82738b9ca46e5deb73e3a807 (tests/tools/hf_models_ssm.py)")
    result = {
        "generator": "tests/tools/hf_figures_ssm.py",
        "follows": "transformers: " + follows,
        "torch_version": torch.__version__,
        "device": "cpu",
        "configs": published_configs(BUILDERS, CONFIGS, PUBLISHED, PUBLISHED_ARITHMETIC,
                                     folder=("tests", "hf", "published")),
        "tiny": tiny_figures(),
    }
    result = stamp(result, "tests/tools/hf_figures_ssm.py",
                   {"torch": torch.__version__, "transformers": follows + " (followed in plain PyTorch, not imported)"})
    write_json(argv, result)


if __name__ == "__main__":
    main(sys.argv)
