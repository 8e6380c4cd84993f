#!/usr/bin/python3
"""Step peaks of the tiny Llama trained with torchao's float8 linears (torchao.float8
convert_to_float8_training, the default "tensorwise" recipe, eager), measured in real PyTorch 2.6 (CPU) with
real torchao -- the ground truth for memest's --fp8 ao-tensorwise (checked by tests/hf/peaks.cmake).

    git -C <torchao checkout> archive v0.13.0 torchao | tar -x -C build/ao
    ../shared/tools/torch2-chroot python3 tests/tools/fp8_peak.py [OUT.json] [TORCHAO_DIR]

(run from the checkout root; TORCHAO_DIR defaults to build/ao; default output tests/reference/fp8_peaks.json).
torchao v0.13.0 is the newest release that imports under PyTorch 2.6, and its float8 training code
(torchao/float8/float8_linear.py, float8_scaling_utils.py, float8_utils.py, float8_training_tensor.py) is
v0.18.0's: `git diff v0.13.0 v0.18.0 -- torchao/float8/float8_linear.py` is empty, float8_utils.py differs in
a comment and compute_error only.

The step and what is counted are tests/tools/hf_peak.py's (the tiny Llama replica of tests/tools/hf_models.py,
batch 2, sequence 16, SGD for-loop and Adam foreach), with the model converted as torchtitan does
(filter_fqns: the output head stays nn.Linear) after it is built and before the optimizer is made.

CPU versus CUDA. torch._scaled_mm has no CPU kernel here, and torchao's emulate=True computes the GEMMs in
float32 copies that CUDA never makes. So emulate stays False and torch._scaled_mm is replaced by a function that
allocates what CUDA's does: its output of out_dtype (the values computed outside the count). Everything
around it -- the casts (abs, the float32 product and clamp, the float8 result), addmm_float8_unwrapped's
reciprocal scales and the rowwise recipe's float32 post_inverse_scale, preprocess_addmm's layout copies, the
bias add -- is torchao's own code, counted as it runs. The copies that torchao's Float8TrainingTensor makes inside
its own __torch_dispatch__ are counted too: the recorder runs a subclass's handler with itself re-entered.
"""
import json
import os
import sys

import torch
from torch.utils._python_dispatch import _disable_current_modes

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_peak  # noqa: E402


def load_torchao(path):
    sys.path.insert(0, os.path.abspath(path))
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training
    from torchao.float8.float8_training_tensor import Float8TrainingTensor

    def scaled_mm_as_cuda(a, b, scale_a=None, scale_b=None, bias=None, scale_result=None, out_dtype=None,
                          use_fast_accum=False):
        """torch._scaled_mm as CUDA allocates it: its [M, N] output of out_dtype, nothing else"""
        with _disable_current_modes():
            val = (a.float() * scale_a.float()) @ (b.float() * scale_b.float())
            if bias is not None:
                val = val + bias.float()
        out = torch.empty(val.shape, dtype=out_dtype)
        with _disable_current_modes():
            out.copy_(val)
        return out

    torch._scaled_mm = scaled_mm_as_cuda
    return Float8LinearConfig, convert_to_float8_training, Float8TrainingTensor


class SubclassRecorder(hf_peak.Recorder):
    """hf_peak's recorder, which also sees the ops a tensor subclass runs inside its own handler, and counts
    no wrapper subclass (its inner tensors are counted where they are made)."""

    subclass = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        flat = torch.utils._pytree.tree_flatten((args, kwargs))[0]
        sub = [t for t in flat if isinstance(t, self.subclass)]
        if not sub:
            return super().__torch_dispatch__(func, types, args, kwargs)
        with self:
            out = type(sub[0]).__torch_dispatch__(func, types, args, kwargs)
        for t in torch.utils._pytree.tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and not isinstance(t, self.subclass):
                self.live.add(t)
        self.live.check(str(func))
        return out


# (config, attention, dtype, memest --attention, torchao recipe)
CASES = [
    ("llama", "eager", "bfloat16", "eager", "tensorwise"),
    ("llama", "eager", "float32", "eager", "tensorwise"),
    ("llama", "sdpa", "bfloat16", "flash", "tensorwise"),
    ("qwen2", "eager", "bfloat16", "eager", "tensorwise"),  # q/k/v biases: added after the GEMM
    ("qwen2", "eager", "float32", "eager", "tensorwise"),
    ("llama", "eager", "bfloat16", "eager", "rowwise"),
    ("llama", "eager", "float32", "eager", "rowwise"),  # _scaled_mm's bfloat16 output, .to(float32)
    ("qwen2", "eager", "bfloat16", "eager", "rowwise"),
]


def main(argv):
    path = argv[1] if len(argv) > 1 else hf_peak.here("tests", "reference", "fp8_peaks.json")
    ao = argv[2] if len(argv) > 2 else hf_peak.here("build", "ao")
    Config, convert, Float8TrainingTensor = load_torchao(ao)
    SubclassRecorder.subclass = Float8TrainingTensor
    hf_peak.Recorder = SubclassRecorder
    orig = hf_peak.measure

    cases = []
    for recipe in ("tensorwise", "rowwise"):
        def prepare(model, recipe=recipe):
            convert(model, config=Config.from_recipe_name(recipe),
                    module_filter_fn=lambda m, fqn: fqn != "lm_head")

        def measure(cfg, attn, dtype, optim, builders=None, inputs=None, prepare=prepare):
            return orig(cfg, attn, dtype, optim, prepare=prepare, builders=builders, inputs=inputs)

        hf_peak.measure = measure
        part = path + "." + recipe
        hf_peak.write_cases(part, [c[:4] for c in CASES if c[4] == recipe], "tests/tools/fp8_peak.py",
                            "v4.48.0 (followed in plain PyTorch, not imported); torchao v0.13.0 (imported)")
        with open(part) as f:
            res = json.load(f)
        os.remove(part)
        for c in res["cases"]:
            c["recipe"] = recipe
        cases += res["cases"]
    res["cases"] = cases
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv)
