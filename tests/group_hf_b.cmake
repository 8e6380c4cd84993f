# Hugging Face architectures gpt2, bert, opt, gpt_neox, t5 (models/arch/) against
# independent figures (tests/hf/check_b.cmake):
#  - parameter counts of the shipped example configs (models/hf/): the published
#    figure, written here, and the model built on torch.device("meta") from
#    tests/tools/hf_models_b.py (tests/reference/hf_figures_b.json), exactly;
#  - bytes saved for backward of the tiny configs (tests/hf/tiny_b/) in float32
#    and bfloat16, eager and SDPA attention: PyTorch 2.6 measured by
#    tests/tools/hf_figures_b.py, CUDA-corrected, within 1%.
set(_hf_b_params
  # GPT-2 small, tied lm_head: Hugging Face openai-community/gpt2
  "gpt2.json=124439808"
  # BertForMaskedLM (the architecture bert-base-uncased's config names): BertModel
  # with pooler 109,482,240 (Hugging Face bert-base-uncased) - pooler 768*768+768
  # + cls.predictions (transform dense 768*768+768, LayerNorm 2*768, bias 30522)
  "bert-base-uncased.json=109514298"
  # facebook/opt-125m, tied lm_head
  "opt-125m.json=125239296"
  # EleutherAI/pythia-160m model card (embed_out untied)
  "pythia-160m.json=162322944"
  # google-t5/t5-small, tied lm_head
  "t5-small.json=60506624"
  # google/flan-t5-base (untied lm_head, gated-gelu): 2*32128*768
  # + 12*(4*768*768 + 3*768*2048 + 2*768) + 32*12 + 768
  # + 12*(8*768*768 + 3*768*2048 + 3*768) + 32*12 + 768
  "flan-t5-base.json=247577856")
foreach(entry ${_hf_b_params})
  string(REPLACE "=" ";" kv ${entry})
  list(GET kv 0 file)
  list(GET kv 1 want)
  add_test(NAME hf_b.params.${file}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCHECK=params
                   -DCONFIG=models/hf/${file} -DWANT=${want} -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/check_b.cmake)
  set_tests_properties(hf_b.params.${file} PROPERTIES LABELS hf)
endforeach()

foreach(case gpt2 gpt2_sdpa bert bert_sdpa opt opt_sdpa gpt_neox gpt_neox_sdpa gpt_neox_sequential t5 t5_gated)
  foreach(dtype float32 bfloat16)
    add_test(NAME hf_b.activations.${case}_${dtype}
             COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                     -DCHECK=activations -DCASE=${case}_${dtype} -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/check_b.cmake)
    set_tests_properties(hf_b.activations.${case}_${dtype} PROPERTIES LABELS hf)
  endforeach()
endforeach()

# The release of the attention (--transformers), by hand: the tiny GPT-2 and
# GPT-NeoX (tests/hf/tiny_b/, 2 layers, n_embd 64, batch 2, seq 16, bfloat16,
# flash, the Trainer's loop, use_cache on). Up to v4.47 the attention reads
# the views of the fused projection; from v4.56 it reads DynamicLayer's
# torch.cat copies of k and v (2 x 16 x 64 x 2 = 4,096 bytes each), which
# flash saves. GPT-2: q's view still keeps c_attn's output, so the copies
# add 2 layers x 2 x 4,096 = 16,384 bytes; GPT-NeoX: q and k are RoPE's new
# tensors, so v's copy (4,096) replaces query_key_value's output held by v's
# view (3 x 4,096) and k's copy its rotated k: 2 layers x 2 x 4,096 = 16,384
# bytes fewer.
foreach(entry "gpt2=16384" "gpt_neox=-16384")
  string(REPLACE "=" ";" kv ${entry})
  list(GET kv 0 name)
  list(GET kv 1 want)
  set(_args "${PROJECT_SOURCE_DIR}/tests/hf/tiny_b/${name}.json;--batch;2;--seq;16;--dtype;bf16;--attention;flash;--loop;trainer")
  add_test(NAME hf_b.release_cache_copies.${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest>
                   "-DARGS_A=${_args};--transformers;5" "-DARGS_B=${_args};--transformers;4.47"
                   "-DFIELD=memory;saved_at_backward" -DEXPECTED=${want}
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/json_diff.cmake)
  set_tests_properties(hf_b.release_cache_copies.${name} PROPERTIES LABELS hf)
endforeach()
