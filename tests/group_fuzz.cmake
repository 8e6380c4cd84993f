# The fuzz target tests/fuzz/fuzz_model.c (read -> build -> shape inference
# -> every calculator -> reports).
#   MEMEST_FUZZ=ON (clang): a libFuzzer binary, with ASan and UBSan, over a
#     copy of the core library built with coverage instrumentation;
#   otherwise: the same target with tests/fuzz/standalone_runner.c as main().
# Either way the ctest "fuzz.model" runs it once over the shipped models, the
# bad-input corpus and every earlier finding (tests/fuzz/regressions/).
# Run the fuzzer itself with tests/fuzz/run.sh (README.md, "Robustness").
set(_fuzz_dir ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
if(MEMEST_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MEMEST_FUZZ needs clang (libFuzzer): CC=clang cmake -DMEMEST_FUZZ=ON ...")
  endif()
  set(_fuzz_flags -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                  -fno-omit-frame-pointer)
  add_library(memest_core_fuzz OBJECT ${MEMEST_CORE_SOURCES})
  target_include_directories(memest_core_fuzz PUBLIC ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(memest_core_fuzz PUBLIC PkgConfig::CJSON PkgConfig::YAML m ${CMAKE_DL_LIBS})
  target_compile_options(memest_core_fuzz PRIVATE ${_fuzz_flags})
  add_executable(fuzz_model ${_fuzz_dir}/fuzz_model.c ${MEMEST_TEST_SUPPORT})
  target_include_directories(fuzz_model PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/support)
  target_compile_options(fuzz_model PRIVATE ${_fuzz_flags})
  target_link_options(fuzz_model PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_model PRIVATE memest_core_fuzz)
else()
  add_executable(fuzz_model ${_fuzz_dir}/fuzz_model.c ${_fuzz_dir}/standalone_runner.c)
  target_link_libraries(fuzz_model PRIVATE memest_core memest_test_support)
endif()

file(GLOB _fuzz_inputs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/models/*.json
     ${CMAKE_CURRENT_SOURCE_DIR}/errors/*.json ${CMAKE_CURRENT_SOURCE_DIR}/metamorphic/*.json
     ${_fuzz_dir}/regressions/*)
add_test(NAME fuzz.model COMMAND fuzz_model ${_fuzz_inputs})
set_tests_properties(fuzz.model PROPERTIES LABELS fuzz TIMEOUT 300)
