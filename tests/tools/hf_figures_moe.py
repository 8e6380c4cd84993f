#!/usr/bin/python3
"""Reference figures for the sparse-MoE templates (models/arch/mixtral.json, qwen2_moe.json), from real
PyTorch 2.6:

    ../shared/tools/torch2-chroot python3 tests/tools/hf_figures_moe.py tests/reference/hf_figures_moe.json

(run from the checkout root; CPU only). As tests/tools/hf_figures.py (whose measurement this reuses),
for the models of tests/tools/hf_models_moe.py (transformers v4.48.0, op by op):

* "configs": each shipped example config (CONFIGS below) built on torch.device("meta"): params_total,
  param_tensors, buffers; the published figure, checked equal here (an assertion) and against the
  arithmetic written out in PUBLISHED_ARITHMETIC.
* "tiny": small configs (tests/hf/tiny/mixtral.json, qwen2_moe.json) with the routing forced to the
  balanced round-robin split memest assumes (hf_models_moe.py, balanced=True), measured in train() mode,
  one forward of input_ids [B, S] to logits.float().view(-1, V), in float32 and bfloat16, attention
  "eager" and "sdpa": saved activations by saved_tensors_hooks, storages de-duplicated, parameters and
  buffers excluded, with hf_figures.py's CUDA corrections.
  tests/hf/tiny/deepseek_v3_lite.json takes DeepSeek-V3's other branches (q_proj without q_lora_rank,
  rope_interleave false, one expert group, no renormalisation, attention biases, no dense layer);
  tiny deepseek_v3's "sdpa" runs are PyTorch's CPU choice for a v head dim unlike q's, the math kernel
  (hf_models_moe.py), compared with memest's --attention math.
* "published": tests/hf/published/deepseek-v3.json (the hub's config without its fp8 quantization_config)
  built on torch.device("meta"): params_total, buffers, and the parameters one token runs through
  (active_params: all but the routed experts it is not sent to, the input embedding's whole table
  included), checked against deepseek_v3_arithmetic() here.
* "block": MixtralSparseMoeBlock alone after a linear (tests/hf/moe_block.json, a memest model file whose
  variables give the sizes), balanced routing, float32 and bfloat16: the MoE ops checked without the
  attention and norm ops.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_models_moe import BUILDERS, SparseMoeBlock  # noqa: E402
from hf_figures import (TINY_BATCH, TINY_SEQ, here, load, measure, published_configs, static_info,  # noqa: E402
                        tiny_entry, write_json)
from provenance import stamp  # noqa: E402

torch.set_num_threads(2)

CONFIGS = ["mixtral-8x7b", "qwen1.5-moe-a2.7b"]
TINY = ["mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3", "deepseek_v3_lite"]
IMBALANCE = 1.5  # one more run of tiny mixtral (bfloat16, sdpa) with this --moe-imbalance split


def mixtral_8x7b():
    """Mixtral-8x7B-v0.1: 46,702,792,704 (the figure num_parameters() gives for the hub checkpoint)."""
    V, H, L, I, E = 32000, 4096, 32, 14336, 8
    heads, kv, hd = 32, 8, 128
    attn = H * heads * hd + 2 * H * kv * hd + heads * hd * H   # q, k, v, o (no biases)
    moe = H * E + E * 3 * H * I                                # gate + experts' w1, w3, w2
    norms = 2 * H
    return 2 * V * H + L * (attn + moe + norms) + H            # embed, lm_head (untied), final norm


def qwen15_moe_a27b():
    """Qwen1.5-MoE-A2.7B: 14,315,784,192 ("14.3B parameters in total", the model card)."""
    V, H, L, E = 151936, 2048, 24, 60
    moe_i, shared_i = 1408, 5632
    attn = 3 * (H * H + H) + H * H                             # q, k, v with biases, o without
    moe = H * E + E * 3 * H * moe_i + 3 * H * shared_i + H     # gate, experts, shared expert, its gate
    norms = 2 * H
    return 2 * V * H + L * (attn + moe + norms) + H


def deepseek_v3_arithmetic(cfg):
    """DeepSeek-V3 from its config (DeepseekV3Attention, DeepseekV3MoE, DeepseekV3MLP; no MTP module):
    (total, active), active counting num_experts_per_tok of the n_routed_experts routed experts."""
    H, L, V, heads = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"], cfg["num_attention_heads"]
    qk = cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"]
    attn = (H * cfg["q_lora_rank"] + cfg["q_lora_rank"] + cfg["q_lora_rank"] * heads * qk     # q_a, norm, q_b
            + H * (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) + cfg["kv_lora_rank"]      # kv_a, norm
            + cfg["kv_lora_rank"] * heads * (cfg["qk_nope_head_dim"] + cfg["v_head_dim"])   # kv_b
            + heads * cfg["v_head_dim"] * H)                                                # o_proj
    expert = 3 * H * cfg["moe_intermediate_size"]
    dense = cfg["first_k_dense_replace"]
    common = 2 * V * H + H + L * (attn + 2 * H) + dense * 3 * H * cfg["intermediate_size"]
    sparse = L - dense
    moe_fixed = cfg["n_routed_experts"] * H + cfg["n_shared_experts"] * expert               # gate, shared
    total = common + sparse * (moe_fixed + cfg["n_routed_experts"] * expert)
    active = common + sparse * (moe_fixed + cfg["num_experts_per_tok"] * expert)
    return total, active


PUBLISHED = {"mixtral-8x7b": 46702792704, "qwen1.5-moe-a2.7b": 14315784192}
PUBLISHED_ARITHMETIC = {"mixtral-8x7b": mixtral_8x7b(), "qwen1.5-moe-a2.7b": qwen15_moe_a27b()}


def config_figures():
    return published_configs(BUILDERS, CONFIGS, PUBLISHED, PUBLISHED_ARITHMETIC)


def published_figures():
    """DeepSeek-V3: "671B total parameters with 37B activated for each token" (the DeepSeek-V3 technical
    report; its README_WEIGHTS.md: 36.6B activated without the input embedding, the 0.9B head included; the
    685B of the hub's checkpoint add the 14B multi-token-prediction module, which transformers skips)."""
    cfg = load(here("tests", "hf", "published", "deepseek-v3.json"))
    with torch.device("meta"):
        model = BUILDERS["deepseek_v3"](cfg)
    info = static_info(model)
    total, active = deepseek_v3_arithmetic(cfg)
    assert info["params_total"] == total, (info["params_total"], total)
    # what one token runs through on the meta model: all but the routed experts it does not get
    k, E = cfg["num_experts_per_tok"], cfg["n_routed_experts"]
    skipped = sum(p.numel() for layer in model.model.layers if hasattr(layer.mlp, "experts")
                  for e in layer.mlp.experts[k:] for p in e.parameters())
    info["active_params"] = info["params_total"] - skipped
    assert info["active_params"] == active, (info["active_params"], active)
    embed = model.model.embed_tokens.weight.numel()
    info["active_params_without_embedding"] = info["active_params"] - embed
    assert round(info["params_total"] / 1e9) == 671 and round(info["active_params_without_embedding"] / 1e9, 1) == 36.6
    assert E > k
    info["model_type"] = cfg["model_type"]
    return {"deepseek-v3": info}


def tiny_figures():
    def build(cfg, attn):
        return BUILDERS[cfg["model_type"]](cfg, attn, balanced=True)

    def post(model, r):
        del r["storages"]  # per-storage lines: long, and in by_grad_fn already
        return r
    out = {name: tiny_entry(name + ".json", build, post, routing="balanced (round-robin)") for name in TINY}
    # memest's --moe-imbalance split (expert 0 gets min(T, ceil(F*T*k/E)) tokens), forced likewise: the
    # same saved bytes in total (each expert's scale with its tokens), and the tokens per expert
    cfg = load(here("tests", "hf", "tiny", "mixtral.json"))
    torch.manual_seed(0)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        model = BUILDERS["mixtral"](cfg, "sdpa", balanced=IMBALANCE)
    finally:
        torch.set_default_dtype(old)
    torch.manual_seed(0)
    ids = torch.randint(0, cfg["vocab_size"], (TINY_BATCH, TINY_SEQ))
    r = measure(model, ids)
    del r["storages"]
    out["mixtral"]["runs"]["bfloat16/sdpa/imbalance"] = r
    out["mixtral"]["imbalance"] = IMBALANCE
    out["mixtral"]["imbalance_tokens_per_expert"] = model.model.layers[0].block_sparse_moe.tokens_per_expert
    return out


class BlockModel(torch.nn.Module):
    """tests/hf/moe_block.json: pre = Linear(H, H, bias=False), then MixtralSparseMoeBlock."""

    def __init__(self, cfg):
        super().__init__()
        self.pre = torch.nn.Linear(cfg["hidden_size"], cfg["hidden_size"], bias=False)
        self.block_sparse_moe = SparseMoeBlock(cfg, False, True)

    def forward(self, x):
        return self.block_sparse_moe(self.pre(x))[0]


def block_figures():
    var = load(here("tests", "hf", "moe_block.json"))["variables"]
    assert var["norm_topk_prob"] is True  # Mixtral's block always renormalises
    cfg = {"model_type": "mixtral", "hidden_size": var["hidden"], "intermediate_size": var["intermediate"],
           "num_local_experts": var["experts"], "num_experts_per_tok": var["top_k"], "hidden_act": "silu"}
    entry = {"model": "tests/hf/moe_block.json", "batch": TINY_BATCH, "seq_len": var["seq"],
             "routing": "balanced (round-robin)", "runs": {}}
    for dtype in (torch.float32, torch.bfloat16):
        torch.manual_seed(0)
        model = BlockModel(cfg).to(dtype)
        entry.setdefault("params_total", static_info(model)["params_total"])
        x = torch.randn(TINY_BATCH, var["seq"], var["hidden"], dtype=dtype)
        r = measure(model, x)
        del r["storages"]
        entry["runs"][str(dtype).replace("torch.", "")] = r
    return entry


def main(argv):
    result = {
        "generator": "tests/tools/hf_figures_moe.py",
        "follows": "transformers v4.48.0; deepseek_v3: commit 00b676f8f0489b88652a31d70751cc540dd06305 (tests/tools/hf_models_moe.py)",
        "torch_version": torch.__version__,
        "device": "cpu",
        "configs": config_figures(),
        "published": published_figures(),
        "tiny": tiny_figures(),
        "block": block_figures(),
    }
    result = stamp(result, "tests/tools/hf_figures_moe.py", {"torch": torch.__version__, "transformers": "v4.48.0, deepseek_v3 at 00b676f8f0489b88652a31d70751cc540dd06305 (followed in plain PyTorch, not imported)"})
    write_json(argv, result)
    for name, e in result["configs"].items():
        sys.stderr.write("%-18s %14d params  published %s  buffers %d\n" % (
            name, e["params_total"], e.get("published_params"), e["buffers_count"]))
    for name, e in result["published"].items():
        sys.stderr.write("%-18s %14d params  active %d  buffers %d\n" % (
            name, e["params_total"], e["active_params"], e["buffers_count"]))
    for k, r in result["block"]["runs"].items():
        sys.stderr.write("%-18s %-16s %10d saved (cuda %d)\n" % ("block", k, r["saved_activation_bytes"],
                                                                 r["saved_activation_bytes_cuda_corrected"]))
    for name, e in result["tiny"].items():
        for k, r in e["runs"].items():
            sys.stderr.write("%-18s %-16s %10d saved (cuda %d)\n" % (name, k, r["saved_activation_bytes"],
                                                                     r["saved_activation_bytes_cuda_corrected"]))


if __name__ == "__main__":
    main(sys.argv)
