# torchvision's builders exported by memest-export (tests/zoo/<tag>/<model>.json,
# tag torch113 = PyTorch 1.13 / torchvision 0.14, torch26 = PyTorch 2.6 /
# torchvision 0.21) replayed through memest at batch 2 against PyTorch's own
# figures (tests/reference/zoo_<tag>.json, tests/tools/torchvision_zoo.py):
# parameters and forward MACs exact, saved activations within 1%, the SGD
# training-step peak within 3%; known deviations are listed with their reason
# in tests/zoo/deviations.json (tests/zoo/check.cmake). One test per file.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/tests/reference/zoo_torch113.json
             ${PROJECT_SOURCE_DIR}/tests/reference/zoo_torch26.json)
foreach(tag torch113 torch26)
  file(GLOB MEMEST_ZOO_FILES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/zoo/${tag}/*.json)
  foreach(f ${MEMEST_ZOO_FILES})
    get_filename_component(model ${f} NAME_WLE)
    add_test(NAME zoo.${tag}.${model}
             COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                     -DTAG=${tag} -DMODEL=${model} -P ${CMAKE_CURRENT_SOURCE_DIR}/zoo/check.cmake)
    set_tests_properties(zoo.${tag}.${model} PROPERTIES LABELS zoo)
  endforeach()
endforeach()
