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
