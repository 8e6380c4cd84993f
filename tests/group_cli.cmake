# Command-line and bad-input cases: tests/errors/cases.tsv, one per line:
#   NAME <TAB> EXIT <TAB> STDERR FRAGMENT <TAB> ARGUMENTS
# In ARGUMENTS, @ stands for tests/errors/NAME.json, GOOD for the valid
# tests/errors/good.json, @models/ for the shipped models directory and @hf/
# for tests/hf/, @errors/ for tests/errors/ (other files of a case); arguments are separated by spaces, and an argument
# env:NAME=VALUE sets an environment variable of the run instead (run_case's
# ENV; VALUE may hold @hf/).
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
  string(REPLACE "@hf/" "${CMAKE_CURRENT_SOURCE_DIR}/hf/" args "${args}")
  string(REPLACE "@errors/" "${CMAKE_CURRENT_SOURCE_DIR}/errors/" args "${args}")
  string(REPLACE "@" "${CMAKE_CURRENT_SOURCE_DIR}/errors/${name}.json" args "${args}")
  string(REPLACE "GOOD" "${CMAKE_CURRENT_SOURCE_DIR}/errors/good.json" args "${args}")
  string(REPLACE " " ";" args "${args}")
  set(env "")
  foreach(a IN LISTS args)
    if(a MATCHES "^env:(.*)$")
      list(APPEND env "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  list(FILTER args EXCLUDE REGEX "^env:")
  string(REPLACE ";" "|" env "${env}")
  add_test(NAME cli.${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> "-DARGS=${args}" "-DENV=${env}"
                   -DEXIT=${code} "-DFRAGMENT=${frag}" -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
  set_tests_properties(cli.${name} PROPERTIES LABELS cli)
endforeach()
