# frcnn.cmake - models/fasterrcnn_resnet50_fpn.json against torchvision's
# model measured in PyTorch (FIGURES: tests/reference/frcnn_figures.json for
# 1.13, frcnn_figures_torch26.json for 2.6, made by
# tests/tools/frcnn_figures.py: a training forward of 2 identical
# images with the same ground truth, so that every data-dependent count is
# the same per image). memest replays that step: --batch and the image size
# from the figures, the proposals NMS kept and the samplers' counts through
# the model's variables. Checked:
#   parameters (total and trainable): exact;
#   forward MACs of the convolutions and linear layers: exact, in all and
#     per part (backbone body, FPN, RPN head, box head, box predictor);
#   saved activations: within 1% of the CUDA-corrected figure (1.13 saves
#     the 0-d wrapped numbers of `loss / n`, which stay on the CPU under
#     CUDA; 2.6 saves none).
# memest runs with --torch TORCH (1.13 or 2: the autograd rules of that
# release).
#   cmake -DMEMEST=... -DSRC=<source dir> -DFIGURES=<file under SRC> -DTORCH=1.13 -P frcnn.cmake
file(READ ${SRC}/${FIGURES} ref)
string(JSON batch GET "${ref}" batch)
string(JSON H GET "${ref}" image 1)
string(JSON W GET "${ref}" image 2)

# the per-image counts (numbers, or [positives, samples] pairs), which must
# agree between the images
function(per_image out)
  string(JSON n LENGTH "${ref}" counts ${ARGN})
  string(JSON v GET "${ref}" counts ${ARGN} 0)
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON vi GET "${ref}" counts ${ARGN} ${i})
    if(NOT vi STREQUAL v)
      message(FATAL_ERROR "${FIGURES}: counts ${ARGN} differ between the images: ${vi} != ${v}")
    endif()
  endforeach()
  set(${out} "${v}" PARENT_SCOPE)
endfunction()
per_image(proposals proposals)
per_image(rpn_pair rpn_sampler_pos_total_per_image)
per_image(box_pair roi_sampler_pos_total_per_image)
string(JSON rpn_pos GET "${rpn_pair}" 0)
string(JSON rpn_all GET "${rpn_pair}" 1)
string(JSON box_pos GET "${box_pair}" 0)
string(JSON box_all GET "${box_pair}" 1)
string(JSON tb GET "${ref}" counts transformed_batch)
string(REGEX REPLACE "[][ \n]" "" tb "${tb}")
if(NOT tb STREQUAL "${batch},3,${H},${W}")
  message(FATAL_ERROR "${FIGURES}: the transformed batch ${tb} is not the input ${batch}x3x${H}x${W}")
endif()

set(cmd ${MEMEST} models/fasterrcnn_resnet50_fpn.json --json --torch ${TORCH} --batch ${batch} --set H=${H} --set W=${W}
        --set rpn_proposals=${proposals} --set rpn_positives=${rpn_pos} --set rpn_sampled=${rpn_all}
        --set box_positives=${box_pos} --set box_sampled=${box_all})
execute_process(COMMAND ${cmd} WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${cmd}: exit ${rc}: ${err}")
endif()

set(failed "")
function(exact label got want)
  message(STATUS "${label}: memest ${got}, PyTorch ${want}")
  if(NOT got EQUAL want)
    set(failed "${failed}\n  ${label}: memest ${got}, PyTorch ${want}" PARENT_SCOPE)
  endif()
endfunction()

string(JSON got GET "${out}" params total)
string(JSON want GET "${ref}" params_total)
exact("parameters" ${got} ${want})
string(JSON got GET "${out}" params trainable)
string(JSON want GET "${ref}" params_trainable)
exact("trainable parameters" ${got} ${want})
string(JSON got GET "${out}" flops forward_macs)
string(JSON want GET "${ref}" macs_total)
exact("forward MACs" ${got} ${want})

# forward MACs per part: memest's layers by name prefix
set(parts backbone.body backbone.fpn rpn.head roi_heads.box_head roi_heads.box_predictor)
foreach(p IN LISTS parts)
  set(sum_${p} 0)
endforeach()
string(JSON nl LENGTH "${out}" layers)
math(EXPR last "${nl} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${out}" layers ${i} name)
  string(JSON m GET "${out}" layers ${i} forward_macs)
  foreach(p IN LISTS parts)
    string(FIND "${name}" "${p}" at)
    if(at EQUAL 0)
      math(EXPR sum_${p} "${sum_${p}} + ${m}")
    endif()
  endforeach()
endforeach()
foreach(p IN LISTS parts)
  string(JSON want GET "${ref}" macs ${p})
  exact("forward MACs of ${p}" ${sum_${p}} ${want})
endforeach()

# saved activations: |got - want| <= 1% of want
string(JSON got GET "${out}" memory activations)
string(JSON want GET "${ref}" saved_activation_bytes_cuda_corrected)
math(EXPR diff "${got} - ${want}")
if(diff LESS 0)
  math(EXPR diff "-${diff}")
endif()
math(EXPR lhs "100 * ${diff}")
message(STATUS "saved activations: memest ${got}, PyTorch ${want} (CUDA-corrected), ${diff} bytes apart")
if(lhs GREATER want)
  set(failed "${failed}\n  saved activations: memest ${got}, PyTorch ${want}: more than 1% apart")
endif()
if(failed)
  message(FATAL_ERROR "fasterrcnn_resnet50_fpn against ${FIGURES}:${failed}")
endif()
