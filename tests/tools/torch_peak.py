#!/usr/bin/python3
"""Peak live tensor bytes of one steady-state training step, and of an inference forward pass,
measured in real PyTorch (Debian's torch 1.13 / torchvision 0.14, CPU) -- ground truth for memest's
step simulator (issue 3, "Validation").

How to run (CPU only, no GPU, no pip):

    /usr/bin/python3 tests/tools/torch_peak.py                      # everything -> tests/reference/torch_peaks.json
    /usr/bin/python3 tests/tools/torch_peak.py --models mlp-mnist,resnet18 /tmp/sub.json
    /usr/bin/python3 tests/tools/torch_peak.py --quick              # batch 1, for-loop only, no gpt2 -> /tmp
    /usr/bin/python3 tests/tools/torch_peak.py --selftest           # only the hand-checked cases

Options: --models a,b (default: all of torch_figures.MODELS), --batches 1,2, --optims sgd,sgd_momentum,adam,
--impls for-loop,foreach, --quick (batch 1, for-loop only, and without --models every model but gpt2),
--traces DIR (default /tmp/torch_traces; "none" disables), --real-blas (run mm/addmm/bmm/baddbmm for real,
see "Stubbed BLAS ops"), --verify-stub a,b (default mlp-mnist,alexnet,resnet18,lstm-lm; "none"),
--verify-step1 a,b (default mlp-mnist,resnet18; "none"), --selftest (only the hand-checked cases).
A full run writes tests/reference/torch_peaks.json; a partial run (--models/--quick/--batches/--optims/--impls)
writes /tmp/torch_peaks_partial.json unless an output path is given. The tables go to stdout, progress to stderr.
Runtime ~8 min on 2 idle cores (more on a loaded machine), peak RSS ~8 GiB (GPT-2, batch 2).

The models are torch_figures.py's (imported, not copied): torchvision alexnet/vgg16/resnet18/resnet50/
mobilenet_v2, BERT-base (+pooler), GPT-2 small (seq 1024), lstm-lm ([35,B] int64, sequence first), mlp-mnist,
fp32, torch.manual_seed(0) before building each model and before creating each input.

The step (memest simulates the same thing)
------------------------------------------
    model.train(); opt = Optim(model.parameters(), lr=1e-3, [momentum=0.9], foreach=False|True)
    x, target created before the loop; target: int64 class indices of shape out.shape[:-1], values < V
    for step in (1, 2):
        opt.zero_grad(set_to_none=True)
        out = model(x)      # the model's last output (BERT: pooler output [B,768]; GPT-2 logits [B,S,V];
                            # lstm-lm: [35,B,10000]); other outputs are dropped at once
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))
        loss.backward()
        opt.step()
        del out, loss       # see "previous step's out" below
  Measured: step 2 only, from the start of zero_grad to the end of opt.step(). Live throughout: parameters,
  buffers, x, target, optimizer state; step 1's gradients are live at the start and freed by zero_grad;
  the new gradients are born during backward; out and loss stay alive until the step ends.
  How it is run (composed, exact): nothing in zero_grad, forward, loss and backward depends on the optimizer
  (its state is a constant set of storages), so per model and batch these phases are recorded once, with
  step 1's gradients allocated (torch.empty_like, the sizes real gradients have) inside the recording so
  that zero_grad frees them. Then per optimizer: one unrecorded opt.step() on those gradients creates the
  optimizer state exactly as a real step 1 does (shared by the for-loop and foreach instances), and per
  implementation opt.step() is recorded on its own, starting from exactly what is live at the end of
  backward (+ the state). A configuration's step = the shared trace with its state added as a constant,
  followed by its optimizer trace. Checked every run: (step1_verification) for --verify-step1 models at
  batch 1, SGD and Adam for-loop, the composed trace equals, event for event, a full recording of the
  literal two-step loop (real step 1, both steps under the profiler, step 2 compared); the hand-checked
  cases are run composed, as one full step with the cheap step 1, and as the literal loop. The
  instrumentation itself changes nothing PyTorch allocates (instrumentation_verification, --verify-step1
  models: allocator events of a plain and an instrumented step are identical, 0-d scalars aside).
  Previous step's out: written literally (without `del out, loss`), the Python variables keep step 1's
  `out` alive until `out = model(x)` of step 2 returns and step 1's `loss` until `loss = ...` returns.
  That is reported separately as peak_keep_prev_output (= the trace with out_bytes + 4 added during
  zero_grad and forward and 4 added during loss); `peak` assumes they are gone.
  Inference: model.eval(); with torch.no_grad(): out = model(x) -- eval() semantics (dropout is the
  identity, BatchNorm uses running stats), no target; live: parameters, buffers, x, activations.

What is measured (the level memest models)
------------------------------------------
Two instruments run together:
  1. a TorchDispatchMode (Recorder) that sees every aten op below autograd -- forward ops, the ops autograd
     runs during backward (e.g. mm, threshold_backward, nll_loss_backward, sum, and AccumulateGrad's detach
     or clone), the optimizer's ops (add_, sqrt, div, _foreach_*) -- and records for each op its phase, the
     innermost nn.Module being run and the storages (data_ptr, nbytes) of its outputs; each op call is
     wrapped in a profiler range "@op<i>";
  2. torch.profiler with profile_memory=True, which reports every allocation and free of the CPU allocator
     with its address and size, in order ([memory] events, torch._C._profiler._ExtraFields_Allocation).
An allocation made inside op i whose address is the storage data_ptr of one of op i's outputs and that is
still alive when op i returns is that op's output storage: it is counted, with its full nbytes, from its
allocation until the allocator frees it (whoever held it: a Python variable, autograd's saved variables,
the engine's input buffers, .grad, optimizer state or locals). Everything else is not counted:
  * kernel-internal temporaries (allocated and freed inside one op, e.g. oneDNN's reordered weights and
    output copies, embedding_dense_backward's sort buffers, the profiler's own range objects),
  * allocations outside any aten op (0-d "wrapped number" tensors made from Python scalars for x / 8.0,
    torch.tensor(0.) for Adam's state['step'], torch.tensor(finfo.min) in GPT-2's attention) and the
    torch.zeros(1) handle of torch.autograd.profiler.record_function, which Optimizer.zero_grad and
    Optimizer.step use in torch 1.13 -- on CUDA these are CPU tensors, so they use no device memory (see
    corrections).
Views, in-place ops, reshape-as-view, detach, t(), permute ... allocate nothing and therefore count
nothing; a view keeps its whole base storage alive, and that is what is counted.
Storages that exist before a recording starts (parameters, buffers, x, target, optimizer state, and for
the optimizer recording everything live at the end of backward) are enumerated and counted as constants.
What the dispatch mode sees (torch 1.13): CompositeImplicit ops are seen decomposed (F.linear as t + addmm
or matmul's view/mm/_unsafe_view, F.cross_entropy as _log_softmax + nll_loss_forward, F.dropout on CPU as
empty_like + bernoulli_ + div_ + mul); ops autograd runs in backward, including the engine's own (the
sum_to of validate_outputs for broadcast biases, the InputBuffer's add for gradient accumulation,
AccumulateGrad's detach/clone); not seen: allocations inside a CPU kernel or below it (e.g. inside
convolution, embedding_dense_backward, the foreach slow path) -- the allocator events see those, and they
are classified as internal. Module attribution: forward = the innermost nn.Module running; backward = the
module that created the autograd node being evaluated (node pre-hooks, see install_module_hooks);
optimizer = the parameter being processed.
The raw allocator figure (everything the CPU allocator holds, temporaries included) is reported too
(raw_allocator_peak), for information only.

Stubbed BLAS ops
----------------
This torch links Debian's reference (netlib) BLAS: ~1 GFLOP/s on one core, so a real GPT-2 step would take
~15 minutes. By default the four BLAS-backed ops aten.mm, aten.addmm, aten.bmm and aten.baddbmm are executed
as allocation-equivalent stubs: the output is torch.empty of the exact shape and dtype the real kernel
returns (a fresh contiguous tensor, as the CPU kernels return), allocated inside the op's "@op" range, so
the allocator sees exactly the output allocation the real kernel makes (and none of its temporaries, which
are not counted anyway). No memory figure depends on tensor values. Every run re-verifies this: for the
--verify-stub models at batch 1, inference and the Adam for-loop step are measured a second time with the
real kernels (the step as one full recording), and the counted event traces (phase, op, alloc/free, bytes)
must be identical (they are; see "stub_verification" in the JSON). Convolutions run for real (oneDNN).

Corrections (CPU vs CUDA), applied explicitly and listed in the JSON "corrections"; `peak` is the corrected
figure, `peak_uncorrected` the CPU op-level figure without them.

Output per model / batch: inference and, per optimizer (sgd, sgd_momentum, adam) and implementation
(for-loop = foreach=False, torch 1.13's default; foreach = foreach=True, the multi-tensor one), the peak,
its phase (zero_grad, forward, loss, backward, optimizer), the aten op that allocated at the peak (+ module,
+ autograd node in backward), the live bytes by category at the peak, at the start of step 2 and at the end
of every phase, the per-phase peaks, and diagnostics. Categories: parameters, buffers, inputs (x, target),
gradients (param .grad storages: step 1's until zero_grad, then the new ones from the op that creates them),
optimizer_state, saved_activations (forward-op outputs that autograd has saved, determined at the end of
forward by reading every _saved_* of the graph), forward_other (forward outputs not saved: the model output,
...), loss (log_softmax, nll_loss outputs), activation_gradients (every other backward output),
optimizer_temporaries (outputs of the optimizer's ops). Full event traces go to
<traces>/<model>_<optim>_<impl>_B<b>.tsv and <model>_inference_B<b>.tsv.
Cross-check: saved_bytes_end_of_forward (every storage autograd holds at the end of forward, parameters and
buffers excluded, raw CPU bytes) equals torch_figures.json's saved_activation_bytes (torch_figures.py,
saved_tensors_hooks) for every model and batch (saved_bytes_torch_figures is copied next to it).
"""
import argparse
import gc
import json
import os
import resource
import sys
import time
from collections import OrderedDict, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch_figures as tr  # noqa: E402  (model definitions shared with torch_figures.json)
from provenance import provenance  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402
from torch.autograd import (ProfilerActivity, ProfilerConfig, ProfilerState,  # noqa: E402
                             _disable_profiler, _enable_profiler, _prepare_profiler)
from torch._C._profiler import _ExperimentalConfig  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils._pytree import tree_flatten  # noqa: E402

torch.set_num_threads(2)

REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_OUT = os.path.join(REPO, "tests", "reference", "torch_peaks.json")
FIGURES = os.path.join(REPO, "tests", "reference", "torch_figures.json")

_ENTER = torch.ops.profiler._record_function_enter_new
_EXIT = torch.ops.profiler._record_function_exit._RecordFunction
_BACKWARD_SCOPE = torch._C._profiler.RecordScope.BACKWARD_FUNCTION
_EVAL_FN = "autograd::engine::evaluate_function: "

TRAIN_PHASES = ("zero_grad", "forward", "loss", "backward", "optimizer")
CATEGORIES = ("parameters", "buffers", "inputs", "gradients", "optimizer_state", "saved_activations",
              "forward_other", "loss", "activation_gradients", "optimizer_temporaries", "activations",
              "setup_other")
STUB_OPS = ("aten.mm.default", "aten.addmm.default", "aten.bmm.default", "aten.baddbmm.default")

OPTIMIZERS = OrderedDict([
    ("sgd", ("SGD(lr=1e-3)", lambda ps, fe: torch.optim.SGD(ps, lr=1e-3, foreach=fe))),
    ("sgd_momentum", ("SGD(lr=1e-3, momentum=0.9)",
                      lambda ps, fe: torch.optim.SGD(ps, lr=1e-3, momentum=0.9, foreach=fe))),
    ("adam", ("Adam(lr=1e-3)", lambda ps, fe: torch.optim.Adam(ps, lr=1e-3, foreach=fe))),
])
IMPLS = OrderedDict([("for-loop", False), ("foreach", True)])

CORRECTIONS = [
    {
        "id": "dropout_mask_bool",
        "what": "Dropout masks (training)",
        "cpu": "torch 1.13 CPU F.dropout (0<p<1, train) runs _dropout_impl: noise = empty_like(x) (float32, "
               "4 B/element) .bernoulli_(1-p) .div_(1-p), then out = x * noise (aten.empty_like, bernoulli_, "
               "div_, mul); MulBackward0 saves noise until its backward.",
        "cuda": "CUDA runs aten.native_dropout(x, p, train) -> (out float32, mask bool 1 B/element) in one op; "
                "NativeDropoutBackward0 saves the mask until its backward; native_dropout_backward allocates "
                "the input gradient as CPU's mul does.",
        "applied": "each noise storage (identified exactly: the tensor bernoulli_ fills in place, float32, "
                   "allocated by the empty_like just before) is counted as numel*1 bytes instead of numel*4, "
                   "over its whole lifetime. The only timing difference left is that the CPU noise is born one "
                   "op before the dropout output (CUDA: in the same op); nothing is live in between. Count per "
                   "model: BERT 37, GPT-2 37, alexnet 2, vgg16 2, mobilenet_v2 1, lstm-lm 2 (the two nn.Dropout "
                   "calls) + 1 inside nn.LSTM (see lstm_cpu_native_raw). Inference (eval) has no dropout op.",
    },
    {
        "id": "cpu_scalars_not_counted",
        "what": "0-d CPU scalar tensors made outside aten ops",
        "cpu": "x / python_float and x * python_float make a 0-d float64 'wrapped number' (8 B) in the Python "
               "argument parser (BERT/GPT-2: one per layer, saved by DivBackward0); torch 1.13 Adam (not "
               "capturable) keeps state['step'] = torch.tensor(0.) (4 B per parameter tensor); GPT-2's "
               "torch.tensor(finfo.min) (4 B per layer).",
        "cuda": "All of these stay CPU tensors when the model is on CUDA (wrapped numbers and torch.tensor() "
                "without device; Adam's step is on the CPU unless capturable/fused): no device memory.",
        "applied": "by construction: they are allocated outside every aten op, so they are never counted "
                   "(reported as nonop_bytes_at_peak).",
    },
    {
        "id": "cpu_kernel_temporaries_not_counted",
        "what": "Allocations inside CPU kernels",
        "cpu": "oneDNN convolutions hold extra output/weight copies, embedding_dense_backward_cpu sorts indices, "
               "foreach slow paths, etc.: allocated and freed inside one aten op.",
        "cuda": "CUDA kernels have their own workspaces (cuDNN, cuBLAS) which memest does not model either.",
        "applied": "by construction: only op outputs are counted (raw_allocator_peak shows the CPU total).",
    },
    {
        "id": "optimizers_torch_1_13",
        "what": "Optimizer implementations",
        "cpu": "torch 1.13 CPU: foreach=None means for-loop (_single_tensor_*); foreach=True runs "
               "_multi_tensor_* with the CPU slow-path _foreach_* kernels, which return the same output "
               "lists as the CUDA fast path (one new tensor per input tensor for out-of-place ops, nothing for "
               "in-place ones).",
        "cuda": "Same Python code on CUDA in 1.13. Later releases differ: foreach becomes the CUDA default "
                "(2.x), and their _multi_tensor_adam keeps exp_avg_sq_sqrt = _foreach_sqrt(...) and updates it "
                "in place (_foreach_div_, _foreach_add_) instead of allocating denom = _foreach_add(...), i.e. "
                "1x the parameter bytes of temporaries instead of 1.13's 2x (per device/dtype group); the "
                "for-loop Adam is unchanged (denom = (exp_avg_sq.sqrt() / c).add_(eps)). No fused optimizer "
                "measured (1.13: fused Adam is CUDA-only).",
        "applied": "none needed at the aten-op level: both implementations are measured as torch 1.13 runs them.",
    },
    {
        "id": "lstm_cpu_native_raw",
        "what": "nn.LSTM (lstm-lm only)",
        "cpu": "torch 1.13 CPU runs nn.LSTM with ATen's native CPU code (whole-sequence input projection per "
               "layer, per-step addmm + sigmoid_/tanh_/mul, inter-layer dropout with a float32 noise tensor).",
        "cuda": "cuDNN by default (opaque reserve space), or the non-cuDNN CUDA path (_thnn_fused_lstm_cell); "
                "neither can be run here.",
        "applied": "NOT corrected: everything inside nn.LSTM (module path 'rnn') is reported raw as the CPU "
                   "runs it, including its inter-layer dropout noise (float32). Only the two nn.Dropout calls "
                   "outside the LSTM get dropout_mask_bool.",
    },
    {
        "id": "batchnorm_cudnn_reserve_not_corrected",
        "what": "BatchNorm on CUDA",
        "cpu": "native_batch_norm -> (out, save_mean[C], save_invstd[C]); eval: empty mean/invstd.",
        "cuda": "cudnn_batch_norm -> (out, save_mean, save_var, reserve); the reserve space is normally empty "
                "for plain spatial BN.",
        "applied": "NOT corrected (no figure invented).",
    },
    {
        "id": "blas_stub",
        "what": "mm/addmm/bmm/baddbmm executed as allocation-equivalent stubs (not a CPU-vs-CUDA correction)",
        "cpu": "netlib reference BLAS, ~1 GFLOP/s: a real GPT-2 step takes ~15 min.",
        "cuda": "-",
        "applied": "output = torch.empty(shape, dtype) inside the op (what the real kernel allocates); values "
                   "are not used by any memory figure. Verified trace-identical to the real kernels every run "
                   "(stub_verification).",
    },
]


# --------------------------------------------------------------------------- recorder
class Recorder(TorchDispatchMode):
    """Records every aten op (below autograd): phase, module, output storages; wraps each call in "@op<i>"."""

    def __init__(self, stub=True):
        super().__init__()
        self.stub = stub
        self.ops = []  # (name, phase, module, outs[(ptr, nbytes, shape, dtype, contiguous)])
        self.cur_phase = "setup"
        self.mod_stack = []
        self.noise = []  # (op index, ptr, numel, dtype, module)
        self.paused = False
        self.stubbed = 0
        self.bwd_module = "-"    # set by the autograd-node pre-hooks (install_module_hooks)
        self.cpu_side = set()    # op indices whose outputs are CPU-side bookkeeping tensors (not counted)
        self.ptr_names = {}      # optimizer phase: storage ptr -> parameter name (params, grads, state)
        self.last_opt_mod = "-"

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.paused or func.namespace == "profiler":
            return func(*args, **kwargs)
        name = str(func)
        i = len(self.ops)
        h = _ENTER("@op%d" % i, None)
        try:
            if self.stub and name in STUB_OPS:
                out = self._stub(name, args)
                self.stubbed += 1
            else:
                out = func(*args, **kwargs)
        finally:
            _EXIT(h)
        outs = []
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                s = t._storage()
                outs.append((s.data_ptr(), s.nbytes(), tuple(t.shape), str(t.dtype).replace("torch.", ""),
                             t.is_contiguous()))
        if self.cur_phase == "backward":
            mod = self.bwd_module
        elif self.cur_phase == "loss":
            mod = "<loss>"
        elif self.cur_phase == "optimizer":
            mod = "-"
            flat = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
            for t in flat:
                n = self.ptr_names.get(t._storage().data_ptr())
                if n is not None:
                    mod = "param:" + n
                    break
            if name.startswith("aten._foreach"):
                mod = "foreach[%d tensors]" % len(flat)
            if mod == "-":  # e.g. div(sqrt_result, c): the parameter the for-loop is processing
                mod = self.last_opt_mod
            self.last_opt_mod = mod
        else:
            mod = self.mod_stack[-1] if self.mod_stack else "-"
        if name == "aten.zeros.default" and _called_from_record_function():
            self.cpu_side.add(i)
        if name == "aten.bernoulli_.float" and self.cur_phase in ("forward", "setup"):
            t = args[0]
            self.noise.append((i, t._storage().data_ptr(), t.numel(), t.dtype, mod))
        self.ops.append((name, self.cur_phase, mod, outs))
        return out

    @staticmethod
    def _stub(name, args):
        if name == "aten.mm.default":
            a, b = args[0], args[1]
            shape = (a.shape[0], b.shape[1])
        elif name == "aten.addmm.default":
            a, b = args[1], args[2]
            shape = (a.shape[0], b.shape[1])
        elif name == "aten.bmm.default":
            a, b = args[0], args[1]
            shape = (a.shape[0], a.shape[1], b.shape[2])
        else:  # baddbmm(self, batch1, batch2)
            a, b = args[1], args[2]
            shape = (a.shape[0], a.shape[1], b.shape[2])
        return torch.empty(shape, dtype=torch.result_type(a, b))

    # phases: a profiler range "@phase:<name>" + the recorder's current phase
    class _Phase:
        def __init__(self, rec, name):
            self.rec, self.name = rec, name

        def __enter__(self):
            self.rec.cur_phase = self.name
            self.h = _ENTER("@phase:" + self.name, None)

        def __exit__(self, *a):
            _EXIT(self.h)
            self.rec.cur_phase = None

    def phase(self, name):
        return Recorder._Phase(self, name)

    class _Paused:
        def __init__(self, rec):
            self.rec = rec

        def __enter__(self):
            self.rec.paused = True

        def __exit__(self, *a):
            self.rec.paused = False

    def pause(self):
        return Recorder._Paused(self)


def _called_from_record_function():
    """torch.autograd.profiler.record_function.__init__ makes a torch.zeros(1) handle (CPU, also on CUDA);
    Optimizer.zero_grad and Optimizer.step use record_function in torch 1.13."""
    f = sys._getframe(2)
    for _ in range(6):
        if f is None:
            return False
        c = f.f_code
        if c.co_name == "__init__" and c.co_filename.endswith(os.path.join("autograd", "profiler.py")):
            return True
        f = f.f_back
    return False


def install_module_hooks(rec, model, model_name):
    """Module attribution. Forward: the innermost nn.Module being run (global forward pre/post hooks).
    Backward: when a module returns, every autograd node created inside it (reachable from its outputs,
    stopping at the grad_fns its inputs already had) is stamped with the module name and gets a node
    pre-hook that sets rec.bwd_module when the engine is about to run it. AccumulateGrad nodes get no hook
    (a hook there could change whether the gradient is stolen or cloned); their ops keep the previous
    node's module. Hooks return None: they change nothing."""
    names = {}
    for n, m in model.named_modules():
        names.setdefault(id(m), n if n else "<%s>" % model_name)
    entry = []

    def pre(m, a):
        rec.mod_stack.append(names.get(id(m), type(m).__name__))
        entry.append([t.grad_fn for t in tree_flatten(a)[0] if isinstance(t, torch.Tensor)
                      and t.grad_fn is not None])

    def make_hook(name):
        def hook(grad_outputs):
            rec.bwd_module = name
        return hook

    def post(m, a, o):
        name = rec.mod_stack.pop()
        stop = {id(g) for g in entry.pop()}
        if not torch.is_grad_enabled():
            return
        stack = [t.grad_fn for t in tree_flatten(o)[0] if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        while stack:
            node = stack.pop()
            if node is None or id(node) in stop:
                continue
            md = node.metadata
            if "memest_module" in md:
                continue
            md["memest_module"] = name
            if type(node).__name__ != "AccumulateGrad":
                node.register_prehook(make_hook(name))
            stack.extend(nf for nf, _ in node.next_functions)

    return [nn.modules.module.register_module_forward_pre_hook(pre),
            nn.modules.module.register_module_forward_hook(post)]


# --------------------------------------------------------------------------- profiler events
class MemoryProfiler:
    """torch.profiler's kineto profiler with profile_memory=True, driven directly (torch.autograd.profiler's
    own FunctionEvent post-processing is skipped: only the raw event tree is used)."""

    def __enter__(self):
        cfg = ProfilerConfig(ProfilerState.KINETO, False, True, False, False, False, _ExperimentalConfig())
        acts = {ProfilerActivity.CPU}
        _prepare_profiler(cfg, acts)
        _enable_profiler(cfg, acts)
        self.result = None
        return self

    def __exit__(self, *a):
        self.result = _disable_profiler()
        return False


def collect_events(prof):
    """Flatten the profiler's event tree: op windows, phase windows and allocation events in time order."""
    roots = prof.result.experimental_event_tree()
    op_win = {}
    phase_win = defaultdict(list)
    allocs = []
    order = 0
    # ctx: (op index, phase, autograd node being evaluated)
    stack = [(e, (None, None, None)) for e in sorted(roots, key=lambda e: e.start_time_ns, reverse=True)]
    while stack:
        e, ctx = stack.pop()
        f = e.extra_fields
        opi, ph, bname = ctx
        if isinstance(f, torch._C._profiler._ExtraFields_Allocation):
            allocs.append((e.start_time_ns, order, f.ptr, f.alloc_size, opi, ph, e.start_tid, bname))
            order += 1
            continue
        if isinstance(f, torch._C._profiler._ExtraFields_TorchOp):
            n = e.name
            if n.startswith("@op"):
                opi = int(n[3:])
                op_win[opi] = (e.start_time_ns, e.end_time_ns, bname)
            elif n.startswith("@phase:"):
                ph = n[7:]
                phase_win[ph].append((e.start_time_ns, e.end_time_ns))
            elif n.startswith(_EVAL_FN):
                # the engine's range around a node: apply() plus validate_outputs (e.g. sum_to for a bias)
                bname = n[len(_EVAL_FN):]
            elif f.scope == _BACKWARD_SCOPE:
                bname = n
        ctx = (opi, ph, bname)
        for c in sorted(e.children, key=lambda c: c.start_time_ns, reverse=True):
            stack.append((c, ctx))
    allocs.sort(key=lambda a: (a[0], a[1]))
    return op_win, phase_win, allocs


# --------------------------------------------------------------------------- analysis
class Rec:
    __slots__ = ("ptr", "size", "t0", "t1", "op", "phase", "ev0", "ev1", "kind", "cat", "cbytes", "noise",
                 "shape", "dtype", "storage_nbytes")

    def __init__(self, ptr, size, t0, op, phase, ev0):
        self.ptr, self.size, self.t0, self.op, self.phase, self.ev0 = ptr, size, t0, op, phase, ev0
        self.t1 = None
        self.ev1 = None
        self.kind = "nonop" if op is None else "internal"
        self.cat = None
        self.cbytes = 0
        self.noise = False
        self.shape = None
        self.dtype = None
        self.storage_nbytes = None


def alive_at(r, t):
    return r.t0 <= t and (r.t1 is None or r.t1 > t)


def analyze(rec, events, pre, sets, window, model_name, want_rows=False, prev_out_bytes=None, correct_noise=True):
    """events: collect_events(profiler); pre: {ptr: (category, name, nbytes)} storages alive before profiling
    (constants); sets: {name: (time_phase, set_of_ptrs)} looked up at the end of time_phase; window: the
    phases that make up the measured part."""
    op_win, phase_win, allocs = events
    assert len(op_win) == len(rec.ops), (len(op_win), len(rec.ops))
    tids = {a[6] for a in allocs}
    # ---- pass 1: allocation records
    live = {}
    recs = []
    ev_rec = []  # per event: (rec, is_alloc)
    anomalies = defaultdict(int)
    by_op = defaultdict(list)
    for k, (t, _, ptr, size, opi, ph, tid, bn) in enumerate(allocs):
        if size > 0:
            if ptr in live:
                anomalies["alloc_at_live_address"] += 1
                old = live.pop(ptr)
                old.t1, old.ev1 = t, k
            r = Rec(ptr, size, t, opi, ph, k)
            live[ptr] = r
            recs.append(r)
            if opi is not None:
                by_op[opi].append(r)
            ev_rec.append((r, True))
        else:
            r = live.pop(ptr, None)
            if r is None:
                anomalies["free_of_unknown_address"] += 1
                ev_rec.append((None, False))
                continue
            if r.size != -size:
                anomalies["free_size_mismatch"] += 1
            r.t1, r.ev1 = t, k
            ev_rec.append((r, False))
    # ---- classify op outputs
    size_mismatch = 0
    for i, (name, ph, mod, outs) in enumerate(rec.ops):
        if not outs or i not in by_op:
            continue
        if i in rec.cpu_side:
            for r in by_op[i]:
                r.kind = "cpu_side"
            continue
        end = op_win[i][1]
        cands = {r.ptr: r for r in by_op[i] if r.t1 is None or r.t1 >= end}
        for (ptr, nbytes, shape, dtype, contig) in outs:
            r = cands.get(ptr)
            if r is None or r.kind == "op":
                continue
            r.kind = "op"
            r.shape, r.dtype, r.storage_nbytes = shape, dtype, nbytes
            if nbytes != r.size:
                size_mismatch += 1
    # ---- the special sets (looked up at the end of a phase)
    def phase_end(p):
        return phase_win[p][-1][1] if p in phase_win else None

    member = {}
    for sname, (tphase, ptrs) in sets.items():
        tt = phase_end(tphase)
        if tt is None:
            continue
        for r in recs:
            if r.ptr in ptrs and alive_at(r, tt):
                member.setdefault(id(r), set()).add(sname)
    # dropout noise
    noise_info = []
    for (i, ptr, numel, dtype, mod) in rec.noise:
        t_op = op_win[i][0]
        hit = [r for r in recs if r.ptr == ptr and alive_at(r, t_op)]
        assert len(hit) == 1 and hit[0].kind == "op" and dtype == torch.float32, (i, ptr, len(hit))
        r = hit[0]
        assert r.size == 4 * numel
        lstm_internal = model_name == "lstm-lm" and (mod == "rnn" or mod.startswith("rnn."))
        noise_info.append((rec.ops[r.op][2] if r.op is not None else mod, numel, lstm_internal))
        if correct_noise and not lstm_internal:
            r.noise = True
    # categories
    for r in recs:
        if r.kind != "op":
            continue
        ph = rec.ops[r.op][1]
        m = member.get(id(r), set())
        if "grads_end" in m and ph in ("backward", "setup", "optimizer"):
            cat = "gradients"
        elif "grads_setup" in m and ph == "setup":
            cat = "gradients"
        elif "state" in m:
            cat = "optimizer_state"
        elif ph == "forward":
            cat = "saved_activations" if "saved" in m else "forward_other"
        elif ph == "loss":
            cat = "loss"
        elif ph == "backward":
            cat = "activation_gradients"
        elif ph == "optimizer":
            cat = "optimizer_temporaries"
        elif ph == "inference":
            cat = "activations"
        else:
            cat = "setup_other"
        r.cat = cat
        r.cbytes = r.size // 4 if r.noise else r.size
    # ---- pass 2: live bytes over time
    pre_by_cat = defaultdict(int)
    for ptr, (cat, _, nb) in pre.items():
        pre_by_cat[cat] += nb
    pre_total = sum(pre_by_cat.values())
    cur = defaultdict(int, pre_by_cat)
    tot = pre_total           # counted, corrected
    tot_unc = pre_total       # counted, uncorrected
    raw = pre_total           # everything the allocator holds (+ pre)
    nonop = 0
    internal = 0
    def op_desc(i):
        if i is None:
            return dict(op="-", module="-", autograd_node="-")
        name, ph, mod, outs = rec.ops[i]
        return dict(op=name, module=mod, autograd_node=op_win[i][2] or "-")

    best = dict(v=-1)
    best_unc = dict(v=-1)
    best_prev = dict(v=-1)
    best_raw = dict(v=-1)
    phase_best = {}
    snaps = OrderedDict()
    started = False
    last_phase = None
    rows = []
    max_internal = 0
    start_state = None
    loss_bytes = 4

    def note(best_d, v, k, ph, r):
        if v > best_d["v"]:
            best_d.update(v=v, k=k, ph=ph, rec=r, cats=dict(cur), nonop=nonop, internal=internal)

    for k, ((t, _, ptr, size, opi, ph, tid, bn), (r, is_alloc)) in enumerate(zip(allocs, ev_rec)):
        in_win = ph in window
        if ph != last_phase:
            if last_phase is not None:
                snaps[last_phase] = dict(cur)
            last_phase = ph
            if in_win:  # live bytes when the phase starts (before this event)
                note(phase_best.setdefault(ph, dict(v=-1)), tot, None, ph, None)
        if in_win and not started:
            started = True
            start_state = dict(cur)
            for bd, v in ((best, tot), (best_unc, tot_unc), (best_raw, raw)):
                note(bd, v, None, "start", None)
            if prev_out_bytes is not None:
                note(best_prev, tot + prev_out_bytes + loss_bytes, None, "start", None)
        if r is None:
            continue
        sign = 1 if is_alloc else -1
        raw += sign * r.size
        if r.kind == "op":
            cur[r.cat] += sign * r.cbytes
            tot += sign * r.cbytes
            tot_unc += sign * r.size
        elif r.kind in ("nonop", "cpu_side"):
            nonop += sign * r.size
        else:
            internal += sign * r.size
            max_internal = max(max_internal, internal) if in_win else max_internal
        if in_win and is_alloc:
            note(best_raw, raw, k, ph, r)
            if r.kind == "op":
                note(best, tot, k, ph, r)
                note(best_unc, tot_unc, k, ph, r)
                pb = phase_best.setdefault(ph, dict(v=-1))
                note(pb, tot, k, ph, r)
                if prev_out_bytes is not None:
                    extra = prev_out_bytes + loss_bytes if ph in ("zero_grad", "forward") else \
                        (loss_bytes if ph == "loss" else 0)
                    note(best_prev, tot + extra, k, ph, r)
        if want_rows:
            src = r.op
            d = op_desc(opi)
            s = op_desc(src)
            rows.append((k, ph or "-", opi if opi is not None else "-", d["op"], d["module"], bn or "-",
                         "alloc" if is_alloc else "free", r.kind, r.cat or "-",
                         r.size, r.cbytes if r.kind == "op" else 0,
                         "x".join(map(str, r.shape)) if r.shape is not None else "-",
                         src if src is not None else "-", s["op"], s["module"], tot, tot_unc, raw))
    if last_phase is not None:
        snaps[last_phase] = dict(cur)
    if not started:  # no event at all in the window (cannot happen for real models)
        start_state = dict(cur)
        best.update(v=tot, k=None, ph="start", rec=None, cats=dict(cur), nonop=nonop, internal=internal)

    def clean(cats):
        return OrderedDict((c, cats[c]) for c in CATEGORIES if cats.get(c))

    def peak_desc(bd):
        d = OrderedDict(bytes=bd["v"], phase=bd["ph"])
        r = bd.get("rec")
        if r is None:
            d["at"] = "start of the phase" if bd["ph"] != "start" else "start of the step"
        else:
            d.update(op_desc(r.op))
            d["op_index"] = r.op
            d["output_shape"] = list(r.shape) if r.shape else None
            d["event_index"] = bd["k"]
        return d

    res = OrderedDict()
    res["peak"] = best["v"]
    res["peak_phase"] = best["ph"]
    pd = peak_desc(best)
    res["peak_op"] = pd.get("op", "-")
    res["peak_module"] = pd.get("module", "-")
    res["peak_autograd_node"] = pd.get("autograd_node", "-")
    res["peak_output_shape"] = pd.get("output_shape")
    res["peak_event_index"] = pd.get("event_index")
    res["at_peak"] = clean(best["cats"])
    assert sum(res["at_peak"].values()) == res["peak"]
    res["peak_uncorrected"] = best_unc["v"]
    if prev_out_bytes is not None:
        res["peak_keep_prev_output"] = best_prev["v"]
        res["peak_keep_prev_output_phase"] = best_prev["ph"]
    res["phase_peaks"] = OrderedDict((p, peak_desc(phase_best[p])) for p in window if p in phase_best)
    res["at_start"] = clean(start_state)
    res["at_end_of_phase"] = OrderedDict((p, clean(snaps[p])) for p in window if p in snaps)
    res["raw_allocator_peak"] = best_raw["v"]
    res["nonop_bytes_at_peak"] = best["nonop"]
    res["internal_bytes_at_peak"] = best["internal"]
    res["max_internal_temporaries"] = max_internal
    res["dropout_noise"] = dict(count=len(noise_info), corrected=sum(1 for r in recs if r.noise),
                                lstm_internal=sum(1 for n in noise_info if n[2]),
                                numel=sum(n[1] for n in noise_info))
    res["diagnostics"] = OrderedDict(
        aten_ops=len(rec.ops), alloc_events=len(allocs), op_output_storages=sum(1 for r in recs if r.kind == "op"),
        output_alloc_size_mismatch=size_mismatch, stubbed_blas_ops=rec.stubbed, threads=len(tids),
        anomalies=dict(anomalies))
    res["_rows"] = rows
    res["_pre_by_cat"] = dict(pre_by_cat)
    res["_live_end"] = {r.ptr: (r.cat, r.cbytes, r.size) for r in recs if r.kind == "op" and r.t1 is None}
    # compact counted trace for the verifications: (phase, op, event, bytes)
    res["_sig"] = [(ph, rec.ops[r.op][0] if rec.ops[r.op][1] != "setup" else "<step 1>", a, r.size)
                   for (t, _, ptr, size, opi, ph, tid, bn), (r, a) in zip(allocs, ev_rec)
                   if r is not None and r.kind == "op"]
    return res


TRACE_HEADER = (
    "# index\tphase\top_index\taten_op\tmodule\tautograd_node\tevent\tkind\tcategory\tbytes\tcounted_bytes\t"
    "shape\talloc_op_index\talloc_op\talloc_module\tlive_bytes\tlive_bytes_uncorrected\tlive_raw_cpu\n"
    "# one row per CPU-allocator event in time order. op_index/aten_op/module: the aten op inside which the event "
    "happens ('-' between ops: e.g. autograd releasing saved tensors, Python dropping a reference); "
    "autograd_node: the node the engine is evaluating; kind: op (an op's output storage, counted), internal "
    "(kernel temporary), nonop / cpu_side (CPU-only bookkeeping, not counted); counted_bytes: with corrections; "
    "alloc_*: the op that allocated the storage; live_bytes: counted live bytes after the event, including the "
    "constants; op indices restart in the optimizer part of a composed step (a separate recording)\n")


def write_trace(path, parts):
    """parts: [(title, pre_by_cat, rows, live_offset)]"""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    k = 0
    with open(path, "w") as f:
        f.write(TRACE_HEADER)
        for title, pre_by_cat, rows, off in parts:
            f.write("# --- %s; constants before the first event: %s\n" % (title, json.dumps(pre_by_cat)))
            for row in rows:
                row = (k,) + tuple(row[1:-3]) + (row[-3] + off, row[-2] + off, row[-1] + off)
                f.write("\t".join(str(c) for c in row) + "\n")
                k += 1


# --------------------------------------------------------------------------- helpers
def sptr(t):
    return t._storage().data_ptr()


def snbytes(t):
    return t._storage().nbytes()


def last_output(res):
    return res[-1] if isinstance(res, (tuple, list)) else res


def pre_storages(model, tensors):
    pre = {}
    for n, p in model.named_parameters():
        pre.setdefault(sptr(p), ("parameters", n, snbytes(p)))
    for n, b in model.named_buffers():
        pre.setdefault(sptr(b), ("buffers", n, snbytes(b)))
    for n, t in tensors:
        pre.setdefault(sptr(t), ("inputs", n, snbytes(t)))
    return pre


def saved_storages(out, pre):
    """Storages saved by autograd in the graph of out (read via every _saved_* attribute)."""
    ptrs = {}
    for node in tr.reachable([out.grad_fn]):
        for a in dir(node):
            if not a.startswith("_saved_"):
                continue
            try:
                v = getattr(node, a)
            except Exception:
                continue
            vs = v if isinstance(v, (list, tuple)) else [v]
            for t in vs:
                if isinstance(t, torch.Tensor):
                    ptrs[sptr(t)] = snbytes(t)
            del v, vs
    return ptrs


def reset_grads(model):
    for p in model.parameters():
        p.grad = None


def optimizer_state_storages(opt):
    """Device-side optimizer state: every state tensor except Adam's state['step'] (torch 1.13,
    capturable=False: torch.tensor(0.), a CPU scalar also when the parameters are on CUDA)."""
    d = {}
    cpu_scalars = 0
    for st in opt.state.values():
        for k, t in st.items():
            if not isinstance(t, torch.Tensor):
                continue
            if k == "step":
                cpu_scalars += snbytes(t)
                continue
            d.setdefault(sptr(t), ("optimizer_state", k, snbytes(t)))
    return d, cpu_scalars


def measure_train(model, model_name, x, target, optim, impl, trace_dir, B, stub=True, literal_step1=False,
                  loss_fn=None):
    """One steady-state step (step 2), see the module docstring. Step 1 (default): the optimizer state is
    created by a real opt.step() on stand-in gradients before profiling starts (its storages are then counted
    as constants); inside the profiled region, step 1's gradients are allocated with torch.empty_like (same
    sizes as the real ones; they are only freed by zero_grad). literal_step1: a real step 1, all profiled.
    loss_fn(out, target): the loss (default: cross-entropy over out's last dimension, see the docstring;
    tests/tools/torchvision_zoo.py passes segmentation's classes-along-dim-1 one)."""
    if loss_fn is None:
        def loss_fn(o, t):
            return F.cross_entropy(o.reshape(-1, o.shape[-1]), t.reshape(-1))
    model.train()
    reset_grads(model)
    gc.collect()
    params = list(model.parameters())
    opt = OPTIMIZERS[optim][1](params, IMPLS[impl])
    if not literal_step1:
        with torch.no_grad():
            for p in params:
                p.grad = torch.zeros_like(p)
        opt.step()
        reset_grads(model)
        gc.collect()
    pre = pre_storages(model, [("x", x), ("target", target)])
    state_pre, step_scalar_bytes = optimizer_state_storages(opt)
    pre.update(state_pre)
    rec = Recorder(stub=stub)
    sets = {}
    info = {}
    hooks = install_module_hooks(rec, model, model_name)
    try:
        with MemoryProfiler() as prof:
            with rec:
                with rec.phase("setup"):
                    if literal_step1:
                        opt.zero_grad(set_to_none=True)
                        o1 = last_output(model(x))
                        l1 = loss_fn(o1, target)
                        l1.backward()
                        opt.step()
                        del o1, l1
                    else:
                        for p in params:
                            p.grad = torch.empty_like(p)
                with rec.pause():
                    sets["grads_setup"] = ("setup", {sptr(p.grad) for p in params if p.grad is not None})
                    sets["state"] = ("setup", {sptr(t) for st in opt.state.values() for k, t in st.items()
                                               if isinstance(t, torch.Tensor) and k != "step"})
                with rec.phase("zero_grad"):
                    opt.zero_grad(set_to_none=True)
                with rec.phase("forward"):
                    res = model(x)
                    out = last_output(res)
                    del res
                with rec.pause():
                    saved = saved_storages(out, pre)
                    sets["saved"] = ("forward", set(saved))
                    info["out_bytes"] = snbytes(out)
                    info["out_shape"] = list(out.shape)
                    info["saved_all"] = saved
                with rec.phase("loss"):
                    loss = loss_fn(out, target)
                with rec.phase("backward"):
                    loss.backward()
                with rec.pause():
                    sets["grads_end"] = ("backward", {sptr(p.grad) for p in params if p.grad is not None})
                    info["grad_storage_mismatch"] = sum(1 for p in params if p.grad is not None
                                                        and snbytes(p.grad) != snbytes(p))
                    info["params_without_grad"] = sum(1 for p in params if p.grad is None)
                    for pn, p in model.named_parameters():
                        rec.ptr_names[sptr(p)] = pn
                        if p.grad is not None:
                            rec.ptr_names[sptr(p.grad)] = pn + ".grad"
                        for k, t in opt.state.get(p, {}).items():
                            if isinstance(t, torch.Tensor) and k != "step":
                                rec.ptr_names[sptr(t)] = "%s.%s" % (pn, k)
                with rec.phase("optimizer"):
                    opt.step()
                with rec.phase("teardown"):
                    del out, loss
    finally:
        for h in hooks:
            h.remove()
    if literal_step1:
        _, step_scalar_bytes = optimizer_state_storages(opt)
    res = analyze(rec, collect_events(prof), pre, sets, TRAIN_PHASES, model_name, want_rows=bool(trace_dir),
                  prev_out_bytes=info["out_bytes"])
    if trace_dir:
        write_trace(os.path.join(trace_dir, "%s_%s_%s_B%d.tsv" % (model_name, optim, impl, B)),
                    [("full step (measure_train)", res["_pre_by_cat"], res["_rows"], 0)])
    # saved-activation cross-check with torch_figures.json's definition (all saved storages but params/buffers)
    saved_all = info["saved_all"]
    res["saved_bytes_end_of_forward"] = sum(nb for p, nb in saved_all.items()
                                            if p not in pre or pre[p][0] == "inputs")
    res["optimizer_state_bytes"] = res["at_start"].get("optimizer_state", 0)
    res["optimizer_cpu_step_scalars_bytes"] = step_scalar_bytes
    res["gradient_bytes"] = res["at_end_of_phase"].get("backward", {}).get("gradients", 0)
    res["diagnostics"]["grad_storage_larger_than_param"] = info["grad_storage_mismatch"]
    res["diagnostics"]["params_without_grad"] = info["params_without_grad"]
    res["output_shape"] = info["out_shape"]
    res["output_bytes"] = info["out_bytes"]
    del prof, rec, opt
    reset_grads(model)
    gc.collect()
    return res


BASE_PHASES = ("zero_grad", "forward", "loss", "backward")


def measure_base(model, model_name, x, target, stub=True):
    """Composed measurement, part 1 (shared by every optimizer configuration): step 2's zero_grad, forward,
    loss and backward, recorded once. Nothing in these phases depends on the optimizer: its state is only a
    constant set of storages, added per configuration in measure_config. out, loss and the new gradients are
    kept alive (as in the real step) for the optimizer part."""
    model.train()
    reset_grads(model)
    gc.collect()
    params = list(model.parameters())
    zg = torch.optim.SGD(params, lr=1e-3)  # zero_grad is Optimizer.zero_grad, the same for every optimizer
    pre = pre_storages(model, [("x", x), ("target", target)])
    rec = Recorder(stub=stub)
    sets = {}
    info = {}
    hooks = install_module_hooks(rec, model, model_name)
    try:
        with MemoryProfiler() as prof:
            with rec:
                with rec.phase("setup"):
                    for p in params:
                        p.grad = torch.empty_like(p)
                with rec.pause():
                    sets["grads_setup"] = ("setup", {sptr(p.grad) for p in params})
                with rec.phase("zero_grad"):
                    zg.zero_grad(set_to_none=True)
                with rec.phase("forward"):
                    res = model(x)
                    out = last_output(res)
                    del res
                with rec.pause():
                    saved = saved_storages(out, pre)
                    sets["saved"] = ("forward", set(saved))
                    info["out_bytes"] = snbytes(out)
                    info["out_shape"] = list(out.shape)
                    info["saved_all"] = saved
                with rec.phase("loss"):
                    loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))
                with rec.phase("backward"):
                    loss.backward()
                with rec.pause():
                    sets["grads_end"] = ("backward", {sptr(p.grad) for p in params if p.grad is not None})
                    info["grad_storage_mismatch"] = sum(1 for p in params if p.grad is not None
                                                        and snbytes(p.grad) != snbytes(p))
                    info["params_without_grad"] = sum(1 for p in params if p.grad is None)
    finally:
        for h in hooks:
            h.remove()
    return dict(rec=rec, events=collect_events(prof), pre=pre, sets=sets, info=info, out=out, loss=loss)


def measure_config(base, model, model_name, opt, want_rows):
    """Composed measurement, part 2: the base trace with this optimizer's state as constants, then
    opt.step() recorded on its own, starting from exactly what is live at the end of backward."""
    state_pre, step_scalar_bytes = optimizer_state_storages(opt)
    pre = dict(base["pre"])
    pre.update(state_pre)
    b = analyze(base["rec"], base["events"], pre, base["sets"], BASE_PHASES, model_name, want_rows=want_rows,
                prev_out_bytes=base["info"]["out_bytes"])
    pre_o = dict(pre)
    for ptr, (cat, cb, size) in b["_live_end"].items():
        assert cb == size and ptr not in pre_o, (cat, cb, size)
        pre_o[ptr] = (cat, "live at the end of backward", cb)
    assert sum(v[2] for v in pre_o.values()) == sum(b["at_end_of_phase"]["backward"].values())
    rec = Recorder(stub=False)  # the optimizer uses no BLAS op
    for pn, p in model.named_parameters():
        rec.ptr_names[sptr(p)] = pn
        if p.grad is not None:
            rec.ptr_names[sptr(p.grad)] = pn + ".grad"
        for k, t in opt.state.get(p, {}).items():
            if isinstance(t, torch.Tensor) and k != "step":
                rec.ptr_names[sptr(t)] = "%s.%s" % (pn, k)
    with MemoryProfiler() as prof:
        with rec:
            with rec.phase("optimizer"):
                opt.step()
    o = analyze(rec, collect_events(prof), pre_o, {}, ("optimizer",), model_name, want_rows=want_rows)
    del prof, rec
    # ---- combine
    nb = b["diagnostics"]["alloc_events"]
    top = o if o["peak"] > b["peak"] else b
    r = OrderedDict()
    for k in ("peak", "peak_phase", "peak_op", "peak_module", "peak_autograd_node", "peak_output_shape",
              "peak_event_index", "at_peak"):
        r[k] = top[k]
    if top is o and r["peak_event_index"] is not None:
        r["peak_event_index"] += nb
    r["peak_uncorrected"] = max(b["peak_uncorrected"], o["peak_uncorrected"])
    if o["peak"] > b["peak_keep_prev_output"]:
        r["peak_keep_prev_output"], r["peak_keep_prev_output_phase"] = o["peak"], "optimizer"
    else:
        r["peak_keep_prev_output"] = b["peak_keep_prev_output"]
        r["peak_keep_prev_output_phase"] = b["peak_keep_prev_output_phase"]
    r["phase_peaks"] = OrderedDict(list(b["phase_peaks"].items()) + list(o["phase_peaks"].items()))
    for v in o["phase_peaks"].values():
        if v.get("event_index") is not None:
            v["event_index"] += nb
    r["at_start"] = b["at_start"]
    r["at_end_of_phase"] = OrderedDict(list(b["at_end_of_phase"].items()) + list(o["at_end_of_phase"].items()))
    r["raw_allocator_peak"] = max(b["raw_allocator_peak"], o["raw_allocator_peak"])
    r["nonop_bytes_at_peak"] = top["nonop_bytes_at_peak"]
    r["internal_bytes_at_peak"] = top["internal_bytes_at_peak"]
    r["max_internal_temporaries"] = max(b["max_internal_temporaries"], o["max_internal_temporaries"])
    r["dropout_noise"] = b["dropout_noise"]
    d = OrderedDict()
    for k, v in b["diagnostics"].items():
        if k == "threads":
            d[k] = max(v, o["diagnostics"][k])
        else:
            d[k] = v + o["diagnostics"][k] if isinstance(v, int) else v
    d["anomalies"] = dict(b["diagnostics"]["anomalies"], **{"optimizer_" + k: v for k, v in
                                                           o["diagnostics"]["anomalies"].items()})
    d["grad_storage_larger_than_param"] = base["info"]["grad_storage_mismatch"]
    d["params_without_grad"] = base["info"]["params_without_grad"]
    d["measurement"] = "composed: zero_grad..backward recorded once per model/batch, opt.step() per config"
    r["diagnostics"] = d
    saved_all = base["info"]["saved_all"]
    # cross-check with torch_figures.json (same definition: every storage autograd saved, parameters and
    # buffers excluded, the model input included when saved; raw CPU bytes, wrapped scalars included)
    r["saved_bytes_end_of_forward"] = sum(nb_ for p, nb_ in saved_all.items()
                                          if p not in base["pre"] or base["pre"][p][0] == "inputs")
    # the same with this tool's corrections (dropout masks as bool, CPU scalars excluded)
    r["saved_bytes_end_of_forward_corrected"] = b["at_end_of_phase"]["forward"].get("saved_activations", 0) + \
        sum(nb_ for p, nb_ in saved_all.items() if p in base["pre"] and base["pre"][p][0] == "inputs")
    r["optimizer_state_bytes"] = sum(v[2] for v in state_pre.values())
    r["optimizer_cpu_step_scalars_bytes"] = step_scalar_bytes
    r["gradient_bytes"] = b["at_end_of_phase"]["backward"].get("gradients", 0)
    r["output_shape"] = base["info"]["out_shape"]
    r["output_bytes"] = base["info"]["out_bytes"]
    r["_sig"] = [e for e in b["_sig"] if e[0] in BASE_PHASES] + o["_sig"]
    r["_parts"] = [("zero_grad..backward (recorded once, shared by every optimizer configuration); this "
                    "configuration's optimizer state is among the constants", b["_pre_by_cat"], b["_rows"], 0),
                   ("optimizer.step() (separate recording; constants = everything live at the end of backward)",
                    o["_pre_by_cat"], o["_rows"], 0)]
    return r


def measure_model_batch(model, model_name, x, target, optims, impls, trace_dir, B, stub=True, log=None):
    """All optimizer configurations for one model and batch (composed measurement)."""
    base = measure_base(model, model_name, x, target, stub=stub)
    params = list(model.parameters())
    out = OrderedDict()
    for optim in optims:
        out[optim] = OrderedDict()
        opts = OrderedDict()
        for impl in impls:
            opts[impl] = OPTIMIZERS[optim][1](params, IMPLS[impl])
        first = next(iter(opts.values()))
        # the steady state: state created by one (unrecorded) step on the current gradients, shared by the
        # for-loop and foreach optimizers (same state layout)
        first.step()
        gc.collect()
        for impl, opt in opts.items():
            opt.state = first.state
        for impl, opt in opts.items():
            t1 = time.time()
            try:
                r = measure_config(base, model, model_name, opt, bool(trace_dir))
            except (RuntimeError, NotImplementedError) as e:
                out[optim][impl] = dict(unsupported=str(e).split("\n")[0])
                if log:
                    log("%-12s B=%d %s/%s unsupported: %s" % (model_name, B, optim, impl, e))
                continue
            if trace_dir:
                write_trace(os.path.join(trace_dir, "%s_%s_%s_B%d.tsv" % (model_name, optim, impl, B)),
                            r["_parts"])
            r.pop("_parts")
            out[optim][impl] = r
            if log:
                log("%-12s B=%d %-12s %-8s %10d  %-9s %s [%s] %s (%.0fs, RSS %.1f GiB)" % (
                    model_name, B, optim, impl, r["peak"], r["peak_phase"], r["peak_op"], r["peak_module"],
                    r["peak_autograd_node"], time.time() - t1,
                    resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2.0 ** 20))
        del opts, first
        gc.collect()
    del base
    reset_grads(model)
    gc.collect()
    return out


def instrumentation_check(model, model_name, x, target):
    """Does the instrumentation change what PyTorch allocates? One Adam for-loop step 2 (real BLAS) is run
    twice under the memory profiler: plain, and with the Recorder (dispatch mode) and the module/node hooks
    as in the measurements. The allocator event sequences (sizes, allocations and frees in order, frees
    matched to allocations of the same recording) must be identical once 0-d scalar temporaries (<= 8
    bytes: the dispatch mode converts Python scalars to wrapped-number tensors; never counted) are left out."""
    def run(instrumented):
        model.train()
        reset_grads(model)
        gc.collect()
        params = list(model.parameters())
        opt = torch.optim.Adam(params, lr=1e-3, foreach=False)
        with torch.no_grad():
            for p in params:
                p.grad = torch.zeros_like(p)
        opt.step()
        reset_grads(model)
        gc.collect()
        rec = Recorder(stub=False)
        hooks = install_module_hooks(rec, model, model_name) if instrumented else []
        try:
            with MemoryProfiler() as prof:
                if instrumented:
                    rec.__enter__()
                try:
                    for p in params:
                        p.grad = torch.empty_like(p)
                    opt.zero_grad(set_to_none=True)
                    out = last_output(model(x))
                    loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))
                    loss.backward()
                    opt.step()
                    del out, loss
                finally:
                    if instrumented:
                        rec.__exit__(None, None, None)
        finally:
            for h in hooks:
                h.remove()
        live = {}
        seq = []
        for a in collect_events(prof)[2]:
            ptr, size = a[2], a[3]
            if size > 0:
                live[ptr] = size
            elif live.get(ptr) == -size:
                del live[ptr]
            else:
                continue
            if abs(size) > 8:
                seq.append(size)
        del opt, prof, rec
        reset_grads(model)
        gc.collect()
        return seq
    a = run(False)
    b = run(True)
    return OrderedDict(model=model_name, batch=int(x.shape[1] if model_name == "lstm-lm" else x.shape[0]),
                       run="train adam for-loop, real BLAS", compared="plain vs instrumented allocator events",
                       identical=a == b, events=len(a), first_difference=compare_sigs(a, b))


def measure_inference(model, model_name, x, trace_dir, B, stub=True):
    reset_grads(model)
    gc.collect()
    model.eval()
    pre = pre_storages(model, [("x", x)])
    rec = Recorder(stub=stub)
    info = {}
    hooks = install_module_hooks(rec, model, model_name)
    try:
        with MemoryProfiler() as prof:
            with rec:
                with torch.no_grad():
                    with rec.phase("inference"):
                        res = model(x)
                        out = last_output(res)
                        del res
                    info["out_shape"] = list(out.shape)
                    with rec.phase("teardown"):
                        del out
    finally:
        for h in hooks:
            h.remove()
        model.train()
    res = analyze(rec, collect_events(prof), pre, {}, ("inference",), model_name, want_rows=bool(trace_dir))
    if trace_dir:
        write_trace(os.path.join(trace_dir, "%s_inference_B%d.tsv" % (model_name, B)),
                    [("inference", res["_pre_by_cat"], res["_rows"], 0)])
    res["output_shape"] = info["out_shape"]
    for k in ("phase_peaks", "at_end_of_phase"):
        res.pop(k, None)
    del prof, rec
    gc.collect()
    return res


# --------------------------------------------------------------------------- hand-checked validation
HAND_CASES_DOC = """
Hand-checked case: nn.Sequential(nn.Linear(4,8), nn.ReLU(), nn.Linear(8,3)), B=2, fp32, x [2,4], target [2] int64.
  constants: W1 [8,4] 128, b1 [8] 32, W2 [3,8] 96, b2 [3] 12 (params 268), x 32, target 16       -> 316
  step-1 grads (268) live at step-2 start                                                         -> 584
  zero_grad(set_to_none): grads freed one by one                                                  -> 316
  forward: addmm(b1,x,W1^T) h1 [2,8] 64 -> 380; relu r 64 -> 444 (forward peak); h1 freed (relu saves its
           result, nobody saves h1) -> 380; addmm(b2,r,W2^T) out [2,3] 24 -> 404
           end of forward: saved_activations 64 (r: ReluBackward0 result + AddmmBackward0 mat1), forward_other 24
  loss: log_softmax ls [2,3] 24 -> 428; nll_loss_forward: loss 4 + total_weight 4 -> 436 (loss peak)
  backward: ones_like(loss) g_loss 4 -> 440 (held by autograd.backward's grad_tensors until backward returns);
           nll_loss_backward g_ls 24 -> 464; NllLossBackward0 releases total_weight -4 -> 460;
           _log_softmax_backward_data g_out 24 -> 484; g_ls -24, ls -24 -> 436;
           AddmmBackward0 (fc2): mm g_r [2,8] 64, mm gW2 [3,8] 96 (t() views) -> 596; the engine's
           validate_outputs sums the bias gradient to [3]: gb2 12 -> 608; g_out -24 -> 584;
           threshold_backward g_h1 64 -> 648; g_r -64, r -64 -> 520;
           AddmmBackward0 (fc1, x needs no grad): gW1 128 -> 648, gb1 32 -> 680 (PEAK: params 268 + x 32 +
           target 16 + out 24 + loss 4 + g_loss 4 + gW2 96 + gb2 12 + g_h1 64 + gW1 128 + gb1 32);
           g_h1 -64 -> 616; backward returns: g_loss -4 -> 612.
           AccumulateGrad steals every gradient (detach, no copy).
  SGD for-loop/foreach: p.add_(g, alpha=-lr) in place: nothing -> optimizer phase max 612.  => 680, backward.
  (Optimizer.zero_grad/step wrap themselves in record_function, whose torch.zeros(1) handle is a CPU tensor
   on CUDA too: not counted.)
  SGD momentum (either impl): + 268 of momentum buffers everywhere, no temporaries -> 680 + 268 = 948.
  Adam: state 2x268 = 536 (state['step'] = torch.tensor(0.) is outside any aten op: not counted);
           backward peak 680 + 536 = 1216.
           for-loop: per parameter denom = (exp_avg_sq.sqrt() / c).add_(eps): sqrt s_i and div d_i live
           together, and the previous parameter's denom is still bound to the Python name `denom` until the new
           one is assigned: max_i(2 p_i + p_{i-1}) = 2*128 (W1, first) -> 612 + 536 + 256 = 1404
           (optimizer peak, aten.div.Tensor).
           foreach: _foreach_sqrt (268) and denom = _foreach_add(sqrt, eps) (268) both live at
           _foreach_addcdiv_ -> 612 + 536 + 536 = 1684 (optimizer peak, aten._foreach_add.Scalar).
  Inference (eval, no_grad): params 268 + x 32 + h1 64 + r 64 = 428 (at relu), then h1 freed, out 24 -> 388.
"""

HAND_EXPECT = [
    # (optim, impl, peak, phase, phase_peaks subset)
    ("sgd", "for-loop", 680, "backward", dict(zero_grad=584, forward=444, loss=436, backward=680, optimizer=612)),
    ("sgd", "foreach", 680, "backward", dict(zero_grad=584, forward=444, loss=436, backward=680, optimizer=612)),
    ("sgd_momentum", "for-loop", 948, "backward", dict(forward=712, loss=704, backward=948, optimizer=880)),
    ("sgd_momentum", "foreach", 948, "backward", dict(forward=712, loss=704, backward=948, optimizer=880)),
    ("adam", "for-loop", 1404, "optimizer", dict(forward=980, loss=972, backward=1216, optimizer=1404)),
    ("adam", "foreach", 1684, "optimizer", dict(forward=980, loss=972, backward=1216, optimizer=1684)),
]


def hand_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def selftest(trace_dir, stub):
    results = []
    ok = True
    m = hand_model()
    torch.manual_seed(0)
    x = torch.randn(2, 4)
    target = torch.randint(0, 3, (2,))
    comp = measure_model_batch(m, "hand-mlp", x, target, list(OPTIMIZERS), list(IMPLS), trace_dir, 2, stub=stub)
    for optim, impl, peak, phase, pp in HAND_EXPECT:
        for variant in ("composed", "full step", "full step, literal step 1"):
            if variant == "composed":
                r = comp[optim][impl]
            else:
                r = measure_train(m, "hand-mlp", x, target, optim, impl, None, 2, stub=stub,
                                  literal_step1=variant.endswith("literal step 1"))
            got_pp = {p: r["phase_peaks"][p]["bytes"] for p in pp if p in r["phase_peaks"]}
            good = (r["peak"] == peak and r["peak_phase"] == phase and got_pp == pp
                    and r["at_end_of_phase"]["forward"].get("saved_activations") == 64
                    and r["at_end_of_phase"]["forward"].get("forward_other") == 24)
            if optim == "sgd" and impl == "for-loop":
                good = good and r["at_peak"] == OrderedDict([("parameters", 268), ("inputs", 48),
                                                             ("gradients", 268), ("forward_other", 24),
                                                             ("loss", 4), ("activation_gradients", 68)])
            ok = ok and good
            results.append(OrderedDict(case="mlp 4-8-3 B=2 %s %s (%s)" % (optim, impl, variant),
                                       expected=dict(peak=peak, phase=phase, phase_peaks=pp),
                                       measured=dict(peak=r["peak"], phase=r["peak_phase"], op=r["peak_op"],
                                                     phase_peaks=got_pp, at_peak=r["at_peak"]),
                                       ok=good))
    r = measure_inference(m, "hand-mlp", x, trace_dir, 2, stub=stub)
    good = r["peak"] == 428 and r["peak_op"] == "aten.relu.default"
    ok = ok and good
    results.append(OrderedDict(case="mlp 4-8-3 B=2 inference", expected=dict(peak=428, op="aten.relu.default"),
                               measured=dict(peak=r["peak"], op=r["peak_op"], at_peak=r["at_peak"]), ok=good))
    return ok, results


# --------------------------------------------------------------------------- models
def target_for(out_shape, B):
    V = out_shape[-1]
    torch.manual_seed(1)
    return torch.randint(0, V, tuple(out_shape[:-1]), dtype=torch.long)


def strip(r):
    return OrderedDict((k, v) for k, v in r.items() if not k.startswith("_"))


def compare_sigs(a, b):
    if a == b:
        return None
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return "event %d: stub %s vs real %s" % (k, x, y)
    return "length %d vs %d" % (len(a), len(b))


def load_figures():
    try:
        with open(FIGURES) as f:
            return json.load(f)
    except Exception:
        return None


def dump_json(obj, ind=0):
    """Indented JSON in which every object or list holding only scalars (or scalar lists) is one line."""
    def flat(v):
        if isinstance(v, dict):
            return all(not isinstance(x, (dict, list)) or x in ({}, []) or (isinstance(x, list) and all(
                not isinstance(y, (dict, list)) for y in x)) for x in v.values())
        if isinstance(v, list):
            return all(not isinstance(x, (dict, list)) for x in v)
        return True
    pad = " " * ind
    if flat(obj) or (isinstance(obj, list) and all(isinstance(x, str) for x in obj) and len(obj) < 2):
        return json.dumps(obj)
    if isinstance(obj, dict):
        items = ["%s %s: %s" % (pad, json.dumps(k), dump_json(v, ind + 1)) for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    items = ["%s %s" % (pad, dump_json(v, ind + 1)) for v in obj]
    return "[\n" + ",\n".join(items) + "\n" + pad + "]"


def fmt(b):
    return "%.1f" % (b / 2.0 ** 20)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--models")
    ap.add_argument("--batches")
    ap.add_argument("--optims")
    ap.add_argument("--impls")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--traces", default="/tmp/torch_traces")
    ap.add_argument("--real-blas", action="store_true")
    ap.add_argument("--verify-stub", default="mlp-mnist,alexnet,resnet18,lstm-lm")
    ap.add_argument("--verify-step1", default="mlp-mnist,resnet18")
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args(argv[1:])
    t_start = time.time()
    trace_dir = None if a.traces == "none" else a.traces
    stub = not a.real_blas
    partial = bool(a.models or a.quick or a.batches or a.optims or a.impls)
    out_path = a.out or ("/tmp/torch_peaks_partial.json" if partial else DEFAULT_OUT)
    models = a.models.split(",") if a.models else [m for m in tr.MODELS if not (a.quick and m == "gpt2")]
    for m in models:
        if m not in tr.MODELS:
            sys.exit("unknown model %s (have %s)" % (m, ", ".join(tr.MODELS)))
    batches = [int(b) for b in a.batches.split(",")] if a.batches else ([1] if a.quick else [1, 2])
    optims = a.optims.split(",") if a.optims else list(OPTIMIZERS)
    impls = a.impls.split(",") if a.impls else (["for-loop"] if a.quick else list(IMPLS))
    verify = [] if a.verify_stub == "none" or not stub else [m for m in a.verify_stub.split(",") if m in models]
    verify1 = [] if a.verify_step1 == "none" else \
        [m for m in a.verify_step1.split(",") if m in models]

    def log(*s):
        sys.stderr.write(" ".join(str(x) for x in s) + "\n")
        sys.stderr.flush()

    # ---- 1. hand-checked validation of the method
    ok, hand = selftest(trace_dir, stub)
    for h in hand:
        log("selftest %-50s %s  measured %s" % (h["case"], "OK" if h["ok"] else "FAIL", h["measured"]["peak"]))
    if not ok:
        sys.exit("selftest FAILED: the measuring method does not reproduce the hand-computed case")
    if a.selftest:
        print(HAND_CASES_DOC)
        return

    figures = load_figures()
    result = OrderedDict()
    result["provenance"] = provenance("tests/tools/torch_peak.py", {"torch": torch.__version__,
                                                                   "torchvision": torchvision.__version__})
    result["generator"] = "tests/tools/torch_peak.py"
    result["torch_version"] = torch.__version__
    result["torchvision_version"] = torchvision.__version__
    result["device"] = "cpu"
    result["dtype"] = "float32"
    result["definition"] = (
        "peak = max over one steady-state training step (step 2: zero_grad(set_to_none=True), forward, "
        "cross-entropy loss over the last output's last dimension, backward, optimizer.step()) of the live "
        "bytes of tensor storages: parameters, buffers, x, target, plus every storage allocated as the output "
        "of an aten op (seen by a TorchDispatchMode) from its allocation to its free (CPU allocator events from "
        "torch.profiler profile_memory), each counted once with its full nbytes; kernel-internal temporaries "
        "and allocations outside aten ops are not counted; CPU-vs-CUDA corrections applied (peak_uncorrected "
        "without). Inference: model.eval(), torch.no_grad(), one forward; parameters, buffers, x, activations.")
    result["step"] = ("model.train(); opt = Optim(model.parameters(), lr=1e-3[, momentum=0.9], foreach=F|T); "
                      "for step in (1, 2): opt.zero_grad(set_to_none=True); out = model(x)[last]; "
                      "loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1)); "
                      "loss.backward(); opt.step(); del out, loss  -- step 2 measured")
    result["optimizers"] = OrderedDict((k, v[0]) for k, v in OPTIMIZERS.items())
    result["impls"] = {"for-loop": "foreach=False (torch 1.13 default: _single_tensor_*)",
                       "foreach": "foreach=True (_multi_tensor_*, CPU slow-path _foreach_* kernels)"}
    result["categories"] = list(CATEGORIES)
    result["corrections"] = CORRECTIONS
    result["blas"] = "stubbed (allocation-equivalent), see blas_stub" if stub else "real"
    result["validation"] = OrderedDict(hand_cases=hand, hand_case_derivation=HAND_CASES_DOC.strip().split("\n"))
    result["models"] = OrderedDict()
    stub_ver = []
    step1_ver = []
    inst_ver = []
    rows = []
    for name in models:
        spec = tr.MODELS[name]
        torch.manual_seed(0)
        model = spec["build"]()
        info = tr.static_info(model)
        entry = OrderedDict(input=spec["input_desc"], params=info["params_total"], param_bytes=info["param_bytes"],
                            param_tensors=info["param_tensors"], buffer_bytes=info["buffers_bytes"])
        entry["notes"] = []
        if name == "lstm-lm":
            entry["notes"].append("nn.LSTM internals are the raw CPU-native path (correction lstm_cpu_native_raw); "
                                  "the two nn.Dropout calls are corrected to bool masks, the LSTM's own "
                                  "inter-layer dropout noise is not.")
        if name == "bert-base":
            entry["notes"].append("out = pooler output [B,768] (tanh); last_hidden_state is dropped right after "
                                  "forward (it stays alive as long as the pooler's saved x[:,0] view needs it).")
        entry["batches"] = OrderedDict()
        for B in batches:
            t0 = time.time()
            torch.manual_seed(0)
            x = spec["input"](B)[0]
            be = OrderedDict(x_bytes=snbytes(x))
            inf = measure_inference(model, name, x, trace_dir, B, stub=stub)
            target = target_for(inf["output_shape"], B)
            be["target_bytes"] = snbytes(target)
            be["inference"] = strip(inf)
            log("%-12s B=%d inference  %10d  %-8s %s (%.0fs)" % (name, B, inf["peak"], "", inf["peak_op"],
                                                                 time.time() - t0))
            if name in verify and B == 1:
                real = measure_inference(model, name, x, None, B, stub=False)
                d = compare_sigs(inf["_sig"], real["_sig"])
                stub_ver.append(OrderedDict(model=name, batch=B, run="inference", identical=d is None,
                                            peak_stub=inf["peak"], peak_real=real["peak"], first_difference=d))
            if name in verify1 and B == 1:
                inst_ver.append(instrumentation_check(model, name, x, target))
            t1 = time.time()
            be["train"] = measure_model_batch(model, name, x, target, optims, impls, trace_dir, B, stub=stub, log=log)
            log("%-12s B=%d training, all configurations: %.0fs" % (name, B, time.time() - t1))
            for optim, d in be["train"].items():
                for impl, r in d.items():
                    if "peak" not in r:
                        continue
                    if figures and name in figures.get("models", {}) and \
                            str(B) in figures["models"][name].get("batches", {}):
                        fb = figures["models"][name]["batches"][str(B)]
                        r["saved_bytes_torch_figures"] = fb["saved_activation_bytes"]
                        r["saved_bytes_torch_figures_cuda_corrected"] = fb["saved_activation_bytes_cuda_corrected"]
                    if B == 1 and impl == "for-loop" and ((name in verify1 and optim in ("sgd", "adam")) or
                                                          (name in verify and optim == "adam")):
                        sa = r["_sig"]
                        if name in verify1 and optim in ("sgd", "adam"):
                            lit = measure_train(model, name, x, target, optim, impl, None, B, stub=stub,
                                                literal_step1=True)
                            d_ = compare_sigs(sa, [e for e in lit["_sig"] if e[0] in TRAIN_PHASES])
                            step1_ver.append(OrderedDict(
                                model=name, batch=B, run="train %s for-loop" % optim,
                                compared="composed (fake step 1, stubbed BLAS if default) vs full literal "
                                         "two-step loop", identical=d_ is None, peak_composed=r["peak"],
                                peak_literal=lit["peak"], first_difference=d_))
                            del lit
                        if name in verify and optim == "adam":
                            real = measure_train(model, name, x, target, optim, impl, None, B, stub=False)
                            d_ = compare_sigs(sa, [e for e in real["_sig"] if e[0] in TRAIN_PHASES])
                            stub_ver.append(OrderedDict(
                                model=name, batch=B, run="train adam for-loop",
                                compared="composed with stubbed BLAS vs full step with real BLAS",
                                identical=d_ is None, peak_stub=r["peak"], peak_real=real["peak"],
                                first_difference=d_))
                            del real
                    d[impl] = strip(r)
            entry["batches"][str(B)] = be
            rows.append((name, B, be))
            del x, target
            gc.collect()
        result["models"][name] = entry
        del model
        gc.collect()
    result["stub_verification"] = stub_ver
    result["step1_verification"] = step1_ver
    result["instrumentation_verification"] = inst_ver
    result["runtime_seconds"] = round(time.time() - t_start)
    for v in stub_ver + step1_ver + inst_ver:
        log("verification %s" % json.dumps(v))

    with open(out_path, "w") as f:
        f.write(dump_json(result) + "\n")
    log("wrote %s (%.0f s)" % (out_path, time.time() - t_start))
    print_tables(result, rows, optims, impls)
    def oks(vs):
        return " ".join("%s:%s" % (v["model"], "OK" if v["identical"] else "FAIL") for v in vs) or "-"
    sys.stdout.write("\nValidation: %d hand-checked cases OK; stub (real vs stubbed BLAS): %s; composition and "
                     "step 1 (vs the literal loop): %s; instrumentation (plain vs instrumented): %s\n"
                     % (len(hand), oks(stub_ver), oks(step1_ver), oks(inst_ver)))
    if any(not v["identical"] for v in stub_ver + step1_ver + inst_ver):
        sys.exit("VERIFICATION FAILED (see stub_verification / step1_verification / instrumentation_verification)")


def print_tables(result, rows, optims, impls):
    w = sys.stdout.write
    cols = [(o, i) for o in optims for i in impls]
    short = {"sgd": "sgd", "sgd_momentum": "mom", "adam": "adam", "for-loop": "loop", "foreach": "fe"}
    w("\nPeak live tensor bytes, MiB (CUDA-corrected; torch %s CPU; step 2, steady state)\n" % result["torch_version"])
    hdr = "%-12s %2s %9s" % ("model", "B", "infer") + "".join(" %10s" % ("%s/%s" % (short[o], short[i]))
                                                              for o, i in cols)
    w(hdr + "\n" + "-" * len(hdr) + "\n")
    for name, B, be in rows:
        line = "%-12s %2d %9s" % (name, B, fmt(be["inference"]["peak"]))
        for o, i in cols:
            r = be["train"].get(o, {}).get(i, {})
            line += " %10s" % (fmt(r["peak"]) if "peak" in r else "n/a")
        w(line + "\n")
    w("\nWhere the peak falls (phase: aten op [module] autograd node)\n")
    for name, B, be in rows:
        inf = be["inference"]
        w("%-12s B=%d inference: %s [%s]\n" % (name, B, inf["peak_op"], inf["peak_module"]))
        for o, i in cols:
            r = be["train"].get(o, {}).get(i, {})
            if "peak" not in r:
                continue
            w("%-12s B=%d %-12s %-8s %12d  %-9s %s [%s] %s\n" % (
                name, B, o, i, r["peak"], r["peak_phase"], r["peak_op"], r["peak_module"], r["peak_autograd_node"]))
    w("\nBreakdown at the peak (MiB), adam for-loop\n")
    for name, B, be in rows:
        r = be["train"].get("adam", {}).get("for-loop", {})
        if "at_peak" in r:
            w("%-12s B=%d %s\n" % (name, B, ", ".join("%s %s" % (k, fmt(v)) for k, v in r["at_peak"].items())))


if __name__ == "__main__":
    main(sys.argv)
