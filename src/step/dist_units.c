/* dist_units.c - what the engines cut a model into (dist.h): the units
 * (a top-level block instance, the FSDP wrap block's, PEFT's adapter
 * leaves, ZeRO-3's modules), the elements each parameter is stored in, and
 * FSDP's FlatParameter per unit. The sources:
 *   torch v2.6 torch/distributed/fsdp/_flat_param.py: one FlatParameter of
 *     a unit's parameters in registration order (_init_flat_param_and_metadata),
 *     with use_orig_params=True each parameter's start padded to 16 bytes
 *     (_get_aligned_numel in the forward/backward dtype); the FlatParameter
 *     padded to a multiple of the shard group and cut into equal chunks
 *     (FlatParamHandle._get_shard); every parameter of one FlatParameter of
 *     one requires_grad unless use_orig_params ("Must flatten tensors with
 *     uniform requires_grad when use_orig_params=False", _validate_tensors_to_flatten);
 *     with use_orig_params the shard's gradient is whole (the docstring of
 *     FullyShardedDataParallel: "FSDP allocates gradient memory for frozen
 *     parameters" of a mixed unit) and the optimizer sees the original
 *     parameters' views, so only the trainable ones' parts have state;
 *   accelerate v1.14.0 src/accelerate/accelerator.py:1991-2031: with mixed
 *     precision on, each FlatParameter that requires grad and is not fp32 is
 *     upcast to fp32 (the master the optimizer updates); a frozen one stays in
 *     its dtype;
 *   peft v0.17.1 src/peft/utils/other.py fsdp_auto_wrap_policy: _or_policy of
 *     a lambda policy (a module without children whose weight requires grad
 *     is a unit) and transformer_auto_wrap_policy over the layer classes;
 *     transformers' Trainer sets it for every LoRA model under FSDP
 *     (trainer.py _fsdp_qlora_plugin_updates, v4.40 to v4.57;
 *     update_fsdp_plugin_peft in 5.x). */
#include <stdlib.h>
#include <string.h>

#include "memest/checked.h"
#include "memest/dist.h"
#include "memest/dtype.h"
#include "memest/graph.h"

#define NOUNIT UINT32_MAX

bool memest_dist_persistent(const struct memest_rank_view *v, const struct memest_param *p)
{
    return v->strategy == MEMEST_STRAT_ZERO3 &&
           p->numel <= v->cfg->eng.param_persistence_threshold;
}

/* PEFT's lambda policy: a leaf module whose weight requires grad (each
 * memest node is one module; its parameter called "weight", as getattr(
 * module, "weight") finds it). */
static bool peft_leaf(const struct memest_run *r, uint32_t n)
{
    const struct memest_nodeinfo *ni = &r->nodes[n];
    for (uint32_t i = ni->param_first; i < ni->param_first + ni->nparam; i++)
        if (r->params[i].trainable && r->params[i].tied_to < 0 &&
            strcmp(r->params[i].name, "weight") == 0)
            return true;
    return false;
}

/* Under the peft policy each leaf is a unit of its own; the units are
 * renumbered in the order of their first nodes (a layer's nodes around its
 * adapters keep the layer's unit). map has nu entries. */
static uint32_t split_leaves(const struct memest_run *r, uint32_t *unit_of, uint32_t nu,
                             uint32_t *map)
{
    uint32_t next = 0;
    for (uint32_t u = 0; u < nu; u++)
        map[u] = NOUNIT;
    for (uint32_t n = 0; n < r->g->nnodes; n++) {
        if (peft_leaf(r, n)) {
            unit_of[n] = next++;
            continue;
        }
        uint32_t old = unit_of[n];
        if (old == NOUNIT)
            continue;
        if (map[old] == NOUNIT)
            map[old] = next++;
        unit_of[n] = map[old];
    }
    return next;
}

static bool selected_block(const struct memest_block_inst *b, const struct memest_rank_view *v)
{
    const char *want = v->cfg ? v->cfg->eng.wrap_block : NULL;
    return want ? strcmp(b->type, want) == 0 : b->depth == 0;
}

static int by_first(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

uint32_t memest_dist_units(const struct memest_run *r, const struct memest_rank_view *v,
                           uint32_t *unit_of)
{
    const struct memest_graph *g = r->g;
    for (uint32_t n = 0; n < g->nnodes; n++)
        unit_of[n] = NOUNIT;
    /* the chosen block instances' first nodes, in graph order (an instance
     * nested in a chosen one belongs to it) */
    uint32_t nsel = 0;
    for (uint32_t b = 0; b < g->nblocks; b++)
        if (selected_block(&g->blocks[b], v))
            nsel++;
    uint32_t *firsts = malloc(sizeof *firsts * (nsel ? nsel : 1) * 2);
    if (!firsts)
        return UINT32_MAX;
    nsel = 0;
    for (uint32_t b = 0; b < g->nblocks; b++)
        if (selected_block(&g->blocks[b], v)) {
            firsts[2 * nsel] = g->blocks[b].first;
            firsts[2 * nsel + 1] = g->blocks[b].last;
            nsel++;
        }
    qsort(firsts, nsel, 2 * sizeof *firsts, by_first);
    uint32_t nu = 0, end = 0;
    bool any = false;
    for (uint32_t i = 0; i < nsel; i++) {
        uint32_t a = firsts[2 * i], z = firsts[2 * i + 1];
        if (any && a <= end)
            continue;   /* nested in the previous unit */
        for (uint32_t n = a; n <= z; n++)
            unit_of[n] = nu;
        nu++;
        end = z;
        any = true;
    }
    if (v->flat_units && v->cfg && v->cfg->eng.policy == MEMEST_FSDP_POLICY_PEFT)   /* FSDP */
        nu = split_leaves(r, unit_of, nu, firsts);   /* nsel >= nu entries */
    free(firsts);
    /* ZeRO-3 gathers a module's parameters when the module runs: a node with
     * parameters outside every block is a unit of its own; FSDP's root unit
     * keeps them together (unit_of NOUNIT) */
    if (v->strategy == MEMEST_STRAT_ZERO3) {
        /* renumber in graph order (new ids are never below old ones) */
        uint32_t next = 0, prev = NOUNIT;
        for (uint32_t n = 0; n < g->nnodes; n++) {
            uint32_t old = unit_of[n];
            if (old == NOUNIT) {
                prev = NOUNIT;
                if (r->nodes[n].nparam > 0)
                    unit_of[n] = next++;
                continue;
            }
            if (old != prev)
                next++;
            prev = old;
            unit_of[n] = next - 1;
        }
        nu = next;
    }
    return nu;
}


uint64_t memest_dist_param_elem(const struct memest_run *r, const struct memest_param *p)
{
    unsigned e = memest_dtype_size((enum memest_dtype)r->storages[p->storage].dtype);
    return e ? e : 1;
}

uint64_t memest_dist_param_numel(const struct memest_run *r, const struct memest_param *p)
{
    uint64_t b = r->storages[p->storage].bytes, e = memest_dist_param_elem(r, p);
    return b / e + (b % e != 0);
}

uint64_t memest_dist_train_elem(const struct memest_run *r)
{
    for (uint32_t i = 0; i < r->nparams; i++)
        if (r->params[i].tied_to < 0 && r->params[i].trainable)
            return memest_dist_param_elem(r, &r->params[i]);
    return 2;
}

uint64_t memest_dist_zero_part(const struct memest_run *r, const struct memest_rank_view *v)
{
    uint64_t all = 0, part3 = 0;
    for (uint32_t i = 0; i < r->nparams; i++) {
        const struct memest_param *p = &r->params[i];
        if (p->tied_to >= 0 || !p->trainable)
            continue;
        uint64_t n = memest_dist_param_numel(r, p);
        all += n;
        part3 += memest_dist_part(n, v->shard);
    }
    if (v->strategy == MEMEST_STRAT_ZERO3)
        return part3;
    return memest_dist_part(all, v->shard * 2) * 2;
}

uint32_t memest_dist_zero3_sub_groups(const struct memest_run *r, const struct memest_rank_view *v,
                                      uint64_t *numel)
{
    uint64_t size = v->cfg ? v->cfg->eng.sub_group_size : 1000000000, total = 0, acc = 0;
    uint32_t last = UINT32_MAX, n = 0;
    for (uint32_t i = 0; i < r->nparams; i++)
        if (r->params[i].tied_to < 0 && r->params[i].trainable) {
            total += memest_dist_part(memest_dist_param_numel(r, &r->params[i]), v->shard);
            last = i;
        }
    if (last == UINT32_MAX)
        return 0;
    if (size >= total) {   /* "sub_group_size >= params_group_numel: return [params_group]" */
        if (numel)
            numel[0] = total;
        return 1;
    }
    for (uint32_t i = 0; i <= last; i++) {
        const struct memest_param *p = &r->params[i];
        if (p->tied_to >= 0 || !p->trainable)
            continue;
        acc += memest_dist_part(memest_dist_param_numel(r, p), v->shard);
        if (acc >= size || i == last) {
            if (numel)
                numel[n] = acc;
            n++;
            acc = 0;
        }
    }
    return n;
}

/* The most trainable elements one rank's chunk of a FlatParameter holds:
 * the trainable intervals [a, b) come in order; a rank wholly inside one
 * holds a full chunk, so the walk touches at most three ranks per interval. */
struct walk {
    uint64_t rank, sum, best;
};

static void walk_add(struct walk *w, uint64_t a, uint64_t b, uint64_t part)
{
    uint64_t r0 = a / part, r1 = (b - 1) / part;
    if (r0 != w->rank) {
        if (w->sum > w->best)
            w->best = w->sum;
        w->rank = r0;
        w->sum = 0;
    }
    if (r0 == r1) {
        w->sum += b - a;
        return;
    }
    w->sum += (r0 + 1) * part - a;
    if (w->sum > w->best)
        w->best = w->sum;
    if (r1 > r0 + 1 && part > w->best)
        w->best = part;
    w->rank = r1;
    w->sum = b - r1 * part;
}

/* use_orig_params' padding before a parameter: the flat parameter's length
 * to a multiple of 16 bytes of the unit's element */
static uint64_t aligned(uint64_t numel, uint64_t elem)
{
    uint64_t a = elem && elem < 16 ? 16 / elem : 1;
    return numel % a ? numel + (a - numel % a) : numel;
}

static void fsdp2_units(const struct memest_run *r, const struct memest_rank_view *v,
                        const uint32_t *unit_of, uint32_t nunits, struct memest_flat_unit *fu);

int memest_dist_flat_units(const struct memest_run *r, const struct memest_rank_view *v,
                           const uint32_t *unit_of, uint32_t nunits,
                           struct memest_flat_unit *fu)
{
    size_t n = (size_t)nunits + 1;
    bool orig = v->cfg && v->cfg->eng.use_orig_params;
    uint64_t k = v->shard > 0 ? (uint64_t)v->shard : 1;
    uint64_t *off = calloc(n, sizeof *off), *raw = calloc(n, sizeof *raw);
    struct walk *w = calloc(n, sizeof *w);
    if (!off || !raw || !w) {
        free(off), free(raw), free(w);
        return -1;
    }
    memset(fu, 0, sizeof *fu * n);
    for (size_t u = 0; u < n; u++) {
        fu[u].mixed_node = fu[u].dtype_node = NOUNIT;
        w[u].rank = UINT64_MAX;
    }
    if (v->cfg && v->cfg->eng.fsdp2) {
        fsdp2_units(r, v, unit_of, nunits, fu);
        free(off), free(raw), free(w);
        return 0;
    }
    /* the layout: each parameter's stored elements in order */
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < r->nparams; i++) {
            const struct memest_param *p = &r->params[i];
            if (p->tied_to >= 0)
                continue;
            uint32_t u = unit_of[p->node] == NOUNIT ? nunits : unit_of[p->node];
            struct memest_flat_unit *f = &fu[u];
            uint64_t e = memest_dist_param_elem(r, p), pn = memest_dist_param_numel(r, p);
            uint8_t dt = r->storages[p->storage].dtype;
            if (pass == 0) {
                if (!f->elem) {
                    f->elem = e;
                    f->dtype = dt;
                    f->first_node = p->node;
                } else if (dt != f->dtype && f->dtype_node == NOUNIT) {
                    f->dtype_node = p->node;
                }
                f->numel = memest_sat_add(orig ? aligned(f->numel, f->elem) : f->numel, pn);
                raw[u] = memest_sat_add(raw[u], pn);
                if (p->trainable) {
                    f->trainable = memest_sat_add(f->trainable, pn);
                    f->requires_grad = true;
                }
                continue;
            }
            /* the second pass: which ranks hold the trainable parts */
            off[u] = orig ? aligned(off[u], f->elem) : off[u];
            uint64_t part = memest_dist_part(f->numel, (int64_t)k);
            if (f->requires_grad && f->trainable != raw[u] && !p->trainable &&
                f->mixed_node == NOUNIT)
                f->mixed_node = p->node;
            if (p->trainable && pn && part && orig)
                walk_add(&w[u], off[u], off[u] + pn, part);
            off[u] = memest_sat_add(off[u], pn);
        }
    }
    for (size_t u = 0; u < n; u++) {
        struct memest_flat_unit *f = &fu[u];
        uint64_t part = memest_dist_part(f->numel, (int64_t)k);
        f->gathered = memest_sat_mul(memest_sat_mul(part, k), f->elem);
        if (f->requires_grad) {
            if (w[u].sum > w[u].best)
                w[u].best = w[u].sum;
            f->state = orig ? w[u].best : part;
            if (v->master_fp32 && f->elem < 4)
                f->elem = 4;   /* accelerate's upcast: the shard is the fp32 master */
        }
        f->shard_bytes = memest_sat_mul(part, f->elem);
        f->grad_bytes = f->requires_grad ? f->shard_bytes : 0;
        f->state_bytes = memest_sat_mul(f->state, f->elem);
    }
    free(off), free(raw), free(w);
    return 0;
}

/* FSDP2 (torch v2.6 torch/distributed/fsdp/_fully_shard/_fsdp_param.py,
 * FSDPParam._init_sharded_param): each parameter chunked on dim 0 over the
 * shard group (torch.chunk) and padded to the first chunk's size, so every
 * rank holds ceil(dim0 / k) rows of numel / dim0 elements; a gradient only
 * for a parameter that requires grad, reduce-scattered into its chunk; the
 * unsharded parameters all-gathered per unit (the padded sizes). The fp32
 * master of a trainable parameter under mixed precision as for FSDP1. */
static void fsdp2_units(const struct memest_run *r, const struct memest_rank_view *v,
                        const uint32_t *unit_of, uint32_t nunits, struct memest_flat_unit *fu)
{
    uint64_t k = v->shard > 0 ? (uint64_t)v->shard : 1;
    for (uint32_t i = 0; i < r->nparams; i++) {
        const struct memest_param *p = &r->params[i];
        if (p->tied_to >= 0)
            continue;
        struct memest_flat_unit *f = &fu[unit_of[p->node] == NOUNIT ? nunits : unit_of[p->node]];
        uint64_t e = memest_dist_param_elem(r, p), pn = memest_dist_param_numel(r, p);
        uint64_t dim0 = p->shape.ndim > 0 && p->shape.size[0] > 0 ? (uint64_t)p->shape.size[0] : 1;
        if (pn % dim0)   /* a packed weight's stored elements: [n, 1] */
            dim0 = pn;
        uint64_t rows = memest_dist_part(dim0, (int64_t)k), chunk = memest_sat_mul(rows, pn / dim0);
        uint64_t se = p->trainable && v->master_fp32 && e < 4 ? 4 : e;
        if (!f->elem) {
            f->elem = e;
            f->dtype = r->storages[p->storage].dtype;
            f->first_node = p->node;
        }
        f->numel = memest_sat_add(f->numel, memest_sat_mul(chunk, k));
        f->gathered = memest_sat_add(f->gathered, memest_sat_mul(memest_sat_mul(chunk, k), e));
        f->shard_bytes = memest_sat_add(f->shard_bytes, memest_sat_mul(chunk, se));
        if (p->trainable) {
            f->requires_grad = true;
            f->trainable = memest_sat_add(f->trainable, pn);
            f->state = memest_sat_add(f->state, chunk);
            f->grad_bytes = memest_sat_add(f->grad_bytes, memest_sat_mul(chunk, se));
            f->state_bytes = memest_sat_add(f->state_bytes, memest_sat_mul(chunk, se));
        }
    }
}
