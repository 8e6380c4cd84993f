#!/usr/bin/env python3
"""torch_dryrun.py - a benchmark, not a test (issue 17): what users do today in
Python to estimate a training step's memory, timed against memest on the same
model.  A tool, not part of memest.

    /usr/bin/python3 tests/bench/torch_dryrun.py [--memest build/memest] [--runs N]
    ../shared/tools/torch2-chroot python3 tests/bench/torch_dryrun.py      (PyTorch 2.x)

Run from the repository root.  For resnet50 (torchvision.models.resnet50) and
gpt2 (GPT-2 small in plain PyTorch: tests/tools/torch_figures.py's
GPT2LMHeadModel), at the batch and shape of memest's
models/resnet50.json and models/gpt2.json (batch 1, 3x224x224; sequence 1024):

  meta  build the model on the meta device and run one training step's
        forward, loss and backward there, counting the parameter bytes and,
        with torch.autograd.graph.saved_tensors_hooks, the bytes of the
        distinct storages autograd saves (what torchinfo / accelerate's
        estimate-memory style tools do).  PyTorch 2.x builds under
        `with torch.device("meta")`; 1.13 has no such context, so the model is
        built as accelerate's init_empty_weights() does (every parameter and
        buffer moved to meta as it is registered).  An op without a meta
        kernel ends the step early: the row says where, and the times are
        those up to there.
  cpu   the same on the CPU with real tensors (batch 1).

Each is run in a fresh Python process (--runs times, the median kept): the
whole-process wall time as a user pays it (interpreter start and `import
torch` included), and the in-process time without the imports (build + step).
memest is then run on the model file (the median of 11 runs, and the fastest)
and the ratios PyTorch / memest printed.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

VERSION_PY = """import re, sys, torch
blas = re.search(r"BLAS_INFO=([^,]*)", torch.__config__.show())
sys.stdout.write("%s (%d threads, BLAS %s)" % (torch.__version__, torch.get_num_threads(),
                                              blas.group(1) if blas else "?"))"""

MODELS = {
    "resnet50": "models/resnet50.json",
    "gpt2": "models/gpt2.json",
}


# --------------------------------------------------------------------- child
def child(model_name, mode, mkldnn=True):
    t_start = time.perf_counter()
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    if model_name == "resnet50":
        import torchvision
    else:
        # GPT-2 small as the reference generator writes it (its buffers and
        # scalars follow the input's device, so it runs on meta too); an
        # import, timed with the others
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
        from torch_figures import GPT2LMHeadModel
    t_import = time.perf_counter()
    notes = []
    if not mkldnn:
        torch.backends.mkldnn.enabled = False
        notes.append("rerun with torch.backends.mkldnn.enabled = False (PyTorch's native kernels)")
    torch.manual_seed(0)
    dev = torch.device(mode)

    def build():
        if model_name == "resnet50":
            return torchvision.models.resnet50()
        return GPT2LMHeadModel()

    def build_on_meta():
        if hasattr(torch.device, "__enter__"):                 # PyTorch >= 2.0
            with torch.device("meta"):
                return build(), "with torch.device('meta')"
        # PyTorch 1.13: accelerate's init_empty_weights(include_buffers=True)
        reg_p, reg_b = nn.Module.register_parameter, nn.Module.register_buffer

        def register_parameter(self, name, param):
            reg_p(self, name, param)
            if param is not None and param.device.type != "meta":  # a tied weight stays tied
                p = self._parameters[name]
                self._parameters[name] = type(p)(p.to("meta"), requires_grad=p.requires_grad)

        def register_buffer(self, name, tensor, persistent=True):
            reg_b(self, name, tensor, persistent=persistent)
            if tensor is not None:
                self._buffers[name] = self._buffers[name].to("meta")
        nn.Module.register_parameter, nn.Module.register_buffer = register_parameter, register_buffer
        try:
            return build(), "init_empty_weights (accelerate's way: no torch.device context in 1.13)"
        finally:
            nn.Module.register_parameter, nn.Module.register_buffer = reg_p, reg_b

    def storage_key(t):
        s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()._storage
        return s._cdata, s.nbytes()

    if mode == "meta":
        model, how = build_on_meta()
        notes.append("built by " + how)
    else:
        model = build()
    model.train()
    t_build = time.perf_counter()
    params = list(model.parameters())
    param_bytes = sum(p.numel() * p.element_size() for p in params)
    own = {storage_key(t)[0] for t in params + list(model.buffers())}
    saved = {}

    def pack(t):
        k, n = storage_key(t)
        if k not in own:
            saved.setdefault(k, n)
        return t

    stage = "input"
    ok = True
    try:
        if model_name == "resnet50":
            x = torch.randn(1, 3, 224, 224, device=dev)
            target = torch.zeros(1, dtype=torch.long, device=dev)
        else:
            x = torch.zeros(1, 1024, dtype=torch.long, device=dev)
            target = torch.zeros(1024, dtype=torch.long, device=dev)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            stage = "forward"
            out = model(x)
            stage = "loss"
            loss = F.cross_entropy(out.view(-1, out.size(-1)), target)
        stage = "backward"
        loss.backward()
        stage = "done"
    except Exception as e:  # an op without a meta kernel (PyTorch 1.13)
        ok = False
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        notes.append("%s failed on %s: %s: %s" % (stage, mode, type(e).__name__, msg[:160]))
    t_step = time.perf_counter()
    import resource
    print(json.dumps({"rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "torch": torch.__version__, "model": model_name, "mode": mode, "ok": ok, "stage": stage,
        "import_s": t_import - t_start, "build_s": t_build - t_import, "step_s": t_step - t_build,
        "param_bytes": param_bytes, "saved_bytes": sum(saved.values()), "notes": notes}))


# -------------------------------------------------------------------- parent
def run_child(model_name, mode, mkldnn=True):
    t0 = time.perf_counter()
    cmd = [sys.executable, os.path.abspath(__file__), "--child", model_name, mode]
    p = subprocess.run(cmd + ([] if mkldnn else ["no-mkldnn"]),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    wall = time.perf_counter() - t0
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        err = p.stderr.strip().splitlines()
        # a crash in a native library prints a backtrace: keep its first line
        err = [ln for ln in err if "signal" in ln or "Error" in ln][:1] or err[-1:]
        what = ("killed by signal %d" % -p.returncode if p.returncode < 0
                else "exit %d" % p.returncode)
        return {"ok": False, "wall_s": wall, "error": "%s: %s" % (what, err[0].strip() if err else "")}
    r = json.loads(lines[-1])
    r["wall_s"] = wall
    return r


def compile_bench_spawn(tmp):
    """tests/bench/bench_spawn.c compiled into tmp, or None without a C compiler."""
    exe = os.path.join(tmp, "bench_spawn")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_spawn.c")
    try:
        ok = subprocess.run(["cc", "-O2", "-o", exe, src], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL).returncode == 0
    except OSError:
        ok = False
    return exe if ok else None


def time_memest(memest, path, runs, bench_spawn):
    """memest's median and fastest whole-process time (s), its exit code and
    peak RSS (KiB): by bench_spawn when there is one (a fork from a small
    process), else by Python (a fork from Python inflates ru_maxrss, so no
    RSS then)."""
    if bench_spawn:
        out = subprocess.run([bench_spawn, str(runs), memest, path], stdout=subprocess.PIPE,
                             universal_newlines=True).stdout.split()
        if len(out) == 4:
            return float(out[0]) / 1e3, float(out[1]) / 1e3, int(out[3]), int(out[2])
    ts = []
    rc = 0
    for _ in range(runs):
        t0 = time.perf_counter()
        rc = subprocess.run([memest, path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), min(ts), rc, None


def memest_figures(memest, path):
    try:
        out = subprocess.run([memest, path, "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             universal_newlines=True).stdout
        d = json.loads(out)
        return d["memory"]["parameters"], d["memory"]["activations"]
    except Exception:
        return None, None


def mib(b):
    return "-" if b is None else "%.1f" % (b / 2 ** 20)


def main(argv):
    if len(argv) in (3, 4) and argv[0] == "--child":
        child(argv[1], argv[2], mkldnn=argv[3:] != ["no-mkldnn"])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memest", default="build/memest", help="the memest binary (default build/memest)")
    ap.add_argument("--runs", type=int, default=3, help="fresh processes per meta case (default 3)")
    ap.add_argument("--cpu-runs", type=int, default=1,
                    help="fresh processes per CPU case (default 1: a GPT-2 step takes minutes on a slow BLAS)")
    ap.add_argument("--no-cpu", action="store_true", help="leave out the CPU cases")
    ap.add_argument("--memest-runs", type=int, default=11, help="memest runs per model (default 11)")
    ap.add_argument("--models", default="resnet50,gpt2", help="resnet50,gpt2 (default both)")
    args = ap.parse_args(argv)
    if not os.access(args.memest, os.X_OK) or not os.path.isdir("models"):
        ap.error("run from the repository root, with --memest naming an executable (default build/memest)")
    names = [m for m in args.models.split(",") if m]
    for m in names:
        if m not in MODELS:
            ap.error("--models: resnet50, gpt2")

    tmp = tempfile.mkdtemp(prefix="torch_dryrun.")
    try:
        return report(args, compile_bench_spawn(tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def report(args, bench_spawn):
    names = [m for m in args.models.split(",") if m]
    version = subprocess.run([sys.executable, "-c", VERSION_PY], stdout=subprocess.PIPE,
                             universal_newlines=True).stdout.strip() or "? (import torch failed)"
    print("torch_dryrun.py: PyTorch %s, %s" % (version, sys.executable))
    print("fresh processes per case (median): %d meta, %d cpu; memest: %s, %d runs timed by %s"
          % (args.runs, 0 if args.no_cpu else args.cpu_runs, args.memest, args.memest_runs,
             "bench_spawn" if bench_spawn else "Python (no C compiler for bench_spawn)"))
    print("batch 1; resnet50 3x224x224, gpt2 sequence 1024 (models/resnet50.json, models/gpt2.json); fp32")
    print()
    hdr = "%-9s %-6s %-5s %10s %10s %10s %10s %10s %8s %10s %10s %9s"
    print(hdr % ("model", "mode", "ok", "process s", "import s", "build s", "step s", "in-proc s",
                 "RSS MiB", "params MiB", "saved MiB", "x memest"))
    notes = []
    summary = []
    for m in names:
        path = MODELS[m]
        med, best, rc, mrss = time_memest(args.memest, path, args.memest_runs, bench_spawn)
        mp, ma = memest_figures(args.memest, path)
        for mode in ("meta",) if args.no_cpu else ("meta", "cpu"):
            rs = [run_child(m, mode) for _ in range(args.runs if mode == "meta" else args.cpu_runs)]
            good = [r for r in rs if "import_s" in r]
            if not good and mode == "cpu":
                # Debian's PyTorch 2.6 dies of SIGFPE in oneDNN's convolution backward on some CPUs
                notes.append("%s cpu: %s (%.1f s); rerun without oneDNN" % (m, rs[-1].get("error"),
                                                                             rs[-1]["wall_s"]))
                rs = [run_child(m, mode, mkldnn=False) for _ in range(args.cpu_runs)]
                good = [r for r in rs if "import_s" in r]
            if not good:
                print(hdr % (m, mode, "error", "%.3f" % rs[-1]["wall_s"], "-", "-", "-", "-", "-", "-", "-", "-"))
                notes.append("%s %s: %s" % (m, mode, rs[-1].get("error")))
                continue
            r = good[-1]
            wall = statistics.median(x["wall_s"] for x in good)
            imp = statistics.median(x["import_s"] for x in good)
            bld = statistics.median(x["build_s"] for x in good)
            stp = statistics.median(x["step_s"] for x in good)
            inproc = statistics.median(x["build_s"] + x["step_s"] for x in good)
            ok = "yes" if r["ok"] else "no"
            print(hdr % (m, mode, ok, "%.3f" % wall, "%.3f" % imp, "%.3f" % bld, "%.3f" % stp,
                         "%.3f" % inproc, "%.0f" % (max(x["rss_kib"] for x in good) / 1024),
                         mib(r["param_bytes"]), mib(r["saved_bytes"]),
                         "%.0fx" % (wall / med)))
            for n in r["notes"]:
                notes.append("%s %s: %s" % (m, mode, n))
            summary.append((m, mode, ok, wall, inproc, med))
        print(hdr % (m, "memest", "rc %d" % rc, "%.3f" % med, "-", "-", "-", "-",
                     "-" if mrss is None else "%.1f" % (mrss / 1024),
                     mib(mp), mib(ma), "1x")
              + "   (median of %d; fastest %.3f s)" % (args.memest_runs, best))
    print()
    print("Ratios PyTorch / memest (memest: the median whole-process time):")
    for m, mode, ok, wall, inproc, med in summary:
        print("  %-9s %-6s whole process %7.0fx   in process, without imports %7.0fx%s"
              % (m, mode, wall / med, inproc / med, "" if ok == "yes" else "   (step incomplete)"))
    if notes:
        print()
        print("Notes:")
        for n in notes:
            print("  " + n)
    print()
    print("saved MiB: PyTorch's distinct saved storages on this device (CPU/meta: float32 dropout masks, "
          "no CUDA kernels), memest's 'activations (saved)' on CUDA: a sanity check, not a comparison.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
