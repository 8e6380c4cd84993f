# json_equals.cmake - one number of `memest ARGS --json` equals WANT, a
# figure the calling test writes out by hand (for the quantised layouts:
# tests/group_hf_gpt_oss.cmake, tests/group_quant.cmake).
#   cmake -DMEMEST=... -DSRC=<source dir> -DARGS="config;--dtype;bf16" -DFIELD="memory;parameters"
#         -DWANT=<number> -P json_equals.cmake
include(${CMAKE_CURRENT_LIST_DIR}/memest_json.cmake)
memest_json(out ${ARGS})
string(JSON got GET "${out}" ${FIELD})
if(NOT got EQUAL WANT)
  message(FATAL_ERROR "memest ${ARGS}: ${FIELD} is ${got}, expected ${WANT}")
endif()
message(STATUS "memest ${ARGS}: ${FIELD} ${got}")
