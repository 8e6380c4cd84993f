# memest_json(OUT ARGS...): runs ${MEMEST} ARGS --json in ${SRC} and puts its
# standard output in OUT; a non-zero exit fails the test (the check scripts
# of tests/hf/ include this).
function(memest_json out_var)
  execute_process(COMMAND ${MEMEST} ${ARGN} --json WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "memest ${ARGN}: exit code ${rc}\n${out}\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()
