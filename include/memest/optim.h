/* optim.h - the optimizer table (src/step/optim.c): one descriptor per
 * torch.optim class (and per bitsandbytes optimizer, bnb.optim), holding
 * everything memest knows of it: the flags the command line accepts for it,
 * the state it keeps per parameter (paged or not) and when it creates that
 * state, its `step` scalars, the temporaries of one update per
 * implementation, and whether PyTorch has a fused kernel for it. The
 * calculators, the simulator, the event bound, the command line, the advice
 * and the reports read this table; none of them names an optimizer kind
 * (layer "step"). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct memest_step_cfg;   /* step.h */

/* The optimizer (torch.optim class, in lower case): an enumerator here and
 * a descriptor in the table of optim.c, which holds its name and everything
 * memest knows of it. */
enum memest_optim {
    MEMEST_OPT_SGD = 0,
    MEMEST_OPT_ADAM,
    MEMEST_OPT_ADAMW,
    MEMEST_OPT_RMSPROP,
    MEMEST_OPT_ADAGRAD,
    /* bitsandbytes (bnb.optim): Adam8bit, AdamW8bit, PagedAdam8bit,
     * PagedAdamW8bit, PagedAdamW, PagedAdamW32bit */
    MEMEST_OPT_ADAM8BIT,
    MEMEST_OPT_ADAMW8BIT,
    MEMEST_OPT_PAGED_ADAM8BIT,
    MEMEST_OPT_PAGED_ADAMW8BIT,
    MEMEST_OPT_PAGED_ADAMW,
    MEMEST_OPT_PAGED_ADAMW32BIT,
    MEMEST_OPT_ADAFACTOR,      /* torch.optim.Adafactor (PyTorch 2.5 on) */
    /* bitsandbytes' Lion (bnb.optim.Lion, Lion8bit, PagedLion, PagedLion8bit:
     * the Trainer's lion_32bit, lion_8bit, paged_lion_32bit, paged_lion_8bit) */
    MEMEST_OPT_LION,
    MEMEST_OPT_LION8BIT,
    MEMEST_OPT_PAGED_LION,
    MEMEST_OPT_PAGED_LION8BIT,
    MEMEST_OPT_MUON,           /* torch.optim.Muon (PyTorch 2.9 on) for the hidden
                                  matrices, torch.optim.AdamW for the rest */
    MEMEST_OPT_HF_ADAFACTOR,   /* transformers.optimization.Adafactor (the Trainer's
                                  optim="adafactor") */
    MEMEST_OPT_COUNT
};
struct memest_optim_cfg {
    enum memest_optim kind;
    double momentum;    /* sgd, rmsprop */
    bool amsgrad;       /* adam, adamw */
    bool centered;      /* rmsprop */
};
const char *memest_optim_name(enum memest_optim k);
/* Exact name; 0, or -1 for an unknown name. */
int memest_optim_parse(const char *s, enum memest_optim *out);


/* What the command line accepts for an optimizer (memest_optim_desc.accepts). */
#define MEMEST_OPTF_MOMENTUM 1u   /* --momentum (torch.optim's momentum=) */
#define MEMEST_OPTF_AMSGRAD 2u    /* --amsgrad */
#define MEMEST_OPTF_CENTERED 4u   /* --centered */
#define MEMEST_OPTF_FUSED 8u      /* --optim-impl fused: a fused CUDA kernel exists */

/* When the optimizer creates its state. */
enum memest_optim_init {
    MEMEST_INIT_FIRST_STEP = 0,  /* _init_group, at the start of the first step():
                                    zeros_like per parameter, before the update */
    MEMEST_INIT_LAZY_CLONE,      /* during the first update, parameter by parameter:
                                    buffer = torch.clone(grad).detach() */
    MEMEST_INIT_CONSTRUCTOR,     /* in the optimizer's __init__: before any step */
    MEMEST_INIT_PER_PARAM,       /* during the first step, each parameter's just
                                    before its update (bitsandbytes'
                                    Optimizer8bit.step: init_state, update_step) */
};

/* Most device state tensors per parameter, and most entries and lists of a
 * foreach program. */
#define MEMEST_OPTIM_MAX_STATE 4
#define MEMEST_OPTIM_MAX_PROG 8
#define MEMEST_OPTIM_MAX_LISTS 4

/* The size of one temporary of a foreach list, for a parameter of sizes
 * [..., m, n] (a parameter of one dimension or none: FULL only). */
enum memest_optim_tsize {
    MEMEST_OTS_FULL = 0,   /* the parameter's */
    MEMEST_OTS_ROWS,       /* reduced over the last dimension: numel / n */
    MEMEST_OTS_COLS,       /* over the one before: numel / m */
    MEMEST_OTS_CORNER,     /* over both: numel / (m n) */
};

/* A foreach update as whole-list allocations, each list one temporary per
 * updated parameter (of size[k], the parameter's by default): +k makes
 * list k (1..MEMEST_OPTIM_MAX_LISTS), -k drops it (last tensor first); a
 * list made again (the next group's, memest_optim_desc.by_dim) replaces
 * the one before once it is made; every list left is dropped when step()
 * returns. n = 0: no temporaries. */
struct memest_optim_prog {
    int8_t op[MEMEST_OPTIM_MAX_PROG];
    uint8_t n;
    uint8_t size[MEMEST_OPTIM_MAX_LISTS + 1];   /* enum memest_optim_tsize per list */
};

/* One trainable parameter as an optimizer's state function sees it. */
struct memest_optim_param {
    uint64_t numel;
    uint64_t bytes;          /* its storage's */
    uint64_t rows, cols;     /* of sizes [..., m, n]: numel / n and numel / m; both 0 for
                                a parameter of one dimension or none (and for the flat
                                shards ZeRO and FSDP hand the optimizer) */
    uint8_t ndim;            /* its dimensions (0 for a flat shard or unknown) */
    uint8_t dtype;           /* enum memest_dtype; MEMEST_F32 when unknown */
    bool nonhidden;          /* an embedding table (op .lookup_table) or the model's
                                output head (graph.h memest_graph_output_head): not a
                                hidden layer's matrix (Muon leaves it to AdamW) */
};

/* The temporaries of one parameter's update in an optimizer that updates
 * parameter by parameter with temporaries of several sizes (a Python loop:
 * torch.optim.Muon's _single_tensor_muon, transformers' Adafactor.step), as
 * named slots: op[k] = +s makes a temporary of bytes[s] for slot s, then
 * frees the one slot s held before (a Python name rebound); -s frees slot
 * s's (none: nothing). Slots left at the end stay (names still bound) into
 * the next parameter's program; all are freed when step() returns. The
 * parameter's state is made (init MEMEST_INIT_PER_PARAM) before op[state_at]. */
#define MEMEST_OPTIM_MAX_PSTEP 48
#define MEMEST_OPTIM_MAX_SLOTS 9
struct memest_optim_pprog {
    int8_t op[MEMEST_OPTIM_MAX_PSTEP];
    uint8_t n;
    uint8_t state_at;
    uint64_t bytes[MEMEST_OPTIM_MAX_SLOTS + 1];
};

/* The state tensors an optimizer keeps for one parameter. */
struct memest_optim_state {
    uint64_t bytes[MEMEST_OPTIM_MAX_STATE];   /* in creation order */
    unsigned n;
    unsigned paged;          /* bit i: tensor i is in unified memory
                                (bitsandbytes' get_paged: cudaMallocManaged),
                                outside PyTorch's caching allocator */
    bool shared;             /* it uses the tensors made once
                                (memest_optim_desc.nshared) */
    bool aux;                /* the parameter is the auxiliary optimizer's
                                (memest_optim_desc.aux: Muon's AdamW) */
};

struct memest_optim_desc {
    const char *name;        /* torch.optim class, in lower case (bitsandbytes':
                                the --optim name of optim.c) */
    unsigned accepts;        /* MEMEST_OPTF_* */
    /* The state tensors kept per trainable parameter p under cfg, in *s. A
     * function, not a count: an 8-bit or sharded optimizer keeps tensors of
     * other sizes. */
    void (*state)(const struct memest_optim_param *p, const struct memest_optim_cfg *cfg,
                  struct memest_optim_state *s);
    /* Device tensors of shared_bytes each made once, before the state of
     * the first parameter whose state uses them (bitsandbytes' qmap1 and
     * qmap2), kept as state. */
    unsigned nshared;
    uint64_t shared_bytes;
    /* Whether the optimizer may page its state (is_paged): the reports then
     * show the unified-memory bytes. */
    bool paged;
    /* For the text report, what the state is when it is not copies of the
     * parameters (NULL: "N copies of the trainable parameters"). */
    const char *note;
    /* The one implementation of an optimizer outside torch.optim
     * ("bitsandbytes": its fused kernel, whatever --optim-impl says; no
     * temporaries), or NULL: --optim-impl's. */
    const char *kernel;
    enum memest_optim_init init;
    bool step_scalar;        /* a 0-d float32 `step` tensor per parameter: on the
                                host, on the device with --optim-impl fused */
    unsigned fused_since;    /* first PyTorch with fused=True on CUDA, major * 100
                                + minor (200 = 2.0); 0 = none (MEMEST_OPTF_FUSED) */
    struct memest_optim_prog foreach;      /* PyTorch 2.x's _multi_tensor_* */
    struct memest_optim_prog foreach113;   /* PyTorch 1.13's */
    unsigned forloop_temps;  /* _single_tensor_*: temporaries made per parameter,
                                each dying when the next is made; the last lives
                                until the next parameter's replaces it */
    bool no_forloop;         /* the for-loop's temporaries are not modelled: refused */
    unsigned since;          /* first PyTorch with it, major * 100 + minor; 0: any */
    /* Adafactor's foreach groups the parameters by whether they have more
     * than one dimension, in the order each group's first appears, and runs
     * `foreach` over the matrices and `foreach_vec` over the others */
    bool by_dim;
    struct memest_optim_prog foreach_vec;
    /* An update parameter by parameter (memest_optim_pprog), whatever
     * --optim-impl says, or NULL; n = 0 for a parameter it leaves to the
     * auxiliary optimizer. */
    void (*pprog)(const struct memest_optim_param *p, struct memest_optim_pprog *out);
    /* The multiply-accumulates of one update of parameter p in matrix
     * products (Muon's Newton-Schulz iterations), or NULL: none (elementwise
     * updates count none, as the calculators count only products). */
    uint64_t (*macs)(const struct memest_optim_param *p);
    /* The optimizer the parameters pprog leaves (state .aux) go to, its
     * step() after this one's, following --optim-impl: with_aux. */
    bool with_aux;
    enum memest_optim aux;
    /* The update is modelled on whole parameters only: ZeRO, FSDP and model
     * parallelism (tensor, context, pipeline, expert) refused; one GPU and
     * DDP (each rank updates every whole parameter) are. */
    bool whole_params;
    /* Under ZeRO and FSDP, the distributed variant that gathers each matrix
     * before its update (Distributed Muon, optim.c): its program for p on
     * one of `ranks` ranks holding `part` of its elements in elem-byte
     * state, one matrix at a time (n = 0: the auxiliary optimizer's
     * parameter), or NULL. Model parallelism and --offload stay refused
     * for it. */
    void (*gprog)(const struct memest_optim_param *p, uint64_t part, uint64_t ranks, uint64_t elem,
                  struct memest_optim_pprog *out);
    /* The library of an optimizer outside torch.optim that is no kernel of
     * its own ("transformers": a Python loop, pprog; the reports call its
     * implementation for-loop whatever --optim-impl says), or NULL. */
    const char *library;
};

/* The descriptor of k (a valid kind). */
const struct memest_optim_desc *memest_optim_desc(enum memest_optim k);

/* The device state tensors per parameter of cfg (memest_optim_desc.state
 * with parameters of 0 bytes: only the count). */
unsigned memest_optim_state_count(const struct memest_optim_cfg *cfg);

/* The most state tensors cfg's optimizer makes per parameter, the tensors
 * it makes once counted with each (an upper bound for the event count). */
unsigned memest_optim_state_max(const struct memest_optim_cfg *cfg);

/* The state of parameter p under cfg (memest_optim_desc.state); shape
 * NULL: a flat tensor of one dimension. */
void memest_optim_param_state(const struct memest_optim_cfg *cfg, uint64_t numel, uint64_t bytes,
                              struct memest_optim_state *s);
void memest_optim_shaped_state(const struct memest_optim_cfg *cfg, const struct memest_optim_param *p,
                               struct memest_optim_state *s);
/* The parameter of the given sizes (rows and cols from its last two). */
struct memest_optim_param memest_optim_param_of(uint64_t numel, uint64_t bytes, int ndim,
                                                const int64_t *size);
/* Run r's parameter i (run.h), with its dtype and whether it is an
 * embedding table or the output head. */
struct memest_run;
struct memest_optim_param memest_optim_param_run(const struct memest_run *r, uint32_t i);
/* Whether parameter state st (of cfg) has a `step` scalar: the
 * descriptor's, or its auxiliary optimizer's for an aux parameter. */
bool memest_optim_state_steps(const struct memest_optim_cfg *cfg, const struct memest_optim_state *st);
/* The per-parameter program of cfg's optimizer for p (n = 0: none, or
 * the auxiliary optimizer's parameter). */
void memest_optim_param_prog(const struct memest_optim_cfg *cfg, const struct memest_optim_param *p,
                             struct memest_optim_pprog *out);
/* The elements of p a rank holds among `ranks`: ceil(numel / ranks) (ZeRO,
 * FSDP1: each parameter cut evenly), or by_rows ceil(dim0 / ranks) rows of
 * a matrix (FSDP2's dim-0 chunks, padded). */
uint64_t memest_optim_part_elems(const struct memest_optim_param *p, uint64_t ranks, bool by_rows);
/* The gathering program of cfg's optimizer for p on one of `ranks` ranks,
 * cut as memest_optim_part_elems cuts it, its state elem bytes an element
 * (memest_optim_desc.gprog; n = 0 without one, or for the auxiliary
 * optimizer's parameter). */
void memest_optim_gather_prog(const struct memest_optim_cfg *cfg, const struct memest_optim_param *p,
                              uint64_t ranks, bool by_rows, uint64_t elem,
                              struct memest_optim_pprog *out);
/* The state of a rank's flat partition of numel elements of `bytes` in all,
 * matrices of them in the gathering optimizer's matrices (memest_optim_desc
 * .gprog: Muon's momentum_buffer, 1 copy) and the rest its auxiliary
 * optimizer's (AdamW's 2), each bytes / numel per element; without gprog
 * the optimizer's state of the flat tensor (memest_optim_param_state). */
void memest_optim_part_state(const struct memest_optim_cfg *cfg, uint64_t numel, uint64_t bytes,
                             uint64_t matrices, struct memest_optim_state *s);
/* The elements a rank holds of the gathering optimizer's matrices among r's
 * trainable parameters (each matrix's memest_optim_part_elems), of every
 * parameter (unit_of NULL) or of those whose node is in unit u of unit_of
 * (nunits: the root, the nodes outside every unit); 0 without gprog. */
uint64_t memest_optim_part_matrices(const struct memest_optim_cfg *cfg, const struct memest_run *r,
                                    uint64_t ranks, bool by_rows, const uint32_t *unit_of,
                                    uint32_t u, uint32_t nunits);
/* The multiply-accumulates one update of p makes in matrix products
 * (memest_optim_desc.macs; 0 without). */
uint64_t memest_optim_param_macs(const struct memest_optim_cfg *cfg, const struct memest_optim_param *p);
/* The bytes of one temporary of size class t for parameter p. */
uint64_t memest_optim_temp_bytes(const struct memest_optim_param *p, enum memest_optim_tsize t);

/* The foreach program of cfg's optimizer for the PyTorch torch_version
 * follows (step.h: 0 = 2.x, 113 = 1.13). */
const struct memest_optim_prog *memest_optim_foreach(enum memest_optim k, unsigned torch_version);

/* Temporaries one update makes per updated parameter (lists made by the
 * foreach program, forloop_temps, none fused): the event bound's count. */
unsigned memest_optim_temporaries(const struct memest_step_cfg *cfg);
/* The same for a parameter of more than one dimension (matrix) or not:
 * they differ for an optimizer with by_dim programs (Adafactor's). */
unsigned memest_optim_temporaries_of(const struct memest_step_cfg *cfg, bool matrix);

/* The temporaries one update makes for parameter p (the event bound's
 * count): its per-parameter program's, its auxiliary optimizer's for a
 * parameter that goes there, else memest_optim_temporaries_of. */
unsigned memest_optim_param_temporaries(const struct memest_step_cfg *cfg,
                                        const struct memest_optim_param *p);

/* Whether the update keeps a `step` scalar per parameter on the device (a
 * fused update of an optimizer with step scalars: one 4-byte tensor each,
 * created with the state), rather than on the host. */
bool memest_optim_device_steps(const struct memest_step_cfg *cfg);

/* "sgd, adam and adamw": the optimizers accepting flag (MEMEST_OPTF_*), for
 * messages; buf of n bytes, returned. */
const char *memest_optim_accepting(unsigned flag, char *buf, size_t n);

/* "sgd, adam, adamw, rmsprop, adagrad": every optimizer, for messages;
 * buf of n bytes, returned. */
const char *memest_optim_names(char *buf, size_t n);

/* The cheaper optimizer --advise proposes instead of any other: SGD with
 * momentum 0.9 (one state copy, no temporaries), under a stable key for
 * --json. */
struct memest_optim_alt {
    const char *key;
    struct memest_optim_cfg cfg;
};
extern const struct memest_optim_alt memest_optim_lean;

/* The bitsandbytes 8-bit optimizer --advise proposes instead of cur (Adam,
 * AdamW, the paged 32-bit AdamW, Lion and PagedLion: the same update with
 * 1-byte states,
 * key "optim_8bit") in *out: 0, or -1 when there is none (other
 * optimizers, amsgrad, which bitsandbytes' 8-bit Adam lacks). */
int memest_optim_8bit(const struct memest_optim_cfg *cur, struct memest_optim_cfg *out);
#define MEMEST_OPTIM_8BIT_KEY "optim_8bit"
