#!/usr/bin/python3
"""Reference figures for the parallel-layer templates built on models/arch/lib/parallel.json (phi, falcon), from
real PyTorch 2.6:

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_figures_parallel.py \
        tests/reference/hf_figures_parallel.json

(run from the checkout root; CPU only). As tests/tools/hf_figures_dense.py (whose LayerNorm correction this
reuses), for the models of tests/tools/hf_models_parallel.py:

* "configs": each shipped example config (CONFIGS) built on torch.device("meta"): params_total,
  param_tensors, buffers; the published figure, checked equal here (an assertion) and against the
  arithmetic written out in PUBLISHED_ARITHMETIC.
* "tiny": tests/hf/tiny/NAME.json (TINY) measured in train() mode, one forward of input_ids [B, S] to
  logits.float().view(-1, V), float32 and bfloat16, attention "eager" and "sdpa": saved activations by
  saved_tensors_hooks, storages de-duplicated, parameters and buffers excluded, with hf_figures.py's CUDA
  corrections (the efficient kernel's for Falcon's SDPA calls with as many key as query heads, called by the
  replica itself) and hf_figures_dense.py's layernorm_cuda.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_models_parallel import BUILDERS  # noqa: E402
from hf_figures import published_configs, tiny_entry, write_figures  # noqa: E402
from hf_figures_dense import layernorm_cuda  # noqa: E402

torch.set_num_threads(2)

CONFIGS = ["phi-2", "phi-1_5", "falcon-7b", "falcon-40b"]
TINY = ["phi", "phi_qk", "falcon", "falcon_new", "falcon_seq"]


def phi(V, H, L, I, heads):
    """Phi: q/k/v_proj and dense with biases, fc1/fc2 with biases, one LayerNorm (weight and bias) per layer,
    final_layernorm, lm_head untied with a bias."""
    layer = 4 * (H * H + H) + (H * I + I) + (I * H + H) + 2 * H
    return V * H + L * layer + 2 * H + (H * V + V)


def falcon(V, H, L, heads, kv, hd, ffn, norms):
    """Falcon without biases: query_key_value to (heads + 2 kv) * hd, dense, dense_h_to_4h, dense_4h_to_h,
    norms LayerNorms per layer, ln_f, lm_head tied to word_embeddings."""
    layer = H * (heads + 2 * kv) * hd + H * H + 2 * H * ffn + norms * 2 * H
    return V * H + L * layer + 2 * H


# microsoft/phi-2: "2.7B"; its model.safetensors total 2,779,683,840 (lm_head untied, with a bias)
# microsoft/phi-1_5: "1.3B" (its card); its model.safetensors holds 1,418,270,720
# tiiuae/falcon-7b: 6,921,720,704 parameters (the hub's "7.22B" counts lm_head.weight, stored beside the
#   tied word_embeddings.weight, a second time: + 65024*4544)
# tiiuae/falcon-40b: 41,303,293,952 (the hub's "41.8B" likewise: + 65024*8192)
PUBLISHED = {"phi-2": 2779683840, "phi-1_5": 1418270720, "falcon-7b": 6921720704, "falcon-40b": 41303293952}
PUBLISHED_ARITHMETIC = {"phi-2": phi(51200, 2560, 32, 10240, 32), "phi-1_5": phi(51200, 2048, 24, 8192, 32),
                        "falcon-7b": falcon(65024, 4544, 32, 71, 1, 64, 4 * 4544, 1),
                        "falcon-40b": falcon(65024, 8192, 60, 128, 8, 64, 4 * 8192, 2)}


def main(argv):
    follows = ("phi: modular_phi.py at b39782da06db496e7c2528808f42718e54157709; falcon: modeling_falcon.py, "
               "the version with FalconModel.rotary_emb (tests/tools/hf_models_parallel.py)")

    def build(cfg, attn):
        return BUILDERS[cfg["model_type"]](cfg, attn)
    tiny = {name: tiny_entry(name + ".json", build, lambda model, r: layernorm_cuda(r)) for name in TINY}
    write_figures(argv, "tests/tools/hf_figures_parallel.py", follows,
                    published_configs(BUILDERS, CONFIGS, PUBLISHED, PUBLISHED_ARITHMETIC), tiny)


if __name__ == "__main__":
    main(sys.argv)
