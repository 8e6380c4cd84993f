"""Plain-PyTorch copies of five Hugging Face architectures, op by op as transformers v4.48.0 runs them.

Debian has no python3-transformers, so tests/tools/hf_figures_b.py measures these instead. Each class
follows the named v4.48.0 module (src/transformers/models/<arch>/modeling_<arch>.py) in training mode,
for the path a plain `model(input_ids, labels=...)` call takes: no attention_mask argument, no cache, no
head mask, no output_attentions; the loss itself is left out (the caller measures the forward up to the
logits; memest applies the loss to the last output). Module and parameter names are transformers' own,
so the parameter counts and the state-dict layout are theirs.

BUILDERS = {"gpt2": fn(cfg) -> nn.Module, ...}: cfg is a config.json dict (the hub file's contents);
missing keys take the v4.48.0 Config class defaults; cfg["_attn_implementation"] is "eager" (default)
or "sdpa" where the architecture supports it in v4.48.0 (gpt2, bert, opt, gpt_neox; T5 has no SDPA
class in v4.48.0). Every model's forward takes (input_ids) — T5 takes (input_ids, decoder_input_ids) —
and returns the logits.

Dropout goes through dropout() below, which records the mask storage of each dropout that saves one (the
CPU kernel saves a float mask, CUDA's native_dropout a bool one: hf_figures_b.py corrects the bytes).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# storage data_ptr -> numel of the float dropout masks saved in the current forward (hf_figures_b.py)
DROPOUT_MASKS = {}
# storage data_ptrs of the copies attn_output.transpose(1, 2).contiguous() made of a float32 SDPA output
# (hf_figures_b.py: CUDA runs float32 SDPA with the memory-efficient kernel, whose output is a
# [B, L, H, D] buffer returned transposed, so that .contiguous() copies nothing there)
SDPA_OUTPUT_COPIES = set()


def merge_sdpa_output(attn_output):
    """attn_output.transpose(1, 2).contiguous() after F.scaled_dot_product_attention, recording a copy
    of a float32 output (see SDPA_OUTPUT_COPIES)."""
    merged = attn_output.transpose(1, 2).contiguous()
    if attn_output.dtype == torch.float32 and \
            merged.untyped_storage().data_ptr() != attn_output.untyped_storage().data_ptr():
        SDPA_OUTPUT_COPIES.add(merged.untyped_storage().data_ptr())
    return merged


def dropout(x, p, training):
    """F.dropout, recording the mask MulBackward0 saves (CPU: x * bernoulli(1-p)/(1-p), ATen Dropout.cpp
    _dropout_impl; p == 0 or eval returns x itself and saves nothing)."""
    y = F.dropout(x, p=p, training=training)
    if training and 0 < p < 1 and y.grad_fn is not None:
        assert type(y.grad_fn).__name__ == "MulBackward0", type(y.grad_fn).__name__
        mask = y.grad_fn._saved_other
        DROPOUT_MASKS[mask.untyped_storage().data_ptr()] = mask.numel()
    return y


class Dropout(nn.Module):
    """nn.Dropout (same repr, no parameters) routed through dropout()."""

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        return dropout(x, self.p, self.training)


def new_gelu(x):
    """activations.py NewGELUActivation (gelu_new), its Python decomposition."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


ACT = {"gelu_new": new_gelu, "gelu": F.gelu, "relu": F.relu,
       "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh")}


def act_module(name):
    """ACT2FN[name] as a module: GELUActivation (F.gelu), NewGELUActivation, nn.ReLU."""
    class Act(nn.Module):
        def forward(self, x):
            return ACT[name](x)
    return Act()


def causal_mask_4d(batch, q_len, dtype, device):
    """The eager 4-D causal mask _update_causal_mask / _prepare_4d_causal_attention_mask build when no
    attention_mask is passed: [B, 1, q, k] of dtype, 0 where allowed and finfo(dtype).min above the
    diagonal (modeling_llama-style _prepare_4d_causal_attention_mask_with_cache_position: full, triu,
    expand; an all-ones padding mask changes nothing)."""
    min_dtype = torch.finfo(dtype).min
    m = torch.full((q_len, q_len), fill_value=min_dtype, dtype=dtype, device=device)
    m = torch.triu(m, diagonal=1)
    return m[None, None, :, :].expand(batch, 1, -1, -1)


# --------------------------------------------------------------------------- GPT-2
class Conv1D(nn.Module):
    """pytorch_utils.Conv1D: weight [nx, nf] (transposed vs nn.Linear), y = addmm(bias, x.view(-1, nx), W)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class GPT2Attention(nn.Module):
    """modeling_gpt2.py GPT2Attention (eager: _attn) and GPT2SdpaAttention (sdpa), self-attention only."""

    def __init__(self, c, layer_idx):
        super().__init__()
        n_pos = c["n_positions"]
        self.register_buffer("bias", torch.tril(torch.ones((n_pos, n_pos), dtype=torch.bool)).view(1, 1, n_pos, n_pos),
                             persistent=False)
        self.register_buffer("masked_bias", torch.tensor(-1e4), persistent=False)
        self.embed_dim = c["n_embd"]
        self.num_heads = c["n_head"]
        self.head_dim = self.embed_dim // self.num_heads
        self.split_size = self.embed_dim
        self.scale_attn_weights = c["scale_attn_weights"]
        self.scale_attn_by_inverse_layer_idx = c["scale_attn_by_inverse_layer_idx"]
        self.layer_idx = layer_idx
        assert not c["reorder_and_upcast_attn"], "reorder_and_upcast_attn is not modelled"
        self.sdpa = c["_attn_implementation"] == "sdpa"
        self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)
        self.attn_dropout = Dropout(c["attn_pdrop"])
        self.resid_dropout = Dropout(c["resid_pdrop"])

    def _split_heads(self, t):
        return t.view(t.size()[:-1] + (self.num_heads, self.head_dim)).permute(0, 2, 1, 3)

    def _attn(self, query, key, value):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        if self.scale_attn_weights:
            attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype,
                                                     device=attn_weights.device)
        if self.scale_attn_by_inverse_layer_idx:
            attn_weights = attn_weights / float(self.layer_idx + 1)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length:key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)
        return torch.matmul(attn_weights, value)

    def forward(self, hidden_states):
        bsz, q_len, _ = hidden_states.size()
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        query = self._split_heads(query)
        key = self._split_heads(key)
        value = self._split_heads(value)
        if self.sdpa:
            # GPT2SdpaAttention: no mask (GPT2Model passes None when there is no padding) -> is_causal
            attn_output = F.scaled_dot_product_attention(query, key, value, attn_mask=None,
                                                         dropout_p=self.attn_dropout.p if self.training else 0.0,
                                                         is_causal=q_len > 1)
            attn_output = merge_sdpa_output(attn_output)
            attn_output = attn_output.view(bsz, q_len, self.embed_dim)
        else:
            attn_output = self._attn(query, key, value)
            attn_output = attn_output.permute(0, 2, 1, 3).contiguous()  # _merge_heads
            attn_output = attn_output.view(attn_output.size()[:-2] + (self.num_heads * self.head_dim,))
        attn_output = self.c_proj(attn_output)
        return self.resid_dropout(attn_output)


class GPT2MLP(nn.Module):
    def __init__(self, inner, c):
        super().__init__()
        self.c_fc = Conv1D(inner, c["n_embd"])
        self.c_proj = Conv1D(c["n_embd"], inner)
        self.act = act_module(c["activation_function"])
        self.dropout = Dropout(c["resid_pdrop"])

    def forward(self, h):
        return self.dropout(self.c_proj(self.act(self.c_fc(h))))


class GPT2Block(nn.Module):
    def __init__(self, c, layer_idx):
        super().__init__()
        E = c["n_embd"]
        inner = c["n_inner"] if c["n_inner"] is not None else 4 * E
        self.ln_1 = nn.LayerNorm(E, eps=c["layer_norm_epsilon"])
        self.attn = GPT2Attention(c, layer_idx)
        self.ln_2 = nn.LayerNorm(E, eps=c["layer_norm_epsilon"])
        assert not c["add_cross_attention"]
        self.mlp = GPT2MLP(inner, c)

    def forward(self, hidden_states):
        residual = hidden_states
        attn_output = self.attn(self.ln_1(hidden_states))
        hidden_states = attn_output + residual
        residual = hidden_states
        feed_forward_hidden_states = self.mlp(self.ln_2(hidden_states))
        return residual + feed_forward_hidden_states


class GPT2Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        E = c["n_embd"]
        self.wte = nn.Embedding(c["vocab_size"], E)
        self.wpe = nn.Embedding(c["n_positions"], E)
        self.drop = Dropout(c["embd_pdrop"])
        self.h = nn.ModuleList([GPT2Block(c, i) for i in range(c["n_layer"])])
        self.ln_f = nn.LayerNorm(E, eps=c["layer_norm_epsilon"])

    def forward(self, input_ids):
        position_ids = torch.arange(0, input_ids.shape[-1], dtype=torch.long, device=input_ids.device).unsqueeze(0)
        inputs_embeds = self.wte(input_ids)
        position_embeds = self.wpe(position_ids)
        hidden_states = inputs_embeds + position_embeds
        hidden_states = self.drop(hidden_states)
        for block in self.h:
            hidden_states = block(hidden_states)
        return self.ln_f(hidden_states)


class GPT2LMHeadModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = GPT2Model(c)
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        if c["tie_word_embeddings"]:
            self.lm_head.weight = self.transformer.wte.weight

    def forward(self, input_ids):
        return self.lm_head(self.transformer(input_ids))


GPT2_DEFAULTS = dict(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12, n_inner=None,
                     activation_function="gelu_new", resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1,
                     layer_norm_epsilon=1e-5, scale_attn_weights=True, scale_attn_by_inverse_layer_idx=False,
                     reorder_and_upcast_attn=False, add_cross_attention=False, tie_word_embeddings=True)


# --------------------------------------------------------------------------- BERT
class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.word_embeddings = nn.Embedding(c["vocab_size"], H, padding_idx=c["pad_token_id"])
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], H)
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], H)
        self.LayerNorm = nn.LayerNorm(H, eps=c["layer_norm_eps"])
        self.dropout = Dropout(c["hidden_dropout_prob"])
        assert c["position_embedding_type"] == "absolute"
        self.register_buffer("position_ids", torch.arange(c["max_position_embeddings"]).expand((1, -1)),
                             persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long),
                             persistent=False)

    def forward(self, input_ids):
        B, S = input_ids.shape
        position_ids = self.position_ids[:, 0:S]
        token_type_ids = self.token_type_ids[:, :S].expand(B, S)  # buffered_token_type_ids_expanded
        inputs_embeds = self.word_embeddings(input_ids)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)
        embeddings = inputs_embeds + token_type_embeddings
        position_embeddings = self.position_embeddings(position_ids)
        embeddings += position_embeddings
        embeddings = self.LayerNorm(embeddings)
        return self.dropout(embeddings)


class BertSelfAttention(nn.Module):
    """BertSelfAttention (eager) and BertSdpaSelfAttention (sdpa), encoder self-attention."""

    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.num_attention_heads = c["num_attention_heads"]
        self.attention_head_size = H // self.num_attention_heads
        self.all_head_size = H
        self.query = nn.Linear(H, H)
        self.key = nn.Linear(H, H)
        self.value = nn.Linear(H, H)
        self.dropout = Dropout(c["attention_probs_dropout_prob"])
        self.sdpa = c["_attn_implementation"] == "sdpa"

    def transpose_for_scores(self, x):
        return x.view(x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        if self.sdpa:
            bsz, tgt_len, _ = hidden_states.size()
            query_layer = self.transpose_for_scores(self.query(hidden_states))
            key_layer = self.transpose_for_scores(self.key(hidden_states))
            value_layer = self.transpose_for_scores(self.value(hidden_states))
            # all-ones mask: _prepare_4d_attention_mask_for_sdpa returns None
            attn_output = F.scaled_dot_product_attention(query_layer, key_layer, value_layer, attn_mask=None,
                                                         dropout_p=self.dropout.p if self.training else 0.0,
                                                         is_causal=False)
            attn_output = merge_sdpa_output(attn_output)  # transpose(1, 2) + reshape: the same
            return attn_output.reshape(bsz, tgt_len, self.all_head_size)
        mixed_query_layer = self.query(hidden_states)
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = self.transpose_for_scores(mixed_query_layer)
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_scores = attention_scores + attention_mask
        attention_probs = F.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        return context_layer.view(context_layer.size()[:-2] + (self.all_head_size,))


class BertDenseOut(nn.Module):
    """BertSelfOutput / BertOutput: dense, dropout, LayerNorm(h + input_tensor)."""

    def __init__(self, c, fan_in):
        super().__init__()
        H = c["hidden_size"]
        self.dense = nn.Linear(fan_in, H)
        self.LayerNorm = nn.LayerNorm(H, eps=c["layer_norm_eps"])
        self.dropout = Dropout(c["hidden_dropout_prob"])

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dropout(self.dense(hidden_states))
        return self.LayerNorm(hidden_states + input_tensor)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertDenseOut(c, c["hidden_size"])

    def forward(self, hidden_states, attention_mask):
        return self.output(self.self(hidden_states, attention_mask), hidden_states)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.intermediate_act_fn = act_module(c["hidden_act"])

    def forward(self, h):
        return self.intermediate_act_fn(self.dense(h))


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertDenseOut(c, c["intermediate_size"])

    def forward(self, hidden_states, attention_mask):
        attention_output = self.attention(hidden_states, attention_mask)
        return self.output(self.intermediate(attention_output), attention_output)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c["num_hidden_layers"])])

    def forward(self, h, attention_mask):
        for layer in self.layer:
            h = layer(h, attention_mask)
        return h


class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))


class BertModel(nn.Module):
    def __init__(self, c, add_pooling_layer=True):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)
        self.pooler = BertPooler(c) if add_pooling_layer else None
        self.sdpa = c["_attn_implementation"] == "sdpa"

    def forward(self, input_ids):
        B, S = input_ids.shape
        attention_mask = torch.ones((B, S), device=input_ids.device)
        embedding_output = self.embeddings(input_ids)
        if self.sdpa:
            extended = None  # _prepare_4d_attention_mask_for_sdpa: all ones -> None
        else:
            # get_extended_attention_mask: mask[:, None, None, :] in the model dtype, (1 - m) * finfo.min
            extended = attention_mask[:, None, None, :].to(dtype=embedding_output.dtype)
            extended = (1.0 - extended) * torch.finfo(embedding_output.dtype).min
        seq = self.encoder(embedding_output, extended)
        if self.pooler is None:
            return seq
        return seq, self.pooler(seq)


class BertForMaskedLM(nn.Module):
    """BertForMaskedLM: BertModel(add_pooling_layer=False) + cls.predictions (transform: dense, act,
    LayerNorm; decoder tied to word_embeddings, with the head's own bias)."""

    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.bert = BertModel(c, add_pooling_layer=False)
        self.cls = nn.Module()
        self.cls.predictions = nn.Module()
        p = self.cls.predictions
        p.transform = nn.Module()
        p.transform.dense = nn.Linear(H, H)
        p.transform.transform_act_fn = act_module(c["hidden_act"])
        p.transform.LayerNorm = nn.LayerNorm(H, eps=c["layer_norm_eps"])
        p.decoder = nn.Linear(H, c["vocab_size"], bias=False)
        p.bias = nn.Parameter(torch.zeros(c["vocab_size"]))
        p.decoder.bias = p.bias
        if c["tie_word_embeddings"]:
            p.decoder.weight = self.bert.embeddings.word_embeddings.weight

    def forward(self, input_ids):
        h = self.bert(input_ids)
        t = self.cls.predictions.transform
        h = t.LayerNorm(t.transform_act_fn(t.dense(h)))
        return self.cls.predictions.decoder(h)


BERT_DEFAULTS = dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                     intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1,
                     attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=2,
                     layer_norm_eps=1e-12, pad_token_id=0, position_embedding_type="absolute",
                     tie_word_embeddings=True)


# --------------------------------------------------------------------------- OPT
class OPTAttention(nn.Module):
    """modeling_opt.py OPTAttention (eager) and OPTSdpaAttention (sdpa)."""

    def __init__(self, c):
        super().__init__()
        E = c["hidden_size"]
        self.embed_dim = E
        self.num_heads = c["num_attention_heads"]
        self.head_dim = E // self.num_heads
        self.scaling = self.head_dim ** -0.5
        self.dropout = c["attention_dropout"]
        b = c["enable_bias"]
        self.k_proj = nn.Linear(E, E, bias=b)
        self.v_proj = nn.Linear(E, E, bias=b)
        self.q_proj = nn.Linear(E, E, bias=b)
        self.out_proj = nn.Linear(E, E, bias=b)
        self.sdpa = c["_attn_implementation"] == "sdpa"

    def forward(self, hidden_states, attention_mask):
        bsz, tgt_len, _ = hidden_states.size()
        if self.sdpa:
            query_states = self.q_proj(hidden_states)
        else:
            query_states = self.q_proj(hidden_states) * self.scaling
        query_states = query_states.view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)
        if self.sdpa:
            attn_output = F.scaled_dot_product_attention(query_states, key_states, value_states, attn_mask=None,
                                                         dropout_p=self.dropout if self.training else 0.0,
                                                         is_causal=tgt_len > 1, scale=self.scaling)
            attn_output = merge_sdpa_output(attn_output)
        else:
            attn_weights = torch.matmul(query_states, key_states.transpose(2, 3))
            attn_weights = attn_weights + attention_mask[:, :, :, :key_states.shape[-2]]
            attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
            attn_probs = dropout(attn_weights, self.dropout, self.training)
            attn_output = torch.matmul(attn_probs, value_states)
            attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.view(bsz, tgt_len, self.embed_dim)
        return self.out_proj(attn_output)


class OPTDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        E = c["hidden_size"]
        self.self_attn = OPTAttention(c)
        self.do_layer_norm_before = c["do_layer_norm_before"]
        self.dropout = c["dropout"]
        self.activation_fn = act_module(c["activation_function"])
        ea = c["layer_norm_elementwise_affine"]
        self.self_attn_layer_norm = nn.LayerNorm(E, elementwise_affine=ea)
        self.fc1 = nn.Linear(E, c["ffn_dim"], bias=c["enable_bias"])
        self.fc2 = nn.Linear(c["ffn_dim"], E, bias=c["enable_bias"])
        self.final_layer_norm = nn.LayerNorm(E, elementwise_affine=ea)

    def forward(self, hidden_states, attention_mask):
        residual = hidden_states
        if self.do_layer_norm_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states = self.self_attn(hidden_states, attention_mask)
        hidden_states = dropout(hidden_states, self.dropout, self.training)
        hidden_states = residual + hidden_states
        if not self.do_layer_norm_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states_shape = hidden_states.shape
        hidden_states = hidden_states.reshape(-1, hidden_states.size(-1))
        residual = hidden_states
        if self.do_layer_norm_before:
            hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = self.fc1(hidden_states)
        hidden_states = self.activation_fn(hidden_states)
        hidden_states = self.fc2(hidden_states)
        hidden_states = dropout(hidden_states, self.dropout, self.training)
        hidden_states = (residual + hidden_states).view(hidden_states_shape)
        if not self.do_layer_norm_before:
            hidden_states = self.final_layer_norm(hidden_states)
        return hidden_states


class OPTLearnedPositionalEmbedding(nn.Embedding):
    """Positions offset by 2 (fairseq): embedding of (position_ids + 2), num_embeddings + 2 rows."""

    def __init__(self, num_embeddings, embedding_dim):
        self.offset = 2
        super().__init__(num_embeddings + self.offset, embedding_dim)

    def forward(self, attention_mask, position_ids):
        return super().forward(position_ids + self.offset)


class OPTDecoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        E = c["hidden_size"]
        assert c["word_embed_proj_dim"] == E, "project_in/project_out are not modelled"
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["word_embed_proj_dim"], padding_idx=c["pad_token_id"])
        self.embed_positions = OPTLearnedPositionalEmbedding(c["max_position_embeddings"], E)
        if c["do_layer_norm_before"] and not c["_remove_final_layer_norm"]:
            self.final_layer_norm = nn.LayerNorm(E, elementwise_affine=c["layer_norm_elementwise_affine"])
        else:
            self.final_layer_norm = None
        self.layers = nn.ModuleList([OPTDecoderLayer(c) for _ in range(c["num_hidden_layers"])])
        self.sdpa = c["_attn_implementation"] == "sdpa"

    def forward(self, input_ids):
        B, S = input_ids.shape
        inputs_embeds = self.embed_tokens(input_ids)
        attention_mask = torch.ones(B, S, device=inputs_embeds.device)
        causal_mask = None if self.sdpa else causal_mask_4d(B, S, inputs_embeds.dtype, inputs_embeds.device)
        position_ids = torch.cumsum(attention_mask, dim=1)
        position_ids = (position_ids * attention_mask - 1).long()
        pos_embeds = self.embed_positions(attention_mask, position_ids)
        hidden_states = inputs_embeds + pos_embeds
        for layer in self.layers:
            hidden_states = layer(hidden_states, causal_mask)
        if self.final_layer_norm is not None:
            hidden_states = self.final_layer_norm(hidden_states)
        return hidden_states


class OPTForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.model = nn.Module()
        self.model.decoder = OPTDecoder(c)
        self.lm_head = nn.Linear(c["word_embed_proj_dim"], c["vocab_size"], bias=False)
        if c["tie_word_embeddings"]:
            self.lm_head.weight = self.model.decoder.embed_tokens.weight

    def forward(self, input_ids):
        return self.lm_head(self.model.decoder(input_ids)).contiguous()


OPT_DEFAULTS = dict(vocab_size=50272, hidden_size=768, num_hidden_layers=12, ffn_dim=3072, max_position_embeddings=2048,
                    do_layer_norm_before=True, _remove_final_layer_norm=False, word_embed_proj_dim=None,
                    dropout=0.1, attention_dropout=0.0, num_attention_heads=12, activation_function="relu",
                    layerdrop=0.0, pad_token_id=1, enable_bias=True, layer_norm_elementwise_affine=True,
                    tie_word_embeddings=True)


# --------------------------------------------------------------------------- GPT-NeoX
class GPTNeoXRotaryEmbedding(nn.Module):
    """The default rope: inv_freq [rd/2] float32 (non-persistent), cos/sin [B, S, rd] in x's dtype."""

    def __init__(self, dim, base):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * 1.0  # attention_scaling of the default rope
        sin = emb.sin() * 1.0
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb_partial(q, k, cos, sin):
    """modeling_gpt_neox.py apply_rotary_pos_emb: rotary on the first cos.shape[-1] dims, cat the rest."""
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    q_embed = (q_rot * cos) + (rotate_half(q_rot) * sin)
    k_embed = (k_rot * cos) + (rotate_half(k_rot) * sin)
    return torch.cat([q_embed, q_pass], dim=-1), torch.cat([k_embed, k_pass], dim=-1)


class GPTNeoXAttention(nn.Module):
    """GPTNeoXAttention with eager_attention_forward (eager) or sdpa_attention_forward (sdpa)."""

    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.num_attention_heads = c["num_attention_heads"]
        self.head_size = H // self.num_attention_heads
        self.scaling = self.head_size ** -0.5
        self.attention_dropout = Dropout(c["attention_dropout"])
        self.query_key_value = nn.Linear(H, 3 * H, bias=c["attention_bias"])
        self.dense = nn.Linear(H, H, bias=c["attention_bias"])
        self.sdpa = c["_attn_implementation"] == "sdpa"

    def forward(self, hidden_states, attention_mask, position_embeddings):
        input_shape = hidden_states.shape[:-1]
        qkv = self.query_key_value(hidden_states).view(*input_shape, -1, 3 * self.head_size).transpose(1, 2)
        query_states, key_states, value_states = qkv.chunk(3, dim=-1)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb_partial(query_states, key_states, cos, sin)
        p = self.attention_dropout.p if self.training else 0.0
        if self.sdpa:
            # sdpa_attention_forward: contiguous() on q, k, v, then SDPA with is_causal (no mask)
            q, k, v = query_states.contiguous(), key_states.contiguous(), value_states.contiguous()
            attn_output = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=p,
                                                         scale=self.scaling, is_causal=q.shape[2] > 1)
            attn_output = merge_sdpa_output(attn_output)
        else:
            attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) * self.scaling
            attn_weights = attn_weights + attention_mask[:, :, :, : key_states.shape[-2]]
            attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
            attn_weights = dropout(attn_weights, p, self.training)
            attn_output = torch.matmul(attn_weights, value_states)
            attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.dense(attn_output)


class GPTNeoXMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.dense_4h_to_h = nn.Linear(c["intermediate_size"], c["hidden_size"])
        self.act = act_module(c["hidden_act"])

    def forward(self, h):
        return self.dense_4h_to_h(self.act(self.dense_h_to_4h(h)))


class GPTNeoXLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.use_parallel_residual = c["use_parallel_residual"]
        self.input_layernorm = nn.LayerNorm(H, eps=c["layer_norm_eps"])
        self.post_attention_layernorm = nn.LayerNorm(H, eps=c["layer_norm_eps"])
        self.post_attention_dropout = Dropout(c["hidden_dropout"])
        self.post_mlp_dropout = Dropout(c["hidden_dropout"])
        self.attention = GPTNeoXAttention(c)
        self.mlp = GPTNeoXMLP(c)

    def forward(self, hidden_states, attention_mask, position_embeddings):
        attn_output = self.attention(self.input_layernorm(hidden_states), attention_mask, position_embeddings)
        attn_output = self.post_attention_dropout(attn_output)
        if self.use_parallel_residual:
            mlp_output = self.mlp(self.post_attention_layernorm(hidden_states))
            mlp_output = self.post_mlp_dropout(mlp_output)
            return mlp_output + attn_output + hidden_states
        attn_output = attn_output + hidden_states
        mlp_output = self.mlp(self.post_attention_layernorm(attn_output))
        mlp_output = self.post_mlp_dropout(mlp_output)
        return mlp_output + attn_output


class GPTNeoXModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        H = c["hidden_size"]
        self.embed_in = nn.Embedding(c["vocab_size"], H)
        self.emb_dropout = Dropout(c["hidden_dropout"])
        self.layers = nn.ModuleList([GPTNeoXLayer(c) for _ in range(c["num_hidden_layers"])])
        self.final_layer_norm = nn.LayerNorm(H, eps=c["layer_norm_eps"])
        head = H // c["num_attention_heads"]
        self.rotary_emb = GPTNeoXRotaryEmbedding(int(head * c["rotary_pct"]), c["rotary_emb_base"])
        self.sdpa = c["_attn_implementation"] == "sdpa"

    def forward(self, input_ids):
        B, S = input_ids.shape
        inputs_embeds = self.embed_in(input_ids)
        position_ids = torch.arange(0, S, device=inputs_embeds.device).unsqueeze(0)
        causal_mask = None if self.sdpa else causal_mask_4d(B, S, inputs_embeds.dtype, inputs_embeds.device)
        hidden_states = self.emb_dropout(inputs_embeds)
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states, causal_mask, position_embeddings)
        return self.final_layer_norm(hidden_states)


class GPTNeoXForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gpt_neox = GPTNeoXModel(c)
        self.embed_out = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        if c["tie_word_embeddings"]:
            self.embed_out.weight = self.gpt_neox.embed_in.weight

    def forward(self, input_ids):
        return self.embed_out(self.gpt_neox(input_ids))


NEOX_DEFAULTS = dict(vocab_size=50432, hidden_size=6144, num_hidden_layers=44, num_attention_heads=64,
                     intermediate_size=24576, hidden_act="gelu", rotary_pct=0.25, rotary_emb_base=10000,
                     attention_dropout=0.0, hidden_dropout=0.0, max_position_embeddings=2048,
                     layer_norm_eps=1e-5, tie_word_embeddings=False, use_parallel_residual=True,
                     attention_bias=True)


# --------------------------------------------------------------------------- T5
class T5LayerNorm(nn.Module):
    """No mean subtraction, no bias; variance in float32; x (input dtype) * rsqrt (float32) promotes to
    float32, then back to the weight's dtype when that is half precision."""

    def __init__(self, H, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(H))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)
        return self.weight * hidden_states


class T5Attention(nn.Module):
    def __init__(self, c, is_decoder, has_relative_attention_bias):
        super().__init__()
        self.is_decoder = is_decoder
        self.has_relative_attention_bias = has_relative_attention_bias
        self.relative_attention_num_buckets = c["relative_attention_num_buckets"]
        self.relative_attention_max_distance = c["relative_attention_max_distance"]
        self.d_model = c["d_model"]
        self.key_value_proj_dim = c["d_kv"]
        self.n_heads = c["num_heads"]
        self.dropout = c["dropout_rate"]
        self.inner_dim = self.n_heads * self.key_value_proj_dim
        self.q = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.k = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.v = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.o = nn.Linear(self.inner_dim, self.d_model, bias=False)
        if self.has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(self.relative_attention_num_buckets, self.n_heads)

    @staticmethod
    def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        relative_buckets = 0
        if bidirectional:
            num_buckets //= 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        relative_position_if_large = max_exact + (
            torch.log(relative_position.float() / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).to(torch.long)
        relative_position_if_large = torch.min(
            relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1))
        relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
        return relative_buckets

    def compute_bias(self, query_length, key_length, device, cache_position):
        context_position = cache_position[:, None].to(device)
        memory_position = torch.arange(key_length, dtype=torch.long, device=device)[None, :]
        relative_position = memory_position - context_position
        relative_position_bucket = self._relative_position_bucket(
            relative_position, bidirectional=(not self.is_decoder), num_buckets=self.relative_attention_num_buckets,
            max_distance=self.relative_attention_max_distance)
        values = self.relative_attention_bias(relative_position_bucket)
        return values.permute([2, 0, 1]).unsqueeze(0)

    def forward(self, hidden_states, mask, key_value_states=None, position_bias=None, cache_position=None):
        batch_size, seq_length = hidden_states.shape[:2]
        current_states = key_value_states if key_value_states is not None else hidden_states
        query_states = self.q(hidden_states)
        query_states = query_states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
        key_states = self.k(current_states)
        value_states = self.v(current_states)
        key_states = key_states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
        value_states = value_states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
        scores = torch.matmul(query_states, key_states.transpose(3, 2))
        if position_bias is None:
            key_length = key_states.shape[-2]
            if not self.has_relative_attention_bias:
                position_bias = torch.zeros((1, self.n_heads, seq_length, key_length), device=scores.device,
                                            dtype=scores.dtype)
            else:
                position_bias = self.compute_bias(seq_length, key_length, scores.device, cache_position)
                position_bias = position_bias[:, :, -seq_length:, :]
            if mask is not None:
                position_bias = position_bias + mask[:, :, :, : key_states.shape[-2]]
        scores += position_bias
        attn_weights = F.softmax(scores.float(), dim=-1).type_as(scores)
        attn_weights = dropout(attn_weights, self.dropout, self.training)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.view(batch_size, -1, self.inner_dim)
        return self.o(attn_output), position_bias


class T5LayerAttention(nn.Module):
    """T5LayerSelfAttention (attribute SelfAttention) / T5LayerCrossAttention (EncDecAttention)."""

    def __init__(self, c, is_decoder, has_relative_attention_bias, cross):
        super().__init__()
        att = T5Attention(c, is_decoder, has_relative_attention_bias)
        self.cross = cross
        if cross:
            self.EncDecAttention = att
        else:
            self.SelfAttention = att
        self.layer_norm = T5LayerNorm(c["d_model"], c["layer_norm_epsilon"])
        self.p = c["dropout_rate"]

    def forward(self, hidden_states, mask, position_bias, key_value_states=None, cache_position=None):
        att = self.EncDecAttention if self.cross else self.SelfAttention
        normed = self.layer_norm(hidden_states)
        out, position_bias = att(normed, mask, key_value_states=key_value_states, position_bias=position_bias,
                                 cache_position=cache_position)
        return hidden_states + dropout(out, self.p, self.training), position_bias


class T5LayerFF(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gated = c["is_gated_act"]
        d, ff = c["d_model"], c["d_ff"]
        self.DenseReluDense = nn.Module()
        m = self.DenseReluDense
        if self.gated:
            m.wi_0 = nn.Linear(d, ff, bias=False)
            m.wi_1 = nn.Linear(d, ff, bias=False)
        else:
            m.wi = nn.Linear(d, ff, bias=False)
        m.wo = nn.Linear(ff, d, bias=False)
        m.act = act_module(c["dense_act_fn"])
        self.layer_norm = T5LayerNorm(d, c["layer_norm_epsilon"])
        self.p = c["dropout_rate"]

    def forward(self, hidden_states):
        m = self.DenseReluDense
        h = self.layer_norm(hidden_states)
        if self.gated:  # T5DenseGatedActDense
            h = m.act(m.wi_0(h)) * m.wi_1(h)
        else:  # T5DenseActDense
            h = m.act(m.wi(h))
        h = dropout(h, self.p, self.training)
        if h.dtype != m.wo.weight.dtype and m.wo.weight.dtype != torch.int8:
            h = h.to(m.wo.weight.dtype)
        h = m.wo(h)
        return hidden_states + dropout(h, self.p, self.training)


class T5Block(nn.Module):
    def __init__(self, c, is_decoder, has_relative_attention_bias):
        super().__init__()
        self.is_decoder = is_decoder
        self.layer = nn.ModuleList([T5LayerAttention(c, is_decoder, has_relative_attention_bias, False)])
        if is_decoder:
            self.layer.append(T5LayerAttention(c, is_decoder, False, True))
        self.layer.append(T5LayerFF(c))

    def forward(self, h, mask, position_bias, enc, enc_mask, enc_dec_bias, cache_position):
        h, position_bias = self.layer[0](h, mask, position_bias, cache_position=cache_position)
        if self.is_decoder:
            h, enc_dec_bias = self.layer[1](h, enc_mask, enc_dec_bias, key_value_states=enc,
                                            cache_position=cache_position)
        return self.layer[-1](h), position_bias, enc_dec_bias


class T5Stack(nn.Module):
    def __init__(self, c, embed_tokens, is_decoder):
        super().__init__()
        self.embed_tokens = embed_tokens
        self.is_decoder = is_decoder
        n = c["num_decoder_layers"] if is_decoder else c["num_layers"]
        self.block = nn.ModuleList([T5Block(c, is_decoder, i == 0) for i in range(n)])
        self.final_layer_norm = T5LayerNorm(c["d_model"], c["layer_norm_epsilon"])
        self.p = c["dropout_rate"]

    def forward(self, input_ids, encoder_hidden_states=None):
        B, S = input_ids.shape
        inputs_embeds = self.embed_tokens(input_ids)
        cache_position = torch.arange(0, S, device=inputs_embeds.device)
        attention_mask = torch.ones(B, S, device=inputs_embeds.device)
        dt = inputs_embeds.dtype
        if self.is_decoder:
            causal_mask = causal_mask_4d(B, S, dt, inputs_embeds.device)  # eager _update_causal_mask
            enc_mask = torch.ones(encoder_hidden_states.shape[:2], device=inputs_embeds.device, dtype=torch.long)
            enc_mask = enc_mask[:, None, None, :].to(dtype=dt)  # invert_attention_mask
            enc_mask = (1.0 - enc_mask) * torch.finfo(dt).min
        else:
            causal_mask = attention_mask[:, None, None, :].to(dtype=dt)
            causal_mask = (1.0 - causal_mask) * torch.finfo(dt).min
            enc_mask = None
        position_bias = None
        enc_dec_bias = None
        h = dropout(inputs_embeds, self.p, self.training)
        for blk in self.block:
            h, position_bias, enc_dec_bias = blk(h, causal_mask, position_bias, encoder_hidden_states, enc_mask,
                                                 enc_dec_bias, cache_position)
        h = self.final_layer_norm(h)
        return dropout(h, self.p, self.training)


class T5ForConditionalGeneration(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.model_dim = c["d_model"]
        self.tie = c["tie_word_embeddings"]
        self.shared = nn.Embedding(c["vocab_size"], c["d_model"])
        self.encoder = T5Stack(c, self.shared, False)
        self.decoder = T5Stack(c, self.shared, True)
        self.lm_head = nn.Linear(c["d_model"], c["vocab_size"], bias=False)
        if self.tie:
            self.lm_head.weight = self.shared.weight

    def forward(self, input_ids, decoder_input_ids):
        enc = self.encoder(input_ids)
        seq = self.decoder(decoder_input_ids, encoder_hidden_states=enc)
        if self.tie:
            seq = seq * (self.model_dim ** -0.5)
        return self.lm_head(seq)


T5_DEFAULTS = dict(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_decoder_layers=None,
                   num_heads=8, relative_attention_num_buckets=32, relative_attention_max_distance=128,
                   dropout_rate=0.1, layer_norm_epsilon=1e-6, feed_forward_proj="relu", tie_word_embeddings=True)


def t5_config(c):
    """T5Config.__init__'s derived fields: num_decoder_layers, dense_act_fn, is_gated_act."""
    if c["num_decoder_layers"] is None:
        c["num_decoder_layers"] = c["num_layers"]
    act_info = c["feed_forward_proj"].split("-")
    c["dense_act_fn"] = act_info[-1]
    c["is_gated_act"] = act_info[0] == "gated"
    assert len(act_info) <= 2 and (len(act_info) == 1 or act_info[0] == "gated"), c["feed_forward_proj"]
    if c["feed_forward_proj"] == "gated-gelu":
        c["dense_act_fn"] = "gelu_new"
    return c


def with_defaults(defaults, cfg):
    c = dict(defaults)
    c.update({k: v for k, v in cfg.items()})
    c.setdefault("_attn_implementation", "eager")
    return c


def build_gpt2(cfg):
    return GPT2LMHeadModel(with_defaults(GPT2_DEFAULTS, cfg))


def build_bert(cfg):
    c = with_defaults(BERT_DEFAULTS, cfg)
    return BertForMaskedLM(c) if c.get("_head", "mlm") == "mlm" else BertModel(c)


def build_opt(cfg):
    c = with_defaults(OPT_DEFAULTS, cfg)
    if c["word_embed_proj_dim"] is None:
        c["word_embed_proj_dim"] = c["hidden_size"]
    return OPTForCausalLM(c)


def build_gpt_neox(cfg):
    return GPTNeoXForCausalLM(with_defaults(NEOX_DEFAULTS, cfg))


def build_t5(cfg):
    c = with_defaults(T5_DEFAULTS, cfg)
    assert c["_attn_implementation"] == "eager", "T5 has no SDPA attention in transformers v4.48.0"
    return T5ForConditionalGeneration(t5_config(c))


BUILDERS = {"gpt2": build_gpt2, "bert": build_bert, "opt": build_opt, "gpt_neox": build_gpt_neox, "t5": build_t5}
SDPA = {"gpt2", "bert", "opt", "gpt_neox"}
