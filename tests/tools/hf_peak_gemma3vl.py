#!/usr/bin/python3
"""Peak live tensor bytes of one steady-state training step of tests/hf/tiny/gemma3.json
(Gemma3ForConditionalGeneration with one image per sequence), measured in real PyTorch 2.6 (CPU) by
tests/tools/hf_peak.py's measure() on the model of tests/tools/hf_models_gemma3vl.py, in hf_peak.py's layout
(checked by tests/hf/peaks.cmake -DREF=hf_peaks_gemma3vl.json):

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_peak_gemma3vl.py \
        tests/reference/hf_peaks_gemma3vl.json

memest --attention auto for SDPA in both dtypes: the text layers get a mask (CUDA's memory-efficient
kernel), the vision tower none (flash in bfloat16), as hf_peak.cuda_efficient decides per call.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models  # noqa: E402
import hf_models_gemma3vl  # noqa: E402
import hf_peak  # noqa: E402

hf_models.BUILDERS.update(hf_models_gemma3vl.BUILDERS)

CASES = [
    ("gemma3", "eager", "float32", "eager"),
    ("gemma3", "sdpa", "float32", "auto"),
    ("gemma3", "eager", "bfloat16", "eager"),
    ("gemma3", "sdpa", "bfloat16", "auto"),
]


def main(argv):
    path = argv[1] if len(argv) > 1 else hf_peak.here("tests", "reference", "hf_peaks_gemma3vl.json")
    hf_peak.write_cases(path, CASES, "tests/tools/hf_peak_gemma3vl.py",
                        "gemma3 008f5c8 (v4.50), siglip 00b2065 (tests/tools/hf_models_gemma3vl.py; followed in "
                        "plain PyTorch, not imported)")


if __name__ == "__main__":
    main(sys.argv)
