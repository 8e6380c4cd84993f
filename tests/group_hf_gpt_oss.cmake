# The gpt_oss template (models/arch/gpt_oss.json; its blocks SinkAttention,
# TopKRouterMoE and ClampedSwigluExpert in models/arch/lib/moe2.json) against
# PyTorch 2.6 and OpenAI's published figures:
#  - bytes saved for backward of tests/hf/tiny/gpt_oss.json (2 layers, one
#    sliding and one full, GQA, q/k/v/o biases, attention sinks, 4 experts with
#    biases, top 2, YaRN rope) in float32 and bfloat16, eager attention (the
#    only one GptOss supports), the routing forced to the balanced split memest
#    assumes: the replica tests/tools/hf_models_gpt_oss.py measured by
#    tests/tools/hf_figures_gpt_oss.py (tests/reference/hf_figures_gpt_oss.json),
#    CUDA-corrected, exactly;
#  - step peaks (tests/tools/hf_peak_gpt_oss.py, tests/reference/
#    hf_peaks_gpt_oss.json), within 1 %: Adam (foreach), whose peak is in the
#    optimizer, exactly; SGD, whose peak is in the backward: float32 memest
#    971,044, PyTorch 970,728 (+0.03 %), bfloat16 529,444 and 529,288
#    (+0.03 %). The experts' [E, H, 2I] and [E, I, H] parameters and their
#    biases are read through gate_up_proj[expert_idx] per expert, whose
#    backward makes a zero-filled gradient of the whole parameter for each
#    expert, summed in the parameter's AccumulateGrad input buffer: the
#    template marks the experts "fused_params" (src/sim/sim_fused_grad.c). The
#    generator counts that sum in place, as PyTorch runs it without its
#    TorchDispatchMode (tests/tools/hf_peak.py, "CPU versus CUDA"); before
#    the experts were marked, memest was 13.8 % and 8.2 % low;
#  - the parameters of openai/gpt-oss-20b and gpt-oss-120b from their hub
#    configs, dequantised (--weights dense, Mxfp4Config(dequantize=True)):
#    OpenAI's model card gives 20.91B total and 3.61B active, 116.83B and 5.13B
#    ("active" without the input embedding; memest's active figure counts it,
#    as for the other MoE models). V 201088, H 2880, 64 heads and 8 kv heads of
#    64, I 2880, top 4. Per layer: q 2880*4096 + 4096, k and v 2880*512 + 512
#    each, o 4096*2880 + 2880, sinks 64, 2 norms 2*2880 = 26,555,904; router
#    E*2880 + E; each expert gate_up_proj 2880*5760 + 5760 and down_proj
#    5760/2*2880 + 2880 = 24,891,840. Untied embedding and head 2*201088*2880,
#    final norm 2880. Buffers: inv_freq [32];
#  - the MXFP4 checkpoint as published (quantization_config quant_method
#    mxfp4, the experts only: modules_to_not_convert names the attention, the
#    router, the embedding and the head): each expert's projection kept as
#    uint8 blocks [out, in / 2] and scales [out, in / 32] and a float32 bias
#    (transformers' Mxfp4GptOssExperts): the parameter bytes below; and OpenAI's "gpt-oss-120b runs within 80 GB of memory"
#    (the model card): generation at 4096 tokens fits an H100 80 GB with the
#    MXFP4 experts, not with the weights dequantised to bfloat16.
foreach(dtype float32 bfloat16)
  add_test(NAME hf_gpt_oss.tiny_exact.${dtype}.eager
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DNAME=gpt_oss
                   -DDTYPE=${dtype} -DATTN=eager -DREF=hf_figures_gpt_oss.json
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/tiny_exact.cmake)
  set_tests_properties(hf_gpt_oss.tiny_exact.${dtype}.eager PROPERTIES LABELS hf)
endforeach()
foreach(case 0 1 2 3)
  add_test(NAME hf_gpt_oss.peaks.${case}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCASE=${case}
                   -DREF=hf_peaks_gpt_oss.json -DTOL=1 -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/peaks.cmake)
  set_tests_properties(hf_gpt_oss.peaks.${case} PROPERTIES LABELS hf)
endforeach()

math(EXPR go_attn "2880 * 4096 + 4096 + 2 * (2880 * 512 + 512) + 4096 * 2880 + 2880 + 64 + 2 * 2880")
math(EXPR go_expert "2880 * 5760 + 5760 + 5760 / 2 * 2880 + 2880")
foreach(m "20b;24;32;2091;361" "120b;36;128;11683;513")
  list(GET m 0 size)
  list(GET m 1 L)
  list(GET m 2 E)
  list(GET m 3 total_10m)
  list(GET m 4 active_10m)
  math(EXPR total "2 * 201088 * 2880 + ${L} * (${go_attn} + ${E} * 2880 + ${E} + ${E} * ${go_expert}) + 2880")
  math(EXPR active "${total} - ${L} * (${E} - 4) * ${go_expert}")
  math(EXPR t "(${total} + 5000000) / 10000000")
  math(EXPR a "(${active} - 201088 * 2880 + 5000000) / 10000000")
  if(NOT t EQUAL total_10m OR NOT a EQUAL active_10m)
    message(FATAL_ERROR "gpt-oss-${size} arithmetic: ${total} total, ${active} active: not the published figures")
  endif()
  add_test(NAME hf_gpt_oss.params.gpt-oss-${size}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                   -DCONFIG=tests/hf/published/gpt-oss-${size}.json -DWANT=${total} -DWANT_BUF=32
                   -DWANT_ACTIVE=${active} "-DARGS=--weights;dense"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/published_params.cmake)
  set_tests_properties(hf_gpt_oss.params.gpt-oss-${size} PROPERTIES LABELS hf)
endforeach()
# MXFP4 as published: the same parameter count (the experts' weights frozen,
# counted as their out x in elements), in the layout's bytes: bfloat16 for
# the rest, each expert's blocks, scales and float32 biases 5760*1440
# + 5760*90 + 5760*4 + 2880*1440 + 2880*90 + 2880*4 = 13,253,760 B: 13.77 GB
# in all, the size of the hub's checkpoint (about 13.8 GB).
math(EXPR mx_rest "2 * 201088 * 2880 + 24 * (${go_attn} + 32 * 2880 + 32) + 2880")
math(EXPR mx_bytes "2 * ${mx_rest} + 24 * 32 * (5760 * 1440 + 5760 * 90 + 5760 * 4 + 2880 * 1440 + 2880 * 90 + 2880 * 4)")
add_test(NAME hf_gpt_oss.mxfp4.gpt-oss-20b
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 "-DARGS=tests/hf/published/gpt-oss-20b.json;--dtype;bf16" "-DFIELD=memory;parameters"
                 -DWANT=${mx_bytes} -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/json_equals.cmake)
set_tests_properties(hf_gpt_oss.mxfp4.gpt-oss-20b PROPERTIES LABELS hf)
foreach(w "mxfp4;fits: " "dense;does not fit")
  list(GET w 0 weights)
  list(GET w 1 frag)
  set(_args generate tests/hf/published/gpt-oss-120b.json --dtype bf16 --context 4096 --gpu h100-80gb)
  if(weights STREQUAL "dense")
    list(APPEND _args --weights dense)
  endif()
  add_test(NAME hf_gpt_oss.fits_80gb.${weights}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> "-DARGS=${_args}" -DEXIT=0 "-DSTDOUT=${frag}"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
  set_tests_properties(hf_gpt_oss.fits_80gb.${weights} PROPERTIES LABELS hf WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endforeach()
add_test(NAME hf_gpt_oss.sinks_eager_only
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest>
                 "-DARGS=tests/hf/tiny/gpt_oss.json;--attention;flash;--dtype;bf16" -DEXIT=3
                 "-DFRAGMENT=attention sinks run only in the eager backend" -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
set_tests_properties(hf_gpt_oss.sinks_eager_only PROPERTIES LABELS hf WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
