# fsdp_lora.cmake - FSDP over LoRA, 4-bit weights and pure 16-bit models:
# the model states of one rank of 8 against hand calculations from the
# engines' code (src/step/dist_units.c cites it). Llama-2-7B: hidden 4096,
# intermediate 11008, 32 layers, vocabulary 32000, untied head. A layer
# holds 4 x 4096^2 = 67,108,864 attention and 3 x 4096 x 11008 =
# 135,266,304 MLP weights and two norms of 4096: 202,383,360 elements; the
# root unit (embedding, final norm, head) 2 x 131,072,000 + 4096 =
# 262,148,096. --lora 16 adapts q_proj and v_proj (PEFT's default for
# llama): 64 adapted layers, each an A of 16 x 4096 and a B of 4096 x 16,
# 65,536 fp32 elements apiece (PEFT keeps adapters in fp32).
#   cmake -DMEMEST=... -DSRC=<source dir> -P fsdp_lora.cmake
include(${CMAKE_CURRENT_LIST_DIR}/expect_json.cmake)

# 1. LoRA, bf16, PEFT's policy (the default with --lora): 32 frozen layer
# units and the frozen root stay bf16 (accelerate upcasts only what requires
# grad): 32 x 202,383,360 / 8 x 2 = 1,619,066,880 and 262,148,096 / 8 x 2 =
# 65,537,024 bytes; 128 adapter units of 65,536 fp32 elements, 8,192 a rank:
# 128 x 8,192 x 4 = 4,194,304 bytes of shards, as many of gradients, twice
# that of Adam state. Parameters 1,619,066,880 + 65,537,024 + 4,194,304 =
# 1,688,798,208; total + 4,194,304 + 8,388,608 = 1,701,381,120.
expect_json(lora_peft ARGS --gpus 8 --strategy fsdp --dtype bf16 --lora 16
    WANT parallel.engine_buffers.units 160
         parallel.model_states.parameters 1688798208 parallel.model_states.gradients 4194304
         parallel.model_states.optimizer_state 8388608 parallel.model_states.total 1701381120)

# 2. LoRA under the layers policy with use_orig_params (fp32 weights,
# autocast: one type per unit): a layer's FlatParameter holds its 202,383,360
# elements and its four adapters' 262,144 (all multiples of 4: no alignment
# padding), 202,645,504, 25,330,688 a rank, 101,322,752 bytes of shard and
# as many of gradient (whole: the unit requires grad); the root 262,148,096 /
# 8 x 4 = 131,074,048. Adam's state covers the adapters in the rank's chunk:
# in registration order q_proj (16,777,216), its A and B at
# [16,777,216, 16,908,288) - rank 0's chunk [0, 25,330,688) - and v_proj's
# A and B at [50,462,720, 50,593,792) - rank 1's [25,330,688, 50,661,376):
# at most 131,072 elements a rank, x 4 x 2 x 32 layers = 33,554,432.
# Parameters 32 x 101,322,752 + 131,074,048 = 3,373,402,112, gradients
# 3,242,328,064, total 6,649,284,608.
expect_json(lora_orig ARGS --gpus 8 --strategy fsdp --amp bf16 --lora 16 --fsdp-policy layers
                           --fsdp-orig-params
    WANT parallel.engine_buffers.units 32
         parallel.model_states.parameters 3373402112 parallel.model_states.gradients 3242328064
         parallel.model_states.optimizer_state 33554432 parallel.model_states.total 6649284608)

# 3. QLoRA: nf4 weights packed in bf16 (--quant-storage bf16, four values an
# element): a layer's 202,375,168 weights are 50,593,792 elements, with its
# norms 50,601,984, 6,325,248 a rank, 12,650,496 bytes; x 32 = 404,815,872.
# The quantisation state stays whole on every rank: absmax, one fp32 per 64
# weights, 202,375,168 / 64 x 4 = 12,648,448, and a 16-entry fp32 code per
# linear, 7 x 64 = 448, a layer: x 32 = 404,764,672. The root (embedding and
# head are not quantised) 65,537,024 and the adapters 4,194,304 as in 1.
# Parameters 404,815,872 + 404,764,672 + 65,537,024 + 4,194,304 =
# 879,311,872; total 891,894,784. (Before: counted at one byte an element,
# with fp32 shards of the frozen base.)
expect_json(qlora ARGS --gpus 8 --strategy fsdp --dtype bf16 --lora 16 --weights nf4
                       --quant-storage bf16
    WANT parallel.model_states.parameters 879311872 parallel.model_states.gradients 4194304
         parallel.model_states.optimizer_state 8388608 parallel.model_states.total 891894784)

# 4. ZeRO-3 over the same 4-bit weights: each parameter padded to a
# multiple of 8 and cut, the small ones (<= 1e5 elements: norms, adapters)
# whole. A layer: q, k, v, o of 16,777,216 / 4 / 8 = 524,288 elements and
# gate, up, down of 45,088,768 / 4 / 8 = 1,409,024: 6,324,224 x 2 =
# 12,648,448 bytes; norms 2 x 4096 x 2 = 16,384; adapters 4 x 65,536 x 4 =
# 1,048,576; quantisation state 12,648,896 (as in 3): 26,362,304, x 32 =
# 843,593,728. Embedding and head 2 x 131,072,000 / 8 x 2 = 65,536,000, the
# final norm 8,192 whole: parameters 909,137,920.
expect_json(qlora_zero3 ARGS --gpus 8 --strategy zero3 --dtype bf16 --lora 16 --weights nf4
                             --quant-storage bf16
    WANT parallel.model_states.parameters 909137920)

# 5. Pure 16-bit FSDP (no MixedPrecision, accelerate's mixed_precision: no):
# 842,301,952 elements a rank (32 x 25,297,920 + 32,768,512), bf16 shards,
# bf16 gradients and two bf16 Adam states: 8 bytes each, 6,738,415,616; the
# same file with mixed_precision: no gives the same.
expect_json(pure ARGS --gpus 8 --strategy fsdp --dtype bf16 --fsdp-no-mixed-precision
    WANT parallel.model_states.parameters 1684603904 parallel.model_states.gradients 1684603904
         parallel.model_states.optimizer_state 3369207808 parallel.model_states.total 6738415616)
file(WRITE ${WORK}/fsdp_pure.yaml "distributed_type: FSDP\nmixed_precision: 'no'\nnum_processes: 8\n"
     "fsdp_config:\n  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer\n")
expect_json(pure_file ARGS --dtype bf16 --fsdp-config ${WORK}/fsdp_pure.yaml
    WANT parallel.model_states.total 6738415616)

# 6. FSDP2 (fully_shard) on 3 GPUs, pure bf16: each parameter chunked on
# dim 0 and padded to ceil(dim0 / 3) rows. A layer: q, k, v, o 4 x 1366 x
# 4096 = 22,380,544; gate, up 2 x 3670 x 4096 = 30,064,640; down 1366 x
# 11008 = 15,036,928; the norms 2 x 1366 = 2,732: 67,484,844 elements, x 32
# = 2,159,515,008; embedding and head 2 x 10667 x 4096 = 87,384,064 and the
# final norm 1366: 2,246,900,438 a rank, x 8 bytes = 17,975,203,504. FSDP1
# cuts each FlatParameter instead: a layer's 202,383,360 / 3 = 67,461,120,
# the root's ceil(262,148,096 / 3) = 87,382,699: 2,246,138,539 x 8 =
# 17,969,108,312. An accelerate config's fsdp_version: 2 is --fsdp2.
expect_json(fsdp2 ARGS --gpus 3 --strategy fsdp --dtype bf16 --fsdp-no-mixed-precision --fsdp2
    WANT parallel.model_states.total 17975203504)
expect_json(fsdp1_3 ARGS --gpus 3 --strategy fsdp --dtype bf16 --fsdp-no-mixed-precision
    WANT parallel.model_states.total 17969108312)
file(WRITE ${WORK}/fsdp2.yaml "distributed_type: FSDP\nmixed_precision: 'no'\nnum_processes: 3\n"
     "fsdp_config:\n  fsdp_version: 2\n  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer\n")
expect_json(fsdp2_file ARGS --dtype bf16 --fsdp-config ${WORK}/fsdp2.yaml
    WANT parallel.model_states.total 17975203504)
# FSDP2 takes LoRA in the layers' units (mixed requires_grad and types are
# its to shard): the same states as 1 (every dimension divides by 8).
expect_json(fsdp2_lora ARGS --gpus 8 --strategy fsdp --dtype bf16 --lora 16 --fsdp2
    WANT parallel.engine_buffers.units 32 parallel.model_states.total 1701381120)

# What PyTorch refuses is refused (exit 2), naming the node.
function(expect_refused name want)
  execute_process(COMMAND ${MEMEST} models/hf/llama-2-7b.json --seq 128 ${ARGN}
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "${want}")
    message(FATAL_ERROR "${name}: exit ${rc}, expected 2 and \"${want}\": ${err}")
  endif()
endfunction()
expect_refused(mixed_grad "node 'model.layers.0.[a-z_.]+': .*uniform requires_grad"
               --gpus 8 --strategy fsdp --amp bf16 --lora 16 --fsdp-policy layers)
expect_refused(mixed_dtype "node 'model.layers.0.self_attn.q_proj.lora_A.default': .*uniform dtype"
               --gpus 8 --strategy fsdp --dtype bf16 --lora 16 --fsdp-policy layers)
expect_refused(uint8_packing "uint8.*--quant-storage bf16"
               --gpus 8 --strategy fsdp --dtype bf16 --lora 16 --weights nf4)
expect_refused(pure_fp32 "--fsdp-no-mixed-precision .*fp16 or bf16"
               --gpus 8 --strategy fsdp --dtype fp32 --fsdp-no-mixed-precision)
expect_refused(policy_without_fsdp "--fsdp-policy needs --strategy fsdp"
               --gpus 8 --strategy zero3 --fsdp-policy peft)
