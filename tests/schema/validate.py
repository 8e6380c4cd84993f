#!/usr/bin/env python3
"""Hold every document memest prints with --json to schema/memest.schema.json (JSON Schema 2020-12).

    validate.py MEMEST FAKECUDA SOURCE_DIR [--schema FILE] [--no-errors-tsv] [-v]

MEMEST is the binary, FAKECUDA the fake libcuda of tests/fake_cuda/ (libfakecuda.so), SOURCE_DIR the
checkout (memest runs from it, so the documents hold relative model paths). It

  (a) validates every tests/golden/CASE.out whose CASE.args holds --json;
  (b) runs memest with the commands of COMMANDS below (every document kind and its main variants:
      training and --inference, a card, --layers, several GPUs, LoRA, quantised weights, --probe on the
      fake driver, --max-batch, sweeps, --advise, --generate, errors) and every case of
      tests/errors/cases.tsv with --json, checks each exit code and validates stdout, and memest on
      model folders with a safetensors checkpoint (tests/tools/safetensors_gen.py);
  (c) checks the schema itself (Draft202012Validator.check_schema);
  (d) checks that the schema can fail: valid documents with a member removed, a member added, or a
      value of the wrong type must not validate.

Each document is validated against its kind's definition ($defs/<kind>_document, for messages that
name the JSON path) and against the root (exactly one kind of its oneOf). One line per document, then
a summary; exit 0 when everything passed, 1 otherwise (also when jsonschema cannot be imported:
install python3-jsonschema). Uses only the standard library and jsonschema (4.10 or later).
"""
import argparse
import copy
import json
import os
import subprocess
import sys

try:
    import jsonschema
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match
except ImportError as e:  # never skip silently: CI installs it
    sys.stderr.write("validate.py: cannot import jsonschema (%s): install python3-jsonschema "
                     "(Debian/Ubuntu: apt-get install python3-jsonschema; else pip install jsonschema)\n" % e)
    sys.exit(1)

KINDS = ["estimate", "probe", "max_batch", "sweep", "advise", "generate", "sweep_context", "compare", "error"]
# Kinds memest is gaining that the schema does not define yet: reported as "pending", not failed, until
# the schema has $defs/<kind>_document (then they are validated as any other). Any other document that
# is none of KINDS fails.
PENDING = {}

# The commands of (b): (label, kind, exit code, arguments, environment). "@FAKECUDA@" in a value of the
# environment stands for the fake driver.
L7 = ["models/hf/llama-2-7b.json", "--seq", "512", "--dtype", "bf16"]
FAKE = {"MEMEST_LIBCUDA": "@FAKECUDA@"}
COMMANDS = [
    # estimates
    ("train", "estimate", 0, ["models/resnet50.json", "--batch", "32", "--json"], None),
    ("inference", "estimate", 0, ["models/resnet50.json", "--batch", "8", "--inference", "--json"], None),
    ("inference_preset", "estimate", 0,
     ["models/resnet50.json", "--batch", "8", "--inference", "--gpu", "a10", "--json"], None),
    ("preset_card", "estimate", 0, ["models/mlp-mnist.json", "--batch", "64", "--gpu", "t4", "--json"], None),
    ("mem_card_time_null", "estimate", 0,
     ["models/mlp-mnist.json", "--batch", "64", "--mem", "16GiB", "--json"], None),
    ("fit_does_not_fit", "estimate", 1,
     ["models/resnet50.json", "--batch", "512", "--gpu", "a100-40gb", "--fit", "--json"], None),
    ("layers", "estimate", 0, ["models/gpt2.json", "--batch", "2", "--layers", "--json"], None),
    ("layers_fit", "estimate", 0,
     ["models/resnet18.json", "--batch", "4", "--gpu", "t4", "--fit", "--layers", "--json"], None),
    ("loss_none_layers", "estimate", 0,
     ["models/alexnet.json", "--batch", "8", "--loss", "none", "--layers", "--json"], None),
    ("amp_checkpoint_first_step", "estimate", 0,
     ["models/gpt2.json", "--batch", "2", "--amp", "bf16", "--checkpoint", "--first-step", "--zero-grad",
      "zeros", "--optim", "adamw", "--optim-impl", "fused", "--json"], None),
    ("sgd_momentum_grad_accum", "estimate", 0,
     ["models/resnet18.json", "--batch", "8", "--optim", "sgd", "--momentum", "0.9", "--grad-accum", "2",
      "--json"], None),
    ("paged_optimizer", "estimate", 0, ["models/gpt2.json", "--batch", "2", "--optim", "paged_adamw", "--json"],
     None),
    ("adam8bit", "estimate", 0, ["models/gpt2.json", "--batch", "2", "--optim", "adam8bit", "--json"], None),
    ("paged_lion8bit", "estimate", 0, ["models/mlp-mnist.json", "--optim", "paged_lion8bit", "--json"], None),
    ("adafactor", "estimate", 0, ["models/mlp-mnist.json", "--optim", "adafactor", "--json"], None),
    ("activation_offload", "estimate", 0, ["models/mlp-mnist.json", "--activation-offload", "--json"], None),
    ("muon", "estimate", 0, ["models/mlp-mnist.json", "--optim", "muon", "--json"], None),
    ("hf_adafactor", "estimate", 0, ["models/mlp-mnist.json", "--optim", "hf_adafactor", "--json"], None),
    # several GPUs
    ("gpus_ddp", "estimate", 0, ["models/gpt2.json", "--batch", "4", "--gpus", "4", "--json"], None),
    ("gpus_zero3", "estimate", 0, L7 + ["--gpus", "8", "--strategy", "zero3", "--gpu", "a100-80gb", "--json"],
     None),
    ("gpus_zero3_offload", "estimate", 0,
     L7 + ["--gpus", "8", "--strategy", "zero3", "--offload", "optimizer+params", "--json"], None),
    ("gpus_fsdp", "estimate", 0, L7 + ["--gpus", "8", "--strategy", "fsdp", "--json"], None),
    ("gpus_hsdp", "estimate", 0, L7 + ["--gpus", "16", "--strategy", "hsdp", "--json"], None),
    ("gpus_tp_only", "estimate", 0, L7 + ["--gpus", "2", "--tp", "2", "--json"], None),
    ("gpus_pp_zero1", "estimate", 0,
     L7 + ["--gpus", "8", "--pp", "2", "--strategy", "zero1", "--gpu", "a100-80gb", "--json"], None),
    ("gpus_pp_interleaved", "estimate", 0,
     L7 + ["--gpus", "8", "--pp", "2", "--schedule", "interleaved", "--virtual-stages", "2", "--json"], None),
    # LoRA and quantised weights
    ("lora", "estimate", 0, ["models/hf/llama-2-7b.json", "--seq", "256", "--dtype", "bf16", "--lora", "8",
                             "--json"], None),
    ("qlora_nf4", "estimate", 0,
     ["models/hf/llama-2-7b.json", "--seq", "256", "--weights", "nf4", "--double-quant", "--compute-dtype",
      "bf16", "--lora", "16", "--optim", "paged_adamw8bit", "--kbit-prep", "--json"], None),
    ("gptq_lora", "estimate", 0,
     ["models/hf/llama-2-7b.json", "--seq", "256", "--weights", "gptq", "--lora", "8", "--json"], None),
    ("int8_inference", "estimate", 0,
     ["models/hf/llama-2-7b.json", "--seq", "256", "--weights", "int8", "--inference", "--json"], None),
    # --probe on the fake driver
    ("probe_fits", "probe", 0, ["models/mlp-mnist.json", "--batch", "64", "--probe", "--json"],
     dict(FAKE, FAKECUDA_TOTAL="16G", FAKECUDA_CONTEXT="300M")),
    ("probe_oom", "probe", 1, ["models/mlp-mnist.json", "--batch", "256", "--probe", "--json"],
     dict(FAKE, FAKECUDA_TOTAL="400M", FAKECUDA_CONTEXT="390M")),
    ("probe_segment_oom", "probe", 1, ["models/resnet50.json", "--batch", "64", "--probe", "--json"],
     dict(FAKE, FAKECUDA_TOTAL="2G")),
    ("probe_no_driver", "probe", 4, ["models/mlp-mnist.json", "--probe", "--json"],
     {"MEMEST_LIBCUDA": "/nonexistent/libcuda.so.1"}),
    ("probe_no_device", "probe", 4, ["models/mlp-mnist.json", "--probe", "--json"],
     dict(FAKE, FAKECUDA_DEVICES="0")),
    ("probe_alloc_error", "probe", 5, ["models/mlp-mnist.json", "--probe", "--json"],
     dict(FAKE, FAKECUDA_FAIL_ALLOC_AT="3")),
    ("probe_gpu_auto_preset", "probe", 0, ["models/mlp-mnist.json", "--probe", "--gpu", "auto", "--json"],
     dict(FAKE, FAKECUDA_TOTAL="40G", FAKECUDA_NAME="NVIDIA A100-SXM4-40GB")),
    ("probe_gpu_auto_unknown", "probe", 0, ["models/mlp-mnist.json", "--probe", "--gpu", "auto", "--json"],
     dict(FAKE, FAKECUDA_TOTAL="40G", FAKECUDA_NAME="Fake A100 (tests/fake_cuda)")),
    ("probe_gpus", "probe", 0, ["models/gpt2.json", "--batch", "2", "--gpus", "2", "--probe", "--json"],
     dict(FAKE, FAKECUDA_TOTAL="16G")),
    ("probe_inference", "probe", 0, ["models/resnet50.json", "--batch", "8", "--inference", "--probe", "--json"],
     dict(FAKE, FAKECUDA_TOTAL="16G")),
    # --max-batch
    ("max_batch", "max_batch", 0, ["models/resnet50.json", "--gpu", "a100-40gb", "--max-batch", "--json"],
     None),
    ("max_batch_none", "max_batch", 1, ["models/resnet50.json", "--mem", "100MiB", "--max-batch", "--json"],
     None),
    ("max_batch_layers", "max_batch", 0,
     ["models/mlp-mnist.json", "--mem", "1GiB", "--max-batch", "--layers", "--json"], None),
    ("max_batch_pp", "max_batch", 0,
     ["models/hf/llama-2-7b.json", "--seq", "256", "--gpus", "4", "--pp", "2", "--gpu", "a100-80gb",
      "--max-batch", "--json"], None),
    # sweeps
    ("sweep_preset", "sweep", 0, ["models/bert-base.json", "--sweep", "8:32:x2", "--gpu", "a10", "--json"], None),
    ("sweep_mem", "sweep", 0, ["models/bert-base.json", "--sweep", "8,16", "--mem", "8GiB", "--json"], None),
    ("sweep_no_card", "sweep", 0, ["models/gpt2.json", "--sweep", "1,2", "--inference", "--json"], None),
    ("sweep_limit_row", "sweep", 0, ["models/mlp-mnist.json", "--sweep", "1,9007199254740991", "--json"], None),
    ("sweep_limit_row_card", "sweep", 0,
     ["models/mlp-mnist.json", "--sweep", "1,9007199254740991", "--mem", "1GiB", "--json"], None),
    ("sweep_var", "sweep", 0,
     ["models/gpt2.json", "--batch", "2", "--sweep-var", "seq_len=128:512:x2", "--gpu", "t4", "--json"], None),
    ("sweep_var_no_card", "sweep", 0,
     ["models/gpt2.json", "--sweep-var", "seq_len=64,128", "--json"], None),
    # --advise
    # the comparison of cards
    ("compare_all_price", "compare", 0,
     ["models/resnet18.json", "--gpu", "all", "--batch", "64", "--price", "t4=0.35,h100-80gb=2.5", "--json"], None),
    ("compare_none_fits", "compare", 1,
     ["models/resnet50.json", "--gpu", "t4,l4", "--batch", "4096", "--json"], None),
    ("compare_nodes", "compare", 0,
     ["models/gpt2.json", "--gpu", "a100-40gb,h100-80gb", "--batch", "8", "--gpus", "16", "--strategy",
      "zero2", "--price", "h100-80gb=2.5", "--json"], None),
    ("compare_inference", "compare", 0,
     ["models/bert-base.json", "--gpu", "t4,a10", "--batch", "32", "--inference", "--json"], None),
    ("compare_limit", "compare", 1,
     ["models/mlp-mnist.json", "--gpu", "t4,l4", "--batch", "9007199254740991", "--json"], None),
    ("advise_preset", "advise", 0, ["models/vgg16.json", "--batch", "64", "--gpu", "rtx3090", "--advise", "--json"],
     None),
    ("advise_mem", "advise", 0, ["models/vgg16.json", "--batch", "64", "--mem", "8GiB", "--advise", "--json"],
     None),
    ("advise_gpus", "advise", 0, L7 + ["--gpus", "8", "--gpu", "a100-80gb", "--advise", "--json"], None),
    # --generate
    ("generate_preset", "generate", 0,
     ["models/hf/llama-3-8b.json", "--generate", "--context", "1024", "--new-tokens", "128", "--gpu",
      "h100-80gb", "--json"], None),
    ("generate_no_card", "generate", 0,
     ["models/hf/llama-3-8b.json", "--generate", "--context", "1024", "--json"], None),
    ("generate_mem", "generate", 0,
     ["models/hf/llama-3-8b.json", "--generate", "--context", "1024", "--mem", "40GiB", "--json"], None),
    ("generate_static_fp8", "generate", 0,
     ["models/hf/llama-3-8b.json", "--generate", "--context", "1024", "--cache", "static", "--kv-dtype", "fp8",
      "--all-logits", "--json"], None),
    ("generate_max_context", "generate", 0,
     ["models/hf/llama-3-8b.json", "--generate", "--new-tokens", "128", "--max-context",
      "--gpu", "a10", "--json"], None),
    ("generate_max_batch", "generate", 0,
     ["models/hf/llama-3-8b.json", "--generate", "--context", "1024", "--new-tokens", "128", "--max-batch",
      "--gpu", "h100-80gb", "--json"], None),
    ("generate_kv_block", "generate", 0,
     ["models/hf/llama-2-7b.json", "--generate", "--context", "512", "--new-tokens", "128", "--kv-block", "16",
      "--gpu", "a100-80gb", "--json"], None),
    ("generate_kv_block_mem", "generate", 0,
     ["models/hf/llama-3-8b.json", "--generate", "--context", "1024", "--kv-block", "16", "--gpu-util", "0.8",
      "--mem", "80GiB", "--json"], None),
    ("sweep_context_preset", "sweep_context", 0,
     ["models/hf/llama-3-8b.json", "--generate", "--sweep-context", "1024:8192:x2", "--new-tokens", "128",
      "--gpu", "h100-80gb", "--json"], None),
    ("sweep_context_mem", "sweep_context", 0,
     ["models/hf/llama-3-8b.json", "--generate", "--sweep-context", "1024,2048", "--mem", "24GiB", "--json"],
     None),
    ("sweep_context_no_card", "sweep_context", 0,
     ["models/hf/llama-3-8b.json", "--generate", "--sweep-context", "1024,2048", "--json"], None),
    # errors
    ("error_usage", "error", 2, ["models/mlp-mnist.json", "--batch", "0", "--json"], None),
    ("error_no_model", "error", 2, ["--json"], None),
    ("error_needs_card", "error", 2, ["models/vgg16.json", "--advise", "--json"], None),
    ("error_parse_line_col", "error", 3, ["tests/errors/bad_token.json", "--json"], None),
    ("error_parse_empty", "error", 3, ["tests/errors/empty.json", "--json"], None),
    ("error_schema", "error", 3, ["tests/errors/unknown_arg.json", "--json"], None),
    ("error_shape", "error", 3, ["tests/errors/shape_mismatch.json", "--json"], None),
    ("error_io", "error", 3, ["/nonexistent/model.json", "--json"], None),
    ("error_limit", "error", 3, ["models/mlp-mnist.json", "--batch", "9007199254740991", "--json"], None),
    ("error_set_shape", "error", 3, ["models/gpt2.json", "--set", "seq_len=2000", "--json"], None),
    ("error_output", "error", 6, ["models/mlp-mnist.json", "--plot", "/nonexistent/dir/x.svg", "--json"], None),
]


def classify(doc):
    """The kind of a document, from its members (for the golden outputs)."""
    if not isinstance(doc, dict):
        return None
    if set(doc) == {"schema_version", "error"}:
        return "error"
    if "cards" in doc:
        return "compare"
    for member, kind in (("sweep_context", "sweep_context"), ("generate", "generate"), ("rows", "sweep"),
                         ("options", "advise"), ("max_batch", "max_batch"), ("probe", "probe")):
        if member in doc:
            return kind
    return "estimate"


def json_path(path):
    out = "$"
    for p in path:
        out += "[%d]" % p if isinstance(p, int) else "." + p
    return out


def describe(err):
    """The deepest useful message of an error (into oneOf/anyOf), with its JSON path."""
    while err.context:
        err = best_match(err.context)
    return "%s: %s" % (json_path(err.absolute_path), err.message if len(err.message) < 300
                       else err.message[:300] + "...")


class Checker:
    def __init__(self, schema):
        self.schema = schema
        self.root = Draft202012Validator(schema)
        self.kind = {}
        self.pending = []
        for k in KINDS + list(PENDING):
            if k not in KINDS and "%s_document" % k not in schema.get("$defs", {}):
                continue   # the schema with its root's oneOf replaced by one kind
            s = {key: v for key, v in schema.items() if key != "oneOf"}
            s["$ref"] = "#/$defs/%s_document" % k
            self.kind[k] = Draft202012Validator(s)
        self.passed = 0
        self.failures = []

    def errors(self, doc, kind):
        """The messages of doc against kind's definition and the root; [] when valid."""
        errs = sorted(self.kind[kind].iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
        msgs = [describe(e) for e in errs]
        if not msgs and not self.root.is_valid(doc):
            matched = [k for k in self.kind if self.kind[k].is_valid(doc)]
            msgs = ["$: valid as %s_document, but the root's oneOf matches %s" % (kind, matched or "none")]
        return msgs

    def ok(self, label):
        self.passed += 1
        print("ok      %s" % label)

    def fail(self, label, msgs):
        self.failures.append(label)
        print("FAIL    %s" % label)
        for m in msgs[:20]:
            print("          %s" % m)
        if len(msgs) > 20:
            print("          ... and %d more" % (len(msgs) - 20))

    def document(self, label, text, kind=None):
        try:
            doc = json.loads(text)
        except ValueError as e:
            self.fail(label, ["stdout is not one JSON document: %s; it starts %r" % (e, text[:80])])
            return None
        got = classify(doc)
        if got not in self.kind:
            if got in PENDING:
                self.pending.append(label)
                print("pending %s: a %s document (%s), which the schema does not define yet "
                      "($defs/%s_document)" % (label, got, PENDING[got], got))
                return None
            self.fail(label, ["$: none of the document kinds %s" % KINDS])
            return None
        if kind and got != kind:
            self.fail(label, ["$: expected a %s document, its members %s make it a %s document"
                              % (kind, list(doc)[:8], got)])
            return None
        msgs = self.errors(doc, got)
        if msgs:
            self.fail("%s (%s document)" % (label, got), msgs)
            return None
        self.ok("%s (%s document)" % (label, got))
        return doc


def run(memest, src, fake, args, env=None):
    e = dict(os.environ)
    for k, v in (env or {}).items():
        e[k] = v.replace("@FAKECUDA@", fake)
    p = subprocess.run([memest] + args, cwd=src, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=600)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8", "replace")


def goldens(c, src):
    gdir = os.path.join(src, "tests", "golden")
    n = 0
    for name in sorted(os.listdir(gdir)):
        if not name.endswith(".args"):
            continue
        case = name[:-5]
        with open(os.path.join(gdir, name), encoding="utf-8") as f:
            if "--json" not in f.read().split("\n"):
                continue
        with open(os.path.join(gdir, case + ".out"), encoding="utf-8") as f:
            c.document("golden %s" % case, f.read())
        n += 1
    if n == 0:
        c.fail("golden", ["no tests/golden/*.args holds --json"])


def commands(c, memest, src, fake):
    for label, kind, rc, args, env in COMMANDS:
        code, out, err = run(memest, src, fake, args, env)
        if code != rc:
            c.fail("run %s" % label, ["exit code %d, expected %d: memest %s\n          stderr: %s"
                                      % (code, rc, " ".join(args), err.strip()[:300])])
            continue
        doc = c.document("run %s" % label, out, kind)
        if doc is not None and kind in ("error", "probe") and "error" in doc and doc["error"]["exit"] != code:
            c.fail("run %s" % label, ["$.error.exit: %d, but memest exited %d" % (doc["error"]["exit"], code)])


def safetensors_docs(c, memest, src, fake):
    """Model folders with a safetensors checkpoint (tests/tools/safetensors_gen.py writes them into a
    temporary folder): the estimate with its "safetensors" member, and a refused checkpoint's error."""
    import tempfile
    gen = os.path.join(src, "tests", "tools", "safetensors_gen.py")
    with tempfile.TemporaryDirectory() as tmp:
        for case, kind, rc in (("good", "estimate", 0), ("sharded", "estimate", 0), ("gptq", "estimate", 0),
                               ("nf4", "estimate", 0), ("base_model", "estimate", 0), ("shape", "error", 3)):
            out = os.path.join(tmp, case)
            subprocess.run([sys.executable, gen, case, out], check=True)
            code, doc, err = run(memest, src, fake, [out, "--json"])
            if code != rc:
                c.fail("safetensors %s" % case, ["exit code %d, expected %d: %s" % (code, rc, err.strip()[:300])])
                continue
            d = c.document("safetensors %s" % case, doc, kind)
            if d is not None and rc == 0 and "safetensors" not in d:
                c.fail("safetensors %s" % case, ["no \"safetensors\" member"])


def errors_tsv(c, memest, src, fake):
    """Every case of tests/errors/cases.tsv (as tests/group_cli.cmake expands it) with --json first."""
    tests = os.path.join(src, "tests")
    with open(os.path.join(tests, "errors", "cases.tsv"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    for line in lines:
        if not line or line.startswith("#"):
            continue
        name, code, _frag, args = line.split("\t")
        for a, b in (("@models/", src + "/models/"), ("@hf/", tests + "/hf/"), ("@errors/", tests + "/errors/"),
                     ("@", "%s/errors/%s.json" % (tests, name)), ("GOOD", tests + "/errors/good.json")):
            args = args.replace(a, b)
        env, argv = {}, []
        for a in args.split(" "):
            if a.startswith("env:"):
                k, _, v = a[4:].partition("=")
                env[k] = v
            else:
                argv.append(a)
        got, out, err = run(memest, src, fake, ["--json"] + argv, env)
        label = "errors/cases.tsv %s" % name
        if got != int(code):
            c.fail(label, ["exit code %d, expected %s\n          stderr: %s" % (got, code, err.strip()[:300])])
            continue
        if got == 0 and not out.startswith("{"):
            print("skip    %s (exit 0, not a --json document: %s)" % (label, out.split("\n")[0][:60]))
            continue
        doc = c.document(label, out, "error" if got != 0 else None)
        if doc is not None and got != 0 and doc["error"]["exit"] != got:
            c.fail(label, ["$.error.exit: %d, but memest exited %d" % (doc["error"]["exit"], got)])


def walk(doc, path=()):
    """Every object and leaf of doc, with its path; of a long array only the first and last items."""
    if isinstance(doc, dict):
        yield path, doc
        for k, v in doc.items():
            yield from walk(v, path + (k,))
    elif isinstance(doc, list):
        idx = range(len(doc)) if len(doc) <= 4 else [0, 1, len(doc) - 2, len(doc) - 1]
        for i in idx:
            yield from walk(doc[i], path + (i,))
    else:
        yield path, doc


def at(doc, path):
    for p in path:
        doc = doc[p]
    return doc


# Members a document may lack (removing one leaves a valid document of the same kind).
OPTIONAL = {"weights", "lora", "parallel", "comm_buffers", "error", "paged", "max_batch", "max_context"}


def negatives(c, memest, src, fake):
    """(d): the schema rejects a member removed, a member added and a value of the wrong type."""
    samples = [
        ("estimate", ["models/mlp-mnist.json", "--batch", "64", "--gpu", "t4", "--layers", "--json"], None),
        # a several-GPU document small enough to mutate member by member: a two-layer GPT-2, pipelined
        ("estimate", ["models/gpt2.json", "--set", "n_layer=2", "--seq", "16", "--gpus", "4", "--pp", "2",
                      "--strategy", "zero1", "--json"], None),
        ("probe", ["models/mlp-mnist.json", "--probe", "--json"], {"MEMEST_LIBCUDA": "/nonexistent/libcuda.so.1"}),
        ("max_batch", ["models/mlp-mnist.json", "--mem", "1GiB", "--max-batch", "--json"], None),
        ("sweep", ["models/gpt2.json", "--seq", "16", "--sweep-var", "n_layer=1,2", "--json"], None),
        ("sweep", ["models/mlp-mnist.json", "--sweep", "1,9007199254740991", "--gpu", "t4", "--json"], None),
        ("advise", ["models/mlp-mnist.json", "--batch", "64", "--gpu", "t4", "--advise", "--json"], None),
        ("generate", ["models/hf/llama-2-7b.json", "--generate", "--context", "512", "--kv-block", "16",
                      "--gpu", "a100-80gb", "--json"], None),
        ("sweep_context", ["models/hf/llama-3-8b.json", "--generate", "--sweep-context", "1024,2048", "--gpu",
                           "t4", "--json"], None),
        ("error", ["tests/errors/bad_token.json", "--json"], None),
    ]
    docs = []
    for kind, args, env in samples:
        code, out, err = run(memest, src, fake, args, env)
        try:
            doc = json.loads(out)
        except ValueError:
            c.fail("negative: memest %s" % " ".join(args), ["no JSON document (exit %d): %s" % (code, err.strip())])
            continue
        if c.errors(doc, kind):
            c.fail("negative: memest %s" % " ".join(args), ["the document itself is not valid: %s"
                                                           % c.errors(doc, kind)[0]])
            continue
        docs.append((kind, " ".join(args), doc))

    # the explicit checks, on the first sample: a required member removed, extra members, wrong types
    if not docs or docs[0][1] != " ".join(samples[0][1]):
        c.fail("negative", ["no valid document of memest %s to mutate" % " ".join(samples[0][1])])
        return
    kind, cmd, doc = docs[0]
    for what, mutate in (("memory.peak removed", lambda d: d["memory"].pop("peak")),
                         ("an extra top-level member", lambda d: d.__setitem__("extra", 1)),
                         ("an extra member in fit", lambda d: d["fit"].__setitem__("extra", True)),
                         ("layers[0].params as a string", lambda d: d["layers"][0].__setitem__("params", "1")),
                         ("memory.peak as a float", lambda d: d["memory"].__setitem__("peak", 1.5))):
        m = copy.deepcopy(doc)
        mutate(m)
        label = "negative: %s document with %s" % (kind, what)
        if c.errors(m, kind) and not c.root.is_valid(m):
            c.ok(label + " is rejected")
        else:
            c.fail(label, ["the schema accepts it"])

    # every member of every object removed, an extra member in every object, every leaf's type changed
    for kind, cmd, doc in docs:
        accepted = []
        tried = 0
        validator = c.kind[kind]
        for path, node in list(walk(doc)):
            if isinstance(node, dict):
                for k in list(node):
                    m = copy.deepcopy(doc)
                    del at(m, path)[k]
                    tried += 1
                    if k not in OPTIONAL and validator.is_valid(m):
                        accepted.append("%s: the document without its member %r" % (json_path(path), k))
                m = copy.deepcopy(doc)
                at(m, path)["zz_extra"] = 1
                tried += 1
                if validator.is_valid(m):
                    accepted.append("%s: an extra member \"zz_extra\"" % json_path(path))
            elif path:
                if node is None:   # null where a string, number or object may stand
                    wrong = {"zz_extra": 1}
                elif isinstance(node, (bool, int, float)):
                    wrong = "zz"
                else:
                    wrong = 12345
                m = copy.deepcopy(doc)
                at(m, path[:-1])[path[-1]] = wrong
                tried += 1
                if validator.is_valid(m):
                    accepted.append("%s: %r instead of %r" % (json_path(path), wrong, node))
        label = "negative: %d mutations of the %s document of memest %s" % (tried, kind, cmd)
        if accepted:
            c.fail(label, ["the schema accepts " + a for a in accepted])
        else:
            c.ok(label + " are all rejected")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("memest")
    ap.add_argument("fakecuda")
    ap.add_argument("source_dir")
    ap.add_argument("--schema", help="default: SOURCE_DIR/schema/memest.schema.json")
    ap.add_argument("--no-errors-tsv", action="store_true", help="leave out tests/errors/cases.tsv")
    o = ap.parse_args()
    src = os.path.abspath(o.source_dir)
    memest = os.path.abspath(o.memest)
    fake = os.path.abspath(o.fakecuda)
    path = o.schema or os.path.join(src, "schema", "memest.schema.json")
    print("validate.py: jsonschema %s, Python %s, schema %s"
          % (_version(), sys.version.split()[0], path))
    try:
        with open(path, encoding="utf-8") as f:
            schema = json.load(f)
    except (OSError, ValueError) as e:
        print("FAIL    schema %s: %s" % (path, e))
        return 1
    try:
        Draft202012Validator.check_schema(schema)
    except jsonschema.exceptions.SchemaError as e:
        print("FAIL    schema %s is not a valid draft 2020-12 schema: %s: %s"
              % (path, json_path(e.absolute_path), e.message))
        return 1
    c = Checker(schema)
    c.ok("schema %s (Draft202012Validator.check_schema)" % os.path.relpath(path, src))
    for p in (memest, fake):
        if not os.path.exists(p):
            c.fail("setup", ["%s does not exist" % p])
            return 1
    goldens(c, src)
    commands(c, memest, src, fake)
    safetensors_docs(c, memest, src, fake)
    if not o.no_errors_tsv:
        errors_tsv(c, memest, src, fake)
    negatives(c, memest, src, fake)
    print("summary: %d passed, %d failed, %d pending (kinds the schema does not define yet: %s)"
          % (c.passed, len(c.failures), len(c.pending), ", ".join(c.pending) or "none"))
    if c.failures:
        print("failed: " + ", ".join(c.failures[:30]) + (" ..." if len(c.failures) > 30 else ""))
        return 1
    return 0


def _version():
    try:
        from importlib.metadata import version
        return version("jsonschema")
    except Exception:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
