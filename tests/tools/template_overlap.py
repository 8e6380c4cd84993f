#!/usr/bin/env python3
"""How much of each architecture template (models/arch/*.json) stands verbatim in another one.

    python3 tests/tools/template_overlap.py models/arch [--max PERCENT] [--allow NAME,...]

A template's content lines are its lines without their indentation, leaving out the lines of
punctuation only ("}", "],") and those that only open an object or list under a key ("keys": {).
For each template it prints the share of its content lines that are, letter for letter, a line of
some other single template (the worst other one). With --max it exits 1 when a template not named
in --allow is over PERCENT (the templates not yet built on models/arch/lib/), and when a template
named in --allow is under it (the allowance is stale: remove it).
"""
import os
import re
import sys

PUNCT = re.compile(r'[\[\]{},:\s]*')
OPENER = re.compile(r'"[^"]*":\s*[\[{]')


def content(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            s = line.strip()
            if s and not PUNCT.fullmatch(s) and not OPENER.fullmatch(s):
                out.append(s)
    return out


def main(argv):
    d = argv[1]
    limit = None
    allow = set()
    if "--max" in argv:
        limit = float(argv[argv.index("--max") + 1])
    if "--allow" in argv:
        allow = set(filter(None, argv[argv.index("--allow") + 1].split(",")))
    names = sorted(f[:-5] for f in os.listdir(d) if f.endswith(".json"))
    lines = {n: content(os.path.join(d, n + ".json")) for n in names}
    sets = {n: set(v) for n, v in lines.items()}
    bad = []
    for n in names:
        worst, other = 0.0, "-"
        for m in names:
            if m != n and lines[n]:
                share = 100.0 * sum(1 for s in lines[n] if s in sets[m]) / len(lines[n])
                if share > worst:
                    worst, other = share, m
        print(f"{n:12s} {len(lines[n]):4d} lines  {worst:5.1f}% in {other}")
        if limit is not None and n not in allow and worst > limit:
            bad.append(f"{n}: {worst:.1f}% of its lines stand in {other} (at most {limit:g}%)")
        if limit is not None and n in allow and worst <= limit:
            bad.append(f"{n}: {worst:.1f}%, within {limit:g}%: take it off the allowance")
    for b in bad:
        print("template_overlap: " + b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
