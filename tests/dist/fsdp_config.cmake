# fsdp_config.cmake - --fsdp-config reads the files users have, by hand:
#   accelerate_fsdp.yaml (what `accelerate config` writes for FSDP): 8
#     processes, FULL_SHARD, wrap by LlamaDecoderLayer, bf16 mixed precision:
#     Llama-2-7B on 8 GPUs in 32 units and the root, fp32 shards, 16 x
#     842,301,952 = 13,476,831,232 bytes of model states (llama_7b.cmake);
#   trainer_fsdp.json (the Trainer's fsdp_config): offload_params and
#     activation_checkpointing: nothing of the model states on the device, the
#     same 13,476,831,232 bytes on the host, checkpointing on (cmake reads
#     JSON true as ON).
#   cmake -DMEMEST=... -DSRC=<source dir> -P fsdp_config.cmake
include(${CMAKE_CURRENT_LIST_DIR}/expect_json.cmake)
expect_json(accelerate ARGS --fsdp-config tests/dist/accelerate_fsdp.yaml
    WANT dtype bf16 parallel.gpus 8 parallel.strategy fsdp parallel.engine_buffers.units 32
         parallel.model_states.total 13476831232)
expect_json(trainer ARGS --gpus 8 --dtype bf16 --fsdp-config tests/dist/trainer_fsdp.json
    WANT step.checkpoint ON parallel.offload optimizer+params parallel.model_states.total 0
         parallel.host_bytes 13476831232)
