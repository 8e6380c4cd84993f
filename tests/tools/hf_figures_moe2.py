#!/usr/bin/python3
"""Reference figures for the issue-32 sparse-MoE templates of group moe2 (models/arch/glm4_moe.json), from
real PyTorch 2.6 (and granitemoe.json):

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_figures_moe2.py \
        tests/reference/hf_figures_moe2.json

(run from the checkout root; CPU only). As tests/tools/hf_figures_moe.py, for the models of
tests/tools/hf_models_moe2.py (transformers main, op by op):

* "published": tests/hf/published/glm-4.5-air.json and granite-3.1-3b-a800m-instruct.json built on torch.device("meta"): params_total, buffers,
  and the parameters one token runs through (active_params: all but the routed experts it is not sent to,
  the input embedding's whole table included), checked against glm4_moe_arithmetic() here, and the
  published "106B total / 12B active" (active without the embedding and the head, rounded).
* "tiny": tests/hf/tiny/glm4_moe.json with the routing forced to the balanced round-robin split memest
  assumes, measured in train() mode, one forward of input_ids [B, S] to logits.float().view(-1, V), in
  float32 and bfloat16, attention "eager" and "sdpa": saved activations by saved_tensors_hooks, storages
  de-duplicated, parameters and buffers excluded, with hf_figures.py's CUDA corrections. The expert
  selection's packed tensors that die when route_tokens_to_experts returns are not counted
  (hf_models_moe2.py's docstring); their bytes are recorded as selection_packed_bytes.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models_moe2  # noqa: E402
from hf_models_moe2 import BUILDERS  # noqa: E402
from hf_figures import here, load, static_info, tiny_entry, write_json  # noqa: E402
from provenance import stamp  # noqa: E402

torch.set_num_threads(2)

TINY = ["glm4_moe", "granitemoe"]
PUBLISHED = ["glm-4.5-air", "granite-3.1-3b-a800m-instruct"]


def glm4_moe_arithmetic(cfg):
    """Glm4MoeForCausalLM from its config (Glm4MoeAttention, Glm4MoeMoE, Glm4MoeMLP; no MTP layer):
    (total, active), active counting num_experts_per_tok of the n_routed_experts routed experts."""
    H, L, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    heads, kv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    b = 1 if cfg["attention_bias"] else 0
    attn = (H * heads * hd + b * heads * hd + 2 * (H * kv * hd + b * kv * hd)   # q, k, v (+ biases)
            + heads * hd * H                                                    # o_proj, no bias
            + (2 * hd if cfg["use_qk_norm"] else 0))                            # q_norm, k_norm
    expert = 3 * H * cfg["moe_intermediate_size"]                               # gate_up [2I, H], down [H, I]
    dense = cfg["first_k_dense_replace"]
    common = 2 * V * H + H + L * (attn + 2 * H) + dense * 3 * H * cfg["intermediate_size"]
    E = cfg["n_routed_experts"]
    moe_fixed = E * H + cfg["n_shared_experts"] * expert                        # router weight, shared
    total = common + (L - dense) * (moe_fixed + E * expert)
    active = common + (L - dense) * (moe_fixed + cfg["num_experts_per_tok"] * expert)
    return total, active


def granitemoe_arithmetic(cfg):
    """GraniteMoeForCausalLM from its config (LlamaAttention, GraniteMoeMoE; tied head): (total, active)."""
    H, L, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = H // heads
    attn = 2 * H * heads * hd + 2 * H * kv * hd                                 # q, o; k, v (no biases)
    E, k, inter = cfg["num_local_experts"], cfg["num_experts_per_tok"], cfg["intermediate_size"]
    expert = 2 * inter * H + H * inter                                          # input_linear, output_linear
    common = V * H + H + L * (attn + 2 * H + E * H)                             # embed (tied), norms, router
    return common + L * E * expert, common + L * k * expert


ARITHMETIC = {"glm4_moe": glm4_moe_arithmetic, "granitemoe": granitemoe_arithmetic}
# the published figures: (total, active without the embedding and the head) in units of 1e9, and how the
# publisher rounds them
PUBLISHED_ROUNDED = {
    # "106 billion total parameters and 12 billion active parameters" (the model card)
    "glm-4.5-air": (lambda t: int(t / 1e9) == 106, lambda a: round(a / 1e9) == 12),
    # "3B-A800M": 3.3B in total, 800M active (the model card); the head is the tied embedding
    "granite-3.1-3b-a800m-instruct": (lambda t: round(t / 1e8) == 33, lambda a: round(a / 1e8) == 8),
}


def published_figures():
    """zai-org/GLM-4.5-Air: "106 billion total parameters and 12 billion active parameters" (the model
    card): 106.85B built (the MTP layer model.layers.46.* not: Glm4MoeModel skips it), 12.18B active without
    the input embedding and the head. ibm-granite/granite-3.1-3b-a800m-instruct: 3.30B, 0.81B active without
    the (tied) embedding."""
    out = {}
    for name in PUBLISHED:
        cfg = load(here("tests", "hf", "published", name + ".json"))
        with torch.device("meta"):
            model = BUILDERS[cfg["model_type"]](cfg)
        info = static_info(model)
        total, active = ARITHMETIC[cfg["model_type"]](cfg)
        assert info["params_total"] == total, (info["params_total"], total)
        k, E = cfg["num_experts_per_tok"], cfg.get("n_routed_experts", cfg.get("num_local_experts"))
        experts = [m for layer in model.model.layers for m in layer.mlp.modules()
                   if isinstance(m, (hf_models_moe2.Glm4MoeNaiveMoe, hf_models_moe2.GraniteMoeParallelExperts))]
        skipped = sum((p.numel() // E) * (E - k) for m in experts for p in m.parameters())
        info["active_params"] = info["params_total"] - skipped
        assert info["active_params"] == active, (info["active_params"], active)
        tied = model.lm_head.weight is model.model.embed_tokens.weight
        embed_head = (1 if tied else 2) * model.model.embed_tokens.weight.numel()
        info["active_params_without_embedding_and_head"] = info["active_params"] - embed_head
        ok_total, ok_active = PUBLISHED_ROUNDED[name]
        assert ok_total(info["params_total"]) and ok_active(info["active_params_without_embedding_and_head"]), info
        info["model_type"] = cfg["model_type"]
        out[name] = info
    return out


def tiny_figures():
    def build(cfg, attn):
        return BUILDERS[cfg["model_type"]](cfg, attn, balanced=True)

    def post(model, r):
        del r["storages"]
        r["selection_packed_bytes"] = sum(hf_models_moe2.SELECTION_PACKED)
        del hf_models_moe2.SELECTION_PACKED[:]   # the next run's forward appends anew
        r["tokens_per_expert"] = [m.tokens_per_expert for layer in model.model.layers
                                  for m in layer.mlp.modules() if hasattr(m, "tokens_per_expert")]
        return r
    del hf_models_moe2.SELECTION_PACKED[:]
    return {name: tiny_entry(name + ".json", build, post, routing="balanced (round-robin)") for name in TINY}


def main(argv):
    follows = "transformers main: glm4_moe at 000c33fdfde12e1ffafbfcdb3c926df5727a00b6, granitemoe at 023633dd63876e9f65e733a9f547952052b63d6a (tests/tools/hf_models_moe2.py)"
    result = {
        "generator": "tests/tools/hf_figures_moe2.py",
        "follows": follows,
        "torch_version": torch.__version__,
        "device": "cpu",
        "published": published_figures(),
        "tiny": tiny_figures(),
    }
    result = stamp(result, "tests/tools/hf_figures_moe2.py", {"torch": torch.__version__, "transformers": follows + " (followed in plain PyTorch, not imported)"})
    write_json(argv, result)
    for name, e in result["published"].items():
        sys.stderr.write("%-18s %14d params  active %d  buffers %d\n" % (
            name, e["params_total"], e["active_params"], e["buffers_count"]))
    for name, e in result["tiny"].items():
        for k, r in e["runs"].items():
            sys.stderr.write("%-18s %-16s %10d saved (cuda %d) selection %d\n" % (
                name, k, r["saved_activation_bytes"], r["saved_activation_bytes_cuda_corrected"],
                r["selection_packed_bytes"]))


if __name__ == "__main__":
    main(sys.argv)
