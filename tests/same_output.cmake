# Two command lines print the same thing with the same exit code: a
# subcommand and the flag that chooses its mode (memest fit M ... and
# memest M ... --fit).
#   cmake -DMEMEST=path -DA="fit;m.json;--gpu;t4" -DB="m.json;--gpu;t4;--fit" -P same_output.cmake
execute_process(COMMAND ${MEMEST} ${A} RESULT_VARIABLE rc_a OUTPUT_VARIABLE out_a ERROR_VARIABLE err_a)
execute_process(COMMAND ${MEMEST} ${B} RESULT_VARIABLE rc_b OUTPUT_VARIABLE out_b ERROR_VARIABLE err_b)
if(NOT rc_a STREQUAL rc_b OR NOT out_a STREQUAL out_b OR NOT err_a STREQUAL err_b)
  message(FATAL_ERROR "memest ${A}: exit ${rc_a}\n${out_a}${err_a}\n"
                      "memest ${B}: exit ${rc_b}\n${out_b}${err_b}")
endif()
if(out_a STREQUAL "")
  message(FATAL_ERROR "memest ${A} printed nothing")
endif()
