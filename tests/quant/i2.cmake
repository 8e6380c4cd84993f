# i2.cmake - memest's no-grad forward peak (memory.inference.bytes) of
# bigcode/octocoder over a 20-token prompt against the alloc-peaks
# transformers' llm_tutorial_optimization.md published (rows I1, I2 of
# tests/reference/gpu-measurements.md):
#   bf16 (I1)                    29.0260648727417 GiB = 31,166,499,840 B, within 1%
#   load_in_4bit (I2; the config's defaults: fp4, no double quantisation,
#     float32 compute, fp16 weights) 9.543574333190918 GiB = 10,247,334,912 B, within 1%
#   load_in_8bit (I2)            15.219234466552734 GiB = 16,341,528,576 B, within 3%: the
#     bitsandbytes of 2023 kept the int8 weight in the col_ampere / col_turing tile layout
#     (F.transform), which memest does not model (0.49.2's row-major CB and SCB)
# The 4-bit figure is dominated by the weights (8.60 GiB) and the largest layer's
# transients: its fp16 dequantised weight and their float32 copy (MatMul4Bit with the
# default float32 compute dtype).
#   cmake -DMEMEST=... -DSRC=<source dir> -DCASE=bf16|fp4|int8 -P i2.cmake
if(CASE STREQUAL "bf16")
  set(opts --dtype bf16)
  set(want 31166499840)
  set(pct 1)
elseif(CASE STREQUAL "fp4")
  set(opts --dtype fp16 --weights fp4)
  set(want 10247334912)
  set(pct 1)
else()
  set(opts --dtype fp16 --weights int8)
  set(want 16341528576)
  set(pct 3)
endif()
set(cmd ${MEMEST} tests/quant/octocoder.json --inference --json ${opts})
execute_process(COMMAND ${cmd} WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${cmd}: exit ${rc}: ${err}")
endif()
string(JSON got GET "${out}" memory inference bytes)
math(EXPR diff "${got} - ${want}")
if(diff LESS 0)
  math(EXPR diff "-${diff}")
endif()
math(EXPR lhs "100 * ${diff}")
math(EXPR rhs "${pct} * ${want}")
math(EXPR permille "1000 * (${got} - ${want}) / ${want}")
if(lhs GREATER rhs)
  message(FATAL_ERROR "octocoder ${CASE}: memest ${got}, published ${want} (${permille} per mille off; "
                      "${pct}% allowed)")
endif()
message(STATUS "octocoder ${CASE}: memest ${got}, published ${want} (${permille} per mille)")
