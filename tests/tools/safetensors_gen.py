#!/usr/bin/env python3
"""Writes a model folder for one safetensors test case (tests/group_safetensors.cmake):
config.json and the checkpoint's files, with the Python standard library only.

    python3 safetensors_gen.py CASE OUTDIR

The checkpoints are of tests/hf/tiny/llama.json (hidden 64, intermediate 128, 2 layers,
4 heads, 2 key/value heads, vocabulary 128), named as transformers' LlamaForCausalLM
state_dict names them. A safetensors file is the header's length (8 bytes, little
endian), the header (JSON, padded with spaces to a multiple of 8 as the safetensors
library pads it) and the data, here zeros written as a hole (truncate): memest never
reads it. The quantised layouts are the libraries' (AutoGPTQ QuantLinear, bitsandbytes
Params4bit), written from their formulas here, not from memest's code.
"""
import json
import os
import struct
import sys

BITS = {"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "I16": 16, "U16": 16,
        "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "F64": 64, "I64": 64, "U64": 64}

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = os.path.join(HERE, "..", "hf", "tiny", "llama.json")
TINY_GPT2 = os.path.join(HERE, "..", "hf", "tiny_b", "gpt2.json")
TINY_GPT_OSS = os.path.join(HERE, "..", "hf", "tiny", "gpt_oss.json")
PUBLISHED_QWEN3_MOE = os.path.join(HERE, "..", "hf", "published", "qwen3-30b-a3b.json")
# openai/gpt-oss-20b's config.json: the MXFP4 experts, the rest bf16
MXFP4 = {"quant_method": "mxfp4", "modules_to_not_convert": [
    "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def header(tensors, metadata=None):
    """tensors: [(name, dtype, shape)], back to back; returns (header bytes, data size)."""
    h = {}
    if metadata is not None:
        h["__metadata__"] = metadata
    off = 0
    for name, dt, shape in tensors:
        n = numel(shape) * BITS[dt] // 8
        h[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + n]}
        off += n
    js = json.dumps(h, separators=(",", ":")).encode()
    return js + b" " * (-len(js) % 8), off


def write_st(path, tensors, metadata={"format": "pt"}, raw=None, length=None, size=None):
    """A safetensors file; raw replaces the header, length its 8-byte length, size the
    file's size."""
    js, data = header(tensors, metadata)
    if raw is not None:
        js = raw
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js) if length is None else length))
        f.write(js)
        f.truncate(8 + len(js) + data if size is None else size)


def config(**extra):
    with open(TINY) as f:
        cfg = json.load(f)
    cfg.update(extra)
    return cfg


def llama(cfg, dt="BF16", linear=None, prefix="model.", head=True):
    """LlamaForCausalLM's state_dict: linear(name, out, in) gives a linear layer's
    tensors (default: its weight)."""
    H, I, L, V = (cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"],
                  cfg["vocab_size"])
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = H // heads
    linear = linear or (lambda name, o, i: [(name + ".weight", dt, [o, i])])
    t = [(prefix + "embed_tokens.weight", dt, [V, H])]
    for i in range(L):
        p = "%slayers.%d." % (prefix, i)
        t.append((p + "input_layernorm.weight", dt, [H]))
        for name, o, n in (("self_attn.q_proj", heads * hd, H), ("self_attn.k_proj", kv * hd, H),
                           ("self_attn.v_proj", kv * hd, H), ("self_attn.o_proj", H, heads * hd)):
            t += linear(p + name, o, n)
        t.append((p + "post_attention_layernorm.weight", dt, [H]))
        for name, o, n in (("mlp.gate_proj", I, H), ("mlp.up_proj", I, H), ("mlp.down_proj", H, I)):
            t += linear(p + name, o, n)
    t.append((prefix + "norm.weight", dt, [H]))
    if head:
        t.append(("lm_head.weight", dt, [V, H]))
    return t


def gptq(group):
    """AutoGPTQ QuantLinear (bits 4): qweight int32 [in // 32 * 4, out], qzeros int32
    [ceil(in / group), out // 32 * 4], scales float16 [ceil(in / group), out], g_idx
    int32 [in]."""
    def lin(name, o, i):
        g = -(-i // group)
        return [(name + ".qweight", "I32", [i // 8, o]), (name + ".qzeros", "I32", [g, o // 8]),
                (name + ".scales", "F16", [g, o]), (name + ".g_idx", "I32", [i])]
    return lin


def nf4(name, o, i):
    """bitsandbytes Params4bit (nf4, blocksize 64, no double quantisation), as
    Linear4bit._save_to_state_dict writes it: the packed uint8 weight [n // 2, 1], then
    QuantState.as_dict(packed=True): absmax, quant_map and the packed rest."""
    n = o * i
    return [(name + ".weight", "U8", [n // 2, 1]), (name + ".weight.absmax", "F32", [-(-n // 64)]),
            (name + ".weight.quant_map", "F32", [16]),
            (name + ".weight.quant_state.bitsandbytes__nf4", "U8", [103])]


def fp8(name, o, i):
    """FP8 with 128x128 block scales (DeepSeek-V3, fine-grained FP8)."""
    return [(name + ".weight", "F8_E4M3", [o, i]),
            (name + ".weight_scale_inv", "F32", [-(-o // 128), -(-i // 128)])]


def gpt2(cfg):
    """GPT2LMHeadModel's state_dict as the Hub's openai-community/gpt2 stores it: GPT2Model's
    names (no "transformer."), Conv1D weights [in, out], the old attention buffers bias
    [1, 1, n_positions, n_positions] and masked_bias [], the head tied (absent)."""
    E, L, P, V = cfg["n_embd"], cfg["n_layer"], cfg["n_positions"], cfg["vocab_size"]
    t = [("wte.weight", "F32", [V, E]), ("wpe.weight", "F32", [P, E])]
    for i in range(L):
        p = "h.%d." % i
        t += [(p + "ln_1.weight", "F32", [E]), (p + "ln_1.bias", "F32", [E]),
              (p + "attn.bias", "F32", [1, 1, P, P]), (p + "attn.masked_bias", "F32", []),
              (p + "attn.c_attn.weight", "F32", [E, 3 * E]), (p + "attn.c_attn.bias", "F32", [3 * E]),
              (p + "attn.c_proj.weight", "F32", [E, E]), (p + "attn.c_proj.bias", "F32", [E]),
              (p + "ln_2.weight", "F32", [E]), (p + "ln_2.bias", "F32", [E]),
              (p + "mlp.c_fc.weight", "F32", [E, 4 * E]), (p + "mlp.c_fc.bias", "F32", [4 * E]),
              (p + "mlp.c_proj.weight", "F32", [4 * E, E]), (p + "mlp.c_proj.bias", "F32", [E])]
    return t + [("ln_f.weight", "F32", [E]), ("ln_f.bias", "F32", [E])]


def decoder(cfg, bias, layer):
    """A causal LM of the Hub's names in bf16: embed_tokens, per layer input_layernorm, the
    q/k/v/o projections (with biases when bias) and layer(prefix, index)'s tensors, then
    norm and an untied lm_head."""
    H, L, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    heads, kv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    t = [("model.embed_tokens.weight", "BF16", [V, H])]
    for i in range(L):
        p = "model.layers.%d." % i
        t.append((p + "input_layernorm.weight", "BF16", [H]))
        for name, o, n in (("q_proj", heads * hd, H), ("k_proj", kv * hd, H),
                           ("v_proj", kv * hd, H), ("o_proj", H, heads * hd)):
            t.append((p + "self_attn." + name + ".weight", "BF16", [o, n]))
            if bias:
                t.append((p + "self_attn." + name + ".bias", "BF16", [o]))
        t += layer(p, i)
    return t + [("model.norm.weight", "BF16", [H]), ("lm_head.weight", "BF16", [V, H])]


def gpt_oss(cfg, mxfp4=False, experts=None):
    """GptOssForCausalLM's state_dict as the Hub stores it: the experts fused over E,
    GptOssExperts' gate_up_proj [E, H, 2I] (in by out), gate_up_proj_bias [E, 2I],
    down_proj [E, I, H], down_proj_bias [E, H] (unsloth/gpt-oss-20b-BF16); with mxfp4,
    Mxfp4GptOssExperts' as openai/gpt-oss-20b stores them: <proj>_blocks U8
    [E, out, in / 32, 16] (32 e2m1 values in 16 bytes), <proj>_scales U8 [E, out, in / 32]
    (an e8m0 exponent per 32) and the biases in bf16. experts(layer, tensors) may
    change a layer's expert tensors."""
    H, I, E = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_local_experts"]

    def layer(p, i):
        t = [(p + "self_attn.sinks", "BF16", [cfg["num_attention_heads"]]),
             (p + "post_attention_layernorm.weight", "BF16", [H]),
             (p + "mlp.router.weight", "BF16", [E, H]), (p + "mlp.router.bias", "BF16", [E])]
        x = []
        for proj, o, n in (("gate_up_proj", 2 * I, H), ("down_proj", H, I)):
            q = p + "mlp.experts." + proj
            if mxfp4:
                x += [(q + "_blocks", "U8", [E, o, n // 32, 16]), (q + "_scales", "U8", [E, o, n // 32])]
            else:
                x.append((q, "BF16", [E, n, o]))
            x.append((q + "_bias", "BF16", [E, o]))
        return t + (experts(i, x) if experts else x)
    return decoder(cfg, True, layer)


def qwen3_moe(cfg):
    """Qwen3MoeForCausalLM's state_dict (transformers v4.51.0, Qwen/Qwen3-30B-A3B): the
    experts one by one (mlp.experts.<e>.gate_proj.weight ...), the q/k RMSNorms per head."""
    H, I, E, hd = cfg["hidden_size"], cfg["moe_intermediate_size"], cfg["num_experts"], cfg["head_dim"]

    def layer(p, i):
        t = [(p + "self_attn.q_norm.weight", "BF16", [hd]), (p + "self_attn.k_norm.weight", "BF16", [hd]),
             (p + "post_attention_layernorm.weight", "BF16", [H]), (p + "mlp.gate.weight", "BF16", [E, H])]
        for e in range(E):
            q = "%smlp.experts.%d." % (p, e)
            t += [(q + "gate_proj.weight", "BF16", [I, H]), (q + "up_proj.weight", "BF16", [I, H]),
                  (q + "down_proj.weight", "BF16", [H, I])]
        return t
    return decoder(cfg, False, layer)


def write_config(out, cfg):
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)


def replace(t, name, new):
    return [new if x[0] == name else x for x in t]


def case(name, out):
    cfg = config()
    st = os.path.join(out, "model.safetensors")
    t = llama(cfg)
    if name == "good":
        write_st(st, t)
    elif name == "sharded":
        half = len(t) // 2
        files = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
        write_st(os.path.join(out, files[0]), t[:half])
        write_st(os.path.join(out, files[1]), t[half:])
        wm = {x[0]: files[k >= half] for k, x in enumerate(t)}
        total = sum(numel(x[2]) * BITS[x[1]] // 8 for x in t)
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=1)
    elif name == "shards_no_index":
        half = len(t) // 2
        write_st(os.path.join(out, "model-00001-of-00003.safetensors"), t[:half])
        write_st(os.path.join(out, "model-00003-of-00003.safetensors"), t[half:])
    elif name == "index_wrong_shard":
        files = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
        write_st(os.path.join(out, files[0]), t[:3])
        write_st(os.path.join(out, files[1]), t[3:])
        wm = {x[0]: files[k >= 2] for k, x in enumerate(t)}   # the third is in the first
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"weight_map": wm}, f)
    elif name == "shape":
        up = "model.layers.1.mlp.up_proj.weight"
        write_st(st, replace(t, up, (up, "BF16", [64, 128])))
    elif name == "missing":
        write_st(st, [x for x in t if x[0] != "model.layers.1.mlp.down_proj.weight"])
    elif name == "extra":
        write_st(st, t + [("model.layers.0.mlp.extra_proj.weight", "BF16", [64, 64])])
    elif name == "inv_freq":
        write_st(st, t + [("model.layers.%d.self_attn.rotary_emb.inv_freq" % i, "F32", [8])
                          for i in range(2)])
    elif name == "base_model":
        cfg = config(tie_word_embeddings=True)
        write_st(st, llama(cfg, prefix="", head=False))
    elif name == "gpt2":
        with open(TINY_GPT2) as f:
            cfg = json.load(f)
        write_st(st, gpt2(cfg))
    elif name == "dtype_note":
        cfg = config(torch_dtype="float32")
        write_st(st, t)
    elif name == "short":
        with open(st, "wb") as f:
            f.write(b"\x10\x00\x00")
    elif name == "past_end":
        write_st(st, t, length=1 << 20)
    elif name == "over_limit":
        write_st(st, t, length=100000001, size=64)
    elif name == "bad_json":
        js, _ = header(t)
        write_st(st, t, raw=js[: len(js) // 2] + b" " * (len(js) - len(js) // 2))
    elif name == "truncated_data":
        js, data = header(t, {"format": "pt"})
        write_st(st, t, size=8 + len(js) + data - 100)
    elif name == "bad_offsets":
        js, data = header(t, {"format": "pt"})
        h = json.loads(js)
        h["model.norm.weight"]["data_offsets"][1] -= 2
        raw = json.dumps(h).encode()
        write_st(st, t, raw=raw + b" " * (-len(raw) % 8))
    elif name == "overflow":
        raw = json.dumps({"w": {"dtype": "F32", "shape": [1 << 40, 1 << 40],
                                "data_offsets": [0, 0]}}).encode()
        write_st(st, [], raw=raw)
    elif name == "gptq":
        cfg = config(torch_dtype="float16",
                     quantization_config={"quant_method": "gptq", "bits": 4, "group_size": 32,
                                          "desc_act": False, "sym": True})
        write_st(st, llama(cfg, dt="F16", linear=gptq(32)))
    elif name == "gptq_group":   # quantised with group 64, the config says 32
        cfg = config(torch_dtype="float16",
                     quantization_config={"quant_method": "gptq", "bits": 4, "group_size": 32})
        write_st(st, llama(cfg, dt="F16", linear=gptq(64)))
    elif name == "gptq_no_config":
        write_st(st, llama(cfg, dt="F16", linear=gptq(32)))
    elif name == "nf4":
        cfg = config(torch_dtype="bfloat16",
                     quantization_config={"quant_method": "bitsandbytes", "load_in_4bit": True,
                                          "bnb_4bit_quant_type": "nf4",
                                          "bnb_4bit_compute_dtype": "bfloat16"})
        write_st(st, llama(cfg, linear=nf4))
    elif name == "fp8":
        write_st(st, llama(cfg, linear=fp8))
    elif name == "fp8_config":
        cfg = config(torch_dtype="bfloat16",
                     quantization_config={"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
                                          "weight_block_size": [128, 128]})
        write_st(st, llama(cfg, linear=fp8))
    elif name == "mxfp4":
        mx = lambda n, o, i: [(n + ".weight_blocks", "U8", [o, i // 32, 16]),
                              (n + ".weight_scales", "U8", [o, i // 32])]
        write_st(st, llama(cfg, linear=mx))
    elif name.startswith("gpt_oss"):
        with open(TINY_GPT_OSS) as f:
            cfg = json.load(f)
        mx = "mxfp4" in name
        if mx and name != "gpt_oss_mxfp4_no_config":
            cfg["quantization_config"] = MXFP4
        change = None
        if name == "gpt_oss_mxfp4_wrong_e":   # layer 1's down_proj_blocks of 3 experts, not 4
            change = lambda i, x: [(n, d, [3] + s[1:]) if i == 1 and n.endswith("down_proj_blocks")
                                   else (n, d, s) for n, d, s in x]
        elif name == "gpt_oss_bf16_out_in":   # down_proj [E, H, I]: not GptOssExperts' [E, I, H]
            change = lambda i, x: [(n, d, [s[0], s[2], s[1]]) if n.endswith("down_proj")
                                   else (n, d, s) for n, d, s in x]
        elif name == "gpt_oss_mxfp4_dtype":   # the scales in bf16
            change = lambda i, x: [(n, "BF16" if n.endswith("_scales") else d, s) for n, d, s in x]
        write_st(st, gpt_oss(cfg, mxfp4=mx, experts=change))
    elif name == "qwen3_moe":   # Qwen3-30B-A3B's config, shrunk
        with open(PUBLISHED_QWEN3_MOE) as f:
            cfg = json.load(f)
        cfg.update(hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_experts=4,
                   num_experts_per_tok=2, vocab_size=128, max_position_embeddings=64, max_window_layers=2)
        write_st(st, qwen3_moe(cfg))
    else:
        sys.exit("safetensors_gen.py: unknown case " + name)
    write_config(out, cfg)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    os.makedirs(sys.argv[2], exist_ok=True)
    for f in os.listdir(sys.argv[2]):
        os.remove(os.path.join(sys.argv[2], f))
    case(sys.argv[1], sys.argv[2])
