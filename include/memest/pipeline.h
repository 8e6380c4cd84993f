/* pipeline.h - a pipeline-parallel stage of a graph (src/model/pipeline.c,
 * layer "model"): the nodes one stage of --pp P holds, as a graph of its
 * own whose inputs are what it receives from the stage before. */
#pragma once

#include <stdint.h>

#include "memest/error.h"
#include "memest/graph.h"
#include "memest/run.h"

/* Stage `stage` of `pp` of graph g as Megatron-LM splits a model
 * (megatron/core/transformer/transformer_block.py, get_num_layers_to_build):
 * the top-level block instances (the layers) in pp runs of ceil(L / pp),
 * the layers missing to that taken off the first and the last stage (the
 * Llama 3 paper's 126 layers on 16 stages: 7, 8 x 14, 7), the nodes
 * before the first layer (embeddings) on the first stage, those after the
 * last (final norm, head) on the last, a node between two layers with the
 * layer before it. Every value a stage reads from an earlier one becomes a
 * model input of the same per-sample shape and type, requiring grad as the
 * value does; its batch dimension (or none: a tensor every sample shares)
 * is the one that doubles from r1 (g's run at batch 1) to r2 (at batch 2).
 * A stage but the last ends with the value the next stage receives (its
 * last output, whose gradient comes back). *out is a new graph (free with
 * memest_graph_free); its name and file are g's, its loss g's on the last
 * stage only. A usage error when a stage would have no layer
 * or the stages pass values the inputs cannot express. 0 / -1. */
int memest_pipeline_stage(const struct memest_graph *g, const struct memest_run *r1,
                          const struct memest_run *r2, int64_t pp, int64_t stage,
                          struct memest_graph *out, struct memest_error *err);
/* The number of top-level block instances (layers) of g. */
uint32_t memest_pipeline_layers(const struct memest_graph *g);
