/* cuda_overhead.h - what CUDA and its libraries take on the device beside
 * the tensors, per card generation (src/sim/cuda_overhead.c documents the
 * figures and their sources). Device knowledge the simulator needs (the
 * cuBLAS workspace is one of its allocations) and the estimate adds (the
 * context), so it sits in the simulator's layer, below both; the card
 * layer (gpu.h) comes later and cannot be used by them. */
#pragma once

#include <stdint.h>

/* The device overhead nvidia-smi shows beyond the allocator's reserved
 * memory, for a card of compute capability gpu_arch (0 = unknown): the CUDA
 * context. */
uint64_t memest_default_overhead(unsigned gpu_arch);
/* The cuBLAS workspace PyTorch takes from the caching allocator on the first
 * matrix product (per handle and stream). */
uint64_t memest_cublas_workspace(unsigned gpu_arch);
