"""--check: memest's reading of the exported file against the module itself.

memest runs on the file (`--json`, at one batch size, training step and
`--inference`); its parameter count must be the module's (model.parameters(),
shared parameters once) and the output shapes of the nodes named in
`outputs` (or the last node) must be those the module returns, in training
mode and in eval mode. Every difference is printed; any makes exit code 4."""

import json
import os
import shutil
import subprocess
import sys

import torch

from . import core
from .errors import EXIT_MEMEST, EXIT_MISMATCH, ExportError


def find_memest(explicit=None):
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise ExportError("--memest %s: not an executable" % explicit, EXIT_MEMEST)
        return explicit
    found = shutil.which("memest")
    if found:
        return found
    here = os.path.dirname(os.path.abspath(sys.argv[0] if sys.argv and sys.argv[0] else __file__))
    pkg = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "memest"),                                  # installed: bin/
                 os.path.join(pkg, "..", "..", "..", "build", "memest")):       # the source tree
        if os.access(cand, os.X_OK):
            return os.path.normpath(cand)
    raise ExportError("--check: no memest program (give --memest PATH or put memest on the PATH)", EXIT_MEMEST)


def run_memest(memest, path, batch, inference):
    cmd = [memest, path, "--batch", str(batch), "--json"] + (["--inference"] if inference else [])
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ExportError("--check: cannot run %s: %s" % (memest, e), EXIT_MEMEST)
    try:
        doc = json.loads(p.stdout.decode())
    except ValueError:
        raise ExportError("--check: %s printed no JSON (exit %d): %s"
                          % (memest, p.returncode, p.stderr.decode().strip()[:500]), EXIT_MEMEST)
    if "error" in doc:
        raise ExportError("--check: memest refuses the file: %s" % doc["error"].get("message"), EXIT_MEMEST)
    return doc


def module_outputs(model, inputs, batch_dim, batch, train):
    was = model.training
    saved = {n: b.detach().clone() for n, b in model.named_buffers()}
    model.train(train)
    try:
        with torch.no_grad():
            torch.manual_seed(0)
            out = model(*[core.at_batch(t, batch_dim, batch) for t in inputs])
    finally:
        model.train(was)
        with torch.no_grad():
            for n, b in model.named_buffers():
                b.copy_(saved[n])
    from .recorder import tensors_in
    return [list(t.shape) for t in tensors_in(out, [])]


def param_count(model):
    return sum(p.numel() for p in model.parameters())   # parameters() yields shared ones once


def compare(model, doc, path, inputs, batch_dim, batch, memest, train):
    """The list of differences (empty: the file matches the module)."""
    diffs = []
    refs = doc.get("outputs") or [doc["layers"][-1]["name"]]
    want_params = param_count(model)
    for mode, inference in (("training", False), ("eval", True)):
        res = run_memest(memest, path, batch, inference)
        got = res["params"]["total"]
        if got != want_params:
            diffs.append("%s: memest counts %d parameters, the module has %d" % (mode, got, want_params))
        shapes = {layer["name"]: layer["output_shape"] for layer in res.get("layers", [])}
        outs = module_outputs(model, inputs, batch_dim, batch, mode == "training")
        if len(outs) != len(refs):
            note = "%s: the module returns %d tensors, the file has %d outputs" % (mode, len(outs), len(refs))
            if mode == "eval" and train and len(outs) < len(refs):
                print("memest-export: check: note: %s (compared the first %d)" % (note, len(outs)),
                      file=sys.stderr)
            else:
                diffs.append(note)
        for k, (ref, shape) in enumerate(zip(refs, outs)):
            name, _, idx = ref.partition(":")
            if idx not in ("", "0"):
                continue   # memest's --json reports a node's first output only
            got_shape = shapes.get(name)
            if got_shape is None:
                diffs.append("%s: memest reports no node '%s'" % (mode, name))
            elif got_shape != shape:
                diffs.append("%s: output %d (%s): memest %s, the module %s" % (mode, k, ref, got_shape, shape))
    return diffs


def run(model, doc, path, inputs, batch_dim, batch, memest_path, train):
    memest = find_memest(memest_path)
    diffs = compare(model, doc, path, inputs, batch_dim, batch, memest, train)
    for d in diffs:
        print("memest-export: check: %s" % d, file=sys.stderr)
    if diffs:
        return EXIT_MISMATCH
    print("memest-export: check: %s matches the module at batch %d (%d parameters; outputs %s)"
          % (path, batch, param_count(model), ", ".join(doc.get("outputs") or [doc["layers"][-1]["name"]])),
          file=sys.stderr)
    return 0
