#!/usr/bin/python3
"""Peak live tensor bytes of one steady-state training step of the gpt_oss tiny config
(tests/hf/tiny/gpt_oss.json), measured in real PyTorch 2.6 (CPU) by tests/tools/hf_peak.py's
measure() on the models of tests/tools/hf_models_gpt_oss.py (balanced routing), in tests/tools/hf_peak.py's
layout (checked by tests/hf/peaks.cmake -DREF=hf_peaks_gpt_oss.json):

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_peak_gpt_oss.py \
        tests/reference/hf_peaks_gpt_oss.json
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models_moe  # noqa: E402
import hf_models_gpt_oss  # noqa: E402
import hf_peak  # noqa: E402

# hf_peak.measure builds the models it finds in hf_models_moe.BUILDERS with balanced routing
hf_models_moe.BUILDERS.update(hf_models_gpt_oss.BUILDERS)

CASES = [  # eager only: GptOssPreTrainedModel._supports_sdpa is False
    ("gpt_oss", "eager", "float32", "eager"),
    ("gpt_oss", "eager", "bfloat16", "eager"),
]


def main(argv):
    path = argv[1] if len(argv) > 1 else hf_peak.here("tests", "reference", "hf_peaks_gpt_oss.json")
    hf_peak.write_cases(path, CASES, "tests/tools/hf_peak_gpt_oss.py", "0261a467116de4a9103b58200f9d82f8fb5a0e86 (tests/tools/hf_models_gpt_oss.py; followed in plain PyTorch, not imported)", width=10)


if __name__ == "__main__":
    main(sys.argv)
