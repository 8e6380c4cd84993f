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

static void add_state(struct acc *a, const struct memest_optim_cfg *oc, uint64_t numel,
                      uint64_t bytes, bool host)
{
    struct memest_optim_state st;
    memest_optim_param_state(oc, numel, bytes, &st);
    for (unsigned k = 0; k < st.n; k++)
        if (!(st.paged & (1u << k)))
            add(a, host ? &a->s.host : &a->s.optim, st.bytes[k]);
}

int memest_calc_dist_states(const struct memest_run *r, const struct memest_step_cfg *cfg,
                            struct memest_dist_states *out, struct memest_error *err)
{
    const struct memest_rank_view *v = cfg->rank;
    memset(out, 0, sizeof *out);
    if (!v)
        return 0;
    const struct memest_optim_cfg *oc = &cfg->optim;
    int64_t k = v->shard;
    struct acc a = {.ok = true};
    uint32_t nn = r->g->nnodes;
    uint32_t *unit_of = malloc(sizeof *unit_of * (nn ? nn : 1));
    if (!unit_of)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    uint32_t nu = v->shard_params || v->flat_units ? memest_dist_units(r, v, unit_of) : 0;
    if (nu == UINT32_MAX) {
        free(unit_of);
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    }
    a.s.units = nu;
    /* per unit (and the root, index nu): elements, element size, gathered bytes */
    uint64_t *un = calloc((size_t)nu + 1, sizeof *un), *ut = calloc((size_t)nu + 1, sizeof *ut);
    uint64_t *ug = calloc((size_t)nu + 1, sizeof *ug), *ue = calloc((size_t)nu + 1, sizeof *ue);
    if (!un || !ut || !ug || !ue) {
        free(unit_of), free(un), free(ut), free(ug), free(ue);
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    }
    uint64_t trainable = 0, grad_full = 0;
    for (uint32_t i = 0; i < r->nparams; i++) {
        const struct memest_param *p = &r->params[i];
        if (p->tied_to >= 0)
            continue;
        uint64_t full = r->storages[p->storage].bytes, e = memest_dist_param_elem(r, p);
        if (p->trainable) {
            trainable += p->numel;
            add(&a, &grad_full, full);
        }
        if (!v->shard_params || memest_dist_persistent(v, p)) {
            add(&a, &a.s.params, full);
            if (p->trainable && v->strategy == MEMEST_STRAT_ZERO3) {
                /* a persistent parameter: whole here, its gradient reduced
                 * into the partition like the others, its state partitioned */
                add(&a, v->offload_optim ? &a.s.host : &a.s.grads,
                    memest_sat_mul(memest_dist_part(p->numel, k), v->offload_optim ? 4 : e));
            }
            continue;
        }
        if (v->flat_units) {
            uint32_t u = unit_of[p->node] == NOUNIT ? nu : unit_of[p->node];
            un[u] += p->numel;
            if (p->trainable)
                ut[u] += p->numel;
            if (!ue[u])
                ue[u] = e;
            add(&a, &ug[u], full);
            continue;
        }
        /* ZeRO-3: the parameter padded to a multiple of the ranks and cut */
        uint64_t part = memest_dist_part(p->numel, k);
        add(&a, v->offload_params ? &a.s.host : &a.s.params, memest_sat_mul(part, e));
        add(&a, &ug[unit_of[p->node] == NOUNIT ? nu : unit_of[p->node]], full);
        if (p->trainable) {
            add(&a, v->offload_optim ? &a.s.host : &a.s.grads,
                memest_sat_mul(part, v->offload_optim ? 4 : e));
        }
    }
    uint64_t e16 = memest_dist_train_elem(r);   /* DeepSpeed's 16-bit partitions */
    uint64_t es = v->master_fp32 ? 4 : e16;   /* the optimizer state's element */
    if (v->flat_units) {
        /* FSDP: one FlatParameter per unit and the root; its shard is the
         * optimizer's parameter */
        for (uint32_t u = 0; u <= nu; u++) {
            if (!un[u])
                continue;
            uint64_t part = memest_dist_part(un[u], k), pe = v->master_fp32 ? 4 : ue[u];
            add(&a, v->offload_params ? &a.s.host : &a.s.params, memest_sat_mul(part, pe));
            if (!ut[u])
                continue;
            a.s.shard_elems += part;
            add(&a, v->offload_optim ? &a.s.host : &a.s.grads, memest_sat_mul(part, pe));
            add_state(&a, oc, part, memest_sat_mul(part, pe), v->offload_optim);
        }
    } else if (v->strategy == MEMEST_STRAT_ZERO3) {
        uint64_t part3 = memest_dist_zero_part(r, v);
        a.s.shard_elems = part3;
        add_state(&a, oc, part3, memest_sat_mul(part3, es), v->offload_optim);
        if (v->master_fp32)
            add(&a, v->offload_optim ? &a.s.host : &a.s.master, memest_sat_mul(part3, 4));
    } else if (v->shard_optim) {
        /* ZeRO-1/2: the flat group's partition */
        uint64_t part = memest_dist_zero_part(r, v);
        a.s.shard_elems = part;
        add_state(&a, oc, part, memest_sat_mul(part, es), v->offload_optim);
        if (v->master_fp32)
            add(&a, v->offload_optim ? &a.s.host : &a.s.master, memest_sat_mul(part, 4));
        if (v->shard_grads)
            add(&a, v->offload_optim ? &a.s.host : &a.s.grads,
                memest_sat_mul(part, v->offload_optim ? 4 : e16));
        else {
            add(&a, &a.s.grads, grad_full);
            if (v->offload_optim)   /* the fp32 gradient partition CPU Adam reads */
                add(&a, &a.s.host, memest_sat_mul(part, 4));
        }
    } else {
        /* one GPU, DDP: every gradient and the whole state */
        add(&a, &a.s.grads, grad_full);
        struct memest_optstate os;
        if (memest_calc_optimizer(r, oc, &os, err) != 0) {
            free(unit_of), free(un), free(ut), free(ug), free(ue);
            return -1;
        }
        a.s.optim = os.device_bytes;
        a.s.shard_elems = trainable;
        if (v->ddp_buckets)
            a.s.buckets = grad_full;
    }
    if (v->deepspeed) {
        /* the reduce bucket: ZeRO-1/2's ipg_buffer (two with overlap_comm),
         * ZeRO-3's __ipg_bucket_flat_buffer */
        bool overlap = v->cfg->eng.overlap_comm_set ? v->cfg->eng.overlap_comm
                                                     : v->strategy == MEMEST_STRAT_ZERO3;
        unsigned nb = v->strategy == MEMEST_STRAT_ZERO3 ? 1
                      : !v->cfg->eng.contiguous_gradients ? 0 : overlap ? 2 : 1;
        add(&a, &a.s.buckets, memest_sat_mul(memest_sat_mul(v->cfg->eng.reduce_bucket_size, e16), nb));
    }
    /* gathered parameters: every unit with SHARD_GRAD_OP (kept from forward to
     * backward), else the largest pair of neighbouring units (the one computing
     * and the prefetched one), and FSDP's root unit throughout */
    if (v->shard_params) {
        uint64_t most = 0, all = 0;
        /* the prefetched unit: whole under FSDP, at most
         * stage3_prefetch_bucket_size elements under ZeRO-3 */
        uint64_t cap = v->flat_units ? UINT64_MAX
                                     : memest_sat_mul(v->cfg->eng.prefetch_bucket_size, e16);
        for (uint32_t u = 0; u < nu; u++) {
            uint64_t next = u + 1 < nu ? ug[u + 1] : 0, prev = u ? ug[u - 1] : 0;
            uint64_t ahead = (next > prev ? next : prev) < cap ? (next > prev ? next : prev) : cap;
            uint64_t pair = ug[u] + ahead;
            if (pair > most)
                most = pair;
            add(&a, &all, ug[u]);
        }
        a.s.gathered = v->reshard_after_forward ? most : all;
        add(&a, &a.s.gathered, ug[nu]);
    }
    free(unit_of), free(un), free(ut), free(ug), free(ue);
    add(&a, &a.s.total, a.s.params);
    add(&a, &a.s.total, a.s.grads);
    add(&a, &a.s.total, a.s.optim);
    add(&a, &a.s.total, a.s.master);
    if (!a.ok)
        return memest_errf(err, MEMEST_ERR_LIMIT, NULL, "a rank's model states exceed 2^63 bytes");
    *out = a.s;
    return 0;
}
