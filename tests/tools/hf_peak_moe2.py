#!/usr/bin/python3
"""Peak live tensor bytes of one steady-state training step of the moe2 group's tiny configs
(tests/hf/tiny/glm4_moe.json, granitemoe.json), measured in real PyTorch 2.6 (CPU) by tests/tools/hf_peak.py's
measure() on the models of tests/tools/hf_models_moe2.py (balanced routing), in tests/tools/hf_peak.py's
layout (checked by tests/hf/peaks.cmake -DREF=hf_peaks_moe2.json):

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_peak_moe2.py \
        tests/reference/hf_peaks_moe2.json
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models_moe  # noqa: E402
import hf_models_moe2  # noqa: E402
import hf_peak  # noqa: E402
from provenance import stamp  # noqa: E402

# hf_peak.measure builds the models it finds in hf_models_moe.BUILDERS with balanced routing
hf_models_moe.BUILDERS.update(hf_models_moe2.BUILDERS)

CASES = [
    ("glm4_moe", "eager", "float32", "eager"),
    ("glm4_moe", "sdpa", "float32", "auto"),
    ("glm4_moe", "sdpa", "bfloat16", "flash"),
    ("granitemoe", "eager", "float32", "eager"),
    ("granitemoe", "sdpa", "float32", "auto"),
    ("granitemoe", "sdpa", "bfloat16", "flash"),
]


def main(argv):
    path = argv[1] if len(argv) > 1 else hf_peak.here("tests", "reference", "hf_peaks_moe2.json")
    res = {"_about": "tests/tools/hf_peak_moe2.py: peak live tensor bytes of a steady-state training step, "
                     "PyTorch %s CPU, batch %d, seq %d" % (torch.__version__, hf_peak.B, hf_peak.S),
           "batch": hf_peak.B, "seq": hf_peak.S, "cases": []}
    for name, attn, dtype, kernel in CASES:
        with open(hf_peak.here("tests", "hf", "tiny", name + ".json")) as f:
            cfg = json.load(f)
        for optim, impl in hf_peak.OPTIMS:
            r = hf_peak.measure(cfg, attn, getattr(torch, dtype), optim)
            r.update(config=name, attn=attn, dtype=dtype, memest_attention=kernel, optim=optim, impl=impl)
            res["cases"].append(r)
            print("%-10s %-5s %-8s %-4s %-8s %9d  (%s)" % (name, attn, dtype, optim, impl, r["peak_tensors"],
                                                            r["peak_at"]), file=sys.stderr)
    res = stamp(res, "tests/tools/hf_peak_moe2.py", {"torch": torch.__version__, "transformers": "main (tests/tools/hf_models_moe2.py; followed in plain PyTorch, not imported)"})
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv)
