/* sim_analysis.c - what the simulator works out before the step: the nodes a
 * gradient reaches, the checkpointed block instances, each storage's last
 * forward use and the node whose backward releases it (sim_internal.h). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

/* ---- static analysis ---- */

/* Nodes that a gradient reaches from the loss. */
int sim_analyze_reach(struct sim *S, uint8_t *vreach)
{
    const struct memest_run *r = S->r;
    uint32_t root = root_value(S);
    if (r->values[root].requires_grad && S->loss != MEMEST_LOSS_COUNT)
        vreach[root] = 1;
    for (uint32_t n = S->nn; n-- > 0;) {
        const struct memest_nodeinfo *ni = &r->nodes[n];
        bool any = false;
        for (uint32_t k = 0; k < ni->nout; k++)
            any |= vreach[ni->out_first + k] != 0;
        if (!any || !ni->needs_grad)
            continue;
        S->reach[n] = 1;
        for (uint32_t i = 0; i < S->g->nodes[n].nin; i++) {
            const struct memest_nodein *in = node_in(r, n, i);
            if (in->grad != MEMEST_GRAD_NONE && r->values[in->src].requires_grad)
                vreach[in->src] = 1;
        }
    }
    return 0;
}

static bool name_matches(const struct memest_block_inst *b, const char *want)
{
    if (strcmp(b->name, want) == 0 || strcmp(b->type, want) == 0)
        return true;
    size_t n = strlen(want);   /* "h" selects the repeated instances "h.0", "h.1", ... */
    if (strncmp(b->name, want, n) != 0 || b->name[n] != '.' || !b->name[n + 1])
        return false;
    for (const char *p = b->name + n + 1; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    return true;
}

static int by_first(const void *a, const void *b)
{
    const struct memest_block_inst *x = a, *y = b;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return x->last > y->last ? -1 : x->last < y->last ? 1 : 0;
}

/* --checkpoint-policy torchtitan-op: the storages the selective
 * checkpoint's cache keeps (the outputs of the saved ops: the node's output
 * and what it makes after it, not its operand copies), where nothing
 * outside the block keeps them too (those are recomputed as a full
 * checkpoint would). */
int sim_analyze_sac(struct sim *S)
{
    const struct memest_run *r = S->r;
    if (S->nck == 0 || S->cfg->checkpoint_policy != MEMEST_CKPT_TORCHTITAN_OP)
        return 0;
    S->sac = calloc(S->ns ? S->ns : 1, 1);
    if (!S->sac)
        return sim_nomem(S);
    for (uint32_t c = 0; c < S->nck; c++) {
        const struct ckpt *k = &S->ck[c];
        uint32_t mm = 0;
        for (uint32_t n = k->first; n <= k->last; n++) {
            const struct memest_nodeinfo *ni = &r->nodes[n];
            if (!memest_ckpt_keeps(S->cfg, ni->sac, &mm) || ni->nout == 0)
                continue;
            uint32_t out = r->values[ni->out_first].storage;
            for (uint32_t s = S->sfirst[n]; s < S->sfirst[n + 1]; s++) {
                uint8_t kind = r->storages[s].kind;
                if (s >= out && (kind == MEMEST_ST_ACT || kind == MEMEST_ST_EXTRA) &&
                    S->release[s] == NONE && S->lastuse[s] <= k->last && S->held[s] == HELD_NONE)
                    S->sac[s] = 1;
            }
        }
    }
    return 0;
}

/* The top-level block instances into sel in model order, every
 * c->checkpoint_every-th (torchtitan v0.2.0 activation_checkpoint.py
 * _apply_layer_sac: _layer_sac_count counts the blocks from 1 and wraps one
 * when the count % ac_freq is 0), all of them without it. */
static uint32_t top_level(const struct memest_graph *g, const struct memest_step_cfg *c,
                          struct memest_block_inst *sel)
{
    uint32_t nsel = 0;
    for (uint32_t b = 0; b < g->nblocks; b++)
        if (g->blocks[b].depth == 0)
            sel[nsel++] = g->blocks[b];
    qsort(sel, nsel, sizeof *sel, by_first);
    uint32_t k = 0;
    for (uint32_t i = 0; i < nsel; i++)
        if (memest_ckpt_selects(c, i))
            sel[k++] = sel[i];
    return k;
}

/* The checkpointed block instances: every top-level instance (every N-th
 * with --checkpoint-every), or those named (instance, block or
 * repeated-node name), outermost first. */
int sim_analyze_checkpoint(struct sim *S)
{
    const struct memest_step_cfg *c = S->cfg;
    if (!c->checkpoint || S->inference)
        return 0;
    S->ck_nonreentrant = memest_ckpt_nonreentrant(c);
    S->ck_early_stop = memest_ckpt_early_stop(c);
    const struct memest_graph *g = S->g;
    struct memest_block_inst *sel = malloc(sizeof *sel * (g->nblocks ? g->nblocks : 1));
    if (!sel)
        return sim_nomem(S);
    uint32_t nsel = 0;
    for (int k = 0; k < c->ncheckpoint_names; k++) {
        bool found = false;
        for (uint32_t b = 0; b < g->nblocks; b++) {
            if (name_matches(&g->blocks[b], c->checkpoint_names[k])) {
                found = true;
                sel[nsel++] = g->blocks[b];
            }
            if (nsel == g->nblocks)
                break;
        }
        if (!found) {
            free(sel);
            return memest_errf(S->err, MEMEST_ERR_USAGE, NULL,
                               "--checkpoint: the model has no block instance or block called "
                               "\"%s\"", c->checkpoint_names[k]);
        }
    }
    if (c->ncheckpoint_names == 0)
        nsel = top_level(g, c, sel);
    if (nsel == 0 && c->checkpoint_every > 1 && g->nblocks > 0) {
        free(sel);
        return memest_errf(S->err, MEMEST_ERR_USAGE, NULL,
                           "--checkpoint-every %u: the model has fewer top-level blocks, so none "
                           "would be checkpointed", (unsigned)c->checkpoint_every);
    }
    if (nsel == 0) {
        free(sel);
        return memest_errf(S->err, MEMEST_ERR_USAGE, NULL,
                           "--checkpoint: the model has no blocks (activation checkpointing "
                           "recomputes block instances)");
    }
    qsort(sel, nsel, sizeof *sel, by_first);
    S->ck = malloc(sizeof *S->ck * nsel);
    if (!S->ck) {
        free(sel);
        return sim_nomem(S);
    }
    uint32_t end = 0;
    bool any = false;
    for (uint32_t i = 0; i < nsel; i++) {
        if (any && sel[i].first <= end)
            continue;   /* nested in (or the same as) one already chosen */
        const struct memest_nodeinfo *an = &S->r->nodes[sel[i].arg.node];
        S->ck[S->nck++] = (struct ckpt){sel[i].first, sel[i].last,
                                        S->r->values[an->out_first + sel[i].arg.out].storage};
        for (uint32_t n = sel[i].first; n <= sel[i].last; n++) {
            S->ck_of[n] = S->nck - 1;
            if (S->r->nodes[n].mask_bytes > 0 && S->mask_ck == NONE)
                S->mask_ck = S->nck - 1;
        }
        end = sel[i].last;
        any = true;
    }
    free(sel);
    return 0;
}

/* Forward liveness: a storage lives until its last reader, and a block
 * instance's inputs until the instance's last node (a module's forward()
 * arguments are referenced until it returns: by the caller's frame, or the
 * loop variable of nn.Sequential). */
void sim_analyze_lastuse(struct sim *S)
{
    const struct memest_run *r = S->r;
    for (uint32_t s = 0; s < S->ns; s++)
        S->lastuse[s] = r->storages[s].node;
    for (uint32_t n = 0; n < S->nn; n++) {
        for (uint32_t i = 0; i < S->g->nodes[n].nin; i++) {
            const struct memest_nodein *in = node_in(r, n, i);
            uint32_t a = r->values[in->src].storage, b = r->values[in->value].storage;
            if (S->lastuse[a] < n)
                S->lastuse[a] = n;
            if (S->lastuse[b] < n)
                S->lastuse[b] = n;
        }
    }
    /* "held_until": "NAME": a Python local alive until the code reaches
     * NAME (memest-export observes when its last reference dies) */
    for (uint32_t n = 0; n < S->nn; n++) {
        uint32_t to = S->g->nodes[n].held_to;
        for (uint32_t o = 0; to && o < r->nodes[n].nout; o++) {
            uint32_t t = r->values[r->nodes[n].out_first + o].storage;
            if (S->lastuse[t] < to)
                S->lastuse[t] = to;
        }
    }
    for (uint32_t b = 0; b < S->g->nblocks; b++) {
        const struct memest_block_inst *k = &S->g->blocks[b];
        for (uint32_t n = k->first; n <= k->last && n < S->nn; n++) {
            for (uint32_t i = 0; i < S->g->nodes[n].nin; i++) {
                uint32_t s = r->values[node_in(r, n, i)->src].storage;
                if (r->storages[s].node < k->first && S->lastuse[s] < k->last)
                    S->lastuse[s] = k->last;
            }
        }
    }
    /* inference runs in eval(): dropout returns its input itself (no output,
     * no mask), so the input lives as long as the output would have */
    if (S->inference) {
        for (uint32_t n = 0; n < S->nn; n++) {
            const struct memest_op_desc *op = S->g->nodes[n].op;
            const struct memest_nodeinfo *ni = &r->nodes[n];
            if (!op->eval_identity || S->g->nodes[n].nin != 1 || ni->nout != 1)
                continue;
            uint32_t in = r->values[node_in(r, n, 0)->src].storage;
            uint32_t out = r->values[ni->out_first].storage;
            while (S->alias[in] != NONE)
                in = S->alias[in];
            if (out == in)
                continue;   /* p = 0: already the input */
            for (uint32_t t = S->sfirst[n]; t < S->sfirst[n + 1]; t++)
                if (r->storages[t].kind == MEMEST_ST_EXTRA)
                    S->alias[t] = in;   /* the mask: not made at all */
            S->alias[out] = in;
            if (S->lastuse[in] < S->lastuse[out])
                S->lastuse[in] = S->lastuse[out];
        }
    }
    /* `out`, the model's last output, is the caller's until the step ends;
     * other outputs are dropped as soon as nothing needs them */
    uint32_t s = r->values[root_value(S)].storage;
    while (S->inference && S->alias[s] != NONE)
        s = S->alias[s];
    S->held[s] = HELD_STEP;
    S->lastuse[s] = S->nn;
    /* "held_until": "output": what the model returns besides (a ModelOutput's
     * logits, its past_key_values), where the caller gets a ModelOutput: the
     * Trainer's compute_loss, and inference; --loop plain, torchtune and
     * torchtitan get the last output alone */
    bool returns = S->inference || S->cfg->loop == MEMEST_LOOP_TRAINER;
    for (uint32_t n = 0; returns && n < S->nn; n++) {
        if (!S->g->nodes[n].held_output)
            continue;
        for (uint32_t o = 0; o < r->nodes[n].nout; o++) {
            uint32_t t = r->values[r->nodes[n].out_first + o].storage;
            while (S->alias[t] != NONE)
                t = S->alias[t];
            if (S->held[t] == HELD_NONE && !persistent_kind(r->storages[t].kind)) {
                S->held[t] = HELD_OUTPUT;
                S->lastuse[t] = S->nn;
                S->held_outputs = true;
            }
        }
    }
    /* --generate: what the KV cache keeps outlives the forward too */
    for (uint32_t t = 0; S->gen && S->gen->keep && t < S->ns; t++) {
        if (!S->gen->keep[t])
            continue;
        uint32_t u = t;
        while (S->alias[u] != NONE)
            u = S->alias[u];
        S->held[u] = HELD_STEP;
        S->lastuse[u] = S->nn;
    }
}

static void push_list(uint32_t *head, uint32_t *next, uint32_t at, uint32_t s)
{
    next[s] = head[at];
    head[at] = s;
}

/* When each storage is released: the earliest node that records and saves
 * it (outside checkpointed blocks), a checkpointed block's first node for the
 * storages the block reads from outside (torch.utils.checkpoint saves its
 * inputs), and for storages made inside a checkpointed block, the earliest
 * inner saver during the recomputation. */
void sim_analyze_release(struct sim *S)
{
    const struct memest_run *r = S->r;
    for (uint32_t n = 0; n < S->nn; n++) {
        const struct memest_nodeinfo *ni = &r->nodes[n];
        if (!ni->needs_grad || !S->reach[n] || fused_node(S, n))
            continue;   /* (the fused linear-ce's nodes save nothing) */
        for (uint32_t k = ni->save_first; k < ni->save_first + ni->nsave; k++) {
            uint32_t s = r->saves[k];
            if (persistent_kind(r->storages[s].kind) || sim_offloaded(S, k))
                continue;   /* (an offloaded save keeps only its host copy) */
            if (S->ck_of[n] == NONE) {
                if (S->release[s] == NONE)
                    S->release[s] = n;
            } else if (S->relin[s] == NONE) {
                S->relin[s] = n;
            }
        }
    }
    for (uint32_t c = 0; c < S->nck; c++) {
        const struct ckpt *k = &S->ck[c];
        for (uint32_t n = k->first; n <= k->last; n++) {
            for (uint32_t i = 0; i < S->g->nodes[n].nin; i++) {
                uint32_t s = r->values[node_in(r, n, i)->src].storage;
                if (r->storages[s].node < k->first && !persistent_kind(r->storages[s].kind) &&
                    !sim_ck_offloaded(S, c, s) &&
                    (S->release[s] == NONE || S->release[s] > k->first))
                    S->release[s] = k->first;
            }
        }
    }
    for (uint32_t s = 0; s < S->ns; s++) {
        if (S->release[s] != NONE)
            push_list(S->rhead, S->rnext, S->release[s], s);
        if (S->relin[s] != NONE && S->ck_of[r->storages[s].node] != NONE)
            push_list(S->ihead, S->inext, S->relin[s], s);
        uint32_t lu = S->lastuse[s];
        if (lu < S->nn && !persistent_kind(r->storages[s].kind))
            push_list(S->fhead, S->fnext, lu, s);
    }
}
