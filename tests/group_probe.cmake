# The live CUDA probe's tests: a fake libcuda (tests/fake_cuda/) that the
# real CUDA backend loads through MEMEST_LIBCUDA / the config path, so the
# backend's code runs unchanged without a GPU.
add_library(memest_fakecuda SHARED ${CMAKE_CURRENT_SOURCE_DIR}/fake_cuda/fake_cuda.c)
set_target_properties(memest_fakecuda PROPERTIES OUTPUT_NAME fakecuda C_VISIBILITY_PRESET default)

if(TARGET test_probe)
  add_dependencies(test_probe memest_fakecuda)
  target_compile_definitions(test_probe PRIVATE
    MEMEST_FAKECUDA_PATH="$<TARGET_FILE:memest_fakecuda>")
  set_tests_properties(unit.test_probe PROPERTIES LABELS probe)
endif()
