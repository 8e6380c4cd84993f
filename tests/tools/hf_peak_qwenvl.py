#!/usr/bin/python3
"""Peak live tensor bytes of one steady-state training step of the qwen2_5_vl tiny config
(tests/hf/tiny/qwen2_5_vl.json, image_size 16: 16 merged image tokens of a 24-token sequence), measured in
real PyTorch 2.6 (CPU) by tests/tools/hf_peak.py's measure() on the replica of tests/tools/hf_models_qwenvl.py,
in tests/tools/hf_peak.py's layout (checked by tests/hf/peaks.cmake -DREF=hf_peaks_qwenvl.json with
--set image_size=16):

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_peak_qwenvl.py \
        tests/reference/hf_peaks_qwenvl.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_peak  # noqa: E402
from hf_figures_qwenvl import TINY_SEQ, tiny_inputs  # noqa: E402
from hf_models_qwenvl import BUILDERS  # noqa: E402

CASES = [
    ("qwen2_5_vl", "eager", "float32", "eager"),
    ("qwen2_5_vl", "sdpa", "float32", "auto"),
    ("qwen2_5_vl", "sdpa", "bfloat16", "auto"),
]


def inputs(cfg, model, dtype):
    ids = tiny_inputs(cfg, model, dtype, TINY_SEQ)
    return ids, [model.pixel_values, model.image_grid_thw]


def main(argv):
    path = argv[1] if len(argv) > 1 else hf_peak.here("tests", "reference", "hf_peaks_qwenvl.json")
    hf_peak.write_cases(path, CASES, "tests/tools/hf_peak_qwenvl.py",
                        "qwen2_5_vl at 00b676f8f0489b88652a31d70751cc540dd06305 (tests/tools/hf_models_qwenvl.py; "
                        "followed in plain PyTorch, not imported)", width=12, seq=TINY_SEQ, builders=BUILDERS,
                        inputs=inputs)


if __name__ == "__main__":
    main(sys.argv)
