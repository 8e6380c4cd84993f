/* report_advise.c - --advise as text (a table of the ways to save memory)
 * and as JSON (README.md documents the fields). */
#include <stdio.h>

#include "memest/escape.h"
#include "memest/format.h"
#include "memest/jsonw.h"
#include "memest/report.h"

void memest_advice_text(FILE *f, const struct memest_advice *ad)
{
    const struct memest_card *card = ad->card;
    char line[256], b[32], name[MEMEST_ESC_NAME], file[MEMEST_ESC_NAME];
    fprintf(f, "memest %s: %s (%s), batch %lld, optimizer %s, dtype %s\n", MEMEST_VERSION,
            memest_esc_text(ad->model, name, sizeof name),
            memest_esc_text(ad->file, file, sizeof file), (long long)ad->batch, ad->optimizer,
            ad->dtype);
    fprintf(f, "card %s%s%s, %s, %g%% headroom\n", memest_esc_text(card->label, name, sizeof name),
            card->source == MEMEST_CARD_PRESET ? " --gpu " : "",
            card->source == MEMEST_CARD_PRESET ? card->name : "",
            memest_fmt_bytes(card->memory, b, sizeof b), ad->headroom_pct);
    fprintf(f, "now: %s\n\n", memest_fit_text(&ad->now, line, sizeof line));
    fprintf(f, "Ways to save memory, each computed by memest's calculators with the change\n"
               "(sorted by the memory saved; fits: with the headroom):\n");
    fprintf(f, "  %-4s %11s %11s %11s  %s\n", "fits", "saves", "needs",
            ad->has_time ? "samples/s" : "", "change");
    for (int i = 0; i < ad->nopts; i++) {
        const struct memest_advice_option *op = &ad->opts[i];
        /* the change and the note can hold node names and messages */
        char change[4 * sizeof op->change], note[4 * sizeof op->note];
        memest_esc_text(op->change, change, sizeof change);
        memest_esc_text(op->note, note, sizeof note);
        if (!op->computed) {
            fprintf(f, "  %-4s %11s %11s %11s  %s%s%s\n", "-", "-", "-", "", change,
                    note[0] ? ": " : "", note);
            continue;
        }
        char s[40], nd[32], sp[32] = "";
        uint64_t mag = op->saves < 0 ? (uint64_t)(-op->saves) : (uint64_t)op->saves;
        snprintf(s, sizeof s, "%s%s", op->saves < 0 ? "-" : "", memest_fmt_bytes(mag, b, sizeof b));
        if (op->has_time)
            snprintf(sp, sizeof sp, "%.4g", op->samples_per_s);
        fprintf(f, "  %-4s %11s %11s %11s  %s%s%s%s\n", op->fits ? "yes" : "no", s,
                memest_fmt_bytes(op->needs, nd, sizeof nd), sp, change, note[0] ? " (" : "", note,
                note[0] ? ")" : "");
    }
    fprintf(f, "  %-4s %11s %11s %11s  not weighed: %sLoRA and quantised weights (estimate them "
               "with --lora R, --weights nf4)\n",
            "-", "-", "-", "", ad->strategies ? "" : "ZeRO and FSDP (give --gpus N); ");
    if (ad->has_time)
        fprintf(f, "\nsamples/s: roofline estimate at %g%% of the peak (now: %.4g); not a "
                   "measurement\n",
                ad->mfu * 100, ad->now_samples_per_s);
}

void memest_advice_json(FILE *f, const struct memest_advice *ad)
{
    struct memest_jsonw w;
    char line[256];
    memest_jsonw_init(&w, f, true);
    memest_jsonw_obj_begin(&w, NULL);
    memest_jsonw_u64(&w, "schema_version", MEMEST_SCHEMA_VERSION);
    memest_jsonw_str(&w, "model", ad->model);
    memest_jsonw_str(&w, "file", ad->file);
    memest_jsonw_i64(&w, "batch", ad->batch);
    memest_jsonw_str(&w, "optimizer", ad->optimizer);
    memest_jsonw_str(&w, "dtype", ad->dtype);
    memest_card_id_json(&w, ad->card);
    memest_jsonw_f64(&w, "headroom_percent", ad->headroom_pct);
    memest_jsonw_obj_begin(&w, "current");
    memest_jsonw_u64(&w, "needs", ad->now.needs);
    memest_jsonw_bool(&w, "fits", ad->now.fits);
    memest_jsonw_str(&w, "verdict", memest_fit_text(&ad->now, line, sizeof line));
    if (ad->has_time)
        memest_jsonw_f64(&w, "samples_per_second", ad->now_samples_per_s);
    else
        memest_jsonw_null(&w, "samples_per_second");
    memest_jsonw_obj_end(&w);
    memest_jsonw_arr_begin(&w, "options");
    for (int i = 0; i < ad->nopts; i++) {
        const struct memest_advice_option *op = &ad->opts[i];
        memest_jsonw_obj_begin(&w, NULL);
        memest_jsonw_str(&w, "name", op->key);
        memest_jsonw_str(&w, "change", op->change);
        memest_jsonw_bool(&w, "computed", op->computed);
        if (op->computed) {
            memest_jsonw_i64(&w, "batch", op->batch);
            memest_jsonw_u64(&w, "needs", op->needs);
            memest_jsonw_i64(&w, "saves", op->saves);
            memest_jsonw_bool(&w, "fits", op->fits);
            if (op->has_time) {
                memest_jsonw_f64(&w, "step_seconds", op->step_s);
                memest_jsonw_f64(&w, "samples_per_second", op->samples_per_s);
            } else {
                memest_jsonw_null(&w, "step_seconds");
                memest_jsonw_null(&w, "samples_per_second");
            }
        }
        memest_jsonw_str(&w, "note", op->note[0] ? op->note : NULL);
        memest_jsonw_obj_end(&w);
    }
    memest_jsonw_arr_end(&w);
    memest_jsonw_arr_begin(&w, "not_available");
    if (!ad->strategies)
        memest_jsonw_str(&w, NULL, "zero");
    memest_jsonw_str(&w, NULL, "lora");
    memest_jsonw_arr_end(&w);
    memest_jsonw_obj_end(&w);
    memest_jsonw_finish(&w);
}
