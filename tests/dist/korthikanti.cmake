# korthikanti.cmake - the activations one transformer layer saves, against
# Table 2 of Korthikanti et al. 2022 ("Reducing Activation Recomputation in
# Large Transformer Models"): with s the sequence, b the micro-batch, h the
# hidden size, a the heads and t the tensor-parallel size, in bytes of 16-bit
# activations,
#   no parallelism        sbh (34 + 5as/h)
#   tensor parallel       sbh (10 + 24/t + 5as/(ht))
#   tensor + sequence     sbh/t (34 + 5as/h)
#   parallel
# (attention 11sbh + 5as^2b: the QKV input 2sbh, Q and K 4sbh, the softmax
# output 2as^2b, its dropout mask as^2b and output 2as^2b, V 2sbh, the
# projection's input 2sbh, its dropout mask sbh; MLP 19sbh: fc1's input
# 2sbh, GeLU's input 8sbh, fc2's input 8sbh, the dropout mask sbh; the two
# LayerNorms' inputs 4sbh; under tensor parallelism the LayerNorms, the
# inputs of the column-parallel linears and the dropout masks, 10sbh, stay
# whole, the rest is split; with sequence parallelism those 10sbh are split
# along the sequence too, the column-parallel linears saving their shard of
# the gathered input). The table leaves out LayerNorm's saved mean and rstd:
# float32 [s, b] each, two LayerNorms, 16sb bytes (split with the sequence),
# added here.
# One layer's figure is the difference between the model with 2 layers and
# with 1 (tests/dist/megatron_gpt.json: s 2048, b 1, h 1024, a 16, fp16).
#   cmake -DMEMEST=... -DSRC=<source dir> -P korthikanti.cmake
set(s 2048)
set(b 1)
set(h 1024)
set(a 16)
function(layer t sp var)
  foreach(layers 1 2)
    execute_process(COMMAND ${MEMEST} tests/dist/megatron_gpt.json --dtype fp16 --batch ${b}
                            --set seq_len=${s} --gpus ${t} --tp ${t} ${sp} --set layers=${layers}
                            --json
                    WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "tp ${t} ${sp}, ${layers} layers: exit ${rc}: ${err}")
    endif()
    string(JSON act${layers} GET "${out}" memory activations)
  endforeach()
  math(EXPR got "${act2} - ${act1}")
  set(${var} ${got} PARENT_SCOPE)
endfunction()
foreach(t 1 2 4 8)
  layer(${t} "" got)
  # sbh (10 + 24/t) + 5as^2b/t + 16sb (t divides 24 and a here); t = 1 is
  # the no-parallelism row, 10 + 24 = 34
  math(EXPR want "${s} * ${b} * ${h} * (10 + 24 / ${t}) + 5 * ${a} * ${s} * ${s} * ${b} / ${t} + 16 * ${s} * ${b}")
  if(NOT got EQUAL want)
    message(FATAL_ERROR "tp ${t}: one layer saves ${got} bytes, Table 2 gives ${want}")
  endif()
  message(STATUS "tp ${t}: ${got} bytes per layer, as Table 2")
  if(t EQUAL 1)
    continue()
  endif()
  layer(${t} --sequence-parallel got)
  # sbh/t (34 + 5as/h) + 16sb/t
  math(EXPR want "(${s} * ${b} * ${h} * 34 + 5 * ${a} * ${s} * ${s} * ${b} + 16 * ${s} * ${b}) / ${t}")
  if(NOT got EQUAL want)
    message(FATAL_ERROR "tp ${t} + sequence parallel: one layer saves ${got} bytes, Table 2 gives ${want}")
  endif()
  message(STATUS "tp ${t} + sequence parallel: ${got} bytes per layer, as Table 2")
endforeach()

# Full recomputation (Table 2's last row, 2sbh per layer): with --checkpoint
# a layer keeps only its input until its backward. What a pipeline stage
# holds per micro-batch in flight (parallel.stages[].activations: what its
# forward leaves for its backward) grows by 2sbh with each layer of stage 0
# (4 layers on 2 stages against 2 on 2).
foreach(layers 2 4)
  execute_process(COMMAND ${MEMEST} tests/dist/megatron_gpt.json --dtype fp16 --batch ${b}
                          --set seq_len=${s} --gpus 2 --pp 2 --checkpoint --set layers=${layers}
                          --json
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "full recomputation, ${layers} layers: exit ${rc}: ${err}")
  endif()
  string(JSON held${layers} GET "${out}" parallel stages 0 activations)
endforeach()
math(EXPR got "${held4} - ${held2}")
math(EXPR want "2 * ${s} * ${b} * ${h}")
if(NOT got EQUAL want)
  message(FATAL_ERROR "full recomputation: one layer holds ${got} bytes, Table 2 gives ${want}")
endif()
message(STATUS "full recomputation: ${got} bytes per layer, as Table 2")
