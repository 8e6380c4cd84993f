#!/usr/bin/python3
"""Peak live tensor bytes of transformers' generate() on the tiny Llama config, measured in real PyTorch
2.6 (CPU): the ground truth for `memest --generate`'s prefill and decode peaks (tensor_bytes), checked by
tests/unit/test_generate.c against tests/reference/generate_peaks.json.

    ../shared/tools/torch2-chroot python3 tests/tools/generate_peak.py [OUT.json]

(run from the checkout root; CPU only, a second.)

The model is tests/tools/hf_models.py's LlamaForCausalLM (transformers v4.48.0 op by op), SDPA attention,
bfloat16, with what generate() adds, following transformers v4.48.0:
  * cache_utils.py DynamicCache.update: the first call appends key_states / value_states themselves, later
    calls `torch.cat([self.key_cache[i], key_states], dim=-2)` (the old tensor goes when rebound); no mask
    (CUDA would run flash: is_causal in the prefill, q_len 1 in decode);
  * StaticCache (generate(cache_implementation="static")): zeros [B, Hkv, C + N, D] per layer before the
    prefill, index_copy_ in update(); the model's 4-d mask over the whole cache
    (_prepare_4d_causal_attention_mask_with_cache_position), so CUDA runs the memory-efficient kernel;
  * models/llama/modeling_llama.py LlamaForCausalLM.forward: `self.lm_head(hidden_states[:, -1:, :])`
    (logits_to_keep = 1, no float());
  * generation/utils.py _sample (greedy): `next_token_logits = outputs.logits.clone()[:, -1, :].float()`,
    argmax, `input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)`, `del outputs`.
Measured (hf_peak.py's Live/Recorder: every storage an aten op makes, from its return until it dies):
the prefill's peak (from the call on, with the parameters, buffers and the prompt live) and the last decode
step's (the cache then holding C + N - 1 tokens). memest simulates the same two steps; what it leaves out
(generate()'s growing input_ids and attention_mask, the argmax, the CPU flash kernel's float32 logsumexp,
which CUDA's flash also returns in no-grad) is small and listed with the figures.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models as M  # noqa: E402
from hf_peak import Live, Recorder, here  # noqa: E402
from provenance import stamp  # noqa: E402

B, C, N = 2, 48, 16


class DynamicCache:
    def __init__(self):
        self.key_cache, self.value_cache = [], []

    def update(self, k, v, i):
        if len(self.key_cache) <= i:
            self.key_cache.append(k)
            self.value_cache.append(v)
        else:
            self.key_cache[i] = torch.cat([self.key_cache[i], k], dim=-2)
            self.value_cache[i] = torch.cat([self.value_cache[i], v], dim=-2)
        return self.key_cache[i], self.value_cache[i]


class StaticCache:
    """cache_utils.py StaticCache: zeros [B, Hkv, max_cache_len, D] per layer made before the prefill,
    update() index_copy_'s into them and returns them whole."""

    def __init__(self, cfg, T):
        nkv = cfg.get("num_key_value_heads") or cfg["num_attention_heads"]
        hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
        L = cfg["num_hidden_layers"]
        self.key_cache = [torch.zeros(B, nkv, T, hd, dtype=torch.bfloat16) for _ in range(L)]
        self.value_cache = [torch.zeros(B, nkv, T, hd, dtype=torch.bfloat16) for _ in range(L)]
        self.T = T

    def update(self, k, v, i):
        pos = torch.arange(STATE["past"], STATE["past"] + k.shape[2])
        self.key_cache[i].index_copy_(2, pos, k)
        self.value_cache[i].index_copy_(2, pos, v)
        return self.key_cache[i], self.value_cache[i]


def static_mask(attention_mask, S, T, dtype, cache_position):
    """modeling_llama.py _prepare_4d_causal_attention_mask_with_cache_position (v4.48), which
    _update_causal_mask calls for a static cache whatever the attention (no is_causal shortcut)."""
    min_dtype = torch.finfo(dtype).min
    causal_mask = torch.full((S, T), fill_value=min_dtype, dtype=dtype)
    if S != 1:
        causal_mask = torch.triu(causal_mask, diagonal=1)
    causal_mask *= torch.arange(T) > cache_position.reshape(-1, 1)
    causal_mask = causal_mask[None, None, :, :].expand(B, 1, -1, -1)
    causal_mask = causal_mask.clone()
    mask_length = attention_mask.shape[-1]
    padding_mask = causal_mask[:, :, :, :mask_length] + attention_mask[:, None, None, :]
    padding_mask = padding_mask == 0
    causal_mask[:, :, :, :mask_length] = causal_mask[:, :, :, :mask_length].masked_fill(padding_mask,
                                                                                          min_dtype)
    return causal_mask


STATE = {"cache": None, "past": 0, "attention_mask": None}


def attention_forward(self, hidden_states, position_embeddings, attention_mask):
    input_shape = hidden_states.shape[:-1]
    hidden_shape = (*input_shape, -1, self.head_dim)
    query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
    key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
    value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
    cos, sin = position_embeddings
    query_states, key_states = M.apply_rotary_pos_emb(query_states, key_states, cos, sin)
    key_states, value_states = STATE["cache"].update(key_states, value_states, self.layer_idx)
    attn_output, _ = M.sdpa_attention_forward(self, query_states, key_states, value_states, attention_mask,
                                              dropout=0.0, scaling=self.scaling)
    attn_output = attn_output.reshape(*input_shape, -1).contiguous()
    return self.o_proj(attn_output)


def model_forward(self, input_ids):
    inputs_embeds = self.embed_tokens(input_ids)
    S = input_ids.shape[1]
    cache_position = torch.arange(STATE["past"], STATE["past"] + S)
    position_ids = cache_position.unsqueeze(0)
    hidden_states = inputs_embeds
    mask = None
    if isinstance(STATE["cache"], StaticCache):
        mask = static_mask(STATE["attention_mask"], S, STATE["cache"].T, inputs_embeds.dtype, cache_position)
    position_embeddings = self.rotary_emb(hidden_states, position_ids)
    for layer in self.layers:
        hidden_states = layer(hidden_states, mask, position_embeddings)
    return self.norm(hidden_states)


def causal_lm_forward(self, input_ids):
    hidden_states = self.model(input_ids)
    return self.lm_head(hidden_states[:, -1:, :])   # logits_to_keep = 1


def measure(cfg, cache):
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    try:
        model = M.build(cfg, "sdpa")
    finally:
        torch.set_default_dtype(torch.float32)
    model.eval()
    for i, layer in enumerate(model.model.layers):
        layer.self_attn.layer_idx = i
    M.Attention.forward = attention_forward
    M.Model.forward = model_forward
    M.ForCausalLM.forward = causal_lm_forward
    input_ids = torch.randint(cfg["vocab_size"], (B, C))
    attention_mask = torch.ones(B, C, dtype=torch.long)
    STATE["cache"], STATE["past"] = None, 0
    live = Live()
    for t in list(model.parameters()) + list(model.buffers()) + [input_ids, attention_mask]:
        live.add(t)
    live.check("setup")
    res = {}
    with torch.no_grad(), Recorder(live):
        live.phase = "cache"
        STATE["cache"] = DynamicCache() if cache == "dynamic" else StaticCache(cfg, C + N)
        for step in range(N):
            STATE["attention_mask"] = attention_mask
            if step == N - 1:   # the last decode step: its own peak
                live.peak = live.peak_cuda = 0
                live.check("start")
                res["decode_start"] = live.cur_cuda
            live.phase = "prefill" if step == 0 else "decode %d" % step
            model_input = input_ids if step == 0 else input_ids[:, -1:]
            outputs = model(model_input)
            STATE["past"] += model_input.shape[1]
            next_token_logits = outputs.clone()[:, -1, :].float()
            next_tokens = torch.argmax(next_token_logits, dim=-1)
            input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
            attention_mask = torch.cat([attention_mask, attention_mask.new_ones((B, 1))], dim=-1)
            del outputs
            if step == 0:
                res["prefill_peak"], res["prefill_at"] = live.peak_cuda, live.peak_cuda_at
                res["prefill_cpu_peak"] = live.peak
        res["decode_peak"], res["decode_at"] = live.peak_cuda, live.peak_cuda_at
    return res


def main(argv):
    path = argv[1] if len(argv) > 1 else here("tests", "reference", "generate_peaks.json")
    with open(here("tests", "hf", "tiny", "llama.json")) as f:
        cfg = json.load(f)
    out = {"_about": "tests/tools/generate_peak.py: peak live tensor bytes of generate() on "
                     "tests/hf/tiny/llama.json, PyTorch %s CPU, bfloat16, sdpa" % torch.__version__,
           "config": "tests/hf/tiny/llama.json", "batch": B, "context": C, "new_tokens": N,
           "dynamic": measure(cfg, "dynamic"), "static": measure(cfg, "static")}
    out = stamp(out, "tests/tools/generate_peak.py", {"torch": torch.__version__, "transformers": "v4.48.0 (followed in plain PyTorch, not imported)"})
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main(sys.argv)
