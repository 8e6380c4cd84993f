# pipeline.cmake - pipeline stages of tests/dist/megatron_gpt.json (8 layers
# of h = 1024: 12h^2 + 13h = 12,596,224 parameters each; the embedding and
# the output layer 51200 x 1024 = 52,428,800 each, the final LayerNorm 2,048)
# on --pp 4, by hand:
#   parameters: stage 0 the embedding and 2 layers, 77,621,248; stages 1, 2
#   two layers, 25,192,448; stage 3 two layers, the final norm and the output
#   layer, 77,623,296;
#   the activations each stage holds at once (Narayanan et al. 2021 and
#   Megatron-LM's schedules.py): 1F1B keeps min(pp - s, M) micro-batches in
#   flight on stage s, so in_flight_bytes = (min(4 - s, M) - 1) x one
#   micro-batch's activations: 3, 2, 1, 0 with M = 8; 1, 1, 1, 0 with M = 2;
#   interleaved with V = 2 chunks per stage: (4 - s - 1) x 2 + (2 - 1) x 4
#   warm-up chunks plus the one running, 11, 9, 7, 5 halves of the stage,
#   so in_flight_bytes = activations x chunks / 2 - activations; stage 0's
#   11 halves of 2 layers are 11 layers' activations, Megatron-LM's
#   interleaved penalty L x (1 + (p - 1) / (p v)) = 8 x 11/8 = 11.
#   cmake -DMEMEST=... -DSRC=<source dir> -P pipeline.cmake
function(stages name)
  execute_process(COMMAND ${MEMEST} tests/dist/megatron_gpt.json --dtype bf16 --set layers=8
                          --set seq_len=512 --batch 2 --gpus 4 --pp 4 ${ARGN} --json
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: exit ${rc}: ${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()
function(check name want_params want_chunks per)
  foreach(s 0 1 2 3)
    list(GET want_params ${s} wp)
    list(GET want_chunks ${s} wc)
    string(JSON p GET "${out}" parallel stages ${s} parameters)
    string(JSON c GET "${out}" parallel stages ${s} in_flight_chunks)
    string(JSON act GET "${out}" parallel stages ${s} activations)
    string(JSON held GET "${out}" parallel stages ${s} in_flight_bytes)
    math(EXPR want_held "${act} / ${per} * ${wc} - ${act}")
    if(want_held LESS 0)
      set(want_held 0)
    endif()
    if(NOT p EQUAL wp OR NOT c EQUAL wc OR NOT held EQUAL want_held)
      message(FATAL_ERROR "${name}: stage ${s}: ${p} parameters, ${c} chunks, ${held} bytes "
                          "held; expected ${wp}, ${wc}, ${want_held}")
    endif()
  endforeach()
  message(STATUS "${name}: as by hand")
endfunction()
set(params 77621248 25192448 25192448 77623296)
stages(1f1b --micro-batches 8)
check(1f1b "${params}" "4;3;2;1" 1)
stages(1f1b_m2 --micro-batches 2)
check(1f1b_m2 "${params}" "2;2;2;1" 1)
stages(interleaved --micro-batches 8 --schedule interleaved --virtual-stages 2)
check(interleaved "${params}" "11;9;7;5" 2)
# the binding stage is the one with the largest device total, first in the text
string(JSON b GET "${out}" parallel binding_stage)
string(JSON tb GET "${out}" parallel stages ${b} total_device)
foreach(s 0 1 2 3)
  string(JSON t GET "${out}" parallel stages ${s} total_device)
  if(t GREATER tb)
    message(FATAL_ERROR "stage ${s} needs ${t} bytes, more than the binding stage ${b} (${tb})")
  endif()
endforeach()
string(JSON total GET "${out}" memory total_device)
if(NOT total EQUAL tb)
  message(FATAL_ERROR "the report's device total ${total} is not the binding stage's ${tb}")
endif()

# --plot and --timeline with --pp: every stage's files beside the binding
# stage's, "-stage<s>" before the extension; the plain name is the binding one
if(NOT WORK)   # the test's scratch directory (ctest: the build tree)
  set(WORK ${CMAKE_CURRENT_BINARY_DIR})
endif()
set(dir ${WORK}/pipeline_files)
file(REMOVE_RECURSE ${dir})
file(MAKE_DIRECTORY ${dir})
execute_process(COMMAND ${MEMEST} tests/dist/megatron_gpt.json --dtype bf16 --set layers=8
                        --set seq_len=512 --batch 2 --gpus 4 --pp 4 --micro-batches 8
                        --timeline ${dir}/step.csv --plot ${dir}/step.svg --json
                WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "files: exit ${rc}: ${err}")
endif()
string(JSON b GET "${out}" parallel binding_stage)
foreach(s 0 1 2 3)
  foreach(ext csv svg)
    if(NOT EXISTS ${dir}/step-stage${s}.${ext})
      message(FATAL_ERROR "no step-stage${s}.${ext}")
    endif()
  endforeach()
endforeach()
file(SHA256 ${dir}/step.csv h)
file(SHA256 ${dir}/step-stage${b}.csv hb)
if(NOT h STREQUAL hb)
  message(FATAL_ERROR "step.csv is not the binding stage ${b}'s timeline")
endif()
