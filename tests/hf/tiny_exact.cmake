# tiny_exact.cmake - the bytes saved for backward (memory.activations) of
# `memest tests/hf/tiny/NAME.json --batch B --set seq_len=S --dtype D
# --attention eager|auto` equal, exactly, what PyTorch 2.6 saved running the
# plain-PyTorch replica of transformers' code (tests/tools/hf_models.py,
# measured by tests/tools/hf_figures.py: tests/reference/hf_figures.json
# tiny.NAME.runs["DTYPE/ATTN"].saved_activation_bytes_cuda_corrected), and the
# parameters its params_total. transformers' "sdpa" is memest's auto kernel
# choice.
#   cmake -DMEMEST=... -DSRC=<source dir> -DNAME=<tiny config> -DDTYPE=float32|bfloat16
#         -DATTN=eager|sdpa -P tiny_exact.cmake
include(${CMAKE_CURRENT_LIST_DIR}/memest_json.cmake)
file(READ ${SRC}/tests/reference/hf_figures.json ref)
string(JSON t GET "${ref}" tiny ${NAME})
string(JSON batch GET "${t}" batch)
string(JSON seq GET "${t}" seq_len)
string(JSON want_params GET "${t}" params_total)
string(JSON want GET "${t}" runs "${DTYPE}/${ATTN}" saved_activation_bytes_cuda_corrected)
set(kernel ${ATTN})
if(ATTN STREQUAL "sdpa")
  set(kernel auto)
endif()
set(dt fp32)
if(DTYPE STREQUAL "bfloat16")
  set(dt bf16)
endif()
memest_json(json tests/hf/tiny/${NAME}.json --batch ${batch} --set seq_len=${seq} --dtype ${dt}
            --attention ${kernel})
string(JSON got GET "${json}" memory activations)
string(JSON params GET "${json}" params total)
message(STATUS "${NAME} ${DTYPE}/${ATTN}: memest ${got} bytes, PyTorch ${want}; parameters ${params}, PyTorch ${want_params}")
if(NOT params EQUAL want_params)
  message(FATAL_ERROR "${NAME}: ${params} parameters, PyTorch has ${want_params}")
endif()
if(NOT got EQUAL want)
  message(FATAL_ERROR "${NAME} ${DTYPE}/${ATTN}: saved activations ${got} bytes, PyTorch ${want}")
endif()
