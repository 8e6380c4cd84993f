/* sim_forward.c - the forward pass, per node in graph order (sim_internal.h). */
#include <string.h>

#include "sim_internal.h"
#include "memest/cuda_overhead.h"

/* ---- forward ---- */

/* Whether storage s, made by the current pass, outlives its forward use. */
static bool kept(const struct sim *S, uint32_t s, enum fmode m, const struct ckpt *k)
{
    if (sim_held(S, s))
        return true;
    switch (m) {
    case FM_TRAIN:
        return S->release[s] != NONE || sim_sac(S, s) || sim_offload_holds(S, s);
    case FM_NOGRAD:
        return false;
    case FM_RECOMPUTE:
        /* the reentrant checkpoint returns the recomputed outputs to its
         * backward; the non-reentrant one drops them (sim_recompute_drop) */
        return (S->relin[s] != NONE && S->relin[s] <= k->last) ||
               (!S->ck_nonreentrant && S->lastuse[s] > k->last);
    }
    return false;
}

static bool uses_cublas(const struct memest_run *r, uint32_t n)
{
    return r->nodes[n].fwd_macs > 0 && r->g->nodes[n].op->lib == MEMEST_LIB_CUBLAS;
}

/* PyTorch 2.x takes cuBLAS's workspace from the caching allocator, one per
 * (handle, stream), kept for the process (aten/src/ATen/cuda/
 * CublasHandlePool.cpp: cublas_handle_stream_to_workspace()); handles are
 * per thread (a thread_local PoolWindow of the handle pool), and the
 * autograd engine runs a CUDA backward on a device thread of its own, so
 * the backward's first matrix product takes a second workspace. PyTorch
 * 1.13 left the workspace to cuBLAS, outside the allocator: none. */
int sim_cublas(struct sim *S, uint32_t n, bool backward)
{
    uint32_t *id = backward ? &S->cublas_bwd : &S->cublas;
    if (*id != NONE || S->cfg->torch_version == 113 || !uses_cublas(S->r, n))
        return 0;
    return sim_ev_alloc(S, MEMEST_CAT_WORKSPACE, n, memest_cublas_workspace(S->cfg->gpu_arch), id);
}

/* Node n's first step on input 0 ran before its other inputs were made
 * (memest_nodeinfo.in0_first): without autograd, an input 0 that nothing
 * else reads died then, and what that step made took its place; so n's
 * own tensors are counted without it. (Its other inputs' producers, earlier
 * nodes here, saw it alive in its stead: the same bytes where the step's
 * result is as large, as an activation of it is.) */
static int in0_first(struct sim *S, uint32_t n)
{
    const struct memest_run *r = S->r;
    if (!S->g->nodes[n].nin)
        return 0;
    uint32_t s = r->values[node_in(r, n, 0)->src].storage;
    while (S->alias[s] != NONE)
        s = S->alias[s];
    if (persistent_kind(r->storages[s].kind) || sim_held(S, s) || S->lastuse[s] != n)
        return 0;
    return sim_free_storage(S, s, n);
}

/* Whether node n's outputs come from the selective checkpoint's cache in
 * the recomputation (the op does not run again). */
static bool sac_cached(const struct sim *S, uint32_t n, uint32_t sfirst)
{
    for (uint32_t s = sfirst; S->sac && s < S->ns && S->r->storages[s].node == n; s++)
        if (S->sac[s])
            return true;
    return false;
}

int sim_forward_node(struct sim *S, uint32_t n, enum fmode m, const struct ckpt *k,
                        uint32_t *sfirst)
{
    const struct memest_run *r = S->r;
    /* the storages this node makes: casts, outputs, saved op-internal tensors */
    while (*sfirst < S->ns && r->storages[*sfirst].node < n)
        ++*sfirst;
    bool cached = m == FM_RECOMPUTE && sac_cached(S, n, *sfirst);
    if (!cached && sim_cublas(S, n, S->in_recompute) != 0)
        return -1;
    /* --fused linear-ce: the head and the nodes after it make none; the
     * fused function runs at the head */
    bool fused = fused_node(S, n);
    if (fused && n == S->fce.head && sim_fused_ce_forward(S, n) != 0)
        return -1;
    if (m == FM_NOGRAD && r->nodes[n].in0_first && in0_first(S, n) != 0)
        return -1;
    /* the model's attention mask: held from the first checkpointed block
     * that reads it (its input) to the end of that block's backward */
    uint64_t work = r->nodes[n].work_bytes, mask = r->nodes[n].mask_bytes;
    if (mask > 0 && m == FM_TRAIN && S->mask_id == NONE && S->mask_ck != NONE &&
        S->ck_of[n] != NONE && sim_ev_alloc(S, MEMEST_CAT_SAVED, n, mask, &S->mask_id) != 0)
        return -1;
    if (S->mask_id != NONE)
        work = work > mask ? work - mask : 0;
    bool first = r->nodes[n].work_first;   /* the workspace's peak before the storages */
    if (first && !fused && !cached && sim_ev_transient(S, MEMEST_CAT_TRANSIENT, n, work) != 0)
        return -1;
    for (uint32_t s = *sfirst; !fused && s < S->ns && r->storages[s].node == n; s++) {
        const struct memest_storage *st = &r->storages[s];
        if (persistent_kind(st->kind) || S->sid[s] != NONE || S->alias[s] != NONE)
            continue;
        bool keep = kept(S, s, m, k);
        if (st->kind == MEMEST_ST_EXTRA && !keep) {
            /* an op-internal tensor nobody keeps (a no-grad dropout mask) */
            if (sim_ev_transient(S, MEMEST_CAT_TRANSIENT, n, st->bytes) != 0)
                return -1;
            continue;
        }
        bool saved = m == FM_TRAIN ? S->release[s] != NONE || sim_sac(S, s) || sim_offload_holds(S, s)
                     : m == FM_RECOMPUTE ? S->relin[s] != NONE && S->relin[s] <= k->last
                                         : false;
        if (sim_alloc_storage(S, s, saved ? MEMEST_CAT_SAVED : MEMEST_CAT_TRANSIENT, n) != 0)
            return -1;
    }
    if (!first && !fused && !cached && sim_ev_transient(S, MEMEST_CAT_TRANSIENT, n, work) != 0)
        return -1;
    if (m == FM_TRAIN && sim_offload_pack(S, n) != 0)
        return -1;
    for (uint32_t s = S->fhead[n]; s != NONE; s = S->fnext[s]) {
        if (param_cast(r, s))
            continue;   /* cached until autocast exits */
        if (m == FM_RECOMPUTE && (r->storages[s].node < k->first || r->storages[s].node > k->last))
            continue;
        if (!kept(S, s, m, k) && sim_free_storage(S, s, n) != 0)
            return -1;
    }
    return 0;
}

/* Frees the autocast parameter copies nobody saved (the cache is cleared
 * when autocast exits). */
int sim_clear_cast_cache(struct sim *S, uint32_t lo, uint32_t hi, enum fmode m,
                            const struct ckpt *k)
{
    const struct memest_run *r = S->r;
    if (!r->opts.amp)
        return 0;
    for (uint32_t s = S->sfirst[lo]; s < S->sfirst[hi + 1]; s++) {
        if (!param_cast(r, s) || S->sid[s] == NONE)
            continue;
        if (!(m == FM_TRAIN && (S->release[s] != NONE || sim_offload_holds(S, s))) &&
            !(m == FM_RECOMPUTE && S->relin[s] != NONE && S->relin[s] <= k->last) &&
            sim_free_storage(S, s, NONE) != 0)
            return -1;
    }
    return 0;
}

int sim_forward(struct sim *S, enum fmode m)
{
    uint32_t sfirst = 0;
    S->ph = (uint8_t)((S->ph & WARM) | MEMEST_PH_FORWARD);
    /* nodes of a checkpointed block run without grad: S->release already
     * leaves their tensors unsaved and keeps the block's inputs */
    /* --generate: the plan's events around the nodes, and no node from its
     * stop on (sim_generate.c) */
    uint32_t stop = S->gen && S->gen->stop < S->nn ? S->gen->stop : S->nn;
    if (m == FM_TRAIN)
        sim_offload_forward_begin(S);
    for (uint32_t n = 0; n < stop; n++)
        if (sim_gen_events(S, MEMEST_GEN_PRE, n) != 0 || SIM_EXT(S, fwd_enter, S, n) != 0 ||
            (m == FM_TRAIN && sim_offload_ck_pack(S, n, false) != 0) ||
            sim_forward_node(S, n, m, NULL, &sfirst) != 0 ||
            (m == FM_TRAIN && sim_offload_ck_pack(S, n, true) != 0) ||
            SIM_EXT(S, fwd_leave, S, n) != 0 || sim_gen_events(S, MEMEST_GEN_POST, n) != 0)
            return -1;
    return sim_gen_events(S, MEMEST_GEN_TAIL, stop) || SIM_EXT(S, fwd_end, S) ? -1 : 0;
}
