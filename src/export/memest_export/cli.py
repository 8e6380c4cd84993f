"""The memest-export command (doc/memest-export.md).

The command line is checked first, without PyTorch (args.py), and so are
the output's path (outfile.py: not empty, not the file standard output or
error is). The model's code then runs in a child process (worker.py) that
imports PyTorch and the model, records it, refuses an output that is the
file of a loaded module (the model's .py) and sends back the document;
this process writes it (outfile.py) and runs --check's memest. Every
failure is one line on standard error (errors.say) and a documented exit
code."""

import argparse
import importlib
import inspect
import os
import signal
import sys

from . import args as argv_
from .errors import (EXIT_INTERNAL, EXIT_USAGE, ExportError, UsageError, describe, exit_code, say)

USAGE_EPILOG = """\
exit codes: 0 written (and --check passed), 2 bad command line (also a model
that cannot be imported or built), 3 the model cannot be exported (dynamic
control flow, an op memest has no type for, data-dependent behaviour, an
exception or exit in the model's code), 4 --check found a difference, 5
--check could not run memest, 6 the output cannot be written, 7 an internal
error of memest-export. The model's standard output goes to standard error.

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
                   "(a name of torchvision.models.list_models(), or a builder of torchvision.models and "
                   "its segmentation, video, detection, optical_flow and quantization namespaces; weights "
                   "and weights_backbone are None unless --kwargs gives them)")
    p.add_argument("--kwargs", default="{}", metavar="JSON",
                   help="keyword arguments of the class or builder, a JSON object")
    p.add_argument("--input", action="append", default=[], metavar="[DTYPE:]SHAPE",
                   help="one forward() argument: its per-sample shape (batch excluded), e.g. 3,224,224 "
                   "or int64:128 (token ids); repeat for several arguments, in order")
    p.add_argument("--batch-dim", default="0", metavar="N",
                   help="where the batch dimension is in every input (default 0)")
    p.add_argument("--eval", action="store_true", help="record the model in eval mode (default: training)")
    p.add_argument("--name", help="the model's name in the file (default: the MODEL's name)")
    p.add_argument("-o", "--output", default="-", metavar="FILE",
                   help="the file to write, whole or not at all (default -: stdout)")
    p.add_argument("--check", action="store_true",
                   help="run memest on the file and compare with the module: parameters and output "
                   "shapes, in training and eval mode")
    p.add_argument("--check-batch", default="2", metavar="N", help="the batch --check uses (default 2)")
    p.add_argument("--memest", metavar="PATH", help="the memest program --check runs (default: memest on "
                   "the PATH, else next to this program or in the build directory)")
    return p


def _get(obj, part):
    """getattr(obj, part), or a marker when obj has no such attribute; what the
    model's code raises (a module's __getattr__) is passed on."""
    try:
        return getattr(obj, part)
    except AttributeError:
        return _get


TORCHVISION_NAMESPACES = ("", "segmentation", "video", "detection", "optical_flow", "quantization")


def torchvision_builder(name, kwargs):
    """The builder torchvision:NAME names and the keyword arguments it is called
    with. NAME is a registered name (torchvision.models.list_models(), found by
    get_model_builder: quantized_resnet50 is quantization's resnet50) or a
    builder function of torchvision.models or one of its namespaces. A
    keyword argument the builder takes and --kwargs leaves out is set to
    download nothing: weights_backbone (the segmentation and detection
    builders' default is ImageNet weights, a download) is None, as weights
    already is; memest's figures do not depend on the weights' values."""
    try:
        import torchvision.models as tvm
    except BaseException as e:  # noqa: B902 - a broken installation raises anything
        raise UsageError("torchvision cannot be imported: %s" % describe(e))
    obj = None
    get_builder = getattr(tvm, "get_model_builder", None)   # torchvision 0.14 and later
    if get_builder is not None and not name.startswith("_"):
        try:
            obj = get_builder(name)
        except ValueError:       # "Unknown model ..."
            obj = None
        except BaseException as e:  # noqa: B902 - torchvision's code
            raise UsageError("torchvision:%s: looking it up raised %s" % (name, describe(e)))
    if obj is None:
        for ns in TORCHVISION_NAMESPACES:
            try:
                m = importlib.import_module("torchvision.models" + ("." + ns if ns else ""))
            except Exception:
                continue
            obj = getattr(m, name, None)
            if obj is not None and callable(obj) and not name.startswith("_"):
                break
            obj = None
    if obj is None:
        known = ""
        if get_builder is not None:
            try:
                import difflib
                close = difflib.get_close_matches(name, tvm.list_models(), n=3)
                known = " (close: %s)" % ", ".join(close) if close else ""
            except BaseException:  # noqa: B902
                known = ""
        raise UsageError("torchvision has no model builder '%s'%s" % (name, known))
    kwargs = dict(kwargs)
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        params = {}
    for k in ("weights", "weights_backbone"):
        if k in params and k not in kwargs:
            kwargs[k] = None
    return obj, kwargs


def load_model(spec, kwargs):
    """The nn.Module MODULE:NAME names: imported, looked up and built, each
    step's failure (whatever the model's code raises) a UsageError."""
    import torch.nn as nn
    if ":" not in spec:
        raise UsageError("model '%s': expected MODULE:NAME or torchvision:NAME" % spec)
    modname, attr = spec.split(":", 1)
    if modname == "torchvision":
        obj, kwargs = torchvision_builder(attr, kwargs)
    else:
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            m = importlib.import_module(modname)
        except BaseException as e:  # noqa: B902 - the module's code: SystemExit, KeyboardInterrupt too
            raise UsageError("cannot import '%s': %s" % (modname, describe(e)))
        obj = m
        for part in attr.split("."):
            try:
                obj = _get(obj, part)
            except BaseException as e:
                raise UsageError("cannot build '%s': looking up '%s' raised %s" % (spec, part, describe(e)))
            if obj is _get:
                raise UsageError("module '%s' has no '%s'" % (modname, attr))
    try:
        is_module = isinstance(obj, nn.Module)
    except BaseException as e:
        raise UsageError("cannot build '%s': %s" % (spec, describe(e)))
    if is_module:
        if kwargs:
            raise UsageError("'%s' is a module instance: --kwargs applies to a class or builder" % spec)
        return obj
    try:
        model = obj(**kwargs)
        is_module = isinstance(model, nn.Module)
    except BaseException as e:  # noqa: B902 - the constructor's code
        raise UsageError("cannot build '%s': %s" % (spec, describe(e)))
    if not is_module:
        raise UsageError("'%s' did not give an nn.Module but %s" % (spec, type(model).__name__))
    return model


def make_input(spec, batch_dim, batch):
    """The example tensor of one --input (args.InputSpec) with `batch` samples:
    floating point from torch.randn, integers 0 or 1, booleans False."""
    import torch
    dtype = getattr(torch, spec.dtype)   # memest's dtype names (args.DTYPES) are torch's
    pos = batch_dim % (len(spec.shape) + 1)
    full = spec.shape[:pos] + [batch] + spec.shape[pos:]
    g = torch.Generator().manual_seed(0)
    try:
        if dtype.is_floating_point:
            return torch.randn(full, generator=g).to(dtype)
        if dtype == torch.bool:
            return torch.zeros(full, dtype=dtype)
        return torch.randint(0, 2, full, generator=g, dtype=dtype)
    except (RuntimeError, MemoryError) as e:
        raise UsageError("--input %s: cannot make its example tensor at batch %d (%d bytes): %s"
                         % (spec.text, batch, spec.nbytes(batch), out_of_memory(e)))


def out_of_memory(e):
    """'out of memory' for an allocation failure, else the exception."""
    if isinstance(e, MemoryError) or "can't allocate memory" in str(e) or "out of memory" in str(e):
        return "out of memory"
    return describe(e, where=False)


def _hold_closed_std_fds():
    """A closed standard output or error is held by /dev/null opened read only
    (as memest does): no file opened later takes its number, and writes to
    it still fail, so that a closed standard output is reported."""
    import fcntl
    for fd in (1, 2):
        try:
            fcntl.fcntl(fd, fcntl.F_GETFD)
        except OSError:
            try:
                h = os.open(os.devnull, os.O_RDONLY)
                if h != fd:
                    os.dup2(h, fd, inheritable=True)
                    os.close(h)
            except OSError:
                pass


def main(argv=None):
    # past a file-size limit a write fails with EFBIG (exit 6), as memest,
    # instead of the signal killing the command
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    _hold_closed_std_fds()
    try:
        return _main(argv)
    except ExportError as e:
        say(str(e))
        return exit_code(e.code)
    except SystemExit:
        raise      # --help
    except KeyboardInterrupt:
        say("interrupted")
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        return 130
    except BaseException as e:  # noqa: B902 - a bug: still one line
        say("internal error: %s" % describe(e, where=False))
        return EXIT_INTERNAL


class Options:
    """The command line, checked."""

    def __init__(self, argv):
        a = parser().parse_args(argv)
        self.model, self.eval, self.check = a.model, a.eval, a.check
        self.output = a.output
        if ":" not in a.model:
            raise UsageError("model '%s': expected MODULE:NAME or torchvision:NAME" % a.model)
        self.kwargs = argv_.kwargs(a.kwargs)
        if not a.input:
            raise UsageError("no --input: give the per-sample shape of each forward() argument")
        self.inputs = [argv_.parse_input(s) for s in a.input]
        self.batch_dim = argv_.batch_dim(a.batch_dim, self.inputs)
        self.check_batch = argv_.check_batch(a.check_batch)
        if a.name == "":
            raise UsageError("--name: expected a name, got ''")
        if a.name is not None and not _is_utf8(a.name):
            raise UsageError("--name %s: not valid UTF-8" % a.name)
        self.name = a.name or a.model.split(":", 1)[1].split(".")[-1]
        if a.memest == "":
            raise UsageError("--memest: expected a file name, got ''")
        argv_.check_sizes(self.inputs, max(argv_.RECORD_BATCHES + ((self.check_batch,) if a.check else ())))
        if a.check and a.output == "-":
            raise UsageError("--check needs a file: give -o FILE")
        from . import outfile
        stds = outfile.std_ids()
        outfile.check_output_path("-o", a.output, stds)
        self.stdout_id = stds[1]
        self.memest_path = None
        if a.check:   # before the work: the program --check runs, and never overwritten
            from . import check
            self.memest_path = check.find_memest(a.memest)
            mid = outfile.file_id(self.memest_path)
            if mid is not None and outfile.file_id(a.output) == mid:
                raise UsageError("-o %s is the memest program --check runs: it would be overwritten"
                                 % a.output)
        # where -o is, whatever directory the model's code changes to
        self.output_abs = a.output if a.output == "-" else os.path.abspath(a.output)


def _is_utf8(s):
    try:
        s.encode("utf-8")
        return True
    except UnicodeEncodeError:   # a byte argv could not decode (a surrogate)
        return False


def _main(argv):
    opts = Options(argv)
    from . import outfile, worker
    from .progress import Progress
    result = worker.run(lambda chan: _work(chan, opts))
    text = result["doc"]
    if opts.output == "-":
        outfile.write_stdout(text)
    else:
        outfile.write_file(opts.output, text)
    if opts.check:
        from . import check
        progress = Progress()
        try:
            progress.step("checking %s with memest at batch %d" % (opts.output, opts.check_batch))
            return check.report(result["facts"], result["refs"], opts.output, opts.check_batch,
                                opts.memest_path, not opts.eval, progress=progress)
        finally:
            progress.end()
    return 0


def _work(chan, opts):
    """The child's work (worker.py): the document's text, its outputs and, for
    --check, the module's own figures."""
    chan.stage("importing PyTorch", EXIT_USAGE)
    try:
        import torch  # noqa: F401
    except BaseException as e:  # noqa: B902 - a broken installation raises anything
        raise UsageError("PyTorch cannot be imported: %s" % describe(e, where=False))
    from . import core, outfile
    inputs = [make_input(s, opts.batch_dim, core.BATCHES[0]) for s in opts.inputs]
    chan.stage("building %s" % opts.model, EXIT_USAGE)
    model = load_model(opts.model, opts.kwargs)
    outfile.check_not_source("-o", opts.output, opts.output_abs, opts.stdout_id)
    doc = core.export(model, inputs, name=opts.name, batch_dim=opts.batch_dim, train=not opts.eval,
                      progress=chan.stage)
    outfile.check_not_source("-o", opts.output, opts.output_abs, opts.stdout_id)   # modules forward() imported
    res = {"doc": core.dumps(doc), "refs": core.output_refs(doc)}
    if opts.check:
        from . import check
        chan.stage("running the module at batch %d for --check" % opts.check_batch)
        res["facts"] = check.module_facts(model, inputs, opts.batch_dim, opts.check_batch, not opts.eval)
    return res
