# The optimizers' state and step temporaries against PyTorch 2.6
# (tests/tools/optim_temps.py, tests/reference/optim_temps.json; issue 33
# item 5): torch.optim.Adafactor's factored state and its grouped foreach
# lists, with Adam's as a control, on mlp-mnist and resnet18, each to the
# byte (tests/optim/check_temps.py).
find_program(MEMEST_PYTHON3 NAMES python3 REQUIRED)
foreach(case RANGE 3)
  add_test(NAME optim.torch26_${case}
           COMMAND ${MEMEST_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/optim/check_temps.py
                   $<TARGET_FILE:memest> ${PROJECT_SOURCE_DIR} ${case})
  set_tests_properties(optim.torch26_${case} PROPERTIES LABELS optim)
endforeach()
