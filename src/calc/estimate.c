/* estimate.c - runs every calculator on a run, in dependency order. */
#include <string.h>

#include "memest/calc.h"
#include "memest/checked.h"
#include "memest/cuda_overhead.h"
#include "memest/event_bound.h"
#include "memest/nccl_mem.h"
#include "memest/sim.h"

/* The calculators saturate their sums at UINT64_MAX past 2^63 - 1 (never
 * wrap); a saturated figure means the model is beyond memest's limits, which
 * is an error here rather than a wrong number in the report. */
static int check_limits(const struct memest_run *r, const struct memest_estimate *e,
                        struct memest_error *err)
{
    const struct {
        const char *what;
        uint64_t v;
        uint32_t node;
    } figs[] = {
        {"the gradients", e->gradients, UINT32_MAX},
        {"the activations saved for backward", e->activations, UINT32_MAX},
        {"the inference peak", e->infer_peak.bytes, e->infer_peak.node},
        {"the training peak", e->train_peak.bytes, e->train_peak.node},
        {"the reserved memory", e->reserved_peak, UINT32_MAX},
        {"the device total", e->total_device, UINT32_MAX},
    };
    for (size_t i = 0; i < sizeof figs / sizeof *figs; i++) {
        if (figs[i].v <= MEMEST_SIZE_MAX)
            continue;
        memest_errf(err, MEMEST_ERR_LIMIT, NULL,
                    "%s: more than 2^63 - 1 bytes (the largest figure memest computes); "
                    "reduce the batch size or the model", figs[i].what);
        if (figs[i].node < r->g->nnodes)
            memest_err_node(err, r->g->nodes[figs[i].node].name);
        return -1;
    }
    return 0;
}

void memest_run_opts_autocast(struct memest_run_opts *o, const struct memest_step_cfg *cfg)
{
    o->amp = cfg->amp != MEMEST_AMP_NONE;
    o->amp_dtype = !o->amp ? MEMEST_F32 : cfg->amp == MEMEST_AMP_BF16 ? MEMEST_BF16 : MEMEST_F16;
}

int memest_estimate_cost(struct memest_run *r, const struct memest_step_cfg *cfg,
                         struct memest_cost *c, struct memest_error *err)
{
    /* autocast changes dtypes and adds casts: infer again when the run was
     * made for another setting */
    struct memest_run_opts o = r->opts;
    memest_run_opts_autocast(&o, cfg);
    if ((r->opts.amp != o.amp || (o.amp && r->opts.amp_dtype != o.amp_dtype)) &&
        memest_run_infer(r, r->g, &o, err) != 0)
        return -1;
    if (memest_cost_count(r, cfg, c) != 0)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    return memest_cost_check(r, c, err);
}

int memest_estimate(struct memest_run *r, const struct memest_step_cfg *cfg,
                    struct memest_estimate *e, struct memest_timeline *train_tl,
                    struct memest_timeline *infer_tl, struct memest_error *err)
{
    return memest_estimate_sims(r, cfg, MEMEST_SIM_BOTH, e, train_tl, infer_tl, err);
}

int memest_estimate_sims(struct memest_run *r, const struct memest_step_cfg *cfg, unsigned sims,
                         struct memest_estimate *e, struct memest_timeline *train_tl,
                         struct memest_timeline *infer_tl, struct memest_error *err)
{
    memset(e, 0, sizeof *e);
    if (memest_estimate_cost(r, cfg, &e->cost, err) != 0)
        return -1;
    if (memest_calc_params(r, &e->params, err) != 0 ||
        memest_calc_optimizer(r, &cfg->optim, &e->opt, err) != 0)
        return -1;
    e->gradients = memest_calc_grads(r);
    e->activations = memest_calc_activations(r);
    memest_calc_flops(r, &e->flops);
    memest_calc_optim_flops(r, &cfg->optim, &e->flops);
    e->has_dist = cfg->rank != NULL;
    if (memest_calc_dist_states(r, cfg, &e->dist, err) != 0)
        return -1;
    if (check_limits(r, e, err) != 0) /* the sums so far (the peaks are still 0) */
        return -1;
    struct memest_peak_opts inf = {.inference = true, .step = cfg,
                                   .events = e->cost.events - e->cost.train_events};
    struct memest_peak_opts train = {.inference = false, .step = cfg,
                                     .events = e->cost.train_events};
    /* the requests, kept for the replays under a capacity */
    struct memest_alloc_trace itrace = {0}, ttrace = {0};
    /* the least memory's search keeps every request: not for a step of
     * more than MEMEST_LEAST_MAX_EVENTS events (its cost model's bound)
     * unless a card's verdict needs the replays anyway */
    uint64_t bound = cfg->pressure_inference ? e->cost.events - e->cost.train_events
                                             : e->cost.train_events;
    bool least = cfg->least && bound <= MEMEST_LEAST_MAX_EVENTS;
    e->least_skipped = cfg->least && !least;
    if (least || cfg->card_usable) {
        if (cfg->pressure_inference)
            inf.trace = &itrace;
        else
            train.trace = &ttrace;
    }
    e->context = cfg->overhead_set ? cfg->overhead : memest_default_overhead(cfg->gpu_arch);
    struct memest_nccl_fabric fab = {.cc = cfg->gpu_arch, .nvswitch = cfg->nvswitch,
                                     .nvls_off = cfg->nvls_off, .buffsize = cfg->nccl_buffsize};
    memest_nccl_layout(cfg->rank ? cfg->rank->cfg : NULL, &fab, &e->nccl);
    if (cfg->nccl_set)
        e->nccl.total = cfg->rank ? cfg->nccl_mem : 0;
    e->overhead = memest_sat_add(e->context, e->nccl.total);
    int rc = 0;
    if (sims & MEMEST_SIM_INFER) {
        rc = memest_sim_step(r, &inf, infer_tl, &e->infer_peak, err);
        if (rc == 0 && inf.trace)
            rc = memest_calc_pressure(&itrace, cfg, least, &e->infer_peak, e->overhead,
                                      &e->infer_pressure, err);
    }
    if (rc == 0 && (sims & MEMEST_SIM_TRAIN)) {
        rc = memest_sim_step(r, &train, train_tl, &e->train_peak, err);
        if (rc == 0 && train.trace)
            rc = memest_calc_pressure(&ttrace, cfg, least, &e->train_peak, e->overhead, &e->pressure,
                                      err);
    }
    memest_alloc_trace_dispose(&itrace);
    memest_alloc_trace_dispose(&ttrace);
    e->reserved_peak = e->train_peak.reserved;
    e->infer_reserved_peak = e->infer_peak.reserved;
    e->total_device = memest_sat_add(e->reserved_peak, e->overhead);
    e->infer_total_device = memest_sat_add(e->infer_reserved_peak, e->overhead);
    if (rc == 0)
        rc = check_limits(r, e, err);
    return rc;
}
