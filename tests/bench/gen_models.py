#!/usr/bin/env python3
"""gen_models.py - synthetic memest model files for the benchmark of issue 17
(tests/bench/run.sh): graphs of a given size, so that memest's time and memory
can be measured against the number of nodes.  A tool, not part of memest.

    tests/bench/gen_models.py [--out DIR] [--family F] [--nodes N[,N...]]
    (default: every family at 1000,10000,100000,1000000 nodes, into the
    current directory)

Families (the node count is the count after expansion, model inputs
included, as memest counts it: the entries of `--json`'s "layers"):

  resmlp-repeat       a deep residual MLP as a block and "repeat" (as
                      tests/perf/deep_resmlp.json): linear, layernorm, gelu,
                      add per block (4 nodes)
  resmlp-flat         the same graph written out node by node, with the
                      same names and an explicit "inputs" on every node
  widecat             wide concatenations: the block input fanned out to 16
                      linear branches, a cat and a linear back to the width
                      (18 nodes per block), repeated
  transformer-repeat  a GPT-2 block (models/gpt2.json's, 28 nodes) repeated:
                      width 64, 4 heads, sequence 32, vocabulary 256
  transformer-flat    the same written out node by node

Widths are small on purpose: every tensor is tiny, so the time and memory
measured are those of the graph, not of big numbers.  The repeat count is
chosen so that the node count is as close to N as the family's block allows.

Every file written is listed on stdout and in DIR/manifest.tsv (family,
target, nodes, file), which run.sh reads.  Files are written as streams, so
even the 1M-node flat files (about 100 MB) need little memory here; memest
refuses them today (doc/robustness.md, "Limits and cost": 250,000 nodes after
expansion, 2,000,000 JSON values), which the benchmark reports.
"""
import argparse
import json
import os
import sys

WIDTH = 16          # resmlp and widecat
FANOUT = 16         # widecat's branches

# The transformer: GPT-2's architecture (models/gpt2.json) at a toy size.
TVARS = {
    "seq_len": 32,
    "vocab_size": 256,
    "n_positions": 32,
    "n_embd": 64,
    "n_layer": 1,
    "n_head": 4,
    "n_inner": 256,
    "layer_norm_epsilon": 1e-5,
    "dropout": 0.1,
    "attention_scale": 4,
}

# models/gpt2.json's GPT2Block, comments left out (28 nodes).  Input: the
# block's "hidden_states".
GPT2_BLOCK = [
    {"name": "ln_1", "type": "layernorm", "normalized_shape": "n_embd", "eps": "layer_norm_epsilon"},
    {"name": "attn.c_attn", "type": "linear", "out_features": "3 * n_embd"},
    {"name": "attn.split", "type": "split", "split_size_or_sections": "n_embd", "dim": 2},
    {"name": "attn.query_view", "type": "view", "inputs": ["attn.split:0"],
     "shape": ["batch", "seq_len", "n_head", "n_embd // n_head"]},
    {"name": "attn.query", "type": "permute", "dims": [0, 2, 1, 3]},
    {"name": "attn.key_view", "type": "view", "inputs": ["attn.split:1"],
     "shape": ["batch", "seq_len", "n_head", "n_embd // n_head"]},
    {"name": "attn.key", "type": "permute", "dims": [0, 2, 1, 3]},
    {"name": "attn.value_view", "type": "view", "inputs": ["attn.split:2"],
     "shape": ["batch", "seq_len", "n_head", "n_embd // n_head"]},
    {"name": "attn.value", "type": "permute", "dims": [0, 2, 1, 3]},
    {"name": "attn.key_t", "type": "transpose", "inputs": ["attn.key"], "dim0": -1, "dim1": -2},
    {"name": "attn.attn_weights", "type": "matmul", "inputs": ["attn.query", "attn.key_t"]},
    {"name": "attn.scaled_weights", "type": "div", "other": "attention_scale"},
    {"name": "attn.causal_mask", "type": "masked_fill", "mask": "causal", "max_positions": "n_positions"},
    {"name": "attn.softmax", "type": "softmax", "dim": -1},
    {"name": "attn.attn_dropout", "type": "dropout", "p": "dropout"},
    {"name": "attn.attn_output", "type": "matmul", "inputs": ["attn.attn_dropout", "attn.value"]},
    {"name": "attn.merge_permute", "type": "permute", "dims": [0, 2, 1, 3]},
    {"name": "attn.merge_contiguous", "type": "contiguous"},
    {"name": "attn.merge_view", "type": "view", "shape": ["batch", "seq_len", "n_embd"]},
    {"name": "attn.c_proj", "type": "linear", "out_features": "n_embd"},
    {"name": "attn.resid_dropout", "type": "dropout", "p": "dropout"},
    {"name": "add", "type": "add", "inputs": ["attn.resid_dropout", "hidden_states"]},
    {"name": "ln_2", "type": "layernorm", "normalized_shape": "n_embd", "eps": "layer_norm_epsilon"},
    {"name": "mlp.c_fc", "type": "linear", "out_features": "n_inner"},
    {"name": "mlp.act", "type": "gelu", "approximate": "tanh"},
    {"name": "mlp.c_proj", "type": "linear", "out_features": "n_embd"},
    {"name": "mlp.dropout", "type": "dropout", "p": "dropout"},
    {"name": "add_1", "type": "add", "inputs": ["add", "mlp.dropout"]},
]

# Before and after the blocks (models/gpt2.json's top level).
GPT2_HEAD = [
    {"name": "arange", "type": "arange", "inputs": [], "end": "seq_len", "dtype": "int64"},
    {"name": "position_ids", "type": "unsqueeze", "dim": 0, "inputs": ["arange"]},
    {"name": "wte", "type": "embedding", "inputs": ["input_ids"], "num_embeddings": "vocab_size",
     "embedding_dim": "n_embd"},
    {"name": "wpe", "type": "embedding", "inputs": ["position_ids"], "num_embeddings": "n_positions",
     "embedding_dim": "n_embd"},
    {"name": "add", "type": "add", "inputs": ["wte", "wpe"]},
    {"name": "drop", "type": "dropout", "p": "dropout", "inputs": ["add"]},
]
GPT2_TAIL = [
    {"name": "ln_f", "type": "layernorm", "normalized_shape": "n_embd", "eps": "layer_norm_epsilon"},
    {"name": "lm_head", "type": "linear", "out_features": "vocab_size", "bias": False,
     "tie_weight": "wte", "inputs": ["ln_f"]},
]
GPT2_INPUT = {"name": "input_ids", "shape": ["seq_len"], "dtype": "int64"}
GPT2_LOSS = {"type": "crossentropyloss", "class_dim": -1}

RESMLP_BLOCK = [
    {"name": "fc", "type": "linear", "out_features": "width"},
    {"name": "norm", "type": "layernorm"},
    {"name": "act", "type": "gelu"},
    {"name": "add", "type": "add", "inputs": ["act", "x"]},
]


def widecat_block():
    layers = [{"name": "br%d" % k, "type": "linear", "out_features": "width", "bias": False, "inputs": ["x"]}
              for k in range(FANOUT)]
    layers.append({"name": "cat", "type": "cat", "dim": -1,
                   "inputs": ["br%d" % k for k in range(FANOUT)]})
    layers.append({"name": "proj", "type": "linear", "out_features": "width"})
    return layers


# Per family: (nodes per repeated block, nodes outside the blocks).
SHAPE = {
    "resmlp-repeat": (len(RESMLP_BLOCK), 2),             # input x, head
    "resmlp-flat": (len(RESMLP_BLOCK), 2),
    "widecat": (FANOUT + 2, 1),                           # input x
    "transformer-repeat": (len(GPT2_BLOCK), 1 + len(GPT2_HEAD) + len(GPT2_TAIL)),
    "transformer-flat": (len(GPT2_BLOCK), 1 + len(GPT2_HEAD) + len(GPT2_TAIL)),
}
FAMILIES = list(SHAPE)


def repeats_for(family, nodes):
    per, fixed = SHAPE[family]
    return max(1, round((nodes - fixed) / per))


def node_count(family, reps):
    per, fixed = SHAPE[family]
    return fixed + per * reps


def flatten_block(block, prefix, block_inputs, first_default):
    """The nodes of one block instance written out: names prefixed, every
    reference made explicit (a node without "inputs" reads the previous node,
    the first the block's first input)."""
    local = {}
    prev = first_default
    out = []
    for node in block:
        n = dict(node)
        name = prefix + n["name"]
        if "inputs" in n:
            refs = []
            for r in n["inputs"]:
                base, colon, k = r.partition(":")
                if base in block_inputs:
                    refs.append(block_inputs[base] + colon + k)
                else:
                    refs.append(local[base] + colon + k)
            n["inputs"] = refs
        else:
            n["inputs"] = [prev]
        n["name"] = name
        local[node["name"]] = name
        prev = name
        out.append(n)
    return out, prev


class Writer:
    """Writes {"...": ..., "layers": [node, node, ...]} one node at a time."""

    def __init__(self, path, top):
        self.f = open(path, "w")
        head = json.dumps(top, indent=1)
        assert head.endswith("}")
        self.f.write(head[:-1].rstrip() + ',\n "layers": [\n')
        self.first = True

    def node(self, n):
        self.f.write(("  " if self.first else ",\n  ") + json.dumps(n, separators=(", ", ": ")))
        self.first = False

    def close(self):
        self.f.write("\n ]\n}\n")
        self.f.close()


def write_flat(w, block, prefix, arg, first, reps):
    """Writes reps instances of block node by node, as `repeat` would name
    them (PREFIX.I.NODE), each taking the previous one's output as its input
    `arg`; returns the last output's name."""
    prev = first
    for i in range(reps):
        nodes, prev = flatten_block(block, "%s.%d." % (prefix, i), {arg: prev}, prev)
        for n in nodes:
            w.node(n)
    return prev


def write_resmlp(path, reps, flat):
    top = {"name": "resmlp-%s-%d" % ("flat" if flat else "repeat", reps),
           "description": "tests/bench/gen_models.py: %d residual MLP blocks (linear, layernorm, gelu, add)%s"
                          % (reps, ", written out node by node" if flat else ""),
           "variables": {"depth": reps, "width": WIDTH},
           "inputs": [{"name": "x", "shape": ["width"]}]}
    if not flat:
        top["blocks"] = {"res": {"layers": RESMLP_BLOCK}}
    w = Writer(path, top)
    if flat:
        prev = write_flat(w, RESMLP_BLOCK, "blocks", "x", "x", reps)
        w.node({"name": "head", "type": "linear", "out_features": 10, "inputs": [prev]})
    else:
        w.node({"name": "blocks", "type": "res", "repeat": "depth"})
        w.node({"name": "head", "type": "linear", "out_features": 10})
    w.close()


def write_widecat(path, reps):
    top = {"name": "widecat-%d" % reps,
           "description": "tests/bench/gen_models.py: %d blocks of %d linear branches of one input, "
                          "a cat and a linear back to the width" % (reps, FANOUT),
           "variables": {"depth": reps, "width": WIDTH},
           "inputs": [{"name": "x", "shape": ["width"]}],
           "blocks": {"wide": {"layers": widecat_block()}}}
    w = Writer(path, top)
    w.node({"name": "w", "type": "wide", "repeat": "depth"})
    w.close()


def write_transformer(path, reps, flat):
    variables = dict(TVARS, n_layer=reps)
    top = {"name": "transformer-%s-%d" % ("flat" if flat else "repeat", reps),
           "description": "tests/bench/gen_models.py: GPT-2 (models/gpt2.json) with %d layers, width 64, "
                          "4 heads, sequence 32%s" % (reps, ", written out node by node" if flat else ""),
           "variables": variables,
           "inputs": [GPT2_INPUT],
           "loss": GPT2_LOSS}
    if not flat:
        top["blocks"] = {"GPT2Block": {"inputs": ["hidden_states"], "layers": GPT2_BLOCK}}
    w = Writer(path, top)
    for n in GPT2_HEAD:
        w.node(n)
    if flat:
        prev = write_flat(w, GPT2_BLOCK, "h", "hidden_states", "drop", reps)
        tail = [dict(GPT2_TAIL[0], inputs=[prev]), GPT2_TAIL[1]]
    else:
        w.node({"name": "h", "type": "GPT2Block", "repeat": "n_layer", "inputs": ["drop"]})
        tail = [dict(GPT2_TAIL[0], inputs=["h"]), GPT2_TAIL[1]]
    for n in tail:
        w.node(n)
    w.close()


def label(n):
    for div, suffix in ((1000000, "M"), (1000, "k")):
        if n >= div and n % div == 0:
            return "%d%s" % (n // div, suffix)
    return str(n)


def generate(family, target, out):
    reps = repeats_for(family, target)
    path = os.path.join(out, "%s-%s.json" % (family, label(target)))
    if family.startswith("resmlp"):
        write_resmlp(path, reps, family.endswith("flat"))
    elif family == "widecat":
        write_widecat(path, reps)
    else:
        write_transformer(path, reps, family.endswith("flat"))
    return path, node_count(family, reps)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=".", help="output directory (created; default .)")
    ap.add_argument("--family", action="append", choices=FAMILIES,
                    help="a family (repeatable; default: all)")
    ap.add_argument("--nodes", default="1000,10000,100000,1000000",
                    help="target node counts, comma-separated (default 1000,10000,100000,1000000)")
    args = ap.parse_args(argv)
    try:
        sizes = [int(s) for s in args.nodes.split(",") if s]
    except ValueError:
        ap.error("--nodes: whole numbers separated by commas")
    if not sizes or min(sizes) < 1:
        ap.error("--nodes: at least one size, each >= 1")
    os.makedirs(args.out, exist_ok=True)
    families = args.family or FAMILIES
    manifest = os.path.join(args.out, "manifest.tsv")
    with open(manifest, "w") as mf:
        mf.write("family\ttarget\tnodes\tfile\n")
        for fam in families:
            for n in sizes:
                path, nodes = generate(fam, n, args.out)
                mf.write("%s\t%d\t%d\t%s\n" % (fam, n, nodes, path))
                print("%-20s %9d nodes  %s" % (fam, nodes, path))
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
