"""The name of a function a TorchFunctionMode sees, as the op table spells it.

The mode receives the function object itself: `torch.nn.functional.relu`, the
method descriptor `torch.Tensor.view`, the builtin `torch.cat`, the
`__get__` of a property (`Tensor.shape`). Objects are looked up by identity
in the namespaces users call (the table keeps them alive, so ids are
stable): "F.relu", "Tensor.view", "torch.cat". The same object reached from
two namespaces takes the first name (F before torch: `F.avg_pool2d` is
`torch._C._nn.avg_pool2d`)."""

import torch
import torch.nn.functional as F

_NAMESPACES = [
    ("Tensor.", torch.Tensor),
    ("F.", F),
    ("torch.", torch),
    ("torch.linalg.", getattr(torch, "linalg", None)),
    ("torch.special.", getattr(torch, "special", None)),
    ("torch.fft.", getattr(torch, "fft", None)),
    ("torch._C._nn.", torch._C._nn),
]

_by_id = {}     # id(object) -> (name, object): the object is kept alive with its id


def _build():
    for prefix, ns in _NAMESPACES:
        if ns is None:
            continue
        for attr in dir(ns):
            try:
                obj = getattr(ns, attr)
            except Exception:  # some attributes raise on access
                continue
            if not callable(obj) or isinstance(obj, type):
                continue
            _by_id.setdefault(id(obj), (prefix + attr, obj))


_build()


def canonical(func):
    """'Tensor.view', 'F.relu', 'torch.cat', 'Tensor.shape.__get__', or the
    function's module and qualified name when it is in no namespace."""
    hit = _by_id.get(id(func))
    if hit is not None and hit[1] is func:
        return hit[0]
    owner = getattr(func, "__self__", None)
    if getattr(func, "__name__", None) == "__get__" and owner is not None:
        return "Tensor.%s.__get__" % getattr(owner, "__name__", "?")
    if getattr(func, "__name__", None) == "__set__" and owner is not None:
        return "Tensor.%s.__set__" % getattr(owner, "__name__", "?")
    mod = getattr(func, "__module__", None) or ""
    qual = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
    return (mod + "." if mod else "") + qual


def public(name):
    """The name an error message prints: torch.nn.functional.relu, torch.Tensor.view."""
    if name.startswith("F."):
        return "torch.nn.functional." + name[2:]
    if name.startswith("Tensor."):
        return "torch.Tensor." + name[7:]
    return name
