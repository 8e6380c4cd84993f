#!/usr/bin/python3
"""Whole-model reference figures from real PyTorch (independent ground truth for memest).

How to run (Debian's PyTorch 1.13 / torchvision 0.14, CPU only, no GPU, no pip):

    /usr/bin/python3 tests/tools/torch_figures.py > tests/reference/torch_figures.json
    /usr/bin/python3 tests/tools/torch_figures.py tests/reference/torch_figures.json
    /usr/bin/python3 tests/tools/torch_figures.py --models resnet18,gpt2 /tmp/subset.json
    /usr/bin/python3 tests/tools/torch_figures.py --models lstm-lm --merge tests/reference/torch_figures.json

With an output path the JSON goes to that file and the summary table to stdout; without one
the JSON goes to stdout and the table to stderr.  --merge (with --models) re-measures only the
given models and keeps the other models' entries of the existing output file (the top-level
metadata, e.g. the corrections list, is rewritten).  Runtime ~10 minutes on 2 cores (almost all
of it GPT-2; lstm-lm ~30 s); peak RSS ~11 GiB (GPT-2 at sequence 1024, batch 2).

What is measured, per model (fp32, model.train(), one forward pass, no backward):

* params_total / params_trainable: sum of numel over model.parameters() (shared parameters,
  e.g. GPT-2's tied lm_head/wte, are counted once because parameters() de-duplicates);
  param_tensors = number of distinct parameter tensors; buffers_count (elements),
  buffers_bytes, buffer_tensors, buffers_by_dtype (incl. non-persistent buffers);
  buffer_tensors_persistent = buffers that appear in state_dict().
* saved_activation_bytes: with torch.autograd.graph.saved_tensors_hooks, every tensor autograd
  saves for backward is recorded; storages are de-duplicated by storage data_ptr, storages that
  belong to a parameter or buffer are excluded, each remaining storage counts its full nbytes.
  The model input storage is included when autograd saves it (e.g. the first conv saves the
  image, embeddings save the int64 ids); it is also reported alone as saved_input_bytes.
* saved_activation_bytes_cuda_corrected: the same figure with the CPU-vs-CUDA differences
  listed in CORRECTIONS (and in the JSON "corrections" list) applied.  For lstm-lm this is a
  second measurement, with nn.LSTM run the way CUDA runs it without cuDNN (RNN.cpp's CUDA branch
  replayed with real ops, _thnn_fused_lstm_cell stood in for by an autograd.Function; correction
  lstm_cuda_native_path); lstm-lm's entry also has cuda_path (that measurement: by_grad_fn,
  by_module_type, lstm_per_layer, verification) and keeps the CPU-path figures
  (saved_activation_bytes, lstm_internal_bytes, by_grad_fn, by_module_type,
  saved_activation_bytes_cpu_lstm_masks_corrected).
* by_grad_fn: bytes/storages per grad_fn class, each storage attributed to the first grad_fn
  that saved it (pack order); by_module_type: the same per innermost nn.Module class active
  when the storage was first saved.
* output_shape: shape(s) of the model output.

Everything is deterministic: torch.manual_seed(0) before building each model and before each
forward; the figures depend only on shapes, not on values.
"""
import gc
import json
import math
import sys
from collections import OrderedDict

import torch
import torch.library
import torch.nn as nn
import torch.nn.functional as F
import torch.utils._python_dispatch
import torchvision

from provenance import stamp

torch.set_num_threads(2)

# --------------------------------------------------------------------------- corrections
LSTM_PART_LABELS_DOC = OrderedDict([
    ("input", "layer input storage (x_t views saved by matmul_ih's MmBackward0 as self; layer 0: the tensor fed "
              "to the LSTM, layer l>0: the dropout output of layer l-1) [T,B,I]"),
    ("h0_zeros", "initial h: the whole [L,B,H] zeros storage, first saved by layer 0's t=0 matmul_hh"),
    ("h_prev", "h_{t-1} for t>=1 (matmul_hh's MmBackward0 self) [B,H] each, T-1 per layer"),
    ("input_gates", "ThnnFusedLstmCellBackward0.input_gates = matmul_ih output [B,4H], T per layer"),
    ("hidden_gates", "ThnnFusedLstmCellBackward0.hidden_gates = matmul_hh output [B,4H], T per layer"),
    ("c0_zeros", "initial c: the whole [L,B,H] zeros storage, first saved as layer 0's t=0 cx "
                 "(cx for t>=1 is the previous step's cy: same storage, counted there)"),
    ("cy", "ThnnFusedLstmCellBackward0.result1 = c_t [B,H], T per layer"),
    ("workspace", "ThnnFusedLstmCellBackward0.result2 = activated gates [B,4H], T per layer"),
    ("dropout_mask", "inter-layer dropout mask on this layer's output [T,B,H] (cpu: float32, cuda: bool)"),
])

CORRECTIONS = [
    {
        "id": "dropout_mask_bool",
        "what": "Dropout masks",
        "cpu": "torch 1.13 CPU F.dropout (train) computes x * noise with noise = bernoulli(1-p)/(1-p) "
               "as a float32 tensor of the input's shape; MulBackward0 saves noise (4 bytes/element).",
        "cuda": "On CUDA, non-inplace dropout with 0<p<1 calls native_dropout; NativeDropoutBackward0 "
                "saves only the bool mask (1 byte/element). The dropout output is not saved by dropout on "
                "either device.",
        "applied": "every float32 dropout mask is counted as numel*1 bytes instead of numel*4. Masks are "
                   "identified exactly via forward hooks on nn.Dropout modules (output.grad_fn is "
                   "MulBackward0, its _saved_other is the mask); the LSTM's internal inter-layer dropout "
                   "mask (inside nn.LSTM, no module) is identified as a MulBackward0._saved_other that does "
                   "not require grad and contains only the values {0, 1/(1-p)}, and its count is asserted "
                   "to be num_layers-1. None of the models uses inplace dropout (CUDA dropout_ would keep "
                   "the float mask).",
    },
    {
        "id": "wrapped_scalar_cpu",
        "what": "0-d wrapped-number tensors",
        "cpu": "x * python_scalar / x / python_scalar save the scalar as a 0-d float64 (or int64) "
               "'wrapped number' tensor (8 bytes) in MulBackward0/DivBackward0._saved_other.",
        "cuda": "These wrapped numbers stay CPU tensors when the activations are on CUDA, so they use no "
                "GPU memory.",
        "applied": "0-d float64/int64 tensors saved as _saved_other of MulBackward0/DivBackward0 "
                   "(not parameters/buffers) are excluded from the CUDA-corrected figure "
                   "(BERT and GPT-2: one 8-byte scalar per layer from the 1/sqrt(d) scaling).",
    },
    {
        "id": "lstm_cuda_native_path",
        "what": "nn.LSTM internals (lstm-lm only)",
        "cpu": "torch 1.13 CPU runs nn.LSTM with the native ATen implementation: per layer one linear over the "
               "whole sequence for the input projection (saves the layer input [T*B,I]), then per time step "
               "addmm(h_{t-1}) and separate sigmoid_/tanh_/mul ops (saved per step: gates [B,4H], tanh(c_t) "
               "[B,H], and for t<T-1 h_t and c_t [B,H]; plus zero h0/c0 [L,B,H] created in forward).",
        "cuda": "CUDA's default is cuDNN (one CudnnRnnBackward0: input, hx, cx, output, the weights and an opaque "
                "reserve space whose size cuDNN chooses; not measurable without a GPU). Without cuDNN "
                "(torch.backends.cudnn.enabled=False or cuDNN not available) CUDA runs ATen's native code "
                "(aten/src/ATen/native/RNN.cpp, LSTMCell<CellParams>::operator(), input.is_cuda() branch): no "
                "whole-sequence input projection; per layer the input is unbind(0)-ed and per step "
                "igates = matmul_ih(x_t) = at::matmul(x_t, w_ih.t()) and hgates = matmul_hh(h_{t-1}) = "
                "at::matmul(h_{t-1}, w_hh.t()) (2-D: t + mm; MmBackward0 saves x_t and h_{t-1}, the transposed "
                "weights are parameter storage), then at::_thnn_fused_lstm_cell(igates, hgates, cx, b_ih, b_hh) "
                "-> (hy, cy, workspace [B,4H] = activated gates), whose ThnnFusedLstmCellBackward0 saves "
                "input_gates, hidden_gates, cx, input_bias, hidden_bias, result1 (= cy), result2 (= workspace) "
                "(torch/csrc/autograd/generated/Functions.h); the layer output is at::stack of the h_t; between "
                "layers (train) at::dropout, which on CUDA is native_dropout (bool mask).",
        "applied": "APPLIED, for the non-cuDNN CUDA path. For lstm-lm, saved_activation_bytes_cuda_corrected and "
                   "lstm_internal_bytes_cuda_corrected come from a second measurement of the whole model in which "
                   "nn.LSTM.forward is replaced by lstm_cuda_native_forward: RNN.cpp's CUDA branch replayed step by "
                   "step with real torch ops on CPU (unbind, torch.matmul(x, w.t()), stack, F.dropout) on the same "
                   "module's parameters (parameter storages excluded as usual), with the one CUDA-only kernel, "
                   "_thnn_fused_lstm_cell (no CPU kernel in torch 1.13), stood in for by a torch.autograd.Function "
                   "(ThnnFusedLstmCellStandIn) that computes hy, cy and the [B,4H] workspace with the kernel's "
                   "arithmetic from the real gate tensors and calls ctx.save_for_backward with the real node's seven "
                   "tensors (the two biases are parameters, so they add nothing), seen by saved_tensors_hooks like any "
                   "saved tensor and reported as ThnnFusedLstmCellBackward0; the dropout-mask correction above then "
                   "counts the inter-layer mask as bool. Checked at every run (asserts): (1) the LSTM output, h_n, "
                   "c_n (random initial state) and the gradients w.r.t. the LSTM input and all LSTM parameters "
                   "(stand-in backward = the CUDA backward kernel's formulas) equal nn.LSTM's, and the whole model "
                   "output equals the unpatched model's (allclose, same RNG seed, hence the same dropout masks); "
                   "(2) the aten op sequence (names and tensor shapes) equals the one torch 1.13's own compiled "
                   "RNN.cpp issues in its CUDA branch, recorded by running torch._VF.lstm on tensor-subclass wrappers "
                   "that report device cuda (no grad); (3) the same measurement with the real "
                   "aten::_thnn_fused_lstm_cell op (a CPU kernel registered from Python via torch.library, so torch's "
                   "generated ThnnFusedLstmCellBackward0 decides what is saved) gives identical figures. Per layer "
                   "(T steps, batch B, input I, hidden H, fp32): 4*(T*B*I + (T-1)*B*H + T*B*(4H+4H+4H+H)) bytes "
                   "(layer input, h_{t-1} for t>=1, input_gates, hidden_gates, workspace, cy; cx for t>=1 is the "
                   "previous cy), plus the zero h0 and c0 [L,B,H] (whole storages, 4*L*B*H bytes each) and one "
                   "[T,B,H] bool mask per inter-layer dropout. The raw CPU figures stay in saved_activation_bytes / "
                   "lstm_internal_bytes / by_grad_fn / by_module_type; the former CPU-path figures with only the "
                   "mask correction are kept as saved_activation_bytes_cpu_lstm_masks_corrected / "
                   "lstm_internal_bytes_cpu_lstm_masks_corrected; the CUDA-path measurement (its by_grad_fn, "
                   "by_module_type, lstm_per_layer, verification) is under cuda_path. cuDNN (CUDA's default, opaque "
                   "reserve space) is NOT modelled; no cuDNN figure is invented.",
        "lstm_per_layer_labels": LSTM_PART_LABELS_DOC,
    },
    {
        "id": "batchnorm_cudnn_reserve_not_corrected",
        "what": "BatchNorm on CUDA",
        "cpu": "NativeBatchNormBackward0 saves input, save_mean[C], save_invstd[C] (fp32) + weight/running stats.",
        "cuda": "CUDA fp32 uses cudnn_batch_norm: same input and per-channel mean/invstd, plus a cuDNN "
                "reserve-space tensor (size not measurable here; for plain BN mode it is normally empty).",
        "applied": "NOT corrected (no figure invented).",
    },
]


# --------------------------------------------------------------------------- models
class BertEmbeddings(nn.Module):
    def __init__(self, vocab=30522, hidden=768, max_pos=512, type_vocab=2, eps=1e-12, p=0.1):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden, padding_idx=0)
        self.position_embeddings = nn.Embedding(max_pos, hidden)
        self.token_type_embeddings = nn.Embedding(type_vocab, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=eps)
        self.dropout = nn.Dropout(p)

    def forward(self, input_ids):
        B, s = input_ids.shape
        # As specified for memest: created in forward (HF registers [1,512] buffers and slices/expands them).
        token_type_ids = torch.zeros(B, s, dtype=torch.long)
        position_ids = torch.arange(s, dtype=torch.long).unsqueeze(0)
        inputs_embeds = self.word_embeddings(input_ids)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)
        embeddings = inputs_embeds + token_type_embeddings
        position_embeddings = self.position_embeddings(position_ids)
        embeddings += position_embeddings
        embeddings = self.LayerNorm(embeddings)
        embeddings = self.dropout(embeddings)
        return embeddings


class BertSelfAttention(nn.Module):
    def __init__(self, hidden=768, heads=12, p=0.1):
        super().__init__()
        self.num_attention_heads = heads
        self.attention_head_size = hidden // heads
        self.all_head_size = hidden
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(p)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        mixed_query_layer = self.query(hidden_states)
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = self.transpose_for_scores(mixed_query_layer)
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        context_layer = context_layer.view(new_context_layer_shape)
        return context_layer


class BertSelfOutput(nn.Module):
    def __init__(self, hidden=768, eps=1e-12, p=0.1):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=eps)
        self.dropout = nn.Dropout(p)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


class BertAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.self = BertSelfAttention()
        self.output = BertSelfOutput()

    def forward(self, hidden_states):
        self_outputs = self.self(hidden_states)
        return self.output(self_outputs, hidden_states)


class BertIntermediate(nn.Module):
    def __init__(self, hidden=768, inter=3072):
        super().__init__()
        self.dense = nn.Linear(hidden, inter)
        self.intermediate_act_fn = nn.GELU()

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class BertOutput(nn.Module):
    def __init__(self, hidden=768, inter=3072, eps=1e-12, p=0.1):
        super().__init__()
        self.dense = nn.Linear(inter, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=eps)
        self.dropout = nn.Dropout(p)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


class BertLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = BertAttention()
        self.intermediate = BertIntermediate()
        self.output = BertOutput()

    def forward(self, hidden_states):
        attention_output = self.attention(hidden_states)
        intermediate_output = self.intermediate(attention_output)
        return self.output(intermediate_output, attention_output)


class BertPooler(nn.Module):
    def __init__(self, hidden=768):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        first_token_tensor = hidden_states[:, 0]
        pooled_output = self.dense(first_token_tensor)
        return self.activation(pooled_output)


class BertModel(nn.Module):
    def __init__(self, layers=12):
        super().__init__()
        self.embeddings = BertEmbeddings()
        self.encoder = nn.ModuleList([BertLayer() for _ in range(layers)])
        self.pooler = BertPooler()

    def forward(self, input_ids):
        h = self.embeddings(input_ids)
        for layer in self.encoder:
            h = layer(h)
        return h, self.pooler(h)


class GPT2Attention(nn.Module):
    def __init__(self, E=768, heads=12, n_pos=1024, p=0.1):
        super().__init__()
        self.embed_dim = E
        self.num_heads = heads
        self.head_dim = E // heads
        self.split_size = E
        self.register_buffer("bias", torch.tril(torch.ones((n_pos, n_pos), dtype=torch.bool)).view(1, 1, n_pos, n_pos),
                             persistent=False)
        self.c_attn = nn.Linear(E, 3 * E)
        self.c_proj = nn.Linear(E, E)
        self.attn_dropout = nn.Dropout(p)
        self.resid_dropout = nn.Dropout(p)

    def _split_heads(self, tensor):
        new_shape = tensor.size()[:-1] + (self.num_heads, self.head_dim)
        return tensor.view(new_shape).permute(0, 2, 1, 3)

    def _merge_heads(self, tensor):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (self.num_heads * self.head_dim,)
        return tensor.view(new_shape)

    def _attn(self, query, key, value):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / (value.size(-1) ** 0.5)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
        mask_value = torch.tensor(torch.finfo(attn_weights.dtype).min, dtype=attn_weights.dtype,
                                  device=attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights, mask_value)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = self.attn_dropout(attn_weights)
        return torch.matmul(attn_weights, value)

    def forward(self, hidden_states):
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        query = self._split_heads(query)
        key = self._split_heads(key)
        value = self._split_heads(value)
        attn_output = self._attn(query, key, value)
        attn_output = self._merge_heads(attn_output)
        attn_output = self.c_proj(attn_output)
        return self.resid_dropout(attn_output)


class GPT2MLP(nn.Module):
    def __init__(self, E=768, inner=3072, p=0.1):
        super().__init__()
        self.c_fc = nn.Linear(E, inner)
        self.c_proj = nn.Linear(inner, E)
        self.act = nn.GELU(approximate="tanh")
        self.dropout = nn.Dropout(p)

    def forward(self, hidden_states):
        return self.dropout(self.c_proj(self.act(self.c_fc(hidden_states))))


class GPT2Block(nn.Module):
    def __init__(self, E=768):
        super().__init__()
        self.ln_1 = nn.LayerNorm(E, eps=1e-5)
        self.attn = GPT2Attention()
        self.ln_2 = nn.LayerNorm(E, eps=1e-5)
        self.mlp = GPT2MLP()

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_output = self.attn(hidden_states)
        hidden_states = attn_output + residual
        residual = hidden_states
        hidden_states = self.ln_2(hidden_states)
        feed_forward_hidden_states = self.mlp(hidden_states)
        return residual + feed_forward_hidden_states


class GPT2LMHeadModel(nn.Module):
    def __init__(self, vocab=50257, n_pos=1024, E=768, layers=12):
        super().__init__()
        self.wte = nn.Embedding(vocab, E)
        self.wpe = nn.Embedding(n_pos, E)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList([GPT2Block() for _ in range(layers)])
        self.ln_f = nn.LayerNorm(E, eps=1e-5)
        self.lm_head = nn.Linear(E, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, input_ids):
        s = input_ids.size(-1)
        position_ids = torch.arange(0, s, dtype=torch.long, device=input_ids.device).unsqueeze(0)
        inputs_embeds = self.wte(input_ids)
        position_embeds = self.wpe(position_ids)
        hidden_states = inputs_embeds + position_embeds
        hidden_states = self.drop(hidden_states)
        for block in self.h:
            hidden_states = block(hidden_states)
        hidden_states = self.ln_f(hidden_states)
        return self.lm_head(hidden_states)


class LSTMLM(nn.Module):
    """pytorch/examples word_language_model RNNModel('LSTM', 10000, 650, 650, 2, 0.5), untied,
    zero initial state, returning the decoder output (no log_softmax, as specified for memest)."""

    def __init__(self, ntoken=10000, ninp=650, nhid=650, nlayers=2, dropout=0.5):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nlayers, self.nhid = nlayers, nhid

    def forward(self, input):
        bsz = input.size(1)
        hidden = (torch.zeros(self.nlayers, bsz, self.nhid), torch.zeros(self.nlayers, bsz, self.nhid))
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        return self.decoder(output)


def mlp_mnist():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def img_input(B):
    return [torch.randn(B, 3, 224, 224)]


MODELS = OrderedDict([
    ("alexnet", dict(build=lambda: torchvision.models.alexnet(weights=None), input=img_input,
                     input_desc="[B,3,224,224] float32", params=61100840)),
    ("vgg16", dict(build=lambda: torchvision.models.vgg16(weights=None), input=img_input,
                   input_desc="[B,3,224,224] float32", params=138357544)),
    ("resnet18", dict(build=lambda: torchvision.models.resnet18(weights=None), input=img_input,
                      input_desc="[B,3,224,224] float32", params=11689512)),
    ("resnet50", dict(build=lambda: torchvision.models.resnet50(weights=None), input=img_input,
                      input_desc="[B,3,224,224] float32", params=25557032)),
    ("mobilenet_v2", dict(build=lambda: torchvision.models.mobilenet_v2(weights=None), input=img_input,
                          input_desc="[B,3,224,224] float32", params=3504872)),
    ("bert-base", dict(build=BertModel, input=lambda B: [torch.randint(0, 30522, (B, 128), dtype=torch.long)],
                       input_desc="input_ids [B,128] int64", params=109482240,
                       notes=["token_type_ids (zeros [B,s] int64) and position_ids (arange(s) [1,s] int64) are created "
                              "in forward as specified, so they are saved by EmbeddingBackward0 as new storages "
                              "(8*B*s + 8*s bytes). Hugging Face registers them as [1,512] buffers instead "
                              "(then they would be buffer storage and excluded, and buffers would hold 1024 int64).",
                              "No attention-mask addition; output = (last_hidden_state, pooled_output)."])),
    ("gpt2", dict(build=GPT2LMHeadModel, input=lambda B: [torch.randint(0, 50257, (B, 1024), dtype=torch.long)],
                  input_desc="input_ids [B,1024] int64", params=124439808,
                  notes=["nn.Linear instead of HF Conv1D; lm_head tied to wte (counted once).",
                         "causal mask: 12 non-persistent bool buffers [1,1,1024,1024]; torch.where saves a view of "
                         "it (buffer storage, excluded)."])),
    ("lstm-lm", dict(build=LSTMLM, input=lambda B: [torch.randint(0, 10000, (35, B), dtype=torch.long)],
                     input_desc="[35,B] int64 (seq first)",
                     params=10000 * 650 + 2 * (4 * 650 * (650 + 650) + 2 * 4 * 650) + 650 * 10000 + 10000,
                     notes=["The upstream example returns F.log_softmax(decoded.view(-1, ntoken)); as specified here "
                            "the model ends at the decoder Linear (log_softmax would additionally save its "
                            "[35*B,10000] fp32 result).",
                            "saved_activation_bytes, by_grad_fn, by_module_type, lstm_internal_bytes: nn.LSTM as "
                            "torch 1.13 runs it on CPU. saved_activation_bytes_cuda_corrected and "
                            "lstm_internal_bytes_cuda_corrected: nn.LSTM as CUDA runs it without cuDNN, see "
                            "correction lstm_cuda_native_path; that measurement is under cuda_path."])),
    ("mlp-mnist", dict(build=mlp_mnist, input=lambda B: [torch.randn(B, 1, 28, 28)],
                       input_desc="[B,1,28,28] float32", params=669706)),
])


# --------------------------------------------------------------------------- LSTM: CUDA native (non-cuDNN) path
# torch 1.13 on CUDA with cuDNN disabled (or unavailable) runs nn.LSTM through ATen's native code
# (aten/src/ATen/native/RNN.cpp): lstm() -> _lstm_impl -> apply_layer_stack -> FullLayer ->
# LSTMCell<CellParams>::operator(), whose `input.is_cuda()` branch has no whole-sequence input
# projection.  Per layer: hx.unbind(0) / cx.unbind(0) give each layer its initial state,
# inputs.unbind(0) the steps; per step
#     igates = params.matmul_ih(x_t)      = at::matmul(x_t, w_ih.t())   (2-D x 2-D -> t + mm)
#     hgates = params.matmul_hh(h_{t-1})  = at::matmul(h,   w_hh.t())
#     (hy, cy, workspace) = at::_thnn_fused_lstm_cell(igates, hgates, cx, b_ih, b_hh)
# then at::stack(step outputs, 0); between layers (train, p > 0) at::dropout(layer_output, p, true);
# finally at::stack of the final h and c of every layer.  Everything above is a real torch op on CPU
# too, except _thnn_fused_lstm_cell, whose only kernel is CUDA (aten/src/ATen/native/cuda/RNN.cu).
# It is stood in for by ThnnFusedLstmCellStandIn: same math (kernel lstm_cell_forward: gates =
# igates + hgates + b_ih + b_hh; workspace [B,4H] = (sigmoid(i), sigmoid(f), tanh(g), sigmoid(o));
# cy = f*cx + i*g; hy = o*tanh(cy)), and it saves exactly what the generated
# ThnnFusedLstmCellBackward0 saves (torch/csrc/autograd/generated/Functions.h, torch 1.13):
# input_gates_, hidden_gates_, cx_, input_bias_, hidden_bias_, result1_ (= cy), result2_ (= workspace).
FUSED_LSTM_SAVED = ("input_gates", "hidden_gates", "cx", "input_bias", "hidden_bias", "result1", "result2")
FUSED_LSTM_GRAD_FN = "ThnnFusedLstmCellBackward0"

# Set by lstm_cuda_native_forward while it runs and read by measure()'s pack hook: which layer and
# which RNN.cpp call is saving (for the per-layer breakdown), and the initial-state storages.
LSTM_TRACE = {"tag": None, "init_ptrs": set()}


def fused_lstm_cell_math(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    """The arithmetic of RNN.cu kernel::lstm_cell_forward; returns fresh (hy, cy, workspace)."""
    gates = input_gates + hidden_gates
    if input_bias is not None:
        gates = gates + input_bias + hidden_bias
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    hy = o * cy.tanh()
    workspace = torch.cat((i, f, g, o), 1)  # [B,4H], layout of the CUDA workspace
    return hy, cy, workspace


class ThnnFusedLstmCellStandIn(torch.autograd.Function):
    """Stand-in for aten::_thnn_fused_lstm_cell (CUDA-only kernel).  Outputs (hy, cy, workspace) like
    the real op (workspace not differentiable); saves the same seven tensors as the real
    ThnnFusedLstmCellBackward0, in the same order (the two biases are the LSTM's parameters).
    backward() is RNN.cu kernel::lstm_cell_backward (+ grad_bias = grad_gates.sum(0))."""
    GRAD_FN_NAME = FUSED_LSTM_GRAD_FN
    SAVED_NAMES = FUSED_LSTM_SAVED

    @staticmethod
    def forward(ctx, input_gates, hidden_gates, cx, input_bias, hidden_bias):
        with dispatch_trace_op("aten._thnn_fused_lstm_cell.default",
                               (input_gates, hidden_gates, cx, input_bias, hidden_bias)):
            hy, cy, workspace = fused_lstm_cell_math(input_gates, hidden_gates, cx, input_bias, hidden_bias)
        ctx.mark_non_differentiable(workspace)
        ctx.save_for_backward(input_gates, hidden_gates, cx, input_bias, hidden_bias, cy, workspace)
        return hy, cy, workspace

    @staticmethod
    def backward(ctx, grad_hy, grad_cy, _grad_workspace):
        _, _, cx, input_bias, _, cy, workspace = ctx.saved_tensors
        i, f, g, o = workspace.chunk(4, 1)
        tcy = cy.tanh()
        gog = grad_hy * tcy * (1 - o) * o
        gc = grad_hy * o * (1 - tcy * tcy) + grad_cy
        grad_gates = torch.cat((gc * g * (1 - i) * i, gc * cx * (1 - f) * f, gc * i * (1 - g * g), gog), 1)
        grad_bias = grad_gates.sum(0) if input_bias is not None else None
        return grad_gates, grad_gates, gc * f, grad_bias, grad_bias


_ATEN_FUSED_LSTM_LIB = []


def aten_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias, hidden_bias):
    """The real aten::_thnn_fused_lstm_cell op with a CPU kernel registered from Python (cross-check
    only): torch's own generated autograd creates the real ThnnFusedLstmCellBackward0 and decides
    what it saves.  Its backward (_thnn_fused_lstm_cell_backward_impl) has no CPU kernel, so this
    variant is used for forward values and saved-tensor figures only."""
    if not _ATEN_FUSED_LSTM_LIB:
        lib = torch.library.Library("aten", "IMPL")
        lib.impl("_thnn_fused_lstm_cell", fused_lstm_cell_math, "CPU")
        _ATEN_FUSED_LSTM_LIB.append(lib)  # the registration lives as long as the Library object
    return torch.ops.aten._thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias, hidden_bias)


LSTM_CELLS = {"standin": ThnnFusedLstmCellStandIn.apply, "aten": aten_fused_lstm_cell}


def lstm_cuda_native_forward(lstm, input, hx=None, cell="standin"):
    """nn.LSTM.forward as torch 1.13 runs it on CUDA without cuDNN (RNN.cpp, see above), with real
    ops on CPU tensors and the module's own parameters.  Seq-first, unidirectional, with biases,
    no projections (what lstm-lm uses)."""
    assert not lstm.batch_first and not lstm.bidirectional and lstm.bias and lstm.proj_size == 0
    assert input.dim() == 3
    fused = LSTM_CELLS[cell]
    L, H = lstm.num_layers, lstm.hidden_size
    if hx is None:
        z = torch.zeros(L, input.size(1), H, dtype=input.dtype)
        hx = (z, z)
    h0, c0 = hx
    LSTM_TRACE["init_ptrs"] = {sptr(h0), sptr(c0)}
    layer_hx = h0.unbind(0)  # _lstm_impl: hx.unbind(0), cx.unbind(0)
    layer_cx = c0.unbind(0)
    layer_input = input
    final_h, final_c = [], []
    try:
        for l in range(L):
            w_ih, w_hh, b_ih, b_hh = (getattr(lstm, "%s_l%d" % (n, l)) for n in ("weight_ih", "weight_hh",
                                                                                  "bias_ih", "bias_hh"))
            h, c = layer_hx[l], layer_cx[l]
            step_outputs = []
            for x_t in layer_input.unbind(0):  # FullLayer on a non-CPU device: inputs.unbind(0)
                LSTM_TRACE["tag"] = (l, "matmul_ih")
                igates = torch.matmul(x_t, w_ih.t())  # CellParams::matmul_ih
                LSTM_TRACE["tag"] = (l, "matmul_hh")
                hgates = torch.matmul(h, w_hh.t())  # CellParams::matmul_hh
                LSTM_TRACE["tag"] = (l, "fused_cell")
                h, c, _workspace = fused(igates, hgates, c, b_ih, b_hh)
                step_outputs.append(h)  # matmul_hr(hy) is hy itself without projections
            LSTM_TRACE["tag"] = None
            layer_output = torch.stack(step_outputs, 0)
            final_h.append(h)
            final_c.append(c)
            layer_input = layer_output
            if lstm.dropout != 0 and lstm.training and l < L - 1:
                LSTM_TRACE["tag"] = (l, "dropout")
                with dispatch_trace_op("dropout", (layer_output,)):
                    layer_input = F.dropout(layer_output, lstm.dropout, training=True)
                LSTM_TRACE["tag"] = None
    finally:
        LSTM_TRACE["tag"] = None
    return layer_input, (torch.stack(final_h, 0), torch.stack(final_c, 0))


# ---- op-sequence check against the real RNN.cpp CUDA branch
# A wrapper tensor subclass that reports device "cuda" makes torch 1.13's own compiled RNN.cpp take its
# CUDA branch (cuDNN/MIOpen are unavailable in this build, so it falls through to _lstm_impl); every
# aten op it issues reaches __torch_dispatch__, is logged and computed on the wrapped CPU tensor.
# Autograd cannot run on such tensors without a CUDA build (no CUDA device guard), so this check is
# run under no_grad and only compares the op sequence (names and tensor shapes) with what
# lstm_cuda_native_forward issues.
_DISPATCH_LOG = {"log": None, "suspended": 0}


def _shapes(args):
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            out.append(tuple(a.shape))
        elif isinstance(a, (list, tuple)) and any(isinstance(e, torch.Tensor) for e in a):
            out.append(tuple(tuple(e.shape) for e in a))
    return tuple(out)


class dispatch_trace_op:
    """While tracing lstm_cuda_native_forward: log one entry for a composite step (the stand-in
    kernel, dropout) and hide the ops it is implemented with."""

    def __init__(self, name, args):
        self.name, self.args = name, args

    def __enter__(self):
        if _DISPATCH_LOG["log"] is not None and not _DISPATCH_LOG["suspended"]:
            _DISPATCH_LOG["log"].append((self.name, _shapes(self.args)))
        _DISPATCH_LOG["suspended"] += 1

    def __exit__(self, *exc):
        _DISPATCH_LOG["suspended"] -= 1


def _normalize_op(name):
    # CUDA at::dropout(train, 0<p<1) is native_dropout; on CPU it is bernoulli_/div_/mul.
    return "dropout" if name == "aten.native_dropout.default" else name


class _FakeCuda(torch.Tensor):
    @staticmethod
    def __new__(cls, elem):
        r = torch.Tensor._make_wrapper_subclass(cls, elem.size(), strides=elem.stride(),
                                                storage_offset=elem.storage_offset(), dtype=elem.dtype,
                                                device="cuda", requires_grad=False)
        r.elem = elem
        return r

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        unwrap = lambda x: x.elem if isinstance(x, _FakeCuda) else x
        flat = lambda a: [unwrap(e) for e in a] if isinstance(a, (list, tuple)) else unwrap(a)
        _DISPATCH_LOG["log"].append((_normalize_op(str(func)), _shapes(args)))
        uargs = [flat(a) for a in args]
        if func is torch.ops.aten._thnn_fused_lstm_cell.default:
            out = fused_lstm_cell_math(*uargs)
        else:
            out = func(*uargs, **{k: flat(v) for k, v in kwargs.items()})
        if isinstance(out, torch.Tensor):
            return _FakeCuda(out)
        if isinstance(out, (list, tuple)):
            return type(out)(_FakeCuda(o) if isinstance(o, torch.Tensor) else o for o in out)
        return out


class _LogMode(torch.utils._python_dispatch.TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not _DISPATCH_LOG["suspended"]:
            _DISPATCH_LOG["log"].append((_normalize_op(str(func)), _shapes(args)))
        return func(*args, **(kwargs or {}))


def compare_op_sequences(lstm, T, B):
    """Op sequence of the real RNN.cpp CUDA branch (torch 1.13 binary, fake-CUDA tensors) vs the op
    sequence of lstm_cuda_native_forward (CPU tensors).  Returns a summary; asserts equality."""
    L, I, H = lstm.num_layers, lstm.input_size, lstm.hidden_size
    x = torch.randn(T, B, I)
    h0, c0 = torch.zeros(L, B, H), torch.zeros(L, B, H)
    training = lstm.training
    lstm.train()
    try:
        with torch.no_grad():
            _DISPATCH_LOG["log"] = real = []
            weights = [_FakeCuda(w.detach()) for w in lstm._flat_weights]
            out = torch._VF.lstm(_FakeCuda(x), (_FakeCuda(h0), _FakeCuda(c0)), weights, lstm.bias,
                                 lstm.num_layers, float(lstm.dropout), True, lstm.bidirectional,
                                 lstm.batch_first)
            assert all(isinstance(o, _FakeCuda) for o in out)
            _DISPATCH_LOG["log"] = mine = []
            with _LogMode():
                lstm_cuda_native_forward(lstm, x, (h0, c0))
    finally:
        _DISPATCH_LOG["log"] = None
        lstm.train(training)
    assert real == mine, "op sequences differ:\n%s\n%s" % (real[:12], mine[:12])
    counts = {}
    for n, _ in real:
        counts[n] = counts.get(n, 0) + 1
    return {"ops": len(real), "op_counts": counts}


def _maxdiff(a, b):
    return float((a - b).abs().max())


def verify_lstm_cuda_path(model, inputs, atol=1e-5, rtol=1e-4):
    """Numerical checks of lstm_cuda_native_forward against nn.LSTM (CPU) in train mode, same RNG
    seed (so the same inter-layer dropout mask): LSTM outputs, h_n, c_n with random initial state,
    the gradients w.r.t. the LSTM input and all LSTM parameters (stand-in backward), and the whole
    model's output.  Also the op-sequence check above.  Asserts; returns a summary."""
    (lstm,) = [m for m in model.modules() if isinstance(m, nn.LSTM)]
    model.train()
    T, B = inputs[0].shape[:2]
    L, I, H = lstm.num_layers, lstm.input_size, lstm.hidden_size
    torch.manual_seed(1)
    x = torch.randn(T, B, I, requires_grad=True)
    hx = (0.5 * torch.randn(L, B, H), 0.5 * torch.randn(L, B, H))
    gy, gh, gc = torch.randn(T, B, H), torch.randn(L, B, H), torch.randn(L, B, H)
    params = list(lstm.parameters())
    runs = {}
    for path in ("nn.LSTM", "standin", "aten"):
        torch.manual_seed(2)
        if path == "nn.LSTM":
            y, (hn, cn) = lstm(x, hx)
        else:
            y, (hn, cn) = lstm_cuda_native_forward(lstm, x, hx, cell=path)
        grads = None
        if path != "aten":
            loss = (y * gy).sum() + (hn * gh).sum() + (cn * gc).sum()
            grads = torch.autograd.grad(loss, [x] + params)
        runs[path] = ([y.detach(), hn.detach(), cn.detach()], grads)
    res = {"atol": atol, "rtol": rtol}
    ref_out, ref_grads = runs["nn.LSTM"]
    for path in ("standin", "aten"):
        out, grads = runs[path]
        for a, b in zip(out, ref_out):
            assert torch.allclose(a, b, atol=atol, rtol=rtol), (path, _maxdiff(a, b))
        res["lstm_outputs_max_abs_diff_" + path] = float("%.2g" % max(_maxdiff(a, b) for a, b in zip(out, ref_out)))
    _, grads = runs["standin"]
    for a, b in zip(grads, ref_grads):
        assert torch.allclose(a, b, atol=atol, rtol=rtol), ("grad", _maxdiff(a, b))
    res["lstm_grads_max_abs_diff_standin"] = float("%.2g" % max(_maxdiff(a, b) for a, b in zip(grads, ref_grads)))
    with torch.no_grad():
        torch.manual_seed(3)
        ref = model(*inputs)
        lstm.forward = lambda input, hx=None: lstm_cuda_native_forward(lstm, input, hx)
        try:
            torch.manual_seed(3)
            sub = model(*inputs)
        finally:
            del lstm.forward
    assert torch.allclose(sub, ref, atol=atol, rtol=rtol), _maxdiff(sub, ref)
    res["model_output_max_abs_diff_standin"] = float("%.2g" % _maxdiff(sub, ref))
    res["op_sequence_vs_rnn_cpp_cuda_branch"] = compare_op_sequences(lstm, T, B)
    return res


def measure_lstm_cuda_path(model, inputs, cell="standin"):
    """measure() with every nn.LSTM's forward replaced by lstm_cuda_native_forward (module hooks and
    the 'LSTM' module context stay as they are)."""
    lstms = [m for m in model.modules() if isinstance(m, nn.LSTM)]
    for m in lstms:
        m.forward = (lambda mod: lambda input, hx=None: lstm_cuda_native_forward(mod, input, hx, cell))(m)
    try:
        torch.manual_seed(0)
        return measure(model, inputs)
    finally:
        for m in lstms:
            del m.forward


# --------------------------------------------------------------------------- measurement
def sptr(t):
    return t.storage().data_ptr()


def sbytes(t):
    return t.storage().nbytes()


def dtn(dt):
    return str(dt).replace("torch.", "")


def reachable(roots):
    seen = {}
    stack = [r for r in roots if r is not None]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen[id(n)] = n
        for nf, _ in n.next_functions:
            if nf is not None:
                stack.append(nf)
    return list(seen.values())


def flat_tensors(obj):
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in flat_tensors(o)]
    return []


def static_info(model):
    params = list(model.parameters())
    bufs = list(model.named_buffers())
    persistent = set(model.state_dict().keys())
    by_dtype = {}
    for _, b in bufs:
        d = by_dtype.setdefault(dtn(b.dtype), {"tensors": 0, "elements": 0, "bytes": 0})
        d["tensors"] += 1
        d["elements"] += b.numel()
        d["bytes"] += b.numel() * b.element_size()
    return {
        "params_total": sum(p.numel() for p in params),
        "params_trainable": sum(p.numel() for p in params if p.requires_grad),
        "param_tensors": len(params),
        "param_bytes": sum(p.numel() * p.element_size() for p in params),
        "buffers_count": sum(b.numel() for _, b in bufs),
        "buffers_bytes": sum(b.numel() * b.element_size() for _, b in bufs),
        "buffer_tensors": len(bufs),
        "buffer_tensors_persistent": sum(1 for n, _ in bufs if n in persistent),
        "buffers_by_dtype": by_dtype,
    }


def lstm_per_layer(seen):
    """Per-layer breakdown of the storages saved by lstm_cuda_native_forward (tagged in pack())."""
    role_attr = {("matmul_ih", "_saved_self"): "input", ("matmul_hh", "_saved_self"): "h_prev",
                 ("dropout", "_saved_other"): "dropout_mask"}
    role_attr.update((("fused_cell", "_saved_" + a), k) for a, k in (
        ("input_gates", "input_gates"), ("hidden_gates", "hidden_gates"), ("cx", "cx"), ("result1", "cy"),
        ("result2", "workspace")))
    out = {"layers": {}, "total": {"storages": 0, "bytes": 0, "bytes_cuda_corrected": 0}}
    for r in seen.values():
        if r["tag"] is None:
            assert r["module"] != "LSTM", ("untagged LSTM storage", r["grad_fn"], r["attr"])
            continue
        layer, role = r["tag"]
        label = role_attr[(role, r["attr"])]
        if label in ("h_prev", "cx"):
            if r["init_state"]:
                label = "h0_zeros" if label == "h_prev" else "c0_zeros"
            assert label != "cx", "a cx storage first saved as cx must be the initial state"
        else:
            assert not r["init_state"], label
        d = out["layers"].setdefault(str(layer), OrderedDict((k, None) for k in LSTM_PART_LABELS_DOC))
        for k in (label, "total"):
            e = d.get(k) or {"storages": 0, "bytes": 0, "bytes_cuda_corrected": 0}
            e["storages"] += 1
            e["bytes"] += r["bytes"]
            e["bytes_cuda_corrected"] += r["cuda_bytes"]
            d[k] = e
        for k in ("storages", "bytes"):
            out["total"][k] += 1 if k == "storages" else r["bytes"]
        out["total"]["bytes_cuda_corrected"] += r["cuda_bytes"]
    for d in out["layers"].values():
        for k in [k for k, v in d.items() if v is None]:
            del d[k]
    return out


def measure(model, inputs):
    model.train()
    pb = {sptr(p) for p in model.parameters()} | {sptr(b) for b in model.buffers()}
    in_ptrs = {sptr(t) for t in inputs}

    # module context stack (innermost module class at save time)
    stack = []
    handles = []
    dropout_masks = {}  # storage ptr -> (numel, p)

    def pre(m, a):
        stack.append(type(m).__name__)

    def post(m, a, out):
        stack.pop()
        # inplace dropout (EfficientNet's classifier) is dropout_, float noise on CUDA too: not corrected
        if isinstance(m, nn.Dropout) and m.training and m.p > 0 and not m.inplace and isinstance(out, torch.Tensor) \
                and out.grad_fn is not None:
            gf = out.grad_fn
            assert type(gf).__name__ == "MulBackward0", type(gf).__name__
            mask = gf._saved_other
            assert mask.dtype == torch.float32 and mask.shape == out.shape and not mask.requires_grad
            dropout_masks[sptr(mask)] = (mask.numel(), m.p)

    for m in model.modules():
        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post))

    packs = []  # (tensor, module_ctx, lstm_tag)
    unpacked = []

    class Packed:
        __slots__ = ("idx", "t")

        def __init__(self, idx, t):
            self.idx, self.t = idx, t

    def pack(t):
        packs.append((t, stack[-1] if stack else "<top>", LSTM_TRACE["tag"]))
        return Packed(len(packs) - 1, t)

    def unpack(pk):
        unpacked.append(pk.idx)  # lets the graph walk below map each saved attribute to its pack exactly
        return pk.t

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = model(*inputs)
    for h in handles:
        h.remove()
    outs = flat_tensors(out)

    # name every pack via the grad_fn graph: reading a _saved_* attribute calls unpack(), which
    # reports the index of the pack it came from.
    names = {}
    lstm_cands = []
    for node in reachable([t.grad_fn for t in outs]):
        gname = type(node).__name__
        if isinstance(node, torch.autograd.function.BackwardCFunction):
            # custom autograd.Function (the _thnn_fused_lstm_cell stand-in): named as the real node
            cls = node._forward_cls
            del unpacked[:]
            vals = node.saved_tensors
            assert len(unpacked) == len(vals) == len(cls.SAVED_NAMES), (gname, len(unpacked), len(vals))
            for i, a in zip(list(unpacked), cls.SAVED_NAMES):
                assert i not in names, (gname, a)
                names[i] = (cls.GRAD_FN_NAME, "_saved_" + a)
            continue
        for a in dir(node):
            if not a.startswith("_saved_"):
                continue
            del unpacked[:]
            try:
                v = getattr(node, a)
            except Exception:
                continue
            if isinstance(v, (list, tuple)) and any(isinstance(e, torch.Tensor) for e in v):
                # a tensor list (IndexBackward0's indices, torchvision's relative position
                # indices): each element is one pack, named after the attribute
                for i in list(unpacked):
                    assert i not in names, (gname, a)
                    names[i] = (gname, a)
                continue
            if not isinstance(v, torch.Tensor) or not unpacked:
                continue
            assert len(unpacked) == 1, (gname, a)
            i = unpacked[0]
            assert i not in names, (gname, a)
            names[i] = (gname, a)
            if gname == "MulBackward0" and a == "_saved_other":
                lstm_cands.append(i)
    # a node an in-place op on a view wrapped in CopySlices (EfficientNet's inplace dropout on the flattened
    # features) is not reachable through next_functions: its packs stay unnamed, but are counted
    assert len(names) <= len(packs), (len(names), len(packs))

    # LSTM-internal inter-layer dropout masks
    lstm_mods = [m for m in model.modules() if isinstance(m, nn.LSTM)]
    if lstm_mods:
        expected = sum(m.num_layers - 1 for m in lstm_mods if m.dropout > 0)
        found = 0
        for i in lstm_cands:
            t, ctx, _ = packs[i]
            if ctx != "LSTM" or t.requires_grad or t.dtype != torch.float32 or sptr(t) in dropout_masks:
                continue
            p = lstm_mods[0].dropout
            vals = torch.unique(t)
            if all(float(v) in (0.0, 1.0 / (1.0 - p)) for v in vals) and t.dim() == 3:
                dropout_masks[sptr(t)] = (t.numel(), p)
                found += 1
        assert found == expected, (found, expected)

    # per storage: first saver
    seen = {}
    for i, (t, ctx, tag) in enumerate(packs):
        ptr = sptr(t)
        if ptr in pb or ptr in seen:
            continue
        g, a = names.get(i, ("(unnamed)", "-"))
        wrapped = (t.dim() == 0 and t.dtype in (torch.float64, torch.int64) and g in ("MulBackward0", "DivBackward0")
                   and a == "_saved_other")
        seen[ptr] = dict(bytes=sbytes(t), grad_fn=g, attr=a, module=ctx, is_input=ptr in in_ptrs, wrapped=wrapped,
                         dtype=dtn(t.dtype), tag=tag, init_state=tag is not None and ptr in LSTM_TRACE["init_ptrs"])
    for ptr, r in seen.items():
        cb = r["bytes"]
        if ptr in dropout_masks:
            n, _ = dropout_masks[ptr]
            assert r["bytes"] == 4 * n
            cb = n
        if r["wrapped"]:
            cb = 0
        r["cuda_bytes"] = cb
    assert len(dropout_masks) == sum(1 for p in seen if p in dropout_masks)

    res = {
        "output_shape": [list(t.shape) for t in outs] if len(outs) > 1 else list(outs[0].shape),
        "saved_activation_bytes": sum(r["bytes"] for r in seen.values()),
        "saved_activation_bytes_cuda_corrected": sum(r["cuda_bytes"] for r in seen.values()),
        "saved_storages": len(seen),
        "saved_tensors_packed": len(packs),
        "saved_input_bytes": sum(r["bytes"] for r in seen.values() if r["is_input"]),
        "saved_bytes_by_dtype": {},
        "dropout_masks": {"count": len(dropout_masks), "elements": sum(n for n, _ in dropout_masks.values()),
                          "cpu_bytes": 4 * sum(n for n, _ in dropout_masks.values()),
                          "cuda_bytes": sum(n for n, _ in dropout_masks.values())},
        "wrapped_scalars": {"count": sum(1 for r in seen.values() if r["wrapped"]),
                            "bytes": sum(r["bytes"] for r in seen.values() if r["wrapped"])},
        "by_grad_fn": {},
        "by_module_type": {},
    }
    for r in seen.values():
        for key, k in (("by_grad_fn", r["grad_fn"]), ("by_module_type", r["module"])):
            d = res[key].setdefault(k, {"storages": 0, "bytes": 0, "bytes_cuda_corrected": 0})
            d["storages"] += 1
            d["bytes"] += r["bytes"]
            d["bytes_cuda_corrected"] += r["cuda_bytes"]
        d = res["saved_bytes_by_dtype"].setdefault(r["dtype"], 0)
        res["saved_bytes_by_dtype"][r["dtype"]] = d + r["bytes"]
    if lstm_mods:
        res["lstm_internal_bytes"] = res["by_module_type"]["LSTM"]["bytes"]
        res["lstm_internal_bytes_cuda_corrected"] = res["by_module_type"]["LSTM"]["bytes_cuda_corrected"]
    if any(r["tag"] is not None for r in seen.values()):
        res["lstm_per_layer"] = lstm_per_layer(seen)
        assert res["lstm_per_layer"]["total"]["bytes_cuda_corrected"] == res["lstm_internal_bytes_cuda_corrected"]
        assert res["lstm_per_layer"]["total"]["bytes"] == res["lstm_internal_bytes"]
    del packs, names, out, outs, seen
    return res


def fmt_mib(b):
    return "%.2f" % (b / 2.0 ** 20)


def add_lstm_cuda_path(model, inputs, r):
    """lstm-lm: replace the CUDA-corrected figures of the CPU nn.LSTM measurement r by the CUDA
    non-cuDNN path (correction lstm_cuda_native_path); keep the CPU ones; add r["cuda_path"]."""
    verification = verify_lstm_cuda_path(model, inputs)
    cuda = measure_lstm_cuda_path(model, inputs, "standin")
    real_op = measure_lstm_cuda_path(model, inputs, "aten")
    for k in ("saved_activation_bytes", "saved_activation_bytes_cuda_corrected", "saved_storages",
              "saved_tensors_packed", "dropout_masks", "by_grad_fn", "by_module_type", "lstm_per_layer"):
        assert cuda[k] == real_op[k], ("stand-in vs real _thnn_fused_lstm_cell op differ", k)
    verification["real_op_cross_check"] = (
        "identical figures, by_grad_fn, by_module_type and lstm_per_layer with aten::_thnn_fused_lstm_cell itself "
        "(CPU kernel registered via torch.library; torch's generated ThnnFusedLstmCellBackward0 saves)")
    assert cuda["output_shape"] == r["output_shape"]
    for k, v in r["by_module_type"].items():  # everything outside the LSTM is the same graph
        if k != "LSTM":
            assert cuda["by_module_type"][k] == v, k
    assert cuda["dropout_masks"]["count"] == r["dropout_masks"]["count"]
    r["saved_activation_bytes_cpu_lstm_masks_corrected"] = r["saved_activation_bytes_cuda_corrected"]
    r["lstm_internal_bytes_cpu_lstm_masks_corrected"] = r["lstm_internal_bytes_cuda_corrected"]
    r["saved_activation_bytes_cuda_corrected"] = cuda["saved_activation_bytes_cuda_corrected"]
    r["lstm_internal_bytes_cuda_corrected"] = cuda["lstm_internal_bytes_cuda_corrected"]
    del cuda["output_shape"]
    cuda["verification"] = verification
    r["cuda_path"] = cuda


def main(argv):
    args = list(argv[1:])
    only = None
    if "--models" in args:
        k = args.index("--models")
        only = args[k + 1].split(",")
        del args[k:k + 2]
        assert all(n in MODELS for n in only), only
    merge = "--merge" in args
    if merge:
        args.remove("--merge")
    path = args[0] if args else None
    assert not merge or path, "--merge needs an output path (an existing figures file)"
    table = sys.stdout if path else sys.stderr

    result = {
        "generator": "tests/tools/torch_figures.py",
        "torch_version": torch.__version__,
        "torchvision_version": torchvision.__version__,
        "device": "cpu",
        "dtype": "float32",
        "mode": "train(), one forward pass, saved_tensors_hooks",
        "definition": "saved_activation_bytes = sum of full storage nbytes over distinct storages (by storage "
                      "data_ptr) saved by autograd during one forward, excluding parameter and buffer storages; "
                      "model input storages are included when saved (see saved_input_bytes).",
        "corrections": CORRECTIONS,
        "models": {},
    }
    rows = []
    for name, spec in MODELS.items():
        if only and name not in only:
            continue
        torch.manual_seed(0)
        model = spec["build"]()
        info = static_info(model)
        assert info["params_total"] == spec["params"], (name, info["params_total"], spec["params"])
        info["input"] = spec["input_desc"]
        if spec.get("notes"):
            info["notes"] = spec["notes"]
        info["batches"] = {}
        for B in (1, 2):
            torch.manual_seed(0)
            inputs = spec["input"](B)
            r = measure(model, inputs)
            if any(isinstance(m, nn.LSTM) for m in model.modules()):
                add_lstm_cuda_path(model, inputs, r)
            info["batches"][str(B)] = r
            rows.append((name, B, info["params_total"], r))
            del inputs
            gc.collect()
        result["models"][name] = info
        del model
        gc.collect()

    if merge:
        # keep the other models' entries from the existing file; metadata (corrections) is this run's
        with open(path) as f:
            old = json.load(f)
        assert old["torch_version"] == result["torch_version"], (old["torch_version"], result["torch_version"])
        for name, info in old["models"].items():
            result["models"].setdefault(name, info)
    result = stamp(result, "tests/tools/torch_figures.py", {"torch": torch.__version__,
                                                           "torchvision": torchvision.__version__})
    text = json.dumps(result, indent=2, sort_keys=True) + "\n"
    if path:
        with open(path, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)

    hdr = "%-13s %2s %12s %16s %16s %10s %10s %10s  %s" % (
        "model", "B", "params", "saved_bytes", "cuda_corrected", "saved_MiB", "cuda_MiB", "masks_MiB", "output_shape")
    table.write(hdr + "\n" + "-" * len(hdr) + "\n")
    for name, B, P, r in rows:
        table.write("%-13s %2d %12d %16d %16d %10s %10s %10s  %s\n" % (
            name, B, P, r["saved_activation_bytes"], r["saved_activation_bytes_cuda_corrected"],
            fmt_mib(r["saved_activation_bytes"]), fmt_mib(r["saved_activation_bytes_cuda_corrected"]),
            fmt_mib(r["dropout_masks"]["cpu_bytes"]), r["output_shape"]))


if __name__ == "__main__":
    main(sys.argv)
