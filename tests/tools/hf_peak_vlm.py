#!/usr/bin/python3
"""Peak live tensor bytes of one steady-state training step of the vision-language tiny configs
(tests/hf/tiny/llava.json), measured in real PyTorch 2.6 (CPU) by tests/tools/hf_peak.py's measure() on the
replica of tests/tools/hf_models_vlm.py, in tests/tools/hf_peak.py's layout (checked by tests/hf/peaks.cmake
-DREF=hf_peaks_vlm.json):

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_peak_vlm.py \
        tests/reference/hf_peaks_vlm.json

The inputs are hf_figures_vlm.py's: input_ids [2, 24] with the image's 16 tokens at 1 .. 16 and
pixel_values [2, 3, 32, 32] (randn in the model's dtype), the latter live from the start as the input_ids
and the target are. What the step holds beyond the saved activations is counted as it happens: the vision
layer after vision_feature_layer and post_layernorm, run and freed in the forward, and the check
inputs_embeds[special_image_mask] (nonzero's int64 [n, 3] positions, the n gathered elements).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_peak  # noqa: E402
from hf_figures_vlm import TINY_SEQ, tiny_inputs  # noqa: E402
from hf_models_vlm import BUILDERS  # noqa: E402

CASES = [
    ("llava", "eager", "float32", "eager"),
    ("llava", "sdpa", "float32", "auto"),
    ("llava", "sdpa", "bfloat16", "flash"),
]


def inputs(cfg, model, dtype):
    ids = tiny_inputs(cfg, model, dtype, TINY_SEQ)
    return ids, [model.pixel_values]


def main(argv):
    path = argv[1] if len(argv) > 1 else hf_peak.here("tests", "reference", "hf_peaks_vlm.json")
    hf_peak.write_cases(path, CASES, "tests/tools/hf_peak_vlm.py",
                        "llava, clip at transformers main, llama at v4.48.0 (tests/tools/hf_models_vlm.py; "
                        "followed in plain PyTorch, not imported)", width=10, seq=TINY_SEQ, builders=BUILDERS,
                        inputs=inputs)


if __name__ == "__main__":
    main(sys.argv)
