/* report_compare.c - a comparison of cards (--gpu all, or a list): a text
 * table, CSV with a header row, or a JSON document with "schema_version"
 * (README.md, "Choosing a card", documents the fields). */
#include <math.h>
#include <string.h>

#include "memest/escape.h"
#include "memest/format.h"
#include "memest/jsonw.h"
#include "memest/report.h"

static bool row_fits(const struct memest_compare_row *r)
{
    return !r->limit && r->fit.fits;
}

/* What stays free on the card at --batch; false when the step needs more
 * than the card (or is beyond the limits). */
static bool headroom(const struct memest_compare_row *r, uint64_t *out)
{
    if (r->limit || r->fit.needs > r->fit.card)
        return false;
    *out = r->fit.card - r->fit.needs;
    return true;
}

/* A rate for the table: "1,190" from 1000 on, "95.3", "0.412". */
static char *fmt_rate(double v, char *buf, size_t n)
{
    if (v >= 999.5 && v < 1.8e19)
        return memest_fmt_count((uint64_t)llround(v), buf, n);
    snprintf(buf, n, v >= 9.95 ? "%.1f" : "%.3g", v);
    return buf;
}

/* The precision every card's time uses, or NULL when the rows differ
 * besides the cards that fall back to their fp32 peak. */
static const char *common_precision(const struct memest_compare_report *c, bool *any_fallback)
{
    const char *p = NULL;
    *any_fallback = false;
    for (size_t i = 0; i < c->n; i++) {
        const struct memest_compare_row *r = &c->rows[i];
        if (!r->has_time)
            continue;
        *any_fallback |= r->peak_fallback;
        const char *q = memest_precision_name(r->precision);
        if (p && strcmp(p, q) != 0)
            return NULL;
        p = q;
    }
    return p;
}

static void print_summary(FILE *f, const struct memest_compare_report *c)
{
    char b1[32], b2[32], b3[32];
    const struct memest_compare_row *fast = NULL, *value = NULL, *cheap = NULL;
    for (size_t i = 0; i < c->n; i++) {
        const struct memest_compare_row *r = &c->rows[i];
        if (!row_fits(r))
            continue;
        if (r->has_time && (!fast || r->time.samples_per_s > fast->time.samples_per_s))
            fast = r;
        if (r->per_price > 0 && (!value || r->per_price > value->per_price))
            value = r;
        if (r->has_price && (!cheap || r->price < cheap->price))
            cheap = r;
    }
    if (!c->fitting) {
        for (size_t i = 0; i < c->n; i++)   /* the fastest at a smaller batch */
            if (c->rows[i].has_time &&
                (!fast || c->rows[i].time.samples_per_s > fast->time.samples_per_s))
                fast = &c->rows[i];
        fprintf(f, "no card compared fits batch %lld", (long long)c->batch);
        if (fast)
            fprintf(f, "; the fastest at a smaller batch: %s, %s samples/s at batch %s",
                    fast->gpu->name, fmt_rate(fast->time.samples_per_s, b1, sizeof b1),
                    memest_fmt_count((uint64_t)fast->mb.best, b2, sizeof b2));
        fputc('\n', f);
        return;
    }
    if (fast)
        fprintf(f, "fastest that fits batch %lld: %s, %s samples/s at batch %s\n",
                (long long)c->batch, fast->gpu->name, fmt_rate(fast->time.samples_per_s, b1, sizeof b1),
                memest_fmt_count((uint64_t)fast->mb.best, b2, sizeof b2));
    if (value)
        fprintf(f, "most samples per unit of price that fits batch %lld: %s, %s at batch %s (price %s per hour)\n",
                (long long)c->batch, value->gpu->name, fmt_rate(value->per_price, b1, sizeof b1),
                memest_fmt_count((uint64_t)value->mb.best, b2, sizeof b2),
                memest_fmt_double(value->price, b3, sizeof b3));
    if (cheap)
        fprintf(f, "lowest price per hour that fits batch %lld: %s (%s)\n", (long long)c->batch,
                cheap->gpu->name, memest_fmt_double(cheap->price, b3, sizeof b3));
}

void memest_compare_text(FILE *f, const struct memest_compare_report *c)
{
    char name[MEMEST_ESC_NAME], file[MEMEST_ESC_NAME];
    fprintf(f, "memest %s: %s (%s), optimizer %s, dtype %s%s, batch %lld", MEMEST_VERSION,
            memest_esc_text(c->model, name, sizeof name), memest_esc_text(c->file, file, sizeof file),
            c->optimizer, c->dtype, c->inference ? ", inference" : "", (long long)c->batch);
    if (c->gpus > 1)
        fprintf(f, " per GPU, %lld GPUs (%lld node%s of %lld)", (long long)c->gpus,
                (long long)c->nodes, c->nodes == 1 ? "" : "s", (long long)c->gpus_per_node);
    fprintf(f, "\n%zu card%s compared; the step fits %zu at batch %lld (%g%% headroom); sorted by %s\n\n",
            c->n, c->n == 1 ? "" : "s", c->fitting, (long long)c->batch, c->headroom_pct,
            c->by_price ? "samples per unit of price, then samples/s" : "samples/s");

    bool nodes = c->nodes > 1, prices = false, inexact = false;
    for (size_t i = 0; i < c->n; i++) {
        prices |= c->rows[i].has_price;
        inexact |= !c->rows[i].gpu->memory_exact;
    }
    int w = 4;
    for (size_t i = 0; i < c->n; i++)
        if ((int)strlen(c->rows[i].gpu->name) > w)
            w = (int)strlen(c->rows[i].gpu->name);
    fprintf(f, "%-*s %11s %10s %10s %5s %10s %10s %10s", w, "card", "memory ", "on device",
            "headroom", "fits", "max batch", "step time", "samples/s");
    if (nodes)
        fprintf(f, " %11s", "per node");
    if (prices)
        fprintf(f, " %8s %13s", "price/h", "samples/unit");
    fputc('\n', f);
    for (size_t i = 0; i < c->n; i++) {
        const struct memest_compare_row *r = &c->rows[i];
        char mem[32], dev[32], hr[32], mb[32], st[32], sps[32];
        uint64_t h;
        fprintf(f, "%-*s %11s%c%10s %10s %5s", w, r->gpu->name,
                memest_fmt_bytes(r->gpu->memory, mem, sizeof mem),
                r->gpu->memory_exact ? ' ' : '*',
                r->limit ? "-" : memest_fmt_bytes(r->fit.needs, dev, sizeof dev),
                headroom(r, &h) ? memest_fmt_bytes(h, hr, sizeof hr) : "-",
                r->limit ? "limit" : r->fit.fits ? "yes" : "no");
        fprintf(f, " %10s", memest_fmt_count((uint64_t)r->mb.best, mb, sizeof mb));
        if (r->has_time)
            fprintf(f, " %10s %10s", memest_fmt_seconds(r->time.step_s, st, sizeof st),
                    fmt_rate(r->time.samples_per_s, sps, sizeof sps));
        else
            fprintf(f, " %10s %10s", "-", "-");
        if (nodes)
            fprintf(f, " %11s", r->has_time ? fmt_rate(r->per_node, sps, sizeof sps) : "-");
        if (prices) {
            char pr[32];
            fprintf(f, " %8s %13s", r->has_price ? memest_fmt_double(r->price, pr, sizeof pr) : "-",
                    r->per_price > 0 ? fmt_rate(r->per_price, sps, sizeof sps) : "-");
        }
        fputc('\n', f);
    }
    fputc('\n', f);
    fprintf(f, "on device: at batch %lld, the allocator's reserved peak plus the CUDA context and "
               "workspaces; headroom: what stays free on the card; fits: within the card less %g%%\n",
            (long long)c->batch, c->headroom_pct);
    bool fb;
    const char *prec = common_precision(c, &fb);
    fprintf(f, "step time, samples/s%s: at the card's largest batch that fits, an estimate (roofline "
               "at %g%% of %s%s%s peak FLOP/s and the card's bandwidth), not a measurement%s\n",
            nodes ? ", per node" : "", c->mfu * 100, prec ? "the " : "each card's", prec ? prec : "",
            prec ? "" : " step precision's", c->gpus > 1 ? "; samples/s of all the GPUs" : "");
    if (fb) {
        fputs("fp32 peak (no such tensor cores) for:", f);
        for (size_t i = 0; i < c->n; i++)
            if (c->rows[i].has_time && c->rows[i].peak_fallback)
                fprintf(f, " %s", c->rows[i].gpu->name);
        fputc('\n', f);
    }
    if (prices)
        fprintf(f, "samples/unit: samples per unit of the price you gave (--price: per hour of one "
                   "card)%s\n", c->gpus > 1 ? ", for all the GPUs" : "");
    if (inexact)
        fputs("memory marked *: not a driver-reported total (memest --list-gpus)\n", f);
    for (size_t i = 0; i < c->n; i++)
        if (c->rows[i].mb.capped)
            fprintf(f, "%s: batches %lld to %lld were not all checked; %lld is the largest "
                       "fitting batch found\n", c->rows[i].gpu->name,
                    (long long)c->rows[i].mb.steady + 1, (long long)c->rows[i].mb.bound,
                    (long long)c->rows[i].mb.best);
    for (size_t i = 0; i < c->n; i++)
        if (c->rows[i].limit)
            fprintf(f, "%s: batch %lld is beyond memest's limits (%s)\n", c->rows[i].gpu->name,
                    (long long)c->batch, c->rows[i].limit_msg);
    print_summary(f, c);
}

void memest_compare_csv(FILE *f, const struct memest_compare_report *c)
{
    fputs("card,memory_bytes,memory_exact,batch,total_device_bytes,headroom_bytes,fits,max_batch,"
          "max_batch_total_device_bytes,step_seconds,samples_per_second,"
          "samples_per_second_per_node,price_per_hour,samples_per_price_unit,precision,error\n",
          f);
    for (size_t i = 0; i < c->n; i++) {
        const struct memest_compare_row *r = &c->rows[i];
        uint64_t h;
        memest_esc_csv(f, r->gpu->name);
        fprintf(f, ",%llu,%s,%lld,", (unsigned long long)r->gpu->memory,
                r->gpu->memory_exact ? "true" : "false", (long long)c->batch);
        if (r->limit)
            fputs(",,", f);
        else if (headroom(r, &h))
            fprintf(f, "%llu,%llu,", (unsigned long long)r->fit.needs, (unsigned long long)h);
        else
            fprintf(f, "%llu,,", (unsigned long long)r->fit.needs);
        fprintf(f, "%s,%lld,", row_fits(r) ? "true" : "false", (long long)r->mb.best);
        if (r->mb.best > 0)
            fprintf(f, "%llu,", (unsigned long long)r->best_needs);
        else
            fputc(',', f);
        if (r->has_time)
            fprintf(f, "%.6g,%.6g,", r->time.step_s, r->time.samples_per_s);
        else
            fputs(",,", f);
        if (r->per_node > 0)
            fprintf(f, "%.6g", r->per_node);
        fputc(',', f);
        char pr[32];
        if (r->has_price)
            fputs(memest_fmt_double(r->price, pr, sizeof pr), f);
        fputc(',', f);
        if (r->per_price > 0)
            fprintf(f, "%.6g", r->per_price);
        fprintf(f, ",%s,", r->has_time ? memest_precision_name(r->peak_fallback ? MEMEST_PREC_FP32
                                                                                : r->precision)
                                       : "");
        if (r->limit)
            memest_esc_csv(f, r->limit_msg);
        fputc('\n', f);
    }
}

static void card_json(struct memest_jsonw *w, const struct memest_compare_report *c,
                      const struct memest_compare_row *r)
{
    memest_jsonw_obj_begin(w, NULL);
    memest_jsonw_str(w, "name", r->gpu->name);
    memest_jsonw_str(w, "label", r->gpu->label);
    memest_jsonw_str(w, "arch", r->gpu->arch);
    memest_jsonw_u64(w, "memory", r->gpu->memory);
    memest_jsonw_bool(w, "memory_exact", r->gpu->memory_exact);
    if (r->has_price)
        memest_jsonw_f64(w, "price_per_hour", r->price);
    else
        memest_jsonw_null(w, "price_per_hour");
    memest_jsonw_obj_begin(w, "at_batch");
    memest_jsonw_i64(w, "batch", c->batch);
    uint64_t h;
    if (r->limit) {
        memest_jsonw_null(w, "total_device");
        memest_jsonw_null(w, "headroom");
    } else {
        memest_jsonw_u64(w, "total_device", r->fit.needs);
        if (headroom(r, &h))
            memest_jsonw_u64(w, "headroom", h);
        else
            memest_jsonw_null(w, "headroom");
    }
    memest_jsonw_u64(w, "usable", r->fit.usable);
    memest_jsonw_bool(w, "fits", row_fits(r));
    memest_jsonw_str(w, "error", r->limit ? r->limit_msg : NULL);
    memest_jsonw_obj_end(w);
    memest_jsonw_i64(w, "max_batch", r->mb.best);
    memest_jsonw_bool(w, "max_batch_capped", r->mb.capped);
    if (r->mb.best > 0) {
        memest_jsonw_obj_begin(w, "at_max_batch");
        memest_jsonw_i64(w, "batch", r->mb.best);
        memest_jsonw_u64(w, "total_device", r->best_needs);
        if (r->has_time) {
            memest_jsonw_str(w, "precision", memest_precision_name(r->peak_fallback
                                                                      ? MEMEST_PREC_FP32
                                                                      : r->precision));
            memest_jsonw_bool(w, "peak_fallback", r->peak_fallback);
            memest_jsonw_f64(w, "peak_flops", r->peak_flops);
            memest_jsonw_f64(w, "bandwidth", r->gpu->bandwidth);
            memest_jsonw_obj_begin(w, "time");
            memest_time_json(w, &r->time);
            memest_jsonw_obj_end(w);
            if (c->nodes > 1)
                memest_jsonw_f64(w, "samples_per_second_per_node", r->per_node);
            else
                memest_jsonw_null(w, "samples_per_second_per_node");
            if (r->per_price > 0)
                memest_jsonw_f64(w, "samples_per_price_unit", r->per_price);
            else
                memest_jsonw_null(w, "samples_per_price_unit");
        } else {
            memest_jsonw_null(w, "time");
        }
        memest_jsonw_obj_end(w);
    } else {
        memest_jsonw_null(w, "at_max_batch");
    }
    memest_jsonw_obj_end(w);
}

void memest_compare_json(FILE *f, const struct memest_compare_report *c)
{
    struct memest_jsonw w;
    memest_jsonw_init(&w, f, true);
    memest_jsonw_obj_begin(&w, NULL);
    memest_jsonw_u64(&w, "schema_version", MEMEST_SCHEMA_VERSION);
    memest_jsonw_str(&w, "model", c->model);
    memest_jsonw_str(&w, "file", c->file);
    memest_jsonw_i64(&w, "batch", c->batch);
    memest_jsonw_str(&w, "optimizer", c->optimizer);
    memest_jsonw_str(&w, "dtype", c->dtype);
    memest_jsonw_bool(&w, "inference", c->inference);
    memest_jsonw_f64(&w, "headroom_percent", c->headroom_pct);
    memest_jsonw_f64(&w, "mfu", c->mfu);
    memest_jsonw_i64(&w, "gpus", c->gpus);
    memest_jsonw_i64(&w, "gpus_per_node", c->gpus_per_node);
    memest_jsonw_i64(&w, "nodes", c->nodes);
    memest_jsonw_str(&w, "sort", c->by_price ? "samples_per_price_unit" : "samples_per_second");
    memest_jsonw_u64(&w, "fitting", c->fitting);
    memest_jsonw_arr_begin(&w, "cards");
    for (size_t i = 0; i < c->n; i++)
        card_json(&w, c, &c->rows[i]);
    memest_jsonw_arr_end(&w);
    memest_jsonw_obj_end(&w);
    memest_jsonw_finish(&w);
}
