/* calc_peak.c - the training-step simulator: one step of PyTorch training
 * (or a no-grad forward pass) as an ordered list of allocations and frees,
 * replayed through the caching-allocator model (alloc.c) to find the peak.
 *
 * The step is the one a training loop runs (PyTorch 2.x on CUDA):
 *
 *   def step(x, target):
 *       opt.zero_grad(set_to_none=True)          # --zero-grad zeros: in place
 *       out = model(x)                           # forward
 *       loss = cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))
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
 *             its backward, then its recomputed outputs are dropped;
 *   optimizer the optimizer's temporaries per implementation (see optimizer()
 *             below), and in the first step the state it creates;
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
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "memest/alloc.h"
#include "memest/calc.h"
#include "memest/checked.h"
#include "memest/ops.h"

#define NONE UINT32_MAX
#define WARM 0x80u   /* phase bit of the warm-up step's events (not exported) */

/* ---- losses ---- */

static const char *const loss_names[MEMEST_LOSS_COUNT] = {
    [MEMEST_LOSS_CROSSENTROPY] = "crossentropyloss", [MEMEST_LOSS_NLL] = "nllloss",
    [MEMEST_LOSS_MSE] = "mseloss",                   [MEMEST_LOSS_L1] = "l1loss",
    [MEMEST_LOSS_SMOOTHL1] = "smoothl1loss",         [MEMEST_LOSS_HUBER] = "huberloss",
    [MEMEST_LOSS_BCEWITHLOGITS] = "bcewithlogitsloss", [MEMEST_LOSS_NONE] = "none",
};

int memest_loss_parse(const char *s, enum memest_loss *out)
{
    for (int i = 0; i < MEMEST_LOSS_COUNT; i++) {
        const char *a = s, *b = loss_names[i];
        while (*a && *b && tolower((unsigned char)*a) == *b)
            a++, b++;
        if (!*a && !*b) {
            *out = (enum memest_loss)i;
            return 0;
        }
    }
    return -1;
}

const char *memest_loss_name(enum memest_loss l)
{
    return (unsigned)l < MEMEST_LOSS_COUNT ? loss_names[l] : "?";
}

const char *memest_loss_names(void)
{
    return "crossentropyloss, nllloss, mseloss, l1loss, smoothl1loss, huberloss, "
           "bcewithlogitsloss, none";
}

/* ---- device overhead ----
 * What nvidia-smi shows beyond memory_reserved() is mostly the CUDA context:
 * about 287 MB with lazy module loading (CUDA >= 11.7, CUDA_MODULE_LOADING=
 * LAZY, which PyTorch 2.x sets by default) against 667 MB loaded eagerly
 * (PyTorch PR #86509, measured on an A100; /work/shared/reference). No
 * per-generation figure is published, so every generation uses it; pass
 * --overhead to use a measured one (nvidia-smi minus memory_reserved()).
 * cuBLAS's workspace is not overhead: PyTorch takes it from the caching
 * allocator on the first matrix product, one per handle and stream
 * (aten/src/ATen/cuda/CublasHandlePool.cpp, getChosenWorkspaceSize():
 * 4096 KiB * 2 + 16 KiB * 8 = 8.125 MiB, 4096 KiB * 8 = 32 MiB on sm90), so it
 * is in the simulated allocated and reserved figures. cuDNN's workspaces
 * (algorithm-dependent) and NCCL buffers are not modelled. */
uint64_t memest_default_overhead(unsigned gpu_arch)
{
    (void)gpu_arch;
    return 287000000;
}

uint64_t memest_cublas_workspace(unsigned gpu_arch)
{
    if (gpu_arch == 90)
        return (uint64_t)4096 * 1024 * 8;
    return (uint64_t)4096 * 1024 * 2 + 16 * 1024 * 8;
}

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
};

struct sim {
    const struct memest_run *r;
    const struct memest_graph *g;
    const struct memest_step_cfg *cfg;
    const struct memest_optstate *opt;
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
    uint8_t *held;        /* storage held by the caller (model outputs) */
    uint8_t *reach;       /* node: a gradient reaches it */
    uint32_t *ck_of;      /* node -> index into ck, or NONE */
    struct ckpt *ck;
    uint32_t nck;

    /* live state */
    uint32_t *sid;        /* storage -> live allocation id */
    uint32_t *vg;         /* value -> gradient slot */
    uint32_t *pg;         /* parameter storage -> .grad allocation id */
    uint32_t *cg;         /* cast storage -> accumulated low-precision gradient id */
    struct gbuf *gb;
    uint32_t ngb, capgb, *gbfree, ngbfree;
    struct gslot *gs;
    uint32_t ngs, capgs, *gsfree, ngsfree;
    uint32_t *state;      /* optimizer state ids, per trainable parameter storage: copies */
    uint32_t nstate, capstate;
    uint32_t *pids;       /* bwd_node's parameter gradient ids: the most parameters
                             of one node */
    uint32_t *held_ids;   /* the caller's `out` and `loss` of the current micro-batch */
    uint32_t nheld, capheld;
    uint32_t cublas;      /* cuBLAS workspace id */
    bool in_recompute;

    /* every allocation: alive, bytes, category (teardown, checks) */
    uint8_t *alive;
    uint32_t capalive;
};

static int nomem(struct sim *S)
{
    return memest_errf(S->err, MEMEST_ERR_NOMEM, NULL, "out of memory");
}

static int grow_u32(uint32_t **a, uint32_t *cap, uint32_t need)
{
    if (need <= *cap)
        return 0;
    uint32_t n = *cap ? *cap : 64;
    while (n < need) {
        if (n > UINT32_MAX / 2)
            return -1;
        n *= 2;
    }
    uint32_t *p = realloc(*a, sizeof *p * n);
    if (!p)
        return -1;
    *a = p;
    *cap = n;
    return 0;
}

/* ---- events ---- */

static int ev_alloc(struct sim *S, uint8_t cat, uint32_t node, uint64_t bytes, uint32_t *id)
{
    if (memest_timeline_alloc(S->tl, S->ph, cat, node, bytes, id) != 0)
        return memest_errf(S->err, MEMEST_ERR_NOMEM, NULL,
                           "out of memory (or more than 2^32 allocations)");
    if (*id >= S->capalive) {
        uint32_t n = S->capalive ? S->capalive : 1024;
        while (n <= *id)
            n *= 2;
        uint8_t *p = realloc(S->alive, n);
        if (!p)
            return nomem(S);
        memset(p + S->capalive, 0, n - S->capalive);
        S->alive = p;
        S->capalive = n;
    }
    S->alive[*id] = 1;
    return 0;
}

static int ev_free(struct sim *S, uint32_t node, uint32_t id)
{
    if (id == NONE || id >= S->capalive || !S->alive[id])
        return memest_errf(S->err, MEMEST_ERR_NOMEM, NULL,
                           "internal: the simulator frees allocation %u twice", id);
    S->alive[id] = 0;
    /* bytes and category are those of the ALLOC; finish() copies them */
    if (memest_timeline_free(S->tl, S->ph, 0, node, id, 0) != 0)
        return nomem(S);
    return 0;
}

static int ev_transient(struct sim *S, uint8_t cat, uint32_t node, uint64_t bytes)
{
    uint32_t id;
    if (bytes == 0)
        return 0;
    return ev_alloc(S, cat, node, bytes, &id) || ev_free(S, node, id) ? -1 : 0;
}

/* ---- sizes ---- */

static uint64_t value_bytes(const struct memest_run *r, uint32_t v)
{
    uint64_t n;
    if (!memest_shape_numel(&r->values[v].shape, &n))
        return UINT64_MAX;
    return memest_sat_mul(n, memest_dtype_size((enum memest_dtype)r->values[v].dtype));
}

static uint32_t out_value(const struct memest_run *r, uint32_t node, uint32_t k)
{
    return r->nodes[node].out_first + k;
}

/* ---- storages ---- */

static bool persistent_kind(uint8_t kind)
{
    return kind == MEMEST_ST_PARAM || kind == MEMEST_ST_BUFFER || kind == MEMEST_ST_INPUT;
}

static bool param_cast(const struct memest_run *r, uint32_t s)
{
    return r->storages[s].kind == MEMEST_ST_CAST && r->storages[s].src != NONE &&
           r->storages[r->storages[s].src].kind == MEMEST_ST_PARAM;
}

static int alloc_storage(struct sim *S, uint32_t s, uint8_t cat, uint32_t node)
{
    if (S->sid[s] != NONE)
        return 0;
    return ev_alloc(S, cat, node, S->r->storages[s].bytes, &S->sid[s]);
}

static int free_storage(struct sim *S, uint32_t s, uint32_t node)
{
    if (S->sid[s] == NONE)
        return 0;
    uint32_t id = S->sid[s];
    S->sid[s] = NONE;
    return ev_free(S, node, id);
}

/* ---- gradient slots ---- */

/* A free index in the gradient-buffer pool. */
static int gbuf_index(struct sim *S, uint32_t *out)
{
    if (S->ngbfree) {
        *out = S->gbfree[--S->ngbfree];
        return 0;
    }
    if (S->ngb == S->capgb) {
        uint32_t n = S->capgb ? S->capgb * 2 : 64;
        struct gbuf *p = realloc(S->gb, sizeof *p * n);
        if (!p)
            return nomem(S);
        S->gb = p;
        uint32_t *f = realloc(S->gbfree, sizeof *f * n);
        if (!f)
            return nomem(S);
        S->gbfree = f;
        S->capgb = n;
    }
    *out = S->ngb++;
    return 0;
}

/* A gradient buffer over allocation id (already made). */
static int adopt_gbuf(struct sim *S, uint32_t id, uint32_t *out)
{
    if (gbuf_index(S, out) != 0)
        return -1;
    S->gb[*out] = (struct gbuf){.id = id, .refs = 0};
    return 0;
}

static int new_gbuf(struct sim *S, uint32_t node, uint64_t bytes, uint8_t cat, uint32_t *out)
{
    uint32_t id;
    if (ev_alloc(S, cat, node, bytes, &id) != 0)
        return -1;
    return adopt_gbuf(S, id, out);
}

static int new_slot(struct sim *S, uint32_t buf, const struct memest_shape *geom, uint32_t *out)
{
    uint32_t k;
    if (S->ngsfree) {
        k = S->gsfree[--S->ngsfree];
    } else {
        if (S->ngs == S->capgs) {
            uint32_t n = S->capgs ? S->capgs * 2 : 64;
            struct gslot *p = realloc(S->gs, sizeof *p * n);
            if (!p)
                return nomem(S);
            S->gs = p;
            uint32_t *f = realloc(S->gsfree, sizeof *f * n);
            if (!f)
                return nomem(S);
            S->gsfree = f;
            S->capgs = n;
        }
        k = S->ngs++;
    }
    S->gs[k].buf = buf;
    S->gs[k].geom = *geom;
    S->gb[buf].refs++;
    *out = k;
    return 0;
}

/* A new contiguous gradient of value v's sizes. */
static int new_grad(struct sim *S, uint32_t node, uint32_t v, uint8_t cat, uint32_t *slot)
{
    uint32_t b;
    struct memest_shape g = S->r->values[v].shape;
    memest_shape_contiguous_strides(&g);
    if (new_gbuf(S, node, value_bytes(S->r, v), cat, &b) != 0)
        return -1;
    return new_slot(S, b, &g, slot);
}

static int drop_slot(struct sim *S, uint32_t node, uint32_t k)
{
    uint32_t b = S->gs[k].buf;
    S->gsfree[S->ngsfree++] = k;
    if (--S->gb[b].refs > 0)
        return 0;
    S->gbfree[S->ngbfree++] = b;
    return ev_free(S, node, S->gb[b].id);
}

/* A gradient arrives for value v (InputBuffer::accumulate). */
static int deliver(struct sim *S, uint32_t node, uint32_t v, uint32_t slot)
{
    uint32_t e = S->vg[v];
    if (e == NONE) {
        S->vg[v] = slot;
        return 0;
    }
    if (S->gb[S->gs[e].buf].refs == 1 && memest_shape_is_dense(&S->gs[e].geom))
        return drop_slot(S, node, slot);               /* old.add_(new) */
    if (S->gb[S->gs[slot].buf].refs == 1 && memest_shape_is_dense(&S->gs[slot].geom)) {
        S->vg[v] = slot;                               /* new.add_(old) */
        return drop_slot(S, node, e);
    }
    uint32_t sum;                                      /* old + new */
    if (new_grad(S, node, v, MEMEST_CAT_ACTGRADS, &sum) != 0)
        return -1;
    S->vg[v] = sum;
    return drop_slot(S, node, slot) || drop_slot(S, node, e) ? -1 : 0;
}

/* AccumulateGrad: the parameter (storage ps) receives gradient allocation id. */
static int accumulate_param(struct sim *S, uint32_t node, uint32_t ps, uint32_t id)
{
    if (S->pg[ps] == NONE) {
        S->pg[ps] = id;            /* .grad is None: the gradient is stolen */
        return 0;
    }
    return ev_free(S, node, id);   /* .grad += new_grad, in place */
}

static bool geom_contiguous(const struct memest_shape *g) { return memest_shape_is_contiguous(g); }

/* ---- static analysis ---- */

static const struct memest_nodein *node_in(const struct memest_run *r, uint32_t n, uint32_t i)
{
    return &r->ins[r->nodes[n].in_first + i];
}

/* The value that receives the loss's gradient: the last model output. */
static uint32_t root_value(const struct sim *S)
{
    const struct memest_ref o = S->g->outputs[S->g->noutputs - 1];
    return out_value(S->r, o.node, o.out);
}

/* Nodes that a gradient reaches from the loss. */
static int analyze_reach(struct sim *S, uint8_t *vreach)
{
    const struct memest_run *r = S->r;
    uint32_t root = root_value(S);
    if (r->values[root].requires_grad && S->loss != MEMEST_LOSS_COUNT)
        vreach[root] = 1;
    for (uint32_t n = S->nn; n-- > 0;) {
        const struct memest_nodeinfo *ni = &r->nodes[n];
        bool any = false;
        for (uint32_t k = 0; k < ni->nout; k++)
            any |= vreach[ni->out_first + k] != 0;
        if (!any || !ni->needs_grad)
            continue;
        S->reach[n] = 1;
        for (uint32_t i = 0; i < S->g->nodes[n].nin; i++) {
            const struct memest_nodein *in = node_in(r, n, i);
            if (in->grad != MEMEST_GRAD_NONE && r->values[in->src].requires_grad)
                vreach[in->src] = 1;
        }
    }
    return 0;
}

static bool name_matches(const struct memest_block_inst *b, const char *want)
{
    if (strcmp(b->name, want) == 0 || strcmp(b->type, want) == 0)
        return true;
    size_t n = strlen(want);   /* "h" selects the repeated instances "h.0", "h.1", ... */
    if (strncmp(b->name, want, n) != 0 || b->name[n] != '.' || !b->name[n + 1])
        return false;
    for (const char *p = b->name + n + 1; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    return true;
}

static int by_first(const void *a, const void *b)
{
    const struct memest_block_inst *x = a, *y = b;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return x->last > y->last ? -1 : x->last < y->last ? 1 : 0;
}

/* The checkpointed block instances: every top-level instance, or those
 * named (instance, block or repeated-node name), outermost first. */
static int analyze_checkpoint(struct sim *S)
{
    const struct memest_step_cfg *c = S->cfg;
    if (!c->checkpoint || S->inference)
        return 0;
    const struct memest_graph *g = S->g;
    struct memest_block_inst *sel = malloc(sizeof *sel * (g->nblocks ? g->nblocks : 1));
    if (!sel)
        return nomem(S);
    uint32_t nsel = 0;
    for (int k = 0; k < c->ncheckpoint_names; k++) {
        bool found = false;
        for (uint32_t b = 0; b < g->nblocks; b++) {
            if (name_matches(&g->blocks[b], c->checkpoint_names[k])) {
                found = true;
                sel[nsel++] = g->blocks[b];
            }
            if (nsel == g->nblocks)
                break;
        }
        if (!found) {
            free(sel);
            return memest_errf(S->err, MEMEST_ERR_USAGE, NULL,
                               "--checkpoint: the model has no block instance or block called "
                               "\"%s\"", c->checkpoint_names[k]);
        }
    }
    if (c->ncheckpoint_names == 0)
        for (uint32_t b = 0; b < g->nblocks; b++)
            if (g->blocks[b].depth == 0)
                sel[nsel++] = g->blocks[b];
    if (nsel == 0) {
        free(sel);
        return memest_errf(S->err, MEMEST_ERR_USAGE, NULL,
                           "--checkpoint: the model has no blocks (activation checkpointing "
                           "recomputes block instances)");
    }
    qsort(sel, nsel, sizeof *sel, by_first);
    S->ck = malloc(sizeof *S->ck * nsel);
    if (!S->ck) {
        free(sel);
        return nomem(S);
    }
    uint32_t end = 0;
    bool any = false;
    for (uint32_t i = 0; i < nsel; i++) {
        if (any && sel[i].first <= end)
            continue;   /* nested in (or the same as) one already chosen */
        S->ck[S->nck++] = (struct ckpt){sel[i].first, sel[i].last};
        for (uint32_t n = sel[i].first; n <= sel[i].last; n++)
            S->ck_of[n] = S->nck - 1;
        end = sel[i].last;
        any = true;
    }
    free(sel);
    return 0;
}

/* Forward liveness: a storage lives until its last reader, and a block
 * instance's inputs until the instance's last node (a module's forward()
 * arguments are referenced until it returns: by the caller's frame, or the
 * loop variable of nn.Sequential). */
static void analyze_lastuse(struct sim *S)
{
    const struct memest_run *r = S->r;
    for (uint32_t s = 0; s < S->ns; s++)
        S->lastuse[s] = r->storages[s].node;
    for (uint32_t n = 0; n < S->nn; n++) {
        for (uint32_t i = 0; i < S->g->nodes[n].nin; i++) {
            const struct memest_nodein *in = node_in(r, n, i);
            uint32_t a = r->values[in->src].storage, b = r->values[in->value].storage;
            if (S->lastuse[a] < n)
                S->lastuse[a] = n;
            if (S->lastuse[b] < n)
                S->lastuse[b] = n;
        }
    }
    for (uint32_t b = 0; b < S->g->nblocks; b++) {
        const struct memest_block_inst *k = &S->g->blocks[b];
        for (uint32_t n = k->first; n <= k->last && n < S->nn; n++) {
            for (uint32_t i = 0; i < S->g->nodes[n].nin; i++) {
                uint32_t s = r->values[node_in(r, n, i)->src].storage;
                if (r->storages[s].node < k->first && S->lastuse[s] < k->last)
                    S->lastuse[s] = k->last;
            }
        }
    }
    /* inference runs in eval(): dropout returns its input itself (no output,
     * no mask), so the input lives as long as the output would have */
    if (S->inference) {
        for (uint32_t n = 0; n < S->nn; n++) {
            const struct memest_op_desc *op = S->g->nodes[n].op;
            const struct memest_nodeinfo *ni = &r->nodes[n];
            if (!op->eval_identity || S->g->nodes[n].nin != 1 || ni->nout != 1)
                continue;
            uint32_t in = r->values[node_in(r, n, 0)->src].storage;
            uint32_t out = r->values[ni->out_first].storage;
            while (S->alias[in] != NONE)
                in = S->alias[in];
            if (out == in)
                continue;   /* p = 0: already the input */
            for (uint32_t t = S->sfirst[n]; t < S->sfirst[n + 1]; t++)
                if (r->storages[t].kind == MEMEST_ST_EXTRA)
                    S->alias[t] = in;   /* the mask: not made at all */
            S->alias[out] = in;
            if (S->lastuse[in] < S->lastuse[out])
                S->lastuse[in] = S->lastuse[out];
        }
    }
    /* `out`, the model's last output, is the caller's until the step ends;
     * other outputs are dropped as soon as nothing needs them */
    uint32_t s = r->values[root_value(S)].storage;
    while (S->inference && S->alias[s] != NONE)
        s = S->alias[s];
    S->held[s] = 1;
    S->lastuse[s] = S->nn;
}

static void push_list(uint32_t *head, uint32_t *next, uint32_t at, uint32_t s)
{
    next[s] = head[at];
    head[at] = s;
}

/* When each storage is released: the earliest node that records and saves
 * it (outside checkpointed blocks), a checkpointed block's first node for the
 * storages the block reads from outside (torch.utils.checkpoint saves its
 * inputs), and for storages made inside a checkpointed block, the earliest
 * inner saver during the recomputation. */
static void analyze_release(struct sim *S)
{
    const struct memest_run *r = S->r;
    for (uint32_t n = 0; n < S->nn; n++) {
        const struct memest_nodeinfo *ni = &r->nodes[n];
        if (!ni->needs_grad || !S->reach[n])
            continue;
        for (uint32_t k = ni->save_first; k < ni->save_first + ni->nsave; k++) {
            uint32_t s = r->saves[k];
            if (persistent_kind(r->storages[s].kind))
                continue;
            if (S->ck_of[n] == NONE) {
                if (S->release[s] == NONE)
                    S->release[s] = n;
            } else if (S->relin[s] == NONE) {
                S->relin[s] = n;
            }
        }
    }
    for (uint32_t c = 0; c < S->nck; c++) {
        const struct ckpt *k = &S->ck[c];
        for (uint32_t n = k->first; n <= k->last; n++) {
            for (uint32_t i = 0; i < S->g->nodes[n].nin; i++) {
                uint32_t s = r->values[node_in(r, n, i)->src].storage;
                if (r->storages[s].node < k->first && !persistent_kind(r->storages[s].kind) &&
                    (S->release[s] == NONE || S->release[s] > k->first))
                    S->release[s] = k->first;
            }
        }
    }
    for (uint32_t s = 0; s < S->ns; s++) {
        if (S->release[s] != NONE)
            push_list(S->rhead, S->rnext, S->release[s], s);
        if (S->relin[s] != NONE && S->ck_of[r->storages[s].node] != NONE)
            push_list(S->ihead, S->inext, S->relin[s], s);
        uint32_t lu = S->lastuse[s];
        if (lu < S->nn && !persistent_kind(r->storages[s].kind))
            push_list(S->fhead, S->fnext, lu, s);
    }
}

/* ---- forward ---- */

enum fmode { FM_TRAIN, FM_NOGRAD, FM_RECOMPUTE };

/* Whether storage s, made by the current pass, outlives its forward use. */
static bool kept(const struct sim *S, uint32_t s, enum fmode m, const struct ckpt *k)
{
    if (S->held[s])
        return true;
    switch (m) {
    case FM_TRAIN:
        return S->release[s] != NONE;
    case FM_NOGRAD:
        return false;
    case FM_RECOMPUTE:
        return (S->relin[s] != NONE && S->relin[s] <= k->last) ||
               S->lastuse[s] > k->last;
    }
    return false;
}

static bool uses_cublas(const struct memest_run *r, uint32_t n)
{
    return r->nodes[n].fwd_macs > 0 && r->g->nodes[n].op->lib == MEMEST_LIB_CUBLAS;
}

static int forward_node(struct sim *S, uint32_t n, enum fmode m, const struct ckpt *k,
                        uint32_t *sfirst)
{
    const struct memest_run *r = S->r;
    if (S->cublas == NONE && uses_cublas(r, n) &&
        ev_alloc(S, MEMEST_CAT_WORKSPACE, n, memest_cublas_workspace(S->cfg->gpu_arch),
                 &S->cublas) != 0)
        return -1;
    /* the storages this node makes: casts, outputs, saved op-internal tensors */
    while (*sfirst < S->ns && r->storages[*sfirst].node < n)
        ++*sfirst;
    for (uint32_t s = *sfirst; s < S->ns && r->storages[s].node == n; s++) {
        const struct memest_storage *st = &r->storages[s];
        if (persistent_kind(st->kind) || S->sid[s] != NONE || S->alias[s] != NONE)
            continue;
        bool keep = kept(S, s, m, k);
        if (st->kind == MEMEST_ST_EXTRA && !keep) {
            /* an op-internal tensor nobody keeps (a no-grad dropout mask) */
            if (ev_transient(S, MEMEST_CAT_TRANSIENT, n, st->bytes) != 0)
                return -1;
            continue;
        }
        bool saved = m == FM_TRAIN ? S->release[s] != NONE
                     : m == FM_RECOMPUTE ? S->relin[s] != NONE && S->relin[s] <= k->last
                                         : false;
        if (alloc_storage(S, s, saved ? MEMEST_CAT_SAVED : MEMEST_CAT_TRANSIENT, n) != 0)
            return -1;
    }
    if (ev_transient(S, MEMEST_CAT_TRANSIENT, n, r->nodes[n].work_bytes) != 0)
        return -1;
    for (uint32_t s = S->fhead[n]; s != NONE; s = S->fnext[s]) {
        if (param_cast(r, s))
            continue;   /* cached until autocast exits */
        if (m == FM_RECOMPUTE && (r->storages[s].node < k->first || r->storages[s].node > k->last))
            continue;
        if (!kept(S, s, m, k) && free_storage(S, s, n) != 0)
            return -1;
    }
    return 0;
}

/* Frees the autocast parameter copies nobody saved (the cache is cleared
 * when autocast exits). */
static int clear_cast_cache(struct sim *S, uint32_t lo, uint32_t hi, enum fmode m,
                            const struct ckpt *k)
{
    const struct memest_run *r = S->r;
    if (!r->opts.amp)
        return 0;
    for (uint32_t s = S->sfirst[lo]; s < S->sfirst[hi + 1]; s++) {
        if (!param_cast(r, s) || S->sid[s] == NONE)
            continue;
        if (!(m == FM_TRAIN && S->release[s] != NONE) &&
            !(m == FM_RECOMPUTE && S->relin[s] != NONE && S->relin[s] <= k->last) &&
            free_storage(S, s, NONE) != 0)
            return -1;
    }
    return 0;
}

static int forward(struct sim *S, enum fmode m)
{
    uint32_t sfirst = 0;
    S->ph = (uint8_t)((S->ph & WARM) | MEMEST_PH_FORWARD);
    /* nodes of a checkpointed block run without grad: S->release already
     * leaves their tensors unsaved and keeps the block's inputs */
    for (uint32_t n = 0; n < S->nn; n++)
        if (forward_node(S, n, m, NULL, &sfirst) != 0)
            return -1;
    return 0;
}

/* ---- the loss ---- */

static int remember_held(struct sim *S, uint32_t id)
{
    if (grow_u32(&S->held_ids, &S->capheld, S->nheld + 1) != 0)
        return nomem(S);
    S->held_ids[S->nheld++] = id;
    return 0;
}

/* The loss forward and backward; leaves the gradient of the root value in
 * S->vg. The model's outputs and the loss scalar are the caller's until the
 * step ends. */
static int loss_step(struct sim *S)
{
    const struct memest_run *r = S->r;
    S->ph = (uint8_t)((S->ph & WARM) | MEMEST_PH_LOSS);
    uint32_t v = root_value(S);
    const struct memest_value *o = &r->values[v];
    enum memest_dtype dt = (enum memest_dtype)o->dtype;
    uint64_t numel;
    if (!memest_shape_numel(&o->shape, &numel))
        numel = UINT64_MAX;
    uint64_t obytes = value_bytes(r, v);
    uint32_t loss_id;
    bool amp = r->opts.amp;
    if (S->loss == MEMEST_LOSS_NONE) {
        if (!o->requires_grad)
            return 0;
        uint32_t slot;   /* out.backward(torch.ones_like(out)) */
        if (new_grad(S, NONE, v, MEMEST_CAT_ACTGRADS, &slot) != 0)
            return -1;
        S->vg[v] = slot;
        return 0;
    }
    /* the loss value itself (a 0-d tensor, float32 under autocast) */
    unsigned lsize = memest_dtype_size(amp ? MEMEST_F32 : dt);
    if (S->loss == MEMEST_LOSS_CROSSENTROPY || S->loss == MEMEST_LOSS_NLL) {
        bool ce = S->loss == MEMEST_LOSS_CROSSENTROPY;
        int64_t C = o->shape.ndim ? o->shape.size[o->shape.ndim - 1] : 1;
        uint64_t rows = C ? numel / (uint64_t)C : 0;
        /* log_softmax (fp32 under autocast: an fp16 input is read directly,
         * a bf16 one converted first); out.reshape(-1, C) copies a
         * non-viewable output */
        enum memest_dtype ldt = amp && ce ? MEMEST_F32 : dt;
        uint64_t lbytes = memest_sat_mul(memest_sat_mul(rows, (uint64_t)C), memest_dtype_size(ldt));
        uint32_t L = NONE, tw;
        if (ce) {
            uint32_t cp = NONE, cv = NONE;
            struct memest_shape to;
            int64_t sz[2] = {(int64_t)rows, C};
            memest_shape_set(&to, 2, sz);
            if (!memest_shape_view_strides(&o->shape, &to) &&
                ev_alloc(S, MEMEST_CAT_TRANSIENT, NONE, obytes, &cp) != 0)
                return -1;
            if (amp && dt == MEMEST_BF16 &&
                ev_alloc(S, MEMEST_CAT_TRANSIENT, NONE, lbytes, &cv) != 0)
                return -1;
            if (ev_alloc(S, MEMEST_CAT_SAVED, NONE, lbytes, &L) != 0)
                return -1;
            if ((cv != NONE && ev_free(S, NONE, cv) != 0) || (cp != NONE && ev_free(S, NONE, cp) != 0))
                return -1;
        }
        if (ev_alloc(S, MEMEST_CAT_TRANSIENT, NONE, lsize, &loss_id) != 0 ||
            ev_alloc(S, MEMEST_CAT_SAVED, NONE, lsize, &tw) != 0 || remember_held(S, loss_id) != 0)
            return -1;
        if (!o->requires_grad)
            return ev_free(S, NONE, tw) || (L != NONE && ev_free(S, NONE, L)) ? -1 : 0;
        /* backward: the seed, nll_loss_backward's zeros [N, C], then
         * log_softmax's gradient in the output's dtype */
        uint32_t seed, gnll;
        if (ev_alloc(S, MEMEST_CAT_ACTGRADS, NONE, lsize, &seed) != 0 ||
            ev_alloc(S, MEMEST_CAT_ACTGRADS, NONE, ce ? lbytes : obytes, &gnll) != 0 ||
            ev_free(S, NONE, seed) != 0 || ev_free(S, NONE, tw) != 0)
            return -1;
        uint32_t slot;
        if (!ce) {
            struct memest_shape g = o->shape;
            memest_shape_contiguous_strides(&g);
            uint32_t b;   /* nll_loss_backward's result is the output's gradient */
            if (adopt_gbuf(S, gnll, &b) != 0 || new_slot(S, b, &g, &slot) != 0)
                return -1;
            S->vg[v] = slot;
            return 0;
        }
        if (new_grad(S, NONE, v, MEMEST_CAT_ACTGRADS, &slot) != 0)
            return -1;
        S->vg[v] = slot;
        return ev_free(S, NONE, gnll) || ev_free(S, NONE, L) ? -1 : 0;
    }
    /* elementwise losses: the unreduced loss is a temporary of the output's
     * size; the output (cast to float32 under autocast: that copy is saved)
     * and the target are saved; backward makes one gradient of the output's
     * size (bce_with_logits: plus sigmoid(x) - target) */
    uint32_t cast = NONE;
    uint64_t cbytes = obytes;
    if (amp && dt != MEMEST_F32 && memest_dtype_is_float(dt)) {
        cbytes = memest_sat_mul(numel, 4);
        if (ev_alloc(S, MEMEST_CAT_SAVED, NONE, cbytes, &cast) != 0)
            return -1;
    }
    if (ev_transient(S, MEMEST_CAT_TRANSIENT, NONE, cbytes) != 0 ||
        ev_alloc(S, MEMEST_CAT_TRANSIENT, NONE, lsize, &loss_id) != 0 ||
        remember_held(S, loss_id) != 0)
        return -1;
    if (!o->requires_grad)
        return cast != NONE ? ev_free(S, NONE, cast) : 0;
    uint32_t seed;
    if (ev_alloc(S, MEMEST_CAT_ACTGRADS, NONE, lsize, &seed) != 0)
        return -1;
    if (S->loss == MEMEST_LOSS_BCEWITHLOGITS &&
        ev_transient(S, MEMEST_CAT_ACTGRADS, NONE, cbytes) != 0)
        return -1;
    uint32_t gfp = NONE;
    if (cast != NONE && ev_alloc(S, MEMEST_CAT_ACTGRADS, NONE, cbytes, &gfp) != 0)
        return -1;
    if (ev_free(S, NONE, seed) != 0 || (cast != NONE && ev_free(S, NONE, cast) != 0))
        return -1;
    uint32_t slot;
    if (new_grad(S, NONE, v, MEMEST_CAT_ACTGRADS, &slot) != 0)
        return -1;
    S->vg[v] = slot;
    return gfp != NONE ? ev_free(S, NONE, gfp) : 0;
}

/* ---- backward ---- */

static int bwd_range(struct sim *S, uint32_t hi, uint32_t lo, const struct ckpt *inner);

/* The gradient of input i of node n, as the op's rule makes it from the
 * incoming gradients; NONE when no gradient flows. */
static int input_grad(struct sim *S, uint32_t n, uint32_t i, uint32_t *slot)
{
    const struct memest_run *r = S->r;
    const struct memest_nodein *in = node_in(r, n, i);
    *slot = NONE;
    if (in->grad == MEMEST_GRAD_NONE || !r->values[in->src].requires_grad)
        return 0;
    uint32_t v = in->value;
    /* the virtual copy of an fp16 softmax input: the gradient is the input's */
    if (v != in->src && r->storages[r->values[v].storage].bytes == 0)
        v = in->src;
    if (in->grad == MEMEST_GRAD_NEW)
        return new_grad(S, n, v, MEMEST_CAT_ACTGRADS, slot);
    uint32_t from = in->from < r->nodes[n].nout ? in->from : 0;
    uint32_t og = S->vg[out_value(r, n, from)];
    if (og == NONE)
        return 0;   /* an undefined gradient passes through as undefined */
    const struct gslot src = S->gs[og];
    struct memest_shape g = r->values[v].shape;
    switch (in->grad) {
    case MEMEST_GRAD_SAME:
        return new_slot(S, src.buf, &src.geom, slot);
    case MEMEST_GRAD_RESHAPE: {
        uint64_t a, b;
        if (memest_shape_numel(&src.geom, &a) && memest_shape_numel(&g, &b) && a == b &&
            memest_shape_view_strides(&src.geom, &g))
            return new_slot(S, src.buf, &g, slot);
        return new_grad(S, n, v, MEMEST_CAT_ACTGRADS, slot);   /* reshape copies */
    }
    case MEMEST_GRAD_PERMUTE: {
        if (src.geom.ndim != g.ndim)
            return new_grad(S, n, v, MEMEST_CAT_ACTGRADS, slot);
        for (int d = 0; d < g.ndim; d++) {
            int p = in->perm[d] < g.ndim ? in->perm[d] : d;
            g.size[d] = src.geom.size[p];
            g.stride[d] = src.geom.stride[p];
        }
        return new_slot(S, src.buf, &g, slot);
    }
    case MEMEST_GRAD_SLICE:
        if (src.geom.ndim != g.ndim)
            return new_grad(S, n, v, MEMEST_CAT_ACTGRADS, slot);
        for (int d = 0; d < g.ndim; d++)
            g.stride[d] = src.geom.stride[d];
        return new_slot(S, src.buf, &g, slot);
    default:
        return new_grad(S, n, v, MEMEST_CAT_ACTGRADS, slot);
    }
}

/* Whether node n uses the autocast copy of its parameters. */
static bool uses_param_casts(const struct memest_run *r, uint32_t n)
{
    return r->opts.amp && r->g->nodes[n].op->amp == MEMEST_AMPP_LOW;
}

static int release_node(struct sim *S, uint32_t n, const struct ckpt *inner)
{
    for (uint32_t s = S->rhead[n]; s != NONE; s = S->rnext[s])
        if (!S->held[s] && free_storage(S, s, n) != 0)
            return -1;
    if (inner)
        for (uint32_t s = S->ihead[n]; s != NONE; s = S->inext[s])
            if (!S->held[s] && S->lastuse[s] <= inner->last &&
                free_storage(S, s, n) != 0)
                return -1;
    return 0;
}

/* A node has at most MEMEST_MAX_NODE_INPUTS inputs (the builder refuses
 * more); its parameters may be many more (an LSTM has 4 per layer and
 * direction): S->pids holds them. */

static int bwd_node(struct sim *S, uint32_t n, const struct ckpt *inner)
{
    const struct memest_run *r = S->r;
    const struct memest_nodeinfo *ni = &r->nodes[n];
    const struct memest_node *node = &S->g->nodes[n];
    bool any = false;
    for (uint32_t k = 0; k < ni->nout; k++)
        any |= S->vg[ni->out_first + k] != NONE;
    if (!ni->needs_grad || !S->reach[n] || !any)
        return release_node(S, n, inner);
    /* 1. a contiguous copy of the incoming gradient */
    uint32_t copy = NONE, og0 = S->vg[ni->out_first];
    if ((ni->bwd_flags & MEMEST_BWD_CONTIG_OUT) && og0 != NONE &&
        !geom_contiguous(&S->gs[og0].geom) &&
        ev_alloc(S, MEMEST_CAT_ACTGRADS, n, value_bytes(r, ni->out_first), &copy) != 0)
        return -1;
    /* 2. input and parameter gradients */
    uint32_t slots[MEMEST_MAX_NODE_INPUTS];
    uint32_t nin = node->nin;
    if (nin > MEMEST_MAX_NODE_INPUTS)
        return memest_errf(S->err, MEMEST_ERR_NOMEM, NULL, "internal: more than %d inputs",
                           MEMEST_MAX_NODE_INPUTS);
    for (uint32_t i = 0; i < nin; i++)
        if (input_grad(S, n, i, &slots[i]) != 0)
            return -1;
    uint32_t *pids = S->pids, np = ni->nparam;
    bool low = uses_param_casts(r, n);
    for (uint32_t p = 0; p < np; p++) {
        const struct memest_param *pp = &r->params[ni->param_first + p];
        pids[p] = NONE;
        if (!pp->trainable)
            continue;
        /* a node whose output is the parameter itself ("parameter"): the
         * incoming gradient is the parameter's, handed to AccumulateGrad */
        uint32_t *og = &S->vg[ni->out_first];
        if (r->values[ni->out_first].storage == pp->storage && *og != NONE) {
            uint32_t b = S->gs[*og].buf;
            if (S->gb[b].refs == 1) {
                pids[p] = S->gb[b].id;
                S->gsfree[S->ngsfree++] = *og;
                S->gbfree[S->ngbfree++] = b;
                *og = NONE;
                continue;
            }
        }
        uint32_t cast = r->storages[pp->storage].cast;
        uint64_t bytes = low && cast != NONE ? r->storages[cast].bytes : r->storages[pp->storage].bytes;
        if (ev_alloc(S, MEMEST_CAT_GRADS, n, bytes, &pids[p]) != 0)
            return -1;
    }
    /* 3. scratch */
    if (ev_transient(S, MEMEST_CAT_ACTGRADS, n, ni->bwd_work_bytes) != 0)
        return -1;
    /* 4. the incoming gradients go, then the saved tensors */
    for (uint32_t k = 0; k < ni->nout; k++) {
        uint32_t *g = &S->vg[ni->out_first + k];
        if (*g != NONE) {
            if (drop_slot(S, n, *g) != 0)
                return -1;
            *g = NONE;
        }
    }
    if (copy != NONE && ev_free(S, n, copy) != 0)
        return -1;
    if (release_node(S, n, inner) != 0)
        return -1;
    /* 5. input gradients to their producers (through ToCopyBackward for an
     * autocast copy) */
    for (uint32_t i = 0; i < nin; i++) {
        if (slots[i] == NONE)
            continue;
        const struct memest_nodein *in = node_in(r, n, i);
        uint32_t slot = slots[i];
        if (in->value != in->src && r->storages[r->values[in->value].storage].bytes > 0 &&
            !param_cast(r, r->values[in->value].storage)) {
            uint32_t conv;
            if (new_grad(S, n, in->src, MEMEST_CAT_ACTGRADS, &conv) != 0 ||
                drop_slot(S, n, slot) != 0)
                return -1;
            slot = conv;
        }
        if (in->value != in->src && param_cast(r, r->values[in->value].storage)) {
            /* a bare parameter (op "parameter") read through its cached copy:
             * its gradient goes to the copy, then to the parameter */
            uint32_t cs = r->values[in->value].storage, id;
            if (ev_alloc(S, MEMEST_CAT_GRADS, n, r->storages[cs].bytes, &id) != 0 ||
                drop_slot(S, n, slot) != 0)
                return -1;
            if (S->cg[cs] == NONE)
                S->cg[cs] = id;
            else if (ev_free(S, n, id) != 0)
                return -1;
            continue;
        }
        if (deliver(S, n, in->src, slot) != 0)
            return -1;
    }
    /* 6. parameter gradients to AccumulateGrad (under autocast, first summed
     * on the copy, converted when the copy's first user is done) */
    for (uint32_t p = 0; p < np; p++) {
        if (pids[p] == NONE)
            continue;
        const struct memest_param *pp = &r->params[ni->param_first + p];
        uint32_t cast = r->storages[pp->storage].cast;
        if (low && cast != NONE) {
            if (S->cg[cast] == NONE)
                S->cg[cast] = pids[p];
            else if (ev_free(S, n, pids[p]) != 0)
                return -1;
            continue;
        }
        if (accumulate_param(S, n, pp->storage, pids[p]) != 0)
            return -1;
    }
    /* casts made by this node are now complete: convert their gradients */
    if (r->opts.amp) {
        for (uint32_t s = S->sfirst[n]; s < S->sfirst[n + 1]; s++) {
            if (!param_cast(r, s) || S->cg[s] == NONE)
                continue;
            uint32_t ps = r->storages[s].src, id;
            if (ev_alloc(S, MEMEST_CAT_GRADS, n, r->storages[ps].bytes, &id) != 0 ||
                ev_free(S, n, S->cg[s]) != 0)
                return -1;
            S->cg[s] = NONE;
            if (accumulate_param(S, n, ps, id) != 0)
                return -1;
        }
    }
    return 0;
}

/* A checkpointed block instance: recompute its forward with grad, run its
 * backward, drop what the recomputation left. */
static int recompute(struct sim *S, const struct ckpt *k)
{
    const struct memest_run *r = S->r;
    uint8_t ph = S->ph;
    uint32_t first_s = S->sfirst[k->first];
    /* the original outputs may still be alive (saved by a consumer): the
     * recomputed ones are new tensors */
    uint32_t nst = 0, *stash = NULL, cap = 0;
    for (uint32_t s = first_s; s < S->ns && r->storages[s].node <= k->last; s++) {
        if (S->sid[s] == NONE)
            continue;
        if (grow_u32(&stash, &cap, 2 * (nst + 1)) != 0) {
            free(stash);
            return nomem(S);
        }
        stash[2 * nst] = s;
        stash[2 * nst + 1] = S->sid[s];
        nst++;
        S->sid[s] = NONE;
    }
    uint32_t sfirst = first_s;
    int rc = 0;
    for (uint32_t n = k->first; n <= k->last && rc == 0; n++)
        rc = forward_node(S, n, FM_RECOMPUTE, k, &sfirst);
    if (rc == 0)
        rc = clear_cast_cache(S, k->first, k->last, FM_RECOMPUTE, k);
    S->ph = ph;
    if (rc == 0)
        rc = bwd_range(S, k->last, k->first, k);
    /* the recomputed outputs (`outputs` of CheckpointFunction.backward) */
    for (uint32_t s = first_s; rc == 0 && s < S->ns && r->storages[s].node <= k->last; s++)
        if (!persistent_kind(r->storages[s].kind))
            rc = free_storage(S, s, k->first);
    for (uint32_t i = 0; i < nst; i++)
        S->sid[stash[2 * i]] = stash[2 * i + 1];
    free(stash);
    return rc;
}

static int bwd_range(struct sim *S, uint32_t hi, uint32_t lo, const struct ckpt *inner)
{
    for (uint32_t n = hi + 1; n-- > lo;) {
        if (!inner && S->ck_of[n] != NONE) {
            const struct ckpt *k = &S->ck[S->ck_of[n]];
            if (recompute(S, k) != 0 || release_node(S, k->first, NULL) != 0)
                return -1;
            n = k->first;
            continue;
        }
        if (bwd_node(S, n, inner) != 0)
            return -1;
    }
    return 0;
}

static int backward(struct sim *S)
{
    S->ph = (uint8_t)((S->ph & WARM) | MEMEST_PH_BACKWARD);
    if (S->nn == 0)
        return 0;
    return bwd_range(S, S->nn - 1, 0, NULL);
}

/* ---- the optimizer ----
 * Temporaries per implementation, as torch/optim (2.x) computes one step
 * (default hyper-parameters: no weight decay, no maximize, not capturable):
 *   foreach (_multi_tensor_*: each torch._foreach_* op that is not in place
 *     returns a new tensor per parameter, all alive together):
 *     sgd, sgd with momentum: none (_foreach_mul_/_foreach_add_ in place);
 *     adam, adamw: exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs), then
 *       divided, incremented and used in place: one copy of the parameters;
 *     rmsprop: avg = _foreach_sqrt(square_avgs) (centered: _foreach_addcmul):
 *       one copy;
 *     adagrad: std = _foreach_sqrt(state_sums) and numerator =
 *       _foreach_mul(grads, minus_clr): two copies.
 *   for-loop (_single_tensor_*, per parameter, Python locals rebound by the
 *     next iteration):
 *     adam, adamw: denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt)
 *       .add_(eps): sqrt() and the division are alive together, and the
 *       previous parameter's denom until the assignment: peak p[i-1] + 2 p[i];
 *     rmsprop: avg = square_avg.sqrt() (centered: addcmul(...).sqrt_()):
 *       p[i-1] + p[i]; adagrad: std = state_sum.sqrt().add_(eps): the same;
 *     sgd: none.
 *   fused (_fused_adam_, _fused_adamw_, _fused_sgd_): none; the `step`
 *     counters are 0-d float32 tensors on the device (one 512-byte block each).
 * PyTorch 1.13 (cfg->torch_version 113) differs in foreach only: Adam/AdamW
 * keep exp_avg_sq_sqrt and denom = _foreach_add(exp_avg_sq_sqrt, eps) (two
 * copies); Adagrad makes sqrt(state_sums), std = that + eps, then
 * _foreach_mul(grads, minus_clr) and toAdd = its quotient by std (three
 * copies at once).
 * First step: Adam/AdamW and RMSprop create their state in _init_group
 * (zeros_like per parameter, before the update); SGD with momentum clones
 * each gradient into its buffer during the update; Adagrad creates its state
 * in the optimizer's constructor, so it exists before any step. */
static int optimizer(struct sim *S, bool first)
{
    const struct memest_run *r = S->r;
    const struct memest_optim_cfg *oc = &S->cfg->optim;
    enum memest_optim_impl impl = S->cfg->impl;
    S->ph = (uint8_t)((S->ph & WARM) | MEMEST_PH_OPTIMIZER);
    unsigned copies = S->opt ? S->opt->copies : 0;
    bool fused_steps = impl == MEMEST_IMPL_FUSED &&
                       (oc->kind == MEMEST_OPT_ADAM || oc->kind == MEMEST_OPT_ADAMW);
    /* state created in this step */
    bool lazy_clone = oc->kind == MEMEST_OPT_SGD;   /* momentum buffers: clone(grad) */
    if (first && oc->kind != MEMEST_OPT_ADAGRAD && !lazy_clone) {
        for (uint32_t p = 0; p < r->nparams; p++) {
            const struct memest_param *pp = &r->params[p];
            if (pp->tied_to >= 0 || !pp->trainable)
                continue;
            for (unsigned c = 0; c < copies + (fused_steps ? 1 : 0); c++) {
                uint32_t id;
                uint64_t bytes = c < copies ? r->storages[pp->storage].bytes : 4;
                if (ev_alloc(S, MEMEST_CAT_OPTSTATE, pp->node, bytes, &id) != 0 ||
                    grow_u32(&S->state, &S->capstate, S->nstate + 1) != 0)
                    return memest_errf(S->err, MEMEST_ERR_NOMEM, NULL, "out of memory");
                S->state[S->nstate++] = id;
            }
        }
    }
    /* foreach: a program of whole-list allocations (+k: list k made, -k:
     * list k dropped); every list left is dropped when the step returns */
    bool v113 = S->cfg->torch_version == 113;
    static const int8_t prog_adam[] = {1}, prog_adam113[] = {1, 2}, prog_rms[] = {1},
                        prog_ada[] = {1, 2}, prog_ada113[] = {1, 2, -1, 3, 4, -3};
    const int8_t *prog = NULL;
    size_t nprog = 0;
    int nt = 0;   /* for-loop: temporaries per parameter (adam: 2, others: 1) */
    switch (oc->kind) {
    case MEMEST_OPT_SGD:
        break;
    case MEMEST_OPT_ADAM:
    case MEMEST_OPT_ADAMW:
        prog = v113 ? prog_adam113 : prog_adam;
        nprog = v113 ? sizeof prog_adam113 : sizeof prog_adam;
        nt = 2;
        break;
    case MEMEST_OPT_RMSPROP:
        prog = prog_rms;
        nprog = sizeof prog_rms;
        nt = 1;
        break;
    case MEMEST_OPT_ADAGRAD:
        prog = v113 ? prog_ada113 : prog_ada;
        nprog = v113 ? sizeof prog_ada113 : sizeof prog_ada;
        nt = 1;
        break;
    case MEMEST_OPT_COUNT:
        break;
    }
    /* the parameters the step updates (those with a gradient), in order */
    uint32_t *ps = malloc(sizeof *ps * (r->nparams ? r->nparams : 1));
    if (!ps)
        return nomem(S);
    uint32_t np = 0;
    int rc = 0;
    for (uint32_t p = 0; p < r->nparams && rc == 0; p++) {
        const struct memest_param *pp = &r->params[p];
        if (pp->tied_to >= 0 || !pp->trainable || S->pg[pp->storage] == NONE)
            continue;
        ps[np++] = p;
        if (first && lazy_clone && copies) {   /* momentum_buffer = clone(grad) */
            uint32_t id;
            rc = ev_alloc(S, MEMEST_CAT_OPTSTATE, pp->node, r->storages[pp->storage].bytes, &id);
            if (rc == 0 && grow_u32(&S->state, &S->capstate, S->nstate + 1) != 0)
                rc = nomem(S);
            if (rc == 0)
                S->state[S->nstate++] = id;
        }
    }
    if (rc == 0 && impl == MEMEST_IMPL_FOREACH && nprog) {
        uint32_t *lists[5] = {NULL};
        for (size_t k = 0; k < nprog && rc == 0; k++) {
            int l = prog[k] > 0 ? prog[k] : -prog[k];
            if (prog[k] > 0) {
                lists[l] = malloc(sizeof *lists[l] * (np ? np : 1));
                if (!lists[l]) {
                    rc = nomem(S);
                    break;
                }
                for (uint32_t i = 0; i < np && rc == 0; i++) {
                    const struct memest_param *pp = &r->params[ps[i]];
                    rc = ev_alloc(S, MEMEST_CAT_OPTTEMP, pp->node, r->storages[pp->storage].bytes,
                                  &lists[l][i]);
                }
            } else {
                for (uint32_t i = np; i-- > 0 && rc == 0;)   /* a list dies last item first */
                    rc = ev_free(S, r->params[ps[i]].node, lists[l][i]);
                free(lists[l]);
                lists[l] = NULL;
            }
        }
        for (int l = 4; l > 0; l--) {
            for (uint32_t i = np; lists[l] && i-- > 0 && rc == 0;)
                rc = ev_free(S, NONE, lists[l][i]);
            free(lists[l]);
        }
    } else if (rc == 0 && impl == MEMEST_IMPL_FORLOOP && nt) {
        uint32_t prev = NONE;
        for (uint32_t i = 0; i < np && rc == 0; i++) {
            const struct memest_param *pp = &r->params[ps[i]];
            uint64_t b = r->storages[pp->storage].bytes;
            uint32_t t1, t2;
            rc = ev_alloc(S, MEMEST_CAT_OPTTEMP, pp->node, b, &t1);
            if (rc == 0 && nt == 2) {
                /* sqrt() then "/ bias_correction2_sqrt": t1 dies after the division */
                rc = ev_alloc(S, MEMEST_CAT_OPTTEMP, pp->node, b, &t2);
                if (rc == 0)
                    rc = ev_free(S, pp->node, t1);
                t1 = t2;
            }
            if (rc == 0 && prev != NONE)   /* the previous denom/avg/std is rebound */
                rc = ev_free(S, pp->node, prev);
            prev = t1;
        }
        if (rc == 0 && prev != NONE)
            rc = ev_free(S, NONE, prev);
    }
    free(ps);
    return rc;
}

/* ---- the step ---- */

/* Frees what the caller held (`out`, `loss`) from index `from` on. */
static int drop_held(struct sim *S, uint32_t from)
{
    for (uint32_t i = from; i < S->nheld; i++)
        if (ev_free(S, NONE, S->held_ids[i]) != 0)
            return -1;
    S->nheld = from;
    return 0;
}

/* Moves the last output's storage into the caller's hands (its id goes
 * with `out`, freed when it is rebound or the step ends). */
static int take_outputs(struct sim *S)
{
    const struct memest_run *r = S->r;
    uint32_t s = r->values[root_value(S)].storage;
    while (S->alias[s] != NONE)
        s = S->alias[s];
    if (S->sid[s] == NONE || persistent_kind(r->storages[s].kind))
        return 0;
    if (remember_held(S, S->sid[s]) != 0)
        return -1;
    S->sid[s] = NONE;
    return 0;
}

static int micro_batch(struct sim *S, uint32_t mb)
{
    uint32_t old = S->nheld;
    if (forward(S, FM_TRAIN) != 0 || take_outputs(S) != 0)
        return -1;
    if (mb > 0) {   /* out = model(x) rebinds `out` of the previous micro-batch */
        uint32_t keep = S->nheld - old;
        for (uint32_t i = 0; i < old; i++)
            if (ev_free(S, NONE, S->held_ids[i]) != 0)
                return -1;
        memmove(S->held_ids, S->held_ids + old, sizeof *S->held_ids * keep);
        S->nheld = keep;
        old = 0;
    }
    if (loss_step(S) != 0)
        return -1;
    if (clear_cast_cache(S, 0, S->nn ? S->nn - 1 : 0, FM_TRAIN, NULL) != 0)
        return -1;
    return backward(S);
}

static int train_step(struct sim *S, bool first)
{
    int64_t mbs = S->cfg->grad_accum > 1 ? 2 : 1;
    for (int64_t mb = 0; mb < mbs; mb++)
        if (micro_batch(S, (uint32_t)mb) != 0)
            return -1;
    return optimizer(S, first);
}

static int infer_step(struct sim *S)
{
    if (forward(S, FM_NOGRAD) != 0 || take_outputs(S) != 0)
        return -1;
    return clear_cast_cache(S, 0, S->nn ? S->nn - 1 : 0, FM_NOGRAD, NULL);
}

/* Parameters, buffers, the model inputs and the loss target. */
static int setup(struct sim *S)
{
    const struct memest_run *r = S->r;
    S->ph = MEMEST_PH_SETUP;
    for (uint32_t s = 0; s < S->ns; s++) {
        uint8_t kind = r->storages[s].kind;
        uint8_t cat = kind == MEMEST_ST_PARAM ? MEMEST_CAT_PARAMS
                      : kind == MEMEST_ST_BUFFER ? MEMEST_CAT_BUFFERS : MEMEST_CAT_INPUTS;
        if (persistent_kind(kind) && alloc_storage(S, s, cat, r->storages[s].node) != 0)
            return -1;
    }
    if (S->inference || S->loss == MEMEST_LOSS_NONE)
        return 0;
    /* the target: class indices (int64, one per row) or a float tensor of the
     * output's shape */
    uint32_t v = root_value(S), id;
    const struct memest_value *o = &r->values[v];
    uint64_t numel;
    if (!memest_shape_numel(&o->shape, &numel))
        numel = UINT64_MAX;
    uint64_t bytes;
    if (S->loss == MEMEST_LOSS_CROSSENTROPY || S->loss == MEMEST_LOSS_NLL) {
        int64_t C = o->shape.ndim ? o->shape.size[o->shape.ndim - 1] : 1;
        bytes = memest_sat_mul(C ? numel / (uint64_t)C : 0, 8);
    } else {
        bytes = value_bytes(r, v);
    }
    return ev_alloc(S, MEMEST_CAT_INPUTS, NONE, bytes, &id);
}

/* The optimizer state that exists before the first step (Adagrad's). */
static int early_state(struct sim *S)
{
    const struct memest_run *r = S->r;
    if (S->cfg->optim.kind != MEMEST_OPT_ADAGRAD || !S->opt)
        return 0;
    S->ph = MEMEST_PH_SETUP;
    for (uint32_t p = 0; p < r->nparams; p++) {
        const struct memest_param *pp = &r->params[p];
        if (pp->tied_to >= 0 || !pp->trainable)
            continue;
        for (unsigned c = 0; c < S->opt->copies; c++) {
            uint32_t id;
            if (ev_alloc(S, MEMEST_CAT_OPTSTATE, pp->node, r->storages[pp->storage].bytes, &id) != 0)
                return -1;
        }
    }
    return 0;
}

/* zero_grad() at the start of the step: set_to_none frees every .grad;
 * zeros keeps them (zeroed in place). */
static int zero_grad(struct sim *S)
{
    if (S->cfg->zero_grad_zeros)
        return 0;
    for (uint32_t s = 0; s < S->ns; s++) {
        if (S->pg[s] != NONE) {
            if (ev_free(S, NONE, S->pg[s]) != 0)
                return -1;
            S->pg[s] = NONE;
        }
    }
    return 0;
}

static int teardown(struct sim *S)
{
    S->ph = MEMEST_PH_TEARDOWN;
    uint32_t n = S->tl->next_id;
    for (uint32_t id = 0; id < n; id++)
        if (id < S->capalive && S->alive[id] && ev_free(S, NONE, id) != 0)
            return -1;
    return 0;
}

/* ---- allocator replay, export, peaks ---- */

struct idinfo {
    uint64_t bytes, block;
    uint32_t handle;
    uint8_t cat;
    uint8_t early_free;   /* freed before the step starts */
};

static uint32_t reserved_units(uint64_t reserved)
{
    uint64_t u = reserved / MEMEST_ALLOC_SMALL_BUFFER;
    return u > UINT32_MAX ? UINT32_MAX : (uint32_t)u;
}

/* Replays the allocator over the full list (filling each event's block and
 * reserved), finds the peaks of the step (events from `start` on, the live
 * set at `start` standing for the setup), and when out is not NULL exports
 * the step: the allocations alive at `start` as its setup, then the
 * events from `start` on. */
static int finish(struct sim *S, size_t start, struct memest_timeline *out, struct memest_peak *pk)
{
    struct memest_timeline *tl = S->tl;
    uint32_t nid = tl->next_id;
    struct idinfo *info = calloc(nid ? nid : 1, sizeof *info);
    struct memest_alloc *a = memest_alloc_create();
    int rc = -1;
    if (!info || !a) {
        nomem(S);
        goto end;
    }
    memset(pk, 0, sizeof *pk);
    pk->node = NONE;
    uint64_t live[MEMEST_CAT_COUNT] = {0}, total = 0, tensors = 0;
    size_t nlive = 0, nsetup = 0;
    for (size_t e = 0; e <= tl->n; e++) {
        if (e == start) {
            /* the step starts: reset_peak_memory_stats(); the live set is
             * the exported setup, which reaches its total last */
            memest_alloc_reset_peak(a);
            nsetup = nlive;
            pk->bytes = total;
            pk->tensor_bytes = tensors;
            pk->event = pk->tensor_event = nsetup ? nsetup - 1 : 0;
            pk->phase = MEMEST_PH_SETUP;
            memcpy(pk->at_peak, live, sizeof live);
        }
        if (e == tl->n)
            break;
        struct memest_event *ev = &tl->ev[e];
        struct idinfo *in = &info[ev->id];
        bool ws = ev->category == MEMEST_CAT_WORKSPACE;
        if (ev->kind == MEMEST_EV_ALLOC) {
            in->bytes = ev->bytes;
            in->cat = ev->category;
            int arc = ev->bytes > 0 ? memest_alloc_malloc(a, ev->bytes, &in->handle, &in->block)
                                    : 0;
            if (arc == -2) {
                nomem(S);
                goto end;
            }
            if (arc != 0) {
                memest_errf(S->err, MEMEST_ERR_LIMIT, NULL,
                            "the step needs more than 2^62 bytes in one allocation, or "
                            "more than 2^63 - 1 bytes of memory in all");
                goto end;
            }
            ev->block = in->block;
            live[ev->category] += in->block;
            total += in->block;
            if (!ws)
                tensors += ev->bytes;
            nlive++;
        } else {
            ev->bytes = in->bytes;
            ev->category = in->cat;
            ev->block = in->block;
            if (in->bytes > 0)
                memest_alloc_free(a, in->handle);
            if (e < start)
                in->early_free = 1;
            live[in->cat] -= in->block;
            total -= in->block;
            if (in->cat != MEMEST_CAT_WORKSPACE)
                tensors -= in->bytes;
            nlive--;
        }
        ev->reserved = reserved_units(memest_alloc_stats(a)->reserved);
        if (e < start)
            continue;
        size_t x = nsetup + (e - start);   /* its index in the exported step */
        if (total > pk->bytes) {
            pk->bytes = total;
            pk->event = x;
            pk->phase = ev->phase & (uint8_t)~WARM;
            pk->node = ev->node;
            memcpy(pk->at_peak, live, sizeof live);
        }
        if (tensors > pk->tensor_bytes) {
            pk->tensor_bytes = tensors;
            pk->tensor_event = x;
        }
    }
    const struct memest_alloc_stats *st = memest_alloc_stats(a);
    pk->reserved = st->max_reserved;
    pk->segments = st->segments;
    if (out) {
        /* compacted in place (each event moves to a lower index) and
         * handed over: no second copy of the step */
        uint32_t res0 = start ? tl->ev[start - 1].reserved : 0;
        size_t k = 0;
        for (size_t e = 0; e < start; e++) {
            struct memest_event ev = tl->ev[e];
            if (ev.kind != MEMEST_EV_ALLOC || info[ev.id].early_free)
                continue;
            ev.phase = MEMEST_PH_SETUP;
            ev.reserved = res0;
            tl->ev[k++] = ev;
        }
        for (size_t e = start; e < tl->n; e++) {
            struct memest_event ev = tl->ev[e];
            ev.phase &= (uint8_t)~WARM;
            tl->ev[k++] = ev;
        }
        const char *const *names = out->node_names;
        memest_timeline_dispose(out);
        *out = *tl;
        out->n = k;
        out->next_id = nid;
        out->node_names = names;
        *tl = (struct memest_timeline){0};
    }
    rc = 0;
end:
    free(info);
    memest_alloc_destroy(a);
    return rc;
}

static void sim_free(struct sim *S)
{
    free(S->release);
    free(S->relin);
    free(S->rhead);
    free(S->rnext);
    free(S->ihead);
    free(S->inext);
    free(S->fhead);
    free(S->fnext);
    free(S->lastuse);
    free(S->alias);
    free(S->sfirst);
    free(S->held);
    free(S->reach);
    free(S->ck_of);
    free(S->ck);
    free(S->sid);
    free(S->vg);
    free(S->pg);
    free(S->cg);
    free(S->gb);
    free(S->gbfree);
    free(S->gs);
    free(S->gsfree);
    free(S->state);
    free(S->held_ids);
    free(S->pids);
    free(S->alive);
}

/* The first storage of each node (storages are made in node order), with
 * entries up to nnodes + 1 holding nstorages; NULL when out of memory. */
static uint32_t *index_storages(const struct memest_run *r)
{
    uint32_t nn = r->g->nnodes, *first = malloc(sizeof *first * ((size_t)nn + 2));
    if (!first)
        return NULL;
    uint32_t s = 0;
    for (uint32_t n = 0; n <= nn + 1; n++) {
        while (s < r->nstorages && r->storages[s].node < n)
            s++;
        first[n] = s;
    }
    return first;
}

static uint32_t *filled(size_t n)
{
    uint32_t *p = malloc(sizeof *p * (n ? n : 1));
    if (p)
        memset(p, 0xFF, sizeof *p * (n ? n : 1));
    return p;
}

int memest_calc_peak(const struct memest_run *r, const struct memest_peak_opts *o,
                     struct memest_timeline *tl, struct memest_peak *out, struct memest_error *err)
{
    struct memest_step_cfg defaults;
    memest_step_cfg_default(&defaults);
    struct memest_timeline full = {0};
    struct sim S = {.r = r, .g = r->g, .cfg = o->step ? o->step : &defaults, .opt = o->opt,
                    .tl = &full, .err = err, .inference = o->inference,
                    .nn = r->g->nnodes, .ns = r->nstorages, .nv = r->nvalues, .cublas = NONE};
    int rc = -1;
    memset(out, 0, sizeof *out);
    out->node = NONE;
    /* the loss */
    S.loss = MEMEST_LOSS_CROSSENTROPY;
    const char *lname = S.cfg->loss ? S.cfg->loss : r->g->loss;
    if (lname && memest_loss_parse(lname, &S.loss) != 0)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--loss: unknown loss \"%s\" (one of %s)",
                           lname, memest_loss_names());
    if (S.cfg->impl == MEMEST_IMPL_FUSED && !S.inference &&
        (S.cfg->optim.kind == MEMEST_OPT_RMSPROP || S.cfg->optim.kind == MEMEST_OPT_ADAGRAD))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--optim-impl fused: PyTorch has no fused CUDA %s (fused exists for "
                           "sgd, adam and adamw)", memest_optim_name(S.cfg->optim.kind));
    if (r->g->noutputs == 0)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "internal: the model has no output");
    size_t ns = S.ns, nn = S.nn;
    S.release = filled(ns);
    S.relin = filled(ns);
    S.rhead = filled(nn);
    S.rnext = filled(ns);
    S.ihead = filled(nn);
    S.inext = filled(ns);
    S.fhead = filled(nn);
    S.fnext = filled(ns);
    S.lastuse = filled(ns);
    S.alias = filled(ns);
    S.held = calloc(ns ? ns : 1, 1);
    S.reach = calloc(nn ? nn : 1, 1);
    S.ck_of = filled(nn);
    S.sid = filled(ns);
    S.vg = filled(S.nv);
    S.pg = filled(ns);
    S.cg = filled(ns);
    S.sfirst = index_storages(r);
    uint32_t maxp = 1;
    for (uint32_t n = 0; n < nn; n++)
        if (r->nodes[n].nparam > maxp)
            maxp = r->nodes[n].nparam;
    S.pids = malloc(sizeof *S.pids * maxp);
    uint8_t *vreach = calloc(S.nv ? S.nv : 1, 1);
    if (!S.sfirst || !S.release || !S.relin || !S.rhead || !S.rnext || !S.ihead || !S.inext ||
        !S.fhead || !S.fnext || !S.lastuse || !S.alias || !S.held || !S.reach || !S.ck_of ||
        !S.sid || !S.vg || !S.pg || !S.cg || !S.pids || !vreach) {
        nomem(&S);
        goto end;
    }
    if (!S.inference && analyze_reach(&S, vreach) != 0)
        goto end;
    if (analyze_checkpoint(&S) != 0)
        goto end;
    analyze_lastuse(&S);
    analyze_release(&S);

    /* room for the events up front: the cost model's bound, or a guess (a
     * warm-up and a step, each about two allocations per storage and
     * parameter, each freed once); pages never written cost nothing */
    size_t want = o->events && o->events < SIZE_MAX / sizeof *full.ev
                      ? (size_t)o->events
                      : 8 * ((size_t)ns + r->nparams) + 1024;
    full.ev = malloc(sizeof *full.ev * want);
    if (full.ev)
        full.cap = want;
    size_t start;
    if (setup(&S) != 0 || early_state(&S) != 0)
        goto end;
    if (S.inference) {
        S.ph = WARM;
        if (infer_step(&S) != 0 || drop_held(&S, 0) != 0)
            goto end;
        start = full.n;
        S.ph = 0;
        if (infer_step(&S) != 0)
            goto end;
    } else if (S.cfg->first_step) {
        start = full.n;
        S.ph = 0;
        if (train_step(&S, true) != 0)
            goto end;
    } else {
        S.ph = WARM;
        if (train_step(&S, true) != 0 || drop_held(&S, 0) != 0 || zero_grad(&S) != 0)
            goto end;
        start = full.n;
        S.ph = 0;
        if (train_step(&S, false) != 0)
            goto end;
    }
    if (teardown(&S) != 0)
        goto end;
    size_t made = full.n;   /* finish() hands the list over to tl */
    if (finish(&S, start, tl, out) != 0)
        goto end;
    out->sim_events = made;
    rc = 0;
end:
    free(vreach);
    sim_free(&S);
    memest_timeline_dispose(&full);
    return rc;
}
