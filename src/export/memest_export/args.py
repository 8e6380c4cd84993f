"""The command line's values, checked before any work and without PyTorch:
numbers written as memest reads them (digits only: no sign unless allowed,
no spaces, no '_', no other script's digits), each within its range, and
the sizes of the example tensors within what can exist.

Every failure is a UsageError (exit 2) naming the option and the value."""

import json

from .errors import UsageError

# the two batch sizes the model is recorded at (core.BATCHES)
RECORD_BATCHES = (2, 3)
DIM_MAX = (1 << 53) - 1          # memest's largest dimension (include/memest/shape.h), as --batch
MAX_DIMS = 8                     # memest's most dimensions of a tensor, the batch included
BYTES_MAX = (1 << 63) - 1        # what a tensor's storage can hold at all

# every dtype name --input takes -> (memest's name, bytes per element)
DTYPES = {
    "float32": ("float32", 4), "float16": ("float16", 2), "bfloat16": ("bfloat16", 2),
    "float64": ("float64", 8), "int64": ("int64", 8), "int32": ("int32", 4), "int16": ("int16", 2),
    "int8": ("int8", 1), "uint8": ("uint8", 1), "bool": ("bool", 1),
    "fp32": ("float32", 4), "float": ("float32", 4), "half": ("float16", 2), "fp16": ("float16", 2),
    "bf16": ("bfloat16", 2), "long": ("int64", 8), "int": ("int32", 4), "double": ("float64", 8),
}


def _digits(s):
    return s != "" and all("0" <= c <= "9" for c in s)


def whole(opt, s, lo, hi, what=None):
    """s as a whole number in [lo, hi]; a '-' sign only when lo < 0."""
    body = s[1:] if lo < 0 and s.startswith("-") else s
    v = None
    if _digits(body) and len(body) <= 20:
        v = int(body) * (-1 if body is not s else 1)
    if v is None or not lo <= v <= hi:
        raise UsageError("%s: expected %s, got '%s'" % (opt, what or "a whole number between %d and %d"
                                                          % (lo, hi), s))
    return v


class InputSpec:
    """One --input: its text, memest's dtype name, bytes per element and the
    per-sample shape."""

    def __init__(self, text, dtype, itemsize, shape):
        self.text, self.dtype, self.itemsize, self.shape = text, dtype, itemsize, shape

    def nbytes(self, batch):
        n = self.itemsize * batch
        for s in self.shape:
            n *= s
        return n


def parse_input(text):
    """--input [DTYPE:]SHAPE -> InputSpec."""
    opt = "--input %s" % text
    dname, shape_text = "float32", text
    if ":" in text:
        dname, shape_text = text.split(":", 1)
        if dname not in DTYPES:
            raise UsageError("%s: unknown dtype '%s' (%s)" % (opt, dname, ", ".join(sorted(DTYPES))))
    dtype, itemsize = DTYPES[dname]
    shape = []
    if shape_text != "":
        for part in shape_text.split(","):
            if not _digits(part):
                raise UsageError("%s: a shape is sizes separated by commas, such as 3,224,224 "
                                 "(got '%s')" % (opt, part))
            shape.append(whole(opt, part, 1, DIM_MAX, "a size between 1 and 2^53-1"))
    if len(shape) + 1 > MAX_DIMS:
        raise UsageError("%s: %d dimensions and the batch's: memest's tensors have at most %d"
                         % (opt, len(shape), MAX_DIMS))
    return InputSpec(text, dtype, itemsize, shape)


def check_sizes(specs, batch):
    """Refuses example tensors that no storage can hold at `batch` samples
    (the largest batch the exporter runs)."""
    for sp in specs:
        if sp.nbytes(batch) > BYTES_MAX:
            raise UsageError("--input %s: %d bytes at batch %d: past the 2^63-1 bytes a tensor can hold"
                             % (sp.text, sp.nbytes(batch), batch))


def batch_dim(s, specs):
    """--batch-dim N, within the dimensions of every input (N may be negative)."""
    n = whole("--batch-dim", s, -MAX_DIMS, MAX_DIMS, "a whole number, such as 0, 1 or -1")
    for sp in specs:
        if not -len(sp.shape) - 1 <= n <= len(sp.shape):
            raise UsageError("--batch-dim %d: out of range for --input %s" % (n, sp.text))
    return n


def check_batch(s):
    return whole("--check-batch", s, 1, DIM_MAX, "a whole number between 1 and 2^53-1")


def kwargs(text):
    """--kwargs JSON -> a dict."""
    try:
        v = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise UsageError("--kwargs: not JSON: %s" % e)
    if not isinstance(v, dict):
        raise UsageError("--kwargs: must be a JSON object")
    return v
