#!/usr/bin/env bash
# Runs the libFuzzer target for a while; fails when it finds anything.
#   tests/fuzz/run.sh FUZZ_MODEL_BINARY [SECONDS=60] [JOBS=1] [WORK_DIR]
# The binary comes from a MEMEST_FUZZ=ON build:
#   CC=clang cmake -S . -B build-fuzz -DMEMEST_FUZZ=ON && cmake --build build-fuzz --target fuzz_model
# The corpus grows in WORK_DIR/corpus (seeded from models/, tests/errors/ and
# tests/fuzz/regressions/; kept between runs), findings land in
# WORK_DIR/findings (emptied first). Reproduce one with
#   FUZZ_MODEL_BINARY WORK_DIR/findings/crash-...
# and copy it into tests/fuzz/regressions/ (a descriptive name) once fixed:
# the ctest fuzz.model replays every file there.
set -euo pipefail
bin=$(realpath "$1")
secs=${2:-60}
jobs=${3:-1}
work=${4:-$(mktemp -d /tmp/memest-fuzz.XXXXXX)}
src=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"
work=$(realpath "$work")   # the fuzzer runs inside it: paths must be absolute
rm -rf "$work/findings" "$work"/fuzz-*.log
mkdir -p "$work/corpus" "$work/findings"
cp -n "$src"/models/*.json "$src"/tests/errors/*.json "$src"/tests/metamorphic/*.json \
    "$work/corpus/" 2>/dev/null || true
cp -n "$src"/tests/fuzz/regressions/* "$work/corpus/" 2>/dev/null || true
# -max_len admits every seed (the largest shipped model included), and at
# least 64 KiB
max_len=65536
for f in "$work"/corpus/*; do
    n=$(stat -c %s "$f")
    [ "$n" -gt "$max_len" ] && max_len=$n
done
echo "fuzz: $bin for ${secs}s x $jobs job(s), inputs up to $max_len bytes; corpus and findings in $work"
# -timeout: seconds per input (the target is meant to take well under 1 s);
# -rss_limit_mb / -malloc_limit_mb: memory per process; -max_len: bytes.
# A finding makes libFuzzer exit non-zero; with -jobs, the findings dir tells.
set +e
(cd "$work" && "$bin" -dict="$src/tests/fuzz/model.dict" -max_total_time="$secs" \
    -timeout=2 -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len="$max_len" \
    -print_final_stats=1 -artifact_prefix="$work/findings/" \
    $( [ "$jobs" -gt 1 ] && echo "-jobs=$jobs -workers=$jobs" ) \
    corpus) > "$work/fuzz.log" 2>&1
rc=$?
set -e
cat "$work"/fuzz-*.log 2>/dev/null >> "$work/fuzz.log" || true
grep -E "stat::number_of_executed_units|stat::peak_rss_mb|Done [0-9]+ runs" "$work/fuzz.log" || true
findings=$(find "$work/findings" -type f | wc -l)
if [ "$rc" -ne 0 ] || [ "$findings" -ne 0 ]; then
    echo "fuzz: FAILED (exit $rc, $findings finding(s) in $work/findings); log: $work/fuzz.log"
    grep -E "^==[0-9]+==ERROR|runtime error|invariant broken|ALARM|out-of-memory" "$work/fuzz.log" | head -20 || true
    exit 1
fi
echo "fuzz: no finding"
