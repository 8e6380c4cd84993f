/* ds_config.h - a DeepSpeed config file (--deepspeed ds_config.json, the
 * file users pass to deepspeed.initialize or the Hugging Face Trainer) read
 * onto the several-GPU layout (dist.h) and the step (src/model/ds_config.c;
 * layer "model", the one that reads JSON). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/dist.h"
#include "memest/dtype.h"
#include "memest/error.h"
#include "memest/optim.h"

/* What the file says besides the layout; 0 / false: not said (or "auto",
 * which the Trainer fills from its own arguments: memest's options). */
struct memest_ds_settings {
    int64_t micro_batch;        /* train_micro_batch_size_per_gpu */
    int64_t train_batch;        /* train_batch_size (micro x accumulation x DP) */
    int64_t grad_accum;         /* gradient_accumulation_steps (up to 2^53: --grad-accum's
                                   bounds are checked where it is applied) */
    bool half_set;              /* bf16.enabled or fp16.enabled true */
    enum memest_dtype half;     /* MEMEST_BF16 or MEMEST_F16 */
    bool optim_set;             /* optimizer.type given (Adam, AdamW, SGD) */
    enum memest_optim optim;
    bool momentum_set;          /* optimizer.params.momentum given */
    double momentum;            /* its value, as the file says (checked as --momentum) */
    char ignored[480];          /* keys that change no memory, ", "-separated, for a note */
};

/* Reads path: zero_optimization (stage, offload_optimizer / offload_param
 * devices, the bucket sizes, overlap_comm, contiguous_gradients, the stage-3
 * settings) into d (over its defaults; "auto" sizes follow the Trainer's
 * rule with hidden, the model's hidden_size, or stay DeepSpeed's defaults
 * when hidden is 0), the rest into s. A key that changes memory and that
 * memest does not model is a schema error naming the file and the key (exit
 * 3), as is a value of the wrong type; unknown keys are errors too (a typo
 * must not pass silently). 0 / -1. */
int memest_ds_config_read(const char *path, int64_t hidden, struct memest_dist_cfg *d,
                          struct memest_ds_settings *s, struct memest_error *err);

/* DeepSpeed's batch arithmetic (deepspeed/runtime/config.py at v0.16.9,
 * _set_batch_related_parameters and _batch_assertion): from the file's
 * train_batch_size, train_micro_batch_size_per_gpu and
 * gradient_accumulation_steps (s; the command line's micro-batch and
 * accumulation, when given (not 0), stand for the latter two), and the
 * data-parallel world size, the micro-batch and the accumulation the
 * engine runs: the missing ones derived (gas = train // micro // world,
 * micro = train // world // gas, ...), then train == micro x gas x world
 * asserted. DeepSpeed's errors are schema errors naming `path` and the
 * keys (exit 3). Without train_batch_size and a micro-batch, the Trainer's
 * way: the command line's (or 1). 0 / -1. */
int memest_ds_batch(const char *path, const struct memest_ds_settings *s, int64_t micro,
                    int64_t accum, int64_t world, int64_t *micro_out, int64_t *accum_out,
                    struct memest_error *err);

struct memest_model;
/* The model's hidden size for the Trainer's "auto" bucket sizes: a Hugging
 * Face config's hidden_size (n_embd, d_model); 0 when the file has none. */
int64_t memest_ds_model_hidden(const struct memest_model *m);
