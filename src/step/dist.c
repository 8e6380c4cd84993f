/* dist.c - several GPUs (dist.h): the names of the strategies, pipeline
 * schedules and offload settings, each a table pinned to its enum's count,
 * the engines' defaults (each cited where it is defined) and the checks of
 * the layout's sizes. */
#include "memest/dist.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "memest/graph.h"

static const char *const strategy_names[] = {
    [MEMEST_STRAT_NONE] = "none",   [MEMEST_STRAT_DDP] = "ddp",
    [MEMEST_STRAT_ZERO1] = "zero1", [MEMEST_STRAT_ZERO2] = "zero2",
    [MEMEST_STRAT_ZERO3] = "zero3", [MEMEST_STRAT_FSDP] = "fsdp",
    [MEMEST_STRAT_FSDP_GRAD_OP] = "fsdp-grad-op", [MEMEST_STRAT_HSDP] = "hsdp",
};
static_assert(sizeof strategy_names / sizeof *strategy_names == MEMEST_STRAT_COUNT,
              "one name per strategy");

static const char *const schedule_names[] = {
    [MEMEST_SCHED_1F1B] = "1f1b", [MEMEST_SCHED_INTERLEAVED] = "interleaved",
};
static_assert(sizeof schedule_names / sizeof *schedule_names == MEMEST_SCHED_COUNT,
              "one name per schedule");

static const char *const offload_names[] = {
    [MEMEST_OFFLOAD_NONE] = "none", [MEMEST_OFFLOAD_OPTIMIZER] = "optimizer",
    [MEMEST_OFFLOAD_OPTIMIZER_PARAMS] = "optimizer+params",
};
static_assert(sizeof offload_names / sizeof *offload_names == MEMEST_OFFLOAD_COUNT,
              "one name per offload setting");

static const char *const policy_names[] = {
    [MEMEST_FSDP_POLICY_AUTO] = NULL, [MEMEST_FSDP_POLICY_LAYERS] = "layers",
    [MEMEST_FSDP_POLICY_PEFT] = "peft",
};
static_assert(sizeof policy_names / sizeof *policy_names == MEMEST_FSDP_POLICY_COUNT,
              "one name per FSDP policy");

const char *memest_fsdp_policy_name(int p)
{
    return p >= 0 && p < MEMEST_FSDP_POLICY_COUNT ? policy_names[p] : NULL;
}

static int parse_name(const char *const *names, int n, const char *s, int *out)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return 0;
        }
    }
    return -1;
}

const char *memest_strategy_name(enum memest_strategy s)
{
    return (unsigned)s < MEMEST_STRAT_COUNT ? strategy_names[s] : "?";
}

int memest_strategy_parse(const char *s, enum memest_strategy *out)
{
    int i;
    if (parse_name(strategy_names, MEMEST_STRAT_COUNT, s, &i) != 0)
        return -1;
    *out = (enum memest_strategy)i;
    return 0;
}

const char *memest_schedule_name(enum memest_schedule s)
{
    return (unsigned)s < MEMEST_SCHED_COUNT ? schedule_names[s] : "?";
}

int memest_schedule_parse(const char *s, enum memest_schedule *out)
{
    int i;
    if (parse_name(schedule_names, MEMEST_SCHED_COUNT, s, &i) != 0)
        return -1;
    *out = (enum memest_schedule)i;
    return 0;
}

const char *memest_offload_name(enum memest_offload o)
{
    return (unsigned)o < MEMEST_OFFLOAD_COUNT ? offload_names[o] : "?";
}

int memest_offload_parse(const char *s, enum memest_offload *out)
{
    int i;
    if (parse_name(offload_names, MEMEST_OFFLOAD_COUNT, s, &i) != 0)
        return -1;
    *out = (enum memest_offload)i;
    return 0;
}

void memest_dist_default(struct memest_dist_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->gpus = 1;
    c->tp = c->cp = c->pp = c->ep = 1;
    c->virtual_stages = 1;
    /* torch/nn/parallel/distributed.py (v2.6): bucket_cap_mb=None means
     * _DEFAULT_BUCKET_CAP_MB = 25; gradient_as_bucket_view=False */
    c->eng.ddp_bucket_bytes = (uint64_t)25 << 20;
    c->eng.ddp_grad_as_bucket_view = false;
    /* deepspeed/runtime/zero/config.py (v0.16): ZERO_OPTIMIZATION defaults,
     * reduce_bucket_size = allgather_bucket_size = 5e8 elements,
     * contiguous_gradients True, overlap_comm None (stage 3: True, else False),
     * stage3_prefetch_bucket_size 5e7, stage3_max_live_parameters 1e9,
     * stage3_max_reuse_distance 1e9, stage3_param_persistence_threshold 1e5,
     * sub_group_size 1e9 (v0.16.9 deepspeed/runtime/zero/config.py:168,
     * Field(pp_int(1e9), ge=0)) */
    c->eng.reduce_bucket_size = 500000000;
    c->eng.allgather_bucket_size = 500000000;
    c->eng.contiguous_gradients = true;
    c->eng.prefetch_bucket_size = 50000000;
    c->eng.max_live_parameters = 1000000000;
    c->eng.max_reuse_distance = 1000000000;
    c->eng.param_persistence_threshold = 100000;
    c->eng.sub_group_size = 1000000000;
    /* torch/distributed/fsdp/fully_sharded_data_parallel.py (v2.6):
     * backward_prefetch=BackwardPrefetch.BACKWARD_PRE, forward_prefetch=False,
     * limit_all_gathers=True */
    c->eng.backward_prefetch = true;
    c->eng.forward_prefetch = false;
    c->eng.limit_all_gathers = true;
    /* use_orig_params=False (fully_sharded_data_parallel.py v2.6; accelerate
     * v1.14.0 utils/dataclasses.py:1929 reads FSDP_USE_ORIG_PARAMS, default
     * "False"); mixed precision as --dtype gives it */
    c->eng.use_orig_params = false;
    c->eng.no_mixed_precision = false;
}

int64_t memest_dist_dp(const struct memest_dist_cfg *c)
{
    int64_t mp = c->tp * c->pp * c->cp;
    return mp > 0 ? c->gpus / mp : 0;
}

int64_t memest_dist_step_micro_batches(const struct memest_dist_cfg *c, int64_t grad_accum)
{
    if (c->pp > 1)
        return c->micro_batches;
    return grad_accum > 1 ? grad_accum : 1;
}

int64_t memest_dist_global_batch(const struct memest_dist_cfg *c, int64_t micro_batch,
                                 int64_t grad_accum)
{
    return micro_batch * memest_dist_step_micro_batches(c, grad_accum) * memest_dist_dp(c);
}

int64_t memest_dist_gpus_per_node(const struct memest_dist_cfg *c)
{
    if (c->gpus_per_node > 0)
        return c->gpus_per_node;
    int64_t n = c->gpus > 1 ? c->gpus : 1;
    return n < 8 ? n : 8;
}

int64_t memest_dist_shard_group(const struct memest_dist_cfg *c)
{
    int64_t dp = memest_dist_dp(c);
    if (c->strategy != MEMEST_STRAT_HSDP)   /* the context-parallel ranks reduce
                                               gradients together: Megatron-LM's
                                               distributed optimizer shards over
                                               DP x CP */
        return dp * c->cp;
    int64_t per_node = memest_dist_gpus_per_node(c);
    int64_t mp = c->tp * c->pp * c->cp;
    int64_t g = per_node / mp;
    if (g < 1)
        g = 1;
    return g < dp ? g : dp;
}

int memest_dist_check(const struct memest_dist_cfg *c, struct memest_error *err)
{
    int64_t mp = c->tp * c->pp * c->cp;
    if (c->gpus % mp != 0)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--gpus %lld is not a multiple of --tp %lld x --pp %lld x --cp %lld = %lld",
                           (long long)c->gpus, (long long)c->tp, (long long)c->pp,
                           (long long)c->cp, (long long)mp);
    int64_t dp = c->gpus / mp;
    if ((dp * c->cp) % c->ep != 0)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--ep %lld does not divide the data-parallel x context-parallel size %lld",
                           (long long)c->ep, (long long)(dp * c->cp));
    if (c->sequence_parallel && c->tp < 2)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--sequence-parallel needs --tp 2 or more");
    if (c->virtual_stages > 1 && c->schedule != MEMEST_SCHED_INTERLEAVED)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--virtual-stages needs --schedule interleaved");
    if (c->schedule == MEMEST_SCHED_INTERLEAVED && c->pp < 2)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--schedule interleaved needs --pp 2 or more");
    if (c->schedule == MEMEST_SCHED_INTERLEAVED && c->micro_batches % c->pp != 0)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--schedule interleaved needs --micro-batches a multiple of --pp %lld "
                           "(Megatron-LM's requirement), not %lld",
                           (long long)c->pp, (long long)c->micro_batches);
    if (c->schedule == MEMEST_SCHED_INTERLEAVED && c->virtual_stages < 2)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--schedule interleaved needs --virtual-stages V of 2 or more (model "
                           "chunks per stage; with one, the schedule is 1f1b)");
    if (c->strategy == MEMEST_STRAT_HSDP) {
        /* HYBRID_SHARD: a full shard within each node, replicas across the
         * nodes: both need whole nodes */
        int64_t node = memest_dist_gpus_per_node(c);
        const char *given = c->gpus_per_node > 0 ? "" : " (--gpus-per-node's default)";
        if (c->gpus % node != 0)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                               "--strategy hsdp shards within a node and replicates across "
                               "nodes: %lld GPUs are not whole nodes of %lld%s; give --gpus a "
                               "multiple of --gpus-per-node",
                               (long long)c->gpus, (long long)node, given);
        if (node % mp != 0)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                               "--strategy hsdp shards within a node: a node of %lld GPUs%s "
                               "holds no whole model-parallel group of --tp x --pp x --cp = %lld",
                               (long long)node, given, (long long)mp);
    } else if (c->gpus_per_node_set && !c->nodes_counted) {
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--gpus-per-node sets the shard group of --strategy hsdp (and the "
                           "nodes a comparison of cards counts): %s%s it changes nothing",
                           c->strategy == MEMEST_STRAT_NONE ? "without a data-parallel strategy"
                                                            : "with --strategy ",
                           c->strategy == MEMEST_STRAT_NONE ? ""
                                                            : memest_strategy_name(c->strategy));
    }
    if (c->eng.ddp_grad_as_bucket_view && c->strategy != MEMEST_STRAT_DDP)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--ddp-bucket-view needs --strategy ddp");
    if (c->ep > 1 && c->strategy >= MEMEST_STRAT_ZERO1)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--ep with --strategy %s is not modelled: the expert parameters shard "
                           "over the expert-data-parallel ranks, not all of them (--strategy ddp "
                           "is)", memest_strategy_name(c->strategy));
    bool sharding = c->strategy >= MEMEST_STRAT_ZERO1;
    if (c->offload != MEMEST_OFFLOAD_NONE && !sharding)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--offload needs a ZeRO or FSDP --strategy");
    if (c->offload == MEMEST_OFFLOAD_OPTIMIZER_PARAMS && c->strategy != MEMEST_STRAT_ZERO3 &&
        c->strategy != MEMEST_STRAT_FSDP && c->strategy != MEMEST_STRAT_HSDP)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--offload optimizer+params needs --strategy zero3, fsdp or hsdp "
                           "(parameters are sharded only there)");
    return 0;
}

void memest_rank_view_init(const struct memest_dist_cfg *c, bool half_params,
                           struct memest_rank_view *v)
{
    enum memest_strategy s = c->strategy;
    bool zero = s == MEMEST_STRAT_ZERO1 || s == MEMEST_STRAT_ZERO2 || s == MEMEST_STRAT_ZERO3;
    bool fsdp = s == MEMEST_STRAT_FSDP || s == MEMEST_STRAT_FSDP_GRAD_OP || s == MEMEST_STRAT_HSDP;
    memset(v, 0, sizeof *v);
    v->cfg = c;
    v->strategy = s;
    v->shard = zero || fsdp ? memest_dist_shard_group(c) : 1;
    if (v->shard < 1)
        v->shard = 1;
    v->shard_optim = zero || fsdp;
    v->shard_grads = s == MEMEST_STRAT_ZERO2 || s == MEMEST_STRAT_ZERO3 || fsdp;
    v->shard_params = s == MEMEST_STRAT_ZERO3 || fsdp;
    v->reshard_after_forward = s == MEMEST_STRAT_ZERO3 || s == MEMEST_STRAT_FSDP ||
                               s == MEMEST_STRAT_HSDP;
    v->flat_units = fsdp;
    v->deepspeed = zero;
    v->master_fp32 = (zero || (fsdp && !c->eng.no_mixed_precision)) && half_params;
    v->offload_optim = c->offload != MEMEST_OFFLOAD_NONE;
    v->offload_params = c->offload == MEMEST_OFFLOAD_OPTIMIZER_PARAMS;
    v->ddp_buckets = s == MEMEST_STRAT_DDP && !c->eng.ddp_grad_as_bucket_view;
    v->in_flight = 1;
}
