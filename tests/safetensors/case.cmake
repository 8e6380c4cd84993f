# One safetensors case (tests/group_safetensors.cmake): writes the model folder of CASE
# with tests/tools/safetensors_gen.py into OUT, then runs memest on it and checks it with
# tests/run_case.cmake (the exit code, the one-line error holding FRAGMENT, and every
# '^'-separated fragment of STDOUT in stdout and of STDERR in stderr).
#   cmake -DPYTHON=python3 -DGEN=safetensors_gen.py -DCASE=name -DOUT=dir -DMEMEST=path
#         -DEXIT=code [-DFRAGMENT=text] [-DSTDOUT=a^b] [-DSTDERR=a^b] [-DEXTRA=--json]
#         -P case.cmake
execute_process(COMMAND ${PYTHON} ${GEN} ${CASE} ${OUT} RESULT_VARIABLE rc ERROR_VARIABLE gerr)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${GEN} ${CASE} ${OUT} failed (${rc}): ${gerr}")
endif()
set(ARGS ${OUT} ${EXTRA})
include(${CMAKE_CURRENT_LIST_DIR}/../run_case.cmake)
