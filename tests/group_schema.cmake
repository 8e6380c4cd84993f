# The JSON Schema of memest's --json documents, schema/memest.schema.json (draft 2020-12), held to what
# memest prints (label schema):
#   schema.json_outputs  tests/schema/validate.py: the schema checked (check_schema), every golden --json
#                        output, memest's own runs of every document kind (the CUDA probe on the fake
#                        driver) and every case of tests/errors/cases.tsv with --json validated, and
#                        mutated documents (a member removed or added, a value of the wrong type) rejected.
# The Python: MEMEST_SCHEMA_PYTHON when given, else /usr/bin/python3 when it imports jsonschema (Debian's
# python3-jsonschema), else python3 on PATH when it does; when neither does, the test is still added and
# fails, saying to install python3-jsonschema (CI installs it). Found at every configure, so installing
# the package afterwards needs only a re-run of cmake.
if(CMAKE_SCRIPT_MODE_FILE)   # cmake -P: no python3 at all
  message(FATAL_ERROR "schema.json_outputs: no python3 found: install python3 and python3-jsonschema, "
                      "then re-run cmake")
endif()

set(MEMEST_SCHEMA_PYTHON "" CACHE FILEPATH
    "the python3 (with jsonschema) that runs schema.json_outputs (empty: found at configure time)")
set(_schema_python "${MEMEST_SCHEMA_PYTHON}")
if(NOT _schema_python)
  find_program(MEMEST_SCHEMA_PATH_PYTHON NAMES python3)
  set(_schema_first "")
  foreach(_py IN ITEMS /usr/bin/python3 ${MEMEST_SCHEMA_PATH_PYTHON})
    if(EXISTS "${_py}")
      if(NOT _schema_first)
        set(_schema_first "${_py}")
      endif()
      if(NOT _schema_python)
        execute_process(COMMAND "${_py}" -c "import jsonschema" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET
                        TIMEOUT 60)
        if(_rc EQUAL 0)
          set(_schema_python "${_py}")
        endif()
      endif()
    endif()
  endforeach()
  if(NOT _schema_python AND _schema_first)
    # validate.py exits 1 saying to install python3-jsonschema
    message(STATUS "schema.json_outputs: no python3 here imports jsonschema; the test will fail until "
                   "python3-jsonschema is installed")
    set(_schema_python "${_schema_first}")
  endif()
endif()

if(_schema_python)
  add_test(NAME schema.json_outputs
           COMMAND ${_schema_python} ${CMAKE_CURRENT_SOURCE_DIR}/schema/validate.py $<TARGET_FILE:memest>
                   $<TARGET_FILE:memest_fakecuda> ${PROJECT_SOURCE_DIR})
else()
  add_test(NAME schema.json_outputs COMMAND ${CMAKE_COMMAND} -P ${CMAKE_CURRENT_LIST_FILE})
endif()
set_tests_properties(schema.json_outputs PROPERTIES LABELS schema TIMEOUT 600
                     ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
