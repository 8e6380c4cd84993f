#!/bin/sh
# selftest.sh SRC_ROOT OBJ_DIR - check.sh must refuse each kind of violation:
# on a copy of the tree, one violation is put in at a time and check.sh must
# fail naming it (the objects are the real build's, so the violations are
# those the sources show). The untouched copy must pass first.
set -u
root=$1
obj=$2
check=$root/tests/layers/check.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

fresh() {
    rm -rf "$tmp/t"
    mkdir -p "$tmp/t/tests"
    cp -R "$root/src" "$root/include" "$tmp/t/"
}

fresh
if ! sh "$check" "$tmp/t" "$obj" > "$tmp/out" 2>&1; then
    echo "selftest: the untouched tree fails:"; cat "$tmp/out"; exit 1
fi

# expect NAME FRAGMENT: check.sh fails on the modified copy, saying FRAGMENT
expect() {
    if sh "$check" "$tmp/t" "$obj" > "$tmp/out" 2>&1; then
        echo "selftest: $1: check.sh passed"; fail=1
    elif ! grep -qF -- "$2" "$tmp/out"; then
        echo "selftest: $1: no \"$2\" in:"; cat "$tmp/out"; fail=1
    else
        echo "selftest: $1: refused"
    fi
}

fresh
printf '#include "memest/report.h"\n' >> "$tmp/t/src/base/arena.c"
expect "a later layer's header" "src/base/arena.c:"

fresh
printf '#include "memest/app.h"\n' >> "$tmp/t/include/memest/graph.h"
expect "a public header including a later layer" "include/memest/graph.h:"

fresh
printf 'extern int memest_zz;\n' >> "$tmp/t/src/card/fit.c"
expect "an extern in a .c file" "declares an extern"

fresh
printf '#include "../sim/sim_internal.h"\n' >> "$tmp/t/src/calc/estimate.c"
expect "a private header of another folder" "from another folder"

fresh
printf '/* nobody owns it */\n#pragma once\n' > "$tmp/t/include/memest/orphan.h"
expect "a header no layer owns" "orphan.h belongs to 0 layers"

fresh
mkdir "$tmp/t/src/extra"
printf 'int extra;\n' > "$tmp/t/src/extra/extra.c"
expect "a folder of C sources that is no layer" "src/extra/ is not a layer"

fresh
printf '#include "memest/sim.h"\n' >> "$tmp/t/src/report/report_fit.c"
expect "the simulator included by a report" "includes the simulator"

fresh
printf '#include <cjson/cJSON.h>\n' >> "$tmp/t/src/card/fit.c"
expect "cJSON outside the model layer" "includes cJSON"

fresh
printf '#include "memest/timeline.h"\n' >> "$tmp/t/include/memest/error.h"
printf '#include "memest/error.h"\n' >> "$tmp/t/include/memest/shape.h"
printf '#include "memest/shape.h"\n' >> "$tmp/t/include/memest/timeline.h"
expect "an include cycle" "include cycle"

fresh
printf 'static void zz(void) { fprintf(stdout, "x"); }\n' >> "$tmp/t/src/app/flow_single.c"
expect "stdout outside the report layer" "writes to standard output"

fresh
printf 'static int zz(const struct memest_node *n) { return strcmp(n->op->name, "dropout"); }\n' \
    >> "$tmp/t/src/sim/sim_forward.c"
expect "a decision by op name" "reads an op's name"

exit $fail
