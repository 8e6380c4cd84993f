#!/usr/bin/python3
"""Peak live tensor bytes of one steady-state training step of tests/hf/tiny/llama4.json
(Llama4ForConditionalGeneration with one image per sequence), measured in real PyTorch 2.6 (CPU) by
tests/tools/hf_peak.py's measure() on the model of tests/tools/hf_models_llama4vl.py, in hf_peak.py's layout
(checked by tests/hf/peaks.cmake -DREF=hf_peaks_llama4vl.json):

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_peak_llama4vl.py \
        tests/reference/hf_peaks_llama4vl.json

The inputs are hf_figures_llama4vl.py's: input_ids [2, 16] with the image's 4 tokens at 1 .. 4 and
pixel_values [2, 3, 32, 32] (randn in the model's dtype), live from the start as the input_ids and the target
are. memest --attention auto for SDPA in both dtypes, as hf_peak.cuda_efficient decides per call.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_peak  # noqa: E402
from hf_figures_llama4vl import tiny_inputs  # noqa: E402
from hf_models_llama4vl import BUILDERS  # noqa: E402

CASES = [
    ("llama4", "eager", "float32", "eager"),
    ("llama4", "sdpa", "float32", "auto"),
    ("llama4", "eager", "bfloat16", "eager"),
    ("llama4", "sdpa", "bfloat16", "auto"),
]


def inputs(cfg, model, dtype):
    ids = tiny_inputs(cfg, model, dtype, hf_peak.S)
    return ids, [model.pixel_values]


def main(argv):
    path = argv[1] if len(argv) > 1 else hf_peak.here("tests", "reference", "hf_peaks_llama4vl.json")
    hf_peak.write_cases(path, CASES, "tests/tools/hf_peak_llama4vl.py",
                        "llama4 000c33f, configuration_llama4.py 008e574 (tests/tools/hf_models_llama4vl.py; "
                        "followed in plain PyTorch, not imported)", builders=BUILDERS, inputs=inputs)


if __name__ == "__main__":
    main(sys.argv)
