# tiny_exact.cmake - the bytes saved for backward (memory.activations) of
# `memest tests/hf/tiny/NAME.json --batch B --set seq_len=S --dtype D
# --attention eager|auto` equal, exactly, what PyTorch 2.6 saved running the
# plain-PyTorch replica of transformers' code (tests/tools/hf_models.py,
# measured by tests/tools/hf_figures.py: tests/reference/hf_figures.json
# tiny.NAME.runs["DTYPE/ATTN"].saved_activation_bytes_cuda_corrected), and the
# parameters its params_total.
# With -DTOLERANCE_PPM=N, within N parts per million instead of exactly; with
# -DREF=FILE (under tests/reference/), another generator's figures of the same
# layout (tests/tools/hf_figures_*.py). With -DCONFIG=C, the reference entry
# NAME measured on tests/hf/tiny/C.json; with -DARGS="a;b", more memest
# arguments (--set mamba_kernels=false for a model's slow path).
#   cmake -DMEMEST=... -DSRC=<source dir> -DNAME=<tiny config> -DDTYPE=float32|bfloat16
#         -DATTN=eager|sdpa [-DTOLERANCE_PPM=N] [-DREF=hf_figures_x.json] -P tiny_exact.cmake
include(${CMAKE_CURRENT_LIST_DIR}/memest_json.cmake)
if(NOT DEFINED REF)
  set(REF hf_figures.json)
endif()
file(READ ${SRC}/tests/reference/${REF} ref)
string(JSON t GET "${ref}" tiny ${NAME})
if(NOT DEFINED CONFIG)
  set(CONFIG ${NAME})
endif()
compare_tiny("${t}" ${CONFIG} ${DTYPE} ${ATTN} ${ARGS})
