# The hostile corpus (tests/hostile/README.md): one ctest per function
# case_NAME of tests/hostile/FILE.sh, named hostile.FILE.NAME, run by
# tests/hostile/run.sh in a temporary directory, every command within 5 s and
# 1 GiB (tests/hostile/bounded.c). memest-export cases are skipped (exit 77,
# counted as skipped by ctest) where PyTorch cannot be imported.
add_executable(hostile_bounded ${CMAKE_CURRENT_SOURCE_DIR}/hostile/bounded.c)
set(_hostile_env "MEMEST=$<TARGET_FILE:memest>" "BOUNDED=$<TARGET_FILE:hostile_bounded>"
                 "SRC=${PROJECT_SOURCE_DIR}" "TORCH_PYTHON=${MEMEST_TORCH_PYTHON}"
                 "PYTHONDONTWRITEBYTECODE=1")
if(MEMEST_SANITIZE)
  list(APPEND _hostile_env "BOUNDED_NO_AS=1")   # sanitizers reserve terabytes of address space
endif()
file(GLOB _hostile_files CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/hostile/*.sh)
list(REMOVE_ITEM _hostile_files ${CMAKE_CURRENT_SOURCE_DIR}/hostile/run.sh)
foreach(_f IN LISTS _hostile_files)
  get_filename_component(_base ${_f} NAME_WE)
  file(STRINGS ${_f} _defs REGEX "^case_[a-z0-9_]+\\(\\)")
  foreach(_d IN LISTS _defs)
    string(REGEX REPLACE "^case_([a-z0-9_]+)\\(\\).*" "\\1" _n "${_d}")
    add_test(NAME hostile.${_base}.${_n}
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/hostile/run.sh ${_base} ${_n})
    set_tests_properties(hostile.${_base}.${_n} PROPERTIES LABELS hostile SKIP_RETURN_CODE 77
                         TIMEOUT 120 ENVIRONMENT "${_hostile_env}")
    if(_base STREQUAL "export")
      # PyTorch's import takes 2 of the 5 s a case has on an idle 2-core
      # machine: these run alone, so that the bound measures the exporter
      set_tests_properties(hostile.${_base}.${_n} PROPERTIES RUN_SERIAL TRUE)
    endif()
  endforeach()
endforeach()
