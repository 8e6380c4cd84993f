# zero_paper.cmake - the model states per GPU of Rajbhandari et al. 2020
# ("ZeRO: Memory Optimizations Toward Training Trillion Parameter Models"),
# Figure 1: Psi = 7.5B parameters, N_d = 64 GPUs, mixed-precision Adam
# (K = 12: fp32 master, momentum and variance):
#   baseline DDP   (2 + 2 + K) Psi          = 16 x 7.5e9      = 120 GB
#   P_os (ZeRO-1)  4 Psi + K Psi / N        = 30e9 + 1.40625e9 = 31.4 GB
#   P_os+g (ZeRO-2) 2 Psi + (2 + K) Psi / N = 15e9 + 1.640625e9 = 16.6 GB
#   P_os+g+p (ZeRO-3) (4 + K) Psi / N       = 1.875e9          = 1.9 GB
# Psi = 7.5e9 divides by 2 x 64 (DeepSpeed's ZeRO-1/2 flat-buffer padding to a
# multiple of nccl_start_alignment_factor x ranks) and by 64 (ZeRO-3's
# per-parameter padding), so the figures are exact here. The baseline is
# PyTorch DDP with autocast (--amp fp16): fp32 parameters 4 Psi, fp32
# gradients 4 Psi, Adam 8 Psi, the same 16 Psi. FSDP FULL_SHARD with 16-bit
# compute (MixedPrecision: fp32 shard 4 Psi/N, fp32 gradient shard 4 Psi/N,
# Adam 8 Psi/N) is 16 Psi / N too. The engines' buffers are stated apart:
# DDP's buckets a copy of the gradients (4 Psi = 30e9, gradient_as_bucket_view
# False), DeepSpeed's reduce bucket reduce_bucket_size (5e8) 16-bit elements
# = 1e9 bytes (one: overlap_comm is off by default for stages 1 and 2,
# stage 3 makes one of its own).
#   cmake -DMEMEST=... -DSRC=<source dir> -P zero_paper.cmake
set(cases "ddp --amp fp16 120000000000 30000000000"
          "zero1 --dtype fp16 31406250000 1000000000"
          "zero2 --dtype fp16 16640625000 1000000000"
          "zero3 --dtype fp16 1875000000 1000000000"
          "fsdp --dtype fp16 1875000000 0")
foreach(c ${cases})
  string(REPLACE " " ";" parts "${c}")
  list(GET parts 0 strategy)
  list(GET parts 1 flag)
  list(GET parts 2 value)
  list(GET parts 3 want_total)
  list(GET parts 4 want_buckets)
  execute_process(COMMAND ${MEMEST} tests/dist/psi_7_5b.json --gpus 64 --strategy ${strategy}
                          ${flag} ${value} --json
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "--strategy ${strategy}: exit ${rc}: ${err}")
  endif()
  string(JSON total GET "${out}" parallel model_states total)
  string(JSON buckets GET "${out}" parallel engine_buffers buckets)
  string(JSON peak GET "${out}" memory peak)
  if(NOT total EQUAL want_total)
    message(FATAL_ERROR "--strategy ${strategy}: model states ${total}, expected ${want_total}")
  endif()
  if(NOT buckets EQUAL want_buckets)
    message(FATAL_ERROR "--strategy ${strategy}: buckets ${buckets}, expected ${want_buckets}")
  endif()
  if(peak LESS total)
    message(FATAL_ERROR "--strategy ${strategy}: the simulated peak ${peak} is below the model "
                        "states ${total}")
  endif()
  message(STATUS "${strategy}: ${total} bytes of model states per GPU")
endforeach()

# The engine's buffers are in the simulated step: DDP's buckets (made with
# the reducer, kept) raise mlp-mnist's exact-tensor peak by the copy of its
# gradients, 784 x 512 + 512 + 512 x 512 + 512 + 512 x 10 + 10 = 669,706
# float32 elements = 2,678,824 bytes, at batch 64 as on one GPU.
foreach(mode one ddp)
  set(extra "")
  if(mode STREQUAL "ddp")
    set(extra --gpus 4 --strategy ddp)
  endif()
  execute_process(COMMAND ${MEMEST} models/mlp-mnist.json --batch 64 ${extra} --json
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "mlp-mnist ${mode}: exit ${rc}: ${err}")
  endif()
  string(JSON peak_${mode} GET "${out}" memory peak_tensors)
endforeach()
math(EXPR diff "${peak_ddp} - ${peak_one}")
if(NOT diff EQUAL 2678824)
  message(FATAL_ERROR "mlp-mnist: DDP's peak is ${diff} bytes above one GPU's, expected 2678824")
endif()
