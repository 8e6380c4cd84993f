/* metamorphic.h - rewrites of a model file that must not change what memest
 * computes, and the comparison of the figures (issue 10). Used by
 * tests/unit/test_metamorphic.c over every shipped model and by the fuzzer
 * (tests/fuzz/fuzz_model.c) as invariants on every input it builds.
 *
 * The rewrites (each returns a new document, or NULL when it does not apply
 * or memory runs out; the input is not changed):
 *   mm_flat          the expanded graph written flat (memest_graph_to_json):
 *                    no blocks, repeat, if or variables, full names (NULL
 *                    when "if" left every node out: "layers" cannot be empty)
 *   mm_index_names   a flat file whose nodes have no "name": each is named by
 *                    its index, as nn.Sequential names children, and every
 *                    reference is by index
 *   mm_rename        a flat file with every node and input renamed
 *   mm_strip_names   any model file with "name" removed from every node that
 *                    nothing refers to (blocks and repeats kept)
 *   mm_unroll_repeats  any model file with each "repeat" of a literal count
 *                    (or a variable's) written as that many nodes, repeat_index
 *                    replaced by each copy's index (blocks kept)
 *   mm_wrap_blocks   a flat file with each node called through a block of its
 *                    own (full names become "name.op")
 *   mm_roll_repeats  a flat file with each run of identical chained nodes
 *                    written as one node with "repeat" (NULL: no such run)
 *   mm_reorder       a flat file with its nodes in another valid order: any
 *                    topological order of the data dependencies, keeping the
 *                    order of the nodes that touch a storage some node aliases
 *                    (views, in-place ops), as PyTorch's semantics need
 *
 * What must stay equal. Everything (MM_ALL) where the graph is the same node
 * for node with the same blocks: a flat file against its index-named,
 * renamed, block-wrapped (one-node blocks hold nothing longer) and rolled
 * versions, and a file against its stripped and unrolled versions. The
 * figures that do not depend on when tensors die (MM_ORDER_FREE:
 * parameters, buffers, gradients, optimizer state, saved activations, MACs)
 * between a file and its flat version and between a flat file and its
 * reorderings. The peaks differ there, in PyTorch as in memest: a module's
 * forward() arguments live until it returns (memest's blocks are modules),
 * and which branch runs first decides which temporaries are live together. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/calc.h"
#include "memest/graph.h"
#include "memest/run.h"

struct cJSON;

struct cJSON *mm_flat(const struct memest_graph *g);
struct cJSON *mm_index_names(const struct cJSON *flat);
struct cJSON *mm_rename(const struct cJSON *flat, uint32_t seed);
struct cJSON *mm_strip_names(const struct cJSON *model);
struct cJSON *mm_unroll_repeats(const struct cJSON *model);
struct cJSON *mm_wrap_blocks(const struct cJSON *flat);
struct cJSON *mm_roll_repeats(const struct cJSON *flat);
/* g and r: the graph built from flat and a run of it (any batch): storage
 * aliasing comes from the run. */
struct cJSON *mm_reorder(const struct cJSON *flat, const struct memest_graph *g,
                         const struct memest_run *r, uint32_t seed);

/* The figures of one estimate, or the failure. */
struct mm_figures {
    int rc;                         /* 0, or -1 with code set */
    enum memest_errcode code;
    char msg[256];
    struct memest_estimate e;
    uint32_t nnodes;
};

/* Builds doc (overrides: none), runs shape inference at batch with dtype,
 * and the estimate with cfg. `label` names the file in messages. */
void mm_figures_of(const struct cJSON *doc, const char *label, uint32_t max_nodes, int64_t batch,
                   enum memest_dtype dtype, const struct memest_step_cfg *cfg,
                   struct mm_figures *out);

enum mm_compare {
    MM_ALL,          /* every figure, and where the peaks are (node, event) */
    MM_ORDER_FREE,   /* the figures that do not depend on when tensors die */
};
/* Compares a and b; returns true when equal. On a difference, writes what
 * differs to why (a one-line description). */
bool mm_same(const struct mm_figures *a, const struct mm_figures *b, enum mm_compare how,
             char *why, size_t whylen);
