/* sim_dist.c - several GPUs (dist.h): what one data-parallel rank's step
 * holds besides the one-GPU step (sim_internal.h), as the engines do it:
 *   setup     the rank's parameters: whole, or ZeRO-3's per-parameter shards
 *             (the small persistent ones whole) or FSDP's flat shard per unit;
 *             DDP's buckets (a second copy of the gradients unless
 *             gradient_as_bucket_view, torch/csrc/distributed/c10d/reducer.cpp)
 *             and ZeRO-3's reduce bucket (__ipg_bucket_flat_buffer, made at
 *             init), all kept;
 *   forward   a unit's parameters are gathered (all-gathered into their
 *             compute dtype) when its first node runs, with the next unit's
 *             (FSDP's limit_all_gathers lets two all-gathers be in flight;
 *             ZeRO-3 prefetches by its trace), and go after its last node
 *             unless the strategy keeps them to the backward (SHARD_GRAD_OP);
 *             FSDP's root unit (the parameters outside every unit) is
 *             gathered for the whole forward and backward;
 *   backward  a unit is gathered again when the backward reaches it, the one
 *             before it prefetched (BACKWARD_PRE); when the backward has left
 *             it, its parameters go and its gradients are reduce-scattered:
 *             FSDP frees the unit's whole gradients and keeps the rank's
 *             shard (fp32 with MixedPrecision); DeepSpeed ZeRO-2/3 copy each
 *             gradient into the reduce bucket as AccumulateGrad makes it
 *             (the whole gradient goes at once) and keep the partition;
 *             ZeRO-1/2 make their reduce buckets (ipg_buffer, reduce_bucket_size
 *             16-bit elements, two with overlap_comm) when the backward starts
 *             and free them after it (stage_1_and_2.py);
 *   optimizer over the rank's partition: one flat tensor per group under
 *             ZeRO (its state, the fp32 master under 16-bit parameters and the
 *             fp32 gradient the step makes from the partition), one per unit
 *             under FSDP; nothing on the device with --offload (CPU Adam).
 * Units are the top-level block instances (or the FSDP wrap block's); ZeRO-3
 * fetches module by module, so a parameter node outside every block is a
 * unit of its own there. */
#include <stdlib.h>
#include <string.h>

#include "memest/optim.h"
#include "sim_internal.h"

static bool sharded(const struct sim *S, const struct memest_param *p)
{
    return S->rv->shard_params && !memest_dist_persistent(S->rv, p);
}

static uint32_t unit_index(const struct sim *S, uint32_t node)
{
    return S->unit_of[node] == NONE ? S->nunits : S->unit_of[node];
}

/* FSDP: each unit's FlatParameter (dist.h: memest_dist_flat_units) */
static int flat_layout(struct sim *S, size_t k)
{
    struct memest_flat_unit *fu = malloc(sizeof *fu * k);
    if (!fu || memest_dist_flat_units(S->r, S->rv, S->unit_of, S->nunits, fu) != 0) {
        free(fu);
        return sim_nomem(S);
    }
    for (size_t u = 0; u < k; u++) {
        S->ugath[u] = fu[u].numel ? fu[u].gathered : 0;
        S->ushard[u] = fu[u].numel ? fu[u].shard_bytes : 0;
        S->ugbytes[u] = fu[u].grad_bytes;
        S->ustate[u] = fu[u].state;
        S->ustbytes[u] = fu[u].state_bytes;
    }
    free(fu);
    return 0;
}

int sim_dist_analyze(struct sim *S)
{
    const struct memest_run *r = S->r;
    S->gpart = S->ipg[0] = S->ipg[1] = S->bcur = NONE;
    if (!S->rv)
        return 0;
    size_t nn = S->nn ? S->nn : 1;
    S->unit_of = malloc(sizeof *S->unit_of * nn);
    S->pred = calloc(S->ns ? S->ns : 1, 1);
    if (!S->unit_of || !S->pred)
        return sim_nomem(S);
    uint32_t nu = memest_dist_units(r, S->rv, S->unit_of);
    if (nu == UINT32_MAX)
        return sim_nomem(S);
    S->nunits = nu;
    size_t k = (size_t)nu + 1;
    S->ufirst = malloc(sizeof *S->ufirst * k);
    S->ulast = malloc(sizeof *S->ulast * k);
    S->ugath = calloc(k, sizeof *S->ugath);
    S->ushard = calloc(k, sizeof *S->ushard);
    S->ustate = calloc(k, sizeof *S->ustate);
    S->ugbytes = calloc(k, sizeof *S->ugbytes);
    S->ustbytes = calloc(k, sizeof *S->ustbytes);
    S->ugid = malloc(sizeof *S->ugid * k);
    S->ugid2 = malloc(sizeof *S->ugid2 * k);
    S->upre = calloc(k, sizeof *S->upre);
    S->ugr = malloc(sizeof *S->ugr * k);
    if (!S->ufirst || !S->ulast || !S->ugath || !S->ushard || !S->ustate || !S->ugid ||
        !S->ugid2 || !S->upre || !S->ugbytes || !S->ustbytes || !S->ugr)
        return sim_nomem(S);
    for (size_t u = 0; u < k; u++) {
        S->ufirst[u] = NONE;
        S->ulast[u] = 0;
        S->ugid[u] = S->ugid2[u] = S->ugr[u] = NONE;
    }
    for (uint32_t n = 0; n < S->nn; n++) {
        uint32_t u = S->unit_of[n];
        if (u == NONE)
            continue;
        if (S->ufirst[u] == NONE)
            S->ufirst[u] = n;
        S->ulast[u] = n;
    }
    if (S->rv->flat_units && flat_layout(S, k) != 0)
        return -1;
    for (uint32_t i = 0; !S->rv->flat_units && i < r->nparams; i++) {
        const struct memest_param *p = &r->params[i];
        if (p->tied_to < 0 && sharded(S, p)) {
            uint32_t u = unit_index(S, p->node);
            S->ugath[u] = memest_sat_add(S->ugath[u], r->storages[p->storage].bytes);
        }
    }
    for (size_t u = 0; u < k; u++)
        S->upre[u] = S->ugath[u];
    S->e16 = memest_dist_train_elem(r);
    S->zpart = memest_dist_zero_part(r, S->rv);
    return 0;
}

void sim_dist_free(struct sim *S)
{
    free(S->unit_of);
    free(S->ufirst);
    free(S->ulast);
    free(S->ugath);
    free(S->ushard);
    free(S->ustate);
    free(S->ugid);
    free(S->ugid2);
    free(S->upre);
    free(S->ugbytes);
    free(S->ustbytes);
    free(S->ugr);
    free(S->pred);
}

static int sim_dist_setup(struct sim *S)
{
    const struct memest_run *r = S->r;
    const struct memest_rank_view *v = S->rv;
    uint32_t id;
    if (!v)
        return 0;
    uint8_t *done = calloc(S->ns ? S->ns : 1, 1);
    if (!done)
        return sim_nomem(S);
    int rc = 0;
    for (uint32_t i = 0; i < r->nparams && rc == 0; i++) {
        const struct memest_param *p = &r->params[i];
        if (p->tied_to >= 0 || done[p->storage])
            continue;
        done[p->storage] = 1;
        if (!sharded(S, p))
            rc = sim_alloc_storage(S, p->storage, MEMEST_CAT_PARAMS, p->node);
        else if (!v->flat_units && !v->offload_params)   /* ZeRO-3: its partition */
            rc = sim_ev_alloc(S, MEMEST_CAT_PARAMS, p->node,
                              memest_sat_mul(memest_dist_part(memest_dist_param_numel(r, p), v->shard),
                                             memest_dist_param_elem(r, p)),
                              &id);
    }
    /* other parameter-kind storages (a quantised weight's state) stay whole */
    for (uint32_t s = 0; s < S->ns && rc == 0; s++)
        if (r->storages[s].kind == MEMEST_ST_PARAM && !done[s])
            rc = sim_alloc_storage(S, s, MEMEST_CAT_PARAMS, r->storages[s].node);
    free(done);
    if (rc != 0)
        return -1;
    if (v->flat_units && !v->offload_params)
        for (uint32_t u = 0; u <= S->nunits; u++)
            if (S->ushard[u] &&
                sim_ev_alloc(S, MEMEST_CAT_PARAMS, u < S->nunits ? S->ufirst[u] : NONE,
                             S->ushard[u], &id) != 0)
                return -1;
    if (v->ddp_buckets && !S->inference) {
        uint64_t b = 0;
        for (uint32_t i = 0; i < r->nparams; i++)
            if (r->params[i].tied_to < 0 && r->params[i].trainable)
                b = memest_sat_add(b, r->storages[r->params[i].storage].bytes);
        if (b && sim_ev_alloc(S, MEMEST_CAT_COMM, NONE, b, &id) != 0)
            return -1;
    }
    /* pipeline: the saved activations of the other micro-batches in flight */
    if (v->inflight_bytes && !S->inference &&
        sim_ev_alloc(S, MEMEST_CAT_SAVED, NONE, v->inflight_bytes, &id) != 0)
        return -1;
    if (v->strategy == MEMEST_STRAT_ZERO3 && !S->inference &&
        sim_ev_alloc(S, MEMEST_CAT_COMM, NONE,
                     memest_sat_mul(v->cfg->eng.reduce_bucket_size, S->e16), &id) != 0)
        return -1;
    return 0;
}

/* ---- streams ----
 *
 * The streams the engines allocate on (timeline.h: memest_event.stream;
 * the caching allocator pools blocks per stream, alloc.h) and the frees
 * record_stream defers:
 *   - FSDP1 (FullyShardedDataParallel): the all-gather runs in
 *     `with state._device_handle.stream(unshard_stream)` (_runtime_utils.py,
 *     _unshard), and FlatParamHandle.unshard() allocates the padded
 *     unsharded flat parameter there (_alloc_padded_unsharded_flat_param):
 *     the gathered parameters are STREAM_GATHER's; _free_unsharded_flat_param
 *     calls `_no_dispatch_record_stream(unsharded_flat_param,
 *     torch.cuda.current_stream())` before _free_storage: a deferred free
 *     (pytorch/pytorch@01caf79e047f:torch/distributed/fsdp/_flat_param.py,
 *     FlatParamHandle._free_unsharded_flat_param). The reduce-scatter runs
 *     in `with state._device_handle.stream(state._post_backward_stream)`
 *     (_runtime_utils.py, _post_backward_hook / _reduce_grad): the sharded
 *     gradient (`new_sharded_grad = torch.empty_like(chunks[0])`, and the
 *     padded gradient _get_reduce_scatter_tensors pads) is STREAM_REDUCE's;
 *     the unsharded gradient autograd made on the default stream is
 *     `_no_dispatch_record_stream(autograd_computed_grad,
 *     state._post_backward_stream)`'d before it goes: a deferred free.
 *   - FSDP2 (fully_shard): all_gather_copy_in runs on the all-gather
 *     copy-in stream and its output is freed by an event the next
 *     all-gather waits for, not by record_stream; the unsharded parameters
 *     memest counts are the copy-out's, on the default stream
 *     (torch/distributed/_composable/fsdp/_fsdp_collectives.py,
 *     foreach_all_gather / foreach_all_gather_copy_out): stream 0 here, and
 *     the all-gather output and the reduce-scatter buffers, which memest
 *     does not count apart, are not tagged.
 *   - DeepSpeed ZeRO-3: PartitionedParameterCoordinator fetches in `with
 *     get_accelerator().stream(self.__allgather_stream)`, a stream of its
 *     own when overlap_comm (stage 3's default; else the default stream):
 *     the gathered parameters are STREAM_GATHER's; free_param
 *     (partition_parameters.py) calls `param.data.record_stream(
 *     get_accelerator().current_stream())` before dropping the data: a
 *     deferred free (deepspeedai/DeepSpeed@v0.16.9:deepspeed/runtime/zero/
 *     parameter_offload.py:146-147, the stream: `get_accelerator().Stream()
 *     if overlap_comm else get_accelerator().default_stream()`;
 *     partitioned_param_coordinator.py:119, 329 and 498, the fetch and the
 *     wait under it; partition_parameters.py:289, free_param's
 *     record_stream). The reduce bucket
 *     (__ipg_bucket_flat_buffer) is made at init on the default stream.
 *   - DDP: the buckets are made at construction on the default stream
 *     (reducer.cpp, Reducer::initialize_buckets) and kept; ProcessGroupNCCL
 *     records its NCCL stream on them (recordStream) but they are never
 *     freed in a step: stream 0, nothing deferred.
 *   - The autograd engine's device thread runs each backward op on the
 *     stream its forward op ran on (torch/csrc/autograd/engine.cpp,
 *     evaluate_function's guard on the node's stream; input_buffer.cpp
 *     accumulates on the consumer's stream): no pool of its own, so the
 *     backward's allocations are stream 0's. */
#define STREAM_GATHER 1
#define STREAM_REDUCE 2

static bool fsdp1(const struct sim *S) { return S->rv->flat_units && !(S->rv->cfg && S->rv->cfg->eng.fsdp2); }

/* the gathered parameters' stream; their frees are record_stream'd on it
 * (deferred) when it is not the default one */
static uint8_t gather_stream(const struct sim *S)
{
    const struct memest_rank_view *v = S->rv;
    if (fsdp1(S))
        return STREAM_GATHER;
    if (v->deepspeed && v->strategy == MEMEST_STRAT_ZERO3 && v->cfg &&
        (!v->cfg->eng.overlap_comm_set || v->cfg->eng.overlap_comm))
        return STREAM_GATHER;
    return 0;
}

/* ---- gathering ---- */

/* Unit u's parameters gathered whole (the unit computes): what a prefetch
 * left out comes now, in a second allocation. */
static int gather(struct sim *S, uint32_t u, uint32_t node)
{
    if (u > S->nunits || !S->ugath[u])
        return 0;
    uint8_t st = gather_stream(S);
    if (S->ugid[u] == NONE)
        return sim_ev_alloc_on(S, st, MEMEST_CAT_COMM, node, S->ugath[u], &S->ugid[u]);
    if (S->upre[u] < S->ugath[u] && S->ugid2[u] == NONE)
        return sim_ev_alloc_on(S, st, MEMEST_CAT_COMM, node, S->ugath[u] - S->upre[u],
                               &S->ugid2[u]);
    return 0;
}

/* Unit u's parameters fetched ahead: FSDP all-gathers the whole flat
 * parameter; ZeRO-3 fetches up to stage3_prefetch_bucket_size elements
 * (stage3.py, PartitionedParameterCoordinator.fetch_sub_module). */
static int prefetch(struct sim *S, uint32_t u, uint32_t node)
{
    if (u >= S->nunits || S->ugid[u] != NONE || !S->ugath[u])
        return 0;
    uint64_t want = S->ugath[u];
    if (!S->rv->flat_units) {
        uint64_t cap = memest_sat_mul(S->rv->cfg->eng.prefetch_bucket_size, S->e16);
        if (cap < want)
            want = cap;
        if (!want)
            return 0;
    }
    S->upre[u] = want;
    return sim_ev_alloc_on(S, gather_stream(S), MEMEST_CAT_COMM, node, want, &S->ugid[u]);
}

static int release(struct sim *S, uint32_t u, uint32_t node)
{
    if (u > S->nunits || S->ugid[u] == NONE)
        return 0;
    uint32_t id = S->ugid[u], id2 = S->ugid2[u];
    S->ugid[u] = S->ugid2[u] = NONE;
    S->upre[u] = S->ugath[u];
    bool rec = gather_stream(S) != 0;   /* record_stream'd on the default stream */
    return sim_ev_free_on(S, node, id, rec) || (id2 != NONE && sim_ev_free_on(S, node, id2, rec))
               ? -1
               : 0;
}

static int sim_dist_fwd_enter(struct sim *S, uint32_t n)
{
    if (!dist_on(S) || !S->rv->shard_params)
        return 0;
    if (n == 0 && S->rv->flat_units && gather(S, S->nunits, n) != 0)   /* FSDP's root */
        return -1;
    uint32_t u = S->unit_of[n];
    if (u == NONE || S->ufirst[u] != n)
        return 0;
    return gather(S, u, n) || prefetch(S, u + 1 < S->nunits ? u + 1 : NONE, n) ? -1 : 0;
}

static int sim_dist_fwd_leave(struct sim *S, uint32_t n)
{
    if (!dist_on(S) || !S->rv->shard_params)
        return 0;
    uint32_t u = S->unit_of[n];
    if (u == NONE || S->ulast[u] != n)
        return 0;
    /* a no-grad pass reshards after every unit */
    return S->rv->reshard_after_forward || S->inference ? release(S, u, n) : 0;
}

static int sim_dist_fwd_end(struct sim *S)
{
    if (!dist_on(S) || !S->rv->shard_params || !S->inference)
        return 0;
    for (uint32_t u = 0; u <= S->nunits; u++)
        if (release(S, u, NONE) != 0)
            return -1;
    return 0;
}

/* ---- backward ---- */

static bool ds_reduce_buckets(const struct sim *S)
{
    const struct memest_rank_view *v = S->rv;
    if (!v->deepspeed || v->strategy == MEMEST_STRAT_ZERO3 || !v->cfg->eng.contiguous_gradients)
        return false;
    return true;
}

static int sim_dist_bwd_begin(struct sim *S)
{
    if (!dist_on(S))
        return 0;
    S->bcur = S->nunits ? S->nunits - 1 : NONE;
    if (ds_reduce_buckets(S)) {
        const struct memest_engine_cfg *e = &S->rv->cfg->eng;
        bool overlap = e->overlap_comm_set && e->overlap_comm;
        for (int i = 0; i < (overlap ? 2 : 1); i++)
            if (S->ipg[i] == NONE &&
                sim_ev_alloc(S, MEMEST_CAT_COMM, NONE,
                             memest_sat_mul(e->reduce_bucket_size, S->e16), &S->ipg[i]) != 0)
                return -1;
    }
    return 0;
}

static int sim_dist_bwd_enter(struct sim *S, uint32_t lo, uint32_t hi)
{
    if (!dist_on(S) || !S->rv->shard_params)
        return 0;
    uint32_t low = NONE;
    for (uint32_t n = hi + 1; n-- > lo;) {
        uint32_t u = S->unit_of[n];
        if (u == NONE)
            continue;
        if (gather(S, u, n) != 0)
            return -1;
        low = u;   /* every node is looked at: a unit may hold another's (peft policy) */
    }
    if (low != NONE && low > 0 && (S->rv->cfg->eng.backward_prefetch || !S->rv->flat_units))
        return prefetch(S, low - 1, lo);
    return 0;
}

/* FSDP: the unit's whole gradients go, reduce-scattered into its shard. */
static int reduce_unit(struct sim *S, uint32_t u, uint32_t node)
{
    const struct memest_run *r = S->r;
    bool any = false;
    /* a unit's parameters are its nodes'; the root's, every node's outside
     * the units (once, at the end of the backward) */
    uint32_t lo = u < S->nunits ? S->ufirst[u] : 0, hi = u < S->nunits ? S->ulast[u] : S->nn - 1;
    for (uint32_t n = lo; S->nn && n <= hi; n++) {
        const struct memest_nodeinfo *ni = &r->nodes[n];
        if (unit_index(S, n) != u)
            continue;
        for (uint32_t i = ni->param_first; i < ni->param_first + ni->nparam; i++) {
            const struct memest_param *p = &r->params[i];
            uint32_t ps = p->storage;
            /* a fused parameter's .grad (sim_fused_grad.c) goes with its first member */
            uint32_t *gp = S->flead && S->flead[ps] != NONE ? &S->fg[S->flead[ps]] : &S->pg[ps];
            if (p->tied_to >= 0 || !p->trainable || *gp == NONE)
                continue;
            /* FSDP1: record_stream'd on the post-backward stream */
            if (sim_ev_free_on(S, node, *gp, fsdp1(S)) != 0)
                return -1;
            *gp = NONE;
            S->pred[ps] = 1;
            any = true;
        }
    }
    if (!any || S->ugr[u] != NONE || !S->ugbytes[u])
        return 0;
    return sim_ev_alloc_on(S, fsdp1(S) ? STREAM_REDUCE : 0, MEMEST_CAT_GRADS, node,
                           S->ugbytes[u], &S->ugr[u]);
}

static int sim_dist_bwd_leave(struct sim *S, uint32_t lo)
{
    if (!dist_on(S) || !S->rv->shard_params)
        return 0;
    while (S->bcur != NONE && S->ufirst[S->bcur] >= lo) {
        uint32_t u = S->bcur;
        if (release(S, u, lo) != 0 || (S->rv->flat_units && reduce_unit(S, u, lo) != 0))
            return -1;
        S->bcur = u ? u - 1 : NONE;
    }
    return 0;
}

static int sim_dist_bwd_end(struct sim *S)
{
    if (!dist_on(S))
        return 0;
    if (S->rv->shard_params) {
        for (uint32_t u = 0; u <= S->nunits; u++)
            if (release(S, u, NONE) != 0)
                return -1;
        if (S->rv->flat_units && reduce_unit(S, S->nunits, NONE) != 0)
            return -1;
    }
    for (int i = 0; i < 2; i++)
        if (S->ipg[i] != NONE) {
            if (sim_ev_free(S, NONE, S->ipg[i]) != 0)
                return -1;
            S->ipg[i] = NONE;
        }
    return 0;
}

static int sim_dist_accumulate(struct sim *S, uint32_t node, uint32_t ps, uint32_t id)
{
    const struct memest_rank_view *v = S->rv;
    if (!v || !v->deepspeed || !v->shard_grads)
        return 0;
    /* copied into the reduce bucket, reduced into the partition: the
     * gradient itself goes */
    if (sim_ev_free(S, node, id) != 0)
        return -1;
    S->pred[ps] = 1;
    if (S->gpart == NONE && !v->offload_optim &&
        sim_ev_alloc(S, MEMEST_CAT_GRADS, node, memest_sat_mul(S->zpart, S->e16),
                     &S->gpart) != 0)
        return -1;
    return 1;
}

static int sim_dist_zero_grad(struct sim *S)
{
    if (!dist_on(S) || S->cfg->zero_grad_zeros)
        return 0;
    for (uint32_t u = 0; u <= S->nunits; u++)
        if (S->ugr[u] != NONE) {
            if (sim_ev_free(S, NONE, S->ugr[u]) != 0)
                return -1;
            S->ugr[u] = NONE;
        }
    if (S->gpart != NONE) {
        if (sim_ev_free(S, NONE, S->gpart) != 0)
            return -1;
        S->gpart = NONE;
    }
    memset(S->pred, 0, S->ns ? S->ns : 1);
    return 0;
}

/* ---- the optimizer ---- */

/* One flat tensor the optimizer updates: its node (for the events), its
 * elements, the bytes of its state's elements, and how many of them are a
 * gathering optimizer's matrices (Distributed Muon's; the rest AdamW's). */
struct flat {
    uint32_t node;
    uint64_t numel, bytes, matrices;
};

/* State tensors [from, to) of flat f (optim.h: memest_optim_part_state) */
static int optim_state(struct sim *S, const struct flat *f, unsigned from, unsigned to)
{
    const struct memest_optim_cfg *oc = &S->cfg->optim;
    struct memest_optim_state st;
    memest_optim_part_state(oc, f->numel, f->bytes, f->matrices, &st);
    for (unsigned c = from; c < st.n && c < to; c++) {
        uint32_t id;
        if (st.paged & (1u << c))
            continue;
        if (sim_ev_alloc(S, MEMEST_CAT_OPTSTATE, f->node, st.bytes[c], &id) != 0)
            return -1;
        if (sim_grow_u32(&S->state, &S->capstate, S->nstate + 1) != 0)
            return sim_nomem(S);
        S->state[S->nstate++] = id;
    }
    return 0;
}

/* The flat tensors: ZeRO's one partition, FSDP's shard per unit, into *out
 * (one, or a list to free); their count. -1 out of memory. */
static int flats(struct sim *S, struct flat *one, struct flat **out, uint32_t *nf)
{
    const struct memest_rank_view *v = S->rv;
    const struct memest_optim_cfg *oc = &S->cfg->optim;
    uint64_t k = v->shard > 0 ? (uint64_t)v->shard : 1;
    bool rows = v->cfg && v->cfg->eng.fsdp2;
    *out = one;
    *nf = 0;
    if (v->flat_units) {
        struct flat *fl = malloc(sizeof *fl * ((size_t)S->nunits + 1));
        if (!fl)
            return sim_nomem(S);
        for (uint32_t u = 0; u <= S->nunits; u++) {
            if (!S->ustate[u] || S->ugr[u] == NONE)
                continue;
            fl[(*nf)++] = (struct flat){u < S->nunits ? S->ufirst[u] : NONE, S->ustate[u],
                                        S->ustbytes[u],
                                        memest_optim_part_matrices(oc, S->r, k, rows, S->unit_of,
                                                                   u, S->nunits)};
        }
        *out = fl;
        return 0;
    }
    uint64_t part = S->zpart;
    *one = (struct flat){NONE, part, memest_sat_mul(part, v->master_fp32 ? 4 : S->e16),
                         memest_optim_part_matrices(oc, S->r, k, false, NULL, 0, 0)};
    *nf = part ? 1 : 0;
    return 0;
}

/* The elementwise update's temporaries over the flat tensors: the foreach
 * program's lists, one temporary per flat tensor (of its bytes, or with a
 * gathering optimizer its auxiliary optimizer's part); the for-loop's, per
 * tensor; none fused. */
static int flat_temps(struct sim *S, const struct memest_optim_desc *d, const struct flat *fl,
                      uint32_t nf)
{
    enum memest_optim kind = d->gprog ? d->aux : S->cfg->optim.kind;
    const struct memest_optim_desc *od = memest_optim_desc(kind);
    const struct memest_optim_prog *prog = memest_optim_foreach(kind, S->cfg->torch_version);
    if (od->by_dim)   /* the flat tensors have one dimension: Adafactor's vector program */
        prog = &od->foreach_vec;
    int rc = 0;
    if (S->cfg->impl == MEMEST_IMPL_FOREACH && nf) {
        uint32_t *ids = malloc(sizeof *ids * (MEMEST_OPTIM_MAX_LISTS + 1) * nf);
        uint8_t on[MEMEST_OPTIM_MAX_LISTS + 1] = {0};
        if (!ids)
            return sim_nomem(S);
        for (size_t k = 0; k < prog->n && rc == 0; k++) {
            int l = prog->op[k] > 0 ? prog->op[k] : -prog->op[k];
            on[l] = prog->op[k] > 0;
            for (uint32_t i = 0; i < nf && rc == 0; i++) {
                uint32_t *slot = &ids[(size_t)l * nf + i];
                uint64_t b = d->gprog && fl[i].numel
                                 ? memest_sat_mul(fl[i].numel - fl[i].matrices, fl[i].bytes / fl[i].numel)
                                 : fl[i].bytes;
                rc = prog->op[k] > 0 ? sim_ev_alloc(S, MEMEST_CAT_OPTTEMP, fl[i].node, b, slot)
                                     : sim_ev_free(S, fl[i].node, *slot);
            }
        }
        for (int l = MEMEST_OPTIM_MAX_LISTS; l > 0; l--)
            for (uint32_t i = 0; on[l] && i < nf && rc == 0; i++)
                rc = sim_ev_free(S, NONE, ids[(size_t)l * nf + i]);
        free(ids);
    } else if (S->cfg->impl == MEMEST_IMPL_FORLOOP) {
        for (uint32_t i = 0; i < nf && rc == 0; i++)
            for (unsigned t = 0; t < od->forloop_temps && rc == 0; t++)
                rc = sim_ev_transient(S, MEMEST_CAT_OPTTEMP, fl[i].node, fl[i].bytes);
    }
    return rc;
}

/* DeepSpeed ZeRO-3's step, one sub-group at a time (DeepSpeed v0.16.9
 * deepspeed/runtime/zero/stage3.py:2120-2135, step: "update parameters one
 * sub group at a time"); the sub-groups as memest_dist_zero3_sub_groups
 * cuts them (stage3.py:943-966, per param group: memest has one). Per
 * sub-group: _prepare_sub_group (stage3.py:1913-1919) makes, without an
 * optimizer offload, the fp32 gradient of the sub-group's partition
 * (_prepare_fp32_grad_for_sub_group, stage3.py:1891-1910: flatten(...).to(
 * fp32) set as .grad); _optimizer_step (stage3.py:972-987) steps the
 * optimizer over that one fp32 partition, which makes its state in the
 * first step and its foreach temporaries; _release_sub_group
 * (stage3.py:1941-1946) sets the fp32 gradient to None. So one sub-group's
 * fp32 gradient and temporaries exist at once, over the whole partition's
 * state and master. The fp32 master is one tensor per sub-group
 * (_create_fp32_partitions, stage3.py:902-905; made with the engine, here
 * with the first step, kept). Not counted: the 16-bit copy flatten()
 * makes of a sub-group of several gradients, freed once .to(fp32) has
 * copied it. With the optimizer offloaded the step runs on the host
 * (sim_dist_optimizer returns before this). */
static int zero3_step(struct sim *S, bool first)
{
    const struct memest_rank_view *v = S->rv;
    const struct memest_optim_desc *d = memest_optim_desc(S->cfg->optim.kind);
    uint32_t n = memest_dist_zero3_sub_groups(S->r, v, NULL);
    uint64_t *sg = malloc(sizeof *sg * (n ? n : 1));
    if (!sg)
        return sim_nomem(S);
    memest_dist_zero3_sub_groups(S->r, v, sg);
    uint64_t es = v->master_fp32 ? 4 : S->e16;   /* the state's element */
    int rc = 0;
    uint32_t id;
    uint64_t big = 0;
    for (uint32_t i = 0; first && v->master_fp32 && i < n && rc == 0; i++) {
        rc = sim_ev_alloc(S, MEMEST_CAT_OPTSTATE, NONE, memest_sat_mul(sg[i], 4), &id);
        big = sg[i] > big ? sg[i] : big;
    }
    /* initialize_optimizer_states' gradient_buffer (stage3.py:1027-1033,
     * 1088-1090): the largest sub-group's fp32 elements, made and let go
     * with the engine; the allocator keeps its block for the gradients */
    if (rc == 0 && big)
        rc = sim_ev_transient(S, MEMEST_CAT_OPTTEMP, NONE, memest_sat_mul(big, 4));
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        struct flat f = {NONE, sg[i], memest_sat_mul(sg[i], es), 0};
        uint32_t g32 = NONE;
        if (v->master_fp32)
            rc = sim_ev_alloc(S, MEMEST_CAT_OPTTEMP, NONE, memest_sat_mul(sg[i], 4), &g32);
        if (rc == 0 && first)
            rc = optim_state(S, &f, 0, MEMEST_OPTIM_MAX_STATE);
        if (rc == 0)
            rc = flat_temps(S, d, &f, 1);
        if (rc == 0 && g32 != NONE)
            rc = sim_ev_free(S, NONE, g32);
    }
    free(sg);
    return rc;
}

/* The optimizer over the rank's flat tensors; a gathering optimizer
 * (Distributed Muon) first updates its matrices one by one, gathered
 * whole, then its auxiliary optimizer (AdamW) the rest: the momentum made
 * before, AdamW's state after (as sim_optimizer.c's pprog_update); under
 * ZeRO-3 it steps the partition as one sub-group (DeepSpeed v0.16.9 has no
 * Muon of its own), the others zero3_step's sub-groups. */
static int sim_dist_optimizer(struct sim *S, bool first)
{
    const struct memest_rank_view *v = S->rv;
    const struct memest_optim_desc *d = memest_optim_desc(S->cfg->optim.kind);
    S->ph = (uint8_t)((S->ph & WARM) | MEMEST_PH_OPTIMIZER);
    if (v->offload_optim)   /* CPU Adam: the update runs on the host */
        return 0;
    if (v->deepspeed && v->strategy == MEMEST_STRAT_ZERO3 && !d->gprog)
        return zero3_step(S, first);
    struct flat one, *fl;
    uint32_t nf;
    if (flats(S, &one, &fl, &nf) != 0)
        return -1;
    int rc = 0;
    unsigned split = d->gprog ? 1 : MEMEST_OPTIM_MAX_STATE;   /* the momentum first */
    /* state: made in the first step (or the constructor's: there, once) */
    for (uint32_t i = 0; first && i < nf && rc == 0; i++)
        rc = optim_state(S, &fl[i], 0, split);
    /* ZeRO's fp32 master partition (made with the engine; here with the
     * state, both kept for good) */
    uint32_t id;
    if (first && rc == 0 && v->deepspeed && v->master_fp32 && nf)
        rc = sim_ev_alloc(S, MEMEST_CAT_OPTSTATE, NONE, memest_sat_mul(fl[0].numel, 4), &id);
    /* ZeRO with 16-bit parameters: the fp32 gradient of the partition */
    uint32_t g32 = NONE;
    if (rc == 0 && v->deepspeed && v->master_fp32 && nf)
        rc = sim_ev_alloc(S, MEMEST_CAT_OPTTEMP, NONE, memest_sat_mul(fl[0].numel, 4), &g32);
    if (rc == 0 && d->gprog) {
        uint64_t k = v->shard > 0 ? (uint64_t)v->shard : 1;
        rc = sim_optim_gather(S, k, v->cfg && v->cfg->eng.fsdp2, v->master_fp32 ? 4 : S->e16);
        for (uint32_t i = 0; first && i < nf && rc == 0; i++)   /* AdamW's _init_group */
            rc = optim_state(S, &fl[i], split, MEMEST_OPTIM_MAX_STATE);
    }
    if (rc == 0)
        rc = flat_temps(S, d, fl, nf);
    if (rc == 0 && g32 != NONE)
        rc = sim_ev_free(S, NONE, g32);
    if (fl != &one)
        free(fl);
    return rc;
}

/* the optimizer over the rank's partition (ZeRO, FSDP) in place of the
 * core's: 1 when it ran */
static int dist_optimizer(struct sim *S, bool first)
{
    if (!S->rv->shard_optim)
        return 0;
    return sim_dist_optimizer(S, first) != 0 ? -1 : 1;
}

const struct sim_ext sim_dist_ext = {
    .setup = sim_dist_setup,
    .zero_grad = sim_dist_zero_grad,
    .fwd_enter = sim_dist_fwd_enter,
    .fwd_leave = sim_dist_fwd_leave,
    .fwd_end = sim_dist_fwd_end,
    .bwd_begin = sim_dist_bwd_begin,
    .bwd_enter = sim_dist_bwd_enter,
    .bwd_leave = sim_dist_bwd_leave,
    .bwd_end = sim_dist_bwd_end,
    .accumulate = sim_dist_accumulate,
    .optimizer = dist_optimizer,
};
