# The card comparison (--gpu all, or a list; --price) against the single-card
# flows, its order and its price and per-node figures, its three formats;
# and the progress line of long work on a terminal's stderr only
# (tests/compare/check.py, python3's standard library and script(1)).
find_program(MEMEST_PYTHON3 NAMES python3 REQUIRED)
foreach(check rows price nodes formats all progress)
  add_test(NAME compare.${check}
           COMMAND ${MEMEST_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/compare/check.py
                   $<TARGET_FILE:memest> ${PROJECT_SOURCE_DIR}/models ${check})
  set_tests_properties(compare.${check} PROPERTIES LABELS compare TIMEOUT 600)
endforeach()
