# The mixtral and qwen2_moe templates (models/arch/) and the MoE ops against
# PyTorch 2.6 (tests/tools/hf_figures_moe.py -> tests/reference/hf_figures_moe.json;
# tests/group_hf_moe.cmake registers the cases):
#   -DCHECK=params -DCONFIG=name -DWANT=N
#     `memest models/hf/<name>.json` counts WANT parameters (the published figure,
#     written in group_hf_moe.cmake), as many as the model built on
#     torch.device("meta") has, and as many buffer elements;
#   -DCHECK=published -DCONFIG=name
#     `memest tests/hf/published/<name>.json` counts as many parameters and buffer
#     elements as the model built on torch.device("meta") ("published" figures);
#   -DCHECK=tiny -DCASE=<config>/<dtype>/<eager|sdpa>
#     the bytes saved for backward (memory.activations) of tests/hf/tiny/<config>.json
#     equal PyTorch's (CUDA-corrected) exactly, routing balanced in both (deepseek_v3's
#     "sdpa": PyTorch's CPU math kernel, memest's --attention math);
#   -DCHECK=imbalance
#     tiny mixtral (bfloat16, SDPA) with --moe-imbalance F and PyTorch's routing
#     forced to that split: the same saved bytes, and the tokens layer 0's
#     experts get (moe_gather's output rows) are PyTorch's;
#   -DCHECK=block -DCASE=<dtype>
#     tests/hf/moe_block.json (MixtralSparseMoeBlock alone) saves exactly what
#     PyTorch saves, and has its parameters.
cmake_minimum_required(VERSION 3.25)

file(READ ${SRC}/tests/reference/hf_figures_moe.json ref)

include(${CMAKE_CURRENT_LIST_DIR}/memest_json.cmake)

if(CHECK STREQUAL "params")
  string(JSON meta GET "${ref}" configs ${CONFIG} params_total)
  string(JSON meta_buffers GET "${ref}" configs ${CONFIG} buffers_count)
  check_params(models/hf/${CONFIG}.json ${CONFIG} ${meta} ${meta_buffers})
elseif(CHECK STREQUAL "published")
  string(JSON meta GET "${ref}" published ${CONFIG} params_total)
  string(JSON meta_buffers GET "${ref}" published ${CONFIG} buffers_count)
  set(WANT ${meta}) # the published count and its arithmetic: tests/group_hf_published.cmake
  check_params(tests/hf/published/${CONFIG}.json ${CONFIG} ${meta} ${meta_buffers})
elseif(CHECK STREQUAL "tiny")
  string(REPLACE "/" ";" parts ${CASE})
  list(GET parts 0 config)
  list(GET parts 1 dtype)
  list(GET parts 2 attn)
  string(JSON t GET "${ref}" tiny ${config})
  if(attn STREQUAL "sdpa" AND config MATCHES "^deepseek_v3")
    set(SDPA_KERNEL math) # check_head_dim_size_cpp: the CPU's flash kernel needs v's head dim to be q's
  endif()
  compare_tiny("${t}" ${config} ${dtype} ${attn})
elseif(CHECK STREQUAL "imbalance")
  string(JSON t GET "${ref}" tiny mixtral)
  string(JSON batch GET "${t}" batch)
  string(JSON seq GET "${t}" seq_len)
  string(JSON f GET "${t}" imbalance)
  string(JSON want_params GET "${t}" params_total)
  string(JSON want GET "${t}" runs "bfloat16/sdpa/imbalance" saved_activation_bytes_cuda_corrected)
  set(args tests/hf/tiny/mixtral.json --batch ${batch} --set seq_len=${seq} --attention auto --dtype bf16
      --moe-imbalance ${f})
  compare_activations(imbalance ${want} ${want_params} ${args})
  memest_json(json ${args})
  string(JSON nexperts LENGTH "${t}" imbalance_tokens_per_expert)
  string(JSON nlayers LENGTH "${json}" layers)
  math(EXPR last "${nlayers} - 1")
  set(seen 0)
  foreach(i RANGE ${last})
    string(JSON name GET "${json}" layers ${i} name)
    if(name MATCHES "^model\\.layers\\.0\\.block_sparse_moe\\.experts\\.([0-9]+)\\.current_state$")
      set(e ${CMAKE_MATCH_1})
      string(JSON rows GET "${json}" layers ${i} output_shape 0)
      string(JSON want_rows GET "${t}" imbalance_tokens_per_expert ${e})
      message(STATUS "expert ${e}: memest ${rows} tokens, PyTorch ${want_rows}")
      if(NOT rows EQUAL want_rows)
        message(FATAL_ERROR "expert ${e} of layer 0: memest routes ${rows} tokens to it, PyTorch ${want_rows}")
      endif()
      math(EXPR seen "${seen} + 1")
    endif()
  endforeach()
  if(NOT seen EQUAL nexperts)
    message(FATAL_ERROR "found ${seen} experts of layer 0 in memest's layers, PyTorch has ${nexperts}")
  endif()
elseif(CHECK STREQUAL "block")
  string(JSON b GET "${ref}" block)
  string(JSON batch GET "${b}" batch)
  string(JSON want_params GET "${b}" params_total)
  string(JSON want GET "${b}" runs ${CASE} saved_activation_bytes_cuda_corrected)
  set(dt fp32)
  if(CASE STREQUAL "bfloat16")
    set(dt bf16)
  endif()
  compare_activations(block/${CASE} ${want} ${want_params} tests/hf/moe_block.json --batch ${batch}
                      --dtype ${dt})
else()
  message(FATAL_ERROR "unknown CHECK ${CHECK}")
endif()
