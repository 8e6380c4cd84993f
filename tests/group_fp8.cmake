# Float8 training of the linear layers (--fp8; include/memest/fp8.h, src/ops/fp8.c):
#  - torchao's tensorwise and rowwise recipes against real torchao v0.13.0
#    (whose float8 training code is v0.18.0's) under PyTorch 2.6: the step
#    peaks of the tiny Llama and Qwen2 (q/k/v biases) trained in bfloat16 and
#    float32, SGD and Adam, eager and SDPA (tests/tools/fp8_peak.py,
#    tests/reference/fp8_peaks.json; torch._scaled_mm replaced by an
#    allocation of its CUDA output), within 1 per mille (measured: 4 bytes
#    under PyTorch in the 8 SGD cases, whose peak is in a float8 linear's
#    backward, equal in the 8 Adam ones). Without --fp8 memest is 8.2 % under
#    the tensorwise bfloat16 SGD case, and tensorwise is 4.2 % under rowwise in
#    float32: the tests see the casts and the rowwise post-scales.
#  - Transformer Engine's recipes cannot run here (no CUDA): the saved bytes
#    and the state of tests' hand calculations from TE v2.18's linear.py
#    (fp8.c cites the lines), on models/mlp-mnist.json (Linear 784 -> 512,
#    ReLU, Linear 512 -> 512, ReLU, Linear 512 -> 10: the last is the output
#    head and stays nn.Linear), float32.
file(READ ${PROJECT_SOURCE_DIR}/tests/reference/fp8_peaks.json _fp8_ref)
string(JSON _fp8_n LENGTH "${_fp8_ref}" cases)
math(EXPR _fp8_last "${_fp8_n} - 1")
foreach(case RANGE 0 ${_fp8_last})
  string(JSON _recipe GET "${_fp8_ref}" cases ${case} recipe)
  add_test(NAME fp8.ao_peaks.${case}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCASE=${case}
                   -DREF=fp8_peaks.json "-DARGS=--fp8;ao-${_recipe}" -DPERMILLE=1
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/peaks.cmake)
  set_tests_properties(fp8.ao_peaks.${case} PROPERTIES LABELS "fp8;hf")
endforeach()

# te-delayed / te-current at batch 8, both hidden linears in float8. Saved:
#   linear 1: the input's columnwise float8 copy 8 * 784 + its float32
#     scale_inv 4, the float8 weight and its transpose 2 * 784 * 512 + 4
#     (not the float32 input nn.Linear saves: 8 * 784 * 4)
#   relu 2: its output 8 * 512 * 4
#   linear 3: 8 * 512 + 4 + 2 * 512 * 512 + 4 (not the ReLU output: saved by relu 2 anyway)
#   relu 4: 8 * 512 * 4, also linear 5's input
math(EXPR te_saved "8 * 784 + 4 + 2 * 784 * 512 + 4 + 8 * 512 * 4 + 8 * 512 + 4 + 2 * 512 * 512 + 4 + 8 * 512 * 4")
# buffers: DelayedScaling's amax_history [1024, 3] and scale [3] of the
# forward, [1024, 2] and [2] of the backward, float32, per module; TE's
# cuBLAS workspace once (32 MiB + 1024, sm90 and newer)
math(EXPR te_ws "32 * 1024 * 1024 + 1024")
math(EXPR te_delayed_buffers "2 * (1024 * 3 + 3 + 1024 * 2 + 2) * 4 + ${te_ws}")
# te-mxfp8 at batch 32: 784 is no multiple of 32, so linear 1 stays
# nn.Linear (saves its input, 32 * 784 * 4); linear 3 keeps the columnwise
# float8 input 32 * 512 and its E8M0 scales [ru(32 / 32, 4), ru(512, 128)],
# the weight rowwise and columnwise 2 * 512 * 512 with scales
# [ru(512, 128), ru(512 / 32, 4)] and [ru(512 / 32, 4), ru(512, 128)]
math(EXPR mx_saved "32 * 784 * 4 + 32 * 512 * 4 + 32 * 512 + 4 * 512 + 2 * 512 * 512 + 512 * 16 + 16 * 512 + 32 * 512 * 4")
foreach(t "te_delayed_saved;te-delayed;8;activations;${te_saved}"
          "te_delayed_buffers;te-delayed;8;buffers;${te_delayed_buffers}"
          "te_current_saved;te-current;8;activations;${te_saved}"
          "te_current_buffers;te-current;8;buffers;${te_ws}"
          "te_mxfp8_saved;te-mxfp8;32;activations;${mx_saved}")
  list(GET t 0 name)
  list(GET t 1 recipe)
  list(GET t 2 batch)
  list(GET t 3 field)
  list(GET t 4 want)
  add_test(NAME fp8.${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                   "-DARGS=${PROJECT_SOURCE_DIR}/models/mlp-mnist.json;--batch;${batch};--fp8;${recipe}"
                   "-DFIELD=memory;${field}" -DWANT=${want} -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/json_equals.cmake)
  set_tests_properties(fp8.${name} PROPERTIES LABELS fp8)
endforeach()
