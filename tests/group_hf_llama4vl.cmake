# Llama4ForConditionalGeneration (models/arch/llama4.json: the vision tower of
# models/arch/lib/llama4_vision.json, Llama4MultiModalProjector, the text model
# of models/arch/llama4_text.json over the merged inputs_embeds) against
# independent figures (tests/tools/hf_figures_llama4vl.py, PyTorch 2.6 on the
# plain-PyTorch replica tests/tools/hf_models_llama4vl.py, whose text model is
# tests/tools/hf_models_llama4.py's: tests/reference/hf_figures_llama4vl.json):
# the tiny config's parameters and saved activation bytes, exactly, float32 and
# bfloat16, eager and SDPA (tests/hf/tiny_exact.cmake; memest makes
# pixel_values [B, 3, 32, 32] itself, the template's second input). The tiny
# config (tests/hf/tiny/llama4.json) is llama4_text's tiny text model with a
# vision tower of image 32 and patch 8 (16 patches and the CLS position),
# hidden 32, 4 heads, 2 layers, pixel_shuffle_ratio 0.5: 4 image tokens, which
# seq_len 16 counts. The PyTorch figures carry hf_figures.py's CUDA
# corrections, hf_figures_dense.py's layernorm_cuda and hf_figures_vlm.py's
# drop_unreachable (the placeholder check's inputs_embeds[mask]).
foreach(dtype float32 bfloat16)
  foreach(attn eager sdpa)
    add_test(NAME hf_llama4vl.tiny_exact.llama4.${dtype}.${attn}
             COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DNAME=llama4
                     -DDTYPE=${dtype} -DATTN=${attn} -DREF=hf_figures_llama4vl.json
                     -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/tiny_exact.cmake)
    set_tests_properties(hf_llama4vl.tiny_exact.llama4.${dtype}.${attn} PROPERTIES LABELS hf)
  endforeach()
endforeach()

# meta-llama/Llama-4-Scout-17B-16E (tests/hf/published/llama-4-scout-17b-16e-vl.json:
# the hub's config.json, text_config and vision_config, written from memory,
# not checked against the hub here): "17B active, 109B total" (the model
# card), 108,641,793,536 (the safetensors total as recalled; the arithmetic
# below gives it). The text model is tests/group_hf_llama4.cmake's
# 107,769,861,120 (active 17,172,894,720). The vision tower (hidden 1408,
# intermediate 5632, 34 layers, 16 heads of 88, patch 14, image 336: 24*24 =
# 576 patches + the CLS position = 577): patch_embedding.linear 3*14*14*1408 =
# 827,904 (no bias), class_embedding 1408, positional_embedding_vlm 577*1408 =
# 812,416, layernorm_pre and layernorm_post 4*1408; per layer q/k/v/o_proj
# 4*(1408*1408 + 1408) + fc1 1408*5632 + 5632 + fc2 5632*1408 + 1408 + 2
# LayerNorms 4*1408 = 23,807,872; the vision adapter's fc1 5632*4096 and fc2
# 4096*4096 (no bias): 850,960,896. The projector's linear_1 4096*5120 =
# 20,971,520 (no bias). Active: the text model's active count plus the vision
# tower and projector, 17,172,894,720 + 871,932,416 = 18,044,827,136.
# Buffers: the text rotary's inv_freq [64] (the vision rotary's freqs_ci is a
# plain attribute, no buffer).
math(EXPR l4vl_text "2 * 202048 * 5120 + 48 * (2 * 5120 * 5120 + 2 * 5120 * 1024 + 16 * 5120 + 16 * 3 * 5120 * 8192 + 3 * 5120 * 8192 + 2 * 5120) + 5120")
math(EXPR l4vl_vision "3 * 14 * 14 * 1408 + 1408 + 577 * 1408 + 4 * 1408 + 34 * (4 * (1408 * 1408 + 1408) + 1408 * 5632 + 5632 + 5632 * 1408 + 1408 + 4 * 1408) + 5632 * 4096 + 4096 * 4096")
math(EXPR l4vl_total "${l4vl_text} + ${l4vl_vision} + 4096 * 5120")
math(EXPR l4vl_active "${l4vl_total} - 48 * 15 * 3 * 5120 * 8192")
math(EXPR l4vl_total_b "(${l4vl_total} + 500000000) / 1000000000")
if(NOT l4vl_text EQUAL 107769861120 OR NOT l4vl_vision EQUAL 850960896 OR NOT l4vl_total EQUAL 108641793536
   OR NOT l4vl_active EQUAL 18044827136 OR NOT l4vl_total_b EQUAL 109)
  message(FATAL_ERROR "Llama-4-Scout (vision) arithmetic: ${l4vl_total} total, ${l4vl_active} active: not the published 108,641,793,536")
endif()
add_test(NAME hf_llama4vl.params.llama-4-scout-17b-16e-vl
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 -DCONFIG=tests/hf/published/llama-4-scout-17b-16e-vl.json -DWANT=${l4vl_total} -DWANT_BUF=64
                 -DWANT_ACTIVE=${l4vl_active} -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/published_params.cmake)
set_tests_properties(hf_llama4vl.params.llama-4-scout-17b-16e-vl PROPERTIES LABELS hf)

# seq_len counts the image tokens: Scout's 336-pixel tile gives
# (24 * 0.5)^2 = 144 of them (143 positions: refused, naming the check); the
# image features are [B * 144, 5120], the vision adapter's output [B, 144, 4096].
add_test(NAME hf_llama4vl.seq_counts_images
         COMMAND $<TARGET_FILE:memest> tests/hf/published/llama-4-scout-17b-16e-vl.json --batch 1 --set seq_len=143
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(hf_llama4vl.seq_counts_images PROPERTIES LABELS hf
                     PASS_REGULAR_EXPRESSION "seq_len counts the image tokens too")
add_test(NAME hf_llama4vl.image_tokens
         COMMAND $<TARGET_FILE:memest> tests/hf/published/llama-4-scout-17b-16e-vl.json --batch 2 --set seq_len=256 --layers
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(hf_llama4vl.image_tokens PROPERTIES LABELS hf
                     PASS_REGULAR_EXPRESSION "multi_modal_projector.linear_1 +linear +\\[288, 5120\\]")

# Step peaks (memory.peak_tensors) of the tiny config against PyTorch 2.6
# (tests/tools/hf_peak_llama4vl.py: hf_peak.py's step and measurement on the
# replica, tests/reference/hf_peaks_llama4vl.json), SGD and Adam, float32 and
# bfloat16, eager and SDPA (memest --attention auto), within 3 %
# (tests/hf/peaks.cmake): memest is within 0.11 % of PyTorch in every case
# (-0.04 % to +0.11 %).
foreach(case 0 1 2 3 4 5 6 7)
  add_test(NAME hf_llama4vl.peaks.${case}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCASE=${case}
                   -DREF=hf_peaks_llama4vl.json -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/peaks.cmake)
  set_tests_properties(hf_llama4vl.peaks.${case} PROPERTIES LABELS hf)
endforeach()
