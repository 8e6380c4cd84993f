# Several GPUs (README "Several GPUs"): the model states per GPU of each
# engine against the ZeRO paper, DeepSpeed's estimator and hand
# calculations from the engines' code, and --deepspeed's config files.
foreach(t zero_paper llama_7b ds_config)
  add_test(NAME dist.${t}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/dist/${t}.cmake)
  set_tests_properties(dist.${t} PROPERTIES LABELS dist)
endforeach()
