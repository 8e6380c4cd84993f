# Documentation that is generated from the program stays in sync with it.
add_test(NAME docs.op_table
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest>
                 -DDOC=${PROJECT_SOURCE_DIR}/models/README.md -P ${CMAKE_CURRENT_SOURCE_DIR}/check_doc.cmake)
set_tests_properties(docs.op_table PROPERTIES LABELS docs)

# Every file of tests/reference/ carries its provenance: generator, library
# versions, date (tests/README.md, "Reference files").
add_test(NAME docs.reference_provenance
         COMMAND ${CMAKE_COMMAND} -DDIR=${CMAKE_CURRENT_SOURCE_DIR}/reference
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/reference_provenance.cmake)
set_tests_properties(docs.reference_provenance PROPERTIES LABELS docs)
