#!/usr/bin/python3
"""Reference figures for the Hugging Face decoder templates (models/arch/*.json), from real PyTorch 2.6.

    ../shared/tools/torch2-chroot python3 tests/tools/hf_figures.py tests/reference/hf_figures.json

(run from the checkout root; CPU only, about a minute). Two kinds of figures:

* "configs": for each shipped example config models/hf/NAME.json, the model of tests/tools/hf_models.py
  (transformers v4.48.0, op by op) built on torch.device("meta") (no memory): params_total (shared
  parameters counted once: the tied lm_head), param_tensors, buffers (inv_freq, non-persistent), and the
  published figure where the model card / paper gives one (checked equal here: an assertion).
* "tiny": small configs (tests/hf/tiny/*.json, same model_type and features as the real ones: GQA, windows,
  soft-capping, tied embeddings, fused qkv) measured in train() mode, one forward of input_ids [B, S]
  through logits.float().view(-1, V) (where ForCausalLMLoss starts; the loss itself is not included), in
  float32 and bfloat16 (built under torch.set_default_dtype as from_pretrained(torch_dtype=...) does, so the
  inv_freq buffer stays float32), attention "eager" and "sdpa". Saved activations as
  tests/tools/torch_figures.py measures them: torch.autograd.graph.saved_tensors_hooks, storages
  de-duplicated by data_ptr, parameter and buffer storages excluded, each storage counted whole.
  Corrections to CUDA (saved_activation_bytes_cuda_corrected):
    - dropout masks are bool on CUDA (native_dropout) - none here: every tiny config has dropout 0, and
      F.dropout with p = 0 returns its input;
    - 0-d CPU tensors saved by a Mul/DivBackward0 (Python-scalar "wrapped numbers": `* scaling`, the
      soft-capping's `/ cap` and `* cap`; gemma's normalizer = torch.tensor(sqrt(H), dtype), created on the
      CPU even when the model is on CUDA) use no GPU memory: counted as 0;
    - SDPA calls that CUDA runs with the memory-efficient kernel (float32, or a mask: flash takes neither;
      PyTorch 2.6 aten/src/ATen/native/transformers/cuda/attention.cu): its log_sumexp is float32
      [B, H, ceil(L/32)*32] (kAlignLSE = 32) where the CPU kernel's is [B, H, L], and its output is a
      [B, L, H, D] buffer returned transposed, so transformers' attn_output.transpose(1, 2).contiguous()
      copies nothing and o_proj saves the output SDPA already saved: the CPU copy counts 0. (Flash's output
      is empty_like(q) in q's [B, H, L, D] layout, as on the CPU: that copy stays.)
  Figures per model (total), per decoder layer (model.layers.N, by the module active when a storage was
  first saved) and for the rest (embedding, final norm, lm_head), plus by grad_fn.
  SDPA on the CPU: PyTorch 2.6 runs _scaled_dot_product_flash_attention_for_cpu, which saves q, k, v, the
  output and a float32 logsumexp [B, H, L] (and attn_mask when one is given), as CUDA's flash kernel saves
  q, k, v, out, logsumexp (+ rng state); with an attn_mask (mistral/phi3 windows shorter than the sequence,
  gemma2 always) CUDA would use the memory-efficient kernel instead (see tests/hf/reference.md).
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models  # noqa: E402
from hf_models import BUILDERS  # noqa: E402
from provenance import stamp  # noqa: E402

torch.set_num_threads(2)

# Published parameter counts (model cards / papers; the figure transformers' num_parameters() prints).
PUBLISHED = {
    "llama-3-8b": 8030261248,
    "llama-3.1-8b": 8030261248,
    "llama-3.1-405b": 405853388800,
    "llama-2-7b": 6738415616,
    "llama-2-70b": 68976648192,
    "mistral-7b-v0.1": 7241732096,
    "qwen2-7b": 7615616512,
    "qwen2-0.5b": 494032768,
    "phi-3-mini-4k": 3821079552,
    "gemma-2b": 2506172416,
    "gemma-2-9b": 9241705984,
    "qwen3-8b": 8190735360,             # Qwen/Qwen3-8B model.safetensors.index.json total (untied head)
    # Qwen/Qwen3-0.6B ("0.6B", tied): its safetensors total, 751,632,384, counts lm_head.weight, stored
    # beside embed_tokens.weight, a second time (+ 151936*1024); tied, the model has this many
    "qwen3-0.6b": 596049920,
    "olmo-2-1124-7b": 7298617344,       # allenai/OLMo-2-1124-7B (untied head)
    "smollm3-3b": 3075098624,           # HuggingFaceTB/SmolLM3-3B model.safetensors.index.json total (tied)
    "granite-3.1-8b-instruct": 8170848256,  # ibm-granite/granite-3.1-8b-instruct "8B": by the arithmetic below
}


def decoder_params(V, H, L, nh, nkv, hd, I, tied, per_layer_extra=0):
    """embed_tokens + L * (q, k, v, o_proj + gate, up, down_proj + 2 norms + per_layer_extra) + norm (+ lm_head)."""
    layer = H * nh * hd + 2 * H * nkv * hd + nh * hd * H + 3 * H * I + 2 * H + per_layer_extra
    return V * H * (1 if tied else 2) + L * layer + H


# The published figures by hand from the configs (models/hf/NAME.json): asserted equal below.
PUBLISHED_ARITHMETIC = {
    # 2*151936*4096 + 36*(4096*4096 + 2*4096*1024 + 4096*4096 + 3*4096*12288 + 2*4096 + 2*128) + 4096
    "qwen3-8b": decoder_params(151936, 4096, 36, 32, 8, 128, 12288, False, per_layer_extra=2 * 128),
    # 151936*1024 + 28*(1024*2048 + 2*1024*1024 + 2048*1024 + 3*1024*3072 + 2*1024 + 2*128) + 1024
    "qwen3-0.6b": decoder_params(151936, 1024, 28, 16, 8, 128, 3072, True, per_layer_extra=2 * 128),
    # 2*100352*4096 + 32*(4*4096*4096 + 3*4096*11008 + 2*4096 + (4096 + 4096)) + 4096 (q_norm/k_norm full width)
    "olmo-2-1124-7b": decoder_params(100352, 4096, 32, 32, 32, 128, 11008, False, per_layer_extra=2 * 4096),
    # 128256*2048 + 36*(2048*2048 + 2*2048*512 + 2048*2048 + 3*2048*11008 + 2*2048) + 2048
    "smollm3-3b": decoder_params(128256, 2048, 36, 16, 4, 128, 11008, True),
    # 49155*4096 + 40*(4096*4096 + 2*4096*1024 + 4096*4096 + 3*4096*12800 + 2*4096) + 4096
    "granite-3.1-8b-instruct": decoder_params(49155, 4096, 40, 32, 8, 128, 12800, True),
}
for _name, _n in PUBLISHED_ARITHMETIC.items():
    assert _n == PUBLISHED[_name], (_name, _n, PUBLISHED[_name])

TINY_BATCH, TINY_SEQ = 2, 16


def here(*p):
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", *p)


def load(path):
    with open(path) as f:
        return json.load(f)


def static_info(model):
    params = list(model.parameters())
    bufs = list(model.named_buffers())
    persistent = set(model.state_dict().keys())
    return {
        "params_total": sum(p.numel() for p in params),
        "param_tensors": len(params),
        "buffers_count": sum(b.numel() for _, b in bufs),
        "buffers_bytes": sum(b.numel() * b.element_size() for _, b in bufs),
        "buffer_tensors": len(bufs),
        "buffer_tensors_persistent": sum(1 for n, _ in bufs if n in persistent),
    }


def measure(model, input_ids):
    model.train()
    pb = {p.untyped_storage().data_ptr() for p in model.parameters()}
    pb |= {b.untyped_storage().data_ptr() for b in model.buffers()}
    names = {m: n for n, m in model.named_modules()}
    stack = []
    handles = []
    def pre(m, a):
        stack.append(names[m])

    def post(m, a, o):  # returns None: a forward hook's return value would replace the output
        stack.pop()

    for m in model.modules():
        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post))
    packs = []

    def pack(t):
        packs.append((t, stack[-1] if stack else ""))
        return t

    # SDPA calls CUDA would run with the memory-efficient kernel: float32, or a mask (flash takes neither)
    efficient = []

    def sdpa_hook(query, mask, out, out_copy):
        if query.dtype == torch.float32 or mask is not None:
            efficient.append((out, out_copy))

    hf_models.SDPA_HOOKS.append(sdpa_hook)
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = model(input_ids)
    finally:
        hf_models.SDPA_HOOKS.remove(sdpa_hook)
    for h in handles:
        h.remove()
    eff_out = {o.untyped_storage().data_ptr(): o for o, _ in efficient}
    # (a copy only where it is one: an output already in [B, L, H, D] memory, the CPU kernel's for a q passed
    # as a transposed view (SiglipSdpaAttention), is the output itself, which the kernel saves)
    eff_copy = {c.untyped_storage().data_ptr() for o, c in efficient
                if c.untyped_storage().data_ptr() != o.untyped_storage().data_ptr()}

    # grad_fn names of the saved tensors (by identity of the storage and shape, first node that saved it)
    saver = {}
    saver_node = {}
    seen_nodes = {}  # id -> node: keeps each Python wrapper alive, so that ids are not reused
    stackn = [out.grad_fn]
    while stackn:
        n = stackn.pop()
        if n is None or id(n) in seen_nodes:
            continue
        seen_nodes[id(n)] = n
        for a in dir(n):
            if a.startswith("_saved_"):
                try:
                    v = getattr(n, a)
                except Exception:
                    continue
                if isinstance(v, torch.Tensor):
                    saver.setdefault(v.untyped_storage().data_ptr(), (type(n).__name__, a))
                    saver_node.setdefault(v.untyped_storage().data_ptr(), n)
        stackn.extend(nf for nf, _ in n.next_functions)

    seen = {}
    for t, ctx in packs:
        ptr = t.untyped_storage().data_ptr()
        if ptr in pb or ptr in seen:
            continue
        g, a = saver.get(ptr, ("(unnamed)", "-"))
        cpu_scalar = t.dim() == 0 and g in ("MulBackward0", "DivBackward0") and a == "_saved_other"
        nbytes = t.untyped_storage().nbytes()
        cuda = 0 if cpu_scalar else nbytes
        if ptr in eff_copy and ptr not in eff_out:
            # efficient kernel: out is [B, L, H, D] memory, its transpose(1, 2) contiguous. (The CPU kernel's
            # output is such memory too when q is a transposed view of [B, L, H, D]: then the "copy" is out
            # itself, one storage, which counts.)
            cuda = 0
        if g == "ScaledDotProductFlashAttentionForCpuBackward0" and a == "_saved_logsumexp":
            # which SDPA call: the one whose output the same node saved
            o = getattr(saver_node[ptr], "_saved_output")
            if o.untyped_storage().data_ptr() in eff_out:
                B, H, L = t.shape  # efficient: log_sumexp [B, H, ceil(L / 32) * 32]
                cuda = B * H * (-(-L // 32) * 32) * t.element_size()
        layer = "other"
        parts = ctx.split(".")
        if len(parts) >= 3 and parts[0] == "model" and parts[1] == "layers":
            layer = parts[2]
        seen[ptr] = dict(bytes=nbytes, cuda=cuda, grad_fn=g, attr=a, layer=layer,
                         module=ctx, dtype=str(t.dtype).replace("torch.", ""), shape=list(t.shape))
    res = {
        "output_shape": list(out.shape),
        "saved_activation_bytes": sum(r["bytes"] for r in seen.values()),
        "saved_activation_bytes_cuda_corrected": sum(r["cuda"] for r in seen.values()),
        "saved_storages": len(seen),
        "per_layer_cuda_corrected": {},
        "by_grad_fn": {},
        "storages": [],
    }
    for r in seen.values():
        res["per_layer_cuda_corrected"][r["layer"]] = res["per_layer_cuda_corrected"].get(r["layer"], 0) + r["cuda"]
        k = "%s.%s" % (r["grad_fn"], r["attr"])
        d = res["by_grad_fn"].setdefault(k, {"storages": 0, "bytes": 0, "bytes_cuda_corrected": 0})
        d["storages"] += 1
        d["bytes"] += r["bytes"]
        d["bytes_cuda_corrected"] += r["cuda"]
        res["storages"].append("%s %s %s %s %s %d" % (r["module"] or "-", k, r["dtype"], r["shape"], r["layer"],
                                                      r["cuda"]))
    return res


def config_figures():
    out = {}
    d = here("models", "hf")
    for fn in sorted(os.listdir(d)):
        if not fn.endswith(".json"):
            continue
        name = fn[:-5]
        cfg = load(os.path.join(d, fn))
        if cfg["model_type"] not in BUILDERS:  # another generator's (hf_figures_moe.py, ...)
            continue
        with torch.device("meta"):
            model = BUILDERS[cfg["model_type"]](cfg)
        info = static_info(model)
        info["model_type"] = cfg["model_type"]
        if name in PUBLISHED:
            info["published_params"] = PUBLISHED[name]
            assert info["params_total"] == PUBLISHED[name], (name, info["params_total"], PUBLISHED[name])
        out[name] = info
    return out


def tiny_entry(fn, build, post=None, attns=("eager", "sdpa"), seq=TINY_SEQ, inputs=None, **extra):
    """The "tiny" entry of tests/hf/tiny/FN: the model build(cfg, attn) made under each dtype (as
    from_pretrained(torch_dtype=...) makes it) for each attention of attns ("eager" and "sdpa"), measured on
    the same input_ids [TINY_BATCH, seq] (random, or inputs(cfg, model, dtype, seq)'s, which may also give
    the model inputs of its own); post(model, result), when given, returns the run's figures from
    measure()'s."""
    cfg = load(here("tests", "hf", "tiny", fn))
    entry = {"config": "tests/hf/tiny/" + fn, "batch": TINY_BATCH, "seq_len": seq, "runs": {}, **extra}
    for dtype in (torch.float32, torch.bfloat16):
        for attn in attns:
            torch.manual_seed(0)
            old = torch.get_default_dtype()
            torch.set_default_dtype(dtype)
            try:
                model = build(cfg, attn)
            finally:
                torch.set_default_dtype(old)
            if "params_total" not in entry:
                entry.update(static_info(model))
            torch.manual_seed(0)
            if inputs is None:
                ids = torch.randint(0, cfg.get("text_config", cfg)["vocab_size"], (TINY_BATCH, seq))
            else:
                ids = inputs(cfg, model, dtype, seq)
            r = measure(model, ids)
            entry["runs"]["%s/%s" % (str(dtype).replace("torch.", ""), attn)] = post(model, r) if post else r
    return entry


def write_json(argv, result):
    """The reference `result` as JSON (indent 1, sorted keys) to argv[1], or to stdout without one."""
    text = json.dumps(result, indent=1, sort_keys=True) + "\n"
    if len(argv) > 1:
        with open(argv[1], "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


def published_configs(builders, names, published, arithmetic, folder=("models", "hf")):
    """The "configs" entries of a family's generator (hf_figures_cohere.py): FOLDER/NAME.json (models/hf/
    unless given) built on torch.device("meta") for each NAME, its static_info and published figure, asserted
    equal to the model's count and to the arithmetic written out by hand."""
    out = {}
    for name in names:
        cfg = load(here(*folder, name + ".json"))
        with torch.device("meta"):
            model = builders[cfg["model_type"]](cfg)
        info = static_info(model)
        info["model_type"] = cfg["model_type"]
        info["published_params"] = published[name]
        assert arithmetic[name] == published[name], (name, arithmetic[name])
        assert info["params_total"] == published[name], (name, info["params_total"], published[name])
        out[name] = info
    return out


def write_figures(argv, generator, follows, configs, tiny):
    """A family generator's reference (configs and tiny figures, stamped) to argv[1] (or stdout), and a
    summary to stderr."""
    result = {"generator": generator, "follows": "transformers: " + follows, "torch_version": torch.__version__,
              "device": "cpu", "configs": configs, "tiny": tiny}
    result = stamp(result, generator,
                   {"torch": torch.__version__, "transformers": follows + " (followed in plain PyTorch, not imported)"})
    write_json(argv, result)
    for name, e in configs.items():
        sys.stderr.write("%-26s %14d params  published %s  buffers %d\n" % (
            name, e["params_total"], e.get("published_params"), e["buffers_count"]))
    for name, e in tiny.items():
        for k, r in e["runs"].items():
            sys.stderr.write("%-18s %-16s %10d saved (cuda %d)\n" % (name, k, r["saved_activation_bytes"],
                                                                     r["saved_activation_bytes_cuda_corrected"]))


def tiny_figures():
    out = {}
    d = here("tests", "hf", "tiny")
    for fn in sorted(os.listdir(d)):
        if not fn.endswith(".json"):
            continue
        cfg = load(os.path.join(d, fn))
        if cfg["model_type"] not in BUILDERS:  # another generator's
            continue
        out[fn[:-5]] = tiny_entry(fn, BUILDERS[cfg["model_type"]])
    return out


def meta_entry(name, cfg, build, published, arithmetic):
    """A "configs" entry: the model build(cfg) on torch.device("meta"), its published parameter count checked
    equal to the arithmetic written out by hand and to the count of the meta-built model (assertions)."""
    with torch.device("meta"):
        model = build(cfg)
    info = static_info(model)
    info["model_type"] = cfg["model_type"]
    info["published_params"] = published
    assert arithmetic == published, (name, arithmetic, published)
    assert info["params_total"] == published, (name, info["params_total"], published)
    return info


def main(argv):
    result = {
        "generator": "tests/tools/hf_figures.py",
        "follows": "transformers v4.48.0, and main for qwen3, olmo2, smollm3, granite (tests/tools/hf_models.py)",
        "torch_version": torch.__version__,
        "device": "cpu",
        "configs": config_figures(),
        "tiny": tiny_figures(),
    }
    result = stamp(result, "tests/tools/hf_figures.py", {"torch": torch.__version__, "transformers": "v4.48.0; main for qwen3, olmo2, smollm3, granite (followed in plain PyTorch, not imported)"})
    write_json(argv, result)
    for name, e in result["configs"].items():
        sys.stderr.write("%-16s %14d params  published %s\n" % (name, e["params_total"], e.get("published_params")))
    for name, e in result["tiny"].items():
        for k, r in e["runs"].items():
            sys.stderr.write("%-16s %-16s %10d saved (cuda %d)\n" % (name, k, r["saved_activation_bytes"],
                                                                     r["saved_activation_bytes_cuda_corrected"]))


if __name__ == "__main__":
    main(sys.argv)
