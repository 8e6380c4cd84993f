# memest against figures measured on real GPUs and published
# (tests/reference/gpu-measurements.md): Liger-Kernel's operator
# benchmarks (rows O1-O3), transformers' GPT-NeoX eager/SDPA training table
# (T12) and the CUDA context and cuBLAS workspace figures (C1, C2, C3, C5, C6).
# Each case asserts the published figure; the causes of the differences and
# the tolerances are in tests/gpumeas/check.cmake. Rows I1, I2 are
# tests/quant/i2.cmake, I9, I10 tests/unit/test_generate.c.
set(MEMEST_GPUMEAS_CASES
    o1.t1024 o1.t2048 o1.t4096 o1.t8192
    o2.v4096 o2.v8192 o2.v16384 o2.v32768 o2.v65536 o2.v131072
    o3.bt4096 o3.bt8192 o3.bt16384 o3.bt32768
    o3m.bt4096 o3m.bt8192 o3m.bt16384 o3m.bt32768
    t12.1x512 t12.1x1024 t12.1x2048 t12.4x512
    c1 c2 c3 c5 c6)
foreach(case ${MEMEST_GPUMEAS_CASES})
  add_test(NAME gpumeas.${case}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                   -DCASE=${case} -DOUT=${CMAKE_CURRENT_BINARY_DIR}
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/gpumeas/check.cmake)
  set_tests_properties(gpumeas.${case} PROPERTIES LABELS gpumeas)
endforeach()
