#!/usr/bin/python3
"""Peak live tensor bytes of one steady-state training step of the Cohere group's tiny configs
(tests/hf/tiny/cohere.json, cohere2.json), measured in real PyTorch 2.6 (CPU) by tests/tools/hf_peak.py's
measure() on the models of tests/tools/hf_models_cohere.py, in tests/tools/hf_peak.py's layout (checked by
tests/hf/peaks.cmake -DREF=hf_peaks_cohere.json):

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_peak_cohere.py \
        tests/reference/hf_peaks_cohere.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models  # noqa: E402
import hf_models_cohere  # noqa: E402
import hf_peak  # noqa: E402

# hf_peak.measure builds the models it finds in hf_models.BUILDERS
hf_models.BUILDERS.update(hf_models_cohere.BUILDERS)

# tiny config, attention, dtype, memest --attention (the kernel CUDA would run: hf_peak.py's CASES): Cohere2
# gives SDPA its 4-D mask on every layer, so CUDA runs the memory-efficient kernel in bfloat16 too
CASES = [
    ("cohere", "eager", "float32", "eager"),
    ("cohere", "sdpa", "float32", "auto"),
    ("cohere", "sdpa", "bfloat16", "flash"),
    ("cohere2", "eager", "float32", "eager"),
    ("cohere2", "sdpa", "float32", "auto"),
    ("cohere2", "sdpa", "bfloat16", "auto"),
]


def main(argv):
    path = argv[1] if len(argv) > 1 else hf_peak.here("tests", "reference", "hf_peaks_cohere.json")
    hf_peak.write_cases(path, CASES, "tests/tools/hf_peak_cohere.py",
                        "015bfeb86891c5f5e450f48942260ac3e2cd2bf2 (tests/tools/hf_models_cohere.py; followed in "
                        "plain PyTorch, not imported)", width=10)


if __name__ == "__main__":
    main(sys.argv)
