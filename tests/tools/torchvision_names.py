#!/usr/bin/python3
"""Every name torchvision.models.list_models() returns, given to memest-export's command line as
torchvision:NAME (issue 32, item 6): which are exported and which refused, and why.

    ../shared/tools/torch2-chroot python3 tests/tools/torchvision_names.py   # torch 2.6 / torchvision 0.21
    /usr/bin/python3 tests/tools/torchvision_names.py                        # torch 1.13 / torchvision 0.14
    ... torchvision_names.py --models quantized_resnet50,raft_small          # only these (merged into the file)

(run from the checkout root). Writes tests/reference/torchvision_names_torch<26|113>.json: per name its
family, the command line run, the exit code, the outcome ("exported", with how the gate traced it, or
"refused at build" for exit 2, "refused at export" for exit 3, "internal error" for 7, "timeout") and the
first line of the error memest-export printed.

Each name runs exactly the command a user types, memest-export's own main() (src/export/memest_export/
cli.py: its argument checks, its child process, its lookup of the name, its gate and recording):

    memest-export torchvision:NAME --input SHAPE [--input SHAPE] -o FILE

with no --kwargs (the builder's defaults) and no --eval (training mode, the command's default). Inputs
per sample as tests/tools/torchvision_zoo.py uses them (its sample_shapes(): 3,224,224; inception_v3 and
quantized_inception_v3 3,299,299, a quantized_* builder taking its float model's input; video
3,16,112,112 or 3,16,224,224; RAFT two 3,224,224 images; detection one 3,224,224 input, the batch of
images a user passes). Two things differ from a user's run, neither of which changes which
path a model takes: the convolutions and the four BLAS ops run as allocation-equivalent stubs
(torchvision_zoo.MacCounter: this machine's BLAS runs ~1 GFLOP/s and no outcome depends on tensor
values), and torch.nn.init's functions are no-ops while the models are built (the big models' random
initialisation took most of their time). Names run in child processes, a few per child (torch's import
time shared; a crash or timeout loses only that chunk, recorded per name).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "src", "export"))

OUTCOME = {0: "exported", 2: "refused at build", 3: "refused at export", 4: "--check differs",
           5: "memest refuses the file", 7: "internal error"}
MEMEST = os.path.join(REPO, "build", "memest")


def check_args():
    """--check (memest's parameters and output shapes against the module's, training and eval mode)
    when the build's memest exists."""
    return ["--check", "--memest", MEMEST] if os.path.exists(MEMEST) else []


def command(name):
    import torchvision_zoo as zoo
    argv = ["torchvision:" + name]
    # a quantized_* builder's model takes its float model's input (quantized_inception_v3: 3,299,299)
    base = name[len("quantized_"):] if zoo.family(name) == "quantized" else name
    for shape in zoo.sample_shapes(base):
        argv += ["--input", ",".join(str(s) for s in shape)]
    return argv


def run_one(name):
    """memest-export's main() on torchvision:NAME: {exit, outcome, error, traced_by}."""
    from memest_export import cli
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False)
    out.close()
    err = tempfile.TemporaryFile()
    argv = command(name) + ["-o", out.name] + check_args()
    saved = os.dup(2)
    t0 = time.time()
    try:
        sys.stderr.flush()
        os.dup2(err.fileno(), 2)
        rc = cli.main(argv)
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
    err.seek(0)
    lines = [ln for ln in err.read().decode("utf-8", "replace").splitlines()
             if ln.startswith("memest-export: ") and not ln.startswith("memest-export: note:")]
    res = {"command": "memest-export " + " ".join(command(name)) + " -o FILE" + (" --check" if check_args() else ""),
           "exit": rc,
           "outcome": OUTCOME.get(rc, "exit %d" % rc), "seconds": round(time.time() - t0, 1)}
    if rc in (0, 4, 5):
        with open(out.name) as f:
            doc = json.load(f)
        desc = doc.get("description", "")
        res["traced_by"] = desc.rsplit("traced by ", 1)[-1].rstrip(")") if "traced by " in desc else None
        res["nodes"] = len(doc["layers"])
        if rc == 0 and check_args():
            res["check"] = lines[-1][len("memest-export: "):] if lines else ""
    if rc != 0:
        res["error"] = lines[-1][len("memest-export: "):] if lines else "(no message)"
    os.unlink(out.name)
    return res


def child(names):
    import torch
    import torch.nn as nn
    import torchvision_zoo as zoo
    torch.set_num_threads(2)
    for k in dir(nn.init):
        if k.endswith("_") and not k.startswith("_") and callable(getattr(nn.init, k)):
            setattr(nn.init, k, zoo._no_init)
    with zoo.MacCounter(True):   # inherited by the command's child process (fork)
        for name in names:
            res = run_one(name)
            print("RESULT " + json.dumps({name: res}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", help="comma-separated names (default: all of list_models())")
    ap.add_argument("--chunk", type=int, default=8)
    ap.add_argument("--timeout", type=int, default=1200, help="seconds per chunk")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child.split(","))
        return
    import torch
    import torchvision
    import torchvision_zoo as zoo
    from provenance import stamp
    tag = zoo.TAG
    path = os.path.join(REPO, "tests", "reference", "torchvision_names_%s.json" % tag)
    names = a.models.split(",") if a.models else list(torchvision.models.list_models())
    old = {}
    if a.models and os.path.exists(path):
        with open(path) as f:
            old = json.load(f)["models"]
    results = {}
    for i in range(0, len(names), a.chunk):
        part = names[i:i + a.chunk]
        print("names %d-%d of %d: %s" % (i + 1, i + len(part), len(names), ",".join(part)), flush=True)
        try:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", ",".join(part)],
                               cwd=REPO, capture_output=True, text=True, timeout=a.timeout)
            text, tail = p.stdout, p.stderr.strip().splitlines()[-1:] if p.returncode else []
        except subprocess.TimeoutExpired as e:
            text, tail = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), ["timeout"]
        for ln in text.splitlines():
            if ln.startswith("RESULT "):
                results.update(json.loads(ln[len("RESULT "):]))
        for n in part:
            if n not in results:
                results[n] = {"command": "memest-export " + " ".join(command(n)) + " -o FILE", "exit": None,
                              "outcome": "timeout" if tail == ["timeout"] else "crashed",
                              "error": (tail[0] if tail else "no result")[:300]}
            results[n]["family"] = zoo.family(n)
            r = results[n]
            print("  %-40s %-18s %s" % (n, r["outcome"], r.get("error", r.get("traced_by", ""))[:150]), flush=True)
    merged = dict(old)
    merged.update(results)
    order = list(torchvision.models.list_models())
    models = {n: merged[n] for n in order if n in merged}
    counts = {}
    for r in models.values():
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    doc = stamp({"about": "memest-export torchvision:NAME for every name of torchvision.models.list_models() "
                 "(tests/tools/torchvision_names.py's docstring: the command, its inputs, the outcomes)",
                 "torch_version": torch.__version__, "torchvision_version": torchvision.__version__,
                 "names": len(order), "counts": counts, "models": models},
                "tests/tools/torchvision_names.py",
                {"torch": torch.__version__, "torchvision": torchvision.__version__})
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("%s: %s" % (os.path.relpath(path, REPO), counts))


if __name__ == "__main__":
    main()
