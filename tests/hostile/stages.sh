# The files a command derives from the ones it is asked for (class 6 of
# issue 30): with --pp, --plot F.svg and --timeline F.csv also write every
# stage's file, F-stage<s>.svg and .csv. Each derived file passes the same
# checks as a named one (never an input: the model, a directory's
# config.json, the --deepspeed and --fsdp-config files; never another
# output, standard output or standard error), before any estimate; and the
# outputs of one command are all or nothing: a failed run (exit 2 to 7)
# leaves none of them, not even a temporary, and an old file as it was.
# Sourced by run.sh.

MG=$SRC/tests/dist/megatron_gpt.json
# a small pipeline of two stages (one layer each)
PP=(--set layers=2 --set seq_len=32 --set hidden=64 --set heads=4 --set vocab=128 --gpus 2 --pp 2)

# usage ARGS...: memest ARGS, standard output the harness's or $TO (a
# redirection, through bash).
usage() {
    if [ -n "${TO-}" ]; then
        shell "$(printf '%q ' "$MEMEST" "$@") $TO"
    else
        run "$MEMEST" "$@"
    fi
}

# left FILE...: the directory holds exactly these (and the harness's own
# dot files): no output, no temporary ".NAME.XXXXXX" left behind
left() {
    local now want
    now=$(ls -A | grep -v -x -e .out -e .err | sort | tr '\n' ' ')
    want=$(printf '%s\n' "$@" | grep -v '^$' | sort | tr '\n' ' ')
    [ "$now" = "$want" ] || fail "the directory holds '$now', expected '$want'"
}

case_stage_over_model() {
    cp "$MG" q-stage1.svg
    expect 2 "q-stage1.svg (which --plot q.svg also writes) is the model file: it would be overwritten"
    usage q-stage1.svg "${PP[@]}" --plot q.svg
    cmp -s q-stage1.svg "$MG" || fail "the model file changed"
    left q-stage1.svg
}

case_stage_symlink_to_model() {
    cp "$MG" m.json
    ln -s m.json t-stage0.csv
    expect 2 "t-stage0.csv (which --timeline t.csv also writes) is the model file"
    usage m.json "${PP[@]}" --timeline t.csv --plot q.svg
    cmp -s m.json "$MG" || fail "the model file changed"
    [ -L t-stage0.csv ] || fail "the link was replaced"
    left m.json t-stage0.csv
}

case_stage_over_named_timeline() {
    expect 2 "--timeline q-stage1.svg and q-stage1.svg (which --plot q.svg also writes) are the same file"
    usage "$MG" "${PP[@]}" --plot q.svg --timeline q-stage1.svg
    left
}

case_stage_files_hard_linked() {
    # two derived files that are one file (a hard link): one would replace the other
    echo old > q-stage1.svg
    ln q-stage1.svg t-stage1.csv
    expect 2 "q-stage1.svg (which --plot q.svg also writes) and t-stage1.csv (which --timeline t.csv also writes) are the same file"
    usage "$MG" "${PP[@]}" --plot q.svg --timeline t.csv
    [ "$(cat q-stage1.svg)" = old ] || fail "q-stage1.svg changed"
    left q-stage1.svg t-stage1.csv
}

case_stage_over_stdout() {
    expect 2 "q-stage0.svg (which --plot q.svg also writes) is also standard output"
    TO='> q-stage0.svg' usage "$MG" "${PP[@]}" --plot q.svg
    left q-stage0.svg
}

case_stage_over_stderr() {
    # standard error is the stage file: the one line goes there, read back
    expect 2 "t-stage1.csv (which --timeline t.csv also writes) is also standard error"
    shell "$(printf '%q ' "$MEMEST" "$MG" "${PP[@]}") --timeline t.csv 2> t-stage1.csv; rc=\$?; cat t-stage1.csv >&2; exit \$rc"
    left t-stage1.csv
}

case_stage_over_deepspeed() {
    # a config without gradient_accumulation_steps (refused with --pp)
    printf '{"zero_optimization": {"stage": 1}, "steps_per_print": 10}\n' > q-stage1.svg
    cp q-stage1.svg keep.json
    expect 2 "q-stage1.svg (which --plot q.svg also writes) is the --deepspeed config: it would be overwritten"
    notes_ok
    usage "$MG" "${PP[@]}" --deepspeed q-stage1.svg --plot q.svg
    cmp -s q-stage1.svg keep.json || fail "the config changed"
    left q-stage1.svg keep.json
}

case_stage_over_fsdp_config() {
    printf 'distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: FULL_SHARD\nnum_processes: 2\n' > t-stage0.csv
    cp t-stage0.csv keep.yaml
    expect 2 "t-stage0.csv (which --timeline t.csv also writes) is the --fsdp-config file"
    notes_ok
    usage "$MG" "${PP[@]}" --fsdp-config t-stage0.csv --timeline t.csv
    cmp -s t-stage0.csv keep.yaml || fail "the config changed"
    left t-stage0.csv keep.yaml
}

case_stage_over_dir_config() {
    # a directory stands for its config.json: a stage file linked to it is an input
    mkdir ckpt
    cp "$MG" ckpt/config.json
    ln ckpt/config.json q-stage0.svg
    expect 2 "q-stage0.svg (which --plot q.svg also writes) is the model's config.json"
    usage ckpt "${PP[@]}" --plot q.svg
    cmp -s ckpt/config.json "$MG" || fail "the config changed"
    expect 2 "--plot ckpt/config.json is the model's config.json"
    usage ckpt "${PP[@]}" --plot ckpt/config.json
    cmp -s ckpt/config.json "$MG" || fail "the config changed"
}

case_failed_stage_leaves_none() {
    # stage 1's file cannot be written: exit 6, and neither the named file
    # nor stage 0's is left (an old one keeps its content)
    echo old > q.svg
    mkdir q-stage1.svg
    expect 6 "cannot write q-stage1.svg: Is a directory"
    run "$MEMEST" "$MG" "${PP[@]}" --plot q.svg --timeline t.csv
    [ "$(cat q.svg)" = old ] || fail "q.svg changed"
    left q.svg q-stage1.svg
}

case_stdout_failure_leaves_none() {
    # every file written, then standard output fails: the command failed (6)
    # and its files are removed with it
    expect 6 "cannot write to standard output: No space left on device"
    shell "$(printf '%q ' "$MEMEST" "$MG" "${PP[@]}") --plot q.svg --timeline t.csv > /dev/full"
    left
}

case_probe_failure_leaves_none() {
    # the probe fails (exit 4) after the report: no file of that run
    expect 4 "cannot load the CUDA driver"
    stdout_ok
    MEMEST_LIBCUDA=/nonexistent/libcuda.so.1 run "$MEMEST" "$GOOD" --probe --plot q.svg --timeline t.csv
    left
}

case_long_stage_name() {
    # the named file fits the file system's name limit, its stage files do
    # not: exit 6, and the named file is not left either
    local n
    n=$(printf 'a%.0s' $(seq 250)).svg
    expect 6 "File name too long"
    run "$MEMEST" "$MG" "${PP[@]}" --plot "$n"
    left
}

case_max_batch_stage_files() {
    # --max-batch writes every stage's files too, of the step at its answer
    expect 0 "max batch:"
    run "$MEMEST" "$MG" "${PP[@]}" --max-batch --mem 2GiB --plot q.svg --timeline t.csv
    left q.svg q-stage0.svg q-stage1.svg t.csv t-stage0.csv t-stage1.csv
    local best
    best=$(sed -n 's/^max batch: \([0-9]*\) .*/\1/p' .out)
    grep -q "one training step, batch $best<" q-stage0.svg || fail "stage 0's plot is not the step at batch $best"
    cp "$MG" q-stage1.svg
    rm -f q.svg q-stage0.svg t*.csv
    expect 2 "is the model file"
    usage q-stage1.svg "${PP[@]}" --max-batch --mem 2GiB --plot q.svg
    left q-stage1.svg
}

case_nofit_writes_all() {
    # exit 1 (--fit: does not fit) is an answer: every file is written
    expect 0 "rc=1"
    shell "$(printf '%q ' "$MEMEST" "$MG" "${PP[@]}") --mem 1MiB --fit --plot q.svg --timeline t.csv; echo rc=\$?"
    left q.svg q-stage0.svg q-stage1.svg t.csv t-stage0.csv t-stage1.csv
}

case_stage_json_document() {
    # --json: the refusal is the error document too
    cp "$MG" q-stage1.svg
    expect 2 "is the model file"
    stdout_ok
    usage q-stage1.svg "${PP[@]}" --plot q.svg --json
    grep -q '"code": "usage"' .out && grep -q '"exit": 2' .out || fail "no error document"
    left q-stage1.svg
}

case_replaced_together() {
    # old files of every name are replaced by the new run, none left stale
    local f
    for f in q.svg q-stage0.svg q-stage1.svg; do echo old > "$f"; done
    expect 0 "Pipeline stages"
    run "$MEMEST" "$MG" "${PP[@]}" --plot q.svg
    for f in q.svg q-stage0.svg q-stage1.svg; do
        head -c 5 "$f" | grep -q '<?xml' || fail "$f was not replaced"
    done
    left q.svg q-stage0.svg q-stage1.svg
}
