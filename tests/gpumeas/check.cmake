# check.cmake - memest against figures measured on real GPUs and published
# (tests/reference/gpu-measurements.md; rows I1, I2 are tests/quant/i2.cmake,
# I9, I10 tests/unit/test_generate.c). The expected figure of every case is the
# PUBLISHED one, with its row ID; where the measured setup differs from what
# memest simulates, the difference is stated with its cause and added to
# memest's figure before the comparison, or the case asserts a bound.
#
#   cmake -DMEMEST=<memest> -DSRC=<source dir> -DCASE=<case> [-DOUT=<scratch dir>] -P check.cmake
#
# Cases:
#   o1.t1024 o1.t2048 o1.t4096 o1.t8192     row O1, transformers LlamaMLP (tests/gpumeas/llama_mlp.json)
#   o2.v4096 ... o2.v131072                  row O2, CrossEntropyLoss (cross_entropy.json)
#   o3.bt4096 ... o3.bt32768                 row O3, lm_head + CrossEntropyLoss (lm_head_ce.json)
#   o3m.bt4096 ... o3m.bt32768               row O3, the loss inside the module (lm_head_ce_module.json)
#   t12.1x512 t12.1x1024 t12.1x2048 t12.4x512  row T12, pythia-410m-deduped eager - SDPA
#   c1 c2 c5 c6                              rows C1, C2, C5, C6 (ones.json, randn.json, linear_1_1.json)
#   c3                                       row C3, the default context (not in the group: see below)
#
# Liger-Kernel's figures (O1-O3, benchmark/data/all_benchmark_data.csv) are
# max_memory_allocated() / 2**20, the median of 10 runs kept as a torch.float32
# (utils.py _test_memory: torch.tensor(total_mem, dtype=torch.float) and
# torch.quantile), so each is the measured MiB rounded to float32: the
# tolerance of those cases is half a float32 ulp of the published value (64 B
# at 1,280 MiB up to 2 KiB at 40,960 MiB), nothing more.
#
# Differences with known causes, used below:
#   (WS   8,519,680 B: PyTorch takes one cuBLAS workspace per handle and
#         stream (CublasHandlePool.cpp); the autograd engine runs the CUDA
#         backward on its own thread, with its own handle, so a training step
#         holds two (A100: 2 x (2 x 4 MiB + 8 x 16 KiB)). These rows showed
#         it; memest models both since (src/sim/sim_forward.c, sim_cublas),
#         so it is in memest's figure and no longer added here.)
#   SEED  512 B: torch.autograd.backward() makes the seed ones_like(loss) in
#         Python (_make_grads) and holds it in grad_tensors_ until the
#         backward returns; memest frees it after the loss's first backward node.
#   O1: the harness calls backward(..., retain_graph=True): every tensor
#         autograd saved lives to the end of the backward (until y dies);
#         memest frees each after the backward of the last node that saved it.
#   O3 (lm_head_ce.json): memest's step keeps the logits as the caller's out;
#         the harness computes the loss inside the module, whose local logits
#         [BT, V] die when forward returns.
cmake_minimum_required(VERSION 3.19)

if(NOT DEFINED OUT)
  if(DEFINED ENV{TMPDIR})
    set(OUT "$ENV{TMPDIR}")
  else()
    set(OUT "/tmp")
  endif()
endif()
set(SEED 512)

# Runs memest in SRC with the arguments given; its stdout in OUTVAR.
function(run_memest outvar)
  execute_process(COMMAND ${MEMEST} ${ARGN} WORKING_DIRECTORY ${SRC}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "memest ${ARGN}: exit ${rc}: ${err}")
  endif()
  set(${outvar} "${out}" PARENT_SCOPE)
endfunction()

# |got - want| <= tol bytes, else a failure naming the row.
function(expect_bytes label got want tol)
  math(EXPR diff "${got} - ${want}")
  set(adiff ${diff})
  if(adiff LESS 0)
    math(EXPR adiff "-${adiff}")
  endif()
  if(adiff GREATER tol)
    message(FATAL_ERROR "${label}: memest ${got} B, published ${want} B: "
                        "${diff} B off, ${tol} B allowed")
  endif()
  message(STATUS "${label}: memest ${got} B, published ${want} B (${diff} B; "
                 "${tol} B allowed)")
endfunction()

# |got - want| <= ppm parts per million of want (50000: 5%).
function(expect_ppm label got want ppm)
  math(EXPR diff "${got} - ${want}")
  set(adiff ${diff})
  if(adiff LESS 0)
    math(EXPR adiff "-${adiff}")
  endif()
  math(EXPR lhs "1000000 * ${adiff}")
  math(EXPR rhs "${ppm} * ${want}")
  math(EXPR off "1000000 * ${diff} / ${want}")
  if(lhs GREATER rhs)
    message(FATAL_ERROR "${label}: memest ${got}, published ${want} (${off} ppm off; ${ppm} ppm allowed)")
  endif()
  message(STATUS "${label}: memest ${got}, published ${want} (${off} ppm; ${ppm} ppm allowed)")
endfunction()

# The largest `allocated` of the timeline rows of NODE's backward allocations.
function(timeline_max outvar file node)
  file(STRINGS "${file}" rows REGEX "^[0-9]+,backward,${node},alloc,")
  set(best -1)
  foreach(row IN LISTS rows)
    if(NOT row MATCHES ",([0-9]+),([0-9]+)$")
      message(FATAL_ERROR "${file}: unexpected row ${row}")
    endif()
    if(CMAKE_MATCH_1 GREATER best)
      set(best ${CMAKE_MATCH_1})
    endif()
  endforeach()
  if(best LESS 0)
    message(FATAL_ERROR "${file}: no backward allocation of ${node}")
  endif()
  set(${outvar} ${best} PARENT_SCOPE)
endfunction()

if(CASE MATCHES "^o1\\.t([0-9]+)$")
  # O1 (Liger-Kernel b5672a15, A100-SXM4-80GB, 2024-09-03): LlamaMLP, bf16, B = 4,
  # hidden 4096, intermediate 11008, full fwd + bwd. Published (MiB):
  # T = 1024: 1,294.25; 2048: 1,992.25; 4096: 3,452.25; 8192: 6,372.25.
  # With retain_graph=True the saved [B*T, I] tensors (gate_proj's output,
  # saved by silu; act_fn's and up_proj's, saved by mul; mul's, saved by
  # down_proj) all live to the end. The measured peak is the larger of
  #   mul's backward (its two gradients made): memest's allocated there
  #     + mul's output, which memest freed after down_proj's backward;
  #   up_proj's backward (its input gradient and weight gradient made):
  #     memest's allocated there + mul's, act_fn's and up_proj's outputs;
  # (the backward thread's cuBLAS workspace, WS, is in memest's figure). The first wins from
  # T = 2048 on (730 MiB per +1,024 = 7 I + 4 H per token, bf16), the second
  # at T = 1024 (up_proj's 86 MiB weight-gradient temporary).
  set(T ${CMAKE_MATCH_1})
  set(pub_1024 1357119488)
  set(pub_2048 2089025536)
  set(pub_4096 3619946496)
  set(pub_8192 6681788416)
  set(tol_1024 64)
  set(tol_2048 64)
  set(tol_4096 128)
  set(tol_8192 256)
  if(NOT DEFINED pub_${T})
    message(FATAL_ERROR "unknown case ${CASE}")
  endif()
  set(tl "${OUT}/gpumeas_o1_${T}.csv")
  run_memest(out tests/gpumeas/llama_mlp.json -b 4 --dtype bf16 --optim sgd --zero-grad zeros
             --set seq_len=${T} --json --timeline ${tl})
  string(JSON peak GET "${out}" memory peak)
  timeline_max(at_mul "${tl}" mul)
  timeline_max(at_up "${tl}" up_proj)
  file(REMOVE "${tl}")
  math(EXPR I "4 * ${T} * 11008 * 2")
  math(EXPR via_mul "${at_mul} + ${I}")
  math(EXPR via_up "${at_up} + 3 * ${I}")
  if(via_mul GREATER via_up)
    set(got ${via_mul})
  else()
    set(got ${via_up})
  endif()
  message(STATUS "O1 T=${T}: memest peak ${peak} B (mul's backward ${at_mul}, up_proj's ${at_up})")
  expect_bytes("O1 T=${T} (the run's retain_graph added)" ${got} ${pub_${T}} ${tol_${T}})

elseif(CASE MATCHES "^o2\\.v([0-9]+)$")
  # O2 (Liger-Kernel b5672a15, A100-SXM4-80GB): CrossEntropyLoss on float32
  # logits (16384, V) with requires_grad. Published (MiB): 1,280.1259765625,
  # 2,560.1259765625, 5,120.1259765625, 10,240.1259765625, 20,480.125,
  # 40,960.125 (the last two are the float32 roundings of ...0.1259765625).
  # 5 x the logits: the logits, their .grad (kept from the previous run),
  # log_softmax's output (saved), nll_loss_backward's zeros and
  # log_softmax's gradient, alive together in log_softmax's backward; plus
  # the int64 target (128 KiB), the loss and the seed (SEED, see above).
  # No matrix product: no cuBLAS workspace, in the run or in memest.
  set(V ${CMAKE_MATCH_1})
  set(pub_4096 1342309376)
  set(pub_8192 2684486656)
  set(pub_16384 5368841216)
  set(pub_32768 10737550336)
  set(pub_65536 21474967552)
  set(pub_131072 42949804032)
  set(tol_4096 64)
  set(tol_8192 128)
  set(tol_16384 256)
  set(tol_32768 512)
  set(tol_65536 1024)
  set(tol_131072 2048)
  if(NOT DEFINED pub_${V})
    message(FATAL_ERROR "unknown case ${CASE}")
  endif()
  run_memest(out tests/gpumeas/cross_entropy.json -b 16384 --optim sgd --zero-grad zeros
             --set vocab=${V} --json)
  string(JSON peak GET "${out}" memory peak)
  math(EXPR got "${peak} + ${SEED}")
  expect_bytes("O2 V=${V} (SEED added)" ${got} ${pub_${V}} ${tol_${V}})

elseif(CASE MATCHES "^(o3m?)\\.bt([0-9]+)$")
  # O3 (Liger-Kernel v0.4.2, A100-SXM4-80GB, 2024-11-22): Linear(4096 ->
  # 128256, no bias) + CrossEntropyLoss, bf16, torch provider, both modules'
  # V x H weights resident. Published (MiB): BT = 4096: 6,092.2822265625;
  # 8192: 9,162.3134765625; 16384: 15,302.3759765625; 32768: 27,582.5.
  # The peak is log_softmax's backward: two weights, the torch weight's
  # .grad, x and its .grad, the target, log_softmax's output, the
  # nll_loss_backward zeros and log_softmax's gradient, the loss and SEED,
  # and the two cuBLAS workspaces (in memest's figure). o3: memest's own cross-entropy, whose
  # caller keeps the logits: memest holds one [BT, V] bf16 tensor the run
  # does not. o3m: the loss written inside the model.
  set(kind ${CMAKE_MATCH_1})
  set(BT ${CMAKE_MATCH_2})
  set(pub_4096 6388220928)
  set(pub_8192 9607382016)
  set(pub_16384 16045704192)
  set(pub_32768 28922347520)
  set(tol_4096 256)
  set(tol_8192 512)
  set(tol_16384 512)
  set(tol_32768 1024)
  if(NOT DEFINED pub_${BT})
    message(FATAL_ERROR "unknown case ${CASE}")
  endif()
  if(kind STREQUAL "o3")
    set(file tests/gpumeas/lm_head_ce.json)
  else()
    set(file tests/gpumeas/lm_head_ce_module.json)
  endif()
  run_memest(out ${file} -b ${BT} --dtype bf16 --optim sgd --zero-grad zeros --json)
  string(JSON peak GET "${out}" memory peak)
  math(EXPR got "${peak} + ${SEED}")
  if(kind STREQUAL "o3")
    math(EXPR got "${got} - ${BT} * 128256 * 2")
  endif()
  expect_bytes("O3 ${file} BT=${BT} (SEED added; o3: the logits less)" ${got} ${pub_${BT}} ${tol_${BT}})

elseif(CASE MATCHES "^t12\\.([0-9]+)x([0-9]+)$")
  # T12 (transformers PR #31031, RTX 3080 Ti 16 GB, PyTorch 2.2.1):
  # pythia-410m-deduped in float16, eager against SDPA attention. The
  # training benchmark (fxmarty's gist, unread; its public descendants) runs
  # model.zero_grad(); out = model(**inputs); out.logits.sum().backward()
  # with no optimizer (AdamW's float16 states alone would make 3,093 MiB of
  # model states, above the 2,278 MB measured at 1 x 512) and prints
  # max_memory_allocated() * 1e-6: MB are 10^6 bytes. memest: --optim sgd
  # (no state, no temporaries), --loss none (the template's logits seed). Published eager vs SDPA (MB): 1 x 512: 2278.38 vs 1953.76;
  # 1 x 1024: 4772.36 vs 2408.35; 1 x 2048: 13484.1 vs 3882.01; 4 x 512:
  # 6290.58 vs 3877.29. The script is unread and the model code is
  # transformers 4.42's, not the 4.48 template's (memest's peaks are 2% to 8%
  # under eager's, 10% to 11% under SDPA's), so only the difference,
  # the memory the S x S attention matrices cost, is asserted: eager saves
  # each layer's float32 softmax and its float16 copy, 6 bytes per score
  # (4.48 upcasts the softmax; 4.42 computed the scores from the float32
  # query and key its float32 rotary tables make). Within 5%; at 1 x 512 within 25%: there the two peaks are
  # in different places (eager: the lm head's backward; SDPA: the end of the
  # backward, all gradients alive), so the difference is not the S x S cost
  # alone, and memest's SDPA peak there is 220 MB (11%) under the measurement.
  set(B ${CMAKE_MATCH_1})
  set(S ${CMAKE_MATCH_2})
  set(pub_1x512 324620000)
  set(pub_1x1024 2364010000)
  set(pub_1x2048 9602090000)
  set(pub_4x512 2413290000)
  set(ppm_1x512 250000)
  set(ppm_1x1024 50000)
  set(ppm_1x2048 50000)
  set(ppm_4x512 50000)
  if(NOT DEFINED pub_${B}x${S})
    message(FATAL_ERROR "unknown case ${CASE}")
  endif()
  set(args tests/gpumeas/pythia-410m-deduped.json -b ${B} --seq ${S} --dtype fp16 --optim sgd --loss none
           --loop plain --json)   # the harness keeps `out` through its backward
  run_memest(eager ${args} --attention eager)
  run_memest(sdpa ${args} --attention auto)
  string(JSON pe GET "${eager}" memory peak)
  string(JSON ps GET "${sdpa}" memory peak)
  math(EXPR got "${pe} - ${ps}")
  message(STATUS "T12 ${B}x${S}: memest eager ${pe} B, SDPA ${ps} B")
  expect_ppm("T12 ${B}x${S} eager - SDPA" ${got} ${pub_${B}x${S}} ${ppm_${B}x${S}})

elseif(CASE STREQUAL "c1")
  # C1 (transformers perf_train_gpu_one, V100, CUDA 11.2, eager module
  # loading): NVML 1,343 MiB after torch.ones((1, 1)).to("cuda"), "including
  # one 2 MiB allocator block". memest cannot know that stack's context (its
  # default is one figure for every card): given the rest, 1,341 MiB, as
  # --overhead, the device total must be the published figure, the float32
  # element held in a 2 MiB small-pool segment.
  run_memest(out tests/gpumeas/ones.json --inference --overhead 1406140416 --json)
  string(JSON got GET "${out}" memory total_device)
  expect_bytes("C1" ${got} 1408237568 0)

elseif(CASE STREQUAL "c2")
  # C2 (PyTorch PR #86509, CUDA >= 11.7): total - free after
  # torch.randn(20,16,50,100).cuda(), 287,047,680 B with
  # CUDA_MODULE_LOADING=LAZY. The figure holds the 6.4 MB tensor's 20 MiB
  # large-pool segment: the context alone is 266,076,160 B. Given that as
  # --overhead, the device total must be the published figure (the segment,
  # to the byte).
  run_memest(out tests/gpumeas/randn.json -b 20 --inference --overhead 266076160 --json)
  string(JSON got GET "${out}" memory total_device)
  expect_bytes("C2" ${got} 287047680 0)

elseif(CASE STREQUAL "c3")
  # C3 (unslothai/unsloth-zoo PR #1053, RTX 6000 Ada, PyTorch 2.10.0+cu130):
  # nvidia-smi 426 MiB for a context with nothing allocated. memest's default
  # context (memory.overhead without --overhead) against it, within 1%: the
  # default is this row's figure (src/sim/cuda_overhead.c).
  run_memest(out tests/gpumeas/ones.json --inference --json)
  string(JSON got GET "${out}" memory overhead)
  expect_ppm("C3 default CUDA context" ${got} 446693376 10000)

elseif(CASE STREQUAL "c5" OR CASE STREQUAL "c6")
  # C5 (PyTorch issue #95668, A10G, 2.0 nightly): nn.Linear(1,1)'s forward
  # leaves 8,519,680 B allocated: the cuBLAS workspace (:4096:2:16:8).
  # C6 (Megatron-LM PR #6936, H100): "32 MiB each on sm90" for the classic
  # and the Lt workspace; memest models the classic one only (33,554,432 B).
  if(CASE STREQUAL "c5")
    set(gpu a10)
    set(want 8519680)
  else()
    set(gpu h100-80gb)
    set(want 33554432)
  endif()
  run_memest(out tests/gpumeas/linear_1_1.json --inference --gpu ${gpu} --json)
  string(JSON got GET "${out}" memory inference at_peak workspace)
  string(TOUPPER "${CASE}" row)
  expect_bytes("${row} cuBLAS workspace (--gpu ${gpu})" ${got} ${want} 0)
  # PyTorch 1.13 left the workspace to cuBLAS, outside the caching
  # allocator (its CublasHandlePool.cpp has no workspace): none there.
  run_memest(out tests/gpumeas/linear_1_1.json --inference --gpu ${gpu} --torch 1.13 --json)
  string(JSON got GET "${out}" memory inference at_peak workspace)
  expect_bytes("${row} cuBLAS workspace under --torch 1.13" ${got} 0 0)

else()
  message(FATAL_ERROR "unknown case '${CASE}'")
endif()
