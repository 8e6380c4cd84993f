# Helpers of the check scripts of tests/hf/ (which include this file).
#
# memest_run(OUT ARGS...): runs ${MEMEST} ARGS in ${SRC} and puts its standard
# output in OUT; a non-zero exit fails the test. memest_json(OUT ARGS...): the
# same with --json (the check scripts of tests/hf/ and tests/lora/ include this).
function(memest_run out_var)
  execute_process(COMMAND ${MEMEST} ${ARGN} WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "memest ${ARGN}: exit code ${rc}\n${out}\n${err}")
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
