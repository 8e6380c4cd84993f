# published_params.cmake - `memest --json CONFIG` counts the parameters and
# buffer elements a model's publisher states (the figure and its arithmetic
# written in tests/group_hf_published.cmake, next to the call).
# and, for a mixture of experts, the parameters one token uses (WANT_ACTIVE;
# without it, active must be the total).
#   cmake -DMEMEST=... -DSRC=<source dir> -DCONFIG=<file> -DWANT=<params> -DWANT_BUF=<buffer elements>
#         [-DWANT_ACTIVE=<params>] -P published_params.cmake
execute_process(COMMAND ${MEMEST} ${CONFIG} --json WORKING_DIRECTORY ${SRC}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "memest ${CONFIG} --json: exit ${rc}: ${err}")
endif()
string(JSON got GET "${out}" params total)
string(JSON got_buf GET "${out}" params buffers)
if(NOT got EQUAL WANT)
  message(FATAL_ERROR "${CONFIG}: memest counts ${got} parameters, published ${WANT}")
endif()
if(NOT got_buf EQUAL WANT_BUF)
  message(FATAL_ERROR "${CONFIG}: memest counts ${got_buf} buffer elements, the modeling code ${WANT_BUF}")
endif()
string(JSON got_active GET "${out}" params active)
if(NOT DEFINED WANT_ACTIVE OR WANT_ACTIVE STREQUAL "")
  set(WANT_ACTIVE ${WANT})
endif()
if(NOT got_active EQUAL WANT_ACTIVE)
  message(FATAL_ERROR "${CONFIG}: memest counts ${got_active} active parameters, published ${WANT_ACTIVE}")
endif()
message(STATUS "${CONFIG}: ${got} parameters (${got_active} active), ${got_buf} buffer elements")
