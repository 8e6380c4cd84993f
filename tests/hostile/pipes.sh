# Every file option read through a pipe, a FIFO and /dev/stdin (issue 30,
# class 3): the same estimate as from the file, or a clear refusal; nothing
# read twice, nothing lost. Sourced by run.sh.

L7B=$MODELS/hf/llama-2-7b.json
ACC=$SRC/tests/dist/accelerate_fsdp.yaml
TRAINER=$SRC/tests/dist/trainer_fsdp.json
DS=$SRC/tests/dist/ds_zero2_bf16.json

# the report names the file it read: the same name for every way in
norm() { sed -E 's#/dev/fd/[0-9]+|/dev/stdin|[^ (]*fifo|[^ (]*copy\.[a-z]+#INPUT#g' "$1" > "$1.n"; }

# same_as_file 'COMMAND WITH @ FOR THE INPUT' FILE: the command reading
# FILE gives what it gives reading the input each other way
same_as_file() {
    local cmd=$1 file=$2 ext=${2##*.}
    cp "$file" "copy.$ext"
    expect 0
    shell "${cmd//@/copy.$ext}"
    save file.out
    norm file.out
    shell "${cmd//@/<(cat copy.$ext)}"
    save pipe.out
    norm pipe.out
    same_output pipe.out.n file.out.n
    shell "${cmd//@//dev/stdin} < copy.$ext"
    save stdin.out
    norm stdin.out
    same_output stdin.out.n file.out.n
    mkfifo fifo
    shell "(cat copy.$ext > fifo &); ${cmd//@/fifo}"
    save fifo.out
    norm fifo.out
    same_output fifo.out.n file.out.n
}

# a YAML config past a pipe's first 4 KiB (comments before its keys)
big_yaml() {
    for i in $(seq 1 200); do echo "# padding line $i of a config written by hand, before its keys"; done
    cat "$ACC"
}

case_model() {
    same_as_file "\"$MEMEST\" @ --batch 8" "$MODELS/resnet50.json"
}
case_model_large() {
    # past the first 64 KiB read
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["description"]="x"*100000; json.dump(d, open("big.json","w"))' "$MODELS/bert-base.json"
    same_as_file "\"$MEMEST\" @ --batch 2" big.json
}
case_hf_config() {
    same_as_file "\"$MEMEST\" @ --seq 256" "$MODELS/hf/llama-3-8b.json"
}
case_deepspeed() {
    same_as_file "\"$MEMEST\" \"$L7B\" --seq 256 --gpus 8 --deepspeed @" "$DS"
}
case_fsdp_yaml() {
    same_as_file "\"$MEMEST\" \"$L7B\" --seq 256 --fsdp-config @" "$ACC"
}
case_fsdp_yaml_past_4k() {
    big_yaml > big.yaml
    same_as_file "\"$MEMEST\" \"$L7B\" --seq 256 --fsdp-config @" big.yaml
}
case_fsdp_json() {
    same_as_file "\"$MEMEST\" \"$L7B\" --seq 256 --gpus 8 --fsdp-config @" "$TRAINER"
}
case_fsdp_big_same_as_small() {
    # the padding changes nothing
    big_yaml > big.yaml
    expect 0
    shell "\"$MEMEST\" \"$L7B\" --seq 256 --fsdp-config <(cat big.yaml)"
    save big.out
    norm big.out
    shell "\"$MEMEST\" \"$L7B\" --seq 256 --fsdp-config <(cat \"$ACC\")"
    save small.out
    norm small.out
    same_output big.out.n small.out.n
}
case_slow_writer() {
    cp "$DS" ds.json
    expect 0
    run "$MEMEST" "$L7B" --seq 256 --gpus 8 --deepspeed ds.json
    save file.out
    norm file.out
    shell "\"$MEMEST\" \"$L7B\" --seq 256 --gpus 8 --deepspeed <( (head -c 100 ds.json; sleep 0.3; tail -c +101 ds.json) )"
    save pipe.out
    norm pipe.out
    same_output pipe.out.n file.out.n
}
case_stdin_twice() {
    # the model and the DeepSpeed config from one standard input
    expect 2 "--deepspeed /dev/stdin is the model file /dev/stdin"
    shell "\"$MEMEST\" /dev/stdin --gpus 8 --deepspeed /dev/stdin < \"$GOOD\""
}
case_stdin_twice_pipe() {
    expect 2 "--fsdp-config /dev/stdin is the model file /dev/stdin"
    shell "cat \"$GOOD\" | \"$MEMEST\" /dev/stdin --gpus 8 --fsdp-config /dev/stdin"
}
case_config_is_model() {
    cp "$GOOD" m.json
    expect 2 "--deepspeed m.json is the model file m.json"
    run "$MEMEST" m.json --gpus 2 --deepspeed m.json
}
case_deepspeed_devnull() {
    expect 3 "/dev/null: the file is empty"
    run "$MEMEST" "$GOOD" --gpus 2 --deepspeed /dev/null
}
case_fsdp_devnull() {
    expect 3 "/dev/null: \$: expected a mapping"
    run "$MEMEST" "$GOOD" --gpus 2 --fsdp-config /dev/null
}
case_fsdp_devzero() {
    expect 3 "/dev/zero: the file is larger than the 1 MiB limit for config files"
    run "$MEMEST" "$GOOD" --gpus 2 --fsdp-config /dev/zero
}
case_deepspeed_devzero() {
    expect 3 "/dev/zero: the file is larger than the 1 MiB limit for config files"
    run "$MEMEST" "$GOOD" --gpus 2 --deepspeed /dev/zero
}
case_fsdp_directory() {
    mkdir d
    expect 3 "d: cannot read: is a directory"
    run "$MEMEST" "$GOOD" --gpus 2 --fsdp-config d
}
case_deepspeed_missing() {
    expect 3 "nothing.json: cannot open: No such file or directory"
    run "$MEMEST" "$GOOD" --gpus 2 --deepspeed nothing.json
}
case_stdin_closed() {
    expect 3 "/dev/stdin: cannot"
    shell "\"$MEMEST\" \"$GOOD\" --gpus 2 --deepspeed /dev/stdin <&-"
}
case_pipe_truncated() {
    expect 3 "truncated"
    shell "\"$MEMEST\" \"$GOOD\" --gpus 2 --deepspeed <(head -c 40 \"$DS\")"
}
