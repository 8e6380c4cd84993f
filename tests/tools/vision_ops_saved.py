#!/usr/bin/python3
"""What autograd saves for the torchvision-family ops of src/ops/ops_resample.c,
ops_pool.c (3-D), ops_norm.c (batchnorm3d, norms on a permuted input) and
ops_activation.c (stochasticdepth), measured with the method and the table
format of tests/tools/saved_catalog.py (whose run_case/fmt_case it reuses),
under PyTorch 1.13 and 2.x (CPU):

    /usr/bin/python3 tests/tools/vision_ops_saved.py tests/reference/vision_ops_saved_113.md
    ../shared/tools/torch2-chroot python3 tests/tools/vision_ops_saved.py \
        tests/reference/vision_ops_saved_2x.md

Each case also prints the output's shape, dtype, contiguity and whether it
shares its input's storage (a view), which the unit tests
(tests/unit/test_ops_resample.c and friends) read together with the saved
bytes. Inputs are float32 unless noted."""
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, __import__("os").path.dirname(__file__))
import saved_catalog as sc  # noqa: E402  (the helpers; its own cases are not run)
import provenance  # noqa: E402

warnings.filterwarnings("ignore")  # TypedStorage deprecation under 2.x
act = sc.act
CASES = []
SECTION = [""]


def section(name):
    SECTION[0] = name


def case(title, op, inputs, modules=(), note=""):
    def fn():
        ins = inputs()
        for m in modules:
            m.train()
        return dict(op=op, inputs=ins, modules=list(modules))
    CASES.append((SECTION[0], sc.Case(title, fn, note)))


def mod(title, mk, inputs, note=""):
    def fn():
        m = mk()
        m.train()
        return dict(op=lambda *a: m(*a), inputs=inputs(), modules=[m])
    CASES.append((SECTION[0], sc.Case(title, fn, note)))


def stochastic_depth(x, p, mode):
    """torchvision.ops.stochastic_depth (torchvision 0.14 / 0.21, training)."""
    if p == 0.0:
        return x
    survival = 1.0 - p
    size = [x.shape[0]] + [1] * (x.ndim - 1) if mode == "row" else [1] * x.ndim
    noise = torch.empty(size, dtype=x.dtype, device=x.device).bernoulli_(survival)
    if survival > 0.0:
        noise.div_(survival)
    return x * noise


# ---- stochastic depth
section("StochasticDepth (torchvision.ops.stochastic_depth, training)")
case("stochastic_depth(p=0.2, mode='row') on x[4,8,5,5]", lambda x: stochastic_depth(x, 0.2, "row"),
     lambda: [act(4, 8, 5, 5)])
case("stochastic_depth(p=0.2, mode='batch') on x[4,8,5,5]", lambda x: stochastic_depth(x, 0.2, "batch"),
     lambda: [act(4, 8, 5, 5)])
case("stochastic_depth(p=1.0, mode='row') on x[4,8,5,5]", lambda x: stochastic_depth(x, 1.0, "row"),
     lambda: [act(4, 8, 5, 5)])
case("stochastic_depth(p=0.0, mode='row') on x[4,8,5,5]", lambda x: stochastic_depth(x, 0.0, "row"),
     lambda: [act(4, 8, 5, 5)])
case("stochastic_depth(p=0.2, mode='row') on x[4,6,10] (Swin, channel-last)",
     lambda x: stochastic_depth(x, 0.2, "row"), lambda: [act(4, 6, 10)])

# ---- interpolate / upsample
section("Interpolate / Upsample")
x4 = lambda: [act(2, 3, 5, 7)]  # noqa: E731
case("F.interpolate(scale_factor=2, mode='nearest') on x[2,3,5,7]",
     lambda x: F.interpolate(x, scale_factor=2.0, mode="nearest"), x4)
case("F.interpolate(scale_factor=1.5, mode='nearest') on x[2,3,5,7] (floor)",
     lambda x: F.interpolate(x, scale_factor=1.5, mode="nearest"), x4)
case("F.interpolate(size=(9,4), mode='nearest') on x[2,3,5,7]",
     lambda x: F.interpolate(x, size=(9, 4), mode="nearest"), x4)
case("F.interpolate(size=(9,4), mode='nearest-exact') on x[2,3,5,7]",
     lambda x: F.interpolate(x, size=(9, 4), mode="nearest-exact"), x4)
case("F.interpolate(size=(9,4), mode='bilinear', align_corners=False) on x[2,3,5,7]",
     lambda x: F.interpolate(x, size=(9, 4), mode="bilinear", align_corners=False), x4)
case("F.interpolate(scale_factor=2, mode='bilinear', align_corners=True) on x[2,3,5,7]",
     lambda x: F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=True), x4)
case("F.interpolate(size=(9,4), mode='bicubic') on x[2,3,5,7]",
     lambda x: F.interpolate(x, size=(9, 4), mode="bicubic", align_corners=False), x4)
case("F.interpolate(size=(9,4), mode='bilinear', antialias=True) on x[2,3,5,7]",
     lambda x: F.interpolate(x, size=(9, 4), mode="bilinear", antialias=True), x4)
case("F.interpolate(size=11, mode='linear') on x[2,3,5]",
     lambda x: F.interpolate(x, size=11, mode="linear"), lambda: [act(2, 3, 5)])
case("F.interpolate(scale_factor=(1,2,2), mode='trilinear') on x[2,3,4,5,6]",
     lambda x: F.interpolate(x, scale_factor=(1.0, 2.0, 2.0), mode="trilinear"), lambda: [act(2, 3, 4, 5, 6)])
case("F.interpolate(scale_factor=2, mode='nearest') on x[2,3,4,5,6] (3-D)",
     lambda x: F.interpolate(x, scale_factor=2.0, mode="nearest"), lambda: [act(2, 3, 4, 5, 6)])
case("F.interpolate(size=(2,3), mode='area') on x[2,3,5,7]",
     lambda x: F.interpolate(x, size=(2, 3), mode="area"), x4)
case("F.interpolate(scale_factor=0.5, mode='bilinear', recompute_scale_factor=True) on x[2,3,5,7]",
     lambda x: F.interpolate(x, scale_factor=0.5, mode="bilinear", recompute_scale_factor=True), x4)
case("F.interpolate(scale_factor=2, mode='bilinear') on x[2,3,5,7] input does NOT require grad",
     lambda x: F.interpolate(x, scale_factor=2.0, mode="bilinear"), lambda: [act(2, 3, 5, 7, rg=False)])
mod("nn.Upsample(scale_factor=2, mode='nearest') on x[2,3,5,7]",
    lambda: nn.Upsample(scale_factor=2, mode="nearest"), x4)
mod("nn.UpsamplingNearest2d(scale_factor=2) on x[2,3,5,7]", lambda: nn.UpsamplingNearest2d(scale_factor=2), x4)
mod("nn.UpsamplingBilinear2d(size=(9,4)) on x[2,3,5,7]", lambda: nn.UpsamplingBilinear2d(size=(9, 4)), x4)

# ---- 3-D family
section("3-D batch norm and pooling")
x5 = lambda: [act(2, 4, 3, 6, 6)]  # noqa: E731
mod("BatchNorm3d(4) train, x[2,4,3,6,6]", lambda: nn.BatchNorm3d(4), x5)
mod("MaxPool3d(2) on x[2,4,3,6,6]", lambda: nn.MaxPool3d(2), x5)
mod("MaxPool3d((1,3,3),(1,2,2),(0,1,1)) on x[2,4,3,6,6] (r3d stem)",
    lambda: nn.MaxPool3d((1, 3, 3), (1, 2, 2), (0, 1, 1)), x5)
mod("MaxPool3d(3,2,ceil_mode=True) on x[2,4,3,6,6]", lambda: nn.MaxPool3d(3, 2, ceil_mode=True), x5)
mod("AvgPool3d(2) on x[2,4,3,6,6]", lambda: nn.AvgPool3d(2), x5)
mod("AdaptiveAvgPool3d(1) on x[2,4,3,6,6]", lambda: nn.AdaptiveAvgPool3d(1), x5)
mod("AdaptiveAvgPool3d((1,2,2)) on x[2,4,3,6,6]", lambda: nn.AdaptiveAvgPool3d((1, 2, 2)), x5)
mod("AdaptiveMaxPool3d((1,2,2)) on x[2,4,3,6,6]", lambda: nn.AdaptiveMaxPool3d((1, 2, 2)), x5)

# ---- pixel shuffle
section("PixelShuffle / PixelUnshuffle")
mod("PixelShuffle(2) on x[2,8,3,5]", lambda: nn.PixelShuffle(2), lambda: [act(2, 8, 3, 5)])
mod("PixelUnshuffle(2) on x[2,2,6,4]", lambda: nn.PixelUnshuffle(2), lambda: [act(2, 2, 6, 4)])

# ---- pad
section("F.pad")
case("F.pad(x, (1,2)) constant on x[2,3,5,7]", lambda x: F.pad(x, (1, 2)), x4)
case("F.pad(x, (1,2,3,0), value=1.5) constant on x[2,3,5,7]", lambda x: F.pad(x, (1, 2, 3, 0), value=1.5), x4)
case("F.pad(x, (-1,-2)) constant (crop only) on x[2,3,5,7]", lambda x: F.pad(x, (-1, -2)), x4)
case("F.pad(x, (2,-1,0,1)) constant (pad and crop) on x[2,3,5,7]", lambda x: F.pad(x, (2, -1, 0, 1)), x4)
case("F.pad(x, (1,2,3,0), mode='reflect') on x[2,3,5,7]", lambda x: F.pad(x, (1, 2, 3, 0), mode="reflect"), x4)
case("F.pad(x, (1,2,3,0), mode='replicate') on x[2,3,5,7]",
     lambda x: F.pad(x, (1, 2, 3, 0), mode="replicate"), x4)
case("F.pad(x, (1,2,3,0), mode='circular') on x[2,3,5,7]", lambda x: F.pad(x, (1, 2, 3, 0), mode="circular"), x4)
case("F.pad(x, (1,2), mode='reflect') on x[2,3,5]", lambda x: F.pad(x, (1, 2), mode="reflect"),
     lambda: [act(2, 3, 5)])
case("F.pad(x, (1,1,1,1,1,1), mode='replicate') on x[2,3,4,5,6]",
     lambda x: F.pad(x, (1, 1, 1, 1, 1, 1), mode="replicate"), lambda: [act(2, 3, 4, 5, 6)])
case("F.pad(x, (0,0,1,2,3,1)) constant on the channel-last x[2,5,7,6] (Swin window padding)",
     lambda x: F.pad(x, (0, 0, 1, 2, 3, 1)), lambda: [act(2, 5, 7, 6)])

# ---- norms on a permuted input
section("Norms on a non-contiguous (permuted, channel-last) input")
perm = lambda: [act(2, 6, 4, 5).permute(0, 2, 3, 1)]  # noqa: E731
mod("LayerNorm(6) on x[2,6,4,5].permute(0,2,3,1) (ConvNeXt Permute + LayerNorm)", lambda: nn.LayerNorm(6), perm)


def _ln2d():
    ln = nn.LayerNorm(6, eps=1e-6)

    def f(x):  # torchvision.models.convnext.LayerNorm2d.forward
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, ln.normalized_shape, ln.weight, ln.bias, ln.eps)
        return x.permute(0, 3, 1, 2)
    return dict(op=f, inputs=[act(2, 6, 4, 5)], modules=[ln])


CASES.append((SECTION[0], sc.Case("ConvNeXt LayerNorm2d(6) on x[2,6,4,5] (permute, layer_norm, permute back)", _ln2d)))
mod("GroupNorm(2,6) on x[2,5,6,4].permute(0,2,1,3)", lambda: nn.GroupNorm(2, 6),
    lambda: [act(2, 5, 6, 4).permute(0, 2, 1, 3)])
mod("BatchNorm2d(6) on x[2,5,6,4].permute(0,2,1,3)", lambda: nn.BatchNorm2d(6),
    lambda: [act(2, 5, 6, 4).permute(0, 2, 1, 3)])


def out_info(out_t, ins):
    in_ptrs = {sc.sptr(t) for t in sc.flat_tensors(ins)}
    parts = []
    for t in out_t:
        view = "view of the input" if sc.sptr(t) in in_ptrs else "new storage"
        parts.append("%s %s %s, %s" % (sc.tshape(t), sc.dtname(t.dtype),
                                       "contiguous" if t.is_contiguous() else "strides %s" % (t.stride(),), view))
    return "; ".join(parts)


def main():
    out = open(sys.argv[1], "w") if len(sys.argv) > 1 else sys.stdout
    w = out.write
    w(provenance.line("tests/tools/vision_ops_saved.py", {"torch": torch.__version__}) + "\n")
    w("# Saved tensors of the torchvision-family ops (generated)\n\n")
    w("Generated by `tests/tools/vision_ops_saved.py` with torch %s (CPU); the method and columns are those of "
      "`saved_tensors_catalog.md`. Do not edit by hand.\n\n" % torch.__version__.split("+")[0])
    cur = None
    for sec, c in CASES:
        if sec != cur:
            w("## %s\n\n" % sec)
            cur = sec
        torch.manual_seed(0)
        spec = c.fn()
        ins = spec["inputs"]
        c.fn = (lambda spec=spec: spec)
        rows, extra, out_t = sc.run_case(c)
        txt, _ = sc.fmt_case(c, rows, extra, out_t)
        head, _, rest = txt.partition("Outputs: ")
        line, _, rest = rest.partition("\n")
        w(head + "Outputs: " + out_info(out_t, ins) + "\n" + rest)
    if out is not sys.stdout:
        out.close()


if __name__ == "__main__":
    main()
