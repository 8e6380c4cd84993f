# offload_time.cmake - the step time an offload adds (src/card/roofline.c,
# issue 33 item 6), by hand. Llama-2-7B, bf16, 8 GPUs on an H100 preset:
# 6,738,415,616 parameters, all trainable.
#  ZeRO-2, --offload optimizer: the flat group padded to a multiple of 16
#   and cut: 842,301,952 elements a rank. CPU Adam at the default 1e9
#   updates/s: 0.842301952 s; over the host link at the default 25e9 B/s
#   the bf16 gradient partition out and the bf16 parameters back, 2 x
#   842,301,952 x 2 = 3,369,207,808 B: 0.13476831232 s; 0.97707026432 s, and
#   no GPU optimizer step. With --offload-bw 1e10 --cpu-optim-rate 2e9:
#   0.421150976 + 0.3369207808 = 0.7580717568 s.
#  ZeRO-3, --offload optimizer+params: as above, and the parameter
#   partitions (all but the 65 norms of 4096, which stay whole: 6,738,149,376
#   / 8 x 2 = 1,684,537,344 B) copied in for the forward and the backward:
#   0.842301952 + (3,369,207,808 + 2 x 1,684,537,344) / 25e9 = 1.11183325184 s.
#   cmake -DMEMEST=... -DSRC=<source dir> -P offload_time.cmake
function(expect_seconds name want)
  execute_process(COMMAND ${MEMEST} models/hf/llama-2-7b.json --seq 128 --gpus 8 --dtype bf16
                          --gpu h100-80gb ${ARGN} --json
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: exit ${rc}: ${err}")
  endif()
  string(JSON got GET "${out}" time offload_seconds)
  string(JSON opt GET "${out}" time optimizer_seconds)
  # compared in nanoseconds, within one (the JSON's doubles carry 17 digits)
  foreach(v got want)
    string(REGEX MATCH "^([0-9]+)\\.?([0-9]*)" m "${${v}}")
    set(whole "${CMAKE_MATCH_1}")
    set(frac "${CMAKE_MATCH_2}000000000")
    string(SUBSTRING "${frac}" 0 9 frac)
    string(REGEX REPLACE "^0+([0-9])" "\\1" frac "${frac}")
    math(EXPR ns_${v} "${whole} * 1000000000 + ${frac}")
  endforeach()
  math(EXPR d "${ns_got} - ${ns_want}")
  if(d LESS -1 OR d GREATER 1 OR NOT opt EQUAL 0)
    message(FATAL_ERROR "${name}: offload_seconds ${got} (optimizer ${opt}), expected ${want} (0)")
  endif()
endfunction()
expect_seconds(zero2 0.97707026432 --strategy zero2 --offload optimizer)
expect_seconds(zero2_rates 0.7580717568 --strategy zero2 --offload optimizer --offload-bw 1e10
               --cpu-optim-rate 2e9)
expect_seconds(zero3_params 1.11183325184 --strategy zero3 --offload optimizer+params)
execute_process(COMMAND ${MEMEST} models/hf/llama-2-7b.json --gpus 8 --strategy zero2
                        --gpu h100-80gb --offload-bw 1e10
                WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "--offload-bw times an offload")
  message(FATAL_ERROR "--offload-bw without an offload: exit ${rc}: ${err}")
endif()
