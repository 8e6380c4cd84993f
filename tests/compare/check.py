#!/usr/bin/env python3
"""The card comparison (--gpu all, or a list) against memest's single-card
flows, which the fit tests and the PyTorch references check: every row's
figures must equal `--gpu NAME --batch B` (the fit) and `--gpu NAME
--max-batch` (the largest batch and its time) run alone; the order, the
price and per-node figures follow from the rows by the rules doc/cards-and-fit.md
("Choosing a card") states, written out here. Also the progress line:
on a terminal's standard error only (through script(1)), never otherwise.

    check.py MEMEST MODELS_DIR CHECK    (CHECK: rows, price, nodes, formats, all, progress)
"""
import json
import os
import shutil
import subprocess
import sys

MEMEST, MODELS, CHECK = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []


def run(*args, rc=0):
    p = subprocess.run([MEMEST, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=600)
    if p.returncode != rc:
        sys.exit("memest %s: exit %d, expected %d\n%s" % (" ".join(args), p.returncode, rc,
                                                         p.stderr.decode()))
    return p


def doc(*args, rc=0):
    return json.loads(run(*args, "--json", rc=rc).stdout)


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def close(a, b, rel=1e-12):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def check_order(cards, by_price):
    """Fitting cards first, fastest (or most samples per unit of price, the
    priced ones first) first; then the others by their largest batch."""
    fit = [c for c in cards if c["at_batch"]["fits"]]
    rest = [c for c in cards if not c["at_batch"]["fits"]]
    expect(cards == fit + rest, "the fitting cards come first")

    def sps(c):
        return c["at_max_batch"]["time"]["samples_per_second"] if c["at_max_batch"] else 0

    def key(c):
        ppu = c["at_max_batch"]["samples_per_price_unit"] if c["at_max_batch"] else None
        if by_price:
            return (ppu is not None, ppu or 0, sps(c))
        return (sps(c),)

    for a, b in zip(fit, fit[1:]):
        expect(key(a) >= key(b), "order: %s before %s" % (a["name"], b["name"]))
    for a, b in zip(rest, rest[1:]):
        expect(a["max_batch"] >= b["max_batch"], "order: %s before %s" % (a["name"], b["name"]))


def rows_match_single(model, batch, names, extra=()):
    fitting = None
    d = None
    # the exit code: 0 when some card fits
    for rc in (0, 1):
        p = subprocess.run([MEMEST, model, "--gpu", ",".join(names), "--batch", str(batch),
                            *extra, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode == rc:
            d = json.loads(p.stdout)
            fitting = d["fitting"]
            expect((fitting > 0) == (rc == 0), "exit %d with %d cards fitting" % (rc, fitting))
            break
    if d is None:
        sys.exit("the comparison failed: %s" % p.stderr.decode())
    expect([c["name"] for c in d["cards"]] != [] and sorted(c["name"] for c in d["cards"]) ==
           sorted(names), "one row per card named")
    expect(fitting == sum(c["at_batch"]["fits"] for c in d["cards"]), "fitting counts the rows")
    # --gpus-per-node counts the comparison's nodes: one card alone has none
    # to count (memest refuses it there, as changing nothing)
    alone = list(extra)
    if "--gpus-per-node" in alone:
        k = alone.index("--gpus-per-node")
        del alone[k:k + 2]
    for c in d["cards"]:
        name = c["name"]
        one = doc(model, "--gpu", name, "--batch", str(batch), *alone)
        expect(c["at_batch"]["total_device"] == one["fit"]["needs"],
               "%s: the device total at batch %d equals --gpu %s alone" % (name, batch, name))
        expect(c["at_batch"]["fits"] == one["fit"]["fits"], "%s: the verdict" % name)
        expect(c["memory"] == one["card"]["memory"], "%s: the card's memory" % name)
        free = one["card"]["memory"] - one["fit"]["needs"]
        expect(c["at_batch"]["headroom"] == (free if free >= 0 else None), "%s: headroom" % name)
        mb_rc = 0 if c["max_batch"] > 0 else 1
        mb = doc(model, "--gpu", name, "--max-batch", *alone, rc=mb_rc)
        expect(c["max_batch"] == mb["max_batch"],
               "%s: largest batch %d, --max-batch alone %d" % (name, c["max_batch"], mb["max_batch"]))
        if c["max_batch"] > 0:
            t, t1 = c["at_max_batch"]["time"], mb["time"]
            expect(c["at_max_batch"]["total_device"] == mb["fit"]["needs"], "%s: device total at the largest batch" % name)
            expect(t["samples_per_second"] == t1["samples_per_second"] and t["step_seconds"] == t1["step_seconds"],
                   "%s: the time at the largest batch equals --max-batch's" % name)
        else:
            expect(c["at_max_batch"] is None, "%s: no figures at a largest batch" % name)
    return d


if CHECK == "rows":
    # resnet50 at batch 256 fits the large cards and not the 16-24 GB ones
    r50 = os.path.join(MODELS, "resnet50.json")
    d = rows_match_single(r50, 256, ["t4", "a10", "h100-80gb", "mi300x", "v100-32gb"])
    expect(0 < d["fitting"] < 5, "some fit and some do not (%d)" % d["fitting"])
    check_order(d["cards"], False)
    expect(d["sort"] == "samples_per_second", "sort")
    # nothing fits: exit 1
    mlp = os.path.join(MODELS, "mlp-mnist.json")
    d = rows_match_single(mlp, 2**40, ["t4", "l4"])
    expect(d["fitting"] == 0, "batch 2^40 fits no card")
    # the inference pass, and a mixed-precision step (bf16 peak; t4's fallback)
    bert = os.path.join(MODELS, "bert-base.json")
    d = rows_match_single(bert, 64, ["t4", "a100-40gb"], ("--amp", "bf16"))
    for c in d["cards"]:
        if c["at_max_batch"]:
            want = ("fp32", True) if c["name"] == "t4" else ("bf16", False)
            expect((c["at_max_batch"]["precision"], c["at_max_batch"]["peak_fallback"]) == want,
                   "%s: precision %s" % (c["name"], want))
    rows_match_single(bert, 64, ["l4", "h100-80gb"], ("--inference",))

elif CHECK == "price":
    r18 = os.path.join(MODELS, "resnet18.json")
    prices = {"h100-80gb": 2.5, "t4": 0.35, "a100-80gb": 1.8}
    arg = ",".join("%s=%g" % kv for kv in prices.items())
    d = doc(r18, "--gpu", "t4,l4,a100-80gb,h100-80gb", "--batch", "64", "--price", arg)
    expect(d["sort"] == "samples_per_price_unit", "sorted by price with --price")
    for c in d["cards"]:
        p = prices.get(c["name"])
        expect(c["price_per_hour"] == p, "%s: its price" % c["name"])
        ppu = c["at_max_batch"]["samples_per_price_unit"]
        if p is None:
            expect(ppu is None, "%s: no price, no samples per unit" % c["name"])
        else:
            # samples per unit of price = samples/s x 3600 s / (price per hour x 1 GPU)
            sps = c["at_max_batch"]["time"]["samples_per_second"]
            expect(close(ppu, sps * 3600 / p), "%s: %r samples per unit" % (c["name"], ppu))
    check_order(d["cards"], True)
    expect(d["cards"][-1]["name"] == "l4", "the unpriced card last among those that fit")
    # repeated --price is the same as one list
    d2 = doc(r18, "--gpu", "t4,l4,a100-80gb,h100-80gb", "--batch", "64",
             *sum((["--price", "%s=%g" % kv] for kv in prices.items()), []))
    expect(d2 == d, "--price repeated equals --price with a list")

elif CHECK == "nodes":
    # 16 GPUs, 8 per node: two nodes; samples/s is the whole job's (16 GPUs), per node half
    gpt2 = os.path.join(MODELS, "gpt2.json")
    extra = ("--gpus", "16", "--gpus-per-node", "8", "--strategy", "zero2", "--amp", "bf16")
    d = rows_match_single(gpt2, 8, ["a100-40gb", "h100-80gb"], extra)
    expect(d["gpus"] == 16 and d["gpus_per_node"] == 8 and d["nodes"] == 2, "the layout")
    d = doc(gpt2, "--gpu", "a100-40gb,h100-80gb", "--batch", "8", *extra, "--price", "h100-80gb=2.5")
    for c in d["cards"]:
        m = c["at_max_batch"]
        sps = m["time"]["samples_per_second"]
        expect(close(m["samples_per_second_per_node"], sps / 2), "%s: per node" % c["name"])
        if c["name"] == "h100-80gb":   # the job's price: 16 GPUs at 2.5 per hour each
            expect(close(m["samples_per_price_unit"], sps * 3600 / (2.5 * 16)), "price of 16 GPUs")
    one = doc(gpt2, "--gpu", "a100-40gb", "--batch", "8")
    expect(one.get("card") is not None, "one GPU")
    d1 = doc(gpt2, "--gpu", "a100-40gb,t4", "--batch", "8")
    expect(d1["nodes"] == 1 and all(c["at_max_batch"] is None or
                                    c["at_max_batch"]["samples_per_second_per_node"] is None
                                    for c in d1["cards"]), "one GPU: no per-node figure")

elif CHECK == "formats":
    # the CSV and text tables hold the JSON document's rows, in its order
    r18 = os.path.join(MODELS, "resnet18.json")
    args = (r18, "--gpu", "t4,l4,h100-80gb", "--batch", "512", "--price", "t4=0.35")
    d = doc(*args, rc=0)
    csv = run(*args, "--csv").stdout.decode().splitlines()
    head = csv[0].split(",")
    expect(head[0] == "card" and "samples_per_price_unit" in head, "the CSV header")
    rows = [dict(zip(head, l.split(","))) for l in csv[1:]]
    expect([r["card"] for r in rows] == [c["name"] for c in d["cards"]], "CSV order")
    for r, c in zip(rows, d["cards"]):
        expect(int(r["max_batch"]) == c["max_batch"], "CSV max_batch of %s" % c["name"])
        expect(r["fits"] == ("true" if c["at_batch"]["fits"] else "false"), "CSV fits of %s" % c["name"])
        expect(int(r["total_device_bytes"]) == c["at_batch"]["total_device"], "CSV bytes of %s" % c["name"])
    text = run(*args).stdout.decode().splitlines()
    table = [l.split()[0] for l in text if l.split() and l.split()[0] in {c["name"] for c in d["cards"]}]
    expect(table == [c["name"] for c in d["cards"]], "text order %s" % table)
    fastest = max((c for c in d["cards"] if c["at_batch"]["fits"]),
                  key=lambda c: c["at_max_batch"]["time"]["samples_per_second"])
    expect(any(l.startswith("fastest that fits batch 512: %s," % fastest["name"]) for l in text),
           "the text names the fastest card")

elif CHECK == "all":
    # --gpu all: one row per preset of --list-gpus, each once
    listing = run("--list-gpus").stdout.decode().splitlines()
    names = [l.split("`")[1] for l in listing if l.startswith("| `")]
    mlp = os.path.join(MODELS, "mlp-mnist.json")
    d = doc(mlp, "--gpu", "all", "--batch", "32")
    expect(sorted(c["name"] for c in d["cards"]) == sorted(names), "every preset once")
    check_order(d["cards"], False)
    # an alias and its preset are one card
    p = run(mlp, "--gpu", "h100,h100-80gb", rc=2)
    expect(b"listed twice" in p.stderr, "an alias of a listed card")

elif CHECK == "progress":
    script = shutil.which("script")
    if not script:
        sys.exit("script(1) (util-linux) is needed for this test")
    mlp = os.path.join(MODELS, "mlp-mnist.json")
    r18 = os.path.join(MODELS, "resnet18.json")
    cases = [("--sweep", [mlp, "--sweep", "1:64:+1"]),
             ("--max-batch", [r18, "--gpu", "t4", "--max-batch"]),
             ("--advise", [mlp, "--gpu", "t4", "--batch", "64", "--advise"]),
             ("--gpu all", [mlp, "--gpu", "t4,l4", "--batch", "8"])]
    for what, args in cases:
        # not a terminal: nothing on stderr
        p = run(*args)
        expect(p.stderr == b"", "%s: stderr not a terminal stays empty: %r" % (what, p.stderr[:80]))
        # a terminal (script's pseudo-terminal) for stdout and stderr
        cmd = " ".join("'%s'" % a for a in [MEMEST, *args])
        t = subprocess.run([script, "-qec", cmd + " >/dev/null", "/dev/null"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        out = t.stdout.decode(errors="replace")
        expect(t.returncode == 0, "%s under script: exit %d" % (what, t.returncode))
        expect(("\rmemest: %s: " % what) in out, "%s: a progress line on a terminal: %r" % (what, out[:200]))
        # the line is erased at the end: the last thing written is a carriage return
        expect(out.endswith("\r"), "%s: the line erased: %r" % (what, out[-40:]))
        # stdout a terminal, stderr not: no progress
        t = subprocess.run([script, "-qec", cmd + " 2>/dev/null", "/dev/null"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        expect("memest: %s:" % what not in t.stdout.decode(errors="replace"),
               "%s: no progress when only stdout is a terminal" % what)
else:
    sys.exit("unknown check " + CHECK)

if failures:
    sys.exit("%d failure(s)" % len(failures))
print("ok")
