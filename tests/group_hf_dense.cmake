# The dense templates built on models/arch/lib/dense.json (starcoder2, glm4)
# against independent figures (tests/tools/hf_figures_dense.py, PyTorch 2.6 on
# the plain-PyTorch replica tests/tools/hf_models_dense.py:
# tests/reference/hf_figures_dense.json): the tiny configs' parameters and
# saved activation bytes, exactly, float32 and bfloat16, eager and SDPA
# (tests/hf/tiny_exact.cmake). The real models' parameter counts are in
# tests/group_hf_published.cmake.
# The PyTorch figures carry hf_figures.py's CUDA corrections and one more
# (hf_figures_dense.py's layernorm_cuda: LayerNorm's saved mean and rstd are
# float32 on CUDA for a bfloat16 input, bfloat16 in the CPU kernel).
# Starcoder2 under SDPA within 0.5 %: its sliding window (8) is shorter than
# the sequence (16), so the model builds one 4-D mask [B, 1, S, S] (an
# expanded [S, S]: 1,024 bytes in float32 of 219,648, 512 in bfloat16 of
# 111,616), which the kernel that takes a mask saves and memest counts as the
# forward's transient, not as saved (src/ops/ops_sdpa.c, sdpa_mask_memory; as
# Mistral's and Gemma 3's).
foreach(name starcoder2 glm4)
  foreach(dtype float32 bfloat16)
    foreach(attn eager sdpa)
      set(_tol "")
      if(name STREQUAL "starcoder2" AND attn STREQUAL "sdpa")
        set(_tol -DTOLERANCE_PPM=5000)
      endif()
      add_test(NAME hf_dense.tiny_exact.${name}.${dtype}.${attn}
               COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DNAME=${name}
                       -DDTYPE=${dtype} -DATTN=${attn} ${_tol} -DREF=hf_figures_dense.json
                       -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/tiny_exact.cmake)
      set_tests_properties(hf_dense.tiny_exact.${name}.${dtype}.${attn} PROPERTIES LABELS hf)
    endforeach()
  endforeach()
endforeach()
