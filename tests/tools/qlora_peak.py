#!/usr/bin/python3
"""Peak live tensor bytes of a steady-state QLoRA training step -- nf4 base (double quantisation, bfloat16
compute), PEFT's prepare_model_for_kbit_training and LoRA, bitsandbytes' paged 8-bit AdamW, with and
without gradient checkpointing -- measured with tests/tools/hf_peak.py's measure() (PyTorch 2.6, CPU, its
CUDA corrections) on the tiny Llama of the Hugging Face tests. Ground truth for memest's
`memory.peak_tensors` with `--weights nf4 --double-quant --kbit-prep --lora R --optim paged_adamw8bit`
(tests/qlora/check.cmake, within 3% as tests/hf/peaks.cmake).

    ../shared/tools/torch2-chroot python3 tests/tools/qlora_peak.py [tests/reference/qlora_peaks.json]

None of transformers, peft and bitsandbytes is installed here (and bitsandbytes has no CPU kernels for
these paths): the step is built from the plain-PyTorch replicas of the other tools, in the order a QLoRA
script runs them:

1. from_pretrained(torch_dtype=bfloat16, quantization_config=BitsAndBytesConfig(load_in_4bit=True,
   bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=bfloat16)):
   hf_models.py's Llama (transformers v4.48.0) built in bfloat16 (hf_peak.measure), then every nn.Linear
   but lm_head replaced (transformers integrations/bitsandbytes.py replace_with_bnb_linear,
   get_keys_to_not_convert) by Linear4bit below: quant_replica.py's replica of bitsandbytes 0.49.2
   nn/modules.py Linear4bit (the forward's x.to(compute_dtype), MatMul4Bit's dequantised weight --
   the nested float32 absmax first --, F.linear, the output's .to(inp_dtype); the backward's second
   dequantisation; nothing saved but the packed weight, which is frozen) holding what quantize_4bit
   allocates for it: the packed uint8 weight [ceil(n/2), 1] (Params4bit, requires_grad False), and as
   buffers the QuantState's tensors: uint8 absmax [ceil(n/64)], the 16-value float32 nf4 code, the
   nested float32 absmax [ceil(ceil(n/64)/256)], the nested 256-value float32 code and the 0-d float32
   offset (per layer, as src/ops/quant.c reads functional.py quantize_4bit / quantize_blockwise).
2. peft v0.13.2 utils/other.py prepare_model_for_kbit_training(model, use_gradient_checkpointing=ckpt):
   every parameter requires_grad=False; every float16/bfloat16 parameter that is not a Params4bit (the
   embedding, the norms, lm_head) cast to float32 -- the hidden states are float32 from the embedding on,
   so SDPA runs in float32 (CUDA: the memory-efficient kernel, memest --attention auto); with ckpt,
   enable_input_require_grads() (a forward hook making the embedding output require grad) and
   gradient_checkpointing_enable(): each decoder layer under torch.utils.checkpoint.checkpoint with
   use_reentrant=True (PEFT passes gradient_checkpointing_kwargs={} and PyTorch 2.6 defaults to the
   reentrant variant; lora_figures.checkpoint_layers).
3. get_peft_model(LoraConfig(r, lora_alpha, lora_dropout, target_modules)): the targeted Linear4bit
   layers wrapped by LoraLinear4bit below, peft v0.17.1 tuners/lora/bnb.py Linear4bit.forward (the same
   steps since v0.13): result = base_layer(x); result = result.clone(); (no autocast) expected_dtype =
   result.dtype, x = x.to(lora_A.weight.dtype); output = lora_B(lora_A(dropout(x))) * scaling;
   output = output.to(expected_dtype); result = result + output. Adapters float32 (created in float32;
   _move_adapter_to_device_of_base_layer leaves them so for a uint8 base weight); dropout as CUDA runs
   it (lora_figures.Dropout: native_dropout's bool mask), nn.Identity at p = 0.
4. transformers' Trainer with optim="paged_adamw_8bit": bitsandbytes' PagedAdamW8bit over the
   trainable parameters, bnb_optim_state.py's replica of Optimizer2State.init_state (float32 states
   for a parameter of fewer than 4096 elements -- every adapter of the tiny model --, uint8 states and
   float32 absmax otherwise; states of a parameter of 100,000 elements or more paged, in unified memory,
   not counted). Its update is one in-place CUDA kernel per parameter: no temporaries, none replicated.

The step, the counting and the CUDA corrections are hf_peak.py's (batch 2, sequence 16). Each case
lists peak_tensors (CUDA-corrected) and the op after which it is reached.
"""
import json
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quant_replica  # noqa: E402
from bnb_optim_state import Replica2State  # noqa: E402
from hf_peak import B, S, here, measure  # noqa: E402
from lora_figures import LoraLinear, checkpoint_layers, targeted  # noqa: E402
from provenance import stamp  # noqa: E402

BLOCK, NESTED_BLOCK = 64, 256


class Linear4bit(quant_replica.Linear4bit):
    """quant_replica.Linear4bit (bitsandbytes 0.49.2, nf4, double quantisation) with the QuantState's
    tensors as buffers, so that the measurement counts them as the model's."""

    def __init__(self, inf, outf, dtype, compute_dtype):
        super().__init__(inf, outf, dtype, compute_dtype, True)
        self.in_features, self.out_features = inf, outf
        blocks = self.qs.blocks
        self.register_buffer("absmax", torch.zeros(blocks, dtype=torch.uint8))
        self.register_buffer("code", torch.zeros(16, dtype=torch.float32))
        self.register_buffer("nested_absmax", torch.zeros(-(blocks // -NESTED_BLOCK), dtype=torch.float32))
        self.register_buffer("nested_code", torch.zeros(256, dtype=torch.float32))
        self.register_buffer("offset", self.qs.offset)


def quantize(model, compute_dtype):
    """replace_with_bnb_linear: every nn.Linear but lm_head; the weights' dtype (the model's) is the
    QuantState's dtype, which dequantize_4bit returns."""
    names = [n for n, m in model.named_modules() if isinstance(m, nn.Linear) and n != "lm_head"]
    for n in names:
        parent, _, child = n.rpartition(".")
        owner = model.get_submodule(parent)
        lin = getattr(owner, child)
        assert lin.bias is None
        setattr(owner, child, Linear4bit(lin.in_features, lin.out_features, lin.weight.dtype, compute_dtype))


def prepare_model_for_kbit_training(model):
    """peft v0.13.2 utils/other.py, the casting part (gradient checkpointing: checkpoint_layers)."""
    for p in model.parameters():
        p.requires_grad = False
    for p in model.parameters():
        if p.dtype in (torch.float16, torch.bfloat16):  # the Params4bit weights are uint8 here
            p.data = p.data.to(torch.float32)


class LoraLinear4bit(LoraLinear):
    """peft v0.17.1 tuners/lora/bnb.py Linear4bit (one adapter, "default"): layer.py's adapters, its own
    forward."""

    def forward(self, x):
        result = self.base_layer(x)
        result = result.clone()  # "As per Tim Dettmers, for 4bit, we need to defensively clone here."
        lora_A, lora_B = self.lora_A["default"], self.lora_B["default"]
        dropout, scaling = self.lora_dropout["default"], self.scaling["default"]
        requires_conversion = not torch.is_autocast_enabled()
        if requires_conversion:
            expected_dtype = result.dtype
            if x.dtype != lora_A.weight.dtype:
                x = x.to(lora_A.weight.dtype)
        output = lora_B(lora_A(dropout(x))) * scaling
        if requires_conversion:
            output = output.to(expected_dtype)
        result = result + output
        return result


def get_peft_model(model, r, alpha, dropout, targets):
    names = [n for n, m in model.named_modules() if isinstance(m, Linear4bit) and targeted(n, targets, "lm_head")]
    for n in names:
        parent, _, child = n.rpartition(".")
        owner = model.get_submodule(parent)
        setattr(owner, child, LoraLinear4bit(getattr(owner, child), r, alpha, dropout))
    return len(names)


def prepare(model, compute_dtype, r, alpha, dropout, targets, ckpt):
    quantize(model, compute_dtype)
    prepare_model_for_kbit_training(model)
    get_peft_model(model, r, alpha, dropout, targets)
    if ckpt:
        checkpoint_layers(model, [])


def paged_adamw8bit(params):
    return Replica2State(params, 8, True)


# model dtype, bnb_4bit_compute_dtype, r, alpha, dropout, targets, gradient checkpointing
CASES = [("bfloat16", "bfloat16", 8, 16, p, t, c)
         for c in (False, True) for t in ("all-linear", "q_proj,v_proj") for p in (0.0, 0.05)]


def main(argv):
    path = argv[1] if len(argv) > 1 else here("tests", "reference", "qlora_peaks.json")
    with open(here("tests", "hf", "tiny", "llama.json")) as f:
        cfg = json.load(f)
    res = {"_about": "tests/tools/qlora_peak.py: peak live tensor bytes of a steady-state QLoRA training step "
                     "(nf4 double-quantised base, kbit prep, LoRA, paged 8-bit AdamW), PyTorch %s CPU "
                     "(CUDA-corrected), batch %d, seq %d" % (torch.__version__, B, S),
           "config": "tests/hf/tiny/llama.json", "batch": B, "seq": S, "weights": "nf4", "double_quant": True,
           "optim": "paged_adamw8bit", "memest_attention": "auto", "cases": []}
    for dtype, compute, r, alpha, dropout, targets, ckpt in CASES:
        m = measure(cfg, "sdpa", getattr(torch, dtype), paged_adamw8bit,
                    prepare=lambda model: prepare(model, getattr(torch, compute), r, alpha, dropout, targets,
                                                  ckpt))
        m = {"peak_tensors": m["peak_tensors"], "peak_at": m["peak_at"], "setup_bytes": m["setup_bytes"]}
        m.update(dtype=dtype, compute_dtype=compute, r=r, alpha=alpha, dropout=dropout, targets=targets,
                 checkpoint=ckpt)
        res["cases"].append(m)
        print("%-9s ckpt %-5s r%-2d p%-4g %-14s %9d (%s)" % (dtype, ckpt, r, dropout, targets, m["peak_tensors"],
                                                               m["peak_at"]), file=sys.stderr)
    res = stamp(res, "tests/tools/qlora_peak.py", {"torch": torch.__version__,
                "transformers": "v4.48.0 (followed in plain PyTorch, not imported)",
                "peft": "v0.17.1 (followed in plain PyTorch, not imported)",
                "bitsandbytes": "0.49.2 (Linear4bit) and 0.50.2.dev0 (paged AdamW8bit), replicated in plain "
                                "PyTorch, not imported"})
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv)
