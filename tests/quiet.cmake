# quiet.cmake - `memest ARGS` exits 0 and writes nothing to stderr (no
# warning: a model whose nodes are all used, or marked "discarded").
#   cmake -DMEMEST=... -DARGS="a;b" -P quiet.cmake
execute_process(COMMAND ${MEMEST} ${ARGS} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT "${err}" STREQUAL "")
  message(FATAL_ERROR "memest ${ARGS}: exit ${rc}, stderr:\n${err}")
endif()
