# llama_7b.cmake - one rank's model states of Llama-2-7B
# (models/hf/llama-2-7b.json: P = 6,738,415,616 parameters; per decoder
# layer 4 x 4096^2 + 3 x 11008 x 4096 + 2 x 4096 = 202,383,360; embed_tokens
# and lm_head 32000 x 4096 = 131,072,000 each; 65 RMSNorm weights of 4096)
# on 8 GPUs in bf16, written out by hand from the engines' code:
#
# zero2: DeepSpeed's own estimator, estimate_zero2_model_states_mem_needs
#   (deepspeed/runtime/zero/stage_1_and_2.py, v0.16.4): gpu = 2P +
#   int(18P / G) = 13,476,831,232 + 15,161,435,136 = 28,638,266,368 bytes.
#   memest: the rank's model states (2P of bf16 parameters, then per element
#   of the partition P/8 = 842,301,952: 2 gradient, 4 master, 8 Adam) plus
#   the fp32 gradient partition the step makes (4): the same sum.
#   With offload_optimizer: gpu = 2P = 13,476,831,232 (the model states on
#   the device).
# zero3: partition_parameters.py: each parameter padded to a multiple of 8
#   and cut, except those of at most stage3_param_persistence_threshold (1e5)
#   elements (the 65 norms, 266,240 elements), kept whole: parameters
#   2 x (6,738,149,376 / 8) + 2 x 266,240 = 1,685,069,824; the gradient, master
#   and Adam partitions over every trainable parameter, 842,301,952
#   elements: 2 x, 4 x and 8 x that = 1,684,603,904, 3,369,207,808,
#   6,738,415,616; in all 13,477,297,152. ZeRO-3 gathers module by module:
#   the decoder layers, and the embeddings, the final norm and the head each
#   on their own, and fetches ahead at most stage3_prefetch_bucket_size (5e7)
#   elements of the next: at most a layer without its persistent norms,
#   2 x (202,383,360 - 8,192) = 404,750,336, and 1e8 bytes of the next,
#   504,750,336.
# fsdp: _flat_param.py: one FlatParameter per decoder layer (32 units) and
#   the root (embeddings, the final norm and the head: 262,148,096), each
#   padded to a multiple of 8 and cut: 25,297,920 and 32,768,512 elements, in
#   all 842,301,952; with bf16 compute (MixedPrecision) the shards are fp32,
#   as are their gradients, Adam 8 bytes: 16 x 842,301,952 = 13,476,831,232;
#   gathered at most: two neighbouring layers in bf16 (the one computing, the
#   prefetched one: 2 x 2 x 202,383,360) and the root unit
#   (2 x 262,148,096): 1,333,829,632.
# ddp --ddp-bucket-view: no bucket copies; without it, a copy of the bf16
#   gradients, 2P = 13,476,831,232.
#   cmake -DMEMEST=... -DSRC=<source dir> -P llama_7b.cmake
function(run name want_total want_buckets want_gathered)
  execute_process(COMMAND ${MEMEST} models/hf/llama-2-7b.json --seq 128 --dtype bf16 --gpus 8
                          ${ARGN} --json
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: exit ${rc}: ${err}")
  endif()
  string(JSON total GET "${out}" parallel model_states total)
  string(JSON shard GET "${out}" parallel shard_elements)
  string(JSON buckets GET "${out}" parallel engine_buffers buckets)
  string(JSON gathered GET "${out}" parallel engine_buffers gathered_parameters)
  if(name MATCHES "estimator")
    math(EXPR total "${total} + 4 * ${shard}")   # + the step's fp32 gradient partition
  endif()
  foreach(k total buckets gathered)
    if(NOT ${k} EQUAL want_${k})
      message(FATAL_ERROR "${name}: ${k} ${${k}}, expected ${want_${k}}")
    endif()
  endforeach()
  message(STATUS "${name}: model states ${total}, buckets ${buckets}, gathered ${gathered}")
endfunction()
run(zero2_estimator 28638266368 1000000000 0 --strategy zero2)
run(zero2_offload 13476831232 1000000000 0 --strategy zero2 --offload optimizer)
run(zero3 13477297152 1000000000 504750336 --strategy zero3)
run(fsdp 13476831232 0 1333829632 --strategy fsdp)
run(ddp_view 53907324928 0 0 --strategy ddp --ddp-bucket-view)
run(ddp 53907324928 13476831232 0 --strategy ddp)
