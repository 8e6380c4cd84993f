# Hugging Face configs (models/hf/*.json) through their architecture
# templates (models/arch/): one test per config, checking the parameter
# count of `memest --json` against PyTorch and the published figure
# (tests/hf/params.cmake). The saved activations of the tiny configs are
# checked by unit.test_hf_models.
file(GLOB MEMEST_HF_CONFIGS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/models/hf/*.json)
foreach(cfg ${MEMEST_HF_CONFIGS})
  get_filename_component(name ${cfg} NAME_WLE)
  add_test(NAME hf.params.${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                   -DNAME=${name} -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/params.cmake)
  set_tests_properties(hf.params.${name} PROPERTIES LABELS hf)
endforeach()

# Saved activations per decoder layer of the tiny configs (tests/hf/tiny/),
# eager attention, float32 and bfloat16 (tests/hf/layers.cmake).
file(GLOB MEMEST_HF_TINY CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/hf/tiny/*.json)
foreach(cfg ${MEMEST_HF_TINY})
  get_filename_component(name ${cfg} NAME_WLE)
  foreach(dtype float32 bfloat16)
    add_test(NAME hf.layers.${name}.${dtype}
             COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                     -DNAME=${name} -DDTYPE=${dtype} -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/layers.cmake)
    set_tests_properties(hf.layers.${name}.${dtype} PROPERTIES LABELS hf)
  endforeach()
endforeach()

# The training-step peak (memory.peak_tensors) of the tiny configs against
# PyTorch 2.6 running the same step (tests/tools/hf_peak.py ->
# tests/reference/hf_peaks.json), within 3% (tests/hf/peaks.cmake): one test
# per measured case.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/tests/reference/hf_peaks.json)
file(READ ${PROJECT_SOURCE_DIR}/tests/reference/hf_peaks.json MEMEST_HF_PEAKS)
string(JSON n LENGTH "${MEMEST_HF_PEAKS}" cases)
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  foreach(key config attn dtype optim)
    string(JSON ${key} GET "${MEMEST_HF_PEAKS}" cases ${i} ${key})
  endforeach()
  set(name hf.peaks.${config}.${attn}.${dtype}.${optim})
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCASE=${i}
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/peaks.cmake)
  set_tests_properties(${name} PROPERTIES LABELS hf)
endforeach()

# bitsandbytes' 8-bit and paged optimizer state of Llama-2-7B, by hand
# (tests/hf/optim_bnb.cmake).
add_test(NAME hf.optim_bnb
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/optim_bnb.cmake)
set_tests_properties(hf.optim_bnb PROPERTIES LABELS hf)

# The standard QLoRA step of Llama-2-7B (nf4 + double quantisation,
# kbit-prep, LoRA r=16 on all-linear, paged_adamw8bit, checkpointing), every
# component and the peak by hand (tests/hf/qlora_7b.cmake).
add_test(NAME hf.qlora_7b
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/qlora_7b.cmake)
set_tests_properties(hf.qlora_7b PROPERTIES LABELS hf)

# What memest accepts of a real config.json: keys that change no memory
# without a word, an unknown key one warning once in every flow
# (tests/hf/policy.cmake; the refusals are cases of tests/errors/cases.tsv).
add_test(NAME hf.policy
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/policy.cmake)
set_tests_properties(hf.policy PROPERTIES LABELS hf)

# The tiny configs of qwen3 (per-head q/k norm), olmo2 (post-norm, full-width
# q/k norm, float32 rotary tables), smollm3 (a NoPE layer), granite (the muP
# scalars) and gemma3_text (local and global layers, two rotary tables, q/k
# norm, the scaled embedding): memest's saved activation bytes equal PyTorch
# 2.6's exactly, float32 and bfloat16, eager and SDPA (tests/hf/tiny_exact.cmake).
# Gemma 3 under SDPA within 0.2 %: its global layers' kernel keeps the model's
# one causal mask [B, 1, S, S] (1,024 bytes of 835,712 in float32), which
# memest counts as the forward's transient, not as saved.
foreach(name qwen3 olmo2 smollm3 granite gemma3_text)
  foreach(dtype float32 bfloat16)
    foreach(attn eager sdpa)
      set(_tol "")
      if(name STREQUAL "gemma3_text" AND attn STREQUAL "sdpa")
        set(_tol -DTOLERANCE_PPM=2000)
      endif()
      add_test(NAME hf.tiny_exact.${name}.${dtype}.${attn}
               COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DNAME=${name}
                       -DDTYPE=${dtype} -DATTN=${attn} ${_tol} -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/tiny_exact.cmake)
      set_tests_properties(hf.tiny_exact.${name}.${dtype}.${attn} PROPERTIES LABELS hf)
    endforeach()
  endforeach()
endforeach()
