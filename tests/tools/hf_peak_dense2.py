#!/usr/bin/python3
"""Peak live tensor bytes of one steady-state training step of the families without a step-peak check
before (qwen3, olmo2, smollm3, granite, gemma3_text: tests/tools/hf_models.py; starcoder2, glm4:
tests/tools/hf_models_dense.py; qwen3_moe: tests/tools/hf_models_moe.py, its routing forced to the
balanced split memest assumes), their tiny configs tests/hf/tiny/NAME.json, measured in real PyTorch 2.6
(CPU) by tests/tools/hf_peak.py's measure(), in its layout (checked by tests/hf/peaks.cmake
-DREF=hf_peaks_dense2.json):

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_peak_dense2.py \
        tests/reference/hf_peaks_dense2.json

Each family in float32 with eager attention and in bfloat16 with SDPA, SGD (for-loop) and Adam (foreach) as
hf_peak.py's OPTIMS. memest's --attention auto there is the kernel CUDA picks (flash for bfloat16 without a
mask; the memory-efficient one where the sliding window, 8, is shorter than the sequence: starcoder2,
gemma3_text's local layers), the one hf_peak.py's corrections emulate.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models  # noqa: E402
import hf_models_dense  # noqa: E402
import hf_models_moe  # noqa: E402
import hf_peak  # noqa: E402

BUILDERS = dict(hf_models.BUILDERS, **hf_models_dense.BUILDERS)
BUILDERS["qwen3_moe"] = lambda cfg, attn: hf_models_moe.build(cfg, attn, balanced=True)  # memest's split

CASES = [(name, attn, dtype, kernel)
         for name in ("qwen3", "olmo2", "smollm3", "granite", "gemma3_text", "starcoder2", "glm4", "qwen3_moe")
         for attn, dtype, kernel in (("eager", "float32", "eager"), ("sdpa", "bfloat16", "auto"))]


def main(argv):
    path = argv[1] if len(argv) > 1 else hf_peak.here("tests", "reference", "hf_peaks_dense2.json")
    hf_peak.write_cases(path, CASES, "tests/tools/hf_peak_dense2.py",
                        "as tests/tools/hf_models.py and hf_models_dense.py follow them (plain PyTorch, "
                        "not imported)", width=12, builders=BUILDERS)


if __name__ == "__main__":
    main(sys.argv)
