/* report_card.c - the target card in the reports of one estimate: the
 * verdict, the step-time estimate and the slowest memory-bound layers, as
 * text and as the "card", "fit" and "time" members of the --json document. */
#include <math.h>
#include <string.h>

#include "memest/escape.h"
#include "memest/fit.h"
#include "memest/format.h"
#include "memest/report.h"
#include "memest/roofline.h"

static const char *const source_names[] = {
    [MEMEST_CARD_PRESET] = "preset",
    [MEMEST_CARD_MEM] = "mem",
    [MEMEST_CARD_PROBE] = "probe",
};

char *memest_fmt_seconds(double s, char *buf, size_t n)
{
    if (!isfinite(s) || s < 0)
        snprintf(buf, n, "-");
    else if (s >= 1)
        snprintf(buf, n, "%.3g s", s);
    else if (s >= 1e-3)
        snprintf(buf, n, "%.3g ms", s * 1e3);
    else
        snprintf(buf, n, "%.3g us", s * 1e6);
    return buf;
}

void memest_card_id_json(struct memest_jsonw *w, const struct memest_card *card)
{
    memest_jsonw_obj_begin(w, "card");
    memest_jsonw_str(w, "name", card->name);
    memest_jsonw_str(w, "label", card->label);
    memest_jsonw_str(w, "source", source_names[card->source]);
    memest_jsonw_u64(w, "memory", card->memory);
    memest_jsonw_bool(w, "memory_exact", card->source == MEMEST_CARD_MEM ||
                                             card->source == MEMEST_CARD_PROBE ||
                                             (card->gpu && card->gpu->memory_exact));
    memest_jsonw_str(w, "arch", card->gpu ? card->gpu->arch : NULL);
    memest_jsonw_obj_end(w);
}

void memest_time_json(struct memest_jsonw *w, const struct memest_time *t)
{
    memest_jsonw_f64(w, "forward_seconds", t->fwd_s);
    memest_jsonw_f64(w, "backward_seconds", t->bwd_s);
    memest_jsonw_f64(w, "recompute_seconds", t->recompute_s);
    memest_jsonw_f64(w, "optimizer_seconds", t->opt_s);
    memest_jsonw_f64(w, "offload_seconds", t->offload_s);
    memest_jsonw_f64(w, "step_seconds", t->step_s);
    memest_jsonw_f64(w, "samples_per_second", t->samples_per_s);
    memest_jsonw_count(w, "step_flops", t->flops);
    memest_jsonw_count(w, "step_bytes", t->bytes);
    memest_jsonw_f64(w, "memory_bound_fraction", t->memory_bound_fraction);
    memest_jsonw_u64(w, "passes", t->passes);
    memest_jsonw_u64(w, "memory_bound_passes", t->memory_bound_passes);
}

void memest_card_json(struct memest_jsonw *w, const struct memest_card_report *c)
{
    char line[256];
    memest_card_id_json(w, c->card);

    const struct memest_fit *f = &c->fit;
    memest_jsonw_obj_begin(w, "fit");
    memest_jsonw_bool(w, "fits", f->fits);
    memest_jsonw_u64(w, "needs", f->needs);
    memest_jsonw_u64(w, "reserved", c->reserved);
    memest_jsonw_u64(w, "overhead", c->overhead);
    memest_jsonw_u64(w, "card_memory", f->card);
    memest_jsonw_f64(w, "headroom_percent", f->headroom_pct);
    memest_jsonw_u64(w, "usable", f->usable);
    memest_jsonw_i64(w, "free", f->free);
    memest_jsonw_u64(w, "unconstrained", f->unconstrained);
    memest_jsonw_bool(w, "replayed", f->judged);
    memest_jsonw_u64(w, "retries", f->retries);
    memest_jsonw_str(w, "verdict", memest_fit_text(f, line, sizeof line));
    memest_jsonw_obj_end(w);

    if (!c->has_time) {
        memest_jsonw_null(w, "time");
        return;
    }
    memest_jsonw_obj_begin(w, "time");
    memest_jsonw_bool(w, "estimate", true);
    memest_jsonw_f64(w, "mfu", c->mfu);
    memest_jsonw_str(w, "precision", memest_precision_name(c->precision));
    memest_jsonw_f64(w, "peak_flops", c->peak_flops);
    memest_jsonw_bool(w, "peak_fallback", c->peak_fallback);
    memest_jsonw_f64(w, "bandwidth", c->card->gpu->bandwidth);
    memest_time_json(w, &c->time);
    memest_jsonw_obj_end(w);
}

/* The three slowest memory-bound passes, by name. */
static void print_slowest(FILE *f, const struct memest_card_report *c,
                          const struct memest_graph *g)
{
    struct memest_slow_pass top[3];
    int n = memest_roofline_slowest(c->nodes, g->nnodes, top, 3);
    if (n == 0)
        return;
    fputs("  slowest memory-bound:", f);
    for (int i = 0; i < n; i++) {
        char t[32], name[MEMEST_ESC_NAME];
        fprintf(f, "%s %s (%s, %s)", i ? "," : "",
                memest_esc_text(g->nodes[top[i].node].name, name, sizeof name),
                top[i].bwd ? "backward" : "forward",
                memest_fmt_seconds(top[i].seconds, t, sizeof t));
    }
    fputc('\n', f);
}

void memest_card_text(FILE *f, const struct memest_card_report *c,
                            const struct memest_graph *g, int64_t batch)
{
    const struct memest_card *card = c->card;
    char a[32], b[32], line[256], label[MEMEST_ESC_NAME];
    fprintf(f, "\nTarget card: %s", memest_esc_text(card->label, label, sizeof label));
    if (card->source == MEMEST_CARD_PRESET)
        fprintf(f, " (--gpu %s)", card->name);
    else if (card->source == MEMEST_CARD_PROBE)
        fputs(" (probed)", f);
    fprintf(f, ", %s bytes (%s)\n", memest_fmt_count(card->memory, a, sizeof a),
            memest_fmt_bytes(card->memory, b, sizeof b));
    fprintf(f, "  %s\n", memest_fit_text(&c->fit, line, sizeof line));
    if (!c->has_time) {
        fputs("  (no time estimate: --mem and unknown probed cards have no throughput figures; "
              "use --gpu NAME)\n",
              f);
        return;
    }
    const struct memest_time *t = &c->time;
    char pk[32], fw[32], bw[32], op[32], st[32];
    fprintf(f, "Time per step, an estimate (roofline at %g%% of the %s peak %sFLOP/s%s, %g GB/s)\n",
            c->mfu * 100, memest_precision_name(c->peak_fallback ? MEMEST_PREC_FP32 : c->precision),
            memest_fmt_si(c->peak_flops, pk, sizeof pk),
            c->peak_fallback ? ": the card has no such tensor cores" : "",
            card->gpu->bandwidth / 1e9);
    char re[48] = "";
    if (t->recompute_s > 0) {
        char rs[32];
        snprintf(re, sizeof re, " + recompute %s", memest_fmt_seconds(t->recompute_s, rs, sizeof rs));
    }
    if (c->slots > 0)   /* a pipeline's micro-batch slots, the bubble included */
        fprintf(f, "  %.4g pipeline slots x (forward %s%s + backward %s)", c->slots,
                memest_fmt_seconds(t->fwd_s, fw, sizeof fw), re,
                memest_fmt_seconds(t->bwd_s, bw, sizeof bw));
    else if (c->grad_accum > 1)
        fprintf(f, "  %lld x (forward %s%s + backward %s)", (long long)c->grad_accum,
                memest_fmt_seconds(t->fwd_s, fw, sizeof fw), re,
                memest_fmt_seconds(t->bwd_s, bw, sizeof bw));
    else if (t->opt_s > 0 || t->bwd_s > 0)
        fprintf(f, "  forward %s%s + backward %s", memest_fmt_seconds(t->fwd_s, fw, sizeof fw), re,
                memest_fmt_seconds(t->bwd_s, bw, sizeof bw));
    else
        fprintf(f, "  forward %s", memest_fmt_seconds(t->fwd_s, fw, sizeof fw));
    if (t->opt_s > 0)
        fprintf(f, " + optimizer %s", memest_fmt_seconds(t->opt_s, op, sizeof op));
    if (t->offload_s > 0)   /* the host's optimizer and the copies over the host link */
        fprintf(f, " + offload %s", memest_fmt_seconds(t->offload_s, op, sizeof op));
    if (c->samples_k > 0)
        fprintf(f, " = %s per step, %.4g samples/s (global batch %.0f, all GPUs)\n",
                memest_fmt_seconds(t->step_s, st, sizeof st), t->samples_per_s,
                (double)batch * c->samples_k);
    else
        fprintf(f, " = %s per step, %.4g samples/s (batch %lld)\n",
                memest_fmt_seconds(t->step_s, st, sizeof st), t->samples_per_s,
                (long long)(batch * (c->grad_accum > 1 ? c->grad_accum : 1)));
    fprintf(f, "  memory-bound: %.0f%% of the time, %u of %u layer passes\n",
            t->memory_bound_fraction * 100, t->memory_bound_passes, t->passes);
    if (c->nodes)
        print_slowest(f, c, g);
}
