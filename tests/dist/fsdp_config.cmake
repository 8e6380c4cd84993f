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
function(run name)
  cmake_parse_arguments(W "" "" "ARGS;WANT" ${ARGN})
  execute_process(COMMAND ${MEMEST} models/hf/llama-2-7b.json --seq 128 ${W_ARGS} --json
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: exit ${rc}: ${err}")
  endif()
  while(W_WANT)
    list(POP_FRONT W_WANT path want)
    string(REPLACE "." ";" keys "${path}")
    string(JSON got GET "${out}" ${keys})
    if(NOT got STREQUAL want)
      message(FATAL_ERROR "${name}: ${path} is ${got}, expected ${want}")
    endif()
  endwhile()
endfunction()
run(accelerate ARGS --fsdp-config tests/dist/accelerate_fsdp.yaml
    WANT dtype bf16 parallel.gpus 8 parallel.strategy fsdp parallel.engine_buffers.units 32
         parallel.model_states.total 13476831232)
run(trainer ARGS --gpus 8 --dtype bf16 --fsdp-config tests/dist/trainer_fsdp.json
    WANT step.checkpoint ON parallel.offload optimizer+params parallel.model_states.total 0
         parallel.host_bytes 13476831232)
