# Parameter counts of real models of the newer families (tests/hf/published/:
# the hub's config.json as published), against the count the publisher states,
# with the arithmetic from the config and the modeling code written here.
set(_hf_published
  # google/gemma-3-1b-pt: 999,885,952 (the model card's "1B"; the safetensors
  # total of the tied checkpoint). V 262144, H 1152, L 26, 4 heads of 256, 1 kv
  # head, I 6912; per layer q 1152*1024 + k 1152*256 + v 1152*256 + o 1024*1152
  # + q_norm 256 + k_norm 256 + mlp 3*1152*6912 + 4 norms 4*1152 = 26,842,112:
  # 262144*1152 + 26*26842112 + 1152 (final norm), lm_head tied. Buffers: two
  # inv_freq [128] (rotary_emb, rotary_emb_local) + embed_scale [] = 257.
  "gemma-3-1b=999885952=257")
foreach(entry ${_hf_published})
  string(REPLACE "=" ";" kv ${entry})
  list(GET kv 0 config)
  list(GET kv 1 want)
  list(GET kv 2 want_buf)
  add_test(NAME hf_published.params.${config}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                   -DCONFIG=tests/hf/published/${config}.json -DWANT=${want} -DWANT_BUF=${want_buf}
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/published_params.cmake)
  set_tests_properties(hf_published.params.${config} PROPERTIES LABELS hf)
endforeach()
