#!/usr/bin/env bash
# The hostile corpus (tests/hostile/README.md): runs one case.
#   tests/hostile/run.sh FILE CASE
# runs the function case_CASE of tests/hostile/FILE.sh in a fresh temporary
# directory (the current directory of the case, $T), within $HOSTILE_SECS
# seconds (default 5) and $HOSTILE_MIB MiB (default 1024) per command.
# Environment (group_hostile.cmake sets it): MEMEST, BOUNDED, SRC,
# TORCH_PYTHON (may be empty). Exit 0 pass, 77 skipped, anything else fails.
set -uo pipefail
file=$1 name=$2
here=$(cd "$(dirname "$0")" && pwd)
: "${SRC:=$(cd "$here/../.." && pwd)}"
: "${HOSTILE_SECS:=5}" "${HOSTILE_MIB:=1024}"
GOOD=$SRC/tests/errors/good.json
HF=$SRC/tests/hf
MODELS=$SRC/models
EXPORT=$SRC/src/export/memest-export
T=$(mktemp -d "${TMPDIR:-/tmp}/memest-hostile.XXXXXX")
trap 'chmod -R u+rwx "$T" 2>/dev/null; rm -rf "$T"' EXIT
cd "$T" || exit 2

_code=0 _frag="" _notes=0 _ran=0 _stdout_ok=0

fail() { echo "FAIL [$file.$name]: $*" >&2; _show; exit 1; }
skip() { echo "SKIPPED [$file.$name]: $*" >&2; exit 77; }
_show() {
    [ -f "$T/.out" ] && { echo "--- stdout ---" >&2; head -c 4000 "$T/.out" >&2; }
    [ -f "$T/.err" ] && { echo "--- stderr ---" >&2; head -c 4000 "$T/.err" >&2; }
}

# expect CODE [FRAGMENT]: what the next run must give: its exit code, and a
# fragment of its one-line error (CODE != 0) or of its output (CODE 0).
expect() { _code=$1 _frag=${2-} _notes=0 _stdout_ok=0; }
# notes_ok: the next failing run may print notes ("memest: note: ...")
# before its error line.
notes_ok() { _notes=1; }
# stdout_ok: the next failing run may leave output on stdout (--json).
stdout_ok() { _stdout_ok=1; }

# run CMD [ARG...]: runs CMD bounded, stdout in $T/.out, stderr in $T/.err,
# and checks it against the expectation.
run() {
    _ran=1
    local rc
    "$BOUNDED" "$HOSTILE_SECS" "$HOSTILE_MIB" "$@" > "$T/.out" 2> "$T/.err" < /dev/null
    rc=$?
    case $rc in
    124 | 125) fail "$(grep '^bounded:' "$T/.err" | tail -1)";;
    esac
    # HOSTILE_LOG=FILE (with BOUNDED_REPORT=1): each command's time and memory
    if [ -n "${HOSTILE_LOG:-}" ]; then
        grep '^bounded: [0-9.]* s' "$T/.err" | sed "s/^/$file.$name /" >> "$HOSTILE_LOG"
    fi
    [ "$rc" -eq "$_code" ] || fail "exit $rc, expected $_code: $*"
    local err
    err=$(grep -v '^bounded:' "$T/.err")
    if [ "$_code" -ne 0 ]; then
        if [ "$_stdout_ok" -eq 0 ] && [ -s "$T/.out" ]; then
            fail "stdout is not empty on failure"
        fi
        local lines   # the error line, without the hint after a usage error
        lines=$(grep -vx 'Use memest --help for help with command-line options\.' <<<"$err")
        if [ "$_notes" -eq 1 ]; then
            lines=$(grep -v '^memest[-a-z]*: note: ' <<<"$lines")
        fi
        [ "$(grep -c '' <<<"$lines")" -eq 1 ] && [ -n "$lines" ] ||
            fail "expected exactly one line on stderr"
        grep -q '^memest[-a-z]*: ' <<<"$lines" || fail "the error line lacks the program's name"
        [ -z "$_frag" ] || grep -qF -- "$_frag" <<<"$lines" || fail "stderr lacks \"$_frag\""
        # no raw control bytes in a message (escaped as memest does)
        if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' <<<"$lines"; then
            fail "a control byte in the error line"
        fi
    elif [ -n "$_frag" ]; then
        grep -qF -- "$_frag" "$T/.out" "$T/.err" || fail "neither stdout nor stderr has \"$_frag\""
    fi
    return 0
}

# shell 'SHELL COMMAND': run through bash, for pipes and process substitution.
shell() { run bash -c "$1"; }

# need_torch: skips the case where PyTorch cannot be imported.
need_torch() {
    [ -n "${TORCH_PYTHON:-}" ] && "$TORCH_PYTHON" -c 'import torch' 2>/dev/null ||
        skip "PyTorch cannot be imported (TORCH_PYTHON=${TORCH_PYTHON:-})"
}

# json_field FILE PATH: one value of a --json document (python3 -c json).
json_field() {
    python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    d=d[int(k)] if isinstance(d,list) else d[k]
print(d)' "$1" "$2"
}

# same_output A B: two saved stdouts are the same.
same_output() { cmp -s "$1" "$2" || { diff "$1" "$2" | head -20 >&2; fail "$1 and $2 differ"; }; }

# save NAME: keeps the last run's stdout as $T/NAME.
save() { cp "$T/.out" "$T/$1"; }

. "$here/$file.sh" || exit 2
declare -F "case_$name" > /dev/null || { echo "no case_$name in $file.sh" >&2; exit 2; }
"case_$name"
[ "$_ran" -eq 1 ] || fail "the case ran nothing"
exit 0
