/* sim_internal.h - the training-step simulator: one step of PyTorch training
 * (or a no-grad forward pass) as an ordered list of allocations and frees,
 * replayed through the caching-allocator model (alloc.c) to find the peak.
 *
 * The step is the one a training loop runs (PyTorch 2.x on CUDA):
 *
 *   def step(x, target):
 *       opt.zero_grad(set_to_none=True)          # --zero-grad zeros: in place
 *       out = model(x)                           # forward
 *       loss = cross_entropy(out, target)        # class_dim -1: out.reshape(-1, V)
 *       loss.backward()                          # backward
 *       opt.step()                               # optimizer
 *
 * Parameters, buffers, the optimizer state, x and target are live throughout;
 * `out` and `loss` (locals of the step) until the step ends. By default the
 * step simulated is the second one (steady state): the allocator has seen a
 * first step (its segments are cached, the optimizer state exists and was
 * allocated amid that step's tensors); --first-step simulates the first.
 *
 * Event model, in order:
 *   setup     parameters, buffers, x, target (and, in the steady state, the
 *             optimizer state and, with --zero-grad zeros, the gradients);
 *   forward   per node in graph order: autocast copies it reads, then its new
 *             storages (outputs and op-internal saved tensors), its forward
 *             workspace (allocated and freed); then every storage whose last
 *             reader it is goes, unless autograd saved it (it stays until the
 *             backward of the earliest node saving it) or the caller holds it
 *             (`out`, the last output). A block instance's inputs count as read
 *             until its last node (a module's forward() arguments live until
 *             it returns). The first matrix product allocates the cuBLAS
 *             workspace, kept for good;
 *             With --fused linear-ce the head linear and the nodes after it
 *             make nothing: the fused linear + cross-entropy runs at the
 *             head's place instead (sim_fused_ce.c);
 *   loss      the loss's forward and its backward down to the gradient of
 *             the model's last output (cross-entropy: log_softmax output
 *             [N, C] saved, nll_loss's scalar and total_weight; backward: the
 *             ones seed, nll_loss_backward's zeros [N, C], log_softmax's
 *             gradient [N, C]);
 *   backward  nodes in reverse graph order (the order of PyTorch's engine,
 *             which runs the ready node created last), skipping nodes no
 *             gradient reaches. Per node, as autograd's engine does
 *             (evaluate_function: call_function, release_variables, then the
 *             outputs go to the next nodes' input buffers):
 *               1. a contiguous copy of the incoming gradient if the op needs
 *                  one (MEMEST_BWD_CONTIG_OUT) and it is not;
 *               2. the gradients it produces: per input, as the op declared
 *                  (ops.h: new, the same tensor, a reshape/permute/slice view
 *                  of the incoming gradient), and one per trainable parameter;
 *               3. its backward scratch (allocated and freed);
 *               4. the incoming gradients are dropped, then the saved tensors
 *                  whose last saver this node is;
 *               5. each input's gradient goes to its producer's input buffer
 *                  (InputBuffer::accumulate: the first is kept; a second is
 *                  added in place into whichever of the two is the sole owner
 *                  of dense storage, else out of place into a new tensor);
 *                  under autocast, ToCopyBackward converts a gradient back to
 *                  the dtype of the tensor that was cast;
 *               6. each parameter gradient goes to AccumulateGrad, which
 *                  steals it when .grad is None and otherwise adds it in place
 *                  into .grad and drops it;
 *             a checkpointed block instance is recomputed when the backward
 *             reaches it: its forward again with grad (saving as usual), then
 *             its backward, then its recomputed outputs are dropped (the
 *             non-reentrant checkpoint of --loop torchtitan drops the
 *             block's outputs before its backward); under torchtitan's
 *             op-level selective checkpointing the outputs of the save
 *             list's ops (sim_analyze_sac) live from the forward on and are
 *             not made again; the model's attention mask, an input of every
 *             checkpointed block reading it, lives until the first one's
 *             backward ends;
 *   optimizer the optimizer's temporaries per implementation (see
 *             sim_optimizer.c), and in the first step the state it creates;
 *   teardown  everything left is freed (ids pair every ALLOC with a FREE).
 * With --grad-accum N, forward/loss/backward repeat per micro-batch; the
 * second micro-batch already adds into existing .grad, and later ones repeat
 * it exactly, so two are simulated. Inference (model.eval() under
 * torch.no_grad()): parameters, buffers and x, then the forward with nothing
 * saved and dropout returning its input.
 *
 * The peaks: `tensor_bytes`, the most live tensor bytes (exact sizes) at any
 * event; `bytes`, the allocator's allocated peak (block sizes: 512-byte
 * rounding and unsplit remainders), and `reserved`, its segments, from
 * replaying the caching allocator over setup, the warm-up step and the step,
 * with peak statistics reset when the step starts (as
 * torch.cuda.reset_peak_memory_stats() before it). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/checked.h"
#include "memest/dist.h"
#include "memest/ops.h"
#include "memest/sim.h"

/* The simulator's files, one per part of the step (their functions,
 * prefixed sim_, are declared below and used only by each other):
 *   sim_events.c    the state's allocations: events, storages, gradient slots
 *   sim_analysis.c  static analysis: reach, checkpointed blocks, liveness, release
 *   sim_forward.c   the forward pass
 *   sim_loss.c      the loss
 *   sim_fused_ce.c  --fused linear-ce: the head linear and the loss fused
 *   sim_backward.c  the backward pass and checkpointed recomputation
 *   sim_fused_grad.c the gradients of fused parameters read per slice
 *   sim_optimizer.c the optimizer step
 *   sim_generate.c  --generate: the cache's and generate()'s own tensors
 *   sim_step.c      the step driver and the entry point, memest_sim_step()
 *   sim_replay.c    allocator replay, export, peaks */

#define NONE UINT32_MAX
#define WARM 0x80u   /* phase bit of the warm-up step's events (not exported) */

/* ---- the simulator's state ---- */

struct gbuf {            /* one gradient tensor's storage */
    uint32_t id;         /* its allocation */
    uint32_t refs;       /* gradient slots viewing it */
};

struct gslot {           /* a gradient as some value holds it */
    uint32_t buf;
    struct memest_shape geom;
};

struct ckpt {            /* a checkpointed block instance */
    uint32_t first, last;
    uint32_t arg;        /* the storage of its positional argument (memest_block_inst.arg) */
};

struct sim_ext;
struct sim {
    const struct sim_ext *ext;    /* the step's extension (sim_dist_ext), or NULL */
    const struct memest_run *r;
    const struct memest_graph *g;
    const struct memest_step_cfg *cfg;
    struct memest_timeline *tl;   /* every event, warm-up included */
    struct memest_error *err;
    bool inference;
    enum memest_loss loss;
    uint8_t ph;                   /* current phase, | WARM in the warm-up step */
    uint32_t nn, ns, nv;

    /* static analysis */
    uint32_t *release;    /* storage -> node whose backward releases it (NONE: not kept) */
    uint32_t *relin;      /* storage -> its earliest saver inside a checkpointed block */
    uint32_t *rhead, *rnext;   /* storages by release node */
    uint32_t *ihead, *inext;   /* storages by relin node */
    uint32_t *fhead, *fnext;   /* storages by forward last use */
    uint32_t *lastuse;    /* storage -> last node that needs it in forward */
    uint32_t *alias;      /* inference: storage -> the storage it is in eval() (dropout) */
    uint32_t *sfirst;     /* node -> its first storage (nn + 1 entries: storages are in
                             node order, so node n's are sfirst[n] .. sfirst[n + 1] - 1) */
    uint8_t *held;        /* storage held by the caller: HELD_STEP (the model's last
                             output, --generate's cache) to the end of the step,
                             HELD_OUTPUT (a "held_until": "output" node's) while the
                             loop keeps the outputs (sim_drop_outputs) */
    bool held_outputs;    /* some storage is HELD_OUTPUT */
    bool outs_dropped;    /* the loop dropped the outputs (--loop trainer, ...) */
    uint32_t out_id;      /* the caller's `out` (take_outputs), NONE */
    uint8_t *reach;       /* node: a gradient reaches it */
    uint32_t *ck_of;      /* node -> index into ck, or NONE */
    struct ckpt *ck;
    uint32_t nck;
    uint32_t mask_ck;     /* the first checkpointed block reading the model's attention
                             mask (memest_nodeinfo.mask_bytes), NONE: the checkpoints
                             keep it from there until that block's backward ends */
    uint32_t mask_id;     /* its allocation while held, NONE */
    bool ck_nonreentrant; /* torchtitan's ptd_checkpoint_wrapper: the recomputed
                             block's outputs are dropped once it ran */
    bool ck_early_stop;   /* ... and its recomputation stops at the last node saving */
    uint8_t *sac;         /* storage: made by an op of the selective-checkpointing
                             save list, kept from the forward to the recomputation
                             (--checkpoint-policy torchtitan-op); NULL without */

    /* live state */
    uint32_t *sid;        /* storage -> live allocation id */
    uint32_t *vg;         /* value -> gradient slot */
    uint32_t *pg;         /* parameter storage -> .grad allocation id */
    /* fused parameters (graph.h: fuse_group; sim_fused_grad.c), NULL without */
    uint32_t *flead;      /* parameter storage -> its group's storage (the first
                             member's), NONE: not fused */
    uint64_t *fgb;        /* group's storage -> the fused parameter's bytes (its
                             trainable members') */
    uint32_t *fg;         /* group's storage -> the fused parameter's .grad id, NONE */
    uint32_t *fb;         /* ... the gradient its AccumulateGrad's input buffer holds, NONE */
    uint32_t *fcnt;       /* ... its members the backward reaches */
    uint32_t *fleft;      /* ... those not reached yet in this backward */
    uint32_t *cg;         /* cast storage -> accumulated low-precision gradient id */
    struct gbuf *gb;
    uint32_t ngb, capgb, *gbfree, ngbfree;
    struct gslot *gs;
    uint32_t ngs, capgs, *gsfree, ngsfree;
    uint32_t *state;      /* optimizer state ids, per trainable parameter storage: copies */
    uint32_t nstate, capstate;
    bool shared_state;    /* the optimizer's tensors made once (optim.h: nshared) exist */
    uint32_t *pids;       /* bwd_node's parameter gradient ids: the most parameters
                             of one node */
    uint32_t *held_ids;   /* the caller's `out` and `loss` of the current micro-batch */
    uint32_t nheld, capheld;
    uint32_t cublas;      /* cuBLAS workspace id: the main thread's handle */
    uint32_t cublas_bwd;  /* ... and the autograd engine's device thread's (sim_cublas) */
    bool in_recompute;

    /* --fused linear-ce (sim_fused_ce.c) */
    struct memest_fused_ce fce;
    uint8_t *fused;       /* node: replaced by the fused function (the head and the
                             nodes after it up to the last output); NULL when off */
    uint32_t fce_gi, fce_gw, fce_gb;   /* its saved grad_input, grad_weight, grad_bias */
    uint32_t fce_seed;    /* loss.backward()'s seed, its grad_output */

    /* --generate (sim_generate.c): the plan, its slots' allocation ids, the
     * next event to run */
    const struct memest_gen_plan *gen;
    uint32_t *gen_ids;
    uint32_t gen_next;

    /* several GPUs (sim_dist.c): the rank's view, its units (ranges of
     * nodes whose parameters are gathered together; root: index nunits),
     * their gathered bytes and live gather ids, the gradient partitions */
    const struct memest_rank_view *rv;
    uint32_t *unit_of;    /* node -> unit, NONE: the root */
    uint32_t nunits;
    uint32_t *ufirst, *ulast;   /* per unit */
    uint64_t *ugath;      /* per unit and the root: gathered bytes */
    uint64_t *ushard;     /* per unit and the root: the rank's shard, bytes (FSDP) */
    uint64_t *ugbytes;    /* its gradient's bytes (dist.h memest_flat_unit.grad_bytes) */
    uint64_t *ustate;     /* per unit and the root: the elements of the rank's shard the
                             optimizer updates (FSDP: dist.h memest_flat_unit.state) */
    uint64_t *ustbytes;   /* their bytes */
    uint32_t *ugid;       /* per unit and the root: live gathered id, NONE */
    uint32_t *ugid2;      /* ... and the rest after a partial prefetch, NONE */
    uint64_t *upre;       /* per unit: the bytes its live ugid holds (a ZeRO-3
                             prefetch: at most stage3_prefetch_bucket_size) */
    uint32_t *ugr;        /* per unit and the root: its gradient shard id (FSDP) */
    uint8_t *pred;        /* parameter storage: its gradient went to the partition */
    uint64_t e16;         /* the trainable parameters' element (DeepSpeed's 16-bit) */
    uint64_t zpart;       /* ZeRO: the rank's partition, in elements */
    uint32_t gpart;       /* DeepSpeed ZeRO-2/3: the gradient partition's id */
    uint32_t ipg[2];      /* DeepSpeed's reduce buckets, NONE */
    uint32_t bcur;        /* backward: the highest unit not yet released, NONE */
    uint64_t fwd_saved;   /* the saved activations alive when the forward ended */
    uint64_t bwd_saved;   /* the saved tensors alive when the backward starts */
    uint64_t saved_inputs; /* the model inputs some node saves (the user's tensors,
                              outside the saved category, kept by autograd too) */

    /* --activation-offload (sim_offload.c); off NULL without */
    uint8_t *off;         /* save (index into run.saves) -> OFF_NONE, OFF_MOVE, OFF_COPY */
    uint32_t *ocount;     /* storage -> its OFF_MOVE saves */
    uint32_t *opend;      /* ... not packed yet in this forward */
    uint32_t *stash;      /* ... fwd_stash entries holding it on the device */
    uint32_t *fq, *fq_n, *fq_id;  /* fwd_stash, in pack order: the storage, the node
                                     packing it, the pack id (tensor_id) ... */
    uint8_t *fq_k;        /* ... and OFF_MOVE or OFF_COPY */
    uint32_t fq_head, fq_tail;
    uint32_t pack_id;     /* the last pack's id (tensor_id) */
    uint32_t off_head;    /* the output head, under NoOpManager */
    uint32_t *bq;         /* bwd_tensor_stash: the copies brought back, allocation ids:
                             the previous unpacking node's [0, nbprev), then this node's */
    uint32_t nbq, nbprev, capbq;
    uint8_t *ck_off;      /* checkpointed block -> what its positional argument's pack
                             does (OFF_*) */
    bool ck_hook;         /* a block's argument came back: the post-hook of the
                             block's first node unpacking through the checkpoint */
    uint64_t host_now, host_peak, d2h, h2d;

    /* every allocation: alive, bytes, category (teardown, checks) */
    uint8_t *alive;
    uint32_t capalive;

    /* the allocator replayed as the events are made (sim_replay.c); the
     * events stored in tl only when the caller exports the timeline */
    struct sim_replay *rp;
    bool store;
    struct memest_alloc_trace *trace;   /* the requests, for replays (sim.h) */
};

/* ---- sizes ---- */

static inline uint64_t value_bytes(const struct memest_run *r, uint32_t v)
{
    uint64_t n;
    if (!memest_shape_numel(&r->values[v].shape, &n))
        return UINT64_MAX;
    return memest_sat_mul(n, memest_dtype_size((enum memest_dtype)r->values[v].dtype));
}

static inline uint32_t out_value(const struct memest_run *r, uint32_t node, uint32_t k)
{
    return r->nodes[node].out_first + k;
}

/* ---- storages ---- */

static inline bool persistent_kind(uint8_t kind)
{
    return kind == MEMEST_ST_PARAM || kind == MEMEST_ST_BUFFER || kind == MEMEST_ST_INPUT;
}

static inline bool param_cast(const struct memest_run *r, uint32_t s)
{
    return r->storages[s].kind == MEMEST_ST_CAST && r->storages[s].src != NONE &&
           r->storages[r->storages[s].src].kind == MEMEST_ST_PARAM;
}

static inline bool geom_contiguous(const struct memest_shape *g)
{
    return memest_shape_is_contiguous(g);
}

/* ---- the graph ---- */

static inline const struct memest_nodein *node_in(const struct memest_run *r, uint32_t n,
                                                  uint32_t i)
{
    return &r->ins[r->nodes[n].in_first + i];
}

enum { HELD_NONE = 0, HELD_STEP = 1, HELD_OUTPUT = 2 };

/* Whether storage s is the caller's now (not freed by its last reader nor
 * by its backward release). */
static inline bool sim_held(const struct sim *S, uint32_t s)
{
    return S->held[s] == HELD_STEP || (S->held[s] == HELD_OUTPUT && !S->outs_dropped);
}

/* The loop drops the model's outputs once the loss is computed (--loop
 * trainer, torchtune, torchtitan; sim_step.c): the caller's `out` and every
 * HELD_OUTPUT storage no backward keeps are freed; the saved ones die at
 * their release. No-op under --loop plain. */
int sim_drop_outputs(struct sim *S);

/* The value that receives the loss's gradient: the last model output. */
static inline uint32_t root_value(const struct sim *S)
{
    const struct memest_ref o = S->g->outputs[S->g->noutputs - 1];
    return out_value(S->r, o.node, o.out);
}

/* ---- sim_error.c ---- */

/* Out of memory (of the host, not the modelled device): S->err set; -1. */
int sim_nomem(struct sim *S);

/* ---- sim_events.c ---- */

int sim_grow_u32(uint32_t **a, uint32_t *cap, uint32_t need);
int sim_ev_alloc(struct sim *S, uint8_t cat, uint32_t node, uint64_t bytes, uint32_t *id);
/* The same on a stream (timeline.h: memest_event.stream); sim_ev_alloc is
 * stream 0's. */
int sim_ev_alloc_on(struct sim *S, uint8_t stream, uint8_t cat, uint32_t node, uint64_t bytes,
                    uint32_t *id);
/* Before node n runs a matrix product on the current thread (the backward
 * and its recomputations: the autograd engine's): that thread's cuBLAS
 * workspace, made the first time. 0 / -1. */
int sim_cublas(struct sim *S, uint32_t n, bool backward);
int sim_ev_free(struct sim *S, uint32_t node, uint32_t id);
/* The free, deferred (recorded) when record_stream marked the block as used
 * by another stream. */
int sim_ev_free_on(struct sim *S, uint32_t node, uint32_t id, bool recorded);
int sim_ev_transient(struct sim *S, uint8_t cat, uint32_t node, uint64_t bytes);
int sim_alloc_storage(struct sim *S, uint32_t s, uint8_t cat, uint32_t node);
int sim_free_storage(struct sim *S, uint32_t s, uint32_t node);
/* A gradient buffer over allocation id (already made). */
int sim_adopt_gbuf(struct sim *S, uint32_t id, uint32_t *out);
int sim_new_slot(struct sim *S, uint32_t buf, const struct memest_shape *geom, uint32_t *out);
/* A new contiguous gradient of value v's sizes. */
int sim_new_grad(struct sim *S, uint32_t node, uint32_t v, uint8_t cat, uint32_t *slot);
int sim_drop_slot(struct sim *S, uint32_t node, uint32_t k);
/* A gradient arrives for value v (InputBuffer::accumulate). */
int sim_deliver(struct sim *S, uint32_t node, uint32_t v, uint32_t slot);
/* AccumulateGrad: the parameter (storage ps) receives gradient allocation id. */
int sim_accumulate_param(struct sim *S, uint32_t node, uint32_t ps, uint32_t id);
/* AccumulateGrad's step with gradient id for storage ps into the slot
 * *grad (.grad: stolen when NONE, else added in place and freed), after
 * DeepSpeed's buckets (SIM_EXT accumulate) had their say. */
int sim_accumulate_into(struct sim *S, uint32_t node, uint32_t ps, uint32_t id, uint32_t *grad);
/* Allocation id is held until the step ends (the loss scalar, the step's
 * own tensors): freed with the others then. */
int sim_remember_held(struct sim *S, uint32_t id);

/* ---- sim_fused_grad.c ---- */

/* The fused groups of the run's parameters (S->flead, fgb, fg); 0 / -1. */
int sim_fused_grad_setup(struct sim *S);
void sim_fused_grad_free(struct sim *S);
/* AccumulateGrad of a fused member's slice gradient (allocation id) into
 * the fused parameter, through SelectBackward; 0 / -1. */
int sim_fused_accumulate(struct sim *S, uint32_t node, uint32_t ps, uint32_t id);
/* The fused .grad of parameter storage ps when it is a member, else NONE. */
static inline uint32_t sim_fused_grad_of(const struct sim *S, uint32_t ps)
{
    return S->flead && S->flead[ps] != NONE ? S->fg[S->flead[ps]] : NONE;
}
/* zero_grad(set_to_none): the fused parameters' .grad go; 0 / -1. */
int sim_fused_zero_grad(struct sim *S);
/* A backward starts: no member reached yet. */
void sim_fused_backward_begin(struct sim *S);
/* The backward ends: a buffer left (a member counted but not reached) goes
 * to AccumulateGrad; 0 / -1. */
int sim_fused_backward_end(struct sim *S);

/* ---- sim_analysis.c ---- */

int sim_analyze_reach(struct sim *S, uint8_t *vreach);
int sim_analyze_checkpoint(struct sim *S);
void sim_analyze_lastuse(struct sim *S);
void sim_analyze_release(struct sim *S);
int sim_analyze_sac(struct sim *S);
static inline bool sim_sac(const struct sim *S, uint32_t s) { return S->sac && S->sac[s]; }

/* ---- sim_offload.c ---- */

enum { OFF_NONE = 0, OFF_MOVE, OFF_COPY };
/* Which saves --activation-offload moves (S->off), before sim_analyze_release;
 * 0 / -1 (no-op without it). */
int sim_offload_setup(struct sim *S);
void sim_offload_free(struct sim *S);
static inline bool sim_offloaded(const struct sim *S, uint32_t k)
{
    return S->off && S->off[k] != OFF_NONE;
}
/* Checkpointed block c's positional argument s goes to the host in its
 * place (the non-reentrant checkpoint's _NoopSaveInputs, packed by the
 * offloading's hooks). */
static inline bool sim_ck_offloaded(const struct sim *S, uint32_t c, uint32_t s)
{
    return S->ck_off && S->ck_off[c] == OFF_MOVE && S->ck[c].arg == s;
}
/* Storage s stays on the device for the offloading (packed, its copy not
 * done: in fwd_stash; or to be packed). */
static inline bool sim_offload_holds(const struct sim *S, uint32_t s)
{
    return S->off && (S->stash[s] || S->opend[s]);
}
/* A training forward starts. */
void sim_offload_forward_begin(struct sim *S);
/* Node n's saves are packed (after its storages are made, before its last
 * uses are freed). 0 / -1. */
int sim_offload_pack(struct sim *S, uint32_t n);
/* Node n's backward unpacks its saves (before it runs; late: those its last
 * inner autograd node reads, after its first scratch), and its post-hook
 * (after it ran). 0 / -1. */
int sim_offload_unpack(struct sim *S, uint32_t n, bool late);
int sim_offload_hook(struct sim *S, uint32_t n);
/* A node with late saves: the post-hook of its first inner node, before its
 * scratch (0 / -1); and the bytes of the saves its inner nodes release
 * before the scratch's peak whose copies bwd_tensor_stash keeps through it. */
int sim_offload_inner_hook(struct sim *S, uint32_t n);
uint64_t sim_offload_held_early(const struct sim *S, uint32_t n);
/* A checkpointed block's positional argument: packed in the forward before
 * the block's first node n runs (non-reentrant) or after its last one (end:
 * reentrant; nothing at other nodes); unpacked as block c's recomputation
 * starts, its checkpoint node's post-hook when its backward is done
 * (reentrant). 0 / -1. */
int sim_offload_ck_pack(struct sim *S, uint32_t n, bool end);
int sim_offload_ck_unpack(struct sim *S, uint32_t c);
int sim_offload_ck_done(struct sim *S, uint32_t c);
/* The backward's end: the queued callback frees what bwd_tensor_stash holds. */
int sim_offload_backward_end(struct sim *S);

/* ---- sim_forward.c ---- */

enum fmode { FM_TRAIN, FM_NOGRAD, FM_RECOMPUTE };

int sim_forward_node(struct sim *S, uint32_t n, enum fmode m, const struct ckpt *k,
                     uint32_t *sfirst);
int sim_clear_cast_cache(struct sim *S, uint32_t lo, uint32_t hi, enum fmode m,
                         const struct ckpt *k);
int sim_forward(struct sim *S, enum fmode m);

/* ---- sim_loss.c ---- */

int sim_loss_step(struct sim *S);

/* ---- sim_fused_ce.c ---- */

static inline bool fused_node(const struct sim *S, uint32_t n)
{
    return S->fused && S->fused[n];
}
int sim_fused_ce_setup(struct sim *S);
int sim_fused_ce_forward(struct sim *S, uint32_t n);
int sim_fused_ce_loss(struct sim *S);
int sim_fused_ce_backward(struct sim *S, uint32_t n);

/* ---- sim_backward.c ---- */

int sim_backward(struct sim *S);

/* ---- sim_optimizer.c ---- */

int sim_optimizer(struct sim *S, bool first);
/* Allocates the optimizer state of parameter pp (optim.h), made once (the
 * optimizer's shared tensors with the first state using them) and in
 * device memory only (paged tensors are not the caching allocator's), then
 * its device `step` scalar with dev_step. 0 / -1. */
int sim_optim_state(struct sim *S, const struct memest_param *pp, bool dev_step);
/* A gathering optimizer's update on a rank of ZeRO or FSDP (optim.h:
 * memest_optim_desc.gprog, Distributed Muon): each trainable matrix's
 * program in turn, its partition (memest_optim_part_elems: by_rows for
 * FSDP2) of elem-byte elements, its full-size temporaries freed before the
 * next. 0 / -1. */
int sim_optim_gather(struct sim *S, uint64_t ranks, bool by_rows, uint64_t elem);

/* ---- the step's extensions ---- */

/* What an extension adds to the one-GPU step (sim_dist.c's several-GPU
 * accounting): hooks the event core calls at those points, each NULL when
 * unused and 0 / -1 unless said. The step registers one in S->ext (NULL:
 * none), as the probe's backend (probe_internal.h) is a table of calls. */
struct sim_ext {
    int (*setup)(struct sim *S);       /* after the persistent storages */
    int (*zero_grad)(struct sim *S);   /* zero_grad(set_to_none) at the step's start */
    /* forward: before and after node n, and at its end */
    int (*fwd_enter)(struct sim *S, uint32_t n);
    int (*fwd_leave)(struct sim *S, uint32_t n);
    int (*fwd_end)(struct sim *S);
    /* backward: at its start, before the nodes lo..hi run (one node, or a
     * checkpointed block instance), after they ran, and at its end */
    int (*bwd_begin)(struct sim *S);
    int (*bwd_enter)(struct sim *S, uint32_t lo, uint32_t hi);
    int (*bwd_leave)(struct sim *S, uint32_t lo);
    int (*bwd_end)(struct sim *S);
    /* AccumulateGrad of allocation id into parameter storage ps: 1 when it
     * took the gradient, 0 when the core keeps it, -1 */
    int (*accumulate)(struct sim *S, uint32_t node, uint32_t ps, uint32_t id);
    /* the optimizer step: 1 when it ran it itself, 0 when the core runs it, -1 */
    int (*optimizer)(struct sim *S, bool first);
};
/* Calls S's extension's hook with the arguments after it; 0 without one. */
#define SIM_EXT(S, hook, ...) ((S)->ext && (S)->ext->hook ? (S)->ext->hook(__VA_ARGS__) : 0)

/* ---- sim_dist.c ---- */

static inline bool dist_on(const struct sim *S)
{
    return S->rv != NULL;
}
/* Units and gathered bytes (analysis); 0 / -1. */
int sim_dist_analyze(struct sim *S);
void sim_dist_free(struct sim *S);
/* Whether parameter storage ps has a gradient for the step. */
static inline bool sim_has_grad(const struct sim *S, uint32_t ps)
{
    return S->pg[ps] != NONE || sim_fused_grad_of(S, ps) != NONE || (S->pred && S->pred[ps]);
}
/* The several-GPU accounting, as the step's extension (S->ext with a rank
 * view): the rank's parameters (shards), DDP's buckets, ZeRO-3's bucket at
 * setup; gathers around the nodes of forward (a no-grad pass gathers too)
 * and backward; DeepSpeed's ZeRO-2/3 buckets taking the gradients; the
 * optimizer step over the rank's partition (ZeRO, FSDP); zero_grad. */
extern const struct sim_ext sim_dist_ext;

/* ---- sim_generate.c ---- */

int sim_gen_setup(struct sim *S);
/* Runs the plan's events at node n (PRE or POST) or its TAIL. */
int sim_gen_events(struct sim *S, uint8_t at, uint32_t n);

/* ---- sim_replay.c ---- */

/* The replay of the events as the simulator makes them: begun before the
 * first event (layout: record the allocator's segments and addresses, for
 * the probe; trace: append every request the allocator serves, sim.h),
 * told when the step starts (the warm-up and setup before it),
 * fed every event (sim_events.c), finished into the peaks and, with out,
 * the exported step (the events stored in S->tl). 0 / -1. */
int sim_replay_begin(struct sim *S, bool layout, struct memest_alloc_trace *trace,
                     uint64_t events);
void sim_replay_start(struct sim *S);
int sim_replay_event(struct sim *S, struct memest_event *ev);
int sim_finish(struct sim *S, struct memest_timeline *out, struct memest_peak *pk);
void sim_replay_free(struct sim *S);
/* The exact bytes of the saved activations alive now. */
uint64_t sim_replay_saved(const struct sim *S);
/* The most the saved activations have been since the last call (which
 * this one starts again from the bytes alive now). */
uint64_t sim_replay_saved_mark(struct sim *S);
/* The events replayed so far. */
size_t sim_replay_events(const struct sim *S);
