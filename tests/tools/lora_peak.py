#!/usr/bin/python3
"""Peak live tensor bytes of a steady-state training step with LoRA: tests/tools/hf_peak.py's measurement
(PyTorch 2.6, CPU, with its CUDA corrections) on the tiny Llama with tests/tools/lora_figures.py's replica
of PEFT's LoRA (peft v0.17.1 lora.Linear; a frozen base, float32 adapters), the optimizer over the
trainable parameters (what transformers' Trainer hands it). Ground truth for memest's
`memory.peak_tensors` with --lora (tests/group_lora.cmake, within 3% as tests/hf/peaks.cmake).

    ../shared/tools/torch2-chroot python3 tests/tools/lora_peak.py tests/reference/lora_peaks.json
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_peak import B, S, here, measure  # noqa: E402
from lora_figures import get_peft_model  # noqa: E402
from provenance import stamp  # noqa: E402


# dtype, memest --attention (the kernel CUDA runs: flash for bf16, efficient for fp32), r, alpha, dropout, targets
CASES = [
    ("bfloat16", "flash", 8, 16, 0.0, "q_proj,v_proj"),
    ("float32", "auto", 8, 16, 0.0, "q_proj,v_proj"),
    ("bfloat16", "flash", 4, 8, 0.1, "all-linear"),
    ("float32", "auto", 4, 8, 0.1, "all-linear"),
]


def main(argv):
    path = argv[1] if len(argv) > 1 else here("tests", "reference", "lora_peaks.json")
    with open(here("tests", "hf", "tiny", "llama.json")) as f:
        cfg = json.load(f)
    res = {"_about": "tests/tools/lora_peak.py: peak live tensor bytes of a steady-state LoRA training step, "
                     "PyTorch %s CPU (CUDA-corrected), batch %d, seq %d, adam foreach" % (torch.__version__, B, S),
           "config": "tests/hf/tiny/llama.json", "batch": B, "seq": S, "cases": []}
    for dtype, kernel, r, alpha, dropout, targets in CASES:
        m = measure(cfg, "sdpa", getattr(torch, dtype), "adam",
                    prepare=lambda model: get_peft_model(model, r, alpha, dropout, targets))
        m = {"peak_tensors": m["peak_tensors"], "peak_at": m["peak_at"]}
        m.update(dtype=dtype, memest_attention=kernel, r=r, alpha=alpha, dropout=dropout, targets=targets)
        res["cases"].append(m)
        print("%-9s %-6s r%-2d p%-4g %-14s %9d (%s)" % (dtype, kernel, r, dropout, targets, m["peak_tensors"],
                                                         m["peak_at"]), file=sys.stderr)
    res = stamp(res, "tests/tools/lora_peak.py", {"torch": torch.__version__,
                "transformers": "v4.48.0 (followed in plain PyTorch, not imported)",
                "peft": "v0.17.1 (followed in plain PyTorch, not imported)"})
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv)
