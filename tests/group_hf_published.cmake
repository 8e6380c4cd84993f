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

# deepseek-ai/DeepSeek-V3 (tests/hf/published/deepseek-v3.json: the hub's
# config.json without its quantization_config, fp8 block-wise weights
# (quant_method "fp8", weight_block_size [128, 128]), which memest's config
# reader refuses: it models bitsandbytes, GPTQ and AWQ). "671B total
# parameters with 37B activated for each token" (the technical report; the
# checkpoint's README_WEIGHTS.md: 36.6B activated, the 0.9B output head
# included, the input embedding not: a token reads one row of it). The hub's
# 685B add the multi-token-prediction module model.layers.61.* (one more MoE
# layer, enorm, hnorm, eh_proj, and copies of the embedding and the head, ~14B),
# which transformers' DeepseekV3Model does not build. The arithmetic, from the
# config's values and DeepseekV3Attention / DeepseekV3MoE / DeepseekV3MLP:
set(V 129280)
set(H 7168)
set(L 61)
set(heads 128)
set(q_lora 1536)
set(kv_lora 512)
set(nope 128)
set(rope 64)
set(vdim 128)
set(inter 18432)
set(moe_inter 2048)
set(experts 256)
set(shared 1)
set(per_tok 8)
set(dense 3)
# q_a_proj, q_a_layernorm, q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm,
# kv_b_proj, o_proj (no biases: attention_bias false)
math(EXPR attn "${H} * ${q_lora} + ${q_lora} + ${q_lora} * ${heads} * (${nope} + ${rope}) + ${H} * (${kv_lora} + ${rope}) + ${kv_lora} + ${kv_lora} * ${heads} * (${nope} + ${vdim}) + ${heads} * ${vdim} * ${H}")
math(EXPR expert "3 * ${H} * ${moe_inter}")
# embed_tokens, lm_head (untied), model.norm; per layer the attention and two
# norms; the dense layers' MLP; per MoE layer the router weight and the shared
# experts
math(EXPR common "2 * ${V} * ${H} + ${H} + ${L} * (${attn} + 2 * ${H}) + ${dense} * 3 * ${H} * ${inter}")
math(EXPR moe_fixed "${experts} * ${H} + ${shared} * ${expert}")
math(EXPR ds_total "${common} + (${L} - ${dense}) * (${moe_fixed} + ${experts} * ${expert})")
math(EXPR ds_active "${common} - ${V} * ${H} + (${L} - ${dense}) * (${moe_fixed} + ${per_tok} * ${expert})")
# the published figures, rounded as published
math(EXPR ds_total_b "(${ds_total} + 500000000) / 1000000000")
math(EXPR ds_active_b "(${ds_active} + 500000000) / 1000000000")
math(EXPR ds_active_dec "(${ds_active} + 50000000) / 100000000")
if(NOT ds_total_b EQUAL 671 OR NOT ds_active_b EQUAL 37 OR NOT ds_active_dec EQUAL 366)
  message(FATAL_ERROR "DeepSeek-V3 arithmetic: ${ds_total} total, ${ds_active} active: not the published 671B and 36.6B (37B)")
endif()
# The multi-token-prediction module the hub's checkpoint adds (model.layers.61:
# one more MoE layer, enorm, hnorm, shared_head.norm, eh_proj [H, 2H], and its
# own copies of embed_tokens and shared_head.head): 671.0B + 13.5B = 684.5B; with
# the fp8 checkpoint's weight_scale_inv tensors (one float32 per 128 x 128 block
# of every quantised weight, about 0.04B) the hub's 684.53B, shown as "685B".
math(EXPR ds_mtp "${attn} + 2 * ${H} + ${moe_fixed} + ${experts} * ${expert} + 3 * ${H} + 2 * ${H} * ${H} + 2 * ${V} * ${H}")
math(EXPR ds_with_mtp "(${ds_total} + ${ds_mtp} + 50000000) / 100000000")
math(EXPR ds_mtp_b "(${ds_mtp} + 500000000) / 1000000000")
if(NOT ds_with_mtp EQUAL 6845 OR NOT ds_mtp_b EQUAL 13)
  message(FATAL_ERROR "DeepSeek-V3 arithmetic: the MTP module ${ds_mtp}: not the checkpoint's 684.5B in all")
endif()
# buffers: inv_freq [qk_rope_head_dim / 2] and each MoE layer's e_score_correction_bias
math(EXPR ds_buffers "${rope} / 2 + (${L} - ${dense}) * ${experts}")
list(APPEND _hf_published "deepseek-v3=${ds_total}=${ds_buffers}")
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
