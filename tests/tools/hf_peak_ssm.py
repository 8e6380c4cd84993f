#!/usr/bin/python3
"""Peak live tensor bytes of one steady-state training step of the bamba tiny configs
(tests/hf/tiny/bamba.json, bamba_chunk6.json), measured in real PyTorch 2.6 (CPU) by tests/tools/hf_peak.py's
measure() on the replica of tests/tools/hf_models_ssm.py, in tests/tools/hf_peak.py's layout (checked by
tests/hf/peaks.cmake -DREF=hf_peaks_ssm.json):

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/hf_peak_ssm.py \
        tests/reference/hf_peaks_ssm.json

Two mixer paths, each case's "mixer":
  * "torch_forward": BambaMixer.torch_forward, the slow path (memest --set mamba_kernels=false), measured as
    it runs: every op is an aten op the recorder sees.
  * "kernel": cuda_kernels_forward in training, mamba_ssm's mamba_split_conv1d_scan_combined, which has no
    CPU backward. KernelSplitConv1dScan below stands in for it: an autograd.Function whose forward and
    backward make, as aten ops the recorder sees, the allocations the CUDA code makes (torch.empty /
    empty_like / zeros_like of the same shapes and dtypes, the same .contiguous(), .sum(), .to(), .clone(),
    flip / cumsum, F.linear and einsum calls, in the same order), and drop each where the CUDA code's
    Python frame drops it (a local dies when its function returns or the name is rebound). The values
    (the slow path's math, and its gradients by autograd) are computed under _disable_current_modes(),
    unseen, and copied into those tensors in place, so the step trains as the kernel would.
    Kernel-internal scratch (Triton's registers and shared memory) is none of these.

The source followed (line numbers of those files at those tags):
  state-spaces/mamba@v2.2.4:mamba_ssm/ops/triton/ssd_combined.py
      :758-834  MambaSplitConv1dScanCombinedFn.forward (rmsnorm_weight given, d_nonssm 0, no seq_idx or
                initial_states): :776 split, :779 causal_conv1d_fwd, :795 _mamba_chunk_scan_combined_fwd
                with z None, :806 _layer_norm_fwd (out None: a new [B S, dim]), :819 F.linear, :822 saves
                zxbcdt, out_x, rstd (and the parameters)
      :836-908  backward: :848 out_recompute [B, S, dim], :853 causal_conv1d_fwd again, :861 dzxbcdt
                empty_like(zxbcdt), :863 dxBC empty_like(xBC), :871 dout = F.linear(dout, W.t()) (kept by
                dy_rms, :885), :890 _layer_norm_bwd (dz into dzxbcdt, out into out_recompute), :893
                _mamba_chunk_scan_combined_bwd (dx, ddt, dB, dC into dxBC / dzxbcdt), :898 einsum for
                out_proj's weight, :899 its bias sum, :903 causal_conv1d_bwd (dx into dzxbcdt)
      :281-331  _mamba_chunk_scan_combined_fwd (:313 chunk states, :323 CB); :334-451
                _mamba_chunk_scan_combined_bwd (:376 dt.clone(), :377 cumsum fwd, :379 CB, :380 chunk
                states, :381 state passing (its final states kept in `_` to the return), :391 dstates, :396
                _state_passing_bwd, :414 bwd_dx, :416 bwd_db, :418 bwd_dC, :420 bwd_dcb, :423-424
                _bmm_chunk_bwd into dB, dC, :437 ddA_prev (flip, cumsum, flip), :441 ddAcs_stable, :442
                ddA +=, :444 _chunk_cumsum_bwd)
      :219-278  _chunk_scan_chunk_state_bwd_dx: dD [cdiv(chunk, 32), B, nc, nh, 1] f32, ddt [B, nh, nc,
                chunk] f32, dD.sum().to(D.dtype)
  state-spaces/mamba@v2.2.4:mamba_ssm/ops/triton/ssd_chunk_state.py
      :671-672 _chunk_cumsum_fwd dt_out, dA_cumsum [B, nh, nc, chunk] f32; :699, :706 _chunk_cumsum_bwd
      ddt_bias, dA f32; :742 _chunk_state_fwd states [B, nc, nh, hd, n] f32; :809-839 _chunk_state_bwd_db
      ddA_cumsum f32, dB [B, S, nsplits, g, n] f32 then dB.sum(2)
  state-spaces/mamba@v2.2.4:mamba_ssm/ops/triton/ssd_state_passing.py
      :205-206 _state_passing_fwd out [B, nc, nh, hd n] (out_dtype), final_states [B, nh, hd n] f32;
      :239-278 _state_passing_bwd dstates (x's dtype), states_converted (x's dtype, unless that is the
      states' own), ddA_chunk_cumsum [B, nh, nc, cdiv(hd n, 64)] f32 then .sum(-1)
  state-spaces/mamba@v2.2.4:mamba_ssm/ops/triton/ssd_bmm.py
      :183-190 _bmm_chunk_fwd (.contiguous() unless stride(-1) or stride(1) is 1; out f32 here);
      :230-237 _bmm_chunk_bwd (.contiguous() conditions; out given)
  state-spaces/mamba@v2.2.4:mamba_ssm/ops/triton/ssd_chunk_scan.py
      :1247 _chunk_scan_fwd out [B, S, nh, hd] x's dtype (out_x None: z None); :1404 _chunk_scan_bwd_dstates
      [B, nc, nh, hd, n] (dtype f32: the states'); :1434-1463 _chunk_scan_bwd_dC ddA_cumsum_prev f32, dC
      [B, S, nsplits, g, n] f32 then .sum(2); :1490-1510 _chunk_scan_bwd_dcb [B, nc, nsplits, g, chunk,
      chunk] f32 then .sum(2) (CB None: no ddA); :1652-1670 _chunk_scan_bwd_ddAcs_stable [B, nh, nc,
      cdiv(chunk, 32), chunk] f32 then .sum(3)
  state-spaces/mamba@v2.2.4:mamba_ssm/ops/triton/layernorm_gated.py
      :127-130 _layer_norm_fwd out empty_like(x), rstd [g B S] f32 (rms: no mean); :290-333 _layer_norm_bwd
      dx empty_like(x), _dw [nrow_groups, dim] f32 (nrow_groups = ceil(sm_count ceil(4 / num_warps) / g),
      num_warps = min(max(BLOCK_N // 256, 1), 8), BLOCK_N = min(65536 // elsize, next_pow2(dim / g))), then
      _dw.sum(0).to(weight.dtype)
  Dao-AILab/causal-conv1d@v1.5.0.post8:csrc/causal_conv1d.cpp
      :180 causal_conv1d_fwd out = empty_like(x) (x: xBC transposed, a strided view of zxbcdt); :272
      causal_conv1d_bwd dout.transpose(-1, -2).contiguous().transpose(-1, -2) when channel-last x's dout
      has stride(1) != 1; :303 dx given; :312-314 dweight, dbias zeros_like float32; :379 .to(weight dtype)
sm_count: nsplits (_chunk_state_bwd_db, _chunk_scan_bwd_dC, _chunk_scan_bwd_dcb) and nrow_groups read
torch.cuda.get_device_properties().multi_processor_count: 132 here, an H100 SXM's (and an H200's), the
figure memest uses for such partial sums (src/ops/ops_llm.c, Liger's RMSNorm).
"""
import json
import math
import os
import sys
import types

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import _disable_current_modes

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models_ssm  # noqa: E402
import hf_peak  # noqa: E402
from provenance import stamp  # noqa: E402

SM_COUNT = 132
F32 = torch.float32


def cdiv(a, b):
    return -(-a // b)


def mixer_values(m, zx, cw, cb, dt_bias, A, D, rw, ow, ob):
    """The fused op's output by the slow path's math (hf_models_ssm.FusedSplitConv1dScan's), with out_x (the
    scan's output in x's dtype) and the normed input of out_proj. dt_bias and D are the module's own (the
    slow path reads them from m), the others as given."""
    Bt, S, _ = zx.shape
    gate, xBC, dt = zx.split([m.intermediate_size, m.conv_dim, m.num_heads], dim=-1)
    xBC = m.act(F.conv1d(xBC.transpose(1, 2), cw.unsqueeze(1), cb, padding=m.conv_kernel_size - 1,
                         groups=m.conv_dim)[..., :S].transpose(1, 2))
    x, B, C = torch.split(xBC, [m.intermediate_size, m.n_groups * m.ssm_state_size,
                                m.n_groups * m.ssm_state_size], dim=-1)
    y = hf_models_ssm.ssd_naive(m, x, B, C, dt, A, Bt, S)
    out_x = y.to(zx.dtype)
    normed = m.norm(out_x, gate).to(zx.dtype)
    return out_x, normed, F.linear(normed, ow, ob)


def reference_grads(m, dout, zx, cw, cb, dt_bias, A, D, rw, ow, ob):
    """The gradients of mixer_values' output, by autograd (run unseen)."""
    leaves = [t.detach().requires_grad_() if t is not None else None for t in (zx, cw, cb, A, ow, ob)]
    zx_, cw_, cb_, A_, ow_, ob_ = leaves
    with torch.enable_grad():
        _, _, out = mixer_values(m, zx_, cw_, cb_, dt_bias, A_, D, rw, ow_, ob_)
        wrt = [zx_, cw_, cb_, m.dt_bias, A_, m.D, m.norm.weight, ow_, ob_]
        idx = [i for i, t in enumerate(wrt) if t is not None]
        got = torch.autograd.grad(out, [wrt[i] for i in idx], dout)
    res = [None] * len(wrt)
    for i, g in zip(idx, got):
        res[i] = g
    return res


def contig_if(t, cond):
    return t.contiguous() if cond else t


def conv_fwd(xBC):
    """causal_conv1d_fwd's out = torch::empty_like(x), x = xBC rearranged "b s d -> b d s" (:180); returned
    rearranged back."""
    return torch.empty_like(xBC.transpose(1, 2)).transpose(1, 2)


def split_xbc(m, xBC_conv):
    dim, gn = m.num_heads * m.head_dim, m.n_groups * m.ssm_state_size
    x, B, C = torch.split(xBC_conv, [dim, gn, gn], dim=-1)
    return (x.unflatten(-1, (m.num_heads, m.head_dim)), B.unflatten(-1, (m.n_groups, m.ssm_state_size)),
            C.unflatten(-1, (m.n_groups, m.ssm_state_size)))


def chunk_scan_fwd(m, x, B, C, nc):
    """_mamba_chunk_scan_combined_fwd (z None): returns out (the caller's out_x), dt_out, dA_cumsum, states,
    final_states; CB and any contiguous copies die at its return."""
    Bt, S, nh, hd = x.shape
    g, n, cs = m.n_groups, m.ssm_state_size, m.chunk_size
    B = contig_if(B, B.stride(-1) != 1)
    C = contig_if(C, C.stride(-1) != 1)
    x = contig_if(x, x.stride(-1) != 1 and x.stride(1) != 1)
    dA_cumsum, dt_out = chunk_cumsum_fwd(Bt, nh, nc, cs)
    states = torch.empty(Bt, nc, nh, hd, n, dtype=F32)
    states, final_states = state_passing_fwd(Bt, nc, nh, hd * n, C.dtype)
    CB = bmm_chunk_fwd(C, B, nc, cs)
    out = torch.empty(Bt, S, nh, hd, dtype=x.dtype)
    del CB
    return out, dt_out, dA_cumsum, states, final_states


def chunk_cumsum_fwd(Bt, nh, nc, cs):
    dt_out = torch.empty(Bt, nh, nc, cs, dtype=F32)
    dA_cumsum = torch.empty(Bt, nh, nc, cs, dtype=F32)
    return dA_cumsum, dt_out


def state_passing_fwd(Bt, nc, nh, d, out_dtype):
    out = torch.empty(Bt, nc, nh, d, dtype=out_dtype)
    final_states = torch.empty(Bt, nh, d, dtype=F32)
    return out, final_states


def bmm_chunk_fwd(a, b, nc, cs):
    a = contig_if(a, a.stride(-1) != 1 and a.stride(1) != 1)
    b = contig_if(b, b.stride(-1) != 1 and b.stride(1) != 1)
    return torch.empty(a.shape[0], nc, a.shape[2], cs, cs, dtype=F32)


def bmm_chunk_bwd(a, dout, residual):
    a = contig_if(a, a.stride(-1) != 1 and a.stride(-2) != 1)
    dout = contig_if(dout, dout.stride(-1) != 1 and dout.stride(-2) != 1)
    residual = contig_if(residual, residual.stride(-1) != 1 and residual.stride(1) != 1)
    del a, dout, residual  # out given: nothing returned new


def nsplits(Bt, nc, nh, g):
    ratio = nh // g
    per_program = max(min(math.ceil(Bt * nc * nh / SM_COUNT), ratio), 1)
    return cdiv(ratio, per_program)


def layer_norm_bwd(x_rms, weight, g):
    """_layer_norm_bwd (rms, z and dz given, recompute_output with out given): dx, then the weight gradient
    through a [nrow_groups, N] float32 partial."""
    M, N = x_rms.shape
    dx = torch.empty_like(x_rms)
    group = N // g
    block_n = min(65536 // x_rms.element_size(), 1 << (group - 1).bit_length())
    num_warps = min(max(block_n // 256, 1), 8)
    nrow_groups = math.ceil(SM_COUNT * math.ceil(4 / num_warps) / g)
    _dw = torch.empty(nrow_groups, N, dtype=F32)
    dw = _dw.sum(0).to(weight.dtype)
    return dx, dw


def chunk_scan_bwd(m, dout, x, dt, A, B, C, D, dt_bias, nc):
    """_mamba_chunk_scan_combined_bwd (z None; dx, ddt, dB, dC given): returns dA, dD, ddt_bias (the given
    ones are filled in place); every other tensor it makes dies at its return."""
    Bt, S, nh, hd = x.shape
    g, n, cs = m.n_groups, m.ssm_state_size, m.chunk_size
    dout = contig_if(dout, dout.stride(-1) != 1)
    dt_in = dt.clone()
    dA_cumsum, dt = chunk_cumsum_fwd(Bt, nh, nc, cs)
    CB = bmm_chunk_fwd(C, B, nc, cs)
    states = torch.empty(Bt, nc, nh, hd, n, dtype=F32)
    states, _ = state_passing_fwd(Bt, nc, nh, hd * n, states.dtype)
    dstates = torch.empty(Bt, nc, nh, hd, n, dtype=states.dtype)  # _chunk_scan_bwd_dstates
    dstates, ddA_chunk_cumsum, states = state_passing_bwd(states, dstates, x.dtype, hd * n)
    ddt, dD = chunk_state_bwd_dx(Bt, nc, nh, cs, D)
    splits = nsplits(Bt, nc, nh, g)
    ddA_next = torch.empty(Bt, nh, nc, cs, dtype=F32)            # _chunk_state_bwd_db
    dB = torch.empty(Bt, S, splits, g, n, dtype=F32).sum(2)
    states_x = states.to(x.dtype)
    ddA_cumsum_prev = torch.empty(Bt, nh, nc, cs, dtype=F32)     # _chunk_scan_bwd_dC
    dC = torch.empty(Bt, S, splits, g, n, dtype=F32).sum(2)
    del states_x
    dCB = torch.empty(Bt, nc, splits, g, cs, cs, dtype=F32).sum(2).to(CB.dtype)  # _chunk_scan_bwd_dcb
    bmm_chunk_bwd(C, dCB, dB)
    bmm_chunk_bwd(B, dCB.transpose(-1, -2), dC)
    ddA_cumsum_prev[..., -1] += ddA_chunk_cumsum
    ddA_prev = ddA_cumsum_prev.flip([-1]).cumsum(dim=-1).flip([-1])
    ddA = torch.empty(Bt, nh, nc, cdiv(cs, 32), cs, dtype=F32)[:, :, :, :1].sum(dim=3)
    ddA += ddA_next + ddA_prev
    ddt_bias = torch.empty_like(dt_bias, dtype=F32)               # _chunk_cumsum_bwd
    dA = torch.empty_like(A, dtype=F32)
    del dt_in, dA_cumsum, dt, CB, _, dstates, ddt
    return dA, dD, ddt_bias


def state_passing_bwd(states, dstates_in, xdtype, d):
    """_state_passing_bwd(states, ..., dstates_dtype=x.dtype, states_dtype=x.dtype): dstates, the chunk
    cumsum's gradient, the states converted to x's dtype (or the states themselves)."""
    Bt, nc, nh = states.shape[:3]
    dstates = torch.empty_like(dstates_in.flatten(-2), dtype=xdtype)
    conv = torch.empty_like(states, dtype=xdtype) if xdtype != states.dtype else None
    part = torch.empty(Bt, nh, nc, cdiv(d, 64), dtype=F32)
    ddA_chunk_cumsum = part[..., :1].sum(dim=-1).to(dtype=F32)
    del part
    return dstates, ddA_chunk_cumsum, states if conv is None else conv


def chunk_state_bwd_dx(Bt, nc, nh, cs, D):
    """_chunk_scan_chunk_state_bwd_dx (dx given): ddt float32 and dD in D's dtype."""
    dD = torch.empty(cdiv(cs, 32), Bt, nc, nh, 1, dtype=F32)
    ddt = torch.empty(Bt, nh, nc, cs, dtype=F32)
    dD = dD[:1].sum(dim=(0, 1, 2)).to(dtype=D.dtype)
    return ddt, dD.view(nh)


class KernelSplitConv1dScan(torch.autograd.Function):
    """mamba_split_conv1d_scan_combined as MambaSplitConv1dScanCombinedFn runs it on CUDA (see the top of
    the file): its allocations visible, its values the slow path's."""

    @staticmethod
    def forward(ctx, zxbcdt, conv_w, conv_b, dt_bias, A, D, rms_w, out_w, out_b, m):
        Bt, S, _ = zxbcdt.shape
        dim, nc = m.num_heads * m.head_dim, cdiv(S, m.chunk_size)
        with _disable_current_modes():
            out_x_val, normed_val, _ = mixer_values(m, zxbcdt, conv_w, conv_b, dt_bias, A, D, rms_w, out_w, out_b)
        z, xBC, dt = torch.split(zxbcdt, [dim, m.conv_dim, m.num_heads], dim=-1)
        xBC_conv = conv_fwd(xBC)
        x, B, C = split_xbc(m, xBC_conv)
        out_x, dt_out, dA_cumsum, states, final_states = chunk_scan_fwd(m, x, B, C, nc)
        out_x.copy_(out_x_val.view_as(out_x))
        x_rms = out_x.view(Bt * S, dim)
        normed = torch.empty_like(x_rms)                            # _layer_norm_fwd
        rstd = torch.empty(m.n_groups * Bt * S, dtype=F32)
        normed.copy_(normed_val.reshape(Bt * S, dim))
        out = F.linear(normed.view(Bt, S, dim), out_w, out_b)
        ctx.m = m
        ctx.save_for_backward(zxbcdt, conv_w, conv_b, out_x, A, D, dt_bias, rms_w, rstd, out_w, out_b)
        del xBC_conv, x, B, C, dt_out, dA_cumsum, states, final_states, normed
        return out

    @staticmethod
    def backward(ctx, dout):
        zxbcdt, conv_w, conv_b, out_x, A, D, dt_bias, rms_w, rstd, out_w, out_b = ctx.saved_tensors
        m = ctx.m
        Bt, S, _ = zxbcdt.shape
        dim, nc = m.num_heads * m.head_dim, cdiv(S, m.chunk_size)
        with _disable_current_modes():
            ref = reference_grads(m, dout, zxbcdt, conv_w, conv_b, dt_bias, A, D, rms_w, out_w, out_b)
            _, normed_val, _ = mixer_values(m, zxbcdt, conv_w, conv_b, dt_bias, A, D, rms_w, out_w, out_b)
        out_recompute = torch.empty(Bt, S, dim, dtype=out_x.dtype)
        z, xBC, dt = torch.split(zxbcdt, [dim, m.conv_dim, m.num_heads], dim=-1)
        xBC_conv = conv_fwd(xBC)
        x, B, C = split_xbc(m, xBC_conv)
        dzxbcdt = torch.empty_like(zxbcdt)
        dxBC = torch.empty_like(xBC)
        dout_og = dout
        dout = F.linear(dout, out_w.t())
        dy_rms = dout.reshape(Bt * S, dim)
        x_rms = out_x.reshape(Bt * S, dim)
        dx_ln, drms_w = layer_norm_bwd(x_rms, rms_w, m.n_groups)
        out_recompute.copy_(normed_val)
        dout = dx_ln.view(Bt, S, m.num_heads, m.head_dim)
        dA, dD, ddt_bias = chunk_scan_bwd(m, dout, x, dt, A, B, C, D, dt_bias, nc)
        doutproj_weight = torch.einsum("bso,bsd->od", dout_og, out_recompute)
        doutproj_bias = dout_og.sum(dim=(0, 1)) if out_b is not None else None
        dweight, dbias = conv_bwd(xBC, conv_w, conv_b, dxBC)
        for t, r in zip((dzxbcdt, dweight, dbias, ddt_bias, dA, dD, drms_w, doutproj_weight, doutproj_bias), ref):
            if t is not None:
                t.copy_(r)
        del dy_rms, xBC_conv, x, B, C, dxBC, out_recompute
        return dzxbcdt, dweight, dbias, ddt_bias, dA, dD, drms_w, doutproj_weight, doutproj_bias, None


def conv_bwd(xBC, weight, bias, dxBC):
    """causal_conv1d_bwd(x = xBC "b s d -> b d s", dout = dxBC likewise, dx given): the dout copy for a
    channel-last x whose dout is not (:272), the float32 zeros and their cast to the weight's dtype (:379)."""
    x, dout = xBC.transpose(1, 2), dxBC.transpose(1, 2)
    channel_last = x.stride(1) == 1 and x.stride(2) > 1
    if not channel_last and dout.stride(2) != 1:
        dout = dout.contiguous()
    if channel_last and dout.stride(1) != 1:
        dout = dout.transpose(-1, -2).contiguous().transpose(-1, -2)
    dweight = torch.zeros_like(weight, dtype=F32)
    dbias = torch.zeros_like(bias, dtype=F32) if bias is not None else None
    return dweight.to(weight.dtype), dbias.to(bias.dtype) if bias is not None else None


def kernel_forward(self, hidden_states):
    """BambaMixer.cuda_kernels_forward in training with KernelSplitConv1dScan."""
    projected_states = self.in_proj(hidden_states)
    A = -torch.exp(self.A_log.float())
    return KernelSplitConv1dScan.apply(projected_states, self.conv1d.weight.squeeze(1), self.conv1d.bias,
                                       self.dt_bias, A, self.D, self.norm.weight, self.out_proj.weight,
                                       self.out_proj.bias, self)


def build_kernel(cfg, attn):
    model = hf_models_ssm.BUILDERS["bamba"](cfg, attn, "fused")
    for mod in model.modules():
        if isinstance(mod, hf_models_ssm.BambaMixer):
            mod.cuda_kernels_forward = types.MethodType(kernel_forward, mod)
    return model


def build_torch(cfg, attn):
    return hf_models_ssm.BUILDERS["bamba"](cfg, attn, "torch")


MIXERS = [("kernel", build_kernel), ("torch_forward", build_torch)]
# tiny config, attention, dtype, memest --attention (the kernel CUDA would run: hf_peak.py's CASES; the
# causal mask is SDPA's is_causal, no mask tensor)
CASES = [(name, attn, dtype, kernel) for name in ("bamba", "bamba_chunk6")
         for attn, dtype, kernel in (("eager", "float32", "eager"), ("sdpa", "float32", "auto"),
                                     ("eager", "bfloat16", "eager"), ("sdpa", "bfloat16", "flash"))]


def check_grads():
    """The emulation's gradients equal the slow path's (the same math), in float32."""
    with open(hf_peak.here("tests", "hf", "tiny", "bamba_chunk6.json")) as f:
        cfg = json.load(f)
    grads = []
    for build in (build_kernel, build_torch):
        torch.manual_seed(0)
        model = build(cfg, "eager")
        torch.manual_seed(1)
        x = torch.randint(cfg["vocab_size"], (2, 16))
        model(x).float().square().mean().backward()
        grads.append([p.grad for p in model.parameters()])
    worst = max((a - b).abs().max().item() for a, b in zip(*grads))
    assert worst < 1e-4, "emulated gradients differ from the slow path's by %g" % worst


def main(argv):
    path = argv[1] if len(argv) > 1 else hf_peak.here("tests", "reference", "hf_peaks_ssm.json")
    check_grads()
    res = {"_about": "tests/tools/hf_peak_ssm.py: peak live tensor bytes of a steady-state training step, "
                     "PyTorch %s CPU, batch %d, seq %d; mixer kernel: mamba_ssm's fused kernel emulated "
                     "(allocations as its CUDA code makes them), torch_forward: the slow path"
                     % (torch.__version__, hf_peak.B, hf_peak.S),
           "batch": hf_peak.B, "seq": hf_peak.S, "sm_count": SM_COUNT, "cases": []}
    for mixer, build in MIXERS:
        for name, attn, dtype, kernel in CASES:
            with open(hf_peak.here("tests", "hf", "tiny", name + ".json")) as f:
                cfg = json.load(f)
            for optim, impl in hf_peak.OPTIMS:
                r = hf_peak.measure(cfg, attn, getattr(torch, dtype), optim, builders={"bamba": build})
                r.update(config=name, mixer=mixer, attn=attn, dtype=dtype, memest_attention=kernel, optim=optim,
                         impl=impl)
                res["cases"].append(r)
                print("%-13s %-12s %-5s %-8s %-4s %9d  (%s)" % (mixer, name, attn, dtype, optim,
                                                              r["peak_tensors"], r["peak_at"]), file=sys.stderr)
    res = stamp(res, "tests/tools/hf_peak_ssm.py",
                {"torch": torch.__version__,
                 "transformers": "bamba at 00511f5df3b63c48b31496072ec35d6ff3ffa6c6 (tests/tools/hf_models_ssm.py; "
                                 "followed in plain PyTorch, not imported); state-spaces/mamba@v2.2.4, "
                                 "Dao-AILab/causal-conv1d@v1.5.0.post8 (the kernel's allocations)"})
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv)
