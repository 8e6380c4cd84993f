# Hostile DeepSpeed configs (issue 30, class 5): a value read from the file
# passes exactly the checks of the option it stands for, booleans are JSON
# booleans, a setting given by two keys is refused, and train_batch_size is
# DeepSpeed's micro x accumulation x world. Sourced by run.sh.

# ds 'JSON': the config ds.json
ds() { printf '%s\n' "$1" > ds.json; }
Z2='"zero_optimization": {"stage": 2}'

# refused 'JSON' FRAGMENT [ARG...]: refused with exit 3
refused() {
    ds "$1"
    expect 3 "$2"
    shift 2
    run "$MEMEST" "$GOOD" --gpus 2 --deepspeed ds.json "$@"
}

# agrees 'JSON' 'DS ARGS' 'OPTIONS': --deepspeed with DS ARGS gives the
# estimate OPTIONS give without the file
agrees() {
    ds "$1"
    expect 0
    run "$MEMEST" "$GOOD" $3
    save options.out
    run "$MEMEST" "$GOOD" --deepspeed ds.json $2
    same_output .out options.out
}

case_accum_past_option() {
    refused "{\"gradient_accumulation_steps\": 9007199254740991, $Z2}" \
        'gradient_accumulation_steps: as the options --grad-accum 9007199254740991: --grad-accum: expected a whole number between 1 and 1048576'
}
case_accum_zero() {
    refused "{\"gradient_accumulation_steps\": 0, $Z2}" 'expected a whole number of at least 1 (or "auto"), got 0'
}
case_accum_string() {
    refused "{\"gradient_accumulation_steps\": \"8\", $Z2}" 'got "8"'
}
case_momentum_negative() {
    refused "{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"momentum\": -5}}, $Z2}" \
        'optimizer.params.momentum: as the options --optim sgd --momentum -5: --momentum: expected a number between 0 and 1'
}
case_momentum_with_adam() {
    refused "{\"optimizer\": {\"type\": \"Adam\", \"params\": {\"momentum\": 0.9}}, $Z2}" \
        '--momentum applies to sgd and rmsprop, not adam'
}
case_momentum_string() {
    refused "{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"momentum\": \"0.9\"}}, $Z2}" \
        'optimizer.params.momentum: expected a number, got "0.9"'
}
case_file_optimizer_with_option() {
    # --amsgrad is Adam's: with the file's SGD it means nothing
    refused "{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"momentum\": 0.9}}, $Z2}" \
        '--amsgrad applies to' --amsgrad
}
case_option_optimizer_wins() {
    # --optim given: the file's optimizer and its momentum are not used
    agrees "{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"momentum\": 0.9}}, $Z2}" \
        '--gpus 2 --optim adamw' '--gpus 2 --strategy zero2 --optim adamw'
}
case_sgd_momentum_agrees() {
    agrees "{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"momentum\": 0.9}}, $Z2}" \
        '--gpus 2' '--gpus 2 --strategy zero2 --optim sgd --momentum 0.9 --optim-impl fused'
}
case_micro_zero() {
    refused "{\"train_micro_batch_size_per_gpu\": 0, $Z2}" 'train_micro_batch_size_per_gpu: expected a whole number of at least 1'
}
case_micro_past_option() {
    refused "{\"train_micro_batch_size_per_gpu\": 9007199254740992, $Z2}" \
        'as the options --batch 9007199254740992: --batch: expected a whole number between 1 and 2^53-1'
}
case_train_batch_alone() {
    # DeepSpeed: micro = train_batch_size // world, accumulation 1
    agrees "{\"train_batch_size\": 32, $Z2}" '--gpus 2' '--gpus 2 --strategy zero2 --batch 16'
}
case_train_batch_and_micro() {
    # accumulation = train // micro // world = 64 // 4 // 2
    agrees "{\"train_batch_size\": 64, \"train_micro_batch_size_per_gpu\": 4, $Z2}" '--gpus 2' \
        '--gpus 2 --strategy zero2 --batch 4 --grad-accum 8'
}
case_train_batch_and_accum() {
    agrees "{\"train_batch_size\": 64, \"gradient_accumulation_steps\": 4, $Z2}" '--gpus 2' \
        '--gpus 2 --strategy zero2 --batch 8 --grad-accum 4'
}
case_train_batch_with_option() {
    # --batch stands for train_micro_batch_size_per_gpu
    agrees "{\"train_batch_size\": 64, $Z2}" '--gpus 2 --batch 8' \
        '--gpus 2 --strategy zero2 --batch 8 --grad-accum 4'
}
case_train_batch_inconsistent() {
    refused "{\"train_batch_size\": 32, \"train_micro_batch_size_per_gpu\": 4, \"gradient_accumulation_steps\": 2, $Z2}" \
        'train_batch_size: 32 is not train_micro_batch_size_per_gpu 4 x gradient_accumulation_steps 2 x 2 data-parallel GPUs'
}
case_train_batch_inconsistent_option() {
    refused "{\"train_batch_size\": 32, $Z2}" '32 is not --batch 3 x gradient_accumulation_steps 5 x 2' --batch 3
}
case_train_batch_too_small() {
    ds "{\"train_batch_size\": 4, $Z2}"
    expect 3 'train_batch_size: 4 over 8 data-parallel GPUs leaves a micro-batch of 0'
    run "$MEMEST" "$GOOD" --gpus 8 --deepspeed ds.json
}
case_train_batch_auto() {
    agrees "{\"train_batch_size\": \"auto\", \"train_micro_batch_size_per_gpu\": \"auto\", $Z2}" \
        '--gpus 2 --batch 3' '--gpus 2 --strategy zero2 --batch 3'
}
case_train_batch_sweep() {
    ds "{\"train_batch_size\": 32, $Z2}"
    expect 2 'ds.json: train_batch_size: fixes the micro-batch'
    run "$MEMEST" "$GOOD" --gpus 2 --deepspeed ds.json --sweep 1,2
}
case_quantized_weights_string() {
    refused '{"zero_optimization": {"stage": 3, "zero_quantized_weights": "true"}}' \
        'zero_optimization.zero_quantized_weights: expected true or false (or "auto"), got "true"'
}
case_quantized_gradients_on() {
    refused '{"zero_optimization": {"stage": 3, "zero_quantized_gradients": true}}' 'ZeRO++'
}
case_quantized_weights_off() {
    agrees '{"zero_optimization": {"stage": 3, "zero_quantized_weights": false}}' '--gpus 2' \
        '--gpus 2 --strategy zero3'
}
case_mics_on() {
    refused '{"zero_optimization": {"stage": 3, "mics_shard_size": 4}}' 'MiCS'
}
case_mics_string() {
    refused '{"zero_optimization": {"stage": 3, "mics_shard_size": "4"}}' 'mics_shard_size: expected a whole number (-1: off), got "4"'
}
case_loco_on() {
    refused '{"zero_optimization": {"stage": 3, "zeropp_loco_param": {"err_beta": 0.8}}}' 'ZeRO++'
}
case_amp_string() {
    refused "{\"amp\": {\"enabled\": \"true\"}, $Z2}" 'amp.enabled: expected true or false (or "auto"), got "true"'
}
case_amp_on() {
    refused "{\"amp\": {\"enabled\": true}, $Z2}" 'amp: changes the memory in a way memest does not model'
}
case_offload_legacy_and_new() {
    # DeepSpeedConfigModel: deprecated and replacing parameter not together
    refused '{"zero_optimization": {"stage": 2, "cpu_offload": true, "offload_optimizer": {"device": "none"}}}' \
        'zero_optimization.offload_optimizer: the setting offload_optimizer is given twice (also as zero_optimization.cpu_offload)'
}
case_offload_new_and_legacy() {
    refused '{"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}, "cpu_offload_param": false}}' \
        'the setting offload_param is given twice'
}
case_offload_legacy_agrees() {
    agrees '{"zero_optimization": {"stage": 2, "cpu_offload": true}}' '--gpus 2' \
        '--gpus 2 --strategy zero2 --offload optimizer'
}
case_offload_params_misspelt() {
    # DeepSpeed's deprecated key is cpu_offload_param; its config forbids others
    refused '{"zero_optimization": {"stage": 3, "cpu_offload_params": true}}' 'zero_optimization.cpu_offload_params: unknown zero_optimization key'
}
case_offload_device() {
    refused '{"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "gpu"}}}' 'expected "cpu", "nvme" or "none"'
}
case_bf16_twice() {
    refused "{\"bf16\": {\"enabled\": true}, \"bfloat16\": {\"enabled\": false}, $Z2}" 'the setting bf16 is given twice'
}
case_bf16_and_fp16() {
    refused "{\"bf16\": {\"enabled\": true}, \"fp16\": {\"enabled\": true}, $Z2}" 'bf16 and fp16 are both enabled'
}
case_overlap_string() {
    refused '{"zero_optimization": {"stage": 2, "overlap_comm": "false"}}' 'overlap_comm: expected true or false (or "auto"), got "false"'
}
case_stage_string() {
    refused '{"zero_optimization": {"stage": "3"}}' 'zero_optimization.stage: expected a whole number of at least 0 (or "auto"), got "3"'
}
case_stage_fraction() {
    refused '{"zero_optimization": {"stage": 2.5}}' 'got 2.5'
}
case_bucket_negative() {
    refused '{"zero_optimization": {"stage": 2, "reduce_bucket_size": -1}}' 'reduce_bucket_size: expected a whole number of at least 1'
}
case_duplicate_key() {
    refused "{\"zero_optimization\": {\"stage\": 2}, \"zero_optimization\": {\"stage\": 3}}" 'duplicate key "zero_optimization"'
}
case_over_one_mib() {
    { printf '{"zero_optimization": {"stage": 2}, "wandb": {"x": "'; head -c 1100000 /dev/zero | tr '\0' a; printf '"}}\n'; } > ds.json
    expect 3 "config files are limited to 1 MiB"
    run "$MEMEST" "$GOOD" --gpus 2 --deepspeed ds.json
}
case_keys_reordered() {
    # the order of the keys changes nothing
    ds '{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2, "bf16": {"enabled": true}, "zero_optimization": {"stage": 2, "overlap_comm": true, "reduce_bucket_size": 2e8}}'
    expect 0
    run "$MEMEST" "$GOOD" --gpus 2 --deepspeed ds.json
    save a.out
    ds '{"zero_optimization": {"reduce_bucket_size": 200000000, "overlap_comm": true, "stage": 2},
         "bf16": {"enabled": true},   "gradient_accumulation_steps": 2,
         "train_micro_batch_size_per_gpu": 4}'
    run "$MEMEST" "$GOOD" --gpus 2 --deepspeed ds.json
    same_output .out a.out
}
case_accum_with_pipeline() {
    # as --grad-accum with --pp: a pipeline's accumulation is its micro-batches
    ds '{"gradient_accumulation_steps": 4, "zero_optimization": {"stage": 1}}'
    expect 3 'gradient_accumulation_steps: as the options --grad-accum 4 --gpus 4 --pp 2: --grad-accum with --pp'
    run "$MEMEST" "$MODELS/hf/llama-2-7b.json" --seq 64 --gpus 4 --pp 2 --deepspeed ds.json
}
