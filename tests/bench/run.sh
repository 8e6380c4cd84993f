#!/usr/bin/env bash
# run.sh - a benchmark, not a test (issue 17): memest's wall-clock time and
# peak resident memory, whole process, on the shipped models, on synthetic
# graphs of 1k to 1M nodes (tests/bench/gen_models.py) and on the commands
# that run many estimates (--sweep, --sweep-var, --max-batch, --advise),
# each of those against one estimate of the same model; then the machine.
#
#   tests/bench/run.sh [--quick] [path/to/memest]      (default: build/memest)
#
# Run from the repository root.  --quick leaves out the 1M-node models and
# times 3 runs instead of 5 (and 1 when over a second).  Each case is timed by tests/bench/bench_spawn.c
# (compiled here): one run, then, when it took under a second, 5 more (3 more
# when under 10 s), of which the median and the fastest are printed.  Every run is capped at
# MEMEST_BENCH_AS bytes of address space (default 6 GiB) and
# MEMEST_BENCH_TIMEOUT seconds (default 120), as tests/perf/limits.sh caps
# them; a refused or killed case prints its exit code (124: timed out) and,
# under the table, its message.  The columns are described in
# tests/bench/README.md.  Takes about 2.5 minutes on a 2-core machine.
set -u
QUICK=0
MEMEST=build/memest
for arg in "$@"; do
    case $arg in
        --quick) QUICK=1 ;;
        -h | --help)
            sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        -*)
            echo "run.sh: unknown option $arg" >&2
            exit 2
            ;;
        *) MEMEST=$arg ;;
    esac
done
if [ ! -x "$MEMEST" ] || [ ! -f tests/bench/bench_spawn.c ] || [ ! -d models/hf ]; then
    echo "usage: tests/bench/run.sh [--quick] [path/to/memest]   (from the repository root)" >&2
    exit 2
fi
case $MEMEST in */*) ;; *) MEMEST=./$MEMEST ;; esac
LOAD_START=$(cut -d ' ' -f 1-3 /proc/loadavg)
AS=${MEMEST_BENCH_AS:-6442450944}
LIMIT=${MEMEST_BENCH_TIMEOUT:-120}
REPS=5
SLOW_REPS=3
SIZES=1000,10000,100000,1000000
if [ "$QUICK" = 1 ]; then
    REPS=3
    SLOW_REPS=0
    SIZES=1000,10000,100000
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# one binary for the whole run, even if build/memest is rebuilt meanwhile
# (the models, GPU presets and architecture templates are compiled in)
cp "$MEMEST" "$TMP/memest" || exit 2
MEMEST_SHOWN=$MEMEST
MEMEST=$TMP/memest
BS=$TMP/bench_spawn
cc -O2 -Wall -Wextra -o "$BS" tests/bench/bench_spawn.c || exit 2
GEN=$TMP/models
python3 tests/bench/gen_models.py --out "$GEN" --nodes "$SIZES" > /dev/null || exit 2

declare -A GEN_NODES NODE_CACHE MED MIN RSS RC
# family target nodes file
while IFS=$'\t' read -r _ _ n f; do
    GEN_NODES[$f]=$n
done < <(tail -n +2 "$GEN/manifest.tsv")

# The nodes after expansion of a model file: the entries of "layers" in
# memest's --json (model inputs included), else the generator's count
# (marked *), else "-".  Sets NODES.
nodes_of() {
    local f=$1 n
    if [ -z "${NODE_CACHE[$f]+x}" ]; then
        n=$(timeout "$LIMIT" prlimit --as="$AS" -- "$MEMEST" "$f" --json 2> /dev/null |
            python3 -c 'import json, sys; print(len(json.load(sys.stdin)["layers"]))' 2> /dev/null)
        if [ -z "$n" ]; then
            n=-
            [ -n "${GEN_NODES[$f]+x}" ] && n="${GEN_NODES[$f]}*"
        fi
        NODE_CACHE[$f]=$n
    fi
    NODES=${NODE_CACHE[$f]}
}

fmt='%-52s %9s %4s %4s %10s %10s %8s %8s %12s\n'
NOTES=()
# bench ID LABEL NODES BASE -- COMMAND...: time COMMAND and print its row.
# NODES: a model file (its node count, and a µs/node figure when there is no
# BASE) or "-"; BASE: the ID of the one-estimate case to compare with, or "-".
bench() {
    local id=$1 label=$2 nfile=$3 base=$4 med min rss rc runs=1 med2 min2 rss2 rc2
    shift 5
    read -r med min rss rc < <("$BS" -a "$AS" -t "$LIMIT" 1 "$@")
    # the first run warms the caches; under 1 s, REPS more; under 10 s, SLOW_REPS more
    local more=0
    if [ "$rc" != 124 ]; then
        more=$(awk -v m="$med" -v r="$REPS" -v s="$SLOW_REPS" 'BEGIN { print m < 1000 ? r : m < 10000 ? s : 0 }')
    fi
    if [ "$more" -gt 0 ]; then
        read -r med2 min2 rss2 rc2 < <("$BS" -a "$AS" -t "$LIMIT" "$more" "$@")
        med=$med2 min=$min2 rc=$rc2 runs=$more
        [ "$rss2" -gt "$rss" ] && rss=$rss2
    fi
    MED[$id]=$med MIN[$id]=$min RSS[$id]=$rss RC[$id]=$rc
    NODES=-
    [ "$nfile" != - ] && nodes_of "$nfile"
    local us=- ratio=-
    if [ "$base" = - ]; then
        [ "${NODES%\*}" != - ] && [ "$rc" = 0 ] &&
            us=$(awk -v m="$med" -v n="${NODES%\*}" 'BEGIN { printf "%.2f", m * 1000 / n }')
    elif [ -n "${MED[$base]+x}" ]; then
        ratio="$(awk -v m="$med" -v b="${MED[$base]}" 'BEGIN { printf "%.1fx", m / b }') $base"
    fi
    # shellcheck disable=SC2059
    printf "$fmt" "$label" "$NODES" "$rc" "$runs" "$med" "$min" \
        "$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }')" "$us" "$ratio"
    if [ "$rc" != 0 ]; then
        local msg
        if [ "$rc" = 124 ]; then
            msg="killed after ${LIMIT} s"
        else
            msg=$(timeout "$LIMIT" prlimit --as="$AS" -- "$@" 2>&1 > /dev/null | head -n 1)
        fi
        NOTES+=("$label: exit $rc: ${msg:-(no message)}")
        LAST_MSG=$msg
    fi
}

section() { printf '%s\n' "-- $1"; }

echo "memest benchmark (tests/bench/run.sh): $MEMEST_SHOWN; per case a first run, then $REPS more (under 1 s)," \
    "$SLOW_REPS more (under 10 s) or none"
# shellcheck disable=SC2059
printf "$fmt" case nodes exit runs "median ms" "min ms" "RSS MiB" "us/node" "x base"

section "process floor"
bench true "/bin/true" - - -- /bin/true
bench version "memest --version" - - -- "$MEMEST" --version

section "shipped models (models/*.json --batch 1; models/hf/*.json --optim adamw)"
for f in models/*.json; do
    [ "$f" = models/gpus.json ] && continue
    n=$(basename "$f" .json)
    bench "$n" "$n" "$f" - -- "$MEMEST" "$f" --batch 1
done
for f in models/hf/*.json; do
    n=hf/$(basename "$f" .json)
    bench "$n" "$n --optim adamw" "$f" - -- "$MEMEST" "$f" --optim adamw
done

section "synthetic graphs (tests/bench/gen_models.py; * = the generator's count)"
FAMILIES=()
while IFS=$'\t' read -r fam target _ f; do
    [ "${#FAMILIES[@]}" -gt 0 ] && [ "${FAMILIES[-1]}" = "$fam" ] || FAMILIES+=("$fam")
    bench "$fam/$target" "$(basename "$f" .json)" "$f" - -- "$MEMEST" "$f" --batch 1
done < <(tail -n +2 "$GEN/manifest.tsv")

section "many estimates, against one estimate of the same model (x base)"
# A --sweep the command budget refuses says how many batch sizes the model
# allows: that sweep is run too.
sweep() {   # sweep ID LABEL FILE BASE ARGS...: a --sweep 1:4096:+1 and its fallback
    local id=$1 label=$2 f=$3 base=$4 most
    shift 4
    LAST_MSG=""
    bench "$id" "$label --sweep 1:4096:+1${*:+ $*}" "$f" "$base" -- "$MEMEST" "$f" --sweep 1:4096:+1 "$@"
    most=$(sed -n 's/.*allows at most \([0-9]*\) batch sizes.*/\1/p' <<< "$LAST_MSG")
    if [ "${RC[$id]}" = 2 ] && [ -n "$most" ]; then
        bench "$id/$most" "$label --sweep 1:$most:+1${*:+ $*} (the most allowed)" "$f" "$base" -- \
            "$MEMEST" "$f" --sweep "1:$most:+1" "$@"
        SWEEP_FALLBACK[$id]=$most
    fi
}
declare -A SWEEP_FALLBACK
for m in resnet50 gpt2; do
    f=models/$m.json
    sweep "$m/sweep" "$m" "$f" "$m" --csv
    bench "$m/maxb" "$m --gpu a100-40gb --max-batch" "$f" "$m" -- "$MEMEST" "$f" --gpu a100-40gb --max-batch
    bench "$m/advise" "$m --gpu a100-40gb --advise --batch 32" "$f" "$m" -- \
        "$MEMEST" "$f" --gpu a100-40gb --advise --batch 32
done
L=models/hf/llama-3-8b.json
LOPT=(--dtype bf16 --checkpoint)
bench llama8b "hf/llama-3-8b --dtype bf16 --checkpoint" "$L" - -- "$MEMEST" "$L" "${LOPT[@]}"
for list in 1:32768:x2 1:32768:+1024 1:32768:+128 1:32768:+1; do
    bench "llama8b/$list" "hf/llama-3-8b ... --sweep-var seq_len=$list" "$L" llama8b -- \
        "$MEMEST" "$L" "${LOPT[@]}" --sweep-var "seq_len=$list"
done
bench hfgpt2 "hf/gpt2 (default options)" models/hf/gpt2.json - -- "$MEMEST" models/hf/gpt2.json
sweep hfgpt2/sweep "hf/gpt2" models/hf/gpt2.json hfgpt2

section "large configs"
# hf/llama-3.1-405b --optim adamw is in the shipped models above (target < 20 ms)
G=models/hf/llama-3.1-405b.json
bench 405b/16k "405b: 16384 GPUs tp 8 pp 16 zero1 seq 8192" "$G" hf/llama-3.1-405b -- \
    "$MEMEST" "$G" --gpus 16384 --tp 8 --pp 16 --seq 8192 --dtype bf16 --strategy zero1 \
    --micro-batches 16 --checkpoint --gpu h100-80gb --batch 1

if [ "${#NOTES[@]}" -gt 0 ]; then
    echo
    echo "Refused or failed (exit code: the first line of stderr):"
    printf '  %s\n' "${NOTES[@]}"
fi

# ratio A B: A / B to 2 decimals, "-" when either is missing or not above 0
# (a figure less the floor can be, on a loaded machine)
ratio() { awk -v a="${1:--}" -v b="${2:--}" 'BEGIN { if (a == "-" || b == "-" || a + 0 <= 0 || b + 0 <= 0) print "-"; else printf "%.2f", a / b }'; }
FLOOR_MS=${MIN[version]}
FLOOR_KIB=${RSS[version]}
echo
echo "Scaling of the synthetic graphs, 10x the nodes (target: <= 11x time and memory), from the"
echo "fastest runs (min ms: the least disturbed by other load) and the peak RSS; net: less the"
echo "floor of 'memest --version' ($FLOOR_MS ms, $FLOOR_KIB KiB)."
printf '%-20s %-12s %8s %8s %8s %8s\n' family step time rss "net time" "net rss"
IFS=, read -r -a SZ <<< "$SIZES"
size_label() {   # 1000 -> 1k, as gen_models.py names its files
    if (($1 % 1000000 == 0)); then echo "$(($1 / 1000000))M"
    elif (($1 % 1000 == 0)); then echo "$(($1 / 1000))k"
    else echo "$1"; fi
}
for fam in "${FAMILIES[@]}"; do
    for ((i = 0; i + 1 < ${#SZ[@]}; i++)); do
        a=$fam/${SZ[i]} b=$fam/${SZ[i + 1]}
        step="$(size_label "${SZ[i]}")->$(size_label "${SZ[i + 1]}")"
        if [ "${RC[$a]}" != 0 ] || [ "${RC[$b]}" != 0 ]; then
            printf '%-20s %-12s   (exit %s at %s, %s at %s)\n' "$fam" "$step" "${RC[$a]}" \
                "$(size_label "${SZ[i]}")" "${RC[$b]}" "$(size_label "${SZ[i + 1]}")"
            continue
        fi
        printf '%-20s %-12s %8s %8s %8s %8s\n' "$fam" "$step" \
            "$(ratio "${MIN[$b]}" "${MIN[$a]}")" "$(ratio "${RSS[$b]}" "${RSS[$a]}")" \
            "$(ratio "$(awk -v x="${MIN[$b]}" -v f="$FLOOR_MS" 'BEGIN { print x - f }')" \
                "$(awk -v x="${MIN[$a]}" -v f="$FLOOR_MS" 'BEGIN { print x - f }')")" \
            "$(ratio "$((RSS[$b] - FLOOR_KIB))" "$((RSS[$a] - FLOOR_KIB))")"
    done
done

# The targets of issue 17, against this run (informative: no exit code).
verdict() { awk -v v="${1:--}" -v t="$2" 'BEGIN { if (v == "-") print "n/a"; else if (v + 0 <= t + 0) print "met"; else print "MISSED" }'; }
x() { ratio "${MED[$1]:--}" "${MED[$2]:--}"; }
echo
echo "Targets of issue 17 (this run; times are whole processes, floor included):"
for m in resnet50 gpt2; do
    line="  $m --sweep 1:4096:+1 <= 50x one estimate: "
    if [ "${RC[$m/sweep]}" = 0 ]; then
        r=$(x "$m/sweep" "$m")
        line+="${r}x ($(verdict "$r" 50))"
    else
        line+="refused (exit ${RC[$m/sweep]})"
    fi
    if [ -n "${SWEEP_FALLBACK[$m/sweep]+x}" ]; then
        k=${SWEEP_FALLBACK[$m/sweep]}
        line+="; 1:$k:+1, the most allowed: $(x "$m/sweep/$k" "$m")x"
    fi
    echo "$line"
    r=$(x "$m/maxb" "$m")
    echo "  $m --max-batch <= 5x: ${r}x ($(verdict "$r" 5))"
    r=$(x "$m/advise" "$m")
    echo "  $m --advise <= 20x: ${r}x ($(verdict "$r" 20))"
done
for fam in "${FAMILIES[@]}"; do
    id=$fam/100000
    [ -n "${MED[$id]+x}" ] || continue
    mib=$(awk -v k="${RSS[$id]}" 'BEGIN { printf "%.0f", k / 1024 }')
    v1=$(verdict "${MED[$id]}" 1000) v2=$(verdict "$mib" 256)
    [ "${RC[$id]}" = 0 ] || v1="exit ${RC[$id]}" v2="exit ${RC[$id]}"
    echo "  $fam 100k nodes < 1 s, < 256 MiB: ${MED[$id]} ms ($v1), $mib MiB ($v2)"
done
# the fastest run less the fastest 'memest --version', "-" when not above 0
net() { awk -v a="$1" -v f="$FLOOR_MS" 'BEGIN { if (a - f > 0) printf "%.3f ms", a - f; else print "none (below the floor'"'"'s noise)" }'; }
for id in hf/llama-3.1-405b:20 resnet50:5; do
    M=${MED[${id%:*}]}
    echo "  ${id%:*}$([ "${id%:*}" = resnet50 ] || echo ' --optim adamw') < ${id#*:} ms: $M ms" \
        "($(verdict "$M" "${id#*:}")); the fastest run less the fastest --version: $(net "${MIN[${id%:*}]}")"
done
echo "  10x nodes <= 11x time and memory: the scaling table above"
echo "  >= 1000x faster than the PyTorch dry run: tests/bench/torch_dryrun.py"

echo
echo "Machine:"
echo "  nproc:   $(nproc)"
echo "  cpu:     $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
echo "  memory:  $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
echo "  kernel:  $(uname -srm)"
echo "  memest:  $("$MEMEST" --version 2>&1 | head -n 1) ($MEMEST_SHOWN, git $(git rev-parse --short HEAD 2> /dev/null || echo '?')$(git diff --quiet HEAD -- src include 2> /dev/null || echo ', src modified'))"
echo "  date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "  load:    $LOAD_START at the start, $(cut -d ' ' -f 1-3 /proc/loadavg) at the end (1, 5, 15 min averages)"
