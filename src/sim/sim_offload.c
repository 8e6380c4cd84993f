/* sim_offload.c - --activation-offload: torchtune's OffloadActivations
 * around the model's forward (sim_internal.h), with its defaults
 * (use_pin_memory, use_streams, max_fwd_stash_size 5, min_offload_size
 * 1024). Cited at pytorch/torchtune@v0.6.1:torchtune/training/
 * _activation_offloading.py (TT:line):
 *
 *   which   every tensor autograd saves during the forward is packed
 *           (pack_tensor, TT:133-200) and takes an id (TT:146, every pack,
 *           offloaded or not); it is offloaded when its bytes (element_size *
 *           nelement) are >= 1024 and it is no nn.Parameter nor nn.Buffer
 *           instance (TT:150-153). F.linear's mm/addmm save weight.t(), a
 *           view, no Parameter: the weight is offloaded too
 *           (memest_op_desc.saves_weight_view); a module's registered buffer
 *           is a plain tensor (register_buffer makes no nn.Buffer) and the
 *           model's input a user tensor: they are copied to the host, their
 *           device storage stays (OFF_COPY); the activations are moved
 *           (OFF_MOVE). Not packed here: the output head's saves
 *           (get_act_offloading_ctx_manager, TT:396-418: model.output's
 *           forward under NoOpManager, TT:356-370; here the node making the
 *           model's last output), the saves inside a checkpointed block (the
 *           checkpoint's own saved_tensors_hooks are innermost), the loss's
 *           (the recipe enters the manager around self._model(**batch) only);
 *   forward the host copy is made on the side stream and the device tensor
 *           kept in fwd_stash (TT:189-193) until a later offloaded pack
 *           whose id is >= its id + 5 waits for its copy and drops it
 *           (TT:155-163); autograd itself keeps only the id, so an activation
 *           no forward op reads any more dies then; those still in fwd_stash
 *           when the forward ends stay until the post-hook of the first
 *           backward node that unpacks an offloaded tensor (TT:328-332);
 *   backward a node's offloaded saves are unpacked as it runs
 *           (unpack_tensor_with_streams, TT:227-346): one still in fwd_stash
 *           is used as it is (TT:269-271), the others copied back to the
 *           device (TT:273-282) and kept in bwd_tensor_stash until the
 *           post-hook of the next node that unpacks one (prev_node_ids,
 *           TT:263-266, 334-338), the last ones until the backward's end (the
 *           queued callback, TT:233-242). The host copy goes at unpack (the
 *           tracker's entry, TT:345). There is no prefetch of a later node's
 *           tensors in v0.6.1: each copy starts at its node's unpack. The
 *           record_stream branch (TT:316-323: a node's output viewing what it
 *           unpacked) is not modelled.
 * The transfers (offload_d2h, offload_h2d: one micro-batch's) are timed by
 * src/card/roofline.c. */
#include <stdlib.h>

#include "sim_internal.h"

#define MIN_OFFLOAD 1024u   /* min_offload_size (TT:71) */
#define MAX_STASH 5u        /* max_fwd_stash_size (TT:70) */

/* torchtune's model.output (TT:402-418): the linear layer the model's last
 * output is (through views and casts), else the node making it. */
static uint32_t head_node(const struct sim *S)
{
    int64_t h = memest_graph_output_head(S->g);
    return h >= 0 ? (uint32_t)h : S->g->outputs[S->g->noutputs - 1].node;
}

/* What a pack of storage s becomes under the offloading (TT:150-153);
 * weight_view: packed as F.linear's weight.t(), no Parameter. */
static uint8_t pack_kind(const struct sim *S, uint32_t s, bool weight_view)
{
    const struct memest_storage *st = &S->r->storages[s];
    if (st->bytes < MIN_OFFLOAD)
        return OFF_NONE;
    if (st->kind == MEMEST_ST_PARAM)
        return weight_view ? OFF_COPY : OFF_NONE;
    return persistent_kind(st->kind) ? OFF_COPY : OFF_MOVE;
}

/* What node n's save k becomes. */
static uint8_t save_kind(const struct sim *S, uint32_t n, uint32_t k)
{
    return pack_kind(S, S->r->saves[k], S->g->nodes[n].op->saves_weight_view);
}

/* The weight F.linear's mm/addmm saves as weight.t() (the node's first
 * parameter, saved when input 0 needs its gradient), which the run lists
 * among the node's saves only as its autocast copy: NONE without one or
 * under autocast (the copy is then one of the saves, an activation). */
static uint32_t weight_view(const struct sim *S, uint32_t n)
{
    const struct memest_run *r = S->r;
    const struct memest_nodeinfo *ni = &r->nodes[n];
    if (!S->g->nodes[n].op->saves_weight_view || r->opts.amp || !ni->nparam ||
        !S->g->nodes[n].nin || !r->values[node_in(r, n, 0)->src].requires_grad)
        return NONE;
    uint32_t s = r->params[ni->param_first].storage;
    return r->storages[s].bytes >= MIN_OFFLOAD ? s : NONE;
}

/* Whether node n's saves are packed by OffloadActivations. */
static bool packs(const struct sim *S, uint32_t n)
{
    const struct memest_nodeinfo *ni = &S->r->nodes[n];
    return ni->needs_grad && S->reach[n] && !fused_node(S, n) && S->ck_of[n] == NONE &&
           n != S->off_head;
}

int sim_offload_setup(struct sim *S)
{
    const struct memest_run *r = S->r;
    if (!S->cfg->act_offload || S->inference)
        return 0;
    size_t ns = S->ns ? S->ns : 1, nk = r->nsaves ? r->nsaves : 1;
    S->off = calloc(nk, 1);
    S->ocount = calloc(ns, sizeof *S->ocount);
    S->opend = calloc(ns, sizeof *S->opend);
    S->stash = calloc(ns, sizeof *S->stash);
    size_t nq = nk + S->nn + S->nck;   /* the saves, a weight per node, a block's argument */
    S->fq = malloc(nq * sizeof *S->fq);
    S->fq_n = malloc(nq * sizeof *S->fq_n);
    S->fq_id = malloc(nq * sizeof *S->fq_id);
    S->fq_k = malloc(nq);
    S->off_head = head_node(S);
    S->ck_off = calloc(S->nck ? S->nck : 1, 1);
    if (!S->off || !S->ocount || !S->opend || !S->stash || !S->fq || !S->fq_n || !S->fq_id ||
        !S->fq_k || !S->ck_off)
        return sim_nomem(S);
    /* a checkpoint saves its positional tensor arguments under the hooks
     * around it (PyTorch 2.6 torch/utils/checkpoint.py): the non-reentrant
     * one with _NoopSaveInputs.apply(dummy, kwargs, *args) as the block
     * starts (_checkpoint_without_reentrant_generator), the reentrant one
     * with CheckpointFunction.forward's ctx.save_for_backward(*tensor_inputs),
     * packed when the Function's forward has returned, after the block ran
     * under no_grad; transformers 5.x passes only hidden_states positionally
     * (GradientCheckpointingLayer.__call__: partial(super().__call__,
     * **kwargs), *args) */
    for (uint32_t c = 0; c < S->nck; c++) {
        S->ck_off[c] = pack_kind(S, S->ck[c].arg, false);
        if (S->ck_off[c] == OFF_MOVE)
            S->ocount[S->ck[c].arg]++;
    }
    for (uint32_t n = 0; n < S->nn; n++) {
        const struct memest_nodeinfo *ni = &r->nodes[n];
        if (!packs(S, n))
            continue;
        for (uint32_t k = ni->save_first; k < ni->save_first + ni->nsave; k++) {
            S->off[k] = save_kind(S, n, k);
            if (S->off[k] == OFF_MOVE)
                S->ocount[r->saves[k]] += r->save_packs ? r->save_packs[k] : 1;
        }
    }
    return 0;
}

void sim_offload_free(struct sim *S)
{
    free(S->off);
    free(S->ocount);
    free(S->opend);
    free(S->stash);
    free(S->fq);
    free(S->fq_n);
    free(S->fq_id);
    free(S->fq_k);
    free(S->bq);
    free(S->ck_off);
}

void sim_offload_forward_begin(struct sim *S)
{
    if (!S->off)
        return;
    for (uint32_t s = 0; s < S->ns; s++)
        S->opend[s] = S->ocount[s];
    if (!(S->ph & WARM))   /* the transfers of the last micro-batch */
        S->d2h = S->h2d = 0;
}

/* fwd_stash drops its entry at fq_head: the storage dies when nothing else
 * holds it. backward: the autograd release of the storage already passed
 * (at node n or later: the nodes run from the last) and the autocast cache
 * was cleared; in the forward both are still ahead, and the storage is dead
 * only when no forward op reads it any more (lastuse before n). */
static int stash_drop(struct sim *S, uint32_t n, bool backward)
{
    const struct memest_run *r = S->r;
    uint32_t s = S->fq[S->fq_head];
    if (S->fq_k[S->fq_head++] != OFF_MOVE || --S->stash[s] || S->opend[s] || S->sid[s] == NONE ||
        sim_held(S, s))
        return 0;
    bool dead = backward ? S->release[s] == NONE || S->release[s] >= n
                         : S->release[s] == NONE && !sim_sac(S, s) && !param_cast(r, s) &&
                               S->lastuse[s] < n;
    return dead ? sim_free_storage(S, s, n) : 0;
}

/* Node n's pack i: its saves, each as many times as the op's autograd
 * nodes save it (run.save_packs), then the weight of weight_view; the
 * storage and what the offloading does with it; false past the last. */
static bool node_pack_at(const struct sim *S, uint32_t n, uint32_t i, uint32_t *s, uint8_t *kind,
                         bool *late)
{
    const struct memest_run *r = S->r;
    const struct memest_nodeinfo *ni = &r->nodes[n];
    for (uint32_t k = ni->save_first; k < ni->save_first + ni->nsave; k++) {
        uint32_t np = r->save_packs ? r->save_packs[k] : 1;
        if (i < np) {
            *s = r->saves[k];
            *kind = S->off[k];
            *late = k - ni->save_first < ni->late_saves;
            return true;
        }
        i -= np;
    }
    *s = i == 0 ? weight_view(S, n) : NONE;
    *kind = OFF_COPY;
    *late = false;
    return *s != NONE;
}

static bool node_pack(const struct sim *S, uint32_t n, uint32_t i, uint32_t *s, uint8_t *kind)
{
    bool late;
    return node_pack_at(S, n, i, s, kind, &late);
}

static void host_add(struct sim *S, uint64_t b)
{
    S->host_now = memest_sat_add(S->host_now, b);
    if (S->host_now > S->host_peak)
        S->host_peak = S->host_now;
    if (!(S->ph & WARM))
        S->d2h = memest_sat_add(S->d2h, b);
}

/* One pack (pack_tensor) of storage s at node n: its id, and when it is
 * offloaded, fwd_stash's older entries dropped and its own added. */
static int pack_one(struct sim *S, uint32_t n, uint32_t s, uint8_t kind)
{
    uint32_t id = ++S->pack_id;
    if (kind == OFF_NONE)
        return 0;
    while (S->fq_head < S->fq_tail && S->fq_id[S->fq_head] + MAX_STASH <= id)
        if (stash_drop(S, n, false) != 0)
            return -1;
    host_add(S, S->r->storages[s].bytes);
    if (kind == OFF_MOVE) {
        S->opend[s]--;
        S->stash[s]++;
    }
    S->fq[S->fq_tail] = s;
    S->fq_n[S->fq_tail] = n;
    S->fq_k[S->fq_tail] = kind;
    S->fq_id[S->fq_tail++] = id;
    return 0;
}

int sim_offload_pack(struct sim *S, uint32_t n)
{
    uint32_t s;
    uint8_t kind;
    if (!S->off || !packs(S, n))
        return 0;
    for (uint32_t i = 0; node_pack(S, n, i, &s, &kind); i++)
        if (pack_one(S, n, s, kind) != 0)
            return -1;
    return 0;
}

/* _NoopSaveInputs saves (dummy, *args): the empty dummy takes an id, then
 * the argument (fwd_stash's entry under the block's first node); the
 * reentrant checkpoint's save_for_backward the argument alone, after the
 * block (end). */
int sim_offload_ck_pack(struct sim *S, uint32_t n, bool end)
{
    uint32_t c = S->off ? S->ck_of[n] : NONE;
    if (c == NONE || end == S->ck_nonreentrant || n != (end ? S->ck[c].last : S->ck[c].first))
        return 0;
    if (S->ck_nonreentrant)
        S->pack_id++;
    return pack_one(S, S->ck[c].first, S->ck[c].arg, S->ck_off[c]);
}

static bool in_fwd_stash(const struct sim *S, uint32_t n, uint32_t s)
{
    for (uint32_t i = S->fq_head; i < S->fq_tail; i++)
        if (S->fq[i] == s && S->fq_n[i] == n)
            return true;
    return false;
}

/* One unpack of storage s packed at node n, at node at's backward: its
 * host copy goes; it is used as it is while fwd_stash holds it, else a
 * copy comes back into bwd_tensor_stash. */
static int unpack_one(struct sim *S, uint32_t n, uint32_t at, uint32_t s)
{
    uint64_t b = S->r->storages[s].bytes;
    S->host_now -= b < S->host_now ? b : S->host_now;
    if (in_fwd_stash(S, n, s))
        return 0;
    if (sim_grow_u32(&S->bq, &S->capbq, S->nbq + 1) != 0 ||
        sim_ev_alloc(S, MEMEST_CAT_SAVED, at, b, &S->bq[S->nbq]) != 0)
        return -1;
    S->nbq++;
    if (!(S->ph & WARM))
        S->h2d = memest_sat_add(S->h2d, b);
    return 0;
}

int sim_offload_unpack(struct sim *S, uint32_t n, bool late)
{
    uint32_t s;
    uint8_t kind;
    bool at_end;
    if (!S->off || !packs(S, n))
        return 0;
    for (uint32_t i = 0; node_pack_at(S, n, i, &s, &kind, &at_end); i++)
        if (kind != OFF_NONE && at_end == late && unpack_one(S, n, n, s) != 0)
            return -1;
    return 0;
}

/* The recomputation reads ctx.saved_tensors of _NoopSaveInputs's node
 * inside the unpack of the block's first node needing a saved tensor:
 * that node's post-hook is the one registered (sim_offload_hook). The
 * reentrant CheckpointFunction.backward reads its own ctx.saved_tensors:
 * its node's post-hook comes when the block's backward is done
 * (sim_offload_ck_done). */
int sim_offload_ck_unpack(struct sim *S, uint32_t c)
{
    if (!S->off || S->ck_off[c] == OFF_NONE)
        return 0;
    S->ck_hook = S->ck_nonreentrant;
    return unpack_one(S, S->ck[c].first, S->ck[c].last, S->ck[c].arg);
}

/* Whether node n unpacks an offloaded save (early ones only: early). */
static bool unpacks(const struct sim *S, uint32_t n, bool early)
{
    uint32_t s;
    uint8_t kind;
    bool late, any = false;
    for (uint32_t i = 0; packs(S, n) && node_pack_at(S, n, i, &s, &kind, &late); i++)
        any |= kind != OFF_NONE && !(early && late);
    return any;
}

/* The post-hook of a node that unpacked (TT:328-338): fwd_stash emptied,
 * the previous unpacking node's copies freed. */
static int post_hook(struct sim *S, uint32_t n)
{
    while (S->fq_head < S->fq_tail)
        if (stash_drop(S, n, true) != 0)
            return -1;
    S->fq_head = S->fq_tail = 0;
    for (uint32_t i = 0; i < S->nbprev; i++)
        if (sim_ev_free(S, n, S->bq[i]) != 0)
            return -1;
    for (uint32_t i = S->nbprev; i < S->nbq; i++)
        S->bq[i - S->nbprev] = S->bq[i];
    S->nbq -= S->nbprev;
    S->nbprev = S->nbq;
    return 0;
}

int sim_offload_hook(struct sim *S, uint32_t n)
{
    if (!S->off)
        return 0;
    bool any = (S->ck_hook && S->r->nodes[n].nsave > 0) || unpacks(S, n, false);
    if (!any)
        return 0;
    S->ck_hook = false;
    return post_hook(S, n);
}

int sim_offload_ck_done(struct sim *S, uint32_t c)
{
    if (!S->off || S->ck_nonreentrant || S->ck_off[c] == OFF_NONE)
        return 0;
    return post_hook(S, S->ck[c].first);
}

int sim_offload_inner_hook(struct sim *S, uint32_t n)
{
    if (!S->off || !S->r->nodes[n].late_saves || !unpacks(S, n, true))
        return 0;
    return post_hook(S, n);
}

uint64_t sim_offload_held_early(const struct sim *S, uint32_t n)
{
    return S->off && unpacks(S, n, true) ? S->r->nodes[n].bwd_early_release : 0;
}

int sim_offload_backward_end(struct sim *S)
{
    if (!S->off)
        return 0;
    while (S->fq_head < S->fq_tail)
        if (stash_drop(S, 0, true) != 0)
            return -1;
    S->fq_head = S->fq_tail = 0;
    for (uint32_t i = 0; i < S->nbq; i++)
        if (sim_ev_free(S, NONE, S->bq[i]) != 0)
            return -1;
    S->nbq = S->nbprev = 0;
    S->ck_hook = false;
    return 0;
}
