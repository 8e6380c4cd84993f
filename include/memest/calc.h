/* calc.h - the calculators. Each reads a finished run (run.h) and computes
 * one quantity; none reads the JSON. memest_estimate() runs them all, the
 * step simulator (sim.h) included. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/cost.h"
#include "memest/error.h"
#include "memest/nccl_mem.h"
#include "memest/run.h"
#include "memest/step.h"
#include "memest/timeline.h"

/* calc_params.c: parameters (shared ones once) and buffers, and per node. */
struct memest_param_totals {
    uint64_t total, trainable, frozen;        /* elements */
    uint64_t tensors, trainable_tensors;      /* distinct parameter tensors */
    uint64_t bytes, trainable_bytes;
    uint64_t buffer_elems, buffer_bytes, buffer_tensors;
    uint64_t active;    /* the parameters one token uses: total, less the share of a
                           mixture of experts' experts it is not routed to (an expert
                           block's parameters times 1 - top_k / num_experts) */
};
int memest_calc_params(const struct memest_run *r, struct memest_param_totals *out,
                       struct memest_error *err);
/* The elements of a node's own parameters, a tied one not counted (the
 * per-layer table's "params", report.h). */
uint64_t memest_node_params(const struct memest_run *r, uint32_t node);

/* calc_grads.c: one gradient per trainable parameter, in its dtype. */
uint64_t memest_calc_grads(const struct memest_run *r);

/* calc_optimizer.c: the state tensors PyTorch's and bitsandbytes'
 * optimizers keep (the optimizers' names and options: optim.h). */
struct memest_optstate {
    unsigned copies;          /* parameter-sized state tensors per parameter */
    uint64_t device_bytes;    /* the state in PyTorch's caching allocator */
    uint64_t step_tensors;    /* per-parameter "step" scalars (float32, host) */
    uint64_t host_bytes;
    uint64_t paged_bytes;     /* bitsandbytes' paged state: unified memory
                                 (cudaMallocManaged), outside the allocator and
                                 the peak, evicted to the host when the device
                                 runs short */
};
/* The state tensors the optimizer keeps per trainable parameter (the
 * optimizer table's count, optim.h: memest_optim_state_count). */
unsigned memest_optim_copies(const struct memest_optim_cfg *c);
int memest_calc_optimizer(const struct memest_run *r, const struct memest_optim_cfg *cfg,
                          struct memest_optstate *out, struct memest_error *err);

/* calc_activations.c: bytes of the distinct storages autograd saves for
 * backward in one training forward pass; fills nodeinfo.act_bytes (each
 * storage attributed to the first node that saves it) and storage.saved. */
uint64_t memest_calc_activations(struct memest_run *r);

/* calc_loss.c: what the step's loss reads, for the per-layer tables' loss
 * row: false without a loss (inference, loss none, a graph without
 * outputs); else *in, the value it reads (the model's last output), and *ls,
 * its target and classes (step.h: memest_loss_shapes). */
bool memest_calc_loss(const struct memest_graph *g, const struct memest_run *r,
                      const struct memest_step_cfg *step, bool inference,
                      struct memest_loss_shapes *ls, const struct memest_value **in);

/* calc_flops.c: multiply-accumulates (1 MAC = 2 FLOPs). */
/* The multiply-accumulates and FLOPs (2 per MAC) of one micro-batch's
 * forward and backward (step = forward + backward: the optimizer is not in
 * it), and of one optimizer step (optim_*: its matrix products, Muon's
 * Newton-Schulz iterations; 0 for the elementwise optimizers), which runs
 * once per --grad-accum micro-batches, not per micro-batch: a whole step of
 * k micro-batches is k * step + optim (the sweep's step_flops). */
struct memest_flops {
    double fwd_macs, bwd_macs, step_macs;
    double fwd_flops, bwd_flops, step_flops;
    double optim_macs, optim_flops;
};
/* The forward and backward figures of r (optim_* 0). */
void memest_calc_flops(const struct memest_run *r, struct memest_flops *out);
/* The optimizer step's figures into f->optim_*: the trainable parameters'
 * memest_optim_param_macs under oc (every rank's under several GPUs:
 * Distributed Muon runs Newton-Schulz on every whole matrix on every rank). */
struct memest_optim_cfg;
void memest_calc_optim_flops(const struct memest_run *r, const struct memest_optim_cfg *oc,
                             struct memest_flops *f);

/* calc_dist.c: one rank's model states under several GPUs (dist.h): what
 * each engine keeps per GPU at rest, and its buffers, stated separately. */
struct memest_dist_states {
    uint64_t params;        /* device: the rank's parameters at rest (ZeRO-3 and FSDP:
                               its shards; ZeRO-3's persistent small ones whole) */
    uint64_t grads;         /* device: the gradients the step keeps (whole, or the
                               rank's partition) */
    uint64_t optim;         /* device: the optimizer state (its partition) */
    uint64_t master;        /* device: ZeRO's fp32 master partition (16-bit parameters) */
    uint64_t total;         /* params + grads + optim + master */
    uint64_t host;          /* host memory the offload takes (state, master, fp32
                               gradient partition, parameter shards) */
    uint64_t buckets;       /* DDP's bucket copies, DeepSpeed's reduce buckets */
    uint64_t gathered;      /* the most gathered parameters live at once: the two
                               largest units (the one computing and the prefetched one) */
    uint64_t units;         /* units parameters are gathered by (ZeRO-3, FSDP) */
    uint64_t shard_elems;   /* the rank's partition of the trainable parameters */
    uint64_t host_params;   /* of host: the parameter shards an offload keeps there
                               (copied in for every forward and backward) */
    uint64_t offload_moved; /* bytes an optimizer offload moves each step: the
                               gradient partition to the host and the updated 16-bit
                               parameters back */
};
int memest_calc_dist_states(const struct memest_run *r, const struct memest_step_cfg *cfg,
                            struct memest_dist_states *out, struct memest_error *err);

/* pressure.c: the step on a card that is its constraint. PyTorch's
 * allocator gives cached segments back when a cudaMalloc fails and retries
 * (alloc.h), so a step needs less than its unconstrained reserved peak: it
 * runs in any capacity at which the replay of its requests completes. */
struct memest_pressure {
    bool searched;          /* the least memory was searched (step_cfg.least) */
    uint64_t least;         /* the least allocator capacity the step runs in, bytes
                               (memest_alloc_least_capacity) */
    bool least_exact;       /* every smaller capacity was shown to fail */
    uint32_t replays;       /* replays the search took */
    bool judged;            /* replayed on the card (step_cfg.card_usable) */
    uint64_t capacity;      /* the card's usable memory less the overhead */
    bool completes;         /* the step runs on the card */
    bool fraction;          /* capacity is --memory-fraction's allowed bytes */
    uint64_t reserved;      /* its reserved peak there (the unconstrained one when no
                               cudaMalloc fails) */
    uint64_t retries;       /* num_alloc_retries there: release_cached_blocks, retry */
    uint64_t released;      /* bytes the allocator gave back to the device there */
};
/* The most events (the cost model's bound) of a step whose least memory is
 * searched without a card: its requests are kept for the replays (16 bytes
 * each). */
#define MEMEST_LEAST_MAX_EVENTS ((uint64_t)1 << 21)
/* The least memory (when least) and the verdict on the card (when
 * cfg->card_usable) of the step whose requests are t and whose peaks are
 * pk, with `overhead` outside the allocator. 0 / -1 (err: out of memory,
 * a limit). */
struct memest_alloc_trace;   /* alloc.h */
int memest_calc_pressure(const struct memest_alloc_trace *t, const struct memest_step_cfg *cfg,
                         bool least, const struct memest_peak *pk, uint64_t overhead,
                         struct memest_pressure *out, struct memest_error *err);

/* The probe's replay under memory pressure (probe.h): the timeline's
 * requests through the allocator model on a device whose cudaMalloc
 * decides, the releases and retries PyTorch makes when it fails. */
struct memest_device_segments {
    int (*seg_alloc)(void *ctx, uint64_t bytes, uint64_t *handle);  /* 0; 1: out of
                                                                       memory; -1 */
    int (*seg_free)(void *ctx, uint64_t handle);                     /* 0 / -1 */
    void *ctx;
};
struct memest_device_replay {
    bool completes;
    size_t failed_event;       /* the event that ran out of memory (tl->n: none) */
    uint64_t max_reserved, retries, released;
    uint64_t least;            /* the least capacity these events run in (searched) */
    bool least_exact;
};
struct memest_alloc_conf;   /* alloc_conf.h */
int memest_calc_device_replay(const struct memest_timeline *tl, const struct memest_alloc_conf *c,
                              const struct memest_device_segments *d,
                              struct memest_device_replay *out, struct memest_error *err);

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
    uint64_t overhead;               /* CUDA context (cfg->overhead or the default) and
                                        NCCL's communicators (nccl.total) */
    uint64_t context;                /* the CUDA context alone */
    struct memest_nccl nccl;         /* NCCL's device memory (several GPUs; nccl_mem.h) */
    uint64_t total_device;           /* reserved_peak + overhead: what nvidia-smi shows
                                        (infer_total_device for --inference) */
    uint64_t infer_total_device;
    struct memest_pressure pressure;        /* the training step's (calc.h above) */
    bool least_skipped;                     /* the least memory was not searched: the step
                                               has more than MEMEST_LEAST_MAX_EVENTS events */
    struct memest_pressure infer_pressure;  /* the no-grad pass's */
    struct memest_cost cost;         /* what the estimate cost (cost.h) */
    bool has_dist;                   /* several GPUs: cfg->rank was set */
    struct memest_dist_states dist;  /* its model states per GPU */
};
/* Sets o's autocast (amp, amp_dtype) to cfg's --amp: the one place an
 * estimate's run options take it, before its first shape inference. */
void memest_run_opts_autocast(struct memest_run_opts *o, const struct memest_step_cfg *cfg);
/* Readies r for the step cfg describes (shape inference again when r was
 * inferred under another autocast: a caller that did not make its run
 * options with memest_run_opts_autocast pays a second inference) and counts what its estimate costs, without
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

/* The simulations an estimate runs: the no-grad forward pass and the
 * training step. A caller that reads only one of them (a sweep's row, a
 * largest-batch search) skips the other, whose peak stays 0. */
enum memest_sims {
    MEMEST_SIM_INFER = 1u,
    MEMEST_SIM_TRAIN = 2u,
    MEMEST_SIM_BOTH = 3u,
};
/* memest_estimate running only the simulations in `sims` (at least one). */
int memest_estimate_sims(struct memest_run *r, const struct memest_step_cfg *cfg, unsigned sims,
                         struct memest_estimate *e, struct memest_timeline *train_tl,
                         struct memest_timeline *infer_tl, struct memest_error *err);
