/* roofline.c - the step-time estimate: per layer and pass, max(compute time
 * at mfu * peak, memory traffic / bandwidth); see roofline.h for what each
 * pass reads and writes. */
#include "memest/roofline.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "memest/dist.h"
#include "memest/ops.h"

static double value_bytes(const struct memest_value *v)
{
    uint64_t n;
    if (!memest_shape_numel(&v->shape, &n))
        return 0;
    return (double)n * memest_dtype_size((enum memest_dtype)v->dtype);
}

static bool is_inplace(const struct memest_node *node)
{
    int k = memest_op_arg_index(node->op, "inplace");
    return k >= 0 && node->args[k].v && node->args[k].v[0] != 0;
}

/* A block instance --checkpoint[=names] selects: by instance, block or
 * repeated-node name ("h" selects "h.0", "h.1", ...), or every top-level
 * instance without names (as sim_analysis.c chooses them). */
static bool selected(const struct memest_block_inst *b, const struct memest_step_cfg *c)
{
    if (c->ncheckpoint_names == 0)
        return b->depth == 0;
    for (int k = 0; k < c->ncheckpoint_names; k++) {
        const char *want = c->checkpoint_names[k];
        if (strcmp(b->name, want) == 0 || strcmp(b->type, want) == 0)
            return true;
        size_t n = strlen(want);
        if (strncmp(b->name, want, n) != 0 || b->name[n] != '.' || !b->name[n + 1])
            continue;
        const char *p = b->name + n + 1;
        while (isdigit((unsigned char)*p))
            p++;
        if (!*p)
            return true;
    }
    return false;
}

/* The index of top-level block instance b in model order. */
static uint32_t top_index(const struct memest_graph *g, uint32_t b)
{
    uint32_t i = 0;
    for (uint32_t o = 0; o < g->nblocks; o++)
        i += g->blocks[o].depth == 0 && g->blocks[o].first < g->blocks[b].first;
    return i;
}

/* recompute[n]: node n's forward runs again in backward (not the ops whose
 * outputs torchtitan's selective checkpointing keeps). */
static void mark_recompute(const struct memest_run *r, const struct memest_step_cfg *c,
                           bool *recompute)
{
    const struct memest_graph *g = r->g;
    for (uint32_t b = 0; b < g->nblocks; b++) {
        if (!selected(&g->blocks[b], c) ||
            (c->ncheckpoint_names == 0 && !memest_ckpt_selects(c, top_index(g, b))))
            continue;
        uint32_t mm = 0;
        for (uint32_t n = g->blocks[b].first; n <= g->blocks[b].last && n < g->nnodes; n++)
            recompute[n] = !memest_ckpt_keeps(c, r->nodes[n].sac, &mm);
    }
}

static void pass_time(struct memest_pass_time *p, const struct memest_time_opts *o)
{
    double compute = p->flops / (o->peak_flops * o->mfu);
    double memory = p->bytes / o->bandwidth;
    p->memory_bound = memory > compute;
    p->seconds = p->memory_bound ? memory : compute;
}

/* The forward and backward traffic and FLOPs of node n. */
static void node_work(const struct memest_run *r, uint32_t n, struct memest_node_time *t)
{
    const struct memest_node *node = &r->g->nodes[n];
    const struct memest_nodeinfo *ni = &r->nodes[n];
    memset(t, 0, sizeof *t);
    if (node->op->model_input)
        return; /* data loading is not part of the step */
    double out_new = 0, out_all = 0;
    for (uint32_t k = 0; k < ni->nout; k++) {
        const struct memest_value *v = &r->values[ni->out_first + k];
        const struct memest_storage *st = &r->storages[v->storage];
        double b = value_bytes(v);
        out_all += b;
        if (st->node == n && st->kind == MEMEST_ST_ACT)
            out_new += b;
    }
    bool inplace = is_inplace(node);
    if (out_new == 0 && !inplace && ni->fwd_macs == 0)
        return; /* a view: no data moves */
    double in_read = 0, in_grad = 0;
    for (uint32_t i = 0; i < node->nin; i++) {
        const struct memest_value *v = memest_run_value(r, node->in[i]);
        double b = value_bytes(v);
        in_read += b;
        if (v->requires_grad)
            in_grad += b;
    }
    double params = 0, trainable = 0;
    for (uint32_t p = ni->param_first; p < ni->param_first + ni->nparam; p++) {
        double b = (double)r->storages[r->params[p].storage].bytes +
                   (double)r->params[p].state_bytes;   /* a quantised weight's state */
        params += b;
        if (r->params[p].trainable)
            trainable += b;
    }
    double extra = 0, saved = 0;
    for (uint32_t s = ni->save_first; s < ni->save_first + ni->nsave; s++) {
        const struct memest_storage *st = &r->storages[r->saves[s]];
        saved += (double)st->bytes;
        if (st->kind == MEMEST_ST_EXTRA && st->node == n)
            extra += (double)st->bytes;
    }
    double written = inplace ? out_all : out_new;
    t->fwd.flops = 2 * ni->fwd_macs;
    t->fwd.bytes = in_read + params + written + extra;
    if (ni->needs_grad) {
        t->bwd.flops = 2 * ni->bwd_macs;
        t->bwd.bytes = written + saved + in_grad + params + trainable;
    }
}

int memest_roofline(const struct memest_run *r, const struct memest_estimate *e,
                    const struct memest_time_opts *o, struct memest_time *out,
                    struct memest_node_time *per_node)
{
    memset(out, 0, sizeof *out);
    if (!(o->peak_flops > 0) || !(o->bandwidth > 0) || !(o->mfu > 0) || o->grad_accum < 1)
        return -1;
    double mb_fwd = 0, mb_bwd = 0, mb_re = 0, flops = 0, bytes = 0;
    bool *recompute = NULL;
    if (!o->inference && o->step && o->step->checkpoint) {
        recompute = calloc(r->g->nnodes ? r->g->nnodes : 1, sizeof *recompute);
        if (!recompute)
            return -2;
        mark_recompute(r, o->step, recompute);
    }
    for (uint32_t n = 0; n < r->g->nnodes; n++) {
        struct memest_node_time t;
        node_work(r, n, &t);
        if (o->inference)
            memset(&t.bwd, 0, sizeof t.bwd);
        struct memest_pass_time *passes[2] = {&t.fwd, &t.bwd};
        for (int k = 0; k < 2; k++) {
            struct memest_pass_time *p = passes[k];
            if (p->flops == 0 && p->bytes == 0)
                continue;
            pass_time(p, o);
            out->passes++;
            out->memory_bound_passes += p->memory_bound;
            *(k ? &out->bwd_s : &out->fwd_s) += p->seconds;
            if (p->memory_bound)
                *(k ? &mb_bwd : &mb_fwd) += p->seconds;
            flops += p->flops;
            bytes += p->bytes;
            if (k == 0 && recompute && recompute[n]) {
                out->recompute_s += p->seconds;
                mb_re += p->memory_bound ? p->seconds : 0;
                flops += p->flops;
                bytes += p->bytes;
            }
        }
        if (per_node)
            per_node[n] = t;
    }
    free(recompute);
    double k = o->slots > 0 ? o->slots : (double)o->grad_accum;
    if (!o->inference) {
        /* read params, grads and state; write params and state (bitsandbytes'
           paged state too: resident, it is read and written like the rest) */
        double opt_bytes = 2.0 * (double)e->params.trainable_bytes + (double)e->gradients +
                           2.0 * ((double)e->opt.device_bytes + (double)e->opt.paged_bytes);
        out->opt_s = opt_bytes / o->bandwidth;
        /* the optimizer's matrix products (Muon's Newton-Schulz), once per
           step, after its elementwise traffic (calc.h: memest_flops) */
        double opt_compute = e->flops.optim_flops / (o->peak_flops * o->mfu);
        out->opt_s += opt_compute;
        const struct memest_rank_view *v = o->step ? o->step->rank : NULL;
        if (v && v->offload_optim) {
            opt_bytes = 0;   /* the update runs on the host */
            out->opt_s = opt_compute = 0;
            double link = o->host_bw > 0 ? o->host_bw : 1;
            out->offload_s = (double)e->dist.shard_elems /
                                 (o->cpu_optim_rate > 0 ? o->cpu_optim_rate : 1) +
                             ((double)e->dist.offload_moved +
                              k * 2.0 * (double)e->dist.host_params) / link;
        }
        if (o->step && o->step->act_offload) {
            /* torchtune's OffloadActivations (src/sim/sim_offload.c): the
             * backward waits for each copy back as its node runs (no
             * prefetch: s0.wait_stream(s1)), the forward's copies out run
             * on their own stream beside the compute */
            double link = o->host_bw > 0 ? o->host_bw : 1;
            double out_s = (double)e->train_peak.offload_d2h / link;
            out->offload_s += k * ((double)e->train_peak.offload_h2d / link +
                                   (out_s > out->fwd_s ? out_s - out->fwd_s : 0));
        }
        bytes = bytes * k + opt_bytes;
        flops = flops * k + e->flops.optim_flops;
        out->step_s = k * (out->fwd_s + out->recompute_s + out->bwd_s) + out->opt_s +
                      out->offload_s;
        out->memory_bound_s = k * (mb_fwd + mb_re + mb_bwd) + out->opt_s - opt_compute;
    } else {
        out->step_s = out->fwd_s;
        out->memory_bound_s = mb_fwd;
    }
    out->flops = flops;
    out->bytes = bytes;
    double samples = (double)r->opts.batch *
                     (o->inference ? 1 : o->samples_k > 0 ? o->samples_k : k);
    out->samples_per_s = out->step_s > 0 ? samples / out->step_s : 0;
    out->memory_bound_fraction = out->step_s > 0 ? out->memory_bound_s / out->step_s : 0;
    return 0;
}

static int by_time_desc(const void *a, const void *b)
{
    const struct memest_slow_pass *x = a, *y = b;
    return x->seconds < y->seconds   ? 1
           : x->seconds > y->seconds ? -1
                                     : (x->node > y->node) - (x->node < y->node);
}

int memest_roofline_slowest(const struct memest_node_time *per_node, uint32_t nnodes,
                            struct memest_slow_pass *top, int max)
{
    int n = 0;
    if (max < 1)
        return 0;
    for (uint32_t i = 0; i < nnodes; i++) {
        for (int k = 0; k < 2; k++) {
            const struct memest_pass_time *p = k ? &per_node[i].bwd : &per_node[i].fwd;
            if (!p->memory_bound || p->seconds <= 0)
                continue;
            struct memest_slow_pass s = {i, k == 1, p->seconds};
            if (n < max) {
                top[n++] = s;
            } else if (by_time_desc(&s, &top[max - 1]) < 0) {
                top[max - 1] = s;
            } else {
                continue;
            }
            qsort(top, (size_t)n, sizeof *top, by_time_desc);
        }
    }
    return n;
}
