# peaks.cmake - memest's training-step peak of live tensor bytes
# (`memory.peak_tensors`) for a tiny Hugging Face config against PyTorch 2.6
# running the same step (tests/tools/hf_peak.py: transformers v4.48.0's code
# op by op, the second step of zero_grad, forward, cross-entropy, backward,
# opt.step(); every op output storage counted from its creation until it is
# freed; tests/reference/hf_peaks.json "cases"), within 3% (issue 12).
# With -DREF=FILE (under tests/reference/), another generator's cases of the
# same layout.
# With -DARGS="a;b", more arguments of memest (qwen2_5_vl's --set image_size=16).
# With -DPERMILLE=N, within N per mille instead of 30 (the 3%); -DTOL=N: within N%.
# With -DKEY=saved_at_backward, memest's memory.saved_at_backward against the case's saved_at_backward.
# The replicas of hf_models.py follow v4.48.0's attention with the caller's loss over all B x S
# positions: transformers 4.49's code for what memest models, so memest runs --transformers 4.49 unless
# the case names its release ("transformers": tests/tools/release_peak.py).
#   cmake -DMEMEST=... -DSRC=<source dir> -DCASE=<index into cases> [-DREF=FILE] [-DARGS=...]
#         [-DPERMILLE=N | -DTOL=N] -P peaks.cmake
if(DEFINED TOL)
  math(EXPR PERMILLE "10 * ${TOL}")
elseif(NOT DEFINED PERMILLE)
  set(PERMILLE 30)
endif()
if(NOT DEFINED REF)
  set(REF hf_peaks.json)
endif()
if(NOT DEFINED TOL)
  set(TOL 3)
endif()
file(READ ${SRC}/tests/reference/${REF} text)
string(JSON seq GET "${text}" seq)
string(JSON case_seq ERROR_VARIABLE no_case_seq GET "${text}" cases ${CASE} seq)
if(NOT no_case_seq)
  set(seq ${case_seq})   # the case's own sequence length (tests/tools/offload_peak.py)
endif()
string(JSON batch GET "${text}" batch)
if(NOT DEFINED KEY)
  set(KEY peak_tensors)
endif()
foreach(key config dtype memest_attention optim impl)
  string(JSON ${key} GET "${text}" cases ${CASE} ${key})
endforeach()
string(JSON peak_tensors GET "${text}" cases ${CASE} ${KEY})
string(JSON release ERROR_VARIABLE no_release GET "${text}" cases ${CASE} transformers)
if(no_release)
  set(release 4.49)
endif()
if(dtype STREQUAL "float32")
  set(flag fp32)
elseif(dtype STREQUAL "bfloat16")
  set(flag bf16)
else()
  message(FATAL_ERROR "case ${CASE}: unknown dtype ${dtype}")
endif()
set(cmd ${MEMEST} tests/hf/tiny/${config}.json --json --batch ${batch} --seq ${seq} --dtype ${flag}
        --attention ${memest_attention} --optim ${optim} --optim-impl ${impl} --loop plain
        --transformers ${release} ${ARGS})
execute_process(COMMAND ${cmd} WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${cmd}: exit ${rc}: ${err}")
endif()
string(JSON got GET "${out}" memory ${KEY})
# |got - want| <= PERMILLE / 1000 of want, in whole numbers
math(EXPR diff "${got} - ${peak_tensors}")
if(diff LESS 0)
  math(EXPR diff "-${diff}")
endif()
math(EXPR lhs "1000 * ${diff}")
math(EXPR rhs "${PERMILLE} * ${peak_tensors}")
math(EXPR permille "1000 * (${got} - ${peak_tensors}) / ${peak_tensors}")
if(lhs GREATER rhs)
  message(FATAL_ERROR "${config} ${dtype} ${memest_attention} ${optim} ${impl} ${release}: memest ${KEY} ${got}, "
                      "PyTorch ${peak_tensors} (${permille} per mille off; ${PERMILLE} allowed)")
endif()
message(STATUS "${config} ${dtype} ${memest_attention} ${optim} ${impl}: memest ${got}, PyTorch ${peak_tensors} "
               "(${permille} per mille)")
