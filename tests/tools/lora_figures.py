#!/usr/bin/python3
"""Reference figures for --lora: PEFT's LoRA replicated in plain PyTorch 2.6 on the tiny Llama of the
Hugging Face tests, the bytes autograd saves measured as tests/tools/hf_figures.py measures them.

    ../shared/tools/torch2-chroot python3 tests/tools/lora_figures.py tests/reference/lora_figures.json

(run from the checkout root; CPU only, a few seconds). peft is not installed here: LoraLinear below is
huggingface/peft v0.17.1 src/peft/tuners/lora/layer.py Linear (update_layer, forward) with what
get_peft_model() does around it, step by step:

* the base model: tests/tools/hf_models.py's Llama (transformers v4.48.0), built under
  torch.set_default_dtype(dtype) as from_pretrained(torch_dtype=dtype) loads it, config tests/hf/tiny/llama.json;
* tuners_utils.py check_target_module_exists: a module is adapted when its name is a target or ends with
  "." + a target; "all-linear" (_maybe_include_all_linear_layers): every nn.Linear but lm_head (the
  output embeddings);
* update_layer: lora_dropout = nn.Dropout(p) if p > 0 else nn.Identity(); lora_A = nn.Linear(in, r,
  bias=False), lora_B = nn.Linear(r, out, bias=False) created in float32 (the default dtype restored), then
  _move_adapter_to_device_of_base_layer casts them to the base weight's dtype, then get_peft_model's
  autocast_adapter_dtype=True (_cast_adapter_dtype) casts float16/bfloat16 adapters to float32;
  scaling = lora_alpha / r;
* _mark_only_adapters_as_trainable (bias="none"): every other parameter requires_grad=False;
* forward: result = base_layer(x); torch_result_dtype = result.dtype; x = x.to(lora_A.weight.dtype) (when it
  differs: _cast_input_dtype); result = result + lora_B(lora_A(dropout(x))) * scaling;
  result = result.to(torch_result_dtype).

CUDA correction built in: nn.Dropout on CUDA runs at::native_dropout (Dropout.cpp is_fused_kernel_acceptable),
which saves a bool mask; the CPU path (_dropout_impl) would save a float noise tensor. The replica's
dropout calls torch.native_dropout, which the CPU has too, so the measured figure is CUDA's. The other
corrections (0-d wrapped scalars, SDPA kernels) are hf_figures.measure's.

With checkpoint=True every decoder layer runs under torch.utils.checkpoint.checkpoint(use_reentrant=True)
(transformers' gradient_checkpointing_enable default) with the embedding output requiring grad
(enable_input_require_grads, which that path needs for the adapters to get gradients): what the forward
saves is then each layer's checkpointed inputs plus what runs outside the layers.

Under checkpointing memest counts every input a checkpointed block keeps as saved (its --timeline's
saved_activations at the end of the forward): compare it with saved_activation_bytes_cuda_corrected +
checkpoint_held_bytes (the cos/sin tensors the reentrant checkpoint holds as non-tensor arguments).

Figures: per case the batch, sequence, dtype, r, alpha, dropout, targets, whether checkpointed,
trainable and total parameter counts (peft_model.py get_nb_trainable_parameters) and
saved_activation_bytes_cuda_corrected.
"""
import json
import os
import sys

import torch
import torch.nn as nn
import torch.utils.checkpoint

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models  # noqa: E402
from hf_figures import TINY_BATCH, TINY_SEQ, here, load, measure  # noqa: E402
from provenance import stamp  # noqa: E402

torch.set_num_threads(2)


class Dropout(nn.Module):
    """nn.Dropout as CUDA runs it in training: at::native_dropout (bool mask)."""

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        return torch.native_dropout(x, self.p, True)[0]


class LoraLinear(nn.Module):
    """peft v0.17.1 tuners/lora/layer.py Linear, one adapter called "default"."""

    def __init__(self, base, r, alpha, dropout):
        super().__init__()
        self.base_layer = base
        self.lora_dropout = nn.ModuleDict({"default": Dropout(dropout) if dropout > 0 else nn.Identity()})
        self.lora_A = nn.ModuleDict({"default": nn.Linear(base.in_features, r, bias=False)})
        self.lora_B = nn.ModuleDict({"default": nn.Linear(r, base.out_features, bias=False)})
        self.scaling = {"default": alpha / r}
        # _move_adapter_to_device_of_base_layer (float base weights only: a packed 4-bit weight leaves
        # the adapters float32), then _cast_adapter_dtype (autocast_adapter_dtype=True)
        if not base.weight.dtype.is_floating_point:
            return
        for d in (self.lora_A, self.lora_B):
            d["default"] = d["default"].to(dtype=base.weight.dtype)
            for p in d["default"].parameters():
                if p.dtype in (torch.float16, torch.bfloat16):
                    p.data = p.data.to(torch.float32)

    def forward(self, x):
        result = self.base_layer(x)
        torch_result_dtype = result.dtype
        lora_A, lora_B = self.lora_A["default"], self.lora_B["default"]
        dropout, scaling = self.lora_dropout["default"], self.scaling["default"]
        if x.dtype != lora_A.weight.dtype:
            x = x.to(dtype=lora_A.weight.dtype)
        result = result + lora_B(lora_A(dropout(x))) * scaling
        result = result.to(torch_result_dtype)
        return result


def targeted(name, targets, head):
    if targets == "all-linear":
        return name != head
    return any(name == t or name.endswith("." + t) for t in targets.split(","))


def get_peft_model(model, r, alpha, dropout, targets):
    for p in model.parameters():
        p.requires_grad_(False)
    names = [n for n, m in model.named_modules() if isinstance(m, nn.Linear) and targeted(n, targets, "lm_head")]
    for n in names:
        parent, _, child = n.rpartition(".")
        owner = model.get_submodule(parent)
        setattr(owner, child, LoraLinear(getattr(owner, child), r, alpha, dropout))
    return len(names)


def checkpoint_layers(model, held):
    """gradient_checkpointing_enable(): each decoder layer under checkpoint(use_reentrant=True), and
    enable_input_require_grads(): the embedding output requires grad. The reentrant checkpoint saves its
    tensor arguments (save_for_backward: the saved-tensor hooks see them) and keeps the others as they
    are: the (cos, sin) tuple of position_embeddings stays referenced by the checkpoint until the
    backward. Those tensors go into `held`."""
    def run(fwd, *a):
        for x in a:
            if isinstance(x, tuple):
                held.extend(t for t in x if isinstance(t, torch.Tensor))
        return torch.utils.checkpoint.checkpoint(fwd, *a, use_reentrant=True)
    for layer in model.model.layers:
        layer.forward = lambda *a, _f=layer.forward: run(_f, *a)
    model.model.embed_tokens.register_forward_hook(lambda m, i, o: o.requires_grad_(True))


def nb_trainable(model):
    """peft_model.py get_nb_trainable_parameters (no Params4bit here)."""
    trainable = total = 0
    for p in model.parameters():
        total += p.numel()
        if p.requires_grad:
            trainable += p.numel()
    return trainable, total


CASES = [
    # name, dtype, r, alpha, dropout, targets, checkpoint
    ("qv_fp32", torch.float32, 8, 16, 0.0, "q_proj,v_proj", False),
    ("qv_bf16", torch.bfloat16, 8, 16, 0.0, "q_proj,v_proj", False),
    ("qv_drop_fp32", torch.float32, 8, 16, 0.05, "q_proj,v_proj", False),
    ("qv_drop_bf16", torch.bfloat16, 8, 16, 0.05, "q_proj,v_proj", False),
    ("all_bf16", torch.bfloat16, 4, 8, 0.0, "all-linear", False),
    ("all_drop_bf16", torch.bfloat16, 4, 8, 0.1, "all-linear", False),
    ("all_drop_fp32", torch.float32, 4, 8, 0.1, "all-linear", False),
    ("qv_ckpt_bf16", torch.bfloat16, 8, 16, 0.0, "q_proj,v_proj", True),
    ("all_drop_ckpt_bf16", torch.bfloat16, 4, 8, 0.05, "all-linear", True),
    ("all_drop_ckpt_fp32", torch.float32, 4, 8, 0.05, "all-linear", True),
]


def main(argv):
    cfg_path = "tests/hf/tiny/llama.json"
    cfg = load(here(*cfg_path.split("/")))
    out = {"config": cfg_path, "batch": TINY_BATCH, "seq_len": TINY_SEQ, "attn_implementation": "sdpa",
           "follows": "huggingface/peft v0.17.1 src/peft/tuners/lora/layer.py, tuners_utils.py, peft_model.py",
           "cases": {}}
    for name, dtype, r, alpha, dropout, targets, ckpt in CASES:
        torch.manual_seed(0)
        old = torch.get_default_dtype()
        torch.set_default_dtype(dtype)
        try:
            model = hf_models.build(cfg, "sdpa")
        finally:
            torch.set_default_dtype(old)
        modules = get_peft_model(model, r, alpha, dropout, targets)
        held = []
        if ckpt:
            checkpoint_layers(model, held)
        trainable, total = nb_trainable(model)
        torch.manual_seed(0)
        ids = torch.randint(0, cfg["vocab_size"], (TINY_BATCH, TINY_SEQ))
        m = measure(model, ids)
        out["cases"][name] = {
            "dtype": str(dtype).replace("torch.", ""), "r": r, "alpha": alpha, "dropout": dropout,
            "targets": targets, "checkpoint": ckpt, "modules": modules,
            "trainable_params": trainable, "all_params": total,
            "saved_activation_bytes_cuda_corrected": m["saved_activation_bytes_cuda_corrected"],
            "saved_activation_bytes": m["saved_activation_bytes"],
            # the tensors the checkpoints keep besides what they save (distinct storages): memest counts a
            # checkpointed block's inputs as saved activations
            "checkpoint_held_bytes": sum({t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
                                          for t in held}.values()),
            "by_grad_fn": m["by_grad_fn"],
        }
        print("%-20s %10d saved (CUDA-corrected), trainable %d of %d" %
              (name, m["saved_activation_bytes_cuda_corrected"], trainable, total), file=sys.stderr)
    out = stamp(out, "tests/tools/lora_figures.py", {"torch": torch.__version__,
                "transformers": "v4.48.0 (followed in plain PyTorch, not imported)",
                "peft": "v0.17.1 (followed in plain PyTorch, not imported)"})
    text = json.dumps(out, indent=1, sort_keys=True) + "\n"
    if len(argv) > 1:
        with open(argv[1], "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv)
