# expect_json.cmake - included by the tests of this folder:
# expect_json(<name> ARGS <memest arguments>... WANT <json.path> <value>...)
# runs memest on Llama-2-7B at --seq 128 with the arguments and --json,
# fails unless exit 0 and every path has its value (cmake reads JSON true as
# ON); sets `stderr` in the caller to what memest wrote there.
function(expect_json name)
  cmake_parse_arguments(W "" "" "ARGS;WANT" ${ARGN})
  execute_process(COMMAND ${MEMEST} models/hf/llama-2-7b.json --seq 128 ${W_ARGS} --json
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: exit ${rc}: ${err}")
  endif()
  while(W_WANT)
    list(POP_FRONT W_WANT path want)
    string(REPLACE "." ";" keys "${path}")
    string(JSON got GET "${out}" ${keys})
    if(NOT got STREQUAL want)
      message(FATAL_ERROR "${name}: ${path} is ${got}, expected ${want}")
    endif()
  endwhile()
  set(stderr "${err}" PARENT_SCOPE)
endfunction()
