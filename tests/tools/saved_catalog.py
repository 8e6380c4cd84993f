#!/usr/bin/python3
"""Per-op catalog of the tensors autograd saves for backward (ground truth for memest).

Run (Debian's PyTorch, CPU only; no GPU needed):

    /usr/bin/python3 tests/tools/saved_catalog.py > tests/reference/saved_tensors_catalog.md
    /usr/bin/python3 tests/tools/saved_catalog.py tests/reference/saved_tensors_catalog.md

For every case an op (or small module) is applied once, in training mode, with
`torch.autograd.graph.saved_tensors_hooks` active.  The pack hook sees every
tensor autograd saves.  Afterwards the grad_fn graph created by the op is walked
and every `_saved_*` attribute that holds a tensor is read; the pack hook wraps each
tensor with its pack index and the unpack hook reports that index when the attribute is
read, so every pack record is matched exactly with "GradFnClass._saved_attr".  A pack record that no
attribute explains is listed as "(unnamed)".

"Inputs" of a case are made non-leaf (`leaf.clone()`) when they require grad, so
that in-place ops are legal and the input looks like an activation inside a network.
Nodes that existed before the op (the CloneBackward0 of the input) are excluded.

Columns:
  storage: param/buffer = storage belongs to a module parameter or buffer
           input / output = storage is shared with an input / output of the case
           new           = storage created inside the op (an intermediate)
  view:    "same" if the saved tensor has identical data_ptr/shape/stride to the
           input/output it shares storage with, "view" otherwise
  bytes:   full nbytes of the underlying storage (what stays alive)

Summary line per case: distinct saved storages (deduped by storage data_ptr),
excluding param/buffer storages, split into input / output / new bytes.
Everything is deterministic (torch.manual_seed(0) before each case).
"""
import math
import os
import sys
import io

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import provenance  # noqa: E402

torch.set_num_threads(1)


# --------------------------------------------------------------------------- helpers
def sptr(t):
    return t.storage().data_ptr()


def sbytes(t):
    return t.storage().nbytes()


def act(*shape, rg=True, dtype=torch.float32):
    """An 'activation' tensor. If rg, a non-leaf that requires grad."""
    base = torch.randn(*shape, dtype=dtype)
    if rg:
        base.requires_grad_(True)
        return base.clone()
    return base


def flat_tensors(obj):
    out = []
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            out.extend(flat_tensors(o))
    elif isinstance(obj, dict):
        for o in obj.values():
            out.extend(flat_tensors(o))
    return out


def reachable(roots):
    seen = {}
    stack = [r for r in roots if r is not None]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen[id(n)] = n
        for nf, _ in getattr(n, "next_functions", ()):
            if nf is not None:
                stack.append(nf)
    return seen


def tshape(t):
    return "[" + ",".join(str(s) for s in t.shape) + "]"


def dtname(dt):
    return str(dt).replace("torch.", "")


class Case:
    def __init__(self, title, fn, note=""):
        self.title = title
        self.fn = fn
        self.note = note


def run_case(case):
    """case.fn() -> dict(op=callable, inputs=[...], modules=[...], extra_params=[...])"""
    torch.manual_seed(0)
    spec = case.fn()
    inputs = spec["inputs"]
    mods = spec.get("modules", [])
    pb = set()
    for m in mods:
        for p in m.parameters():
            pb.add(sptr(p))
        for b in m.buffers():
            pb.add(sptr(b))
    for p in spec.get("extra_params", []):
        pb.add(sptr(p))
    in_t = flat_tensors(inputs)
    pre = reachable([t.grad_fn for t in in_t if t.grad_fn is not None])
    in_ptrs = {sptr(t): t for t in in_t}

    packs = []
    last = [None]

    class Packed:
        __slots__ = ("idx", "t")

        def __init__(self, idx, t):
            self.idx, self.t = idx, t

    def pack(t):
        packs.append(t)
        return Packed(len(packs) - 1, t)

    def unpack(pk):
        last[0] = pk.idx  # tells the graph walk which pack a _saved_* attribute came from
        return pk.t

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = spec["op"](*inputs)
    out_t = flat_tensors(out)
    out_ptrs = {sptr(t): t for t in out_t}

    nodes = reachable([t.grad_fn for t in out_t if t.grad_fn is not None])
    nodes = [n for k, n in nodes.items() if k not in pre]
    names = {}  # pack index -> list of (grad_fn, attr, tensor)
    for n in nodes:
        for a in dir(n):
            if not a.startswith("_saved_"):
                continue
            last[0] = None
            try:
                v = getattr(n, a)
            except Exception:
                continue
            if isinstance(v, torch.Tensor) and last[0] is not None:
                names.setdefault(last[0], []).append((type(n).__name__, a, v))
            elif isinstance(v, (list, tuple)) and any(isinstance(e, torch.Tensor) for e in v):
                names.setdefault(("list", id(n), a), []).append((type(n).__name__, a, v[0]))

    rows = []
    for i, p in enumerate(packs):
        nm = names.get(i, [("(unnamed)", "-", p)])
        gname = "; ".join("%s.%s" % (g, a) for g, a, _ in nm)
        ptr = sptr(p)
        if ptr in pb:
            rel = "param/buffer"
            view = ""
        elif ptr in in_ptrs:
            rel = "input"
            ref = in_ptrs[ptr]
            view = "same" if (p.data_ptr() == ref.data_ptr() and p.shape == ref.shape and p.stride() == ref.stride()) else "view"
            if ptr in out_ptrs:
                rel = "input=output"
        elif ptr in out_ptrs:
            rel = "output"
            ref = out_ptrs[ptr]
            view = "same" if (p.data_ptr() == ref.data_ptr() and p.shape == ref.shape and p.stride() == ref.stride()) else "view"
        else:
            rel = "new"
            view = ""
        rows.append(dict(name=gname, shape=tshape(p), dtype=dtname(p.dtype), contig=p.is_contiguous(),
                         rel=rel, view=view, bytes=sbytes(p), ptr=ptr, rg=p.requires_grad,
                         numel=p.numel(), esize=p.element_size()))
    extra = [(k, v) for k, v in names.items() if isinstance(k, tuple)]
    return rows, extra, out_t


def fmt_case(case, rows, extra, out_t):
    o = io.StringIO()
    o.write("### %s\n\n" % case.title)
    if case.note:
        o.write("%s\n\n" % case.note)
    o.write("Outputs: %s\n\n" % ", ".join("%s %s" % (tshape(t), dtname(t.dtype)) for t in out_t))
    if not rows:
        o.write("**Nothing saved.**\n\n")
    else:
        o.write("| # | grad_fn.attribute | shape | dtype | contig | storage | view | storage bytes |\n")
        o.write("|---|---|---|---|---|---|---|---|\n")
        for i, r in enumerate(rows):
            o.write("| %d | %s | %s | %s | %s | %s | %s | %d |\n" % (
                i, r["name"], r["shape"], r["dtype"], "y" if r["contig"] else "n", r["rel"], r["view"], r["bytes"]))
        o.write("\n")
    for k, v in extra:
        for g, a, t in v:
            o.write("- note: %s.%s is a tensor list (not individually mapped)\n" % (g, a))
    seen = {}
    for r in rows:
        if r["rel"] == "param/buffer":
            continue
        seen.setdefault(r["ptr"], r)
    tot = {"input": 0, "output": 0, "input=output": 0, "new": 0}
    for r in seen.values():
        tot[r["rel"]] += r["bytes"]
    o.write("Summary: %d saved tensors, %d distinct non-param storages = %d bytes "
            "(input %d, output %d, input=output %d, new %d)\n\n" % (
                len(rows), len(seen), sum(tot.values()), tot["input"], tot["output"], tot["input=output"], tot["new"]))
    return o.getvalue(), rows


def agg_by_gradfn(rows):
    """bytes per grad_fn class of distinct non-param storages (first saver wins)."""
    seen = set()
    agg = {}
    for r in rows:
        if r["rel"] == "param/buffer" or r["ptr"] in seen:
            continue
        seen.add(r["ptr"])
        g = r["name"].split(".")[0]
        c = agg.setdefault(g, [0, 0])
        c[0] += 1
        c[1] += r["bytes"]
    return agg


# --------------------------------------------------------------------------- cases
CASES = []


def case(title, note=""):
    def deco(fn):
        CASES.append((SECTION[0], Case(title, fn, note)))
        return fn
    return deco


SECTION = [""]


def section(name):
    SECTION[0] = name


def mod_case(title, mk_mod, mk_inputs, note="", prep=None):
    def fn():
        m = mk_mod()
        m.train()
        if prep:
            prep(m)
        ins = mk_inputs()
        return dict(op=lambda *a: m(*a), inputs=ins, modules=[m])
    CASES.append((SECTION[0], Case(title, fn, note)))


def op_case(title, mk, note=""):
    CASES.append((SECTION[0], Case(title, mk, note)))


def freeze(*names):
    def f(m):
        for n in names:
            getattr(m, n).requires_grad_(False)
    return f


# ---- Linear
section("Linear")
mod_case("Linear(16,32) on 2D x[4,16]", lambda: nn.Linear(16, 32), lambda: [act(4, 16)])
mod_case("Linear(16,32) on contiguous 3D x[2,5,16]", lambda: nn.Linear(16, 32), lambda: [act(2, 5, 16)])


def _nc3():
    return [act(5, 2, 16).transpose(0, 1)]


mod_case("Linear(16,32) on NON-contiguous 3D x = a[5,2,16].transpose(0,1)", lambda: nn.Linear(16, 32), _nc3)
mod_case("Linear(16,32) on a 4D contiguous x[2,3,5,16]", lambda: nn.Linear(16, 32), lambda: [act(2, 3, 5, 16)])
mod_case("Linear(16,32,bias=False) on 2D x[4,16]", lambda: nn.Linear(16, 32, bias=False), lambda: [act(4, 16)])
mod_case("Linear(16,32,bias=False) on 3D x[2,5,16]", lambda: nn.Linear(16, 32, bias=False), lambda: [act(2, 5, 16)])
mod_case("Linear(16,32,bias=False) on NON-contiguous 3D", lambda: nn.Linear(16, 32, bias=False), _nc3)
mod_case("Linear(16,32) frozen weight+bias (requires_grad=False), input requires grad, 2D",
         lambda: nn.Linear(16, 32), lambda: [act(4, 16)], prep=freeze("weight", "bias"))
mod_case("Linear(16,32) frozen weight+bias, input requires grad, 3D",
         lambda: nn.Linear(16, 32), lambda: [act(2, 5, 16)], prep=freeze("weight", "bias"))
mod_case("Linear(16,32) frozen weight only (bias trainable), input requires grad, 2D",
         lambda: nn.Linear(16, 32), lambda: [act(4, 16)], prep=freeze("weight"))
mod_case("Linear(16,32) trainable, input does NOT require grad, 2D", lambda: nn.Linear(16, 32),
         lambda: [act(4, 16, rg=False)])
mod_case("Linear(16,32) trainable, input does NOT require grad, 3D", lambda: nn.Linear(16, 32),
         lambda: [act(2, 5, 16, rg=False)])
mod_case("Linear(16,32) trainable, input does NOT require grad, NON-contiguous 3D", lambda: nn.Linear(16, 32),
         lambda: [act(5, 2, 16, rg=False).transpose(0, 1)])


def _pooler_lin():
    m = nn.Linear(16, 16)
    x = act(2, 5, 16)
    return dict(op=lambda x: m(x[:, 0]), inputs=[x], modules=[m])


op_case("Linear(16,16) on a slice x[:, 0] of x[2,5,16] (BERT pooler dense)", _pooler_lin)

# ---- Conv
section("Conv2d")
mod_case("Conv2d(3,8,3,padding=1) bias, x[2,3,8,8]", lambda: nn.Conv2d(3, 8, 3, padding=1), lambda: [act(2, 3, 8, 8)])
mod_case("Conv2d(3,8,3,padding=1,bias=False)", lambda: nn.Conv2d(3, 8, 3, padding=1, bias=False), lambda: [act(2, 3, 8, 8)])
mod_case("Conv2d(4,8,3,padding=1,groups=2)", lambda: nn.Conv2d(4, 8, 3, padding=1, groups=2), lambda: [act(2, 4, 8, 8)])
mod_case("Conv2d(8,8,3,padding=1,groups=8) depthwise, bias=False", lambda: nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False),
         lambda: [act(2, 8, 8, 8)])
mod_case("Conv2d(3,8,3) trainable, input does NOT require grad (first layer)", lambda: nn.Conv2d(3, 8, 3, padding=1),
         lambda: [act(2, 3, 8, 8, rg=False)])
mod_case("Conv2d(3,8,3) frozen weight+bias, input requires grad", lambda: nn.Conv2d(3, 8, 3, padding=1),
         lambda: [act(2, 3, 8, 8)], prep=freeze("weight", "bias"))
mod_case("Conv2d(8,16,1,stride=2,bias=False) 1x1 strided (downsample)", lambda: nn.Conv2d(8, 16, 1, stride=2, bias=False),
         lambda: [act(2, 8, 8, 8)])

# ---- Norms
section("Normalization")
mod_case("BatchNorm2d(8) train, x[2,8,4,4]", lambda: nn.BatchNorm2d(8), lambda: [act(2, 8, 4, 4)])
mod_case("BatchNorm2d(8,affine=False) train", lambda: nn.BatchNorm2d(8, affine=False), lambda: [act(2, 8, 4, 4)])
mod_case("BatchNorm2d(8) train, input does NOT require grad", lambda: nn.BatchNorm2d(8), lambda: [act(2, 8, 4, 4, rg=False)])
mod_case("BatchNorm2d(8) train, frozen weight+bias, input requires grad", lambda: nn.BatchNorm2d(8),
         lambda: [act(2, 8, 4, 4)], prep=freeze("weight", "bias"))
mod_case("BatchNorm2d(8) in eval() mode (for comparison)", lambda: nn.BatchNorm2d(8), lambda: [act(2, 8, 4, 4)],
         prep=lambda m: m.eval())
mod_case("BatchNorm1d(8) train, x[4,8]", lambda: nn.BatchNorm1d(8), lambda: [act(4, 8)])
mod_case("BatchNorm1d(8) train, x[4,8,5]", lambda: nn.BatchNorm1d(8), lambda: [act(4, 8, 5)])


def _bn_relu():
    bn = nn.BatchNorm2d(8)
    r = nn.ReLU(inplace=True)
    bn.train()
    return dict(op=lambda x: r(bn(x)), inputs=[act(2, 8, 4, 4)], modules=[bn])


op_case("BatchNorm2d(8) -> ReLU(inplace=True)", _bn_relu)


def _conv_bn_relu():
    c = nn.Conv2d(3, 8, 3, padding=1, bias=False)
    bn = nn.BatchNorm2d(8)
    r = nn.ReLU(inplace=True)
    return dict(op=lambda x: r(bn(c(x))), inputs=[act(2, 3, 8, 8)], modules=[c, bn])


op_case("Conv2d(bias=False) -> BatchNorm2d -> ReLU(inplace=True) (ResNet stem pattern)", _conv_bn_relu)
def _mbv2():
    c1 = nn.Conv2d(4, 8, 1, bias=False)
    bn = nn.BatchNorm2d(8)
    r6 = nn.ReLU6(inplace=True)
    c2 = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
    return dict(op=lambda x: c2(r6(bn(c1(x)))), inputs=[act(2, 4, 8, 8)], modules=[c1, bn, c2])


op_case("Conv2d -> BatchNorm2d -> ReLU6(inplace=True) -> depthwise Conv2d (MobileNetV2 pattern)", _mbv2,
        note="Hardtanh_ saves a clone of its pre-activation input, the next conv saves the (in-place modified) "
             "BN-output storage, BN saves the conv output: three full-size storages.")
mod_case("LayerNorm(16) on x[2,5,16]", lambda: nn.LayerNorm(16), lambda: [act(2, 5, 16)])
mod_case("LayerNorm(16, elementwise_affine=False)", lambda: nn.LayerNorm(16, elementwise_affine=False), lambda: [act(2, 5, 16)])
mod_case("LayerNorm(16) input does NOT require grad", lambda: nn.LayerNorm(16), lambda: [act(2, 5, 16, rg=False)])
mod_case("LayerNorm(16) frozen weight+bias, input requires grad", lambda: nn.LayerNorm(16), lambda: [act(2, 5, 16)],
         prep=freeze("weight", "bias"))
mod_case("GroupNorm(2,8) on x[2,8,4,4]", lambda: nn.GroupNorm(2, 8), lambda: [act(2, 8, 4, 4)])

# ---- Embedding
section("Embedding")


def _idx(*shape):
    return torch.randint(0, 100, shape, dtype=torch.long)


mod_case("Embedding(100,16) on idx[2,5] int64", lambda: nn.Embedding(100, 16), lambda: [_idx(2, 5)])
mod_case("Embedding(100,16,padding_idx=0) on idx[2,5]", lambda: nn.Embedding(100, 16, padding_idx=0), lambda: [_idx(2, 5)])
mod_case("Embedding(100,16) frozen weight", lambda: nn.Embedding(100, 16), lambda: [_idx(2, 5)], prep=freeze("weight"))


def _emb_arange():
    m = nn.Embedding(100, 16)
    return dict(op=lambda: m(torch.arange(5, dtype=torch.long).unsqueeze(0)), inputs=[], modules=[m])


op_case("Embedding(100,16) on position_ids = torch.arange(5).unsqueeze(0) created inside forward", _emb_arange)


def _emb_expand():
    m = nn.Embedding(100, 16)
    buf = torch.zeros(1, 512, dtype=torch.long)
    return dict(op=lambda: m(buf[:, :5].expand(2, 5)), inputs=[], modules=[m], extra_params=[buf])


op_case("Embedding(2,16) on an expanded view of a [1,512] int64 buffer (HF BERT token_type_ids buffer)", _emb_expand)

# ---- Activations
section("Activations")
ACTS = [
    ("ReLU()", lambda: nn.ReLU()), ("ReLU(inplace=True)", lambda: nn.ReLU(inplace=True)),
    ("ReLU6()", lambda: nn.ReLU6()), ("ReLU6(inplace=True)", lambda: nn.ReLU6(inplace=True)),
    ("LeakyReLU(0.01)", lambda: nn.LeakyReLU()), ("LeakyReLU(inplace=True)", lambda: nn.LeakyReLU(inplace=True)),
    ("ELU()", lambda: nn.ELU()), ("ELU(inplace=True)", lambda: nn.ELU(inplace=True)),
    ("GELU()", lambda: nn.GELU()), ("GELU(approximate='tanh')", lambda: nn.GELU(approximate="tanh")),
    ("SiLU()", lambda: nn.SiLU()), ("SiLU(inplace=True)", lambda: nn.SiLU(inplace=True)),
    ("Sigmoid()", lambda: nn.Sigmoid()), ("Tanh()", lambda: nn.Tanh()),
    ("Hardswish()", lambda: nn.Hardswish()), ("Hardswish(inplace=True)", lambda: nn.Hardswish(inplace=True)),
    ("Hardsigmoid()", lambda: nn.Hardsigmoid()), ("Hardsigmoid(inplace=True)", lambda: nn.Hardsigmoid(inplace=True)),
    ("Hardtanh()", lambda: nn.Hardtanh()), ("Hardtanh(inplace=True)", lambda: nn.Hardtanh(inplace=True)),
    ("Softplus()", lambda: nn.Softplus()),
    ("Mish()", lambda: nn.Mish()), ("Mish(inplace=True)", lambda: nn.Mish(inplace=True)),
    ("Softmax(dim=-1)", lambda: nn.Softmax(dim=-1)), ("LogSoftmax(dim=-1)", lambda: nn.LogSoftmax(dim=-1)),
]
for t, mk in ACTS:
    mod_case(t + " on x[2,8,4,4]", mk, lambda: [act(2, 8, 4, 4)])
mod_case("ReLU() on input that does NOT require grad", lambda: nn.ReLU(), lambda: [act(2, 8, 4, 4, rg=False)])
mod_case("GELU() on input that does NOT require grad", lambda: nn.GELU(), lambda: [act(2, 8, 4, 4, rg=False)])

# ---- Dropout
section("Dropout")
for p in (0.1, 0.5):
    for ip in (False, True):
        mod_case("Dropout(p=%g, inplace=%s) train, x[2,8,4,4]" % (p, ip), (lambda p=p, ip=ip: nn.Dropout(p, inplace=ip)),
                 lambda: [act(2, 8, 4, 4)])
mod_case("Dropout(p=0.1) on input that does NOT require grad", lambda: nn.Dropout(0.1), lambda: [act(2, 8, 4, 4, rg=False)])
mod_case("Dropout(p=0.1) in eval() mode", lambda: nn.Dropout(0.1), lambda: [act(2, 8, 4, 4)], prep=lambda m: m.eval())


def _native_do():
    return dict(op=lambda x: torch.native_dropout(x, 0.1, True), inputs=[act(2, 8, 4, 4)])


op_case("torch.native_dropout(x, 0.1, train=True) called directly (this is what F.dropout uses on CUDA, non-inplace)",
        _native_do,
        note="ATen `dropout()` calls native_dropout only when `is_fused_kernel_acceptable` (input on CUDA/XPU/lazy, "
             "0<p<1, numel>0); on CPU it uses `_dropout_impl`: `noise = empty_like(x).bernoulli_(1-p).div_(1-p); "
             "return x * noise` (MulBackward0 saves the float `noise`). `dropout_` (inplace=True) always uses "
             "`_dropout_impl` (float mask, `x.mul_(noise)`) on every device in torch 1.13.")

# ---- Pooling
section("Pooling / Flatten")
mod_case("MaxPool2d(2,2) on x[2,4,8,8]", lambda: nn.MaxPool2d(2, 2), lambda: [act(2, 4, 8, 8)])
mod_case("MaxPool2d(3,2,padding=1) on x[2,4,8,8] (ResNet)", lambda: nn.MaxPool2d(3, 2, 1), lambda: [act(2, 4, 8, 8)])
mod_case("MaxPool2d(3,2,ceil_mode=True) on x[2,4,8,8]", lambda: nn.MaxPool2d(3, 2, ceil_mode=True), lambda: [act(2, 4, 8, 8)])
mod_case("MaxPool2d(3,2) on x[2,4,8,8] (AlexNet, floor)", lambda: nn.MaxPool2d(3, 2), lambda: [act(2, 4, 8, 8)])
mod_case("MaxPool2d(2,2) on input that does NOT require grad", lambda: nn.MaxPool2d(2, 2), lambda: [act(2, 4, 8, 8, rg=False)])
mod_case("AvgPool2d(2,2) on x[2,4,8,8]", lambda: nn.AvgPool2d(2, 2), lambda: [act(2, 4, 8, 8)])
mod_case("AdaptiveAvgPool2d(1) on x[2,4,14,14]", lambda: nn.AdaptiveAvgPool2d(1), lambda: [act(2, 4, 14, 14)])
mod_case("AdaptiveAvgPool2d(1) on x[2,4,7,7]", lambda: nn.AdaptiveAvgPool2d(1), lambda: [act(2, 4, 7, 7)])
mod_case("AdaptiveAvgPool2d((7,7)) on x[2,4,14,14]", lambda: nn.AdaptiveAvgPool2d((7, 7)), lambda: [act(2, 4, 14, 14)])
mod_case("AdaptiveAvgPool2d((7,7)) on x[2,4,7,7] (identity size, AlexNet/VGG at 224)", lambda: nn.AdaptiveAvgPool2d((7, 7)),
         lambda: [act(2, 4, 7, 7)])
mod_case("AdaptiveMaxPool2d(1) on x[2,4,14,14]", lambda: nn.AdaptiveMaxPool2d(1), lambda: [act(2, 4, 14, 14)])
mod_case("AdaptiveMaxPool2d((7,7)) on x[2,4,14,14]", lambda: nn.AdaptiveMaxPool2d((7, 7)), lambda: [act(2, 4, 14, 14)])
mod_case("Flatten() on contiguous x[2,4,7,7]", lambda: nn.Flatten(), lambda: [act(2, 4, 7, 7)])
mod_case("Flatten() on NON-contiguous x (permuted)", lambda: nn.Flatten(), lambda: [act(2, 7, 7, 4).permute(0, 3, 1, 2)])
op_case("torch.flatten(x,1) on x[2,4,1,1] (after global pool)", lambda: dict(op=lambda x: torch.flatten(x, 1), inputs=[act(2, 4, 1, 1)]))
mod_case("Linear on top of torch.flatten of adaptive-avg-pooled (for mobilenet: F.adaptive_avg_pool2d(x,(1,1)) -> flatten)",
         lambda: nn.Sequential(nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(4, 3)), lambda: [act(2, 4, 7, 7)])

# ---- Elementwise binary
section("Elementwise binary ops")


def _bin(fn, title, note=""):
    op_case(title + " (both activations require grad)",
            lambda: dict(op=fn, inputs=[act(2, 8, 4, 4), act(2, 8, 4, 4)]), note)


_bin(torch.add, "torch.add(a, b)")
_bin(torch.sub, "torch.sub(a, b)")
_bin(torch.mul, "torch.mul(a, b)")
_bin(torch.div, "torch.div(a, b)")
op_case("torch.mul(a, b), b does NOT require grad", lambda: dict(op=torch.mul, inputs=[act(2, 8, 4, 4), act(2, 8, 4, 4, rg=False)]))
op_case("torch.div(a, b), b does NOT require grad", lambda: dict(op=torch.div, inputs=[act(2, 8, 4, 4), act(2, 8, 4, 4, rg=False)]))
op_case("torch.div(a, b), a does NOT require grad", lambda: dict(op=torch.div, inputs=[act(2, 8, 4, 4, rg=False), act(2, 8, 4, 4)]))
for nm, f in (("add", lambda x: x + 2.0), ("sub", lambda x: x - 2.0), ("mul", lambda x: x * 2.0),
              ("div", lambda x: x / 8.0), ("rdiv", lambda x: 1.0 / x), ("pow 2", lambda x: x ** 2)):
    op_case("%s with a python scalar" % nm, (lambda f=f: dict(op=f, inputs=[act(2, 8, 4, 4)])))
op_case("x / torch.tensor(8.0) (0-d tensor, no grad)", lambda: dict(op=lambda x: x / torch.tensor(8.0), inputs=[act(2, 8, 4, 4)]))


def _with_param(fn):
    def mk():
        p = nn.Parameter(torch.randn(8, 1, 1))
        return dict(op=lambda x: fn(x, p), inputs=[act(2, 8, 4, 4)], extra_params=[p])
    return mk


for nm, f in (("add", torch.add), ("sub", torch.sub), ("mul", torch.mul), ("div", torch.div)):
    op_case("torch.%s(x, param[8,1,1]) (parameter operand, broadcast)" % nm, _with_param(f))
op_case("torch.mul(x, param[8,1,1]) with x NOT requiring grad",
        lambda: (lambda p: dict(op=lambda x: x * p, inputs=[act(2, 8, 4, 4, rg=False)], extra_params=[p]))(nn.Parameter(torch.randn(8, 1, 1))))

# ---- matmul
section("matmul / bmm")
op_case("torch.matmul 2D@2D a[4,16] @ b[16,8], both require grad", lambda: dict(op=torch.matmul, inputs=[act(4, 16), act(16, 8)]))
op_case("torch.matmul 2D@2D, b does NOT require grad", lambda: dict(op=torch.matmul, inputs=[act(4, 16), act(16, 8, rg=False)]))
op_case("torch.matmul 3D@2D a[2,5,16] @ b[16,8], both require grad", lambda: dict(op=torch.matmul, inputs=[act(2, 5, 16), act(16, 8)]))
op_case("torch.matmul 3D@2D with a NON-contiguous a = t[5,2,16].transpose(0,1)",
        lambda: dict(op=torch.matmul, inputs=[act(5, 2, 16).transpose(0, 1), act(16, 8)]))
op_case("torch.matmul 4D@4D contiguous a[2,3,5,4] @ b[2,3,4,5]", lambda: dict(op=torch.matmul, inputs=[act(2, 3, 5, 4), act(2, 3, 4, 5)]))
op_case("torch.matmul 3D@3D contiguous a[6,5,4] @ b[6,4,5]", lambda: dict(op=torch.matmul, inputs=[act(6, 5, 4), act(6, 4, 5)]))


def _bert_qk():
    B, s, h, d = 2, 5, 3, 4
    q = act(B, s, h * d)
    k = act(B, s, h * d)
    return dict(op=lambda q, k: torch.matmul(q.view(B, s, h, d).permute(0, 2, 1, 3),
                                             k.view(B, s, h, d).permute(0, 2, 1, 3).transpose(-1, -2)), inputs=[q, k])


op_case("BERT scores: matmul(q.view(B,s,h,d).permute(0,2,1,3), k.view(B,s,h,d).permute(0,2,1,3).transpose(-1,-2)), "
        "B=2,s=5,h=3,d=4", _bert_qk, note="q,k are [B,s,h*d] contiguous activations (Linear outputs); views are inside the op.")


def _perm0231():
    B, s, h, d = 2, 5, 3, 4
    return dict(op=lambda q, k: torch.matmul(q.view(B, s, h, d).permute(0, 2, 1, 3), k.view(B, s, h, d).permute(0, 2, 3, 1)),
                inputs=[act(B, s, h * d), act(B, s, h * d)])


op_case("matmul(q.view(B,s,h,d).permute(0,2,1,3), k.view(B,s,h,d).permute(0,2,3,1))", _perm0231)


def _bert_qk_b1():
    B, s, h, d = 1, 5, 3, 4
    return dict(op=lambda q, k: torch.matmul(q.view(B, s, h, d).permute(0, 2, 1, 3),
                                             k.view(B, s, h, d).permute(0, 2, 1, 3).transpose(-1, -2)),
                inputs=[act(B, s, h * d), act(B, s, h * d)])


op_case("BERT scores with B=1 (batch dim of size 1 merges with any stride -> reshape is a VIEW, no copy)", _bert_qk_b1)


def _bert_pv():
    B, s, h, d = 2, 5, 3, 4
    return dict(op=lambda p, v: torch.matmul(p, v.view(B, s, h, d).permute(0, 2, 1, 3)), inputs=[act(B, h, s, s), act(B, s, h * d)])


op_case("BERT context: matmul(probs[B,h,s,s] contiguous, v.view(B,s,h,d).permute(0,2,1,3))", _bert_pv)


def _gpt_qk():
    B, s, h, d = 2, 5, 3, 4
    E = h * d

    def f(x):
        q, k, v = x.split(E, dim=2)
        q = q.view(B, s, h, d).permute(0, 2, 1, 3)
        k = k.view(B, s, h, d).permute(0, 2, 1, 3)
        return torch.matmul(q, k.transpose(-1, -2))
    return dict(op=f, inputs=[act(B, s, 3 * E)])


op_case("GPT-2 scores: qkv[B,s,3E].split(E,2) -> view/permute -> matmul(q, k.transpose(-1,-2))", _gpt_qk)


def _gpt_b1():
    B, s, h, d = 1, 5, 3, 4
    E = h * d

    def f(x):
        q, k, v = x.split(E, dim=2)
        q = q.view(B, s, h, d).permute(0, 2, 1, 3)
        k = k.view(B, s, h, d).permute(0, 2, 1, 3)
        v = v.view(B, s, h, d).permute(0, 2, 1, 3)
        w = torch.matmul(q, k.transpose(-1, -2)).softmax(-1)
        return torch.matmul(w, v)
    return dict(op=f, inputs=[act(B, s, 3 * E)])


op_case("GPT-2 attention with B=1: q/k/v saved as views of the whole qkv storage [B,s,3E] (no copies)", _gpt_b1)
op_case("matmul(a, b.transpose(-1,-2)) with a[2,3,5,4], b[2,3,5,4] contiguous",
        lambda: dict(op=lambda a, b: torch.matmul(a, b.transpose(-1, -2)), inputs=[act(2, 3, 5, 4), act(2, 3, 5, 4)]))
op_case("matmul(a, b.transpose(-1,-2)) with a[6,5,4], b[6,5,4] contiguous 3D",
        lambda: dict(op=lambda a, b: torch.matmul(a, b.transpose(-1, -2)), inputs=[act(6, 5, 4), act(6, 5, 4)]))
op_case("matmul(a.transpose(-1,-2), b) with a[6,4,5], b[6,4,5] 3D",
        lambda: dict(op=lambda a, b: torch.matmul(a.transpose(-1, -2), b), inputs=[act(6, 4, 5), act(6, 4, 5)]))
op_case("torch.bmm(a[6,5,4], b[6,4,5])", lambda: dict(op=torch.bmm, inputs=[act(6, 5, 4), act(6, 4, 5)]))
op_case("torch.bmm(a[6,5,4], b[6,5,4].transpose(1,2))", lambda: dict(op=lambda a, b: torch.bmm(a, b.transpose(1, 2)),
                                                                    inputs=[act(6, 5, 4), act(6, 5, 4)]))
op_case("torch.bmm with a permuted a = t[5,6,4].transpose(0,1)", lambda: dict(op=lambda a, b: torch.bmm(a.transpose(0, 1), b),
                                                                             inputs=[act(5, 6, 4), act(6, 4, 5)]))

# ---- shape ops
section("Shape / reduction / misc ops")
op_case("torch.cat([a,b], dim=1)", lambda: dict(op=lambda a, b: torch.cat([a, b], 1), inputs=[act(2, 8, 4, 4), act(2, 8, 4, 4)]))
op_case("torch.stack([a,b], dim=0)", lambda: dict(op=lambda a, b: torch.stack([a, b], 0), inputs=[act(2, 8), act(2, 8)]))
op_case("reshape(2,-1) on contiguous x", lambda: dict(op=lambda x: x.reshape(2, -1), inputs=[act(2, 8, 4, 4)]))
op_case("reshape(2,-1) on permuted x (forces a copy)", lambda: dict(op=lambda x: x.permute(0, 2, 3, 1).reshape(2, -1), inputs=[act(2, 8, 4, 4)]))
op_case("view / permute / transpose", lambda: dict(op=lambda x: x.view(2, 8, 16).permute(0, 2, 1).transpose(0, 1), inputs=[act(2, 8, 4, 4)]))
op_case("permute(0,2,1,3).contiguous() (copy)", lambda: dict(op=lambda x: x.permute(0, 2, 1, 3).contiguous(), inputs=[act(2, 5, 3, 4)]))
op_case("permute(0,2,1,3).contiguous().view(B,s,E) (BERT ctx merge)",
        lambda: dict(op=lambda x: x.permute(0, 2, 1, 3).contiguous().view(2, 5, 12), inputs=[act(2, 3, 5, 4)]))
op_case("split(4, dim=1)", lambda: dict(op=lambda x: x.split(4, 1), inputs=[act(2, 8, 4, 4)]))
op_case("chunk(2, dim=1)", lambda: dict(op=lambda x: x.chunk(2, 1), inputs=[act(2, 8, 4, 4)]))
op_case("x.mean(dim=(2,3))", lambda: dict(op=lambda x: x.mean((2, 3)), inputs=[act(2, 8, 4, 4)]))
op_case("x.mean(dim=-1, keepdim=True)", lambda: dict(op=lambda x: x.mean(-1, keepdim=True), inputs=[act(2, 8, 4, 4)]))
op_case("x.sum(dim=1)", lambda: dict(op=lambda x: x.sum(1), inputs=[act(2, 8, 4, 4)]))
op_case("x.sum() / x.mean() (full reduction)", lambda: dict(op=lambda x: (x.sum(), x.mean()), inputs=[act(2, 8, 4, 4)]))


def _where():
    mask = torch.tril(torch.ones(1, 1, 8, 8, dtype=torch.bool))

    def f(w):
        s = w.size(-1)
        return torch.where(mask[:, :, :s, :s], w, torch.tensor(torch.finfo(w.dtype).min))
    return dict(op=f, inputs=[act(2, 3, 5, 5)], extra_params=[mask])


op_case("torch.where(bool_mask_buffer[:, :, :s, :s], w, torch.tensor(finfo.min)) (GPT-2)", _where,
        note="mask is a registered-buffer-like bool tensor [1,1,8,8] (counted as param/buffer storage).")


def _masked_fill():
    mask = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    return dict(op=lambda w: w.masked_fill(mask, float("-inf")), inputs=[act(2, 3, 5, 5)], extra_params=[mask])


op_case("w.masked_fill(bool_mask_buffer, -inf)", _masked_fill)
op_case("torch.tanh(x[:, 0]) (pooler-style slice)", lambda: dict(op=lambda x: torch.tanh(x[:, 0]), inputs=[act(2, 5, 16)]))
op_case("x[:, 0] (select) alone", lambda: dict(op=lambda x: x[:, 0], inputs=[act(2, 5, 16)]))
op_case("a + b residual add followed by LayerNorm (no extra save from add)",
        lambda: (lambda ln: dict(op=lambda a, b: ln(a + b), inputs=[act(2, 5, 16), act(2, 5, 16)], modules=[ln]))(nn.LayerNorm(16)))

# ---- RNN
section("Recurrent (CPU native implementation)")
RNN_NOTE = ("CPU torch 1.13 runs nn.LSTM/GRU/RNN through the native ATen implementation (aten/src/ATen/native/RNN.cpp): "
            "for each layer the input projection is computed for the whole sequence at once (`linear_ih(input)` -> "
            "one AddmmBackward0/linear over [seq*batch, in]), then per time step `linear_hh(h)` and the cell math as "
            "separate aten ops. On CUDA the default is cuDNN (one CudnnRnnBackward0 with an opaque reserve buffer), and "
            "the non-cuDNN CUDA path uses `_thnn_fused_lstm_cell` / `_thnn_fused_gru_cell` instead of the separate cell ops.")
T, Bb, H = 5, 3, 8
mod_case("nn.LSTM(8,8,num_layers=1) seq-first, x[5,3,8], zero initial state", lambda: nn.LSTM(H, H, 1), lambda: [act(T, Bb, H)], RNN_NOTE)
mod_case("nn.LSTM(8,8,num_layers=2) seq-first, x[5,3,8], dropout=0", lambda: nn.LSTM(H, H, 2), lambda: [act(T, Bb, H)])
mod_case("nn.LSTM(8,8,num_layers=2,dropout=0.5) seq-first, x[5,3,8]", lambda: nn.LSTM(H, H, 2, dropout=0.5), lambda: [act(T, Bb, H)])
mod_case("nn.LSTM(8,8,num_layers=1), input does NOT require grad", lambda: nn.LSTM(H, H, 1), lambda: [act(T, Bb, H, rg=False)])
mod_case("nn.GRU(8,8,num_layers=1) seq-first, x[5,3,8]", lambda: nn.GRU(H, H, 1), lambda: [act(T, Bb, H)])
mod_case("nn.RNN(8,8,num_layers=1,nonlinearity='tanh') seq-first, x[5,3,8]", lambda: nn.RNN(H, H, 1), lambda: [act(T, Bb, H)])

# ---- MHA
section("nn.MultiheadAttention (embed 16, 2 heads, L=S=5, N=3)")
E, NH, L, N = 16, 2, 5, 3
MHA_NOTE = ("In training mode with autograd enabled the fast path is not taken; F.multi_head_attention_forward "
            "is used (in_proj via one linear, q scaled, bmm/baddbmm, softmax, dropout skipped since dropout=0.0, "
            "out_proj via linear).")
for bf in (False, True):
    for nw in (True, False):
        for cm in (False, True):
            def mk(bf=bf, nw=nw, cm=cm):
                m = nn.MultiheadAttention(E, NH, batch_first=bf)
                x = act(N, L, E) if bf else act(L, N, E)
                mask = torch.triu(torch.full((L, L), float("-inf")), 1) if cm else None
                return dict(op=lambda x: m(x, x, x, need_weights=nw, attn_mask=mask), inputs=[x], modules=[m],
                            extra_params=[mask] if cm else [])
            op_case("MHA(16,2,batch_first=%s) self-attention, need_weights=%s, causal attn_mask=%s" % (bf, nw, cm), mk,
                    MHA_NOTE if (not bf and nw and not cm) else "")


def _mha_drop():
    m = nn.MultiheadAttention(E, NH, dropout=0.1)
    return dict(op=lambda x: m(x, x, x), inputs=[act(L, N, E)], modules=[m])


op_case("MHA(16,2,dropout=0.1) self-attention, need_weights=True", _mha_drop)


# ---- Detection (torchvision is imported by these cases only)
section("Detection (torchvision 0.14: FrozenBatchNorm2d, MultiScaleRoIAlign, fastrcnn_loss)")
DET_NOTE = ("The parts of Faster R-CNN's training step that save tensors outside nn.Conv2d/nn.Linear/ReLU "
            "(src/ops/ops_detection.c; the whole model: tests/tools/frcnn_figures.py). roi_align is "
            "torchvision's C++ autograd function: its saved rois show as (unnamed).")


def _frozen_bn():
    from torchvision.ops.misc import FrozenBatchNorm2d
    m = FrozenBatchNorm2d(4)
    return dict(op=lambda x: m(x), inputs=[act(2, 4, 5, 5)], modules=[m])


def _msroi(levels):
    def mk():
        from torchvision.ops import MultiScaleRoIAlign
        names = [str(i) for i in range(levels)]
        m = MultiScaleRoIAlign(names, 7, 2)
        feats = [act(2, 4, 64 >> i, 64 >> i) for i in range(levels)]
        # image 256x256: scales 1/4, 1/8; the 100x100 boxes map to level 0, the 250x250 one to level 1
        boxes = [torch.tensor([[0.0, 0.0, 100.0, 100.0], [0.0, 0.0, 250.0, 250.0]]),
                 torch.tensor([[10.0, 10.0, 110.0, 110.0]])]
        return dict(op=lambda *fs: m(dict(zip(names, fs)), boxes, [(256, 256)] * 2), inputs=feats, modules=[m])
    return mk


def _fastrcnn_loss():
    from torchvision.models.detection.roi_heads import fastrcnn_loss
    labels = [torch.tensor([1, 0, 3, 0]), torch.tensor([0, 2, 0, 0])]
    targets = [torch.randn(4, 4), torch.randn(4, 4)]
    return dict(op=lambda c, b: fastrcnn_loss(c, b, labels, targets), inputs=[act(8, 5), act(8, 20)])


op_case("FrozenBatchNorm2d(4) on x[2,4,5,5]", _frozen_bn, DET_NOTE)
op_case("MultiScaleRoIAlign(['0'], 7, 2) on x[2,4,64,64], 3 boxes", _msroi(1))
op_case("MultiScaleRoIAlign(['0', '1'], 7, 2) on x[2,4,64,64], x[2,4,32,32], 3 boxes (2 + 1 per level)",
        _msroi(2))
op_case("fastrcnn_loss(class_logits[8,5], box_regression[8,20], labels 2x[4], targets 2x[4,4]), 3 positives",
        _fastrcnn_loss)


# --------------------------------------------------------------------------- findings
# Hand-written summary of the tables that follow (every statement is backed by a case below;
# re-check it whenever torch changes). "a" = activation (non-param) storage.
FINDINGS = """## Key findings (summary of the tables below, torch 1.13 CPU)

Rules are about which storages autograd keeps alive; dedupe by storage (two ops saving the same
activation cost it once). "input" below means the op's activation input.

* **Linear** (`F.linear`): weight saved only if the *input* requires grad; input saved only if the
  *weight* requires grad. 2D + bias -> AddmmBackward0(mat1=input, mat2=weight^T); contiguous 3D + bias
  -> AddmmBackward0 on a [N*s,in] *view* of the input (no copy); no bias or >=4D -> MmBackward0
  (matmul fold, view of input). **Non-contiguous** 3D input (e.g. transposed) -> matmul's reshape makes
  a contiguous copy and MmBackward0 saves the copy (new storage, same bytes as the input) and NOT the
  original. Frozen weight (+/- bias) with input requiring grad -> no activation saved at all. Input not
  requiring grad (model input / after frozen part) -> input still saved (weight trainable). Linear on a
  slice `x[:,0]` saves the slice, which keeps the whole storage of x alive.
* **Conv2d** (any groups/depthwise/bias/stride): ConvolutionBackward0 saves input and weight
  *unconditionally* (also when the input does not require grad and also when the weight is frozen).
* **BatchNorm1d/2d (train)**: NativeBatchNormBackward0 saves input (always, even if the input does not
  require grad or weights are frozen) + save_mean[C] + save_invstd[C] (fp32) + weight/running stats
  (params/buffers). Output NOT saved. (CUDA uses cudnn_batch_norm: same input/mean/invstd plus a cuDNN
  reserve buffer that cannot be measured here.) eval(): input still saved, mean/invstd empty.
* **BN -> ReLU(inplace=True)**: BN saves its input, ReLU saves its result (= BN output storage, modified
  in place) -> both storages kept (conv output and bn/relu output).
* **LayerNorm**: NativeLayerNormBackward0 saves input (always) + mean and rstd of shape [..., 1] (fp32,
  = numel/normalized_size elements each) + weight/bias. Output not saved.
  **GroupNorm**: input + mean,rstd [N,G].
* **Embedding**: EmbeddingBackward0 saves the int64 indices (only if the weight requires grad; frozen ->
  nothing). Index tensors created in forward (arange position_ids) are new storages; views of a
  buffer (HF token_type_ids buffer) are buffer storage.
* **Activations, non-inplace**: saves *result*: ReLU, Sigmoid, Tanh, Softmax, LogSoftmax. Saves *input*
  (self): ReLU6/Hardtanh, LeakyReLU, ELU, GELU (exact and tanh), SiLU, Hardswish, Hardsigmoid,
  Softplus, Mish. Nothing saved if the input does not require grad.
* **Activations, inplace**: ReLU_, LeakyReLU_, ELU_ save the result (= the input storage, no extra
  memory). **ReLU6_/Hardtanh_, SiLU_, Hardswish_, Hardsigmoid_, Mish_ save a CLONE of the original
  input** (autograd's `original_self` copy: new storage of full input size), so inplace=True saves
  nothing compared to inplace=False for these (MobileNetV2's ReLU6(inplace=True) included).
* **Dropout (train), CPU**: `x * noise` with noise = bernoulli(1-p)/(1-p) as a float32 tensor of the
  input's shape; MulBackward0 saves only `other` = the float mask (4 B/elt). Same for p=0.1/0.5 and
  for inplace=True. Input does not require grad, or eval() -> nothing. **CUDA** non-inplace uses
  native_dropout: NativeDropoutBackward0 saves only the bool mask (1 B/elt). CUDA inplace=True
  (`dropout_`) still uses the float-mask path (4 B/elt).
* **MaxPool2d** (any ceil_mode/padding): MaxPool2DWithIndicesBackward0 saves input + int64 indices of
  the output shape (8 B/elt). AdaptiveMaxPool2d: same (input + int64 indices). AvgPool2d and
  AdaptiveAvgPool2d to a non-1x1 size (also identity 7x7 on 7x7): save input. **AdaptiveAvgPool2d to
  1x1 is lowered to `mean(dim=(-1,-2), keepdim=True)` and in torch 1.13 MeanBackward1 saves the input
  (self) too** (not nothing). Nothing if the input does not require grad.
* **Flatten / view / reshape / permute / transpose / contiguous / split / chunk / cat / stack /
  select `x[:,0]`**: save nothing (a copying reshape/contiguous saves nothing either; the copy is only
  kept if a later op saves it).
* **add / sub** (tensor, scalar or parameter operand): nothing. **mul**: saves `other` if self requires
  grad and `self` if other requires grad (x * param -> saves x; x * buffer -> saves buffer). **div**:
  saves `other` if self requires grad, `self` AND `other` if other requires grad. mul/div by a
  python scalar saves a 0-d wrapped-number tensor (8 B, float64; on CUDA this lives on the CPU).
  `1.0/x` saves the result; `x**2` saves x.
* **sum(dim)/sum()**: nothing. **mean(dim)**: saves the input (MeanBackward1, torch 1.13); full `mean()`:
  nothing.
* **matmul**: 2D@2D -> MmBackward0 (each operand saved iff the *other* requires grad). 3D@2D -> folded
  to mm on a [N*s,k] view (copy if not viewable). Batched (>=3D @ >=3D) -> operands are
  expanded and `reshape`d to 3D then BmmBackward0 saves the reshaped operands: if the reshape is a view
  (contiguous, or a plain transpose of the last two dims of a contiguous tensor) the saved tensor is a
  view of the input; **if the operand is a permuted view that cannot be flattened to [B*h, ., .]
  (e.g. q.view(B,s,h,d).permute(0,2,1,3) or k...permute(0,2,3,1)), a contiguous copy is made and
  saved** (new storage of the operand's size). BERT/GPT-2 attention: both operands of scores = QK^T
  are copies (q copy, k copy), for probs @ V the probs are a view (contiguous) and V is a copy.
  Exception: when the leading batch dim is 1 (B=1) the [1,h,s,d] permuted view *can* be reshaped to
  [h,s,d] without a copy, so bmm saves views and keeps the *source* storage alive instead (BERT: the
  q/k/v Linear outputs, U each; GPT-2: the whole c_attn output [B,s,3E]) - the same byte count as
  the three copies in both models, but a different storage identity.
  torch.bmm never copies: saves the operands as given (views allowed).
* **torch.where(mask, x, scalar_tensor)**: saves only the condition (a view of the bool buffer ->
  buffer storage, 0 activation bytes). **masked_fill**: saves the mask only (buffer).
* **tanh(x[:,0])**: saves the [B,H] result only (the slice is not saved).
* **nn.LSTM (CPU native, per layer, seq T, batch B, hidden H, input size I, fp32)**:
  saved = layer input [T*B, I] (AddmmBackward0 of the whole-sequence input projection; for layer 0
  this is the model tensor feeding the LSTM, for layer l>0 the stacked [T,B,H] output of layer l-1,
  or the dropout-multiplied copy of it) + h0 [B,H] and c0 [B,H] (zero initial state, created in
  forward; for L layers a [L,B,H] zeros tensor for h and another for c, whole storage kept)
  + per step t: gates [B,4H] (sigmoid_/tanh_ applied in place on chunks; saved by Mul/Sigmoid/Tanh
  as views), tanh(c_t) [B,H]; + for t < T-1: h_t [B,H] (saved by next step's addmm) and c_t [B,H]
  (saved by next step's forget-gate mul). Bytes per layer = 4*(T*B*I + T*B*5H + (T-1)*B*2H) + h0/c0.
  Check: LSTM(8,8) T=5 B=3 -> 480 + 192 + 5*480 + 4*192 = 3840 B (matches). Inter-layer dropout
  (dropout=p, CPU): one float32 mask [T,B,H]; the layer-2 input saved by addmm is then x*mask.
  Input not requiring grad -> input still saved (W_ih trainable). CUDA: cuDNN (default) saves the input,
  hx/cx, the output and an opaque reserve space (not measurable here); the non-cuDNN CUDA path uses
  `_thnn_fused_lstm_cell` (ThnnFusedLstmCellBackward0 saves input_gates and hidden_gates [B,4H], cx, cy and a [B,4H] workspace per step, plus the per-step matmul inputs x_t and h_{t-1}; see torch_figures.py's lstm_cuda_native_forward).
* **nn.GRU (CPU)**: layer input [T*B,I] + h0 [B,H] + per step: the hidden projection [B,3H] (r,z
  sigmoid_ in place -> saved as views) + three [B,H] tensors (tanh result n_t, the pre-`mul_` copy of
  the hidden-gate chunk, and (h_{t-1} - n_t)) + for t < T-1: h_t. GRU(8,8) T=5 B=3:
  480 + 96 + 5*(288+288) + 4*96 = 3840 B (matches). **nn.RNN(tanh, CPU)**: layer input + h0 + per step
  the tanh result h_t [B,H] (next step's addmm saves the same storage): 480 + 96 + 5*96 = 1056 B.
* **nn.MultiheadAttention (training, non-fast path)**: in_proj linear saves the input ([L*N,E] view;
  batch_first=True transposes to seq-first first -> non-contiguous -> copy saved by MmBackward0),
  q,k,v = chunk(3) of the projection, each made `.contiguous()` (own storage [L,N,E]); q / sqrt(d)
  (new storage, 0-d float64 scalar saved); scores = bmm(q_scaled, k^T) (or baddbmm(mask, ...) with
  attn_mask) saves q_scaled and k; softmax saves its result [N*h,L,S]; dropout (if p>0) float mask
  [N*h,L,S]; bmm(attn, v) saves attn and v; out_proj saves the merged [L*N,E] contiguous copy.
  need_weights=True additionally averages heads (`sum(dim=1) / num_heads`: saves a 0-d int64, 8 B);
  attn_mask adds nothing saved. Total = 4*(E*L*N*5 + N*h*L*S) [+8 scalar] (+dropout mask).

"""


# --------------------------------------------------------------------------- main
def main():
    out = open(sys.argv[1], "w") if len(sys.argv) > 1 else sys.stdout
    w = out.write
    w(provenance.line("tests/tools/saved_catalog.py", {"torch": torch.__version__}) + "\n")
    w("# Saved-tensor catalog (generated)\n\n")
    w("Generated by `tests/tools/saved_catalog.py` with torch %s (CPU), torchvision-independent.\n" % torch.__version__)
    w("Do not edit by hand; regenerate with\n`/usr/bin/python3 tests/tools/saved_catalog.py tests/reference/saved_tensors_catalog.md`.\n\n")
    w("Method: `saved_tensors_hooks` pack hook records every tensor autograd saves during the op; the op's grad_fn "
      "graph is walked and each `_saved_*` tensor attribute is read, the unpack hook reporting which pack record it "
      "came from (exact naming, no heuristics).\n\n")
    w("Columns: *storage* = param/buffer (storage of a module parameter/buffer), input / output (shares storage with "
      "an input / output of the case), new (storage created inside the op); *view* = same (identical tensor) or view "
      "(different shape/stride/offset on the same storage); *storage bytes* = full nbytes of the storage kept alive.\n"
      "The summary line counts distinct storages (by storage data_ptr) excluding param/buffer storages.\n"
      "Inputs that require grad are non-leaf (`leaf.clone()`); fp32 unless noted.\n\n")
    w(FINDINGS)
    cur = None
    for sec, c in CASES:
        if sec != cur:
            w("## %s\n\n" % sec)
            cur = sec
        rows, extra, out_t = run_case(c)
        txt, rows = fmt_case(c, rows, extra, out_t)
        w(txt)
        if "LSTM" in c.title or "GRU" in c.title or "RNN" in c.title or "MHA" in c.title:
            agg = agg_by_gradfn(rows)
            w("Per grad_fn (distinct non-param storages, first saver): " + ", ".join(
                "%s: %d storages / %d B" % (k, v[0], v[1]) for k, v in sorted(agg.items())) + "\n\n")
    if out is not sys.stdout:
        out.close()


if __name__ == "__main__":
    main()
