# The Cohere templates (models/arch/cohere.json, cohere2.json on
# models/arch/lib/cohere.json) against independent figures
# (tests/tools/hf_figures_cohere.py, PyTorch 2.6 on the plain-PyTorch replica
# tests/tools/hf_models_cohere.py: tests/reference/hf_figures_cohere.json):
# the tiny configs' parameters and saved activation bytes, float32 and
# bfloat16, eager and SDPA (tests/hf/tiny_exact.cmake). cohere (use_qk_norm
# on: the per-head CohereLayerNorm) exactly in all four; cohere2 exactly under
# eager. Cohere2 under SDPA within 0.2 %: Cohere2Model builds the 4-D causal
# mask for SDPA too, and its global layer's kernel keeps the model's one mask
# (an expanded [S, S]: 1,024 bytes of 571,264 in float32, 512 of 350,848 in
# bfloat16), which memest counts as the forward's transient, not as saved (as
# Gemma 3's; the sliding layers' own masks are counted, layer_mask).
foreach(name cohere cohere2)
  foreach(dtype float32 bfloat16)
    foreach(attn eager sdpa)
      set(_tol "")
      if(name STREQUAL "cohere2" AND attn STREQUAL "sdpa")
        set(_tol -DTOLERANCE_PPM=2000)
      endif()
      add_test(NAME hf_cohere.tiny_exact.${name}.${dtype}.${attn}
               COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DNAME=${name}
                       -DDTYPE=${dtype} -DATTN=${attn} ${_tol} -DREF=hf_figures_cohere.json
                       -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/tiny_exact.cmake)
      set_tests_properties(hf_cohere.tiny_exact.${name}.${dtype}.${attn} PROPERTIES LABELS hf)
    endforeach()
  endforeach()
endforeach()

# Parameter counts of the real models (models/hf/: the hub's config.json as
# published, written from memory: the hub could not be reached from here),
# against the count the publisher states, the arithmetic from the config and
# the modeling code written here (tests/hf/published_params.cmake).
# CohereForAI/c4ai-command-r-v01: "35B params" (safetensors total
# 34,980,831,232). V 256000, H 8192, L 40, 64 heads and 64 kv heads of 128
# (8192 / 64), I 22528, no biases, use_qk_norm false; per layer q, k, v, o
# 4*8192*8192 + gate/up/down 3*8192*22528 + one input_layernorm 8192 (no
# bias; the MLP reads it too: no post_attention_layernorm)
# = 822,091,776: 256000*8192 (lm_head tied) + 40*822091776 + 8192 (final
# norm). Buffers: inv_freq [64].
math(EXPR cr_layer "4 * 8192 * 8192 + 3 * 8192 * 22528 + 8192")
math(EXPR cr_total "256000 * 8192 + 40 * ${cr_layer} + 8192")
math(EXPR cr_b "(${cr_total} + 500000000) / 1000000000")
if(NOT cr_total EQUAL 34980831232 OR NOT cr_b EQUAL 35)
  message(FATAL_ERROR "command-r-v01 arithmetic: ${cr_total}: not the published 35B")
endif()
# CohereForAI/c4ai-command-r-plus: "104B params" (safetensors total
# 103,810,674,688). V 256000, H 12288, L 64, 96 heads and 8 kv heads of 128,
# I 33792, use_qk_norm true; per layer q 12288*12288 + k, v 12288*1024 each
# + o 12288*12288 + 3*12288*33792 + input_layernorm 12288 + q_norm [96, 128]
# + k_norm [8, 128] = 1,572,889,600: 256000*12288 (tied) + 64*1572889600
# + 12288. Buffers: inv_freq [64].
math(EXPR crp_layer "2 * 12288 * 12288 + 2 * 12288 * 1024 + 3 * 12288 * 33792 + 12288 + 96 * 128 + 8 * 128")
math(EXPR crp_total "256000 * 12288 + 64 * ${crp_layer} + 12288")
math(EXPR crp_b "(${crp_total} + 500000000) / 1000000000")
if(NOT crp_total EQUAL 103810674688 OR NOT crp_b EQUAL 104)
  message(FATAL_ERROR "command-r-plus arithmetic: ${crp_total}: not the published 104B")
endif()
# CohereForAI/c4ai-command-r7b-12-2024: "8.03B params" (safetensors total
# 8,028,033,024). V 256000, H 4096, L 32 (24 sliding, 8 global: the pattern
# 4), 32 heads and 8 kv heads of 128, I 14336; per layer q 4096*4096 + k, v
# 4096*1024 each + o 4096*4096 + 3*4096*14336 + 4096 = 218,107,904:
# 256000*4096 (tied) + 32*218107904 + 4096 (the NoPE layers have no
# parameter of their own). Buffers: inv_freq [64].
math(EXPR r7_layer "2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 4096")
math(EXPR r7_total "256000 * 4096 + 32 * ${r7_layer} + 4096")
math(EXPR r7_c "(${r7_total} + 5000000) / 10000000")
if(NOT r7_total EQUAL 8028033024 OR NOT r7_c EQUAL 803)
  message(FATAL_ERROR "command-r7b arithmetic: ${r7_total}: not the published 8.03B")
endif()
foreach(entry "c4ai-command-r-v01=${cr_total}" "c4ai-command-r-plus=${crp_total}"
              "c4ai-command-r7b-12-2024=${r7_total}")
  string(REPLACE "=" ";" kv ${entry})
  list(GET kv 0 config)
  list(GET kv 1 want)
  add_test(NAME hf_cohere.params.${config}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                   -DCONFIG=models/hf/${config}.json -DWANT=${want} -DWANT_BUF=64
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/published_params.cmake)
  set_tests_properties(hf_cohere.params.${config} PROPERTIES LABELS hf)
endforeach()

# Step peaks (memory.peak_tensors) of the tiny configs against PyTorch 2.6
# (tests/tools/hf_peak_cohere.py: hf_peak.py's step and measurement on the
# replicas, tests/reference/hf_peaks_cohere.json), within 3 %
# (tests/hf/peaks.cmake), SGD and Adam (foreach) each: within 4 bytes but for
# three. The float32 SDPA SGD cases peak in the first SDPA backward, where
# memest is 508 bytes higher (0.06 %, 0.04 %): the memory-efficient kernel's
# delta float32 [B, H, L] (512 bytes), which CUDA allocates and the CPU run
# that stands in for it has not (hf_peak.py models none of that kernel's
# backward buffers); cohere2's bfloat16 SDPA SGD case 516 bytes lower
# (0.07 %). (There the fused kernels' gradients of the repeat_kv'd k and v,
# [B, Hq, S, D], are live: src/ops/ops_sdpa.c, repeated_kv_grads; without
# them memest was 7,684 bytes, 0.9 %, low.)
foreach(case RANGE 11)
  add_test(NAME hf_cohere.peaks.${case}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCASE=${case}
                   -DREF=hf_peaks_cohere.json -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/peaks.cmake)
  set_tests_properties(hf_cohere.peaks.${case} PROPERTIES LABELS hf)
endforeach()
