#!/usr/bin/python3
"""Reference figures for the llama4_text template (models/arch/llama4_text.json, models/arch/lib/llama4.json), from
real PyTorch 2.6:

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_figures_llama4.py \
        tests/reference/hf_figures_llama4.json

(run from the checkout root; CPU only). As tests/tools/hf_figures.py (whose measurement this reuses), for the
model of tests/tools/hf_models_llama4.py:

* "configs": Llama 4 Scout's text model (tests/hf/published/llama-4-scout-17b-16e.json, its text_config as a
  llama4_text config) built on torch.device("meta"): params_total, param_tensors, buffers; checked equal here
  (an assertion) to the arithmetic written out in scout().
* "tiny": tests/hf/tiny/llama4_text.json measured in train() mode, one forward of input_ids [B, S] to
  logits.float().view(-1, V), float32 and bfloat16, attention "eager" and "sdpa": saved activations by
  saved_tensors_hooks, storages de-duplicated, parameters and buffers excluded, with hf_figures.py's CUDA
  corrections.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_models_llama4 import build  # noqa: E402
from hf_figures import here, load, static_info, tiny_entry, write_figures  # noqa: E402

torch.set_num_threads(2)

CONFIGS = {"llama-4-scout-17b-16e": "tests/hf/published/llama-4-scout-17b-16e.json",
           "llama-4-maverick-17b-128e": "tests/hf/published/llama-4-maverick-17b-128e.json"}
TINY = ["llama4_text"]


def llama4(V, H, L, heads, kv, hd, I, I_mlp, E, step):
    """Every step-th layer a MoE layer (the router [E, H], the experts' gate_up_proj [E, H, 2I] and down_proj
    [E, I, H], the shared expert 3 H I), the others a dense MLP of I_mlp; every layer q/k/v/o_proj without bias
    and two RMSNorms (the L2 qk_norm has no weight); the final RMSNorm; embed_tokens and the untied lm_head."""
    attn = H * heads * hd + 2 * H * kv * hd + heads * hd * H
    moe = E * H + E * 3 * H * I + 3 * H * I
    n_moe = L // step
    return 2 * V * H + L * (attn + 2 * H) + n_moe * moe + (L - n_moe) * 3 * H * I_mlp + H


# meta-llama/Llama-4-Scout-17B-16E: "17B active, 109B total" (the model card, vision encoder included); its text
# model: 107,769,861,120 by the arithmetic (the figure the published text_config builds).
# meta-llama/Llama-4-Maverick-17B-128E: "17B active, 400B total"; its text model 400,711,848,960.
PUBLISHED = {"llama-4-scout-17b-16e": 107769861120, "llama-4-maverick-17b-128e": 400711848960}
PUBLISHED_ARITHMETIC = {"llama-4-scout-17b-16e": llama4(202048, 5120, 48, 40, 8, 128, 8192, 16384, 16, 1),
                        "llama-4-maverick-17b-128e": llama4(202048, 5120, 48, 40, 8, 128, 8192, 16384, 128, 2)}


def config_figures():
    out = {}
    for name, path in CONFIGS.items():
        with torch.device("meta"):
            model = build(load(here(*path.split("/"))))
        info = dict(static_info(model), model_type="llama4_text", published_params=PUBLISHED[name])
        assert PUBLISHED_ARITHMETIC[name] == PUBLISHED[name], (name, PUBLISHED_ARITHMETIC[name])
        assert info["params_total"] == PUBLISHED[name], (name, info["params_total"], PUBLISHED[name])
        out[name] = info
    return out


def main(argv):
    tiny = {name: tiny_entry(name + ".json", build) for name in TINY}
    write_figures(argv, "tests/tools/hf_figures_llama4.py",
                  "llama4 at 000c33fdfde12e1ffafbfcdb3c926df5727a00b6, configuration_llama4.py at "
                  "008e574391258935f3ecc3035c882e73bbcac419 (tests/tools/hf_models_llama4.py)",
                  config_figures(), tiny)


if __name__ == "__main__":
    main(sys.argv)
