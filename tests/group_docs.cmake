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

# The architecture templates built on models/arch/lib/ share at most 25 % of
# their lines verbatim with any other template (models/README.md, "The shared
# library"); the allowance lists those not yet rebuilt on it, and fails once
# one of them is within the bound (so that it is taken off).
find_program(MEMEST_DOCS_PYTHON NAMES python3)
if(MEMEST_DOCS_PYTHON)
  add_test(NAME docs.template_overlap
           COMMAND ${MEMEST_DOCS_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/template_overlap.py
                   ${PROJECT_SOURCE_DIR}/models/arch --max 25
                   --allow bert,gpt_neox,opt)
  set_tests_properties(docs.template_overlap PROPERTIES LABELS docs)
endif()
