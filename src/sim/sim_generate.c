/* sim_generate.c - --generate: the tensors that transformers' generate()
 * and its KV cache add to a no-grad forward pass (sim.h: struct
 * memest_gen_plan). The plan is written by src/calc/generate.c; here it is
 * only run: its SETUP events with the parameters, its PRE and POST events
 * around the node they name, its TAIL after the last node run. The forward
 * itself (sim_forward.c) stops at the plan's `stop` node, and the storages
 * the plan keeps are held like the caller's output (sim_analysis.c). */
#include "sim_internal.h"

/* The model's forward() returns: every storage of the pass still alive goes
 * (the hidden states the output head read, ...), except what the cache
 * keeps and the parameters, buffers and inputs. */
static int forward_returns(struct sim *S)
{
    const struct memest_run *r = S->r;
    for (uint32_t s = 0; s < S->ns; s++) {
        if (S->sid[s] == NONE || persistent_kind(r->storages[s].kind))
            continue;
        if (S->gen->keep && S->gen->keep[s])
            continue;
        if (sim_free_storage(S, s, NONE) != 0)
            return -1;
    }
    return 0;
}

static int run_event(struct sim *S, const struct memest_gen_event *e)
{
    if (e->slot >= S->gen->nslots && e->op != MEMEST_GEN_RETURN)
        return memest_errf(S->err, MEMEST_ERR_INTERNAL, NULL, "internal: generation slot %u",
                           e->slot);
    uint32_t node = e->at == MEMEST_GEN_PRE || e->at == MEMEST_GEN_POST ? e->node : NONE;
    switch (e->op) {
    case MEMEST_GEN_ALLOC:
        return sim_ev_alloc(S, e->cat, node, e->bytes, &S->gen_ids[e->slot]);
    case MEMEST_GEN_FREE:
        if (sim_ev_free(S, node, S->gen_ids[e->slot]) != 0)
            return -1;
        S->gen_ids[e->slot] = NONE;
        return 0;
    case MEMEST_GEN_RETURN:
        return forward_returns(S);
    }
    return memest_errf(S->err, MEMEST_ERR_INTERNAL, NULL, "internal: generation event %u", e->op);
}

int sim_gen_setup(struct sim *S)
{
    S->gen_next = 0;
    if (!S->gen)
        return 0;
    S->ph = MEMEST_PH_SETUP;
    for (; S->gen_next < S->gen->nev && S->gen->ev[S->gen_next].at == MEMEST_GEN_SETUP;
         S->gen_next++)
        if (run_event(S, &S->gen->ev[S->gen_next]) != 0)
            return -1;
    return 0;
}

int sim_gen_events(struct sim *S, uint8_t at, uint32_t n)
{
    if (!S->gen)
        return 0;
    for (; S->gen_next < S->gen->nev; S->gen_next++) {
        const struct memest_gen_event *e = &S->gen->ev[S->gen_next];
        if (e->at != at || (at != MEMEST_GEN_TAIL && e->node != n))
            break;
        if (run_event(S, e) != 0)
            return -1;
    }
    return 0;
}
