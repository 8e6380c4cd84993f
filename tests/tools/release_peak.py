#!/usr/bin/python3
"""Step peaks and saved activations of one tiny Llama, Qwen2 and Phi3 (with GQA) under the transformers releases of memest's
--transformers (issue 33), and under the loops that call the model with labels (plain, trainer), measured in
real PyTorch 2.6 (CPU) as tests/tools/hf_peak.py measures them (its Live/Recorder, its CUDA corrections):

    ../shared/tools/torch2-chroot python3 tests/tools/release_peak.py [OUT.json]

(default output tests/reference/release_peaks.json; checked by tests/group_loop.cmake through
tests/hf/peaks.cmake). The release rules are hf_models.py's (TRANSFORMERS: sdpa_attention_forward's
.contiguous() and enable_gqa, ForCausalLMLoss's shift copy, the DynamicCache's references or copies).
The loops: plain (out = model(x), the float32 logits, kept to the end of the step; the cache, built by the
forward, kept by nobody) and trainer (Trainer.compute_loss: the loss inside the model, the outputs -- half
logits, DynamicCache -- alive until it returns). CUDA differences emulated (hf_models._gqa_flash_cuda): the
CPU runs every enable_gqa=True call on the math path, CUDA bfloat16 runs flash with native GQA (saving k, v
at Hkv heads); float32 with GQA runs math on both (CUDA's memory-efficient kernel refuses GQA in 2.6)."""
import json
import sys

import torch

import hf_models
import hf_peak
from hf_peak import here, measure
from provenance import write_json

CASES = [("llama", "eager", "float32", "eager"), ("llama", "sdpa", "float32", "auto"),
         ("llama", "sdpa", "bfloat16", "flash"), ("qwen2", "eager", "bfloat16", "eager"),
         ("qwen2", "sdpa", "bfloat16", "flash"),
         # Phi3Attention (its own fused qkv_proj, the shared attention function from v4.48) with GQA and no
         # window (tests/hf/tiny/phi3_gqa.json): repeat_kv and .contiguous() at 4.48/4.55, enable_gqa at 5
         ("phi3_gqa", "eager", "float32", "eager"), ("phi3_gqa", "sdpa", "float32", "auto"),
         ("phi3_gqa", "sdpa", "bfloat16", "flash")]
RELEASES = [(448, "4.48"), (455, "4.55"), (500, "5")]
LOOPS = ["plain", "trainer"]


def main(argv):
    path = argv[1] if len(argv) > 1 else here("tests", "reference", "release_peaks.json")
    res = {"_about": "tests/tools/release_peak.py: peak live tensor bytes and saved activations of a "
                     "steady-state training step under memest's --transformers and --loop, PyTorch %s CPU, "
                     "batch %d, seq %d" % (torch.__version__, hf_peak.B, hf_peak.S),
           "batch": hf_peak.B, "seq": hf_peak.S, "cases": []}
    for name, attn, dtype, kernel in CASES:
        with open(here("tests", "hf", "tiny", name + ".json")) as f:
            cfg = json.load(f)
        for rel, tag in RELEASES:
            for loop in LOOPS:
                for optim, impl in hf_peak.OPTIMS:
                    hf_models.TRANSFORMERS = rel
                    r = measure(cfg, attn, getattr(torch, dtype), optim, loop=loop)
                    r.update(config=name, attn=attn, dtype=dtype, memest_attention=kernel, optim=optim,
                             impl=impl, loop=loop, transformers=tag)
                    res["cases"].append(r)
                    print("%-6s %-5s %-8s %-4s %-8s %-4s %9d %8d (%s)" % (
                        name, attn, dtype, tag, loop, optim, r["peak_tensors"], r["saved_at_backward"],
                        r["peak_at"]), file=sys.stderr)
    hf_models.TRANSFORMERS = None
    write_json(path, res, "tests/tools/release_peak.py",
               {"torch": torch.__version__,
                "transformers": "v4.48.0, v4.55 and main 00c238bd (followed in plain PyTorch, not imported)"})


if __name__ == "__main__":
    main(sys.argv)
