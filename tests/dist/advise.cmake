# advise.cmake - --advise with several GPUs weighs the other engines, each
# option's figure the estimate of that configuration: Llama-2-7B on 8 GPUs
# with DDP on an A100 80 GB; the option "strategy_zero3" needs what
# `--strategy zero3 --fit` needs, "strategy_zero2_offload" what
# `--strategy zero2 --offload optimizer --fit` needs, and ZeRO is no longer
# "not available".
#   cmake -DMEMEST=... -DSRC=<source dir> -P advise.cmake
set(base models/hf/llama-2-7b.json --seq 512 --dtype bf16 --gpus 8 --gpu a100-80gb --json)
execute_process(COMMAND ${MEMEST} ${base} --strategy ddp --advise
                WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE adv ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "--advise: exit ${rc}: ${err}")
endif()
string(JSON na GET "${adv}" not_available)
if(na MATCHES "zero")
  message(FATAL_ERROR "--advise with --gpus still lists ZeRO as not available: ${na}")
endif()
string(JSON n LENGTH "${adv}" options)
math(EXPR last "${n} - 1")
foreach(c "strategy_zero3;--strategy;zero3" "strategy_zero2_offload;--strategy;zero2;--offload;optimizer")
  list(POP_FRONT c key)
  set(found "")
  foreach(i RANGE ${last})
    string(JSON name GET "${adv}" options ${i} name)
    if(name STREQUAL key)
      string(JSON found GET "${adv}" options ${i} needs)
    endif()
  endforeach()
  execute_process(COMMAND ${MEMEST} ${base} ${c} --fit
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE fit ERROR_VARIABLE err)
  string(JSON want GET "${fit}" fit needs)
  if(NOT found STREQUAL want)
    message(FATAL_ERROR "--advise ${key}: needs '${found}', the estimate with ${c}: ${want}")
  endif()
endforeach()
