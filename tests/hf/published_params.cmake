# published_params.cmake - `memest --json CONFIG` counts the parameters and
# buffer elements a model's publisher states (the figure and its arithmetic
# written in tests/group_hf_published.cmake, next to the call) and, for a
# mixture of experts, the parameters one token uses (WANT_ACTIVE; without it,
# active must be the total).
#   cmake -DMEMEST=... -DSRC=<source dir> -DCONFIG=<file> -DWANT=<params> -DWANT_BUF=<buffer elements>
#         [-DWANT_ACTIVE=<params>] [-DARGS="--weights;dense"] -P published_params.cmake
include(${CMAKE_CURRENT_LIST_DIR}/memest_json.cmake)
memest_json(out ${CONFIG} ${ARGS})
if(NOT DEFINED WANT_ACTIVE OR WANT_ACTIVE STREQUAL "")
  set(WANT_ACTIVE ${WANT})
endif()
foreach(check "total;${WANT};parameters, published" "buffers;${WANT_BUF};buffer elements, the modeling code"
              "active;${WANT_ACTIVE};active parameters, published")
  list(GET check 0 key)
  list(GET check 1 want)
  list(GET check 2 words)
  string(JSON got GET "${out}" params ${key})
  if(NOT got EQUAL want)
    message(FATAL_ERROR "${CONFIG}: memest counts ${got} ${words} ${want}")
  endif()
  message(STATUS "${CONFIG}: params.${key} ${got}")
endforeach()
