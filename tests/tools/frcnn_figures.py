#!/usr/bin/python3
"""Reference figures of torchvision's Faster R-CNN ResNet-50 FPN in training mode (PyTorch 1.13).

How to run (CPU only; a few minutes and ~6 GiB on 2 cores): Debian 12's PyTorch 1.13 / torchvision 0.14,
and Debian 13's PyTorch 2.6 / torchvision 0.21 (the counts and figures are the same but for the two 0-d
wrapped numbers 1.13 saves):

    /usr/bin/python3 tests/tools/frcnn_figures.py tests/reference/frcnn_figures.json
    ../shared/tools/torch2-chroot python3 tests/tools/frcnn_figures.py tests/reference/frcnn_figures_torch26.json

The model is the one torchvision trains: fasterrcnn_resnet50_fpn(weights_backbone=IMAGENET1K_V1)
(the reference training recipe), i.e. resnet50(norm_layer=FrozenBatchNorm2d), _resnet_fpn_extractor
(backbone, trainable_layers=3) (conv1 and layer1 frozen) and FasterRCNN(backbone, num_classes=91),
built here without downloading the weights (the figures depend on shapes only).  It is run in
train() mode on a batch of 2 identical images of 3x800x1088 (the size GeneralizedRCNNTransform gives
a 480x640 COCO image: 800x1066 padded to a multiple of 32; an 800x1088 image is left as it is) with
the same 3 ground-truth boxes each, so that every data-dependent count is the same for both images.

Measured (one forward pass, losses summed as the reference training loop does):

* params_total / params_trainable (model.parameters()), buffers (elements, bytes);
* macs: multiply-adds of every nn.Conv2d (out.numel() * in_channels/groups * kh * kw) and nn.Linear
  (out.numel() * in_features) in the forward, per part (backbone.body, backbone.fpn, rpn.head,
  roi_heads.box_head, roi_heads.box_predictor);
* saved_activation_bytes: with torch.autograd.graph.saved_tensors_hooks, every tensor autograd saves
  (torchvision's C++ roi_align autograd function included), storages de-duplicated by data_ptr,
  parameter and buffer storages excluded, each counting its full nbytes (as torch_figures.py);
  also per part (the innermost module running when the storage was first saved, or the function
  of roi_heads / rpn for the losses) and saved_activation_bytes_cuda_corrected, without the 0-d
  wrapped-number tensors of `loss / n` that stay on the CPU under CUDA (torch_figures.py's
  wrapped_scalar_cpu);
* counts: the data-dependent sizes of this step: the transformed batch size, anchors per image,
  proposals per image after NMS, the RPN sampler's positives / samples per image, the RoI sampler's
  positives / samples per image and the RoIs per FPN level (what memest's variables describe).
"""
import json
import sys
from collections import OrderedDict

import torch
import torch.nn as nn
import torchvision
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection import _utils as det_utils
from torchvision.models.detection import rpn as rpn_mod
from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor
from torchvision.models.resnet import resnet50
from torchvision.ops import misc as misc_nn_ops
from torchvision.ops import poolers

from provenance import stamp  # noqa: E402

torch.set_num_threads(2)

B, H, W = 2, 800, 1088
BOXES = [[100.0, 120.0, 400.0, 500.0], [500.0, 200.0, 700.0, 350.0], [50.0, 600.0, 300.0, 780.0]]
LABELS = [3, 17, 62]
PARTS = ["backbone.body", "backbone.fpn", "rpn.head", "roi_heads.box_head", "roi_heads.box_predictor"]


def build():
    torch.manual_seed(0)
    backbone = resnet50(weights=None, norm_layer=misc_nn_ops.FrozenBatchNorm2d)
    backbone = _resnet_fpn_extractor(backbone, 3)
    return FasterRCNN(backbone, num_classes=91)


def sptr(t):
    return t.storage().data_ptr()


def main(path):
    model = build()
    model.train()
    params = list(model.parameters())
    bufs = list(model.buffers())
    fig = OrderedDict()
    fig["torch"] = torch.__version__
    fig["torchvision"] = torchvision.__version__
    fig["batch"] = B
    fig["image"] = [3, H, W]
    fig["params_total"] = sum(p.numel() for p in params)
    fig["params_trainable"] = sum(p.numel() for p in params if p.requires_grad)
    fig["buffers_count"] = sum(b.numel() for b in bufs)
    fig["buffers_bytes"] = sum(b.numel() * b.element_size() for b in bufs)
    # the builder without any weights (nn.BatchNorm2d, every layer trainable): for doc/validation.md
    torch.manual_seed(0)
    plain = torchvision.models.detection.fasterrcnn_resnet50_fpn(weights=None, weights_backbone=None)
    fig["params_total_no_pretrained_backbone"] = sum(p.numel() for p in plain.parameters())
    del plain

    # ---- the data-dependent counts of this step
    counts = OrderedDict()
    samplers = {}

    rpn_sampler = model.rpn.fg_bg_sampler
    roi_sampler = model.roi_heads.fg_bg_sampler

    class Sampler(det_utils.BalancedPositiveNegativeSampler):
        def __init__(self, inner, key):
            self.__dict__.update(inner.__dict__)
            self.key = key

        def __call__(self, matched_idxs):
            pos, neg = super().__call__(matched_idxs)
            samplers[self.key] = [[int(p.sum()), int(p.sum() + n.sum())] for p, n in zip(pos, neg)]
            return pos, neg
    model.rpn.fg_bg_sampler = Sampler(rpn_sampler, "rpn")
    model.roi_heads.fg_bg_sampler = Sampler(roi_sampler, "roi")

    seen_sizes = {}
    orig_filter = rpn_mod.RegionProposalNetwork.filter_proposals

    def filter_proposals(self, proposals, objectness, image_shapes, num_anchors_per_level):
        seen_sizes["anchors_per_level"] = [int(n) for n in num_anchors_per_level]
        boxes, scores = orig_filter(self, proposals, objectness, image_shapes, num_anchors_per_level)
        seen_sizes["proposals"] = [int(b.shape[0]) for b in boxes]
        return boxes, scores
    rpn_mod.RegionProposalNetwork.filter_proposals = filter_proposals

    orig_msra = poolers._multiscale_roi_align

    def msra(x_filtered, boxes, output_size, sampling_ratio, scales, mapper):
        levels = mapper(boxes)
        seen_sizes["rois_per_level"] = [int((levels == i).sum()) for i in range(len(x_filtered))]
        seen_sizes["rois"] = [int(b.shape[0]) for b in boxes]
        seen_sizes["featmaps"] = [list(x.shape) for x in x_filtered]
        return orig_msra(x_filtered, boxes, output_size, sampling_ratio, scales, mapper)
    poolers._multiscale_roi_align = msra

    # ---- MACs of the convolutions and linear layers, per part
    names = {m: n for n, m in model.named_modules()}
    macs = OrderedDict((p, 0) for p in PARTS)
    macs["other"] = 0

    def mac_hook(m, inp, out):
        if isinstance(m, nn.Conv2d):
            k = m.kernel_size[0] * m.kernel_size[1] * (m.in_channels // m.groups)
        else:
            k = m.in_features
        n = names[m]
        part = next((p for p in PARTS if n.startswith(p + ".")), "other")
        macs[part] += out.numel() * k

    # ---- module context for the saved tensors
    stack = []

    def pre(m, a):
        stack.append(names[m])

    def post(m, a, o):
        stack.pop()

    handles = []
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            handles.append(m.register_forward_hook(mac_hook))
        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post))

    transformed = {}

    def transform_hook(m, a, o):
        transformed["size"] = list(o[0].tensors.shape)
    handles.append(model.transform.register_forward_hook(transform_hook))

    pb = {sptr(p) for p in params} | {sptr(b) for b in bufs}
    packs = []

    def pack(t):
        packs.append((t, stack[-1] if stack else "<top>"))
        return t

    torch.manual_seed(0)
    img = torch.rand(3, H, W)
    images = [img.clone() for _ in range(B)]
    targets = [{"boxes": torch.tensor(BOXES), "labels": torch.tensor(LABELS, dtype=torch.int64)} for _ in range(B)]
    torch.manual_seed(0)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        losses = model(images, targets)
        loss = sum(losses.values())
    for h in handles:
        h.remove()

    seen = OrderedDict()
    for t, ctx in packs:
        p = sptr(t)
        if p in pb or p in seen:
            continue
        seen[p] = dict(bytes=t.storage().nbytes(), module=ctx, dtype=str(t.dtype).replace("torch.", ""),
                       shape=list(t.shape), wrapped=t.dim() == 0 and t.dtype in (torch.float64, torch.int64))
    total = sum(r["bytes"] for r in seen.values())
    fig["saved_activation_bytes"] = total
    fig["saved_activation_bytes_cuda_corrected"] = sum(r["bytes"] for r in seen.values() if not r["wrapped"])
    fig["saved_storages"] = len(seen)
    by_part = OrderedDict()
    for r in seen.values():
        m = r["module"]
        part = next((p for p in PARTS if m == p or m.startswith(p + ".")), m)
        d = by_part.setdefault(part, {"storages": 0, "bytes": 0})
        d["storages"] += 1
        d["bytes"] += r["bytes"]
    fig["saved_by_part"] = by_part
    # the saved tensors outside the conv/linear stacks, one by one (losses, RoI pooling)
    fig["saved_small"] = [dict(module=r["module"], dtype=r["dtype"], shape=r["shape"], bytes=r["bytes"])
                          for r in seen.values()
                          if not any(r["module"] == p or r["module"].startswith(p + ".") for p in PARTS[:3])
                          and r["module"] not in ("backbone.body", "backbone.fpn")]
    fig["macs"] = macs
    fig["macs_total"] = sum(macs.values())
    counts["transformed_batch"] = transformed["size"]
    counts.update(seen_sizes)
    counts["rpn_sampler_pos_total_per_image"] = samplers["rpn"]
    counts["roi_sampler_pos_total_per_image"] = samplers["roi"]
    fig["counts"] = counts
    fig["losses"] = {k: float(v) for k, v in losses.items()}
    fig["loss"] = float(loss)

    fig = stamp(fig, "tests/tools/frcnn_figures.py", {"torch": torch.__version__, "torchvision": torchvision.__version__})
    text = json.dumps(fig, indent=1) + "\n"
    if path:
        with open(path, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    print("params %d (trainable %d), MACs %d, saved %d bytes (%d storages)" % (
        fig["params_total"], fig["params_trainable"], fig["macs_total"], total, len(seen)), file=sys.stderr)
    print(json.dumps(counts), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
