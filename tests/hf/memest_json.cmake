# Helpers of the check scripts of tests/hf/ (which include this file).
#
# memest_run(OUT ARGS...): runs ${MEMEST} ARGS in ${SRC} and puts its standard
# output in OUT; a non-zero exit fails the test. memest_json(OUT ARGS...): the
# same with --json (the check scripts of tests/hf/ and tests/lora/ include this).
#
# The replicas these scripts compare with (tests/tools/hf_models.py and the
# generators built on it) follow v4.48.0's attention with the caller's loss
# over all B x S positions: transformers 4.49's code for what memest models.
# So a Hugging Face config (a file with a "model_type") runs with
# --transformers 4.49 unless the caller names a release; a model file takes
# none.
function(memest_run out_var)
  set(args ${ARGN})
  list(GET args 0 first)
  list(FIND args --transformers named)
  if(named EQUAL -1 AND NOT first MATCHES "^-")
    if(NOT IS_ABSOLUTE "${first}")
      set(first "${SRC}/${first}")
    endif()
    if(EXISTS "${first}" AND NOT IS_DIRECTORY "${first}")
      file(READ "${first}" head LIMIT 65536)
      if(head MATCHES "\"model_type\"")
        list(APPEND args --transformers 4.49)
      endif()
    endif()
  endif()
  execute_process(COMMAND ${MEMEST} ${args} WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "memest ${args}: exit code ${rc}\n${out}\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(memest_json out_var)
  memest_run(out ${ARGN} --json)
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

# check_params(CONFIG_FILE LABEL META META_BUFFERS): memest's parameter count
# of CONFIG_FILE equals ${WANT} (the published figure) and META (the model
# PyTorch builds on the meta device), and its buffer elements META_BUFFERS.
function(check_params config label meta meta_buffers)
  memest_json(json ${config} --batch 1 --set seq_len=8)
  string(JSON total GET "${json}" params total)
  string(JSON buffers GET "${json}" params buffers)
  message(STATUS "${label}: memest ${total}, published ${WANT}, meta-built ${meta}; buffers memest ${buffers}, meta-built ${meta_buffers}")
  if(NOT total EQUAL WANT OR NOT total EQUAL meta)
    message(FATAL_ERROR "${label}: ${total} parameters, expected ${WANT} (published) and ${meta} (meta-built)")
  endif()
  if(NOT buffers EQUAL meta_buffers)
    message(FATAL_ERROR "${label}: ${buffers} buffer elements, the meta-built model has ${meta_buffers}")
  endif()
endfunction()

# compare_activations(LABEL WANT WANT_PARAMS ARGS...): memest's saved
# activations (memory.activations) and parameters of ARGS equal PyTorch's WANT
# and WANT_PARAMS exactly; with TOLERANCE_PPM set (parts per million), the
# activations within that share of WANT.
function(compare_activations name want want_params)
  memest_json(json ${ARGN})
  string(JSON got GET "${json}" memory activations)
  string(JSON params GET "${json}" params total)
  message(STATUS "${name}: memest ${got} bytes, PyTorch ${want}; parameters ${params}, PyTorch ${want_params}")
  if(NOT params EQUAL want_params)
    message(FATAL_ERROR "${name}: ${params} parameters, PyTorch has ${want_params}")
  endif()
  if(DEFINED TOLERANCE_PPM)
    math(EXPR diff "${got} - ${want}")
    if(diff LESS 0)
      math(EXPR diff "-${diff}")
    endif()
    math(EXPR bound "${want} * ${TOLERANCE_PPM} / 1000000")
    if(diff GREATER bound)
      message(FATAL_ERROR "${name}: saved activations ${got} bytes, PyTorch ${want}: ${diff} apart, more than ${TOLERANCE_PPM} ppm")
    endif()
  elseif(NOT got EQUAL want)
    message(FATAL_ERROR "${name}: saved activations ${got} bytes, PyTorch ${want}")
  endif()
endfunction()

# compare_tiny(ENTRY CONFIG DTYPE ATTN): the run "DTYPE/ATTN" (float32 or
# bfloat16, eager or sdpa) of a generator's tiny entry (batch, seq_len,
# params_total, runs) against `memest tests/hf/tiny/CONFIG.json`;
# transformers' "sdpa" is memest's auto kernel choice.
function(compare_tiny t config dtype attn)
  string(JSON batch GET "${t}" batch)
  string(JSON seq GET "${t}" seq_len)
  string(JSON want_params GET "${t}" params_total)
  string(JSON want GET "${t}" runs "${dtype}/${attn}" saved_activation_bytes_cuda_corrected)
  set(kernel ${attn})
  if(attn STREQUAL "sdpa" AND DEFINED SDPA_KERNEL)
    set(kernel ${SDPA_KERNEL})   # the kernel the reference ran (a caller's choice)
  elseif(attn STREQUAL "sdpa")
    set(kernel auto)
  endif()
  set(dt fp32)
  if(dtype STREQUAL "bfloat16")
    set(dt bf16)
  endif()
  compare_activations(${config}/${dtype}/${attn} ${want} ${want_params} tests/hf/tiny/${config}.json
                      --batch ${batch} --set seq_len=${seq} --attention ${kernel} --dtype ${dt} ${ARGN})
endfunction()
