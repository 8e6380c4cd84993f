/* dist.h - several GPUs (src/step/dist.c): the parallel layout a training
 * run uses (--gpus, --strategy, --tp, --sequence-parallel, --cp, --pp,
 * --micro-batches, --schedule, --virtual-stages, --ep, --offload, or a
 * DeepSpeed / FSDP config file), the engines' settings with their defaults,
 * and one rank's view of the layout, which the step simulator (sim.h) runs.
 * Names, defaults and checks only; what a rank holds is the simulator's and
 * the calculators' (layer "step", like step.h).
 *
 * Sizes: N GPUs = DP x TP x PP x CP, with DP the data-parallel size
 * (Megatron-LM's order, megatron/core/parallel_state.py). Expert
 * parallelism (EP) splits the experts of an MoE layer over EP ranks of the
 * data-parallel group (Megatron-Core: EP divides DP x CP). --batch stays
 * the micro-batch per GPU. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/error.h"
#include "memest/run.h"

/* The data-parallel engine, as --strategy names it. */
enum memest_strategy {
    MEMEST_STRAT_NONE = 0,      /* one GPU, or model parallelism only */
    MEMEST_STRAT_DDP,           /* torch.nn.parallel.DistributedDataParallel */
    MEMEST_STRAT_ZERO1,         /* DeepSpeed ZeRO stage 1: optimizer state sharded */
    MEMEST_STRAT_ZERO2,         /* + gradients */
    MEMEST_STRAT_ZERO3,         /* + parameters */
    MEMEST_STRAT_FSDP,          /* PyTorch FSDP FULL_SHARD */
    MEMEST_STRAT_FSDP_GRAD_OP,  /* FSDP SHARD_GRAD_OP (ZeRO-2 like) */
    MEMEST_STRAT_HSDP,          /* FSDP HYBRID_SHARD: full shard within a node,
                                   replicated across nodes */
    MEMEST_STRAT_COUNT
};
/* "none", "ddp", "zero1", "zero2", "zero3", "fsdp", "fsdp-grad-op", "hsdp";
 * "?" out of range. */
const char *memest_strategy_name(enum memest_strategy s);
/* Exact name; 0, or -1 for an unknown one. */
int memest_strategy_parse(const char *s, enum memest_strategy *out);

/* The pipeline schedule (--schedule). */
enum memest_schedule {
    MEMEST_SCHED_1F1B = 0,      /* PipeDream-Flush, Narayanan et al. 2021 */
    MEMEST_SCHED_INTERLEAVED,   /* interleaved 1F1B with --virtual-stages V */
    MEMEST_SCHED_COUNT
};
const char *memest_schedule_name(enum memest_schedule s);
int memest_schedule_parse(const char *s, enum memest_schedule *out);

/* ZeRO-Offload / ZeRO-Infinity (--offload). */
enum memest_offload {
    MEMEST_OFFLOAD_NONE = 0,
    MEMEST_OFFLOAD_OPTIMIZER,         /* optimizer state (and fp32 master) on the host */
    MEMEST_OFFLOAD_OPTIMIZER_PARAMS,  /* + the parameters' partitions (ZeRO-3 / FSDP) */
    MEMEST_OFFLOAD_COUNT
};
const char *memest_offload_name(enum memest_offload o);
int memest_offload_parse(const char *s, enum memest_offload *out);

/* FSDP's auto-wrap policy: which modules are units (FlatParameters). */
enum memest_fsdp_policy {
    MEMEST_FSDP_POLICY_AUTO = 0,  /* not given: peft under --lora (the Trainer's), else layers */
    MEMEST_FSDP_POLICY_LAYERS,    /* transformer_auto_wrap_policy: the layer block's instances */
    MEMEST_FSDP_POLICY_PEFT,      /* peft.utils.other.fsdp_auto_wrap_policy: those, and every
                                     leaf module with a trainable weight a unit of its own */
    MEMEST_FSDP_POLICY_COUNT
};
/* "layers", "peft"; NULL for AUTO and out of range. */
const char *memest_fsdp_policy_name(int p);

/* The engines' settings. memest_dist_default() gives each engine's own
 * default, cited in dist.c; a DeepSpeed or FSDP config file overrides them. */
struct memest_engine_cfg {
    /* DDP (torch/nn/parallel/distributed.py) */
    uint64_t ddp_bucket_bytes;         /* bucket_cap_mb: 25 MiB */
    bool ddp_grad_as_bucket_view;      /* gradient_as_bucket_view: False */
    /* DeepSpeed ZeRO (deepspeed/runtime/zero/config.py), in elements */
    uint64_t reduce_bucket_size;       /* 5e8 */
    uint64_t allgather_bucket_size;    /* 5e8 */
    bool overlap_comm;                 /* stage 1/2: False; stage 3: True */
    bool overlap_comm_set;             /* given in the config (else the stage's default) */
    bool contiguous_gradients;         /* True */
    uint64_t prefetch_bucket_size;     /* stage3_prefetch_bucket_size: 5e7 */
    uint64_t max_live_parameters;      /* stage3_max_live_parameters: 1e9 */
    uint64_t max_reuse_distance;       /* stage3_max_reuse_distance: 1e9 */
    uint64_t param_persistence_threshold;  /* stage3_param_persistence_threshold: 1e5 */
    uint64_t sub_group_size;           /* ZeRO-3's sub_group_size: 1e9 (0: one parameter per
                                          sub-group) */
    /* FSDP (torch/distributed/fsdp) */
    const char *wrap_block;            /* auto-wrap policy: the block type (transformer
                                          layer class) each instance of which is a unit;
                                          NULL: the block instances called from the top
                                          level */
    bool backward_prefetch;            /* BACKWARD_PRE (the default): the next unit's
                                          parameters are gathered during a unit's
                                          backward */
    bool forward_prefetch;             /* False */
    bool limit_all_gathers;            /* True */
    enum memest_fsdp_policy policy;    /* --fsdp-policy (AUTO until the flow resolves it) */
    bool use_orig_params;              /* False (FSDP1's and accelerate's default) */
    bool fsdp2;                        /* FSDP2 (fully_shard; --fsdp-version 2, accelerate's
                                          fsdp_version: 2): each parameter its own DTensor
                                          sharded on dim 0, not one FlatParameter */
    bool no_mixed_precision;           /* FSDP without MixedPrecision and without
                                          accelerate's fp32 upcast (its mixed_precision:
                                          no): 16-bit parameters stay 16-bit, the
                                          optimizer's state too */
};

struct memest_dist_cfg {
    bool set;                   /* any several-GPU option or config given */
    int64_t gpus;               /* N, world size, >= 1 */
    int64_t gpus_per_node;      /* 0: not given (N if N <= 8, else 8) */
    enum memest_strategy strategy;
    bool strategy_set;          /* --strategy given (a config file may set it) */
    int64_t tp, cp, pp, ep;     /* >= 1 */
    bool sequence_parallel;     /* Megatron's sequence parallelism (needs tp > 1) */
    int64_t micro_batches;      /* M per step and pipeline (default: pp) */
    enum memest_schedule schedule;
    int64_t virtual_stages;     /* V, interleaved only, >= 1 */
    enum memest_offload offload;
    struct memest_engine_cfg eng;
    const char *config_path;    /* --deepspeed file */
    const char *fsdp_path;      /* --fsdp-config file */
    bool gpus_set;              /* --gpus given (a config's num_processes does not replace it) */
    /* given on the command line (the checks refuse them where they change
     * nothing) */
    bool gpus_per_node_set, micro_batches_set, schedule_set, virtual_stages_set;
    bool nodes_counted;         /* the layout's nodes are reported (a comparison of cards
                                   counts and prices them): --gpus-per-node counts */
};

void memest_dist_default(struct memest_dist_cfg *c);
/* DP = N / (TP * PP * CP). */
int64_t memest_dist_dp(const struct memest_dist_cfg *c);
/* The micro-batches one step runs on a rank: the pipeline's (M) with
 * PP > 1, else the accumulation's grad_accum (at least 1). */
int64_t memest_dist_step_micro_batches(const struct memest_dist_cfg *c, int64_t grad_accum);
/* The global batch: micro_batch (--batch, per GPU) x the step's
 * micro-batches x DP. */
int64_t memest_dist_global_batch(const struct memest_dist_cfg *c, int64_t micro_batch,
                                 int64_t grad_accum);
/* The group the strategy shards over: DP x CP, or for HSDP the GPUs of a
 * node over TP * PP * CP (at least 1). */
int64_t memest_dist_shard_group(const struct memest_dist_cfg *c);
/* The GPUs of a node: --gpus-per-node, else the world size up to 8 (at
 * least 1). */
int64_t memest_dist_gpus_per_node(const struct memest_dist_cfg *c);
/* A usage error for a layout that cannot exist or options it does not
 * read, once the options and a config file are merged: sizes that do not
 * divide (N not a multiple of TP * PP * CP, EP not dividing DP * CP),
 * hybrid sharding (hsdp) over nodes that are not whole (N not a multiple
 * of the GPUs per node, or a node not a multiple of TP * PP * CP), V > 1
 * without interleaved, interleaved with V < 2 or M not a multiple of PP,
 * --sequence-parallel without TP > 1, --offload without a ZeRO or FSDP
 * strategy, --ddp-bucket-view without DDP, --ep under ZeRO,
 * --gpus-per-node given where nothing counts nodes. 0 / -1. */
int memest_dist_check(const struct memest_dist_cfg *c, struct memest_error *err);

/* One rank's view, as the step simulator runs it (sim.h; NULL in the step
 * configuration: one GPU, every figure as before) and the model-state
 * calculator (calc.h: memest_calc_dist_states) reads it. Built per distinct
 * rank by the several-GPU flow (memest_rank_view_init). */
struct memest_rank_view {
    const struct memest_dist_cfg *cfg;
    enum memest_strategy strategy;
    int64_t shard;              /* ranks the sharded states are split over (>= 1) */
    bool shard_optim;           /* ZeRO-1 and up, FSDP: optimizer state / shard */
    bool shard_grads;           /* ZeRO-2 and up, FSDP: gradients reduce-scattered */
    bool shard_params;          /* ZeRO-3, FSDP (all three): parameters at rest are
                                   shards, gathered per unit to compute */
    bool reshard_after_forward; /* ZeRO-3, FSDP FULL_SHARD and HSDP: a unit's gathered
                                   parameters go after its forward (SHARD_GRAD_OP keeps
                                   them to its backward) */
    bool flat_units;            /* FSDP: one FlatParameter per unit, padded to a multiple
                                   of the shard group; ZeRO-3: each parameter padded */
    bool deepspeed;             /* a DeepSpeed engine (ZeRO 1-3): its reduce bucket */
    bool master_fp32;           /* 16-bit parameters under ZeRO or FSDP: fp32 master
                                   (ZeRO: a copy of the partition; FSDP with mixed
                                   precision: the shard itself, of the units that
                                   require grad) and fp32 optimizer state */
    bool offload_optim;         /* optimizer state, master and gradient partition on
                                   the host (ZeRO-Offload) */
    bool offload_params;        /* + the parameter shards (ZeRO-Infinity, FSDP
                                   CPUOffload) */
    bool ddp_buckets;           /* DDP without gradient_as_bucket_view: the reducer's
                                   buckets, a second copy of every gradient */
    /* pipeline: the stage's extra live tensors held through the step */
    int64_t in_flight;          /* micro-batches whose activations the stage holds at
                                   once (1: one, as one GPU) */
    uint64_t inflight_bytes;    /* the saved activations of the other in_flight - 1
                                   micro-batches, held from setup to teardown */
};

/* The view of every data-parallel rank of layout c (they are alike);
 * half_params: the parameters are fp16/bf16 (--dtype), which makes ZeRO
 * and FSDP keep fp32 master weights and optimizer state. */
void memest_rank_view_init(const struct memest_dist_cfg *c, bool half_params,
                           struct memest_rank_view *v);

/* ceil(n / k), k >= 1. */
static inline uint64_t memest_dist_part(uint64_t n, int64_t k)
{
    uint64_t d = k > 0 ? (uint64_t)k : 1;
    return n / d + (n % d != 0);
}

/* The unit (sharding granularity) of each node of r's graph under view v
 * (dist_units.c): the top-level block instances, or the instances of the
 * FSDP wrap block (dist.h: wrap_block), and under FSDP's peft policy every
 * node with a trainable weight a unit of its own (nested in its layer's:
 * the layer's unit is its other nodes); unit_of[node] is the unit's index,
 * in the order of the units' first nodes, or UINT32_MAX (the root:
 * parameters outside every unit). Returns the number of units; unit_of has
 * nnodes entries. */
uint32_t memest_dist_units(const struct memest_run *r, const struct memest_rank_view *v,
                           uint32_t *unit_of);
/* Whether parameter p stays whole on every rank under v (ZeRO-3's
 * stage3_param_persistence_threshold: numel at most the threshold). */
bool memest_dist_persistent(const struct memest_rank_view *v, const struct memest_param *p);
/* The bytes of one element of parameter p as the run stores it (its
 * storage's dtype: a packed 4-bit weight's quant_storage, uint8 or a
 * 16-bit type), and the elements so stored (a packed weight's are fewer
 * than its logical numel). The engines flatten and partition these. */
uint64_t memest_dist_param_elem(const struct memest_run *r, const struct memest_param *p);
uint64_t memest_dist_param_numel(const struct memest_run *r, const struct memest_param *p);

/* One FSDP FlatParameter (dist_units.c), from torch v2.6
 * torch/distributed/fsdp/_flat_param.py and accelerate v1.14.0
 * accelerator.py. */
struct memest_flat_unit {
    uint64_t numel;       /* its elements: the parameters' stored elements in order, with
                             use_orig_params' 16-byte alignment padding before each
                             (_init_flat_param_and_metadata); the shard is
                             ceil(numel / shard group) of them */
    uint64_t elem;        /* bytes of an element of the rank's shard: fp32 when accelerate
                             upcasts it (mixed precision on and requires_grad), else the
                             parameters' own */
    uint64_t gathered;    /* bytes of the unsharded (padded) flat parameter in the
                             parameters' own element: what an all-gather makes */
    uint64_t trainable;   /* elements of its trainable parameters */
    uint64_t state;       /* elements of the shard the optimizer updates on the rank that
                             holds most: the whole shard without use_orig_params, else
                             the trainable parameters' parts of it (the most any rank has) */
    bool requires_grad;   /* any parameter trainable: the shard gets a gradient */
    uint64_t shard_bytes; /* the rank's shard at rest: ceil(numel / shard group) elements
                             of `elem`; FSDP2: each parameter's dim-0 chunk, padded to
                             ceil(dim0 / shard group) rows, in its own element */
    uint64_t grad_bytes;  /* its gradient: the whole shard's (FSDP1, requires_grad), or the
                             trainable parameters' chunks (FSDP2) */
    uint64_t state_bytes; /* the bytes of `state` elements (the optimizer's view) */
    uint32_t mixed_node;  /* a node whose frozen parameters share the unit with trainable
                             ones, UINT32_MAX when none */
    uint8_t dtype;        /* the FlatParameter's type (enum memest_dtype), before an upcast */
    uint32_t first_node;  /* the node of its first parameter */
    uint32_t dtype_node;  /* a node whose parameters are of another type (FSDP refuses
                             them: "Must flatten tensors with uniform dtype"), or
                             UINT32_MAX */
};
/* The FlatParameters of units 0..nunits-1 and the root (index nunits)
 * under view v, cut by unit_of (memest_dist_units), into fu[nunits + 1].
 * 0, or -1 out of memory. */
int memest_dist_flat_units(const struct memest_run *r, const struct memest_rank_view *v,
                            const uint32_t *unit_of, uint32_t nunits,
                            struct memest_flat_unit *fu);
/* The element of the trainable parameters (the first one's; 2 when none):
 * DeepSpeed's 16-bit partitions and reduce buckets are in it. */
uint64_t memest_dist_train_elem(const struct memest_run *r);
/* The rank's partition of the trainable parameters under ZeRO, in
 * elements: ZeRO-1/2 cut the flat group padded to a multiple of 2 x the
 * ranks (nccl_start_alignment_factor, stage_1_and_2.py), ZeRO-3 each
 * parameter padded to a multiple of the ranks (partition_parameters.py;
 * the persistent ones too: their gradients and state are partitioned). */
uint64_t memest_dist_zero_part(const struct memest_run *r, const struct memest_rank_view *v);
/* ZeRO-3's sub-groups of the rank's partition (DeepSpeed v0.16.9
 * deepspeed/runtime/zero/stage3.py:943-966, _create_fp16_sub_groups): the
 * trainable parameters in order, each with its partition (ceil(numel /
 * ranks) elements), closed once they reach sub_group_size elements or at
 * the last one; one sub-group when sub_group_size is at least the whole
 * partition. Their elements into numel[] (NULL: only counted), in order;
 * returns how many (0 without trainable parameters). */
uint32_t memest_dist_zero3_sub_groups(const struct memest_run *r, const struct memest_rank_view *v,
                                      uint64_t *numel);
