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
