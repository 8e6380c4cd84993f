#!/usr/bin/env python3
"""memest against a real CUDA card: a grid of training steps (and no-grad passes) of the shipped models,
each run by plain PyTorch in a fresh process and estimated by memest with the same settings, side by side.

How to run
----------
On a machine with a CUDA GPU and PyTorch 2.x (torchvision for the vision models; nothing else: pynvml is
used when importable, else nvidia-smi), from the checkout root, one command does everything:

    python3 tests/tools/cuda_validate.py
    python3 tests/tools/cuda_validate.py --memest /path/to/memest      # memest carried as a binary
    python3 tests/tools/cuda_validate.py --quick                       # resnet18, a few minutes

It finds memest as build/memest, else `memest` on PATH (--memest PATH for any other: a binary built
elsewhere and copied next to the checkout, e.g. `--memest ./memest`), writes
tests/reference/cuda_<device-slug>.json (--out FILE) and prints a Markdown table (also to --markdown
FILE). The default grid is 9 models x 3 batch sizes x (5 optimizers x 3 precisions + inference) plus the
knob variants below, 540 configurations at 5-20 s each (a fresh process each: import, CUDA init,
building the model): one to three hours; --quick first. A configuration that runs out of memory on the
card is a result, recorded as "oom" beside memest's verdict for the card; one that fails or hangs
(--timeout, default 600 s) is recorded and the run goes on.

Holding memest to a measurement (no PyTorch, no GPU): commit the JSON a card wrote under tests/reference/,
and `python3 tests/tools/cuda_validate.py --check tests/reference/cuda_<device>.json` re-runs memest for every
configuration measured there and exits 1 past the tolerances (allocated 1%, reserved 3%, device total 2%,
and with --probe the probe's device total 2% of the measured one); tests/group_cuda_validate.cmake adds one
ctest per committed file (tools.cuda_validate.cuda_<device>), and tools.cuda_validate.check_selftest holds
the checker itself to made-up measurements on both sides of each tolerance.

Without a GPU (no PyTorch needed):

    python3 tests/tools/cuda_validate.py --dry-run --quick --memest build/memest
    python3 tests/tools/cuda_validate.py --dry-run [--gpu h100-80gb] [--out FILE]

lists the configurations and runs only memest for each (the measured columns stay empty; no JSON file
unless --out). Without --dry-run on a machine with no usable CUDA device it exits 2 with one line on
stderr ("cuda_validate.py: no CUDA device: ...; use --dry-run to check the memest side").
tests/group_cuda_validate.cmake runs both (ctest -L tools). --cpu-check runs the PyTorch side of every
configuration on the CPU instead, without any reading: it checks that each twin builds, finds its
target's shape and takes its two steps with each optimizer and precision (PyTorch 2.x; here
`../shared/tools/torch2-chroot python3 tests/tools/cuda_validate.py --cpu-check --quick`).

Options: --models a,b (default: every model of torch_figures.MODELS; also hf:NAME for
models/hf/NAME.json or hf:PATH for a transformers config.json whose model_type has a builder in
hf_models.py, hf_models_moe.py or hf_models_b.py, at --seq, default 512), --batches 1,8,32 (and
--batches MODEL=1,2,4, repeatable, per model), --optims sgd,sgd-momentum,adam-foreach,adam-for-loop,
adamw-fused (OPTIM[-IMPL]: sgd, sgd-momentum, adam, adamw; foreach, for-loop, fused), --precisions
fp32,bf16,fp16 (the training step: float32, or torch.autocast to bf16/fp16 with float32 parameters),
--inference-precisions fp32 (the no-grad passes; "none": none), --cudnn-benchmark auto|both|on|off,
--cudnn-rnn both|on|off, --expandable-segments [on|off|both], --module-loading lazy|eager|both,
--probe, --gpu PRESET (memest's card; default: the preset whose device_names in models/gpus.json
match the card, else --mem with the card's total memory), --memest-arg=ARG (repeatable, appended to
every memest command), --device N, --timeout S, --out FILE, --markdown FILE, --quick (one model,
resnet18, batch 1 and 8, adam-foreach, fp32 and bf16, and fp32 inference; cuDNN benchmark off unless
given).

What is measured, and why
-------------------------
memest predicts, for the steady-state (second) training step of PyTorch 2.x on CUDA
(doc/memory-model.md, "Memory: allocated, reserved, device total"):
  memory.peak          torch.cuda.max_memory_allocated(): the caching allocator's live blocks at the
                       peak, cuBLAS's workspace included;
  memory.reserved      torch.cuda.max_memory_reserved(): its segments at their peak;
  memory.overhead      the CUDA context (default 426 MiB), and memory.total_device = reserved + overhead:
                       what nvidia-smi shows for the process;
  with --inference the same for the no-grad pass (memory.inference.bytes / .reserved / .total_device).
The figures that pin them down exist only on a real card: the CPU tools (torch_peak.py, hf_peak.py)
measure live tensor bytes, not the allocator's blocks and segments, nor the context, nor the
workspaces of cuBLAS and cuDNN. So each configuration runs, in a fresh process (a clean context, an
empty caching allocator, no cuDNN or cuBLAS state from an earlier run), what memest simulates:

    torch.cuda.init(); torch.cuda.mem_get_info()          # the context: measured before any allocation
    model = MODELS[name]["build"]().to("cuda")            # torch_figures.py's builders (imported)
    x = MODELS[name]["input"](B) (on the card); target = randint(V, out.shape[:-1])  # before the loop
    opt = SGD(lr=1e-3[, momentum=0.9], foreach=True) | Adam(foreach=True|False) | AdamW(fused=True)
    def step():                                           # twice; out and loss die when it returns
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype):               # --precisions bf16 / fp16 only
            out = model(x)                                # the last output (BERT: the pooler's)
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))  # as torch_peak.py
        loss.backward(); opt.step()                       # fp16: GradScaler's scale/step/update
    step(); torch.cuda.reset_peak_memory_stats(); step()
and records, after step 2 (torch.cuda.synchronize() first): torch.cuda.max_memory_allocated(),
max_memory_reserved(), memory_allocated(), memory_reserved(), a few torch.cuda.memory_stats() counters
(num_alloc_retries: the allocator freed its cache, so reserved is no longer the steady state), the
process's device memory as nvidia-smi shows it (NVML's nvmlDeviceGetComputeRunningProcesses through
pynvml when importable, else `nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,
nounits`; where this process's pid is not listed, as in a container with its own pid namespace, the
growth of the device's used memory since before CUDA was initialised: "device-delta"; the source is
recorded), the context = that minus torch.cuda.memory_reserved(), the context right after CUDA
initialisation (the same readings plus torch.cuda.mem_get_info()), and step 2's time. Inference:
model.eval(), under torch.no_grad() (and autocast), two passes, the peak of the second.
The model is built on the CPU (seeded) and moved with .to("cuda"), as training scripts do; the
tensors its forward() makes (lstm-lm's zero state, BERT's token types, GPT-2's positions) are created
on the card by running forward() under `with torch.device("cuda")`; the target's shape comes from
a forward pass of a copy of the model on the meta device (no memory; memest's loss shape if that
fails), for hf: models it is [B*S] token ids. memest runs with the same settings: MODEL.json --batch B,
--optim sgd|adam|adamw, --momentum 0.9, --optim-impl foreach|for-loop|fused, --amp bf16|fp16 or
--inference, --gpu PRESET (it sets the cuBLAS workspace by compute capability) or --mem BYTES,
--headroom 0, --layers --json; memest "fits" when its needs (reserved + overhead) are at most the
card's total memory as PyTorch reports it. The GradScaler's few scalars (scale, growth tracker,
found_inf) are not in memest.

The knobs a real card adds, each recorded per configuration:
  --cudnn-benchmark  torch.backends.cudnn.benchmark (PyTorch's default: off). auto (default): off for
                     the grid, and on too for the first optimizer and the no-grad passes of models with
                     convolutions; both: on and off for every configuration with convolutions. The cuDNN
                     convolution workspace effect is the difference of the allocated peaks, on - off
                     ("Knob effects"); memest models neither (doc/memory-model.md: "cuDNN's autotuning workspaces
                     ... not modelled").
  --cudnn-rnn        torch.backends.cudnn.enabled for models with an LSTM (lstm-lm): on is what users
                     run (cuDNN's RNN, its reserve space: memest's default --rnn-kernel cudnn, whose
                     reserve size is an estimate), off is the native path (memest --rnn-kernel
                     native); both (default) runs the two.
  --expandable-segments  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (merged into the user's
                     PYTORCH_CUDA_ALLOC_CONF; off removes only that key); memest models the default
                     allocator's segments, so reserved differs by design when it is on.
  --module-loading   CUDA_MODULE_LOADING=LAZY (default; PyTorch's own default) or EAGER: the context.
  CUBLAS_WORKSPACE_CONFIG, CUBLASLT_WORKSPACE_SIZE and the other variables of ENV_KEYS are left as
                     the user set them and recorded, with torch.backends' TF32 flags.
  The cuBLAS workspace alone, in a fresh process per module-loading mode: memory_allocated() minus the
  live tensors' blocks after one small fp32 matmul, after a matmul's backward (autograd's thread: its
  own handle and workspace?) and after a bf16 matmul (cublasLt), against memest's `workspace` at the
  peak.

Output: one JSON file (schema below) and the Markdown table: per configuration memest against the
measurement for allocated, reserved, device total and context, each with the signed difference
100 * (memest - measured) / measured, memest's and the card's verdict, and a summary line: the largest
|difference| per column and how many are within the tolerances of the issue (allocated 1%, reserved
3%, device total 2%; the context has none). --probe also runs `memest ... --probe --json` for every
training configuration (after its PyTorch run, so the card is free) and stores its whole "probe"
member (and "error", if any).

JSON: {generator, schema_version, created, dry_run, argv, memest: {path, version, card_args,
card_preset, card_note}, environment: {python, platform, torch, torch_cuda, cudnn, device: {name,
capability, total_memory, multi_processor_count, uuid}, driver: {driver_version, cuda_driver_version,
source}, env: {...}, backends: {...}}, cublas_workspace: {MODE: {...}}, context_init: {MODE: {...}},
tolerances, configs: [{id, label, settings: {model, model_file, kind, batch, optim, precision,
cudnn_benchmark, cudnn_enabled, expandable_segments, module_loading, seq}, memest: {args, rc,
allocated, peak_tensors, reserved, total_device, overhead, workspace, fits, needs, card_memory,
peak_phase, peak_node, step_seconds, target_shape, error}, measured: {status (ok, oom, error,
timeout, crash), max_memory_allocated, max_memory_reserved, memory_allocated, memory_reserved,
device_bytes, device_source, context_bytes, context_init, step2_seconds, memory_stats, env,
backends, oom_phase, message, ...}, diff_percent: {allocated, reserved, device_total, context},
verdict, probe}], knob_effects: [...], summary: {...}}.

Limits: the least memory a step runs in, the largest batch a card runs (--limits)
-------------------------------------------------------------------------------
    python3 tests/tools/cuda_validate.py --limits [--limits-card-bytes N] [--limits-max-batch 4096]
    python3 tests/tools/cuda_validate.py --dry-run --limits          # memest only, no PyTorch

measures what memest's verdict predicts. Per training configuration of the grid (the grid options as
above; --limits's default: resnet50 and hf:gpt2 at batch 8, adam-foreach and adamw-fused, fp32 and bf16,
--expandable-segments both, cuDNN benchmark off, no no-grad passes: 16 configurations), each run a fresh
child (--child run) as above:
  1. an unconstrained run: max_memory_allocated() and max_memory_reserved() of step 2, the context
     before the first allocation (context_init);
  2. the least memory the step runs in: torch.cuda.set_per_process_memory_fraction(f) before the first
     allocation, f chosen so that PyTorch's allowed_memory_maximum = int(f * device total) is k granules
     of 2 MiB; k bisected between the allocated peak (cannot run below) and the reserved peak (runs),
     then the 8 granules below the answer tried too (completion need not be monotone in capacity: with
     less room the allocator frees its cache and retries); "completes" = both steps ran, an OOM
     (torch.cuda.OutOfMemoryError) does not. Recorded: the least allowed bytes that complete, whether a
     capacity under the bisection's answer completed (non_monotone), the context, least + context (the
     least device memory), num_alloc_retries and num_ooms of memory_stats() at that capacity, every try;
  3. the largest batch on a card of --limits-card-bytes N (default: this card's total): allowed = N -
     the unconstrained run's context, the batch doubled from 1 then bisected, up to --limits-max-batch
     (default 4096; "4096+" when it ran there).
  Expandable segments: the same under PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
memest runs with the same settings and --json (--alloc-conf expandable_segments:True for those): its
memory.least_allocator_memory, .least_device_memory, .peak, .reserved (null where absent, or where memest
exits 2 for --alloc-conf), and `memest ... --max-batch --mem N --headroom 0 --json`'s max_batch (--mem,
not the --gpu preset: memest takes one or the other). Writes tests/reference/limits_<device-slug>.json
(--out FILE; a dry run none unless --out) and a Markdown table: least alloc measured / memest / diff,
least device measured / memest / diff, non-monotone, retries / ooms, the unconstrained allocated and
reserved beside memest's, largest batch measured / memest. A dry run without a card uses --gpu's
preset's memory for the batch, else h100-80gb's. Each try is a fresh process (5-20 s): some 20 tries for
the least memory and 20 for the batch per configuration, about an hour and a half for the default grid.
The emulation caps the caching allocator's segments only: what else the process takes after its
first allocation (cuBLAS and cuDNN handles, lazily loaded kernels) is not counted against N.
--limits-selftest checks the searches (no PyTorch, no memest): bisection, the non-monotone scan and the
batch's doubling against made-up completion predicates with known answers, fraction_for's rounding, and
the whole measurement against a made-up card.
JSON: {generator, schema_version, created, dry_run, argv, memest, environment, limits: {granule_bytes,
scan_below, card_bytes, card_source, max_batch_cap}, configs: [{id, label, settings, memest:
{args, rc, least_device_memory, least_allocator_memory, peak, reserved, overhead, alloc_conf_rejected,
max_batch_args, max_batch, max_batch_steady, error|note}, measured: {unconstrained: {...}, least:
{granule_bytes, lower_bound_bytes, upper_bound_bytes, least_allowed_bytes, bisected_bytes,
below_completing_bytes, non_monotone, context_bytes, least_device_bytes, num_alloc_retries, num_ooms,
tries}, batch: {card_bytes, context_bytes, allowed_bytes, cap, largest, at_cap, errors, tries}},
diff_percent: {least_allocator, least_device, max_batch (memest - measured, batches)}}], summary}.

The child processes are this script (--child env|run, with a JSON spec file), run by the same Python
(sys.executable); the parent never imports torch, so it holds no CUDA context while they measure.
"""
import argparse
import ast
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROG = "cuda_validate.py"
sys.path.insert(0, HERE)
from provenance import stamp  # noqa: E402  (needs no PyTorch)

TOLERANCES = OrderedDict([("allocated", 1.0), ("reserved", 3.0), ("device_total", 2.0)])  # percent
DEFAULT_BATCHES = [1, 8, 32]
DEFAULT_OPTIMS = ["sgd", "sgd-momentum", "adam-foreach", "adam-for-loop", "adamw-fused"]
DEFAULT_PRECISIONS = ["fp32", "bf16", "fp16"]
DEFAULT_SEQ = 512
QUICK = dict(models=["resnet18"], batches=[1, 8], optims=["adam-foreach"], precisions=["fp32", "bf16"],
             inference_precisions=["fp32"])
OPTIM_BASES = OrderedDict([("sgd", ("sgd", None)), ("sgd-momentum", ("sgd", 0.9)), ("adam", ("adam", None)),
                           ("adamw", ("adamw", None))])
OPTIM_IMPLS = ("foreach", "for-loop", "fused")
PRECISION_ALIASES = {"fp32": "fp32", "float32": "fp32", "bf16": "bf16", "amp-bf16": "bf16", "bfloat16": "bf16",
                     "fp16": "fp16", "amp-fp16": "fp16", "float16": "fp16"}
# environment variables that change what a CUDA process holds; recorded, never changed (but the two knobs)
ENV_KEYS = ("CUDA_MODULE_LOADING", "PYTORCH_CUDA_ALLOC_CONF", "CUBLAS_WORKSPACE_CONFIG", "CUBLASLT_WORKSPACE_SIZE",
            "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING", "NVIDIA_TF32_OVERRIDE",
            "PYTORCH_NO_CUDA_MEMORY_CACHING", "PYTORCH_NVML_BASED_CUDA_CHECK", "TORCH_CUDNN_V8_API_DISABLED",
            "TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT", "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_CACHE_DISABLE",
            "TORCH_BLAS_PREFER_CUBLASLT", "TORCH_CUDNN_SDPA_ENABLED")
CONV_TYPES = ("conv1d", "conv2d", "conv3d", "convtranspose1d", "convtranspose2d", "convtranspose3d")
RNN_TYPES = ("lstm", "gru", "rnn")
MiB = 1024.0 * 1024.0


class UsageError(Exception):
    pass


# --------------------------------------------------------------------------- the models, without torch
def literal_keys(path, name):
    """The keys of the module-level literal `name = {...}`, `OrderedDict([(k, ...), ...])` or `{k, ...}` of
    the Python file at path, read with ast (the parent never imports torch, nor the builders)."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            v = node.value
            if isinstance(v, ast.Dict):
                return [k.value for k in v.keys if isinstance(k, ast.Constant)]
            if isinstance(v, ast.Set):
                return [k.value for k in v.elts if isinstance(k, ast.Constant)]
            if isinstance(v, ast.Call) and v.args and isinstance(v.args[0], ast.List):
                return [e.elts[0].value for e in v.args[0].elts
                        if isinstance(e, ast.Tuple) and e.elts and isinstance(e.elts[0], ast.Constant)]
    raise ValueError("%s: no literal %s" % (path, name))


def reference_models():
    return literal_keys(os.path.join(HERE, "torch_figures.py"), "MODELS")


def hf_builder_kind(model_type):
    """Which of the plain-PyTorch transformers twins builds this model_type: hf_models (Llama family),
    hf_models_moe (Mixtral, Qwen2-MoE) or hf_models_b (GPT-2, BERT, OPT, GPT-NeoX with SDPA); None."""
    try:
        if model_type in literal_keys(os.path.join(HERE, "hf_models.py"), "ARCH"):
            return "hf_models"
        if model_type in literal_keys(os.path.join(HERE, "hf_models_moe.py"), "MOE_ARCH"):
            return "hf_models_moe"
        if model_type in literal_keys(os.path.join(HERE, "hf_models_b.py"), "SDPA"):
            return "hf_models_b"
    except (OSError, ValueError, SyntaxError):
        pass
    return None


def resolve_model(name, seq):
    """name -> {name, file (memest's model file), source: reference|hf, model_type, seq}."""
    if name.startswith("hf:"):
        ref = name[3:]
        path = ref if ref.endswith(".json") or os.sep in ref else os.path.join(ROOT, "models", "hf", ref + ".json")
        if not os.path.isfile(path):
            raise UsageError("--models %s: no such config (%s)" % (name, path))
        try:
            with open(path) as f:
                mt = json.load(f).get("model_type")
        except (OSError, ValueError) as e:
            raise UsageError("--models %s: %s" % (name, e))
        kind = hf_builder_kind(mt)
        if kind is None:
            raise UsageError("--models %s: model_type %r has no plain-PyTorch builder in tests/tools/hf_models*.py "
                             "(T5 and the SDPA-less ones are not run)" % (name, mt))
        return dict(name=name, file=os.path.abspath(path), source="hf", model_type=mt, builder=kind, seq=seq)
    known = reference_models()
    if name not in known:
        raise UsageError("--models: unknown model %r (torch_figures.MODELS: %s; or hf:NAME)" %
                         (name, ", ".join(known)))
    path = os.path.join(ROOT, "models", name + ".json")
    if not os.path.isfile(path):
        raise UsageError("--models %s: memest's model file %s is missing" % (name, path))
    return dict(name=name, file=path, source="reference", model_type=None, builder="torch_figures", seq=None)


# --------------------------------------------------------------------------- options
def parse_optim(s):
    s = s.strip()
    for base in sorted(OPTIM_BASES, key=len, reverse=True):
        if s == base or s.startswith(base + "-"):
            impl = s[len(base) + 1:] or "foreach"
            if impl not in OPTIM_IMPLS:
                break
            opt, momentum = OPTIM_BASES[base]
            return OrderedDict(name="%s-%s" % (base, impl) if s != base else base, base=base, optim=opt,
                               momentum=momentum, impl=impl)
    raise UsageError("--optims: unknown optimizer %r (OPTIM[-IMPL]: OPTIM one of %s, IMPL one of %s)" %
                     (s, ", ".join(OPTIM_BASES), ", ".join(OPTIM_IMPLS)))


def parse_list(s, what):
    items = [x.strip() for x in s.split(",") if x.strip()]
    if not items:
        raise UsageError("%s: empty list" % what)
    return items


def parse_batches(specs, models):
    """--batches 1,8,32 and --batches MODEL=1,2 (repeatable) -> {model: [B...]}."""
    default, per = list(DEFAULT_BATCHES), {}
    for spec in specs or []:
        model, _, lst = spec.rpartition("=")
        try:
            bs = [int(x) for x in parse_list(lst, "--batches")]
        except ValueError:
            raise UsageError("--batches %s: batch sizes are whole numbers" % spec)
        if any(b < 1 for b in bs):
            raise UsageError("--batches %s: batch sizes are >= 1" % spec)
        if model:
            per[model] = bs
        else:
            default = bs
    for m in per:
        if m not in models:
            raise UsageError("--batches %s=...: %s is not among --models" % (m, m))
    return {m: per.get(m, default) for m in models}


def build_parser():
    p = argparse.ArgumentParser(prog=PROG, description="memest against PyTorch on a CUDA card (see the "
                                "docstring of tests/tools/cuda_validate.py).")
    p.add_argument("--dry-run", action="store_true", help="list the configurations, run only memest")
    p.add_argument("--cpu-check", action="store_true", help="run the PyTorch side on the CPU, without readings "
                   "(checks that every twin builds and steps; no GPU needed)")
    p.add_argument("--memest", help="the memest binary (default: build/memest, else memest on PATH)")
    p.add_argument("--models", help="comma-separated: torch_figures.MODELS names, hf:NAME, hf:PATH")
    p.add_argument("--batches", action="append", help="1,8,32 or MODEL=1,2,4 (repeatable)")
    p.add_argument("--optims", help="comma-separated OPTIM[-IMPL] (default %s)" % ",".join(DEFAULT_OPTIMS))
    p.add_argument("--precisions", help="training: fp32, bf16, fp16 (autocast) (default fp32,bf16,fp16)")
    p.add_argument("--inference-precisions", help="no-grad passes: fp32, bf16, fp16, or none (default fp32)")
    p.add_argument("--seq", type=int, default=DEFAULT_SEQ, help="sequence length of hf: models (default 512)")
    p.add_argument("--quick", action="store_true", help="resnet18, batch 1 and 8, adam-foreach, fp32+bf16+inference")
    p.add_argument("--cudnn-benchmark", choices=("auto", "both", "on", "off"))
    p.add_argument("--cudnn-rnn", choices=("both", "on", "off"), default="both")
    p.add_argument("--expandable-segments", nargs="?", const="on", choices=("off", "on", "both"),
                   help="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (default off; --limits: both)")
    p.add_argument("--module-loading", choices=("lazy", "eager", "both"), default="lazy")
    p.add_argument("--probe", action="store_true", help="also memest --probe --json per training configuration")
    p.add_argument("--gpu", help="memest's --gpu preset (default: matched from the card's name)")
    p.add_argument("--memest-arg", action="append", default=[], help="appended to every memest command")
    p.add_argument("--device", type=int, default=0, help="the CUDA device (default 0)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per configuration (default 600)")
    p.add_argument("--out", help="the JSON file (default tests/reference/cuda_<device-slug>.json; none in a dry run)")
    p.add_argument("--markdown", help="also write the Markdown table to this file")
    p.add_argument("--check", metavar="FILE", help="hold memest to a committed measurement: re-run memest for every "
                   "configuration FILE measured and fail past the tolerances (no PyTorch, no GPU)")
    p.add_argument("--check-selftest", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--limits", action="store_true", help="per training configuration: the least memory its step "
                   "runs in and the largest batch a card runs (set_per_process_memory_fraction), beside memest's")
    p.add_argument("--limits-card-bytes", type=int, help="--limits: the card whose largest batch is searched "
                   "(default: the card's total memory)")
    p.add_argument("--limits-max-batch", type=int, default=LIMITS_MAX_BATCH,
                   help="--limits: the largest batch tried (default %d)" % LIMITS_MAX_BATCH)
    p.add_argument("--limits-scan", type=int, default=SCAN_BELOW,
                   help="--limits: granules tried below the bisection's answer (default %d)" % SCAN_BELOW)
    p.add_argument("--limits-no-batch", action="store_true", help="--limits: the least memory only, no "
                   "largest-batch search")
    p.add_argument("--limits-selftest", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--child", choices=("env", "run"), help=argparse.SUPPRESS)
    p.add_argument("--child-spec", help=argparse.SUPPRESS)
    p.add_argument("--child-out", help=argparse.SUPPRESS)
    return p


def resolve_memest(path):
    if path:
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise UsageError("--memest %s: not an executable file" % path)
        return os.path.abspath(path)
    built = os.path.join(ROOT, "build", "memest")
    if os.path.isfile(built) and os.access(built, os.X_OK):
        return built
    found = shutil.which("memest")
    if found:
        return found
    raise UsageError("memest not found (no build/memest, none on PATH); pass --memest PATH")


def expand_knob(value, values=("off", "on")):
    """A knob's values in the grid: "both" is every value, the default first."""
    return list(values) if value == "both" else [value]


def make_configs(args, models, batches, model_info):
    """The grid, in order: model, batch, training (precision, optimizer) then no-grad passes, knobs."""
    optims = [parse_optim(o) for o in args.optims_list]
    configs = []
    loading = expand_knob(args.module_loading, ("lazy", "eager"))
    segments = expand_knob(args.expandable_segments)
    for m in models:
        info = model_info.get(m["name"], {})
        has_conv, has_rnn = info.get("has_conv", False), info.get("has_rnn", False)
        rnn_values = expand_knob(args.cudnn_rnn, ("on", "off")) if has_rnn else ["on"]
        runs = []   # (kind, precision, optim, bench values)
        for prec in args.precisions_list:
            for i, o in enumerate(optims):
                runs.append(("train", prec, o, bench_values(args.cudnn_benchmark_eff, has_conv, i == 0)))
        for prec in args.inference_list:
            runs.append(("inference", prec, None, bench_values(args.cudnn_benchmark_eff, has_conv, True)))
        for B in batches[m["name"]]:
            for kind, prec, o, benches in runs:
                for bench in benches:
                    for rnn in rnn_values:
                        for seg in segments:
                            for ml in loading:
                                configs.append(new_config(m, B, kind, prec, o, bench, rnn, seg, ml))
    return configs


def bench_values(mode, has_conv, representative):
    if mode in ("on", "off"):
        return [mode]
    if not has_conv:
        return ["off"]
    if mode == "both" or representative:
        return ["off", "on"]
    return ["off"]


def new_config(m, B, kind, prec, o, bench, rnn, seg, ml):
    step = "inference" if kind == "inference" else o["name"]
    s = OrderedDict(model=m["name"], model_file=m["file"], source=m["source"], model_type=m["model_type"],
                    builder=m["builder"], kind=kind, batch=B, optim=None if o is None else dict(o),
                    precision=prec, cudnn_benchmark=bench == "on", cudnn_enabled=rnn == "on",
                    expandable_segments=seg == "on", module_loading=ml.upper(), seq=m["seq"])
    knobs = ["cudnn-bm:%s" % bench, ml]
    if rnn != "on":
        knobs.append("cudnn:off")
    if seg == "on":
        knobs.append("exp-seg")
    cid = "/".join([m["name"], "B%d" % B, step, prec] + knobs)
    short = m["name"] if m["source"] != "hf" else "hf:" + os.path.basename(m["name"][3:])
    label = OrderedDict(model=short + ("" if m["seq"] is None else " s%d" % m["seq"]), B=str(B),
                        step=step.replace("-", " ") if kind == "train" else "inference",
                        precision=prec if prec == "fp32" else "amp " + prec, knobs=" ".join(knobs))
    return OrderedDict(id=cid, label=label, settings=s)


# --------------------------------------------------------------------------- memest
def memest_version(memest):
    try:
        p = subprocess.run([memest, "--version"], capture_output=True, text=True, timeout=60)
        return (p.stdout.strip() or p.stderr.strip()).splitlines()[0] if (p.stdout or p.stderr) else None
    except (OSError, subprocess.SubprocessError):
        return None


def memest_args(s, card_args, extra, probe=None):
    """memest's command line for a configuration; probe: None, or the CUDA device for --probe."""
    a = [s["model_file"], "--batch", str(s["batch"])]
    if s["kind"] == "inference":
        a.append("--inference")
    else:
        o = s["optim"]
        a += ["--optim", o["optim"]]
        if o["momentum"] is not None:
            a += ["--momentum", repr(o["momentum"])]
        a += ["--optim-impl", o["impl"]]
    if s["precision"] != "fp32":
        a += ["--amp", s["precision"]]
    elif s["source"] == "hf":
        a += ["--dtype", "fp32"]   # not the config's torch_dtype: the twin trains in float32
    if s["seq"] is not None:
        a += ["--seq", str(s["seq"])]
    if not s.get("cudnn_enabled", True):
        a += ["--rnn-kernel", "native"]   # cuDNN off: only models with an RNN run that way
    a += list(card_args) + list(extra)
    if probe is not None:
        a += ["--probe", "--device", str(probe)]
    return a + ["--layers", "--json"]


def run_memest(memest, args, cache, timeout=300):
    key = tuple(args)
    if key in cache:
        return cache[key]
    try:
        p = subprocess.run([memest] + args, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = None, "", "timed out after %ds" % timeout
    except OSError as e:
        rc, out, err = None, "", str(e)
    doc = None
    try:
        doc = json.loads(out) if out.strip() else None
    except ValueError:
        doc = None
    cache[key] = (rc, doc, err.strip())
    return cache[key]


def memest_figures(s, args, rc, doc, err):
    r = OrderedDict(args=args, rc=rc)
    if not isinstance(doc, dict) or "memory" not in doc:
        msg = (doc or {}).get("error", {}).get("message") if isinstance(doc, dict) else None
        r["error"] = msg or (err.splitlines()[-1] if err else "exit %s, no JSON" % rc)
        return r
    m = doc["memory"]
    part = m.get("inference") if s["kind"] == "inference" else m.get("train_peak")
    part = part if isinstance(part, dict) else {}
    r["allocated"] = part.get("bytes", m.get("peak"))
    r["peak_tensors"] = part.get("tensor_bytes", m.get("peak_tensors"))
    r["reserved"] = part.get("reserved", m.get("reserved"))
    r["total_device"] = part.get("total_device", m.get("total_device"))
    r["overhead"] = m.get("overhead")
    r["workspace"] = (part.get("at_peak") or m.get("at_peak") or {}).get("workspace")
    r["peak_phase"] = part.get("phase", m.get("peak_phase"))
    r["peak_node"] = part.get("node", m.get("peak_node"))
    fit = doc.get("fit")
    if isinstance(fit, dict):
        r["fits"], r["needs"], r["card_memory"] = fit.get("fits"), fit.get("needs"), fit.get("card_memory")
    if isinstance(doc.get("card"), dict):
        r["card"] = doc["card"].get("name")
    t = doc.get("time")
    if isinstance(t, dict):
        r["step_seconds"] = t.get("step_seconds")
    layers = doc.get("layers") or []
    if layers and isinstance(layers[-1], dict) and "target_shape" in layers[-1]:
        r["target_shape"] = layers[-1]["target_shape"]
        r["loss_input_shape"] = layers[-1].get("input_shape")
    r["layer_types"] = sorted({l.get("type") for l in layers if isinstance(l, dict) and l.get("type")})
    if isinstance(doc.get("error"), dict):
        r["error"] = doc["error"].get("message")
    return r


def model_infos(memest, models, extra, cache):
    """Per model, from memest's layer types (batch 1): convolutions (cuDNN benchmark) and RNNs (cuDNN RNN)."""
    out = {}
    for m in models:
        s = OrderedDict(model_file=m["file"], batch=1, kind="inference", optim=None, precision="fp32",
                        source=m["source"], seq=m["seq"])
        rc, doc, err = run_memest(memest, memest_args(s, [], extra), cache)
        types = set()
        if isinstance(doc, dict):
            types = {l.get("type") for l in doc.get("layers") or [] if isinstance(l, dict)}
        out[m["name"]] = dict(has_conv=bool(types & set(CONV_TYPES)), has_rnn=bool(types & set(RNN_TYPES)),
                              memest_ok=isinstance(doc, dict) and "memory" in doc,
                              error=None if isinstance(doc, dict) and "memory" in doc else (err or "no JSON"))
    return out


def card_preset(device_name):
    """memest's --gpu preset whose device_names (models/gpus.json) holds the card's name."""
    try:
        with open(os.path.join(ROOT, "models", "gpus.json")) as f:
            gpus = json.load(f)["gpus"]
    except (OSError, ValueError, KeyError):
        return None
    want = (device_name or "").strip().lower()
    for g in gpus:
        if any(want == n.strip().lower() for n in g.get("device_names") or []):
            return g["name"]
    return None


# --------------------------------------------------------------------------- device memory, no torch needed
def _nvml():
    try:
        import pynvml
        pynvml.nvmlInit()
        return pynvml
    except Exception:   # not installed, no driver, ...
        return None


def _s(v):
    return v.decode() if isinstance(v, bytes) else v


def _smi(query):
    try:
        p = subprocess.run(["nvidia-smi"] + query, capture_output=True, text=True, timeout=60)
        return p.stdout if p.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def process_device_memory(pid):
    """(bytes or None, source, note): the device memory nvidia-smi shows for this pid, over all devices."""
    nv = _nvml()
    if nv is not None:
        try:
            total, found = 0, False
            for i in range(nv.nvmlDeviceGetCount()):
                h = nv.nvmlDeviceGetHandleByIndex(i)
                for pr in nv.nvmlDeviceGetComputeRunningProcesses(h):
                    if pr.pid == pid and pr.usedGpuMemory is not None:
                        total += int(pr.usedGpuMemory)
                        found = True
            if found:
                return total, "nvml", None
            note = "nvml: pid %d not listed (a container's pid namespace?)" % pid
        except Exception as e:
            note = "nvml: %s" % e
    else:
        note = "pynvml not importable"
    out = _smi(["--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"])
    if out is None:
        return None, None, note + "; nvidia-smi failed"
    total, found = 0, False
    for line in out.splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) >= 2 and parts[0] == str(pid):
            try:
                total += int(float(parts[1]) * MiB)
                found = True
            except ValueError:
                pass
    if found:
        return total, "nvidia-smi", note
    return None, None, note + "; nvidia-smi: pid %d not listed" % pid


def device_used():
    """{uuid without 'GPU-': used bytes} of every device (NVML, else nvidia-smi), or {}."""
    nv = _nvml()
    if nv is not None:
        try:
            r = {}
            for i in range(nv.nvmlDeviceGetCount()):
                h = nv.nvmlDeviceGetHandleByIndex(i)
                r[_s(nv.nvmlDeviceGetUUID(h)).replace("GPU-", "")] = int(nv.nvmlDeviceGetMemoryInfo(h).used)
            return r
        except Exception:
            pass
    out = _smi(["--query-gpu=uuid,memory.used", "--format=csv,noheader,nounits"])
    r = {}
    for line in (out or "").splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) == 2:
            try:
                r[parts[0].replace("GPU-", "")] = int(float(parts[1]) * MiB)
            except ValueError:
                pass
    return r


def driver_info():
    nv = _nvml()
    if nv is not None:
        try:
            v = nv.nvmlSystemGetCudaDriverVersion()
            return OrderedDict(driver_version=_s(nv.nvmlSystemGetDriverVersion()),
                               cuda_driver_version="%d.%d" % (v // 1000, (v % 1000) // 10), source="nvml")
        except Exception:
            pass
    out = _smi(["--query-gpu=driver_version", "--format=csv,noheader"])
    head = _smi([]) or ""
    m = re.search(r"CUDA Version:\s*([0-9.]+)", head)
    return OrderedDict(driver_version=(out or "").strip().splitlines()[0] if (out or "").strip() else None,
                       cuda_driver_version=m.group(1) if m else None, source="nvidia-smi" if out else None)


# --------------------------------------------------------------------------- child processes (torch)
def env_settings():
    return OrderedDict((k, os.environ.get(k)) for k in ENV_KEYS)


def backend_settings(torch):
    b = OrderedDict()
    for name, get in (("cudnn.enabled", lambda: torch.backends.cudnn.enabled),
                      ("cudnn.benchmark", lambda: torch.backends.cudnn.benchmark),
                      ("cudnn.deterministic", lambda: torch.backends.cudnn.deterministic),
                      ("cudnn.allow_tf32", lambda: torch.backends.cudnn.allow_tf32),
                      ("cuda.matmul.allow_tf32", lambda: torch.backends.cuda.matmul.allow_tf32),
                      ("float32_matmul_precision", lambda: torch.get_float32_matmul_precision())):
        try:
            b[name] = get()
        except Exception:
            b[name] = None
    return b


def uuid_of(torch, device):
    try:
        u = getattr(torch.cuda.get_device_properties(device), "uuid", None)
        return None if u is None else str(u).replace("GPU-", "")
    except Exception:
        return None


def device_memory_now(torch, device, baseline):
    """What this process holds on the device: (bytes, source, note, extra readings)."""
    b, src, note = process_device_memory(os.getpid())
    free, total = torch.cuda.mem_get_info(device)
    extra = OrderedDict(mem_get_info_used=total - free, mem_get_info_free=free)
    uuid = uuid_of(torch, device)
    now = device_used()
    if uuid and uuid in now and baseline and uuid in baseline:
        extra["device_delta"] = now[uuid] - baseline[uuid]
        if b is None:
            b, src = extra["device_delta"], "device-delta"
    return b, src, note, extra


def child_env(spec, res):
    """Versions, the card, the driver, the context right after CUDA initialisation and cuBLAS's workspace."""
    res["python"] = sys.version.split()[0]
    res["platform"] = platform.platform()
    res["env"] = env_settings()
    try:
        import torch
    except Exception as e:
        res["torch_error"] = "%s: %s" % (type(e).__name__, e)
        return
    res["torch"] = torch.__version__
    res["torch_cuda"] = getattr(torch.version, "cuda", None)
    try:
        import torchvision
        res["torchvision"] = torchvision.__version__
    except Exception:
        res["torchvision"] = None
    res["cuda_available"] = bool(torch.cuda.is_available())
    if not res["cuda_available"]:
        return
    dev = spec["device"]
    res["device_count"] = torch.cuda.device_count()
    if dev >= res["device_count"]:
        res["cuda_available"] = False
        res["torch_error"] = "--device %d: only %d device(s)" % (dev, res["device_count"])
        return
    props = torch.cuda.get_device_properties(dev)
    res["device"] = OrderedDict(index=dev, name=props.name, capability="%d.%d" % (props.major, props.minor),
                                total_memory=props.total_memory,
                                multi_processor_count=props.multi_processor_count, uuid=uuid_of(torch, dev))
    res["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    res["driver"] = driver_info()
    res["backends"] = backend_settings(torch)
    if not spec.get("measure"):
        return
    baseline = device_used()
    torch.cuda.init()
    torch.cuda.set_device(dev)
    torch.cuda.mem_get_info(dev)   # creates the primary context (cudaMemGetInfo)
    b, src, note, extra = device_memory_now(torch, dev, baseline)
    res["context_init"] = OrderedDict(bytes=b, source=src, note=note, memory_allocated=torch.cuda.memory_allocated(),
                                      **extra)
    ws = OrderedDict()

    def blocks(ts):
        return sum((t.numel() * t.element_size() + 511) // 512 * 512 for t in ts)

    def stage(name, live):
        torch.cuda.synchronize()
        ws[name] = torch.cuda.memory_allocated() - blocks(live)

    a = torch.randn(64, 64, device="cuda")
    b_ = torch.randn(64, 64, device="cuda")
    stage("before", [a, b_])
    c = a @ b_
    stage("after_fp32_matmul", [a, b_, c])
    a.requires_grad_(True)
    (a @ b_).sum().backward()
    stage("after_matmul_backward", [a, b_, c, a.grad])
    try:
        a16, b16 = a.detach().to(torch.bfloat16), b_.to(torch.bfloat16)
        c16 = a16 @ b16
        stage("after_bf16_matmul", [a, b_, c, a.grad, a16, b16, c16])
    except Exception as e:
        ws["after_bf16_matmul"] = None
        ws["bf16_error"] = str(e).splitlines()[0]
    b2, src2, note2, extra2 = device_memory_now(torch, dev, baseline)
    ws["context_after"] = None if b2 is None else b2 - torch.cuda.memory_reserved()
    ws["context_source"] = src2
    ws["note"] = ("memory_allocated() minus the live tensors' 512-byte blocks: the workspace cuBLAS took from the "
                  "caching allocator; each stage cumulative")
    res["cublas_workspace"] = ws


def last_output(res):
    return res[-1] if isinstance(res, (tuple, list)) else res


def child_model(spec, torch):
    """(build() -> nn.Module on the CPU, inputs(B) -> [tensors], causal_float: the loss takes out.float(),
    target: None, or (shape, classes) where known without a forward pass: a transformers twin's logits are
    [B*S, V] or [B, S, V], so its target is [B*S] token ids, what the loss's reshape(-1) sees either way)."""
    s = spec["settings"]
    sys.path.insert(0, HERE)
    if s["source"] == "reference":
        import torch_figures as tr
        m = tr.MODELS[s["model"]]
        return m["build"], m["input"], False, None
    with open(s["model_file"]) as f:
        cfg = json.load(f)
    V, S = cfg["vocab_size"], s["seq"]

    def inputs(B):
        return [torch.randint(0, V, (B, S), dtype=torch.long)]
    target = ([s["batch"] * S], V)
    mt = cfg["model_type"]
    if s["builder"] == "hf_models":
        import hf_models
        attn = "eager" if mt == "gemma2" else "sdpa"   # transformers (and memest) default Gemma 2 to eager
        return (lambda: hf_models.BUILDERS[mt](cfg, attn)), inputs, False, target
    if s["builder"] == "hf_models_moe":
        import hf_models_moe
        return (lambda: hf_models_moe.BUILDERS[mt](cfg, "sdpa", balanced=True)), inputs, False, target
    import hf_models_b
    import torch.nn.functional as F

    def plain_dropout(x, p, training):   # its recording dropout asserts the CPU's MulBackward0
        return F.dropout(x, p=p, training=training)
    hf_models_b.dropout = plain_dropout
    c = dict(cfg, _attn_implementation="sdpa")
    return (lambda: hf_models_b.BUILDERS[mt](c)), inputs, mt != "bert", target   # ForCausalLMLoss: .float()


def target_shape(spec, torch, build, inputs):
    """(out.shape[:-1], out.shape[-1], how): the target's shape and the number of classes, from a forward
    pass of a copy of the model on the meta device (no memory; memest's loss shapes if that fails)."""
    B = spec["settings"]["batch"]
    try:
        with torch.device("meta"):
            torch.manual_seed(0)
            m = build().eval()
            with torch.no_grad():
                out = last_output(m(*inputs(B)))
        return list(out.shape[:-1]), int(out.shape[-1]), "meta forward"
    except Exception as e:
        ts, ins = spec.get("memest_target_shape"), spec.get("memest_loss_input_shape")
        if ts and ins:
            return list(ts), int(ins[-1]), "memest's loss shapes (the meta forward failed: %s)" % (
                str(e).splitlines()[0][:200] if str(e) else type(e).__name__)
        raise


def is_oom(torch, e):
    cls = getattr(torch.cuda, "OutOfMemoryError", None)
    s = str(e)
    return (cls is not None and isinstance(e, cls)) or "out of memory" in s.lower() or "ALLOC_FAILED" in s


def set_allowed(torch, dev, allowed):
    """torch.cuda.set_per_process_memory_fraction so that the caching allocator's allowed_memory_maximum
    (fraction * the device total of cudaMemGetInfo, truncated) is `allowed` bytes of segments."""
    total = torch.cuda.mem_get_info(dev)[1]
    f = fraction_for(allowed, total)
    torch.cuda.set_per_process_memory_fraction(f, dev)
    return OrderedDict(allowed_bytes=allowed, device_total=total, fraction=f, allowed_effective=int(f * total))


def child_run(spec, res):
    """One configuration, in this fresh process: build, two steps, the readings (see the docstring). With
    spec["cpu"] (--cpu-check) the same on the CPU, without any memory reading."""
    s = spec["settings"]
    dev = spec["device"]
    cpu = bool(spec.get("cpu"))
    res["phase"] = "import"
    baseline = {} if cpu else device_used()   # before CUDA is initialised: for the device-delta fallback
    import torch
    import torch.nn.functional as F
    res["torch"] = torch.__version__
    res["env"] = env_settings()
    if not hasattr(torch, "set_default_device"):
        raise RuntimeError("PyTorch %s: needs PyTorch >= 2.0 (torch.device as a context manager)" % torch.__version__)
    build, inputs, causal_float, known = child_model(spec, torch)
    res["phase"] = "target shape"
    tshape, classes = None, None
    if s["kind"] == "train" and known:
        (tshape, classes), res["target_shape_from"] = known, "the config: [B*S] token ids of its vocabulary"
    elif s["kind"] == "train":
        tshape, classes, res["target_shape_from"] = target_shape(spec, torch, build, inputs)
    res["target_shape"], res["classes"] = tshape, classes
    res["phase"] = "init"
    torch.backends.cudnn.benchmark = bool(s["cudnn_benchmark"])
    torch.backends.cudnn.enabled = bool(s["cudnn_enabled"])
    res["backends"] = backend_settings(torch)
    if cpu:
        device = torch.device("cpu")
    else:
        torch.cuda.init()
        torch.cuda.set_device(dev)
        device = torch.device("cuda", dev)
        torch.cuda.mem_get_info(dev)   # creates the primary context: measured before any allocation
        b, src, note, extra = device_memory_now(torch, dev, baseline)
        res["context_init"] = OrderedDict(bytes=b, source=src, note=note,
                                          memory_allocated=torch.cuda.memory_allocated(), **extra)
        if spec.get("allowed_bytes") is not None:   # --limits: a smaller card, before the first allocation
            res["limit"] = set_allowed(torch, dev, spec["allowed_bytes"])
    res["phase"] = "build"
    torch.manual_seed(0)
    model = build()   # on the CPU, seeded, then moved as training scripts do
    res["has_conv"] = any(isinstance(x, torch.nn.modules.conv._ConvNd) for x in model.modules())
    res["has_rnn"] = any(isinstance(x, torch.nn.RNNBase) for x in model.modules())
    model = model.to(device)
    res["params_bytes"] = sum(p.numel() * p.element_size() for p in model.parameters())
    torch.manual_seed(0)
    with torch.device(device):
        x = [t.to(device) for t in inputs(s["batch"])]
    target = None
    if tshape is not None:   # int64 class indices, made before the loop (torch_peak.py's target_for)
        torch.manual_seed(1)
        target = torch.randint(0, classes, tuple(tshape), dtype=torch.long, device=device)
    amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(s["precision"])

    def amp_ctx():
        return torch.autocast(device.type, dtype=amp) if amp is not None else _Null()

    def loss_fn(out, tgt):
        if causal_float:
            out = out.float()
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), tgt.reshape(-1))

    if s["kind"] == "inference":
        model.eval()

        def step():
            with torch.no_grad(), amp_ctx(), torch.device(device):
                out = model(*x)  # noqa: F841  (held until the pass returns, as memest's `out`)
    else:
        model.train()
        o = s["optim"]
        params = [p for p in model.parameters() if p.requires_grad]
        kw = dict(lr=1e-3)
        if o["impl"] == "fused":
            kw["fused"] = True
        else:
            kw["foreach"] = o["impl"] == "foreach"
        if o["optim"] == "sgd":
            opt = torch.optim.SGD(params, momentum=o["momentum"] or 0.0, **kw)
        elif o["optim"] == "adam":
            opt = torch.optim.Adam(params, **kw)
        else:
            opt = torch.optim.AdamW(params, **kw)
        scaler = None
        if s["precision"] == "fp16":
            if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
                scaler = torch.amp.GradScaler(device.type)
            elif not cpu:
                scaler = torch.cuda.amp.GradScaler()

        def step():
            opt.zero_grad(set_to_none=True)
            with amp_ctx(), torch.device(device):
                out = last_output(model(*x))
                loss = loss_fn(out, target)
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
    res["optimizer"] = None if s["kind"] == "inference" else "%s(%s)" % (
        type(opt).__name__, ", ".join("%s=%s" % kv for kv in sorted(kw.items())))
    res["grad_scaler"] = s["kind"] == "train" and scaler is not None

    def sync():
        if not cpu:
            torch.cuda.synchronize()
    res["phase"] = "step 1"
    step()
    sync()
    if not cpu:
        res["after_step1"] = OrderedDict(memory_allocated=torch.cuda.memory_allocated(),
                                         memory_reserved=torch.cuda.memory_reserved(),
                                         max_memory_allocated=torch.cuda.max_memory_allocated(),
                                         max_memory_reserved=torch.cuda.max_memory_reserved())
        torch.cuda.reset_peak_memory_stats()
    res["phase"] = "step 2"
    t0 = time.perf_counter()
    step()
    sync()
    res["step2_seconds"] = time.perf_counter() - t0
    if cpu:
        res["status"] = "cpu-ok"
        return
    res["phase"] = "measure"
    res["max_memory_allocated"] = torch.cuda.max_memory_allocated()
    res["max_memory_reserved"] = torch.cuda.max_memory_reserved()
    res["memory_allocated"] = torch.cuda.memory_allocated()
    res["memory_reserved"] = torch.cuda.memory_reserved()
    b, src, note, extra = device_memory_now(torch, dev, baseline)
    res["device_bytes"], res["device_source"], res["device_note"] = b, src, note
    res["device_readings"] = extra
    res["context_bytes"] = None if b is None else b - res["memory_reserved"]
    st = torch.cuda.memory_stats()
    res["memory_stats"] = OrderedDict((k, st.get(k)) for k in (
        "num_alloc_retries", "num_ooms", "segment.all.peak", "segment.large_pool.peak", "segment.small_pool.peak",
        "inactive_split_bytes.all.peak", "allocation.all.peak", "requested_bytes.all.peak"))
    res["status"] = "ok"


class _Null(object):
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def child_main(args):
    with open(args.child_spec) as f:
        spec = json.load(f)
    res = OrderedDict(status="error")
    try:
        if args.child == "env":
            child_env(spec, res)
            res["status"] = "ok"
        else:
            child_run(spec, res)
    except BaseException as e:   # recorded, never raised: the parent reads the file
        torch = sys.modules.get("torch")
        if torch is not None and is_oom(torch, e):
            res["status"] = "oom"
            res["oom_phase"] = res.get("phase")
            try:
                res["max_memory_allocated"] = torch.cuda.max_memory_allocated()
                res["max_memory_reserved"] = torch.cuda.max_memory_reserved()
                st = torch.cuda.memory_stats()
                res["memory_stats"] = {"num_ooms": st.get("num_ooms"), "num_alloc_retries": st.get("num_alloc_retries")}
            except Exception:
                pass
        else:
            res["status"] = "error"
            res["traceback"] = traceback.format_exc()[-3000:]
        res["message"] = str(e)[:1000]
    tmp = args.child_out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f, indent=1, default=str)
    os.replace(tmp, args.child_out)
    return 0


# --------------------------------------------------------------------------- the parent
def child_env_vars(settings):
    env = dict(os.environ)
    env["CUDA_MODULE_LOADING"] = settings["module_loading"]
    parts = [p for p in (env.get("PYTORCH_CUDA_ALLOC_CONF") or "").split(",")
             if p.strip() and not p.strip().startswith("expandable_segments")]
    if settings["expandable_segments"]:
        parts.append("expandable_segments:True")
    if parts:
        env["PYTORCH_CUDA_ALLOC_CONF"] = ",".join(parts)
    else:
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_child(kind, spec, env, timeout, tmpdir):
    """Runs this script as a child; returns its result dict (status ok/oom/error/timeout/crash)."""
    fd, spec_path = tempfile.mkstemp(prefix="spec-", suffix=".json", dir=tmpdir)
    with os.fdopen(fd, "w") as f:
        json.dump(spec, f)
    out_path = spec_path[:-5] + "-out.json"
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind, "--child-spec", spec_path,
           "--child-out", out_path]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, err = None, (e.stderr or b"")
        err = err.decode(errors="replace") if isinstance(err, bytes) else err
    res = None
    if os.path.exists(out_path):
        try:
            with open(out_path) as f:
                res = json.load(f, object_pairs_hook=OrderedDict)
        except ValueError:
            res = None
    if res is None:
        res = OrderedDict(status="timeout" if rc is None else "crash", rc=rc,
                          message=("timed out after %gs" % timeout) if rc is None else "exit %s, no result" % rc,
                          stderr_tail=(err or "")[-2000:])
    res["wall_seconds"] = round(time.time() - t0, 2)
    return res


def pct(memest, measured):
    if memest is None or measured in (None, 0):
        return None
    return 100.0 * (memest - measured) / measured


def compare(c, card_total=None):
    """The signed differences, and the verdicts: memest fits when its `needs` (reserved + overhead) is at
    most the card's total memory as PyTorch reports it (else memest's own fit, --headroom 0, against its
    preset's figure)."""
    me, ms = c.get("memest") or {}, c.get("measured") or {}
    d = OrderedDict()
    if ms.get("status") == "ok":
        d["allocated"] = pct(me.get("allocated"), ms.get("max_memory_allocated"))
        d["reserved"] = pct(me.get("reserved"), ms.get("max_memory_reserved"))
        d["device_total"] = pct(me.get("total_device"), ms.get("device_bytes"))
        d["context"] = pct(me.get("overhead"), ms.get("context_bytes"))
    c["diff_percent"] = d
    fits = me.get("fits")
    if card_total and me.get("needs") is not None:
        fits = me["fits_card"] = me["needs"] <= card_total
    st = ms.get("status")
    if fits is None or st not in ("ok", "oom"):
        c["verdict"] = None
    elif fits == (st == "ok"):
        c["verdict"] = "agree"
    else:
        c["verdict"] = "memest: fits, card: OOM" if fits else "memest: does not fit, card: ran"


KNOBS = ("cudnn_benchmark", "cudnn_enabled", "expandable_segments", "module_loading")


def knob_effects(configs):
    """Pairs of configurations that differ in one knob only, both measured: the differences (the cuDNN
    convolution workspace: cudnn_benchmark on - off, allocated)."""
    rows = []
    for knob in KNOBS:
        groups = OrderedDict()
        for c in configs:
            ms = c.get("measured") or {}
            if ms.get("status") != "ok":
                continue
            key = json.dumps([(k, v) for k, v in c["settings"].items() if k != knob], default=str)
            groups.setdefault(key, []).append(c)
        for cs in groups.values():
            vals = OrderedDict()
            for c in cs:
                vals.setdefault(str(c["settings"][knob]), c)
            if len(vals) < 2:
                continue
            (va, a), (vb, b) = sorted(vals.items())[:2]
            ma, mb = a["measured"], b["measured"]

            def d(k):
                x, y = mb.get(k), ma.get(k)
                return None if x is None or y is None else x - y
            rows.append(OrderedDict(knob=knob, of=va, to=vb, base=a["id"], other=b["id"],
                                    allocated=d("max_memory_allocated"), reserved=d("max_memory_reserved"),
                                    device_total=d("device_bytes"), context=d("context_bytes")))
    return rows


def summarize(configs, dry_run):
    s = OrderedDict(configurations=len(configs),
                    memest_errors=sum(1 for c in configs if (c.get("memest") or {}).get("error")))
    if dry_run:
        s["measured"] = 0
        return s
    st = [((c.get("measured") or {}).get("status")) for c in configs]
    for k in ("ok", "oom", "error", "timeout", "crash", "cpu-ok"):
        s[k] = st.count(k)
    cols = OrderedDict()
    for col in ("allocated", "reserved", "device_total", "context"):
        vals = [c["diff_percent"].get(col) for c in configs if c.get("diff_percent", {}).get(col) is not None]
        e = OrderedDict(n=len(vals), max_abs=max((abs(v) for v in vals), default=None))
        if col in TOLERANCES:
            e["tolerance"] = TOLERANCES[col]
            e["within"] = sum(1 for v in vals if abs(v) <= TOLERANCES[col])
        cols[col] = e
    s["columns"] = cols
    v = [c.get("verdict") for c in configs if c.get("verdict")]
    s["verdicts"] = OrderedDict(agree=v.count("agree"), disagree=len(v) - v.count("agree"))
    return s


def fmt_mib(b):
    return "" if b is None else "%.1f" % (b / MiB)


def fmt_pct(p):
    return "" if p is None else "%+.2f%%" % p


def markdown(doc):
    env = doc.get("environment") or {}
    dev = env.get("device") or {}
    lines = []
    if doc["dry_run"]:
        lines.append("memest side only (--dry-run): %s; %d configurations" % (doc["memest"]["version"] or
                                                                            doc["memest"]["path"],
                                                                            len(doc["configs"])))
    elif doc.get("cpu_check"):
        lines.append("PyTorch side on the CPU (--cpu-check, no readings): torch %s, %s; %d configurations" % (
            env.get("torch"), doc["memest"]["version"] or doc["memest"]["path"], len(doc["configs"])))
    else:
        drv = env.get("driver") or {}
        lines.append("%s (sm %s, %s bytes), driver %s (CUDA %s), torch %s (CUDA %s), cuDNN %s; %s" % (
            dev.get("name"), dev.get("capability"), dev.get("total_memory"), drv.get("driver_version"),
            drv.get("cuda_driver_version"), env.get("torch"), env.get("torch_cuda"), env.get("cudnn"),
            doc["memest"]["version"] or doc["memest"]["path"]))
    lines.append("memest card: %s" % (" ".join(doc["memest"]["card_args"]) or "none") +
                 ("" if not doc["memest"].get("card_note") else " (%s)" % doc["memest"]["card_note"]))
    lines.append("")
    head = ["model", "B", "step", "precision", "knobs",
            "alloc memest", "alloc measured", "alloc diff",
            "reserved memest", "reserved measured", "reserved diff",
            "device memest", "device measured", "device diff",
            "context memest", "context measured", "context diff", "fits (memest / card)"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("| " + " | ".join(["---"] * 5 + ["---:"] * 12 + ["---"]) + " |")
    for c in doc["configs"]:
        me, ms, d = c.get("memest") or {}, c.get("measured") or {}, c.get("diff_percent") or {}
        lb = c["label"]
        st = ms.get("status")
        if me.get("error"):
            mcells = ["memest error"] + [""] * 3
        else:
            mcells = [fmt_mib(me.get("allocated")), fmt_mib(me.get("reserved")), fmt_mib(me.get("total_device")),
                      fmt_mib(me.get("overhead"))]
        if st == "ok":
            xcells = [fmt_mib(ms.get("max_memory_allocated")), fmt_mib(ms.get("max_memory_reserved")),
                      fmt_mib(ms.get("device_bytes")), fmt_mib(ms.get("context_bytes"))]
        elif st is None:
            xcells = [""] * 4
        else:
            xcells = [st.upper() if st == "oom" else st] + [""] * 3
        dcells = [fmt_pct(d.get(k)) for k in ("allocated", "reserved", "device_total", "context")]
        fits = me.get("fits_card", me.get("fits"))
        f_me = "" if fits is None else ("yes" if fits else "no")
        f_card = {"ok": "ran", "oom": "OOM"}.get(st, "")
        row = [lb["model"], lb["B"], lb["step"], lb["precision"], lb["knobs"]]
        for i in range(4):
            row += [mcells[i], xcells[i], dcells[i]]
        row.append(" / ".join(x for x in (f_me, f_card) if x) if (f_me or f_card) else "")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    lines.append("Sizes in MiB; diff = 100 * (memest - measured) / measured; memest: memory.peak, .reserved, "
                 ".total_device, .overhead (--inference: memory.inference.*); measured: max_memory_allocated(), "
                 "max_memory_reserved(), the process on the device (nvidia-smi's figure), that minus "
                 "memory_reserved().")
    lines.append("")
    s = doc["summary"]
    if doc["dry_run"]:
        lines.append("summary: dry run, %d configurations, memest errors %d; nothing measured" %
                     (s["configurations"], s["memest_errors"]))
    elif doc.get("cpu_check"):
        lines.append("summary: cpu check, %d configurations: %d stepped on the CPU, %d error, %d timeout, %d crash; "
                     "memest errors %d; nothing measured" % (s["configurations"], s["cpu-ok"], s["error"],
                                                             s["timeout"], s["crash"], s["memest_errors"]))
    else:
        cols = s["columns"]
        parts = []
        for col, e in cols.items():
            parts.append("%s %s" % (col.replace("_", " "), "-" if e["max_abs"] is None else "%.2f%%" % e["max_abs"]))
        within = ["%s %d/%d (%g%%)" % (col.replace("_", " "), cols[col]["within"], cols[col]["n"], TOLERANCES[col])
                  for col in TOLERANCES]
        lines.append("summary: max |diff|: %s; within tolerance: %s; runs: %d ok, %d OOM, %d error, %d timeout, "
                     "%d crash; verdicts: %d agree, %d disagree; memest errors %d" % (
                         ", ".join(parts), ", ".join(within), s["ok"], s["oom"], s["error"], s["timeout"],
                         s["crash"], s["verdicts"]["agree"], s["verdicts"]["disagree"], s["memest_errors"]))
    ke = doc.get("knob_effects") or []
    if ke:
        lines.append("")
        lines.append("Knob effects (second minus first, MiB; cudnn_benchmark False -> True: the cuDNN "
                     "convolution workspace in allocated):")
        lines.append("")
        lines.append("| knob | from | to | configuration | allocated | reserved | device | context |")
        lines.append("| --- | --- | --- | --- | ---: | ---: | ---: | ---: |")
        for r in ke:
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r["knob"], r["of"], r["to"], r["base"], fmt_mib(r["allocated"]), fmt_mib(r["reserved"]),
                fmt_mib(r["device_total"]), fmt_mib(r["context"])))
    cw = doc.get("cublas_workspace") or {}
    for mode, ws in cw.items():
        if isinstance(ws, dict):
            lines.append("")
            lines.append("cuBLAS workspace (%s, bytes): fp32 matmul %s, + backward %s, + bf16 matmul %s; memest: %s" % (
                mode, ws.get("after_fp32_matmul"), ws.get("after_matmul_backward"), ws.get("after_bf16_matmul"),
                doc.get("memest_workspace")))
    ci = doc.get("context_init") or {}
    for mode, c in ci.items():
        if isinstance(c, dict):
            lines.append("context right after CUDA init (%s): %s MiB (%s)" % (mode, fmt_mib(c.get("bytes")),
                                                                             c.get("source")))
    return "\n".join(lines) + "\n"


def progress(c, dry_run):
    """One line of progress for stderr."""
    me, ms = c.get("memest") or {}, c.get("measured") or {}
    line = "memest " + (fmt_mib(me["allocated"]) + " MiB" if me.get("allocated") is not None else
                        "error (%s)" % me.get("error"))
    if dry_run:
        return line
    st = ms.get("status")
    if st == "ok":
        d = (c.get("diff_percent") or {}).get("allocated")
        return line + "; measured %s MiB%s" % (fmt_mib(ms.get("max_memory_allocated")),
                                               "" if d is None else " (%s)" % fmt_pct(d))
    if st == "cpu-ok":
        return line + "; cpu-ok (step 2: %.2f s)" % (ms.get("step2_seconds") or 0)
    msg = str(ms.get("message") or "").strip()
    return line + "; measured %s%s" % (st, ": " + msg.splitlines()[0][:160] if msg else "")


def slug(name):
    return re.sub(r"[^a-z0-9]+", "-", (name or "unknown").lower()).strip("-") or "unknown"


def write_json(path, doc):
    """`doc` with its provenance (tests/tools/provenance.py: a file committed under tests/reference/ needs it)."""
    env = doc.get("environment") or {}
    libs = OrderedDict((k, str(env[k])) for k in ("torch", "torch_cuda", "cudnn") if env.get(k))
    doc = stamp(doc, "tests/tools/cuda_validate.py", libs or {"torch": "not imported (--dry-run)"})
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, default=str)
        f.write("\n")
    os.replace(tmp, path)


# ---- --check: memest held to a committed measurement ----------------------------------------------------

PROBE_TOLERANCE = 2.0   # percent: --probe's device total against the harness's device figure


def check_config(c, memest, cache):
    """The failures of one measured configuration against memest as it is now: a list of strings."""
    ms, then = c.get("measured") or {}, c.get("memest") or {}
    if ms.get("status") != "ok" or not then.get("args"):
        return []
    rc, doc, err = run_memest(memest, list(then["args"]), cache)
    now = memest_figures(c["settings"], then["args"], rc, doc, err)
    if now.get("error"):
        return ["memest failed: %s" % now["error"]]
    out = []
    for key, mkey, tol in (("allocated", "max_memory_allocated", TOLERANCES["allocated"]),
                           ("reserved", "max_memory_reserved", TOLERANCES["reserved"]),
                           ("total_device", "device_bytes", TOLERANCES["device_total"])):
        d = pct(now.get(key), ms.get(mkey))
        if d is not None and abs(d) > tol:
            out.append("%s %s MiB, measured %s MiB (%+.2f%%; %.0f%% allowed)" % (
                key, fmt_mib(now.get(key)), fmt_mib(ms.get(mkey)), d, tol))
    pr = (c.get("probe") or {}).get("probe") or {}
    if pr.get("measured_total") is not None and ms.get("device_bytes"):
        d = pct(pr["measured_total"], ms["device_bytes"])
        if abs(d) > PROBE_TOLERANCE:
            out.append("--probe's device total %s MiB, measured %s MiB (%+.2f%%; %.0f%% allowed)" % (
                fmt_mib(pr["measured_total"]), fmt_mib(ms["device_bytes"]), d, PROBE_TOLERANCE))
    return out


def check_doc(doc, memest, label):
    """Every configuration of a measurement document against memest now. Returns (checked, failures)."""
    cache, checked, failures = {}, 0, []
    for c in doc.get("configs") or []:
        if (c.get("measured") or {}).get("status") != "ok":
            continue
        checked += 1
        for f in check_config(c, memest, cache):
            failures.append("%s: %s: %s" % (label, c.get("id"), f))
    return checked, failures


def check_main(path, memest):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.stderr.write("%s: --check %s: %s\n" % (PROG, path, e))
        return 2
    env = doc.get("environment") or {}
    dev = env.get("device") or {}
    checked, failures = check_doc(doc, memest, os.path.basename(path))
    for f in failures:
        sys.stdout.write("FAIL %s\n" % f)
    sys.stdout.write("%s: %s (torch %s): %d measured configurations, %d outside the tolerances "
                     "(allocated %.0f%%, reserved %.0f%%, device total %.0f%%, --probe %.0f%%)\n" % (
                         os.path.basename(path), dev.get("name"), env.get("torch"), checked, len(failures),
                         TOLERANCES["allocated"], TOLERANCES["reserved"], TOLERANCES["device_total"],
                         PROBE_TOLERANCE))
    if checked == 0:
        sys.stderr.write("%s: --check %s: no configuration was measured\n" % (PROG, path))
        return 2
    return 1 if failures else 0


def check_selftest(memest):
    """The checker itself, on measurements made up from memest's own figures (a dry run of the quick grid):
    a device that agrees within the tolerances passes, one off by more than them fails, in each column."""
    args = build_parser().parse_args(["--dry-run", "--quick"])
    models = [resolve_model(n, DEFAULT_SEQ) for n in QUICK["models"]]
    args.optims_list, args.precisions_list = list(QUICK["optims"]), [PRECISION_ALIASES[x] for x in QUICK["precisions"]]
    args.inference_list, args.cudnn_benchmark_eff = [PRECISION_ALIASES["fp32"]], "off"
    args.expandable_segments = "off"
    cache = {}
    configs = make_configs(args, models, parse_batches(["1"], [m["name"] for m in models]),
                           model_infos(memest, models, [], cache))
    for c in configs:
        margs = memest_args(c["settings"], [], [])
        c["memest"] = memest_figures(c["settings"], margs, *run_memest(memest, margs, cache))
    bad = []

    def made_up(scale):
        out = []
        for c in configs:
            me = c["memest"]
            m = OrderedDict(status="ok")
            for key, mkey in (("allocated", "max_memory_allocated"), ("reserved", "max_memory_reserved"),
                              ("total_device", "device_bytes")):
                m[mkey] = int(me[key] / scale.get(key, 1.0))
            out.append(OrderedDict(id=c["id"], settings=c["settings"], memest=me, measured=m))
        return dict(configs=out)

    n, f = check_doc(made_up({}), memest, "selftest")
    if n != len(configs) or f:
        bad.append("memest against itself: %d of %d checked, failures %s" % (n, len(configs), f))
    for key, tol in (("allocated", 1.0), ("reserved", 3.0), ("total_device", 2.0)):
        _, f = check_doc(made_up({key: 1 + 0.9 * tol / 100}), memest, "selftest")
        if f:
            bad.append("%s %.1f%% off fails: %s" % (key, 0.9 * tol, f[0]))
        _, f = check_doc(made_up({key: 1 + 1.2 * tol / 100}), memest, "selftest")
        if len(f) != len(configs):
            bad.append("%s %.1f%% off: %d of %d configurations fail" % (key, 1.2 * tol, len(f), len(configs)))
    for b in bad:
        sys.stdout.write("FAIL %s\n" % b)
    sys.stdout.write("check selftest: %d configurations, %d problems\n" % (len(configs), len(bad)))
    return 1 if bad else 0


# ---- --limits: the least memory a step runs in, the largest batch a card runs ---------------------------

GRANULE = 2 * 1024 * 1024   # bytes of allocator capacity per step of the least-memory search
SCAN_BELOW = 8              # granules tried below the bisection's answer (completion need not be monotone)
LIMITS = dict(models=["resnet50", "hf:gpt2"], batches=["8"], optims=["adam-foreach", "adamw-fused"],
              precisions=["fp32", "bf16"], expandable_segments="both")
LIMITS_MAX_BATCH = 4096
DRY_RUN_CARD = "h100-80gb"  # --dry-run --limits without --gpu or --limits-card-bytes: memest's card


def fraction_for(allowed, total):
    """The memory fraction f with int(f * total) == allowed (PyTorch: allowed_memory_maximum =
    static_cast<size_t>(fraction * device_total), in doubles as here); 1.0 from the total up."""
    if allowed >= total:
        return 1.0
    f = (allowed + 0.5) / total
    nudge = getattr(__import__("math"), "nextafter", None)
    while nudge is not None and int(f * total) < allowed:
        f = nudge(f, 2.0)
    while nudge is not None and int(f * total) > allowed:
        f = nudge(f, 0.0)
    return f


def memo(pred):
    """pred with each point evaluated once; .tries: {point: result} in the order tried."""
    tries = OrderedDict()

    def f(k):
        if k not in tries:
            tries[k] = bool(pred(k))
        return tries[k]
    f.tries = tries
    return f


def least_passing(pred, fail, ok):
    """Bisection: the least k in (fail, ok] with pred(k), pred(fail) taken false and pred(ok) true."""
    while ok - fail > 1:
        mid = (fail + ok) // 2
        if pred(mid):
            ok = mid
        else:
            fail = mid
    return ok


def least_capacity(pred, fail, ok, below=SCAN_BELOW):
    """The least capacity (in granules) that completes: bisection over (fail, ok], then the `below`
    granules under its answer (not down to fail): any that complete make the search non-monotone and the
    smallest of them the answer. pred(ok) is checked first; None when even ok does not complete."""
    pred = memo(pred)
    if not pred(ok):
        return OrderedDict(least=None, bisected=None, below_completing=[], non_monotone=False,
                           tries=pred.tries)
    k = least_passing(pred, fail, ok)
    passing = [j for j in range(k - 1, max(k - below, fail + 1) - 1, -1) if pred(j)]
    return OrderedDict(least=min([k] + passing), bisected=k, below_completing=sorted(passing),
                       non_monotone=bool(passing), tries=pred.tries)


def largest_passing(pred, cap):
    """The largest b <= cap with pred(b): doubling from 1, then bisection between the last that ran and
    the first that did not; 0 when 1 does not."""
    pred = memo(pred)
    if not pred(1):
        return 0, pred.tries
    ok, bad = 1, None
    while ok < cap:
        nxt = min(2 * ok, cap)
        if not pred(nxt):
            bad = nxt
            break
        ok = nxt
    if bad is None:
        return ok, pred.tries
    while bad - ok > 1:
        mid = (ok + bad) // 2
        if pred(mid):
            ok = mid
        else:
            bad = mid
    return ok, pred.tries


def selftest_measure():
    """measure_limits against a made-up child: at batch b a step needs b * 65.625 granules of segments
    (allocated peak 25 granules less, reserved 25 more), batch 8 completes at 520 granules too (the allocator
    freeing its cache: non-monotone), the context is 250 granules; the card 5120 granules."""
    global limits_child
    real = limits_child

    def fake(c, args, tmpdir, allowed=None, batch=None):
        b = batch or c["settings"]["batch"]
        need = b * 525 * GRANULE // 8
        ok = allowed is None or allowed >= need or (b == 8 and allowed == 520 * GRANULE)
        return OrderedDict(status="ok" if ok else "oom", oom_phase=None if ok else "step 2",
                           max_memory_allocated=need - 25 * GRANULE, max_memory_reserved=need + 25 * GRANULE,
                           context_init=OrderedDict(bytes=250 * GRANULE), limit=OrderedDict(allowed_effective=allowed),
                           memory_stats=OrderedDict(num_alloc_retries=3 if allowed else 0, num_ooms=0 if ok else 1))
    limits_child = fake
    try:
        args = argparse.Namespace(device=0, timeout=1.0, limits_max_batch=LIMITS_MAX_BATCH)
        return measure_limits(OrderedDict(settings=OrderedDict(batch=8), memest={}), args, None, 5120 * GRANULE)
    finally:
        limits_child = real


def limits_selftest():
    """The searches against made-up completion predicates with known answers (no PyTorch, no memest)."""
    bad = []

    def want(what, got, expected):
        if got != expected:
            bad.append("%s: %r, expected %r" % (what, got, expected))
    r = least_capacity(lambda k: k >= 37, 10, 100)
    want("monotone least", (r["least"], r["bisected"], r["non_monotone"]), (37, 37, False))
    want("monotone tries", len(r["tries"]) <= 1 + 7 + SCAN_BELOW, True)
    r = least_capacity(lambda k: k >= 50 or k in (44, 46), 10, 100)
    want("non-monotone least", (r["least"], r["bisected"], r["below_completing"], r["non_monotone"]),
         (44, 50, [44, 46], True))
    r = least_capacity(lambda k: k >= 50 or k == 30, 10, 100)
    want("a completing capacity beyond the scan", (r["least"], r["non_monotone"]), (50, False))
    r = least_capacity(lambda k: k >= 12, 10, 100)
    want("the scan stops above the lower bound", (r["least"], max(r["tries"]) == 100,
                                                  min(r["tries"]) == 11), (12, True, True))
    r = least_capacity(lambda k: False, 10, 100)
    want("nothing completes", (r["least"], list(r["tries"])), (None, [100]))
    r = least_capacity(lambda k: True, 10, 11)
    want("only the upper bound", (r["least"], r["non_monotone"]), (11, False))
    b, tries = largest_passing(lambda b: b <= 300, 4096)
    want("largest batch", b, 300)
    want("largest batch tries", len(tries), 10 + 8)   # 1 .. 512 doubling, then 256..512 bisected
    want("largest batch at the cap", largest_passing(lambda b: b <= 5000, 4096)[0], 4096)
    want("largest batch, cap not a power of 2", largest_passing(lambda b: b <= 900, 1000)[0], 900)
    want("largest batch, none", largest_passing(lambda b: False, 4096)[0], 0)
    want("largest batch 1", largest_passing(lambda b: b == 1, 4096)[0], 1)
    for total in (15642329088, 85017755648, 150754820096, 3 * GRANULE):
        for allowed in (GRANULE, 1000 * GRANULE + 12345, total // 2 // GRANULE * GRANULE, total - 1):
            if allowed < total:
                f = fraction_for(allowed, total)
                want("fraction_for(%d, %d)" % (allowed, total), (int(f * total), 0 < f <= 1), (allowed, True))
    want("fraction_for at the total", fraction_for(5 * GRANULE, 5 * GRANULE), 1.0)
    m = selftest_measure()
    want("made-up card: least", (m["least"]["least_allowed_bytes"], m["least"]["bisected_bytes"],
                                 m["least"]["non_monotone"], m["least"]["least_device_bytes"],
                                 m["least"]["num_alloc_retries"]), (520 * GRANULE, 525 * GRANULE, True,
                                                                    770 * GRANULE, 3))
    want("made-up card: largest batch", (m["batch"]["largest"], m["batch"]["allowed_bytes"]), (74, 4870 * GRANULE))
    for b in bad:
        sys.stdout.write("FAIL %s\n" % b)
    sys.stdout.write("limits selftest: %d problems\n" % len(bad))
    return 1 if bad else 0


def limits_memest_args(s, card_args, extra, mem=None):
    """memest's command for a --limits configuration: the estimate (--json, no --layers), or with mem the
    --max-batch search on a card of mem bytes; expandable segments as --alloc-conf."""
    a = [x for x in memest_args(s, [] if mem is not None else card_args, extra) if x != "--layers"]
    if mem is not None:
        i = a.index("--batch")
        a = a[:i] + a[i + 2:-1] + ["--max-batch", "--mem", str(mem), "--headroom", "0", "--json"]
    if s["expandable_segments"]:
        a = a[:-1] + ["--alloc-conf", "expandable_segments:True", "--json"]
    return a


def limits_memest(memest, s, card_args, extra, card_bytes, cache):
    """memest's predictions for a configuration: memory.least_device_memory, .least_allocator_memory,
    .peak, .reserved (null where memest lacks them, or rejects --alloc-conf: exit 2), and max_batch on a
    card of card_bytes."""
    r = OrderedDict()
    args = limits_memest_args(s, card_args, extra)
    rc, doc, err = run_memest(memest, args, cache)
    r["args"], r["rc"] = args, rc
    m = doc.get("memory") if isinstance(doc, dict) and isinstance(doc.get("memory"), dict) else {}
    for key in ("least_device_memory", "least_allocator_memory", "peak", "reserved", "overhead"):
        r[key] = m.get(key)
    if not m:
        r["alloc_conf_rejected"] = alloc_conf_rejected(s, rc, doc, err)
        r["note" if r["alloc_conf_rejected"] else "error"] = limits_memest_error(s, rc, doc, err)
    r["max_batch_args"] = bargs = limits_memest_args(s, card_args, extra, mem=card_bytes)
    rc, doc, err = run_memest(memest, bargs, cache) if card_bytes else (None, None, "no card")
    r["max_batch_rc"] = rc
    r["max_batch"] = doc.get("max_batch") if isinstance(doc, dict) else None
    r["max_batch_steady"] = doc.get("max_batch_steady") if isinstance(doc, dict) else None
    if r["max_batch"] is None and rc != 1 and not alloc_conf_rejected(s, rc, doc, err):
        r["max_batch_error"] = limits_memest_error(s, rc, doc, err)   # exit 1: max_batch 0 is in the document
    return r


def alloc_conf_rejected(s, rc, doc, err):
    """memest exited 2 for --alloc-conf (not accepted yet): its predictions are null, not an error."""
    return rc == 2 and s["expandable_segments"] and "alloc-conf" in (err or "") + json.dumps(doc or {})


def limits_memest_error(s, rc, doc, err):
    if alloc_conf_rejected(s, rc, doc, err):
        return "memest does not accept --alloc-conf (exit 2): null"
    msg = (doc or {}).get("error", {}).get("message") if isinstance(doc, dict) else None
    return msg or (err.splitlines()[-1] if err else "exit %s, no JSON" % rc)


def limits_try(res):
    """A search's one run, as recorded: its status and the readings that tell how it ended."""
    st = res.get("memory_stats") or {}
    t = OrderedDict(status=res.get("status"), oom_phase=res.get("oom_phase"),
                    allowed_effective=(res.get("limit") or {}).get("allowed_effective"),
                    max_memory_allocated=res.get("max_memory_allocated"),
                    max_memory_reserved=res.get("max_memory_reserved"),
                    num_alloc_retries=st.get("num_alloc_retries"), num_ooms=st.get("num_ooms"),
                    context_init=(res.get("context_init") or {}).get("bytes"), wall_seconds=res.get("wall_seconds"))
    if res.get("status") not in ("ok", "oom"):
        t["message"] = str(res.get("message") or "")[:300]
    return t


def limits_child(c, args, tmpdir, allowed=None, batch=None):
    """One run of the configuration in a fresh process: batch (default its own), allowed bytes of segments."""
    s = OrderedDict(c["settings"])
    if batch is not None:
        s["batch"] = batch
    spec = dict(settings=s, device=args.device, allowed_bytes=allowed,
                memest_target_shape=None if batch is not None else c["memest"].get("target_shape"),
                memest_loss_input_shape=None if batch is not None else c["memest"].get("loss_input_shape"))
    return run_child("run", spec, child_env_vars(s), args.timeout, tmpdir)


def measure_least(c, args, tmpdir, free):
    """The least allowed bytes the step completes in, searched between the unconstrained run's allocated
    peak (cannot run below) and its reserved peak (runs), in granules."""
    runs = OrderedDict()

    def completes(k):
        runs[k] = limits_child(c, args, tmpdir, allowed=k * GRANULE)
        log("  least: %d MiB: %s" % (k * GRANULE // (1024 * 1024), runs[k].get("status")))
        return runs[k].get("status") == "ok"
    fail = -(-free["max_memory_allocated"] // GRANULE) - 1
    ok = -(-free["max_memory_reserved"] // GRANULE)
    r = least_capacity(completes, fail, ok, below=getattr(args, "limits_scan", SCAN_BELOW))
    out = OrderedDict(granule_bytes=GRANULE, lower_bound_bytes=(fail + 1) * GRANULE, upper_bound_bytes=ok * GRANULE,
                      least_allowed_bytes=None if r["least"] is None else r["least"] * GRANULE,
                      bisected_bytes=None if r["bisected"] is None else r["bisected"] * GRANULE,
                      below_completing_bytes=[k * GRANULE for k in r["below_completing"]],
                      non_monotone=r["non_monotone"])
    at = limits_try(runs[r["least"]]) if r["least"] is not None else OrderedDict()
    out["context_bytes"] = at.get("context_init")
    out["least_device_bytes"] = None if r["least"] is None or at.get("context_init") is None else \
        out["least_allowed_bytes"] + at["context_init"]
    out["num_alloc_retries"], out["num_ooms"] = at.get("num_alloc_retries"), at.get("num_ooms")
    out["tries"] = [OrderedDict([("allowed_bytes", k * GRANULE), ("completes", v)] + list(limits_try(runs[k]).items()))
                    for k, v in r["tries"].items()]
    return out


def measure_batch(c, args, tmpdir, card_bytes, context):
    """The largest batch that runs with allowed = card_bytes - context (doubling, then bisection, up to
    --limits-max-batch), each in a fresh process; an OOM does not run."""
    allowed = card_bytes - context
    runs = OrderedDict()

    def runs_at(b):
        runs[b] = limits_child(c, args, tmpdir, allowed=allowed, batch=b)
        log("  batch %d: %s" % (b, runs[b].get("status")))
        return runs[b].get("status") == "ok"
    largest, tries = largest_passing(runs_at, args.limits_max_batch)
    return OrderedDict(card_bytes=card_bytes, context_bytes=context, allowed_bytes=allowed, cap=args.limits_max_batch,
                       largest=largest, at_cap=largest == args.limits_max_batch,
                       errors=sum(1 for r in runs.values() if r.get("status") not in ("ok", "oom")),
                       tries=[OrderedDict([("batch", b), ("runs", v)] + list(limits_try(runs[b]).items()))
                              for b, v in tries.items()])


def measure_limits(c, args, tmpdir, card_bytes):
    """The unconstrained run, then the two searches (see the docstring)."""
    free = limits_child(c, args, tmpdir)
    keep = ("status", "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
            "device_bytes", "device_source", "context_bytes", "context_init", "memory_stats", "step2_seconds",
            "oom_phase", "message", "env", "backends", "wall_seconds")
    m = OrderedDict(unconstrained=OrderedDict((k, free.get(k)) for k in keep if k in free))
    if free.get("status") != "ok":
        m["least"] = m["batch"] = None
        return m
    m["least"] = measure_least(c, args, tmpdir, free)
    context = (free.get("context_init") or {}).get("bytes")
    m["batch"] = None if context is None or getattr(args, "limits_no_batch", False) else \
        measure_batch(c, args, tmpdir, card_bytes, context)
    return m


def limits_diff(c):
    me, ms = c.get("memest") or {}, c.get("measured") or {}
    least, batch = ms.get("least") or {}, ms.get("batch") or {}
    return OrderedDict(least_allocator=pct(me.get("least_allocator_memory"), least.get("least_allowed_bytes")),
                       least_device=pct(me.get("least_device_memory"), least.get("least_device_bytes")),
                       max_batch=None if me.get("max_batch") is None or batch.get("largest") is None else
                       me["max_batch"] - batch["largest"])


def fmt_batch(b, at_cap=False):
    return "" if b is None else "%d%s" % (b, "+" if at_cap else "")


def limits_row(c):
    me, ms, d = c.get("memest") or {}, c.get("measured") or {}, c.get("diff_percent") or {}
    free, least, batch = ms.get("unconstrained") or {}, ms.get("least") or {}, ms.get("batch") or {}
    lb = c["label"]
    st = free.get("status")
    if st is not None and st != "ok":
        least = OrderedDict(least_allowed_bytes=None)
    nm = "" if not least.get("least_allowed_bytes") else ("yes" if least.get("non_monotone") else "no")
    retries = "" if least.get("num_alloc_retries") is None else "%s / %s" % (least["num_alloc_retries"],
                                                                             least.get("num_ooms"))
    row = [lb["model"], lb["B"], lb["step"], lb["precision"], lb["knobs"],
           fmt_mib(least.get("least_allowed_bytes")) if st in (None, "ok") else st, fmt_mib(me.get("least_allocator_memory")),
           fmt_pct(d.get("least_allocator")), fmt_mib(least.get("least_device_bytes")),
           fmt_mib(me.get("least_device_memory")), fmt_pct(d.get("least_device")), nm, retries,
           fmt_mib(free.get("max_memory_allocated")), fmt_mib(me.get("peak")),
           fmt_mib(free.get("max_memory_reserved")), fmt_mib(me.get("reserved")),
           fmt_batch(batch.get("largest"), batch.get("at_cap")), fmt_batch(me.get("max_batch"))]
    return "| " + " | ".join(row) + " |"


def limits_markdown(doc):
    env = doc.get("environment") or {}
    dev = env.get("device") or {}
    lines = []
    if doc["dry_run"]:
        lines.append("limits, memest side only (--dry-run): %s; %d configurations" % (
            doc["memest"]["version"] or doc["memest"]["path"], len(doc["configs"])))
    else:
        lines.append("limits on %s (sm %s, %s bytes), torch %s (CUDA %s); %s; %d configurations" % (
            dev.get("name"), dev.get("capability"), dev.get("total_memory"), env.get("torch"), env.get("torch_cuda"),
            doc["memest"]["version"] or doc["memest"]["path"], len(doc["configs"])))
    lines.append("memest card: %s; largest batch on a card of %s bytes (%s), searched up to %d" % (
        " ".join(doc["memest"]["card_args"]) or "none", doc["limits"]["card_bytes"], doc["limits"]["card_source"],
        doc["limits"]["max_batch_cap"]))
    lines.append("")
    head = ["model", "B", "step", "precision", "knobs", "least alloc measured", "least alloc memest", "least alloc diff",
            "least device measured", "least device memest", "least device diff", "non-monotone",
            "retries / ooms", "alloc measured", "alloc memest", "reserved measured", "reserved memest",
            "largest batch measured", "largest batch memest"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("| " + " | ".join(["---"] * 5 + ["---:"] * 6 + ["---"] + ["---:"] * 7) + " |")
    lines += [limits_row(c) for c in doc["configs"]]
    lines.append("")
    lines.append("Sizes in MiB; diff = 100 * (memest - measured) / measured. least alloc: the least allowed bytes of "
                 "segments (set_per_process_memory_fraction, in %d MiB granules) the two steps complete in; memest "
                 "memory.least_allocator_memory. least device: that plus the context measured before the first "
                 "allocation; memest memory.least_device_memory. non-monotone: a capacity below the bisection's "
                 "answer completed too. retries / ooms: memory_stats() at the least capacity. alloc, reserved: "
                 "max_memory_allocated(), max_memory_reserved() unconstrained; memest memory.peak, .reserved. "
                 "largest batch: N+ reached the cap; memest --max-batch --mem CARD." % (GRANULE // (1024 * 1024)))
    lines.append("")
    s = doc["summary"]
    lines.append("summary: %s, %d configurations, memest errors %d, --alloc-conf not accepted %d%s" % (
        "dry run" if doc["dry_run"] else "limits", s["configurations"], s["memest_errors"], s["alloc_conf_rejected"],
        "; nothing measured" if doc["dry_run"] else "; least found %d, non-monotone %d, largest batch found %d" % (
            s["least_found"], s["non_monotone"], s["batch_found"])))
    return "\n".join(lines) + "\n"


def limits_summary(configs, dry_run):
    s = OrderedDict(configurations=len(configs),
                    memest_errors=sum(1 for c in configs if (c.get("memest") or {}).get("error")),
                    alloc_conf_rejected=sum(1 for c in configs if (c.get("memest") or {}).get("alloc_conf_rejected")))
    if not dry_run:
        ms = [c.get("measured") or {} for c in configs]
        s["least_found"] = sum(1 for m in ms if (m.get("least") or {}).get("least_allowed_bytes") is not None)
        s["non_monotone"] = sum(1 for m in ms if (m.get("least") or {}).get("non_monotone"))
        s["batch_found"] = sum(1 for m in ms if (m.get("batch") or {}).get("largest") is not None)
    return s


def limits_progress(c):
    me, ms = c.get("memest") or {}, c.get("measured") or {}
    line = "memest least %s, max batch %s" % (fmt_mib(me.get("least_allocator_memory")) or "null",
                                             me.get("max_batch"))
    if me.get("error") or me.get("note"):
        line += " (%s)" % (me.get("error") or me.get("note"))
    if c.get("measured") is None:
        return line
    least, batch = ms.get("least") or {}, ms.get("batch") or {}
    return line + "; measured least %s MiB%s, largest batch %s" % (
        fmt_mib(least.get("least_allowed_bytes")) or (ms.get("unconstrained") or {}).get("status"),
        " (non-monotone)" if least.get("non_monotone") else "", fmt_batch(batch.get("largest"), batch.get("at_cap")))


def limits_card(args, environment, preset):
    """(bytes, where from) of the card whose largest batch is searched: --limits-card-bytes, else the card's
    total; in a dry run the --gpu preset's memory, else DRY_RUN_CARD's."""
    if args.limits_card_bytes:
        return args.limits_card_bytes, "--limits-card-bytes"
    if environment and environment.get("device"):
        return environment["device"]["total_memory"], "the card's total memory"
    name = preset or DRY_RUN_CARD
    try:
        with open(os.path.join(ROOT, "models", "gpus.json")) as f:
            mem = [g["memory"] for g in json.load(f)["gpus"] if g["name"] == name]
    except (OSError, ValueError, KeyError):
        mem = []
    return (mem[0], "preset %s (dry run)" % name) if mem else (None, "no card (dry run)")


def run_limits(args, memest, models, batches, tmpdir):
    environment, rc = cuda_environment(args, tmpdir)
    if rc is not None:
        return rc
    card_args, preset, card_note = card_settings(args, environment)
    card_bytes, card_source = limits_card(args, environment, preset)
    cache = {}
    infos = model_infos(memest, models, args.memest_arg, cache)
    configs = make_configs(args, models, batches, infos)
    log("%s: --limits: %d configurations%s" % (PROG, len(configs), " (dry run: memest only)" if args.dry_run else ""))
    out_path = args.out
    if not out_path and not args.dry_run:
        out_path = os.path.join(ROOT, "tests", "reference", "limits_%s.json" % slug(environment["device"]["name"]))
    doc = OrderedDict(generator="tests/tools/cuda_validate.py --limits", schema_version=1,
                      created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                      dry_run=bool(args.dry_run), argv=sys.argv[1:],
                      memest=OrderedDict(path=memest, version=memest_version(memest), card_args=card_args,
                                         card_preset=preset, card_note=card_note),
                      environment=environment,
                      limits=OrderedDict(granule_bytes=GRANULE, scan_below=SCAN_BELOW, card_bytes=card_bytes,
                                         card_source=card_source, max_batch_cap=args.limits_max_batch),
                      configs=configs, summary={})
    for i, c in enumerate(configs):
        c["memest"] = limits_memest(memest, c["settings"], card_args, args.memest_arg, card_bytes, cache)
        c["measured"] = None if args.dry_run else measure_limits(c, args, tmpdir, card_bytes)
        c["diff_percent"] = limits_diff(c)
        log("[%d/%d] %s: %s" % (i + 1, len(configs), c["id"], limits_progress(c)))
        if out_path and not args.dry_run:   # after every configuration: a long run keeps what it measured
            doc["summary"] = limits_summary(configs, False)
            write_json(out_path, doc)
    doc["summary"] = limits_summary(configs, args.dry_run)
    return emit(doc, limits_markdown(doc), args, out_path)


def check_limits_options(args):
    """--limits measures training steps only: no no-grad passes, no --probe, no --cpu-check."""
    if not args.limits:
        return
    if args.cpu_check or args.probe:
        raise UsageError("--limits: not with %s" % ("--cpu-check" if args.cpu_check else "--probe"))
    if args.limits_max_batch < 1:
        raise UsageError("--limits-max-batch: must be >= 1")
    if args.limits_card_bytes is not None and args.limits_card_bytes <= 0:
        raise UsageError("--limits-card-bytes: must be > 0")
    args.inference_list = []


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def main(argv):
    p = build_parser()
    args = p.parse_args(argv[1:])
    if args.child:
        return child_main(args)
    if args.limits_selftest:
        return limits_selftest()
    if args.check or args.check_selftest:
        try:
            memest = resolve_memest(args.memest)
        except UsageError as e:
            sys.stderr.write("%s: %s\n" % (PROG, e))
            return 2
        return check_main(args.check, memest) if args.check else check_selftest(memest)
    try:
        memest = resolve_memest(args.memest)
        grid = QUICK if args.quick else LIMITS if args.limits else None
        model_names = parse_list(args.models, "--models") if args.models else \
            (list(grid["models"]) if grid else reference_models())
        models = [resolve_model(n, args.seq) for n in model_names]
        names = [m["name"] for m in models]
        batch_specs = args.batches if args.batches else ([",".join(map(str, grid["batches"]))] if grid else None)
        batches = parse_batches(batch_specs, names)
        args.optims_list = parse_list(args.optims, "--optims") if args.optims else \
            (list(grid["optims"]) if grid else list(DEFAULT_OPTIMS))
        for o in args.optims_list:
            parse_optim(o)
        prec = parse_list(args.precisions, "--precisions") if args.precisions else \
            (list(grid["precisions"]) if grid else list(DEFAULT_PRECISIONS))
        inf = parse_list(args.inference_precisions, "--inference-precisions") if args.inference_precisions else \
            list(QUICK["inference_precisions"] if args.quick else ["fp32"])
        for lst, what in ((prec, "--precisions"), (inf, "--inference-precisions")):
            for x in lst:
                if x not in PRECISION_ALIASES and not (what.startswith("--inf") and x == "none"):
                    raise UsageError("%s: unknown precision %r (fp32, bf16, fp16)" % (what, x))
        args.precisions_list = [PRECISION_ALIASES[x] for x in prec]
        args.inference_list = [] if inf == ["none"] else [PRECISION_ALIASES[x] for x in inf if x != "none"]
        args.cudnn_benchmark_eff = args.cudnn_benchmark or ("off" if args.quick or args.limits else "auto")
        args.expandable_segments = args.expandable_segments or (LIMITS["expandable_segments"] if args.limits
                                                                else "off")
        check_limits_options(args)
        if args.timeout <= 0:
            raise UsageError("--timeout: must be > 0")
        if args.dry_run and args.cpu_check:
            raise UsageError("--dry-run and --cpu-check: one or the other")
    except UsageError as e:
        sys.stderr.write("%s: %s\n" % (PROG, e))
        return 2

    tmpdir = tempfile.mkdtemp(prefix="cuda_validate-")
    try:
        return (run_limits if args.limits else run)(args, memest, models, batches, tmpdir)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def cuda_environment(args, tmpdir):
    """The env child's readings (versions, the card): (environment or None, exit code or None). A dry run
    reads nothing; --cpu-check needs PyTorch, a measurement a CUDA device (else 2, with the one line)."""
    if args.dry_run:
        return None, None
    loading_modes = expand_knob(args.module_loading, ("lazy", "eager"))
    env0 = child_env_vars(OrderedDict(module_loading=loading_modes[0].upper(), expandable_segments=False))
    if args.cpu_check:
        environment = run_child("env", dict(device=args.device, measure=False, cpu=True), env0, 300, tmpdir)
        if environment.get("torch") is None:
            sys.stderr.write("%s: --cpu-check: PyTorch cannot be imported by %s (%s)\n" % (
                PROG, sys.executable, environment.get("torch_error") or environment.get("message")))
            return environment, 2
        return environment, None
    environment = run_child("env", dict(device=args.device, measure=False), env0, 300, tmpdir)
    if not environment.get("cuda_available"):
        why = environment.get("torch_error")
        if environment.get("torch") is None:
            why = "PyTorch cannot be imported by %s (%s)" % (sys.executable, why or environment.get("message") or
                                                           environment.get("status"))
        elif not why:
            why = "torch.cuda.is_available() is False (torch %s, built with CUDA %s)" % (
                environment.get("torch"), environment.get("torch_cuda"))
        sys.stderr.write("%s: no CUDA device: %s; use --dry-run to check the memest side\n" % (PROG, why))
        return environment, 2
    return environment, None


def card_settings(args, environment):
    """memest's card: (card_args, preset name or None, note or None): --gpu, else the preset matching the
    card's name, else --mem with its total memory; none in a dry run without --gpu."""
    if args.gpu:
        return ["--gpu", args.gpu, "--headroom", "0"], args.gpu, None
    if environment and environment.get("device"):
        dev = environment["device"]
        preset = card_preset(dev["name"])
        if preset:
            return ["--gpu", preset, "--headroom", "0"], preset, None
        return (["--mem", str(dev["total_memory"]), "--headroom", "0"], None,
                "no preset in models/gpus.json names %r: --mem with its total memory; memest then assumes "
                "the default cuBLAS workspace" % dev["name"])
    return [], None, None


def run(args, memest, models, batches, tmpdir):
    environment, rc = cuda_environment(args, tmpdir)
    if rc is not None:
        return rc
    loading_modes = expand_knob(args.module_loading, ("lazy", "eager"))
    card_args, card_preset_name, card_note = card_settings(args, environment)
    cache, probe_cache = {}, {}   # memest's figures do not depend on the knobs: one run per command
    log("%s: memest %s" % (PROG, memest))
    infos = model_infos(memest, models, args.memest_arg, cache)
    configs = make_configs(args, models, batches, infos)
    log("%s: %d configurations%s" % (PROG, len(configs), " (dry run: memest only)" if args.dry_run else
                                      " (on the CPU, no readings)" if args.cpu_check else ""))

    measuring = not (args.dry_run or args.cpu_check)
    out_path = args.out
    if not out_path and measuring:
        out_path = os.path.join(ROOT, "tests", "reference", "cuda_%s.json" % slug(environment["device"]["name"]))
    doc = OrderedDict(generator="tests/tools/cuda_validate.py", schema_version=1,
                      created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                      dry_run=bool(args.dry_run), cpu_check=bool(args.cpu_check), argv=sys.argv[1:],
                      memest=OrderedDict(path=memest, version=memest_version(memest), card_args=card_args,
                                         card_preset=card_preset_name, card_note=card_note),
                      environment=environment, cublas_workspace=OrderedDict(), context_init=OrderedDict(),
                      memest_workspace=None, tolerances=TOLERANCES, configs=configs, knob_effects=[], summary={})

    if measuring:
        for mode in loading_modes:
            envm = child_env_vars(OrderedDict(module_loading=mode.upper(), expandable_segments=False))
            r = run_child("env", dict(device=args.device, measure=True), envm, 300, tmpdir)
            doc["cublas_workspace"][mode.upper()] = r.get("cublas_workspace") or OrderedDict(
                status=r.get("status"), message=r.get("message"))
            doc["context_init"][mode.upper()] = r.get("context_init")

    for i, c in enumerate(configs):
        s = c["settings"]
        margs = memest_args(s, card_args, args.memest_arg)
        rc, mdoc, err = run_memest(memest, margs, cache)
        c["memest"] = memest_figures(s, margs, rc, mdoc, err)
        if doc["memest_workspace"] is None and c["memest"].get("workspace") and s["kind"] == "train":
            doc["memest_workspace"] = c["memest"]["workspace"]
        c["measured"] = None
        if not args.dry_run:
            spec = dict(settings=s, device=args.device, memest_target_shape=c["memest"].get("target_shape"),
                        memest_loss_input_shape=c["memest"].get("loss_input_shape"))
            spec["cpu"] = bool(args.cpu_check)
            c["measured"] = run_child("run", spec, child_env_vars(s), args.timeout, tmpdir)
        if args.probe and s["kind"] == "train" and not args.cpu_check:
            pargs = memest_args(s, card_args, args.memest_arg, probe=args.device)
            prc, pdoc, perr = run_memest(memest, pargs, probe_cache, timeout=max(args.timeout, 60))
            c["probe"] = OrderedDict(args=pargs, rc=prc,
                                     probe=(pdoc or {}).get("probe") if isinstance(pdoc, dict) else None,
                                     error=(pdoc or {}).get("error") if isinstance(pdoc, dict) else (perr or None))
        compare(c, ((environment or {}).get("device") or {}).get("total_memory"))
        me, ms = c["memest"], c["measured"] or {}
        log("[%d/%d] %s: %s" % (i + 1, len(configs), c["id"], progress(c, args.dry_run)))
        if out_path and measuring:   # after every configuration: a long run keeps what it measured
            doc["summary"] = summarize(configs, False)
            write_json(out_path, doc)
    doc["knob_effects"] = knob_effects(configs)
    doc["summary"] = summarize(configs, args.dry_run)
    return emit(doc, markdown(doc), args, out_path)


def emit(doc, md, args, out_path):
    """The run's outputs: the Markdown table on stdout (and in --markdown), the JSON document in
    out_path. 0."""
    sys.stdout.write(md)
    sys.stdout.flush()
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(md)
    if out_path:
        write_json(out_path, doc)
        log("%s: wrote %s" % (PROG, out_path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
