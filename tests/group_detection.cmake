# Detection models (hand-written: they cannot be traced). Faster R-CNN
# ResNet-50 FPN in training mode against PyTorch 1.13 / torchvision 0.14
# (tests/tools/frcnn_reference.py -> tests/reference/frcnn_figures.json),
# replaying the measured step's data-dependent counts with --set
# (tests/detection/frcnn.cmake).
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/tests/reference/frcnn_figures.json)
add_test(NAME detection.fasterrcnn_resnet50_fpn
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/detection/frcnn.cmake)
set_tests_properties(detection.fasterrcnn_resnet50_fpn PROPERTIES LABELS detection)
