#!/usr/bin/python3
"""Reference figures for the Cohere templates (models/arch/cohere.json, cohere2.json on
models/arch/lib/cohere.json), from real PyTorch 2.6:

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_figures_cohere.py \
        tests/reference/hf_figures_cohere.json

(run from the checkout root; CPU only). As tests/tools/hf_figures.py (whose measurement this reuses), for
the models of tests/tools/hf_models_cohere.py:

* "configs": each shipped example config (CONFIGS) built on torch.device("meta"): params_total,
  param_tensors, buffers; the published figure, checked equal here (an assertion) and against the
  arithmetic written out in PUBLISHED_ARITHMETIC.
* "tiny": tests/hf/tiny/<model_type>.json measured in train() mode, one forward of input_ids [B, S] to
  logits.float().view(-1, V), float32 and bfloat16, attention "eager" and "sdpa": saved activations by
  saved_tensors_hooks, storages de-duplicated, parameters and buffers excluded, with hf_figures.py's CUDA
  corrections (CohereLayerNorm is written in elementwise ops, so no LayerNorm kernel's statistics to
  correct).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_models_cohere import BUILDERS  # noqa: E402
from hf_figures import published_configs, tiny_entry, write_figures  # noqa: E402

torch.set_num_threads(2)

CONFIGS = ["c4ai-command-r-v01", "c4ai-command-r-plus", "c4ai-command-r7b-12-2024"]
TINY = ["cohere", "cohere2"]


def cohere(V, H, L, I, heads, kv, hd, qk_norm=False):
    """q/k/v/o_proj (no bias), gate/up/down_proj, one CohereLayerNorm weight [H] per layer (and q_norm
    [heads, hd], k_norm [kv, hd] with use_qk_norm), the final norm [H], lm_head tied to the embeddings."""
    layer = 2 * H * heads * hd + 2 * H * kv * hd + 3 * H * I + H + (heads + kv) * hd * qk_norm
    return V * H + L * layer + H


# CohereForAI/c4ai-command-r-v01: "35B params" (the hub; safetensors total 34,980,831,232)
# CohereForAI/c4ai-command-r-plus: "104B params" (the hub; safetensors total 103,810,674,688)
# CohereForAI/c4ai-command-r7b-12-2024: "8.03B params" (the hub; safetensors total 8,028,033,024)
PUBLISHED = {"c4ai-command-r-v01": 34980831232, "c4ai-command-r-plus": 103810674688,
             "c4ai-command-r7b-12-2024": 8028033024}
PUBLISHED_ARITHMETIC = {"c4ai-command-r-v01": cohere(256000, 8192, 40, 22528, 64, 64, 128),
                        "c4ai-command-r-plus": cohere(256000, 12288, 64, 33792, 96, 8, 128, qk_norm=True),
                        "c4ai-command-r7b-12-2024": cohere(256000, 4096, 32, 14336, 32, 8, 128)}


def main(argv):
    follows = ("cohere and cohere2 at 015bfeb86891c5f5e450f48942260ac3e2cd2bf2 "
               "(tests/tools/hf_models_cohere.py)")
    configs = published_configs(BUILDERS, CONFIGS, PUBLISHED, PUBLISHED_ARITHMETIC)
    tiny = {name: tiny_entry(name + ".json", lambda cfg, attn: BUILDERS[cfg["model_type"]](cfg, attn))
            for name in TINY}
    write_figures(argv, "tests/tools/hf_figures_cohere.py", follows, configs, tiny)


if __name__ == "__main__":
    main(sys.argv)
