/* event_bound.h - an upper bound of the allocation events the step
 * simulator makes (src/calc/event_bound.c), the part of an estimate's cost
 * (cost.h) that depends on the step configuration. */
#pragma once

#include "memest/cost.h"
#include "memest/run.h"
#include "memest/step.h"

/* Counts the cost of simulating the run r (shape inference done, with the
 * autocast setting cfg asks for) with step cfg. 0, or -1 when out of
 * memory. */
int memest_cost_count(const struct memest_run *r, const struct memest_step_cfg *cfg,
                      struct memest_cost *c);
