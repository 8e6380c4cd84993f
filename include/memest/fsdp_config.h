/* fsdp_config.h - an FSDP config (--fsdp-config FILE): an accelerate config
 * (the YAML `accelerate config` writes, distributed_type FSDP with its
 * fsdp_config section) or the Hugging Face Trainer's fsdp_config JSON, read
 * onto the several-GPU layout (dist.h) and the step (src/model/fsdp_config.c;
 * layer "model", the one that reads JSON and YAML). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/dist.h"
#include "memest/dtype.h"
#include "memest/error.h"

struct memest_fsdp_settings {
    int64_t processes;          /* accelerate's num_processes (the world size); 0: not said */
    int64_t machines;           /* num_machines; 0: not said */
    bool half_set;              /* mixed_precision fp16 / bf16 */
    enum memest_dtype half;
    bool checkpoint;            /* fsdp_activation_checkpointing */
    char wrap[128];             /* fsdp_transformer_layer_cls_to_wrap (d->eng.wrap_block
                                   points here) */
    char ignored[480];          /* keys that change no memory, for a note */
};

/* Reads path (YAML unless its first non-blank character is '{'): the
 * sharding strategy, the auto-wrap policy's transformer layer class, the
 * parameter offload, backward and forward prefetch into d, the rest into s.
 * Keys that change memory in ways memest does not model (a size-based wrap
 * policy, HYBRID_SHARD_ZERO2, FSDP2, a distributed_type other than FSDP or
 * MULTI_GPU) and unknown keys are schema errors naming the file and the key
 * (exit 3). 0 / -1. */
int memest_fsdp_config_read(const char *path, struct memest_dist_cfg *d,
                            struct memest_fsdp_settings *s, struct memest_error *err);
