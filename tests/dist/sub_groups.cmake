# sub_groups.cmake - DeepSpeed ZeRO-3 steps the optimizer one sub-group at a
# time (DeepSpeed v0.16.9 deepspeed/runtime/zero/stage3.py:2120-2135): each
# sub-group's fp32 gradient is made (_prepare_fp32_grad_for_sub_group,
# stage3.py:1891-1910), stepped over and set to None (_release_sub_group,
# stage3.py:1941-1946) before the next; the sub-groups are the trainable
# parameters in order, closed once their partitions reach sub_group_size
# elements or at the last (_create_fp16_sub_groups, stage3.py:943-966; one
# when sub_group_size is at least the whole partition). Read from the step's
# timeline: the optimizer's temporaries, their largest live sum and the
# number of fp32 gradients made.
#
# models/mlp-mnist.json on 2 GPUs in bf16: its parameters in order are
# 784 x 512 = 401,408, 512, 512 x 512 = 262,144, 512, 512 x 10 = 5,120, 10;
# each cut in two (ceil(numel / 2)): 200,704, 256, 131,072, 256, 2,560, 5,
# the partition 334,853 elements.
#   sub_group_size 150000 (ds_zero3_sub_groups.json): 200,704 >= 150,000
#     closes the first sub-group; 256 + 131,072 + 256 + 2,560 + 5 = 134,149
#     the second (at the last parameter). fp32 gradients of 4 x 200,704 =
#     802,816 and 4 x 134,149 = 536,596 bytes, one after the other: the
#     largest live is 802,816. With --optim-impl foreach, AdamW's foreach
#     program makes one temporary of the stepped tensor's bytes (the fp32
#     master sub-group, 4 bytes an element) while the gradient lives:
#     2 x 802,816 = 1,605,632, then 2 x 536,596 = 1,073,192.
#   sub_group_size 0: each parameter a sub-group of its own (0 >= any
#     partition), six gradients, the largest 4 x 200,704 = 802,816.
#   the default (1e9 >= 334,853): one sub-group, the whole partition's fp32
#     gradient 4 x 334,853 = 1,339,412 bytes (foreach: 2 x that = 2,678,824),
#     as before sub-groups were modelled.
# Fused AdamW (DeepSpeed's FusedAdam, the default here) makes no temporaries.
#   cmake -DMEMEST=... -DSRC=<source dir> -DWORK=<dir> -P sub_groups.cmake
cmake_policy(SET CMP0007 NEW)   # keep the empty fields (the optimizer's events have no node)
file(WRITE ${WORK}/ds_zero3_sub_group_0.json
     "{\"bf16\": {\"enabled\": true}, \"zero_optimization\": {\"stage\": 3, \"sub_group_size\": 0}}\n")
function(run name want_peak want_grads)
  set(csv ${WORK}/sub_groups_${name}.csv)
  execute_process(COMMAND ${MEMEST} models/mlp-mnist.json --batch 1 --gpus 2 --optim adamw
                          ${ARGN} --timeline ${csv}
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: exit ${rc}: ${err}")
  endif()
  file(STRINGS ${csv} lines)
  list(POP_FRONT lines header)
  string(REPLACE "," ";" header "${header}")
  list(FIND header phase iphase)
  list(FIND header event ievent)
  list(FIND header optimizer_temporaries itemp)
  list(FIND header bytes ibytes)
  set(peak 0)
  set(grads 0)
  set(prev 0)
  foreach(l ${lines})
    string(REPLACE "," ";" f "${l}")
    list(GET f ${iphase} phase)
    if(NOT phase STREQUAL "optimizer")
      continue()
    endif()
    list(GET f ${itemp} t)
    list(GET f ${ievent} ev)
    if(t GREATER peak)
      set(peak ${t})
    endif()
    if(ev STREQUAL "alloc" AND prev EQUAL 0)   # the first temporary of a sub-group: its fp32 gradient
      math(EXPR grads "${grads} + 1")
    endif()
    set(prev ${t})
  endforeach()
  if(NOT peak EQUAL want_peak OR NOT grads EQUAL want_grads)
    message(FATAL_ERROR "${name}: the step's temporaries peak at ${peak} bytes over ${grads} "
                        "sub-groups, expected ${want_peak} over ${want_grads}")
  endif()
  message(STATUS "${name}: ${peak} bytes at most, ${grads} sub-groups")
endfunction()
run(sub_groups 802816 2 --deepspeed tests/dist/ds_zero3_sub_groups.json)
run(sub_groups_foreach 1605632 2 --deepspeed tests/dist/ds_zero3_sub_groups.json --optim-impl foreach)
run(one_per_param 802816 6 --deepspeed ${WORK}/ds_zero3_sub_group_0.json)
run(default 1339412 1 --strategy zero3 --dtype bf16)
run(default_foreach 2678824 1 --strategy zero3 --dtype bf16 --optim-impl foreach)
