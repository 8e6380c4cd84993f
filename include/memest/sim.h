/* sim.h - the step simulator (src/sim/sim_*.c): one step of PyTorch
 * training (or a no-grad forward pass) as an ordered list of allocations and
 * frees, replayed through the caching-allocator model (alloc.h) to find its
 * peaks. src/sim/sim_internal.h describes the event model. It reads a
 * finished run (run.h) and the step's configuration (step.h); the
 * calculators (calc.h) call it, never the other way round. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memest/alloc.h"
#include "memest/error.h"
#include "memest/run.h"
#include "memest/step.h"
#include "memest/timeline.h"

/* Generation (--generate, src/calc/generate.c): what transformers'
 * generate() adds to a no-grad forward pass, as a small program of
 * allocations and frees the simulator runs around the graph's nodes. */
enum memest_gen_at {
    MEMEST_GEN_SETUP = 0,  /* with the parameters, before the step (a cache that
                              exists before this forward: the decode step's) */
    MEMEST_GEN_PRE,        /* at `node`, before the node's own tensors */
    MEMEST_GEN_POST,       /* at `node`, after them (and its workspace) */
    MEMEST_GEN_TAIL,       /* after the last node run (`stop`) */
};
enum memest_gen_op {
    MEMEST_GEN_ALLOC = 0,  /* a new tensor of `bytes` into `slot` */
    MEMEST_GEN_FREE,       /* the tensor in `slot` goes */
    MEMEST_GEN_RETURN,     /* the model's forward() returns: every tensor of the
                              pass still alive goes, except the kept ones */
};
struct memest_gen_event {
    uint8_t at;            /* enum memest_gen_at */
    uint8_t op;            /* enum memest_gen_op */
    uint8_t cat;           /* enum memest_category of an ALLOC */
    uint32_t node;         /* PRE/POST: the node */
    uint32_t slot;         /* < nslots */
    uint64_t bytes;
};
struct memest_gen_plan {
    const uint8_t *keep;   /* per storage: the cache keeps it past the forward
                              (DynamicCache appends key_states itself); NULL: none */
    uint32_t stop;         /* the first node not run (the output head, whose
                              logits_to_keep slice the TAIL events make); nnodes:
                              every node */
    const struct memest_gen_event *ev;  /* SETUP ones first, then PRE/POST in node
                                           order (PRE before POST), then TAIL */
    uint32_t nev, nslots;
};

struct memest_peak_opts {
    bool inference;     /* no-grad forward pass only */
    const struct memest_gen_plan *gen;  /* with inference: one generate() forward
                                           (no warm-up: a fresh allocator); NULL:
                                           none */
    const struct memest_step_cfg *step;  /* NULL: defaults */
    uint64_t events;    /* room to reserve for the events: their upper bound
                           (cost.h), or 0 for a guess (the list grows as needed) */
    struct memest_alloc_trace *trace;  /* not NULL: every request the allocator model
                                          serves appended to it (alloc.h), for the
                                          replays under a capacity */
};
/* Simulates one step (training unless o->inference) as o->step configures
 * it (its loss resolved: step.h), builds its timeline into tl (NULL: only
 * the peaks are wanted) and finds its peaks. tl holds the step's events
 * only (setup allocations, forward, loss, backward, optimizer, teardown);
 * the allocator is replayed over a warm-up step first unless
 * step->first_step, as the steady state of a training loop. 0, or -1 with
 * err set (a step PyTorch cannot run: memest_step_cfg_check's usage error;
 * --checkpoint naming no block; a limit; out of memory). */
int memest_sim_step(const struct memest_run *r, const struct memest_peak_opts *o,
                    struct memest_timeline *tl, struct memest_peak *out,
                    struct memest_error *err);

/* --fused linear-ce (run option MEMEST_FUSED_LINEAR_CE): the model's last
 * output is a linear layer's output (lm_head), seen through views, reshapes
 * and dtype casts only, and the step's cross-entropy is computed by Liger-
 * Kernel's LigerFusedLinearCrossEntropyFunction instead: the logits [BT, V]
 * are never made, a chunk of rows at a time is (src/sim/sim_fused_ce.c). */
struct memest_fused_ce {
    bool on;            /* the fused function replaces the head and the loss */
    uint32_t head;      /* the linear node (op->ce_head) */
    uint32_t last;      /* the node making the last output (head when none follows) */
    uint64_t rows;      /* BT: the loss's rows */
    uint64_t hidden;    /* H: the head's in_features */
    uint64_t vocab;     /* V: its out_features, the classes */
    uint64_t chunk;     /* rows per chunk: next_power_of_2(cdiv(BT, cdiv(V, H))) */
    uint64_t nchunks;   /* cdiv(BT, chunk) */
};
/* Whether a training step of run r with step configuration cfg (its loss
 * resolved) uses the fused linear + cross-entropy, and its plan: off without
 * the run option or for a no-grad pass (`inference`: no loss). 0, or -1 with
 * a usage error when the option is set but the loss is not cross-entropy or
 * the last output is not a linear layer's logits. */
int memest_fused_ce_plan(const struct memest_run *r, const struct memest_step_cfg *cfg,
                         bool inference, struct memest_fused_ce *out,
                         struct memest_error *err);
