#!/usr/bin/python3
"""Step peaks of the tiny Llama replica under torchtune's activation offloading (issue 33 item 2), measured in
real PyTorch 2.6 (CPU) as tests/tools/hf_peak.py measures them (its measure, Live/Recorder, CUDA corrections):

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/offload_peak.py [OUT.json]

(default output tests/reference/offload_peaks.json; checked by tests/group_loop.cmake through tests/hf/peaks.cmake,
memest --activation-offload).

OffloadActivations below is torchtune v0.6.1's (pytorch/torchtune@v0.6.1:torchtune/training/_activation_offloading.py
lines 24-353) with its defaults (use_pin_memory, use_streams, max_fwd_stash_size 5, min_offload_size 1024), line
for line, the CUDA calls replaced for the CPU: the pinned host copy (empty_like + copy_, lines 171-183) is made with
the dispatch modes off, so hf_peak's Recorder does not count it as device memory (its bytes go to host_bytes, the
most the tracker's host copies held at once); the copy back (.to("cuda"), line 275 and 220) is a clone() under the
Recorder, a new device storage; the streams' wait_event/wait_stream/record_event and record_stream are no-ops
(the CPU runs in order). What decides the device bytes is kept as written: a packed tensor stays on the device
while fwd_stash holds it (until the pack of an offloaded tensor whose id is >= its id + 5, lines 155-163, or the
post-hook of the first backward node that unpacks one, lines 328-332); an unpacked copy while bwd_tensor_stash
holds it (until the post-hook of the next node that unpacks one, lines 263-266 and 334-338, or the end of the
backward, the queued callback, lines 233-242); a tensor still in fwd_stash when its node's backward unpacks it is
used as it is (lines 269-271). get_act_offloading_ctx_manager (lines 373-449): the output head's forward runs
under NoOpManager (lines 356-370), its saved tensors kept as autograd keeps them; here the head is the replica's
lm_head (torchtune's model.output). The recipe (recipes/full_finetune_single_device.py v0.6.1) enters the
manager around self._model(**batch) only: the loss's saves are not offloaded.

The loop is torchtitan's (hf_peak.measure loop="torchtitan": the half logits, del pred, float32 cross-entropy),
whose loss memest models against tests/reference/loop_peaks.json, so that the figures here measure the
offloading; cases: the tiny Llama, 2 layers, eager float32 and SDPA bfloat16, batch 2, sequence 64, SGD and Adam,
with and without the offloading, each without and with torchtune's activation checkpointing of every layer
(AC: checkpointed(), the non-reentrant checkpoint_wrapper; the layers called with their mask and position
embeddings by keyword, as transformers calls them, so that the checkpoint saves hidden_states only, through the
offloading's hooks), or with transformers 5.x's reentrant gradient checkpointing (ReentrantLayer, under the plain
loop with the model's loss and transformers 5's rules: memest --loop plain --transformers 5).
Under torchtitan's loop the replica runs torchtitan's own attention (hf_models.NATIVE = "torchtitan": repeat_kv
copies, RoPE in complex float32, the model's freqs_cis buffer), as torchtitan trains its own model code."""
import contextlib
import functools
import json
import sys

import torch
import torch.utils.checkpoint as tuc
from torch.autograd.graph import saved_tensors_hooks
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
from torch.utils._python_dispatch import _disable_current_modes

import hf_models
import hf_peak
from hf_peak import here, measure
from provenance import write_json

CASES = [("llama", "eager", "float32", "eager"), ("llama", "sdpa", "bfloat16", "flash")]
AC = ["none", "full", "reentrant"]   # torchtune's activation checkpointing of every decoder layer, none, or
                                     # transformers 5.x's gradient checkpointing (the reentrant checkpoint)
AC_LAYERS, AC_SEQ = 4, 512   # with checkpointing: the layers' inputs above their gradients, the peak at the
                             # backward's start, where the inputs kept on the device or the host decide it
SEQ = 64
HOST = {"cur": 0, "peak": 0}


class _Stream:
    """A CUDA stream on the CPU: everything runs in order, nothing to wait for."""

    def wait_event(self, ev):
        pass

    def wait_stream(self, s):
        pass

    def record_event(self):
        return None


def _host_copy(activation):
    """cpu_tensor = empty_like(activation, pin_memory=True, device="cpu"); copy_(activation) (lines 171-183), out
    of the Recorder's sight; its bytes held on the host while the tracker holds it."""
    with _disable_current_modes():
        t = torch.empty_like(activation, device="cpu")
        t.copy_(activation)
    n = t.element_size() * t.nelement()
    HOST["cur"] += n
    HOST["peak"] = max(HOST["peak"], HOST["cur"])
    return t, n


class OffloadActivations(saved_tensors_hooks):
    def __init__(self, max_fwd_stash_size=5, min_offload_size=1024):
        self.min_tensor_size_bytes = min_offload_size
        self.tracker = {}
        self.tensor_id = 0
        self.is_first_forward_call = True
        self.is_first_backward_call = True
        self.s0, self.s1 = _Stream(), _Stream()
        self.fwd_stash = {}
        self.max_fwd_stash_size = max_fwd_stash_size
        self.bwd_tensor_stash = {}
        self.bwd_ev_stash = {}
        self.curr_graph_id = None
        self.curr_autograd_node = None
        self.host = {}   # tensor id -> host bytes (HOST's accounting)

        def pack_tensor(activation):
            if self.is_first_forward_call:
                assert len(self.tracker) == 0
                self.is_first_forward_call = False
                self.is_first_backward_call = True
            num_bytes = activation.element_size() * activation.nelement()
            self.tensor_id += 1
            tensor_id = self.tensor_id
            if num_bytes >= self.min_tensor_size_bytes and (
                    not isinstance(activation, torch.nn.Parameter) and not isinstance(activation, torch.nn.Buffer)):
                for id in [k for k in self.fwd_stash.keys()]:
                    if id <= tensor_id - self.max_fwd_stash_size:
                        _, ev = self.fwd_stash[id]
                        self.s0.wait_event(ev)
                        del self.fwd_stash[id]
                    else:
                        break
                self.s1.wait_stream(self.s0)
                cpu_tensor, self.host[tensor_id] = _host_copy(activation)
                self.tracker[tensor_id] = (cpu_tensor, True)
                event = self.s1.record_event()
                self.fwd_stash[tensor_id] = (activation, event)
            else:
                self.tracker[tensor_id] = (activation, False)
            return tensor_id

        def unpack_tensor_with_streams(unpack_tensor_id):
            if self.is_first_backward_call:
                self.curr_graph_id = torch._C._current_graph_task_id()

                def wait_and_del_remaining_references():
                    for id in [k for k in self.bwd_tensor_stash.keys()]:
                        self.s1.wait_event(self.bwd_ev_stash[id])
                        del self.bwd_tensor_stash[id]

                torch.autograd.variable.Variable._execution_engine.queue_callback(wait_and_del_remaining_references)
                self.is_first_backward_call = False
                self.is_first_forward_call = True
            assert unpack_tensor_id in self.tracker
            maybe_gpu_tensor, modified = self.tracker[unpack_tensor_id]
            if modified:
                HOST["cur"] -= self.host.pop(unpack_tensor_id)
                graph_id = torch._C._current_graph_task_id()
                node = torch._C._current_autograd_node()
                prev_node_ids = []
                if graph_id == self.curr_graph_id and self.curr_autograd_node != node:
                    self.curr_autograd_node = node
                    prev_node_ids = [id for id in self.bwd_tensor_stash.keys()]
                brought_back_from_cpu = True
                if unpack_tensor_id in self.fwd_stash:
                    maybe_gpu_tensor = self.fwd_stash[unpack_tensor_id][0]
                    brought_back_from_cpu = False
                else:
                    maybe_gpu_tensor = maybe_gpu_tensor.clone()   # .to("cuda", non_blocking=True) on s1
                    self.s0.wait_stream(self.s1)
                    self.bwd_tensor_stash[unpack_tensor_id] = maybe_gpu_tensor
                    # (lines 297-299, 315-323: the storage's use count, more after the node when an output or a
                    # recomputed saved tensor views the unpacked copy; torch 2.6 has no _storage_Use_Count, and
                    # no backward node of the replica returns a view of what it unpacked: the event branch)

                def hook(outputs, inputs):
                    if brought_back_from_cpu:
                        self.bwd_ev_stash[unpack_tensor_id] = self.s0.record_event()
                    for id in [k for k in self.fwd_stash.keys()]:
                        _, ev = self.fwd_stash[id]
                        self.s0.wait_event(ev)
                        del self.fwd_stash[id]
                    for id in prev_node_ids:
                        self.s1.wait_event(self.bwd_ev_stash[id])
                        del self.bwd_tensor_stash[id]
                    return outputs

                node.register_hook(hook)
            del self.tracker[unpack_tensor_id]
            return maybe_gpu_tensor

        super().__init__(pack_tensor, unpack_tensor_with_streams)


class NoOpManager(saved_tensors_hooks):
    def __init__(self):
        def noop(tensor):
            return tensor
        super().__init__(noop, noop)


def offload(model):
    """get_act_offloading_ctx_manager(model, True) and the recipe's `with self.activations_handling_ctx:` around
    the model's forward; the head (lm_head) under NoOpManager."""
    ctx, noop = OffloadActivations(), NoOpManager()
    model.lm_head.register_forward_pre_hook(lambda *a: noop.__enter__())
    model.lm_head.register_forward_hook(lambda *a: noop.__exit__(), always_call=True)
    inner = model.forward

    def forward(*a, **k):
        with ctx:
            return inner(*a, **k)
    model.forward = forward
    return model


class KwargsLayer(torch.nn.Module):
    """A decoder layer called as transformers' model calls it: hidden_states positional, the mask and the
    position embeddings by keyword (transformers v4.49 models/llama/modeling_llama.py LlamaModel.forward:
    decoder_layer(hidden_states, attention_mask=causal_mask, ..., position_embeddings=position_embeddings)):
    the non-reentrant checkpoint's _NoopSaveInputs saves the positional tensors only, through the hooks around it
    (torchtune's), and its recompute_fn keeps the keyword ones."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, hidden_states, attention_mask, position_embeddings):
        return self.inner(hidden_states, attention_mask=attention_mask, position_embeddings=position_embeddings)


def checkpointed(model):
    """torchtune v0.6.1 training.set_activation_checkpointing(model, auto_wrap_policy={decoder layer}):
    apply_activation_checkpointing with torch's checkpoint_wrapper, whose checkpoint_impl defaults to
    CheckpointImpl.NO_REENTRANT (torch/distributed/algorithms/_checkpoint/checkpoint_wrapper.py); early_stop off
    as memest models it (torch.utils.checkpoint.set_checkpoint_early_stop(False) around the step)."""
    layers = model.model.layers
    for i in range(len(layers)):
        layers[i] = KwargsLayer(checkpoint_wrapper(layers[i]))
    return model


class ReentrantLayer(torch.nn.Module):
    """transformers 5.x's GradientCheckpointingLayer.__call__ (src/transformers/modeling_layers.py) with
    gradient_checkpointing_enable's default use_reentrant=True: self._gradient_checkpointing_func(
    partial(super().__call__, **kwargs), *args): the positional hidden_states alone is a tensor argument of
    CheckpointFunction (saved by its ctx.save_for_backward, through the hooks around it), the mask and the
    position embeddings ride in the partial."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, hidden_states, attention_mask, position_embeddings):
        fn = functools.partial(self.inner, attention_mask=attention_mask, position_embeddings=position_embeddings)
        return tuc.checkpoint(fn, hidden_states, use_reentrant=True)


def reentrant(model):
    layers = model.model.layers
    for i in range(len(layers)):
        layers[i] = ReentrantLayer(layers[i])
    return model


def main(argv):
    path = argv[1] if len(argv) > 1 else here("tests", "reference", "offload_peaks.json")
    res = {"_about": "tests/tools/offload_peak.py: peak live tensor bytes of a steady-state training step under "
                     "torchtitan's loop with and without torchtune's activation offloading, PyTorch %s CPU, batch %d, "
                     "seq %d; activations_host: the most the offloaded host copies held" % (torch.__version__, hf_peak.B, SEQ),
           "batch": hf_peak.B, "seq": SEQ, "cases": []}
    hf_peak.S, seq_orig = SEQ, hf_peak.S
    for name, attn, dtype, kernel in CASES:
        with open(here("tests", "hf", "tiny", name + ".json")) as f:
            cfg = json.load(f)
        for ac in AC:
            cfg = dict(cfg, num_hidden_layers=AC_LAYERS if ac != "none" else 2)
            hf_peak.S = AC_SEQ if ac != "none" else SEQ
            loop, rel = ("plain", 500) if ac == "reentrant" else ("torchtitan", 449)
            for off in (False, True):
                for optim, impl in hf_peak.OPTIMS:
                    hf_models.set_stack(loop, rel)
                    HOST.update(cur=0, peak=0)
                    steps = ({"full": [checkpointed], "reentrant": [reentrant]}.get(ac, []) +
                             ([offload] if off else []))

                    def prepare(model, steps=steps):
                        for f in steps:
                            f(model)
                    with tuc.set_checkpoint_early_stop(False):
                        r = measure(cfg, attn, getattr(torch, dtype), optim, prepare=prepare, loop=loop)
                    del r["saved_at_backward"]   # the hooks here are the offloading's
                    args = "--loop;" + loop + (";--checkpoint;--set;num_hidden_layers=%d" % AC_LAYERS
                                               if ac != "none" else "") + \
                        (";--activation-offload" if off else "")
                    r.update(config=name, attn=attn, dtype=dtype, memest_attention=kernel, optim=optim, impl=impl,
                             loop=loop, transformers="%d.%d" % (rel // 100, rel % 100) if rel != 500 else "5",
                             offload=off, ac=ac,
                             layers=cfg["num_hidden_layers"], seq=hf_peak.S,
                             activations_host=HOST["peak"], memest_args=args)
                    res["cases"].append(r)
                    print("%-6s %-5s %-8s %-4s %-5s %-4s %9d host %8d (%s)" % (
                        name, attn, dtype, ac, off, optim, r["peak_tensors"], HOST["peak"], r["peak_at"]),
                        file=sys.stderr)
    hf_peak.S = seq_orig
    hf_models.reset_stack()
    write_json(path, res, "tests/tools/offload_peak.py",
               {"torch": torch.__version__, "torchtune": "v0.6.1 (_activation_offloading.py, written in)",
                "transformers": "v4.49, v5 for the reentrant cases (hf_models.TRANSFORMERS; followed in plain "
                                "PyTorch, not imported)"})


if __name__ == "__main__":
    main(sys.argv)
