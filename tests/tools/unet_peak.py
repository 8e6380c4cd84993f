#!/usr/bin/python3
"""Forward peaks of the small U-Net of tests/export/export_models.py (UNet: milesial/Pytorch-UNet's
layout, whose forward() keeps x1..x4 as locals until it returns and whose Up.forward() keeps its
upsampled x1 through the DoubleConv), measured in real PyTorch 2.6 on the CPU:

    ../shared/tools/torch2-chroot python3 tests/tools/unet_peak.py [OUT.json]

(default tests/reference/unet_peaks.json; checked by tests/export/test_export.py's case_lifetimes, which
exports the model with memest-export and compares memest's forward peaks, with and without the
"held_until" marks the exporter writes).

Measured as tests/tools/hf_peak.py measures (its Live: every storage an op returns, counted from the
op's return until the storage dies, weakref.finalize on the untyped storage), parameters, buffers and
the input counted first:
- train: model.train(), the forward of a training step (autograd on), float32, batch 2, 3 x 32 x 32;
  no gradients exist yet (zero_grad(set_to_none=True) before the step), no optimizer state (SGD).
- inference: model.eval() under torch.no_grad().
The CPU and CUDA kernels return the same tensors here (conv, batch norm with its save_mean/save_invstd,
max-pool with its int64 indices, transposed conv, cat, in-place ReLU); scratch inside a kernel is not an
output and is not counted, as memest's figure is compared without its workspace."""
import json
import os
import sys

import torch
from torch.utils._pytree import tree_flatten
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "export"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402
from hf_peak import Live, here  # noqa: E402
from provenance import write_json  # noqa: E402

BATCH, SHAPE = 2, (3, 32, 32)


class Count(TorchDispatchMode):
    def __init__(self, live):
        super().__init__()
        self.live = live

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self.live.add(t)
        self.live.check(str(func))
        return out


def forward_peak(train):
    torch.manual_seed(0)
    model = export_models.UNet()
    model.train(train)
    x = torch.randn(BATCH, *SHAPE)
    live = Live()
    for t in list(model.parameters()) + list(model.buffers()) + [x]:
        live.add(t)
    live.check("setup")
    base = live.cur
    with torch.set_grad_enabled(train), Count(live):
        out = model(x)
    del out
    return {"forward_peak": live.peak, "peak_at": live.peak_at, "model_and_input": base}


def main(argv):
    path = argv[1] if len(argv) > 1 else here("tests", "reference", "unet_peaks.json")
    res = {"_about": "tests/tools/unet_peak.py: forward peaks (live tensor bytes) of export_models.UNet, "
                     "PyTorch %s CPU, float32, batch %d, %s" % (torch.__version__, BATCH, "x".join(map(str, SHAPE))),
           "batch": BATCH, "shape": list(SHAPE),
           "train": forward_peak(True), "inference": forward_peak(False)}
    print(json.dumps(res, indent=1), file=sys.stderr)
    write_json(path, res, "tests/tools/unet_peak.py",
               {"torch": torch.__version__})


if __name__ == "__main__":
    main(sys.argv)
