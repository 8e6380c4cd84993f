#!/usr/bin/python3
"""The segmentation models' training-step peak at another input size than the zoo's 224 (issue 32, item 6).

    ../shared/tools/torch2-chroot python3 tests/tools/segmentation_peak.py --size 520 \
        --models deeplabv3_mobilenet_v3_large,lraspp_mobilenet_v3_large,deeplabv3_resnet50

(run from the checkout root, with build/memest built). Writes tests/reference/segmentation_peak_torch26.json
(merged per model and size): PyTorch's step peak measured exactly as tests/tools/torchvision_zoo.py measures
it (its build(), peak26(): batch 2, SGD for-loop, step 2, hf_peak.Live under its Step26 dispatch mode,
stubbed convolutions and BLAS ops), the model exported by memest-export's library at that size (under the
zoo's MacCounter stubs, as its stage_export) and memest's memory.peak_tensors on it (--batch 2 --optim sgd
--optim-impl for-loop), and the size of the DeepLabV3 head's input, which its ASPP's five branches read
(the backbone's "out" feature map, [2, C, h, w] float32): where the peak is an out-of-place gradient
accumulation into it, which a dispatch mode forces (tests/tools/accumulate_mode.py), PyTorch's figure
exceeds a run without a mode by that tensor.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "src", "export"))

import torch  # noqa: E402
import torchvision  # noqa: E402
import torchvision_zoo as zoo  # noqa: E402
from provenance import stamp  # noqa: E402


def backbone_outputs(model, x):
    """{key: (bytes, shape)} of the backbone's feature maps at x (DeepLabV3's head reads "out" in its five
    ASPP branches; LRASPP's reads "high" and "low")."""
    with zoo.MacCounter(True), torch.no_grad():
        feats = model.backbone(x)
    return {k: (f.numel() * f.element_size(), list(f.shape)) for k, f in feats.items()}


def memest_peak(doc):
    path = os.path.join(REPO, "build", "segmentation_peak.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    p = subprocess.run([os.path.join(REPO, "build", "memest"), path, "--json", "--batch", str(zoo.B), "--optim",
                        "sgd", "--optim-impl", "for-loop"], capture_output=True, text=True)
    os.unlink(path)
    m = json.loads(p.stdout)["memory"]
    return m["peak_tensors"], m.get("peak_phase"), m.get("peak_node")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="deeplabv3_mobilenet_v3_large,lraspp_mobilenet_v3_large,deeplabv3_resnet50")
    ap.add_argument("--size", type=int, default=520)
    a = ap.parse_args()
    from memest_export import export
    path = os.path.join(REPO, "tests", "reference", "segmentation_peak_%s.json" % zoo.TAG)
    res = {}
    if os.path.exists(path):
        with open(path) as f:
            res = json.load(f)["models"]
    for name in a.models.split(","):
        torch.manual_seed(0)
        x = torch.randn(zoo.B, 3, a.size, a.size)
        model = zoo.build(name)
        with zoo.MacCounter(True):
            doc = export(model, [x], name=name, batch_dim=0, train=True)
        got, phase, node = memest_peak(doc)
        feats = backbone_outputs(model, x)
        model = zoo.build(name)
        pk = zoo.peak26(name, model, x)
        r = {"input": [zoo.B, 3, a.size, a.size], "pytorch_peak": pk["peak"], "pytorch_peak_at": pk["peak_at"],
             "memest_peak_tensors": got, "memest_peak_phase": phase, "memest_peak_node": node,
             "error_percent": round(100.0 * (got - pk["peak"]) / pk["peak"], 2),
             "backbone_outputs": {k: {"bytes": b, "shape": sh} for k, (b, sh) in feats.items()}}
        if "out" in feats:
            hb = feats["out"][0]
            r["pytorch_minus_out"] = pk["peak"] - hb
            r["error_percent_against_pytorch_minus_out"] = round(100.0 * (got - (pk["peak"] - hb)) / (pk["peak"] - hb), 2)
        res.setdefault(name, {})[str(a.size)] = r
        print(name, json.dumps(r), flush=True)
    doc = stamp({"about": "tests/tools/segmentation_peak.py's docstring", "models": res},
                "tests/tools/segmentation_peak.py", {"torch": torch.__version__, "torchvision": torchvision.__version__})
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
