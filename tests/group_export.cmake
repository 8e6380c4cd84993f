# memest-export (src/export/, Python): tests/export/test_export.py, one test
# per case, run by a Python with PyTorch (MEMEST_TORCH_PYTHON: Debian's
# /usr/bin/python3 with python3-torch and python3-torchvision, the default
# when it exists). A case that needs PyTorch where it cannot be imported is
# skipped (exit 77), never passed.
if(EXISTS /usr/bin/python3)
  set(_memest_torch_python /usr/bin/python3)
else()
  find_program(_memest_torch_python NAMES python3)
endif()
set(MEMEST_TORCH_PYTHON "${_memest_torch_python}" CACHE FILEPATH
    "the Python (with PyTorch) that runs the memest-export tests")
if(MEMEST_TORCH_PYTHON)
  foreach(_case batchexpr escape api resnet18 mobilenet_v3_small custom unsupported untraceable cli writes
                shared progress
                torchvision_names lifetimes)
    add_test(NAME export.${_case}
             COMMAND ${MEMEST_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/export/test_export.py ${_case}
                     $<TARGET_FILE:memest>)
    set_tests_properties(export.${_case} PROPERTIES LABELS export SKIP_RETURN_CODE 77 TIMEOUT 600
                         ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
  endforeach()
endif()
