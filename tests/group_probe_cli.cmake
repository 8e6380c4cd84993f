# The probe end to end: memest --probe loading the fake libcuda through
# MEMEST_LIBCUDA, exactly as it loads the real one.
function(probe_case name exit frag out env)
  add_test(NAME probe_cli.${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> "-DARGS=${ARGN}"
                   -DEXIT=${exit} "-DFRAGMENT=${frag}" "-DSTDOUT=${out}" -DKEEP_STDOUT=1
                   "-DENV=${env}" -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
  set_tests_properties(probe_cli.${name} PROPERTIES LABELS probe)
endfunction()

set(_fake "MEMEST_LIBCUDA=$<TARGET_FILE:memest_fakecuda>")
set(_mlp ${PROJECT_SOURCE_DIR}/models/mlp-mnist.json)
probe_case(fits 0 "" "fits" "${_fake}|FAKECUDA_TOTAL=16G|FAKECUDA_CONTEXT=300M"
           ${_mlp} --batch 64 --probe)
probe_case(oom 1 "" "out of memory" "${_fake}|FAKECUDA_TOTAL=400M|FAKECUDA_CONTEXT=390M"
           ${_mlp} --batch 256 --probe)
probe_case(json 0 "" "\"probe\"" "${_fake}|FAKECUDA_TOTAL=16G" ${_mlp} --probe --json)
probe_case(no_driver 4 "cannot load the CUDA driver" "Memory of a training step"
           "MEMEST_LIBCUDA=/nonexistent/libcuda.so.1" ${_mlp} --probe)
probe_case(init_fails 4 "cannot probe" "Memory of a training step"
           "${_fake}|FAKECUDA_FAIL_INIT=999" ${_mlp} --probe)
probe_case(no_device 4 "cannot probe" "" "${_fake}|FAKECUDA_DEVICES=0" ${_mlp} --probe)
probe_case(bad_device 4 "cannot probe" "" "${_fake}|FAKECUDA_DEVICES=1" ${_mlp} --probe --device 3)
probe_case(alloc_error 5 "CUDA_ERROR_UNKNOWN" "" "${_fake}|FAKECUDA_FAIL_ALLOC_AT=3"
           ${_mlp} --probe)
# The probe replays the allocator's segments of the step the report gives
# (tests/probe_agree.cmake), training and --inference.
set(_r50 ${PROJECT_SOURCE_DIR}/models/resnet50.json)
foreach(case "segments|${_r50};--batch;64" "inference|${_r50};--batch;8;--inference")
  string(REPLACE "|" ";" c "${case}")
  list(POP_FRONT c name)
  add_test(NAME probe_cli.${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest>
                   -DFAKE=$<TARGET_FILE:memest_fakecuda> "-DARGS=${c}"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/probe_agree.cmake)
  set_tests_properties(probe_cli.${name} PROPERTIES LABELS probe)
endforeach()
probe_case(segment_oom 1 "" " MiB segment with "
           "${_fake}|FAKECUDA_TOTAL=2G" ${_r50} --batch 64 --probe)
# The replay under memory pressure on a device sized to its least memory
# (tests/probe_pressure.cmake): it runs there and not one granule below.
add_test(NAME probe_cli.pressure_least
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest>
                 -DFAKE=$<TARGET_FILE:memest_fakecuda>
                 -DMODEL=${PROJECT_SOURCE_DIR}/models/resnet18.json
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/probe_pressure.cmake)
set_tests_properties(probe_cli.pressure_least PROPERTIES LABELS probe)
