# Golden tests of memest's successful outputs (tests/golden/README.md): one
# ctest per tests/golden/CASE.args, which runs memest from the source tree and
# compares its exit code, stdout and the head of its --timeline file, byte for
# byte, with the files accepted from an earlier binary (tests/golden/run.sh).
# They pin the format; the figures are checked independently elsewhere.
file(GLOB MEMEST_GOLDEN_CASES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/golden/*.args)
foreach(args ${MEMEST_GOLDEN_CASES})
  get_filename_component(case ${args} NAME_WLE)
  add_test(NAME golden.${case}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/golden/run.sh check $<TARGET_FILE:memest>
                   $<TARGET_FILE:memest_fakecuda> ${PROJECT_SOURCE_DIR} ${case})
  set_tests_properties(golden.${case} PROPERTIES LABELS golden)
endforeach()
