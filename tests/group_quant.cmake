# Quantised weights against published measurements: bigcode/octocoder
# (tests/quant/octocoder.json) generating from a short prompt, as
# transformers' docs/source/en/llm_tutorial_optimization.md measured it on
# an A100 (tests/reference/gpu-measurements.md rows I1 and I2:
# max_memory_allocated() after the pipeline ran; tests/quant/i2.cmake).
foreach(case bf16 fp4 int8)
  add_test(NAME quant.i2.${case}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                   -DCASE=${case} -P ${CMAKE_CURRENT_SOURCE_DIR}/quant/i2.cmake)
  set_tests_properties(quant.i2.${case} PROPERTIES LABELS quant)
endforeach()

# The report of a quantised model: the header line and the JSON "weights"
# object (tests/quant/report.cmake).
add_test(NAME quant.report
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/quant/report.cmake)
set_tests_properties(quant.report PROPERTIES LABELS quant)

# FP8 weights as DeepSeek-V3's checkpoint is published (tests/quant/
# deepseek-v3-fp8.json: the hub's config.json, quantization_config
# quant_method fp8, weight_block_size [128, 128]): transformers' FP8Linear in
# place of every nn.Linear but lm_head (the router's gate is a parameter, not
# a linear): 61 * 5 attention projections (q_a, q_b, kv_a_with_mqa, kv_b, o)
# + 3 dense MLPs * 3 + 58 MoE layers * (256 + 1 shared) * 3 = 45,032 layers,
# each float8 [out, in] (1 byte) and a float32 weight_scale_inv
# [ceil(out / 128), ceil(in / 128)]; the rest bfloat16: the embedding and the
# head 2 * 129280 * 7168, per layer 2 norms of 7168, q_a_layernorm 1536 and
# kv_a_layernorm 512, each MoE layer's gate 256 * 7168, the final norm.
set(_f8 "")
foreach(l "1536;7168" "24576;1536" "576;7168" "32768;512" "7168;16384" "18432;7168" "7168;18432"
          "2048;7168" "7168;2048")
  list(GET l 0 o)
  list(GET l 1 i)
  math(EXPR b "${o} * ${i} + 4 * ((${o} + 127) / 128) * ((${i} + 127) / 128)")
  list(APPEND _f8 ${b})
endforeach()
list(GET _f8 0 a0)
list(GET _f8 1 a1)
list(GET _f8 2 a2)
list(GET _f8 3 a3)
list(GET _f8 4 a4)
list(GET _f8 5 d0)
list(GET _f8 6 d1)
list(GET _f8 7 e0)
list(GET _f8 8 e1)
math(EXPR f8_bytes "61 * (${a0} + ${a1} + ${a2} + ${a3} + ${a4}) + 3 * (2 * ${d0} + ${d1}) + 58 * 257 * (2 * ${e0} + ${e1}) + 2 * (2 * 129280 * 7168 + 61 * (2 * 7168 + 1536 + 512) + 58 * 256 * 7168 + 7168)")
add_test(NAME quant.fp8.deepseek_v3.bytes
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 "-DARGS=tests/quant/deepseek-v3-fp8.json;--dtype;bf16" "-DFIELD=memory;parameters"
                 -DWANT=${f8_bytes} -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/json_equals.cmake)
add_test(NAME quant.fp8.deepseek_v3.layers
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 "-DARGS=tests/quant/deepseek-v3-fp8.json;--dtype;bf16" "-DFIELD=weights;layers"
                 -DWANT=45032 -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/json_equals.cmake)
set_tests_properties(quant.fp8.deepseek_v3.bytes quant.fp8.deepseek_v3.layers PROPERTIES LABELS quant)
