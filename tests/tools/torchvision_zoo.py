#!/usr/bin/python3
"""Every torchvision builder measured in real PyTorch at batch 2 and exported to a memest file (issue 13).

    /usr/bin/python3 tests/tools/torchvision_zoo.py                 # torch 1.13 / torchvision 0.14
    ../shared/tools/torch2-chroot python3 tests/tools/torchvision_zoo.py   # torch 2.6 / torchvision 0.21
    ... torchvision_zoo.py --models resnet18,vit_b_16 --redo export  # only these, export again
    ... torchvision_zoo.py --stages export --redo export            # every model's export again (new ops)

(run from the checkout root). Results go to tests/reference/zoo_torch<113|26>.json (PyTorch's figures,
the exporter's outcome per model) and tests/zoo/torch<113|26>/<model>.json (the exported memest files);
tests/zoo/check.cmake replays them through memest without PyTorch and tests/tools/zoo_table.py writes the
tables of doc/torchvision-zoo.md. The reference file is also the cache: a rerun measures only the stages a model lacks
(--redo STAGE[,STAGE] forces them again). Models run in child processes (a few per child to share torch's
import time; a crash, an out-of-memory kill or a timeout loses only that model, recorded as its error),
with an address-space limit (--mem-gib, default 16) and a per-model time limit (--timeout, seconds).

Models: torchvision.models.list_models() (classification, segmentation, video, optical flow, detection)
with weights=None and the builder's defaults, built after torch.manual_seed(0), fp32, model.train().
quantized_* (issue 32, item 6): the builders' default, quantize=False, the float quantizable model (QuantStub,
DeQuantStub, FloatFunctional adds), measured and exported as the others, with its float model's input; the
converted int8 model (quantize=True) is inference only and refused by the exporter.
Inputs, batch 2 (per-sample shapes in INPUTS below): classification 3x224x224 (inception_v3 3x299x299, the
size its builder documents; the EfficientNets' larger eval sizes are not used: the rules memest applies do
not depend on the resolution, and 224 keeps the biggest steps within this machine's memory and time);
segmentation 3x224x224 (torchvision evaluates at 520; 224 for the same reason); video 3x16x112x112 (the
R(2+1)D family's documented clip) and 3x16x224x224 for S3D, MViT and Swin3D, whose pooling / position
embeddings require it; RAFT two 3x224x224 images; detection a list of two 3x224x224 images with one box
each (training mode needs targets).

Stages per model (each stored as soon as it is done):
  static   parameters (sum of numel over model.parameters(), trainable), buffers;
  export   memest_export.export(model, inputs, name, batch_dim=0, train=True) (src/export, helper EXPORT's
           library) -> tests/zoo/<tag>/<model>.json, or the exporter's error;
  forward  forward MACs and saved activations of one forward pass (train mode): saved activations exactly
           as tests/tools/torch_figures.py measures them (its measure(), imported: saved_tensors_hooks,
           distinct storages, parameters and buffers excluded, nn.Dropout masks counted as CUDA's 1-byte
           bool masks); MACs counted by a TorchDispatchMode below autograd (MacCounter): convolution
           (N * C_out * C_in/groups * prod(kernel) * output positions; input positions when transposed),
           mm / addmm / bmm / baddbmm (matmul, linear and einsum lower to these; addmm's bias add is not a
           MAC) and the fused SDPA kernels (B * H * L * S * (D + Dv)), i.e. what memest counts
           (src/ops/ops_conv.c, ops_linear.c, ops_elementwise.c's matmul/bmm, ops_sdpa.c); under 2.6 also
           cross-checked against torch.utils.flop_counter.FlopCounterMode (flops / 2, macs_flop_counter);
  peak     the training-step peak at batch 2, SGD(lr=1e-3) for-loop (memest --optim sgd --optim-impl
           for-loop): under 1.13 tests/tools/torch_peak.py's measure_train (imported: its recorder, the
           profiler's allocator events, its CUDA corrections, step 2 of the loop it documents); under 2.6
           tests/tools/hf_peak.py's Live storage accounting (imported) in the same step (Step26 below), with
           CPU dropout noise counted as CUDA's bool mask. Loss: cross-entropy on the primary output
           (classification and video logits [N, K] with target [N]; segmentation out["out"] [N, C, H, W]
           with classes along dim 1 and target [N, H, W]; GoogLeNet's / Inception's main logits, their aux
           heads' outputs being dropped). Not measured for RAFT (its sequence loss over the 12 flow
           predictions is no memest loss) and detection (data-dependent, see below).
Speed: this machine's netlib BLAS runs ~1 GFLOP/s, so the four BLAS ops (as torch_peak.py does) and the
convolutions (forward and convolution_backward) are executed as allocation-equivalent stubs: a fresh
zero-filled tensor of the exact shape, dtype and memory format the real kernel returns. No figure depends
on tensor values; checked every run on resnet18, mobilenet_v2 and convnext_tiny ("stub_verification":
saved bytes, MACs and peak identical with the real kernels).
Detection models are not measured beyond parameters: their training forward is data-dependent (anchors
matched to targets, proposals kept by NMS, per-image sampling), neither FX nor torch.export can trace it,
and its figures depend on tensor values (models/fasterrcnn_resnet50_fpn.json is written by hand instead).
"""
import argparse
import gc
import inspect
import json
import os
import resource
import signal
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "src", "export"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402
from provenance import stamp  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils._pytree import tree_flatten  # noqa: E402

torch.set_num_threads(2)
torch.set_flush_denormal(True)
TORCH2 = int(torch.__version__.split(".")[0]) >= 2
TAG = "torch26" if TORCH2 else "torch113"
B = 2
STAGES = ("static", "export", "forward", "peak")

SEGMENTATION = set(torchvision.models.list_models(torchvision.models.segmentation))
VIDEO = set(torchvision.models.list_models(torchvision.models.video))
FLOW = set(torchvision.models.list_models(torchvision.models.optical_flow))
DETECTION = set(torchvision.models.list_models(torchvision.models.detection))
QUANTIZED = set(torchvision.models.list_models(torchvision.models.quantization))
VIDEO_224 = ("s3d", "mvit_v1_b", "mvit_v2_s", "swin3d_t", "swin3d_s", "swin3d_b")


def family(name):
    for fam, names in (("segmentation", SEGMENTATION), ("video", VIDEO), ("optical_flow", FLOW),
                       ("detection", DETECTION), ("quantized", QUANTIZED)):
        if name in names:
            return fam
    return "classification"


def sample_shapes(name):
    """Per-sample input shapes (the batch of 2 is added in front); a quantized_* model takes its float
    model's."""
    if family(name) == "quantized":
        name = name[len("quantized_"):]
    fam = family(name)
    if fam == "video":
        return [[3, 16, 224, 224]] if name in VIDEO_224 else [[3, 16, 112, 112]]
    if fam == "optical_flow":
        return [[3, 224, 224], [3, 224, 224]]
    if name == "inception_v3":
        return [[3, 299, 299]]
    return [[3, 224, 224]]


# measured last (the longest steps; a time-limited run covers the others first)
HEAVY = ("convnext_large", "deeplabv3_resnet101", "densenet161", "densenet201", "efficientnet_b5",
         "efficientnet_b6", "efficientnet_b7", "quantized_resnext101_32x8d", "quantized_resnext101_64x4d", "efficientnet_v2_m", "efficientnet_v2_l", "fcn_resnet101",
         "maxvit_t", "mvit_v1_b", "mvit_v2_s", "raft_large", "regnet_x_16gf", "regnet_x_32gf", "regnet_y_16gf",
         "regnet_y_32gf", "regnet_y_128gf", "resnext101_32x8d", "resnext101_64x4d", "s3d", "swin_b", "swin_v2_b",
         "swin3d_s", "swin3d_b", "vit_l_16", "vit_l_32", "vit_h_14", "wide_resnet101_2")


def all_models():
    names = list(torchvision.models.list_models())
    return sorted(names, key=lambda m: (family(m) == "detection", m in HEAVY, HEAVY.index(m) if m in HEAVY else 0))


def _no_init(tensor, *args, **kwargs):
    return tensor


def build(name):
    """The builder with weights=None (and weights_backbone=None where it has one: segmentation and
    detection default to ImageNet backbone weights), its weight initialisation skipped: every nn.init
    function is a no-op while it runs and the parameters are zeroed (nothing measured depends on values; the big models' random
    initialisation took most of their time on this machine)."""
    torch.manual_seed(0)
    kw = {"weights": None}
    if "weights_backbone" in inspect.signature(torchvision.models.get_model_builder(name)).parameters:
        kw["weights_backbone"] = None
    saved = {}
    for k in dir(nn.init):
        f = getattr(nn.init, k)
        if k.endswith("_") and not k.startswith("_") and callable(f):
            saved[k] = f
            setattr(nn.init, k, _no_init)
    try:
        model = torchvision.models.get_model(name, **kw)
    finally:
        for k, f in saved.items():
            setattr(nn.init, k, f)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()  # defined values (no NaN from uninitialised memory)
    model.train()
    return model


def make_inputs(name):
    torch.manual_seed(0)
    xs = [torch.randn([B] + s) for s in sample_shapes(name)]
    if family(name) == "detection":
        imgs = list(xs[0])
        targets = [{"boxes": torch.tensor([[10.0, 20.0, 100.0, 120.0]]), "labels": torch.tensor([1])}
                   for _ in imgs]
        return (imgs, targets)
    return tuple(xs)


def primary(name, out):
    """The output the training loss is computed on."""
    if isinstance(out, dict):
        return out["out"]
    if isinstance(out, (tuple, list)):
        return out[-1] if family(name) == "optical_flow" else out[0]
    return out


class Flat(nn.Module):
    """Every output tensor as a tuple (segmentation's dict, GoogLeNet's namedtuple) for torch_figures."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *xs):
        out = self.model(*xs)
        if isinstance(out, dict):
            return tuple(out.values())
        return out


class Primary(nn.Module):
    """The model returning only the loss's input (other outputs are dropped as the step drops them)."""

    def __init__(self, model, name):
        super().__init__()
        self.model, self.name = model, name

    def forward(self, x):
        return primary(self.name, self.model(x))


def make_target(name, out):
    torch.manual_seed(1)
    if family(name) == "segmentation":
        n, c = out.shape[0], out.shape[1]
        return torch.randint(0, c, (n,) + tuple(out.shape[2:]), dtype=torch.long)
    return torch.randint(0, out.shape[-1], tuple(out.shape[:-1]), dtype=torch.long)


def loss_fn(o, t):
    """nn.CrossEntropyLoss: classes along dim 1 (the logits' last dim for [N, K])."""
    return F.cross_entropy(o, t)


# --------------------------------------------------------------------------- stubs and MACs
CONV = "aten.convolution.default"
CONV_BWD = "aten.convolution_backward.default"
BLAS = ("aten.mm.default", "aten.addmm.default", "aten.bmm.default", "aten.baddbmm.default")
STUBBED = BLAS + (CONV, CONV_BWD)


def _conv_out_shape(x, w, stride, padding, dilation, transposed, output_padding, groups):
    nd = w.dim() - 2
    rep = (lambda v: list(v) * nd if len(v) == 1 else list(v))
    stride, padding, dilation, output_padding = rep(stride), rep(padding), rep(dilation), rep(output_padding)
    size = [x.shape[0], w.shape[1] * groups if transposed else w.shape[0]]
    for i in range(nd):
        n, k = x.shape[2 + i], w.shape[2 + i]
        if transposed:
            size.append((n - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k - 1) + output_padding[i] + 1)
        else:
            size.append((n + 2 * padding[i] - dilation[i] * (k - 1) - 1) // stride[i] + 1)
    return size


def _memory_format(x, w):
    """The memory format CPU convolution returns (ATen's mkldnn_conv_suggest_memory_format /
    the slow path: channels-last when the input or the weight is channels-last)."""
    for t in (x, w):
        if t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last) and not t.is_contiguous():
            return torch.channels_last
        if t.dim() == 5 and t.is_contiguous(memory_format=torch.channels_last_3d) and not t.is_contiguous():
            return torch.channels_last_3d
    return torch.contiguous_format


def stub(name, args):
    """Allocation-equivalent result of one stubbed op (zero-filled: no value is used by any figure)."""
    if name == "aten.mm.default":
        a, b = args[0], args[1]
        return torch.zeros((a.shape[0], b.shape[1]), dtype=torch.result_type(a, b))
    if name == "aten.addmm.default":
        a, b = args[1], args[2]
        return torch.zeros((a.shape[0], b.shape[1]), dtype=torch.result_type(a, b))
    if name == "aten.bmm.default":
        a, b = args[0], args[1]
        return torch.zeros((a.shape[0], a.shape[1], b.shape[2]), dtype=torch.result_type(a, b))
    if name == "aten.baddbmm.default":
        a, b = args[1], args[2]
        return torch.zeros((a.shape[0], a.shape[1], b.shape[2]), dtype=torch.result_type(a, b))
    if name == CONV:
        x, w = args[0], args[1]
        shape = _conv_out_shape(x, w, *args[3:9])
        return torch.empty(shape, dtype=x.dtype, memory_format=_memory_format(x, w)).zero_()
    if name == CONV_BWD:
        go, x, w = args[0], args[1], args[2]
        mask = args[10]
        fmt = _memory_format(x, w)
        gi = torch.empty(x.shape, dtype=x.dtype, memory_format=fmt).zero_() if mask[0] else None
        gw = torch.empty(w.shape, dtype=w.dtype, memory_format=fmt).zero_() if mask[1] else None
        gb = torch.zeros((w.shape[1] * args[9] if args[7] else w.shape[0],), dtype=go.dtype) if mask[2] else None
        return (gi, gw, gb)
    raise AssertionError(name)


def op_macs(name, args, out):
    """Multiply-adds of one aten op as memest counts them (0 for every other op)."""
    if name == CONV:
        x, w, transposed, groups = args[0], args[1], args[6], args[8]
        kprod = 1
        for k in w.shape[2:]:
            kprod *= k
        if transposed:
            cin, cout = w.shape[0], w.shape[1] * groups
            pos = x.shape[0]
            for n in x.shape[2:]:
                pos *= n
        else:
            cout, cin = w.shape[0], w.shape[1] * groups
            pos = out.shape[0]
            for n in out.shape[2:]:
                pos *= n
        return pos * cout * (cin // groups) * kprod
    if name in ("aten.mm.default", "aten.addmm.default"):
        a, b = (args[0], args[1]) if name == "aten.mm.default" else (args[1], args[2])
        return a.shape[0] * a.shape[1] * b.shape[1]
    if name in ("aten.bmm.default", "aten.baddbmm.default"):
        a, b = (args[0], args[1]) if name == "aten.bmm.default" else (args[1], args[2])
        return a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
    if "scaled_dot_product" in name and "backward" not in name:
        q, k, v = args[0], args[1], args[2]
        bh = 1
        for n in q.shape[:-2]:
            bh *= n
        return bh * q.shape[-2] * k.shape[-2] * (q.shape[-1] + v.shape[-1])
    return 0


class MacCounter(TorchDispatchMode):
    """Counts memest's MACs per aten op below autograd; runs STUBBED ops as stubs when stub is true."""

    def __init__(self, stub_ops=True):
        super().__init__()
        self.stub_ops = stub_ops
        self.macs = 0
        self.by_op = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func)
        out = stub(name, args) if self.stub_ops and name in STUBBED else func(*args, **kwargs)
        first = tree_flatten(out)[0]
        m = op_macs(name, args, first[0] if first else None)
        if m:
            self.macs += m
            self.by_op[name] = self.by_op.get(name, 0) + m
        return out


# --------------------------------------------------------------------------- stages
def stage_static(name, model):
    import torch_figures as tr
    info = tr.static_info(model)
    return {"params": info["params_total"], "params_trainable": info["params_trainable"],
            "param_tensors": info["param_tensors"], "buffers": info["buffers_count"],
            "buffer_bytes": info["buffers_bytes"]}


def short_error(e):
    msg = "%s: %s" % (type(e).__name__, e)
    msg = " ".join(msg.split())
    return msg if len(msg) <= 600 else msg[:597] + "..."


# training-mode outputs (logits, aux logits...): exported as Primary(model), the logits the loss takes
AUX_HEADS = ("googlenet", "inception_v3", "quantized_googlenet", "quantized_inception_v3")


def stage_export(name, model, inputs):
    out = os.path.join(REPO, "tests", "zoo", TAG, name + ".json")
    if os.path.exists(out):
        os.remove(out)
    try:
        from memest_export import export
    except Exception as e:
        return {"ok": False, "error": "exporter not available: " + short_error(e)}
    if name in AUX_HEADS:
        model = Primary(model, name)
    if family(name) == "detection":  # what a user passes: a batch of images (the targets are data)
        inputs = [torch.stack(list(inputs[0]))]
    try:
        with MacCounter(True):  # the recording's forward passes with the stubs (fast; no value matters)
            doc = export(model, list(inputs), name=name, batch_dim=0, train=True)
    except Exception as e:
        return {"ok": False, "error": short_error(e)}
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return {"ok": True, "file": os.path.relpath(out, REPO)}


def stage_forward(name, model, inputs, stub_ops=True):
    import torch_figures as tr
    mode = MacCounter(stub_ops)
    with mode:
        r = tr.measure(Flat(model), inputs)
    res = {"forward_macs": mode.macs, "macs_by_op": mode.by_op,
           "saved_activation_bytes": r["saved_activation_bytes_cuda_corrected"],
           "saved_activation_bytes_cpu": r["saved_activation_bytes"],
           "saved_storages": r["saved_storages"], "saved_input_bytes": r["saved_input_bytes"],
           "dropout_masks": r["dropout_masks"], "output_shape": r["output_shape"]}
    if TORCH2:
        # PyTorch's own counter (innermost, so it sees every op before the stubs run them)
        from torch.utils.flop_counter import FlopCounterMode
        fc = FlopCounterMode(display=False)
        with MacCounter(True):
            with fc:
                Flat(model)(*inputs)
        res["macs_flop_counter"] = fc.get_total_flops() // 2
    return res


# ---- the training-step peak
class Step26(TorchDispatchMode):
    """PyTorch 2.x: hf_peak.Live counts every op output storage from the op's return to its release (the
    storage's weakref finalizer); stubbed ops as in MacCounter; CPU dropout's float noise (empty_like +
    bernoulli_, _dropout_impl) counted at 1 byte per element, CUDA's native_dropout bool mask."""

    def __init__(self, live, stub_ops=True):
        super().__init__()
        self.live, self.stub_ops = live, stub_ops
        self.last_empty_like = None
        self.phase = None
        self.noise = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func)
        out = stub(name, args) if self.stub_ops and name in STUBBED else func(*args, **kwargs)
        live = self.live
        if live is None:
            return out
        if name == "aten.bernoulli_.float" and self.phase == "forward":
            ptr = args[0].untyped_storage().data_ptr()
            if ptr == self.last_empty_like and args[0].dtype == torch.float32:
                token = live.by_ptr.get(ptr)
                n, nc = live.bytes[token]
                live.bytes[token] = (n, args[0].numel())
                live.cur_cuda -= nc - args[0].numel()
                self.noise += 1
        self.last_empty_like = None
        outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        for t in outs:
            live.add(t)
        if name == "aten.empty_like.default" and outs:
            self.last_empty_like = outs[0].untyped_storage().data_ptr()
        live.check(name)
        return out


def peak26(name, model, x, stub_ops=True):
    import hf_peak
    model = Primary(model, name)
    model.train()
    with Step26(None, stub_ops):
        with torch.no_grad():
            target = make_target(name, model(x))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, foreach=False)
    live = hf_peak.Live()
    for step in (1, 2):
        if step == 2:
            live.phase = "setup"
            for t in list(model.parameters()) + list(model.buffers()) + [x, target]:
                live.add(t)
            for p in model.parameters():
                if p.grad is not None:
                    live.add(p.grad)
            live.check("")
        mode = Step26(live if step == 2 else None, stub_ops)
        with mode:
            live.phase = mode.phase = "zero_grad"
            opt.zero_grad(set_to_none=True)
            live.phase = mode.phase = "forward"
            out = model(x)
            live.phase = mode.phase = "loss"
            loss = loss_fn(out, target)
            live.phase = mode.phase = "backward"
            loss.backward()
            live.phase = mode.phase = "optimizer"
            opt.step()
            del out, loss
    return {"peak": live.peak_cuda, "peak_at": live.peak_cuda_at, "peak_cpu": live.peak,
            "dropout_noise_corrected": mode.noise, "target_shape": list(target.shape)}


def peak113(name, model, x, stub_ops=True):
    import torch_peak as tp
    tp.STUB_OPS = STUBBED
    tp.Recorder._stub = staticmethod(stub)
    model = Primary(model, name)
    model.train()
    with MacCounter(True):
        with torch.no_grad():
            target = make_target(name, model(x))
    r = tp.measure_train(model, name, x, target, "sgd", "for-loop", None, B, stub=stub_ops, loss_fn=loss_fn)
    return {"peak": r["peak"], "peak_phase": r["peak_phase"], "peak_op": r["peak_op"],
            "peak_module": r["peak_module"], "peak_uncorrected": r["peak_uncorrected"],
            "at_peak": dict(r["at_peak"]), "dropout_noise": r["dropout_noise"],
            "saved_bytes_end_of_forward": r["saved_bytes_end_of_forward"], "target_shape": list(target.shape)}


def stage_peak(name, model, inputs, stub_ops=True):
    if family(name) == "optical_flow":
        return {"skipped": "RAFT's training loss (a weighted sequence loss over its 12 flow predictions) is "
                           "no memest loss"}
    return (peak26 if TORCH2 else peak113)(name, model, inputs[0], stub_ops)


def run_stage(stage, name, model, inputs):
    if stage == "static":
        return stage_static(name, model)
    if family(name) == "detection" and stage in ("forward", "peak"):
        return {"skipped": "detection: training is data-dependent (targets matched to anchors, NMS, "
                           "sampling); not traceable by FX or torch.export"}
    if stage == "export":
        return stage_export(name, model, inputs)
    if stage == "forward":
        return stage_forward(name, model, inputs)
    return stage_peak(name, model, inputs)


def verify_stubs():
    """Real kernels against the stubs on three small models: saved bytes, MACs and the peak must agree."""
    res = {}
    for name in ("resnet18", "mobilenet_v2", "convnext_tiny"):
        d = {}
        for stub_ops in (True, False):
            model = build(name)
            inputs = make_inputs(name)
            fwd = stage_forward(name, model, inputs, stub_ops)
            pk = stage_peak(name, build(name), inputs, stub_ops)
            d["stub" if stub_ops else "real"] = {"forward_macs": fwd["forward_macs"],
                                                 "saved_activation_bytes": fwd["saved_activation_bytes"],
                                                 "peak": pk["peak"]}
            del model
            gc.collect()
        d["identical"] = d["stub"] == d["real"]
        res[name] = d
        log("stub verification %s: %s" % (name, json.dumps(d)))
    return res


# --------------------------------------------------------------------------- child / parent
def log(s):
    sys.stderr.write(s + "\n")
    sys.stderr.flush()


def child(models, stages, out_path):
    """Measures models one after the other, appending one JSON line per finished stage to out_path."""
    for name in models:
        with open(out_path, "a") as f:
            f.write(json.dumps({"model": name, "start": time.time()}) + "\n")
        model = None
        for stage in stages:
            t0 = time.time()
            try:
                if model is None:  # one model for every stage (nothing they measure depends on values)
                    model = build(name)
                for p in model.parameters():
                    p.grad = None
                inputs = make_inputs(name)
                r = run_stage(stage, name, model, inputs)
            except Exception as e:
                r = {"error": short_error(e), "traceback": traceback.format_exc().splitlines()[-6:]}
            r["seconds"] = round(time.time() - t0, 1)
            inputs = None
            gc.collect()
            with open(out_path, "a") as f:
                f.write(json.dumps({"model": name, "stage": stage, "result": r}) + "\n")
            log("%-36s %-8s %5.0fs %s" % (name, stage, r["seconds"], r.get("error") or r.get("skipped") or
                                           "ok"))
        model = None
        gc.collect()


def ref_path():
    return os.path.join(REPO, "tests", "reference", "zoo_%s.json" % TAG)


def load_ref():
    try:
        with open(ref_path()) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def save_ref(ref, changed=()):
    """Writes ref; with changed ((model, stage) pairs), only those entries over the file's current
    content (another run of this tool may be writing other models' stages at the same time)."""
    if changed:
        cur = load_ref() or ref
        for m, st in changed:
            cur["models"].setdefault(m, {k: v for k, v in ref["models"][m].items() if k in ("family", "input")})
            if st in ref["models"][m]:
                cur["models"][m][st] = ref["models"][m][st]
        ref = cur
    ref["models"] = dict(sorted(ref["models"].items()))
    ref = stamp(ref, "tests/tools/torchvision_zoo.py", {"torch": torch.__version__,
                                                         "torchvision": torchvision.__version__})
    tmp = ref_path() + ".%d.tmp" % os.getpid()
    with open(tmp, "w") as f:
        json.dump(ref, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(tmp, ref_path())


def new_ref():
    return {
        "generator": "tests/tools/torchvision_zoo.py",
        "torch_version": torch.__version__,
        "torchvision_version": torchvision.__version__,
        "memest_torch": "1.13" if not TORCH2 else "2",
        "batch": B,
        "dtype": "float32",
        "step": "model.train(); SGD(lr=1e-3, foreach=False); step 2 of zero_grad(set_to_none=True), "
                "out = primary output, loss = F.cross_entropy(out, target), backward, opt.step()",
        "definitions": __doc__.split("Stages per model")[1].split("Detection models")[0].strip().splitlines(),
        "out_of_scope": {"quantized": "quantized_* builders converted to int8 (quantize=True): inference-only "
                                      "models (torch.ao), refused by the exporter; their float quantizable "
                                      "models (quantize=False, the default) are measured"},
        "models": {},
    }


def parent(a):
    ref = load_ref() or new_ref()
    ref["torch_version"], ref["torchvision_version"] = torch.__version__, torchvision.__version__
    ref["out_of_scope"] = new_ref()["out_of_scope"]
    names = a.models.split(",") if a.models else all_models()
    for n in names:
        if n not in torchvision.models.list_models():
            sys.exit("unknown model %s" % n)
    stages = [s for s in (a.stages.split(",") if a.stages else STAGES)]
    redo = set(a.redo.split(",")) if a.redo else set()
    if a.verify_stubs or "stub_verification" not in ref:
        ref["stub_verification"] = verify_stubs()
        cur = load_ref() or ref
        cur["stub_verification"] = ref["stub_verification"]
        save_ref(cur)
    todo = []
    for n in names:
        e = ref["models"].setdefault(n, {"family": family(n), "input": [[B] + s for s in sample_shapes(n)]})
        st = [s for s in stages if s in redo or s not in e or (a.retry_errors and "error" in e[s])]
        if st:
            todo.append((n, st))
    save_ref(ref, [(n, "family") for n in names])
    tmpdir = os.path.join(REPO, "build", "zoo-tmp")
    os.makedirs(tmpdir, exist_ok=True)
    log("%d models to measure (%s)" % (len(todo), TAG))
    while todo:
        chunk = []
        while todo and len(chunk) < a.chunk and (not chunk or todo[0][1] == chunk[0][1]):
            chunk.append(todo.pop(0))
        models = [n for n, _ in chunk]
        st = chunk[0][1]
        out_path = os.path.join(tmpdir, "%s-%d.jsonl" % (TAG, os.getpid()))
        if os.path.exists(out_path):
            os.remove(out_path)
        cmd = [sys.executable, os.path.abspath(__file__), "--child", ",".join(models), "--stages", ",".join(st),
               "--out", out_path]

        def limits():
            lim = int(a.mem_gib * 2 ** 30)
            resource.setrlimit(resource.RLIMIT_AS, (lim, lim))

        p = subprocess.Popen(cmd, preexec_fn=limits)
        started, current, done = time.time(), None, set()
        while True:
            try:
                rc = p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                rc = None
            lines = []
            if os.path.exists(out_path):
                with open(out_path) as f:
                    lines = [json.loads(x) for x in f if x.strip()]
            for ln in lines:
                if "start" in ln:
                    current, started = ln["model"], ln["start"]
                elif (ln["model"], ln["stage"]) not in done:
                    done.add((ln["model"], ln["stage"]))
                    ref["models"][ln["model"]][ln["stage"]] = ln["result"]
                    save_ref(ref, [(ln["model"], ln["stage"])])
            if rc is None and current is not None and time.time() - started > a.timeout:
                p.send_signal(signal.SIGKILL)
                p.wait()
                rc = "timeout"
            if rc is not None:
                break
        # a model the child did not finish: its missing stages get the error, the rest go back to the queue
        if current is not None:
            for s in st:
                if (current, s) not in done:
                    why = ("timed out after %d s" % a.timeout if rc == "timeout" else
                           "the process died (exit %s; out of memory under the %g GiB limit?)" % (rc, a.mem_gib))
                    ref["models"][current][s] = {"error": why}
                    save_ref(ref, [(current, s)])
        left = [(n, s) for n, s in chunk if n != current and any((n, x) not in done for x in s)]
        if rc != 0:
            todo = left + todo
    log("wrote %s" % ref_path())


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", help="comma-separated builders (default: every one)")
    ap.add_argument("--stages", help="comma-separated subset of %s" % ",".join(STAGES))
    ap.add_argument("--redo", help="stages to measure again even where the reference file has them")
    ap.add_argument("--retry-errors", action="store_true", help="measure again the stages that failed")
    ap.add_argument("--verify-stubs", action="store_true", help="run the stub verification again")
    ap.add_argument("--chunk", type=int, default=6, help="models per child process")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per model")
    ap.add_argument("--mem-gib", type=float, default=16, help="address-space limit of a child")
    ap.add_argument("--list", action="store_true", help="print the builders and their families")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args(argv[1:])
    if a.list:
        for n in torchvision.models.list_models():
            print("%-40s %s" % (n, family(n)))
        return
    if a.child:
        child(a.child.split(","), a.stages.split(","), a.out)
        return
    parent(a)


if __name__ == "__main__":
    main(sys.argv)
