# The vision-language templates (llava: models/arch/llava.json, the CLIP
# vision tower of models/arch/lib/vision.json, the Llama text model) against
# independent figures (tests/tools/hf_figures_vlm.py, PyTorch 2.6 on the
# plain-PyTorch replica tests/tools/hf_models_vlm.py:
# tests/reference/hf_figures_vlm.json): the tiny config's parameters and
# saved activation bytes, exactly, float32 and bfloat16, eager and SDPA
# (tests/hf/tiny_exact.cmake; the template's pixel_values input needs
# nothing more there), with input_ids of 24 positions of which 16 are the
# image's tokens (image_size 32, patch_size 8). The PyTorch figures carry
# hf_figures.py's CUDA corrections, hf_figures_dense.py's layernorm_cuda
# (LayerNorm's saved mean and rstd float32 on CUDA for a bfloat16 input) and
# leave out what the vision layer after vision_feature_layer, post_layernorm
# and the check inputs_embeds[special_image_mask] saved: their outputs die
# when get_image_features returns, freed in the forward (the template runs
# them on a detached input with frozen parameters).
# llava_full: every vision layer kept (vision_feature_layer -1: post_layernorm
# alone is discarded), the CLS position kept (strategy "full": 17 image
# tokens), a quick_gelu projector without bias, vision gelu, lm_head tied.
foreach(name llava llava_full)
  foreach(dtype float32 bfloat16)
    foreach(attn eager sdpa)
      add_test(NAME hf_vlm.tiny_exact.${name}.${dtype}.${attn}
               COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DNAME=${name}
                       -DDTYPE=${dtype} -DATTN=${attn} -DREF=hf_figures_vlm.json
                       -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/tiny_exact.cmake)
      set_tests_properties(hf_vlm.tiny_exact.${name}.${dtype}.${attn} PROPERTIES LABELS hf)
    endforeach()
  endforeach()
endforeach()

# llava-hf/llava-1.5-7b-hf (models/hf/llava-1.5-7b-hf.json: its config.json
# written from memory, not checked against the hub: no network here):
# "7.06B params" (its model page, recalled), 7,063,427,072 by the arithmetic
# (tests/tools/hf_figures_vlm.py asserts the replica's count equal):
#   text (Vicuna-7B v1.5, LlamaForCausalLM with V 32064): 2*32064*4096
#     (embed_tokens, lm_head untied) + 32*(4*4096*4096 + 3*4096*11008
#     + 2*4096) + 4096 = 6,738,939,904;
#   vision (CLIP ViT-L/14 at 336): patch_embedding 3*14*14*1024 (no bias)
#     + class_embedding 1024 + position_embedding 577*1024 + pre_layrnorm
#     2*1024 + 24*(4*(1024*1024 + 1024) + 2*2*1024 + 1024*4096 + 4096
#     + 4096*1024 + 1024) + post_layernorm 2*1024 = 303,507,456 (the last
#     layer and post_layernorm included: built, run, their output unused);
#   projector: 1024*4096 + 4096 + 4096*4096 + 4096 = 20,979,712.
# Buffers: the rotary inv_freq [64] and CLIP's position_ids [1, 577]: 641.
add_test(NAME hf_vlm.published.llava-1.5-7b-hf
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 -DCONFIG=models/hf/llava-1.5-7b-hf.json -DWANT=7063427072 -DWANT_BUF=641
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/published_params.cmake)
set_tests_properties(hf_vlm.published.llava-1.5-7b-hf PROPERTIES LABELS hf)

# Step peaks (memory.peak_tensors) of the tiny config against PyTorch 2.6
# (tests/tools/hf_peak_vlm.py: hf_peak.py's step and measurement on the
# replica, the inputs above; tests/reference/hf_peaks_vlm.json), within 3%
# (tests/hf/peaks.cmake): eager and SDPA float32, SDPA bfloat16 (CUDA's
# flash), SGD (for-loop) and Adam (foreach), cases 0 .. 5.
foreach(case 0 1 2 3 4 5)
  add_test(NAME hf_vlm.peaks.${case}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCASE=${case}
                   -DREF=hf_peaks_vlm.json -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/peaks.cmake)
  set_tests_properties(hf_vlm.peaks.${case} PROPERTIES LABELS hf)
endforeach()
