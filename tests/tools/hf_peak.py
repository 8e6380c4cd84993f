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

CPU versus CUDA: peak_tensors is the CUDA figure, peak_tensors_cpu what the CPU run holds (both in the
output, with the op each peak follows). The tiny configs have dropout 0 (CUDA's bool masks do not arise).
SDPA on the CPU runs _scaled_dot_product_flash_attention_for_cpu, which saves what CUDA's flash kernel
saves (q, k, v, out, a float32 logsumexp [B, H, L]); the corrections (cuda_efficient, Recorder):
  * CUDA's flash kernel (bfloat16, no mask; memest --attention flash): its backward also allocates
    softmax_d and dq_accum while dq, dk, dv are live (flash_bwd_scratch), added during that op;
  * CUDA's memory-efficient kernel (float32, or a mask: Mistral's window 8 is shorter than the sequence;
    memest --attention auto picks it there): log_sumexp [B, H, ceil(L/32)*32] instead of [B, H, L], and the
    output's transpose(1, 2).contiguous() in transformers copies nothing (0 bytes for the CPU's copy). Its
    backward's own buffers are not added (the float32 peaks lie in the MLP's backward, away from it).
And one correction of the measurement itself (Recorder, Live.inplace_heir): the select gradients of a fused
parameter read per slice (transformers' fused experts, self.gate_up_proj[expert_idx]: select_backward's
zero-filled [E, ...] gradients, all feeding the parameter's one AccumulateGrad) are summed by
InputBuffer::accumulate, which adds in place (old.add_(new)) when the buffer is the sole owner -- but never
while a TorchDispatchMode is enabled: isTensorSubclassLike() is then true for every tensor
(aten/src/ATen/TensorSubclassLikeUtils.h), and the mode's run computes old + new, a third whole-size tensor.
torch.profiler's memory events without a mode show the in-place add_ (no allocation). The CUDA figure counts
those sums as in place; the CPU figure is the mode's run. (Other InputBuffer sums are left as the mode runs
them.)
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
from provenance import stamp  # noqa: E402

torch.set_num_threads(2)
B, S = 2, 16


def here(*p):
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", *p)


class Live:
    """The live storages counted, their bytes (as the CPU run holds them, and as CUDA would), and the peaks
    of their sums."""

    def __init__(self):
        self.by_ptr = {}    # data_ptr -> token of the live storage at that address
        self.bytes = {}     # token -> (nbytes, bytes on CUDA)
        self.cur = self.cur_cuda = 0
        self.peak = self.peak_cuda = 0
        self.peak_at = self.peak_cuda_at = ""
        self.cuda_extra = 0  # CUDA-only scratch of the op being recorded (flash backward)
        self.next = 0
        self.phase = ""
        self.heir = {}      # token -> the token that takes its CUDA bytes when it dies (inplace_heir)

    def _gone(self, token, ptr):
        n, nc = self.bytes.pop(token)
        self.cur -= n
        self.cur_cuda -= nc
        if self.by_ptr.get(ptr) == token:
            del self.by_ptr[ptr]
        h = self.heir.pop(token, None)
        if h in self.bytes:  # the storage an in-place op would have kept is the heir's now
            self.bytes[h] = (self.bytes[h][0], self.bytes[h][1] + nc)
            self.cur_cuda += nc

    def inplace_heir(self, old, t):
        """t (just made, not counted yet) is what CUDA would compute in place into old's storage: on CUDA
        t counts nothing until old dies, then old's bytes (as if old's storage lived on as t)."""
        tok = self.by_ptr.get(old.untyped_storage().data_ptr())
        n0 = self.next
        self.add(t, 0)
        if tok is not None and self.next != n0:
            self.heir[tok] = n0

    def add(self, t, cuda_bytes=None):
        """Counts t's storage unless it is live already (a view, an in-place result); cuda_bytes: its size
        on CUDA where that differs."""
        st = t.untyped_storage()
        ptr, n = st.data_ptr(), st.nbytes()
        if n == 0 or ptr in self.by_ptr:
            return
        token = self.next
        self.next += 1
        self.by_ptr[ptr] = token
        self.bytes[token] = (n, n if cuda_bytes is None else cuda_bytes)
        self.cur += n
        self.cur_cuda += self.bytes[token][1]
        weakref.finalize(st, self._gone, token, ptr)

    def check(self, where):
        at = "%s %s" % (self.phase, where)
        if self.cur > self.peak:
            self.peak, self.peak_at = self.cur, at
        if self.cur_cuda + self.cuda_extra > self.peak_cuda:
            self.peak_cuda, self.peak_cuda_at = self.cur_cuda + self.cuda_extra, at


SELECT_BWD = torch.ops.aten.select_backward.default
ADD = torch.ops.aten.add.Tensor
FLASH_FWD = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
FLASH_BWD = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default
CLONE = torch.ops.aten.clone.default


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


def cuda_efficient(query, kwargs):
    """Whether CUDA would run this SDPA call with the memory-efficient kernel rather than flash: flash
    takes neither float32 nor a mask (PyTorch 2.6 sdp_utils.cpp, check_tensor_dtype and
    check_for_attn_mask), and the memory-efficient kernel is next in the priority order."""
    return query.dtype == torch.float32 or kwargs.get("attn_mask") is not None


class Recorder(TorchDispatchMode):
    def __init__(self, live):
        super().__init__()
        self.live = live
        self.efficient_out = set()  # data_ptrs of SDPA outputs CUDA's memory-efficient kernel would make
        self.select_grads = set()   # data_ptrs of select_backward's gradients (and of their sums)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        where = str(func)
        outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        cuda = [None] * len(outs)
        if func is FLASH_FWD and cuda_efficient(args[0], kwargs):
            # CUDA's memory-efficient kernel (PyTorch 2.6 aten/src/ATen/native/transformers/cuda/
            # attention.cu): log_sumexp float32 [B, H, ceil(L / 32) * 32] (kAlignLSE), and an output
            # [B, L, H, D] in memory, returned transposed: transformers' transpose(1, 2).contiguous() of it
            # is the same storage, so the CPU's copy (the next clone of this output) is 0 bytes on CUDA.
            Bq, H, L, _ = args[0].shape
            cuda[1] = 4 * Bq * H * (-(-L // 32) * 32)
            self.efficient_out.add(outs[0].untyped_storage().data_ptr())
        elif func is CLONE and args[0].untyped_storage().data_ptr() in self.efficient_out:
            self.efficient_out.discard(args[0].untyped_storage().data_ptr())
            cuda[0] = 0
        elif func is FLASH_BWD and not cuda_efficient(args[1], kwargs):
            self.live.cuda_extra = flash_bwd_scratch(args[1])
        if func is SELECT_BWD:
            self.select_grads.add(outs[0].untyped_storage().data_ptr())
        elif (func is ADD and self.live.phase == "backward" and len(args) == 2 and not kwargs
              and all(isinstance(a, torch.Tensor) for a in args) and args[0].shape == args[1].shape
              and args[0].untyped_storage().data_ptr() in self.select_grads):
            # InputBuffer::accumulate of a fused parameter's select gradients (one AccumulateGrad for
            # the parameter, fed by every select): CUDA without a dispatch mode runs old.add_(new) (the
            # buffer holds the sole reference: can_accumulate_inplace); under any TorchDispatchMode it
            # runs old + new, since isTensorSubclassLike() is true for every tensor while a mode is
            # enabled (aten/src/ATen/TensorSubclassLikeUtils.h). Counted as in place.
            self.select_grads.discard(args[0].untyped_storage().data_ptr())
            self.select_grads.add(outs[0].untyped_storage().data_ptr())
            self.live.inplace_heir(args[0], outs[0])
            outs, cuda = outs[1:], cuda[1:]
        for t, c in zip(outs, cuda):
            self.live.add(t, c)
        self.live.check(where)
        self.live.cuda_extra = 0
        return out


def state_tensors(opt):
    """The optimizer state that lives on the device (Adam's 'step' is a CPU scalar on CUDA too; a state
    marked is_paged, bitsandbytes' unified memory in tests/tools/bnb_optim_state.py, is not the allocator's)."""
    for st in opt.state.values():
        for k, v in st.items():
            if isinstance(v, torch.Tensor) and k != "step" and not getattr(v, "is_paged", False):
                yield v


def trainer_loss(model, x, target, live):
    """transformers' Trainer.compute_loss (v4.48 to v5, return_outputs False): the outputs are its local and
    die when it returns the loss; the model's logits.float() is ForCausalLMLoss's local. With a release set
    (hf_models.TRANSFORMERS), the loss is computed inside the model as labels make transformers do, the
    outputs (the loss, the half logits, the DynamicCache in hf_models.CACHE) alive until it returns."""
    if hf_models.TRANSFORMERS is not None and isinstance(model, hf_models.ForCausalLM):
        loss, _logits = model(x, target)
        return loss
    outputs = model(x)
    live.phase = "loss"
    return F.cross_entropy(outputs, target)


class SavedBytes:
    """The bytes autograd keeps as the backward starts (memest's memory.saved_at_backward): every storage a
    saved_tensors_hooks pack sees during the forward and the loss (hf_models' GQA emulation reports its own
    through hf_models.SAVED_PACK), counted once, at its CUDA size, if still live then; parameters and buffers
    are not activations."""

    def __init__(self, live, model):
        self.live, self.ptrs = live, set()
        self.skip = {t.untyped_storage().data_ptr() for t in list(model.parameters()) + list(model.buffers())}

    def pack(self, t):
        self.ptrs.add(t.untyped_storage().data_ptr())
        return t

    def total(self):
        n = 0
        for p in self.ptrs - self.skip:
            tok = self.live.by_ptr.get(p)
            if tok is not None:
                n += self.live.bytes[tok][1]
        return n


def measure(cfg, attn, dtype, optim, prepare=None, builders=None, inputs=None, loop="plain"):
    """prepare(model), when given, changes the built model (tests/tools/lora_peak.py: PEFT's LoRA); the
    optimizer gets the parameters that require grad (all of them, without it), as transformers' Trainer
    hands them. optim: "sgd", "adam", or a function making the optimizer from those parameters
    (tests/tools/qlora_peak.py: bitsandbytes' paged 8-bit AdamW). builders: {model_type: build(cfg, attn)}
    of another replica; inputs(cfg, model, dtype): (input_ids, [the model's other input tensors]) instead
    of random input_ids [B, S] (tests/tools/hf_peak_vlm.py: LLaVA's image tokens and pixel_values)."""
    torch.manual_seed(0)
    torch.set_default_dtype(dtype)  # as from_pretrained(torch_dtype=...): inv_freq stays float32
    try:
        if builders is not None:
            model = builders[cfg["model_type"]](cfg, attn)
        elif cfg["model_type"] in hf_models_moe.BUILDERS:
            model = hf_models_moe.BUILDERS[cfg["model_type"]](cfg, attn, balanced=True)
        else:
            model = hf_models.BUILDERS[cfg["model_type"]](cfg, attn)
    finally:
        torch.set_default_dtype(torch.float32)
    if hf_models.NATIVE == "torchtitan":   # torchtitan's own attention (hf_models.titan_attention)
        hf_models.native_prepare(model, S)
    if prepare:
        prepare(model)
    model.train()
    V = cfg["vocab_size"] if "vocab_size" in cfg else cfg["text_config"]["vocab_size"]  # LLaVA: its text model's
    torch.manual_seed(0)
    x, extra = (torch.randint(V, (B, S)), []) if inputs is None else inputs(cfg, model, dtype)
    # the rows of the model's output: B * S, or the model's own count (Gemma3ForConditionalGeneration's loss
    # shifts the logits: B * (S - 1))
    target = torch.randint(V, (getattr(model, "loss_rows", lambda b, s: x.numel())(B, S),))
    params = [p for p in model.parameters() if p.requires_grad]
    if callable(optim):
        opt = optim(params)
    elif optim == "sgd":
        opt = torch.optim.SGD(params, lr=1e-3, foreach=False)
    else:
        opt = torch.optim.Adam(params, lr=1e-3, foreach=True)
    live = Live()
    for step in (1, 2):
        if step == 2:
            live.phase = "setup"
            for t in list(model.parameters()) + list(model.buffers()) + list(state_tensors(opt)) + [x, target] + extra:
                live.add(t)
            for p in model.parameters():
                if p.grad is not None:
                    live.add(p.grad)
            live.check("")
            setup = live.cur
            mode = Recorder(live)
            mode.__enter__()
        live.phase = "zero_grad"
        opt.zero_grad(set_to_none=True)
        live.phase = "forward"
        release = hf_models.TRANSFORMERS is not None and isinstance(model, hf_models.ForCausalLM)
        if release:  # use_cache: the Trainer keeps the outputs until the loss returns; plain keeps `out` only
            hf_models.CACHE = [] if loop == "trainer" else "drop" if loop == "plain" else None
        saved = SavedBytes(live, model) if step == 2 else None
        hooks = torch.autograd.graph.saved_tensors_hooks(saved.pack if saved else (lambda t: t), lambda t: t)
        hf_models.SAVED_PACK = saved.pack if saved else None
        hooks.__enter__()
        if loop == "trainer":
            out, loss = None, trainer_loss(model, x, target, live)
        elif loop == "torchtitan":   # the model returns the half logits (no labels): torchtitan/train.py
            out = model(x)
            live.phase = "loss"
            loss = F.cross_entropy(out.float(), target)
            del out
            out = None
        else:
            out = model(x)
            live.phase = "loss"
            loss = F.cross_entropy(out, target)
        hooks.__exit__(None, None, None)
        hf_models.SAVED_PACK = None
        if release:
            hf_models.CACHE = None   # the outputs dropped before backward (the Trainer), or never kept
        if saved:
            saved_bytes = saved.total()
        live.phase = "backward"
        loss.backward()
        live.phase = "optimizer"
        opt.step()
        del out, loss
        if step == 2:
            mode.__exit__(None, None, None)
    return {"peak_tensors": live.peak_cuda, "peak_at": live.peak_cuda_at, "peak_tensors_cpu": live.peak,
            "peak_cpu_at": live.peak_at, "setup_bytes": setup, "saved_at_backward": saved_bytes}


# tiny config, attention, dtype, memest --attention: the kernel CUDA would run (see "CPU versus CUDA": auto
# picks the memory-efficient one for float32 or a mask; flash refuses float32)
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
    ("deepseek_v3", "eager", "float32", "eager"),
    # v head dim unlike q's: the CPU runs the math kernel (check_head_dim_size_cpp), CUDA the efficient one
    ("deepseek_v3", "sdpa", "float32", "math"),
    ("deepseek_v3", "eager", "bfloat16", "eager"),
]
OPTIMS = [("sgd", "for-loop"), ("adam", "foreach")]


def write_cases(path, cases, generator, transformers, width=8, seq=None, builders=None, inputs=None):
    """Measures each (config, attn, dtype, memest's --attention) of cases under OPTIMS and writes them to
    path in this file's layout (tests/hf/peaks.cmake reads it); generator and transformers go to the
    provenance stamp; seq (the layout's "seq": S unless given), builders and inputs as measure() takes them."""
    seq = S if seq is None else seq
    res = {"_about": "%s: peak live tensor bytes of a steady-state training step, "
                     "PyTorch %s CPU, batch %d, seq %d" % (generator, torch.__version__, B, seq),
           "batch": B, "seq": seq, "cases": []}
    for name, attn, dtype, kernel in cases:
        with open(here("tests", "hf", "tiny", name + ".json")) as f:
            cfg = json.load(f)
        for optim, impl in OPTIMS:
            r = measure(cfg, attn, getattr(torch, dtype), optim, builders=builders, inputs=inputs)
            r.update(config=name, attn=attn, dtype=dtype, memest_attention=kernel, optim=optim, impl=impl)
            res["cases"].append(r)
            print("%-*s %-5s %-8s %-4s %-8s %9d  (%s)" % (width, name, attn, dtype, optim, impl,
                                                          r["peak_tensors"], r["peak_at"]), file=sys.stderr)
    res = stamp(res, generator, {"torch": torch.__version__, "transformers": transformers})
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")


def main(argv):
    path = argv[1] if len(argv) > 1 else here("tests", "reference", "hf_peaks.json")
    write_cases(path, CASES, "tests/tools/hf_peak.py", "v4.48.0 (followed in plain PyTorch, not imported)")


if __name__ == "__main__":
    main(sys.argv)
