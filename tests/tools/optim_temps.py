#!/usr/bin/python3
"""The temporaries of one optimizer step in PyTorch 2.6 (torch.optim, foreach=True), measured op by
op on the CPU: ground truth for memest's optimizer programs (src/step/optim.c; issue 33, item 5).

    ../shared/tools/torch2-chroot python3 tests/tools/optim_temps.py tests/reference/optim_temps.json

Per model (torch_figures.py's mlp-mnist and torchvision's resnet18, fp32, batch 1) and optimizer: two
steps of zero_grad, forward, cross-entropy, backward, opt.step(); the second step() is recorded. A
TorchDispatchMode sees every aten op under step() and tracks the storage of each tensor it returns
(a storage counted once, however many views share it) until the last tensor on it dies (weak
references; PyTorch frees a storage with its last tensor). Storages that existed before step()
(parameters, gradients, optimizer state) are not counted; nor are 0-d tensors (the `step`
increments' wrapped scalars, norm(2).item()'s results: memest models no 0-d temporaries). The
figure: the most bytes of such temporaries alive at once. Also the optimizer state's bytes (every state tensor but the 0-d `step`,
which CUDA keeps on the host). The foreach ops run their CPU slow path,
which returns the same tensors CUDA's kernels do; the grouping and the Python lists are the same code.
memest's figure is the most optimizer-temporary bytes live at once in its --timeline's optimizer
phase (tests/group_optim.cmake).
"""
import json
import sys
import weakref

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
import torch_figures as tf  # noqa: E402
from provenance import stamp  # noqa: E402

OPTIMS = {
    "adafactor": lambda ps: torch.optim.Adafactor(ps, lr=1e-2, foreach=True),
    "adam": lambda ps: torch.optim.Adam(ps, lr=1e-3, foreach=True),   # a control: one list of sqrt()
}


class Temps(TorchDispatchMode):
    def __init__(self, before):
        super().__init__()
        self.before = before      # storage data_ptrs alive before step()
        self.live = {}            # data_ptr -> [nbytes, set of ref ids]
        self.refs = {}
        self.cur = self.peak = 0

    def _gone(self, ptr, rid):
        ent = self.live.get(ptr)
        self.refs.pop(rid, None)
        if ent is None:
            return
        ent[1].discard(rid)
        if not ent[1]:
            self.cur -= ent[0]
            del self.live[ptr]

    def _track(self, t):
        st = t.untyped_storage()
        ptr, nb = st.data_ptr(), st.nbytes()
        if ptr in self.before or t.dim() == 0 or ptr == 0:
            return
        ent = self.live.get(ptr)
        if ent is None:
            ent = self.live[ptr] = [nb, set()]
            self.cur += nb
            self.peak = max(self.peak, self.cur)
        rid = id(t)
        if rid in ent[1]:
            return
        ref = weakref.ref(t, lambda _r, p=ptr, i=rid: self._gone(p, i))
        self.refs[rid] = ref
        ent[1].add(rid)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        stack = [out]
        while stack:
            o = stack.pop()
            if isinstance(o, torch.Tensor):
                self._track(o)
            elif isinstance(o, (list, tuple)):
                stack.extend(o)
        return out


def ptrs(opt, model):
    s = set()
    for p in model.parameters():
        s.add(p.untyped_storage().data_ptr())
        if p.grad is not None:
            s.add(p.grad.untyped_storage().data_ptr())
    for st in opt.state.values():
        for v in st.values():
            if isinstance(v, torch.Tensor):
                s.add(v.untyped_storage().data_ptr())
    return s


def measure_opt(name, make_opt, dtype=torch.float32):
    """The peak of the second step's temporaries and the state bytes for model `name` in `dtype`,
    the optimizer make_opt(model) (anything with zero_grad, step and a `state` dict)."""
    spec = tf.MODELS[name]
    torch.manual_seed(0)
    model = spec["build"]().to(dtype)
    model.train()
    x = [t.to(dtype) if t.is_floating_point() else t for t in spec["input"](1)]
    torch.manual_seed(0)
    opt = make_opt(model)
    peak = None
    for step in (1, 2):
        opt.zero_grad(set_to_none=True)
        out = model(*x)
        target = torch.zeros(out.shape[:-1], dtype=torch.long)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]).float(), target.reshape(-1))
        loss.backward()
        del out, loss
        if step == 2:
            rec = Temps(ptrs(opt, model))
            with rec:
                opt.step()
            peak = rec.peak
        else:
            opt.step()
    # the state on the device: every tensor but the 0-d `step` (a host tensor on CUDA)
    state = sum(v.untyped_storage().nbytes() for st in opt.state.values() for k, v in st.items()
                if isinstance(v, torch.Tensor) and k != "step")
    return peak, state


def measure(name, optim):
    return measure_opt(name, lambda m: OPTIMS[optim](m.parameters()))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/reference/optim_temps.json"
    cases = []
    for name in ("mlp-mnist", "resnet18"):
        for optim in OPTIMS:
            peak, state = measure(name, optim)
            cases.append({"model": name, "optim": optim, "impl": "foreach", "dtype": "float32",
                          "batch": 1, "temporaries_peak": peak, "state_bytes": state})
            print(cases[-1], file=sys.stderr)
    doc = stamp({"cases": cases}, "tests/tools/optim_temps.py", {"torch": torch.__version__})
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
