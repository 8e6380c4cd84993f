/* report_dist.c - several GPUs: the layout, and one rank's model states
 * with the engine's buffers stated apart, in text and JSON (README
 * "Several GPUs"). The figures are the calculator's (calc.h:
 * memest_calc_dist_states), the layout's (dist.h: DP, the global batch) and
 * the step simulation's, run for the rank. */
#include <stdio.h>

#include "memest/dist.h"
#include "memest/format.h"
#include "memest/jsonw.h"
#include "memest/nccl_mem.h"
#include "memest/report.h"

static const char *engine_label(enum memest_strategy s)
{
    switch (s) {
    case MEMEST_STRAT_NONE: return "model parallelism only";
    case MEMEST_STRAT_DDP: return "PyTorch DDP";
    case MEMEST_STRAT_ZERO1: return "DeepSpeed ZeRO stage 1 (optimizer state partitioned)";
    case MEMEST_STRAT_ZERO2: return "DeepSpeed ZeRO stage 2 (+ gradients)";
    case MEMEST_STRAT_ZERO3: return "DeepSpeed ZeRO stage 3 (+ parameters)";
    case MEMEST_STRAT_FSDP: return "PyTorch FSDP FULL_SHARD";
    case MEMEST_STRAT_FSDP_GRAD_OP: return "PyTorch FSDP SHARD_GRAD_OP";
    case MEMEST_STRAT_HSDP: return "PyTorch FSDP HYBRID_SHARD";
    case MEMEST_STRAT_COUNT: break;
    }
    return "?";
}

static void stage_table(FILE *f, const struct memest_report *rep)
{
    char a[32], b[32], c[32], d[32], e[32];
    fprintf(f, "Pipeline stages, the binding one first (its figures are below)\n");
    fprintf(f, "  %-6s %7s %14s %12s %8s %12s %12s %12s\n", "stage", "layers", "parameters",
            "activations", "in flight", "model states", "peak", "device");
    for (int64_t k = -1; k < rep->nfigs; k++) {
        int64_t s = k < 0 ? rep->binding : k;
        if (k == rep->binding)
            continue;
        const struct memest_rank_fig *g = &rep->figs[s];
        char fl[24];
        if (g->per > 1)
            snprintf(fl, sizeof fl, "%lld/%lld", (long long)g->chunks, (long long)g->per);
        else
            snprintf(fl, sizeof fl, "%lld", (long long)g->chunks);
        fprintf(f, "  %-6lld %7u %14s %12s %8s %12s %12s %12s\n", (long long)s, g->layers,
                memest_fmt_count(g->params, a, sizeof a),
                memest_fmt_bytes(g->activations, b, sizeof b), fl,
                memest_fmt_bytes(g->model_states, c, sizeof c), memest_fmt_bytes(g->peak, d, sizeof d),
                memest_fmt_bytes(g->total_device, e, sizeof e));
    }
}

static void line(FILE *f, const char *label, uint64_t v, const char *note)
{
    char b[32];
    fprintf(f, "  %-22s %12s%s%s\n", label, memest_fmt_bytes(v, b, sizeof b), note && *note ? "  " : "",
            note ? note : "");
}

/* NCCL's communicators (src/sim/nccl_mem.c), outside the allocator. */
static void nccl_lines(FILE *f, const struct memest_report *rep)
{
    const struct memest_nccl *n = &rep->e->nccl;
    char note[160], label[48], b[32];
    if (rep->step->nccl_set) {
        line(f, "NCCL", n->total, "(--nccl-mem; outside the allocator, in the device total)");
        return;
    }
    fprintf(f, "NCCL's device memory per GPU (outside the allocator, in the device total; "
               "%u channels, %s a connection%s)\n",
            n->channels, memest_fmt_bytes(n->conn, b, sizeof b),
            rep->step->nvls_off ? "; NCCL_NVLS_ENABLE=0" : "");
    for (int i = 0; i < n->n; i++) {
        const struct memest_nccl_comm *c = &n->comm[i];
        snprintf(label, sizeof label, "%s%s (%lld ranks)", c->count > 1 ? "2 x " : "",
                 memest_nccl_kind_name(c->kind), (long long)c->ranks);
        int k = snprintf(note, sizeof note, "(%s connections", memest_fmt_bytes(c->rings, b, sizeof b));
        if (c->nvls && k > 0 && (size_t)k < sizeof note)
            k += snprintf(note + k, sizeof note - (size_t)k, ", NVLS %s",
                          memest_fmt_bytes(c->nvls, b, sizeof b));
        if (k > 0 && (size_t)k < sizeof note)
            snprintf(note + k, sizeof note - (size_t)k, ")");
        line(f, label, c->bytes, note);
    }
    line(f, "NCCL", n->total, "");
}

void memest_dist_text(FILE *f, const struct memest_report *rep)
{
    const struct memest_rank_view *v = rep->step->rank;
    if (!v || !rep->e->has_dist)
        return;
    const struct memest_dist_cfg *c = v->cfg;
    const struct memest_dist_states *d = &rep->e->dist;
    char note[160];
    fprintf(f, "Several GPUs: %lld GPUs, %s; data-parallel %lld", (long long)c->gpus,
            engine_label(v->strategy), (long long)memest_dist_dp(c));
    if (v->shard_optim && v->shard != memest_dist_dp(c))
        fprintf(f, ", sharded over %lld per node", (long long)v->shard);
    if (v->offload_optim)
        fprintf(f, ", offload %s", memest_offload_name(c->offload));
    if (c->pp > 1)
        fprintf(f, "; pipeline %lld stages, %s schedule, %lld micro-batches", (long long)c->pp,
                memest_schedule_name(c->schedule), (long long)c->micro_batches);
    fprintf(f, "\n  --batch %lld is the micro-batch per GPU: global batch %lld\n",
            (long long)rep->r->opts.batch,
            (long long)memest_dist_global_batch(c, rep->r->opts.batch, rep->step->grad_accum));
    if (rep->figs && rep->nfigs > 1)
        stage_table(f, rep);
    fprintf(f, rep->figs && rep->nfigs > 1 ? "Model states per GPU of stage %lld (at rest)\n"
                                           : "Model states per GPU (at rest)\n",
            (long long)rep->binding);
    line(f, "parameters", d->params,
         v->shard_params ? (v->master_fp32 && v->flat_units
                                ? "(shards; fp32 where they require grad: mixed precision)"
                                : "(shards)")
                         : "");
    line(f, "gradients", d->grads, v->shard_grads ? "(the rank's partition)" : "");
    line(f, "optimizer state", d->optim, v->shard_optim ? "(the rank's partition)" : "");
    if (d->master)
        line(f, "fp32 master weights", d->master, "(the rank's partition)");
    line(f, "model states", d->total, "");
    if (d->buckets) {
        snprintf(note, sizeof note, "(%s)",
                 v->deepspeed ? "reduce bucket: reduce_bucket_size 16-bit elements"
                              : "DDP's buckets: a copy of the gradients; --ddp-bucket-view drops it");
        line(f, "engine buckets", d->buckets, note);
    }
    if (d->gathered) {
        snprintf(note, sizeof note, "(over %llu units: %s)", (unsigned long long)d->units,
                 v->reshard_after_forward ? "the largest two neighbours, plus the root's"
                                          : "all, kept from forward to backward");
        line(f, "gathered parameters", d->gathered, note);
    }
    if (d->host)
        line(f, "host memory", d->host, "(what the offload keeps on the CPU)");
    nccl_lines(f, rep);
    fputc('\n', f);
}

static void nccl_json(struct memest_jsonw *w, const struct memest_report *rep)
{
    const struct memest_nccl *n = &rep->e->nccl;
    memest_jsonw_obj_begin(w, "nccl");
    memest_jsonw_u64(w, "bytes", n->total);
    memest_jsonw_bool(w, "given", rep->step->nccl_set);
    memest_jsonw_u64(w, "channels", n->channels);
    memest_jsonw_u64(w, "connection_bytes", n->conn);
    memest_jsonw_bool(w, "nvls_enabled", !rep->step->nvls_off);
    memest_jsonw_arr_begin(w, "communicators");
    for (int i = 0; i < n->n && !rep->step->nccl_set; i++) {
        const struct memest_nccl_comm *c = &n->comm[i];
        memest_jsonw_obj_begin(w, NULL);
        memest_jsonw_str(w, "group", memest_nccl_kind_name(c->kind));
        memest_jsonw_i64(w, "ranks", c->ranks);
        memest_jsonw_i64(w, "local_ranks", c->local);
        memest_jsonw_i64(w, "count", c->count);
        memest_jsonw_u64(w, "connections", c->rings);
        memest_jsonw_u64(w, "nvls", c->nvls);
        memest_jsonw_u64(w, "bytes", c->bytes);
        memest_jsonw_obj_end(w);
    }
    memest_jsonw_arr_end(w);
    memest_jsonw_obj_end(w);
}

void memest_dist_json(struct memest_jsonw *w, const struct memest_report *rep)
{
    const struct memest_rank_view *v = rep->step->rank;
    if (!v || !rep->e->has_dist)
        return;
    const struct memest_dist_cfg *c = v->cfg;
    const struct memest_dist_states *d = &rep->e->dist;
    memest_jsonw_obj_begin(w, "parallel");
    memest_jsonw_i64(w, "gpus", c->gpus);
    memest_jsonw_str(w, "strategy", memest_strategy_name(v->strategy));
    memest_jsonw_i64(w, "dp", memest_dist_dp(c));
    memest_jsonw_i64(w, "tp", c->tp);
    memest_jsonw_i64(w, "pp", c->pp);
    memest_jsonw_i64(w, "cp", c->cp);
    memest_jsonw_i64(w, "ep", c->ep);
    memest_jsonw_i64(w, "shard_group", v->shard);
    memest_jsonw_str(w, "offload", memest_offload_name(c->offload));
    memest_jsonw_i64(w, "micro_batch", rep->r->opts.batch);
    memest_jsonw_i64(w, "global_batch",
                     memest_dist_global_batch(c, rep->r->opts.batch, rep->step->grad_accum));
    memest_jsonw_obj_begin(w, "model_states");
    memest_jsonw_u64(w, "parameters", d->params);
    memest_jsonw_u64(w, "gradients", d->grads);
    memest_jsonw_u64(w, "optimizer_state", d->optim);
    memest_jsonw_u64(w, "master_weights", d->master);
    memest_jsonw_u64(w, "total", d->total);
    memest_jsonw_obj_end(w);
    memest_jsonw_obj_begin(w, "engine_buffers");
    memest_jsonw_u64(w, "buckets", d->buckets);
    memest_jsonw_u64(w, "gathered_parameters", d->gathered);
    memest_jsonw_u64(w, "units", d->units);
    memest_jsonw_obj_end(w);
    memest_jsonw_u64(w, "host_bytes", d->host);
    nccl_json(w, rep);
    memest_jsonw_u64(w, "shard_elements", d->shard_elems);
    if (c->pp > 1) {
        memest_jsonw_str(w, "schedule", memest_schedule_name(c->schedule));
        memest_jsonw_i64(w, "micro_batches", c->micro_batches);
        memest_jsonw_i64(w, "virtual_stages", c->virtual_stages);
    }
    if (rep->figs && rep->nfigs > 1) {
        memest_jsonw_i64(w, "binding_stage", rep->binding);
        memest_jsonw_arr_begin(w, "stages");
        for (int64_t s = 0; s < rep->nfigs; s++) {
            const struct memest_rank_fig *g = &rep->figs[s];
            memest_jsonw_obj_begin(w, NULL);
            memest_jsonw_i64(w, "stage", s);
            memest_jsonw_u64(w, "layers", g->layers);
            memest_jsonw_u64(w, "parameters", g->params);
            memest_jsonw_u64(w, "activations", g->activations);
            memest_jsonw_i64(w, "in_flight_chunks", g->chunks);
            memest_jsonw_i64(w, "chunks_per_micro_batch", g->per);
            memest_jsonw_u64(w, "in_flight_bytes", g->inflight);
            memest_jsonw_u64(w, "model_states", g->model_states);
            memest_jsonw_u64(w, "peak", g->peak);
            memest_jsonw_u64(w, "reserved", g->reserved);
            memest_jsonw_u64(w, "total_device", g->total_device);
            memest_jsonw_str(w, "peak_phase", memest_phase_name((enum memest_phase)g->phase));
            memest_jsonw_str(w, "peak_node", g->node);
            memest_jsonw_obj_end(w);
        }
        memest_jsonw_arr_end(w);
    }
    memest_jsonw_obj_end(w);
}
