# report.cmake - what the reports say about quantised weights: Llama-2-7B has
# 7 linear layers in each of its 32 decoder layers (q, k, v, o, gate, up,
# down: 224), the lm_head left dense.
#   cmake -DMEMEST=... -DSRC=<source dir> -P report.cmake
# run(VAR ARGS...): memest ARGS on Llama-2-7B, its stdout in VAR; it must succeed
function(run var)
  execute_process(COMMAND ${MEMEST} models/hf/llama-2-7b.json ${ARGN} WORKING_DIRECTORY ${SRC}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "memest ${ARGN}: exit ${rc}: ${err}")
  endif()
  set(${var} "${text}" PARENT_SCOPE)
endfunction()
run(out --weights nf4 --double-quant)
string(FIND "${out}" ", weights nf4 (double-quantised) in 224 linear layers\n" at)
if(at LESS 0)
  message(FATAL_ERROR "no weights line in\n${out}")
endif()
run(out --weights nf4 --double-quant --json)
string(JSON fmt GET "${out}" weights format)
string(JSON layers GET "${out}" weights layers)
string(JSON dq GET "${out}" weights double_quant)
string(JSON bs GET "${out}" weights blocksize)
string(JSON cd GET "${out}" weights compute_dtype)
if(NOT fmt STREQUAL "nf4" OR NOT layers EQUAL 224 OR NOT dq STREQUAL "ON" OR NOT bs EQUAL 64
   OR NOT cd STREQUAL "fp32")
  message(FATAL_ERROR "weights: ${fmt} ${layers} ${dq} ${bs} ${cd}")
endif()
# a dense model has no "weights" object
run(out --json)
string(JSON none ERROR_VARIABLE missing GET "${out}" weights)
if(NOT missing)
  message(FATAL_ERROR "a dense model reports weights: ${none}")
endif()
