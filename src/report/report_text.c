/* report_text.c - the human summary: memory by category with a bar chart,
 * parameter counts, MACs and FLOPs, and the optional per-layer table. */
#include <string.h>

#include "memest/checked.h"
#include "memest/escape.h"
#include "memest/format.h"
#include "memest/ops.h"
#include "memest/report.h"
#include "memest/step.h"

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

/* Terminal columns of an escaped name: one per character (not per byte,
 * as printf's widths count), so multi-byte names line up. */
static size_t columns(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* The loss's row: a 0-d output (reduction "mean"), no parameters, no MACs
 * counted; then what it reads. */
static void loss_row(FILE *f, const struct memest_report *rep, size_t w)
{
    struct memest_loss_shapes ls;
    const struct memest_value *in;
    if (!memest_calc_loss(rep->g, rep->r, rep->step, rep->opts.inference, &ls, &in))
        return;
    char shape[96], target[96], macs[32];
    fprintf(f, "  %-*s %-18s %-22s %12s %12s %12s\n", (int)w, "loss",
            memest_loss_name(rep->step->loss), "[]", "0", "-", memest_fmt_si(0, macs, sizeof macs));
    fprintf(f, "    input %s %s", memest_shape_str(&in->shape, shape, sizeof shape),
            memest_dtype_name((enum memest_dtype)in->dtype));
    if (ls.class_index)
        fprintf(f, ", %lld classes along dim %d%s", (long long)ls.classes, ls.class_dim,
                rep->g->loss_class_dim == MEMEST_CLASS_DIM_LAST && in->shape.ndim > 2
                    ? " (out.view(-1, C))" : "");
    fprintf(f, "; target %s %s\n", memest_shape_str(&ls.target, target, sizeof target),
            memest_dtype_name(ls.target_dtype));
}

void memest_layers_text(FILE *f, const struct memest_report *rep)
{
    const struct memest_graph *g = rep->g;
    const struct memest_run *r = rep->r;
    char name[MEMEST_ESC_NAME];
    size_t w = 4;
    for (uint32_t n = 0; n < g->nnodes; n++) {
        size_t len = columns(memest_esc_text(g->nodes[n].name, name, sizeof name));
        if (len > w)
            w = len;
    }
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
        memest_esc_text(g->nodes[n].name, name, sizeof name);
        size_t cols = columns(name);
        fprintf(f, "  %s%*s %-18s %-22s %12s %12s %12s\n", name, (int)(cols < w ? w - cols : 0),
                "", g->nodes[n].op->name, shape, params, act, macs);
    }
    loss_row(f, rep, w);
}

/* "adam (foreach), steady state, zero_grad set_to_none" and friends. */
static void step_line(FILE *f, const struct memest_report *rep, bool inf)
{
    const struct memest_step_cfg *s = rep->step;
    if (inf) {
        fprintf(f, "no-grad forward pass%s%s\n", s->amp == MEMEST_AMP_NONE ? "" : ", autocast ",
                s->amp == MEMEST_AMP_NONE ? "" : memest_amp_name(s->amp));
        return;
    }
    fprintf(f, "%s (%s), %s, zero_grad %s, loss %s", memest_optim_name(s->optim.kind),
            memest_optim_impl_label(s),
            s->first_step ? "first step" : "steady state",
            s->zero_grad_zeros ? "zeros" : "set_to_none", memest_loss_name(s->loss));
    if (s->amp != MEMEST_AMP_NONE)
        fprintf(f, ", autocast %s", memest_amp_name(s->amp));
    if (s->checkpoint)
        fputs(", activation checkpointing", f);
    if (s->checkpoint && s->checkpoint_policy != MEMEST_CKPT_FULL)
        fprintf(f, " (%s)", memest_ckpt_policy_name(s->checkpoint_policy));
    if (s->checkpoint && s->checkpoint_every > 1)
        fprintf(f, " of 1 block in %u", (unsigned)s->checkpoint_every);
    if (s->loop != MEMEST_LOOP_PLAIN && s->loop != MEMEST_LOOP_DEFAULT)   /* --loop */
        fprintf(f, ", loop %s", memest_loop_name((enum memest_loop)s->loop));
    if (s->act_offload)
        fputs(", activation offload", f);
    fputc('\n', f);
    if (s->grad_accum > 1)
        fprintf(f, "  gradient accumulation: %lld micro-batches of %lld (effective batch %lld): "
                   "the peak is a later\n  micro-batch's, whose backward adds into gradients that "
                   "already exist; it does not\n  grow with the number of micro-batches (the "
                   "compute does)\n",
                (long long)s->grad_accum, (long long)rep->r->opts.batch,
                (long long)(s->grad_accum * rep->r->opts.batch));
}

/* The peak: where, what is live then (a bar per category), and the
 * allocator's and the device's figures. */
static void peak_section(FILE *f, const struct memest_report *rep, const struct memest_peak *p,
                         bool inf)
{
    const struct memest_estimate *e = rep->e;
    char a[32], b[32], note[256];
    static const char *const label[MEMEST_CAT_COUNT] = {
        [MEMEST_CAT_PARAMS] = "parameters",          [MEMEST_CAT_BUFFERS] = "buffers",
        [MEMEST_CAT_GRADS] = "gradients",            [MEMEST_CAT_OPTSTATE] = "optimizer state",
        [MEMEST_CAT_INPUTS] = "inputs and target",   [MEMEST_CAT_SAVED] = "saved activations",
        [MEMEST_CAT_TRANSIENT] = "other activations", [MEMEST_CAT_ACTGRADS] = "activation grads",
        [MEMEST_CAT_OPTTEMP] = "optimizer temps",    [MEMEST_CAT_WORKSPACE] = "cuBLAS workspace",
        [MEMEST_CAT_COMM] = "engine buffers",
    };
    fprintf(f, "Peak of %s: ", inf ? "a no-grad forward pass" : "one step");
    step_line(f, rep, inf);
    const char *at = p->node < rep->g->nnodes ? rep->g->nodes[p->node].name : NULL;
    char name[MEMEST_ESC_NAME];
    fprintf(f, "  %s allocated (max_memory_allocated), in the %s%s%s; live then:\n",
            memest_fmt_bytes(p->bytes, a, sizeof a), memest_phase_name((enum memest_phase)p->phase),
            at ? " at " : "", at ? memest_esc_text(at, name, sizeof name) : "");
    uint64_t max = 0;
    for (int c = 0; c < MEMEST_CAT_COUNT; c++)
        if (p->at_peak[c] > max)
            max = p->at_peak[c];
    for (int c = 0; c < MEMEST_CAT_COUNT; c++)
        if (p->at_peak[c])
            mem_line(f, label[c], p->at_peak[c], max, "");
    mem_line(f, "exact tensor bytes", p->tensor_bytes, 0,
             "(peak before the allocator's rounding, no workspace)");
    if (rep->step && rep->step->alloc.text[0])
        snprintf(note, sizeof note, "(allocator segments, max_memory_reserved; "
                 "PYTORCH_CUDA_ALLOC_CONF %s)", rep->step->alloc.text);
    else
        snprintf(note, sizeof note, "(allocator segments, max_memory_reserved)");
    mem_line(f, "reserved", p->reserved, 0, note);
    char c[32];
    if (e->nccl.total)
        snprintf(note, sizeof note, "(reserved + %s CUDA context%s + %s NCCL: what nvidia-smi "
                 "shows)", memest_fmt_bytes(e->context, b, sizeof b),
                 rep->step->overhead_set ? ", --overhead" : ", default",
                 memest_fmt_bytes(e->nccl.total, c, sizeof c));
    else
        snprintf(note, sizeof note, "(reserved + %s CUDA context%s: what nvidia-smi shows)",
                 memest_fmt_bytes(e->overhead, b, sizeof b),
                 rep->step->overhead_set ? ", --overhead" : ", default");
    mem_line(f, "device total", inf ? e->infer_total_device : e->total_device, 0, note);
    const struct memest_pressure *pr = inf ? &e->infer_pressure : &e->pressure;
    if (pr->searched)
        mem_line(f, "least memory", memest_sat_add(pr->least, e->overhead), 0,
                 pr->least_exact ? "(the least device memory the step runs in: PyTorch frees "
                                   "cached segments when a cudaMalloc fails)"
                                 : "(at most: the least device memory the step runs in, its "
                                   "search cut short)");
    else if (e->least_skipped)
        fprintf(f, "  least memory     not searched (more than 2^21 allocation events; a card's "
                   "verdict still replays the step on it)\n");
}

/* --lora: the adapters, then the line PEFT's print_trainable_parameters()
 * prints (peft v0.17.1 peft_model.py: "trainable params: {:,d} || all
 * params: {:,d} || trainable%: {:.4f}"). */
char *memest_lora_text(char *buf, size_t n, const struct memest_param_totals *p)
{
    char a[32], b[32];
    snprintf(buf, n, "trainable params: %s || all params: %s || trainable%%: %.4f",
             memest_fmt_count(p->trainable, a, sizeof a), memest_fmt_count(p->total, b, sizeof b),
             p->total ? 100.0 * (double)p->trainable / (double)p->total : 0.0);
    return buf;
}

static void lora_lines(FILE *f, const struct memest_lora_summary *l,
                       const struct memest_param_totals *p)
{
    char line[128];
    fprintf(f, "LoRA        r %lld, alpha %g (scaling %g%s), dropout %g, on %u linear layers "
               "(%s)%s; the base is frozen\n",
            (long long)l->opts.r, l->opts.alpha, l->scaling, l->opts.rslora ? ", rsLoRA" : "",
            l->opts.dropout, l->modules, l->targets,
            l->bnb_modules ? ", bitsandbytes base" : "");
    fprintf(f, "%s\n", memest_lora_text(line, sizeof line, p));
}

/* A folder's checkpoint: its files, tensors and bytes by dtype, and that it
 * matches the model (it was checked: it would be an error otherwise). */
static void checkpoint_line(FILE *f, const struct memest_ckpt *c)
{
    char b[32], q[32];
    fprintf(f, "Checkpoint  %u file%s, %llu tensors, %s (", c->nfiles, c->nfiles == 1 ? "" : "s",
            (unsigned long long)c->ntensors, memest_fmt_bytes(c->bytes, b, sizeof b));
    const char *sep = "";
    for (int d = 0; d < MEMEST_CK_COUNT; d++)
        if (c->dtype_bytes[d]) {
            fprintf(f, "%s%s %s", sep, memest_ckpt_dtype_name((enum memest_ckpt_dtype)d),
                    memest_fmt_bytes(c->dtype_bytes[d], b, sizeof b));
            sep = ", ";
        }
    fprintf(f, "), matches the model");
    const struct memest_ckpt_match *m = &c->match;
    if (m->format != MEMEST_WF_DENSE)
        fprintf(f, "; %s layers %s, as memest lays them out",
                memest_wformat_name((enum memest_wformat)m->format),
                memest_fmt_bytes(m->quant_bytes, q, sizeof q));
    if (m->prefix[0]) {
        char p[MEMEST_ESC_NAME];
        fprintf(f, "; its names without \"%s\"", memest_esc_text(m->prefix, p, sizeof p));
    }
    if (m->stacked)
        fprintf(f, "; %llu tensor%s stacked over the experts", (unsigned long long)m->stacked,
                m->stacked == 1 ? "" : "s");
    if (m->ignored)
        fprintf(f, "; %llu tensor%s not loaded (rotary inv_freq)", (unsigned long long)m->ignored,
                m->ignored == 1 ? "" : "s");
    fputc('\n', f);
}

/* The memory of a training step by kind. The saved line is what autograd
 * keeps when the backward starts (the loss's included, as --checkpoint
 * leaves it), the graph's own figure when no training step ran. Under
 * several GPUs the model states are the rank's, above: the unsharded ones
 * no rank holds are not drawn. */
static void memory_section(FILE *f, const struct memest_report *rep)
{
    const struct memest_estimate *e = rep->e;
    char a[32], note[160], sv[160];
    bool dist = e->has_dist;
    uint64_t saved = e->train_peak.bwd_saved ? e->train_peak.bwd_saved : e->activations;
    uint64_t max = dist ? 0 : e->params.bytes;
    uint64_t items[] = {e->params.buffer_bytes, dist ? 0 : e->gradients,
                        dist ? 0 : e->opt.device_bytes, dist ? 0 : e->opt.paged_bytes, saved};
    for (size_t i = 0; i < sizeof items / sizeof *items; i++)
        if (items[i] > max)
            max = items[i];
    fprintf(f, dist ? "Memory of the rank's step besides its model states (above)\n"
                    : "Memory of a training step\n");
    if (!dist)
        mem_line(f, "parameters", e->params.bytes, max, "");
    mem_line(f, "buffers", e->params.buffer_bytes, max, "");
    const struct memest_optim_desc *od = memest_optim_desc(rep->step->optim.kind);
    if (!dist) {
        mem_line(f, "gradients", e->gradients, max, "");
        if (od->note)   /* state that is not copies of the parameters (bitsandbytes') */
            snprintf(note, sizeof note, "(%s)", od->note);
        else
            snprintf(note, sizeof note, "(%u cop%s of the trainable parameters%s%s)",
                     e->opt.copies, e->opt.copies == 1 ? "y" : "ies",
                     e->opt.step_tensors ? "; step scalars on host: " : "",
                     e->opt.step_tensors ? memest_fmt_bytes(e->opt.host_bytes, a, sizeof a) : "");
        mem_line(f, "optimizer state", e->opt.device_bytes, max, note);
    }
    if (od->paged && !dist)   /* bitsandbytes' get_paged: cudaMallocManaged */
        mem_line(f, "optimizer state, paged", e->opt.paged_bytes, max,
                 "(unified memory: outside the allocator and the peak, evicted to the host when short)");
    sv[0] = 0;
    if (e->train_peak.bwd_saved)
        snprintf(sv, sizeof sv, "(what autograd keeps as the backward starts, the loss's included%s)",
                 rep->step->checkpoint || rep->step->ncheckpoint_names
                     ? "; checkpointed: the segments' inputs" : "");
    mem_line(f, "activations (saved)", saved, max, sv);
    if (rep->step->act_offload) {   /* torchtune's OffloadActivations */
        snprintf(sv, sizeof sv, "(pinned; per micro-batch %s to the host, ",
                 memest_fmt_bytes(e->train_peak.offload_d2h, a, sizeof a));
        size_t l = strlen(sv);
        snprintf(sv + l, sizeof sv - l, "%s back)",
                 memest_fmt_bytes(e->train_peak.offload_h2d, a, sizeof a));
        mem_line(f, "activations, host", e->train_peak.offload_host, max, sv);
    }
    fputc('\n', f);
}

const char *memest_rnn_kernel_note(const struct memest_run *r)
{
    if (!(r->used & MEMEST_USED_RNN))
        return "";
    return r->opts.rnn_kernel == MEMEST_RNN_CUDNN ? ", rnn kernel cudnn (reserve space estimated)"
                                                  : ", rnn kernel native";
}

void memest_summary_text(FILE *f, const struct memest_report *rep)
{
    const struct memest_estimate *e = rep->e;
    const struct memest_report_opts *o = &rep->opts;
    char a[32], b[32], c[32], name[MEMEST_ESC_NAME], file[MEMEST_ESC_NAME];
    fprintf(f, "memest %s: %s (%s)\n", MEMEST_VERSION,
            memest_esc_text(rep->g->name, name, sizeof name),
            memest_esc_text(rep->g->file, file, sizeof file));
    fprintf(f, "batch %lld, optimizer %s", (long long)rep->r->opts.batch, memest_optim_name(rep->step->optim.kind));
    if (rep->step->optim.momentum != 0)
        fprintf(f, " (momentum %g)", rep->step->optim.momentum);
    fprintf(f, ", dtype %s", memest_dtype_name(o->dtype));
    fputs(memest_rnn_kernel_note(rep->r), f);
    enum memest_wformat wf;
    uint32_t nq = memest_graph_quantized(rep->g, &wf);
    if (nq) /* --weights or a config's quantization_config */
        fprintf(f, ", weights %s%s in %u linear layers", memest_wformat_name(wf),
                memest_wformat_bnb4(wf) && rep->g->quant.double_quant ? " (double-quantised)" : "",
                (unsigned)nq);
    fprintf(f, "\n\n");

    fprintf(f, "Parameters  %s (%s trainable, %s frozen) in %llu tensors\n",
            memest_fmt_count(e->params.total, a, sizeof a),
            memest_fmt_count(e->params.trainable, b, sizeof b),
            memest_fmt_count(e->params.frozen, c, sizeof c), (unsigned long long)e->params.tensors);
    if (e->params.active != e->params.total)
        fprintf(f, "            %s active per token (the experts it is routed to)\n",
                memest_fmt_count(e->params.active, a, sizeof a));
    if (o->lora)
        lora_lines(f, o->lora, &e->params);
    fprintf(f, "Buffers     %s elements in %llu tensors\n",
            memest_fmt_count(e->params.buffer_elems, a, sizeof a),
            (unsigned long long)e->params.buffer_tensors);
    if (o->checkpoint)
        checkpoint_line(f, o->checkpoint);
    fputc('\n', f);

    memest_dist_text(f, rep);
    bool inf = o->inference;
    const struct memest_peak *p = inf ? &e->infer_peak : &e->train_peak;
    memory_section(f, rep);
    peak_section(f, rep, p, inf);
    if (!inf) {
        const struct memest_peak *ip = &e->infer_peak;
        fprintf(f, "Inference (no grad): peak %s allocated, %s reserved, %s on the device\n",
                memest_fmt_bytes(ip->bytes, a, sizeof a), memest_fmt_bytes(ip->reserved, b, sizeof b),
                memest_fmt_bytes(e->infer_total_device, c, sizeof c));
    }
    fputc('\n', f);

    fprintf(f, "Compute (batch %lld; 1 MAC = 2 FLOPs)\n", (long long)rep->r->opts.batch);
    fprintf(f, "  forward    %sMACs  = %sFLOPs\n", memest_fmt_si(e->flops.fwd_macs, a, sizeof a),
            memest_fmt_si(e->flops.fwd_flops, b, sizeof b));
    fprintf(f, "  backward   %sMACs  = %sFLOPs\n", memest_fmt_si(e->flops.bwd_macs, a, sizeof a),
            memest_fmt_si(e->flops.bwd_flops, b, sizeof b));
    fprintf(f, "  step       %sMACs  = %sFLOPs\n",
            memest_fmt_si(e->flops.step_macs, a, sizeof a),
            memest_fmt_si(e->flops.step_flops, b, sizeof b));
    if (e->flops.optim_macs > 0)   /* once per optimizer step, not per micro-batch */
        fprintf(f, "  optimizer  %sMACs  = %sFLOPs once per optimizer step (its matrix products)\n",
                memest_fmt_si(e->flops.optim_macs, a, sizeof a),
                memest_fmt_si(e->flops.optim_flops, b, sizeof b));
    if (o->layers)
        memest_layers_text(f, rep);
}

void memest_report_text(FILE *f, const struct memest_report *rep)
{
    char line[256];
    if (rep->opts.fit) {
        if (rep->card)
            fprintf(f, "%s\n", memest_fit_text(&rep->card->fit, line, sizeof line));
    } else {
        memest_summary_text(f, rep);
        if (rep->card)
            memest_card_text(f, rep->card, rep->g, rep->r->opts.batch);
    }
    if (rep->probe)
        memest_probe_text(f, rep->probe);
}
