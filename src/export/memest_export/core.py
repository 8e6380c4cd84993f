"""export(model, inputs) -> the memest model document (a dict)."""

import contextlib
import inspect
import json
import sys

import torch

from . import batchexpr, gate, outfile, recorder
from .args import RECORD_BATCHES
from .errors import EXIT_OUTPUT, ExportError, UsageError, describe
from .values import dtype_name

# the two batch sizes the model is recorded at (2, not 1: BatchNorm refuses one
# value per channel in training)
BATCHES = RECORD_BATCHES


def input_names(model, n):
    """The names of forward()'s first n parameters (x, input_ids, ...)."""
    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        names = [p.name for p in params[:n]]
        if not all(isinstance(x, str) and x.isidentifier() for x in names):
            names = []
    except BaseException:  # noqa: B902 - model.forward is the model's: anything
        names = []
    if len(names) < n or len(set(names)) < n:
        names = ["x"] if n == 1 else ["x%d" % i for i in range(n)]
    return names


def at_batch(t, batch_dim, b):
    """The example tensor with b samples: its samples repeated in turn."""
    n = t.shape[batch_dim]
    idx = torch.arange(b) % n
    return t.index_select(batch_dim, idx).contiguous()


def _outputs(rec, ts):
    if not ts:
        raise ExportError("forward() returned no tensor")
    refs = []
    for t in ts:
        r = rec.refs.get(id(t))
        if r is None:
            raise ExportError("an output of forward() depends on neither the inputs nor the parameters")
        refs.append(r)
    return refs


def _calling(what, fn, *args):
    """fn(*args), a method of the model: whatever it raises is an ExportError."""
    try:
        return fn(*args)
    except BaseException as e:  # noqa: B902 - the model's code
        raise ExportError("%s raised %s" % (what, describe(e))) from None


def _examples(inputs, batch_dim, b, lead=None):
    """The example tensors at batch b (a UsageError when they cannot be made:
    "LEAD (N bytes): why", LEAD by default "cannot make the example inputs at
    batch B")."""
    try:
        return [at_batch(t, batch_dim, b) for t in inputs]
    except (RuntimeError, MemoryError) as e:
        n = sum(t.element_size() * t.numel() // max(1, t.shape[batch_dim]) * b for t in inputs)
        if lead is None:
            lead = "cannot make the example inputs at batch %d" % b
        raise UsageError("%s (%d bytes): %s"
                         % (lead, n, "out of memory" if isinstance(e, MemoryError) or "alloc" in str(e)
                            else describe(e, where=False)))


def _node_json(node, prev):
    d = {"name": node.name, "type": node.type}
    if node.inputs and node.inputs != [prev]:
        d["inputs"] = node.inputs[0] if len(node.inputs) == 1 else list(node.inputs)
    for k, v in node.args.items():
        if k in ("trainable", "tie_weight", "tie_params"):
            d[k] = v
        else:
            d[k] = v
    return d


# PyTorch's quantized (int8) modules: eager-mode torch.ao.nn.quantized (and its
# dynamic, reference and intrinsic variants), their torch.nn.quantized aliases
_QUANTIZED_MODULES = ("torch.ao.nn.quantized", "torch.nn.quantized", "torch.ao.nn.intrinsic.quantized",
                      "torch.nn.intrinsic.quantized")
# float modules defined there: FloatFunctional (torch.add and the like, a
# quantizable model's own before conversion) is no quantized module
_FLOAT_THERE = ("FloatFunctional", "FXFloatFunctional")


def _held_until(nodes, recorded, life):
    """Each node's "held_until" from the lifetimes run, when that run recorded
    the same nodes (code that branches on torch.is_grad_enabled() may not:
    then none is written)."""
    if [(n.name, n.type) for n in life] != [(n.name, n.type) for n in recorded]:
        return
    held = {n.name: n.args["held_until"] for n in life if "held_until" in n.args}
    for n in nodes:
        if n.name in held:
            n.args["held_until"] = held[n.name]


def refuse_quantized(model):
    """An ExportError when the model holds PyTorch's quantized modules or
    tensors (a converted model: torchvision's quantized_* built with
    quantize=True). memest has no types for them: their int8 weights are
    packed parameters no parameters() count, and their kernels are
    inference-only (no backward), so neither the parameters nor a training
    step could be written."""
    for qual, m in _calling("named_modules()", lambda: list(model.named_modules())):
        mod = getattr(type(m), "__module__", "") or ""
        if (any(mod == q or mod.startswith(q + ".") for q in _QUANTIZED_MODULES)
                and type(m).__name__ not in _FLOAT_THERE):
            raise ExportError("quantized model: module '%s' is %s.%s, a quantized (int8) module: memest has no "
                              "types for PyTorch's quantized kernels (packed int8 weights, inference only); "
                              "export the float model before conversion (torchvision: quantize=False, the "
                              "quantized builders' default)" % (qual or "<top>", mod, type(m).__name__))
    for qual, t in _calling("named_parameters()",
                            lambda: list(model.named_parameters()) + list(model.named_buffers())):
        if getattr(t, "is_quantized", False):
            raise ExportError("quantized model: '%s' is a quantized tensor (%s): memest has no types for "
                              "PyTorch's quantized kernels; export the float model before conversion"
                              % (qual, str(t.dtype).replace("torch.", "")))


def export(model, inputs, *, name=None, batch_dim=0, train=True, progress=None):
    """The memest model document of `model` called on `inputs`.

    inputs: the example tensors forward() takes, in order, each WITH its batch
    dimension at batch_dim (their values are used: token ids must be valid).
    The model is recorded in training mode (train=True) or eval mode at two
    batch sizes; its mode, buffers and the random state are restored after.
    progress, when given, is called with a line of text at each stage.
    Raises ExportError (message, .code) when it cannot be exported."""
    if isinstance(inputs, torch.Tensor):
        inputs = [inputs]
    inputs = list(inputs)
    if not inputs or not all(isinstance(t, torch.Tensor) for t in inputs):
        raise UsageError("inputs must be a non-empty list of example tensors")
    for t in inputs:
        if not -t.dim() <= batch_dim < t.dim():
            raise UsageError("an input of shape %s has no batch dimension %d" % (list(t.shape), batch_dim))
        dtype_name(t.dtype)
    bd = batch_dim % inputs[0].dim()
    refuse_quantized(model)
    names = input_names(model, len(inputs))

    was_training = _calling("model.training", getattr, model, "training")
    saved = _calling("named_buffers()", lambda: {n: b.detach().clone() for n, b in model.named_buffers()})
    rng = torch.get_rng_state()
    _calling("train()", model.train, train)
    try:
        if progress:
            progress("tracing %s" % type(model).__name__)
        how = gate.check(model, inputs)
        recs = []
        for k, b in enumerate(BATCHES):
            if progress:
                progress("recording at batch %d (%d/%d)" % (b, k + 1, len(BATCHES)))
            xs = _examples(inputs, batch_dim, b)
            torch.manual_seed(0)
            recs.append(recorder.record(model, xs, names, b))
        # Python's lifetimes, seen without autograd (which keeps what it
        # saves alive in C++, hiding when the code drops it): one more run
        # at the first batch under no_grad
        if progress:
            progress("recording the tensors' lifetimes")
        torch.manual_seed(0)
        with torch.no_grad():
            life, _ = recorder.record(model, _examples(inputs, batch_dim, BATCHES[0]), names, BATCHES[0],
                                      lifetimes=True)
    finally:
        torch.set_rng_state(rng)
        _calling("train()", model.train, was_training)
        with torch.no_grad():
            for n, b in _calling("named_buffers()", lambda: list(model.named_buffers())):
                if n in saved:
                    b.copy_(saved[n])

    (rec1, out1), (rec2, out2) = recs
    nodes = batchexpr.merge(rec1.nodes, rec2.nodes, BATCHES[0], BATCHES[1], taken=names)
    outs1, outs2 = _outputs(rec1, out1), _outputs(rec2, out2)
    if outs1 != outs2:
        raise ExportError("data-dependent behaviour: forward() returns %s at batch %d, %s at batch %d"
                          % (outs1, BATCHES[0], outs2, BATCHES[1]))
    if not nodes:
        raise ExportError("forward() records no node")
    _held_until(nodes, rec1.nodes, life.nodes)

    doc = {"name": name or type(model).__name__}
    doc["description"] = ("exported by memest-export from %s (torch %s, %s mode, traced by %s)"
                          % ("%s.%s" % (type(model).__module__, type(model).__name__), torch.__version__,
                             "training" if train else "eval", how))
    doc["inputs"] = []
    for n, t in zip(names, inputs):
        shape = [s for i, s in enumerate(t.shape) if i != bd % t.dim()]
        d = {"name": n, "shape": shape, "dtype": dtype_name(t.dtype)}
        if bd != 0:
            d["batch_dim"] = bd
        doc["inputs"].append(d)
    layers = []
    prev = names[0]
    for node in nodes:
        layers.append(_node_json(node, prev))
        prev = node.name
    doc["layers"] = layers
    if not (len(outs1) == 1 and outs1[0] == nodes[-1].name):
        doc["outputs"] = outs1
    _check_text(doc)
    return doc


def _check_text(doc):
    """Every name the document holds is text memest reads (UTF-8: a str with a
    lone surrogate, as from undecodable bytes, is none)."""
    text = json.dumps(doc, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ExportError("the document would hold text that is not UTF-8: ...%s..."
                          % text[max(0, e.start - 40):e.end + 20]) from None


def dumps(doc):
    """The document as text: one node per line."""
    head = {k: v for k, v in doc.items() if k != "layers" and k != "outputs"}
    lines = ["{"]
    for k, v in head.items():
        lines.append("  %s: %s," % (json.dumps(k), json.dumps(v)))
    lines.append('  "layers": [')
    for i, node in enumerate(doc["layers"]):
        lines.append("    " + json.dumps(node) + ("," if i + 1 < len(doc["layers"]) else ""))
    lines.append("  ]" + ("," if "outputs" in doc else ""))
    if "outputs" in doc:
        lines.append('  "outputs": %s' % json.dumps(doc["outputs"]))
    lines.append("}")
    return "\n".join(lines) + "\n"


def output_refs(doc):
    """The references of the document's outputs: `outputs`, else the last node."""
    return list(doc.get("outputs") or [doc["layers"][-1]["name"]])


def export_to_file(model, inputs, path, **kwargs):
    """export() written to path ("-": standard output) whole or not at all
    (outfile.py: a temporary renamed onto a regular file, a device or FIFO
    written in place); returns the document. With "-", what the model prints
    while it is recorded goes to standard error."""
    if path == "-":
        with contextlib.redirect_stdout(sys.stderr):
            doc = export(model, inputs, **kwargs)
        text = dumps(doc)
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except (OSError, ValueError) as e:   # ValueError: a closed stream
            raise ExportError("cannot write to standard output: %s" % (getattr(e, "strerror", None) or e),
                              EXIT_OUTPUT) from None
    else:
        if path == "":
            raise UsageError("export_to_file: expected a file name, got ''")
        doc = export(model, inputs, **kwargs)
        outfile.write_file(path, dumps(doc))
    return doc
