#!/usr/bin/env bash
# checks.sh - memest's outputs end to end (registered by tests/group_output.cmake,
# one ctest per case):
#   - every write is checked: standard output (a full disk, a closed
#     descriptor, a pipe with SIGPIPE ignored, a file-size limit) and the
#     --plot/--timeline files fail with exit 6 and one message naming the
#     output and the system's reason;
#   - files are written whole or not at all: no partial or temporary file,
#     an existing file unchanged after a failure;
#   - output paths that would overwrite the model, another output or
#     standard output are refused (exit 2) before any work;
#   - an output asked for is produced or refused, never dropped;
#   - with --json every error prints the error document;
#   - strings from the model file are escaped for where they go (text, JSON,
#     CSV, SVG checked with xmllint).
#
#   checks.sh MEMEST CSV_FIELDS FAKECUDA SOURCE_DIR CASE
# Exit 0 when the case passes, 77 when it needs a tool that is missing
# (xmllint, prlimit), 1 otherwise.
set -u
M=$1 CSV=$2 FAKECUDA=$3 SRC=$4 CASE=$5
GOOD=$SRC/tests/errors/good.json
MLP=$SRC/models/mlp-mnist.json
HOSTILE=$SRC/tests/output/hostile.json
LONG=$SRC/tests/output/long_name.json
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1

fail() {
    echo "FAIL ($CASE): $*"
    [ -f out ] && { echo "--- stdout"; head -c 3000 out | cat -v; echo; }
    [ -f err ] && { echo "--- stderr"; cat -v err; }
    exit 1
}
need() { command -v "$1" > /dev/null || { echo "SKIP: $1 is not installed"; exit 77; }; }

# expect_rc RC WANT WHAT
expect_rc() { [ "$1" = "$2" ] || fail "exit code $1, expected $2: $3"; }
# run WANT ARGS...: memest ARGS > out 2> err, with exit code WANT
run() {
    local want=$1
    shift
    "$M" "$@" > out 2> err
    expect_rc $? "$want" "memest $*"
}
# one_error FRAGMENT: stderr has exactly one "memest: " line, holding FRAGMENT
one_error() {
    local n
    n=$(grep -c '^memest: ' err)
    [ "$n" = 1 ] || fail "$n 'memest: ' lines on stderr, expected 1"
    grep -qF -- "$1" err || fail "stderr lacks: $1"
}
empty_stdout() { [ ! -s out ] || fail "stdout is not empty"; }
# no_unsafe FILE...: no raw control byte (but the line feed), C1 control,
# bidirectional control, line separator or noncharacter; valid UTF-8; no
# line forged to look like memest's own
no_unsafe() {
    local f
    for f; do
        LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$f" && fail "$f: a raw control byte"
        LC_ALL=C grep -q $'\xc2[\x80-\x9f]' "$f" && fail "$f: a C1 control character"
        LC_ALL=C grep -q -e $'\xe2\x80[\x8e\x8f\xa8-\xae]' -e $'\xe2\x81[\xa6-\xa9]' \
            -e $'\xef\xbf[\xbe\xbf]' "$f" && fail "$f: a bidi control, separator or noncharacter"
        iconv -f UTF-8 -t UTF-8 "$f" > /dev/null 2>&1 || fail "$f: not valid UTF-8"
        grep -q '^memest: forged' "$f" && fail "$f: a forged 'memest:' line"
    done
    return 0
}
# same_dir LISTING: the working directory holds exactly these files
same_dir() {
    local now
    now=$(ls -A | grep -v -x -e out -e err | tr '\n' ' ')
    [ "$now" = "$1" ] || fail "directory holds '$now', expected '$1' (a partial or temporary file?)"
}
xml_ok() { xmllint --noout "$1" 2> xmlerr || { cat xmlerr; fail "$1 is not well-formed XML"; }; }

# ---- standard output ----

case_stdout_full() {
    "$M" "$GOOD" > /dev/full 2> err
    expect_rc $? 6 "report to /dev/full"
    one_error "memest: cannot write to standard output: No space left on device"
}

case_stdout_closed() {
    "$M" "$GOOD" >&- 2> err
    expect_rc $? 6 "report to a closed standard output"
    one_error "memest: cannot write to standard output: Bad file descriptor"
}

case_stdout_epipe() {
    # SIGPIPE ignored (inherited): the write fails with EPIPE; the output
    # (about 380 KB) is larger than a pipe holds, and `true` never reads
    (
        trap '' PIPE
        "$M" "$MLP" --sweep 1:2000:+1 --json 2> err | true
        echo "${PIPESTATUS[0]}" > rc
    )
    expect_rc "$(cat rc)" 6 "report to a pipe closed early, SIGPIPE ignored"
    one_error "memest: cannot write to standard output: Broken pipe"
}

case_stdout_fsize() {
    need prlimit
    prlimit --fsize=500 "$M" "$GOOD" > out 2> err
    expect_rc $? 6 "report past a 500-byte file-size limit"
    one_error "memest: cannot write to standard output: File too large"
}

case_stdout_result_replaced() {
    # exit 6 replaces a result: --fit's "does not fit" (1) was not seen
    "$M" "$GOOD" --mem 1MiB --fit > /dev/full 2> err
    expect_rc $? 6 "--fit verdict to /dev/full"
    one_error "cannot write to standard output"
}

case_stdout_failure_kept() {
    # an earlier failure keeps its exit code; the lost --json document is
    # said after its message
    "$M" "$GOOD" --json --batch 0 > /dev/full 2> err
    expect_rc $? 2 "usage error, its document to /dev/full"
    [ "$(grep -c '^memest: ' err)" = 2 ] || fail "expected the error and the lost output"
    grep -q '^memest: --batch' err && grep -q '^memest: cannot write to standard output' err ||
        fail "messages out of order or missing"
}

# ---- --plot and --timeline files ----

case_plot_no_dir() {
    run 6 "$GOOD" --plot "$W/nodir/x.svg"
    one_error "memest: cannot write $W/nodir/x.svg: No such file or directory"
    empty_stdout
}

case_timeline_no_dir() {
    run 6 "$GOOD" --timeline nodir/x.csv
    one_error "memest: cannot write nodir/x.csv: No such file or directory"
    empty_stdout
}

case_plot_full() {
    run 6 "$GOOD" --plot /dev/full
    one_error "memest: cannot write /dev/full: No space left on device"
    [ -c /dev/full ] || fail "/dev/full was replaced"
}

case_timeline_full() {
    run 6 "$GOOD" --timeline /dev/full --json
    one_error "memest: cannot write /dev/full: No space left on device"
    grep -q '"code": "output"' out && grep -q '"exit": 6' out || fail "no error document"
}

case_plot_directory() {
    mkdir d
    run 6 "$GOOD" --plot d
    one_error "memest: cannot write d: Is a directory"
}

case_plot_fsize_keeps_old() {
    need prlimit
    echo old > x.svg
    prlimit --fsize=2000 "$M" "$GOOD" --plot x.svg > out 2> err
    expect_rc $? 6 "--plot past a 2000-byte file-size limit"
    one_error "memest: cannot write x.svg: File too large"
    [ "$(cat x.svg)" = old ] || fail "x.svg changed"
    same_dir "x.svg "
}

case_timeline_fsize_no_partial() {
    need prlimit
    prlimit --fsize=1000 "$M" "$MLP" --timeline t.csv --plot p.svg > out 2> err
    expect_rc $? 6 "--timeline past a 1000-byte file-size limit"
    one_error "memest: cannot write t.csv: File too large"
    same_dir ""
}

case_plot_replace() {
    # a regular file is replaced whole, keeping its permissions; a symbolic
    # link stays a link to the new file
    echo old > x.svg
    chmod 640 x.svg
    ln -s x.svg link.svg
    run 0 "$GOOD" --plot link.svg
    [ -L link.svg ] || fail "link.svg is no longer a symbolic link"
    head -c 5 x.svg | grep -q '<?xml' || fail "x.svg was not replaced"
    [ "$(stat -c %a x.svg)" = 640 ] || fail "mode $(stat -c %a x.svg), expected 640"
    same_dir "link.svg x.svg "
}

case_plot_dev_stdout() {
    # a target that is not a regular file is written in place
    "$M" "$GOOD" --plot /dev/stdout 2> err | cat > out
    expect_rc "${PIPESTATUS[0]}" 0 "--plot /dev/stdout into a pipe"
    grep -q '^<svg' out && grep -q '^memest ' out || fail "the SVG and the report are not both there"
}

# ---- paths that must not be written ----

case_same_plot_timeline() {
    run 2 "$GOOD" --plot a.svg --timeline ./a.svg
    one_error "--plot a.svg and --timeline ./a.svg are the same file"
    empty_stdout
    echo x > b.svg
    ln b.svg c.svg
    run 2 "$GOOD" --plot b.svg --timeline c.svg
    one_error "are the same file"
    same_dir "b.svg c.svg "
}

case_plot_is_model() {
    cp "$GOOD" m.json
    run 2 m.json --plot m.json
    one_error "--plot m.json is the model file"
    ln -s m.json link.json
    run 2 m.json --timeline link.json
    one_error "--timeline link.json is the model file"
    cmp -s m.json "$GOOD" || fail "the model file changed"
}

case_plot_is_stdout() {
    "$M" "$GOOD" --plot o.svg > o.svg 2> err
    expect_rc $? 2 "--plot o.svg > o.svg"
    one_error "--plot o.svg is also standard output"
}

case_stdout_is_model() {
    cp "$GOOD" m.json
    "$M" m.json >> m.json 2> err
    expect_rc $? 2 "memest m.json >> m.json"
    one_error "standard output is the model file m.json"
    cmp -s m.json "$GOOD" || fail "the model file changed"
}

case_plot_empty_path() {
    run 2 "$GOOD" --plot ''
    one_error "--plot: expected a file name"
}

# ---- outputs asked for: produced or refused ----

case_dropped_refused() {
    local args
    while IFS='|' read -r frag args; do
        # shellcheck disable=SC2086
        run 2 "$GOOD" $args
        one_error "$frag"
        case $args in
        *--json*) grep -q '"code": "usage"' out || fail "no error document: $args" ;;
        *) empty_stdout ;;
        esac
        same_dir ""
    done << 'EOF'
--plot is for memest estimate, max-batch or fit, not a sweep (--sweep)|--sweep 1,2 --plot p.svg
--plot is for memest estimate, max-batch or fit|--sweep-var width=4,8 --plot p.svg --json
--timeline is for memest estimate, max-batch or fit|--sweep-var width=4,8 --timeline t.csv
--timeline is for memest estimate, max-batch or fit|--sweep 1,2 --csv --timeline t.csv
--plot is for memest estimate, max-batch or fit|--advise --mem 1GiB --plot p.svg
--timeline is for memest estimate, max-batch or fit|--advise --mem 1GiB --timeline t.csv --json
--layers is for memest estimate, max-batch or fit|--sweep 1,2 --layers
--layers is for memest estimate, max-batch or fit|--sweep-var width=4,8 --layers
--layers is for memest estimate, max-batch or fit|--advise --mem 1GiB --layers
--fit prints a one-line verdict: --layers needs --json with it|--mem 1GiB --fit --layers
EOF
}

case_max_batch_outputs() {
    need xmllint
    run 0 "$GOOD" --max-batch --mem 2GiB --overhead 0 --plot p.svg --timeline t.csv --layers
    local best
    best=$(sed -n 's/^max batch: \([0-9]*\) .*/\1/p' out)
    [ -n "$best" ] || fail "no max batch"
    grep -q '^Layers' out && grep -q '^  fc ' out || fail "no per-layer table"
    xml_ok p.svg
    grep -q "one training step, batch $best<" p.svg || fail "the plot is not the step at batch $best"
    "$CSV" t.csv 3 > nodes || fail "t.csv does not parse"
    grep -qx fc nodes || fail "t.csv has no event of node fc"
}

case_fit_json_layers() {
    run 0 "$GOOD" --mem 1GiB --fit --json --layers
    grep -q '"layers": \[' out || fail "no layers in the document"
}

# ---- --json: every error prints the document ----

case_json_option_errors() {
    local args
    while IFS='|' read -r frag args; do
        # shellcheck disable=SC2086
        run 2 $args
        one_error "$frag"
        grep -q '"code": "usage"' out && grep -q '"exit": 2' out || fail "no error document: $args"
    done << EOF
--batch: expected a whole number|--batch 0 --json $GOOD
unknown option '--bogus'|--bogus $GOOD --json
--batch needs a value|$GOOD --json --batch
--batch: expected a whole number|--js --batch x $GOOD
no model file given|--json
one model file only|--json $GOOD $GOOD
--json and --csv exclude each other|--csv --json --sweep 1,2 $GOOD
--plot is for memest estimate, max-batch or fit|--json --sweep 1,2 --plot p.svg $GOOD
is the model file|--json --plot $GOOD $GOOD
did you mean "width"|--json --sweep-var widht=1,2 $GOOD
EOF
    # "--json" as an option's value or after "--" is not the option
    run 2 "$GOOD" --loss --json
    empty_stdout
    run 2 "$GOOD" -- --json
    empty_stdout
}

case_json_model_error() {
    run 3 --json "$SRC/tests/errors/dup_key.json"
    grep -q '"code": "schema"' out || grep -q '"code": "parse"' out || fail "no error document"
}

case_json_probe_error() {
    MEMEST_LIBCUDA=/nonexistent/libcuda.so.1 "$M" "$GOOD" --probe --json > out 2> err
    expect_rc $? 4 "--probe --json without a driver"
    one_error "cannot load the CUDA driver"
    grep -q '"error": {' out && grep -q '"code": "probe"' out || fail "no \"error\" in the document"
}

# ---- the step's loss: --loss, else the model's "loss", else cross-entropy ----

case_loss_resolved() {
    # resolved once when the run is set up: the simulator and both reports
    # read that one value
    printf '%s\n' '{"inputs": [{"name": "x", "shape": [4]}],' \
        '"layers": [{"name": "fc", "type": "linear", "out_features": 2}],' \
        '"loss": {"type": "MSELoss"}}' > m.json
    run 0 m.json
    grep -q ', loss mseloss' out || fail "the text report does not show the model's loss"
    run 0 m.json --json
    grep -q '"loss": "mseloss"' out || fail "the document does not show the model's loss"
    mv out model_loss.json
    run 0 m.json --json --loss mseloss
    cmp -s out model_loss.json || fail "the model's loss and --loss mseloss give other documents"
    run 0 m.json --json --loss CrossEntropyLoss
    grep -q '"loss": "crossentropyloss"' out || fail "--loss does not replace the model's loss"
    cmp -s out model_loss.json && fail "--loss crossentropyloss gives the model's loss's figures"
    run 0 m.json --loss none
    grep -q ', loss none' out || fail "--loss does not replace the model's loss (text)"
    run 0 "$GOOD"
    grep -q ', loss crossentropyloss' out || fail "the default loss is not cross-entropy"
}

# ---- strings from the model file ----

case_hostile_text() {
    # the model's name and node names, and a file path, with terminal
    # escapes, a forged "memest:" line, C1 and bidi controls
    local evil=$'evil\e[31m\n.json'
    cp "$HOSTILE" "$evil"
    run 0 "$evil" --layers --gpu a100-40gb
    no_unsafe out err
    grep -qF 'memest 0.1.0: \x1B[31mred\x1B[0m\x1B]0;pwned\x07\x0Amemest: forged line\x0D' out ||
        fail "the name is not shown escaped"
    grep -qF '(evil\x1B[31m\x0A.json)' out || fail "the file name is not shown escaped"
    grep -qF '\xC2\x9B31m\xE2\x80\xAEevil' out || fail "the node name is not shown escaped"
}

case_hostile_json() {
    run 0 "$HOSTILE" --json --gpu a100-40gb
    no_unsafe out
    grep -qF '"model": "\u001b[31mred\u001b[0m\u001b]0;pwned\u0007\nmemest: forged line\r\t\u0001\u000b\f\u007f\u0085\u009b2J\u202eevil\u2066\u2028\ufffe<&>\"' out ||
        fail "the name is not escaped as JSON"
}

case_hostile_svg() {
    need xmllint
    run 0 "$HOSTILE" --plot h.svg
    xml_ok h.svg
    no_unsafe h.svg
    grep -qF '\x1B[31mred' h.svg || fail "the title is not escaped"
    grep -q $'\xe2\x82\xac\xe2\x80\xa6: one training step' h.svg || fail "the long name is not cut at a character"
}

case_hostile_long_svg() {
    need xmllint
    run 0 "$LONG" --plot l.svg --inference
    xml_ok l.svg
    grep -q $'\xe2\x82\xac\xe2\x80\xa6: no-grad forward pass, batch 1<' l.svg ||
        fail "the long name is not cut at a character"
}

case_hostile_csv() {
    run 0 "$HOSTILE" --timeline h.csv
    no_unsafe h.csv
    "$CSV" h.csv 3 > nodes || fail "h.csv does not parse"
    grep -qxF "fc,\"q\"<&>'"$'\xc3\xa9' nodes || fail "node fc,\"q\"... not read back"
    grep -qxF '\xC2\x9B31m\xE2\x80\xAEevil' nodes || fail "the C1 node name not escaped"
    grep -qxF 'x\xE2\x81\xA7' nodes || fail "the input name not escaped"
}

case_hostile_flows() {
    run 0 "$HOSTILE" --sweep 1,2 --gpu a100-40gb
    no_unsafe out err
    run 0 "$HOSTILE" --sweep 1,2 --csv
    no_unsafe out err
    run 0 "$HOSTILE" --max-batch --mem 1GiB --layers
    no_unsafe out err
    run 0 "$HOSTILE" --advise --mem 1GiB
    no_unsafe out err
    grep -qF 'memest 0.1.0: \x1B[31mred' out || fail "--advise does not show the name escaped"
}

case_hostile_probe() {
    MEMEST_LIBCUDA=$FAKECUDA FAKECUDA_TOTAL=16G FAKECUDA_NAME=$'GPU\e[2J\nmemest: forged' \
        "$M" "$HOSTILE" --probe --gpu auto > out 2> err
    expect_rc $? 0 "--probe --gpu auto, fake driver"
    no_unsafe out err
    grep -qF 'probe: GPU\x1B[2J\x0Amemest: forged' out || fail "the device name is not escaped"
}

case_hostile_warning() {
    # the unused-input warning on stderr: a file path and an input name
    local evil=$'w\e]0;x\a.json'
    printf '%s\n' '{"inputs": [{"name": "x", "shape": [4]}, {"name": "y\u202e", "shape": [4]}],' \
        '"layers": [{"name": "fc", "type": "linear", "out_features": 2}]}' > "$evil"
    run 0 "$evil"
    no_unsafe err
    grep -qF 'memest: warning: w\x1B]0;x\x07.json: inputs[1]: the input "y\xE2\x80\xAE"' err ||
        fail "the warning is not escaped"
}

# ---- --generate ----

case_generate_outputs() {
    local L3=$SRC/models/hf/llama-3-8b.json
    run 0 "$L3" --generate --context 512 --new-tokens 16 --gpu a100-80gb --kv-block 16
    grep -q '^  KV cache        66.00 MiB at 528 tokens' out || fail "no KV cache line"
    grep -q '^estimates (roofline, not measurements' out || fail "the speed is not labelled an estimate"
    grep -q '^  blocks ' out || fail "no paged cache"
    run 0 "$L3" --generate --context 512 --new-tokens 16 --gpu a100-80gb --kv-block 16 --json
    python3 -c 'import json,sys; d=json.load(open("out")); g=d["generate"]
assert g["kv_cache"] == 2*32*8*128*528*2, g["kv_cache"]
assert d["fit"]["fits"] and d["paged"]["blocks"] > 0 and d["speed_estimate"]["decode_tokens_per_second"] > 0' ||
        fail "the --json document"
    run 0 "$L3" --generate --sweep-context 128,256 --json
    python3 -c 'import json; d=json.load(open("out")); assert [r["context"] for r in d["sweep_context"]] == [128, 256]' ||
        fail "the sweep document"
    # nothing fits: exit 1, as --max-batch
    run 1 "$L3" --generate --context 128 --mem 8GiB --max-batch
    grep -q '^largest batch that fits: 0 ' out || fail "no max batch line"
}

# --timeline's allocation ids (issue 34): every free names an allocation that
# is live with the same bytes and block, no id is allocated twice while live,
# and the live tensor bytes replayed by id equal the live_tensors column at
# every row (a checkpointed GPT-2 step: recomputation, many frees)
case_timeline_ids() {
    local model
    for model in "$SRC/models/mlp-mnist.json" "$SRC/models/gpt2.json --checkpoint"; do
        # shellcheck disable=SC2086
        run 0 $model --batch 2 --timeline tl.csv
        awk -F, 'NR == 1 {
                     for (i = 1; i <= NF; i++) col[$i] = i
                     if (!("allocation" in col)) { print "no allocation column"; exit 1 }
                     next }
                 { id = $col["allocation"]; b = $col["bytes"]; blk = $col["block"]
                   if ($col["event"] == "alloc") {
                       if (id in live) { print "row " NR ": id " id " allocated twice"; exit 1 }
                       live[id] = b " " blk; sum += b
                   } else {
                       if (!(id in live)) { print "row " NR ": free of id " id " not live"; exit 1 }
                       if (live[id] != b " " blk) { print "row " NR ": id " id " freed as " b " " blk ", allocated as " live[id]; exit 1 }
                       delete live[id]; sum -= b
                   }
                   if (sum != $col["live_tensors"]) { print "row " NR ": live " sum " != " $col["live_tensors"]; exit 1 }
                 }' tl.csv > awkout || fail "$(cat awkout) ($model)"
    done
}

# PYTORCH_CUDA_ALLOC_CONF from the environment (issue 34): applied and named
# in the document, refused with the variable named, and --alloc-conf wins
case_alloc_conf_env() {
    PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True" "$M" "$MLP" --json > out 2> err
    expect_rc $? 0 "with PYTORCH_CUDA_ALLOC_CONF"
    python3 -c 'import json; d=json.load(open("out")); assert d["memory"]["allocator_conf"] == "expandable_segments:True", d["memory"]["allocator_conf"]' ||
        fail "allocator_conf is not the environment's"
    PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True" "$M" "$MLP" --json --alloc-conf backend:native > out 2> err
    expect_rc $? 0 "--alloc-conf over the environment"
    python3 -c 'import json; d=json.load(open("out")); assert d["memory"]["allocator_conf"] == ""' ||
        fail "--alloc-conf does not replace the environment's settings"
    PYTORCH_CUDA_ALLOC_CONF="garbage_collection_threshold:2" "$M" "$MLP" > out 2> err
    expect_rc $? 2 "a bad PYTORCH_CUDA_ALLOC_CONF"
    one_error "PYTORCH_CUDA_ALLOC_CONF: garbage_collect_threshold too big"
}

declare -F "case_$CASE" > /dev/null || { echo "no case $CASE"; exit 1; }
"case_$CASE"
echo "ok"
