#!/usr/bin/env bash
# llm.sh - a benchmark, not a test: memest on every shipped Hugging Face
# config (models/hf/*.json) at its default sequence length (the template's seq_len: 2048, or the model's context when shorter), a training step with AdamW, and
# the best of 5 runs' wall-clock time, the CPU time and the peak resident
# memory of each; with valgrind installed, also the instructions executed
# (callgrind), a figure that does not depend on the machine's load.
#
#   tests/perf/llm.sh [path/to/memest]      (default: build/memest)
set -u
MEMEST=${1:-build/memest}
if [ ! -x "$MEMEST" ] || [ ! -d models/hf ]; then
    echo "usage: tests/perf/llm.sh [path/to/memest]   (from the repository root)" >&2
    exit 2
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
printf '%-28s %10s %8s %8s %10s %14s\n' config params wall_ms cpu_ms rss_kib instructions
for f in models/hf/*.json; do
    best=""
    for _ in 1 2 3 4 5; do
        s=$(date +%s%N)
        "$MEMEST" "$f" --optim adamw > /dev/null 2>&1
        e=$(date +%s%N)
        ms=$(((e - s) / 1000000))
        [ -z "$best" ] || [ "$ms" -lt "$best" ] && best=$ms
    done
    /usr/bin/time -f '%U %S %M' -o "$TMP/t" "$MEMEST" "$f" --optim adamw > "$TMP/out" 2>/dev/null
    read -r u s rss < "$TMP/t"
    cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%d", (u + s) * 1000 }')
    params=$(awk '/^Parameters/ { gsub(",", "", $2); print $2; exit }' "$TMP/out")
    ir=-
    if command -v valgrind > /dev/null; then
        valgrind --tool=callgrind --callgrind-out-file="$TMP/cg" "$MEMEST" "$f" \
            --optim adamw > /dev/null 2> "$TMP/vg"
        ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$TMP/vg")
    fi
    printf '%-28s %10.3g %8d %8d %10d %14s\n' "$(basename "$f" .json)" "$params" "$best" "$cpu" "$rss" "$ir"
done
