# Command-line and bad-input cases: tests/errors/cases.tsv, one per line:
#   NAME <TAB> EXIT <TAB> STDERR FRAGMENT <TAB> ARGUMENTS
# In ARGUMENTS, @ stands for tests/errors/NAME.json, GOOD for the valid
# tests/errors/good.json and @models/ for the shipped models directory;
# arguments are separated by spaces.
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/errors/cases.tsv _cases ENCODING UTF-8)
foreach(line IN LISTS _cases)
  if(line MATCHES "^#" OR line STREQUAL "")
    continue()
  endif()
  string(REPLACE "\t" ";" f "${line}")
  list(LENGTH f nf)
  if(NOT nf EQUAL 4)
    message(FATAL_ERROR "tests/errors/cases.tsv: bad line: ${line}")
  endif()
  list(GET f 0 name)
  list(GET f 1 code)
  list(GET f 2 frag)
  list(GET f 3 args)
  string(REPLACE "@models/" "${PROJECT_SOURCE_DIR}/models/" args "${args}")
  string(REPLACE "@" "${CMAKE_CURRENT_SOURCE_DIR}/errors/${name}.json" args "${args}")
  string(REPLACE "GOOD" "${CMAKE_CURRENT_SOURCE_DIR}/errors/good.json" args "${args}")
  string(REPLACE " " ";" args "${args}")
  add_test(NAME cli.${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> "-DARGS=${args}"
                   -DEXIT=${code} "-DFRAGMENT=${frag}" -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
  set_tests_properties(cli.${name} PROPERTIES LABELS cli)
endforeach()
