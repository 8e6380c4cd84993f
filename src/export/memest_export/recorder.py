"""Recording one forward pass as memest nodes.

The model runs on real example tensors under a TorchFunctionMode (which sees
every torch function, Tensor method and operator the Python code calls, but
not the calls those make in turn) while nn.Module.__call__ is wrapped (to know
which module each call comes from, and to record the modules memest has a
type for as one node each, named by their qualified name; calls inside them
are not recorded).

Every tensor a recorded node produces is mapped (by id; a weak reference
forgets the id when the tensor dies, before CPython can reuse it, so the
recording holds no more memory than the forward pass itself) to its node
reference. A tensor that is not
mapped and is not a parameter or a buffer depends on neither the inputs nor
the parameters: a constant (torch.zeros, x.new_zeros, torch.arange and what is
computed from them); operations on constants are run but not recorded, and a
constant an operation on the recorded graph uses becomes one `zeros` node of
its final shape and dtype. Parameters and buffers used directly become
`parameter` and `buffer` nodes named by their qualified names."""

import os
import sys
import weakref

import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode

from . import leaves, names, opmap
from .errors import EXIT_EXPORT, ExportError, describe, safe_str
from .values import dtype_name, jsonable

# with the separator: torchvision's folder beside torch's is the model's code
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class Node:
    __slots__ = ("name", "type", "inputs", "args")

    def __init__(self, name, typ, inputs, args):
        self.name, self.type, self.inputs, self.args = name, typ, inputs, args

    def key(self):
        return (self.name, self.type, tuple(self.inputs))


def tensors_in(v, out):
    """Every tensor in a nested value (lists, tuples, dicts, of any depth; a
    container holding itself is not walked again inside itself), in order.
    The containers' own methods are used, never a subclass's."""
    todo, open_ = [(v, False)], set()
    while todo:
        x, leave = todo.pop()
        if leave:
            open_.discard(id(x))
        elif isinstance(x, torch.Tensor):
            out.append(x)
        elif isinstance(x, (list, tuple, dict)):
            if id(x) in open_:
                continue
            open_.add(id(x))
            todo.append((x, True))
            if isinstance(x, dict):
                items = list(dict.values(x))
            elif isinstance(x, list):
                items = list(list.__iter__(x))
            else:
                items = list(tuple.__iter__(x))
            todo.extend((i, False) for i in reversed(items))
    return out


def source_line():
    """file:line of the innermost frame of the model's code: the first frame
    outside torch and outside this package."""
    f = sys._getframe(1)
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if not fn.startswith(_TORCH_DIR) and not fn.startswith(_OWN_DIR):
            return "%s:%d" % (fn, f.f_lineno)
        f = f.f_back
    return "?"


class Call:
    """One function call being converted: its arguments bound to the names of
    the op table's signature (c.v), and what a converter emits through."""

    def __init__(self, rec, name, sig, args, kwargs, out):
        self.rec, self.name, self.out = rec, name, out
        self.v = {}
        params = sig.split()
        i = 0
        for p in params:
            if p.startswith("*"):
                self.v[p[1:]] = tuple(args[i:])
                i = len(args)
            elif i < len(args):
                self.v[p] = args[i]
                i += 1
        if i < len(args):
            self.fail("more positional arguments than the op table knows (%d)" % len(args))
        known = {p.lstrip("*") for p in params}
        for k in kwargs:
            if k not in known:  # never dropped silently: the table must know what it means
                self.fail("keyword argument %s= is not in the op table's signature (%s)" % (k, sig))
        self.v.update(kwargs)

    def force(self, k, v):
        self.v[k] = v
        return self

    def fail(self, why):
        self.rec.fail_op(self.name, why)

    def emit(self, typ, inputs, args, name=None, weight=None, params=()):
        return self.rec.emit(typ, inputs, args, name, weight, params)

    def alias(self, t):
        return self.rec.ref(t)


class Recorder:
    def __init__(self, model, input_names):
        self.model = model
        self.nodes = []
        self.refs = {}          # id(tensor) -> reference
        self.keep = []          # the constants (their ids are keys of self.consts)
        self.watch = {}         # id(bound tensor) -> weak reference forgetting it at its death
        self.used = set(input_names)
        self.counts = {}
        self.stack = [""]       # the module paths being run (non-leaf modules)
        self.leaf_depth = 0
        self.calls = {}         # id(module) -> times called
        self.paths = {id(m): n for n, m in model.named_modules()}
        self.params = {id(p): (n, p) for n, p in model.named_parameters()}
        self.buffers = {id(b): (n, b) for n, b in model.named_buffers()}
        self.consts = {}        # id(constant tensor) -> (function that made it, tensor)
        # tensors held by the modules before forward() (plain attributes, not
        # buffers): constants too
        for mname, m in model.named_modules():
            for k, v in vars(m).items():
                if isinstance(v, torch.Tensor) and self.param_name(v) is None and self.buffer_name(v) is None:
                    self.consts[id(v)] = ((mname + "." if mname else "") + k, v)
                    self.keep.append(v)
        self.in_getitem = False
        self.owner = {}         # id(parameter) -> the node holding it (memest counts it there)
        self.held = {}          # node -> ids of the parameters it holds first
        self.views = {}         # id(storage root, t._base) -> {id(view): view} bound views of it
        self.pending = {}       # id(tensor) -> [refs of in-place writes through another view of it]
        self.failure = None     # the recorder's first error (the model's code may catch it)
        self.alive = {}         # reference -> how many live tensors are bound to it
        self.died = {}          # reference -> index of the last node recorded when its last tensor died
        self.recording = True   # deaths are noted while forward() runs

    def hook(self, fn, *args):
        """fn(*args), one of the recorder's hooks, run inside forward(): its
        first error is kept, so that the model's code catching it (try:
        except Exception:) cannot make a recording that misses a call; once
        failed, every later hook fails again."""
        if self.failure is not None:
            raise self.failure
        try:
            return fn(*args)
        except ExportError as e:
            self.failure = e
            raise
        except Exception as e:
            try:
                where = self.where()
            except Exception:
                where = "in forward()"
            self.failure = ExportError("cannot record a call %s: %s" % (where, describe(e)), EXIT_EXPORT)
            raise self.failure from None

    # ---- names -------------------------------------------------------------
    def unique(self, base):
        """fx's naming: base, then base_1, base_2, ... for later uses."""
        if base not in self.used:
            self.used.add(base)
            return base
        k = self.counts.get(base, 0)
        while True:
            k += 1
            cand = "%s_%d" % (base, k)
            if cand not in self.used:
                self.counts[base] = k
                self.used.add(cand)
                return cand

    def in_module(self, leaf):
        path = self.stack[-1]
        return path + "." + leaf if path else leaf

    # ---- errors ------------------------------------------------------------
    def where(self):
        path = self.stack[-1]
        mod = self.model.get_submodule(path) if path else self.model
        return "in module '%s' (%s) at %s" % (path or "<top>", type(mod).__name__, source_line())

    def fail_op(self, fname, why):
        raise ExportError("unsupported op %s %s: %s" % (names.public(fname), self.where(), why))

    # ---- tensors -----------------------------------------------------------
    def param_name(self, t):
        hit = self.params.get(id(t))
        return hit[0] if hit is not None and hit[1] is t else None

    def buffer_name(self, t):
        hit = self.buffers.get(id(t))
        return hit[0] if hit is not None and hit[1] is t else None

    def is_live(self, t):
        return id(t) in self.refs or self.param_name(t) is not None or self.buffer_name(t) is not None

    def is_const(self, t):
        made = self.consts.get(id(t))
        return made is not None and made[1] is t

    def bind(self, t, ref):
        k = id(t)
        if k not in self.watch:
            self.watch[k] = weakref.ref(t, lambda _, k=k: self.forget(k))
        self.rebind(k, ref)
        self.pending.pop(k, None)
        base = self.base_of(t)
        if base is not None:
            self.views.setdefault(id(base), {})[k] = self.watch[k]

    def rebind(self, k, ref):
        """The tensor of id k reads as ref from now on."""
        old = self.refs.get(k)
        if old == ref:
            return
        if old is not None:
            self.release(old)
        self.refs[k] = ref
        self.alive[ref] = self.alive.get(ref, 0) + 1
        self.died.pop(ref, None)

    def release(self, ref):
        """A tensor bound to ref died or reads as another reference now: when
        it was the last, ref's value is gone from Python after the node last
        recorded (a local that outlived its last reader: held_until)."""
        c = self.alive.get(ref, 0) - 1
        if c > 0:
            self.alive[ref] = c
            return
        self.alive.pop(ref, None)
        if self.recording and self.nodes:
            self.died[ref] = len(self.nodes) - 1

    def forget(self, k):
        """A bound tensor died: its id may name another tensor from now on.
        (A tensor autograd saved for backward does not die here: PyTorch keeps
        its Python object while C++ holds it; memest keeps what is saved.)"""
        ref = self.refs.get(k)
        if ref is not None:
            self.release(ref)
        for d in (self.watch, self.refs, self.pending, self.views):
            d.pop(k, None)

    def mark_held(self):
        """Once forward() has returned: "held_until" on each node one of whose
        values Python kept past its last reader (a module's forward() keeps its
        locals until it returns), naming the node after which the last one
        died. Values alive at the end (the outputs) are not marked."""
        self.recording = False
        index = {n.name: i for i, n in enumerate(self.nodes)}
        last = {}
        for i, n in enumerate(self.nodes):
            for r in n.inputs:
                last[r.split(":")[0]] = i
        held = {}
        for ref, d in self.died.items():
            i = index.get(ref.split(":")[0])
            if i is not None and ref not in self.alive:
                held[i] = max(held.get(i, -1), d)
        for i, d in held.items():
            n = self.nodes[i]
            if d > last.get(n.name, i) and n.type not in ("parameter", "buffer"):
                n.args["held_until"] = self.nodes[d].name

    def base_of(self, t):
        """t._base (the tensor owning t's storage when t is a view), read
        without the function mode seeing it."""
        quiet, self.in_getitem = self.in_getitem, True
        try:
            return t._base
        finally:
            self.in_getitem = quiet

    def after_write(self, t):
        """t (now bound to the node that wrote it) was written in place. Every
        other recorded tensor sharing its storage (its base, the base's other
        views) reads the write from now on: at its next use it becomes a
        copyslices node of itself and the written view (autograd's CopySlices)."""
        root = self.base_of(t)
        root = t if root is None else root
        ref = self.refs[id(t)]
        sharing = [w() for w in list(self.views.get(id(root), {}).values())] + [root]
        for u in sharing:
            if u is not None and u is not t and id(u) in self.refs:
                self.pending.setdefault(id(u), []).append(ref)

    def ref(self, t):
        """The reference of a tensor an emitted node reads; a parameter, a buffer
        or a constant seen for the first time becomes its node first."""
        r = self.refs.get(id(t))
        if r is not None:
            for w in self.pending.pop(id(t), ()):
                stem = r.split(":")[0]
                stem = stem[:stem.rfind("_written")] if "_written" in stem else stem
                base = self._add(Node(self.unique(stem + "_written"), "copyslices", [r, w], {}))
                r = base.name
                self.rebind(id(t), r)
            return r
        pname = self.param_name(t)
        if pname is not None:
            held = self.owner.get(id(t))
            if held is not None:
                raise ExportError("parameter '%s' of layer '%s' used directly %s: memest would count it "
                                  "twice" % (pname, held, self.where()))
            args = {"shape": list(t.shape)}
            node = self._add(Node(self.unique(pname), "parameter", [], args))
            if not t.requires_grad:
                node.args["trainable"] = False
            self.bind(t, node.name)
            self.owner[id(t)] = node.name
            return node.name
        bname = self.buffer_name(t)
        if bname is not None:
            args = {"shape": list(t.shape), "dtype": dtype_name(t.dtype)}
            node = self._add(Node(self.unique(bname), "buffer", [], args))
            self.bind(t, node.name)
            return node.name
        if not self.is_const(t):
            raise ExportError("a tensor of unknown origin %s: made by a call the recorder does not see"
                              % self.where())
        base = self.consts[id(t)][0]
        args = {"size": list(t.shape)}
        if not t.dtype.is_floating_point:
            args["dtype"] = dtype_name(t.dtype)
        node = self._add(Node(self.unique(self.in_module(base)), "zeros", [], args))
        self.bind(t, node.name)
        return node.name

    def _add(self, node):
        self.nodes.append(node)
        return node

    def hold(self, node_name, weight, others):
        """The node node_name holds parameters: its weight and the others
        (None for none). Returns how it shares them: ("tie_params", node) when
        it holds exactly the parameters of an earlier node (the same module
        called again: RAFT's update block, a siamese branch), ("tie_weight",
        node) when only its weight is another node's (an LM head tied to the
        embedding), else None. Any other parameter held twice would count
        twice: an error."""
        mine = [p for p in [weight] + list(others) if p is not None]
        firsts = {self.owner.get(id(p)) for p in mine}
        if len(firsts) == 1 and None not in firsts:
            prev = firsts.pop()
            if self.held.get(prev) == {id(p) for p in mine}:
                return ("tie_params", prev)
        tie = None
        if weight is not None and id(weight) in self.owner:
            tie = ("tie_weight", self.owner[id(weight)])
        for p in others:
            if p is not None and id(p) in self.owner:
                raise ExportError("layer '%s' uses parameter '%s' of layer '%s' %s: memest shares a layer's "
                                  "parameters only all together (tie_params) or its weight alone (tie_weight), "
                                  "it would count this one twice"
                                  % (node_name, self.param_name(p), self.owner[id(p)], self.where()))
        for p in mine:
            if id(p) not in self.owner:
                self.owner[id(p)] = node_name
                self.held.setdefault(node_name, set()).add(id(p))
        return tie

    def emit(self, typ, inputs, args, name=None, weight=None, params=()):
        refs = []
        for t in inputs:
            refs.append(t if isinstance(t, str) else self.ref(t))
        try:
            # inplace=False is every op's default: left out
            args = {k: jsonable(v) for k, v in args.items() if not (k == "inplace" and v is False)}
        except ValueError as e:
            raise ExportError("cannot write an argument of %s %s: %s" % (typ, self.where(), e))
        node = self._add(Node(self.unique(name if name else self.in_module(typ)), typ, refs, args))
        if weight is not None or params:
            tie = self.hold(node.name, weight, params)
            if tie is not None:
                node.args[tie[0]] = tie[1]
        return node.name

    def bind_outputs(self, out, ref):
        ts = tensors_in(out, [])
        if len(ts) == 1:
            self.bind(ts[0], ref)
        else:
            for k, t in enumerate(ts):
                self.bind(t, "%s:%d" % (ref, k))

    # ---- the two hooks -----------------------------------------------------
    def on_function(self, func, args, kwargs, out):
        fname = names.canonical(func)
        ins = tensors_in(args, [])
        tensors_in(kwargs, ins)
        live = [t for t in ins if self.is_live(t)]
        for t in ins:
            if not live or fname in opmap.FACTORIES:
                break
            if not self.is_live(t) and not self.is_const(t):
                self.fail_op(fname, "an input tensor of unknown origin (made by a call the recorder "
                             "does not see)")
        outs = tensors_in(out, [])
        if fname in opmap.FACTORIES or not live:
            short = fname.rsplit(".", 1)[-1].strip("_") or "constant"
            for t in outs:
                self.consts[id(t)] = (short, t)
                self.keep.append(t)
            return
        if fname.endswith("__setitem__"):
            self.on_setitem(fname, *args)
            return
        if not outs:
            if fname.endswith("__set__"):
                self.fail_op(fname, "an in-place assignment into a tensor of the graph")
            return  # x.size(), x.dim(), x.shape: metadata, nothing to record
        spec = opmap.OPS.get(fname)
        if spec is None:
            self.fail_op(fname, "memest has no type for it")
        sig, conv = spec
        call = Call(self, fname, sig, args, kwargs, out)
        ref = conv(call)
        if isinstance(out, torch.Tensor):
            self.bind(out, ref)
            if args and out is args[0] and _writes(fname, call.v):
                self.after_write(out)
        else:
            self.bind_outputs(out, ref)

    def on_setitem(self, fname, x, idx, value):
        """x[idx] = value (PyTorch: x[idx].copy_(value), or fill_ for a number),
        and the last step of x[idx] op= y, whose in-place op has already
        written x[idx] (value is then that very view: nothing more to do)."""
        items = idx if isinstance(idx, tuple) else (idx,)
        if any(isinstance(i, torch.Tensor) for i in items):
            self.fail_op(fname, "an assignment through tensor indices (index_put_) has no memest type")
        quiet, self.in_getitem = self.in_getitem, True
        try:
            view = torch.Tensor.__getitem__(x, idx)
            same = isinstance(value, torch.Tensor) and value.data_ptr() == view.data_ptr() and \
                value.shape == view.shape and value.stride() == view.stride()
        finally:
            self.in_getitem = quiet
        if same:
            return
        vref = opmap.conv_getitem(Call(self, "Tensor.__getitem__", "input indices", (x, idx), {}, view))
        if isinstance(value, torch.Tensor):
            w = self.emit("copy", [vref, value], {})
        elif isinstance(value, (int, float, bool)):
            w = self.emit("fill", [vref], {"value": value, "inplace": True})
        else:
            self.fail_op(fname, "assigning %s has no memest type" % type(value).__name__)
        self.bind(view, w)
        self.after_write(view)

    def on_leaf(self, mod, path, args, kwargs, out):
        typ, margs = leaves.leaf_args(mod)
        inputs = []
        if typ == "multiheadattention":
            inputs = self._mha_inputs(mod, args, kwargs, margs)
        else:
            for a in args:
                if isinstance(a, torch.Tensor):
                    inputs.append(a)
                elif a is not None:
                    raise ExportError("module '%s' (%s) called with a non-tensor argument %s: memest's %s "
                                      "takes tensors only" % (path, type(mod).__name__,
                                                              safe_str(a, 60, repr), typ))
            for k, a in kwargs.items():
                if a is not None:
                    raise ExportError("module '%s' (%s) called with %s=: memest's %s has no such input"
                                      % (path, type(mod).__name__, k, typ))
            if typ in ("lstm", "gru", "rnn") and len(inputs) > 1:
                raise ExportError("module '%s' (%s) called with an initial state: memest's %s starts "
                                  "from zeros" % (path, type(mod).__name__, typ))
        own = dict(mod.named_parameters())
        weight = own.pop("weight", None)
        ref = self.emit(typ, inputs, margs, name=path or typ, weight=weight, params=list(own.values()))
        self.bind_outputs(out, ref)
        if isinstance(out, torch.Tensor) and inputs and out is inputs[0] and margs.get("inplace"):
            self.after_write(out)

    def _mha_inputs(self, mod, args, kwargs, margs):
        names_ = ["query", "key", "value", "key_padding_mask", "need_weights", "attn_mask",
                  "average_attn_weights", "is_causal"]
        v = dict(zip(names_, args))
        v.update(kwargs)
        for k in ("key_padding_mask", "attn_mask"):
            if v.get(k) is not None:
                raise ExportError("nn.MultiheadAttention '%s' called with %s: memest's "
                                  "multiheadattention takes no mask tensor" % (self.in_module(""), k))
        if v.get("is_causal"):
            raise ExportError("nn.MultiheadAttention called with is_causal=True: not mapped")
        need = v.get("need_weights", True)
        margs["need_weights"] = bool(need)
        if need and not v.get("average_attn_weights", True):
            margs["average_attn_weights"] = False
        q, k, val = v["query"], v["key"], v["value"]
        return [q] if (k is q and val is q) else [q, k, val]


def _writes(fname, v):
    """Whether the call writes its first argument in place: x.add_(y), x += y,
    F.relu(x, inplace=True) (x.contiguous() and x.to(x.dtype) also return x
    itself, unchanged)."""
    short = fname.rsplit(".", 1)[-1]
    if short.startswith("__i") and short.endswith("__"):
        return True
    return (short.endswith("_") and not short.endswith("__")) or v.get("inplace") is True


class _Mode(TorchFunctionMode):
    def __init__(self, rec):
        super().__init__()
        self.rec = rec

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if self.rec.leaf_depth == 0 and not self.rec.in_getitem:
            self.rec.hook(self.rec.on_function, func, args, kwargs, out)
        return out


def _indexing(rec, which):
    """PyTorch 1.13 indexes with one int, slice or None (x[0], x[1:]) without
    asking the function mode: Tensor.__getitem__/__setitem__ are wrapped
    while recording, and the mode leaves the calls they make to them."""
    orig = getattr(torch.Tensor, which)

    def wrapper(self, *args):
        if rec.in_getitem:
            return orig(self, *args)
        rec.in_getitem = True
        try:
            out = orig(self, *args)
        finally:
            rec.in_getitem = False
        if rec.leaf_depth == 0:
            rec.hook(rec.on_function, orig, (self,) + args, {}, out)
        return out
    return orig, wrapper


def record(model, inputs, input_names, batch=None, lifetimes=False):
    """Run model(*inputs) once and return (recorder, the output's tensors);
    lifetimes: mark the nodes' "held_until" (Recorder.mark_held).
    Whatever forward() (the model's code, its hooks) raises is an ExportError
    "forward() raised ..."; the recorder's own first error wins, even when
    the model's code caught it."""
    rec = Recorder(model, input_names)
    for t, n in zip(inputs, input_names):
        rec.bind(t, n)
    orig_call = nn.Module.__call__

    def call(mod, *args, **kwargs):
        if rec.leaf_depth:
            return orig_call(mod, *args, **kwargs)
        path = rec.paths.get(id(mod))
        if path is None:  # a module made in forward(): named by its class, inside the caller
            path = rec.in_module(type(mod).__name__.lower())
        if leaves.leaf_entry(mod) is not None:
            rec.leaf_depth += 1
            try:
                out = orig_call(mod, *args, **kwargs)
            finally:
                rec.leaf_depth -= 1
            rec.hook(rec.on_leaf, mod, path, args, kwargs, out)
            return out
        rec.stack.append(path)
        try:
            return orig_call(mod, *args, **kwargs)
        finally:
            rec.stack.pop()

    patched = [_indexing(rec, "__getitem__"), _indexing(rec, "__setitem__")]
    nn.Module.__call__ = call
    torch.Tensor.__getitem__ = patched[0][1]
    torch.Tensor.__setitem__ = patched[1][1]
    try:
        with _Mode(rec):
            out = model(*inputs)
            outs = tensors_in(out, [])
    except BaseException as e:  # noqa: B902 - the model's code: SystemExit, KeyboardInterrupt too
        if rec.failure is not None:
            raise rec.failure from None
        raise ExportError("forward()%s raised %s" % ("" if batch is None else " at batch %d" % batch,
                                                    describe(e))) from None
    finally:
        nn.Module.__call__ = orig_call
        torch.Tensor.__getitem__ = patched[0][0]
        torch.Tensor.__setitem__ = patched[1][0]
    if rec.failure is not None:
        raise rec.failure
    if lifetimes:
        rec.mark_held()
    return rec, outs
