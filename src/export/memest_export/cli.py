"""The memest-export command (README.md, "memest-export")."""

import argparse
import importlib
import json
import os
import sys

from .errors import EXIT_USAGE, ExportError, UsageError

USAGE_EPILOG = """\
exit codes: 0 written (and --check passed), 2 bad command line (also a model
that cannot be imported or built), 3 the model cannot be exported (dynamic
control flow, an op memest has no type for, data-dependent behaviour), 4
--check found a difference, 5 --check could not run memest, 6 the output
cannot be written.

examples:
  memest-export torchvision:resnet50 --input 3,224,224 -o resnet50.json
  memest-export mypackage.models:Net --kwargs '{"depth": 50}' --input 3,32,32 -o net.json
  memest-export mymodels:TinyLM --input int64:128 --check -o tinylm.json
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def parser():
    p = _Parser(prog="memest-export", description="Write a PyTorch model as a memest model file.",
                epilog=USAGE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="MODULE:NAME (a class, a builder function or a module instance; "
                   "MODULE is imported from the current directory or sys.path), or torchvision:NAME "
                   "(a builder of torchvision.models and its segmentation, video, detection, "
                   "optical_flow and quantization namespaces)")
    p.add_argument("--kwargs", default="{}", metavar="JSON",
                   help="keyword arguments of the class or builder, a JSON object")
    p.add_argument("--input", action="append", default=[], metavar="[DTYPE:]SHAPE",
                   help="one forward() argument: its per-sample shape (batch excluded), e.g. 3,224,224 "
                   "or int64:128 (token ids); repeat for several arguments, in order")
    p.add_argument("--batch-dim", type=int, default=0, metavar="N",
                   help="where the batch dimension is in every input (default 0)")
    p.add_argument("--eval", action="store_true", help="record the model in eval mode (default: training)")
    p.add_argument("--name", help="the model's name in the file (default: the MODEL's name)")
    p.add_argument("-o", "--output", default="-", metavar="FILE", help="the file to write (default -: stdout)")
    p.add_argument("--check", action="store_true",
                   help="run memest on the file and compare with the module: parameters and output "
                   "shapes, in training and eval mode")
    p.add_argument("--check-batch", type=int, default=2, metavar="N", help="the batch --check uses (default 2)")
    p.add_argument("--memest", metavar="PATH", help="the memest program --check runs (default: memest on "
                   "the PATH, else next to this program or in the build directory)")
    return p


def load_model(spec, kwargs):
    import torch.nn as nn
    if ":" not in spec:
        raise UsageError("model '%s': expected MODULE:NAME or torchvision:NAME" % spec)
    modname, attr = spec.split(":", 1)
    if modname == "torchvision":
        try:
            import torchvision.models as tvm
        except ImportError as e:
            raise UsageError("torchvision cannot be imported: %s" % e)
        obj = None
        for ns in ("", "segmentation", "video", "detection", "optical_flow", "quantization"):
            try:
                m = importlib.import_module("torchvision.models" + ("." + ns if ns else ""))
            except ImportError:
                continue
            obj = getattr(m, attr, None)
            if obj is not None and callable(obj) and not attr.startswith("_"):
                break
            obj = None
        if obj is None:
            raise UsageError("torchvision has no model builder '%s'" % attr)
    else:
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            m = importlib.import_module(modname)
        except Exception as e:
            raise UsageError("cannot import '%s': %s: %s" % (modname, type(e).__name__, e))
        obj = m
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise UsageError("module '%s' has no '%s'" % (modname, attr))
            obj = getattr(obj, part)
    if isinstance(obj, nn.Module):
        if kwargs:
            raise UsageError("'%s' is a module instance: --kwargs applies to a class or builder" % spec)
        return obj
    try:
        model = obj(**kwargs)
    except Exception as e:
        raise UsageError("cannot build '%s': %s: %s" % (spec, type(e).__name__, e))
    if not isinstance(model, nn.Module):
        raise UsageError("'%s' did not give an nn.Module but %s" % (spec, type(model).__name__))
    return model


def parse_input(text, batch_dim, batch):
    """--input [DTYPE:]SHAPE -> an example tensor of `batch` samples."""
    import torch
    from .values import DTYPE_NAMES
    dtype = torch.float32
    shape_text = text
    if ":" in text:
        dname, shape_text = text.split(":", 1)
        if dname not in DTYPE_NAMES:
            raise UsageError("--input %s: unknown dtype '%s' (%s)" % (text, dname, ", ".join(sorted(DTYPE_NAMES))))
        dtype = DTYPE_NAMES[dname]
    try:
        shape = [int(s) for s in shape_text.split(",")] if shape_text.strip() else []
    except ValueError:
        raise UsageError("--input %s: a shape is sizes separated by commas, such as 3,224,224" % text)
    if any(s <= 0 for s in shape):
        raise UsageError("--input %s: sizes must be positive" % text)
    if not -len(shape) - 1 <= batch_dim <= len(shape):
        raise UsageError("--batch-dim %d: out of range for --input %s" % (batch_dim, text))
    pos = batch_dim % (len(shape) + 1)
    full = shape[:pos] + [batch] + shape[pos:]
    g = torch.Generator().manual_seed(0)
    if dtype.is_floating_point:
        return torch.randn(full, generator=g).to(dtype)
    if dtype == torch.bool:
        return torch.zeros(full, dtype=dtype)
    return torch.randint(0, 2, full, generator=g, dtype=dtype)


def main(argv=None):
    try:
        return _main(argv)
    except ExportError as e:
        sys.stderr.write("memest-export: %s\n" % e)
        return e.code


def _main(argv):
    from .progress import Progress
    progress = Progress()
    try:
        return _run(argv, progress)
    finally:
        progress.end()   # before any message


def _run(argv, progress):
    args = parser().parse_args(argv)
    try:
        kwargs = json.loads(args.kwargs)
    except ValueError as e:
        raise UsageError("--kwargs: not JSON: %s" % e)
    if not isinstance(kwargs, dict):
        raise UsageError("--kwargs: must be a JSON object")
    if not args.input:
        raise UsageError("no --input: give the per-sample shape of each forward() argument")
    if args.check_batch < 1:
        raise UsageError("--check-batch must be at least 1")
    if args.check and args.output == "-":
        raise UsageError("--check needs a file: give -o FILE")
    progress.step("importing PyTorch")
    try:
        import torch  # noqa: F401
    except ImportError as e:
        raise UsageError("PyTorch cannot be imported: %s" % e)
    from .core import export_to_file
    inputs = [parse_input(s, args.batch_dim, 2) for s in args.input]
    progress.step("building %s" % args.model)
    model = load_model(args.model, kwargs)
    name = args.name or args.model.split(":", 1)[1].split(".")[-1]
    doc = export_to_file(model, inputs, args.output, name=name, batch_dim=args.batch_dim,
                         train=not args.eval, progress=progress.step)
    if args.check:
        from . import check
        progress.step("checking %s with memest at batch %d" % (args.output, args.check_batch))
        return check.run(model, doc, args.output, inputs, args.batch_dim, args.check_batch,
                         args.memest, not args.eval)
    return 0
