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
# Muon (torch.optim.Muon over the hidden matrices, AdamW over the rest) and
# transformers' Adafactor, against PyTorch 2.6 running replicas of their
# reference code (tests/tools/optim_2026.py, tests/reference/optim_2026.json):
# mlp-mnist in fp32 and bf16, lstm-lm (an embedding, 2-D LSTM weights, a
# head), resnet18's 4-D convolutions for Adafactor's factoring.
foreach(case RANGE 6)
  add_test(NAME optim.replica2026_${case}
           COMMAND ${MEMEST_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/optim/check_temps.py
                   $<TARGET_FILE:memest> ${PROJECT_SOURCE_DIR} ${case} optim_2026.json)
  set_tests_properties(optim.replica2026_${case} PROPERTIES LABELS optim)
endforeach()
# Llama-3-8B in bf16: AdamW, Muon, torch's and transformers' Adafactor,
# state and temporaries against figures worked out by hand in the script
# (4, 5: Muon and transformers' Adafactor under DDP, as one GPU).
foreach(case RANGE 5)
  add_test(NAME optim.llama3_hand_${case}
           COMMAND ${MEMEST_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/optim/check_hand.py
                   $<TARGET_FILE:memest> ${PROJECT_SOURCE_DIR} ${case})
  set_tests_properties(optim.llama3_hand_${case} PROPERTIES LABELS optim)
endforeach()
# Muon's Newton-Schulz multiply-accumulates (flops.optimizer_macs), apart
# from the step's forward and backward and once per --grad-accum cycle in a
# sweep's step_flops, against figures worked out by hand in the script.
foreach(case RANGE 4)
  add_test(NAME optim.muon_flops_${case}
           COMMAND ${MEMEST_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/optim/check_flops.py
                   $<TARGET_FILE:memest> ${case})
  set_tests_properties(optim.muon_flops_${case} PROPERTIES LABELS optim)
endforeach()
# Distributed Muon (Moonlight's Algorithm 1) under ZeRO-1/3, FSDP and FSDP2
# on 2 and 4 GPUs: a rank's state (calculator and simulator) and its
# optimizer temporaries' peak (the gathered matrix, Newton-Schulz at full
# size), against figures worked out by hand in the script.
foreach(case RANGE 6)
  add_test(NAME optim.muon_dist_${case}
           COMMAND ${MEMEST_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/optim/check_dist.py
                   $<TARGET_FILE:memest> ${case})
  set_tests_properties(optim.muon_dist_${case} PROPERTIES LABELS optim)
endforeach()
