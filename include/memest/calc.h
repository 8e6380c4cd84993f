/* calc.h - the calculators. Each reads a finished run (run.h) and computes
 * one quantity; none reads the JSON. memest_estimate() runs them all. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/cost.h"
#include "memest/error.h"
#include "memest/run.h"
#include "memest/timeline.h"

/* calc_params.c: parameters (shared ones once) and buffers. */
struct memest_param_totals {
    uint64_t total, trainable, frozen;        /* elements */
    uint64_t tensors, trainable_tensors;      /* distinct parameter tensors */
    uint64_t bytes, trainable_bytes;
    uint64_t buffer_elems, buffer_bytes, buffer_tensors;
};
int memest_calc_params(const struct memest_run *r, struct memest_param_totals *out,
                       struct memest_error *err);

/* calc_grads.c: one gradient per trainable parameter, in its dtype. */
uint64_t memest_calc_grads(const struct memest_run *r);

/* calc_optimizer.c: the state tensors PyTorch's optimizers keep. */
enum memest_optim {
    MEMEST_OPT_SGD = 0,
    MEMEST_OPT_ADAM,
    MEMEST_OPT_ADAMW,
    MEMEST_OPT_RMSPROP,
    MEMEST_OPT_ADAGRAD,
    MEMEST_OPT_COUNT
};
struct memest_optim_cfg {
    enum memest_optim kind;
    double momentum;    /* sgd, rmsprop */
    bool amsgrad;       /* adam, adamw */
    bool centered;      /* rmsprop */
};
struct memest_optstate {
    unsigned copies;          /* parameter-sized state tensors per parameter */
    uint64_t device_bytes;    /* those copies, on the device */
    uint64_t step_tensors;    /* per-parameter "step" scalars (float32, host) */
    uint64_t host_bytes;
};
const char *memest_optim_name(enum memest_optim k);
int memest_optim_parse(const char *s, enum memest_optim *out);
/* The state tensors the optimizer keeps per trainable parameter. */
unsigned memest_optim_copies(const struct memest_optim_cfg *c);
int memest_calc_optimizer(const struct memest_run *r, const struct memest_optim_cfg *cfg,
                          struct memest_optstate *out, struct memest_error *err);

/* calc_activations.c: bytes of the distinct storages autograd saves for
 * backward in one training forward pass; fills nodeinfo.act_bytes (each
 * storage attributed to the first node that saves it) and storage.saved. */
uint64_t memest_calc_activations(struct memest_run *r);

/* calc_flops.c: multiply-accumulates (1 MAC = 2 FLOPs). */
struct memest_flops {
    double fwd_macs, bwd_macs;
    double fwd_flops, bwd_flops, step_flops;  /* step = forward + backward */
};
void memest_calc_flops(const struct memest_run *r, struct memest_flops *out);

/* How one training step runs (the simulator's options). */
enum memest_optim_impl {
    MEMEST_IMPL_FOREACH = 0,  /* multi-tensor: PyTorch 2.x's default on CUDA */
    MEMEST_IMPL_FORLOOP,      /* single-tensor: PyTorch 1.x's, and the CPU default */
    MEMEST_IMPL_FUSED,
    MEMEST_IMPL_COUNT
};
enum memest_amp { MEMEST_AMP_NONE = 0, MEMEST_AMP_FP16, MEMEST_AMP_BF16 };

#define MEMEST_MAX_CHECKPOINT_NAMES 64

/* The loss the step applies to the model's last output (the model file's
 * "loss", or --loss): PyTorch's loss modules, by class name in lower case. */
enum memest_loss {
    MEMEST_LOSS_CROSSENTROPY = 0,  /* crossentropyloss: log_softmax + nll_loss
                                      over the last dimension (the default) */
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
const char *memest_loss_name(enum memest_loss l);
/* "crossentropyloss, nllloss, ...", for messages. */
const char *memest_loss_names(void);

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
    const char *loss;       /* loss type; NULL: the model's "loss", else cross-entropy */
    bool overhead_set;      /* overhead given (--overhead), else the default */
    uint64_t overhead;      /* CUDA context and library workspaces, bytes; at most
                               MEMEST_MAX_OVERHEAD */
    unsigned torch_version; /* whose torch/optim code the optimizer step follows:
                               0 = PyTorch 2.x (the default), 113 = 1.13 (whose foreach
                               Adam/AdamW keep two copies of temporaries and Adagrad
                               three; the reference measurements run 1.13) */
    unsigned gpu_arch;      /* target card's compute capability, major * 10 + minor
                               (e.g. 80 for A100, 90 for H100); 0 = unknown: the
                               overhead and cuBLAS workspace of pre-Hopper cards */
};

/* The largest --overhead (1 TiB, far beyond any CUDA context): with it, the
 * device total (reserved peak + overhead) stays within 2^63 - 1 bytes unless
 * the reserved peak itself is at that limit. */
#define MEMEST_MAX_OVERHEAD ((uint64_t)1 << 40)

/* The device overhead nvidia-smi shows beyond the allocator's reserved
 * memory, for a card of compute capability gpu_arch (0 = unknown): the CUDA
 * context (calc_peak.c documents the figures and their sources). */
uint64_t memest_default_overhead(unsigned gpu_arch);
/* The cuBLAS workspace PyTorch takes from the caching allocator on the first
 * matrix product (per handle and stream). */
uint64_t memest_cublas_workspace(unsigned gpu_arch);

/* Defaults: adam, foreach, steady state, set_to_none, no accumulation. */
void memest_step_cfg_default(struct memest_step_cfg *c);

/* calc_peak.c: the allocation timeline of one step, and its peak. */
struct memest_peak_opts {
    bool inference;     /* no-grad forward pass only */
    const struct memest_optstate *opt;
    const struct memest_step_cfg *step;  /* NULL: defaults */
    uint64_t events;    /* room to reserve for the events: their upper bound
                           (cost.h), or 0 for a guess (the list grows as needed) */
};
struct memest_peak {
    uint64_t bytes;           /* the allocator's allocated peak: the most bytes in live
                                 blocks (rounded, unsplit remainders included) at any
                                 event of the step, torch.cuda.max_memory_allocated() */
    size_t event;             /* timeline event at which it is first reached */
    uint8_t phase;            /* enum memest_phase */
    uint32_t node;            /* node at the peak, UINT32_MAX = none (loss, optimizer) */
    uint64_t at_peak[MEMEST_CAT_COUNT];  /* live block bytes per category at the
                                            peak (they sum to bytes) */
    uint64_t tensor_bytes;    /* peak of live tensor bytes, exact sizes, before
                                 allocator rounding and without library workspaces:
                                 what a tensor-level measurement counts */
    size_t tensor_event;
    uint64_t reserved;        /* the allocator's reserved peak (segments),
                                 torch.cuda.max_memory_reserved() */
    uint64_t segments;        /* cudaMalloc'd segments held at the end */
    uint64_t sim_events;      /* events the simulation made (warm-up included): what
                                 the cost model (cost.h) bounds from above */
};
/* Builds the timeline of one step (training unless o->inference) into tl
 * (NULL: only the peaks are wanted) and finds its peak. tl holds the
 * step's events only (setup allocations, forward, loss, backward,
 * optimizer, teardown); the allocator is replayed over a warm-up step first
 * unless cfg->first_step, as the steady state of a training loop. */
int memest_calc_peak(const struct memest_run *r, const struct memest_peak_opts *o,
                     struct memest_timeline *tl, struct memest_peak *out,
                     struct memest_error *err);

/* Everything at once. */
struct memest_estimate {
    struct memest_param_totals params;
    uint64_t gradients;
    struct memest_optstate opt;
    uint64_t activations;
    struct memest_flops flops;
    struct memest_peak train_peak;   /* bytes: max_memory_allocated() of one step
                                        (per micro-batch step with --grad-accum) */
    struct memest_peak infer_peak;   /* the same for a no-grad forward pass */
    uint64_t reserved_peak;          /* allocator segments: max_memory_reserved() */
    uint64_t infer_reserved_peak;
    uint64_t overhead;               /* CUDA context (cfg->overhead or the default) */
    uint64_t total_device;           /* reserved_peak + overhead: what nvidia-smi shows
                                        (infer_total_device for --inference) */
    uint64_t infer_total_device;
    struct memest_cost cost;         /* what the estimate cost (cost.h) */
};
/* Readies r for the step cfg describes (shape inference again when the
 * autocast setting differs) and counts what its estimate costs, without
 * simulating anything; a limit error when that passes the graph's limit
 * (cost.h). 0 / -1. */
int memest_estimate_cost(struct memest_run *r, const struct memest_step_cfg *cfg,
                         struct memest_cost *c, struct memest_error *err);
/* Runs every calculator for one step as cfg describes, after the cost
 * check of memest_estimate_cost; the training timeline goes to train_tl
 * and the no-grad forward pass's to infer_tl when they are not NULL. */
int memest_estimate(struct memest_run *r, const struct memest_step_cfg *cfg,
                    struct memest_estimate *e, struct memest_timeline *train_tl,
                    struct memest_timeline *infer_tl, struct memest_error *err);
