"""Python values as memest argument values."""

import math

import torch

from .errors import safe_str

DTYPES = {
    torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
    torch.float64: "float64", torch.int64: "int64", torch.int32: "int32", torch.int16: "int16",
    torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool",
}


def dtype_name(dt):
    name = DTYPES.get(dt)
    if name is None:
        raise ValueError("dtype %s has no memest name" % dt)
    return name


def collapse(v):
    """(3, 3) -> 3: a tuple argument symmetric in every dimension, as PyTorch accepts it."""
    if isinstance(v, (tuple, list)) and len(v) > 0 and all(x == v[0] for x in v):
        return v[0]
    return v


def jsonable(v):
    """An argument value as JSON: tuples and torch.Size become lists, dtypes names."""
    if isinstance(v, torch.dtype):
        return dtype_name(v)
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError("non-finite number %r" % v)
        return float(v)
    if isinstance(v, (tuple, list, torch.Size)):
        return [jsonable(x) for x in v]
    if isinstance(v, torch.memory_format):
        return str(v).replace("torch.", "")
    raise ValueError("value %s has no JSON form" % safe_str(v, 60, repr))
