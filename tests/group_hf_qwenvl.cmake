# The Qwen2.5-VL template (models/arch/qwen2_5_vl.json: the vision tower of
# models/arch/lib/qwen_vision.json, Qwen2's decoder layers with M-RoPE)
# against independent figures (tests/tools/hf_figures_qwenvl.py, PyTorch 2.6
# on the plain-PyTorch replica tests/tools/hf_models_qwenvl.py:
# tests/reference/hf_figures_qwenvl.json): the tiny config's parameters and
# saved activation bytes, exactly, float32 and bfloat16, eager and SDPA
# (tests/hf/tiny_exact.cmake), with input_ids of 24 positions of which 16 are
# the image's merged tokens (image_size 16, patch_size 2, spatial_merge_size
# 2: 64 patches, 4 windows of 16 (window_size 8), full attention on blocks 1
# and 3 of 4). qwen2_5_vl_nested: the text keys in text_config (rope_parameters,
# layer_types), a tied lm_head, 4 key/value heads (no repeat_kv), a window
# (16 pixels) as large as the image (one window: every block sees the whole
# image), 2 vision heads, gelu_pytorch_tanh in the vision MLP. The PyTorch
# figures carry hf_figures.py's CUDA corrections (the vision tower's
# per-chunk SDPA calls too).
foreach(name qwen2_5_vl qwen2_5_vl_nested)
  foreach(dtype float32 bfloat16)
    foreach(attn eager sdpa)
      add_test(NAME hf_qwenvl.tiny_exact.${name}.${dtype}.${attn}
               COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DNAME=${name}
                       -DDTYPE=${dtype} -DATTN=${attn} -DREF=hf_figures_qwenvl.json "-DARGS=--set;image_size=16"
                       -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/tiny_exact.cmake)
      set_tests_properties(hf_qwenvl.tiny_exact.${name}.${dtype}.${attn} PROPERTIES LABELS hf)
    endforeach()
  endforeach()
endforeach()

# Qwen/Qwen2.5-VL-7B-Instruct (tests/hf/published/qwen2.5-vl-7b-instruct.json:
# its config.json written from memory, not checked against the hub: no
# network here): "8.29B params" (its model page, recalled), 8,292,166,656 its
# safetensors total (recalled), and by the arithmetic
# (tests/tools/hf_figures_qwenvl.py asserts the replica's count equal):
#   text (Qwen2.5-7B's sizes, V 152064, H 3584, 28 layers, 28 heads, 4 kv
#     heads of 128, I 18944, lm_head untied): 2*152064*3584
#     + 28*((3584*3584 + 3584) + 2*(3584*512 + 512) + 3584*3584
#     + 3*3584*18944 + 2*3584) + 3584 = 7,615,616,512;
#   vision (1280 wide, 32 blocks, I 3420): patch_embed 3*2*14*14*1280 (no
#     bias) + 32*(2*1280 + (1280*3840 + 3840) + (1280*1280 + 1280)
#     + 2*(1280*3420 + 3420) + (3420*1280 + 1280)) = 631,975,680;
#   merger: 1280 (ln_q) + (5120*5120 + 5120) + (5120*3584 + 3584)
#     = 44,574,464;
#   total 7,615,616,512 + 631,975,680 + 44,574,464 = 8,292,166,656.
# Buffers: the text rotary inv_freq [64], each of the 28 layers' unused
# Qwen2_5_VLAttention.rotary_emb inv_freq [64], the vision rotary [20]: 1876.
add_test(NAME hf_qwenvl.published.qwen2.5-vl-7b-instruct
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 -DCONFIG=tests/hf/published/qwen2.5-vl-7b-instruct.json -DWANT=8292166656 -DWANT_BUF=1876
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/published_params.cmake)
set_tests_properties(hf_qwenvl.published.qwen2.5-vl-7b-instruct PROPERTIES LABELS hf)

# Step peaks (memory.peak_tensors) of tests/hf/tiny/qwen2_5_vl.json against
# PyTorch 2.6 (tests/tools/hf_peak_qwenvl.py on the replica,
# tests/reference/hf_peaks_qwenvl.json; --set image_size=16), SGD and Adam,
# eager and SDPA float32, SDPA bfloat16 (flash on CUDA): all within 52 bytes.
# The vision attention runs one call per window (batch_loop): its fused
# backward's scratch is one call's at a time.
foreach(case RANGE 0 5)
  add_test(NAME hf_qwenvl.peaks.${case}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCASE=${case}
                   -DREF=hf_peaks_qwenvl.json "-DARGS=--set;image_size=16" -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/peaks.cmake)
  set_tests_properties(hf_qwenvl.peaks.${case} PROPERTIES LABELS hf)
endforeach()
