/* step.h - the step vocabulary (src/step/): how one training step runs, as
 * the command line, the model file and the reports name it: the optimizer,
 * its implementation, autocast, the loss, and the step configuration that
 * gathers them. Names only and their checks; what the step costs is the
 * simulator's (sim.h) and the calculators' (calc.h). The model builder, the
 * command line and the reports take the step's names from here, not from
 * the simulator (layer "step": after ops, before the model). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memest/alloc_conf.h"
#include "memest/dtype.h"
#include "memest/error.h"
#include "memest/optim.h"
#include "memest/shape.h"

/* How the optimizer's update runs (torch.optim's foreach= and fused=). */
enum memest_optim_impl {
    MEMEST_IMPL_FOREACH = 0,  /* multi-tensor: PyTorch 2.x's default on CUDA */
    MEMEST_IMPL_FORLOOP,      /* single-tensor: PyTorch 1.x's, and the CPU default */
    MEMEST_IMPL_FUSED,
    MEMEST_IMPL_COUNT
};
/* "foreach", "for-loop", "fused"; "?" out of range. */
const char *memest_optim_impl_name(enum memest_optim_impl i);
/* Exact name; 0, or -1 for an unknown name. */
int memest_optim_impl_parse(const char *s, enum memest_optim_impl *out);
/* The implementation cfg's update runs, for the reports: the optimizer's
 * kernel (optim.h: its desc's), else --optim-impl's name. */
struct memest_step_cfg;
const char *memest_optim_impl_label(const struct memest_step_cfg *cfg);

/* Autocast (torch.autocast("cuda", dtype=...)), or none. */
enum memest_amp { MEMEST_AMP_NONE = 0, MEMEST_AMP_FP16, MEMEST_AMP_BF16, MEMEST_AMP_COUNT };
/* "none", "fp16", "bf16"; "?" out of range. */
const char *memest_amp_name(enum memest_amp a);
/* "fp16" or "float16", "bf16" or "bfloat16" (what --amp takes: "none" is
 * not a value of it); 0, or -1 for anything else. */
int memest_amp_parse(const char *s, enum memest_amp *out);

/* zero_grad() before the step: set_to_none=True (PyTorch 2.x's default: the
 * gradients are freed and born again in backward) or False (they persist,
 * zeroed); struct memest_step_cfg's zero_grad_zeros. */
enum memest_zero_grad { MEMEST_ZERO_GRAD_NONE = 0, MEMEST_ZERO_GRAD_ZEROS, MEMEST_ZERO_GRAD_COUNT };
/* "none", "zeros" (what --zero-grad takes); "?" out of range. */
const char *memest_zero_grad_name(enum memest_zero_grad z);

/* The loss the step applies to the model's last output (the model file's
 * "loss", or --loss): PyTorch's loss modules, by class name in lower case. */
enum memest_loss {
    MEMEST_LOSS_CROSSENTROPY = 0,  /* crossentropyloss: log_softmax + nll_loss
                                      over the classes' dim (the default) */
    MEMEST_LOSS_NLL,               /* nllloss: the output already holds log-probabilities */
    MEMEST_LOSS_MSE,               /* mseloss, against a float target of the output's shape */
    MEMEST_LOSS_L1,
    MEMEST_LOSS_SMOOTHL1,
    MEMEST_LOSS_HUBER,
    MEMEST_LOSS_BCEWITHLOGITS,
    MEMEST_LOSS_NONE,              /* none: out.backward(ones_like(out)) */
    MEMEST_LOSS_COUNT
};
/* Case-insensitive; 0, or -1 for an unknown name. */
int memest_loss_parse(const char *s, enum memest_loss *out);
/* "crossentropyloss", ...; "?" out of range. */
const char *memest_loss_name(enum memest_loss l);
/* "crossentropyloss, nllloss, ...", the table's names for messages, into
 * buf (cut at n - 1 bytes); returns buf. */
const char *memest_loss_names(char *buf, size_t n);
#define MEMEST_LOSS_NAMES_LEN 256   /* room for them all (test_step checks it) */

/* Where a class-index loss (crossentropyloss, nllloss) finds the classes:
 * the model file's loss "class_dim". */
enum {
    MEMEST_CLASS_DIM_TORCH = 1,    /* PyTorch's own: dim 1 of (N, C, d1, ...), target
                                      [N, d1, ...]; (N, C) is the same either way */
    MEMEST_CLASS_DIM_LAST = -1,    /* the language model's flattening:
                                      loss(out.view(-1, V), target.view(-1)) */
};

/* What the loss reads, for a model output of shape `out` and dtype `dt`:
 * the target the step makes, and for the class-index losses the classes
 * and the rows (numel / C). class_dim 0 (not given) is PyTorch's, 1. */
struct memest_loss_shapes {
    bool class_index;              /* crossentropyloss, nllloss */
    int class_dim;                 /* the output's dim holding the classes (class_index) */
    int64_t classes;               /* C (class_index) */
    uint64_t rows;                 /* numel / C (class_index), else numel */
    struct memest_shape target;    /* contiguous */
    enum memest_dtype target_dtype;  /* int64 class indices, else the output's dtype */
};

/* The shapes of loss `l` with class_dim (MEMEST_CLASS_DIM_*) on an output
 * of shape `out`: PyTorch's nll_loss_nd (aten/src/ATen/native/LossNLL.cpp)
 * takes an input (N, C) or (N, C, d1, ..., dk) with a target (N) or
 * (N, d1, ..., dk) of int64 class indices; the elementwise losses a target
 * of the output's shape and dtype. 0, or -1 with a schema error (path
 * "loss.class_dim") when the output has no dim for the classes: a 0-d
 * output, or a 1-d one with class_dim 1 (memest's outputs count the batch
 * dim, so a 1-d output is a batch of scalars, not one sample's classes). */
int memest_loss_shapes(enum memest_loss l, int class_dim, const struct memest_shape *out,
                       enum memest_dtype dt, struct memest_loss_shapes *s,
                       struct memest_error *err);

#define MEMEST_MAX_CHECKPOINT_NAMES 64

/* The largest --overhead (1 TiB, far beyond any CUDA context): with it, the
 * device total (reserved peak + overhead) stays within 2^63 - 1 bytes unless
 * the reserved peak itself is at that limit. */
#define MEMEST_MAX_OVERHEAD ((uint64_t)1 << 40)

struct memest_rank_view;   /* dist.h */

/* --loop: the training loop around the model (doc/memory-model.md, "The
 * training loop"). DEFAULT (no --loop) resolves to PLAIN once the model is
 * read (app.c). */
enum memest_loop {
    MEMEST_LOOP_DEFAULT = 0,
    MEMEST_LOOP_PLAIN,      /* out = model(x); loss = loss_fn(out, y); loss.backward():
                               `out` lives to the end of the step */
    MEMEST_LOOP_TRAINER,    /* transformers' Trainer: the loss inside the model
                               (labels), the outputs dropped before backward */
    MEMEST_LOOP_TORCHTUNE,  /* torchtune's full_finetune recipe: del logits before
                               backward, CEWithChunkedOutputLoss (8 chunks) */
    MEMEST_LOOP_TORCHTITAN, /* torchtitan's train_step: del pred before backward,
                               cross_entropy(pred.flatten(0, 1).float(), ...) */
    MEMEST_LOOP_COUNT
};
const char *memest_loop_name(enum memest_loop l);
int memest_loop_parse(const char *s, enum memest_loop *l);
/* Whether the loop drops the model's outputs once the loss is computed. */
bool memest_loop_drops_outputs(enum memest_loop l);
/* Whether the model computes its own loss (transformers' labels= path:
 * ForCausalLMLoss's float32 upcast inside the model's forward). */
bool memest_loop_labels(enum memest_loop l);
/* The chunks the loop's loss upcasts the logits in, one at a time (0: the
 * loss reads the model's output as it is). */
unsigned memest_loop_upcast_chunks(enum memest_loop l);

/* --checkpoint-policy: FULL recomputes the whole block; TORCHTITAN_OP is
 * torchtitan's op-level selective checkpointing (activation_checkpoint.py
 * _apply_op_sac): the outputs of the ops of its save list (a bias-free
 * linear's mm, every second one, and the flash / memory-efficient / cuDNN
 * attention kernels: memest_nodeinfo.sac) are kept, the rest recomputed. */
enum memest_ckpt_policy { MEMEST_CKPT_FULL, MEMEST_CKPT_TORCHTITAN_OP };

struct memest_step_cfg {
    struct memest_optim_cfg optim;
    enum memest_optim_impl impl;
    bool first_step;        /* optimizer state created during the step */
    bool zero_grad_zeros;   /* zero_grad(set_to_none=False): gradients persist */
    int64_t grad_accum;     /* micro-batches per optimizer step, >= 1 */
    enum memest_amp amp;
    bool checkpoint;        /* activation checkpointing of every block instance ... */
    const char *checkpoint_names[MEMEST_MAX_CHECKPOINT_NAMES]; /* ... or of these blocks */
    int ncheckpoint_names;
    uint8_t checkpoint_policy;  /* enum memest_ckpt_policy: what a checkpointed block keeps */
    bool checkpoint_policy_set; /* --checkpoint-policy given */
    uint32_t checkpoint_every;  /* --checkpoint-every N: the top-level blocks i (0-based)
                                   with (i + 1) % N == 0; 0: every block */
    uint8_t checkpoint_early_stop; /* --checkpoint-early-stop: MEMEST_EARLY_STOP_* */
    enum memest_loss loss;  /* the loss, resolved once when the run is set up
                               (memest_step_cfg_resolve_loss): --loss, else the
                               model's "loss", else cross-entropy */
    bool loss_set;          /* given on the command line (--loss): the model's
                               "loss" does not replace it */
    bool overhead_set;      /* overhead given (--overhead), else the default */
    uint64_t overhead;      /* CUDA context and library workspaces, bytes; at most
                               MEMEST_MAX_OVERHEAD */
    bool nccl_set;          /* --nccl-mem given: NCCL's device memory per GPU */
    uint64_t nccl_mem;      /* its bytes (else the rule of src/sim/nccl_mem.c) */
    bool nvswitch;          /* the target card's node meets at NVSwitches (gpus.json
                               "nvswitch"): NCCL's channels and NVLS */
    bool nvls_off;          /* NCCL_NVLS_ENABLE=0 in the environment */
    uint64_t nccl_buffsize; /* NCCL_BUFFSIZE in the environment (0: NCCL's 4 MiB) */
    unsigned torch_version; /* whose torch/optim code the optimizer step follows:
                               0 = PyTorch 2.x (the default), 113 = 1.13 (whose foreach
                               Adam/AdamW keep two copies of temporaries and Adagrad
                               three; the reference measurements run 1.13) */
    unsigned gpu_arch;      /* target card's compute capability, major * 10 + minor
                               (e.g. 80 for A100, 90 for H100); 0 = unknown: the
                               overhead and cuBLAS workspace of pre-Hopper cards */
    const struct memest_rank_view *rank;  /* several GPUs (dist.h): the rank the step
                                             simulates; NULL: one GPU */
    uint8_t loop;           /* enum memest_loop, resolved (never DEFAULT in a run) */
    bool act_offload;       /* --activation-offload: torchtune's OffloadActivations
                               around the model's forward (src/sim/sim_offload.c) */
    struct memest_alloc_conf alloc;  /* PYTORCH_CUDA_ALLOC_CONF (--alloc-conf) */
    /* The card the verdict replays the step on (calc.h: memest_pressure):
     * its memory less the headroom and what runs elsewhere (0: no card);
     * the allocator's capacity is that less the overhead. */
    uint64_t card_usable;
    uint64_t fraction_cap;  /* --memory-fraction: set_per_process_memory_fraction's
                               allowed_memory_maximum, bytes (0: none); the
                               allocator's capacity where it is the smaller */
    bool least;             /* search the least memory the step runs in */
    bool pressure_inference;  /* the verdict and the search are the no-grad pass's
                                 (--inference), not the training step's */
};

/* torchtitan's checkpointing rules (v0.2.0 torchtitan/distributed/
 * activation_checkpoint.py), for the simulator and the roofline alike:
 * whether the top-level block instance i (from 0, in model order) is
 * checkpointed (--checkpoint-every N, _apply_layer_sac: the count from 1
 * % N == 0; all without it) ... */
bool memest_ckpt_selects(const struct memest_step_cfg *c, uint32_t i);
/* "full", "torchtitan-op" (enum memest_ckpt_policy). */
const char *memest_ckpt_policy_name(uint8_t p);
/* ... and whether a checkpointed block keeps the outputs of a node running
 * sac_op (memest_nodeinfo.sac) rather than recomputing them
 * (--checkpoint-policy torchtitan-op, _custom_policy: the save list's ops
 * but every second mm; *mm counts the block's mm so far, 0 at its start). */
bool memest_ckpt_keeps(const struct memest_step_cfg *c, uint8_t sac_op, uint32_t *mm);
/* step_cfg.checkpoint_early_stop: the loop's default, or as given */
enum { MEMEST_EARLY_STOP_DEFAULT = 0, MEMEST_EARLY_STOP_ON, MEMEST_EARLY_STOP_OFF };
/* Whether the checkpoint is torch's non-reentrant one (torch.utils.checkpoint
 * use_reentrant=False, as checkpoint_wrapper applies it): under --loop
 * torchtitan, --loop torchtune and --checkpoint-policy torchtitan-op; else
 * the reentrant one (transformers' gradient_checkpointing_enable) ... */
bool memest_ckpt_nonreentrant(const struct memest_step_cfg *c);
/* ... and whether its recomputation stops after the block's last saved
 * tensor is made again (early_stop; PyTorch 2.6's default, on, under
 * torchtune; torchtitan's ActivationCheckpoint.early_stop, off). */
bool memest_ckpt_early_stop(const struct memest_step_cfg *c);

/* Defaults: adam, foreach, steady state, set_to_none, no accumulation,
 * cross-entropy (not set: a model's "loss" replaces it). */
void memest_step_cfg_default(struct memest_step_cfg *c);

/* Resolves the loss once, when the run is set up: unless --loss set it,
 * the model file's "loss" (model_loss: the graph's, already checked by the
 * model builder; NULL when the file has none) replaces the default. 0, or
 * -1 with an internal error when model_loss names no loss. */
int memest_step_cfg_resolve_loss(struct memest_step_cfg *c, const char *model_loss,
                                 struct memest_error *err);

/* A usage error for a step PyTorch cannot run (fused for an optimizer the
 * table, optim.h, gives no fused kernel: rmsprop, adagrad), raised by the command line before any model is read
 * (also with --inference: every estimate simulates the training step too).
 * 0 / -1. */
int memest_step_cfg_check(const struct memest_step_cfg *c, struct memest_error *err);
