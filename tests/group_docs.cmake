# Documentation that is generated from the program stays in sync with it.
add_test(NAME docs.op_table
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest>
                 -DDOC=${PROJECT_SOURCE_DIR}/models/README.md -P ${CMAKE_CURRENT_SOURCE_DIR}/check_doc.cmake)
