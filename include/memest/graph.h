/* graph.h - the layer graph: a model file after its blocks, repeats,
 * conditions and variables are expanded. Nodes are in topological order
 * (every input refers to an earlier node); model inputs are nodes too, of
 * op "input". The graph holds no batch-dependent figure: shape inference
 * (run.h) works on it once per batch size. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/arena.h"
#include "memest/quant.h"

struct memest_op_desc;
struct memest_error;

/* An evaluated argument, as described by the op's memest_argspec. */
struct memest_argval {
    bool given;        /* written in the file (else the default) */
    bool none;         /* optional argument left unset (PyTorch's None) */
    int n;             /* number of list elements (1 for scalars) */
    bool list;         /* INTS written as a JSON list (tensor_split tells [k] from k) */
    int64_t *v;        /* INT, BOOL, INTS, SHAPE elements */
    double f;          /* FLOAT */
    const char *s;     /* STR, NAME */
};

/* Reference to output `out` of node `node`. */
struct memest_ref {
    uint32_t node;
    uint16_t out;
};

struct memest_node {
    const char *name;   /* full name, "layer1.0.conv1" */
    const char *path;   /* JSON path of its definition, for messages */
    const struct memest_op_desc *op;
    struct memest_ref *in;
    uint32_t nin;
    struct memest_argval *args;   /* op->nargs entries */
    bool trainable;               /* false: "trainable": false here or above */
    bool discarded;               /* "discarded": true: its output is dropped on
                                     purpose (the unused-node warning skips it) */
    bool held_output;             /* "held_until": "output": its outputs are part of
                                     what the model returns (a ModelOutput's logits, its
                                     past_key_values): alive while the training loop
                                     keeps the outputs (sim: --loop), not only until
                                     their last reader */
    const char *held_name;        /* "held_until": "NAME": the full name of a later
                                     layer NAME of the same list (a Python local
                                     that dies when the code reaches it, as
                                     memest-export observes), else NULL */
    uint32_t held_to;             /* ... that layer's node: the outputs live at
                                     least until it has run; 0: none (a later
                                     node is never node 0) */
    int64_t tie_node;             /* node whose weight this one shares, or -1 */
    bool tie_all;                 /* "tie_params": every parameter shared, by name */
    const char *fused;            /* "fused_params": the name of the fused parameters
                                     its parameters are slices of, or NULL */
    uint32_t fuse_group;          /* ... their group: 1, 2, ... in the order the names
                                     first appear (the nodes of one name share it); 0:
                                     none. Parameter k of each node of a group is one
                                     slice of the same fused parameter (the sim's
                                     SelectBackward, sim_fused_grad.c) */
    uint8_t param_dtype;          /* its parameters' element type: enum memest_dtype
                                     + 1, or 0 for the run's (--dtype); set by graph
                                     passes (LoRA adapters kept in float32) */
    uint8_t wformat;              /* enum memest_wformat (quant.h): how its weight
                                     is stored; 0, dense, unless a graph pass
                                     quantised it (--weights) */
};

/* One call of a block (after expansion): its nodes are first..last, in
 * graph order. Used by activation checkpointing. */
struct memest_block_inst {
    const char *name;       /* the instance's full name, "h.3" */
    const char *type;       /* the block's name, e.g. "bottleneck" */
    uint32_t first, last;
    uint32_t depth;         /* 0: called from the top level */
    struct memest_ref arg;  /* the call's first input: the positional tensor argument
                               of its forward (a transformers decoder layer's
                               hidden_states; the others are taken as keyword
                               arguments), which a non-reentrant checkpoint saves
                               through the saved-tensor hooks around it */
};

struct memest_graph {
    const char *name;       /* the file's "name" */
    const char *file;
    struct memest_node *nodes;
    uint32_t nnodes;
    struct memest_ref *outputs;
    uint32_t noutputs;
    struct memest_arena arena;
    struct memest_block_inst *blocks;  /* in the order their expansion ends */
    uint32_t nblocks, cap_blocks;
    const char *loss;       /* the file's "loss" type (lower case), or NULL */
    int loss_class_dim;     /* its "class_dim": MEMEST_CLASS_DIM_* (step.h), 0 = not
                               given (PyTorch's dim 1); kept when --loss replaces the type */
    const char *overrides;  /* the command-line overrides the expansion read, as
                               "--set seq_len=512, --sweep-var n=3"; NULL: none */
    uint64_t max_cost;      /* the most one estimate may cost (cost.h); 0: MEMEST_MAX_COST */
    uint64_t build_work;    /* expansion steps building it took (model_build.c: charge()) */
    struct memest_quant_params quant;  /* the settings of the nodes' weight formats
                                          (wformat), set by the quantisation pass */
};

/* Limits documented in models/README.md. */
#define MEMEST_MAX_NODES 250000u      /* nodes after expansion */
#define MEMEST_MAX_NESTING 64         /* block-in-block depth */
#define MEMEST_MAX_NODE_INPUTS 64     /* inputs of one node */
#define MEMEST_MAX_NODE_PARAMS 1024u  /* parameter tensors of one node (shape inference
                                         refuses more; a bidirectional 64-layer LSTM
                                         with proj_size has 640) */
#define MEMEST_MAX_FILE_BYTES (256u << 20)  /* model file size */
#define MEMEST_MAX_JSON_VALUES 2000000u     /* JSON values in a model file */

void memest_graph_free(struct memest_graph *g);
/* The model's output layer, as transformers' get_output_embeddings() names
 * it: the linear layer (op .ce_head) that the last model output is, or
 * reaches through ops that keep their input's values (views, reshapes,
 * casts: op .same_data, first input). -1 when there is none (a model whose
 * last output is something else). PEFT's all-linear targets and the
 * quantisers leave this layer out. */
int64_t memest_graph_output_head(const struct memest_graph *g);
/* The number of nodes whose weight the quantisation pass gave a format
 * (wformat), and the first one's format in *format (may be NULL;
 * MEMEST_WF_DENSE when none). */
uint32_t memest_graph_quantized(const struct memest_graph *g, enum memest_wformat *format);
/* Index of the node called `name`, or -1. */
int64_t memest_graph_find(const struct memest_graph *g, const char *name);
/* *count gets the number of model inputs that no node reads and that are not
 * model outputs, *first the first one's node index. Such an input is allowed
 * (PyTorch accepts a forward() argument it never reads, and the tensor still
 * takes memory), so the tool only warns about it. 0, or -1 when out of
 * memory (err set). */
int memest_graph_unused_inputs(const struct memest_graph *g, uint32_t *count, uint32_t *first,
                               struct memest_error *err);
/* The same for the nodes that are not model inputs: a node whose outputs
 * no node reads and that is no model output, likely a mistake (a result
 * forward() throws away, a left-over layer), so the tool warns. 0, or -1. */
int memest_graph_unused_nodes(const struct memest_graph *g, uint32_t *count, uint32_t *first,
                              struct memest_error *err);
