# Quantised weights against published measurements: bigcode/octocoder
# (tests/quant/octocoder.json) generating from a short prompt, as
# transformers' docs/source/en/llm_tutorial_optimization.md measured it on
# an A100 (tests/reference/gpu-measurements.md rows I1 and I2:
# max_memory_allocated() after the pipeline ran; tests/quant/i2.cmake).
foreach(case bf16 fp4 int8)
  add_test(NAME quant.i2.${case}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                   -DCASE=${case} -P ${CMAKE_CURRENT_SOURCE_DIR}/quant/i2.cmake)
  set_tests_properties(quant.i2.${case} PROPERTIES LABELS quant)
endforeach()

# The report of a quantised model: the header line and the JSON "weights"
# object (tests/quant/report.cmake).
add_test(NAME quant.report
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/quant/report.cmake)
set_tests_properties(quant.report PROPERTIES LABELS quant)
