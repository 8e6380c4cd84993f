#!/bin/sh
# run.sh - one golden test of memest's output (registered by
# tests/group_golden.cmake, one ctest per case; README.md in this folder).
#
#   run.sh check|accept MEMEST FAKECUDA SOURCE_DIR CASE
#
# Runs memest from SOURCE_DIR with the arguments of CASE.args (one per line;
# "@TMP@/" at the start of one stands for a fresh temporary folder) and the
# environment of CASE.env if there is one (NAME=VALUE lines; "@FAKECUDA@"
# stands for the fake libcuda FAKECUDA). check compares, byte for byte, the
# exit code with CASE.rc, stdout with CASE.out and, when the arguments hold
# --timeline FILE, the first 40 lines of FILE with CASE.timeline; it prints
# the command line and a unified diff (expected, then actual) of what
# differs. accept writes those files from this run instead. Either way the
# run must leave stderr empty (these are successful runs; messages are
# tests/errors' business) and its outputs free of SOURCE_DIR and the
# temporary folder, so that they read the same on every machine.
# Exit 0 when the case passes (or was accepted), 1 otherwise.
set -u
[ $# -eq 5 ] || { echo "usage: run.sh check|accept MEMEST FAKECUDA SOURCE_DIR CASE" >&2; exit 1; }
MODE=$1 M=$2 FAKECUDA=$3 SRC=$4 CASE=$5
case $MODE in check|accept) ;; *) echo "run.sh: unknown mode $MODE" >&2; exit 1;; esac
# Absolute, as memest runs from SOURCE_DIR (itself absolute, to be sought in the outputs).
SRC=$(cd "$SRC" && pwd) || exit 1
case $M in /*) ;; *) M=$PWD/$M ;; esac
case $FAKECUDA in /*) ;; *) FAKECUDA=$PWD/$FAKECUDA ;; esac
G=$SRC/tests/golden
[ -f "$G/$CASE.args" ] || { echo "run.sh: no case $G/$CASE.args" >&2; exit 1; }
W=$(mktemp -d) || exit 1
trap 'rm -rf "$W"' EXIT
mkdir "$W/tmp" || exit 1

# The arguments, read into "$@"; the file named after --timeline is kept.
set --
timeline='' prev=''
while IFS= read -r a || [ -n "$a" ]; do
    case $a in @TMP@/*) a=$W/tmp/${a#@TMP@/} ;; esac
    [ "$prev" = --timeline ] && timeline=$a
    prev=$a
    set -- "$@" "$a"
done < "$G/$CASE.args"
cmdline=$*

# The environment, exported into this script's own process only.
envline=''
if [ -f "$G/$CASE.env" ]; then
    while IFS= read -r kv || [ -n "$kv" ]; do
        [ -n "$kv" ] || continue
        case $kv in *=@FAKECUDA@) kv=${kv%@FAKECUDA@}$FAKECUDA ;; esac
        export "${kv?}"  # NAME=VALUE: exports NAME
        envline="$envline$kv "
    done < "$G/$CASE.env"
fi

cd "$SRC" || exit 1
"$M" "$@" > "$W/out" 2> "$W/err"
echo $? > "$W/rc"
[ -z "$timeline" ] || head -n 40 "$timeline" > "$W/timeline" 2> /dev/null || : > "$W/timeline"

failed=0
# fail WHAT: the command line (once), then WHAT
fail() {
    [ $failed = 1 ] || echo "FAIL (golden $CASE): cd $SRC && $envline$M $cmdline"
    failed=1
    echo "$1"
}

if [ -s "$W/err" ]; then
    fail "stderr is not empty:"
    cat "$W/err"
fi
for f in out timeline; do
    [ -f "$W/$f" ] || continue
    if grep -qF -e "$SRC" -e "$W" "$W/$f"; then
        fail "the $f holds a path of this machine ($SRC or $W)"
    fi
done

if [ "$MODE" = accept ]; then
    [ $failed = 0 ] || exit 1
    cp "$W/rc" "$G/$CASE.rc" && cp "$W/out" "$G/$CASE.out" || exit 1
    if [ -n "$timeline" ]; then
        cp "$W/timeline" "$G/$CASE.timeline" || exit 1
    else
        rm -f "$G/$CASE.timeline"
    fi
    echo "accepted $CASE (exit $(cat "$W/rc"))"
    exit 0
fi

for f in rc out; do
    [ -f "$G/$CASE.$f" ] || fail "no $CASE.$f (tests/golden/accept.sh writes it)"
done
if [ -n "$timeline" ] && [ ! -f "$G/$CASE.timeline" ]; then
    fail "no $CASE.timeline to compare the --timeline file with"
fi
if [ -z "$timeline" ] && [ -f "$G/$CASE.timeline" ]; then
    fail "$CASE.timeline exists but the arguments hold no --timeline"
fi
for f in rc out timeline; do
    if [ -f "$W/$f" ] && [ -f "$G/$CASE.$f" ] && ! cmp -s "$G/$CASE.$f" "$W/$f"; then
        fail "$CASE.$f differs (expected, then actual):"
        diff -u "$G/$CASE.$f" "$W/$f"
    fi
done
exit $failed
