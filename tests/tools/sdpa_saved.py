"""Saved-for-backward bytes of attention as transformers v4.48.0 runs it, under
PyTorch 2.6 on the CPU (run with ../shared/tools/torch2-chroot python3 THIS),
to check src/ops/ops_sdpa.c and the hand calculations of
tests/unit/test_ops_sdpa.c.

q, k, v are made as transformers makes them: a projection's output
[B, L, H*D] viewed as [B, L, H, D] and transposed to [B, H, L, D] (a
non-contiguous view). Counted: the distinct storages the attention's autograd
nodes save (torch.autograd.graph.saved_tensors_hooks), the projections'
outputs included when saved. CPU -> CUDA corrections, printed separately:
- dropout on the CPU keeps a mask of the input's dtype (_dropout_impl); CUDA's
  native_dropout keeps a bool one;
- the CPU SDPA flash kernel (_scaled_dot_product_flash_attention_for_cpu)
  saves q, k, v, the output and a float32 logsumexp [B, L, H] like CUDA's
  flash, but does not pad the head dim to a multiple of 8 (the cases use
  multiples of 8).

Cases: eager (eager_attention_forward: repeat_kv, matmul, * scaling, + mask,
softmax(float32).to(dtype), dropout, matmul), sdpa with the math kernel
forced, sdpa with the flash kernel forced.
"""
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def repeat_kv(x, n_rep):
    b, h, s, d = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


def eager(q, k, v, mask, p, softmax_fp32, softcap, n_rep):
    k = repeat_kv(k, n_rep)
    v = repeat_kv(v, n_rep)
    w = torch.matmul(q, k.transpose(2, 3)) * (q.shape[-1] ** -0.5)
    if softcap:
        w = w / softcap
        w = torch.tanh(w)
        w = w * softcap
    if mask is not None:
        w = w + mask
    if softmax_fp32:
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    else:
        w = F.softmax(w, dim=-1)
    w = F.dropout(w, p=p, training=True)
    return torch.matmul(w, v)


def sdpa(q, k, v, p, causal, n_rep, backend, gqa):
    if not gqa:
        k = repeat_kv(k, n_rep)
        v = repeat_kv(v, n_rep)
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=causal,
                                              enable_gqa=gqa)


def case(kind, dt, B=2, Hq=4, Hkv=4, L=8, S=8, D=16, p=0.0, causal=True, softmax_fp32=True,
         softcap=0.0, gqa=False):
    def proj(n, h, d):
        x = torch.randn(B, n, h * d, dtype=dt, requires_grad=True)
        y = x * 1  # stands for the projection's output (an activation)
        return y.view(B, n, h, d).transpose(1, 2)

    q, k, v = proj(L, Hq, D), proj(S, Hkv, D), proj(S, Hkv, D)
    saved = {}

    def pack(t):
        st = t.untyped_storage()
        saved[st.data_ptr()] = (st.nbytes(), t.dtype, tuple(t.shape))
        return t

    mask = None
    if kind == "eager" and causal:
        mask = torch.full((L, S), torch.finfo(dt).min, dtype=dt).triu(1)[None, None]
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        if kind == "eager":
            out = eager(q, k, v, mask, p, softmax_fp32, softcap, Hq // Hkv)
        else:
            be = {"math": SDPBackend.MATH, "flash": SDPBackend.FLASH_ATTENTION}[kind]
            out = sdpa(q, k, v, p, causal, Hq // Hkv, be, gqa)
    total = sum(b for b, _, _ in saved.values())
    # CUDA correction: dropout masks of the input's dtype on the CPU, bool on CUDA
    corr = 0
    if p > 0 and kind != "flash":
        att = B * Hq * L * S
        # eager drops out the scores in the input dtype; math in float32
        mdt = torch.float32 if kind == "math" else dt
        corr = -att * (torch.finfo(mdt).bits // 8 - 1)
    return {"kind": kind, "dtype": str(dt), "B": B, "Hq": Hq, "Hkv": Hkv, "L": L, "S": S,
            "D": D, "p": p, "causal": causal, "softmax_fp32": softmax_fp32, "softcap": softcap,
            "gqa": gqa, "saved_cpu": total, "cuda_correction": corr, "saved_cuda": total + corr,
            "tensors": sorted([list(s) + [str(d)] for b, d, s in saved.values()],
                              key=str)}


CASES = [
    dict(kind="eager", dt=torch.float16),
    dict(kind="eager", dt=torch.float16, p=0.1),
    dict(kind="eager", dt=torch.float16, p=0.1, softmax_fp32=False),
    dict(kind="eager", dt=torch.float32),
    dict(kind="eager", dt=torch.float16, Hkv=2),
    dict(kind="eager", dt=torch.bfloat16, softcap=50.0),
    dict(kind="math", dt=torch.float16),
    dict(kind="math", dt=torch.float16, Hkv=2, gqa=True),
    dict(kind="math", dt=torch.float32, p=0.1),
    dict(kind="math", dt=torch.float32, Hkv=2),
    dict(kind="flash", dt=torch.float16),
    dict(kind="flash", dt=torch.float16, Hkv=2),
    dict(kind="flash", dt=torch.bfloat16, L=8, S=8, D=32),
]

if __name__ == "__main__":
    torch.manual_seed(0)
    res = [case(**c) for c in CASES]
    json.dump(res, sys.stdout, indent=1)
    print()
