#!/usr/bin/python3
"""memest's optimizer FLOPs (--json flops.optimizer_macs / flops.optimizer, and a sweep's step_flops
with --grad-accum) for Muon's Newton-Schulz iterations, against figures worked out by hand below.
    check_flops.py MEMEST CASE
Python 3, standard library only.

torch.optim.Muon's _zeropower_via_newtonschulz (pytorch/pytorch@098e03f torch/optim/_muon.py:60-77):
X = grad.bfloat16(), transposed when rows > cols, so X is [m, n] with m <= n; 5 iterations of
    gram_matrix = X @ X.T           m * m * n MACs
    gram_matrix @ gram_matrix       m * m * m
    gram_update @ X                 m * m * n
so 5 * (2 m^2 n + m^3) MACs per hidden matrix, 2 FLOPs per MAC.

The model (optim_peak.py's MLP): x [B, 64], Linear(64, 256), ReLU, Linear(256, 256), ReLU, Linear(256, 10).
Weights [256, 64] (tall: transposed, m = 64, n = 256) and [256, 256] go to Muon; the head [10, 256]
and the biases to AdamW (no matrix products).
    [256, 64]:  5 * (2 * 64^2 * 256 + 64^3)  = 5 * (2097152 + 262144)   = 11796480
    [256, 256]: 5 * (2 * 256^3 + 256^3)      = 5 * 50331648             = 251658240
    in all 263454720 MACs = 526909440 FLOPs, once per optimizer step.
The forward at batch 8: 8 * (64 * 256 + 256 * 256 + 256 * 10) = 8 * 84480 = 675840 MACs; the backward
twice each linear's but the first's (its input needs no gradient: only the weight's):
8 * (64 * 256 + 2 * 256 * 256 + 2 * 256 * 10) = 8 * 152576 = 1220608; fwd + bwd 1896448 MACs =
3792896 FLOPs per micro-batch. With --grad-accum 4 the step's FLOPs are 4 * 3792896 + 526909440 =
542081024: the optimizer runs once per 4 micro-batches, not per micro-batch.
"""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optim_peak import write_mlp  # noqa: E402

def ns_macs(rows, cols):
    m, n = min(rows, cols), max(rows, cols)
    return 5 * (2 * m * m * n + m * m * m)


MUON_MACS = ns_macs(256, 64) + ns_macs(256, 256)
assert ns_macs(256, 64) == 11796480 and ns_macs(256, 256) == 251658240
assert MUON_MACS == 263454720
STEP_FLOPS = 2 * 8 * (84480 + 152576)                 # 3792896, one micro-batch's forward + backward
assert STEP_FLOPS == 3792896

CASES = [
    # Muon: the Newton-Schulz products, apart from the step's forward + backward
    dict(args=["--optim", "muon"], macs=MUON_MACS, step=STEP_FLOPS),
    # AdamW: elementwise only
    dict(args=["--optim", "adamw"], macs=0, step=STEP_FLOPS),
    # bf16 parameters: the same products (Newton-Schulz runs in bf16 whatever the dtype)
    dict(args=["--optim", "muon", "--dtype", "bf16"], macs=MUON_MACS, step=STEP_FLOPS),
    # DDP over 2 GPUs: each rank orthogonalises every matrix, as one GPU does
    dict(args=["--optim", "muon", "--gpus", "2"], macs=MUON_MACS, step=STEP_FLOPS),
    # the sweep's step with --grad-accum 4: 4 micro-batches, one optimizer step
    dict(args=["--optim", "muon", "--grad-accum", "4"], macs=MUON_MACS, step=STEP_FLOPS,
         sweep=4 * STEP_FLOPS + 2 * MUON_MACS),
]


def run(args):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


def main():
    memest, case = sys.argv[1], int(sys.argv[2])
    c = CASES[case]
    with tempfile.TemporaryDirectory() as d:
        model = write_mlp(d)
        fl = json.loads(run([memest, model, "--batch", "8", "--json"] + c["args"]))["flops"]
        got = (fl["optimizer_macs"], fl["optimizer"], fl["step"])
        want = (c["macs"], 2 * c["macs"], c["step"])
        print("case %d: optimizer MACs, FLOPs, step FLOPs %s (by hand %s)" % (case, got, want))
        if got != want:
            sys.exit("case %d: memest differs from the hand figures" % case)
        if "sweep" in c:
            rows = list(csv.DictReader(io.StringIO(run([memest, "sweep", model, "8", "--csv"] + c["args"]))))
            step = int(float(rows[0]["step_flops"]))
            print("case %d: sweep step_flops %d (by hand %d)" % (case, step, c["sweep"]))
            if step != c["sweep"]:
                sys.exit("case %d: the sweep's step differs from the hand figure" % case)


if __name__ == "__main__":
    main()
