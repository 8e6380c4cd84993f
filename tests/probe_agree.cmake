# probe_agree.cmake - memest --probe --json on the fake driver (whose 2 MiB
# granularity divides every segment): the probe must replay the step the
# report gives (its predicted allocated peak and reserved memory are the
# report's memory.peak and memory.reserved, the no-grad pass's with
# --inference, which differ from the training step's) and the device must
# hold exactly the segments replayed (measured_reserved = predicted_reserved).
cmake_minimum_required(VERSION 3.19)
#   cmake -DMEMEST=... -DFAKE=<libfakecuda> -DARGS="model;options" -P probe_agree.cmake
set(ENV{MEMEST_LIBCUDA} "${FAKE}")
set(ENV{FAKECUDA_TOTAL} 16G)
execute_process(COMMAND ${MEMEST} ${ARGS} --probe --json RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "memest ${ARGS} --probe --json: exit ${rc}: ${err}")
endif()
string(JSON replay GET "${out}" probe replay)
string(JSON pres GET "${out}" probe predicted_reserved)
string(JSON mres GET "${out}" probe measured_reserved)
string(JSON ppeak GET "${out}" probe predicted_peak)
string(JSON reserved GET "${out}" memory reserved)
string(JSON peak GET "${out}" memory peak)
string(JSON train GET "${out}" memory train_peak reserved)
set(fail "")
if(NOT replay STREQUAL "segments")
  string(APPEND fail "replay ${replay}, not segments; ")
endif()
if(NOT pres EQUAL reserved OR NOT ppeak EQUAL peak)
  string(APPEND fail "the probe replayed reserved ${pres}, peak ${ppeak}; the report gives ${reserved}, ${peak}; ")
endif()
if(NOT mres EQUAL pres)
  string(APPEND fail "the device held ${mres} for ${pres} of segments; ")
endif()
if("--inference" IN_LIST ARGS AND reserved EQUAL train)
  string(APPEND fail "--inference: the report's reserved equals the training step's (${train}): no check; ")
endif()
if(fail)
  message(FATAL_ERROR "${fail}")
endif()
message(STATUS "probe: ${replay}, reserved ${pres} predicted, ${mres} measured, peak ${ppeak}")
