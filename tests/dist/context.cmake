# context.cmake - context parallelism (--cp C): each of the C ranks holds
# seq / C tokens of every activation (ring attention exchanges the keys and
# values chunk by chunk and keeps only its own), and the gradients are
# reduced, the ZeRO partitions cut, over the data-parallel x context-parallel
# ranks (Megatron-LM's distributed optimizer). So Llama-2-7B on 16 GPUs with
# --cp 2 --seq 4096 saves what one GPU saves at --seq 2048, its model states
# are those of 16 data-parallel ranks, and its global batch is 8 sequences
# (the two context-parallel ranks share one).
#   cmake -DMEMEST=... -DSRC=<source dir> -P context.cmake
foreach(c "cp;--cp;2;--seq;4096" "dp;--seq;2048")
  list(POP_FRONT c name)
  execute_process(COMMAND ${MEMEST} models/hf/llama-2-7b.json --dtype bf16 --gpus 16 --strategy zero1
                          ${c} --json
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: exit ${rc}: ${err}")
  endif()
  string(JSON act_${name} GET "${out}" memory activations)
  string(JSON states_${name} GET "${out}" parallel model_states total)
  string(JSON gb_${name} GET "${out}" parallel global_batch)
endforeach()
if(NOT act_cp EQUAL act_dp OR NOT states_cp EQUAL states_dp OR NOT gb_cp EQUAL 8 OR NOT gb_dp EQUAL 16)
  message(FATAL_ERROR "--cp 2: activations ${act_cp}, states ${states_cp}, global batch ${gb_cp}; "
                      "expected ${act_dp}, ${states_dp}, 8")
endif()
