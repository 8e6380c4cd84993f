/* report_text.c - the human summary: memory by category with a bar chart,
 * parameter counts, MACs and FLOPs, and the optional per-layer table. */
#include <string.h>

#include "memest/format.h"
#include "memest/ops.h"
#include "memest/report.h"

uint64_t memest_node_params(const struct memest_run *r, uint32_t node)
{
    const struct memest_nodeinfo *ni = &r->nodes[node];
    uint64_t n = 0;
    for (uint32_t p = ni->param_first; p < ni->param_first + ni->nparam; p++)
        if (r->params[p].tied_to < 0)
            n += r->params[p].numel;
    return n;
}

static void bar(FILE *f, uint64_t v, uint64_t max)
{
    int w = max ? (int)(30.0 * (double)v / (double)max + 0.5) : 0;
    for (int i = 0; i < w; i++)
        fputs("#", f);
}

static void mem_line(FILE *f, const char *label, uint64_t bytes, uint64_t max, const char *note)
{
    char b[32];
    fprintf(f, "  %-22s %12s  ", label, memest_fmt_bytes(bytes, b, sizeof b));
    bar(f, bytes, max);
    if (note && *note)
        fprintf(f, "%s%s", bytes ? "  " : "", note);
    fputc('\n', f);
}

static void layers_table(FILE *f, const struct memest_report *rep)
{
    const struct memest_graph *g = rep->g;
    const struct memest_run *r = rep->r;
    size_t w = 4;
    for (uint32_t n = 0; n < g->nnodes; n++)
        if (strlen(g->nodes[n].name) > w)
            w = strlen(g->nodes[n].name);
    if (w > 48)
        w = 48;
    fprintf(f, "\nLayers\n  %-*s %-18s %-22s %12s %12s %12s\n", (int)w, "name", "type",
            "output shape", "params", "activations", "fwd MACs");
    for (uint32_t n = 0; n < g->nnodes; n++) {
        const struct memest_nodeinfo *ni = &r->nodes[n];
        char shape[96], params[32], act[32], macs[32];
        memest_shape_str(&r->values[ni->out_first].shape, shape, sizeof shape);
        memest_fmt_count(memest_node_params(r, n), params, sizeof params);
        memest_fmt_bytes(ni->act_bytes, act, sizeof act);
        memest_fmt_si(ni->fwd_macs, macs, sizeof macs);
        fprintf(f, "  %-*s %-18s %-22s %12s %12s %12s\n", (int)w, g->nodes[n].name,
                g->nodes[n].op->name, shape, params, act, macs);
    }
}

void memest_report_text(FILE *f, const struct memest_report *rep)
{
    const struct memest_estimate *e = rep->e;
    const struct memest_cli *o = rep->cli;
    char a[32], b[32], c[32], note[160];
    fprintf(f, "memest %s: %s (%s)\n", MEMEST_VERSION, rep->g->name, rep->g->file);
    fprintf(f, "batch %lld, optimizer %s", (long long)o->batch, memest_optim_name(o->step.optim.kind));
    if (o->step.optim.momentum != 0)
        fprintf(f, " (momentum %g)", o->step.optim.momentum);
    fprintf(f, ", dtype %s\n\n", memest_dtype_name(o->dtype));

    fprintf(f, "Parameters  %s (%s trainable, %s frozen) in %llu tensors\n",
            memest_fmt_count(e->params.total, a, sizeof a),
            memest_fmt_count(e->params.trainable, b, sizeof b),
            memest_fmt_count(e->params.frozen, c, sizeof c), (unsigned long long)e->params.tensors);
    fprintf(f, "Buffers     %s elements in %llu tensors\n\n",
            memest_fmt_count(e->params.buffer_elems, a, sizeof a),
            (unsigned long long)e->params.buffer_tensors);

    const struct memest_peak *p = &e->train_peak;
    uint64_t max = e->params.bytes;
    uint64_t items[] = {e->params.buffer_bytes, e->gradients, e->opt.device_bytes, e->activations,
                        p->bytes};
    for (size_t i = 0; i < sizeof items / sizeof *items; i++)
        if (items[i] > max)
            max = items[i];
    fprintf(f, "Memory of a training step\n");
    mem_line(f, "parameters", e->params.bytes, max, "");
    mem_line(f, "buffers", e->params.buffer_bytes, max, "");
    mem_line(f, "gradients", e->gradients, max, "");
    snprintf(note, sizeof note, "(%u cop%s of the trainable parameters%s%s)", e->opt.copies,
             e->opt.copies == 1 ? "y" : "ies", e->opt.step_tensors ? "; step scalars on host: " : "",
             e->opt.step_tensors ? memest_fmt_bytes(e->opt.host_bytes, a, sizeof a) : "");
    mem_line(f, "optimizer state", e->opt.device_bytes, max, note);
    mem_line(f, "activations (saved)", e->activations, max, "");
    const char *at = p->node != UINT32_MAX ? rep->g->nodes[p->node].name : "-";
    snprintf(note, sizeof note, "(%s, at %s)", memest_phase_name((enum memest_phase)p->phase), at);
    mem_line(f, "peak", p->bytes, max, note);
    const struct memest_peak *ip = &e->infer_peak;
    fprintf(f, "Inference (no grad) peak  %s\n\n", memest_fmt_bytes(ip->bytes, a, sizeof a));

    fprintf(f, "Compute (batch %lld; 1 MAC = 2 FLOPs)\n", (long long)o->batch);
    fprintf(f, "  forward    %sMACs  = %sFLOPs\n", memest_fmt_si(e->flops.fwd_macs, a, sizeof a),
            memest_fmt_si(e->flops.fwd_flops, b, sizeof b));
    fprintf(f, "  backward   %sMACs  = %sFLOPs\n", memest_fmt_si(e->flops.bwd_macs, a, sizeof a),
            memest_fmt_si(e->flops.bwd_flops, b, sizeof b));
    fprintf(f, "  step       %sMACs  = %sFLOPs\n",
            memest_fmt_si(e->flops.fwd_macs + e->flops.bwd_macs, a, sizeof a),
            memest_fmt_si(e->flops.step_flops, b, sizeof b));
    if (o->layers)
        layers_table(f, rep);
}
