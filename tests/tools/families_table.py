#!/usr/bin/env python3
"""The README's table of architecture families: for one real model of each (a config of models/hf/ or
tests/hf/published/), its parameter count (published, from the reference files: tests/reference/
hf_figures*.json "published_params" / "published", or tests/group_hf_published.cmake's written figure;
and memest's), and memest's device total for a full fine-tune, a LoRA fine-tune and inference on one card.

    python3 tests/tools/families_table.py build/memest [--gpu h100-80gb] > table.md

Full fine-tune: --optim adamw --optim-impl fused --checkpoint (the checkpoint's dtype, batch 1, the default
sequence); LoRA: r 16 on all-linear, AdamW, --checkpoint; inference: --inference. An MXFP4 checkpoint
(gpt-oss) is counted and fine-tuned with --weights dense (dequantised, as its recipes load it) and served as
published. Each cell is memest's
device total (what nvidia-smi would show) and whether it fits the card. The last line times one estimate
of the largest model (the median of 5 runs).
"""
import glob
import json
import os
import re
import subprocess
import sys
import time

# published as rounded figures: the source's words
ROUNDED = {"deepseek-v3": "671B, 37B active (technical report)",
           "gpt-oss-20b": "20.91B, 3.61B active (model card)",
           "gpt-oss-120b": "116.83B, 5.13B active (model card)",
           "llama-4-scout-17b-16e": "109B with the vision tower, 17B active (model card; this is the text model)",
           "llama-4-scout-17b-16e-vl": "109B, 17B active in the text model (model card)",
           "llama-4-maverick-17b-128e": "400B, 17B active (model card)",
           "gemma-3-4b-pt": "4B (model card)",
           "gemma-3-27b-pt": "27B (model card)",
           "bamba-9b": "9.78B (model card)",
           "glm-4.5-air": "106B, 12B active (model card)",
           "granite-3.1-3b-a800m-instruct": "3.3B, 800M active (model card)",
           "glm-4-9b-0414": "9.4B (model page)"}

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def published_counts():
    out = {}
    for f in glob.glob(os.path.join(ROOT, "tests", "reference", "hf_figures*.json")):
        d = json.load(open(f))
        for name, e in d.get("configs", {}).items():
            if e.get("published_params"):
                out[name] = e["published_params"]
        for name, e in d.get("params", {}).items():
            if e.get("published"):
                out[name[:-5] if name.endswith(".json") else name] = e["published"]
    text = open(os.path.join(ROOT, "tests", "group_hf_published.cmake")).read()
    for name, want in re.findall(r'"(?:[\w./-]*/)?([\w.-]+)=(\d+)=\d+', text):
        out[name] = int(want)
    # figures published rounded only (the test checks memest's against the arithmetic, which rounds to them)
    out.update(ROUNDED)
    return out


def run(memest, cfg, args):
    p = subprocess.run([memest, cfg, "--json"] + args, cwd=ROOT, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "exit %d" % p.returncode
    return json.loads(p.stdout), None


def gib(n):
    return "%.1f GiB" % (n / 2**30)


def cell(memest, cfg, args):
    d, err = run(memest, cfg, args)
    if d is None:
        return "refused: " + err.split(": ")[-1][:60]
    total = d["memory"]["total_device"] if "--inference" not in args else d["memory"]["inference"]["total_device"]
    fit = d.get("fit") or {}
    fits = fit.get("fits")
    if "--inference" in args:
        fits = total <= fit.get("usable", 0) if fit else None
    return gib(total) + ("" if fits is None else (" fits" if fits else " no"))


def main(argv):
    memest = os.path.abspath(argv[1])
    gpu = argv[argv.index("--gpu") + 1] if "--gpu" in argv else "h100-80gb"
    pub = published_counts()
    configs = sorted(glob.glob(os.path.join(ROOT, "models", "hf", "*.json")) +
                     glob.glob(os.path.join(ROOT, "tests", "hf", "published", "*.json")))
    rows, largest = [], (0, None)
    for path in configs:
        rel = os.path.relpath(path, ROOT)
        name = os.path.basename(path)[:-5]
        cfg = json.load(open(path))
        # an MXFP4 checkpoint (gpt-oss): counted and fine-tuned dequantised (Mxfp4Config(dequantize=True),
        # as its fine-tuning recipes load it), served as published
        mx = (cfg.get("quantization_config") or {}).get("quant_method") == "mxfp4"
        dq = ["--weights", "dense"] if mx else []
        d, err = run(memest, rel, dq)
        if d is None:
            continue
        mt = cfg.get("model_type")
        total = d["params"]["total"]
        active = d["params"].get("active", total)
        if total > largest[0]:
            largest = (total, rel)
        card = ["--gpu", gpu]
        ft = cell(memest, rel, ["--optim", "adamw", "--optim-impl", "fused", "--checkpoint"] + card + dq)
        lora = cell(memest, rel, ["--lora", "16", "--lora-targets", "all-linear", "--optim", "adamw",
                                  "--checkpoint"] + card + dq)
        inf = cell(memest, rel, ["--inference"] + card) + (" (MXFP4)" if mx else "")
        p = pub.get(name)
        rows.append("| `%s` | %s | %s | %s | %s | %s | %s |" % (
            mt, name, ("{:,}".format(p) if isinstance(p, int) else p) if p else "-",
            "{:,}".format(total) + ("" if active == total else " ({:,} active)".format(active)), ft, lora, inf))
    print("| model_type | model | parameters (published) | parameters (memest) | full fine-tune | LoRA r16 | inference |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(r)
    times = []
    for _ in range(5):
        t = time.perf_counter()
        subprocess.run([memest, largest[1]], cwd=ROOT, capture_output=True)
        times.append(time.perf_counter() - t)
    times.sort()
    print("\nOne estimate of the largest, %s (%s parameters): %.0f ms (median of 5, %s)." % (
        largest[1], "{:,}".format(largest[0]), 1000 * times[2], gpu))


if __name__ == "__main__":
    main(sys.argv)
