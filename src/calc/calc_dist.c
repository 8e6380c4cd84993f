/* calc_dist.c - one rank's model states under several GPUs (calc.h,
 * dist.h): parameters, gradients, optimizer state and master weights as
 * each engine partitions them, what an offload moves to the host, and the
 * engine's buffers, stated apart. The sources each rule follows:
 *   DDP      torch/nn/parallel/distributed.py and reducer.cpp (v2.6): every
 *            gradient whole; the reducer's buckets hold a second copy of
 *            them unless gradient_as_bucket_view.
 *   ZeRO-1/2 deepspeed/runtime/zero/stage_1_and_2.py (v0.16): the trainable
 *            parameters of a group flattened, padded and cut into one equal
 *            partition per data-parallel rank; the fp32 master partition
 *            (single_partition_of_fp32_groups) and the optimizer state over
 *            it; ZeRO-2 keeps only the partition's gradients; the reduce
 *            bucket (ipg_buffer) of reduce_bucket_size elements.
 *   ZeRO-3   deepspeed/runtime/zero/partition_parameters.py and stage3.py:
 *            each parameter padded to a multiple of the ranks and cut, the
 *            small ones (numel <= stage3_param_persistence_threshold) kept
 *            whole; fp16 partitions, fp32 master and state over them.
 *   FSDP     torch/distributed/fsdp/_flat_param.py (v2.6): one FlatParameter
 *            per wrapped unit, padded to a multiple of the shard group;
 *            with MixedPrecision the shard stays fp32 and is the master.
 * The per-rank figure is exact for these rules; the formulas of Rajbhandari
 * et al. 2020 (DDP 16Psi, ZeRO-1 4Psi + 12Psi/N, ZeRO-2 2Psi + 14Psi/N,
 * ZeRO-3 16Psi/N with mixed-precision Adam) are their limit without padding. */
#include <stdlib.h>
#include <string.h>

#include "memest/calc.h"
#include "memest/checked.h"
#include "memest/dist.h"
#include "memest/dtype.h"
#include "memest/optim.h"

#define NOUNIT UINT32_MAX

struct acc {
    bool ok;
    struct memest_dist_states s;
};

static void add(struct acc *a, uint64_t *to, uint64_t v)
{
    a->ok &= memest_add(*to, v, to);
}

/* The state over a partition of numel elements (bytes in all), matrices of
 * them in a gathering optimizer's matrices (optim.h: memest_optim_part_state,
 * Distributed Muon's momentum; the rest AdamW's) */
static void add_state(struct acc *a, const struct memest_optim_cfg *oc, uint64_t numel,
                      uint64_t bytes, uint64_t matrices, bool host)
{
    struct memest_optim_state st;
    memest_optim_part_state(oc, numel, bytes, matrices, &st);
    for (unsigned k = 0; k < st.n; k++)
        if (!(st.paged & (1u << k)))
            add(a, host ? &a->s.host : &a->s.optim, st.bytes[k]);
}

/* The parameters gathered per unit (and the root, index n), as
 * memest_dist_units cuts the model: a node's unit, and per unit its
 * elements, trainable elements, element size and whole bytes. */
struct units {
    uint32_t n;
    uint32_t *of;
    uint64_t *gathered;
    struct memest_flat_unit *flat;   /* FSDP: the FlatParameters (dist.h) */
};

static void units_free(struct units *u)
{
    free(u->of), free(u->gathered), free(u->flat);
}

static int units_make(const struct memest_run *r, const struct memest_rank_view *v,
                      struct units *u, struct memest_error *err)
{
    uint32_t nn = r->g->nnodes;
    *u = (struct units){0};
    u->of = malloc(sizeof *u->of * (nn ? nn : 1));
    if (!u->of)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    u->n = v->shard_params || v->flat_units ? memest_dist_units(r, v, u->of) : 0;
    if (u->n == UINT32_MAX) {
        units_free(u);
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    }
    size_t n = (size_t)u->n + 1;
    u->gathered = calloc(n, sizeof *u->gathered);
    u->flat = v->flat_units ? calloc(n, sizeof *u->flat) : NULL;
    if (!u->gathered || (v->flat_units && (!u->flat ||
                                           memest_dist_flat_units(r, v, u->of, u->n, u->flat) != 0))) {
        units_free(u);
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; v->flat_units && i < n; i++)
        u->gathered[i] = u->flat[i].gathered;
    return 0;
}

/* What FSDP1 refuses to flatten into one FlatParameter
 * (_flat_param.py _validate_tensors_to_flatten, v2.6): integer tensors
 * ("Cannot flatten integer dtype tensors": bitsandbytes' default uint8
 * packing), two types ("Must flatten tensors with uniform dtype"), and
 * trainable with frozen parameters unless use_orig_params. */
static int check_flat(const struct memest_run *r, const struct memest_rank_view *v,
                      const struct units *u, struct memest_error *err)
{
    if (!v->flat_units || v->cfg->eng.fsdp2)   /* FSDP2 shards each parameter alone */
        return 0;
    for (uint32_t i = 0; i <= u->n; i++) {
        const struct memest_flat_unit *f = &u->flat[i];
        uint32_t n = NOUNIT;
        if (f->numel && !memest_dtype_is_float((enum memest_dtype)f->dtype)) {
            n = f->first_node;
            memest_errf(err, MEMEST_ERR_USAGE, NULL,
                        "FSDP cannot flatten this node's %s parameters into a FlatParameter "
                        "(\"Cannot flatten integer dtype tensors\"): store bitsandbytes' 4-bit "
                        "weights in the model's type, --quant-storage bf16 "
                        "(bnb_4bit_quant_storage), as FSDP-QLoRA does",
                        memest_dtype_name((enum memest_dtype)f->dtype));
        } else if (f->dtype_node != NOUNIT) {
            n = f->dtype_node;
            const struct memest_nodeinfo *ni = &r->nodes[n];
            enum memest_dtype other = ni->nparam ? (enum memest_dtype)r->storages[
                                          r->params[ni->param_first].storage].dtype
                                                 : (enum memest_dtype)f->dtype;
            bool packed = !memest_dtype_is_float(other);
            memest_errf(err, MEMEST_ERR_USAGE, NULL,
                        "FSDP flattens one type per unit (\"Must flatten tensors with uniform "
                        "dtype\"): this node's parameters are %s, the unit's first %s; %s",
                        memest_dtype_name(other), memest_dtype_name((enum memest_dtype)f->dtype),
                        packed ? "store bitsandbytes' 4-bit weights in the model's type, "
                                 "--quant-storage bf16 (bnb_4bit_quant_storage), as FSDP-QLoRA "
                                 "does"
                               : "--fsdp-policy peft gives each adapter a unit of its own");
        } else if (f->mixed_node != NOUNIT && !v->cfg->eng.use_orig_params) {
            n = f->mixed_node;
            memest_errf(err, MEMEST_ERR_USAGE, NULL,
                        "FSDP flattens the frozen parameters of this node with trainable ones "
                        "into one FlatParameter, which PyTorch refuses with "
                        "use_orig_params=False (\"Must flatten tensors with uniform "
                        "requires_grad\"): give --fsdp-orig-params, or --fsdp-policy peft "
                        "(each adapter a unit of its own)");
        }
        if (n != NOUNIT)
            return memest_err_node(err, r->g->nodes[n].name);
    }
    return 0;
}

/* Each parameter: kept whole, or its ZeRO-3 partition and gradient
 * partition, or (FSDP) in its unit's FlatParameter (add_flat_shards); a
 * quantised weight's state whole on every rank; *trainable the trainable
 * elements, *grad_full every gradient's bytes. */
static void add_params(struct acc *a, const struct memest_run *r,
                       const struct memest_rank_view *v, struct units *u, uint64_t *trainable,
                       uint64_t *grad_full)
{
    int64_t k = v->shard;
    *trainable = *grad_full = 0;
    for (uint32_t i = 0; i < r->nparams; i++) {
        const struct memest_param *p = &r->params[i];
        if (p->tied_to >= 0)
            continue;
        uint64_t full = r->storages[p->storage].bytes, e = memest_dist_param_elem(r, p);
        uint64_t stored = memest_dist_param_numel(r, p);
        add(a, &a->s.params, p->state_bytes);
        if (p->trainable) {
            *trainable += p->numel;
            add(a, grad_full, full);
        }
        if (!v->shard_params || memest_dist_persistent(v, p)) {
            add(a, &a->s.params, full);
            if (p->trainable && v->strategy == MEMEST_STRAT_ZERO3) {
                /* a persistent parameter: whole here, its gradient reduced
                 * into the partition like the others, its state partitioned */
                add(a, v->offload_optim ? &a->s.host : &a->s.grads,
                    memest_sat_mul(memest_dist_part(stored, k), v->offload_optim ? 4 : e));
            }
            continue;
        }
        if (v->flat_units)
            continue;
        uint32_t un = u->of[p->node] == NOUNIT ? u->n : u->of[p->node];
        /* ZeRO-3: the parameter padded to a multiple of the ranks and cut */
        uint64_t part = memest_dist_part(stored, k);
        add(a, v->offload_params ? &a->s.host : &a->s.params, memest_sat_mul(part, e));
        if (v->offload_params)
            add(a, &a->s.host_params, memest_sat_mul(part, e));
        add(a, &u->gathered[un], full);
        if (p->trainable) {
            add(a, v->offload_optim ? &a->s.host : &a->s.grads,
                memest_sat_mul(part, v->offload_optim ? 4 : e));
        }
    }
}

/* FSDP: one FlatParameter per unit and the root: its shard, the shard's
 * gradient when it requires grad, and the optimizer's state over the
 * shard (or, with use_orig_params, over its trainable parameters' parts). */
static void add_flat_shards(struct acc *a, const struct memest_run *r,
                            const struct memest_optim_cfg *oc,
                            const struct memest_rank_view *v, const struct units *u)
{
    uint64_t k = v->shard > 0 ? (uint64_t)v->shard : 1;
    for (uint32_t i = 0; i <= u->n; i++) {
        const struct memest_flat_unit *f = &u->flat[i];
        if (!f->numel)
            continue;
        add(a, v->offload_params ? &a->s.host : &a->s.params, f->shard_bytes);
        if (v->offload_params)
            add(a, &a->s.host_params, f->shard_bytes);
        if (!f->requires_grad)
            continue;
        a->s.shard_elems += f->state;
        add(a, v->offload_optim ? &a->s.host : &a->s.grads, f->grad_bytes);
        add_state(a, oc, f->state, f->state_bytes,
                  memest_optim_part_matrices(oc, r, k, v->cfg && v->cfg->eng.fsdp2, u->of, i, u->n),
                  v->offload_optim);
    }
}

/* ZeRO-1/2: the flat group's partition: its optimizer state and master,
 * its gradients (ZeRO-2) or every gradient (ZeRO-1); e16: the element of
 * DeepSpeed's 16-bit partitions. */
static void add_zero12_partition(struct acc *a, const struct memest_run *r,
                                 const struct memest_optim_cfg *oc,
                                 const struct memest_rank_view *v, uint64_t e16,
                                 uint64_t grad_full)
{
    uint64_t es = v->master_fp32 ? 4 : e16;   /* the optimizer state's element */
    uint64_t part = memest_dist_zero_part(r, v);
    a->s.shard_elems = part;
    uint64_t k = v->shard > 0 ? (uint64_t)v->shard : 1;
    add_state(a, oc, part, memest_sat_mul(part, es),
              memest_optim_part_matrices(oc, r, k, false, NULL, 0, 0), v->offload_optim);
    if (v->master_fp32)
        add(a, v->offload_optim ? &a->s.host : &a->s.master, memest_sat_mul(part, 4));
    if (v->shard_grads)
        add(a, v->offload_optim ? &a->s.host : &a->s.grads,
            memest_sat_mul(part, v->offload_optim ? 4 : e16));
    else {
        add(a, &a->s.grads, grad_full);
        if (v->offload_optim)   /* the fp32 gradient partition CPU Adam reads */
            add(a, &a->s.host, memest_sat_mul(part, 4));
    }
}

/* The optimizer state, master weights and (besides ZeRO-3's, which
 * add_params counts) gradients, as the strategy partitions them; e16: the
 * element of DeepSpeed's 16-bit partitions. */
static int add_optimizer(struct acc *a, const struct memest_run *r,
                         const struct memest_optim_cfg *oc, const struct memest_rank_view *v,
                         const struct units *u, uint64_t e16, uint64_t trainable,
                         uint64_t grad_full, struct memest_error *err)
{
    if (v->flat_units) {
        add_flat_shards(a, r, oc, v, u);
    } else if (v->strategy == MEMEST_STRAT_ZERO3) {
        uint64_t part3 = memest_dist_zero_part(r, v);
        a->s.shard_elems = part3;
        uint64_t k = v->shard > 0 ? (uint64_t)v->shard : 1;
        add_state(a, oc, part3, memest_sat_mul(part3, v->master_fp32 ? 4 : e16),
                  memest_optim_part_matrices(oc, r, k, false, NULL, 0, 0), v->offload_optim);
        if (v->master_fp32)
            add(a, v->offload_optim ? &a->s.host : &a->s.master, memest_sat_mul(part3, 4));
    } else if (v->shard_optim) {
        add_zero12_partition(a, r, oc, v, e16, grad_full);
    } else {
        /* one GPU, DDP: every gradient and the whole state */
        add(a, &a->s.grads, grad_full);
        struct memest_optstate os;
        if (memest_calc_optimizer(r, oc, &os, err) != 0)
            return -1;
        a->s.optim = os.device_bytes;
        a->s.shard_elems = trainable;
        if (v->ddp_buckets)
            a->s.buckets = grad_full;
    }
    return 0;
}

/* DeepSpeed's reduce bucket: ZeRO-1/2's ipg_buffer (two with
 * overlap_comm), ZeRO-3's __ipg_bucket_flat_buffer; of e16-byte elements. */
static void add_reduce_bucket(struct acc *a, const struct memest_rank_view *v, uint64_t e16)
{
    bool overlap = v->cfg->eng.overlap_comm_set ? v->cfg->eng.overlap_comm
                                                 : v->strategy == MEMEST_STRAT_ZERO3;
    unsigned nb = v->strategy == MEMEST_STRAT_ZERO3 ? 1
                  : !v->cfg->eng.contiguous_gradients ? 0 : overlap ? 2 : 1;
    add(a, &a->s.buckets, memest_sat_mul(memest_sat_mul(v->cfg->eng.reduce_bucket_size, e16), nb));
}

/* Gathered parameters: every unit with SHARD_GRAD_OP (kept from forward to
 * backward), else the largest pair of neighbouring units (the one computing
 * and the prefetched one), and FSDP's root unit throughout. */
static void add_gathered(struct acc *a, const struct memest_rank_view *v, const struct units *u,
                         uint64_t e16)
{
    const uint64_t *ug = u->gathered;
    uint64_t most = 0, all = 0;
    /* the prefetched unit: whole under FSDP, at most
     * stage3_prefetch_bucket_size elements under ZeRO-3 */
    uint64_t cap = v->flat_units ? UINT64_MAX
                                 : memest_sat_mul(v->cfg->eng.prefetch_bucket_size, e16);
    for (uint32_t i = 0; i < u->n; i++) {
        uint64_t next = i + 1 < u->n ? ug[i + 1] : 0, prev = i ? ug[i - 1] : 0;
        uint64_t ahead = (next > prev ? next : prev) < cap ? (next > prev ? next : prev) : cap;
        uint64_t pair = ug[i] + ahead;
        if (pair > most)
            most = pair;
        add(a, &all, ug[i]);
    }
    a->s.gathered = v->reshard_after_forward ? most : all;
    add(a, &a->s.gathered, ug[u->n]);
}

int memest_calc_dist_states(const struct memest_run *r, const struct memest_step_cfg *cfg,
                            struct memest_dist_states *out, struct memest_error *err)
{
    const struct memest_rank_view *v = cfg->rank;
    memset(out, 0, sizeof *out);
    if (!v)
        return 0;
    struct acc a = {.ok = true};
    struct units u;
    if (units_make(r, v, &u, err) != 0)
        return -1;
    a.s.units = u.n;
    if (check_flat(r, v, &u, err) != 0) {
        units_free(&u);
        return -1;
    }
    uint64_t trainable, grad_full;
    add_params(&a, r, v, &u, &trainable, &grad_full);
    uint64_t e16 = memest_dist_train_elem(r);   /* DeepSpeed's 16-bit partitions */
    if (add_optimizer(&a, r, &cfg->optim, v, &u, e16, trainable, grad_full, err) != 0) {
        units_free(&u);
        return -1;
    }
    if (v->deepspeed)
        add_reduce_bucket(&a, v, e16);
    if (v->shard_params)
        add_gathered(&a, v, &u, e16);
    units_free(&u);
    if (v->offload_optim)   /* ZeRO-Offload: 16-bit gradients out, 16-bit parameters in */
        add(&a, &a.s.offload_moved, memest_sat_mul(memest_sat_mul(a.s.shard_elems, e16), 2));
    add(&a, &a.s.total, a.s.params);
    add(&a, &a.s.total, a.s.grads);
    add(&a, &a.s.total, a.s.optim);
    add(&a, &a.s.total, a.s.master);
    if (!a.ok)
        return memest_errf(err, MEMEST_ERR_LIMIT, NULL, "a rank's model states exceed 2^63 bytes");
    *out = a.s;
    return 0;
}
