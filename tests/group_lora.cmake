# --lora (PEFT's LoRA as a graph pass, src/model/lora.c): tests/lora/check.cmake.
#
# Parameter counts as peft's print_trainable_parameters() prints them (peft v0.17.1
# peft_model.py get_nb_trainable_parameters: every parameter once, the adapters the
# trainable ones). A linear layer [out, in] adapted with rank r adds lora_A [r, in] and
# lora_B [out, r]: r * (in + out) parameters. The base counts are the models' own
# (tests/group_hf*.cmake check them against the published figures).
# lora_count(NAME TRAINABLE ALL LINE ARGS...): memest ARGS counts TRAINABLE of ALL and prints LINE.
function(lora_count name trainable all line)
  string(REPLACE ";" "\\;" args "${ARGN}")
  add_test(NAME lora.count.${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCHECK=count
                   "-DARGS=${args}" -DTRAINABLE=${trainable} -DALL=${all} "-DLINE=${line}"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/lora/check.cmake)
  set_tests_properties(lora.count.${name} PROPERTIES LABELS lora)
endfunction()

# Llama-2-7B, r=8 on PEFT's default llama targets q_proj, v_proj (the line PEFT's README
# publishes): 32 layers * 2 * 8 * (4096 + 4096) = 4,194,304; all = 6,738,415,616 + 4,194,304
lora_count(llama2_qv 4194304 6742609920
  "trainable params: 4,194,304 || all params: 6,742,609,920 || trainable%: 0.0622"
  models/hf/llama-2-7b.json --lora 8 --seq 8)
# the same with the targets named
lora_count(llama2_qv_named 4194304 6742609920
  "trainable params: 4,194,304 || all params: 6,742,609,920 || trainable%: 0.0622"
  models/hf/llama-2-7b.json --lora 8 --lora-targets q_proj,v_proj --seq 8)
# Llama-2-7B, r=16, all-linear (QLoRA's setting; lm_head left out): per layer q, k, v, o:
# 4 * 16 * (4096 + 4096) = 524,288; gate, up: 2 * 16 * (4096 + 11008) = 483,328; down:
# 16 * (11008 + 4096) = 241,664; 32 * 1,249,280 = 39,976,960; all = 6,738,415,616 + 39,976,960;
# 100 * 39,976,960 / 6,778,392,576 = 0.58977...
lora_count(llama2_all 39976960 6778392576
  "trainable params: 39,976,960 || all params: 6,778,392,576 || trainable%: 0.5898"
  models/hf/llama-2-7b.json --lora 16 --lora-targets all-linear --seq 8)
# Llama-3-8B (GQA: k/v 1024 wide), r=8, default q_proj, v_proj: 32 * 8 * ((4096 + 4096) +
# (4096 + 1024)) = 3,407,872; all = 8,030,261,248 + 3,407,872
lora_count(llama3_qv 3407872 8033669120
  "trainable params: 3,407,872 || all params: 8,033,669,120 || trainable%: 0.0424"
  models/hf/llama-3-8b.json --lora 8 --seq 8)
# GPT-2 (tied lm_head counted once), r=8 on PEFT's default gpt2 target c_attn (768 -> 2304):
# 12 * 8 * (768 + 2304) = 294,912; all = 124,439,808 + 294,912
lora_count(gpt2_c_attn 294912 124734720
  "trainable params: 294,912 || all params: 124,734,720 || trainable%: 0.2364"
  models/hf/gpt2.json --lora 8 --seq 8)
# the tiny Llama (H 64, 4 heads of 16, 2 KV heads, I 128, V 128, 2 layers; 90,432 parameters),
# all-linear r=4: per layer q 4*(64+64) = 512, k 4*(64+32) = 384, v 384, o 512,
# gate 4*(64+128) = 768, up 768, down 768: 4,096; 2 layers 8,192 (lm_head left out);
# 100 * 8,192 / 98,624 = 8.30629...
lora_count(tiny_all 8192 98624
  "trainable params: 8,192 || all params: 98,624 || trainable%: 8.3063"
  tests/hf/tiny/llama.json --lora 4 --lora-targets all-linear --seq 8)

foreach(case qv_fp32 qv_bf16 qv_drop_fp32 qv_drop_bf16 all_bf16 all_drop_bf16 all_drop_fp32
             qv_ckpt_bf16 all_drop_ckpt_bf16 all_drop_ckpt_fp32)
  add_test(NAME lora.saved.${case}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCHECK=saved
                   -DCASE=${case} -P ${CMAKE_CURRENT_SOURCE_DIR}/lora/check.cmake)
  set_tests_properties(lora.saved.${case} PROPERTIES LABELS lora)
endforeach()

# the training step's peak of live tensors (tests/tools/lora_peak.py), cases 0..3
foreach(case 0 1 2 3)
  add_test(NAME lora.peak.${case}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCHECK=peak
                   -DCASE=${case} -P ${CMAKE_CURRENT_SOURCE_DIR}/lora/check.cmake)
  set_tests_properties(lora.peak.${case} PROPERTIES LABELS lora)
endforeach()

# a QLoRA training step's peak of live tensors (tests/tools/qlora_peak.py): nf4 base, kbit prep, LoRA,
# paged 8-bit AdamW, cases 0..7 (targets, dropout, --checkpoint)
foreach(case 0 1 2 3 4 5 6 7)
  add_test(NAME lora.qlora_peak.${case}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCHECK=qlora
                   -DCASE=${case} -P ${CMAKE_CURRENT_SOURCE_DIR}/lora/check.cmake)
  set_tests_properties(lora.qlora_peak.${case} PROPERTIES LABELS lora)
endforeach()
