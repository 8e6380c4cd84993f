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

#include "memest/error.h"
#include "memest/run.h"
#include "memest/step.h"
#include "memest/timeline.h"

struct memest_peak_opts {
    bool inference;     /* no-grad forward pass only */
    const struct memest_step_cfg *step;  /* NULL: defaults */
    uint64_t events;    /* room to reserve for the events: their upper bound
                           (cost.h), or 0 for a guess (the list grows as needed) */
};
struct memest_peak {
    uint64_t bytes;           /* the allocator's allocated peak: the most bytes in live
                                 blocks (rounded, unsplit remainders included) at any
                                 event of the step, torch.cuda.max_memory_allocated() */
    size_t event;             /* timeline event at which it is first reached */
    uint8_t phase;            /* enum memest_phase */
    uint32_t node;            /* node at the peak, UINT32_MAX = none (loss, optimizer) */
    uint64_t at_peak[MEMEST_CAT_COUNT];  /* live block bytes per category at the
                                            peak (they sum to bytes) */
    uint64_t tensor_bytes;    /* peak of live tensor bytes, exact sizes, before
                                 allocator rounding and without library workspaces:
                                 what a tensor-level measurement counts */
    size_t tensor_event;
    uint64_t reserved;        /* the allocator's reserved peak (segments),
                                 torch.cuda.max_memory_reserved() */
    uint64_t segments;        /* cudaMalloc'd segments held at the end */
    uint64_t sim_events;      /* events the simulation made (warm-up included): what
                                 the cost model (cost.h) bounds from above */
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
