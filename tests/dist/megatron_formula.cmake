# megatron_formula.cmake - Megatron-LM's theoretical memory formula
# (megatron/training/theoretical_memory_usage.py at 2bfe9bea,
# compute_weight_and_optimizer_memory) for Llama-2-7B on 16 GPUs, tensor
# parallel 2 x pipeline parallel 4 x data parallel 2, with the distributed
# optimizer (memest: --strategy zero1), bf16:
#   h 4096, L 32, a = g 32, kv_channels 128, ffn 11008, swiglu, untied,
#   padded vocabulary ceil(32000 / (128 x 2)) x 256 = 32000;
#   transformer = 2 L h^2 ((1 + g/a) (kv a / h) + (ffn / h) 3/2 + 2/h + 1/(L h))
#     = 2,147,483,648 + 4,328,521,728 + 524,288 + 8,192 = 6,476,537,856;
#   embedding = h x 32000 = 131,072,000;
#   most loaded shard = (transformer / pp + embedding) / tp = 875,103,232;
#   bytes per parameter = 6 + 12 / dp = 12: 10,501,238,784 bytes.
# Where memest's rank differs, by construction of the two models, stated:
#   - the formula spreads the final norm's 2h over all pp x tp shards
#     (1,024 here), while it is whole (h = 4096, RMSNorm: no bias) on each
#     last-stage rank: memest's last stage has 875,103,232 + 4,096 - 1,024 =
#     875,106,304 parameters per rank (its 2 x 4096 RMSNorm weights per layer,
#     whole on each tensor-parallel rank, equal the formula's 4h / tp of
#     LayerNorm weight and bias at tp 2); the first stage 875,102,208 (the
#     embedding and 8 layers, no final norm);
#   - Megatron keeps fp32 main gradients (4 bytes) where memest keeps
#     DeepSpeed's 16-bit ones (2): memest's model states of the last stage
#     plus 2 bytes per parameter equal 12 bytes per parameter.
#   cmake -DMEMEST=... -DSRC=<source dir> -P megatron_formula.cmake
execute_process(COMMAND ${MEMEST} models/hf/llama-2-7b.json --seq 1024 --dtype bf16 --gpus 16
                        --tp 2 --pp 4 --strategy zero1 --json
                WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit ${rc}: ${err}")
endif()
math(EXPR transformer "2 * 32 * 4096 * 4096 * 2 + 2 * 32 * 4096 * 11008 * 3 / 2 + 2 * 32 * 4096 * 2 + 2 * 4096")
math(EXPR most "(${transformer} / 4 + 4096 * 32000) / 2")
if(NOT most EQUAL 875103232)
  message(FATAL_ERROR "the formula's most loaded shard: ${most}")
endif()
string(JSON p0 GET "${out}" parallel stages 0 parameters)
string(JSON p3 GET "${out}" parallel stages 3 parameters)
string(JSON s3 GET "${out}" parallel stages 3 model_states)
string(JSON dp GET "${out}" parallel dp)
math(EXPR want3 "${most} + 4096 - 1024")
math(EXPR want0 "${most} - 1024")
if(NOT p3 EQUAL want3 OR NOT p0 EQUAL want0)
  message(FATAL_ERROR "stage parameters ${p0} and ${p3}, expected ${want0} and ${want3}")
endif()
math(EXPR megatron "${p3} * (6 + 12 / ${dp})")
math(EXPR got "${s3} + 2 * ${p3}")
if(NOT got EQUAL megatron)
  message(FATAL_ERROR "last stage: model states ${s3} + 2 x ${p3} = ${got}, the formula ${megatron}")
endif()
message(STATUS "most loaded shard ${p3} parameters, ${got} bytes with fp32 main gradients, as the formula")
