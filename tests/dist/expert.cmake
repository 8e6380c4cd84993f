# expert.cmake - expert parallelism (--ep E) on Mixtral-8x7B
# (models/hf/mixtral-8x7b.json: 46,702,792,704 parameters, 32 layers of 8
# experts of 3 x 4096 x 14336 = 176,160,768 parameters each), by hand: each
# of 8 expert-parallel ranks holds one expert per layer, so 7 x 32 experts
# fewer, 46,702,792,704 - 224 x 176,160,768 = 7,242,780,672 parameters; its
# expert receives the tokens of all 8 ranks routed to it (8 x T x 2 / 8 with
# balanced routing: 2T, all a rank's tokens' two assignments), so the expert
# loop saves what the 8 experts of one GPU save together: the activations
# are those of --ep 1.
#   cmake -DMEMEST=... -DSRC=<source dir> -P expert.cmake
foreach(ep 1 8)
  execute_process(COMMAND ${MEMEST} models/hf/mixtral-8x7b.json --seq 512 --dtype bf16 --gpus 8
                          --ep ${ep} --json
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "--ep ${ep}: exit ${rc}: ${err}")
  endif()
  string(JSON params${ep} GET "${out}" params total)
  string(JSON act${ep} GET "${out}" memory activations)
endforeach()
math(EXPR want "46702792704 - 224 * 3 * 4096 * 14336")
if(NOT params1 EQUAL 46702792704 OR NOT params8 EQUAL want OR NOT act8 EQUAL act1)
  message(FATAL_ERROR "--ep 8: ${params8} parameters (expected ${want}), activations ${act8} "
                      "(expected ${act1})")
endif()
