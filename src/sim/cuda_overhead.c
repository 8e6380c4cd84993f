/* cuda_overhead.c - the device memory CUDA and its libraries take beside the
 * tensors (cuda_overhead.h).
 *
 * What nvidia-smi shows beyond memory_reserved() is mostly the CUDA context:
 * about 287 MB with lazy module loading (CUDA >= 11.7, CUDA_MODULE_LOADING=
 * LAZY, which PyTorch 2.x sets by default) against 667 MB loaded eagerly
 * (PyTorch PR #86509, measured on an A100; /work/shared/reference). No
 * per-generation figure is published, so every generation uses it; pass
 * --overhead to use a measured one (nvidia-smi minus memory_reserved()).
 * cuBLAS's workspace is not overhead: PyTorch takes it from the caching
 * allocator on the first matrix product, one per handle and stream
 * (aten/src/ATen/cuda/CublasHandlePool.cpp, getChosenWorkspaceSize():
 * 4096 KiB * 2 + 16 KiB * 8 = 8.125 MiB, 4096 KiB * 8 = 32 MiB on sm90), so it
 * is in the simulated allocated and reserved figures. cuDNN's workspaces
 * (algorithm-dependent) and NCCL buffers are not modelled. */
#include "memest/cuda_overhead.h"

uint64_t memest_default_overhead(unsigned gpu_arch)
{
    (void)gpu_arch;
    return 287000000;
}

uint64_t memest_cublas_workspace(unsigned gpu_arch)
{
    if (gpu_arch == 90)
        return (uint64_t)4096 * 1024 * 8;
    return (uint64_t)4096 * 1024 * 2 + 16 * 1024 * 8;
}
