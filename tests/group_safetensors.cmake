# A model folder's safetensors checkpoint (include/memest/safetensors.h): each case a
# folder tests/tools/safetensors_gen.py writes at test time into the build tree
# (config.json of tests/hf/tiny/llama.json and the checkpoint's headers, the data a hole),
# memest run on it (tests/safetensors/case.cmake): exit code, the one-line error, and
# the fragments of stdout and stderr below (label safetensors).
#
# The figures, by hand (hidden 64, intermediate 128, 2 layers, 4 heads of 16, 2 key/value
# heads, vocabulary 128, untied head):
#   dense: embed_tokens 128 x 64 = 8192; a layer: q, o 64 x 64 = 4096 each, k, v 32 x 64 =
#     2048 each, gate, up 128 x 64 and down 64 x 128 = 8192 each, 2 norms of 64: 36992;
#     norm 64; lm_head 8192: 8192 + 2 x 36992 + 64 + 8192 = 90432 parameters in 1 + 2 x 9
#     + 2 = 21 tensors; BF16: 180864 bytes = 176.62 KiB.
#   gptq, group 32 (AutoGPTQ QuantLinear: qweight int32 [in/8, out], qzeros int32
#     [in/32, out/8], scales fp16 [in/32, out], g_idx int32 [in]): q, o 2048 + 64 + 256 +
#     256 = 2624; k, v 1024 + 32 + 128 + 256 = 1440; gate, up 4096 + 128 + 512 + 256 =
#     4992; down 4096 + 128 + 512 + 512 = 5248; a layer 23360, two 46720 bytes (45.62 KiB);
#     the fp16 rest: embed 16384, lm_head 16384, norms 5 x 128 = 640: 33408; total 80128
#     bytes (78.25 KiB), of them F16 33408 + the scales 4608 = 38016, I32 42112; 1 + 2 x
#     (2 + 7 x 4) + 2 = 63 tensors.
#   gpt2 (tests/hf/tiny_b/gpt2.json: 64 wide, 2 layers, 64 positions, vocabulary 320; the
#     Hub's layout: no "transformer.", Conv1D [in, out], attn.bias [1, 1, 64, 64] and
#     masked_bias [] kept): wte 20480 + wpe 4096 + ln_f 128 + 2 x (ln_1 and ln_2 256, c_attn
#     12288 + 192, c_proj 4096 + 64, c_fc 16384 + 256, mlp.c_proj 16384 + 64, bias 4096,
#     masked_bias 1) = 132866 float32 = 531464 bytes (519.01 KiB) in 2 + 2 x 14 + 2 = 32
#     tensors.
#   The checkpoint is checked against the model of the config and --set (good.set_shape: one
#     layer fewer, the second one's tensors are extra), on one GPU (good.tp) and with the
#     config's quantisation, not --weights (good.weights_nf4: a bf16 checkpoint, quantised on
#     loading).
#   fp8_config (FP8Linear, quantization_config quant_method fp8, blocks [128, 128]): each
#     layer's float8 weight [out, in] and float32 weight_scale_inv [1, 1] (the tiny sizes are
#     under one block): q, o 4096 + 4 each, k, v 2048 + 4, gate, up, down 8192 + 4: a layer
#     36892, two 73784 bytes (72.05 KiB), of them F8_E4M3 73728 and F32 14 x 4 = 56; the BF16
#     rest 33408 (as gptq's fp16 rest); 1 + 2 x (2 + 7 x 2) + 2 = 35 tensors.
#   nf4 (bitsandbytes Params4bit, blocksize 64): 73728 weights of the 14 layers: 36864
#     bytes packed, absmax 1152 x 4 = 4608, quant_map 14 x 64 = 896: 42368 bytes (41.38
#     KiB); with quant_state's 14 x 103 bytes and the BF16 rest.
#   gpt_oss (tests/hf/tiny/gpt_oss.json: H 64, I 32, E 4 experts, 2 layers, 4 heads of 16, 2
#     key/value heads, vocabulary 128, untied head; the experts stacked over E as the Hub
#     stores them): embed_tokens and lm_head 128 x 64 = 8192 each, norm 64; a layer's rest:
#     2 norms 128, q_proj and o_proj 64 x 64 + 64 = 4160 each, k_proj and v_proj 32 x 64 + 32
#     = 2080 each, sinks 4, router 4 x 64 + 4 = 260: 12872; its experts: gate_up_proj
#     [E, H, 2I] 4 x 64 x 64 = 16384 with gate_up_proj_bias [E, 2I] 256, down_proj [E, I, H]
#     4 x 32 x 64 = 8192 with down_proj_bias [E, H] 256: 25088.
#     gpt_oss_bf16: 8192 + 8192 + 64 + 2 x (12872 + 25088) = 92368 elements, x 2 = 184736
#     bytes (180.41 KiB) in 3 + 2 x 17 = 37 tensors, 2 x 4 of them stacked.
#     gpt_oss_mxfp4 (openai/gpt-oss-20b's layout): gate_up_proj_blocks U8 [E, 2I, H/32, 16]
#     4 x 64 x 2 x 16 = 8192 bytes, gate_up_proj_scales U8 [E, 2I, H/32] 4 x 64 x 2 = 512,
#     down_proj_blocks [E, H, I/32, 16] 4 x 64 x 1 x 16 = 4096, down_proj_scales [E, H, I/32]
#     256: 13056 a layer, U8 26112 bytes (25.50 KiB, the mxfp4 layers'); BF16: the rest
#     16448 + 2 x 12872 = 42192 elements and the biases 2 x 512: 43216 x 2 = 86432 bytes
#     (84.41 KiB); 112544 bytes (109.91 KiB) in 3 + 2 x 19 = 41 tensors, 2 x 6 stacked.
#   qwen3_moe (tests/hf/published/qwen3-30b-a3b.json shrunk in the generator: H 64, expert
#     intermediate 32, E 4, 2 layers, 4 heads of 16, 2 key/value heads, vocabulary 128; the
#     experts one by one): a layer 2 norms 128, q 4096, k 2048, v 2048, o 4096, q_norm and
#     k_norm 16 each, gate 4 x 64 = 256, experts 4 x 3 x 32 x 64 = 24576: 37280; 16448 + 2 x
#     37280 = 91008 elements, 182016 bytes (177.75 KiB) in 3 + 2 x (9 + 4 x 3) = 45 tensors.
set(_st_gen ${CMAKE_CURRENT_SOURCE_DIR}/tools/safetensors_gen.py)
find_program(MEMEST_ST_PYTHON NAMES python3 REQUIRED)
# NAME | EXIT | stderr fragment (the error) | stdout fragments, '^'-separated | extra
# arguments; NAME is the generator's case, or CASE.VARIANT for another run of CASE.
set(_st_cases
  "good|0||Checkpoint  1 file, 21 tensors, 176.62 KiB (BF16 176.62 KiB), matches the model^dtype bf16^Parameters  90,432 (90,432 trainable, 0 frozen) in 21 tensors|"
  "good.json|0||\"safetensors\": {^\"tensors\": 21,^\"bytes\": 180864,^\"BF16\": 180864^\"dtype\": \"bf16\",^\"matched\": 21,^\"matches\": true|--json"
  "sharded|0||Checkpoint  2 files, 21 tensors, 176.62 KiB (BF16 176.62 KiB), matches the model|"
  "sharded.json|0||model.safetensors.index.json\",^\"files\": 2,^\"bytes\": 180864,|--json"
  "gptq|0||Checkpoint  1 file, 63 tensors, 78.25 KiB (F16 37.12 KiB, I32 41.12 KiB), matches the model^ gptq layers 45.62 KiB, as memest lays them out^weights gptq in 14 linear layers|"
  "gptq.json|0||\"tensors\": 63,^\"bytes\": 80128,^\"F16\": 38016,^\"I32\": 42112^\"format\": \"gptq\",^\"quantized_bytes\": 46720,^\"quantized_model_bytes\": 46720,|--json"
  "nf4.json|0||\"format\": \"nf4\",^\"quantized_bytes\": 42368,^\"quantized_model_bytes\": 42368,|--json"
  "base_model.json|0||\"prefix\": \"model.\",^\"tensors\": 20,|--json"
  "gpt2|0||Checkpoint  1 file, 32 tensors, 519.01 KiB (F32 519.01 KiB), matches the model^its names without \"transformer.\"|--seq 32"
  "good.tp|0||Checkpoint  1 file, 21 tensors, 176.62 KiB (BF16 176.62 KiB), matches the model|--tp 2 --gpus 2"
  "good.weights_nf4|0||Checkpoint  1 file, 21 tensors^weights nf4 in 14 linear layers|--weights nf4"
  "good.set_shape|3|model.safetensors: model.layers.1.input_layernorm.weight: not a parameter or buffer of the model||--set num_hidden_layers=1"
  "inv_freq|0||2 tensors not loaded (rotary inv_freq)|"
  "dtype_note|0|torch_dtype is fp32, but the checkpoint stores bf16 weights|dtype fp32|"
  "shape|3|model.safetensors: model.layers.1.mlp.up_proj.weight: shape [64, 128] in the checkpoint, the template gives [128, 64]||"
  "missing|3|model.safetensors: model.layers.1.mlp.down_proj.weight: a parameter of the model of shape [64, 128] is not in the checkpoint||"
  "extra|3|model.safetensors: model.layers.0.mlp.extra_proj.weight: not a parameter or buffer of the model of models/arch/llama.json||"
  "short|3|model.safetensors: 3 bytes: too short for a safetensors file||"
  "past_end|3|model.safetensors: the header's length is 1048576 bytes, past the end of the file||"
  "over_limit|3|the header's length is 100000001 bytes, over safetensors' limit of 100,000,000||"
  "bad_json|3|model.safetensors:1:||"
  "truncated_data|3|lm_head.weight: the tensors' data ends at byte 180864, but the file holds 180764 bytes of data after its header||"
  "bad_offsets|3|model.norm.weight: data_offsets [164352, 164478] hold 126 bytes, but BF16 of shape [64] is 128 bytes||"
  "overflow|3|model.safetensors: w: shape: more than 2^63-1 elements||"
  "shards_no_index|3|model-00002-of-00003.safetensors is missing (2 of the 3 shards are here||"
  "index_wrong_shard|3|model.safetensors.index.json: model.layers.0.self_attn.q_proj.weight: the weight_map puts it in model-00002-of-00002.safetensors, whose header does not have it||"
  "gptq_group|3|model.layers.0.self_attn.q_proj.qzeros: shape [1, 8] in the checkpoint, memest's layout of the quantised layer gives [2, 8]||"
  "gptq_no_config|3|model.layers.0.self_attn.q_proj.qweight: a GPTQ or AWQ tensor, but||"
  "fp8|3|model.layers.0.self_attn.q_proj.weight: FP8 weights (F8_E4M3, with weight_scale_inv), but||"
  "fp8.json|3|has no quantization_config of quant_method||--json"
  "fp8_config|0||Checkpoint  1 file, 35 tensors, 104.68 KiB (F8_E4M3 72.00 KiB, BF16 32.62 KiB, F32 56 B), matches the model^fp8 layers 72.05 KiB, as memest lays them out^weights fp8 in 14 linear layers|"
  "fp8_config.json|0||\"format\": \"fp8\",^\"quantized_bytes\": 73784,^\"quantized_model_bytes\": 73784,|--json"
  "mxfp4|3|model.layers.0.self_attn.q_proj.weight_blocks: MXFP4 weights (U8, with its _scales), but||"
  "gpt_oss_mxfp4|0||Checkpoint  1 file, 41 tensors, 109.91 KiB (U8 25.50 KiB, BF16 84.41 KiB), matches the model^mxfp4 layers 25.50 KiB, as memest lays them out^12 tensors stacked over the experts^weights mxfp4 in 16 linear layers|"
  "gpt_oss_mxfp4.json|0||\"bytes\": 112544,^\"U8\": 26112,^\"BF16\": 86432^\"format\": \"mxfp4\",^\"quantized_bytes\": 26112,^\"quantized_model_bytes\": 26112,^\"matched\": 41,^\"stacked\": 12,|--json"
  "gpt_oss_bf16|0||Checkpoint  1 file, 37 tensors, 180.41 KiB (BF16 180.41 KiB), matches the model^8 tensors stacked over the experts|"
  "gpt_oss_bf16.json|0||\"tensors\": 37,^\"bytes\": 184736,^\"matched\": 37,^\"stacked\": 8,|--json"
  "gpt_oss_mxfp4_wrong_e|3|model.safetensors: model.layers.1.mlp.experts.down_proj_blocks: shape [3, 64, 1, 16] in the checkpoint stacks 3 tensors along its first dimension, the template has 4 (model.layers.1.mlp.experts.{0..3}.down_proj.blocks)||"
  "gpt_oss_bf16_out_in|3|model.layers.0.mlp.experts.down_proj: shape [4, 64, 32] in the checkpoint stacks 4 tensors of [64, 32], the template gives [32, 64] (model.layers.0.mlp.experts.0.down_proj.weight)||"
  "gpt_oss_mxfp4_dtype|3|model.layers.0.mlp.experts.gate_up_proj_scales: BF16 (16 bits) in the checkpoint, memest's layout of the quantised layer stores 8 bits an element||"
  "gpt_oss_mxfp4_no_config|3|model.layers.0.mlp.experts.gate_up_proj_blocks: MXFP4 weights (U8, with its _scales), but||"
  "qwen3_moe|0||Checkpoint  1 file, 45 tensors, 177.75 KiB (BF16 177.75 KiB), matches the model^Parameters  91,008 (91,008 trainable, 0 frozen) in 45 tensors|")
foreach(c IN LISTS _st_cases)
  string(REPLACE "|" ";" f "${c}")
  list(GET f 0 name)
  list(GET f 1 code)
  list(GET f 2 frag)
  list(GET f 3 outs)
  list(GET f 4 extra)
  string(REGEX REPLACE "\\..*$" "" gen "${name}")
  set(errs "")
  if(code EQUAL 0 AND frag)
    set(errs "${frag}")
    set(frag "")
  endif()
  add_test(NAME safetensors.${name}
           COMMAND ${CMAKE_COMMAND} -DPYTHON=${MEMEST_ST_PYTHON} -DGEN=${_st_gen} -DCASE=${gen}
                   -DOUT=${CMAKE_CURRENT_BINARY_DIR}/safetensors/${name} -DMEMEST=$<TARGET_FILE:memest>
                   -DEXIT=${code} "-DFRAGMENT=${frag}" "-DSTDOUT=${outs}" "-DSTDERR=${errs}" "-DEXTRA=${extra}"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/safetensors/case.cmake)
  set_tests_properties(safetensors.${name} PROPERTIES LABELS safetensors)
endforeach()

# Every allocation failing in turn (tests/group_oom.cmake's oom_test, built without
# sanitizers): a sharded checkpoint with its index, a GPTQ one, a refused extra tensor, and
# gpt-oss's MXFP4 experts stacked over E.
if(TARGET oom_test)
  foreach(c sharded:0 gptq:0 extra:3 gpt_oss_mxfp4:0)
    string(REPLACE ":" ";" c "${c}")
    list(GET c 0 name)
    list(GET c 1 code)
    add_test(NAME oom.safetensors_${name}
             COMMAND ${CMAKE_COMMAND} -DPYTHON=${MEMEST_ST_PYTHON} -DGEN=${_st_gen} -DCASE=${name}
                     -DOUT=${CMAKE_CURRENT_BINARY_DIR}/safetensors/oom_${name} -DEXIT=${code}
                     -DOOM=$<TARGET_FILE:oom_test> -P ${CMAKE_CURRENT_SOURCE_DIR}/safetensors/case.cmake)
    set_tests_properties(oom.safetensors_${name} PROPERTIES LABELS oom TIMEOUT 1800)
  endforeach()
endif()
