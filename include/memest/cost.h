/* cost.h - what an estimate costs, counted before its steps are simulated,
 * and the limits that keep every command memest accepts to a few seconds
 * and about 1 GiB on a 2-core machine (doc/robustness.md#limits-and-cost,
 * models/README.md#limits).
 *
 * One estimate (shape inference at one batch size, every calculator, the
 * no-grad pass and the training step simulated through the allocator
 * model) costs, in units of about 0.1 to 0.4 us and 50 bytes:
 *   - its records: what shape inference makes, each a record that every
 *     later stage reads: nodes, node inputs, values, storages, parameter
 *     tensors, saved tensors and buffers;
 *   - an upper bound of the allocation events its two simulations make
 *     (sim.h: every allocation and its free; the training step twice,
 *     warm-up and step; per micro-batch; with the recomputation of
 *     checkpointed blocks; the optimizer's state and temporaries), each of
 *     which the allocator model replays and the reports walk.
 * An estimate costing more than the graph's limit (memest_cost_limit) is
 * refused before anything is simulated, and shape inference stops as soon
 * as its records alone pass the limit, so a refused model costs no more
 * than the largest accepted one.
 *
 * A command's work is the sum of the costs of its estimates, plus
 * MEMEST_COST_PER_BUILD_STEP per expansion step of every graph --sweep-var
 * rebuilds; the flows keep it within MEMEST_MAX_WORK (app.h:
 * memest_app_charge). */
#pragma once

#include <stdint.h>

#include "memest/error.h"
#include "memest/run.h"

/* The most one estimate may cost, with the default node limit. */
#define MEMEST_MAX_COST 5000000u
/* The most a whole command may spend (--sweep, --sweep-var, --max-batch,
 * --advise, --timeline). */
#define MEMEST_MAX_WORK 40000000u
/* What each record of a run costs, in units: about its bytes (with the
 * simulator's per-record arrays) over 60, and at least 1. An event costs 1
 * (32 bytes in the timeline, its replay through the allocator model). */
#define MEMEST_COST_NODE 4u      /* graph node, node info, per-node arrays */
#define MEMEST_COST_INPUT 1u     /* node input (edge) */
#define MEMEST_COST_VALUE 3u     /* a tensor value: sizes and strides */
#define MEMEST_COST_STORAGE 1u
#define MEMEST_COST_PARAM 3u     /* parameter tensor: its shape, name, ... */
#define MEMEST_COST_SAVE 1u      /* saved tensor */
#define MEMEST_COST_BUFFER 1u
/* What one expansion step of building a graph costs (graph.h: build_work;
 * about a node), in cost units: --sweep-var rebuilds the graph per value. */
#define MEMEST_COST_PER_BUILD_STEP 8u

struct memest_cost {
    /* records of the run */
    uint64_t nodes, inputs, values, storages, params, saves, buffers;
    uint64_t records;   /* their units: the counts times MEMEST_COST_NODE, ... */
    uint64_t events;    /* upper bound of the events both simulations make */
    uint64_t train_events;  /* of which the training step's (warm-up included):
                               a bound of what --timeline writes */
    uint64_t total;     /* records + events: what the limit bounds */
};

/* The limit of one estimate for a graph built with node limit max_nodes:
 * MEMEST_MAX_COST scaled by max_nodes / MEMEST_MAX_NODES (the fuzzer lowers
 * the node limit; the cost limit follows). */
uint64_t memest_cost_limit(uint32_t max_nodes);
/* The limit that applies to graph g (g->max_cost, or MEMEST_MAX_COST). */
uint64_t memest_cost_graph_limit(const struct memest_graph *g);

/* The records shape inference has made in r so far (events and total
 * equal to them). Cannot fail. */
void memest_cost_records(const struct memest_run *r, struct memest_cost *c);
/* Called by shape inference after each node: a limit error (naming the
 * node, what was counted and the limit) once the records pass the graph's
 * limit. 0 / -1. */
int memest_cost_check_records(const struct memest_run *r, uint32_t node, struct memest_error *err);

/* A limit error when c->total passes the graph's limit: names the file, what
 * was counted, the limit and what to change. 0 / -1. */
int memest_cost_check(const struct memest_run *r, const struct memest_cost *c,
                      struct memest_error *err);
