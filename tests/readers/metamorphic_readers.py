#!/usr/bin/env python3
"""Metamorphic checks across memest's config readers (ctest readers.metamorphic).

    tests/readers/metamorphic_readers.py MEMEST SOURCE_DIR [-v] [-k SUBSTRING]

Each check runs the memest binary with --json on shipped models and compares
documents; no check reads a figure against a reference, only against memest
itself:

  same      the same settings said two ways give the same --json document:
            on the command line, in a DeepSpeed config (--deepspeed), in an
            accelerate YAML or the Trainer's fsdp_config JSON (--fsdp-config);
            a file with its keys reordered, re-indented, commented, in YAML
            flow style instead of block style, with keys that change no memory
            added; the options given on the command line over a file that
            says otherwise (the options win);
  refused   a file DeepSpeed or accelerate would refuse is refused (exit 3),
            never estimated;
  sweep     a --sweep row equals the single estimate at its batch;
  monotone  batch, --seq, --lora rank and --generate --context never lower the
            figures that must grow (peak, reserved, device total; activations,
            the KV cache and LoRA's parameters strictly).

EXPECTED_FAIL names the checks that fail today because of the readers under
rewrite (issue 30), each with its figures in the report; such a check still
runs, and passing it fails the test until it is taken off the list. Python 3,
standard library only; the memest processes run on a few threads.
"""
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

# The checks that fail today, and why. Only causes in the readers under
# rewrite (src/model/ds_config.c, src/model/fsdp_config.c,
# src/model/hf_config.c) belong here; take a check off once it passes.
EXPECTED_FAIL = {}

LLAMA = "models/hf/llama-3.1-8b.json"     # hidden 4096, torch_dtype bfloat16
GPT2 = "models/hf/gpt2.json"               # float32
MIXTRAL = "models/hf/mixtral-8x7b.json"
TINY = "tests/hf/tiny/llama.json"
WRAP = "LlamaDecoderLayer"


class Runner:
    """Runs memest (cached by command line) on a pool of threads."""

    def __init__(self, memest, src, tmp):
        self.memest, self.src, self.tmp = memest, src, tmp
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2))
        self.futures = {}
        self.files = 0

    def file(self, name, text):
        """A config file in the temporary folder; its absolute path."""
        self.files += 1
        path = os.path.join(self.tmp, "%03d-%s" % (self.files, name))
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def _run(self, args):
        p = subprocess.run([self.memest] + list(args) + ["--json"], cwd=self.src,
                           capture_output=True, text=True, timeout=60)
        doc = None
        try:
            doc = json.loads(p.stdout) if p.stdout.strip() else None
        except ValueError:
            pass
        return p.returncode, doc, p.stderr.strip()

    def submit(self, args):
        args = tuple(args)
        if args not in self.futures:
            self.futures[args] = self.pool.submit(self._run, args)
        return self.futures[args]

    def get(self, args):
        return self.submit(args).result()


def show(args):
    return "memest " + " ".join(os.path.basename(a) if os.path.isabs(a) else a for a in args)


def diff(a, b, path=""):
    """The first few places where two JSON values differ."""
    out = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                out.append("%s.%s: %s vs %s" % (path, k, json.dumps(a.get(k, "(absent)")),
                                                json.dumps(b.get(k, "(absent)"))))
            else:
                out += diff(a[k], b[k], path + "." + k)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, "%s[%d]" % (path, i))
    elif a != b:
        out.append("%s: %s vs %s" % (path or "(document)", json.dumps(a)[:80], json.dumps(b)[:80]))
    return out


def get(doc, path):
    for k in path.split("."):
        doc = doc[k]
    return doc


class Checks:
    def __init__(self, runner):
        self.r = runner
        self.checks = []   # (name, function returning a failure or None)

    def add(self, name, fn, *cmds):
        for c in cmds:
            self.r.submit(c)   # start the processes now, judge later
        self.checks.append((name, fn))

    # -- the kinds of check --

    def same(self, name, *cmds, refusal=False):
        """Every command succeeds with the same document as the first (with
        refusal: or every command is refused, exit 3)."""
        def fn():
            base = None
            if refusal and all(self.r.get(c)[0] == 3 for c in cmds):
                return None
            for c in cmds:
                rc, doc, err = self.r.get(c)
                if rc != 0 or doc is None:
                    return "%s: exit %d: %s" % (show(c), rc, err.splitlines()[-1] if err else "")
                doc = {k: v for k, v in doc.items() if k != "file"}   # the model's path
                if base is None:
                    base, first = doc, c
                elif doc != base:
                    return "%s\n  vs %s:\n    %s" % (show(first), show(c),
                                                   "\n    ".join(diff(base, doc)[:8]))
            return None
        self.add(name, fn, *cmds)

    def refused(self, name, cmd, why):
        """The command fails with exit 3 (a file's fault)."""
        def fn():
            rc, doc, err = self.r.get(cmd)
            if rc == 3:
                return None
            figures = ""
            if rc == 0 and doc:
                figures = " (batch %s, grad_accum %s, peak %s)" % (
                    doc.get("batch"), get(doc, "step.grad_accum"), get(doc, "memory.peak"))
            return "%s: exit %d%s, expected 3: %s" % (show(cmd), rc, figures, why)
        self.add(name, fn, cmd)

    def sweep(self, name, base, batches, fields):
        """--sweep rows against single estimates; fields: row key -> document path."""
        sw = base + ["--sweep", ",".join(str(b) for b in batches)]
        singles = [base + ["--batch", str(b)] for b in batches]

        def fn():
            rc, doc, err = self.r.get(sw)
            if rc != 0:
                return "%s: exit %d: %s" % (show(sw), rc, err)
            rows = doc["rows"]
            if [row["batch"] for row in rows] != list(batches):
                return "%s: rows for batches %s" % (show(sw), [row["batch"] for row in rows])
            for row, c in zip(rows, singles):
                rc, one, err = self.r.get(c)
                if rc != 0:
                    return "%s: exit %d: %s" % (show(c), rc, err)
                for key, path in fields.items():
                    want = path[1](one) if isinstance(path, tuple) else get(one, path)
                    if row[key] != want:
                        return "%s: row batch %d %s = %s, the single estimate's %s = %s" % (
                            show(sw), row["batch"], key, row[key],
                            path[0] if isinstance(path, tuple) else path, want)
            return None
        self.add(name, fn, sw, *singles)

    def monotone(self, name, cmds, xs, grow, strict=(), above=None):
        """Along xs, the figures `grow` never fall, those in `strict` always
        rise (a figure: a document path, or a (name, function) pair); at
        every point the device total is at least `above` (a figure that
        grows: doc/cards-and-fit.md "--max-batch": the total on the device is never below
        the allocated peak plus the overhead, though it may fall itself)."""
        def value(d, path):
            return path[1](d) if isinstance(path, tuple) else get(d, path)

        def fn():
            docs = []
            for c in cmds:
                rc, doc, err = self.r.get(c)
                if rc != 0:
                    return "%s: exit %d: %s" % (show(c), rc, err)
                docs.append(doc)
            if above:
                total, low = above
                for c, d in zip(cmds, docs):
                    if value(d, total) < value(d, low):
                        return "%s: %s %d below %s %d" % (show(c), total, value(d, total),
                                                         low[0], value(d, low))
            for path in list(grow) + list(strict):
                vals = [value(d, path) for d in docs]
                path = path[0] if isinstance(path, tuple) else path
                for i in range(1, len(vals)):
                    rising = path in [p[0] if isinstance(p, tuple) else p for p in strict]
                    if vals[i] < vals[i - 1] or (rising and vals[i] == vals[i - 1]):
                        return "%s: %s %s at %s -> %s at %s (all: %s)" % (
                            show(cmds[i]), path, "falls" if vals[i] < vals[i - 1] else
                            "does not grow", xs[i - 1], xs[i], xs, vals)
            return None
        self.add(name, fn, *cmds)


# ---- config texts ----

def ds(**kv):
    return json.dumps(kv)


def reorder(obj):
    """Every object's keys in reverse order (arrays keep theirs)."""
    if isinstance(obj, dict):
        return {k: reorder(obj[k]) for k in reversed(list(obj))}
    if isinstance(obj, list):
        return [reorder(v) for v in obj]
    return obj


def yaml_block(top, fsdp=None, indent=2):
    """An accelerate config as `accelerate config` writes it: block style."""
    lines = []
    for k, v in top.items():
        lines.append("%s: %s" % (k, v))
    if fsdp is not None:
        lines.append("fsdp_config:")
        lines += ["%s%s: %s" % (" " * indent, k, v) for k, v in fsdp.items()]
    return "\n".join(lines) + "\n"


def define(c):
    r = c.r
    # ---------------- DeepSpeed (--deepspeed) ----------------
    base = [LLAMA, "--seq", "256", "--gpus", "8"]
    f = lambda name, text: r.file(name, text)
    z = lambda **kv: {"zero_optimization": kv}
    for stage, strat in ((0, "ddp"), (1, "zero1"), (2, "zero2"), (3, "zero3")):
        c.same("ds.stage%d_is_--strategy_%s" % (stage, strat), base + ["--strategy", strat],
               base + ["--deepspeed", f("stage%d.json" % stage, ds(**z(stage=stage)))])
    c.same("ds.no_zero_section_is_ddp", base + ["--strategy", "ddp"],
           base + ["--deepspeed", f("empty.json", "{}")])
    c.same("ds.bf16_is_--dtype_bf16", base + ["--strategy", "zero2", "--dtype", "bf16"],
           base + ["--deepspeed", f("bf16.json", ds(bf16={"enabled": True}, **z(stage=2)))])
    c.same("ds.bfloat16_is_bf16", base + ["--strategy", "zero2", "--dtype", "bf16"],
           base + ["--deepspeed", f("bfloat16.json", ds(bfloat16={"enabled": True},
                                                        **z(stage=2)))])
    c.same("ds.fp16_is_--dtype_fp16", base + ["--strategy", "zero1", "--dtype", "fp16"],
           base + ["--deepspeed", f("fp16.json", ds(fp16={"enabled": True, "loss_scale": 0},
                                                    **z(stage=1)))])
    c.same("ds.bf16_disabled_is_the_config_dtype", base + ["--strategy", "zero2"],
           base + ["--deepspeed", f("bf16off.json", ds(bf16={"enabled": False}, **z(stage=2)))])
    c.same("ds.grad_accum_is_--grad-accum", base + ["--strategy", "zero2", "--grad-accum", "4"],
           base + ["--deepspeed", f("ga.json", ds(gradient_accumulation_steps=4, **z(stage=2)))])
    c.same("ds.micro_batch_is_--batch", base + ["--strategy", "zero3", "--batch", "2"],
           base + ["--deepspeed", f("mb.json", ds(train_micro_batch_size_per_gpu=2,
                                                  **z(stage=3)))])
    c.same("ds.offload_optimizer_is_--offload_optimizer",
           base + ["--strategy", "zero2", "--offload", "optimizer"],
           base + ["--deepspeed", f("off.json", ds(**z(stage=2, offload_optimizer={
               "device": "cpu", "pin_memory": True})))],
           base + ["--deepspeed", f("offnvme.json", ds(**z(stage=2, offload_optimizer={
               "device": "nvme", "nvme_path": "/local_nvme"})))],
           base + ["--deepspeed", f("offlegacy.json", ds(**z(stage=2, cpu_offload=True)))])
    c.same("ds.offload_both_is_--offload_optimizer+params",
           base + ["--strategy", "zero3", "--offload", "optimizer+params"],
           base + ["--deepspeed", f("offboth.json", ds(**z(stage=3,
                                                           offload_optimizer={"device": "cpu"},
                                                           offload_param={"device": "cpu"})))])
    c.same("ds.optimizer_adamw_is_--optim_adamw",
           base + ["--strategy", "zero1", "--optim", "adamw"],
           base + ["--deepspeed", f("adamw.json", ds(optimizer={"type": "AdamW", "params": {
               "lr": 1e-5, "weight_decay": 0.01}}, **z(stage=1)))])
    c.same("ds.optimizer_sgd_is_--optim_sgd", base + ["--strategy", "zero2", "--optim", "sgd",
                                                      "--momentum", "0.9"],
           base + ["--deepspeed", f("sgd.json", ds(optimizer={"type": "SGD", "params": {
               "lr": 0.1, "momentum": 0.9}}, **z(stage=2)))])
    h = 4096
    c.same("ds.auto_sizes_follow_the_trainer",
           base + ["--deepspeed", f("auto.json", ds(**z(
               stage=3, reduce_bucket_size="auto", stage3_prefetch_bucket_size="auto",
               stage3_param_persistence_threshold="auto")))],
           base + ["--deepspeed", f("autonum.json", ds(**z(
               stage=3, reduce_bucket_size=h * h, stage3_prefetch_bucket_size=int(0.9 * h * h),
               stage3_param_persistence_threshold=10 * h)))])
    c.same("ds.defaults_written_out_change_nothing",
           base + ["--strategy", "zero3"],
           base + ["--deepspeed", f("defaults3.json", ds(**z(
               stage=3, reduce_bucket_size=5e8, allgather_bucket_size=5e8, overlap_comm=True,
               contiguous_gradients=True, stage3_prefetch_bucket_size=5e7,
               stage3_max_live_parameters=1e9, stage3_max_reuse_distance=1e9,
               stage3_param_persistence_threshold=1e5)))])
    c.same("ds.stage2_defaults_written_out_change_nothing",
           base + ["--strategy", "zero2"],
           base + ["--deepspeed", f("defaults2.json", ds(**z(
               stage=2, reduce_bucket_size=5e8, allgather_bucket_size=5e8, overlap_comm=False,
               contiguous_gradients=True)))])
    full = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,
            "bf16": {"enabled": True}, "optimizer": {"type": "AdamW", "params": {"lr": 1e-5}},
            "zero_optimization": {"stage": 3, "overlap_comm": True, "reduce_bucket_size": 2e8,
                                  "offload_optimizer": {"device": "cpu", "pin_memory": True},
                                  "stage3_prefetch_bucket_size": 1e7}}
    compact = json.dumps(full, separators=(",", ":"))
    c.same("ds.key_order_and_white_space_change_nothing",
           base + ["--deepspeed", f("full.json", compact)],
           base + ["--deepspeed", f("full-reordered.json", json.dumps(reorder(full), indent=4))],
           base + ["--deepspeed", f("full-tabs.json", "\n\t" + json.dumps(full, indent="\t")
                                    .replace(": ", " :  ") + "\n\n")])
    c.same("ds.ignored_keys_change_nothing",
           base + ["--deepspeed", f("full2.json", compact)],
           base + ["--deepspeed", f("full-noise.json", json.dumps(dict(full, **{
               "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}},
               "gradient_clipping": 1.0, "steps_per_print": 100, "wall_clock_breakdown": False})))])
    c.same("ds.full_file_is_its_options",
           base + ["--deepspeed", f("full3.json", compact)],
           base + ["--strategy", "zero3", "--offload", "optimizer", "--dtype", "bf16", "--optim",
                   "adamw", "--batch", "2", "--grad-accum", "2", "--deepspeed",
                   f("buckets.json", ds(**z(stage=3, overlap_comm=True, reduce_bucket_size=2e8,
                                            stage3_prefetch_bucket_size=1e7)))])
    c.same("ds.options_win_over_the_file",
           base + ["--strategy", "zero1", "--dtype", "fp32", "--grad-accum", "3", "--optim", "sgd",
                   "--batch", "1"],
           base + ["--strategy", "zero1", "--dtype", "fp32", "--grad-accum", "3", "--optim", "sgd",
                   "--batch", "1", "--deepspeed",
                   f("overridden.json", ds(train_micro_batch_size_per_gpu=4,
                                           gradient_accumulation_steps=8, fp16={"enabled": True},
                                           optimizer={"type": "AdamW"}, **z(stage=3)))])
    c.same("ds.--amp_keeps_fp32_parameters_over_the_file_bf16",
           base + ["--strategy", "zero2", "--amp", "bf16"],
           base + ["--strategy", "zero2", "--amp", "bf16", "--deepspeed", f("bf16b.json", ds(
               bf16={"enabled": True}, **z(stage=2)))])
    c.same("ds.train_batch_size_consistent_is_its_parts",
           base + ["--strategy", "zero2", "--batch", "4", "--grad-accum", "2"],
           base + ["--deepspeed", f("tbs.json", ds(train_batch_size=64,
                                                   train_micro_batch_size_per_gpu=4,
                                                   gradient_accumulation_steps=2, **z(stage=2)))])
    # DeepSpeed's config.py: train_batch_size alone gives micro = train / (world x accumulation)
    c.same("ds.train_batch_size_alone_sets_the_micro_batch",
           base + ["--strategy", "zero2", "--batch", "8"],
           base + ["--deepspeed", f("tbs-alone.json", ds(train_batch_size=64, **z(stage=2)))])
    # DeepSpeed asserts train_batch_size == micro x accumulation x world size
    c.refused("ds.train_batch_size_inconsistent_is_refused",
              base + ["--deepspeed", f("tbs-bad.json", ds(train_batch_size=32,
                                                          train_micro_batch_size_per_gpu=4,
                                                          gradient_accumulation_steps=2,
                                                          **z(stage=2)))],
              "train_batch_size 32 != 4 x 2 x 8 GPUs: DeepSpeed raises at initialize")
    # ZeRO-Offload needs a ZeRO stage: the file's fault, named as such
    c.refused("ds.offload_without_a_stage_is_refused_as_the_files",
              base + ["--deepspeed", f("offload-stage0.json", ds(**z(
                  stage=0, offload_optimizer={"device": "cpu"})))],
              "offload_optimizer with stage 0: a fault of the file (exit 3), not of --offload")
    # torch.optim.SGD: "Invalid momentum value"; --momentum accepts 0 to 1
    c.refused("ds.sgd_negative_momentum_is_refused",
              base + ["--deepspeed", f("sgd-neg.json", ds(optimizer={
                  "type": "SGD", "params": {"momentum": -0.5}}, **z(stage=1)))],
              "SGD momentum -0.5: torch.optim.SGD raises, --momentum refuses it")
    c.same("ds.on_another_model",
           [GPT2, "--gpus", "4", "--strategy", "zero3", "--dtype", "bf16", "--grad-accum", "2"],
           [GPT2, "--gpus", "4", "--deepspeed", f("gpt2.json", ds(
               bf16={"enabled": True}, gradient_accumulation_steps=2, **z(stage=3)))])

    # ---------------- FSDP (--fsdp-config) ----------------
    fb = [LLAMA, "--seq", "256"]
    top = {"compute_environment": "LOCAL_MACHINE", "distributed_type": "FSDP",
           "mixed_precision": "'no'", "num_machines": 1, "num_processes": 8}
    fsdp = {"fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "fsdp_backward_prefetch": "BACKWARD_PRE", "fsdp_forward_prefetch": "false",
            "fsdp_offload_params": "false", "fsdp_sharding_strategy": "FULL_SHARD",
            "fsdp_state_dict_type": "SHARDED_STATE_DICT",
            "fsdp_transformer_layer_cls_to_wrap": WRAP, "fsdp_use_orig_params": "true"}
    y = lambda name, t=top, s=fsdp, **kw: r.file(name, yaml_block(t, s, **kw))
    # the file's mixed_precision 'no' over the config's bfloat16 weights is
    # pure 16-bit FSDP, its fsdp_use_orig_params true --fsdp-orig-params
    pure = ["--fsdp-orig-params", "--fsdp-no-mixed-precision"]
    cli0 = fb + ["--gpus", "8", "--strategy", "fsdp", "--fsdp-wrap", WRAP, "--fsdp-orig-params"]
    cli = cli0 + ["--fsdp-no-mixed-precision"]
    acc = y("acc.yaml")
    c.same("fsdp.full_shard_is_--strategy_fsdp", cli, fb + ["--fsdp-config", acc])
    c.same("fsdp.default_sharding_is_full_shard", cli,
           fb + ["--fsdp-config", y("nostrategy.yaml", s={k: v for k, v in fsdp.items()
                                                       if k != "fsdp_sharding_strategy"})])
    c.same("fsdp.sharding_strategy_number_is_its_name", cli,
           fb + ["--fsdp-config", y("strategy1.yaml", s=dict(fsdp, fsdp_sharding_strategy=1))])
    c.same("fsdp.shard_grad_op_is_--strategy_fsdp-grad-op",
           fb + ["--gpus", "8", "--strategy", "fsdp-grad-op", "--fsdp-wrap", WRAP] + pure,
           fb + ["--fsdp-config", y("gradop.yaml", s=dict(fsdp,
                                                        fsdp_sharding_strategy="SHARD_GRAD_OP"))])
    c.same("fsdp.hybrid_shard_is_--strategy_hsdp",
           fb + ["--gpus", "16", "--gpus-per-node", "8", "--strategy", "hsdp", "--fsdp-wrap", WRAP]
           + pure,
           fb + ["--fsdp-config", y("hybrid.yaml", t=dict(top, num_machines=2, num_processes=16),
                                    s=dict(fsdp, fsdp_sharding_strategy="HYBRID_SHARD"))])
    c.same("fsdp.no_shard_is_--strategy_ddp", fb + ["--gpus", "8", "--strategy", "ddp"],
           fb + ["--fsdp-config", y("noshard.yaml", s={"fsdp_sharding_strategy": "NO_SHARD"})])
    c.same("fsdp.multi_gpu_is_--strategy_ddp", fb + ["--gpus", "4", "--strategy", "ddp"],
           fb + ["--fsdp-config", y("multigpu.yaml", t=dict(top, distributed_type="MULTI_GPU",
                                                          num_processes=4), s=None)])
    c.same("fsdp.mixed_precision_fp16_is_--dtype_fp16", cli0 + ["--dtype", "fp16"],
           fb + ["--fsdp-config", y("fp16.yaml", t=dict(top, mixed_precision="fp16"))])
    c.same("fsdp.mixed_precision_bf16_is_--dtype_bf16",
           [GPT2, "--gpus", "4", "--strategy", "fsdp", "--dtype", "bf16"],
           [GPT2, "--fsdp-config", y("gpt2-bf16.yaml", t=dict(top, mixed_precision="bf16",
                                                            num_processes=4),
                                     s={"fsdp_sharding_strategy": "FULL_SHARD"})])
    c.same("fsdp.offload_params_is_--offload_optimizer+params",
           cli + ["--offload", "optimizer+params"],
           fb + ["--fsdp-config", y("offload.yaml", s=dict(fsdp, fsdp_offload_params="true"))])
    c.same("fsdp.activation_checkpointing_is_--checkpoint", cli + ["--checkpoint"],
           fb + ["--fsdp-config", y("ckpt.yaml", s=dict(fsdp,
                                                      fsdp_activation_checkpointing="true"))])
    trainer = {"transformer_layer_cls_to_wrap": [WRAP], "backward_prefetch": "backward_pre",
               "forward_prefetch": False, "use_orig_params": True, "offload_params": True,
               "activation_checkpointing": True}
    c.same("fsdp.trainer_json_is_the_accelerate_yaml_and_the_options",
           fb + ["--gpus", "8", "--fsdp-config", r.file("trainer.json", json.dumps(trainer))],
           fb + ["--gpus", "8", "--fsdp-config", y("trainer-like.yaml", t=dict(
               top, mixed_precision="bf16"), s=dict(
               fsdp, fsdp_offload_params="true", fsdp_activation_checkpointing="true"))],
           cli0 + ["--offload", "optimizer+params", "--checkpoint"])
    c.same("fsdp.trainer_json_key_order_and_white_space_change_nothing",
           fb + ["--gpus", "8", "--fsdp-config", r.file("trainer2.json", json.dumps(trainer))],
           fb + ["--gpus", "8", "--fsdp-config",
                 r.file("trainer-rev.json", "\n  " + json.dumps(reorder(trainer), indent=3))])
    c.same("fsdp.yaml_key_order_changes_nothing", fb + ["--fsdp-config", acc],
           fb + ["--fsdp-config", y("reordered.yaml", t=reorder(top), s=reorder(fsdp))])
    padded = ("# written by hand\n---\n" + yaml_block(top, fsdp, indent=4)
              .replace("\n", "   \n", 3).replace("fsdp_config:", "\n# the plugin\nfsdp_config:  ")
              + "\n...\n")
    c.same("fsdp.yaml_comments_indentation_and_markers_change_nothing",
           fb + ["--fsdp-config", acc], fb + ["--fsdp-config", r.file("padded.yaml", padded)])
    flow = yaml_block(top, None) + "fsdp_config: {%s}\n" % ", ".join(
        "%s: %s" % kv for kv in fsdp.items())
    c.same("fsdp.yaml_flow_style_is_block_style", fb + ["--fsdp-config", acc],
           fb + ["--fsdp-config", r.file("flow.yaml", flow)])
    quoted = yaml_block(dict(top, distributed_type='"FSDP"'), dict(
        fsdp, fsdp_sharding_strategy="'FULL_SHARD'",
        fsdp_transformer_layer_cls_to_wrap='"%s"' % WRAP))
    c.same("fsdp.yaml_quoted_scalars_are_plain_ones", fb + ["--fsdp-config", acc],
           fb + ["--fsdp-config", r.file("quoted.yaml", quoted)])
    wrap_list = yaml_block(top, dict(fsdp, fsdp_transformer_layer_cls_to_wrap="[%s]" % WRAP))
    c.same("fsdp.yaml_wrap_class_list_of_one_is_the_class", fb + ["--fsdp-config", acc],
           fb + ["--fsdp-config", r.file("wraplist.yaml", wrap_list)])
    # a YAML flow mapping is YAML too: accelerate's yaml.safe_load reads it
    allflow = "{%s, fsdp_config: {%s}}\n" % (
        ", ".join("%s: %s" % kv for kv in top.items()),
        ", ".join("%s: %s" % kv for kv in fsdp.items()))
    c.same("fsdp.yaml_document_in_flow_style_is_block_style", fb + ["--fsdp-config", acc],
           fb + ["--fsdp-config", r.file("allflow.yaml", allflow)])
    c.same("fsdp.options_win_over_the_file",
           fb + ["--gpus", "4", "--strategy", "fsdp-grad-op", "--dtype", "bf16", "--fsdp-wrap",
                 WRAP],
           fb + ["--gpus", "4", "--strategy", "fsdp-grad-op", "--dtype", "bf16", "--fsdp-config",
                 y("overridden.yaml", t=dict(top, mixed_precision="fp16", num_processes=16),
                   s=dict(fsdp, fsdp_sharding_strategy="HYBRID_SHARD"))])
    c.same("fsdp.ignored_keys_change_nothing", fb + ["--fsdp-config", acc],
           fb + ["--fsdp-config", y("noisy.yaml", t=dict(
               top, debug="false", machine_rank=0, main_training_function="main",
               rdzv_backend="static", same_network="true", use_cpu="false"), s=dict(
               fsdp, fsdp_cpu_ram_efficient_loading="true", fsdp_sync_module_states="true"))])

    # ---------------- Hugging Face configs: the same config written another way ----------------
    for m in (LLAMA, GPT2, MIXTRAL, "models/hf/t5-small.json", "models/hf/bert-base-uncased.json",
              "models/hf/qwen2-0.5b.json", "models/hf/phi-3-mini-4k.json",
              "models/hf/gemma-2-9b.json", TINY):
        cfg = json.load(open(os.path.join(r.src, m), encoding="utf-8"))
        name = os.path.basename(m)[:-5]
        c.same("hf.%s_key_order_and_white_space_change_nothing" % name, [m, "--seq", "128"],
               [r.file(name + "-rev.json", json.dumps(reorder(cfg), indent=1)), "--seq", "128"],
               [r.file(name + "-compact.json", json.dumps(cfg, separators=(",", ":"))),
                "--seq", "128"])

    # a key and its PretrainedConfig.attribute_map alias in one config: transformers
    # sets the alias last (PretrainedConfig.__init__ setattr over kwargs), so the
    # alias wins whatever the order; a refusal would do too, never the order deciding
    for m, key, alias, lo, hi in (("gpt2", "n_layer", "num_hidden_layers", 1, 2),
                                  ("t5", "num_layers", "num_hidden_layers", 1, 2)):
        one = r.file("%s-alias.json" % m, json.dumps({"model_type": m, key: lo, alias: hi}))
        rev = r.file("%s-alias-rev.json" % m, json.dumps({"model_type": m, alias: hi, key: lo}))
        c.same("hf.%s_%s_and_its_alias_%s_in_either_order" % (m, key, alias),
               [one, "--seq", "64"], [rev, "--seq", "64"], refusal=True)

    # torch_dtype and its new name dtype in one config: transformers takes dtype
    # (PretrainedConfig.__init__: dtype = kwargs.pop("dtype", torch_dtype)), whatever
    # the order; a refusal would do too
    both = {"model_type": "llama", "num_hidden_layers": 1, "hidden_size": 64,
            "intermediate_size": 128, "num_attention_heads": 4, "vocab_size": 128,
            "max_position_embeddings": 64, "torch_dtype": "float16", "dtype": "bfloat16"}
    c.same("hf.torch_dtype_and_dtype_in_either_order",
           [r.file("dtypes.json", json.dumps(both))],
           [r.file("dtypes-rev.json", json.dumps(reorder(both)))], refusal=True)

    # ---------------- the command line: sweeps, monotone figures ----------------
    rows = {"peak": "memory.peak", "reserved": "memory.reserved",
            "total_device": "memory.total_device"}
    # with a card: the verdict and the time estimate too (a row's step_flops
    # is the time estimate's: the whole step, --grad-accum micro-batches)
    card_rows = dict(rows, fits="fit.fits", step_flops="time.step_flops",
                     time=("time", lambda d: {k: v for k, v in d["time"].items()
                                               if k not in ("estimate", "mfu", "precision",
                                                            "peak_flops", "peak_fallback",
                                                            "bandwidth")}))
    # the figures that grow: the exact tensor bytes at the peak, those plus
    # the CUDA context (the device total is never below it); the allocated
    # peak (rounded blocks), the reserved memory and the device total may
    # fall as the batch grows (the caching allocator's rounding:
    # doc/cards-and-fit.md "--max-batch")
    low = ("memory.peak_tensors + memory.overhead",
           lambda d: d["memory"]["peak_tensors"] + d["memory"]["overhead"])
    grow = ["memory.peak_tensors", low]
    above = ("memory.total_device", low)
    bs = [1, 2, 4, 8]
    for name, b in (("gpt2", [GPT2]), ("llama-3.1-8b", [LLAMA, "--seq", "256"]),
                    ("mixtral", [MIXTRAL, "--seq", "128"]),
                    ("llama-zero3-8gpus", [LLAMA, "--seq", "256", "--gpus", "8", "--strategy",
                                           "zero3", "--dtype", "bf16"]),
                    ("llama-deepspeed-file", base + ["--deepspeed", f("sweep.json", compact)]),
                    ("llama-fsdp-file", fb + ["--fsdp-config", acc])):
        c.sweep("sweep.%s_rows_are_single_estimates" % name, b, bs, rows)
        c.sweep("sweep.%s_rows_are_single_estimates_on_a_card" % name,
                b + ["--gpu", "h100-80gb"], bs, card_rows)
        c.monotone("monotone.%s_batch" % name, [b + ["--batch", str(x)] for x in bs], bs,
                   grow, ["memory.activations"], above)
    seqs = [128, 256, 512, 1024]
    for name, m in (("gpt2", GPT2), ("llama-3.1-8b", LLAMA), ("mixtral", MIXTRAL)):
        c.monotone("monotone.%s_seq" % name, [[m, "--seq", str(s)] for s in seqs], seqs,
                   grow, ["memory.activations"], above)
    c.monotone("monotone.llama-fsdp-file_seq",
               [fb[:1] + ["--seq", str(s), "--fsdp-config", acc] for s in seqs], seqs,
               grow, ["memory.activations"], above)
    ranks = [4, 8, 16, 64]
    for name, m in (("llama-3.1-8b", [LLAMA, "--seq", "256"]), ("gpt2", [GPT2]),
                    ("mixtral", [MIXTRAL, "--seq", "128"])):
        c.monotone("monotone.%s_lora_rank" % name, [m + ["--lora", str(x)] for x in ranks], ranks,
                   grow, ["params.total", "params.trainable", "memory.parameters"], above)
    ctxs = [256, 512, 1024, 2048]
    glow = ("the larger allocated peak + generate.overhead",
            lambda d: max(d["generate"]["prefill"]["bytes"], d["generate"]["decode"]["bytes"])
            + d["generate"]["overhead"])
    for name, m in (("llama-3.1-8b", LLAMA), ("mixtral", MIXTRAL), ("gpt2", GPT2)):
        xs = [128, 256, 512, 768] if m == GPT2 else ctxs   # gpt2: 1024 positions in all
        c.monotone("monotone.%s_generate_context" % name,
                   [[m, "--generate", "--context", str(x)] for x in xs], xs,
                   ["generate.prefill.bytes", "generate.decode.bytes", glow],
                   ["generate.kv_cache"], ("generate.total_device", glow))


def main():
    args = sys.argv[1:]
    verbose = "-v" in args
    only = None
    if "-k" in args:
        only = args[args.index("-k") + 1]
        del args[args.index("-k"):args.index("-k") + 2]
    args = [a for a in args if a != "-v"]
    if len(args) != 2:
        print(__doc__)
        return 2
    memest, src = os.path.abspath(args[0]), os.path.abspath(args[1])
    with tempfile.TemporaryDirectory(prefix="memest-readers-") as tmp:
        r = Runner(memest, src, tmp)
        c = Checks(r)
        define(c)
        unknown = set(EXPECTED_FAIL) - {n for n, _ in c.checks}
        failed, xfail, xpass, passed = [], [], [], 0
        for name, fn in c.checks:
            if only and only not in name:
                continue
            why = fn()
            if why is None and name in EXPECTED_FAIL:
                xpass.append(name)
                print("XPASS %s (take it off EXPECTED_FAIL)" % name)
            elif why is None:
                passed += 1
                if verbose:
                    print("ok    %s" % name)
            elif name in EXPECTED_FAIL:
                xfail.append(name)
                print("XFAIL %s (%s)\n      %s" % (name, EXPECTED_FAIL[name],
                                                   why.replace("\n", "\n      ")))
            else:
                failed.append(name)
                print("FAIL  %s\n      %s" % (name, why.replace("\n", "\n      ")))
        r.pool.shutdown()
        print("readers.metamorphic: %d passed, %d failed, %d expected to fail, %d passed "
              "unexpectedly; %d memest runs" % (passed, len(failed), len(xfail), len(xpass),
                                                len(r.futures)))
        for n in sorted(unknown):
            print("EXPECTED_FAIL names no check: %s" % n)
        return 1 if failed or xpass or unknown else 0


if __name__ == "__main__":
    sys.exit(main())
