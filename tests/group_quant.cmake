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

# NVFP4 weights (NVIDIA ModelOpt, as vLLM's ModelOptNvFp4LinearMethod loads
# them): tests/quant/llama-nvfp4.json, the tiny Llama of tests/hf/tiny/
# llama.json with quantization_config quant_method modelopt, quant_algo
# NVFP4, group_size 16, lm_head excluded. Each linear [out, in]: uint8 weight
# [out, in / 2], float8 weight_scale [out, in / 16], float32 weight_scale_2
# and input_scale [1]: q, o (64 x 64) 2048 + 256 + 8 = 2312 each, k, v (32 x
# 64) 1024 + 128 + 8 = 1160, gate, up (128 x 64) and down (64 x 128) 4096 + 512
# + 8 = 4616: a layer 20792, two 41584; the bfloat16 rest: embed_tokens and
# lm_head 2 * 128 * 64 * 2 = 32768, the five norms of 64: 640.
math(EXPR nv_bytes "2 * (2 * (2048 + 256 + 8) + 2 * (1024 + 128 + 8) + 3 * (4096 + 512 + 8)) + 2 * 128 * 64 * 2 + 5 * 64 * 2")
add_test(NAME quant.nvfp4.llama.bytes
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 "-DARGS=tests/quant/llama-nvfp4.json;--inference" "-DFIELD=memory;parameters"
                 -DWANT=${nv_bytes} -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/json_equals.cmake)
set_tests_properties(quant.nvfp4.llama.bytes PROPERTIES LABELS quant)
