"""Batch-dependent integers, from two recordings at two batch sizes.

The model is recorded at batch sizes b1 and b2 with the same per-sample
shapes. Both recordings must have the same nodes, in the same order, with the
same inputs (else forward() behaves differently with the data: an error).
An argument equal in both is written as is. One that differs depends on the
batch: in a shape list (view, reshape, expand, zeros) an entry equal to the
batch size in both is "batch", and one other entry may be -1 (reshape and
view infer it; b1 * k and b2 * k windows of Swin, for instance); anything
else that depends on the batch is an error naming the node. A constant
(`zeros`) whose size has one entry b1 * k and b2 * k (RAFT's coordinate grid,
[B * H * W, ...]) is written as zeros of size [..., "batch", k, ...] and a
`reshape` to [..., -1, ...] named as the constant (batch_multiple_zeros)."""

from .args import MAX_DIMS
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


def batch_multiple(a, b, b1, b2):
    """(index, k) of the one entry of size lists a and b that is b1 * k and
    b2 * k (k > 1), every other entry equal and none -1; None otherwise."""
    if not (isinstance(a, list) and isinstance(b, list)) or len(a) != len(b) or -1 in a:
        return None
    found = None
    for i, (x, y) in enumerate(zip(a, b)):
        if x == y:
            continue
        if (found is None and isinstance(x, int) and isinstance(y, int) and x > b1 and x % b1 == 0
                and y % b2 == 0 and x // b1 == y // b2):
            found = (i, x // b1)
        else:
            return None
    return found


def batch_multiple_zeros(node, a, i, k, taken):
    """The two nodes that stand for zeros node `node` of size `a` whose entry
    i is the batch times k: zeros [..., "batch", k, ...] (a new name, not in
    `taken`) and a reshape to [..., -1, ...] of the node's name."""
    from .recorder import Node
    base = node.name + "_zeros"
    name, n = base, 0
    while name in taken:
        n += 1
        name = "%s_%d" % (base, n)
    taken.add(name)
    args = dict(node.args)
    args["size"] = a[:i] + ["batch", k] + a[i + 1:]
    return [Node(name, "zeros", [], args),
            Node(node.name, "reshape", [name], {"shape": a[:i] + [-1] + a[i + 1:]})]


def merge(nodes1, nodes2, b1, b2, taken=()):
    """The nodes of the first recording with the batch-dependent values replaced."""
    if len(nodes1) != len(nodes2):
        raise ExportError("data-dependent behaviour: forward() records %d nodes at batch %d and %d at "
                          "batch %d" % (len(nodes1), b1, len(nodes2), b2))
    taken = set(taken) | {n.name for n in nodes1}
    out = []
    for n1, n2 in zip(nodes1, nodes2):
        out.append(n1)
        if n1.key() != n2.key():
            raise ExportError("data-dependent behaviour: at batch %d node '%s' (%s of %s) is node '%s' "
                              "(%s of %s) at batch %d" % (b1, n1.name, n1.type, ", ".join(n1.inputs),
                                                          n2.name, n2.type, ", ".join(n2.inputs), b2))
        if set(n1.args) != set(n2.args):
            raise ExportError("data-dependent behaviour: node '%s' has arguments %s at batch %d, %s at "
                              "batch %d" % (n1.name, sorted(n1.args), b1, sorted(n2.args), b2))
        split = None
        for k in n1.args:
            v1, v2 = n1.args[k], n2.args[k]
            if v1 == v2 and type(v1) == type(v2):
                continue
            infer = SHAPE_ARGS.get((n1.type, k))
            merged = None if infer is None else merge_shape(v1, v2, b1, b2, infer)
            mult = batch_multiple(v1, v2, b1, b2) if merged is None and (n1.type, k) == ("zeros", "size") else None
            if mult is not None and len(v1) < MAX_DIMS:
                split = (v1, mult)
                continue
            if merged is None:
                raise ExportError("batch-dependent argument: node '%s' (%s) has %s=%s at batch %d and %s "
                                  "at batch %d, which memest cannot write in terms of the batch"
                                  % (n1.name, n1.type, k, _show(v1), b1, _show(v2), b2))
            n1.args[k] = merged
        if split is not None:
            out[-1:] = batch_multiple_zeros(n1, split[0], split[1][0], split[1][1], taken)
    return out


def _show(v):
    import json
    return json.dumps(v)
