#!/usr/bin/env python3
"""The option table, --help, the man page, the completions and the documents agree (as curl's test 1139).

    python3 tests/tools/check_options.py MEMEST_BINARY SOURCE_DIR

The rows come from `memest --dump-options` (src/app/cli_options.c). Checked, each failure one line:
  - `memest --help all` has an entry for every row, and none for an option that is not one;
  - `memest help SUBCOMMAND` lists exactly the rows whose modes take that subcommand, and every
    subcommand is in --help, the man page, both completions and doc/options.md;
  - doc/memest.1 has a .TP entry for every row and no other, doc/memest.bash and doc/_memest offer every
    option and every value of its value table, doc/options.md has one table row per option;
  - every option written in a `memest ...` command line of README.md and doc/*.md is a row (a renamed or
    removed option leaves no stale example behind).
Exit 1 when anything disagrees, 2 when memest cannot be run. Stdlib only.
"""
import glob
import json
import os
import re
import subprocess
import sys

FLAG_RE = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)")


def run(binary, *args):
    p = subprocess.run([binary] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=60, env=dict(os.environ, LC_ALL="C"))
    if p.returncode != 0:
        raise RuntimeError("%s %s exited %d: %s" % (binary, " ".join(args), p.returncode, p.stderr))
    return p.stdout


def help_entries(text):
    """The long options that start an entry of a --help screen (an indented line starting with '-')."""
    names = []
    for line in text.split("\n"):
        s = line.lstrip(" ")
        if line.startswith("  ") and s.startswith("-") and len(line) - len(s) < 25:
            m = re.search(r"--([a-z][a-z0-9-]*)", s.split("  ")[0])
            if m:
                names.append(m.group(1))
    return names


def self_test(binary, src):
    """The check fails on documents that disagree: a copy with one option's table row, one completion
    value and one example's option changed must give exactly those failures."""
    import shutil
    import tempfile
    tmp = tempfile.mkdtemp(prefix="memest-check-options.")
    try:
        shutil.copytree(os.path.join(src, "doc"), os.path.join(tmp, "doc"))
        shutil.copy(os.path.join(src, "README.md"), tmp)

        def edit(rel, old, new):
            path = os.path.join(tmp, rel)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            if old not in text:
                raise RuntimeError("self-test: %s has no %r" % (rel, old))
            with open(path, "w", encoding="utf-8") as f:
                f.write(text.replace(old, new, 1))
        edit("doc/options.md", "| `--headroom", "| `--head-room")
        edit("doc/memest.bash", " paged_adamw32bit", " paged_adamw33bit")
        edit("README.md", "memest models/resnet50.json", "memest models/resnet50.json --no-such-option")
        out = subprocess.run([sys.executable, os.path.abspath(__file__), binary, tmp], stdout=subprocess.PIPE,
                             universal_newlines=True).stdout
        want = ["doc/options.md lacks --headroom", "doc/options.md has --head-room",
                "doc/memest.bash does not complete --optim's value paged_adamw32bit",
                "uses --no-such-option, which is not an option"]
        missing = [w for w in want if w not in out]
        for w in missing:
            print("self-test: the check did not report: %s" % w)
        return 1 if missing else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv):
    if argv[:1] == ["--self-test"] and len(argv) == 3:
        return self_test(argv[1], argv[2])
    if len(argv) != 2:
        sys.stderr.write("usage: check_options.py MEMEST_BINARY SOURCE_DIR\n")
        return 2
    binary, src = argv
    fails = []
    try:
        d = json.loads(run(binary, "--dump-options"))
        rows = {o["name"]: o for o in d["options"]}
        modes = [m["name"] for m in d["modes"]]
        all_help = run(binary, "--help", "all")
        overview = run(binary, "--help")
        per_mode = {m: run(binary, "help", m) for m in modes}
    except (RuntimeError, ValueError, OSError, subprocess.SubprocessError) as e:
        sys.stderr.write("check_options.py: %s\n" % e)
        return 2

    def read(rel):
        try:
            with open(os.path.join(src, rel), encoding="utf-8") as f:
                return f.read()
        except OSError as e:
            fails.append("%s: %s" % (rel, e.strerror))
            return ""

    def same(where, got, want):
        for n in sorted(set(want) - set(got)):
            fails.append("%s lacks --%s" % (where, n))
        for n in sorted(set(got) - set(want)):
            fails.append("%s has --%s, which is not an option row" % (where, n))

    got = help_entries(all_help)
    same("memest --help all", got, rows)
    dup = sorted({n for n in got if got.count(n) > 1})
    fails += ["memest --help all lists --%s twice" % n for n in dup]
    for m in modes:
        same("memest help %s" % m, help_entries(per_mode[m]), [n for n, o in rows.items() if m in o["modes"]])

    man, bash, zsh, md = (read("doc/memest.1"), read("doc/memest.bash"), read("doc/_memest"),
                          read("doc/options.md"))
    man_tp = re.findall(r"^\.TP\n(\\fB\\-.*)$", man, re.M)
    same("doc/memest.1", [re.search(r"\\-\\-([a-z0-9]+(?:\\-[a-z0-9]+)*)", t).group(1).replace("\\-", "-")
                          for t in man_tp], rows)
    md_rows = re.findall(r"^\| `(?:-\w, )?--([a-z][a-z0-9-]*)", md, re.M)
    same("doc/options.md", md_rows, rows)
    words = re.search(r"-\*\) _memest_words '([^']*)'", bash)
    same("doc/memest.bash", FLAG_RE.findall(words.group(1)) if words else [], rows)
    specs = [l.split("[", 1)[0] for l in zsh.split("\n") if re.match(r"^  ['{]", l)]
    same("doc/_memest", set(n for l in specs for n in FLAG_RE.findall(l)), rows)
    for where, text in (("doc/memest.bash", bash), ("doc/_memest", zsh)):
        for n, o in rows.items():
            for v in o["values"]:
                if not re.search(r"(?<![\w.+-])%s(?![\w.+-])" % re.escape(v), text):
                    fails.append("%s does not complete --%s's value %s" % (where, n, v))
    for m in modes:
        for where, text in (("memest --help", overview), ("doc/memest.1", man.replace("\\-", "-")), ("doc/memest.bash", bash),
                            ("doc/_memest", zsh), ("doc/options.md", md)):
            if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(m), text):
                fails.append("%s does not name the subcommand %s" % (where, m))

    docs = ["README.md"] + sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "doc", "*.md")))
    for rel in docs:
        for i, line in enumerate(read(rel).split("\n"), 1):
            for cmd in re.findall(r"(?:^|[\s`/(])(memest [^`]*)", line):
                for n in FLAG_RE.findall(cmd.split(" # ")[0]):
                    if n not in rows:
                        fails.append("%s:%d: a memest command line uses --%s, which is not an option" %
                                     (rel, i, n))
    for f in fails:
        print(f)
    print("check_options.py: %d options, %d subcommands, %d disagreements" % (len(rows), len(modes), len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
