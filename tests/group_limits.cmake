# Robustness tests beyond tests/errors/cases.tsv (issue 6):
#   limits.*    files generated at test time: over the size limit, over the
#               JSON value limit, and a valid model behind 64 MiB of white
#               space (bounded time and memory); files at the node and work
#               limits (label "slow");
#   json.*      the --json error document on stdout for each error class;
#   valgrind.*  memest under valgrind on every shipped model and on every bad
#               input (no leak, no invalid access): with -DMEMEST_VALGRIND_TESTS=ON
#               in a build without sanitizers (label "valgrind"; .ci/run does).
set(_err ${CMAKE_CURRENT_SOURCE_DIR}/errors)
set(_gen ${CMAKE_CURRENT_BINARY_DIR}/generated)
file(MAKE_DIRECTORY ${_gen})

foreach(kind_exit_frag IN ITEMS "sparse|3|limited to 256 MiB" "values|3|more than 2000000 JSON values"
                                "whitespace|0|")
  string(REPLACE "|" ";" f "${kind_exit_frag}")
  list(GET f 0 kind)
  list(GET f 1 code)
  list(GET f 2 frag)
  add_test(NAME limits.${kind}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DKIND=${kind}
                   -DOUT=${_gen}/${kind}.json -DEXIT=${code} "-DFRAGMENT=${frag}"
                   -P ${_err}/generated_case.cmake)
  set_tests_properties(limits.${kind} PROPERTIES LABELS cli TIMEOUT 120)
endforeach()
# A character device: read up to the limit, then refused.
add_test(NAME limits.device
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DARGS=/dev/zero -DEXIT=3
                 "-DFRAGMENT=larger than the 256 MiB limit" -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
set_tests_properties(limits.device PROPERTIES LABELS cli TIMEOUT 120)

# The files that expand up to the node limit and the expansion work limit:
# seconds natively, longer under the sanitizers (label "slow").
foreach(case IN ITEMS "repeat_limit|more than 2000000 nodes"
                      "work_limit|expanding the model takes more than 4000000 steps"
                      "long_expression|expanding the model takes more than 4000000 steps")
  string(REPLACE "|" ";" f "${case}")
  list(GET f 0 name)
  list(GET f 1 frag)
  add_test(NAME limits.${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DARGS=${_err}/${name}.json
                   -DEXIT=3 "-DFRAGMENT=${frag}" -DTIMEOUT=600
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
  set_tests_properties(limits.${name} PROPERTIES LABELS "cli;slow" TIMEOUT 700)
endforeach()

# --json: the error document on stdout (and the one line on stderr).
foreach(case IN ITEMS "truncated|\"code\": \"parse\"" "dup_node|\"code\": \"schema\""
                      "shape_mismatch|\"code\": \"shape\"" "overflow_bytes|\"code\": \"limit\""
                      "bad_token|\"line\": 3" "in_features_mismatch|\"node\": \"fc\""
                      "unknown_arg|\"path\": \"layers[0].out_feature\"")
  string(REPLACE "|" ";" f "${case}")
  list(GET f 0 name)
  list(GET f 1 frag)
  add_test(NAME json.${name}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> "-DARGS=${_err}/${name}.json;--json"
                   -DEXIT=3 "-DSTDOUT=${frag}" -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
  set_tests_properties(json.${name} PROPERTIES LABELS cli)
endforeach()
add_test(NAME json.missing_file
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> "-DARGS=/nonexistent.json;--json"
                 -DEXIT=3 "-DSTDOUT=\"code\": \"io\"" -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
set_tests_properties(json.missing_file PROPERTIES LABELS cli)

option(MEMEST_VALGRIND_TESTS "Add the valgrind tests (label valgrind; minutes)" OFF)
if(MEMEST_VALGRIND_TESTS)
  find_program(MEMEST_VALGRIND valgrind REQUIRED)
endif()
if(MEMEST_VALGRIND_TESTS AND NOT MEMEST_SANITIZE)
  set(_vg ${MEMEST_VALGRIND} --quiet --leak-check=full --errors-for-leak-kinds=definite,indirect
          --error-exitcode=99)
  file(GLOB _models CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/models/*.json)
  foreach(model IN LISTS _models)
    get_filename_component(name ${model} NAME_WE)
    if(name STREQUAL "gpus")   # the GPU presets, not a model
      continue()
    endif()
    add_test(NAME valgrind.${name}
             COMMAND ${_vg} $<TARGET_FILE:memest> ${model} --batch 2 --layers)
    set_tests_properties(valgrind.${name} PROPERTIES LABELS valgrind TIMEOUT 600)
  endforeach()
  # Every bad input: exit 3 (or 2), never 99 (a valgrind error); 4 shards.
  foreach(shard RANGE 0 3)
    add_test(NAME valgrind.errors.${shard}
             COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DVALGRIND=${MEMEST_VALGRIND}
                     -DDIR=${_err} -DSHARD=${shard} -DSHARDS=4 -P ${_err}/valgrind_all.cmake)
    set_tests_properties(valgrind.errors.${shard} PROPERTIES LABELS valgrind TIMEOUT 900)
  endforeach()
endif()
