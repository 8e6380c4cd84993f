# The hybrid state-space template bamba (models/arch/bamba.json; its blocks
# MambaMixer and HybridDecoderLayer in models/arch/lib/hybrid.json, the
# mamba2_scan op of src/ops/ops_ssm.c) against PyTorch 2.6 and IBM's figures:
#  - bytes saved for backward of tests/hf/tiny/bamba.json (2 layers: a Mamba-2
#    layer, 8 heads of 16, 2 groups, state 16, conv 4, chunk 8, and an
#    attention layer, attn_layer_indices [1], GQA) in float32 and bfloat16,
#    eager and SDPA: the replica tests/tools/hf_models_ssm.py measured by
#    tests/tools/hf_figures_ssm.py (tests/reference/hf_figures_ssm.json),
#    CUDA-corrected, exactly. The mixers there run as transformers runs them on
#    CUDA with mamba_ssm and causal_conv1d installed: mamba_split_conv1d_scan_
#    combined, emulated by an autograd.Function saving the kernel's set
#    (zxbcdt, out_x, rstd, A; plus exp(A_log)'s result outside it).
#  - the parameters of ibm-ai-platform/Bamba-9B ("9.78B", its model card),
#    tests/hf/published/bamba-9b.json written from memory (not checked against
#    the hub): V 128256, H 4096, 32 layers, attention on 9, 18, 27 (32 heads,
#    8 kv heads of 128), I 14336; Mamba: 128 heads of 64 (dim 8192), 1 group,
#    state 128, conv 4. Per Mamba layer: in_proj 4096*(8192 + 8448 + 128),
#    conv1d 8448*4 + 8448, dt_bias/A_log/D 3*128, norm 8192, out_proj
#    8192*4096; per attention layer q 4096*4096, k, v 4096*1024 each, o
#    4096*4096; each layer the MLP 3*4096*14336 and two norms 2*4096; untied
#    embedding and head 2*128256*4096, final norm 4096. Buffers: inv_freq [64];
#  - attn_layer_indices: evenly spaced lists are modelled (their first two
#    elements and length set attn_layer_first, attn_layer_second and
#    attn_layer_count), null is every layer Mamba, another pattern a model
#    error.
#    The slow path (torch_forward, what transformers runs without mamba_ssm and
#    causal_conv1d: memest's --set mamba_kernels=false) exactly too:
#    tiny.<name>_torch_forward, about 2x (float32) and 2.7x (bfloat16) the
#    kernel's. tests/hf/tiny/bamba_chunk6.json: chunks of 6 (the slow path
#    pads 16 tokens to 18), 1 group, in_proj/out_proj biases, no conv bias,
#    the attention layer first.
#  - training-step peaks (memory.peak_tensors) of both tiny configs, float32
#    and bfloat16, eager and SDPA, SGD and Adam: tests/tools/hf_peak_ssm.py
#    (tests/reference/hf_peaks_ssm.json), within 1 %. The mixers as the fused
#    kernel runs them: mamba_ssm has no CPU backward, so the generator's
#    autograd.Function makes each tensor the CUDA code allocates (read from
#    state-spaces/mamba@v2.2.4 and causal-conv1d@v1.5.0.post8, sm_count 132),
#    forward and backward, in order and with its lifetime; memest's
#    workspaces follow the same code (src/ops/ops_ssm_kernel.c). And the
#    slow path (--set mamba_kernels=false), measured as it runs: its peak is
#    C_times_states' MulBackward0, the first big op of the backward, holding
#    two float32 [B, nc, chunk, nh, head_dim, n] products at once
#    (src/ops/ops_ssm.c m2_torch_bwd_scratch).
foreach(name bamba bamba_chunk6)
  foreach(path fused torch)
    set(_ref ${name})
    set(_args "")
    if(path STREQUAL "torch")
      set(_ref ${name}_torch_forward)
      set(_args "-DARGS=--set;mamba_kernels=false")
    endif()
    foreach(dtype float32 bfloat16)
      foreach(attn eager sdpa)
        add_test(NAME hf_ssm.tiny_exact.${_ref}.${dtype}.${attn}
                 COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DNAME=${_ref}
                         -DCONFIG=${name} "${_args}" -DDTYPE=${dtype} -DATTN=${attn} -DREF=hf_figures_ssm.json
                         -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/tiny_exact.cmake)
        set_tests_properties(hf_ssm.tiny_exact.${_ref}.${dtype}.${attn} PROPERTIES LABELS hf)
      endforeach()
    endforeach()
  endforeach()
endforeach()

# Step peaks (memory.peak_tensors) of tests/hf/tiny/bamba.json and
# bamba_chunk6.json against PyTorch 2.6 (tests/tools/hf_peak_ssm.py on the
# replica, tests/reference/hf_peaks_ssm.json; tests/hf/peaks.cmake), float32
# and bfloat16, eager and SDPA, SGD and Adam (foreach), within 1 %
# (PERMILLE 10). Cases 0-15: the mixers as mamba_ssm's fused kernel runs
# them on CUDA; it has no CPU backward, so the generator emulates it with an
# autograd.Function making, as aten ops, each tensor the CUDA code
# (state-spaces/mamba@v2.2.4, causal-conv1d@v1.5.0.post8) allocates, in its
# order and with its lifetimes (sm_count 132). memest: within 36 bytes of
# each (0.01 %); the SGD peaks lie in the first Mamba layer's backward, at
# _layer_norm_bwd's float32 partial dw [nrow_groups, dim] (132 * 4 / g
# rows), the Adam ones in the optimizer. Cases 16-31: the slow path
# (torch_forward, --set mamba_kernels=false), measured as it runs: every
# peak at C_times_states' MulBackward0 in the first Mamba layer's backward;
# memest within 0.04 % (bamba_chunk6, padded to 18 tokens: 324-644 bytes low).
foreach(case RANGE 0 31)
  set(_args "")
  if(case GREATER 15)
    set(_args "-DARGS=--set;mamba_kernels=false")
  endif()
  add_test(NAME hf_ssm.peaks.${case}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR} -DCASE=${case}
                   "${_args}" -DREF=hf_peaks_ssm.json -DPERMILLE=10 -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/peaks.cmake)
  set_tests_properties(hf_ssm.peaks.${case} PROPERTIES LABELS hf)
endforeach()

math(EXPR bamba_mixer "4096 * (8192 + 8448 + 128) + 8448 * 4 + 8448 + 3 * 128 + 8192 + 8192 * 4096")
math(EXPR bamba_attn "4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096")
math(EXPR bamba_common "3 * 4096 * 14336 + 2 * 4096")
math(EXPR bamba_total "2 * 128256 * 4096 + 29 * (${bamba_mixer} + ${bamba_common}) + 3 * (${bamba_attn} + ${bamba_common}) + 4096")
math(EXPR bamba_10m "(${bamba_total} + 5000000) / 10000000")
if(NOT bamba_10m EQUAL 978)
  message(FATAL_ERROR "Bamba-9B arithmetic: ${bamba_total}: not the published 9.78B")
endif()
add_test(NAME hf_ssm.params.bamba-9b
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                 -DCONFIG=tests/hf/published/bamba-9b.json -DWANT=${bamba_total} -DWANT_BUF=64
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/published_params.cmake)
set_tests_properties(hf_ssm.params.bamba-9b PROPERTIES LABELS hf)

# 4 layers of the tiny config: attention on 1, 2, 3 (one Mamba layer of
# 71,448 parameters besides the rest, three attention layers of 12,288 +
# 24,576 + 128 each), or none (null: four Mamba layers); [0, 1, 3] refused.
math(EXPR tiny_rest "2 * 128 * 64 + 64")
math(EXPR tiny_mamba "64 * (128 + 192 + 8) + 192 * 4 + 192 + 3 * 8 + 128 + 128 * 64 + 24576 + 128")
math(EXPR tiny_attn "12288 + 24576 + 128")
math(EXPR want_even "${tiny_rest} + ${tiny_mamba} + 3 * ${tiny_attn}")
math(EXPR want_mamba "${tiny_rest} + 4 * ${tiny_mamba}")
foreach(c "even;${want_even}" "all_mamba;${want_mamba}")
  list(GET c 0 n)
  list(GET c 1 want)
  add_test(NAME hf_ssm.attn_layer_indices.${n}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> -DSRC=${PROJECT_SOURCE_DIR}
                   -DCONFIG=tests/hf/ssm/bamba_${n}.json -DWANT=${want} -DWANT_BUF=8
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/hf/published_params.cmake)
  set_tests_properties(hf_ssm.attn_layer_indices.${n} PROPERTIES LABELS hf)
endforeach()
add_test(NAME hf_ssm.attn_layer_indices.uneven
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> "-DARGS=tests/hf/ssm/bamba_uneven.json" -DEXIT=3
                 "-DFRAGMENT=attn_layer_indices[2] is not the one model_type \"bamba\" derives" -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
set_tests_properties(hf_ssm.attn_layer_indices.uneven PROPERTIES LABELS hf WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# Generation: HybridMambaAttentionDynamicCache's states of each Mamba layer,
# made before the prefill in the model's dtype and updated in place:
# conv_states [B, conv_dim, d_conv] and ssm_states [B, nh, head_dim, n]:
# Bamba-9B 29 * (8448*4 + 128*64*128) * 2 bytes = 62,777,344 (59.87 MiB) per
# sequence, besides the KV cache of its 3 attention layers; a config with no
# attention layer generates with the states alone (4 * (192*4 + 8*16*16) * 4
# bytes = 44.00 KiB in float32).
foreach(c "published/bamba-9b.json;--context;4096;recurrent state 59.87 MiB: the conv and SSM states of 29 Mamba layers"
          "ssm/bamba_all_mamba.json;--context;16;recurrent state 44.00 KiB: the conv and SSM states of 4 Mamba layers")
  list(GET c 0 cfg)
  list(GET c 1 opt)
  list(GET c 2 val)
  list(GET c 3 frag)
  string(REGEX REPLACE ".*/|[.]json" "" tag "${cfg}")
  add_test(NAME hf_ssm.generate_states.${tag}
           COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> "-DARGS=generate;tests/hf/${cfg};${opt};${val}" -DEXIT=0
                   "-DSTDOUT=${frag}" -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
  set_tests_properties(hf_ssm.generate_states.${tag} PROPERTIES LABELS hf WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endforeach()

# An "each" spec's "vars" must map "n" or an element's index to a number
# variable (src/model/hf_config.c check_each_spec).
add_test(NAME hf_ssm.each_vars_template_error
         COMMAND ${CMAKE_COMMAND} -DMEMEST=$<TARGET_FILE:memest> "-DARGS=tests/hf/ssm/vars_bad.json" -DEXIT=3
                 "-DENV=MEMEST_ARCH_PATH=tests/hf/ssm/arch"
                 "-DFRAGMENT=hf_config.keys.layer_list: \"vars\" maps \"n\" (the length) or an element's index" -P ${CMAKE_CURRENT_SOURCE_DIR}/run_case.cmake)
set_tests_properties(hf_ssm.each_vars_template_error PROPERTIES LABELS hf WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
