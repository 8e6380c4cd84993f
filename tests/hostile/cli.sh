# Command lines that cannot mean what they say (class 7 of issue 30): an
# option given where it changes nothing (without its mode), a layout that
# cannot exist, a model variable that a several-GPU option owns set or
# swept alone, a variable set twice, a search that stops short of the card
# without a word. Each is refused (exit 2, a message saying what is
# needed) or, for a search, said on standard error. Sourced by run.sh.

MG=$SRC/tests/dist/megatron_gpt.json
TINY=(--set seq_len=32 --set hidden=64 --set heads=4 --set vocab=128)
LLAMA=$HF/tiny/llama.json

# refused FRAGMENT ARGS...: memest ARGS is a usage error saying FRAGMENT
refused() {
    local frag=$1
    shift
    expect 2 "$frag"
    run "$MEMEST" "$@"
}

case_new_tokens_without_generate() {
    # as --context is refused without --generate, so is --new-tokens
    refused "--new-tokens is for memest generate (--generate)" "$GOOD" --new-tokens 64
    refused "--new-tokens is for memest generate (--generate)" "$GOOD" --new-tokens 64 --batch 2
}

case_gpu_util_without_kv_block() {
    refused "--gpu-util is vLLM's: it needs --kv-block B" \
        "$GOOD" --gpu-util 0.8
    refused "--gpu-util is vLLM's: it needs --kv-block B (vLLM's paged cache)" \
        "$LLAMA" --generate --context 16 --mem 8GiB --gpu-util 0.8
}

case_device_without_probe() {
    refused "--device needs --probe" "$GOOD" --device 1
}

case_headroom_without_card() {
    refused "--headroom needs a target card: --gpu NAME or --mem SIZE" \
        "$GOOD" --headroom 10
    expect 0 " of 1.0 GiB ("   # the card --mem gives (the figures are checked elsewhere)
    run "$MEMEST" "$GOOD" --headroom 10 --mem 1GiB
}

case_mfu_without_preset() {
    refused "--mfu needs a card preset's peak FLOP/s" "$GOOD" --mfu 0.5
    refused "--gpu NAME (--mem gives no time estimate)" "$GOOD" --mfu 0.5 --mem 8GiB
    expect 0 "roofline at 50% of the fp32 peak"
    run "$MEMEST" "$GOOD" --mfu 0.5 --gpu a100-40gb
}

case_pipeline_options_without_pp() {
    local o
    for o in "--micro-batches 4" "--schedule 1f1b" "--schedule interleaved" "--virtual-stages 2"; do
        # shellcheck disable=SC2086
        refused "${o%% *} is the pipeline's: it needs --pp 2 or more" "$MG" "${TINY[@]}" --gpus 2 $o
    done
    refused "--virtual-stages needs --schedule interleaved" "$MG" "${TINY[@]}" --gpus 2 --pp 2 \
        --virtual-stages 1
}

case_interleaved_one_chunk() {
    # Megatron-LM interleaves only with more than one model chunk per stage
    refused "--schedule interleaved needs --virtual-stages V of 2 or more" \
        "$MG" "${TINY[@]}" --set layers=4 --gpus 2 --pp 2 --schedule interleaved
}

case_hsdp_partial_node() {
    # hybrid sharding needs whole nodes: the example, and the default
    # of 8 GPUs per node beyond 8 GPUs
    refused "4 GPUs are not whole nodes of 3; give --gpus a multiple of --gpus-per-node" \
        "$GOOD" --gpus 4 --gpus-per-node 3 --strategy hsdp
    refused "12 GPUs are not whole nodes of 8 (--gpus-per-node's default)" \
        "$GOOD" --gpus 12 --strategy hsdp
    refused "4 GPUs are not whole nodes of 8" "$GOOD" --gpus 4 --gpus-per-node 8 --strategy hsdp
    expect 0 "PyTorch FSDP HYBRID_SHARD; data-parallel 16, sharded over 8 per node"
    run "$MEMEST" "$GOOD" --gpus 16 --strategy hsdp
}

case_hsdp_from_config() {
    # the layout of an FSDP config (HYBRID_SHARD, its world size) meets the
    # same check once the file is read: the file's layout (exit 3)
    printf '%s\n' 'distributed_type: FSDP' 'fsdp_config:' '  fsdp_sharding_strategy: HYBRID_SHARD' \
        'num_processes: 4' > hybrid.yaml
    expect 3 "hybrid.yaml: its layout, as the options --gpus 4 --strategy hsdp: --strategy hsdp shards within a node and replicates across nodes: 4 GPUs are not whole nodes of 3"
    notes_ok
    run "$MEMEST" "$GOOD" --fsdp-config hybrid.yaml --gpus-per-node 3
}

case_hsdp_node_not_model_parallel() {
    refused "a node of 8 GPUs (--gpus-per-node's default) holds no whole model-parallel group of --tp x --pp x --cp = 16" \
        "$MG" "${TINY[@]}" --set heads=16 --gpus 16 --tp 16 --strategy hsdp
}

case_gpus_per_node_without_hsdp() {
    refused "--gpus-per-node sets the shard group of --strategy hsdp (and the nodes a comparison of cards counts): with --strategy ddp it changes nothing" \
        "$GOOD" --gpus 16 --gpus-per-node 8
    refused "with --strategy zero3 it changes nothing" "$GOOD" --gpus 16 --gpus-per-node 8 --strategy zero3
    # a comparison of cards counts the nodes
    expect 0 "16 GPUs (2 nodes of 8)"
    run "$MEMEST" "$MG" --seq 32 --gpu t4,l4 --gpus 16 --gpus-per-node 8
}

case_set_owned_variable() {
    # --set tp=2 on one GPU would halve every layer with no layout behind it
    refused "--set tp=2: tp is the tensor-parallel size, which --tp T (with --gpus N) sets" \
        "$MG" "${TINY[@]}" --set tp=2
    refused "--set sp=2: sp is the sequence-parallel size, which --sequence-parallel (with --tp T) sets" \
        "$MG" "${TINY[@]}" --gpus 2 --tp 2 --set sp=2
    refused "--set ep=2: ep is the expert-parallel size" "$MG" "${TINY[@]}" --set ep=2
}

case_sweep_owned_variable() {
    refused "--sweep-var tp: tp is the tensor-parallel size, which --tp T (with --gpus N) sets, with the layout that goes with it: it cannot be swept alone" \
        "$MG" "${TINY[@]}" --sweep-var tp=1,2
    refused "--sweep-var sp: sp is the sequence-parallel size" "$MG" "${TINY[@]}" --sweep-var sp=1,2
}

case_training_options_with_inference() {
    local o
    for o in "--optim sgd" "--momentum 0.9 --optim sgd" "--amsgrad" "--optim-impl for-loop" \
        "--first-step" "--zero-grad zeros" "--grad-accum 2" "--checkpoint" "--loss mseloss" \
        "--fused linear-ce" "--lora 4 --lora-targets fc --lora-dropout 0.1"; do
        # shellcheck disable=SC2086
        refused "is the training step's: --inference runs no training step" "$GOOD" --inference $o
    done
    # every fused kernel that applies: "all" asks for none in particular
    expect 0 "Peak of a no-grad forward pass"
    run "$MEMEST" "$GOOD" --inference --fused all
}

case_training_options_with_generate() {
    local o
    for o in "--optim sgd" "--grad-accum 4" "--checkpoint" "--loss mseloss" "--zero-grad zeros"; do
        # shellcheck disable=SC2086
        refused "is the training step's: --generate runs no training step" \
            "$LLAMA" --generate --context 16 $o
    done
}

case_searched_value_given() {
    # a search replaces the value it searches: giving it means nothing
    refused "--max-context searches the prompt's length: it excludes --context" \
        "$LLAMA" --generate --context 16 --max-context --mem 1GiB
    refused "--max-batch searches the batch size: it excludes --batch" \
        "$LLAMA" --generate --context 16 --batch 4 --max-batch --mem 1GiB
    refused "--max-batch searches the batch size: it excludes --batch" \
        "$GOOD" --batch 4 --max-batch --mem 1GiB
    refused "--sweep gives the batch sizes: it excludes --batch" "$GOOD" --batch 4 --sweep 1,2
    # --max-context needs no --context
    expect 0 "largest context that fits"
    run "$MEMEST" "$LLAMA" --generate --max-context --mem 1GiB
}

case_variable_set_twice() {
    refused "width is set twice, by --set width=4 and by --set width=8: give it once" \
        "$GOOD" --set width=4 --set width=8
    refused "seq_len is set twice, by --seq 16 and by --set seq_len=32" \
        "$MG" --seq 16 --set seq_len=32
    refused "--sweep-var width gives the variable's values: it excludes --set width=2" \
        "$GOOD" --sweep-var width=4,8 --set width=2
    refused "--sweep-var seq_len with --cp" "$MG" "${TINY[@]}" --gpus 2 --cp 2 --sweep-var seq_len=32,64
}

case_grad_accum_with_pp() {
    refused "--grad-accum with --pp: a pipeline accumulates the gradients of its micro-batches; give --micro-batches M" \
        "$MG" "${TINY[@]}" --gpus 2 --pp 2 --grad-accum 4
}

case_bucket_view_after_config() {
    # the engine a DeepSpeed config gives (ZeRO-2) is no DDP: the file's
    # layout (exit 3) refuses the option
    expect 3 "its layout, as the options --gpus 8 --strategy zero2: --ddp-bucket-view needs --strategy ddp"
    notes_ok
    run "$MEMEST" "$GOOD" --gpus 8 --deepspeed "$SRC/tests/dist/ds_zero2_bf16.json" --ddp-bucket-view
}

case_momentum_zero_with_adam() {
    # given, even at its default value, to an optimizer without momentum
    refused "--momentum applies to sgd and rmsprop, not adam" "$GOOD" --momentum 0
}

case_generate_search_top_said() {
    # every batch up to the search's top (2^40) fits: said, not silent
    expect 0 "--max-batch searched up to 1099511627776 (2^40) and every batch fits"
    run "$MEMEST" "$LLAMA" --generate --context 1 --new-tokens 1 --max-batch --mem 1000000TiB
    grep -q '^largest batch that fits: 1099511627776' .out || fail "not the search's top"
    # in bf16 (flash attention, linear in the context): in float32 the
    # prefill's SDPA with enable_gqa (transformers 5.x) takes the math
    # kernel, quadratic in the context, and 2^40 tokens do not fit
    expect 0 "--max-context searched up to 1099511627776 (2^40) and every context fits"
    run "$MEMEST" "$LLAMA" --generate --new-tokens 1 --max-context --mem 1000000TiB --dtype bf16
}

case_max_batch_top_said() {
    expect 0 "--max-batch searched up to 9007199254740991 (2^53-1, memest's largest batch)"
    run "$MEMEST" "$GOOD" --max-batch --mem 1100000TiB --overhead 0 --inference
}

case_sweep_var_keeps_layout() {
    # a variable sweep rebuilds the model with the layout's variables (--tp,
    # --cp's share of --seq) and cuts the pipeline stages again: each row is
    # the estimate of the same command with --set
    local args row one
    for args in "--gpus 2 --tp 2 --seq 64" "--gpus 2 --cp 2 --seq 64" "--gpus 2 --pp 2 --seq 32"; do
        expect 0 '"rows"'
        # shellcheck disable=SC2086
        run "$MEMEST" "$MG" --set hidden=64 --set heads=4 --set vocab=128 $args \
            --sweep-var layers=2,4 --json
        row=$(json_field .out rows.1.peak)
        expect 0 '"memory"'
        # shellcheck disable=SC2086
        run "$MEMEST" "$MG" --set hidden=64 --set heads=4 --set vocab=128 $args --set layers=4 --json
        one=$(json_field .out memory.peak)
        [ "$row" = "$one" ] || fail "$args: the row at layers=4 peaks at $row, the command at $one"
    done
}

case_attention_without_sdpa() {
    # the kernel of scaled_dot_product_attention, on a model without one
    refused "--attention flash chooses the kernel of scaled_dot_product_attention" \
        "$MODELS/resnet50.json" --attention flash
    # eager is what a model without SDPA runs: true of it
    expect 0
    run "$MEMEST" "$MODELS/resnet50.json" --attention eager
}

case_fused_without_kernel() {
    refused "--fused rmsnorm: no op of the model runs that kernel" "$MODELS/resnet50.json" --fused rmsnorm
    refused "--fused rotary: no op of the model runs that kernel" "$MODELS/gpt2.json" --fused rotary
    # all: every kernel that applies, none where none does
    expect 0
    run "$MEMEST" "$MODELS/resnet50.json" --fused all
}

case_moe_imbalance_dense() {
    refused "--moe-imbalance routes the tokens of MoE experts, which the model has none of" \
        "$LLAMA" --moe-imbalance 2
}

case_weights_without_linear() {
    refused "--weights nf4: the model has no linear layer the library would replace" \
        "$MODELS/resnet50.json" --weights nf4
}

case_unused_option_in_a_stage() {
    # the check is the whole model's: --fused rmsnorm applies in every stage
    expect 0
    run "$MEMEST" "$MODELS/hf/llama-2-7b.json" --seq 64 --gpus 4 --pp 2 --fused rmsnorm
    refused "--attention cudnn chooses the kernel" "$MG" "${TINY[@]}" --gpus 4 --pp 2 --attention cudnn
}
