"""What tests/optim's checks read from memest: the optimizer state's bytes (--json
memory.optimizer_state) and the most optimizer-temporary bytes alive at once in the optimizer phase
of --timeline (exact tensor bytes); and the small MLP the Muon checks write out. Python 3, standard
library only."""
import csv
import json
import os
import subprocess
import sys
import tempfile

# x [B, 64], Linear(64, 256), ReLU, Linear(256, 256), ReLU, Linear(256, 10): two hidden matrices
# (Muon's), the head and the biases (AdamW's)
MLP = {
    "name": "muon-mlp",
    "inputs": [{"name": "x", "shape": [64], "dtype": "float32"}],
    "layers": [
        {"name": "0", "type": "linear", "out_features": 256},
        {"name": "1", "type": "relu"},
        {"name": "2", "type": "linear", "out_features": 256},
        {"name": "3", "type": "relu"},
        {"name": "4", "type": "linear", "out_features": 10},
    ],
}


def write_mlp(d):
    """The path of MLP written as a model file in folder d."""
    path = os.path.join(d, "muon-mlp.json")
    with open(path, "w") as f:
        json.dump(MLP, f)
    return path


def figures(args):
    """(the --json document, the temporaries' peak, the bytes of the optimizer-state allocations) of
    memest run with `args` (memest first), or exit."""
    with tempfile.TemporaryDirectory() as d:
        tl = os.path.join(d, "tl.csv")
        p = subprocess.run(args + ["--json", "--timeline", tl], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit("%s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
        cur = peak = made = 0
        with open(tl) as f:
            for r in csv.DictReader(f):
                if r["category"] == "optimizer_state" and r["event"] == "alloc":
                    made += int(r["bytes"])
                if r["category"] == "optimizer_temporaries" and r["phase"] == "optimizer":
                    cur += int(r["bytes"]) if r["event"] == "alloc" else -int(r["bytes"])
                    peak = max(peak, cur)
    return json.loads(p.stdout), peak, made


def state_and_peak(args):
    """(state bytes, temporaries' peak) of memest run with `args` (memest first), or exit."""
    doc, peak, _ = figures(args)
    return doc["memory"]["optimizer_state"], peak
