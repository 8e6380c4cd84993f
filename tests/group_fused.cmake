# "fused_params" (models/README.md; src/sim/sim_fused_grad.c): tests/fused/
# chain.json, three linears 4 -> 4 without bias in a chain, the slices of one
# fused [3, 4, 4] float32 parameter (x @ W[e], e = 0, 1, 2), batch 1. The
# gradient events of the last backward, by hand, as PyTorch's autograd makes
# them (the backward reaches experts.2 first): per slice its weight gradient
# (4 * 4 * 4 = 64 bytes), then SelectBackward's zero-filled gradient of the
# whole parameter (3 * 64 = 192 bytes), then the slice's goes; the first whole
# one stays in AccumulateGrad's input buffer, each later one is added into it
# in place and freed; after the last slice the buffer is .grad (set_to_none:
# stolen), or is added into .grad and freed (--grad-accum 2's second
# micro-batch: one more free of 192 bytes). Frozen (--lora 2: the base
# frozen, the adapters' gradients only), no gradient of the whole size.
set(_one "experts.2 alloc 64;experts.2 alloc 192;experts.2 free 64")
foreach(e 1 0)
  list(APPEND _one "experts.${e} alloc 64" "experts.${e} alloc 192" "experts.${e} free 64" "experts.${e} free 192")
endforeach()
set(_accum ${_one} "experts.0 free 192")
# named: the same chain written flat, each layer naming the group
# (tests/fused/chain_named.json), the same events.
foreach(c "step;chain;--batch;1;${_one}" "accum;chain;--batch;2;--grad-accum;2;${_accum}"
          "named;chain_named;--batch;1;${_one}")
  list(GET c 0 name)
  list(GET c 1 model)
  list(SUBLIST c 2 -1 rest)
  set(args tests/fused/${model}.json --optim sgd)
  set(want "")
  foreach(x IN LISTS rest)
    if(x MATCHES "^experts")
      list(APPEND want "${x}")
    else()
      list(APPEND args "${x}")
    endif()
  endforeach()
  add_test(NAME unit.fused.grad_events.${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                   -DWORK=${CMAKE_CURRENT_BINARY_DIR} -DNAME=${name} "-DARGS=${args}" "-DWANT=${want}"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/fused/grad_events.cmake)
  set_tests_properties(unit.fused.grad_events.${name} PROPERTIES LABELS unit)
endforeach()
add_test(NAME unit.fused.grad_events.lora
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 -DWORK=${CMAKE_CURRENT_BINARY_DIR} -DNAME=lora
                 "-DARGS=tests/fused/chain.json;--optim;sgd;--batch;1;--lora;2;--lora-targets;all-linear" -DFORBID=192
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/fused/grad_events.cmake)
set_tests_properties(unit.fused.grad_events.lora PROPERTIES LABELS unit)
# the schema: true only with "repeat"
add_test(NAME unit.fused.true_needs_repeat
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest>
                 "-DARGS=tests/fused/no_repeat.json" -DEXIT=3
                 "-DFRAGMENT=\"fused_params\": true is for a node with \"repeat\"" -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
set_tests_properties(unit.fused.true_needs_repeat PROPERTIES LABELS unit WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
