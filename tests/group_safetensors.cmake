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
  "mxfp4|3|model.layers.0.self_attn.q_proj.weight_blocks: MXFP4 weights (U8, with its _scales): memest does not match MXFP4||")
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
# sanitizers): a sharded checkpoint with its index, a GPTQ one, and a refused extra tensor.
if(TARGET oom_test)
  foreach(c sharded:0 gptq:0 extra:3)
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
