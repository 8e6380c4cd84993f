/* quant.h - quantised weight storage: how a linear layer's weight is kept
 * when the model is loaded with bitsandbytes (load_in_8bit / load_in_4bit),
 * GPTQ or AWQ. A graph pass (src/model) gives the formats to nodes
 * (graph.h: memest_node.wformat) and the model-wide settings to the graph
 * (memest_graph.quant); shape inference (src/ops) sizes the stored tensors
 * and the dequantised copies from them (src/ops/quant.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memest/dtype.h"

/* memest_node.wformat: the storage of a linear layer's weight. */
enum memest_wformat {
    MEMEST_WF_DENSE = 0,  /* a plain tensor of the parameter dtype */
    MEMEST_WF_INT8,       /* bitsandbytes Linear8bitLt (LLM.int8()) */
    MEMEST_WF_NF4,        /* bitsandbytes Linear4bit, quant_type "nf4" */
    MEMEST_WF_FP4,        /* bitsandbytes Linear4bit, quant_type "fp4" */
    MEMEST_WF_GPTQ4,      /* GPTQ QuantLinear, 4 bits */
    MEMEST_WF_AWQ4,       /* AWQ WQLinear, 4 bits */
    MEMEST_WF_MXFP4,      /* OCP MXFP4: gpt-oss's Mxfp4GptOssExperts (blocks and
                             e8m0 scales of 32 elements) */
    MEMEST_WF_FP8,        /* transformers' FP8Linear: float8_e4m3fn weights with
                             a float32 scale per block (DeepSeek-V3's) */
    MEMEST_WF_NVFP4,      /* NVIDIA ModelOpt NVFP4: e2m1 pairs, a float8 scale per
                             16 and float32 global scales (served by vLLM) */
    MEMEST_WF_COUNT
};

/* The settings of the formats, one set per model (memest_graph.quant),
 * named as transformers' BitsAndBytesConfig / GPTQConfig / AwqConfig name
 * them. All zero is "not quantised" and memest_quant_defaults() gives the
 * libraries' defaults. */
struct memest_quant_params {
    int32_t blocksize;      /* bnb 4-bit: Params4bit.blocksize (64) */
    bool double_quant;      /* bnb 4-bit: bnb_4bit_use_double_quant
                               (Params4bit.compress_statistics) */
    uint8_t compute_dtype;  /* bnb 4-bit: bnb_4bit_compute_dtype as enum
                               memest_dtype + 1; 0: float32, the config's
                               default when it names none */
    uint8_t quant_storage;  /* bnb 4-bit: bnb_4bit_quant_storage as enum
                               memest_dtype + 1; 0: uint8 */
    int64_t group_size;     /* GPTQ/AWQ: in_features per scale group (128);
                               -1: one group over all in_features */
    bool desc_act;          /* GPTQ: act-order (g_idx is stored either way) */
    int32_t fp8_block[2];   /* FP8: weight_block_size, rows and columns of a
                               scale's block ([128, 128]) */
    int32_t nvfp4_group;    /* NVFP4: in_features per float8 scale (16) */
};

/* The libraries' defaults: blocksize 64, no double quantisation, float32
 * compute, uint8 storage, group size 128. */
void memest_quant_defaults(struct memest_quant_params *p);
/* "int8", "nf4", "fp4", "gptq", "awq", "mxfp4", "fp8", "nvfp4" (what --weights and the reports
 * print); "dense" for MEMEST_WF_DENSE. */
const char *memest_wformat_name(enum memest_wformat f);
/* Whether the format is bitsandbytes' 4-bit one (nf4, fp4). */
bool memest_wformat_bnb4(enum memest_wformat f);

/* One tensor a quantised [out, in] weight is kept as. */
struct memest_quant_tensor {
    const char *name;       /* bitsandbytes' state_dict suffix or the module's
                               buffer name: "weight", "weight.absmax", "qweight" */
    int ndim;               /* 0 (a 0-d tensor), 1, 2 or 3 (MXFP4's blocks) */
    int64_t size[3];
    enum memest_dtype dtype;
};

#define MEMEST_QUANT_MAX_TENSORS 8

/* What the library allocates for one layer: the tensors in the order they
 * are named above. For bitsandbytes the first is the nn.Parameter (frozen)
 * and the rest is its QuantState (plain tensor attributes); GPTQ and AWQ
 * keep every tensor, the bias included, as a registered buffer. */
struct memest_quant_layout {
    int n;
    struct memest_quant_tensor t[MEMEST_QUANT_MAX_TENSORS];
    bool buffers;           /* GPTQ/AWQ: buffers, the bias among them */
};

/* The layout of an [out, in] weight (with a bias or not) in format f.
 * 0, or -1 with a one-line reason in why (a shape the library refuses:
 * AWQ needs in_features divisible by the group size and out_features by 8). */
int memest_quant_layout(enum memest_wformat f, const struct memest_quant_params *p,
                        int64_t out, int64_t in, bool bias, struct memest_quant_layout *l,
                        char *why, size_t whylen);
/* Bytes of one tensor of a layout, and of all of them (saturating). */
uint64_t memest_quant_tensor_bytes(const struct memest_quant_tensor *t);
uint64_t memest_quant_layout_bytes(const struct memest_quant_layout *l);

/* The transient bytes of one quantised linear layer, for `rows` input rows
 * of element type x (the input's dtype) whose weight was quantised from
 * element type w (the model's dtype): what its forward allocates and frees
 * besides the output (fwd), what its backward allocates and frees besides
 * the input's gradient when the input requires grad (bwd), and what its
 * autograd node keeps for the backward besides the input itself (saved).
 * quant.c cites the library code each figure follows. */
struct memest_quant_transient {
    uint64_t fwd, bwd, saved;
    bool saves_input;       /* MatMul8bitLt keeps its input A for the backward */
    bool no_grad;           /* AWQ's forward runs under torch.no_grad() */
    bool gemv;              /* bnb 4-bit one-row inference: gemv_4bit, no copy */
};
void memest_quant_transient(enum memest_wformat f, const struct memest_quant_params *p,
                            int64_t out, int64_t in, int64_t rows, enum memest_dtype x,
                            enum memest_dtype w, bool input_grad,
                            struct memest_quant_transient *t);
