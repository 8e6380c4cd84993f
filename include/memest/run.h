/* run.h - shape inference over a graph for one batch size, and its results:
 * every tensor value, storage, parameter, buffer and saved tensor, per node.
 * The calculators (calc.h) read a run, never the JSON. A run can be redone
 * for another batch size on the same graph without re-reading the file. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/dtype.h"
#include "memest/error.h"
#include "memest/graph.h"
#include "memest/shape.h"

enum memest_storage_kind {
    MEMEST_ST_INPUT = 0, /* model input */
    MEMEST_ST_ACT,       /* op output */
    MEMEST_ST_EXTRA,     /* op-internal tensor saved for backward */
    MEMEST_ST_PARAM,
    MEMEST_ST_BUFFER,
    MEMEST_ST_CAST,      /* autocast copy of a tensor or parameter (--amp) */
    MEMEST_ST_KIND_COUNT
};

struct memest_storage {
    uint64_t bytes;
    uint32_t node;       /* producing node */
    uint8_t kind;        /* enum memest_storage_kind */
    uint8_t dtype;
    uint32_t last_use;   /* last node reading it in forward (liveness) */
    bool saved;          /* saved for backward by some node */
    uint32_t src;        /* MEMEST_ST_CAST: the storage it copies, else UINT32_MAX */
    uint32_t cast;       /* a parameter's cached autocast copy, else UINT32_MAX */
};

struct memest_value {
    struct memest_shape shape;
    int64_t offset;      /* elements into the storage */
    uint32_t storage;
    uint8_t dtype;
    bool requires_grad;
};

struct memest_param {
    uint32_t node;
    const char *name;    /* "weight", "bias", "weight_ih_l0", ... */
    uint64_t numel;
    struct memest_shape shape;
    bool trainable;
    int64_t tied_to;     /* index of the parameter it shares, or -1 */
    uint32_t storage;
    uint64_t state_bytes;  /* a quantised weight's state (absmax, scales...) kept in
                              storages of their own after `storage` (quant.h); 0 */
};

struct memest_buffer {
    uint32_t node;
    const char *name;
    uint64_t numel;
    uint8_t dtype;
};

/* How the backward of a node produces the gradient of one of its inputs
 * (declared by the op through the memest_grad_* calls of ops.h). */
enum memest_grad_kind {
    MEMEST_GRAD_NEW = 0,  /* a new tensor of the input's size (the default) */
    MEMEST_GRAD_SAME,     /* the gradient of output `from` itself (add, clone) */
    MEMEST_GRAD_RESHAPE,  /* the gradient of output `from` reshaped to the input's
                             sizes: a view when its layout allows, else a copy */
    MEMEST_GRAD_PERMUTE,  /* the gradient of output `from` permuted by `perm` (a view) */
    MEMEST_GRAD_SLICE,    /* a view into the gradient of output `from` with the
                             input's sizes (cat: narrow along `perm[0]`) */
    MEMEST_GRAD_NONE,     /* no gradient flows to this input */
    MEMEST_GRAD_KIND_COUNT
};

/* One input of a node, as the op reads it and as its backward treats it. */
struct memest_nodein {
    uint32_t value;      /* the value the op reads: the graph input, or its
                            autocast copy */
    uint32_t src;        /* the graph input's value */
    uint8_t grad;        /* enum memest_grad_kind */
    uint8_t from;        /* output whose gradient SAME/RESHAPE/PERMUTE/SLICE use */
    uint8_t perm[MEMEST_MAX_DIMS];  /* PERMUTE: grad_in = grad_out.permute(perm) */
};

/* nodeinfo.bwd_flags */
#define MEMEST_BWD_CONTIG_OUT 1u  /* backward copies output 0's gradient when it
                                     is not contiguous (matmul's and linear's
                                     reshape, cuDNN) */
#define MEMEST_BWD_WORK_FIRST 2u  /* the scratch peaks before the input gradients
                                     exist (a chain of autograd nodes inside the
                                     op, the first ones done before the last
                                     makes them: eager attention) */

struct memest_nodeinfo {
    uint32_t out_first, nout;      /* into run.values */
    uint32_t save_first, nsave;    /* into run.saves (storage ids) */
    uint32_t param_first, nparam;  /* into run.params */
    uint32_t buffer_first, nbuffer;
    bool needs_grad;
    double fwd_macs;
    double bwd_macs;
    uint64_t work_bytes;           /* forward workspace */
    uint64_t act_bytes;            /* saved bytes first saved by this node */
    uint32_t in_first;             /* into run.ins, g->nodes[n].nin entries */
    uint8_t bwd_flags;             /* MEMEST_BWD_* */
    uint64_t bwd_work_bytes;       /* scratch the backward kernels allocate and free */
    uint64_t bwd_early_release;    /* MEMEST_BWD_WORK_FIRST: the saves its inner nodes
                                      release before that scratch peaks (taken off it) */
    uint8_t late_saves;            /* the node's first late_saves saves are read only by
                                      its last inner autograd node (eager attention's
                                      q and k, by their matmul): under
                                      --activation-offload they come back after its
                                      MEMEST_BWD_WORK_FIRST scratch */
    bool work_first;               /* the forward's workspace peaks before the node's
                                      storages are made (memest_work_first) */
    bool in0_first;                /* Python computes what the node does with input 0
                                      before the producer of its other inputs runs
                                      (act_fn(gate_proj(x)) * up_proj(x)): without
                                      autograd, input 0 is gone before the node's
                                      own tensors exist (sim_forward.c) */
    uint8_t sac;                   /* enum memest_sac_op: the op of torchtitan's
                                      selective-checkpointing save list it runs */
    uint64_t mask_bytes;           /* of work_bytes: the model's attention mask the
                                      node reads (one tensor the model builds before
                                      its layers; a checkpointed block keeps it as
                                      an input) */
};

/* The aten ops of torchtitan's _op_sac_save_list (models/llama3/infra/
 * parallelize.py) a node runs as its one compute op: aten.mm (a bias-free
 * dense linear; with a bias it is addmm, not in the list) and the fused
 * SDPA kernels (flash, memory-efficient, cuDNN; the math kernel decomposes
 * below the dispatcher, so the list never sees it). */
enum memest_sac_op { MEMEST_SAC_NONE, MEMEST_SAC_MM, MEMEST_SAC_ATTN };

struct memest_run_opts {
    int64_t batch;                 /* >= 1 */
    enum memest_dtype dtype;       /* parameters and float activations */
    bool amp;                      /* autocast (torch.autocast("cuda")) ... */
    enum memest_dtype amp_dtype;   /* ... to fp16 or bf16 */
    /* The LLM options (--attention, --moe-imbalance, --fused, --torch);
     * zero is the default of each. */
    uint8_t attention;             /* enum memest_attention: the kernel of
                                      scaled_dot_product_attention nodes */
    double moe_imbalance;          /* >= 1: tokens of the busiest expert over
                                      the balanced share; 0 or 1: balanced */
    uint32_t fused;                /* MEMEST_FUSED_* bits: fused kernels */
    uint16_t torch;                /* PyTorch rules: 0 = 2.x, 113 = 1.13 */
    uint8_t fp8;                   /* enum memest_fp8 (fp8.h): --fp8's recipe for the
                                      linear layers */
    uint8_t rnn_kernel;            /* enum memest_rnn_kernel: --rnn-kernel, what the
                                      lstm/gru/rnn nodes run */
    bool no_grad;                  /* under torch.no_grad() (--generate): no parameter
                                      requires grad, so no tensor does, and ops take
                                      their inference paths (bitsandbytes' gemv_4bit) */
};

/* --attention: what a scaled_dot_product_attention node runs. AUTO is what
 * transformers' "sdpa" attention and PyTorch's dispatcher pick for the
 * dtype, head size and mask; EAGER is transformers' eager attention (matmul,
 * softmax, dropout, matmul as the modeling code writes it); the others force
 * one SDPA kernel. */
enum memest_attention {
    MEMEST_ATTN_AUTO = 0,
    MEMEST_ATTN_EAGER,
    MEMEST_ATTN_MATH,
    MEMEST_ATTN_FLASH,
    MEMEST_ATTN_EFFICIENT,
    MEMEST_ATTN_CUDNN,
};

/* --rnn-kernel: what nn.LSTM / nn.GRU / nn.RNN run on CUDA. CUDNN (the
 * default: torch.backends.cudnn.enabled) is one _cudnn_rnn with its reserve
 * space; NATIVE is ATen's step-by-step path (cuDNN disabled), whose saved
 * tensors a CPU run also shows. */
enum memest_rnn_kernel {
    MEMEST_RNN_CUDNN = 0,
    MEMEST_RNN_NATIVE,
    MEMEST_RNN_KERNEL_COUNT
};

/* --fused: kernels that replace a module's eager ops (each its own saved
 * tensors): Liger-Kernel / Apex style fused RMSNorm, rotary embedding,
 * SwiGLU/GeGLU, and a linear + cross-entropy loss that never materialises
 * the logits (Liger's FusedLinearCrossEntropy, cut-cross-entropy). */
enum {
    MEMEST_FUSED_RMSNORM = 1u << 0,
    MEMEST_FUSED_ROTARY = 1u << 1,
    MEMEST_FUSED_SWIGLU = 1u << 2,
    MEMEST_FUSED_LINEAR_CE = 1u << 3,
    MEMEST_FUSED_COUNT = 4,
};
#define MEMEST_ATTN_COUNT (MEMEST_ATTN_CUDNN + 1)

/* The names of the values above, as the options write them (run_opts.c):
 * "auto", "eager", "math", "flash", "efficient", "cudnn"; "rmsnorm",
 * "rotary", "swiglu", "linear-ce". The parsers return 0 / -1. */
const char *memest_attention_name(int a);
int memest_attention_parse(const char *s, uint8_t *out);
const char *memest_fused_name(int bit_index);
/* "cudnn", "native". */
const char *memest_rnn_kernel_name(int k);
int memest_rnn_kernel_parse(const char *s, uint8_t *out);
/* A comma-separated list of fused kernel names, or "all" / "none". */
int memest_fused_parse(const char *list, uint32_t *out);
/* "2" (also "2.x") or "1.13". */
int memest_torch_parse(const char *s, uint16_t *out);

struct memest_run {
    const struct memest_graph *g;
    struct memest_run_opts opts;
    struct memest_nodeinfo *nodes;        /* g->nnodes */
    struct memest_value *values;
    uint32_t nvalues, cap_values;
    struct memest_storage *storages;
    uint32_t nstorages, cap_storages;
    uint32_t *saves;
    uint32_t nsaves, cap_saves;
    uint8_t *save_packs;     /* per save: how many of the op's autograd nodes save that
                                tensor (each is a pack a saved_tensors_hooks sees:
                                RMSNorm's pow and mul both save x.float()), >= 1 */
    uint32_t cap_save_packs;
    struct memest_param *params;
    uint32_t nparams, cap_params;
    struct memest_buffer *buffers;
    uint32_t nbuffers, cap_buffers;
    struct memest_nodein *ins;            /* per node input, from nodeinfo.in_first */
    uint32_t nins, cap_ins;
    uint32_t used;                        /* the run options some op applied: MEMEST_FUSED_*
                                             bits, MEMEST_USED_* (an option none applied
                                             changes nothing) */
    uint32_t infers;                      /* the shape inferences run into it (counted
                                             by memest_run_infer; one per estimate) */
};

/* memest_run.used besides the MEMEST_FUSED_* bits. */
enum {
    MEMEST_USED_ATTENTION = 1u << 8,      /* --attention chose a kernel */
    MEMEST_USED_MOE_IMBALANCE = 1u << 9,  /* --moe-imbalance routed tokens */
    MEMEST_USED_FP8 = 1u << 10,           /* --fp8 ran a linear layer in float8 */
    MEMEST_USED_RNN = 1u << 11,           /* a recurrent node ran --rnn-kernel's kernel */
};

/* Runs shape inference of the whole graph for opts. `r` may hold a previous
 * run (its arrays are reused) or be zeroed. Returns 0, or -1 with err set
 * (naming the node). */
int memest_run_infer(struct memest_run *r, const struct memest_graph *g,
                     const struct memest_run_opts *opts, struct memest_error *err);
void memest_run_free(struct memest_run *r);
/* The value for output `out` of node `node`. */
const struct memest_value *memest_run_value(const struct memest_run *r, struct memest_ref ref);
