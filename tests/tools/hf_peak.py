#!/usr/bin/python3
"""Peak live tensor bytes of one steady-state training step of the tiny Hugging Face decoder LLMs, measured
in real PyTorch 2.6 (CPU) -- the ground truth for memest's `memory.peak_tensors` (issue 12: "peaks within
3%"; checked by tests/hf/peaks.cmake).

    ../shared/tools/torch2-chroot python3 tests/tools/hf_peak.py [OUT.json]

(run from the checkout root; CPU only, a few seconds; default output tests/reference/hf_peaks.json).

The models are tests/tools/hf_models.py's and hf_models_moe.py's (transformers v4.48.0, op by op; their
forward returns logits.float().view(-1, V), where ForCausalLMLoss starts), built from the tiny configs
tests/hf/tiny/NAME.json after torch.manual_seed(0) (float32; bfloat16 for SDPA's flash kernel, built
under torch.set_default_dtype as from_pretrained(torch_dtype=...) does), batch 2, sequence 16, attention
"eager" and "sdpa" (Mixtral with balanced round-robin routing, the split memest assumes; see hf_models_moe.py).

The step (the one memest simulates, src/sim/sim_internal.h)
-----------------------------------------------------------
    model.train(); opt = SGD(lr=1e-3, foreach=False) | Adam(lr=1e-3, foreach=True)
    x = randint(V, [B, S]); target = randint(V, [B * S])        # made before the loop
    for step in (1, 2):
        opt.zero_grad(set_to_none=True)
        out = model(x)                                         # [B * S, V] float32
        loss = F.cross_entropy(out, target)
        loss.backward()
        opt.step()
        del out, loss
Measured: step 2, from the start of zero_grad to the end of opt.step().

What is counted (the level memest models, as tests/tools/torch_peak.py does for PyTorch 1.13)
-----------------------------------------------------------------------------------------------
Every storage live when step 2 starts that is a parameter, buffer, gradient, optimizer state tensor, x or
target (step 1's gradients die in zero_grad), plus every storage an aten op creates during the step: a
TorchDispatchMode sees each op below autograd (forward, the ops autograd's engine runs in backward -- the
ones seed, the gradient formulas, InputBuffer's adds --, the optimizer's) and registers each output whose
storage is not live yet (views and in-place results share a live one), with the storage's full nbytes,
from the op's return until the storage dies (weakref.finalize on the untyped storage: PyTorch 2.x keeps
one Python object per storage and finalizes it when the StorageImpl is released, whoever held it: a local,
autograd's saved variables, the engine's input buffers, .grad, optimizer state). The peak is the largest
sum of live bytes after any op. Not counted, as on CUDA they use no device memory or are not tensors:
kernel-internal temporaries (allocated and freed inside one op: oneDNN reorders, the CPU flash kernel's
buffers), 0-d "wrapped number" tensors made from Python scalars outside any op, and Adam's state['step']
(a CPU tensor unless capturable or fused).

CPU versus CUDA: the tiny configs have dropout 0 (CUDA's bool masks do not arise). SDPA on the CPU runs
_scaled_dot_product_flash_attention_for_cpu, which saves what CUDA's flash kernel saves (q, k, v, out, a
float32 logsumexp [B, H, L]); in bfloat16 those cases are compared with memest --attention flash. CUDA
runs float32 (and masked: Mistral's window 8 is shorter than the sequence) SDPA with the memory-efficient
kernel instead, which memest --attention auto picks there: its log_sumexp is [B, H, ceil(L/32)*32], 512
bytes more per layer here than the CPU's, a difference far below the 3% checked. peak_tensors is the CUDA
figure: peak_tensors_cpu (what the CPU run holds) with, where CUDA runs flash, its backward's softmax_d
and dq_accum added during that op (flash_bwd_scratch). The float32 cases get no such correction for the
memory-efficient kernel's backward (its peak lies in the MLP's backward, far from it).
"""
import json
import os
import sys
import weakref

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models  # noqa: E402
import hf_models_moe  # noqa: E402

torch.set_num_threads(2)
B, S = 2, 16


def here(*p):
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", *p)


class Live:
    """The live storages counted, their bytes, and the peak of their sum."""

    def __init__(self):
        self.by_ptr = {}    # data_ptr -> token of the live storage at that address
        self.bytes = {}     # token -> nbytes
        self.cur = 0
        self.peak = 0
        self.peak_at = ""
        self.next = 0
        self.phase = ""
        self.cuda_extra = 0  # see Recorder: CUDA flash backward's scratch, during that op only
        self.peak_cuda = 0
        self.peak_cuda_at = ""

    def _gone(self, token, ptr):
        self.cur -= self.bytes.pop(token)
        if self.by_ptr.get(ptr) == token:
            del self.by_ptr[ptr]

    def add(self, t, where):
        """Counts t's storage unless it is live already (a view, an in-place result)."""
        st = t.untyped_storage()
        ptr, n = st.data_ptr(), st.nbytes()
        if n == 0 or ptr in self.by_ptr:
            return
        token = self.next
        self.next += 1
        self.by_ptr[ptr] = token
        self.bytes[token] = n
        self.cur += n
        weakref.finalize(st, self._gone, token, ptr)
        if self.cur > self.peak:
            self.peak = self.cur
            self.peak_at = "%s %s" % (self.phase, where)
        self.check_cuda(where)

    def check_cuda(self, where):
        if self.cur + self.cuda_extra > self.peak_cuda:
            self.peak_cuda = self.cur + self.cuda_extra
            self.peak_cuda_at = "%s %s" % (self.phase, where)


class Recorder(TorchDispatchMode):
    def __init__(self, live):
        super().__init__()
        self.live = live

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is FLASH_BWD and self.live.cuda_flash:
            self.live.cuda_extra = flash_bwd_scratch(args[1])
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self.live.add(t, str(func))
        self.live.check_cuda(str(func))
        self.live.cuda_extra = 0
        return out


FLASH_BWD = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default


def flash_bwd_scratch(q):
    """What CUDA's flash backward allocates besides dq, dk, dv, alive while they are (PyTorch 2.6
    aten/src/ATen/native/transformers/cuda/flash_attn/flash_api.cpp, mha_bwd): softmax_d float32
    [B, H, round_multiple(L, 128)] and, as loop is true, dq_accum float32 [B, round_multiple(L, 128), H,
    head_size_rounded] (head_size_rounded: D rounded up to 32 up to 192, else 256). The CPU kernel's own
    buffers are op-internal and not counted; these are real CUDA allocations during the op. (k and v reach
    SDPA repeated to H heads, transformers' repeat_kv, so there is no GQA expansion of dk, dv.)"""
    Bq, H, L, D = q.shape
    Lr = -(-L // 128) * 128
    Dr = -(-D // 32) * 32 if D <= 192 else 256
    return 4 * Bq * H * Lr + 4 * Bq * Lr * H * Dr


def state_tensors(opt):
    """The optimizer state that lives on the device (Adam's 'step' is a CPU scalar on CUDA too)."""
    for st in opt.state.values():
        for k, v in st.items():
            if isinstance(v, torch.Tensor) and k != "step":
                yield v


def measure(cfg, attn, dtype, optim):
    torch.manual_seed(0)
    torch.set_default_dtype(dtype)  # as from_pretrained(torch_dtype=...): inv_freq stays float32
    try:
        if cfg["model_type"] in hf_models_moe.BUILDERS:
            model = hf_models_moe.BUILDERS[cfg["model_type"]](cfg, attn, balanced=True)
        else:
            model = hf_models.BUILDERS[cfg["model_type"]](cfg, attn)
    finally:
        torch.set_default_dtype(torch.float32)
    model.train()
    V = cfg["vocab_size"]
    torch.manual_seed(0)
    x = torch.randint(V, (B, S))
    target = torch.randint(V, (B * S,))
    if optim == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=1e-3, foreach=False)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    live = Live()
    # CUDA runs SDPA with its flash kernel only in half precision without a mask
    live.cuda_flash = attn == "sdpa" and dtype != torch.float32
    for step in (1, 2):
        if step == 2:
            for t in list(model.parameters()) + list(model.buffers()) + list(state_tensors(opt)) + [x, target]:
                live.add(t, "setup")
            for p in model.parameters():
                if p.grad is not None:
                    live.add(p.grad, "setup")
            live.peak = live.peak_cuda = live.cur
            live.peak_at = live.peak_cuda_at = "setup"
            setup = live.cur
            mode = Recorder(live)
            mode.__enter__()
        live.phase = "zero_grad"
        opt.zero_grad(set_to_none=True)
        live.phase = "forward"
        out = model(x)
        live.phase = "loss"
        loss = F.cross_entropy(out, target)
        live.phase = "backward"
        loss.backward()
        live.phase = "optimizer"
        opt.step()
        del out, loss
        if step == 2:
            mode.__exit__(None, None, None)
    return {"peak_tensors": live.peak_cuda, "peak_at": live.peak_cuda_at, "peak_tensors_cpu": live.peak,
            "peak_cpu_at": live.peak_at, "setup_bytes": setup}


# tiny config, attention, dtype, memest --attention; "auto" in float32 is CUDA's memory-efficient kernel
# (float32 rules flash out), whose log_sumexp is [B, H, ceil(L/32)*32] where the CPU flash kernel's is
# [B, H, L]; in bfloat16 the CPU kernel is the one memest's --attention flash models.
CASES = [
    ("llama", "eager", "float32", "eager"),
    ("llama", "sdpa", "float32", "auto"),
    ("llama", "sdpa", "bfloat16", "flash"),
    ("mistral", "eager", "float32", "eager"),
    ("mistral", "sdpa", "float32", "auto"),  # window 8 < seq 16: a mask (CUDA: efficient; CPU: flash + mask)
    ("qwen2", "eager", "float32", "eager"),
    ("mixtral", "eager", "float32", "eager"),
    ("mixtral", "sdpa", "float32", "auto"),
    ("mixtral", "sdpa", "bfloat16", "flash"),
]
OPTIMS = [("sgd", "for-loop"), ("adam", "foreach")]


def main(argv):
    path = argv[1] if len(argv) > 1 else here("tests", "reference", "hf_peaks.json")
    res = {"_about": "tests/tools/hf_peak.py: peak live tensor bytes of a steady-state training step, "
                     "PyTorch %s CPU, batch %d, seq %d" % (torch.__version__, B, S),
           "batch": B, "seq": S, "cases": []}
    for name, attn, dtype, kernel in CASES:
        with open(here("tests", "hf", "tiny", name + ".json")) as f:
            cfg = json.load(f)
        for optim, impl in OPTIMS:
            r = measure(cfg, attn, getattr(torch, dtype), optim)
            r.update(config=name, attn=attn, dtype=dtype, memest_attention=kernel, optim=optim, impl=impl)
            res["cases"].append(r)
            print("%-8s %-5s %-8s %-4s %-8s %9d  (%s)" % (name, attn, dtype, optim, impl, r["peak_tensors"],
                                                          r["peak_at"]), file=sys.stderr)
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv)
