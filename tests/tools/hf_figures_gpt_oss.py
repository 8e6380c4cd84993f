#!/usr/bin/python3
"""Reference figures for the gpt_oss template (models/arch/gpt_oss.json), from real PyTorch 2.6:

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_figures_gpt_oss.py \
        tests/reference/hf_figures_gpt_oss.json

(run from the checkout root; CPU only). For the model of tests/tools/hf_models_gpt_oss.py (transformers'
modular_gpt_oss.py, op by op):

* "configs": tests/hf/published/gpt-oss-20b.json and gpt-oss-120b.json (the hub's config.json) built on
  torch.device("meta"): params_total, buffers, and the parameters one token runs through (active_params: all
  but the experts it is not routed to, the input embedding's whole table included), checked against
  arithmetic() here and against OpenAI's published figures (the gpt-oss model card: 20.91B total and 3.61B
  active; 116.83B total and 5.13B active; "active" there leaves out the input embedding, not the unembedding).
* "tiny": tests/hf/tiny/gpt_oss.json with the routing forced to the balanced round-robin split memest
  assumes, measured in train() mode, one forward of input_ids [B, S] to logits.float().view(-1, V), in
  float32 and bfloat16, eager attention only (GptOssPreTrainedModel._supports_sdpa is False): saved
  activations by saved_tensors_hooks, storages de-duplicated, parameters and buffers excluded, with
  hf_figures.py's CUDA corrections.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models_gpt_oss  # noqa: E402
from hf_models_gpt_oss import BUILDERS  # noqa: E402
from hf_figures import here, load, static_info, tiny_entry, write_figures  # noqa: E402

torch.set_num_threads(2)

PUBLISHED = ["gpt-oss-20b", "gpt-oss-120b"]
# the model card's figures, in units of 10 million: total and active without the input embedding
PUBLISHED_ROUNDED = {"gpt-oss-20b": (2091, 361), "gpt-oss-120b": (11683, 513)}


def arithmetic(cfg):
    """Total and active parameters of GptOssForCausalLM from the config: per layer q/k/v/o_proj with biases,
    the sinks [heads], two RMSNorms, the router [E, H] + [E], the experts gate_up_proj [E, H, 2I] + bias
    [E, 2I] and down_proj [E, I, H] + bias [E, H]; the untied embedding and lm_head, the final norm. Active:
    less the (E - k) experts a token is not routed to, on every layer."""
    V, H, L = cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"]
    nh, nkv, hd, I = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"], cfg["intermediate_size"]
    E, k = cfg["num_local_experts"], cfg["num_experts_per_tok"]
    attn = H * nh * hd + nh * hd + 2 * (H * nkv * hd + nkv * hd) + nh * hd * H + H + nh
    expert = H * 2 * I + 2 * I + I * H + H
    layer = attn + 2 * H + E * H + E + E * expert
    total = 2 * V * H + L * layer + H
    return total, total - L * (E - k) * expert


def published_figures():
    out = {}
    for name in PUBLISHED:
        cfg = load(here("tests", "hf", "published", name + ".json"))
        with torch.device("meta"):
            model = BUILDERS[cfg["model_type"]](cfg)
        info = static_info(model)
        total, active = arithmetic(cfg)
        assert info["params_total"] == total, (info["params_total"], total)
        k, E = cfg["num_experts_per_tok"], cfg["num_local_experts"]
        experts = [layer.mlp.experts for layer in model.model.layers]
        skipped = sum((p.numel() // E) * (E - k) for m in experts for p in m.parameters())
        info["active_params"] = info["params_total"] - skipped
        assert info["active_params"] == active, (info["active_params"], active)
        info["active_params_without_embedding"] = info["active_params"] - model.model.embed_tokens.weight.numel()
        t10, a10 = PUBLISHED_ROUNDED[name]
        assert round(info["params_total"] / 1e7) == t10, (name, info["params_total"])
        assert round(info["active_params_without_embedding"] / 1e7) == a10, (name, info)
        info["model_type"] = cfg["model_type"]
        out[name] = info
    return out


def tiny_figures():
    def build(cfg, attn):
        return BUILDERS[cfg["model_type"]](cfg, attn, balanced=True)

    def post(model, r):
        del r["storages"]
        r["tokens_per_expert"] = [layer.mlp.experts.tokens_per_expert for layer in model.model.layers]
        return r
    return {"gpt_oss": tiny_entry("gpt_oss.json", build, post, attns=("eager",), routing="balanced (round-robin)")}


def main(argv):
    write_figures(argv, "tests/tools/hf_figures_gpt_oss.py",
                  "gpt_oss at 0261a467116de4a9103b58200f9d82f8fb5a0e86 (tests/tools/hf_models_gpt_oss.py)",
                  published_figures(), tiny_figures())


if __name__ == "__main__":
    main(sys.argv)
