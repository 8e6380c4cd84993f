# ds_config.cmake - --deepspeed reads the user's config file, by hand from
# the two files beside this one and Llama-2-7B (P = 6,738,415,616; hidden
# size 4096) on 8 GPUs:
#   ds_zero2_bf16.json: stage 2, bf16, micro-batch 4, accumulation 2, AdamW,
#     overlap_comm with reduce_bucket_size 2e8: batch 4, dtype bf16,
#     optimizer adamw, global batch 4 x 2 x 8 = 64, two reduce buckets of
#     2e8 bf16 elements = 800,000,000 bytes (stage_1_and_2.py: a second
#     ipg_buffer with overlap_comm); model states 2P + 14P/8 =
#     13,476,831,232 + 11,792,227,328 = 25,269,058,560; the scheduler, the
#     clipping, steps_per_print and reduce_scatter noted as ignored.
#   ds_zero3_auto.json: the Hugging Face Trainer's ZeRO-3 example, "auto"
#     everywhere: the batch and dtype from the command line (--batch 2
#     --dtype bf16), reduce_bucket_size hidden^2 = 16,777,216 elements, one
#     stage-3 bucket of 33,554,432 bytes; the optimizer offloaded to the CPU:
#     on the device only the parameter partitions, 1,685,069,824 bytes (see
#     llama_7b.cmake), on the host the fp32 gradient, master and Adam
#     partitions, 16 x 842,301,952 = 13,476,831,232.
#   --strategy on the command line wins over the file's stage.
#   cmake -DMEMEST=... -DSRC=<source dir> -P ds_config.cmake
include(${CMAKE_CURRENT_LIST_DIR}/expect_json.cmake)
expect_json(zero2 ARGS --gpus 8 --deepspeed tests/dist/ds_zero2_bf16.json
    WANT batch 4 dtype bf16 optimizer adamw step.grad_accum 2 step.optim_impl fused
         parallel.strategy zero2 parallel.global_batch 64
         parallel.engine_buffers.buckets 800000000 parallel.model_states.total 25269058560)
if(NOT stderr MATCHES "ignored, as they change no memory: scheduler, gradient_clipping, steps_per_print, zero_optimization.reduce_scatter")
  message(FATAL_ERROR "zero2: no note of the ignored keys: ${stderr}")
endif()
expect_json(zero3_auto ARGS --gpus 8 --batch 2 --dtype bf16 --deepspeed tests/dist/ds_zero3_auto.json
    WANT batch 2 dtype bf16 parallel.strategy zero3 parallel.offload optimizer
         parallel.engine_buffers.buckets 33554432 parallel.model_states.total 1685069824
         parallel.host_bytes 13476831232)
expect_json(strategy_wins ARGS --gpus 8 --strategy zero1 --deepspeed tests/dist/ds_zero2_bf16.json
    WANT parallel.strategy zero1 parallel.model_states.gradients 13476831232)
