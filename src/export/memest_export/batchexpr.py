"""Batch-dependent integers, from two recordings at two batch sizes.

The model is recorded at batch sizes b1 and b2 with the same per-sample
shapes. Both recordings must have the same nodes, in the same order, with the
same inputs (else forward() behaves differently with the data: an error).
An argument equal in both is written as is. One that differs depends on the
batch: in a shape list (view, reshape, expand, zeros) an entry equal to the
batch size in both is "batch", and one other entry may be -1 (reshape and
view infer it; b1 * k and b2 * k windows of Swin, for instance); anything
else that depends on the batch is an error naming the node."""

from .errors import ExportError

# (type, argument) whose value is a list of sizes memest reads "batch" and -1 in
SHAPE_ARGS = {("view", "shape"): True, ("reshape", "shape"): True,
              ("expand", "size"): False, ("zeros", "size"): False}


def merge_shape(a, b, b1, b2, infer_ok):
    """Merge two size lists of a shape argument; None when they cannot be."""
    if not (isinstance(a, list) and isinstance(b, list)) or len(a) != len(b):
        return None
    out = []
    inferred = -1 in a
    for x, y in zip(a, b):
        if x == y:
            out.append(x)
        elif not (isinstance(x, int) and isinstance(y, int)):
            return None
        elif x == b1 and y == b2:
            out.append("batch")
        elif infer_ok and not inferred:
            out.append(-1)
            inferred = True
        else:
            return None
    return out


def merge(nodes1, nodes2, b1, b2):
    """The nodes of the first recording with the batch-dependent values replaced."""
    if len(nodes1) != len(nodes2):
        raise ExportError("data-dependent behaviour: forward() records %d nodes at batch %d and %d at "
                          "batch %d" % (len(nodes1), b1, len(nodes2), b2))
    for n1, n2 in zip(nodes1, nodes2):
        if n1.key() != n2.key():
            raise ExportError("data-dependent behaviour: at batch %d node '%s' (%s of %s) is node '%s' "
                              "(%s of %s) at batch %d" % (b1, n1.name, n1.type, ", ".join(n1.inputs),
                                                          n2.name, n2.type, ", ".join(n2.inputs), b2))
        if set(n1.args) != set(n2.args):
            raise ExportError("data-dependent behaviour: node '%s' has arguments %s at batch %d, %s at "
                              "batch %d" % (n1.name, sorted(n1.args), b1, sorted(n2.args), b2))
        for k in n1.args:
            v1, v2 = n1.args[k], n2.args[k]
            if v1 == v2 and type(v1) == type(v2):
                continue
            infer = SHAPE_ARGS.get((n1.type, k))
            merged = None if infer is None else merge_shape(v1, v2, b1, b2, infer)
            if merged is None:
                raise ExportError("batch-dependent argument: node '%s' (%s) has %s=%s at batch %d and %s "
                                  "at batch %d, which memest cannot write in terms of the batch"
                                  % (n1.name, n1.type, k, _show(v1), b1, _show(v2), b2))
            n1.args[k] = merged
    return nodes1


def _show(v):
    import json
    return json.dumps(v)
