#!/usr/bin/python3
"""memest's optimizer step against PyTorch 2.6 (tests/tools/optim_temps.py, its figures in
tests/reference/optim_temps.json): per case, the optimizer state's bytes (--json
memory.optimizer_state) and the most optimizer-temporary bytes alive at once in the optimizer
phase of --timeline (exact tensor bytes, as PyTorch's are counted), each equal to the byte.
    check_temps.py MEMEST SOURCE_DIR CASE
Python 3, standard library only."""
import csv
import json
import os
import subprocess
import sys
import tempfile


def main():
    memest, src, case = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ref = json.load(open(os.path.join(src, "tests/reference/optim_temps.json")))
    c = ref["cases"][case]
    model = os.path.join(src, "models", c["model"] + ".json")
    args = [memest, model, "--batch", str(c["batch"]), "--optim", c["optim"],
            "--optim-impl", c["impl"], "--dtype", {"float32": "fp32", "bfloat16": "bf16"}[c["dtype"]]]
    with tempfile.TemporaryDirectory() as d:
        tl = os.path.join(d, "tl.csv")
        p = subprocess.run(args + ["--json", "--timeline", tl], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit("%s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
        state = json.loads(p.stdout)["memory"]["optimizer_state"]
        cur = peak = 0
        with open(tl) as f:
            for r in csv.DictReader(f):
                if r["category"] == "optimizer_temporaries" and r["phase"] == "optimizer":
                    cur += int(r["bytes"]) if r["event"] == "alloc" else -int(r["bytes"])
                    peak = max(peak, cur)
    print("case %d %s %s: state %d (PyTorch %d), temporaries %d (PyTorch %d)"
          % (case, c["model"], c["optim"], state, c["state_bytes"], peak, c["temporaries_peak"]))
    if state != c["state_bytes"] or peak != c["temporaries_peak"]:
        sys.exit("case %d: memest differs from PyTorch" % case)


if __name__ == "__main__":
    main()
