"""--check: memest's reading of the exported file against the module itself.

memest runs on the file (`--json`, at one batch size, training step and
`--inference`); its parameter count must be the module's (model.parameters(),
shared parameters once) and the output shapes of the nodes named in
`outputs` (or the last node) must be those the module returns, in training
mode and in eval mode. Every difference is printed; any makes exit code 4.

The module's figures (module_facts, with PyTorch, in the process that runs
the model's code) and memest's (compare_facts, report: without PyTorch, in
the command's own process) are taken apart, so that memest runs on the
file the command wrote."""

import json
import os
import shutil
import subprocess
import sys

from .errors import EXIT_MEMEST, EXIT_MISMATCH, ExportError, describe, say


def find_memest(explicit=None):
    if explicit:
        if not os.access(explicit, os.X_OK) or os.path.isdir(explicit):
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
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                           timeout=600)
    except (OSError, subprocess.SubprocessError) as e:
        raise ExportError("--check: cannot run %s: %s" % (memest, e), EXIT_MEMEST)
    try:
        doc = json.loads(p.stdout.decode("utf-8"))
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        raise ExportError("--check: %s printed no JSON (exit %d): %s"
                          % (memest, p.returncode, p.stderr.decode("utf-8", "replace").strip()[:500]),
                          EXIT_MEMEST)
    if "error" in doc:
        err = doc["error"]
        msg = err.get("message") if isinstance(err, dict) else err
        raise ExportError("--check: memest refuses the file: %s" % msg, EXIT_MEMEST)
    return doc


def module_outputs(model, inputs, batch_dim, batch, train):
    """The shapes of the tensors the module returns at `batch` samples, in
    training mode (train) or eval mode; its mode and buffers are restored."""
    import torch
    from . import core
    from .recorder import tensors_in
    xs = core._examples(inputs, batch_dim, batch,
                        lead="--check-batch %d: cannot make the example inputs" % batch)
    mode = "training" if train else "eval"
    try:
        was = model.training
        saved = {n: b.detach().clone() for n, b in model.named_buffers()}
        model.train(train)
        try:
            with torch.no_grad():
                torch.manual_seed(0)
                out = model(*xs)
                shapes = [list(t.shape) for t in tensors_in(out, [])]
        finally:
            model.train(was)
            with torch.no_grad():
                for n, b in model.named_buffers():
                    if n in saved:
                        b.copy_(saved[n])
    except BaseException as e:  # noqa: B902 - the model's code
        raise ExportError("forward() in %s mode at batch %d (--check) raised %s" % (mode, batch, describe(e))) \
            from None
    return shapes


def param_count(model):
    try:
        return sum(p.numel() for p in model.parameters())   # parameters() yields shared ones once
    except BaseException as e:  # noqa: B902 - the model's code
        raise ExportError("parameters() raised %s" % describe(e)) from None


def module_facts(model, inputs, batch_dim, batch, train):
    """What --check compares memest with (JSON data): the parameter count and
    the output shapes in training and eval mode at `batch` samples."""
    return {"params": param_count(model),
            "outputs": {mode: module_outputs(model, inputs, batch_dim, batch, mode == "training")
                        for mode in ("training", "eval")}}


def compare_facts(facts, refs, path, batch, memest, train, notes=None):
    """The list of differences between memest's reading of path and the
    module's figures (empty: the file matches the module)."""
    diffs = []
    want_params = facts["params"]
    for mode, inference in (("training", False), ("eval", True)):
        res = run_memest(memest, path, batch, inference)
        try:
            got = res["params"]["total"]
            shapes = {layer["name"]: layer["output_shape"] for layer in res.get("layers", [])}
        except (KeyError, TypeError, AttributeError):
            raise ExportError("--check: memest's JSON has no parameter count or layers", EXIT_MEMEST)
        if got != want_params:
            diffs.append("%s: memest counts %s parameters, the module has %d" % (mode, got, want_params))
        outs = facts["outputs"][mode]
        if len(outs) != len(refs):
            note = "%s: the module returns %d tensors, the file has %d outputs" % (mode, len(outs), len(refs))
            if mode == "eval" and train and len(outs) < len(refs):
                if notes is not None:
                    notes.append("%s (compared the first %d)" % (note, len(outs)))
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


def compare(model, doc, path, inputs, batch_dim, batch, memest, train):
    """The list of differences (empty: the file matches the module)."""
    from . import core
    return compare_facts(module_facts(model, inputs, batch_dim, batch, train), core.output_refs(doc), path,
                         batch, memest, train)


def report(facts, refs, path, batch, memest_path, train, progress=None):
    """Runs the comparison and prints it: 0, or EXIT_MISMATCH."""
    memest = find_memest(memest_path)
    notes = []
    diffs = compare_facts(facts, refs, path, batch, memest, train, notes)
    if progress is not None:
        progress.end()
    for n in notes:
        say("check: note: %s" % n)
    for d in diffs:
        say("check: %s" % d)
    if diffs:
        return EXIT_MISMATCH
    say("check: %s matches the module at batch %d (%d parameters; outputs %s)"
        % (path, batch, facts["params"], ", ".join(refs)))
    return 0
