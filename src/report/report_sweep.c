/* report_sweep.c - the sweep report: a text table, CSV with a header row,
 * or a JSON document with "schema_version" (README.md documents the fields). */
#include <string.h>

#include "memest/escape.h"
#include "memest/format.h"
#include "memest/jsonw.h"
#include "memest/report.h"
#include "memest/sweep.h"

static void header_lines(FILE *f, const struct memest_sweep_report *s)
{
    char name[MEMEST_ESC_NAME], file[MEMEST_ESC_NAME];
    fprintf(f, "memest %s: %s (%s), optimizer %s, dtype %s%s", MEMEST_VERSION,
            memest_esc_text(s->model, name, sizeof name), memest_esc_text(s->file, file, sizeof file),
            s->optimizer, s->dtype, s->inference ? ", inference" : "");
    if (s->variable)
        fprintf(f, ", batch %lld", (long long)s->batch);
    fputc('\n', f);
    if (s->card) {
        char b[32];
        fprintf(f, "card %s%s%s, %s, %g%% headroom\n",
                memest_esc_text(s->card->label, name, sizeof name),
                s->card->source == MEMEST_CARD_PRESET ? " --gpu " : "",
                s->card->source == MEMEST_CARD_PRESET ? s->card->name : "",
                memest_fmt_bytes(s->card->memory, b, sizeof b), s->headroom_pct);
    }
}

void memest_sweep_text(FILE *f, const struct memest_sweep_report *s)
{
    header_lines(f, s);
    char var[MEMEST_ESC_NAME];
    const char *first = s->variable ? memest_esc_text(s->variable, var, sizeof var) : "batch";
    int w = (int)strlen(first) > 8 ? (int)strlen(first) : 8;
    bool times = s->precision != NULL;
    fprintf(f, "\n%*s %11s %11s %11s %11s %5s %12s", w, first, "peak", "reserved", "on device",
            "least", s->card ? "fits" : "", "step FLOPs");
    if (times)
        fprintf(f, " %11s %11s %9s", "step time", "samples/s", "mem-bound");
    fputc('\n', f);
    for (size_t i = 0; i < s->nrows; i++) {
        const struct memest_sweep_row *r = &s->rows[i];
        fprintf(f, "%*lld", w, (long long)r->value);
        if (r->limit) {
            fprintf(f, "  beyond memest's limits (%s)\n", r->limit_msg);
            continue;
        }
        char p[32], rs[32], t[32], le[32], fl[32];
        fprintf(f, " %11s %11s %11s %11s %5s %7sFLOPs", memest_fmt_bytes(r->peak, p, sizeof p),
                memest_fmt_bytes(r->reserved, rs, sizeof rs),
                memest_fmt_bytes(r->total_device, t, sizeof t),
                r->least ? memest_fmt_bytes(r->least, le, sizeof le) : "-",
                !r->has_fit ? "" : r->fits ? "yes" : "no", memest_fmt_si(r->step_flops, fl, sizeof fl));
        if (times && r->has_time) {
            char st[32];
            fprintf(f, " %11s %11.4g %8.0f%%", memest_fmt_seconds(r->time.step_s, st, sizeof st),
                    r->time.samples_per_s, r->time.memory_bound_fraction * 100);
        }
        fputc('\n', f);
    }
    fputc('\n', f);
    fprintf(f, "on device: the allocator's reserved peak plus the CUDA context and workspaces; "
               "least: the least device memory the step runs in (PyTorch frees cached blocks "
               "before it runs out)%s\n",
            s->card ? "; fits: the step replayed on the card less the headroom" : "");
    if (times) {
        char pk[32];
        fprintf(f, "step time: an estimate (roofline at %g%% of the %s peak %sFLOP/s%s, %g GB/s), "
                   "not a measurement; mem-bound: share of the time in memory-bound layers\n",
                s->mfu * 100, s->precision, memest_fmt_si(s->peak_flops, pk, sizeof pk),
                s->peak_fallback ? " (no such tensor cores on this card)" : "",
                s->card->gpu->bandwidth / 1e9);
    }
}

void memest_sweep_csv(FILE *f, const struct memest_sweep_report *s)
{
    if (s->variable) {
        memest_esc_csv(f, s->variable);
        fputc(',', f);
    }
    fputs("batch,peak_bytes,reserved_bytes,total_device_bytes,least_device_bytes,fits,step_flops,"
          "step_seconds,"
          "samples_per_second,memory_bound_fraction,error\n",
          f);
    for (size_t i = 0; i < s->nrows; i++) {
        const struct memest_sweep_row *r = &s->rows[i];
        if (s->variable)
            fprintf(f, "%lld,", (long long)r->value);
        fprintf(f, "%lld,", (long long)r->batch);
        if (r->limit) {
            fprintf(f, ",,,,%s,,,,,", r->has_fit ? "false" : "");
            memest_esc_csv(f, r->limit_msg);
            fputc('\n', f);
            continue;
        }
        fprintf(f, "%llu,%llu,%llu,", (unsigned long long)r->peak,
                (unsigned long long)r->reserved, (unsigned long long)r->total_device);
        if (r->least)
            fprintf(f, "%llu", (unsigned long long)r->least);
        fprintf(f, ",%s,%.0f,", !r->has_fit ? "" : r->fits ? "true" : "false", r->step_flops);
        if (r->has_time)
            fprintf(f, "%.6g,%.6g,%.4f,", r->time.step_s, r->time.samples_per_s,
                    r->time.memory_bound_fraction);
        else
            fputs(",,,", f);
        fputc('\n', f);
    }
}

void memest_sweep_json(FILE *f, const struct memest_sweep_report *s)
{
    struct memest_jsonw w;
    memest_jsonw_init(&w, f, true);
    memest_jsonw_obj_begin(&w, NULL);
    memest_jsonw_u64(&w, "schema_version", MEMEST_SCHEMA_VERSION);
    memest_jsonw_str(&w, "model", s->model);
    memest_jsonw_str(&w, "file", s->file);
    memest_jsonw_str(&w, "sweep", s->variable ? "variable" : "batch");
    memest_jsonw_str(&w, "variable", s->variable);
    if (s->variable)
        memest_jsonw_i64(&w, "batch", s->batch);
    else
        memest_jsonw_null(&w, "batch");
    memest_jsonw_str(&w, "optimizer", s->optimizer);
    memest_jsonw_str(&w, "dtype", s->dtype);
    memest_jsonw_bool(&w, "inference", s->inference);
    if (s->card)
        memest_card_id_json(&w, s->card);
    else
        memest_jsonw_null(&w, "card");
    memest_jsonw_f64(&w, "headroom_percent", s->headroom_pct);
    if (s->precision) {
        memest_jsonw_obj_begin(&w, "time_model");
        memest_jsonw_f64(&w, "mfu", s->mfu);
        memest_jsonw_str(&w, "precision", s->precision);
        memest_jsonw_f64(&w, "peak_flops", s->peak_flops);
        memest_jsonw_bool(&w, "peak_fallback", s->peak_fallback);
        memest_jsonw_f64(&w, "bandwidth", s->card->gpu->bandwidth);
        memest_jsonw_obj_end(&w);
    } else {
        memest_jsonw_null(&w, "time_model");
    }
    memest_jsonw_arr_begin(&w, "rows");
    for (size_t i = 0; i < s->nrows; i++) {
        const struct memest_sweep_row *r = &s->rows[i];
        memest_jsonw_obj_begin(&w, NULL);
        if (s->variable)
            memest_jsonw_i64(&w, "value", r->value);
        memest_jsonw_i64(&w, "batch", r->batch);
        if (r->limit) {
            memest_jsonw_str(&w, "error", r->limit_msg);
            if (r->has_fit)
                memest_jsonw_bool(&w, "fits", false);
            else
                memest_jsonw_null(&w, "fits");
            memest_jsonw_obj_end(&w);
            continue;
        }
        memest_jsonw_u64(&w, "peak", r->peak);
        memest_jsonw_u64(&w, "reserved", r->reserved);
        memest_jsonw_u64(&w, "total_device", r->total_device);
        if (r->least)
            memest_jsonw_u64(&w, "least_device_memory", r->least);
        else
            memest_jsonw_null(&w, "least_device_memory");
        if (r->has_fit)
            memest_jsonw_bool(&w, "fits", r->fits);
        else
            memest_jsonw_null(&w, "fits");
        memest_jsonw_count(&w, "step_flops", r->step_flops);
        if (r->has_time) {
            memest_jsonw_obj_begin(&w, "time");
            memest_time_json(&w, &r->time);
            memest_jsonw_obj_end(&w);
        } else {
            memest_jsonw_null(&w, "time");
        }
        memest_jsonw_obj_end(&w);
    }
    memest_jsonw_arr_end(&w);
    memest_jsonw_obj_end(&w);
    memest_jsonw_finish(&w);
}
