# The layer rule of src/README.md (tests/layers/check.sh): includes, the
# symbols each object refers to, extern declarations, include cycles,
# writes to standard output and decisions by op name. Reads the objects of
# memest_core, so it runs after the build.
add_test(NAME layers
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/layers/check.sh ${PROJECT_SOURCE_DIR}
                 ${PROJECT_BINARY_DIR}/CMakeFiles/memest_core.dir)
set_tests_properties(layers PROPERTIES LABELS docs)

# check.sh itself refuses each kind of violation (one at a time, on a copy
# of the tree).
add_test(NAME layers.selftest
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/layers/selftest.sh ${PROJECT_SOURCE_DIR}
                 ${PROJECT_BINARY_DIR}/CMakeFiles/memest_core.dir)
set_tests_properties(layers.selftest PROPERTIES LABELS "docs;slow")

# No function of src/ over 120 lines but those tests/layers/long_functions.allow
# names with why (tests/layers/long_functions.sh, universal-ctags' end lines;
# skipped without universal-ctags).
add_test(NAME layers.long_functions
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/layers/long_functions.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(layers.long_functions PROPERTIES LABELS docs SKIP_RETURN_CODE 77)
