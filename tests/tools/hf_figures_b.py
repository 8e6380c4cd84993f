#!/usr/bin/python3
"""Reference figures for the gpt2, bert, opt, gpt_neox and t5 templates (models/arch/), from PyTorch 2.6.

    ../shared/tools/torch2-chroot python3 tests/tools/hf_figures_b.py tests/reference/hf_figures_b.json

(run from the repository root; ~1 minute on 2 cores). It writes:

* "params": per shipped example config (models/hf/<name>.json, the hub's config.json), the model that
  config names built on torch.device("meta") from tests/tools/hf_models_b.py (no memory is allocated):
  parameters (tied weights once, as model.parameters() counts them), buffers (elements; non-persistent
  ones included) and the published figure where there is one, which must agree.
* "activations": per tiny config (tests/hf/tiny_b/<case>.json, committed: the ctest runs memest on the same
  files), the bytes autograd saves in one training-mode forward (model.train(), input_ids -> logits, no
  loss), float32 and bfloat16 (model.to(dtype): parameters and activations in that dtype), batch 2:
  saved_tensors_hooks, storages de-duplicated by data_ptr, parameter and buffer storages excluded, model
  inputs included when saved (embeddings save their int64 ids). saved_activation_bytes_cuda_corrected
  applies tests/tools/torch_figures.py's CORRECTIONS as they stand in PyTorch 2.6:
    - dropout_mask_bool: the CPU kernel (ATen Dropout.cpp _dropout_impl) saves x's dtype mask
      bernoulli(1-p)/(1-p); CUDA runs native_dropout (is_fused_kernel_acceptable), whose
      NativeDropoutBackward0 saves a bool mask: counted numel * 1 byte. The masks are identified exactly
      (hf_models_b.dropout records the MulBackward0's _saved_other storage).
    - wrapped_scalar_cpu: x * python_number saves the number as a 0-d float64/int64 wrapped tensor that
      stays on the CPU when x is on CUDA: excluded. (A 0-d tensor made with torch.full(..., device=x.device)
      is a real device tensor and counts: GPT-2's attention scale.)
    - layernorm_stats_fp32: NativeLayerNormBackward0 saves the mean and rstd [..., 1]: float32 on CUDA
      (layer_norm_cuda: the accumulate type) for a bfloat16 input, the input's dtype on the CPU
      (layer_norm_cpu): counted numel * 4 bytes.
    - sdpa_efficient_output: CUDA runs float32 SDPA with the memory-efficient kernel, whose output is a
      [B, L, H, D] buffer returned transposed (PyTorch 2.6 aten/src/ATen/native/transformers/cuda/
      attention.cu), so the caller's attn_output.transpose(1, 2).contiguous() copies nothing and the next
      linear saves the storage SDPA saved; the CPU flash kernel's output is in q's layout, so where q is
      contiguous (GPT-NeoX's sdpa_attention_forward calls .contiguous()) that copy is made and saved: it
      counts 0. Its log_sumexp is [B, H, ceil(L/32)*32] on CUDA: the tiny cases run L = 32, where the
      CPU's [B, H, L] is the same size.
  SDPA cases: PyTorch 2.6's CPU flash kernel (_scaled_dot_product_flash_attention_for_cpu) saves query,
  key, value, output and a float32 logsumexp [B, H, L], as CUDA's flash kernel does; it takes no dropout
  (dropout_p > 0 falls back to the math path on CPU), so the SDPA tiny configs set the attention dropout to
  0 (CUDA's flash kernel with dropout saves the same tensors plus the philox seed and offset).
"""
import gc
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models_b as hm  # noqa: E402
from provenance import stamp  # noqa: E402

torch.set_num_threads(2)

# model_type -> (example config, the class built, published parameter count or None, where published)
EXAMPLES = [
    ("gpt2", "models/hf/gpt2.json", "GPT2LMHeadModel (lm_head tied to wte)", 124439808,
     "Hugging Face openai-community/gpt2; shared/reference/README.md"),
    ("bert", "models/hf/bert-base-uncased.json", "BertForMaskedLM (decoder tied to word_embeddings)", 109514298,
     "109,482,240 published for BertModel with pooler (Hugging Face bert-base-uncased; shared/reference/"
     "README.md) - 590,592 (pooler 768*768+768) + 622,650 (cls.predictions: transform dense 768*768+768, "
     "LayerNorm 2*768, bias 30522; the decoder weight is word_embeddings')"),
    ("opt", "models/hf/opt-125m.json", "OPTForCausalLM (lm_head tied to embed_tokens)", 125239296,
     "facebook/opt-125m (OPT paper, 125M)"),
    ("gpt_neox", "models/hf/pythia-160m.json", "GPTNeoXForCausalLM (embed_out untied)", 162322944,
     "EleutherAI/pythia-160m model card (total params)"),
    ("t5", "models/hf/t5-small.json", "T5ForConditionalGeneration (lm_head tied to shared)", 60506624,
     "google-t5/t5-small"),
    ("t5", "models/hf/flan-t5-base.json", "T5ForConditionalGeneration (lm_head untied, gated-gelu)", 247577856,
     "google/flan-t5-base"),
]

# the tiny cases: tests/hf/tiny_b/<file>.json, attention implementation, batch, sequence lengths
CASES = [
    ("gpt2", "gpt2.json", "eager"), ("gpt2", "gpt2_sdpa.json", "sdpa"),
    ("bert", "bert.json", "eager"), ("bert", "bert_sdpa.json", "sdpa"),
    ("opt", "opt.json", "eager"), ("opt", "opt_sdpa.json", "sdpa"),
    ("gpt_neox", "gpt_neox.json", "eager"), ("gpt_neox", "gpt_neox_sdpa.json", "sdpa"),
    ("gpt_neox", "gpt_neox_sequential.json", "eager"),
    ("t5", "t5.json", "eager"), ("t5", "t5_gated.json", "eager"),
]
BATCH = 2
SEQ = 32
DEC_SEQ = 12


def sptr(t):
    return t.untyped_storage().data_ptr()


def load(path):
    with open(path) as f:
        return json.load(f)


def count_params(model):
    return {"params": sum(p.numel() for p in model.parameters()),
            "param_tensors": len(list(model.parameters())),
            "buffers": sum(b.numel() for b in model.buffers()),
            "buffers_persistent": sum(b.numel() for n, b in model.named_buffers() if n in model.state_dict())}


def measure(model, inputs):
    model.train()
    excluded = {sptr(p) for p in model.parameters()} | {sptr(b) for b in model.buffers()}
    packs = []

    def pack(t):
        packs.append(t)
        return t

    hm.DROPOUT_MASKS.clear()
    hm.SDPA_OUTPUT_COPIES.clear()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(*inputs)
    # the layer norms' saved mean and rstd: walk the autograd graph
    ln_stats = set()
    nodes, todo = {}, [out.grad_fn]
    while todo:
        n = todo.pop()
        if n is None or id(n) in nodes:
            continue
        nodes[id(n)] = n
        if type(n).__name__ == "NativeLayerNormBackward0":
            for a in ("_saved_result1", "_saved_result2"):
                ln_stats.add(sptr(getattr(n, a)))
        todo.extend(nf for nf, _ in n.next_functions)
    seen = {}
    for t in packs:
        p = sptr(t)
        if p in excluded or p in seen:
            continue
        seen[p] = t
    raw = cuda = 0
    masks = wrapped = ln = copies = 0
    by_dtype = {}
    for p, t in seen.items():
        b = t.untyped_storage().nbytes()
        raw += b
        c = b
        if p in hm.DROPOUT_MASKS:
            n = hm.DROPOUT_MASKS[p]
            assert b == n * t.element_size(), (b, n)
            c = n
            masks += 1
        elif t.dim() == 0 and t.dtype in (torch.float64, torch.int64):
            c = 0
            wrapped += 1
        elif p in ln_stats:
            c = t.numel() * 4
            ln += 1
        elif p in hm.SDPA_OUTPUT_COPIES:
            c = 0
            copies += 1
        cuda += c
        k = str(t.dtype).replace("torch.", "")
        by_dtype[k] = by_dtype.get(k, 0) + c
    assert masks == len(hm.DROPOUT_MASKS), (masks, len(hm.DROPOUT_MASKS))
    res = {"saved_activation_bytes": raw, "saved_activation_bytes_cuda_corrected": cuda,
           "saved_storages": len(seen), "dropout_masks": masks, "wrapped_scalars": wrapped,
           "layernorm_stats": ln, "sdpa_output_copies": copies,
           "cuda_corrected_bytes_by_dtype": by_dtype, "logits_shape": list(out.shape)}
    del packs, seen, out, nodes
    return res


def main(argv):
    out_path = argv[1] if len(argv) > 1 else None
    result = {
        "generator": "tests/tools/hf_figures_b.py (models: tests/tools/hf_models_b.py, after transformers v4.48.0)",
        "torch_version": torch.__version__,
        "params": {}, "activations": {},
    }
    for arch, path, cls, published, source in EXAMPLES:
        cfg = load(path)
        assert cfg["model_type"] == arch, (path, cfg["model_type"])
        with torch.device("meta"):
            model = hm.BUILDERS[arch](cfg)
        info = count_params(model)
        info.update({"model_type": arch, "class": cls, "published": published, "published_source": source})
        if published is not None and info["params"] != published:
            print("DISAGREEMENT %s: meta %d, published %d" % (path, info["params"], published), file=sys.stderr)
            info["disagrees_with_published"] = True
        if arch == "bert":  # the published figure's model: BertModel with its pooler
            with torch.device("meta"):
                info["bert_model_with_pooler"] = count_params(hm.BertModel(hm.with_defaults(hm.BERT_DEFAULTS, cfg)))["params"]
            assert info["bert_model_with_pooler"] == 109482240, info["bert_model_with_pooler"]
        result["params"][os.path.basename(path)] = info
        print("%-28s %-14s params %13d  buffers %10d" % (path, arch, info["params"], info["buffers"]))
        del model
    for arch, fname, impl in CASES:
        cfg = load(os.path.join("tests/hf/tiny_b", fname))
        assert cfg["model_type"] == arch
        for dtype in (torch.float32, torch.bfloat16):
            c = dict(cfg)
            c["_attn_implementation"] = impl
            torch.manual_seed(0)
            model = hm.BUILDERS[arch](c).to(dtype)
            torch.manual_seed(0)
            ids = torch.randint(0, cfg["vocab_size"], (BATCH, SEQ))
            inputs = [ids]
            if arch == "t5":
                inputs.append(torch.randint(0, cfg["vocab_size"], (BATCH, DEC_SEQ)))
            r = measure(model, inputs)
            r.update({"model_type": arch, "config": "tests/hf/tiny_b/" + fname, "attn_implementation": impl,
                      "dtype": str(dtype).replace("torch.", ""), "batch": BATCH, "seq_len": SEQ},
                     **count_params(model))
            if arch == "t5":
                r["decoder_seq_len"] = DEC_SEQ
            key = "%s_%s" % (fname[:-5], r["dtype"])
            result["activations"][key] = r
            print("%-28s %-6s %-9s saved %10d  cuda-corrected %10d  masks %2d" % (
                key, impl, r["dtype"], r["saved_activation_bytes"], r["saved_activation_bytes_cuda_corrected"],
                r["dropout_masks"]))
            del model
            gc.collect()
    result = stamp(result, "tests/tools/hf_figures_b.py", {"torch": torch.__version__, "transformers": "v4.48.0 (followed in plain PyTorch, not imported)"})
    text = json.dumps(result, indent=2, sort_keys=True) + "\n"
    if out_path:
        with open(out_path, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv)
