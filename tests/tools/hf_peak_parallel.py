#!/usr/bin/python3
"""Peak live tensor bytes of one steady-state training step of the phi, falcon and llama4_text tiny configs
(tests/hf/tiny/phi.json, falcon.json, falcon_new.json, llama4_text.json), measured in real PyTorch 2.6 (CPU)
by tests/tools/hf_peak.py's measure() on the replicas of tests/tools/hf_models_parallel.py and
hf_models_llama4.py, in tests/tools/hf_peak.py's layout (checked by tests/hf/peaks.cmake
-DREF=hf_peaks_parallel.json):

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_peak_parallel.py \
        tests/reference/hf_peaks_parallel.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models_llama4  # noqa: E402
import hf_models_parallel  # noqa: E402
import hf_peak  # noqa: E402

BUILDERS = dict(hf_models_parallel.BUILDERS, **hf_models_llama4.BUILDERS)

# tiny config, attention, dtype, memest --attention (the kernel CUDA would run: hf_peak.py's CASES)
CASES = [
    ("phi", "eager", "float32", "eager"),
    ("phi", "sdpa", "bfloat16", "flash"),
    ("falcon_new", "eager", "float32", "eager"),
    ("falcon_new", "sdpa", "bfloat16", "flash"),
    ("llama4_text", "eager", "float32", "eager"),
    ("llama4_text", "sdpa", "float32", "auto"),
]


def main(argv):
    path = argv[1] if len(argv) > 1 else hf_peak.here("tests", "reference", "hf_peaks_parallel.json")
    hf_peak.write_cases(path, CASES, "tests/tools/hf_peak_parallel.py",
                        "phi, falcon and llama4_text as tests/tools/hf_models_parallel.py and hf_models_llama4.py "
                        "follow them (plain PyTorch, not imported)", width=12, builders=BUILDERS)


if __name__ == "__main__":
    main(sys.argv)
