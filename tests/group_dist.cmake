# Several GPUs (doc/several-gpus.md): the model states per GPU of each
# engine against the ZeRO paper, DeepSpeed's estimator and hand
# calculations from the engines' code, --deepspeed's config files, the
# activations per layer under tensor parallelism against Korthikanti et al.
# 2022, Megatron-LM's theoretical memory formula, and pipeline stages.
foreach(t zero_paper llama_7b ds_config sub_groups korthikanti megatron_formula pipeline context expert fsdp_config fsdp_lora offload_time advise)
  add_test(NAME dist.${t}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                   -DWORK=${CMAKE_CURRENT_BINARY_DIR} -P ${CMAKE_CURRENT_SOURCE_DIR}/dist/${t}.cmake)
  set_tests_properties(dist.${t} PROPERTIES LABELS dist)
endforeach()
