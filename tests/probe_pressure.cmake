# probe_pressure.cmake - the probe on a device too small for the step's
# unconstrained reserved memory (issue 34): the segments' replay, which holds
# every segment, runs out of memory, and the replay under pressure (the
# caching allocator's model on the fake device: each segment cuMemAlloc'd,
# released when a cuMemAlloc fails, the request retried) takes over. On a
# device whose free memory after the context is the least memory that replay
# reports (probe.pressure.least), the step runs (exit 0); one granule (2 MiB)
# less, it does not (exit 1).
#
# The least is the probe's own, of the events it replays (the setup, then one
# step), not memory.least_allocator_memory, which the estimate searches over
# the warm-up step too: the warm-up leaves the cache otherwise than the setup
# alone does, so the two may differ (resnet18 at batch 16: 564 and 570 MiB).
#   cmake -DMEMEST=... -DFAKE=<libfakecuda.so> -DMODEL=<model.json> -P probe_pressure.cmake
set(ctx_mib 300)
function(probe_at total_mib out_rc out_json)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env MEMEST_LIBCUDA=${FAKE}
                          FAKECUDA_TOTAL=${total_mib}M FAKECUDA_CONTEXT=${ctx_mib}M
                          ${MEMEST} ${MODEL} --batch 16 --probe --json
                  RESULT_VARIABLE rc OUTPUT_VARIABLE json ERROR_VARIABLE err)
  set(${out_rc} ${rc} PARENT_SCOPE)
  set(${out_json} "${json}" PARENT_SCOPE)
endfunction()

# a device with room for the context and the segments but 2 MiB: pressure
probe_at(16384 rc json)
string(JSON reserved GET "${json}" probe predicted_reserved)
math(EXPR total "${ctx_mib} + ${reserved} / 1048576 - 2")
probe_at(${total} rc json)
string(JSON pressure TYPE "${json}" probe pressure)
if(NOT pressure STREQUAL "OBJECT")
  message(FATAL_ERROR "a ${total} MiB device: no replay under pressure (probe.pressure ${pressure})")
endif()
string(JSON least GET "${json}" probe pressure least)
math(EXPR least_mib "${least} / 1048576")
math(EXPR at "${ctx_mib} + ${least_mib}")
math(EXPR below "${at} - 2")
probe_at(${at} rc json)
string(JSON completes GET "${json}" probe pressure completes)
if(NOT rc EQUAL 0 OR NOT completes)
  message(FATAL_ERROR "free = the least (${least_mib} MiB): exit ${rc}, completes ${completes}")
endif()
probe_at(${below} rc json)
string(JSON completes GET "${json}" probe pressure completes)
if(NOT rc EQUAL 1 OR completes)
  message(FATAL_ERROR "free = the least - 2 MiB: exit ${rc}, completes ${completes}")
endif()
message(STATUS "segments ${reserved} B; under pressure the step runs in ${least_mib} MiB, "
               "not in ${below} - ${ctx_mib} MiB")
