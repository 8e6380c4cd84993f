#!/usr/bin/env bash
# Runs one libFuzzer target for a while; fails when it finds anything.
#   tests/fuzz/run.sh FUZZ_BINARY [SECONDS=60] [JOBS=1] [WORK_DIR]
# FUZZ_BINARY is build-fuzz/tests/fuzz_<target>, the target one of
#   model  a model file (fuzz_model.c)
#   hf     a Hugging Face config.json (fuzz_hf.c)
#   ds     a DeepSpeed config (fuzz_ds.c)
#   fsdp   an accelerate FSDP YAML or the Trainer's fsdp_config JSON (fuzz_fsdp.c)
# (the name after "fuzz_"; FUZZ_TARGET=<target> in the environment says it
# for a binary named otherwise). The binaries come from a MEMEST_FUZZ=ON build:
#   CC=clang cmake -S . -B build-fuzz -DMEMEST_FUZZ=ON
#   cmake --build build-fuzz --target fuzz_model fuzz_hf fuzz_ds fuzz_fsdp
# The corpus grows in WORK_DIR/corpus (seeded from the target's shipped
# files, as tests/group_fuzz.cmake chooses them, and its regression folder;
# kept between runs), with the dictionary tests/fuzz/<target>.dict; findings
# land in WORK_DIR/findings (emptied first). Reproduce one with
#   FUZZ_BINARY WORK_DIR/findings/crash-...
# minimise it with FUZZ_BINARY -minimize_crash=1 -runs=10000 FILE, and copy
# it into the target's regression folder (tests/fuzz/regressions/ for model,
# tests/fuzz/regressions-<target>/ for the others; a descriptive name): the
# ctest fuzz.<target> replays every file there.
set -euo pipefail
bin=$(realpath "$1")
secs=${2:-60}
jobs=${3:-1}
work=${4:-$(mktemp -d /tmp/memest-fuzz.XXXXXX)}
src=$(cd "$(dirname "$0")/../.." && pwd)
target=${FUZZ_TARGET:-$(basename "$bin")}
target=${target#fuzz_}
case "$target" in
    model) regress="$src/tests/fuzz/regressions" ;;
    hf|ds|fsdp) regress="$src/tests/fuzz/regressions-$target" ;;
    *) echo "fuzz: unknown target '$target' (model, hf, ds or fsdp; FUZZ_TARGET=...)" >&2; exit 2 ;;
esac
mkdir -p "$work"
work=$(realpath "$work")   # the fuzzer runs inside it: paths must be absolute
rm -rf "$work/findings" "$work"/fuzz-*.log
mkdir -p "$work/corpus" "$work/findings"

# the seeds, as tests/group_fuzz.cmake chooses them
configs() {   # the files of tests/dist/ and tests/errors/ with one of the words
    local f w
    for f in "$src"/tests/dist/*.json "$src"/tests/dist/*.yaml "$src"/tests/dist/*.yml \
             "$src"/tests/errors/*.json "$src"/tests/errors/*.yaml "$src"/tests/errors/*.yml; do
        [ -f "$f" ] || continue
        for w in "$@"; do
            if grep -qF -- "$w" "$f"; then echo "$f"; break; fi
        done
    done
}
seed() {   # copies each file into the corpus, named after its path (no clash)
    local f
    for f in "$@"; do
        [ -f "$f" ] || continue
        local rel=${f#"$src"/}
        cp -n "$f" "$work/corpus/seed-${rel//\//_}" 2>/dev/null || true
    done
}
shopt -s nullglob globstar
case "$target" in
    model) seed "$src"/models/*.json "$src"/tests/errors/*.json "$src"/tests/metamorphic/*.json ;;
    hf)    seed "$src"/models/hf/*.json "$src"/tests/hf/**/*.json ;;
    ds)    seed $(configs zero_optimization) "$src"/tests/errors/ds_* ;;
    fsdp)  seed $(configs distributed_type fsdp_ transformer_layer_cls_to_wrap) \
               "$src"/tests/errors/fsdp_* ;;
esac
seed "$regress"/*
# -max_len admits every seed (the largest shipped model included), and at
# least 64 KiB
max_len=65536
for f in "$work"/corpus/*; do
    n=$(stat -c %s "$f")
    [ "$n" -gt "$max_len" ] && max_len=$n
done
# the model target reports on stderr as it goes; the readers' targets print
# the tool's notes there for many inputs, which -close_fd_mask=2 discards
# (the sanitizers' reports and the targets' broken invariants still come)
quiet="" rss=1024
[ "$target" != model ] && quiet="-close_fd_mask=2"
[ "$target" = model ] && rss=2048   # as before the reader targets came
echo "fuzz: $target ($bin) for ${secs}s x $jobs job(s), inputs up to $max_len bytes;" \
     "corpus and findings in $work"
# -timeout: seconds per input (the target is meant to take well under 1 s);
# -rss_limit_mb / -malloc_limit_mb: memory per process; -max_len: bytes.
# A finding makes libFuzzer exit non-zero; with -jobs, the findings dir tells.
set +e
(cd "$work" && "$bin" -dict="$src/tests/fuzz/$target.dict" -max_total_time="$secs" \
    -timeout=2 -rss_limit_mb=$rss -malloc_limit_mb=$rss -max_len="$max_len" \
    -print_final_stats=1 -artifact_prefix="$work/findings/" $quiet \
    $( [ "$jobs" -gt 1 ] && echo "-jobs=$jobs -workers=$jobs" ) \
    corpus) > "$work/fuzz.log" 2>&1
rc=$?
set -e
cat "$work"/fuzz-*.log 2>/dev/null >> "$work/fuzz.log" || true
grep -E "cov: [0-9]+ ft" "$work/fuzz.log" | tail -n 1 || true
grep -E "stat::number_of_executed_units|stat::peak_rss_mb|Done [0-9]+ runs" "$work/fuzz.log" || true
findings=$(find "$work/findings" -type f | wc -l)
if [ "$rc" -ne 0 ] || [ "$findings" -ne 0 ]; then
    echo "fuzz: FAILED (exit $rc, $findings finding(s) in $work/findings); log: $work/fuzz.log"
    grep -E "^==[0-9]+==ERROR|runtime error|invariant broken|ALARM|out-of-memory" "$work/fuzz.log" | head -20 || true
    exit 1
fi
echo "fuzz: no finding"
