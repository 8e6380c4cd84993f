/* cuda_overhead.c - the device memory CUDA and its libraries take beside the
 * tensors (cuda_overhead.h).
 *
 * What nvidia-smi shows beyond memory_reserved() is mostly the CUDA context.
 * The default is the most recent clean measurement of a context alone on a
 * current stack: 426 MiB, nvidia-smi after torch.cuda.mem_get_info(0) with
 * nothing allocated, RTX 6000 Ada, PyTorch 2.10.0+cu130 (unslothai/
 * unsloth-zoo PR #1053, 2026; row C3 of tests/reference/
 * gpu-measurements.md). Older and other figures, for comparison: 287,047,680
 * B of total - free on CUDA 11.7 with lazy module loading (PyTorch PR #86509,
 * row C2) holds the 20 MiB segment of the 6.4 MB tensor it made, so that
 * context was 266,076,160 B (253.75 MiB), and 645,660,672 B loaded eagerly; an
 * H100 vLLM 0.19 worker at start, imports included, 0.51 GiB (row C4). No
 * per-generation figure from one stack is published, so every generation
 * uses the default; pass --overhead to use a measured one (nvidia-smi minus
 * memory_reserved(), or tests/tools/cuda_validate.py's context column).
 * cuBLAS's workspace is not overhead: PyTorch takes it from the caching
 * allocator on the first matrix product, one per handle and stream
 * (aten/src/ATen/cuda/CublasHandlePool.cpp, getChosenWorkspaceSize():
 * 4096 KiB * 2 + 16 KiB * 8 = 8.125 MiB, 4096 KiB * 8 = 32 MiB on sm90; its
 * current version, "32MiB for Hopper and Blackwell", takes 32 MiB when the
 * compute capability's major is 9, 10, 11 or 12), so it is in the simulated
 * allocated and reserved figures. ROCm builds size hipBLASLt's workspace
 * differently (32 MiB, 128 MiB on gfx94x/gfx95x); the AMD presets carry no
 * compute capability and get the default here. cuDNN's workspaces
 * (algorithm-dependent) and NCCL buffers are not modelled. */
#include "memest/cuda_overhead.h"

uint64_t memest_default_overhead(unsigned gpu_arch)
{
    (void)gpu_arch;
    return (uint64_t)426 << 20;   /* 446,693,376 B: row C3 */
}

uint64_t memest_cublas_workspace(unsigned gpu_arch)
{
    unsigned major = gpu_arch / 10;
    if (major >= 9 && major <= 12)   /* Hopper and Blackwell (sm_90, sm_100, sm_110, sm_120) */
        return (uint64_t)4096 * 1024 * 8;
    return (uint64_t)4096 * 1024 * 2 + 16 * 1024 * 8;
}
