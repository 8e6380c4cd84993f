#!/usr/bin/python3
"""memest's optimizer state (--json memory.optimizer_state) and the most optimizer-temporary bytes
alive at once in the optimizer phase of --timeline, for Llama-3-8B in bf16 (models/hf/llama-3-8b.json),
against figures worked out by hand below from the optimizers' sources (src/step/optim.c cites them).
    check_hand.py MEMEST SOURCE_DIR CASE
Python 3, standard library only.

Llama-3-8B: hidden 4096, intermediate 14336, vocabulary 128256, 32 layers, 8 key-value heads of 128.
Per layer q_proj and o_proj [4096, 4096] (16777216 each), k_proj and v_proj [1024, 4096] (4194304 each),
gate_proj and up_proj [14336, 4096] and down_proj [4096, 14336] (58720256 each), two norms [4096]:
2 * 16777216 + 2 * 4194304 + 3 * 58720256 = 218103808 in matrices, 32 layers 6979321856. Besides:
embed_tokens and lm_head (untied) [128256, 4096] 525336576 each, 65 norms [4096] 266240: 1050939392.
In all 8030261248 parameters, 291 tensors.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optim_peak import state_and_peak  # noqa: E402

H = 4096
MATRICES = 32 * (2 * H * H + 2 * 1024 * H + 3 * 14336 * H)     # 6979321856, Muon's
EMBED = 128256 * H                                              # 525336576
NORMS = 65 * H                                                  # 266240
OTHERS = 2 * EMBED + NORMS                                      # 1050939392, AdamW's under Muon
assert MATRICES + OTHERS == 8030261248

# torch.optim.Adafactor (bf16 state, the gradient's dtype): rows + cols per matrix, a copy per vector
ADAFACTOR_ELEMS = (32 * ((H + H) * 2 + (1024 + H) * 2 + (14336 + H) * 3) + NORMS + 2 * (128256 + H))
assert ADAFACTOR_ELEMS == 3152384

CASES = [
    # AdamW: exp_avg and exp_avg_sq, bf16, of every parameter; foreach: one exp_avg_sq_sqrt list
    dict(optim="adamw", state=2 * 2 * (MATRICES + OTHERS), temps=2 * (MATRICES + OTHERS)),
    # Muon: momentum_buffer (bf16) of the hidden matrices, AdamW's two copies of the rest:
    # 13958643712 + 4203757568 = 18162401280 (AdamW's 32121044992). The temporaries' peak:
    # AdamW's foreach exp_avg_sq_sqrt list over its parameters, 2 * 1050939392 = 2101878784, above
    # Newton-Schulz's 419430400 for gate_proj (test_optim.c).
    dict(optim="muon", state=2 * MATRICES + 2 * 2 * OTHERS, temps=2 * OTHERS),
    # torch.optim.Adafactor: 3152384 bf16 elements = 6304768 bytes. Foreach: the matrices' group
    # first (embed_tokens leads), its var_estimates list (bf16, the matrices' size) alive while the
    # vectors' grads_squared list is made: 2 * (6979321856 + 2 * 525336576) + 2 * 266240
    dict(optim="adafactor", state=2 * ADAFACTOR_ELEMS, temps=2 * (MATRICES + 2 * EMBED) + 2 * NORMS),
    # transformers' Adafactor: the same elements in float32, and a 4-byte RMS per tensor:
    # 12609536 + 1164 = 12610700. Peak at embed_tokens (the first parameter, nothing before it):
    # grad.float(), p.float(), the old update and the product of the factors, 4 float32 copies,
    # and the row and column factors: 4 * 4 * 525336576 + 4 * (128256 + 4096) = 8405914624.
    dict(optim="hf_adafactor", state=4 * ADAFACTOR_ELEMS + 4 * 291,
         temps=4 * 4 * EMBED + 4 * (128256 + H)),
    # DDP over 2 GPUs: each rank updates every whole parameter, as one GPU does
    dict(optim="muon", state=2 * MATRICES + 2 * 2 * OTHERS, temps=2 * OTHERS, extra=["--gpus", "2"]),
    dict(optim="hf_adafactor", state=4 * ADAFACTOR_ELEMS + 4 * 291,
         temps=4 * 4 * EMBED + 4 * (128256 + H), extra=["--gpus", "2"]),
]


def main():
    memest, src, case = sys.argv[1], sys.argv[2], int(sys.argv[3])
    c = CASES[case]
    args = [memest, os.path.join(src, "models/hf/llama-3-8b.json"), "--dtype", "bf16", "--batch", "1",
            "--set", "seq_len=512", "--optim", c["optim"]] + c.get("extra", [])
    state, peak = state_and_peak(args)
    print("case %d %s: state %d (by hand %d), temporaries %d (by hand %s)"
          % (case, c["optim"], state, c["state"], peak, c["temps"]))
    if state != c["state"] or (c["temps"] is not None and peak != c["temps"]):
        sys.exit("case %d: memest differs from the hand figures" % case)


if __name__ == "__main__":
    main()
