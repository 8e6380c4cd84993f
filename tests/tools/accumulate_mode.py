#!/usr/bin/python3
"""How a TorchDispatchMode changes autograd's gradient accumulation, and so the training-step peak the zoo
measures (issue 32, item 6: the segmentation models' step peak).

    ../shared/tools/torch2-chroot python3 tests/tools/accumulate_mode.py                    # the default models
    ../shared/tools/torch2-chroot python3 tests/tools/accumulate_mode.py --models lraspp_mobilenet_v3_large

(run from the checkout root). Writes tests/reference/accumulate_mode_torch<26|113>.json.

When a tensor feeds several ops (a fan-out: ASPP's five branches on the backbone's output, a residual
block's input), autograd sums the gradients the consumers send back (torch/csrc/autograd/input_buffer.cpp,
InputBuffer::accumulate): in place (old.add_(new) or new.add_(old)) when the buffer holds the last
reference to a plain dense tensor, else out of place (old + new, a third tensor of the gradient's size
alive at the add). Its test for a plain tensor, at::isTensorSubclassLike (aten/src/ATen/
TensorSubclassLikeUtils.h), is true for every tensor whenever a Python dispatch mode is active
(c10::impl::dispatch_mode_enabled()), so under any TorchDispatchMode every accumulation is out of place.
memest models the run without a mode (src/sim/sim_events.c, sim_deliver: in place when it can be).

Measured here, per model, on the CPU with real kernels, in the zoo's step (tests/tools/torchvision_zoo.py:
model.train(); SGD(lr=1e-3, foreach=False); zero_grad(set_to_none=True); out = primary output;
F.cross_entropy; backward; step; batch 2, 3x224x224, weights=None, weights_backbone=None): the add ops of
step 2's backward, once under a pass-through TorchDispatchMode (aten.add.Tensor / aten.add_.Tensor, what
the mode sees) and once without any mode (aten::add / aten::add_, as torch.profiler records them inside
loss.backward()). Every out-of-place accumulation under the mode holds a third gradient-sized tensor at
its add that the run without a mode does not: the zoo's PyTorch peaks are measured under dispatch modes
(Step26, torch_peak.py's stubs), and the deeplabv3 models' peak is such an add (doc/torchvision-zoo.md).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402
from provenance import stamp  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

torch.set_num_threads(2)
TAG = "torch26" if int(torch.__version__.split(".")[0]) >= 2 else "torch113"
DEFAULT = ("fanout", "lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large", "deeplabv3_resnet50")


class PassThrough(TorchDispatchMode):
    """Runs every op as it is; counts the backward's adds."""

    def __init__(self):
        super().__init__()
        self.phase, self.adds = None, {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func)
        if self.phase == "backward" and name in ("aten.add.Tensor", "aten.add_.Tensor"):
            self.adds[name] = self.adds.get(name, 0) + 1
        return func(*args, **(kwargs or {}))


class Fanout(nn.Module):
    """One [N, 256, 28, 28] activation read by four 1x1 convolutions (ASPP's shape of fan-out)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 256, 1)
        self.branches = nn.ModuleList(nn.Conv2d(256, 8, 1) for _ in range(4))
        self.head = nn.Conv2d(32, 10, 1)

    def forward(self, x):
        h = F.relu(self.stem(x))
        return self.head(torch.cat([b(h) for b in self.branches], 1))


def build(name):
    torch.manual_seed(0)
    if name == "fanout":
        return Fanout(), torch.randn(2, 3, 28, 28)
    kw = {"weights": None}
    if name in torchvision.models.list_models(torchvision.models.segmentation):
        kw["weights_backbone"] = None
    return torchvision.models.get_model(name, **kw), torch.randn(2, 3, 224, 224)


def primary(out):
    return out["out"] if isinstance(out, dict) else out


def backward_adds(name, mode):
    """The add ops of step 2's backward: what the pass-through mode sees under it (aten.add.Tensor,
    aten.add_.Tensor), else what the profiler records inside loss.backward() (aten::add, aten::add_; no
    dispatch mode involved)."""
    model, x = build(name)
    model.train()
    with torch.no_grad():
        out = primary(model(x))
    torch.manual_seed(1)
    target = torch.randint(0, out.shape[1], (out.shape[0],) + tuple(out.shape[2:]), dtype=torch.long)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, foreach=False)
    adds = {}
    for step in (1, 2):
        opt.zero_grad(set_to_none=True)
        m = PassThrough() if mode else None
        if m:
            m.__enter__()
        try:
            loss = F.cross_entropy(primary(model(x)), target)
            if step == 2 and not mode:
                with profile(activities=[ProfilerActivity.CPU]) as prof:
                    loss.backward()
                for e in prof.profiler.kineto_results.events():
                    if e.name() in ("aten::add", "aten::add_"):
                        adds[e.name()] = adds.get(e.name(), 0) + 1
            else:
                if m:
                    m.phase = "backward"
                loss.backward()
                if m:
                    m.phase = None
                    if step == 2:
                        adds = dict(m.adds)
            opt.step()
            del loss
        finally:
            if m:
                m.__exit__(None, None, None)
    return adds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", help="comma-separated (default: %s)" % ",".join(DEFAULT))
    a = ap.parse_args()
    names = a.models.split(",") if a.models else list(DEFAULT)
    path = os.path.join(REPO, "tests", "reference", "accumulate_mode_%s.json" % TAG)
    res = {}
    if os.path.exists(path):
        with open(path) as f:
            res = json.load(f).get("models", {})
    for n in names:
        res[n] = {"backward_adds_plain": backward_adds(n, False), "backward_adds_under_mode": backward_adds(n, True)}
        print(n, json.dumps(res[n]), flush=True)
    doc = stamp({"about": "tests/tools/accumulate_mode.py's docstring: the add ops of the step-2 backward, "
                 "with and without a pass-through TorchDispatchMode, batch 2",
                 "models": res}, "tests/tools/accumulate_mode.py",
                {"torch": torch.__version__, "torchvision": torchvision.__version__})
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
