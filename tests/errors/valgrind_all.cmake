# Runs memest under valgrind on tests/errors/*.json (with --json, so that the
# error document is written too) and fails when valgrind reports an error or
# a leak (its exit code 99) or memest crashes. SHARD of SHARDS: every
# SHARDS-th file from the SHARD-th, so that ctest can run shards in parallel.
# The three files that expand up to the node and work limits take seconds
# natively, minutes under valgrind; they run natively and under ASan only.
#   cmake -DMEMEST=path -DVALGRIND=path/to/valgrind -DDIR=tests/errors
#         [-DSHARD=0 -DSHARDS=1] -P valgrind_all.cmake
if(NOT SHARDS)
  set(SHARD 0)
  set(SHARDS 1)
endif()
file(GLOB files ${DIR}/*.json)
list(FILTER files EXCLUDE REGEX "/(work_limit|long_expression|repeat_limit)\\.json$")
set(bad "")
set(i 0)
set(n 0)
foreach(f IN LISTS files)
  math(EXPR k "${i} % ${SHARDS}")
  math(EXPR i "${i} + 1")
  if(NOT k EQUAL SHARD)
    continue()
  endif()
  math(EXPR n "${n} + 1")
  execute_process(COMMAND ${VALGRIND} --quiet --leak-check=full
                          --errors-for-leak-kinds=definite,indirect --error-exitcode=99
                          ${MEMEST} ${f} --json
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err TIMEOUT 300)
  if(NOT rc MATCHES "^[0-5]$")
    string(APPEND bad "${f}: exit ${rc}\n${err}\n")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "valgrind found problems:\n${bad}")
endif()
message(STATUS "${n} bad inputs clean under valgrind")
