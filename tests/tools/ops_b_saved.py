"""ops_b_saved.py - what autograd saves for backward for the ops of
src/ops/ops_index.c, ops_view.c, ops_rearrange.c, ops_einsum.c, ops_unary.c,
ops_vecnorm.c, ops_factory.c, ops_write.c and ops_sample.c, measured with
torch.autograd.graph.saved_tensors_hooks on the CPU under both PyTorch
versions memest models:

    /usr/bin/python3 tests/tools/ops_b_saved.py > tests/reference/ops_b_saved_113.txt
    ../shared/tools/torch2-chroot python3 tests/tools/ops_b_saved.py \
        > tests/reference/ops_b_saved_26.txt

Inputs that require grad are non-leaf float32 activations (leaf.clone()),
as in saved_catalog.py. One line per case: the case, its outputs (sizes,
dtype, "view" when an output shares an input's storage), the saved bytes
(distinct storages, as memest counts them) and each saved tensor (sizes,
dtype, in<i> / out<k> / new, the storage's bytes). The unit tests
(tests/unit/test_ops_index.c ...) take their expected figures from here
and from the hand calculations they write out."""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import provenance  # noqa: E402

torch.set_num_threads(1)


def act(*shape, rg=True, dtype=torch.float32):
    base = torch.randn(*shape).to(dtype)
    if rg:
        base.requires_grad_(True)
        return base.clone()
    return base


def storage(t):
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()


def sptr(t):
    return storage(t).data_ptr()


def sbytes(t):
    return storage(t).nbytes()


def sz(t):
    return "[" + ",".join(str(s) for s in t.shape) + "]"


def dt(t):
    return str(t.dtype).replace("torch.", "")


def flat(o):
    if isinstance(o, torch.Tensor):
        return [o]
    if isinstance(o, (list, tuple)):
        return [t for e in o for t in flat(e)]
    return []


def case(name, fn, *inputs):
    packs = []

    def pack(t):
        packs.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(*inputs)
    outs = flat(out)
    inp = {sptr(t): i for i, t in enumerate(inputs) if isinstance(t, torch.Tensor)}
    outp = {sptr(t): k for k, t in enumerate(outs)}
    seen = {}
    desc = []
    for p in packs:
        ptr = sptr(p)
        if ptr in inp:
            rel = "in%d" % inp[ptr]
        elif ptr in outp:
            rel = "out%d" % outp[ptr]
        else:
            rel = "new"
        desc.append("%s %s %s %d" % (sz(p), dt(p), rel, sbytes(p)))
        seen[ptr] = sbytes(p)
    od = []
    for t in outs:
        v = " view" if sptr(t) in inp else ""
        od.append("%s %s%s" % (sz(t), dt(t), v))
    print("%-34s out %s | saved %d | %s" % (name, "; ".join(od), sum(seen.values()),
                                            "; ".join(sorted(desc)) if desc else "-"))


def main():
    print(provenance.line("tests/tools/ops_b_saved.py", {"torch": torch.__version__}, markdown=False))
    print("# torch", torch.__version__)
    torch.manual_seed(0)
    x = act(2, 8, 6)
    case("slice dim1 2:7:2", lambda x: x[:, 2:7:2], x)
    case("roll shifts(1,-2) dims(1,2)", lambda x: torch.roll(x, (1, -2), (1, 2)), x)
    case("roll shifts 3 flat", lambda x: torch.roll(x, 3), x)
    case("unbind dim1", lambda x: torch.unbind(x[:, :3], 1), x)
    case("tensor_split 3 dim1", lambda x: torch.tensor_split(x, 3, 1), x)
    case("tensor_split [1,5] dim2", lambda x: torch.tensor_split(x, [1, 5], 2), x)
    case("repeat_interleave 3 dim1", lambda x: torch.repeat_interleave(x, 3, 1), x)
    case("repeat_interleave 2 flat", lambda x: torch.repeat_interleave(x, 2), x)
    case("tile / repeat (2,1,3)", lambda x: x.repeat(2, 1, 3), x)
    case("tile (3,)", lambda x: torch.tile(x, (3,)), x)
    idx = torch.randint(0, 6, (2, 8, 4))
    case("gather dim2", lambda x, i: torch.gather(x, 2, i), x, idx)
    i1 = torch.randint(0, 8, (5,))
    case("index_select dim1", lambda x, i: torch.index_select(x, 1, i), x, i1)
    case("index x[:, idx]", lambda x, i: x[:, i], x, i1)
    ia, ib = torch.randint(0, 8, (3, 4)), torch.randint(0, 6, (3, 4))
    case("index x[:, ia, ib]", lambda x, a, b: x[:, a, b], x, ia, ib)
    case("index x[ia] (3-D idx)", lambda x, a: x[a.clamp(max=1)], x, ia)
    m = torch.rand(2, 8, 6) > 0.5
    case("index x[mask]", lambda x, mm: x[mm], x, m)
    y = act(2, 8, 6)
    case("where(c, x, y)", lambda c, x, y: torch.where(c, x, y), m, x, y)
    case("where(c, x, 0.)", lambda c, x: torch.where(c, x, 0.0), m, x)
    case("clamp min", lambda x: torch.clamp(x, min=0.1), x)
    case("clamp min max", lambda x: torch.clamp(x, -1, 1), x)
    case("clamp_ min max", lambda x: x.clamp_(-1, 1), act(2, 8, 6))
    for nm in ("sqrt", "rsqrt", "exp", "log", "neg", "abs", "sin", "cos", "reciprocal", "erf"):
        case(nm, lambda x, nm=nm: getattr(torch, nm)(x), x)
        case(nm + "_", lambda x, nm=nm: getattr(x, nm + "_")(), act(2, 8, 6))
    for nm in ("eq", "ne", "lt", "le", "gt", "ge"):
        case(nm + " tensor", lambda x, y, nm=nm: getattr(torch, nm)(x, y), x, y)
    case("lt number", lambda x: x < 0.5, x)
    case("pow tensor", lambda x, y: torch.pow(x, y), x, y)
    case("pow tensor bcast", lambda x, y: torch.pow(x, y), x, act(6))
    case("pow tensor, exponent frozen", lambda x, y: torch.pow(x, y), x, act(2, 8, 6, rg=False))
    case("pow tensor, base frozen", lambda x, y: torch.pow(x, y), act(2, 8, 6, rg=False), y)
    case("normalize p2 dim1", lambda x: F.normalize(x, dim=1), x)
    case("normalize p2 dim-1", lambda x: F.normalize(x, dim=-1), x)
    case("normalize p1", lambda x: F.normalize(x, p=1.0, dim=1), x)
    case("norm dim-1 keepdim", lambda x: x.norm(dim=-1, keepdim=True), x)
    case("norm all", lambda x: x.norm(), x)
    case("linalg_vector_norm dim-1", lambda x: torch.linalg.vector_norm(x, dim=-1), x)
    case("linalg_vector_norm ord1 dim1", lambda x: torch.linalg.vector_norm(x, ord=1, dim=1), x)
    case("full_like", lambda x: torch.full_like(x, 2.0), x)
    case("zeros_like", lambda x: torch.zeros_like(x), x)
    # einsum: MaxViT, MViT, attention, and layouts that copy
    q, k = act(2, 3, 4, 5, 8), act(2, 3, 4, 6, 8)
    case("einsum BGHID,BGHJD->BGHIJ", lambda a, b: torch.einsum("B G H I D, B G H J D -> B G H I J", a, b), q, k)
    p, v = act(2, 3, 4, 5, 6), act(2, 3, 4, 6, 8)
    case("einsum BGHIJ,BGHJD->BGHID", lambda a, b: torch.einsum("B G H I J, B G H J D -> B G H I D", a, b), p, v)
    rq, rh = act(2, 2, 3, 4, 5, 8), act(4, 7, 8)
    case("einsum bythwc,hkc->bythwk", lambda a, b: torch.einsum("bythwc,hkc->bythwk", a, b), rq, rh)
    rw = act(5, 7, 8)
    case("einsum bythwc,wkc->bythwk", lambda a, b: torch.einsum("bythwc,wkc->bythwk", a, b), rq, rw)
    rt = act(3, 7, 8)
    case("einsum bythwc,tkc->bythwk", lambda a, b: torch.einsum("bythwc,tkc->bythwk", a, b), rq, rt)
    a, b = act(2, 4, 5, 8), act(2, 4, 6, 8)
    case("einsum bhid,bhjd->bhij", lambda a, b: torch.einsum("bhid,bhjd->bhij", a, b), a, b)
    case("einsum bhid,bhjd (implicit)", lambda a, b: torch.einsum("bhid,bhjd", a, b), a, b)
    case("einsum ...id,...jd->...ij", lambda a, b: torch.einsum("...id,...jd->...ij", a, b), a, b)
    case("einsum bhid,bhjd->bhij b frozen", lambda a, b: torch.einsum("bhid,bhjd->bhij", a, b), a, act(2, 4, 6, 8, rg=False))
    m1, m2 = act(5, 8), act(8, 6)
    case("einsum ij,jk->ik", lambda a, b: torch.einsum("ij,jk->ik", a, b), m1, m2)
    case("einsum ij,jk->ki", lambda a, b: torch.einsum("ij,jk->ki", a, b), m1, m2)
    case("einsum ij,kj->ik", lambda a, b: torch.einsum("ij,kj->ik", a, b), m1, act(6, 8))
    case("einsum ji,jk->ik", lambda a, b: torch.einsum("ji,jk->ik", a, b), act(8, 5), m2)
    case("einsum bij,bjk->bik", lambda a, b: torch.einsum("bij,bjk->bik", a, b), act(2, 5, 8), act(2, 8, 6))
    case("einsum i,j->ij (outer)", lambda a, b: torch.einsum("i,j->ij", a, b), act(5), act(6))
    case("einsum bi,bi->b", lambda a, b: torch.einsum("bi,bi->b", a, b), act(4, 5), act(4, 5))
    case("einsum ij->ji", lambda a: torch.einsum("ij->ji", a), m1)
    case("einsum ij->j", lambda a: torch.einsum("ij->j", a), m1)
    case("einsum ii->i", lambda a: torch.einsum("ii->i", a), act(5, 5))
    case("einsum bij,jk,bkl->bil", lambda a, b, c: torch.einsum("bij,jk,bkl->bil", a, b, c), act(2, 5, 8), act(8, 6), act(2, 6, 3))
    case("einsum bijc,bjc->bic (sum j i)", lambda a, b: torch.einsum("bnc,bmc->bnm", a, b), act(2, 5, 8), act(2, 6, 8))
    case("einsum nchw,nc->nhw", lambda a, b: torch.einsum("nchw,nc->nhw", a, b), act(2, 8, 4, 5), act(2, 8))
    writes()
    samples()


def writes():
    """ops_write.c: clone, fill_/zero_, copy_ and the writes through a view
    (CopySlices), on fresh non-leaf activations (an in-place op on a view
    needs one)."""
    case("clone", lambda x: x.clone(), act(2, 8, 6))
    case("clone of a transpose", lambda x: x.transpose(1, 2).clone(), act(2, 8, 6))
    case("zero_", lambda x: x.zero_(), act(2, 8, 6))
    case("fill_ 2.5", lambda x: x.fill_(2.5), act(2, 8, 6))
    case("copy_ same sizes", lambda x, y: x.copy_(y), act(2, 8, 6), act(2, 8, 6))
    case("copy_ broadcast [6]", lambda x, y: x.copy_(y), act(2, 8, 6), act(6))
    case("x[:, 1:] += y", lambda x, y: (x[:, 1:].add_(y), x)[1], act(2, 8, 6), act(2, 7, 6))
    case("x[:, 0] = y", lambda x, y: (x.__setitem__((slice(None), 0), y), x)[1], act(2, 8, 6), act(2, 6))
    case("x[..., :2] = 0", lambda x: (x.__setitem__((Ellipsis, slice(None, 2)), 0.0), x)[1], act(2, 8, 6))
    case("b = w.clone(); b[2:4].zero_()", lambda w: (lambda b: (b[2:4].zero_(), b)[1])(w.clone()), act(6))


def samples():
    """ops_sample.c: F.grid_sample (each mode and padding mode; the grid or
    the input frozen; 5-D) and F.unfold / nn.Unfold (4-D and unbatched)."""
    import warnings
    warnings.simplefilter("ignore")  # align_corners=None's UserWarning
    x, g = act(2, 3, 5, 7), act(2, 4, 6, 2)
    case("grid_sample bilinear", lambda x, g: F.grid_sample(x, g), x, g)
    case("grid_sample bilinear align_corners", lambda x, g: F.grid_sample(x, g, align_corners=True), x, g)
    case("grid_sample nearest border", lambda x, g: F.grid_sample(x, g, "nearest", "border", False), x, g)
    case("grid_sample bicubic reflection", lambda x, g: F.grid_sample(x, g, "bicubic", "reflection", False), x, g)
    case("grid_sample grid frozen", lambda x, g: F.grid_sample(x, g, align_corners=False), x, act(2, 4, 6, 2, rg=False))
    case("grid_sample input frozen", lambda x, g: F.grid_sample(x, g, align_corners=False), act(2, 3, 5, 7, rg=False), g)
    case("grid_sample 5-D", lambda x, g: F.grid_sample(x, g, align_corners=False), act(2, 3, 4, 5, 6), act(2, 3, 4, 5, 3))
    case("unfold k3", lambda x: F.unfold(x, 3), x)
    case("unfold k(2,3) d2 p1 s2", lambda x: F.unfold(x, (2, 3), dilation=2, padding=1, stride=2), x)
    case("unfold unbatched k3", lambda x: F.unfold(x, 3), act(3, 5, 7))
    case("nn.Unfold k2 s2", torch.nn.Unfold(kernel_size=2, stride=2), x)


if __name__ == "__main__":
    main()
