# The sparse-MoE architectures mixtral and qwen2_moe (models/arch/) and the MoE
# ops against independent figures (tests/hf/check_moe.cmake):
#  - parameter counts of the shipped example configs (models/hf/): the published
#    figure, written here, and the model built on torch.device("meta") from
#    tests/tools/hf_models_moe.py (tests/reference/hf_figures_moe.json), exactly;
#    tests/tools/hf_figures_moe.py also checks both against the arithmetic
#    written out in it;
#  - bytes saved for backward of the tiny configs (tests/hf/tiny/mixtral.json,
#    qwen2_moe.json) in float32 and bfloat16, eager and SDPA attention, with the
#    routing forced to the balanced split memest assumes: PyTorch 2.6 measured by
#    tests/tools/hf_figures_moe.py, CUDA-corrected, exactly;
#  - tiny mixtral with --moe-imbalance and PyTorch's routing forced to that split:
#    the saved bytes and the tokens of each expert;
#    (tiny deepseek_v3, whose v head dim differs from q's: PyTorch's CPU SDPA runs
#    the math kernel, compared with memest's --attention math; its router is
#    moe_router's scoring "sigmoid");
#    (tiny qwen3_moe: Qwen3's attention with q/k norms, a dense layer 0 and a
#    sparse layer 1, decoder_sparse_step 2, 4 experts, top 2, renormalised,
#    no shared expert; transformers v4.51.0's per-expert loop);
#  - MixtralSparseMoeBlock alone (tests/hf/moe_block.json): exactly;
#  - DeepSeek-V3 (tests/hf/published/deepseek-v3.json): the parameters and
#    buffer elements of the model built on torch.device("meta"), exactly (the
#    published figures and their arithmetic: tests/group_hf_published.cmake).
set(_hf_moe_params
  # mistralai/Mixtral-8x7B-v0.1: 2*32000*4096 + 32*(4096*(4096 + 2*1024 + 4096)
  # + 4096*8 + 8*3*4096*14336 + 2*4096) + 4096
  "mixtral-8x7b=46702792704"
  # Qwen/Qwen1.5-MoE-A2.7B ("14.3B parameters"): 2*151936*2048 + 24*(3*(2048*2048
  # + 2048) + 2048*2048 + 2048*60 + 60*3*2048*1408 + 3*2048*5632 + 2048 + 2*2048) + 2048
  "qwen1.5-moe-a2.7b=14315784192")
foreach(entry ${_hf_moe_params})
  string(REPLACE "=" ";" kv ${entry})
  list(GET kv 0 config)
  list(GET kv 1 want)
  add_test(NAME hf_moe.params.${config}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCHECK=params
                   -DCONFIG=${config} -DWANT=${want} -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/check_moe.cmake)
  set_tests_properties(hf_moe.params.${config} PROPERTIES LABELS hf)
endforeach()

foreach(config mixtral qwen2_moe qwen3_moe deepseek_v3 deepseek_v3_lite)
  foreach(dtype float32 bfloat16)
    foreach(attn eager sdpa)
      add_test(NAME hf_moe.activations.${config}_${dtype}_${attn}
               COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCHECK=tiny
                       -DCASE=${config}/${dtype}/${attn} -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/check_moe.cmake)
      set_tests_properties(hf_moe.activations.${config}_${dtype}_${attn} PROPERTIES LABELS hf)
    endforeach()
  endforeach()
endforeach()

add_test(NAME hf_moe.imbalance
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCHECK=imbalance
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/check_moe.cmake)
set_tests_properties(hf_moe.imbalance PROPERTIES LABELS hf)

foreach(dtype float32 bfloat16)
  add_test(NAME hf_moe.block.${dtype}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCHECK=block
                   -DCASE=${dtype} -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/check_moe.cmake)
  set_tests_properties(hf_moe.block.${dtype} PROPERTIES LABELS hf)
endforeach()

add_test(NAME hf_moe.params.deepseek-v3
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCHECK=published
                 -DCONFIG=deepseek-v3 -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/check_moe.cmake)
set_tests_properties(hf_moe.params.deepseek-v3 PROPERTIES LABELS hf)
