# tests/tools/cuda_validate.py, the CUDA validation harness (memest against PyTorch on a real card), as far
# as it runs without a GPU (label tools):
#   tools.cuda_validate.dry_run  --dry-run --quick against this build's memest (any python3, no PyTorch):
#                                exit 0, the quick grid's model and the table's header on stdout;
#   tools.cuda_validate.limits_dry_run  --dry-run --limits against this build's memest (no PyTorch): exit 0,
#                                the limits table's header and a row per (model, optimizer, precision,
#                                expandable segments) of the default --limits grid on stdout;
#   tools.cuda_validate.limits_selftest  --limits-selftest: the searches (bisection, the non-monotone scan,
#                                the doubling for the batch) against made-up predicates with known answers;
#   tools.cuda_validate.no_cuda  without --dry-run, by a python3 with PyTorch (found at configure time:
#                                /usr/bin/python3, then python3 on PATH; not added when neither imports
#                                torch): exit 2 and the one "no CUDA device" line on stderr; skipped
#                                where torch.cuda.is_available() (it would start measuring).
# The checks are this file run as a script:
#   cmake -DPYTHON=python3 -DSCRIPT=tests/tools/cuda_validate.py -DMEMEST=build/memest -DMODE=dry_run|limits_dry_run|no_cuda
#         -P tests/group_cuda_validate.cmake
if(CMAKE_SCRIPT_MODE_FILE)
  set(fail "")
  if(MODE STREQUAL "dry_run")
    execute_process(COMMAND ${PYTHON} ${SCRIPT} --dry-run --quick --memest ${MEMEST}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
    if(NOT rc EQUAL 0)
      string(APPEND fail "exit code ${rc}, expected 0\n")
    endif()
    foreach(want "| model | B | step | precision |" "| resnet18 | 1 | adam foreach | fp32 |"
                 "| resnet18 | 8 | inference | fp32 |" "summary: dry run, 6 configurations, memest errors 0")
      string(FIND "${out}" "${want}" pos)
      if(pos EQUAL -1)
        string(APPEND fail "stdout lacks \"${want}\"\n")
      endif()
    endforeach()
  elseif(MODE STREQUAL "limits_dry_run")
    execute_process(COMMAND ${PYTHON} ${SCRIPT} --dry-run --limits --memest ${MEMEST}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
    if(NOT rc EQUAL 0)
      string(APPEND fail "exit code ${rc}, expected 0\n")
    endif()
    set(_head "| model | B | step | precision | knobs | least alloc measured | least alloc memest | least alloc diff")
    set(_rows "")
    foreach(_m "resnet50" "hf:gpt2 s512")
      foreach(_o "adam foreach" "adamw fused")
        foreach(_p "fp32" "amp bf16")
          foreach(_k "cudnn-bm:off lazy" "cudnn-bm:off lazy exp-seg")
            list(APPEND _rows "| ${_m} | 8 | ${_o} | ${_p} | ${_k} | ")
          endforeach()
        endforeach()
      endforeach()
    endforeach()
    foreach(want "limits, memest side only (--dry-run)" "${_head}" ${_rows}
                 "summary: dry run, 16 configurations, memest errors 0")
      string(FIND "${out}" "${want}" pos)
      if(pos EQUAL -1)
        string(APPEND fail "stdout lacks \"${want}\"\n")
      endif()
    endforeach()
  elseif(MODE STREQUAL "no_cuda")
    execute_process(COMMAND ${PYTHON} -c "import sys, torch; sys.exit(3 if torch.cuda.is_available() else 0)"
                    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET TIMEOUT 300)
    if(rc EQUAL 3)
      message(STATUS "SKIPPED: torch.cuda.is_available() is true here; the no-GPU path cannot be checked")
      return()
    endif()
    string(RANDOM LENGTH 8 _tag)
    set(_out "${CMAKE_CURRENT_BINARY_DIR}/cuda_validate_${_tag}.json")
    execute_process(COMMAND ${PYTHON} ${SCRIPT} --quick --memest ${MEMEST} --out ${_out}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
    if(NOT rc EQUAL 2)
      string(APPEND fail "exit code ${rc}, expected 2\n")
    endif()
    if(NOT out STREQUAL "")
      string(APPEND fail "stdout is not empty\n")
    endif()
    if(NOT err MATCHES "^cuda_validate\\.py: no CUDA device: [^\n]*; use --dry-run to check the memest side\n$")
      string(APPEND fail "stderr is not the one line \"cuda_validate.py: no CUDA device: ...; use --dry-run to check the memest side\"\n")
    endif()
    if(EXISTS "${_out}")
      file(REMOVE "${_out}")
      string(APPEND fail "it wrote ${_out}\n")
    endif()
  else()
    message(FATAL_ERROR "MODE must be dry_run, limits_dry_run or no_cuda, not '${MODE}'")
  endif()
  if(fail)
    message(FATAL_ERROR "${SCRIPT} (${MODE}, ${PYTHON})\n${fail}--- stdout ---\n${out}--- stderr ---\n${err}")
  endif()
  return()
endif()

find_program(MEMEST_CUDA_VALIDATE_PYTHON NAMES python3)
if(NOT DEFINED CACHE{MEMEST_CUDA_VALIDATE_TORCH_PYTHON})
  set(_cv_torch_python "")
  foreach(_py IN ITEMS /usr/bin/python3 ${MEMEST_CUDA_VALIDATE_PYTHON})
    if(NOT _cv_torch_python AND EXISTS "${_py}")
      execute_process(COMMAND "${_py}" -c "import torch" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET TIMEOUT 300)
      if(_rc EQUAL 0)
        set(_cv_torch_python "${_py}")
      endif()
    endif()
  endforeach()
  set(MEMEST_CUDA_VALIDATE_TORCH_PYTHON "${_cv_torch_python}" CACHE FILEPATH
      "a python3 with PyTorch for tools.cuda_validate.no_cuda (empty: the test is not added)")
endif()

set(_cv_args -DSCRIPT=${CMAKE_CURRENT_SOURCE_DIR}/tools/cuda_validate.py -DMEMEST=$<TARGET_FILE:memest>)
if(MEMEST_CUDA_VALIDATE_PYTHON)
  add_test(NAME tools.cuda_validate.dry_run
           COMMAND ${CMAKE_COMMAND} -DPYTHON=${MEMEST_CUDA_VALIDATE_PYTHON} ${_cv_args} -DMODE=dry_run
                   -P ${CMAKE_CURRENT_LIST_FILE})
  set_tests_properties(tools.cuda_validate.dry_run PROPERTIES LABELS tools TIMEOUT 300
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
  add_test(NAME tools.cuda_validate.limits_dry_run
           COMMAND ${CMAKE_COMMAND} -DPYTHON=${MEMEST_CUDA_VALIDATE_PYTHON} ${_cv_args} -DMODE=limits_dry_run
                   -P ${CMAKE_CURRENT_LIST_FILE})
  set_tests_properties(tools.cuda_validate.limits_dry_run PROPERTIES LABELS tools TIMEOUT 300
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
  add_test(NAME tools.cuda_validate.limits_selftest
           COMMAND ${MEMEST_CUDA_VALIDATE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/cuda_validate.py --limits-selftest)
  set_tests_properties(tools.cuda_validate.limits_selftest PROPERTIES LABELS tools TIMEOUT 300
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endif()
if(MEMEST_CUDA_VALIDATE_TORCH_PYTHON)
  add_test(NAME tools.cuda_validate.no_cuda
           COMMAND ${CMAKE_COMMAND} -DPYTHON=${MEMEST_CUDA_VALIDATE_TORCH_PYTHON} ${_cv_args} -DMODE=no_cuda
                   -P ${CMAKE_CURRENT_LIST_FILE})
  set_tests_properties(tools.cuda_validate.no_cuda PROPERTIES LABELS tools TIMEOUT 300
                       SKIP_REGULAR_EXPRESSION "SKIPPED: " ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endif()

# --check FILE holds memest to a measurement committed under tests/reference/ (cuda_<device>.json, as the
# harness writes it on a real card): memest is re-run for every configuration measured there and the test
# fails past the tolerances (allocated 1%, reserved 3%, device total 2%, --probe's device total 2%). One
# test per committed file; none is committed yet (no card has run the harness for this project).
# tools.cuda_validate.check_selftest holds the checker itself to made-up measurements on both sides of
# each tolerance.
if(MEMEST_CUDA_VALIDATE_PYTHON)
  add_test(NAME tools.cuda_validate.check_selftest
           COMMAND ${MEMEST_CUDA_VALIDATE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/cuda_validate.py
                   --check-selftest --memest $<TARGET_FILE:memest>)
  set_tests_properties(tools.cuda_validate.check_selftest PROPERTIES LABELS tools TIMEOUT 300
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
  file(GLOB _cv_measured CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/reference/cuda_*.json)
  foreach(_f IN LISTS _cv_measured)
    get_filename_component(_name "${_f}" NAME_WE)
    add_test(NAME tools.cuda_validate.${_name}
             COMMAND ${MEMEST_CUDA_VALIDATE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/cuda_validate.py
                     --check ${_f} --memest $<TARGET_FILE:memest>)
    set_tests_properties(tools.cuda_validate.${_name} PROPERTIES LABELS "tools;gpumeas" TIMEOUT 600
                         ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
  endforeach()
endif()
