#!/usr/bin/python3
"""The state and step temporaries of two optimizers PyTorch 2.6 lacks, measured op by op on the CPU
(as tests/tools/optim_temps.py measures torch.optim's): ground truth for memest's `--optim muon` and
`--optim hf_adafactor` (src/step/optim.c; issue 33, item 5).

    ../shared/tools/torch2-chroot python3 tests/tools/optim_2026.py tests/reference/optim_2026.json

Both are replicas written from their reference source, statement by statement (the tensors each
statement makes are what is measured, so the statements are kept as they are):
  - torch.optim.Muon (PyTorch 2.9; pytorch/pytorch torch/optim/_muon.py, read at commit b5ee4d7, the
    version without use_addmm): Muon's _init_group (momentum_buffer = zeros_like(p.grad)),
    _single_tensor_muon and _zeropower_via_newtonschulz with their defaults (momentum 0.95,
    nesterov, ns_steps 5, weight_decay 0.1). It takes the 2-D hidden matrices; torch.optim.AdamW
    (foreach=True) takes the embeddings, the output head and every other parameter, as
    KellerJordan/Muon's README pairs them (MuonWithAuxAdam), Muon.step() first.
  - transformers.optimization.Adafactor (huggingface/transformers, src/transformers/optimization.py,
    read at commit 005edac), with the Trainer's optim="adafactor" arguments (scale_parameter=False,
    relative_step=False, lr=1e-3).
Per model and optimizer: two steps of zero_grad, forward, cross-entropy, backward, step; the second
step is recorded (optim_temps.Temps: storages made under step(), 0-d tensors left out). The state
bytes: every state tensor but `step` (transformers' RMS, a 0-d float32 tensor, counted: 4 bytes).
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optim_temps import measure_opt  # noqa: E402
from provenance import stamp  # noqa: E402


# ---- torch.optim.Muon (torch/optim/_muon.py at b5ee4d7) ----
EPS = 1e-7
NS = (3.4445, -4.7750, 2.0315)


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    a, b, c = ns_coefficients
    ortho_grad = grad.bfloat16()
    if grad.size(0) > grad.size(1):
        ortho_grad = ortho_grad.T
    ortho_grad.div_(ortho_grad.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram_matrix = ortho_grad @ ortho_grad.T
        gram_update = torch.addmm(gram_matrix, gram_matrix, gram_matrix, beta=b, alpha=c)
        ortho_grad = torch.addmm(ortho_grad, gram_update, ortho_grad, beta=a)
    if grad.size(0) > grad.size(1):
        ortho_grad = ortho_grad.T
    return ortho_grad


class Muon(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True, ns_steps=5):
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                                      nesterov=nesterov, ns_steps=ns_steps))
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters")

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            params, grads, bufs = [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                params.append(p)
                grads.append(p.grad)
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(p.grad, memory_format=torch.preserve_format)
                bufs.append(state["momentum_buffer"])
            lr, wd, momentum = group["lr"], group["weight_decay"], group["momentum"]
            for i, param in enumerate(params):
                grad = grads[i]
                buf = bufs[i]
                buf.lerp_(grad, 1 - momentum)
                update = grad.lerp(buf, momentum) if group["nesterov"] else buf
                update = _zeropower_via_newtonschulz(update, NS, group["ns_steps"], EPS)
                A, B = param.shape[:2]
                adjusted_lr = lr * math.sqrt(max(1, A / B))
                param.mul_(1 - lr * wd)
                param.add_(update, alpha=-adjusted_lr)


class MuonWithAdamW:
    """torch.optim.Muon over the hidden matrices, torch.optim.AdamW over the rest."""

    def __init__(self, model):
        embeds = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Embedding)}
        head = list(model.modules())[-1]   # the last module: the output layer of these models
        nonhidden = embeds | {id(p) for p in head.parameters()}
        hidden = [p for p in model.parameters() if p.ndim == 2 and id(p) not in nonhidden]
        rest = [p for p in model.parameters() if not (p.ndim == 2 and id(p) not in nonhidden)]
        self.opts = [Muon(hidden, lr=1e-3), torch.optim.AdamW(rest, lr=1e-3, foreach=True)]
        self.state = {}

    def step(self):
        for o in self.opts:
            o.step()
        self.state = {**self.opts[0].state, **self.opts[1].state}

    def zero_grad(self, set_to_none=True):
        for o in self.opts:
            o.zero_grad(set_to_none=set_to_none)


# ---- transformers.optimization.Adafactor (optimization.py at 005edac) ----
class Adafactor(torch.optim.Optimizer):
    def __init__(self, params, lr=None, eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8, beta1=None,
                 weight_decay=0.0, scale_parameter=True, relative_step=True, warmup_init=False):
        super().__init__(params, dict(lr=lr, eps=eps, clip_threshold=clip_threshold, decay_rate=decay_rate,
                                      beta1=beta1, weight_decay=weight_decay, scale_parameter=scale_parameter,
                                      relative_step=relative_step, warmup_init=warmup_init))

    @staticmethod
    def _get_lr(param_group, param_state):
        rel_step_sz = param_group["lr"]
        if param_group["relative_step"]:
            min_step = 1e-6 * param_state["step"] if param_group["warmup_init"] else 1e-2
            rel_step_sz = min(min_step, 1.0 / math.sqrt(param_state["step"]))
        param_scale = 1.0
        if param_group["scale_parameter"]:
            param_scale = max(param_group["eps"][1], param_state["RMS"])
        return param_scale * rel_step_sz

    @staticmethod
    def _rms(tensor):
        return tensor.norm(2) / (tensor.numel() ** 0.5)

    @staticmethod
    def _approx_sq_grad(exp_avg_sq_row, exp_avg_sq_col):
        r_factor = (exp_avg_sq_row / exp_avg_sq_row.mean(dim=-1, keepdim=True)).rsqrt_().unsqueeze(-1)
        c_factor = exp_avg_sq_col.unsqueeze(-2).rsqrt()
        return torch.mul(r_factor, c_factor)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if grad.dtype in {torch.float16, torch.bfloat16}:
                    grad = grad.float()
                state = self.state[p]
                grad_shape = grad.shape
                factored = len(grad_shape) >= 2
                use_first_moment = group["beta1"] is not None
                if len(state) == 0:
                    state["step"] = 0
                    if use_first_moment:
                        state["exp_avg"] = torch.zeros_like(grad)
                    if factored:
                        state["exp_avg_sq_row"] = torch.zeros(grad_shape[:-1]).to(grad)
                        state["exp_avg_sq_col"] = torch.zeros(grad_shape[:-2] + grad_shape[-1:]).to(grad)
                    else:
                        state["exp_avg_sq"] = torch.zeros_like(grad)
                    state["RMS"] = 0
                else:
                    if use_first_moment:
                        state["exp_avg"] = state["exp_avg"].to(grad)
                    if factored:
                        state["exp_avg_sq_row"] = state["exp_avg_sq_row"].to(grad)
                        state["exp_avg_sq_col"] = state["exp_avg_sq_col"].to(grad)
                    else:
                        state["exp_avg_sq"] = state["exp_avg_sq"].to(grad)
                p_data_fp32 = p
                if p.dtype in {torch.float16, torch.bfloat16}:
                    p_data_fp32 = p_data_fp32.float()
                state["step"] += 1
                state["RMS"] = self._rms(p_data_fp32)
                lr = self._get_lr(group, state)
                beta2t = 1.0 - math.pow(state["step"], group["decay_rate"])
                update = (grad**2) + group["eps"][0]
                if factored:
                    exp_avg_sq_row = state["exp_avg_sq_row"]
                    exp_avg_sq_col = state["exp_avg_sq_col"]
                    exp_avg_sq_row.mul_(beta2t).add_(update.mean(dim=-1), alpha=(1.0 - beta2t))
                    exp_avg_sq_col.mul_(beta2t).add_(update.mean(dim=-2), alpha=(1.0 - beta2t))
                    update = self._approx_sq_grad(exp_avg_sq_row, exp_avg_sq_col)
                    update.mul_(grad)
                else:
                    exp_avg_sq = state["exp_avg_sq"]
                    exp_avg_sq.mul_(beta2t).add_(update, alpha=(1.0 - beta2t))
                    update = exp_avg_sq.rsqrt().mul_(grad)
                update.div_((self._rms(update) / group["clip_threshold"]).clamp_(min=1.0))
                update.mul_(lr)
                if use_first_moment:
                    exp_avg = state["exp_avg"]
                    exp_avg.mul_(group["beta1"]).add_(update, alpha=(1 - group["beta1"]))
                    update = exp_avg
                if group["weight_decay"] != 0:
                    p_data_fp32.add_(p_data_fp32, alpha=(-group["weight_decay"] * lr))
                p_data_fp32.add_(-update)
                if p.dtype in {torch.float16, torch.bfloat16}:
                    p.copy_(p_data_fp32)


OPTIMS = {
    "muon": MuonWithAdamW,
    # the Trainer's optim="adafactor" (training_args OptimizerNames.ADAFACTOR)
    "hf_adafactor": lambda m: Adafactor(m.parameters(), scale_parameter=False, relative_step=False, lr=1e-3),
}


CASES = [("mlp-mnist", "muon", torch.float32), ("mlp-mnist", "muon", torch.bfloat16),
         ("lstm-lm", "muon", torch.float32),
         ("mlp-mnist", "hf_adafactor", torch.float32), ("mlp-mnist", "hf_adafactor", torch.bfloat16),
         ("resnet18", "hf_adafactor", torch.float32), ("lstm-lm", "hf_adafactor", torch.float32)]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/reference/optim_2026.json"
    cases = []
    for name, optim, dtype in CASES:
        peak, state = measure_opt(name, OPTIMS[optim], dtype)
        cases.append({"model": name, "optim": optim, "impl": "foreach", "dtype": str(dtype)[6:],
                      "batch": 1, "temporaries_peak": peak, "state_bytes": state})
        print(cases[-1], file=sys.stderr)
    doc = stamp({"cases": cases}, "tests/tools/optim_2026.py",
                {"torch": torch.__version__, "torch.optim.Muon (replica)": "2.9 (_muon.py at b5ee4d7)",
                 "transformers.optimization.Adafactor (replica)": "optimization.py at 005edac"})
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
