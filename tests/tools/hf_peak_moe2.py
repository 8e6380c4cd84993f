#!/usr/bin/python3
"""Peak live tensor bytes of one steady-state training step of the moe2 group's tiny configs
(tests/hf/tiny/glm4_moe.json, granitemoe.json), measured in real PyTorch 2.6 (CPU) by tests/tools/hf_peak.py's
measure() on the models of tests/tools/hf_models_moe2.py (balanced routing), in tests/tools/hf_peak.py's
layout (checked by tests/hf/peaks.cmake -DREF=hf_peaks_moe2.json):

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_peak_moe2.py \
        tests/reference/hf_peaks_moe2.json
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models_moe  # noqa: E402
import hf_models_moe2  # noqa: E402
import hf_peak  # noqa: E402

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
    hf_peak.write_cases(path, CASES, "tests/tools/hf_peak_moe2.py", "main (tests/tools/hf_models_moe2.py; followed in plain PyTorch, not imported)", width=10)


if __name__ == "__main__":
    main(sys.argv)
