/* report_maxbatch.c - --max-batch as text: the largest batch that fits, the
 * verdicts at it and at the next batch, and the step time at it. (Its JSON
 * is the estimate's document with "max_batch" first: report_json.c.) */
#include <stdio.h>

#include "memest/escape.h"
#include "memest/report.h"

void memest_max_batch_text(FILE *f, const struct memest_report *rep)
{
    const struct memest_report_opts *o = &rep->opts;
    const struct memest_card_report *cr = rep->card;
    const struct memest_card *card = cr->card;
    const struct memest_max_batch_result *m = rep->max_batch;
    int64_t best = m->mb.best, at = rep->r->opts.batch;
    char line[256], name[MEMEST_ESC_NAME], file[MEMEST_ESC_NAME];
    fprintf(f, "memest %s: %s (%s), optimizer %s, dtype %s%s\n", MEMEST_VERSION,
            memest_esc_text(rep->g->name, name, sizeof name),
            memest_esc_text(rep->g->file, file, sizeof file), memest_optim_name(rep->step->optim.kind),
            memest_dtype_name(o->dtype), memest_rnn_kernel_note(rep->r));
    fprintf(f, "card %s%s%s, %g%% headroom\n", memest_esc_text(card->label, name, sizeof name),
            card->source == MEMEST_CARD_PRESET ? " --gpu " : "",
            card->source == MEMEST_CARD_PRESET ? card->name : "", o->headroom);
    if (best > 0) {
        fprintf(f, "max batch: %lld (%d estimates)\n", (long long)best, m->mb.calls);
        fprintf(f, "  at batch %lld: %s\n", (long long)best,
                memest_fit_text(&cr->fit, line, sizeof line));
    } else {
        fprintf(f, "max batch: none, batch 1 does not fit (%d estimates)\n", m->mb.calls);
        fprintf(f, "  at batch 1: %s\n", memest_fit_text(&cr->fit, line, sizeof line));
    }
    if (m->has_next) {
        if (m->next_limit)
            fprintf(f, "  at batch %lld: beyond memest's limits\n", (long long)(best + 1));
        else
            fprintf(f, "  at batch %lld: %s\n", (long long)(best + 1),
                    memest_fit_text(&m->next_fit, line, sizeof line));
    }
    if (best > m->mb.steady)
        fprintf(f, "  note: batch %lld fits, batch %lld does not: the allocator's "
                   "rounding makes the memory of a step grow unevenly with the batch\n",
                (long long)m->mb.steady, (long long)m->mb.steady + 1);
    if (cr->has_time) {
        char st[32];
        fprintf(f, "  time at batch %lld: %s per step, %.4g samples/s (estimate, %g%% of the %s "
                   "peak)\n",
                (long long)at, memest_fmt_seconds(cr->time.step_s, st, sizeof st),
                cr->time.samples_per_s, o->mfu * 100,
                memest_precision_name(cr->peak_fallback ? MEMEST_PREC_FP32 : cr->precision));
    }
    if (o->layers)
        memest_layers_text(f, rep);
}
