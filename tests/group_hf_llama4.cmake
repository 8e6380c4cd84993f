# The llama4_text template (models/arch/llama4_text.json on models/arch/lib/llama4.json) against independent
# figures (tests/tools/hf_figures_llama4.py, PyTorch 2.6 on the plain-PyTorch replica
# tests/tools/hf_models_llama4.py: tests/reference/hf_figures_llama4.json): the tiny config's parameters and
# saved activation bytes, exactly, float32 and bfloat16, eager and SDPA (tests/hf/tiny_exact.cmake). The tiny
# config (tests/hf/tiny/llama4_text.json) has a RoPE layer with the L2 qk_norm and a dense MLP (layer 0) and
# a NoPE layer with temperature tuning and the MoE (layer 1: 4 experts, 2 routed); its attention_chunk_size
# (32) exceeds the sequence (16), so no mask is built for SDPA, as transformers skips it.
foreach(dtype float32 bfloat16)
  foreach(attn eager sdpa)
    add_test(NAME hf_llama4.tiny_exact.llama4_text.${dtype}.${attn}
             COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DNAME=llama4_text
                     -DDTYPE=${dtype} -DATTN=${attn} -DREF=hf_figures_llama4.json
                     -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/tiny_exact.cmake)
    set_tests_properties(hf_llama4.tiny_exact.llama4_text.${dtype}.${attn} PROPERTIES LABELS hf)
  endforeach()
endforeach()

# meta-llama/Llama-4-Scout-17B-16E (tests/hf/published/llama-4-scout-17b-16e.json: the text_config of the
# hub's config.json as a llama4_text config, written from memory, not checked against the hub): "17B active,
# 109B total" (the model card; the total includes the vision encoder and projector, ~1.7B). The text model:
# V 202048, H 5120, L 48 (every layer MoE: interleave_moe_layer_step 1), 40 heads and 8 kv heads of 128,
# 16 experts of intermediate 8192, 1 routed, a shared expert of 8192, lm_head untied. Per layer q 5120*5120
# + k, v 5120*1024 each + o 5120*5120 (no biases; the L2 qk_norm has no weight) + router 16*5120 + experts
# gate_up_proj [16, 5120, 16384] and down_proj [16, 8192, 5120] (16*3*5120*8192) + shared expert 3*5120*8192
# + 2 RMSNorms 2*5120 = 2,202,101,760: 2*202048*5120 + 48*2202101760 + 5120 = 107,769,861,120 (109B less
# the vision tower). Active: the total less 15/16 of each layer's experts, 107769861120
# - 48*15*3*5120*8192 = 17,172,894,720 (the card's 17B). Buffers: inv_freq [64].
math(EXPR l4_layer "2 * 5120 * 5120 + 2 * 5120 * 1024 + 16 * 5120 + 16 * 3 * 5120 * 8192 + 3 * 5120 * 8192 + 2 * 5120")
math(EXPR l4_total "2 * 202048 * 5120 + 48 * ${l4_layer} + 5120")
math(EXPR l4_active "${l4_total} - 48 * 15 * 3 * 5120 * 8192")
math(EXPR l4_active_b "(${l4_active} + 500000000) / 1000000000")
if(NOT l4_total EQUAL 107769861120 OR NOT l4_active_b EQUAL 17)
  message(FATAL_ERROR "Llama-4-Scout arithmetic: ${l4_total} total, ${l4_active} active: not the published text model and 17B")
endif()
add_test(NAME hf_llama4.params.llama-4-scout-17b-16e
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 -DCONFIG=tests/hf/published/llama-4-scout-17b-16e.json -DWANT=${l4_total} -DWANT_BUF=64
                 -DWANT_ACTIVE=${l4_active} -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/published_params.cmake)
set_tests_properties(hf_llama4.params.llama-4-scout-17b-16e PROPERTIES LABELS hf)

# meta-llama/Llama-4-Maverick-17B-128E (tests/hf/published/llama-4-maverick-17b-128e.json: its text_config,
# written from memory as Scout's): "17B active, 400B total". 128 experts, 1 routed, on every second layer
# (interleave_moe_layer_step 2: layers 1, 3, ..., 47), a dense MLP of intermediate_size_mlp 16384 on the
# others, no qk_norm (the 128E model), otherwise Scout's sizes. Per layer attention 62,914,560 + 2 norms
# 10,240; 24 MoE layers of router 128*5120 + experts 128*3*5120*8192 + shared 3*5120*8192 = 16,232,611,840;
# 24 dense MLPs of 3*5120*16384 = 251,658,240: 2*202048*5120 + 48*62924800 + 24*16232611840 + 24*251658240
# + 5120 = 400,711,848,960 (400B). Active: the total less 127/128 of each MoE layer's experts,
# 400711848960 - 24*127*3*5120*8192 = 17,184,691,200 (17B). Buffers: inv_freq [64].
math(EXPR mv_total "2 * 202048 * 5120 + 48 * (2 * 5120 * 5120 + 2 * 5120 * 1024 + 2 * 5120) + 24 * (128 * 5120 + 129 * 3 * 5120 * 8192) + 24 * 3 * 5120 * 16384 + 5120")
math(EXPR mv_active "${mv_total} - 24 * 127 * 3 * 5120 * 8192")
math(EXPR mv_total_b "${mv_total} / 1000000000")
math(EXPR mv_active_b "(${mv_active} + 500000000) / 1000000000")
if(NOT mv_total EQUAL 400711848960 OR NOT mv_total_b EQUAL 400 OR NOT mv_active_b EQUAL 17)
  message(FATAL_ERROR "Llama-4-Maverick arithmetic: ${mv_total} total, ${mv_active} active: not the published 400B and 17B")
endif()
add_test(NAME hf_llama4.params.llama-4-maverick-17b-128e
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 -DCONFIG=tests/hf/published/llama-4-maverick-17b-128e.json -DWANT=${mv_total} -DWANT_BUF=64
                 -DWANT_ACTIVE=${mv_active} -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/published_params.cmake)
set_tests_properties(hf_llama4.params.llama-4-maverick-17b-128e PROPERTIES LABELS hf)
