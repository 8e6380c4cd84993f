#!/usr/bin/python3
"""memest's optimizer step against PyTorch 2.6 (tests/tools/optim_temps.py, its figures in
tests/reference/optim_temps.json): per case, the optimizer state's bytes (--json
memory.optimizer_state) and the most optimizer-temporary bytes alive at once in the optimizer
phase of --timeline (exact tensor bytes, as PyTorch's are counted), each equal to the byte.
    check_temps.py MEMEST SOURCE_DIR CASE
Python 3, standard library only."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optim_peak import state_and_peak  # noqa: E402


def main():
    memest, src, case = sys.argv[1], sys.argv[2], int(sys.argv[3])
    name = sys.argv[4] if len(sys.argv) > 4 else "optim_temps.json"
    ref = json.load(open(os.path.join(src, "tests/reference", name)))
    c = ref["cases"][case]
    model = os.path.join(src, "models", c["model"] + ".json")
    args = [memest, model, "--batch", str(c["batch"]), "--optim", c["optim"],
            "--optim-impl", c["impl"], "--dtype", {"float32": "fp32", "bfloat16": "bf16"}[c["dtype"]]]
    state, peak = state_and_peak(args)
    print("case %d %s %s: state %d (PyTorch %d), temporaries %d (PyTorch %d)"
          % (case, c["model"], c["optim"], state, c["state_bytes"], peak, c["temporaries_peak"]))
    if state != c["state_bytes"] or peak != c["temporaries_peak"]:
        sys.exit("case %d: memest differs from PyTorch" % case)


if __name__ == "__main__":
    main()
