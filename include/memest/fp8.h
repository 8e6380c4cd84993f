/* fp8.h - float8 training of linear layers (--fp8 RECIPE): what each
 * recipe's linear keeps for backward, the casts its forward and backward
 * make, and the state it holds (src/ops/fp8.c has the sources and the
 * arithmetic). The linear layers of the model except its output head
 * (graph.h: memest_graph_output_head) run the recipe; one whose
 * in_features or out_features is not a multiple of 16 stays in high
 * precision (torch._scaled_mm and Transformer Engine need 16). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

enum memest_fp8 {
    MEMEST_FP8_NONE = 0,
    MEMEST_FP8_AO_TENSORWISE,  /* torchao.float8 convert_to_float8_training,
                                  the default "tensorwise" recipe, eager */
    MEMEST_FP8_AO_ROWWISE,     /* ... its "rowwise" recipe (scales per row) */
    MEMEST_FP8_TE_DELAYED,     /* Transformer Engine te.Linear under
                                  fp8_autocast(DelayedScaling()), Hopper */
    MEMEST_FP8_TE_CURRENT,     /* ... Float8CurrentScaling(), Hopper */
    MEMEST_FP8_TE_MXFP8,       /* ... MXFP8BlockScaling(), Blackwell */
    MEMEST_FP8_COUNT
};

/* "none", "ao-tensorwise", "ao-rowwise", "te-delayed", "te-current", "te-mxfp8". */
const char *memest_fp8_name(int r);
int memest_fp8_parse(const char *s, uint8_t *out);

/* One linear layer: rows x in -> rows x out, its input, weight and output
 * elements of in_b, w_b and out_b bytes. */
struct memest_fp8_shape {
    uint64_t rows, in, out;
    uint64_t in_b, w_b, out_b;
    bool bias;
    bool out_bf16;   /* the output is bfloat16 */
};

/* What the recipe's linear adds to (or takes from) nn.Linear's. Byte
 * counts; the saved tensors are fresh storages that live from the forward
 * to the node's backward. */
struct memest_fp8_linear {
    bool saves_input;        /* the high-precision input, as nn.Linear does */
    uint64_t saved_input;    /* a quantised copy of the input (TE) */
    uint64_t saved_input_scale;
    uint64_t saved_weight;   /* the quantised weight (TE: rowwise and columnwise) */
    uint64_t saved_weight_scale;
    uint64_t fwd_work;       /* forward transients beyond the output */
    uint64_t bwd_work;       /* backward transients beyond the input and weight gradients */
};

/* Per-module state the recipe keeps (TE DelayedScaling's amax histories
 * and scales), as buffers: up to MEMEST_FP8_MAX_STATE of them. */
#define MEMEST_FP8_MAX_STATE 4
struct memest_fp8_state {
    const char *name;
    int64_t size[2];
};
int memest_fp8_state(enum memest_fp8 r, struct memest_fp8_state *out);

/* Fills *p for recipe r (not NONE) and layer s. */
void memest_fp8_linear(enum memest_fp8 r, const struct memest_fp8_shape *s,
                       struct memest_fp8_linear *p);
/* Whether recipe r runs a linear of these features in float8. */
bool memest_fp8_eligible(enum memest_fp8 r, int64_t in, int64_t out);
/* The multiple the rows (the input's leading dims) of a float8 linear must
 * be (torch._scaled_mm's 16, Transformer Engine's assert_dim_for_fp8_exec
 * 8, MXFP8's blocks of 32). */
int64_t memest_fp8_rows_multiple(enum memest_fp8 r);
/* Memory the recipe's library holds once per device (Transformer Engine's
 * cuBLAS workspace), 0 for the others. */
uint64_t memest_fp8_device_bytes(enum memest_fp8 r);
