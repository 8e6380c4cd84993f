#!/usr/bin/python3
"""Small torchvision blocks built from the ops of src/ops/ops_resample.c,
ops_pad.c, the 3-D pools and norms and stochastic depth, measured in
training mode at batch 2 (CPU): parameters, buffers and the bytes autograd
saves (distinct non-parameter storages, the method of
tests/tools/torch_figures.py). The memest files of the same blocks are
tests/models/vision_*.json; tests/unit/test_vision_blocks.c compares them.

    /usr/bin/python3 tests/tools/vision_blocks.py tests/reference/vision_blocks.json
    ../shared/tools/torch2-chroot python3 tests/tools/vision_blocks.py tests/reference/vision_blocks.json

Each run writes (merges) the figures of its PyTorch version into the file,
under "torch_1.13" or "torch_2.6"."""
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.models.convnext import CNBlock, LayerNorm2d
from torchvision.ops import StochasticDepth

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from provenance import stamp  # noqa: E402

torch.set_num_threads(1)


class ConvNeXtStage(nn.Module):
    """A ConvNeXt block (torchvision CNBlock: depthwise 7x7, Permute,
    LayerNorm(eps 1e-6), Linear 4x, GELU, Linear, Permute, layer scale,
    StochasticDepth 'row', residual) and the downsampling that follows a
    stage (LayerNorm2d, Conv2d k2 s2)."""

    def __init__(self, dim=8):
        super().__init__()
        self.block = CNBlock(dim, layer_scale=1e-6, stochastic_depth_prob=0.1)
        self.down = nn.Sequential(LayerNorm2d(dim, eps=1e-6), nn.Conv2d(dim, 2 * dim, 2, 2))

    def forward(self, x):
        return self.down(self.block(x))


class VideoStem(nn.Module):
    """torchvision video ResNet pieces: Conv3d stem, BatchNorm3d, ReLU, a 3-D
    max pool, then the head's AdaptiveAvgPool3d(1), flatten and a linear."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv3d(3, 8, (3, 7, 7), (1, 2, 2), (1, 3, 3), bias=False),
                                  nn.BatchNorm3d(8), nn.ReLU(inplace=True))
        self.pool = nn.MaxPool3d((1, 3, 3), (1, 2, 2), (0, 1, 1))
        self.avg = nn.AdaptiveAvgPool3d(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = self.pool(self.stem(x))
        return self.fc(self.avg(x).flatten(1))


class SegHead(nn.Module):
    """A segmentation head (FCN/LRASPP-like): reflect-padded conv, a 3x3
    conv, bilinear upsampling, a nearest x2 upsample of a side branch, pixel
    unshuffle and shuffle, area resampling and a stochastic-depth sum."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3)
        self.cls = nn.Conv2d(8, 8, 1)
        self.up2 = nn.Upsample(scale_factor=2, mode="nearest")
        self.sd = StochasticDepth(0.2, "batch")

    def forward(self, x):
        y = self.conv(F.pad(x, (1, 1, 1, 1), mode="reflect"))
        y = self.cls(y)
        z = F.interpolate(y, size=(16, 16), mode="bilinear", align_corners=False)
        s = self.up2(F.pad(y, (0, 0, 0, 0)))  # pad by 0: a copy
        s = F.pixel_shuffle(F.pixel_unshuffle(s, 2), 2)
        return z + self.sd(F.interpolate(s, size=(16, 16), mode="area"))


BLOCKS = {
    "vision_convnext_block": (ConvNeXtStage, [2, 8, 7, 7]),
    "vision_video_stem": (VideoStem, [2, 3, 4, 16, 16]),
    "vision_seg_head": (SegHead, [2, 4, 8, 8]),
}


def measure(mk, shape):
    torch.manual_seed(0)
    m = mk()
    m.train()
    pids = {p.untyped_storage().data_ptr() if hasattr(p, "untyped_storage") else p.storage().data_ptr()
            for p in list(m.parameters()) + list(m.buffers())}
    seen = {}

    def stor(t):
        return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()

    def pack(t):
        st = stor(t)
        if st.data_ptr() not in pids:
            seen[st.data_ptr()] = st.nbytes() if hasattr(st, "nbytes") else st.size() * t.element_size()
        return t

    x = torch.randn(*shape).requires_grad_(True).clone()  # an activation, as inside a network
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        m(x)
    return dict(params=sum(p.numel() for p in m.parameters()),
                buffers=sum(b.numel() for b in m.buffers()),
                saved_bytes=sum(seen.values()))


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else None
    key = "torch_" + ".".join(torch.__version__.split("+")[0].split(".")[:2])
    figures = {name: measure(mk, shape) for name, (mk, shape) in BLOCKS.items()}
    for name, f in figures.items():
        print("%-24s %s %s" % (name, key, f))
    if path:
        data = json.load(open(path)) if os.path.exists(path) else {}
        data["generator"] = "tests/tools/vision_blocks.py (batch 2, training, CPU)"
        data[key] = figures
        libs = dict(data.get("provenance", {}).get("libraries", {}), **{key: torch.__version__})
        data = stamp(data, "tests/tools/vision_blocks.py", dict(sorted(libs.items())))
        with open(path, "w") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
