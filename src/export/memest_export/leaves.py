"""The nn modules memest has a type for: each is recorded as ONE node named by
the module's qualified name, its arguments read from the module's attributes
(the constructor's arguments, with PyTorch's names).

A subclass counts as its base when it does not override forward()
(torchvision's Conv3DSimple is an nn.Conv3d); one that does
(torchvision's LayerNorm2d) is traced into like any other module."""

import sys

import torch.nn as nn

from .values import jsonable, collapse


def _get(m, *names):
    return {n: getattr(m, n) for n in names}


def _conv(kind):
    def f(m):
        a = {"in_channels": m.in_channels, "out_channels": m.out_channels,
             "kernel_size": collapse(m.kernel_size), "stride": collapse(m.stride),
             "padding": m.padding if isinstance(m.padding, str) else collapse(m.padding),
             "dilation": collapse(m.dilation), "groups": m.groups, "bias": m.bias is not None,
             "padding_mode": m.padding_mode}
        if kind == "t":
            a["output_padding"] = collapse(m.output_padding)
        return a
    return f


def _bn(m):
    a = _get(m, "num_features", "eps", "momentum", "affine", "track_running_stats")
    return a


def _layernorm(m):
    a = {"normalized_shape": list(m.normalized_shape), "eps": m.eps,
         "elementwise_affine": m.elementwise_affine}
    if m.elementwise_affine and getattr(m, "bias", 0) is None:
        a["bias"] = False          # PyTorch 2.1+: LayerNorm(bias=False)
    return a


def _inplace(m):
    return {"inplace": True} if getattr(m, "inplace", False) else {}


def _pool_max(m):
    return {"kernel_size": collapse(m.kernel_size), "stride": collapse(m.stride),
            "padding": collapse(m.padding), "dilation": collapse(m.dilation),
            "return_indices": m.return_indices, "ceil_mode": m.ceil_mode}


def _pool_avg(m):
    a = {"kernel_size": collapse(m.kernel_size), "stride": collapse(m.stride),
         "padding": collapse(m.padding), "ceil_mode": m.ceil_mode,
         "count_include_pad": m.count_include_pad}
    if getattr(m, "divisor_override", None) is not None:
        a["divisor_override"] = m.divisor_override
    return a


def _rnn(kind):
    def f(m):
        a = _get(m, "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                 "bidirectional")
        if kind == "lstm" and getattr(m, "proj_size", 0):
            a["proj_size"] = m.proj_size
        if kind == "rnn":
            a["nonlinearity"] = m.nonlinearity
        return a
    return f


def _upsample(m):
    a = {"size": m.size, "scale_factor": m.scale_factor, "mode": m.mode,
         "align_corners": m.align_corners}
    if getattr(m, "recompute_scale_factor", None) is not None:
        a["recompute_scale_factor"] = m.recompute_scale_factor
    return a


def _embedding(m):
    a = _get(m, "num_embeddings", "embedding_dim", "padding_idx", "max_norm")
    if m.max_norm is not None and m.norm_type != 2.0:
        a["norm_type"] = m.norm_type
    for k in ("scale_grad_by_freq", "sparse"):
        if getattr(m, k):
            a[k] = True
    return a


def _mha(m):
    return {"embed_dim": m.embed_dim, "num_heads": m.num_heads, "dropout": m.dropout,
            "bias": m.in_proj_bias is not None, "add_bias_kv": m.bias_k is not None,
            "add_zero_attn": m.add_zero_attn, "kdim": m.kdim, "vdim": m.vdim,
            "batch_first": m.batch_first}


# class -> (memest type, arguments from the module)
LEAVES = {
    nn.Conv1d: ("conv1d", _conv("")), nn.Conv2d: ("conv2d", _conv("")), nn.Conv3d: ("conv3d", _conv("")),
    nn.ConvTranspose1d: ("convtranspose1d", _conv("t")),
    nn.ConvTranspose2d: ("convtranspose2d", _conv("t")),
    nn.ConvTranspose3d: ("convtranspose3d", _conv("t")),
    nn.Linear: ("linear", lambda m: {"in_features": m.in_features, "out_features": m.out_features,
                                     "bias": m.bias is not None}),
    nn.Bilinear: ("bilinear", lambda m: {"in1_features": m.in1_features, "in2_features": m.in2_features,
                                         "out_features": m.out_features, "bias": m.bias is not None}),
    nn.BatchNorm1d: ("batchnorm1d", _bn), nn.BatchNorm2d: ("batchnorm2d", _bn),
    nn.BatchNorm3d: ("batchnorm3d", _bn),
    nn.InstanceNorm1d: ("instancenorm1d", _bn), nn.InstanceNorm2d: ("instancenorm2d", _bn),
    nn.LayerNorm: ("layernorm", _layernorm),
    nn.GroupNorm: ("groupnorm", lambda m: _get(m, "num_groups", "num_channels", "eps", "affine")),
    nn.ReLU: ("relu", _inplace), nn.ReLU6: ("relu6", _inplace), nn.SiLU: ("silu", _inplace),
    nn.Hardswish: ("hardswish", _inplace), nn.Hardsigmoid: ("hardsigmoid", _inplace),
    nn.Mish: ("mish", _inplace),
    nn.GELU: ("gelu", lambda m: {"approximate": getattr(m, "approximate", "none")}),
    nn.Hardtanh: ("hardtanh", lambda m: dict(_get(m, "min_val", "max_val"), **_inplace(m))),
    nn.LeakyReLU: ("leakyrelu", lambda m: dict(_get(m, "negative_slope"), **_inplace(m))),
    nn.ELU: ("elu", lambda m: dict(_get(m, "alpha"), **_inplace(m))),
    nn.Sigmoid: ("sigmoid", lambda m: {}), nn.Tanh: ("tanh", lambda m: {}),
    nn.Softplus: ("softplus", lambda m: _get(m, "beta", "threshold")),
    nn.Softmax: ("softmax", lambda m: _get(m, "dim")),
    nn.LogSoftmax: ("logsoftmax", lambda m: _get(m, "dim")),
    nn.Dropout: ("dropout", lambda m: dict(_get(m, "p"), **_inplace(m))),
    nn.Dropout2d: ("dropout2d", lambda m: dict(_get(m, "p"), **_inplace(m))),
    nn.Identity: ("identity", lambda m: {}),
    nn.Flatten: ("flatten", lambda m: _get(m, "start_dim", "end_dim")),
    nn.Unflatten: ("unflatten", lambda m: {"dim": m.dim, "unflattened_size": list(m.unflattened_size)}),
    nn.MaxPool1d: ("maxpool1d", _pool_max), nn.MaxPool2d: ("maxpool2d", _pool_max),
    nn.MaxPool3d: ("maxpool3d", _pool_max),
    nn.AvgPool1d: ("avgpool1d", _pool_avg), nn.AvgPool2d: ("avgpool2d", _pool_avg),
    nn.AvgPool3d: ("avgpool3d", _pool_avg),
    nn.AdaptiveAvgPool1d: ("adaptiveavgpool1d", lambda m: {"output_size": collapse(m.output_size)}),
    nn.AdaptiveAvgPool2d: ("adaptiveavgpool2d", lambda m: {"output_size": collapse(m.output_size)}),
    nn.AdaptiveAvgPool3d: ("adaptiveavgpool3d", lambda m: {"output_size": collapse(m.output_size)}),
    nn.AdaptiveMaxPool1d: ("adaptivemaxpool1d", lambda m: _get(m, "output_size", "return_indices")),
    nn.AdaptiveMaxPool2d: ("adaptivemaxpool2d", lambda m: _get(m, "output_size", "return_indices")),
    nn.AdaptiveMaxPool3d: ("adaptivemaxpool3d", lambda m: _get(m, "output_size", "return_indices")),
    nn.Embedding: ("embedding", _embedding),
    nn.LSTM: ("lstm", _rnn("lstm")), nn.GRU: ("gru", _rnn("gru")), nn.RNN: ("rnn", _rnn("rnn")),
    nn.MultiheadAttention: ("multiheadattention", _mha),
    nn.Upsample: ("upsample", _upsample),
    nn.UpsamplingNearest2d: ("upsamplingnearest2d", lambda m: _get(m, "size", "scale_factor")),
    nn.UpsamplingBilinear2d: ("upsamplingbilinear2d", lambda m: _get(m, "size", "scale_factor")),
    nn.PixelShuffle: ("pixelshuffle", lambda m: _get(m, "upscale_factor")),
    nn.PixelUnshuffle: ("pixelunshuffle", lambda m: _get(m, "downscale_factor")),
    nn.Unfold: ("unfold", lambda m: {k: collapse(v) for k, v in
                                     _get(m, "kernel_size", "dilation", "padding", "stride").items()}),
}

# torchvision's modules memest has a type for: module -> [(class name, type,
# argument function)], added once the module is imported (by the model's
# code: torchvision is optional, and importing it costs the command a second)
_LATER = {"torchvision.ops.stochastic_depth":
          [("StochasticDepth", "stochasticdepth", lambda m: {"p": m.p, "mode": m.mode})]}


def _add_later():
    for modname in [k for k in _LATER if k in sys.modules]:
        mod = sys.modules[modname]
        for cls_name, typ, fn in _LATER.pop(modname):
            cls = getattr(mod, cls_name, None)
            if isinstance(cls, type):
                LEAVES[cls] = (typ, fn)


def leaf_entry(m):
    """(type, argument function) when module m is recorded as one node, else None."""
    if _LATER:
        _add_later()
    cls = type(m)
    hit = LEAVES.get(cls)
    if hit is not None:
        return hit
    for base in cls.__mro__[1:]:
        hit = LEAVES.get(base)
        if hit is not None:
            return hit if cls.forward is base.forward else None
    return None


def leaf_args(m):
    typ, fn = leaf_entry(m)
    args = {}
    for k, v in fn(m).items():
        if v is None or (k == "inplace" and v is False):
            continue
        args[k] = jsonable(v)
    return typ, args
