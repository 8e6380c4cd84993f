#!/usr/bin/env python3
"""What nn.CrossEntropyLoss saves for backward on a segmentation-shaped output,
the reference for test_sim.c's test_loss_class_dim (memest's "class_dim").

Run under both PyTorch versions (CPU is enough: the saved tensors are the
autograd graph's, the same on CUDA):
    /usr/bin/python3 tests/tools/loss_class_dim.py
    ../shared/tools/torch2-chroot python3 tests/tools/loss_class_dim.py
It prints, per case, each backward node of the loss and the shapes and
dtypes of the tensors it saved, then the numbers the test uses: the classes
are along dim 1 of (N, C, d1, ...), the target is [N, d1, ...] int64, and
log_softmax's saved result is the output's size."""
import torch
import torch.nn.functional as F


def saved(fn):
    out = []
    for name in dir(fn):
        if name.startswith("_saved_"):
            v = getattr(fn, name)
            if isinstance(v, torch.Tensor):
                out.append(f"{name[7:]} {list(v.shape)} {str(v.dtype)[6:]}")
    return out


def walk(fn, seen, lines):
    if fn is None or fn in seen:
        return
    seen.add(fn)
    s = saved(fn)
    if s:
        lines.append(f"  {type(fn).__name__}: " + ", ".join(s))
    for nxt, _ in fn.next_functions:
        walk(nxt, seen, lines)


def case(title, out, target, **kw):
    loss = F.cross_entropy(out, target, **kw)
    lines = []
    walk(loss.grad_fn, set(), lines)
    print(title)
    print("\n".join(lines))


torch.manual_seed(0)
print("torch", torch.__version__)
x = torch.randn(2, 5, 4, 4, requires_grad=True)            # (N, C, H, W)
case("(N, C, H, W) = (2, 5, 4, 4), target (2, 4, 4)", x * 1, torch.randint(0, 5, (2, 4, 4)))
y = torch.randn(2, 5, 4, requires_grad=True)               # (N, C, L): nll_loss_nd's view to 4-d
case("(N, C, L) = (2, 5, 4), target (2, 4)", y * 1, torch.randint(0, 5, (2, 4)))
z = torch.randn(2, 5, 4, requires_grad=True)               # class_dim -1: the LM flattening
case("class_dim -1: (2, 5, 4).view(-1, 4), target (10)", (z * 1).view(-1, 4),
     torch.randint(0, 4, (10,)))
