"""What tests/optim's checks read from memest: the optimizer state's bytes (--json
memory.optimizer_state) and the most optimizer-temporary bytes alive at once in the optimizer phase
of --timeline (exact tensor bytes). Python 3, standard library only."""
import csv
import json
import os
import subprocess
import sys
import tempfile


def state_and_peak(args):
    """(state bytes, temporaries' peak) of memest run with `args` (memest first), or exit."""
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
    return state, peak
