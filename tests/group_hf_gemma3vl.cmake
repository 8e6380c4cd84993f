# Gemma3ForConditionalGeneration (models/arch/gemma3.json: the SigLIP vision
# tower of models/arch/lib/siglip.json, the multimodal projector, the Gemma 3
# text model of gemma3_text.json over the merged inputs_embeds) against
# independent figures (tests/tools/hf_figures_gemma3vl.py, PyTorch 2.6 on the
# plain-PyTorch replica tests/tools/hf_models_gemma3vl.py:
# tests/reference/hf_figures_gemma3vl.json): the tiny config's parameters and
# saved activation bytes, float32 and bfloat16, eager and SDPA
# (tests/hf/tiny_exact.cmake; memest makes pixel_values [B, 3, 32, 32] itself,
# the template's second input, and seq_len 16 counts the 4 image tokens).
# The PyTorch figures carry hf_figures.py's CUDA corrections and
# hf_figures_dense.py's layernorm_cuda (SigLIP's LayerNorms: mean and rstd
# float32 on CUDA for a bfloat16 input).
# Eager exactly. SDPA within 0.3 %: Gemma3ForConditionalGeneration's
# _update_causal_mask (v4.50) builds a [B, 1, S, S + 1] mask (target_length
# cache_position[0] + S + 1, cloned for the image tokens' bidirectional block),
# which the global layer's kernel keeps (2,176 bytes in float32) and memest
# counts as the forward's transient (src/ops/ops_sdpa.c, sdpa_mask_memory; as
# gemma3_text's [B, 1, S, S]), and the sliding layers' own masks, kept by
# their kernels, are [B, 1, S, S + 1] where memest's are [B, 1, S, S]
# (2 x 128 bytes): 2,432 bytes of 974,784 in float32, 1,216 of 675,072 in
# bfloat16, memest below PyTorch.
foreach(dtype float32 bfloat16)
  foreach(attn eager sdpa)
    set(_tol "")
    if(attn STREQUAL "sdpa")
      set(_tol -DTOLERANCE_PPM=3000)
    endif()
    add_test(NAME hf_gemma3vl.tiny_exact.gemma3.${dtype}.${attn}
             COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DNAME=gemma3
                     -DDTYPE=${dtype} -DATTN=${attn} ${_tol} -DREF=hf_figures_gemma3vl.json
                     -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/tiny_exact.cmake)
    set_tests_properties(hf_gemma3vl.tiny_exact.gemma3.${dtype}.${attn} PROPERTIES LABELS hf)
  endforeach()
endforeach()

# google/gemma-3-4b-pt (tests/hf/published/gemma-3-4b-pt.json, the hub's
# config.json written from memory, not checked against the hub here): the
# model card's "4B", 4,300,079,472 parameters (the safetensors total as
# recalled; the arithmetic below gives it). Text model (Gemma3TextConfig's
# defaults for the keys text_config leaves out: V 262208, 8 heads and 4 kv
# heads of 256): H 2560, L 34, I 10240; per layer q 2560*2048 + k 2560*1024
# + v 2560*1024 + o 2048*2560 + q_norm 256 + k_norm 256 + mlp 3*2560*10240
# + 4 norms 4*2560 = 94,382,592: 262208*2560 (lm_head tied) + 34*94382592
# + 2560 = 3,880,263,168. SigLIP (hidden 1152, intermediate 4304, 27 layers,
# patch 14, image 896: 64*64 = 4096 patches): patch_embedding 3*14*14*1152
# + 1152 = 678,528, position_embedding 4096*1152 = 4,718,592, per layer
# 4*(1152*1152 + 1152) + (1152*4304 + 4304) + (4304*1152 + 1152) + 2
# LayerNorms 4*1152 = 15,239,504, post_layernorm 2*1152: 416,866,032.
# Projector: mm_input_projection_weight 1152*2560 + mm_soft_emb_norm 1152
# = 2,950,272. Buffers: two inv_freq [128], embed_scale [] and SigLIP's
# position_ids [1, 4096] = 4,353.
math(EXPR g3_text "262208 * 2560 + 34 * (2560 * 2048 + 2 * 2560 * 1024 + 2048 * 2560 + 2 * 256 + 3 * 2560 * 10240 + 4 * 2560) + 2560")
math(EXPR g3_vision "3 * 14 * 14 * 1152 + 1152 + 4096 * 1152 + 27 * (4 * (1152 * 1152 + 1152) + 1152 * 4304 + 4304 + 4304 * 1152 + 1152 + 4 * 1152) + 2 * 1152")
math(EXPR g3_total "${g3_text} + ${g3_vision} + 1152 * 2560 + 1152")
if(NOT g3_total EQUAL 4300079472)
  message(FATAL_ERROR "gemma-3-4b arithmetic: ${g3_total}, not the published 4,300,079,472")
endif()
add_test(NAME hf_gemma3vl.params.gemma-3-4b-pt
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 -DCONFIG=tests/hf/published/gemma-3-4b-pt.json -DWANT=${g3_total} -DWANT_BUF=4353
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/published_params.cmake)
set_tests_properties(hf_gemma3vl.params.gemma-3-4b-pt PROPERTIES LABELS hf)
# google/gemma-3-27b-pt (tests/hf/published/gemma-3-27b-pt.json, written from
# memory too): "27B", 27,432,406,640 (the safetensors total as recalled). Text:
# H 5376, L 62, 32 heads and 16 kv heads of 128, I 21504; per layer
# q 5376*4096 + k 5376*2048 + v 5376*2048 + o 4096*5376 + q_norm 128 + k_norm
# 128 + mlp 3*5376*21504 + 4 norms 4*5376 = 412,898,560: 262208*5376 + 62*
# 412898560 + 5376 = 27,009,346,304; the 4B's SigLIP tower (416,866,032);
# projector 1152*5376 + 1152. Buffers: two inv_freq [64], embed_scale [],
# position_ids [1, 4096] = 4,225.
math(EXPR g27_total "262208 * 5376 + 62 * (5376 * 4096 + 2 * 5376 * 2048 + 4096 * 5376 + 2 * 128 + 3 * 5376 * 21504 + 4 * 5376) + 5376 + ${g3_vision} + 1152 * 5376 + 1152")
if(NOT g27_total EQUAL 27432406640)
  message(FATAL_ERROR "gemma-3-27b arithmetic: ${g27_total}, not the published 27,432,406,640")
endif()
add_test(NAME hf_gemma3vl.params.gemma-3-27b-pt
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 -DCONFIG=tests/hf/published/gemma-3-27b-pt.json -DWANT=${g27_total} -DWANT_BUF=4225
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/published_params.cmake)
set_tests_properties(hf_gemma3vl.params.gemma-3-27b-pt PROPERTIES LABELS hf)

# seq_len counts the image tokens: num_images * mm_tokens_per_image of them
# must fit (2 images of 256 tokens in 511 positions: refused, naming the
# check); two images per sequence make pixel_values [2B, 3, 896, 896] (the
# input [B, 2, 3, 896, 896] viewed so).
add_test(NAME hf_gemma3vl.seq_counts_images
         COMMAND $<TARGET_FILE:memest> tests/hf/published/gemma-3-4b-pt.json --batch 1
                 --set num_images=2 --set seq_len=511
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(hf_gemma3vl.seq_counts_images PROPERTIES LABELS hf
                     PASS_REGULAR_EXPRESSION "seq_len counts the image tokens too")
add_test(NAME hf_gemma3vl.two_images
         COMMAND $<TARGET_FILE:memest> tests/hf/published/gemma-3-4b-pt.json --batch 2
                 --set num_images=2 --set seq_len=1024 --layers
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(hf_gemma3vl.two_images PROPERTIES LABELS hf
                     PASS_REGULAR_EXPRESSION "vision_tower.pixel_values +view +\\[4, 3, 896, 896\\]")

# Step peaks (memory.peak_tensors) of the tiny config against PyTorch 2.6
# (tests/tools/hf_peak_gemma3vl.py: hf_peak.py's step and measurement on the
# replica, tests/reference/hf_peaks_gemma3vl.json), SGD and Adam, float32 and
# bfloat16, eager and SDPA (memest --attention auto), within 3 %
# (tests/hf/peaks.cmake): memest is 0.1-0.7 % above PyTorch in the Adam cases,
# whose peak is in the optimizer, by pixel_values (24,576 bytes in float32):
# the replica makes it inside forward (dead by the optimizer step), memest
# holds it as a model input through the step (as a DataLoader's batch is);
# the float32 SDPA SGD case, peaking in the attention backward, is 1.0 %
# below (the masks, as in the saved activations above).
foreach(case 0 1 2 3 4 5 6 7)
  add_test(NAME hf_gemma3vl.peaks.${case}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCASE=${case}
                   -DREF=hf_peaks_gemma3vl.json -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/peaks.cmake)
  set_tests_properties(hf_gemma3vl.peaks.${case} PROPERTIES LABELS hf)
endforeach()

# The decode step of generation holds the vision tower's weights too (its
# one-token graph has no image): tests/hf/decode_holds.cmake, for gemma3 and
# llama4.
foreach(name gemma3 llama4)
  add_test(NAME hf_vlm_generate.decode_holds_weights.${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                   -DCONFIG=tests/hf/tiny/${name}.json -DCONTEXT=16 -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/decode_holds.cmake)
  set_tests_properties(hf_vlm_generate.decode_holds_weights.${name} PROPERTIES LABELS hf)
endforeach()
