/* ops.h - the operator table. Each supported "type" of the model format is
 * one struct memest_op_desc: its arguments (checked centrally by the model
 * builder) and an infer function that, given the input tensors, declares the
 * outputs, parameters, buffers, tensors saved for backward and MACs through
 * the memest_ictx calls below. Op families live in src/ops/ops_<family>.c.
 *
 * What the later stages need to know about an op beyond its infer function
 * is data in its descriptor, never read from its name: the autocast policy
 * (.amp), the math library its kernels call (.lib: the simulator allocates
 * the cuBLAS workspace at the first cuBLAS op), whether model.eval() makes
 * it return its input (.eval_identity: --inference drops dropout) and
 * whether it is the model-input op (.model_input), whether its output is its
 * input's values unchanged (.same_data), whether it is a linear layer a
 * fused linear + cross-entropy can replace (.ce_head) and whether it is a
 * module's registered tensor (.module_state). A new op sets them in
 * its family file; left out, each means "none" / false. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/dtype.h"
#include "memest/graph.h"
#include "memest/shape.h"

enum memest_argkind {
    MEMEST_ARG_INT,    /* integer */
    MEMEST_ARG_FLOAT,  /* number */
    MEMEST_ARG_BOOL,   /* true / false */
    MEMEST_ARG_INTS,   /* int, or list of .n ints (a PyTorch tuple argument);
                          .n == 0: a list of any length, or a single int */
    MEMEST_ARG_SHAPE,  /* list of ints where -1 and "batch" are allowed */
    MEMEST_ARG_STR,    /* one of .choices ("a|b|c"), or any string if NULL */
    MEMEST_ARG_NAME,   /* name of another node */
    MEMEST_ARG_COUNT
};

struct memest_argspec {
    const char *name;
    enum memest_argkind kind;
    bool required;
    bool optional;       /* may stay unset (None): argval.none */
    int n;               /* INTS tuple length, 0 = any */
    int64_t lo, hi;      /* bounds for ints; lo == hi == 0: no bounds */
    int64_t idef;        /* default for INT, BOOL and every INTS element */
    double fdef;         /* default for FLOAT */
    double flo, fhi;     /* bounds for FLOAT; flo == fhi == 0: none */
    const char *sdef;    /* default for STR */
    const char *choices; /* STR: "a|b|c" */
    const char *doc;
    bool forward;        /* an argument of the module's forward() call, not of its
                            constructor (nn.MultiheadAttention's need_weights):
                            --list-ops marks it "(forward)" */
};

/* In a SHAPE argument, the batch size. */
#define MEMEST_SHAPE_BATCH INT64_MIN

struct memest_ictx;
struct memest_run_opts;

/* What autocast (torch.autocast("cuda"), --amp) does to an op's inputs, as
 * aten/src/ATen/autocast_mode.cpp lists the ops. */
enum memest_amp_policy {
    MEMEST_AMPP_ANY = 0,  /* not listed: runs in its inputs' dtype */
    MEMEST_AMPP_LOW,      /* lower_precision_fp: float inputs and parameters cast
                             to fp16/bf16 (parameters cached for the forward) */
    MEMEST_AMPP_FP32,     /* fp32: low-precision inputs cast to float32 */
    MEMEST_AMPP_FP32_OUT, /* fp32_set_opt_dtype (softmax, log_softmax): float32
                             result; an fp16 input is read directly, a bf16
                             one is converted first */
};

/* The library an op's CUDA kernels call, as far as memest models it: an op
 * of MEMEST_LIB_CUBLAS that does MACs allocates cuBLAS's workspace the first
 * time one runs (aten/src/ATen/cuda/CublasHandlePool.cpp). cuDNN's
 * workspaces are not modelled; the value says which convolutions are. Every
 * op that declares MACs names its library (infer.c checks). */
enum memest_mathlib {
    MEMEST_LIB_NONE = 0, /* elementwise / reduction kernels of ATen itself */
    MEMEST_LIB_CUBLAS,   /* matrix products: at::mm, addmm, bmm (cuBLAS) */
    MEMEST_LIB_CUDNN,    /* convolutions: at::cudnn_convolution */
};

struct memest_op_desc {
    const char *name;             /* "conv2d" */
    int min_in, max_in;           /* inputs; max_in < 0: unbounded */
    const struct memest_argspec *args;
    int nargs;
    int (*infer)(struct memest_ictx *c);
    const char *doc;              /* one line for models/README.md and errors */
    uint8_t amp;                  /* enum memest_amp_policy */
    uint8_t lib;                  /* enum memest_mathlib */
    bool eval_identity;           /* under model.eval() the op returns its
                                     input itself (nn.Dropout*: F.dropout with
                                     training=False), no output, no mask */
    bool model_input;             /* the op of the model inputs (one only) */
    bool moe_expert_tokens;       /* gathers one expert's tokens (moe_gather): the
                                     innermost block around it is the expert,
                                     whose parameters a token uses top_k /
                                     num_experts of the time */
    bool same_data;               /* the output holds its first input's values
                                     unchanged: a view or reshape of it, or a
                                     same-size copy (contiguous, a dtype cast);
                                     --fused linear-ce looks through such ops
                                     between the head and the loss */
    bool lookup_table;            /* a table of vectors read by index (nn.Embedding):
                                     its weight is no hidden layer's matrix (Muon
                                     leaves it to AdamW, optim.c) */
    bool saves_weight_view;       /* its backward keeps the weight as a view
                                     (F.linear's addmm/mm save mat2 = weight.t()),
                                     not as the nn.Parameter itself: torchtune's
                                     activation offloading moves it (sim_offload.c) */
    bool ce_head;                 /* a linear layer (weight [V, H], optional
                                     bias [V]) that --fused linear-ce can fuse
                                     with the cross-entropy after it */
    bool module_state;            /* a module's registered tensor (nn.Parameter,
                                     register_buffer): it takes memory whether
                                     forward() reads it or not, so an unread
                                     one is no unused node (graph.h) */
    bool kv_attention;            /* attention whose inputs 1 and 2 are the keys
                                     [B, Hkv, S, Dk] and values [B, Hkv, S, Dv] a
                                     KV cache keeps when generating (--generate:
                                     src/calc/generate.c reads the cache's size
                                     from them) */
    const char *kv_window_arg;    /* with kv_attention: the argument holding the
                                     sliding-window size (0: none), or NULL */
    uint64_t (*gen_state_elems)(const struct memest_argval *args);
                                  /* a recurrent layer whose state a generation
                                     cache keeps whatever the tokens (the Mamba
                                     mixers' conv and SSM states): its elements
                                     per sequence, in the input's dtype, for the
                                     node's arguments; NULL for other ops */
};

/* The op of the model inputs (the file's "inputs" list): not in the table
 * of types a node may name. The model builder gives it to the inputs; other
 * stages ask op->model_input. */
extern const struct memest_op_desc memest_op_input;

/* Looks an op up by its "type" name; NULL when unknown. */
const struct memest_op_desc *memest_op_find(const char *name);
/* The known op name nearest to `name` (for "did you mean"): the type a
 * PyTorch user means by it (memest_op_alias), else the nearest look-alike;
 * NULL when none. */
const char *memest_op_suggest(const char *name);
/* The registered type that `name` (any case) is another spelling of
 * (ops_alias.c: swish -> silu, dense -> linear, sdpa ->
 * scaled_dot_product_attention), or NULL. */
const char *memest_op_alias(const char *name);
/* The argument of `op` that `name` (any case) is another spelling of
 * (epsilon -> eps, axis -> dim), or NULL when op has no such argument. */
const char *memest_op_arg_alias(const struct memest_op_desc *op, const char *name);
/* All ops, for listings. */
const struct memest_op_desc *const *memest_op_all(int *count);
/* Index of the argument called `name` in op->args, or -1. */
int memest_op_arg_index(const struct memest_op_desc *op, const char *name);

/* ---- The calls an infer function makes (implemented in src/ops/infer.c) ---- */

/* Number of inputs, and input i's geometry, dtype and requires_grad. */
int memest_in_count(const struct memest_ictx *c);
const struct memest_shape *memest_in_shape(const struct memest_ictx *c, int i);
enum memest_dtype memest_in_dtype(const struct memest_ictx *c, int i);
bool memest_in_requires_grad(const struct memest_ictx *c, int i);
/* Whether inputs i and j are views of one storage (in-place writes through
 * a view: copyslices). */
bool memest_in_same_storage(const struct memest_ictx *c, int i, int j);
/* The node's evaluated argument number idx (its index in op->args). */
const struct memest_argval *memest_arg(const struct memest_ictx *c, int idx);
/* Argument idx as a single int / bool / float. */
int64_t memest_arg_int(const struct memest_ictx *c, int idx);
bool memest_arg_bool(const struct memest_ictx *c, int idx);
double memest_arg_float(const struct memest_ictx *c, int idx);
/* Batch size of this run, compute dtype for float tensors and parameters. */
int64_t memest_batch(const struct memest_ictx *c);
enum memest_dtype memest_float_dtype(const struct memest_ictx *c);
/* The element type of this node's parameters: its graph node's param_dtype
 * when a graph pass set one, else memest_float_dtype(). */
enum memest_dtype memest_param_dtype(const struct memest_ictx *c);
/* The run's options (attention kernel, MoE imbalance, fused kernels, the
 * PyTorch version whose rules apply): run.h. */
const struct memest_run_opts *memest_run_options(const struct memest_ictx *c);
/* Notes that the node applies run options `what` (memest_run.used): an op
 * calls it where an option changes what it does. */
void memest_run_option_used(const struct memest_ictx *c, uint32_t what);
/* Whether some node before this one noted options `what`. */
bool memest_run_option_was_used(const struct memest_ictx *c, uint32_t what);
/* Whether this node is the model's output head (graph.h:
 * memest_graph_output_head). */
bool memest_node_is_output_head(const struct memest_ictx *c);
/* True if this node's parameters are trainable. */
bool memest_trainable(const struct memest_ictx *c);
/* Whether autograd records this node: some input requires grad, or the node
 * has trainable parameters (valid after its params are declared). */
bool memest_needs_grad(const struct memest_ictx *c);

/* Declares a parameter of the node (sizes as in PyTorch). Returns 0/-1. */
int memest_param(struct memest_ictx *c, const char *name, int ndim, const int64_t *size);
/* Declares a buffer (running stats etc.). */
int memest_buffer(struct memest_ictx *c, const char *name, int ndim, const int64_t *size,
                  enum memest_dtype dt);
/* Declares the parameter `name` of a quantised weight (quant.h): counted
 * as numel(size) elements, as transformers' num_parameters() and PEFT
 * count a bitsandbytes weight, but kept as the n tensors of bytes[i]
 * bytes of type dt[i]: the parameter's packed data (0) and its
 * quantisation state (1..n-1, each its own allocation); frozen, as
 * Params4bit / Int8Params are created with requires_grad=False, and never
 * cast by autocast. Returns 0/-1. */
int memest_param_packed(struct memest_ictx *c, const char *name, int ndim, const int64_t *size,
                        int n, const enum memest_dtype *dt, const uint64_t *bytes);
/* The storage format of this node's weight (graph.h: memest_node.wformat)
 * and the model's quantisation settings. */
enum memest_wformat memest_wformat(const struct memest_ictx *c);
const struct memest_quant_params *memest_quant_params(const struct memest_ictx *c);
/* True when the node's parameter `name` (declared above) requires grad. */
bool memest_param_trainable(const struct memest_ictx *c, const char *name);

/* New output with fresh, contiguous storage. Returns the output's index in
 * this node (0, 1, ...) or -1. */
int memest_out_new(struct memest_ictx *c, int ndim, const int64_t *size, enum memest_dtype dt);
/* New output with fresh storage laid out like input `like` (elementwise ops
 * keep their input's memory format, as TensorIterator does). */
int memest_out_like(struct memest_ictx *c, const struct memest_shape *sizes, int like,
                    enum memest_dtype dt);
/* New output with a fresh storage of `numel` elements and the geometry
 * `geom` (offset 0), for kernels whose result is laid out otherwise than
 * contiguously (torch.empty_permuted, or a narrow of a padded buffer: the
 * memory-efficient and flash attention kernels); geom must lie within
 * numel elements. */
int memest_out_new_strided(struct memest_ictx *c, const struct memest_shape *geom, uint64_t numel,
                           enum memest_dtype dt);
/* Output that is a view of input `in`: same storage, the given sizes and
 * strides, element offset `offset` relative to the input's. */
int memest_out_view(struct memest_ictx *c, int in, const struct memest_shape *geom,
                    int64_t offset);
/* Output that reshapes input `in` to `sizes`: a view when PyTorch can view,
 * else a contiguous copy (a fresh storage). */
int memest_out_reshape(struct memest_ictx *c, int in, int ndim, const int64_t *size);
/* Output that is the node's declared parameter `name` itself (a leaf that
 * requires grad when trainable), e.g. the "parameter" op. */
int memest_out_param(struct memest_ictx *c, const char *name);
/* Declares buffer `name` (as memest_buffer) and an output that is that
 * buffer itself, requiring no grad (the "buffer" op: a module's
 * register_buffer tensor read by its forward). */
int memest_out_buffer(struct memest_ictx *c, const char *name, int ndim, const int64_t *size,
                      enum memest_dtype dt);
/* Output aliasing input `in` entirely (in-place ops). */
int memest_out_inplace(struct memest_ictx *c, int in);
/* Marks output k as a leaf that requires grad (or not), overriding the
 * default (outputs require grad when the node needs grad). */
void memest_out_set_requires_grad(struct memest_ictx *c, int k, bool rg);
/* The geometry of output k already declared. */
const struct memest_shape *memest_out_shape(const struct memest_ictx *c, int k);

/* Saved for backward: input i, output k, or an op-internal tensor (indices,
 * masks, statistics, workspaces) of the given size. Ignored when the node
 * does not need grad. A storage saved several times counts once. */
int memest_save_in(struct memest_ictx *c, int i);
int memest_save_out(struct memest_ictx *c, int k);
int memest_save_new(struct memest_ictx *c, int ndim, const int64_t *size, enum memest_dtype dt);
/* Saves input i as `reshape(i, ndim, size)` would see it: the input's own
 * storage when viewable, else a fresh contiguous copy (e.g. matmul folding
 * a permuted operand). */
int memest_save_in_reshaped(struct memest_ictx *c, int i, int ndim, const int64_t *size);

/* ---- What the backward of the node allocates ----
 * By default the backward of a node that autograd records produces a new
 * gradient tensor for every input that requires grad (its size, contiguous)
 * and for every trainable parameter, and allocates nothing else. Ops whose
 * backward passes a gradient through, or views it, say so: */
/* The gradient of input i is output `out`'s gradient itself (add with
 * alpha 1 and no broadcast, clone/contiguous, identity). */
void memest_grad_same(struct memest_ictx *c, int i, int out);
/* ... is output `out`'s gradient reshaped to input i's sizes (view, reshape,
 * flatten, squeeze...): a view when its layout allows, else a copy. */
void memest_grad_reshape(struct memest_ictx *c, int i, int out);
/* ... is output `out`'s gradient permuted by perm (permute, transpose; perm
 * is the inverse of the forward permutation), always a view. */
void memest_grad_permute(struct memest_ictx *c, int i, int out, const int *perm);
/* ... is a view into output `out`'s gradient (cat along dim). */
void memest_grad_slice(struct memest_ictx *c, int i, int out, int dim);
/* No gradient flows to input i (indices, masks). */
void memest_grad_none(struct memest_ictx *c, int i);
/* Scratch bytes the backward kernels allocate and free besides the
 * gradients (cuDNN-independent figures only). */
void memest_bwd_workspace(struct memest_ictx *c, uint64_t bytes);
/* The backward reshapes output 0's gradient as a contiguous tensor, copying
 * it when it is not (matmul and linear on >= 3-D, convolution). */
void memest_bwd_contiguous(struct memest_ictx *c);
/* The node's forward workspace (memest_workspace, which then counts what the
 * node made before its peak) is allocated and freed before its storages. */
void memest_work_first(struct memest_ictx *c);
/* The node's backward scratch (memest_bwd_workspace) is allocated and freed
 * before its input gradients (MEMEST_BWD_WORK_FIRST). */
void memest_bwd_work_first(struct memest_ictx *c);
/* The saves declared so far are read only by the node's last inner
 * autograd node (memest_nodeinfo.late_saves). */
void memest_late_saves(struct memest_ictx *c);
/* Of the backward scratch, bytes of saves released before its peak
 * (memest_nodeinfo.bwd_early_release). */
void memest_bwd_early_release(struct memest_ictx *c, uint64_t bytes);
/* The node runs an op of torchtitan's selective-checkpointing save list
 * (enum memest_sac_op, run.h). */
void memest_set_sac_op(struct memest_ictx *c, uint8_t op);
/* The node reads the model's attention mask (bytes), a workspace of the
 * node unless a checkpointed block holds it (memest_nodeinfo.mask_bytes). */
void memest_model_mask(struct memest_ictx *c, uint64_t bytes);
/* Under autocast, saves the low-precision copy of parameter `name` (which
 * the op uses instead of the float32 parameter); otherwise does nothing,
 * parameters not being activations. */
int memest_save_param(struct memest_ictx *c, const char *name);
/* The save just made (by the call before: it must have saved) is saved once
 * more by another autograd node of the op (a pack more for saved_tensors_hooks:
 * run.save_packs). */
void memest_save_repack(struct memest_ictx *c);

/* Forward MACs, and the MACs of the backward pass (gradient of each input
 * that requires grad, gradient of trainable weights): each given
 * separately so the caller can apply the rules in one place. */
void memest_macs(struct memest_ictx *c, double fwd);
void memest_macs_bwd(struct memest_ictx *c, double bwd);
/* Transient forward workspace in bytes (freed at the end of the op). */
void memest_workspace(struct memest_ictx *c, uint64_t bytes);
/* The op's first step on input 0 runs before its other inputs are made
 * (memest_nodeinfo.in0_first). */
void memest_in0_first(struct memest_ictx *c);

/* Fails the inference with a message naming the node and its input shapes.
 * Returns -1. */
int memest_fail(struct memest_ictx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* numel of sizes, overflow-checked; on overflow fails and returns false. */
bool memest_numel(struct memest_ictx *c, int ndim, const int64_t *size, uint64_t *out);
