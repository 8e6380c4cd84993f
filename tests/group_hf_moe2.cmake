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
