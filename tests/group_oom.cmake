# Allocation-failure injection (tests/oom/oom_test.c), as in SQLite's OOM
# tests: memest runs in process with each allocation failing in turn, once
# (transient) and from then on (persistent); every run must exit 5 with one
# "out of memory" message, or end exactly as without the failure, with no
# leak and no crash. Only without sanitizers: ASan replaces malloc itself.
#
#   oom.*       label "oom": every allocation of one command per option
#               family (about 25 s of CPU in all);
#   oom_full.*  label "oom-full", with -DMEMEST_OOM_EXHAUSTIVE=ON (.ci/run
#               sets it): every allocation of every shipped model and of
#               every file in tests/errors/, and every 5th or 10th (plus
#               the first and last 100) of the two slowest commands
#               (minutes).
option(MEMEST_OOM_EXHAUSTIVE "Add the exhaustive allocation-failure tests (label oom-full; minutes)" OFF)
if(MEMEST_SANITIZE)
  return()
endif()

add_executable(oom_test ${CMAKE_CURRENT_SOURCE_DIR}/oom/oom_test.c)
target_link_libraries(oom_test PRIVATE memest_core)
# no built-in malloc/free: the file defines them (and GCC must not turn its
# malloc + memset into a call to its own calloc)
target_compile_options(oom_test PRIVATE -fno-builtin)
set_target_properties(oom_test PROPERTIES ENABLE_EXPORTS ON) # names in --trace backtraces
add_dependencies(oom_test memest_fakecuda)

set(_m ${PROJECT_SOURCE_DIR}/models)
set(_e ${CMAKE_CURRENT_SOURCE_DIR}/errors)
# oom_case(PREFIX NAME [oom_test options] -- memest arguments): test
# PREFIX.NAME, label "oom" for PREFIX oom, "oom-full" for oom_full.
function(oom_case prefix name)
  string(REPLACE "_" "-" label ${prefix})
  add_test(NAME ${prefix}.${name} COMMAND oom_test ${ARGN})
  set_tests_properties(${prefix}.${name} PROPERTIES LABELS ${label} TIMEOUT 1800)
endfunction()

oom_case(oom mlp -- ${_m}/mlp-mnist.json)
# blocks, repeat, variables, a tied weight
oom_case(oom gpt2_json_layers -- ${_m}/gpt2.json --batch 2 --set n_layer=2 --layers --json)
oom_case(oom resnet18_inference -- ${_m}/resnet18.json --inference --layers)
oom_case(oom lstm_sweep -- ${_m}/lstm-lm.json --sweep 1:8:x2 --csv)
oom_case(oom gpt2_sweep_var -- ${_m}/gpt2.json --sweep-var n_layer=1:3:+1 --json)
oom_case(oom lstm_max_batch -- ${_m}/lstm-lm.json --max-batch --mem 1GiB)
oom_case(oom mlp_advise -- ${_m}/mlp-mnist.json --advise --mem 1GiB)
oom_case(oom mlp_fit -- ${_m}/mlp-mnist.json --gpu a100-40gb --fit)
# a comparison of cards with a price (27,000 allocations: every 2000th, and
# the first and last 100)
oom_case(oom lstm_compare --every 2000 -- ${_m}/lstm-lm.json --gpu t4,l4 --batch 4 --price t4=0.3)
# with a preset card: time estimates, with recomputation under --checkpoint
oom_case(oom resnet18_advise -- ${_m}/resnet18.json --advise --gpu a100-40gb)
oom_case(oom gpt2_checkpoint_sweep -- ${_m}/gpt2.json --checkpoint --gpu a100-40gb --set n_layer=2
         --sweep 1:4:x2)
oom_case(oom gpt2_checkpoint -- ${_m}/gpt2.json --checkpoint --gpu a100-40gb)
# Adafactor's grouped foreach lists; FSDP's adapter units, LoRA and its
# FlatParameters, and FSDP2's per-parameter shards
oom_case(oom mlp_adafactor -- ${_m}/mlp-mnist.json --optim adafactor --batch 2)
oom_case(oom gpt2_fsdp_lora -- ${_m}/gpt2.json --set n_layer=2 --gpus 4 --strategy fsdp --dtype bf16
         --lora 8 --lora-targets c_attn)
oom_case(oom gpt2_fsdp2_offload -- ${_m}/gpt2.json --set n_layer=2 --gpus 4 --strategy fsdp --fsdp2
         --offload optimizer+params --gpu a100-40gb)
oom_case(oom plot_timeline -- ${_m}/mlp-mnist.json --plot @TMP/step.svg --timeline @TMP/step.csv)
oom_case(oom bad_shape --exit 3 -- ${_e}/shape_mismatch.json)
oom_case(oom bad_json --exit 3 -- ${_e}/truncated.json --json)
oom_case(oom unknown_type --exit 3 -- ${_e}/unknown_type.json)
oom_case(oom block_reserved_arg --exit 3 -- ${_e}/block_reserved_arg.json)
oom_case(oom unused_input -- ${_e}/unused_input.json)
oom_case(oom list_gpus -- --list-gpus)
oom_case(oom list_ops -- --list-ops)
oom_case(oom help -- --help)
# The probe on the fake driver: its own allocations (it stands for the
# driver) never fail; two runs before, because ld.so keeps a block of each
# dlopen()'s lookup data, reused from the second load on.
oom_case(oom probe --no-fail-in fakecuda --warm-up 2 --partial -- ${_m}/mlp-mnist.json --probe)
set_tests_properties(oom.probe PROPERTIES ENVIRONMENT
                     "MEMEST_LIBCUDA=$<TARGET_FILE:memest_fakecuda>;FAKECUDA_TOTAL=16G")

if(MEMEST_OOM_EXHAUSTIVE)
  file(GLOB _models CONFIGURE_DEPENDS ${_m}/*.json)
  foreach(f IN LISTS _models)
    get_filename_component(name ${f} NAME_WE)
    if(NOT name STREQUAL "gpus")   # the GPU presets, not a model
      oom_case(oom_full ${name} -- ${f} --batch 2 --layers --gpu a100-40gb)
    endif()
  endforeach()
  file(GLOB _bad CONFIGURE_DEPENDS ${_e}/*.json)
  foreach(f IN LISTS _bad)
    get_filename_component(name ${f} NAME_WE)
    if(NOT name MATCHES "^(repeat_limit|work_limit|long_expression)$") # seconds per run
      oom_case(oom_full errors.${name} --exit any -- ${f})
    endif()
  endforeach()
  oom_case(oom_full gpt2_checkpoint_max_batch -- ${_m}/gpt2.json --checkpoint --gpu a100-40gb
           --set n_layer=2 --max-batch)
  # 6,000 allocations of 60 ms runs; about 1,000 estimates (--max-batch scans the batches between the
  # last steady one, 21,399, and the answer, 24,743: the allocator's rounding)
  oom_case(oom_full gpt2_advise --every 5 -- ${_m}/gpt2.json --advise --gpu a100-40gb)
  # about 103,000 allocations: --max-batch estimates every batch between the last steady one and the
  # last whose exact tensor bytes fit (flow_sweep.c: the allocated peak may dip, the tensor bytes do not)
  oom_case(oom_full mlp_max_batch --every 25 -- ${_m}/mlp-mnist.json --max-batch --mem 768MiB)
endif()
