# The gpt2, bert, opt, gpt_neox and t5 templates (models/arch/) against
# PyTorch (tests/group_hf_b.cmake):
#   cmake -DMEMEST=path -DSRC=source-dir -DCHECK=params -DCONFIG=models/hf/x.json -DWANT=N -P check_b.cmake
#     memest's parameter count of a shipped example config equals WANT (the
#     published figure) and the model built on torch.device("meta") by
#     tests/tools/hf_figures_b.py (tests/reference/hf_figures_b.json), and
#     its buffer elements equal the meta-built model's.
#   cmake -DMEMEST=path -DSRC=source-dir -DCHECK=activations -DCASE=key -P check_b.cmake
#     the bytes saved for backward (memory.activations) of a tiny config equal
#     hf_figures_b.json's activations.<key>.saved_activation_bytes_cuda_corrected
#     within 1%, and its parameters exactly.
cmake_minimum_required(VERSION 3.25)

file(READ ${SRC}/tests/reference/hf_figures_b.json ref)

include(${CMAKE_CURRENT_LIST_DIR}/memest_json.cmake)

if(CHECK STREQUAL "params")
  get_filename_component(base ${CONFIG} NAME)
  string(JSON meta GET "${ref}" params ${base} params)
  string(JSON meta_buffers GET "${ref}" params ${base} buffers)
  check_params(${CONFIG} ${CONFIG} ${meta} ${meta_buffers})
elseif(CHECK STREQUAL "activations")
  string(JSON c GET "${ref}" activations ${CASE})
  string(JSON config GET "${c}" config)
  string(JSON impl GET "${c}" attn_implementation)
  string(JSON dtype GET "${c}" dtype)
  string(JSON batch GET "${c}" batch)
  string(JSON seq GET "${c}" seq_len)
  string(JSON want GET "${c}" saved_activation_bytes_cuda_corrected)
  string(JSON want_params GET "${c}" params)
  # transformers' "sdpa" is memest's auto kernel choice (its sdpa_attention_forward and PyTorch's
  # dispatcher); "eager" its eager attention
  if(impl STREQUAL "sdpa")
    set(impl auto)
  endif()
  # tests/tools/hf_models_b.py builds no cache and follows v4.48.0's attention (gpt_neox: sdpa_attention_forward's
  # .contiguous()), except GPT-2's, which is GPT2SdpaAttention (the views as they are): the code before the
  # attention refactor (huggingface/transformers#35235, v4.48), so memest runs gpt2 as --transformers 4.47, the
  # others as 4.48 (a template that reads no release ignores it)
  if(CASE MATCHES "^gpt2")
    set(release 4.47)
  else()
    set(release 4.48)
  endif()
  set(args ${config} --batch ${batch} --set seq_len=${seq} --attention ${impl} --transformers ${release})
  if(dtype STREQUAL "bfloat16")
    list(APPEND args --dtype bf16)
  else()
    list(APPEND args --dtype fp32)
  endif()
  string(JSON dec ERROR_VARIABLE no_dec GET "${c}" decoder_seq_len)
  if(NOT no_dec)
    list(APPEND args --set decoder_seq_len=${dec})
  endif()
  memest_json(json ${args})
  string(JSON got GET "${json}" memory activations)
  string(JSON params GET "${json}" params total)
  math(EXPR diff "${got} - ${want}")
  if(diff LESS 0)
    math(EXPR diff "-(${diff})")
  endif()
  message(STATUS "${CASE}: memest ${got} bytes, PyTorch ${want} (difference ${diff}); parameters ${params}, PyTorch ${want_params}")
  if(NOT params EQUAL want_params)
    message(FATAL_ERROR "${CASE}: ${params} parameters, PyTorch has ${want_params}")
  endif()
  math(EXPR tol "${want} / 100")
  if(diff GREATER tol)
    message(FATAL_ERROR "${CASE}: saved activations ${got} bytes, PyTorch ${want}: more than 1% apart")
  endif()
else()
  message(FATAL_ERROR "unknown CHECK ${CHECK}")
endif()
