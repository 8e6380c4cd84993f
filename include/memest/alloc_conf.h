/* alloc_conf.h - PYTORCH_CUDA_ALLOC_CONF: the caching allocator's settings
 * as PyTorch 2.6 parses them (c10/cuda/CUDAAllocatorConfig.cpp, parseArgs),
 * for the allocator model (alloc.h) and the report.
 *
 *   struct memest_alloc_conf c;
 *   char msg[256];
 *   memest_alloc_conf_parse("expandable_segments:True", &c, msg, sizeof msg);  // 0
 *   c.expandable;   // true
 *   c.text;         // "expandable_segments:True": the settings that apply
 *
 * The keys PyTorch 2.6 knows: max_split_size_mb, max_non_split_rounding_mb,
 * garbage_collection_threshold, roundup_power2_divisions, expandable_segments,
 * backend (native only: cudaMallocAsync is another allocator, refused),
 * release_lock_on_cudamalloc, pinned_use_cuda_host_register,
 * pinned_num_register_threads (the last three change no device memory). An
 * unknown key is refused, as PyTorch refuses it ("Unrecognized
 * CachingAllocator option"). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* roundup_power2_divisions' intervals: [1 MiB, 2 MiB), ..., the last from
 * 32 GiB up (kRoundUpPowerOfTwoIntervals); sizes below 1 MiB take the
 * first. */
#define MEMEST_ALLOC_ROUNDUP_INTERVALS 16

/* All zero is the default configuration. */
struct memest_alloc_conf {
    uint64_t max_split;            /* bytes; 0: none (the default; PyTorch's SIZE_MAX) */
    uint64_t max_non_split_rounding; /* bytes: an oversize request takes a cached block
                                        less than this much larger; 0: 20 MiB, the
                                        default (kLargeBuffer) */
    uint32_t roundup[MEMEST_ALLOC_ROUNDUP_INTERVALS];  /* divisions; 0: none */
    double gc_threshold;           /* garbage_collection_threshold, 0: none */
    bool expandable;               /* expandable_segments:True */
    char text[160];                /* the settings that apply, "" for none */
};

/* The default configuration (no PYTORCH_CUDA_ALLOC_CONF). */
void memest_alloc_conf_default(struct memest_alloc_conf *c);

/* Parses s (NULL or "" is the default) into *c. 0; -1 with a one-line
 * reason in msg (naming the key) when PyTorch would refuse s, or when s
 * names what memest does not model (backend:cudaMallocAsync). */
int memest_alloc_conf_parse(const char *s, struct memest_alloc_conf *c, char *msg, size_t msglen);

/* roundup_power2_divisions for a rounded request of `size` bytes. */
uint32_t memest_alloc_conf_divisions(const struct memest_alloc_conf *c, uint64_t size);
