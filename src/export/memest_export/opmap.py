"""The one table from PyTorch functions and Tensor methods to memest types.

Each entry maps a canonical name (names.py: "F.relu", "Tensor.view",
"torch.cat") to a signature (the parameter names of the PyTorch function, in
order; "*name" collects the remaining positional arguments) and a converter
that emits the memest node(s) through a Call (recorder.py) and returns the
reference of the result. To map a new function: add its entry here (most are
one `simple(...)` line); memest refuses a file naming a type it lacks, so a
type may be mapped before memest has it.

Functions whose result depends only on shapes (factories: torch.zeros,
x.new_zeros, torch.arange...) are constants (FACTORIES); the recorder folds
them. Functions returning no tensor (x.size(), x.dim()) are not recorded."""

import torch

from .errors import safe_str

FACTORIES = {
    "torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.arange", "torch.linspace",
    "torch.eye", "torch.tensor", "torch.as_tensor", "torch.rand", "torch.randn", "torch.randint",
    "torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like",
    "torch.rand_like", "torch.randn_like", "torch.randint_like", "torch.range", "torch.scalar_tensor",
    "Tensor.new_zeros", "Tensor.new_ones", "Tensor.new_empty", "Tensor.new_full",
    "Tensor.new_tensor", "torch.meshgrid",
}


def simple(typ, sig, tensors=("input",), args=(), rename=None, fixed=None):
    """A node of type typ: the arguments named in `tensors` are its inputs (those
    that are tensors), those in `args` its arguments (renamed by `rename`;
    None values left out), plus `fixed`."""
    rename = rename or {}
    fixed = fixed or {}

    def conv(c):
        inputs = [c.v[t] for t in tensors if isinstance(c.v.get(t), torch.Tensor)]
        a = {}
        for k in args:
            if c.v.get(k) is not None:
                a[rename.get(k, k)] = c.v[k]
        a.update(fixed)
        return c.emit(typ, inputs, a)
    return (sig, conv)


def binary(typ, sig="input other", inplace=False, args=()):
    """add/sub/mul/div: a second tensor is an input, a number the `other` argument."""
    def conv(c):
        other = c.v.get("other")
        inputs = [c.v["input"]]
        a = {}
        if isinstance(other, torch.Tensor):
            inputs.append(other)
        elif other is not None:
            a["other"] = other
        for k in args:
            if c.v.get(k) is not None:
                a[k] = c.v[k]
        if c.v.get("rounding_mode") is not None:
            c.fail("rounding_mode=%s has no memest type" % safe_str(c.v["rounding_mode"], 60, repr))
        if inplace:
            a["inplace"] = True
        return c.emit(typ, inputs, a)
    return (sig, conv)


def unary(typ, inplace=False, sig="input"):
    return simple(typ, sig, fixed={"inplace": True} if inplace else None)


def _shape(v):
    """view(2, 3) and view((2, 3)) alike: the sizes as a list."""
    if len(v) == 1 and isinstance(v[0], (tuple, list, torch.Size)):
        return list(v[0])
    return list(v)


def shaped(typ, argname, vararg="shape"):
    def conv(c):
        shape = c.v[vararg]
        if not isinstance(shape, (tuple, list, torch.Size)):
            shape = [shape]
        shape = _shape(list(shape))
        if any(isinstance(s, torch.dtype) for s in shape):
            c.fail("a view as another dtype has no memest type")
        return c.emit(typ, [c.v["input"]], {argname: shape})
    return conv


def conv_softmax(typ):
    def conv(c):
        a = {"dim": c.v.get("dim")}
        if c.v.get("dtype") is not None:
            a["dtype"] = c.v["dtype"]
        return c.emit(typ, [c.v["input"]], a)
    return conv


def conv_flatten(c):
    return c.emit("flatten", [c.v["input"]], {"start_dim": c.v.get("start_dim", 0),
                                              "end_dim": c.v.get("end_dim", -1)})


def conv_dropout(typ):
    def conv(c):
        if not c.v.get("training", True):
            return c.alias(c.v["input"])  # F.dropout(training=False) is the input itself
        a = {"p": c.v.get("p", 0.5)}
        if c.v.get("inplace"):
            a["inplace"] = True
        return c.emit(typ, [c.v["input"]], a)
    return conv


def conv_cat(typ):
    def conv(c):
        dim = c.v.get("dim", c.v.get("axis", 0))
        return c.emit(typ, list(c.v["tensors"]), {"dim": dim})
    return conv


def conv_einsum(c):
    ops = list(c.v["operands"])
    if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
        ops = list(ops[0])
    return c.emit("einsum", ops, {"equation": c.v["equation"]})


def conv_permute(c):
    return c.emit("permute", [c.v["input"]], {"dims": _shape(list(c.v["dims"]))
                                              if isinstance(c.v["dims"], (list, tuple))
                                              else [c.v["dims"]]})


def conv_split(c):
    return c.emit("split", [c.v["input"]], {"split_size_or_sections": c.v["split_size_or_sections"],
                                            "dim": c.v.get("dim", 0)})


def conv_to(c):
    """Tensor.to / .float() ...: the input itself when nothing changes, else `to`."""
    x = c.v["input"]
    if c.out is x:
        return c.alias(x)
    if c.out.dtype == x.dtype:
        c.fail("a copy to another device or memory format has no memest type")
    from .values import dtype_name
    return c.emit("to", [x], {"dtype": dtype_name(c.out.dtype)})


def conv_type_as(c):
    x = c.v["input"]
    if c.out is x:
        return c.alias(x)
    return c.emit("to", [x, c.v["other"]], {})


def conv_expand_as(c):
    return c.emit("expand", [c.v["input"]], {"size": list(c.v["other"].shape)})


def conv_mean(typ):
    def conv(c):
        a = {}
        if c.v.get("dim") is not None:
            a["dim"] = c.v["dim"]
        if c.v.get("keepdim"):
            a["keepdim"] = True
        if c.v.get("dtype") is not None:
            c.fail("dtype= has no memest argument")
        return c.emit(typ, [c.v["input"]], a)
    return conv


def _param_owner(c, t, what):
    name = c.rec.param_name(t)
    if name is None:
        c.fail("the %s is not a parameter of the model (computed in forward)" % what)
    return name.rsplit(".", 1)[0] if "." in name else ""


def conv_linear(c):
    """F.linear(x, weight, bias): a `linear` node holding the weight (and the
    bias). A bias computed in forward (Swin V2's qkv bias with its k part
    zeroed) is added in place after a bias-free linear: ATen's linear adds it
    into the matmul's result (addmm, or matmul then add_), which saves nothing
    for the bias, as add does."""
    w = c.v["weight"]
    b = c.v.get("bias")
    owner = _param_owner(c, w, "weight")
    computed = b is not None and c.rec.param_name(b) is None
    if b is not None and not computed:
        _param_owner(c, b, "bias")
    ref = c.emit("linear", [c.v["input"]], {"in_features": w.shape[1], "out_features": w.shape[0],
                                            "bias": b is not None and not computed},
                 name=owner, weight=w, params=[] if computed else [b])
    if computed:
        ref = c.emit("add", [ref, b], {"inplace": True}, name=owner + "_bias" if owner else None)
    return ref


def conv_convnd(nd):
    def conv(c):
        w = c.v["weight"]
        b = c.v.get("bias")
        owner = _param_owner(c, w, "weight")
        groups = c.v.get("groups", 1)
        from .values import collapse
        pad = c.v.get("padding", 0)
        return c.emit("conv%dd" % nd, [c.v["input"]], {
            "in_channels": w.shape[1] * groups, "out_channels": w.shape[0],
            "kernel_size": collapse(list(w.shape[2:])), "stride": collapse(c.v.get("stride", 1)),
            "padding": pad if isinstance(pad, str) else collapse(pad),
            "dilation": collapse(c.v.get("dilation", 1)), "groups": groups,
            "bias": b is not None}, name=owner, weight=w, params=[b])
    return conv


def conv_layer_norm(c):
    w, b = c.v.get("weight"), c.v.get("bias")
    a = {"normalized_shape": list(c.v["normalized_shape"]), "eps": c.v.get("eps", 1e-5),
         "elementwise_affine": w is not None}
    if w is not None and b is None:
        a["bias"] = False
    if w is None and b is not None:
        c.fail("a bias without a weight has no memest form")
    owner = _param_owner(c, w, "weight") if w is not None else None
    return c.emit("layernorm", [c.v["input"]], a, name=owner, weight=w, params=[b])


def conv_group_norm(c):
    w = c.v.get("weight")
    x = c.v["input"]
    owner = _param_owner(c, w, "weight") if w is not None else None
    return c.emit("groupnorm", [x], {"num_groups": c.v["num_groups"], "num_channels": x.shape[1],
                                     "eps": c.v.get("eps", 1e-5), "affine": w is not None},
                  name=owner, weight=w, params=[c.v.get("bias")])


def conv_batch_norm(c):
    x = c.v["input"]
    w = c.v.get("weight")
    rm = c.v.get("running_mean")
    nd = {2: 1, 3: 1, 4: 2, 5: 3}.get(x.dim())
    if nd is None:
        c.fail("batch_norm on a %d-d input" % x.dim())
    owner = None
    if w is not None:
        owner = _param_owner(c, w, "weight")
    elif rm is not None:
        bname = c.rec.buffer_name(rm)
        owner = bname.rsplit(".", 1)[0] if bname and "." in bname else None
    if not c.v.get("training", False) and rm is None:
        c.fail("batch_norm with training=False and no running statistics")
    return c.emit("batchnorm%dd" % nd, [x], {
        "num_features": x.shape[1], "eps": c.v.get("eps", 1e-5),
        "momentum": c.v.get("momentum", 0.1), "affine": w is not None,
        "track_running_stats": rm is not None}, name=owner, weight=w, params=[c.v.get("bias")])


def conv_embedding(c):
    w = c.v["weight"]
    owner = _param_owner(c, w, "weight")
    a = {"num_embeddings": w.shape[0], "embedding_dim": w.shape[1]}
    for k in ("padding_idx", "max_norm"):
        if c.v.get(k) is not None:
            a[k] = c.v[k]
    for k in ("scale_grad_by_freq", "sparse"):
        if c.v.get(k):
            a[k] = True
    return c.emit("embedding", [c.v["input"]], a, name=owner, weight=w)


def conv_pool(typ, names):
    def conv(c):
        from .values import collapse
        a = {}
        for k in names:
            v = c.v.get(k)
            if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
                continue
            a[k] = collapse(v) if isinstance(v, (list, tuple)) else v
        return c.emit(typ, [c.v["input"]], a)
    return conv


def pools(prefix, nd):
    maxargs = ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices")
    avgargs = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")
    d = "%dd" % nd
    return {
        prefix + "max_pool" + d: ("input kernel_size stride padding dilation ceil_mode return_indices",
                                  conv_pool("maxpool" + d, maxargs)),
        prefix + "max_pool%d_with_indices" % nd: (
            "input kernel_size stride padding dilation ceil_mode return_indices",
            lambda c: conv_pool("maxpool" + d, maxargs)(c.force("return_indices", True))),
        prefix + "avg_pool" + d: ("input kernel_size stride padding ceil_mode count_include_pad "
                                  "divisor_override", conv_pool("avgpool" + d, avgargs)),
        prefix + "adaptive_avg_pool" + d: ("input output_size",
                                           conv_pool("adaptiveavgpool" + d, ("output_size",))),
        prefix + "adaptive_max_pool" + d: ("input output_size return_indices",
                                           conv_pool("adaptivemaxpool" + d,
                                                     ("output_size", "return_indices"))),
    }


def conv_interpolate(c):
    a = {}
    for k in ("size", "scale_factor", "mode", "align_corners", "recompute_scale_factor"):
        if c.v.get(k) is not None:
            a[k] = c.v[k]
    if c.v.get("antialias"):
        a["antialias"] = True
    a.setdefault("mode", "nearest")
    return c.emit("interpolate", [c.v["input"]], a)


def conv_unfold(c):
    from .values import collapse
    a = {"kernel_size": collapse(c.v["kernel_size"])}
    for k in ("dilation", "padding", "stride"):
        if c.v.get(k) is not None:
            a[k] = collapse(c.v[k])
    return c.emit("unfold", [c.v["input"]], a)


def conv_pad(c):
    a = {"pad": list(c.v["pad"])}
    mode = c.v.get("mode", "constant")
    if mode != "constant":
        a["mode"] = mode
    value = c.v.get("value")
    if value is not None and value != 0:
        a["value"] = value
    return c.emit("pad", [c.v["input"]], a)


def conv_roll(c):
    a = {"shifts": c.v["shifts"]}
    if c.v.get("dims") is not None:
        a["dims"] = c.v["dims"]
    return c.emit("roll", [c.v["input"]], a)


def conv_sdpa(c):
    if c.v.get("attn_mask") is not None:
        c.fail("attn_mask= has no memest form")
    a = {}
    for k in ("dropout_p", "is_causal", "scale", "enable_gqa"):
        if c.v.get(k) not in (None, False, 0, 0.0):
            a[k] = c.v[k]
    return c.emit("scaled_dot_product_attention", [c.v["query"], c.v["key"], c.v["value"]], a)


def conv_clamp(c):
    a = {}
    for k in ("min", "max"):
        v = c.v.get(k)
        if isinstance(v, torch.Tensor):
            c.fail("a tensor %s has no memest form" % k)
        if v is not None:
            a[k] = v
    if c.name.endswith("_"):
        a["inplace"] = True
    return c.emit("clamp", [c.v["input"]], a)


def conv_where(c):
    cond, x, y = c.v["condition"], c.v.get("input"), c.v.get("other")
    inputs = [cond]
    a = {}
    for k, v in (("input", x), ("other", y)):
        if isinstance(v, torch.Tensor):
            inputs.append(v)
        else:
            a[k] = v
    return c.emit("where", inputs, a)


def compare(typ):
    def conv(c):
        other = c.v.get("other")
        if isinstance(other, torch.Tensor):
            return c.emit(typ, [c.v["input"], other], {})
        return c.emit(typ, [c.v["input"]], {"other": other})
    return ("input other", conv)


def conv_getitem(c):
    """x[...]: basic indexing as a chain of select/narrow/slice/unsqueeze views,
    one integer (or bool) tensor index as `index`."""
    x = c.v["input"]
    idx = c.v["indices"]
    if not isinstance(idx, tuple):
        idx = (idx,)
    nspec = sum(1 for i in idx if i is not None and i is not Ellipsis)
    items = []
    for i in idx:
        if i is Ellipsis:
            items.extend([slice(None)] * (x.dim() - nspec))
        else:
            items.append(i)
    ref = x
    shape = list(x.shape)
    dim = 0
    index_at = None
    for i in items:
        if isinstance(i, slice):
            if i.start is None and i.stop is None and i.step in (None, 1):
                dim += 1
                continue
            start, stop, step = i.indices(shape[dim])
            if step == 1:
                length = max(0, stop - start)
                ref = c.emit("narrow", [ref], {"dim": dim, "start": start, "length": length})
                shape[dim] = length
            else:
                a = {"dim": dim}
                if i.start is not None:
                    a["start"] = i.start
                if i.stop is not None:
                    a["end"] = i.stop
                a["step"] = step
                ref = c.emit("slice", [ref], a)
                shape[dim] = len(range(start, stop, step))
            dim += 1
        elif i is None:
            ref = c.emit("unsqueeze", [ref], {"dim": dim})
            shape.insert(dim, 1)
            dim += 1
        elif isinstance(i, bool):
            c.fail("indexing with a Python bool has no memest type")
        elif isinstance(i, int):
            ref = c.emit("select", [ref], {"dim": dim, "index": i})
            shape.pop(dim)
        elif isinstance(i, torch.Tensor):
            if index_at is not None:
                c.fail("indexing with several tensors has no memest type yet")
            if i.dtype == torch.bool:
                c.fail("indexing with a bool mask (a data-dependent shape) has no memest type")
            index_at = (dim, i)
            dim += 1
        else:
            c.fail("indexing with %s has no memest type" % type(i).__name__)
    if index_at is not None:
        ref = c.emit("index", [ref, index_at[1]], {"dim": index_at[0]})
    if ref is x:
        return c.alias(x)
    return ref


def conv_tensor_split(c):
    """torch.tensor_split(x, indices_or_sections | indices= | sections=, dim)."""
    given = [c.v[k] for k in ("indices_or_sections", "indices", "sections") if c.v.get(k) is not None]
    if len(given) != 1 or isinstance(given[0], torch.Tensor):
        c.fail("tensor_split needs one of indices_or_sections, indices, sections (not a tensor)")
    split = list(given[0]) if isinstance(given[0], (list, tuple)) else given[0]
    return c.emit("tensor_split", [c.v["input"]], {"indices_or_sections": split, "dim": c.v.get("dim", 0)})


def conv_tile(c):
    return c.emit("tile", [c.v["input"]], {"dims": _shape(list(c.v["sizes"]))})


def conv_repeat_interleave(c):
    r = c.v["repeats"]
    if isinstance(r, torch.Tensor):
        c.fail("tensor repeats have no memest form")
    a = {"repeats": r}
    for k in ("dim", "output_size"):
        if c.v.get(k) is not None:
            a[k] = c.v[k]
    return c.emit("repeat_interleave", [c.v["input"]], a)


def conv_normalize(c):
    return c.emit("normalize", [c.v["input"]], {"p": c.v.get("p", 2.0), "dim": c.v.get("dim", 1),
                                                "eps": c.v.get("eps", 1e-12)})


def conv_squeeze(c):
    a = {}
    if c.v.get("dim") is not None:
        a["dim"] = c.v["dim"]
    return c.emit("squeeze", [c.v["input"]], a)


def conv_pow(c):
    e = c.v["exponent"]
    if isinstance(e, torch.Tensor):
        return c.emit("pow", [c.v["input"], e], {})
    return c.emit("pow", [c.v["input"]], {"exponent": e})


def conv_contiguous(c):
    fmt = c.v.get("memory_format")
    if fmt is not None and fmt != torch.contiguous_format:
        c.fail("memory_format=%s has no memest form" % fmt)
    return c.emit("contiguous", [c.v["input"]], {})


def conv_clone(c):
    fmt = c.v.get("memory_format")
    if fmt is not None and fmt != torch.preserve_format:
        c.fail("memory_format=%s has no memest form" % fmt)
    return c.emit("clone", [c.v["input"]], {})


def conv_fill(c):
    value = c.v.get("value", 0)
    if isinstance(value, torch.Tensor):
        c.fail("a tensor fill value has no memest form")
    return c.emit("fill", [c.v["input"]], {"value": value, "inplace": True})


def conv_rsub(c):
    """c - x (Tensor.__rsub__, a number c): ATen's rsub, one new tensor, nothing
    saved; here neg(x) then add(c) in place, which allocates and saves the same."""
    other = c.v["other"]
    if isinstance(other, torch.Tensor):
        c.fail("a tensor minuend has no memest form")
    ref = c.emit("neg", [c.v["input"]], {})
    return c.emit("add", [ref], {"other": other, "inplace": True})


def conv_rtruediv(c):
    """c / x (Tensor.__rtruediv__, a number c): torch/_tensor.py computes
    reciprocal(x) * c: the same two nodes."""
    other = c.v["other"]
    if isinstance(other, torch.Tensor):
        c.fail("a tensor dividend has no memest form")
    ref = c.emit("reciprocal", [c.v["input"]], {})
    return c.emit("mul", [ref], {"other": other})


def conv_mha_forward(c):
    c.fail("call nn.MultiheadAttention as a module")


def _both(name, spec, tensor_sig=None):
    """torch.NAME(input, ...) and Tensor.NAME(self, ...): one spec for both."""
    return {"torch." + name: spec, "Tensor." + name: (tensor_sig or spec[0], spec[1])}


OPS = {}


def _add(d):
    OPS.update(d)


# elementwise arithmetic
for _n, _t in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("div", "div")):
    _add(_both(_n, binary(_t, "input other alpha", args=("alpha",))
               if _t in ("add", "sub") else binary(_t, "input other")))
    _add({"Tensor.%s_" % _n: binary(_t, "input other alpha" if _t in ("add", "sub") else "input other",
                                    inplace=True, args=("alpha",) if _t in ("add", "sub") else ()),
          "Tensor.__%s__" % _n: binary(_t, "input other"),
          "Tensor.__i%s__" % _n: binary(_t, "input other", inplace=True)})
_add({"Tensor.__radd__": binary("add"), "Tensor.__rmul__": binary("mul"),
      "Tensor.__rsub__": ("input other", conv_rsub), "Tensor.__rtruediv__": ("input other", conv_rtruediv),
      "Tensor.__rdiv__": ("input other", conv_rtruediv),
      "Tensor.__truediv__": binary("div"), "Tensor.__itruediv__": binary("div", inplace=True),
      "torch.multiply": binary("mul"), "torch.true_divide": binary("div"),
      "Tensor.__matmul__": simple("matmul", "input other", ("input", "other")),
      "torch.matmul": simple("matmul", "input other", ("input", "other")),
      "Tensor.matmul": simple("matmul", "input other", ("input", "other")),
      "torch.bmm": simple("bmm", "input mat2", ("input", "mat2")),
      "Tensor.bmm": simple("bmm", "input mat2", ("input", "mat2")),
      "torch.einsum": ("equation *operands", conv_einsum),
      "Tensor.__neg__": unary("neg"), "torch.neg": unary("neg"), "Tensor.neg": unary("neg"),
      "Tensor.__pow__": ("input exponent", conv_pow), "torch.pow": ("input exponent", conv_pow),
      "Tensor.pow": ("input exponent", conv_pow)})
for _n in ("sqrt", "rsqrt", "exp", "log", "abs", "sin", "cos", "reciprocal", "erf"):
    _add(_both(_n, unary(_n)))
    _add({"Tensor.%s_" % _n: unary(_n, inplace=True)})
for _n in ("eq", "ne", "lt", "le", "gt", "ge"):
    _add(_both(_n, compare(_n)))
    _add({"Tensor.__%s__" % _n: compare(_n)})
_add(_both("clamp", ("input min max", conv_clamp)))
_add(_both("clip", ("input min max", conv_clamp)))
_add({"Tensor.clamp_": ("input min max", conv_clamp), "torch.where": ("condition input other", conv_where),
      "Tensor.where": ("input condition other",
                       lambda c: conv_where(c.force("condition", c.v["condition"]))),
      "F.normalize": ("input p dim eps out", conv_normalize)})

# activations
for _n, _t in (("relu", "relu"), ("sigmoid", "sigmoid"), ("tanh", "tanh")):
    _add(_both(_n, unary(_t)))
    _add({"Tensor.%s_" % _n: unary(_t, inplace=True), "torch.%s_" % _n: unary(_t, inplace=True)})
_add({"F.relu": simple("relu", "input inplace", args=("inplace",)),
      "F.relu_": unary("relu", inplace=True),
      "F.relu6": simple("relu6", "input inplace", args=("inplace",)),
      "F.silu": simple("silu", "input inplace", args=("inplace",)),
      "F.hardswish": simple("hardswish", "input inplace", args=("inplace",)),
      "F.hardsigmoid": simple("hardsigmoid", "input inplace", args=("inplace",)),
      "F.mish": simple("mish", "input inplace", args=("inplace",)),
      "F.gelu": simple("gelu", "input approximate", args=("approximate",)),
      "F.sigmoid": unary("sigmoid"), "F.tanh": unary("tanh"),
      "F.hardtanh": simple("hardtanh", "input min_val max_val inplace",
                           args=("min_val", "max_val", "inplace")),
      "F.leaky_relu": simple("leakyrelu", "input negative_slope inplace",
                             args=("negative_slope", "inplace")),
      "F.elu": simple("elu", "input alpha inplace", args=("alpha", "inplace")),
      "F.softplus": simple("softplus", "input beta threshold", args=("beta", "threshold")),
      "F.softmax": ("input dim _stacklevel dtype", conv_softmax("softmax")),
      "F.log_softmax": ("input dim _stacklevel dtype", conv_softmax("logsoftmax")),
      "F.dropout": ("input p training inplace", conv_dropout("dropout")),
      "F.dropout2d": ("input p training inplace", conv_dropout("dropout2d")),
      "torch.dropout": ("input p train", lambda c: conv_dropout("dropout")(
          c.force("training", c.v.get("train", True))))})
for _n in ("softmax", "log_softmax"):
    _add(_both(_n, ("input dim dtype", conv_softmax(_n.replace("_", "")))))

# layers called as functions with a module's parameters
_add({"F.linear": ("input weight bias", conv_linear),
      "F.conv1d": ("input weight bias stride padding dilation groups", conv_convnd(1)),
      "F.conv2d": ("input weight bias stride padding dilation groups", conv_convnd(2)),
      "F.conv3d": ("input weight bias stride padding dilation groups", conv_convnd(3)),
      "F.layer_norm": ("input normalized_shape weight bias eps", conv_layer_norm),
      "F.group_norm": ("input num_groups weight bias eps", conv_group_norm),
      "F.batch_norm": ("input running_mean running_var weight bias training momentum eps",
                       conv_batch_norm),
      "F.embedding": ("input weight padding_idx max_norm norm_type scale_grad_by_freq sparse",
                      conv_embedding),
      "F.scaled_dot_product_attention": ("query key value attn_mask dropout_p is_causal scale "
                                         "enable_gqa", conv_sdpa),
      "F.multi_head_attention_forward": ("query", conv_mha_forward)})

# pooling, resampling, padding
for _nd in (1, 2, 3):
    _add(pools("F.", _nd))
_add({"F.interpolate": ("input size scale_factor mode align_corners recompute_scale_factor antialias",
                        conv_interpolate),
      "F.upsample": ("input size scale_factor mode align_corners", conv_interpolate),
      "F.pad": ("input pad mode value", conv_pad),
      "F.pixel_shuffle": simple("pixelshuffle", "input upscale_factor", args=("upscale_factor",)),
      "torch.pixel_shuffle": simple("pixelshuffle", "input upscale_factor", args=("upscale_factor",)),
      "F.pixel_unshuffle": simple("pixelunshuffle", "input downscale_factor",
                                  args=("downscale_factor",)),
      "torch.pixel_unshuffle": simple("pixelunshuffle", "input downscale_factor",
                                      args=("downscale_factor",)),
      "F.grid_sample": simple("grid_sample", "input grid mode padding_mode align_corners",
                              ("input", "grid"), args=("mode", "padding_mode", "align_corners")),
      "F.unfold": ("input kernel_size dilation padding stride", conv_unfold)})
_add(_both("roll", ("input shifts dims", conv_roll)))

# shapes and views
_add({"Tensor.view": ("input *shape", shaped("view", "shape")),
      "Tensor.reshape": ("input *shape", shaped("reshape", "shape")),
      "torch.reshape": ("input shape", shaped("reshape", "shape")),
      "Tensor.expand": ("input *size", shaped("expand", "size", "size")),
      "Tensor.expand_as": ("input other", conv_expand_as),
      "Tensor.permute": ("input *dims", conv_permute),
      "torch.permute": ("input dims", conv_permute),
      "Tensor.contiguous": ("input memory_format", conv_contiguous),
      "Tensor.clone": ("input memory_format", conv_clone), "torch.clone": ("input memory_format", conv_clone),
      "Tensor.detach": simple("detach", "input"), "torch.detach": simple("detach", "input"),
      "Tensor.zero_": ("input", conv_fill), "Tensor.fill_": ("input value", conv_fill),
      "Tensor.copy_": simple("copy", "input src non_blocking", ("input", "src")),
      "Tensor.__getitem__": ("input indices", conv_getitem),
      "Tensor.repeat": ("input *sizes", conv_tile),
      "torch.tile": ("input dims", lambda c: c.emit("tile", [c.v["input"]], {"dims": list(c.v["dims"])})),
      "Tensor.to": ("input *args", conv_to), "Tensor.type_as": ("input other", conv_type_as),
      "Tensor.float": ("input", conv_to), "Tensor.half": ("input", conv_to),
      "Tensor.bfloat16": ("input", conv_to), "Tensor.double": ("input", conv_to),
      "Tensor.long": ("input", conv_to), "Tensor.int": ("input", conv_to),
      "Tensor.bool": ("input", conv_to), "Tensor.type": ("input dtype", conv_to),
      "torch.cat": ("tensors dim", conv_cat("cat")), "torch.concat": ("tensors dim", conv_cat("cat")),
      "torch.concatenate": ("tensors dim", conv_cat("cat")),
      "torch.stack": ("tensors dim", conv_cat("stack")),
      "torch.split": ("input split_size_or_sections dim", conv_split),
      "Tensor.split": ("input split_size_or_sections dim", conv_split)})
_add(_both("flatten", ("input start_dim end_dim", conv_flatten)))
_add(_both("transpose", simple("transpose", "input dim0 dim1", args=("dim0", "dim1"))))
_add(_both("swapaxes", simple("transpose", "input dim0 dim1", args=("dim0", "dim1"))))
_add(_both("unsqueeze", simple("unsqueeze", "input dim", args=("dim",))))
_add(_both("squeeze", ("input dim", conv_squeeze)))
_add(_both("chunk", simple("chunk", "input chunks dim", args=("chunks", "dim"))))
_add(_both("unbind", simple("unbind", "input dim", args=("dim",))))
_add(_both("tensor_split", ("input indices_or_sections dim indices sections", conv_tensor_split)))
_add(_both("narrow", simple("narrow", "input dim start length", args=("dim", "start", "length"))))
_add(_both("select", simple("select", "input dim index", args=("dim", "index"))))
_add(_both("mean", ("input dim keepdim dtype", conv_mean("mean"))))
_add(_both("sum", ("input dim keepdim dtype", conv_mean("sum"))))
_add(_both("gather", simple("gather", "input dim index", ("input", "index"), args=("dim",))))
_add(_both("index_select", simple("index_select", "input dim index", ("input", "index"), args=("dim",))))
_add(_both("repeat_interleave", ("input repeats dim output_size", conv_repeat_interleave)))
