#!/usr/bin/env bash
# limits.sh - a benchmark, not a test: runs memest on inputs at each of its
# limits (models/README.md#limits, doc/robustness.md "Limits and cost") and on the
# worst inputs found beyond them, and prints for each the exit code, the
# wall-clock and CPU time and the peak resident memory.
#
#   tests/perf/limits.sh [path/to/memest]      (default: build/memest)
#
# Run from the repository root. Each run is capped at MEMEST_BENCH_AS bytes
# of address space (default 6 GiB, prlimit) so that a regression cannot take
# the machine down. The inputs at the cost limit are sized for
# MEMEST_MAX_COST = 5,000,000 (include/memest/cost.h): each is the largest of
# its shape that is accepted; recompute the sizes if the limits change (a
# case marked "REFUSED" is no longer at its limit).
set -u
MEMEST=${1:-build/memest}
AS=${MEMEST_BENCH_AS:-6442450944}
LIM=tests/limits
if [ ! -x "$MEMEST" ] || [ ! -d "$LIM" ]; then
    echo "usage: tests/perf/limits.sh [path/to/memest]   (from the repository root)" >&2
    exit 2
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
TIME=/usr/bin/time
[ -x "$TIME" ] || TIME=""
CAP=()
command -v prlimit > /dev/null && CAP=(prlimit --as="$AS" --)

X='{"name": "x", "shape": [4]}'
# A model of one input and one (repeated) layer: gen NAME INPUT LAYER.
gen() {
    printf '{"inputs": [%s], "layers": [%s]}\n' "$2" "$3" > "$TMP/$1.json"
}
refs() {   # "r:0", "r:1", ... "r:(n-1)"
    local i out=""
    for ((i = 0; i < $2; i++)); do out+="${out:+, }\"$1:$i\""; done
    printf '%s' "$out"
}
gen linear '{"name": "x", "shape": [1]}' '{"type": "linear", "out_features": 1, "repeat": 80644}'
gen lstm '{"name": "x", "shape": [1, 1]}' \
    '{"type": "lstm", "hidden_size": 1, "num_layers": 64, "bidirectional": true, "batch_first": true, "repeat": 311}'
gen attention '{"name": "x", "shape": [1, 4]}' \
    '{"type": "multiheadattention", "num_heads": 1, "batch_first": true, "repeat": 28408}'
xs=$(for i in $(seq 64); do printf '"x"%s' "$([ "$i" -lt 64 ] && echo ', ')"; done)
printf '{"inputs": [%s], "blocks": {"b": {"layers": [{"name": "c", "type": "cat", "dim": 1, "inputs": [%s]}, {"name": "s", "type": "linear", "out_features": 4}]}}, "layers": [{"type": "linear", "out_features": 4}, {"type": "b", "repeat": 34245}]}\n' \
    "$X" "$xs" > "$TMP/cat64.json"
printf '{"inputs": [{"name": "x", "shape": [255]}], "blocks": {"b": {"layers": [{"name": "c", "type": "chunk", "chunks": 255, "dim": 1}, {"name": "s", "type": "cat", "dim": 1, "inputs": [%s]}, {"name": "l", "type": "linear", "out_features": 255}]}}, "layers": [{"type": "linear", "out_features": 255}, {"type": "b", "repeat": 5458}]}\n' \
    "$(refs c 64)" > "$TMP/chunk255.json"
printf '{"inputs": [%s], "blocks": {"b": {"layers": [{"name": "l", "type": "linear", "out_features": 4}, {"name": "r", "type": "relu"}, {"name": "d", "type": "dropout", "p": 0.1}]}}, "layers": [{"type": "b", "repeat": 30863}]}\n' \
    "$X" > "$TMP/blocks.json"
# 249,999 nodes written out one by one (parsing and building at the node limit)
{
    printf '{"inputs": [%s], "layers": [' "$X"
    for ((i = 0; i < 249998; i++)); do printf '{"name": "n%d", "type": "identity"}, ' "$i"; done
    printf '{"name": "n249998", "type": "identity"}]}\n'
} > "$TMP/flat.json"
# 2,000,000 JSON values, the most a file may hold: 10 in the model, 1,999,990
# strings in a comment
{
    printf '{"inputs": [%s], "layers": [{"type": "relu"}], "comment": [' "$X"
    for ((i = 0; i < 199998; i++)); do printf '"a","b","c","d","e","f","g","h","i","j",'; done
    printf '"1","2","3","4","5","6","7","8","9","end"]}\n'
} > "$TMP/values.json"

printf '%-44s %9s %8s %8s %9s  %s\n' "case" "exit" "wall s" "cpu s" "RSS MiB" "note"
run() {   # run NAME EXPECTED_EXIT ARGS...
    local name=$1 want=$2
    shift 2
    local rc wall cpu rss note=""
    if [ -n "$TIME" ]; then
        "$TIME" -o "$TMP/time" -f '%e %U %S %M' "${CAP[@]}" "$MEMEST" "$@" \
            > "$TMP/out" 2> "$TMP/err"
        rc=$?
        read -r wall u s rss < <(tail -1 "$TMP/time")
        cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
        rss=$(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }')
    else
        local t0 t1
        t0=$(date +%s.%N)
        "${CAP[@]}" "$MEMEST" "$@" > "$TMP/out" 2> "$TMP/err"
        rc=$?
        t1=$(date +%s.%N)
        wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
        cpu="-"
        rss="-"
    fi
    [ "$rc" != "$want" ] && note="UNEXPECTED (wanted $want): $(head -c 160 "$TMP/err")"
    [ "$want" = 0 ] && [ "$rc" != 0 ] && note="REFUSED: $(head -c 160 "$TMP/err")"
    printf '%-44s %4s (%s) %8s %8s %9s  %s\n' "$name" "$rc" "$want" "$wall" "$cpu" "$rss" "$note"
}

echo "-- one estimate at each limit (accepted)"
run "nodes: 250,000 identities" 0 "$LIM/nodes_at.json"
run "nodes: 249,999 written out one by one" 0 "$TMP/flat.json"
run "JSON values: 2,000,000 in one file" 0 "$TMP/values.json"
run "expansion work: 500,000 steps" 0 "$LIM/work_at.json"
run "cost: 227,267 ReLUs" 0 "$LIM/cost_at.json"
run "cost: 80,644 linear layers" 0 "$TMP/linear.json"
run "cost: 311 bidirectional 64-layer LSTMs" 0 "$TMP/lstm.json"
run "cost: 28,408 attention layers" 0 "$TMP/attention.json"
run "cost: 34,245 cats of 64 inputs" 0 "$TMP/cat64.json"
run "cost: 5,458 chunks of 255 outputs" 0 "$TMP/chunk255.json"
run "cost: 30,863 blocks, accum+ckpt+amp+first" 0 "$TMP/blocks.json" --grad-accum 2 \
    --checkpoint --amp fp16 --first-step
run "cost: 227,267 ReLUs --layers --json" 0 "$LIM/cost_at.json" --layers --json
run "cost: 227,267 ReLUs --timeline --plot" 0 "$LIM/cost_at.json" --timeline "$TMP/t.csv" \
    --plot "$TMP/p.svg"
[ -f "$TMP/t.csv" ] && echo "   (--timeline: $(wc -c < "$TMP/t.csv") bytes, --plot: $(wc -c < "$TMP/p.svg") bytes)"
echo "-- one command at the work budget (accepted)"
run "--sweep: 1,809 batch sizes x 22,108 units" 0 "$LIM/chain_1000.json" --sweep 1:1809:+1
run "--sweep-var: 12 values up to n=120,000" 0 "$LIM/chain_n.json" --sweep-var n=10000:120000:+10000
run "--max-batch: mlp-mnist (65,628 estimates)" 0 models/mlp-mnist.json --gpu a100-80gb --max-batch
run "--max-batch: bert-base --inference (capped)" 0 models/bert-base.json --gpu h100 --inference \
    --max-batch
run "--advise: gpt2, batch 64, T4" 0 models/gpt2.json --gpu t4 --batch 64 --advise
echo "-- beyond the limits (refused)"
run "2M linear layers (issue 10)" 3 "$LIM/linear_2m.json"
run "20,000 bidirectional 64-layer LSTMs" 3 "$LIM/lstm_20000.json"
run "250,001 nodes" 3 "$LIM/nodes_over.json"
run "500,004 expansion steps" 3 "$LIM/work_over.json"
run "cost: 227,268 ReLUs (5,000,006 units)" 3 "$LIM/cost_over.json"
run "gpt2 --sweep-var n_layer=1:65536:+1" 2 models/gpt2.json --sweep-var n_layer=1:65536:+1
run "--sweep of 65,536 batches at the cost limit" 2 "$LIM/cost_at.json" --sweep 1:65536:+1
run "--max-batch at the cost limit" 2 "$LIM/cost_at.json" --mem 1TiB --max-batch
run "--advise at the cost limit" 2 "$LIM/cost_at.json" --mem 1KiB --batch 2 --advise
