#!/bin/sh
# accept.sh BUILD_DIR [CASE...] - rewrites the expected files (CASE.out,
# CASE.rc, CASE.timeline) of the golden tests from BUILD_DIR's memest, for
# the cases named or, with none, for every CASE.args of this folder. Only
# after a change meant to alter the output (README.md in this folder); look
# at `git diff tests/golden` before committing what it wrote.
set -u
[ $# -ge 1 ] || { echo "usage: tests/golden/accept.sh BUILD_DIR [CASE...]" >&2; exit 1; }
B=$(cd "$1" && pwd) || exit 1
shift
G=$(cd "$(dirname "$0")" && pwd) || exit 1
SRC=$(cd "$G/../.." && pwd) || exit 1
[ -x "$B/memest" ] || { echo "accept.sh: no $B/memest (build it first)" >&2; exit 1; }
if [ $# -eq 0 ]; then
    for a in "$G"/*.args; do
        c=${a##*/}
        set -- "$@" "${c%.args}"
    done
fi
status=0
for c; do
    sh "$G/run.sh" accept "$B/memest" "$B/tests/libfakecuda.so" "$SRC" "${c%.args}" || status=1
done
exit $status
