# The fuzz targets (tests/fuzz/, doc/robustness.md):
#   fuzz_model  a model file: read -> build -> shape inference -> every
#               calculator -> reports (fuzz_model.c);
#   fuzz_hf     a Hugging Face config.json through its architecture template
#               (fuzz_hf.c);
#   fuzz_ds     a DeepSpeed config, read and applied as --deepspeed (fuzz_ds.c);
#   fuzz_fsdp   an accelerate FSDP YAML or the Trainer's fsdp_config JSON, read
#               and applied as --fsdp-config (fuzz_fsdp.c).
#   MEMEST_FUZZ=ON (clang): libFuzzer binaries, with ASan and UBSan, over a
#     copy of the core library built with coverage instrumentation;
#   otherwise: the same targets with tests/fuzz/standalone_runner.c as main().
# Either way the ctest "fuzz.<target>" runs each once over its seeds (the
# shipped files of its kind) and every earlier finding (the model's in
# tests/fuzz/regressions/, the others' in tests/fuzz/regressions-<target>/).
# Run the fuzzer itself with tests/fuzz/run.sh (doc/robustness.md); its
# seeds are chosen as here (keep the two in step).
set(_fuzz_dir ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
set(_fuzz_targets model hf ds fsdp)
if(MEMEST_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MEMEST_FUZZ needs clang (libFuzzer): CC=clang cmake -DMEMEST_FUZZ=ON ...")
  endif()
  set(_fuzz_flags -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                  -fno-omit-frame-pointer)
  add_library(memest_core_fuzz OBJECT ${MEMEST_CORE_SOURCES})
  target_include_directories(memest_core_fuzz PUBLIC ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(memest_core_fuzz PUBLIC PkgConfig::CJSON PkgConfig::YAML m ${CMAKE_DL_LIBS}
                        Threads::Threads)
  target_compile_options(memest_core_fuzz PRIVATE ${_fuzz_flags})
endif()
foreach(t ${_fuzz_targets})
  # every target's invariant checks (fuzz_common.h)
  set(_srcs ${_fuzz_dir}/fuzz_${t}.c ${_fuzz_dir}/fuzz_common.c)
  if(MEMEST_FUZZ)
    if(t STREQUAL "model")   # the metamorphic rewrites (tests/support/)
      list(APPEND _srcs ${MEMEST_TEST_SUPPORT})
    endif()
    add_executable(fuzz_${t} ${_srcs})
    target_include_directories(fuzz_${t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/support)
    target_compile_options(fuzz_${t} PRIVATE ${_fuzz_flags})
    target_link_options(fuzz_${t} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_${t} PRIVATE memest_core_fuzz)
  else()
    add_executable(fuzz_${t} ${_srcs} ${_fuzz_dir}/standalone_runner.c)
    target_link_libraries(fuzz_${t} PRIVATE memest_core memest_test_support)
  endif()
endforeach()

# The files of tests/dist/ and tests/errors/ whose text has one of the words:
# the users' configs of one kind (found by content, as run.sh finds them).
function(_fuzz_configs out)
  set(_d ${CMAKE_CURRENT_SOURCE_DIR})
  file(GLOB _cands CONFIGURE_DEPENDS ${_d}/dist/*.json ${_d}/dist/*.yaml ${_d}/dist/*.yml
       ${_d}/errors/*.json ${_d}/errors/*.yaml ${_d}/errors/*.yml)
  set(_found "")
  foreach(f ${_cands})
    file(READ ${f} _text)
    foreach(w ${ARGN})
      string(FIND "${_text}" "${w}" _at)
      if(NOT _at EQUAL -1)
        list(APPEND _found ${f})
        break()
      endif()
    endforeach()
  endforeach()
  set(${out} ${_found} PARENT_SCOPE)
endfunction()

file(GLOB _fuzz_seeds_model CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/models/*.json
     ${CMAKE_CURRENT_SOURCE_DIR}/errors/*.json ${CMAKE_CURRENT_SOURCE_DIR}/metamorphic/*.json
     ${_fuzz_dir}/regressions/*)
file(GLOB_RECURSE _fuzz_seeds_hf CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/models/hf/*.json
     ${CMAKE_CURRENT_SOURCE_DIR}/hf/*.json)
_fuzz_configs(_fuzz_seeds_ds zero_optimization)
file(GLOB _ds_errors CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/errors/ds_*)
list(APPEND _fuzz_seeds_ds ${_ds_errors})
_fuzz_configs(_fuzz_seeds_fsdp distributed_type fsdp_ transformer_layer_cls_to_wrap)
file(GLOB _fsdp_errors CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/errors/fsdp_*)
list(APPEND _fuzz_seeds_fsdp ${_fsdp_errors})
foreach(t ${_fuzz_targets})
  list(REMOVE_DUPLICATES _fuzz_seeds_${t})
  if(t STREQUAL "model")
    add_test(NAME fuzz.model COMMAND fuzz_model ${_fuzz_seeds_model})
  else()
    add_test(NAME fuzz.${t} COMMAND fuzz_${t} ${_fuzz_seeds_${t}} ${_fuzz_dir}/regressions-${t})
  endif()
  set_tests_properties(fuzz.${t} PROPERTIES LABELS fuzz TIMEOUT 300)
endforeach()
