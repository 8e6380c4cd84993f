# The issue-32 sparse-MoE template glm4_moe (models/arch/glm4_moe.json, its
# blocks in models/arch/lib/moe2.json) against PyTorch 2.6:
#  - bytes saved for backward of tests/hf/tiny/glm4_moe.json (partial rotary,
#    per-head q/k norm, q/k/v biases, GQA, one dense layer, two MoE layers of 8
#    fused experts, top 3 over 2 of 4 groups, 2 shared experts) in float32 and
#    bfloat16, eager and SDPA attention, the routing forced to the balanced
#    split memest assumes: the replica tests/tools/hf_models_moe2.py measured by
#    tests/tools/hf_figures_moe2.py (tests/reference/hf_figures_moe2.json),
#    CUDA-corrected, exactly. route_tokens_to_experts selects the experts with
#    grad enabled; what its group top-k and masked_fill nodes save is freed on
#    return (no node reachable from the output refers to them) and is not
#    counted, by PyTorch's figure nor by memest;
#  - the same for granitemoe (models/arch/granitemoe.json): tests/hf/tiny/
#    granitemoe.json (Granite's muP scalars, GQA, tied head, 8 experts, top 3),
#    exactly; GraniteMoeMoE's tokens sorted by expert save in all what memest's
#    per-expert form saves (src/ops/ops_moe.c, moe_router scoring topk_softmax);
#  - the parameters of GLM-4.5-Air and granite-3.1-3b-a800m-instruct:
#    tests/group_hf_published.cmake.
foreach(name glm4_moe granitemoe)
  foreach(dtype float32 bfloat16)
    foreach(attn eager sdpa)
      add_test(NAME hf_moe2.tiny_exact.${name}.${dtype}.${attn}
               COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DNAME=${name}
                       -DDTYPE=${dtype} -DATTN=${attn} -DREF=hf_figures_moe2.json
                       -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/tiny_exact.cmake)
      set_tests_properties(hf_moe2.tiny_exact.${name}.${dtype}.${attn} PROPERTIES LABELS hf)
    endforeach()
  endforeach()
endforeach()

# Step peaks (memory.peak_tensors) of the tiny configs against PyTorch 2.6
# (tests/tools/hf_peak_moe2.py: hf_peak.py's step and measurement on the
# replicas, tests/reference/hf_peaks_moe2.json), Adam (foreach) cases: exact
# (their peak is in the optimizer). Not checked: the SGD cases, whose peak is
# in the backward, where PyTorch is 15-21 % (float32) and 2.1-3.9 %
# (bfloat16) higher than memest: the experts' fused [E, 2I, H] and [E, H, I]
# parameters are read through a select per expert (gate_up_proj[expert_idx],
# GraniteMoeParallelExperts' weight[i]), whose backward (SelectBackward0)
# makes a zero-filled gradient of the whole parameter for each expert, added
# into the parameter's gradient buffer; memest writes the experts as separate
# linears (their own gradients, no such full-size temporaries). Checked: the
# glm4_moe replica with one parameter per expert peaks at 1,481,112 bytes
# (float32 eager SGD), memest 1,477,460 (-0.25 %), the fused one 1,745,720.
# Cases 1, 3, 5:
# glm4_moe eager/sdpa float32, sdpa bfloat16; 7, 9, 11: granitemoe.
foreach(case 1 3 5 7 9 11)
  add_test(NAME hf_moe2.peaks.${case}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCASE=${case}
                   -DREF=hf_peaks_moe2.json -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/peaks.cmake)
  set_tests_properties(hf_moe2.peaks.${case} PROPERTIES LABELS hf)
endforeach()
