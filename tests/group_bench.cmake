# The benchmark's inputs (tests/bench/: a benchmark, not a test; nothing is
# timed here): the synthetic models of tests/bench/gen_models.py run, and a
# graph written out node by node agrees with its `repeat` form
# (tests/bench/smoke.sh).
find_program(MEMEST_BENCH_PYTHON NAMES python3)
if(MEMEST_BENCH_PYTHON)
  add_test(NAME tools.bench_models
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/bench/smoke.sh $<TARGET_FILE:memest>
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(tools.bench_models PROPERTIES LABELS tools TIMEOUT 300)
endif()
