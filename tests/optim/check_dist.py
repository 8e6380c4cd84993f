#!/usr/bin/python3
"""Distributed Muon under ZeRO and FSDP: one rank's optimizer state (--json
parallel.model_states.optimizer_state, and the optimizer_state allocations of --timeline) and the most
optimizer-temporary bytes alive at once in its optimizer phase, against figures worked out by hand below.
    check_dist.py MEMEST CASE
Python 3, standard library only.

The model Distributed Muon follows (Moonlight, arXiv 2502.16982, Algorithm 1; src/step/optim.c cites
it): ZeRO-1 style, each rank keeps the momentum of its data-parallel partition of every hidden matrix;
at the step the momentum-updated partition is gathered into the full matrix in bf16, Newton-Schulz runs
on the full matrix, and the rank keeps its partition of the update; one matrix at a time. AdamW keeps
its two copies over the rest of the partition. memest cuts each matrix evenly: ceil(numel / ranks) of
it on a rank.

The model (optim_peak.py's MLP): x [B, 64], Linear(64, 256), ReLU, Linear(256, 256), ReLU, Linear(256, 10).
Parameters: W1 [256, 64] 16384, b1 256, W2 [256, 256] 65536, b2 256, head W3 [10, 256] 2560, b3 10:
85002 in all. Muon: W1, W2; AdamW: the biases and the head.

Partitions (elements on one rank):
  ZeRO-1/2, the flat group padded to a multiple of 2 x ranks: 2 ranks 85004 / 2 = 42502,
    4 ranks 85008 / 4 = 21252;
  ZeRO-3, each parameter padded to a multiple of the ranks: 2 ranks 8192 + 128 + 32768 + 128 + 1280 + 5
    = 42501, 4 ranks 4096 + 64 + 16384 + 64 + 640 + 3 = 21251;
  FSDP, one FlatParameter (no blocks: the root unit) of 85002: ceil(85002 / k) = 42501, 21251;
  FSDP2, each parameter's dim-0 chunk padded to ceil(dim0 / k) rows: 4 ranks 64 * 64 + 64 + 64 * 256
    + 64 + 3 * 256 + 3 = 21379 (the head's 10 rows as 3 per rank).
Muon's share: 2 ranks 16384 / 2 + 65536 / 2 = 40960, 4 ranks 4096 + 16384 = 20480.
State (fp32, or the fp32 master's under bf16): 4 * (matrices + 2 * rest).

Temporaries, per matrix in turn; the larger, W2 [256, 256], on k ranks with state element e:
  Nesterov update of the partition 65536 / k * e, its bf16 copy 65536 / k * 2 (none when e = 2), the
  gathered bf16 matrix 65536 * 2 = 131072; freed the two partition tensors, Newton-Schulz on the
  gathered matrix: from the second iteration it, the old and the new X (bf16 [256, 256], 131072 each),
  gram_matrix and gram_update (bf16 [256, 256], 131072 each) alive at once: 5 * 131072 = 655360.
  W1 [256, 64] (m = 64): 32768 + 2 * 32768 + 2 * 64 * 64 * 2 = 114688, less. AdamW's foreach list
  afterwards: its rest of the partition, small. DeepSpeed with bf16 parameters adds its fp32 gradient
  partition, 4 * partition, alive through the step, and its fp32 master partition (4 * partition) is
  among the simulator's state allocations.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optim_peak import figures, write_mlp  # noqa: E402

NUMEL = 16384 + 256 + 65536 + 256 + 2560 + 10
assert NUMEL == 85002
MAT = {2: 16384 // 2 + 65536 // 2, 4: 16384 // 4 + 65536 // 4}
ZERO12 = {2: 85004 // 2, 4: 85008 // 4}
ZERO3 = {2: 8192 + 128 + 32768 + 128 + 1280 + 5, 4: 4096 + 64 + 16384 + 64 + 640 + 3}
FSDP = {2: (NUMEL + 1) // 2, 4: (NUMEL + 3) // 4}
FSDP2 = {4: 64 * 64 + 64 + 64 * 256 + 64 + 3 * 256 + 3}
assert ZERO12 == {2: 42502, 4: 21252} and ZERO3 == {2: 42501, 4: 21251} and FSDP == ZERO3
assert FSDP2 == {4: 21379}


def state(part, k):
    return 4 * (MAT[k] + 2 * (part - MAT[k]))


NS_PEAK = 5 * 256 * 256 * 2   # 655360
assert NS_PEAK == 655360

CASES = [
    dict(args=["--gpus", "2", "--strategy", "zero1"], state=state(ZERO12[2], 2), temps=NS_PEAK),
    dict(args=["--gpus", "2", "--strategy", "zero3"], state=state(ZERO3[2], 2), temps=NS_PEAK),
    dict(args=["--gpus", "2", "--strategy", "fsdp"], state=state(FSDP[2], 2), temps=NS_PEAK),
    # bf16: fp32 master and state; DeepSpeed's fp32 gradient partition alive through the step
    dict(args=["--gpus", "4", "--strategy", "zero1", "--dtype", "bf16"], state=state(ZERO12[4], 4),
         temps=NS_PEAK + 4 * ZERO12[4], master=4 * ZERO12[4]),
    dict(args=["--gpus", "4", "--strategy", "fsdp", "--dtype", "bf16"], state=state(FSDP[4], 4),
         temps=NS_PEAK),
    dict(args=["--gpus", "4", "--strategy", "zero3", "--dtype", "bf16"], state=state(ZERO3[4], 4),
         temps=NS_PEAK + 4 * ZERO3[4], master=4 * ZERO3[4]),
    # FSDP2: the matrices cut by rows (64 of 256 each: the same elements), the head's padding AdamW's
    dict(args=["--gpus", "4", "--strategy", "fsdp", "--fsdp2"], state=state(FSDP2[4], 4), temps=NS_PEAK),
]
assert [c["state"] for c in CASES] == [176176, 176168, 176168, 88096, 88088, 88088, 89112]


def main():
    memest, case = sys.argv[1], int(sys.argv[2])
    c = CASES[case]
    with tempfile.TemporaryDirectory() as d:
        doc, peak, made = figures([memest, write_mlp(d), "--batch", "8", "--optim", "muon"] + c["args"])
    got = (doc["parallel"]["model_states"]["optimizer_state"], made, peak)
    # the simulator's state allocations include DeepSpeed's fp32 master partition (bf16 parameters)
    want = (c["state"], c["state"] + c.get("master", 0), c["temps"])
    print("case %d %s: state (calculator, simulator), temporaries %s (by hand %s)"
          % (case, " ".join(c["args"]), got, want))
    if got != want:
        sys.exit("case %d: memest differs from the hand figures" % case)


if __name__ == "__main__":
    main()
