# Parameter counts of real models of the newer families (tests/hf/published/
# and models/hf/: the hub's config.json as published), against the count the publisher states,
# with the arithmetic from the config and the modeling code written here.
set(_hf_published
  # google/gemma-3-1b-pt: 999,885,952 (the model card's "1B"; the safetensors
  # total of the tied checkpoint). V 262144, H 1152, L 26, 4 heads of 256, 1 kv
  # head, I 6912; per layer q 1152*1024 + k 1152*256 + v 1152*256 + o 1024*1152
  # + q_norm 256 + k_norm 256 + mlp 3*1152*6912 + 4 norms 4*1152 = 26,842,112:
  # 262144*1152 + 26*26842112 + 1152 (final norm), lm_head tied. Buffers: two
  # inv_freq [128] (rotary_emb, rotary_emb_local) + embed_scale [] = 257.
  "tests/hf/published/gemma-3-1b=999885952=257"
  # The shipped examples of the transformers-main templates (models/hf/), each
  # with one inv_freq [head_dim / 2] = [64] buffer:
  # Qwen/Qwen3-8B: 8,190,735,360 (the safetensors total). V 151936, H 4096,
  # L 36, 32 heads and 8 kv heads of 128, I 12288; per layer q 4096*4096 + k
  # 4096*1024 + v 4096*1024 + o 4096*4096 + q_norm 128 + k_norm 128 + mlp
  # 3*4096*12288 + 2 norms 2*4096 = 192,946,432: 2*151936*4096 (untied)
  # + 36*192946432 + 4096.
  "models/hf/qwen3-8b=8190735360=64"
  # Qwen/Qwen3-0.6B ("0.6B"): H 1024, L 28, 16 heads and 8 kv heads of 128,
  # I 3072; per layer 1024*2048 + 2*1024*1024 + 2048*1024 + 2*128
  # + 3*1024*3072 + 2*1024 = 15,730,944: 151936*1024 (tied) + 28*15730944
  # + 1024 = 596,049,920. (The hub's safetensors total, 751,632,384, counts
  # the lm_head.weight the checkpoint also stores: + 151936*1024.)
  "models/hf/qwen3-0.6b=596049920=64"
  # allenai/OLMo-2-1124-7B: 7,298,617,344. V 100352, H 4096, L 32, 32 heads
  # of 128 (no GQA), I 11008; per layer 4*4096*4096 + q_norm 4096 + k_norm
  # 4096 (the whole projection) + 3*4096*11008 + 2 post norms 2*4096
  # = 202,391,552: 2*100352*4096 (untied) + 32*202391552 + 4096.
  "models/hf/olmo-2-1124-7b=7298617344=64"
  # HuggingFaceTB/SmolLM3-3B: 3,075,098,624 (the safetensors total). V 128256,
  # H 2048, L 36, 16 heads and 4 kv heads of 128, I 11008; per layer
  # 2048*2048 + 2*2048*512 + 2048*2048 + 3*2048*11008 + 2*2048 = 78,123,008:
  # 128256*2048 (tied) + 36*78123008 + 2048 (NoPE layers have no parameter
  # of their own).
  "models/hf/smollm3-3b=3075098624=64"
  # ibm-granite/granite-3.1-8b-instruct ("8B"): V 49155, H 4096, L 40, 32
  # heads and 8 kv heads of 128, I 12800; per layer 4096*4096 + 2*4096*1024
  # + 4096*4096 + 3*4096*12800 + 2*4096 = 199,237,632: 49155*4096 (tied)
  # + 40*199237632 + 4096 = 8,170,848,256 (the muP scalars add none).
  "models/hf/granite-3.1-8b-instruct=8170848256=64"
  # Mixtures of experts, the fourth figure the parameters one token uses: the
  # total less (num_experts - top_k) / num_experts of the experts' parameters.
  # mistralai/Mixtral-8x7B-v0.1: 46,702,792,704 in all, "12.9B active": 32
  # layers of 8 experts of 3*4096*14336, 2 of 8 routed: 46702792704
  # - 32*6*3*4096*14336 = 12,879,925,248.
  "models/hf/mixtral-8x7b=46702792704=64=12879925248"
  # Qwen/Qwen1.5-MoE-A2.7B: 14,315,784,192 in all, "2.7B activated": 24
  # layers of 60 experts of 3*2048*1408, 4 of 60 routed (the shared expert
  # always): 14315784192 - 24*56*3*2048*1408 = 2,689,173,504. Buffers: the
  # model's inv_freq [64] and each layer's legacy Qwen2MoeRotaryEmbedding's,
  # 25*64 = 1600.
  "models/hf/qwen1.5-moe-a2.7b=14315784192=1600=2689173504"
  # Qwen/Qwen3-30B-A3B: 30,532,122,624 (the safetensors total), "3.3B
  # activated". V 151936, H 2048, L 48, 32 heads and 4 kv heads of 128, 128
  # experts of 3*2048*768, 8 routed; per layer q 2048*4096 + k 2048*512 + v
  # 2048*512 + o 4096*2048 + q_norm 128 + k_norm 128 + gate 2048*128
  # + 128*3*2048*768 + 2*2048 = 623,120,640: 2*151936*2048 (untied)
  # + 48*623120640 + 2048; active: 30532122624 - 48*120*3*2048*768
  # = 3,353,032,704.
  "tests/hf/published/qwen3-30b-a3b=30532122624=64=3353032704")

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
# active as memest counts it, the input embedding included as in the other
# models' figures (Mixtral's 12.9B): the 36.6B and the embedding's 0.93B
math(EXPR ds_active_all "${ds_active} + ${V} * ${H}")
list(APPEND _hf_published "tests/hf/published/deepseek-v3=${ds_total}=${ds_buffers}=${ds_active_all}")
# bigcode/starcoder2-3b: "3.03B params" (its model card; 3,030,371,328). V
# 49152, H 3072, L 30, 24 heads and 2 kv heads of 128, I 12288, every linear
# with a bias, LayerNorms with weight and bias; per layer q 3072*3072 + 3072
# + k 3072*256 + 256 + v 3072*256 + 256 + o 3072*3072 + 3072 + c_fc
# 3072*12288 + 12288 + c_proj 12288*3072 + 3072 + 2 LayerNorms 4*3072
# = 95,979,008: 49152*3072 (lm_head tied, Starcoder2Config keeping
# PretrainedConfig's tie_word_embeddings=True) + 30*95979008 + 2*3072 (final
# LayerNorm). Buffers: inv_freq [64].
list(APPEND _hf_published "models/hf/starcoder2-3b=3030371328=64")
# THUDM/GLM-4-9B-0414: "9.4B params" (its model page). V 151552, H 4096,
# L 40, 32 heads and 2 kv heads of 128, I 13696; per layer q 4096*4096 + 4096
# + k 4096*256 + 256 + v 4096*256 + 256 (attention_bias) + o 4096*4096 (no
# bias) + gate_up_proj 4096*2*13696 + down_proj 13696*4096 + 4 RMSNorms
# 4*4096 = 203,969,024: 2*151552*4096 (untied) + 40*203969024 + 4096
# = 9,400,279,040. Buffers: inv_freq [32] (int(128 * 0.5) / 2).
list(APPEND _hf_published "models/hf/glm-4-9b-0414=9400279040=32")
# zai-org/GLM-4.5-Air (tests/hf/published/glm-4.5-air.json): "106 billion
# total parameters and 12 billion active parameters" (the model card). V 151552,
# H 4096, L 46 (1 dense, 45 MoE), 96 heads and 8 kv heads of 128, q/k/v biases
# (attention_bias), o_proj none, no qk norm; per layer q 4096*12288 + 12288,
# k and v 4096*1024 + 1024 each, o 12288*4096, 2 norms 2*4096 = 109,074,432;
# the dense MLP 3*4096*10944; per MoE layer the router weight 128*4096, 128
# routed experts and 1 shared of 3*4096*1408 (gate_up_proj [2816, 4096],
# down_proj [4096, 1408]); 2*151552*4096 (untied) + 46*109074432
# + 3*4096*10944 + 45*(128*4096 + 129*17301504) + 4096 = 106,852,245,504
# (106.85B: the card's 106B; the MTP layer model.layers.46.*, which
# Glm4MoeModel skips, is not counted). Active: 106852245504 - 45*120*17301504
# = 13,424,123,904, of which 12,182,609,920 without the embedding and the head
# 2*151552*4096: the card's 12B. Buffers: inv_freq [64 / 2] (partial rotary:
# int(128 * 0.5) = 64 dims) + 45 e_score_correction_bias [128] = 5,792.
math(EXPR glm_layer "4096 * 12288 + 12288 + 2 * (4096 * 1024 + 1024) + 12288 * 4096 + 2 * 4096")
math(EXPR glm_expert "3 * 4096 * 1408")
math(EXPR glm_common "2 * 151552 * 4096 + 46 * ${glm_layer} + 3 * 4096 * 10944 + 4096")
math(EXPR glm_total "${glm_common} + 45 * (128 * 4096 + 129 * ${glm_expert})")
math(EXPR glm_active "${glm_common} + 45 * (128 * 4096 + 9 * ${glm_expert})")
math(EXPR glm_total_b "${glm_total} / 1000000000")
math(EXPR glm_active_b "(${glm_active} - 2 * 151552 * 4096 + 500000000) / 1000000000")
if(NOT glm_total EQUAL 106852245504 OR NOT glm_total_b EQUAL 106 OR NOT glm_active_b EQUAL 12)
  message(FATAL_ERROR "GLM-4.5-Air arithmetic: ${glm_total} total, ${glm_active} active: not the published 106B and 12B")
endif()
list(APPEND _hf_published "tests/hf/published/glm-4.5-air=${glm_total}=5792=${glm_active}")
# ibm-granite/granite-3.1-3b-a800m-instruct ("3B-A800M"; tests/hf/published/
# granite-3.1-3b-a800m-instruct.json): V 49155, H 1536, L 32, 24 heads and 8 kv
# heads of 64, no biases, 40 experts of intermediate 512, 8 routed, tied head;
# per layer q 1536*1536 + k, v 1536*512 each + o 1536*1536, 2 norms 2*1536,
# router 40*1536, input_linear [40, 1024, 1536] and output_linear [40, 1536,
# 512] = 100,727,808: 49155*1536 + 32*100727808 + 1536 = 3,298,793,472 (3.3B);
# active: 3298793472 - 32*32*(1024*1536 + 1536*512) = 882,874,368, of which
# 807,372,288 without the tied embedding (the card's 800M). Buffers: inv_freq [32].
math(EXPR gm_layer "2 * 1536 * 1536 + 2 * 1536 * 512 + 2 * 1536 + 40 * 1536 + 40 * (1024 * 1536 + 1536 * 512)")
math(EXPR gm_total "49155 * 1536 + 32 * ${gm_layer} + 1536")
math(EXPR gm_active "${gm_total} - 32 * 32 * (1024 * 1536 + 1536 * 512)")
math(EXPR gm_total_d "(${gm_total} + 50000000) / 100000000")
math(EXPR gm_active_d "(${gm_active} - 49155 * 1536 + 50000000) / 100000000")
if(NOT gm_total EQUAL 3298793472 OR NOT gm_total_d EQUAL 33 OR NOT gm_active_d EQUAL 8)
  message(FATAL_ERROR "granite-3.1-3b-a800m arithmetic: ${gm_total} total, ${gm_active} active: not the published 3.3B and 800M")
endif()
list(APPEND _hf_published "tests/hf/published/granite-3.1-3b-a800m-instruct=${gm_total}=32=${gm_active}")
foreach(entry ${_hf_published})
  string(REPLACE "=" ";" kv ${entry})
  list(GET kv 0 path)
  list(GET kv 1 want)
  list(GET kv 2 want_buf)
  set(want_active "")
  list(LENGTH kv nkv)
  if(nkv GREATER 3)
    list(GET kv 3 want_active)
  endif()
  get_filename_component(config ${path} NAME)
  add_test(NAME hf_published.params.${config}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                   -DCONFIG=${path}.json -DWANT=${want} -DWANT_BUF=${want_buf}
                   -DWANT_ACTIVE=${want_active}
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/published_params.cmake)
  set_tests_properties(hf_published.params.${config} PROPERTIES LABELS hf)
endforeach()
