# json_diff.cmake: runs memest with ARGS_A and ARGS_B (";"-lists, --json
# added) and checks that FIELD (a JSON path of string(JSON) members, ";"-
# separated: "memory;peak_tensors") of the first minus that of the second is
# EXPECTED exactly. Used where a hand calculation gives the difference an
# option makes (tests/group_loop.cmake). Without ARGS_B the second is 0: the
# first's figure itself is checked.
set(v_B 0)
set(sides A)
if(DEFINED ARGS_B)
  list(APPEND sides B)
endif()
foreach(side ${sides})
  execute_process(COMMAND ${MEMEST} ${ARGS_${side}} --json RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "memest ${ARGS_${side}} exited ${rc}: ${err}")
  endif()
  string(JSON v_${side} GET "${out}" ${FIELD})
endforeach()
math(EXPR diff "${v_A} - ${v_B}")
if(NOT diff EQUAL EXPECTED)
  message(FATAL_ERROR "${FIELD}: ${v_A} - ${v_B} = ${diff}, expected ${EXPECTED}")
endif()
message(STATUS "${FIELD}: ${v_A} - ${v_B} = ${diff} as expected")
