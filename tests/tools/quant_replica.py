#!/usr/bin/python3
"""What a quantised linear layer allocates, measured on a plain-PyTorch replica of bitsandbytes 0.49.2's
code (bitsandbytes is not installed here and has no CPU kernels for these paths) -- the reference for
memest's src/ops/quant.c transients (unit.test_quant).

    /work/shared/tools/torch2-chroot python3 tests/tools/quant_replica.py [OUT.json]

(run from the checkout root; CPU only, a second; default output tests/reference/quant_replica.json).

The replica is bitsandbytes-foundation/bitsandbytes tag 0.49.2 line by line at the level of tensors:
nn/modules.py Linear4bit.forward and Linear8bitLt.forward, autograd/_functions.py matmul_4bit,
MatMul4Bit and MatMul8bitLt (forward and backward as written, ctx.tensors kept as Python attributes as the
library keeps them), functional.py dequantize_4bit (the nested absmax first, then the weight) and
gemv_4bit. Each CUDA kernel is replaced by the allocation its Python wrapper makes and nothing else
(backends/cuda/ops.py: dequantize_4bit and dequantize_blockwise `torch.empty(shape, dtype)`, gemv_4bit
`torch.empty(A.shape[:-1] + (shape[0],), dtype=A.dtype)`, int8_vectorwise_quant `row_stats` float32
[rows] and `out_row` int8, int8_linear_matmul int32 [rows, out], int8_mm_dequant [rows, out] in the
input's dtype): the values are not bitsandbytes', the tensors are. Outliers: the inputs are small
(|x| < 6), so LLM.int8()'s outlier set is empty, as memest assumes.

Measured per case with hf_peak.py's Live/Recorder (every storage an aten op creates, until it dies):
  fwd: the forward's peak of live bytes above what was live before it, less the output;
  kept: what stays live after the forward besides the output (the tensors the node keeps);
  bwd: the backward's peak above what was live before it, less the input's gradient.
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_peak import Live, Recorder  # noqa: E402
from provenance import stamp  # noqa: E402

torch.set_num_threads(2)


class QuantState:
    def __init__(self, shape, dtype, blocksize, nested):
        self.shape, self.dtype, self.blocksize, self.nested = shape, dtype, blocksize, nested
        n = shape[0] * shape[1]
        self.blocks = -(n // -blocksize)
        self.offset = torch.zeros((), dtype=torch.float32)


def dequantize_4bit(A, qs):
    """functional.dequantize_4bit: the nested absmax (dequantize_blockwise's output, float32), += offset,
    then the kernel's output in the dtype the weight was quantised from; transposed back when A is."""
    absmax = None
    if qs.nested:
        absmax = torch.empty(qs.blocks, dtype=torch.float32)
        absmax += qs.offset
    out = torch.empty(qs.shape, dtype=qs.dtype)
    del absmax
    if A.shape[0] == 1:
        return out.t()
    return out


def gemv_4bit(A, B, qs):
    absmax = None
    if qs.nested:
        absmax = torch.empty(qs.blocks, dtype=torch.float32)
        absmax += qs.offset
    out = torch.empty(A.shape[:-1] + (qs.shape[0],), dtype=A.dtype)
    del absmax
    return out


class MatMul4Bit(torch.autograd.Function):
    @staticmethod
    def forward(ctx, A, B, out=None, bias=None, quant_state=None):
        output = F.linear(A, dequantize_4bit(B, quant_state).to(A.dtype).t(), bias)
        ctx.state = quant_state
        ctx.tensors = (None, B) if any(ctx.needs_input_grad[:2]) else (None, None)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        req_gradA = ctx.needs_input_grad[0]
        _, B = ctx.tensors
        grad_A = None
        if req_gradA:
            grad_A = torch.matmul(grad_output, dequantize_4bit(B, ctx.state).to(grad_output.dtype).t())
        return grad_A, None, None, None, None


def matmul_4bit(A, B, quant_state, bias=None):
    if A.numel() == A.shape[-1] and not A.requires_grad and A.shape[-1] % quant_state.blocksize == 0:
        out = gemv_4bit(A, B.t(), quant_state)
        if bias is not None:
            out += bias
        return out
    return MatMul4Bit.apply(A, B, None, bias, quant_state)


class Linear4bit(torch.nn.Module):
    def __init__(self, inf, outf, dtype, compute_dtype, nested):
        super().__init__()
        n = inf * outf
        self.weight = torch.nn.Parameter(torch.zeros(((n + 1) // 2, 1), dtype=torch.uint8),
                                         requires_grad=False)
        self.qs = QuantState((outf, inf), dtype, 64, nested)
        self.compute_dtype = compute_dtype

    def forward(self, x):
        inp_dtype = x.dtype
        x = x.to(self.compute_dtype)
        return matmul_4bit(x, self.weight.t(), quant_state=self.qs).to(inp_dtype)


class MatMul8bitLt(torch.autograd.Function):
    @staticmethod
    def forward(ctx, A, B, out=None, bias=None, state=None):
        input_shape = A.shape
        if len(A.shape) == 3:
            A = A.reshape(-1, A.shape[-1])
        A16 = A.to(torch.float16)
        # int8_vectorwise_quant (threshold 6.0)
        rows = A16.shape[0]
        row_stats = torch.empty(rows, dtype=torch.float32)
        out_row = torch.empty(A16.shape, dtype=torch.int8)
        outliers = A16.abs() >= 6.0
        outlier_cols = torch.argwhere(outliers.any(dim=0)).view(-1) if outliers.any() else \
            torch.empty(0, dtype=torch.int64)
        del outliers
        CA, SCA = out_row, row_stats
        del A16
        # int8_mixed_scaled_mm without outliers: int8_scaled_mm
        subA = torch.empty(0, dtype=A.dtype)
        out_i32 = torch.empty((rows, state["CB"].shape[0]), dtype=torch.int32)
        output = torch.empty((rows, state["CB"].shape[0]), dtype=A.dtype)
        del out_i32, CA, SCA, outlier_cols
        ctx.state = state
        ctx.grad_shape = input_shape
        ctx.dtype_A = A.dtype
        if any(ctx.needs_input_grad[:2]):
            ctx.tensors = (None, subA, A)
        else:
            ctx.tensors = [None, None, None]
        if len(input_shape) == 3:
            return output.reshape(*input_shape[:-1], state["CB"].shape[0])
        return output

    @staticmethod
    def backward(ctx, grad_output):
        state = ctx.state
        if len(grad_output.shape) == 3:
            grad_output = grad_output.reshape(-1, grad_output.shape[-1]).contiguous()
        CB = state["CB"].to(ctx.dtype_A, copy=True).mul_(state["SCB"].unsqueeze(1).mul(1.0 / 127.0))
        grad_A = torch.matmul(grad_output.to(ctx.dtype_A), CB).view(ctx.grad_shape)
        return grad_A, None, None, None, None


class Linear8bitLt(torch.nn.Module):
    def __init__(self, inf, outf):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros((outf, inf), dtype=torch.int8), requires_grad=False)
        self.state = {"CB": self.weight.data, "SCB": torch.ones(outf, dtype=torch.float32)}

    def forward(self, x):
        return MatMul8bitLt.apply(x, self.weight, None, None, self.state)


def measure(layer, x):
    live = Live()
    g = None
    # the module's tensors and the input exist before: registered, not counted as the layer's
    for t in [x, *layer.parameters(), *getattr(layer, "state", {}).values()]:
        live.add(t)
    if hasattr(layer, "qs"):
        live.add(layer.qs.offset)
    with Recorder(live):
        before = live.cur_cuda
        live.peak_cuda = before
        y = layer(x)
        fwd = live.peak_cuda - before - y.untyped_storage().nbytes()
        kept = live.cur_cuda - before - y.untyped_storage().nbytes()
        bwd = 0
        if x.requires_grad:
            g = torch.ones_like(y)
            before = live.cur_cuda
            live.peak_cuda = before
            (gx,) = torch.autograd.grad(y, x, g)
            bwd = live.peak_cuda - before - gx.untyped_storage().nbytes()
    return {"fwd": fwd, "kept": kept, "bwd": bwd}


CASES = [
    # name, layer kind, rows, in, out, input dtype, model dtype, compute dtype, nested, input grad
    ("nf4_dq_bf16_grad", "4bit", 64, 256, 512, torch.bfloat16, torch.bfloat16, torch.bfloat16, True, True),
    ("nf4_bf16_fp32compute_grad", "4bit", 64, 256, 512, torch.bfloat16, torch.bfloat16, torch.float32,
     False, True),
    ("nf4_dq_fp32compute_nograd", "4bit", 64, 256, 512, torch.bfloat16, torch.bfloat16, torch.float32,
     True, False),
    ("nf4_gemv_fp32compute", "4bit", 1, 256, 512, torch.bfloat16, torch.bfloat16, torch.float32, True,
     False),
    ("int8_bf16_grad", "int8", 64, 256, 512, torch.bfloat16, torch.bfloat16, None, False, True),
]


def main(argv):
    out_path = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                          "..", "reference", "quant_replica.json")
    res = {}
    for name, kind, rows, inf, outf, xdt, wdt, cdt, nested, grad in CASES:
        torch.manual_seed(0)
        layer = Linear4bit(inf, outf, wdt, cdt, nested) if kind == "4bit" else Linear8bitLt(inf, outf)
        x = (torch.randn(rows, inf) * 0.1).to(xdt).requires_grad_(grad)
        res[name] = {"rows": rows, "in": inf, "out": outf, "dtype": str(xdt).split(".")[1],
                     "compute": str(cdt).split(".")[1] if cdt else None, "nested": nested,
                     "grad": grad, **measure(layer, x)}
        print(name, res[name])
    with open(out_path, "w") as f:
        json.dump(stamp({"source": "tests/tools/quant_replica.py: bitsandbytes 0.49.2 replica, PyTorch "
                         + torch.__version__, "cases": res}, "tests/tools/quant_replica.py",
                        {"torch": torch.__version__,
                         "bitsandbytes": "0.49.2 (replicated in plain PyTorch, not imported)"}), f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv)
