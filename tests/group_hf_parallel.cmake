# The parallel-layer templates built on models/arch/lib/parallel.json (phi,
# falcon) against independent figures (tests/tools/hf_figures_parallel.py,
# PyTorch 2.6 on the plain-PyTorch replica tests/tools/hf_models_parallel.py:
# tests/reference/hf_figures_parallel.json): the tiny configs' parameters and
# saved activation bytes, exactly, float32 and bfloat16, eager and SDPA
# (tests/hf/tiny_exact.cmake). tests/hf/tiny/falcon.json is Falcon-7B's layout
# (multi_query, parallel_attn, one input_layernorm), falcon_new.json
# Falcon-40B's (new_decoder_architecture, num_kv_heads 2, ln_attn and ln_mlp)
# with bias and ffn_hidden_size.
foreach(name phi phi_qk falcon falcon_new falcon_seq)
  foreach(dtype float32 bfloat16)
    foreach(attn eager sdpa)
      add_test(NAME hf_parallel.tiny_exact.${name}.${dtype}.${attn}
               COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DNAME=${name}
                       -DDTYPE=${dtype} -DATTN=${attn} -DREF=hf_figures_parallel.json
                       -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/tiny_exact.cmake)
      set_tests_properties(hf_parallel.tiny_exact.${name}.${dtype}.${attn} PROPERTIES LABELS hf)
    endforeach()
  endforeach()
endforeach()
# The real models' parameter counts (tests/hf/published_params.cmake), their
# config.json written from memory of the hub's (not checked against it here).
# microsoft/phi-2 (models/hf/phi-2.json): "2.7B"; its model.safetensors holds
# 2,779,683,840. V 51200, H 2560, L 32, 32 heads of 80, I 10240; per layer
# q/k/v_proj and dense 4*(2560*2560 + 2560) + fc1 2560*10240 + 10240 + fc2
# 10240*2560 + 2560 + input_layernorm 2*2560 = 78,671,360: 51200*2560 +
# 32*78671360 + final_layernorm 2*2560 + lm_head 2560*51200 + 51200 (its bias)
# = 2,779,683,840. Buffers: inv_freq [16] (int(80 * 0.4) / 2).
math(EXPR phi2 "51200 * 2560 + 32 * (4 * (2560 * 2560 + 2560) + 2560 * 10240 + 10240 + 10240 * 2560 + 2560 + 2 * 2560) + 2 * 2560 + 2560 * 51200 + 51200")
if(NOT phi2 EQUAL 2779683840)
  message(FATAL_ERROR "phi-2 arithmetic: ${phi2}, not the safetensors total 2,779,683,840")
endif()
# microsoft/phi-1_5 (models/hf/phi-1_5.json): its card's "1.3B"; its
# model.safetensors holds 1,418,270,720. V 51200, H 2048, L 24, 32 heads of
# 64, I 8192; per layer 4*(2048*2048 + 2048) + 2048*8192 + 8192 + 8192*2048 +
# 2048 + 2*2048 = 50,354,176: 51200*2048 + 24*50354176 + 2*2048 + 2048*51200
# + 51200. Buffers: inv_freq [16] (int(64 * 0.5) / 2).
math(EXPR phi15 "51200 * 2048 + 24 * (4 * (2048 * 2048 + 2048) + 2048 * 8192 + 8192 + 8192 * 2048 + 2048 + 2 * 2048) + 2 * 2048 + 2048 * 51200 + 51200")
if(NOT phi15 EQUAL 1418270720)
  message(FATAL_ERROR "phi-1_5 arithmetic: ${phi15}, not the safetensors total 1,418,270,720")
endif()
# tiiuae/falcon-7b (models/hf/falcon-7b.json): V 65024, H 4544, L 32, 71
# query heads of 64 and one key/value head (multi_query), no biases, one
# input_layernorm per layer; per layer query_key_value 4544*(4544 + 2*64) +
# dense 4544*4544 + dense_h_to_4h and dense_4h_to_h 2*4544*18176 + 2*4544 =
# 207,070,080: 65024*4544 (lm_head tied) + 32*207070080 + ln_f 2*4544 =
# 6,921,720,704. The hub's "7.22B" is the safetensors total, which counts
# lm_head.weight, stored beside word_embeddings.weight, a second time
# (+ 65024*4544 = 7,217,189,760). Buffers: inv_freq [32] of the model and of
# each layer's FalconAttention.rotary_emb: 33*32.
math(EXPR falcon7 "65024 * 4544 + 32 * (4544 * (4544 + 2 * 64) + 4544 * 4544 + 2 * 4544 * 18176 + 2 * 4544) + 2 * 4544")
math(EXPR falcon7_hub "(${falcon7} + 65024 * 4544 + 5000000) / 10000000")
if(NOT falcon7 EQUAL 6921720704 OR NOT falcon7_hub EQUAL 722)
  message(FATAL_ERROR "falcon-7b arithmetic: ${falcon7}, not the hub's 7.22B with the stored lm_head")
endif()
# tiiuae/falcon-40b (models/hf/falcon-40b.json): V 65024, H 8192, L 60, 128
# query heads of 64 in 8 groups (new_decoder_architecture, num_kv_heads 8), no
# biases, ln_attn and ln_mlp per layer; per layer query_key_value
# 8192*(128 + 2*8)*64 + dense 8192*8192 + 2*8192*32768 + 4*8192 =
# 679,510,016: 65024*8192 (tied) + 60*679510016 + 2*8192 = 41,303,293,952;
# the hub's "41.8B" with the stored lm_head (+ 65024*8192 = 41,835,970,560).
# Buffers: 61*32.
math(EXPR falcon40 "65024 * 8192 + 60 * (8192 * (128 + 2 * 8) * 64 + 8192 * 8192 + 2 * 8192 * 32768 + 4 * 8192) + 2 * 8192")
math(EXPR falcon40_hub "(${falcon40} + 65024 * 8192 + 50000000) / 100000000")
if(NOT falcon40 EQUAL 41303293952 OR NOT falcon40_hub EQUAL 418)
  message(FATAL_ERROR "falcon-40b arithmetic: ${falcon40}, not the hub's 41.8B with the stored lm_head")
endif()
foreach(entry "phi-2=${phi2}=16" "phi-1_5=${phi15}=16" "falcon-7b=${falcon7}=1056" "falcon-40b=${falcon40}=1952")
  string(REPLACE "=" ";" kv ${entry})
  list(GET kv 0 config)
  list(GET kv 1 want)
  list(GET kv 2 want_buf)
  add_test(NAME hf_parallel.params.${config}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                   -DCONFIG=models/hf/${config}.json -DWANT=${want} -DWANT_BUF=${want_buf}
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/published_params.cmake)
  set_tests_properties(hf_parallel.params.${config} PROPERTIES LABELS hf)
endforeach()
# Falcon-RW's ALiBi attention (alibi=true) is refused by a check of
# models/arch/falcon.json naming the key (tests/hf/errors/falcon_alibi.json:
# falcon-7b's config with alibi true).
add_test(NAME hf_parallel.refuse.falcon_alibi
         COMMAND $<TARGET_FILE:memest> tests/hf/errors/falcon_alibi.json --batch 1
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(hf_parallel.refuse.falcon_alibi PROPERTIES LABELS hf
                     PASS_REGULAR_EXPRESSION "the config's alibi=true: alibi: ALiBi attention \\(alibi=true, Falcon-RW\\) is not modelled")

# Step peaks (memory.peak_tensors) of phi, falcon (the 40B layout) and
# llama4_text against PyTorch 2.6 (tests/tools/hf_peak_parallel.py on the
# replicas, tests/reference/hf_peaks_parallel.json), SGD and Adam, eager
# float32 and flash bfloat16 (llama4_text: eager and SDPA float32): all 12
# within 0.17 % (peaks.cmake allows 3 %).
foreach(case RANGE 0 11)
  add_test(NAME hf_parallel.peaks.${case}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCASE=${case}
                   -DREF=hf_peaks_parallel.json -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/peaks.cmake)
  set_tests_properties(hf_parallel.peaks.${case} PROPERTIES LABELS hf)
endforeach()
