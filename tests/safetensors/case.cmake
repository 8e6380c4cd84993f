# One safetensors case (tests/group_safetensors.cmake): writes the model folder of CASE
# with tests/tools/safetensors_gen.py into OUT, then runs memest on it and checks it with
# tests/run_case.cmake (the exit code, the one-line error holding FRAGMENT, and every
# '^'-separated fragment of STDOUT in stdout and of STDERR in stderr).
# With -DOOM=path/to/oom_test, the run is oom_test's instead (every allocation failing in
# turn: exit 5 with one message, or the clean run's exit EXIT; no leak).
#   cmake -DPYTHON=python3 -DGEN=safetensors_gen.py -DCASE=name -DOUT=dir -DMEMEST=path
#         -DEXIT=code [-DFRAGMENT=text] [-DSTDOUT=a^b] [-DSTDERR=a^b] [-DEXTRA="--json --seq 32"]
#         [-DOOM=oom_test] -P case.cmake
execute_process(COMMAND ${PYTHON} ${GEN} ${CASE} ${OUT} RESULT_VARIABLE rc ERROR_VARIABLE gerr)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${GEN} ${CASE} ${OUT} failed (${rc}): ${gerr}")
endif()
string(REPLACE " " ";" EXTRA "${EXTRA}")
set(ARGS ${OUT} ${EXTRA})
if(OOM)   # every allocation failing in turn (tests/oom/oom_test.c)
  execute_process(COMMAND ${OOM} --exit ${EXIT} -- ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "oom_test --exit ${EXIT} -- ${ARGS}: ${rc}\n${out}")
  endif()
  return()
endif()
include(${CMAKE_CURRENT_LIST_DIR}/../run_case.cmake)
