#!/usr/bin/python3
"""Step peaks of the tiny Llama replica under torchtitan's activation checkpointing (issue 33 item 2), measured in
real PyTorch 2.6 (CPU) as tests/tools/hf_peak.py measures them (its Live/Recorder, its CUDA corrections), under
torchtitan's loop (tests/tools/loop_peak.py's "torchtitan": del pred, float32 cross-entropy):

    flock /tmp/torch2.lock ../shared/tools/torch2-chroot python3 tests/tools/ac_peak.py [OUT.json]

(default output tests/reference/ac_peaks.json; checked by tests/group_loop.cmake through tests/hf/peaks.cmake).

torchtitan v0.2.0, torchtitan/distributed/activation_checkpoint.py, written in here:
  full       _apply_full_ac (lines 133-145): ptd_checkpoint_wrapper(block, preserve_rng_state=False,
             early_stop=ac_config.early_stop): the non-reentrant torch.utils.checkpoint; early_stop defaults to
             False (torchtitan/config/job_config.py ActivationCheckpoint.early_stop): PyTorch 2.6 takes it through
             set_checkpoint_early_stop(False), the whole block recomputed
  op         _apply_op_sac (lines 96-130): create_selective_checkpoint_contexts with _custom_policy: MUST_SAVE for
             the ops of torchtitan/models/llama3/infra/parallelize.py's _op_sac_save_list (lines 34-44: aten.mm,
             SDPA's efficient and flash kernels, c10d reduce_scatter, aten.max, flex_attention) except every second
             mm: meta["forward_mm_count"] counts the block's mm calls (a fresh defaultdict per checkpointed call,
             selective_checkpointing_context_fn), and an mm whose count is even is recomputed (line 111); the
             per_op_sac_force_recompute_mm_shapes_by_fqns shapes (moe.router.gate) match no Llama linear. The CPU
             runs SDPA as _scaled_dot_product_flash_attention_for_cpu, which stands here for CUDA's flash kernel
             (same outputs and saved set, hf_peak.py), so it is in the save list
  every2     _apply_layer_sac (lines 36-44): _layer_sac_count counts the blocks from 1 (global, in
             model.layers.named_children() order, apply_ac line 314) and a block is wrapped as in full when
             _layer_sac_count % ac_freq == 0: with selective_ac_option "2", layers 1, 3, ... (0-based)
  full_es    full with early_stop on (PyTorch 2.6's default, torchtune's: set_checkpoint_early_stop(True)): the
             recomputation stops once the block's last saved tensor is made again (_recomputation_hook's
             _StopRecomputationError)
  reentrant  not torchtitan's: transformers' gradient_checkpointing_enable, torch.utils.checkpoint with
             use_reentrant=True over each layer, under the plain loop (memest --checkpoint --loop plain)
The cases (CASES): the tiny Llama (2 layers eager float32 and SDPA bfloat16, 4 layers SDPA bfloat16) and the tiny
Qwen2 (4 layers SDPA bfloat16: its q, k, v linears have biases, so at::linear runs addmm, which is not in the save
list and not counted as an mm: the mm counted are o_proj, gate_proj, up_proj, down_proj, and o_proj and up_proj
are saved), sequence 64 (SEQ; hf_peak.S is 16), each under full, op, every2 and reentrant, SGD and Adam.
saved_at_backward: hf_peak.SavedBytes (what the pack hooks see outside the checkpoints, the checkpoints' inputs
through _NoopSaveInputs) plus the outputs the SAC caches keep and the (cos, sin) tuple each checkpoint holds as a
non-tensor argument, less the target cross-entropy saves (memest counts it with the inputs, not as an activation).
Under torchtitan's loop the replica runs torchtitan's own attention (hf_models.NATIVE = "torchtitan": repeat_kv
copies, RoPE in complex float32, the model's freqs_cis buffer), as torchtitan trains its own model code."""
import json
import sys
from collections import defaultdict

import torch
import torch.utils.checkpoint as tuc
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

import hf_models
import hf_peak
from hf_peak import here, measure
from provenance import write_json

# config, attention, dtype, memest's --attention, the config's layers (memest: --set num_hidden_layers=N)
CASES = [("llama", "eager", "float32", "eager", 2), ("llama", "sdpa", "bfloat16", "flash", 2),
         ("llama", "sdpa", "bfloat16", "flash", 4), ("qwen2", "sdpa", "bfloat16", "flash", 4)]
SEQ = 64  # the activations well above the parameters (hf_peak.S is 16)
MODES = ["full", "op", "every2", "reentrant", "full_es"]
MEMEST_ARGS = {"full": "--checkpoint-policy;full", "op": "--checkpoint-policy;torchtitan-op",
               "full_es": "--checkpoint-policy;full;--checkpoint-early-stop;on",
               "every2": "--checkpoint-every;2", "reentrant": "--checkpoint"}
LOOP = {"reentrant": "plain"}   # the others: torchtitan

_names = ["mm", "_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention", "max"]
SAVE_LIST = {getattr(torch.ops.aten, n).default for n in _names}
SAVE_LIST.add(hf_peak.FLASH_FWD)  # the CPU's flash kernel for CUDA's
MM = torch.ops.aten.mm.default

HELD = []       # tensors the checkpoints reference besides what they save
CACHES = []     # the SAC caching modes of the forward (their storage: the saved outputs)


def titan_policy(meta):
    def policy(ctx, func, *args, **kwargs):
        key = "%s_mm_count" % ("recompute" if ctx.is_recompute else "forward")
        if func == MM:
            meta[key] += 1
        save = func in SAVE_LIST and not (func == MM and meta[key] % 2 == 0)
        return tuc.CheckpointPolicy.MUST_SAVE if save else tuc.CheckpointPolicy.PREFER_RECOMPUTE
    return policy


def sac_context():
    fwd, rec = tuc.create_selective_checkpoint_contexts(titan_policy(defaultdict(int)))
    CACHES.append(fwd)
    return fwd, rec


class Reentrant(torch.nn.Module):
    """transformers' gradient_checkpointing_enable (PyTorch 2.6's default use_reentrant=True): the layer's tensor
    arguments saved (save_for_backward), the others kept in ctx.inputs."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, *a):
        return tuc.checkpoint(self.inner, *a, use_reentrant=True)


class Held(torch.nn.Module):
    """Records the tuple arguments (position_embeddings) the wrapped checkpoint keeps."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, *a):
        for x in a:
            if isinstance(x, tuple):
                HELD.extend(t for t in x if isinstance(t, torch.Tensor))
        return self.inner(*a)


def apply_ac(mode):
    def prepare(model):
        layers = model.model.layers
        count = 0
        for i in range(len(layers)):
            count += 1
            if mode == "every2" and count % 2 != 0:
                continue
            if mode == "reentrant":
                layers[i] = Held(Reentrant(layers[i]))
                continue
            kw = {"context_fn": sac_context} if mode == "op" else {}
            layers[i] = Held(checkpoint_wrapper(layers[i], preserve_rng_state=False, **kw))
    return prepare


class Saved(hf_peak.SavedBytes):
    """Made as step 2's forward starts: what the checkpoints keep is recorded from then on. The target the loss
    saves is not counted (memest counts it with the inputs, not as an activation), unlike hf_peak.SavedBytes."""

    def __init__(self, live, model):
        super().__init__(live, model)
        self.before = set(live.by_ptr)
        HELD.clear()
        CACHES.clear()

    def pack(self, t):
        if self.live.phase == "loss" and t.untyped_storage().data_ptr() in self.before:
            return t   # the target
        return super().pack(t)

    def total(self):
        for t in HELD:
            self.pack(t)
        for m in CACHES:
            for outs in m.storage.values():
                for o in outs:
                    for w in torch.utils._pytree.tree_flatten(o)[0]:
                        if isinstance(w.val, torch.Tensor):
                            self.pack(w.val)
        return super().total()


def main(argv):
    path = argv[1] if len(argv) > 1 else here("tests", "reference", "ac_peaks.json")
    res = {"_about": "tests/tools/ac_peak.py: peak live tensor bytes of a steady-state training step under "
                     "torchtitan's loop and activation checkpointing (and the reentrant one under the plain loop), PyTorch %s CPU, batch %d, seq %d"
                     % (torch.__version__, hf_peak.B, SEQ),
           "batch": hf_peak.B, "seq": SEQ, "cases": []}
    hf_peak.SavedBytes, saved_orig = Saved, hf_peak.SavedBytes
    hf_peak.S, seq_orig = SEQ, hf_peak.S
    for name, attn, dtype, kernel, layers in CASES:
        with open(here("tests", "hf", "tiny", name + ".json")) as f:
            cfg = json.load(f)
        cfg["num_hidden_layers"] = layers
        for mode in MODES:
            for optim, impl in hf_peak.OPTIMS:
                loop = LOOP.get(mode, "torchtitan")
                hf_models.set_stack(loop, 449)
                HELD.clear()
                CACHES.clear()
                with tuc.set_checkpoint_early_stop(mode == "full_es"):
                    r = measure(cfg, attn, getattr(torch, dtype), optim, prepare=apply_ac(mode), loop=loop)
                r.update(config=name, attn=attn, dtype=dtype, memest_attention=kernel, optim=optim, impl=impl,
                         loop=loop, transformers="4.49", ac=mode, layers=layers,
                         memest_args=MEMEST_ARGS[mode] + ";--set;num_hidden_layers=%d" % layers)
                res["cases"].append(r)
                print("%-6s %d %-5s %-8s %-6s %-4s %9d %9d (%s)" % (name, layers, attn, dtype, mode, optim, r["peak_tensors"],
                                                             r["saved_at_backward"], r["peak_at"]), file=sys.stderr)
    hf_peak.SavedBytes, hf_peak.S = saved_orig, seq_orig
    hf_models.reset_stack()
    write_json(path, res, "tests/tools/ac_peak.py",
               {"torch": torch.__version__, "torchtitan": "v0.2.0 (activation_checkpoint.py, written in)",
                "transformers": "v4.49 (hf_models.TRANSFORMERS; followed in plain PyTorch, not imported)"})


if __name__ == "__main__":
    main(sys.argv)
