#!/bin/sh
# smoke.sh - keeps the benchmark's inputs honest (ctest tools.bench_models;
# no time is measured): tests/bench/gen_models.py writes every family at 1k
# and 10k nodes, memest estimates each (exit 0, the node count the generator
# promised), and each graph written out node by node gives the figures of
# its `repeat` form that depend on the graph alone: the parameters, the
# saved activations and the FLOPs. (The peaks may differ: a block's inputs
# live until the block returns, as a module's forward() arguments do, and a
# flat file has no blocks.)
#
#   tests/bench/smoke.sh path/to/memest      (from the repository root)
set -eu
MEMEST=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
python3 tests/bench/gen_models.py --out "$TMP" --nodes 1000,10000 > /dev/null
figures() {   # the figures of one estimate, one per line
    "$MEMEST" "$1" --batch 3 --json > "$TMP/out.json"
    python3 - "$TMP/out.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
if len(d["layers"]) != int(sys.argv[2]):
    sys.exit("%s: %d nodes, the generator wrote %s" % (sys.argv[1], len(d["layers"]), sys.argv[2]))
m = d["memory"]
for k in ("parameters", "activations"):
    print(k, m[k])
print("step_flops", d["flops"]["step"])
PY
}
tail -n +2 "$TMP/manifest.tsv" | while IFS='	' read -r fam target nodes file; do
    figures "$file" "$nodes" > "$TMP/$fam-$target.fig"
    case $fam in
        *-flat)
            rep=${fam%-flat}-repeat
            if ! cmp -s "$TMP/$fam-$target.fig" "$TMP/$rep-$target.fig"; then
                echo "$fam at $target nodes differs from $rep:"
                diff "$TMP/$rep-$target.fig" "$TMP/$fam-$target.fig"
                exit 1
            fi
            ;;
    esac
    echo "$fam $target: $nodes nodes, $(tr '\n' ' ' < "$TMP/$fam-$target.fig")"
done
