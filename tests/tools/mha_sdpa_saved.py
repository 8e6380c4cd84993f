"""Saved-for-backward bytes of nn.MultiheadAttention in training mode under
PyTorch 2.6 on the CPU (run from the repository root with
../shared/tools/torch2-chroot python3 tests/tools/mha_sdpa_saved.py > tests/reference/mha_sdpa_saved_26.json),
to check src/ops/ops_attention.c's PyTorch >= 2.0 path (need_weights=False:
F.multi_head_attention_forward calls scaled_dot_product_attention) and the
hand calculations of tests/unit/test_ops_mha_sdpa.c.

Counted as tests/tools/torch_figures.py's measure() counts (imported):
every tensor autograd saves (torch.autograd.graph.saved_tensors_hooks),
distinct storages, the parameters' storages excluded, the inputs' storages
included when saved. Each case also lists the saved storages (grad_fn and
attribute that first saved each, its shape and bytes) so that a figure can be
taken apart, and which SDPA kernel the CPU ran (the backward node's name).
Float32, N = 2, E = 64, 4 heads (head dim 16), L = 10 (S = 7 for
cross-attention); the inputs require grad, as a layer's inputs do.
"""
import contextlib
import json
import os
import sys

import torch
import torch.nn as nn
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_figures as tr  # noqa: E402
from provenance import stamp  # noqa: E402

N, E, H, L, S = 2, 64, 4, 10, 7


class Wrap(nn.Module):
    """One nn.MultiheadAttention called as a model calls it; returns output 0
    (and the weights when need_weights)."""

    def __init__(self, mha, need_weights, mask, is_causal, how):
        super().__init__()
        self.mha, self.nw, self.mask, self.causal, self.how = mha, need_weights, mask, is_causal, how

    def forward(self, *xs):
        if self.how == "self":  # mha(x, x, x): _in_projection_packed's self-attention branch
            q = k = v = xs[0]
        elif self.how == "kv":  # mha(q, m, m): encoder-decoder branch (q and kv linears)
            q, (k,) = xs[0], xs[1:]
            v = k
        else:  # three distinct tensors
            q, k, v = xs
        out, w = self.mha(q, k, v, need_weights=self.nw, attn_mask=self.mask, is_causal=self.causal)
        return (out, w) if w is not None else out


def case(name, batch_first=False, kdim=None, vdim=None, dropout=0.0, need_weights=False,
         bias_kv=False, zero_attn=False, mask=None, is_causal=False, how="self", Lq=L, Sk=None,
         dtype=torch.float32, backend=None):
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(E, H, dropout=dropout, add_bias_kv=bias_kv, add_zero_attn=zero_attn,
                                kdim=kdim, vdim=vdim, batch_first=batch_first, dtype=dtype)
    Sk = Sk or (S if how == "three" and (kdim or vdim) else Lq)

    def inp(n, e):
        shape = (N, n, e) if batch_first else (n, N, e)
        return torch.randn(*shape, dtype=dtype, requires_grad=True)

    if how == "self":
        xs = [inp(Lq, E)]
    elif how == "kv":
        xs = [inp(Lq, E), inp(Sk, E)]
    else:
        xs = [inp(Lq, E), inp(Sk, kdim or E), inp(Sk, vdim or E)]
    m = None
    if mask == "causal":  # nn.Transformer.generate_square_subsequent_mask: float [L, L], -inf above
        m = torch.triu(torch.full((Lq, Lq), float("-inf"), dtype=dtype), diagonal=1)
    model = Wrap(mha, need_weights, m, is_causal, how)

    # the storages themselves, named by their first saver
    names = {}
    packs = []

    def pack(t):
        packs.append(t)
        return t

    kernel = sdpa_kernel(backend) if backend is not None else contextlib.nullcontext()
    torch.manual_seed(0)
    with kernel, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(*xs)
    outs = tr.flat_tensors(out)
    for node in tr.reachable([t.grad_fn for t in outs]):
        for a in dir(node):
            if a.startswith("_saved_"):
                try:
                    v = getattr(node, a)
                except Exception:
                    continue
                if isinstance(v, torch.Tensor):
                    names.setdefault((tr.sptr(v), tuple(v.shape)), (type(node).__name__, a))
    pb = {tr.sptr(p) for p in model.parameters()}
    seen = {}
    for t in packs:
        p = tr.sptr(t)
        if p in pb or p in seen:
            continue
        g, a = names.get((p, tuple(t.shape)), ("?", "?"))
        seen[p] = {"grad_fn": g, "attr": a, "shape": list(t.shape), "dtype": tr.dtn(t.dtype),
                   "bytes": tr.sbytes(t)}
    kernels = sorted({s["grad_fn"] for s in seen.values() if "Attention" in s["grad_fn"]})

    kernel = sdpa_kernel(backend) if backend is not None else contextlib.nullcontext()
    torch.manual_seed(0)
    with kernel:
        r = tr.measure(model, xs)
    assert r["saved_activation_bytes"] == sum(s["bytes"] for s in seen.values()), name
    return {"name": name, "N": N, "E": E, "heads": H, "L": Lq, "S": Sk, "kdim": kdim or E,
            "vdim": vdim or E, "batch_first": batch_first, "dropout": dropout,
            "need_weights": need_weights, "add_bias_kv": bias_kv, "add_zero_attn": zero_attn,
            "attn_mask": mask, "is_causal": is_causal, "inputs": how, "dtype": tr.dtn(dtype),
            "backend": backend.name if backend is not None else "auto",
            "saved_activation_bytes": r["saved_activation_bytes"], "saved_storages": r["saved_storages"],
            "saved_input_bytes": r["saved_input_bytes"], "sdpa_kernel_nodes": kernels,
            "storages": sorted(seen.values(), key=lambda s: (s["grad_fn"], s["attr"], s["shape"]))}


CASES = [
    dict(name="self_seq_first"),
    dict(name="self_batch_first", batch_first=True),
    dict(name="self_three_inputs_same_dims", how="three"),
    dict(name="encoder_decoder_kv", how="kv", Sk=S),
    dict(name="cross_kdim_vdim", how="three", kdim=32, vdim=48),
    dict(name="cross_kdim_vdim_batch_first", how="three", kdim=32, vdim=48, batch_first=True),
    dict(name="self_bf16", dtype=torch.bfloat16),
    dict(name="cross_kdim_vdim_bf16", how="three", kdim=32, vdim=48, dtype=torch.bfloat16),
    dict(name="self_dropout", dropout=0.1),
    dict(name="self_math", backend=SDPBackend.MATH),
    dict(name="self_bias_kv", bias_kv=True),
    dict(name="self_zero_attn", zero_attn=True),
    dict(name="self_causal_mask", mask="causal"),
    dict(name="self_causal_mask_is_causal", mask="causal", is_causal=True),
    dict(name="self_need_weights", need_weights=True),
    dict(name="self_need_weights_batch_first", need_weights=True, batch_first=True),
]

if __name__ == "__main__":
    torch.set_num_threads(1)
    res = {"generator": "tests/tools/mha_sdpa_saved.py", "torch_version": torch.__version__,
           "cases": [case(**c) for c in CASES]}
    res = stamp(res, "tests/tools/mha_sdpa_saved.py", {"torch": torch.__version__})
    json.dump(res, sys.stdout, indent=1)
    print()
