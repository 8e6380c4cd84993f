"""The gate: a model is exported only when it can be traced as a graph.

The recording (recorder.py) runs forward() once per batch size on real
tensors, so Python control flow takes the branch those tensors choose; the
gate makes sure there is no such choice to take. torch.fx symbolic tracing
(the memest leaf modules kept as leaves) fails on control flow that reads
tensor values; on PyTorch 2.x torch.export (non-strict where it exists) is
tried next, as it handles more Python; when both fail the model has dynamic
control flow, an error (exit 3) that says so."""

import dis
import inspect
import operator

import torch
import torch.fx

from . import leaves
from .errors import ExportError, describe


class _Tracer(torch.fx.Tracer):
    def is_leaf_module(self, m, qualname):
        return leaves.leaf_entry(m) is not None or super().is_leaf_module(m, qualname)



def _proxy_iter(self):
    """`n, c, h, w = x.shape` under fx: PyTorch 1.13's Proxy.__iter__ finds the
    UNPACK_SEQUENCE at index f_lasti // 2 of the instruction list, which
    Python 3.11's inline caches break (torch/fx/proxy.py); this looks it up by
    its offset (used while the gate traces)."""
    frame = inspect.currentframe().f_back
    for inst in dis.get_instructions(frame.f_code):
        if inst.offset == frame.f_lasti and inst.opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(inst.argval))
    return self.tracer.iter(self)


def _proxy_setitem(self, key, value):
    """`x[1:] = y`, `x[1:] += y` under fx: a Proxy has no __setitem__ (fx
    refuses item assignment, which is not control flow: torchvision wraps the
    functions that do it with torch.fx.wrap); while the gate traces, it is
    recorded as a call of operator.setitem."""
    self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})


def _fx_trace(model):
    Proxy = torch.fx.proxy.Proxy
    orig = Proxy.__iter__
    had_setitem = "__setitem__" in vars(Proxy)
    if int(torch.__version__.split(".")[0]) < 2:     # 2.x finds it by offset itself
        Proxy.__iter__ = _proxy_iter
    if not had_setitem:
        Proxy.__setitem__ = _proxy_setitem
    try:
        _Tracer().trace(model)
    finally:
        Proxy.__iter__ = orig
        if not had_setitem:
            del Proxy.__setitem__


def _raised(how, exc):
    """A BaseException that is no Exception (SystemExit, KeyboardInterrupt, the
    model's own) is forward() ending the work, not a failure to trace."""
    return ExportError("forward() raised %s as %s traced it" % (describe(exc), how))


def check(model, inputs):
    """Return 'fx' or 'torch.export' (how the model traced), or raise ExportError."""
    try:
        _fx_trace(model)
        return "fx"
    except Exception as e:  # fx raises TraceError, TypeError, NotImplementedError, ...
        fx_reason = describe(e)
    except BaseException as e:  # noqa: B902 - the model's code
        raise _raised("fx", e) from None
    export = getattr(torch, "export", None)
    if export is not None and hasattr(export, "export"):
        try:
            try:
                export.export(model, tuple(inputs), strict=False)
            except TypeError as e:  # a 2.x without strict=
                if "strict" not in str(e):
                    raise
                export.export(model, tuple(inputs))
            return "torch.export"
        except Exception as e:
            raise ExportError("dynamic control flow: fx cannot trace %s (%s), nor can torch.export (%s)"
                              % (type(model).__name__, fx_reason, describe(e))) from None
        except BaseException as e:  # noqa: B902 - the model's code
            raise _raised("torch.export", e) from None
    raise ExportError("dynamic control flow: fx cannot trace %s (%s)" % (type(model).__name__, fx_reason))
