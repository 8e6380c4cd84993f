/* roofline.h - an estimate of the time of one step on a card, by the
 * roofline model, layer by layer:
 *
 *   time of a pass of a layer = max(FLOPs / (peak FLOP/s * mfu),
 *                                   bytes read and written / bandwidth)
 *
 * summed over the forward pass, the backward pass (times --grad-accum
 * micro-batches) and the optimizer step. A pass is memory-bound when the
 * second term is the larger. It is an estimate from peak figures, not a
 * measurement: kernel launch overheads, fusion, caches and communication
 * between GPUs are not modelled. An offload (--offload) adds its host
 * work, not overlapped with the GPU's (an upper bound: DeepSpeed overlaps
 * the gradient copies with the backward): the CPU optimizer over the rank's
 * partition at cpu_optim_rate parameters a second, and at host_bw bytes a
 * second the 16-bit gradient partition out, the 16-bit parameters back, and
 * with offloaded parameters their shards in for each forward and each
 * backward (ZeRO-Infinity's and FSDP CPUOffload's gathers from the host).
 *
 * Bytes of a layer's forward pass: its inputs and parameters read, its new
 * outputs (and op-internal tensors it saves, such as dropout masks) written;
 * views move nothing; an in-place op reads and writes its input. Backward:
 * the gradient of each new output and the tensors the layer saved read, the
 * gradient of each input that requires grad written, the parameters read
 * and their gradients written. Optimizer: parameters, gradients and state
 * read, parameters and state written (no compute term). With activation
 * checkpointing, the forward passes of the checkpointed block instances
 * (chosen as the step simulator chooses them: every top-level instance, or
 * the named ones) are counted again as recomputation during backward. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/calc.h"
#include "memest/run.h"

struct memest_time_opts {
    double peak_flops;     /* FLOP/s of the card at the step's precision */
    double bandwidth;      /* bytes per second */
    double mfu;            /* assumed fraction of the peak FLOP/s, (0, 1] */
    int64_t grad_accum;    /* micro-batches per optimizer step, >= 1 */
    bool inference;        /* the forward pass only */
    const struct memest_step_cfg *step;  /* may be NULL; with checkpoint set, the
                                            forward of the checkpointed block
                                            instances runs again in backward */
    /* several GPUs (0: one GPU): a pipeline's step runs its stage's forward
     * and backward `slots` times (1F1B: M + P - 1 micro-batch slots, the
     * bubble included; interleaved: M + (P - 1) / V), and the step trains
     * `samples_k` micro-batches over all data-parallel ranks (M x DP) */
    double slots;
    double samples_k;
    /* an offload (step->rank's): the host link's bytes per second and the
     * CPU optimizer's parameter updates per second (--offload-bw,
     * --cpu-optim-rate) */
    double host_bw;
    double cpu_optim_rate;
};

/* One pass of one layer. */
struct memest_pass_time {
    double flops, bytes;
    double seconds;
    bool memory_bound;
};

struct memest_node_time {
    struct memest_pass_time fwd, bwd;
};

/* One layer pass, as memest_roofline_slowest names it. */
struct memest_slow_pass {
    uint32_t node;
    bool bwd;           /* the backward pass, else the forward */
    double seconds;
};

struct memest_time {
    double fwd_s, bwd_s, opt_s;   /* one micro-batch's forward / backward; the optimizer step */
    double recompute_s;           /* one micro-batch's recomputed forward (checkpointing) */
    double offload_s;             /* the step's offload: the CPU optimizer over the rank's
                                     partition, the gradients and parameters over the host
                                     link, and offloaded parameter shards copied in for
                                     each forward and backward; not overlapped; with
                                     --activation-offload also its copies (roofline.c) */
    double step_s;                /* grad_accum * (fwd_s + recompute_s + bwd_s) + opt_s
                                     + offload_s */
    double samples_per_s;         /* batch * grad_accum / step_s */
    double flops;                 /* of the whole step */
    double bytes;                 /* moved in the whole step */
    double memory_bound_s;        /* time in memory-bound passes (and the optimizer) */
    double memory_bound_fraction; /* memory_bound_s / step_s */
    uint32_t passes, memory_bound_passes;  /* layer passes with work, and how many are memory-bound */
};

/* Estimates the step of run r (whose estimate is e) under o. per_node, when
 * not NULL, receives r->g->nnodes entries. 0; -1 when o is unusable (no
 * peak or bandwidth); -2 when out of memory. */
int memest_roofline(const struct memest_run *r, const struct memest_estimate *e,
                    const struct memest_time_opts *o, struct memest_time *out,
                    struct memest_node_time *per_node);

/* The `max` slowest memory-bound passes of per_node (nnodes entries, as
 * memest_roofline fills them), the slowest first, equal times in node
 * order, into top (max entries). Returns how many (at most max; 0 when no
 * pass with a time is memory-bound). */
int memest_roofline_slowest(const struct memest_node_time *per_node, uint32_t nnodes,
                            struct memest_slow_pass *top, int max);
