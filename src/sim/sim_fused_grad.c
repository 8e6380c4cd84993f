/* sim_fused_grad.c - the gradients of fused parameters read per slice
 * (graph.h: fuse_group; models/README.md "fused_params"): one nn.Parameter
 * [E, ...] that the model reads through a select per slice, as
 * transformers' fused experts read self.gate_up_proj[expert_idx], written
 * in the model as E layers with a parameter each (the members).
 *
 * A member's slice gradient (the linear's, or after ToCopyBackward under
 * autocast) goes to SelectBackward, which makes a zero-filled gradient of
 * the whole fused parameter and copies the slice into it
 * (select_backward: at::zeros(sizes).select(dim, index).copy_(grad)); the
 * slice gradient goes when it returns. The E select gradients all go to
 * the fused parameter's one AccumulateGrad, whose input buffer keeps the
 * first (the first member the backward reaches: the whole size at once)
 * and adds each later one in place (InputBuffer::accumulate, old.add_(new):
 * a transient of the whole size each). AccumulateGrad runs when the last
 * member's is in: it steals the buffer as .grad when the parameter has none,
 * else adds it in place and drops it (--grad-accum's second micro-batch,
 * --zero-grad zeros: the buffer is then a whole-size tensor besides .grad
 * from the first member to the last). The fused parameter's bytes are its
 * members' on this rank (the experts of --ep's rank); frozen members (LoRA's
 * base) make no gradient at all. DeepSpeed ZeRO-2/3 take the whole gradient
 * when AccumulateGrad runs, once (sim_dist.c); FSDP's reduce-scatter frees
 * the .grad with its unit's. The optimizer still sees the members one by
 * one (their .grad: the fused one), as before: its step is unchanged. */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

static uint32_t *nones(size_t n)
{
    uint32_t *p = malloc(sizeof *p * n);
    if (p)
        memset(p, 0xFF, sizeof *p * n);
    return p;
}

/* Member node n of group g (first node lead) joins: its parameters'
 * storages map to the group's (parameter k is a slice of the group's k-th:
 * the members are copies, the same parameters in the same order). */
static void join(struct sim *S, uint32_t n, uint32_t lead)
{
    const struct memest_run *r = S->r;
    const struct memest_nodeinfo *ni = &r->nodes[n], *li = &r->nodes[lead];
    bool reached = S->reach[n] && ni->needs_grad;
    for (uint32_t k = 0; k < ni->nparam && k < li->nparam; k++) {
        const struct memest_param *pp = &r->params[ni->param_first + k];
        const struct memest_param *lp = &r->params[li->param_first + k];
        if (pp->tied_to >= 0 || !pp->trainable || strcmp(pp->name, lp->name) != 0)
            continue;
        uint32_t ls = lp->storage;
        S->flead[pp->storage] = ls;
        S->fgb[ls] = memest_sat_add(S->fgb[ls], r->storages[pp->storage].bytes);
        S->fcnt[ls] += reached;
    }
}

int sim_fused_grad_setup(struct sim *S)
{
    uint32_t ng = 0;
    for (uint32_t n = 0; n < S->nn; n++)
        if (S->g->nodes[n].fuse_group > ng)
            ng = S->g->nodes[n].fuse_group;
    if (ng == 0 || S->inference)
        return 0;
    size_t ns = S->ns ? S->ns : 1;
    uint32_t *lead = nones((size_t)ng + 1);   /* group -> its first node */
    S->flead = nones(ns);
    S->fg = nones(ns);
    S->fb = nones(ns);
    S->fgb = calloc(ns, sizeof *S->fgb);
    S->fcnt = calloc(ns, sizeof *S->fcnt);
    S->fleft = calloc(ns, sizeof *S->fleft);
    if (!lead || !S->flead || !S->fg || !S->fb || !S->fgb || !S->fcnt || !S->fleft) {
        free(lead);
        return sim_nomem(S);
    }
    for (uint32_t n = 0; n < S->nn; n++) {
        uint32_t g = S->g->nodes[n].fuse_group;
        if (g == 0)
            continue;
        if (lead[g] == NONE)
            lead[g] = n;
        join(S, n, lead[g]);
    }
    free(lead);
    return 0;
}

void sim_fused_grad_free(struct sim *S)
{
    free(S->flead);
    free(S->fgb);
    free(S->fg);
    free(S->fb);
    free(S->fcnt);
    free(S->fleft);
}

/* AccumulateGrad of group storage ls: its buffer to .grad. */
static int accumulate_group(struct sim *S, uint32_t node, uint32_t ls)
{
    uint32_t buf = S->fb[ls];
    S->fb[ls] = NONE;
    return sim_accumulate_into(S, node, ls, buf, &S->fg[ls]);
}

int sim_fused_accumulate(struct sim *S, uint32_t node, uint32_t ps, uint32_t id)
{
    uint32_t ls = S->flead[ps], whole;
    /* SelectBackward: the whole zero-filled gradient, then the slice goes */
    if (sim_ev_alloc(S, MEMEST_CAT_GRADS, node, S->fgb[ls], &whole) != 0 ||
        sim_ev_free(S, node, id) != 0)
        return -1;
    if (S->fb[ls] == NONE)
        S->fb[ls] = whole;          /* the input buffer keeps the first */
    else if (sim_ev_free(S, node, whole) != 0)   /* old.add_(new) */
        return -1;
    if (S->fleft[ls] > 0 && --S->fleft[ls] > 0)
        return 0;
    return accumulate_group(S, node, ls);   /* the last member's is in */
}

void sim_fused_backward_begin(struct sim *S)
{
    if (S->fleft)
        memcpy(S->fleft, S->fcnt, sizeof *S->fleft * (S->ns ? S->ns : 1));
}

int sim_fused_backward_end(struct sim *S)
{
    for (uint32_t s = 0; S->fb && s < S->ns; s++)
        if (S->fb[s] != NONE && accumulate_group(S, NONE, s) != 0)
            return -1;
    return 0;
}

int sim_fused_zero_grad(struct sim *S)
{
    for (uint32_t s = 0; S->fg && s < S->ns; s++)
        if (S->fg[s] != NONE) {
            if (sim_ev_free(S, NONE, S->fg[s]) != 0)
                return -1;
            S->fg[s] = NONE;
        }
    return 0;
}
