# Detection models (hand-written: they cannot be traced). Faster R-CNN
# ResNet-50 FPN in training mode against torchvision's model measured in
# PyTorch 1.13 / torchvision 0.14 and PyTorch 2.6 / torchvision 0.21
# (tests/tools/frcnn_figures.py -> tests/reference/frcnn_figures.json,
# frcnn_figures_torch26.json), replaying the measured step's data-dependent
# counts with --set (tests/detection/frcnn.cmake).
foreach(ref frcnn_figures:1.13 frcnn_figures_torch26:2)
  string(REPLACE ":" ";" ref "${ref}")
  list(GET ref 0 file)
  list(GET ref 1 torch)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               ${PROJECT_SOURCE_DIR}/tests/reference/${file}.json)
  add_test(NAME detection.fasterrcnn_resnet50_fpn.torch${torch}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                   -DFIGURES=tests/reference/${file}.json -DTORCH=${torch}
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/detection/frcnn.cmake)
  set_tests_properties(detection.fasterrcnn_resnet50_fpn.torch${torch} PROPERTIES LABELS detection)
endforeach()
