"""llm_ops_saved.py - the bytes autograd saves for the LLM ops of
src/ops/ops_llm*.c, measured with torch.autograd.graph.saved_tensors_hooks
on PyTorch 2.x (CPU), for the cases of tests/unit/test_ops_llm.c.

    ../shared/tools/torch2-chroot python3 tests/tools/llm_ops_saved.py

The modules follow transformers v4.48.0 (models/llama/modeling_llama.py:
LlamaRMSNorm, LlamaRotaryEmbedding with the default rope, rotate_half,
apply_rotary_pos_emb, LlamaMLP's act_fn(gate) * up; models/gemma: GemmaRMSNorm;
models/gemma2: the final logit soft-capping). Storages are de-duplicated and
parameters excluded, as tests/tools/torch_figures.py counts them. Prints one
line per case: name, saved bytes, and the figure the unit test expects."""
import torch
import torch.nn as nn
import torch.nn.functional as F

# the modules as transformers v4.48.0 writes them (the HF reference models)
from hf_models import GemmaRMSNorm, LlamaRMSNorm, rotate_half


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_scaling = 1.0

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        with torch.autocast(device_type="cpu", enabled=False):
            freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos = emb.cos()
            sin = emb.sin()
        cos = cos * self.attention_scaling
        sin = sin * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def apply_one(q, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin)


def apply_partial(q, cos, sin):
    """Phi-3 / GPT-NeoX: rotate q[..., :rd], pass the rest."""
    rd = cos.shape[-1]
    q_rot, q_pass = q[..., :rd], q[..., rd:]
    return torch.cat([apply_one(q_rot, cos, sin), q_pass], dim=-1)


def saved_bytes(fn, params=()):
    """Runs fn() recording saved tensors; returns the de-duplicated bytes of
    the non-parameter storages."""
    pids = {p.untyped_storage().data_ptr() for p in params}
    seen = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in pids:
            seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return sum(seen.values()), out


def x_of(shape, dtype, rg=True):
    return torch.randn(*shape, dtype=dtype).requires_grad_(rg)


def report(name, got, expected):
    print(f"{name:40s} saved {got:6d}  memest test {expected:6d}  {'ok' if got == expected else 'DIFF'}")
    return got == expected


def main():
    ok = True
    for dt, exp in ((torch.float32, 2112), (torch.bfloat16, 1600)):
        m = LlamaRMSNorm(16).to(dt)
        x = x_of((2, 8, 16), dt)
        got, _ = saved_bytes(lambda: m(x), m.parameters())
        ok &= report(f"rmsnorm llama {dt}", got, exp)
    # mixed: float32 weight, bf16 input (autocast's case)
    m = LlamaRMSNorm(16)
    x = x_of((2, 8, 16), torch.float32)
    got, out = saved_bytes(lambda: m(x.to(torch.bfloat16)), m.parameters())
    ok &= report("rmsnorm llama f32 weight, bf16 x", got, 1600)
    ok &= report("  ... result dtype float32", int(out.dtype == torch.float32), 1)
    # weight only
    x = x_of((2, 8, 16), torch.float32, rg=False)
    got, _ = saved_bytes(lambda: m(x), m.parameters())
    ok &= report("rmsnorm llama weight only", got, 1024)
    for dt in (torch.float32, torch.bfloat16):
        g = GemmaRMSNorm(16).to(dt)
        x = x_of((2, 8, 16), dt)
        got, _ = saved_bytes(lambda: g(x), g.parameters())
        ok &= report(f"rmsnorm gemma {dt}", got, 2176)

    for dt, exp in ((torch.float32, 6144), (torch.bfloat16, 3072)):
        gate, up = x_of((2, 8, 32), dt), x_of((2, 8, 32), dt)
        got, _ = saved_bytes(lambda: F.silu(gate) * up)
        ok &= report(f"act_mul silu {dt}", got, exp)
    gate, up = x_of((2, 8, 32), torch.float32), x_of((2, 8, 32), torch.float32, rg=False)
    got, _ = saved_bytes(lambda: F.silu(gate) * up)
    ok &= report("act_mul silu, only gate requires grad", got, 4096)
    gate, up = x_of((2, 8, 32), torch.float32, rg=False), x_of((2, 8, 32), torch.float32)
    got, _ = saved_bytes(lambda: F.silu(gate) * up)
    ok &= report("act_mul silu, only up requires grad", got, 2048)

    h = x_of((2, 8, 64), torch.float32)
    pos = torch.arange(8).unsqueeze(0)
    for dim, D, exp in ((16, 16, 1024), (8, 16, 512)):
        rope = LlamaRotaryEmbedding(dim)
        got_r, (cos, sin) = saved_bytes(lambda: rope(h, pos))
        ok &= report(f"rotary_embedding dim {dim}", got_r, 0)
        q = x_of((2, 4, 8, D), torch.float32)
        fn = (lambda: apply_one(q, cos, sin)) if dim == D else (lambda: apply_partial(q, cos, sin))
        got, _ = saved_bytes(fn)
        ok &= report(f"apply_rotary rd {dim} of {D}", got, exp)

    x = x_of((2, 8, 32), torch.float32)
    got, _ = saved_bytes(lambda: torch.tanh(x / 30.0) * 30.0)
    ok &= report("softcap", got, 2048)
    x = x_of((2, 8), torch.float32)
    got, _ = saved_bytes(lambda: x.pow(2))
    ok &= report("pow", got, 64)
    xb = x_of((2, 8), torch.bfloat16)
    got, out = saved_bytes(lambda: F.softmax(xb, -1, dtype=torch.float32))
    ok &= report("softmax bf16 -> float32", got, 64)
    print("ALL MATCH" if ok else "SOME DIFFER")


if __name__ == "__main__":
    main()
