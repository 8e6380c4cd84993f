# Writes a large model file at test time (rather than keeping hundreds of MiB
# in the repository), then runs memest on it like run_case.cmake.
#   cmake -DMEMEST=path -DKIND=sparse|values|values_at|whitespace -DOUT=file
#         -DEXIT=3 -DFRAGMENT=text -P generated_case.cmake
# sparse:     a file one byte over the 256 MiB limit (a sparse file: no disk
#             space, refused before it is read);
# values:     2,000,011 JSON values in 4 MiB (over the value limit);
# values_at:  2,000,000 JSON values (the model's 10 and 1,999,990 strings
#             in a comment): at the limit, accepted;
# whitespace: a valid model behind 64 MiB of white space (read and parsed
#             in bounded time and memory).
if(KIND STREQUAL "sparse")
  file(WRITE "${OUT}" "")
  execute_process(COMMAND truncate -s 268435457 "${OUT}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "truncate failed: ${rc}")
  endif()
elseif(KIND STREQUAL "values")
  string(REPEAT "0," 100000 chunk)
  file(WRITE "${OUT}" "{\"inputs\": [{\"name\": \"x\", \"shape\": [4]}], \"layers\": [{\"type\": \"relu\"}], \"comment\": [")
  foreach(i RANGE 1 20)
    file(APPEND "${OUT}" "${chunk}")
  endforeach()
  file(APPEND "${OUT}" "0]}\n")
elseif(KIND STREQUAL "values_at")
  string(REPEAT "\"a\"," 100000 chunk)
  file(WRITE "${OUT}" "{\"inputs\": [{\"name\": \"x\", \"shape\": [4]}], \"layers\": [{\"type\": \"relu\"}], \"comment\": [")
  foreach(i RANGE 1 19)
    file(APPEND "${OUT}" "${chunk}")
  endforeach()
  string(REPEAT "\"a\"," 99989 chunk)
  file(APPEND "${OUT}" "${chunk}\"a\"]}\n")
elseif(KIND STREQUAL "whitespace")
  string(REPEAT " " 65536 chunk)
  string(REPEAT "${chunk}\n" 16 chunk)
  file(WRITE "${OUT}" "")
  foreach(i RANGE 1 64)
    file(APPEND "${OUT}" "${chunk}")
  endforeach()
  file(APPEND "${OUT}" "{\"inputs\": [{\"name\": \"x\", \"shape\": [4]}], \"layers\": [{\"type\": \"relu\"}]}\n")
else()
  message(FATAL_ERROR "unknown KIND ${KIND}")
endif()
set(ARGS "${OUT}")
include(${CMAKE_CURRENT_LIST_DIR}/../run_case.cmake)
file(REMOVE "${OUT}")
