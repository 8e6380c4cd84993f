# Fit checks, sweeps, --max-batch and --advise end to end (issue 5):
# consistency checks in tests/fit_checks.cmake, the exit code of --fit in a
# `set -e` shell script as CI runs it, and the GPU table in doc/cards-and-fit.md.
foreach(check max_batch_equals_sweep max_batch_none fit_line headroom sweep_outputs sweep_var
              batch_sweep_matches_single sweep_threads advise)
  add_test(NAME fit.${check}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DMODELS=${PROJECT_SOURCE_DIR}/models
                   -DGOOD=${CMAKE_CURRENT_SOURCE_DIR}/errors/good.json -DCHECK=${check}
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/fit_checks.cmake)
  set_tests_properties(fit.${check} PROPERTIES LABELS fit)
endforeach()

# --fit in a `set -e` script: a step that fits lets the script go on, one
# that does not stops it with exit code 1 (the CI line of doc/cards-and-fit.md).
set(_mlp ${PROJECT_SOURCE_DIR}/models/mlp-mnist.json)
add_test(NAME fit.set_e
         COMMAND sh -c "set -e
\"$0\" \"$1\" --batch 64 --mem 1GiB --fit
if \"$0\" \"$1\" --batch 64 --mem 1MiB --fit; then echo 'a step that does not fit passed'; exit 9; fi
rc=0; \"$0\" \"$1\" --batch 64 --mem 1MiB --fit || rc=$?
[ \"$rc\" -eq 1 ] || { echo \"exit code $rc, expected 1\"; exit 9; }
rc=0; sh -ec '\"$0\" \"$1\" --batch 64 --mem 1MiB --fit; echo set -e did not stop' \"$0\" \"$1\" || rc=$?
[ \"$rc\" -eq 1 ] || { echo \"set -e script: exit $rc\"; exit 9; }
echo ok"
                 $<TARGET_FILE:memest> ${_mlp})
set_tests_properties(fit.set_e PROPERTIES LABELS fit PASS_REGULAR_EXPRESSION "ok\n$")

# The GPU table in doc/cards-and-fit.md is what `memest --list-gpus` prints.
add_test(NAME docs.gpu_table
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DDOC=${PROJECT_SOURCE_DIR}/doc/cards-and-fit.md
                 -DLIST=--list-gpus -DMARK=gpus -P ${CMAKE_CURRENT_SOURCE_DIR}/check_doc.cmake)
set_tests_properties(docs.gpu_table PROPERTIES LABELS docs)

# (A comparison of cards searches each card's largest batch: 2 s here, about
# 30 s under ASan on a loaded machine, hence the command's 300 s limit.)
# --gpu auto --probe: the probed device's total memory is the card (through
# the fake libcuda of tests/group_probe.cmake); a device name that matches a
# preset adds its throughput figures.
function(fit_probe_case name exit frag out env)
  add_test(NAME fit.${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> "-DARGS=${ARGN}"
                   -DEXIT=${exit} "-DFRAGMENT=${frag}" "-DSTDOUT=${out}" -DKEEP_STDOUT=1 "-DENV=${env}"
                   -DTIMEOUT=300 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
  set_tests_properties(fit.${name} PROPERTIES LABELS "fit;probe" TIMEOUT 360)
endfunction()
set(_fake "MEMEST_LIBCUDA=$<TARGET_FILE:memest_fakecuda>")
fit_probe_case(gpu_auto_fits 0 "" "of 16.0 GiB (" "${_fake}|FAKECUDA_TOTAL=16G"
               ${_mlp} --batch 64 --gpu auto --probe --fit)
fit_probe_case(gpu_auto_headroom 1 "" "with 99% headroom)" "${_fake}|FAKECUDA_TOTAL=16G"
               ${_mlp} --batch 64 --gpu auto --probe --fit --headroom 99)
fit_probe_case(gpu_auto_preset 0 "" "\"arch\": \"ampere\"" "${_fake}|FAKECUDA_TOTAL=40G|FAKECUDA_NAME=NVIDIA A100-SXM4-40GB"
               ${_mlp} --batch 64 --gpu auto --probe --json)
fit_probe_case(gpu_auto_time 0 "" "samples/s" "${_fake}|FAKECUDA_TOTAL=40G|FAKECUDA_NAME=NVIDIA A100-SXM4-40GB"
               ${_mlp} --batch 64 --gpu auto --probe)
fit_probe_case(gpu_auto_no_driver 4 "cannot load the CUDA driver" "" "MEMEST_LIBCUDA=/nonexistent/libcuda.so.1"
               ${_mlp} --gpu auto --probe --fit)

# Your own presets (doc/cards-and-fit.md, "Your own presets"): --gpus-file
# adds a card and replaces the built-in t4 (tests/errors/gpus_user.json:
# 8 GiB and 1 GiB, made up), for --fit, the comparison, --list-gpus (with
# --gpus-file before or after it) and --probe --gpu auto, where a user
# preset's device name wins (acme-x1 claims the a10's, with 10 TFLOP/s
# fp32). The refusals are in tests/errors/cases.tsv.
set(_ug ${CMAKE_CURRENT_SOURCE_DIR}/errors/gpus_user.json)
fit_probe_case(user_gpus_card 0 "" "of 8.0 GiB (" "" ${_mlp} --gpus-file ${_ug} --gpu acme-x1 --fit)
fit_probe_case(user_gpus_replaces 0 "" "of 1.0 GiB (" "" ${_mlp} --batch 4096 --gpus-file ${_ug}
               --gpu t4 --fit)
fit_probe_case(user_gpus_compare 0 "" "acme-x1 " "" ${_mlp} --gpus-file ${_ug} --gpu acme-x1,l4)
fit_probe_case(user_gpus_list 0 "" "| `acme-x1` (also `x1`) (user) | Acme X1 8 GiB (test card) |" ""
               --gpus-file ${_ug} --list-gpus)
fit_probe_case(user_gpus_list_after 0 "" "`t4` replaces the built-in `t4`." ""
               --list-gpus --gpus-file ${_ug})
fit_probe_case(user_gpus_probe 0 "" "\"peak_flops\": 10000000000000,"
               "${_fake}|FAKECUDA_TOTAL=16G|FAKECUDA_NAME=NVIDIA A10"
               ${_mlp} --batch 64 --gpus-file ${_ug} --gpu auto --probe --json)
