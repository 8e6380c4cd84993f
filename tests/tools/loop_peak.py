#!/usr/bin/python3
"""Step peaks of one tiny Llama and Qwen2 under the training loops of memest's --loop (issue 33), measured in
real PyTorch 2.6 (CPU) as tests/tools/hf_peak.py measures them (its Live/Recorder, its CUDA corrections):

    ../shared/tools/torch2-chroot python3 tests/tools/loop_peak.py [OUT.json]

(default output tests/reference/loop_peaks.json; checked by tests/group_loop.cmake through tests/hf/peaks.cmake).

The loops, as hf_peak.measure runs them:
  plain       out = model(x); loss = F.cross_entropy(out, target); backward; `out` (the float32 logits) alive
  trainer     transformers' Trainer.compute_loss: outputs = model(x, labels) (the loss inside the model, the half
              logits and the DynamicCache in the outputs) a local of the function, dead before backward
  torchtitan  torchtitan/train.py: pred = model(x) (the half logits, no labels); loss = cross_entropy(pred.float(),
              ...); del pred; loss.backward()
torchtitan's loop runs torchtitan's own attention (hf_models.NATIVE = "torchtitan": repeat_kv copies, RoPE in
complex float32, the model's freqs_cis buffer), as torchtitan trains its own model code.
Not measured here: torchtune (its model returns one lm_head output per chunk: the replica's one head does not)."""
import sys

import torch

import hf_models
from hf_peak import here, measure, stamp  # noqa: F401  (stamp: the provenance)
import hf_peak
import json

CASES = [("llama", "eager", "float32", "eager"), ("llama", "sdpa", "bfloat16", "flash"),
         ("qwen2", "eager", "bfloat16", "eager")]
LOOPS = ["trainer", "torchtitan"]


def main(argv):
    path = argv[1] if len(argv) > 1 else here("tests", "reference", "loop_peaks.json")
    res = {"_about": "tests/tools/loop_peak.py: peak live tensor bytes of a steady-state training step under "
                     "memest's --loop, PyTorch %s CPU, batch %d, seq %d" % (torch.__version__, hf_peak.B, hf_peak.S),
           "batch": hf_peak.B, "seq": hf_peak.S, "cases": []}
    for name, attn, dtype, kernel in CASES:
        with open(here("tests", "hf", "tiny", name + ".json")) as f:
            cfg = json.load(f)
        for loop in LOOPS:
            for optim, impl in hf_peak.OPTIMS:
                hf_models.set_stack(loop, 449)
                r = measure(cfg, attn, getattr(torch, dtype), optim, loop=loop)
                r.update(config=name, attn=attn, dtype=dtype, memest_attention=kernel, optim=optim, impl=impl,
                         loop=loop, transformers="4.49")
                res["cases"].append(r)
                print("%-6s %-5s %-8s %-10s %-4s %9d (%s)" % (name, attn, dtype, loop, optim, r["peak_tensors"],
                                                              r["peak_at"]), file=sys.stderr)
    hf_models.reset_stack()
    res = stamp(res, "tests/tools/loop_peak.py",
                {"torch": torch.__version__, "transformers": "v4.49 (hf_models.TRANSFORMERS; followed in plain PyTorch, not imported)"})
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv)
