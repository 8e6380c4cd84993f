/* report_probe.c - what the CUDA probe measured (probe.h): the "probe:"
 * lines of the text report and the "probe" member of the --json document. */
#include <inttypes.h>
#include <stdio.h>

#include "memest/checked.h"
#include "memest/escape.h"
#include "memest/format.h"
#include "memest/jsonw.h"
#include "memest/probe.h"
#include "memest/report.h"

static void print_where(FILE *f, size_t event, enum memest_phase phase, const char *node)
{
    char name[MEMEST_ESC_NAME];
    fprintf(f, "event %zu (%s", event, memest_phase_name(phase));
    if (node && node[0])
        fprintf(f, ", node '%s'", memest_esc_text(node, name, sizeof name));
    fputc(')', f);
}

/* "+26.3 MiB (+9.6%)": measured against predicted. */
static const char *diff_text(uint64_t predicted, uint64_t measured, char *buf, size_t n)
{
    char d[32];
    uint64_t abs = measured >= predicted ? measured - predicted : predicted - measured;
    memest_fmt_iec(abs, 1, d, sizeof d);
    if (abs == 0)
        snprintf(buf, n, "0 B (0.0%%)");
    else if (predicted == 0)
        snprintf(buf, n, "%c%s", measured >= predicted ? '+' : '-', d);
    else
        snprintf(buf, n, "%c%s (%c%.1f%%)", measured >= predicted ? '+' : '-', d,
                 measured >= predicted ? '+' : '-', 100.0 * (double)abs / (double)predicted);
    return buf;
}

/* One row of the table of predicted against measured. */
static void row(FILE *f, const char *what, bool have_p, uint64_t p, bool have_m, uint64_t m)
{
    char a[32], b[32], c[64];
    fprintf(f, "probe:   %-14s %11s %11s  %s\n", what,
            have_p ? memest_fmt_iec(p, 1, a, sizeof a) : "-",
            have_m ? memest_fmt_iec(m, 1, b, sizeof b) : "-",
            have_p && have_m ? diff_text(p, m, c, sizeof c) : "");
}

/* Replaying segments: context, reserved and device total, predicted and
 * measured, and the device at the allocated peak. */
static void print_segments(FILE *f, const struct memest_probe_result *r)
{
    char a[32], b[32], c[32];
    fprintf(f, "probe:   %-14s %11s %11s  %s\n", "", "predicted", "measured", "difference");
    row(f, "CUDA context", r->have_predicted_context, r->predicted_context, r->have_overhead,
        r->context_overhead);
    row(f, "reserved", true, r->predicted_reserved, r->have_measured_reserved,
        r->measured_reserved);
    row(f, "device total", r->have_predicted_context,
        memest_sat_add(r->predicted_reserved, r->predicted_context),
        r->have_overhead && r->have_measured_reserved,
        memest_sat_add(r->measured_reserved, r->context_overhead));
    fprintf(f, "probe:   %zu segment%s replayed as PyTorch's caching allocator makes them\n",
            r->nsegments, r->nsegments == 1 ? "" : "s");
    fprintf(f, "probe:   allocated peak %s", memest_fmt_iec(r->predicted_peak, 1, a, sizeof a));
    if (r->predicted_peak > 0) {
        fputs(" at ", f);
        print_where(f, r->peak_event, r->peak_phase, r->peak_node);
    }
    if (r->have_measured_peak)
        fprintf(f, ": segments then %s predicted, %s measured; headroom %s free",
                memest_fmt_iec(r->predicted_reserved_at_peak, 1, b, sizeof b),
                memest_fmt_iec(r->measured_peak, 1, c, sizeof c),
                memest_fmt_iec(r->free_at_peak, 1, a, sizeof a));
    fputc('\n', f);
}

void memest_probe_text(FILE *f, const struct memest_probe_result *r)
{
    char a[32], b[32], c[32];
    if (!r->have_device) {
        fprintf(f, "probe: not run (%s)\n",
                r->no_memory ? "out of memory" : "no usable CUDA driver or device");
        return;
    }
    char name[MEMEST_ESC_NAME];
    fprintf(f, "probe: %s (device %d), %s total\n",
            memest_esc_text(r->device_name, name, sizeof name), r->device,
            memest_fmt_iec(r->total, 1, a, sizeof a));
    if (r->segments) {   /* without a context nothing was measured */
        if (r->have_context && r->have_overhead)
            fprintf(f, "probe:   free before memest: %s; free after its CUDA context: %s\n",
                    memest_fmt_iec(r->free_before, 1, a, sizeof a),
                    memest_fmt_iec(r->free_after_ctx, 1, c, sizeof c));
        else if (r->have_context)
            fprintf(f, "probe:   free after memest's CUDA context: %s (context size not measured)\n",
                    memest_fmt_iec(r->free_after_ctx, 1, a, sizeof a));
        if (r->have_context)
            print_segments(f, r);
    } else if (r->have_overhead)
        fprintf(f, "probe:   free before memest: %s; CUDA context: %s; free after it: %s\n",
                memest_fmt_iec(r->free_before, 1, a, sizeof a),
                memest_fmt_iec(r->context_overhead, 1, b, sizeof b),
                memest_fmt_iec(r->free_after_ctx, 1, c, sizeof c));
    else if (r->have_context)
        fprintf(f, "probe:   free after memest's CUDA context: %s (context size not measured)\n",
                memest_fmt_iec(r->free_after_ctx, 1, a, sizeof a));
    if (!r->segments) {
        fprintf(f, "probe:   predicted peak: %s",
                memest_fmt_iec(r->predicted_peak, 1, a, sizeof a));
        if (r->predicted_peak > 0) {
            fputs(" at ", f);
            print_where(f, r->peak_event, r->peak_phase, r->peak_node);
        }
        fputc('\n', f);
    }
    if (r->have_measured_peak && !r->segments) {
        uint64_t m = r->measured_peak, p = r->predicted_peak;
        fprintf(f, "probe:   measured at the peak: %s (%c%s against the prediction); "
                   "headroom: %s free\n",
                memest_fmt_iec(m, 1, a, sizeof a), m >= p ? '+' : '-',
                memest_fmt_iec(m >= p ? m - p : p - m, 1, b, sizeof b),
                memest_fmt_iec(r->free_at_peak, 1, c, sizeof c));
    }
    if (r->interrupted) {
        fprintf(f, "probe: interrupted; everything allocated was freed\n");
    } else if (r->failed) {
        const struct memest_probe_failure *x = &r->failed_at;
        fprintf(f, "probe: %s at ", r->pressured ? "holding every segment (no release): out of memory"
                                    : r->verdict ? "does not fit: out of memory" : "driver error");
        print_where(f, x->event, x->phase, x->node_name);
        if (x->segment)
            fprintf(f, " making a %s segment with %s of segments held\n",
                    memest_fmt_iec(x->bytes, 1, a, sizeof a),
                    memest_fmt_iec(x->live, 1, b, sizeof b));
        else
            fprintf(f, " allocating %s with %s live\n", memest_fmt_iec(x->bytes, 1, a, sizeof a),
                    memest_fmt_iec(x->live, 1, b, sizeof b));
    } else if (r->verdict && r->fits) {
        fprintf(f, "probe: fits: the whole step was allocated on this device\n");
    } else {
        fprintf(f, "probe: no verdict\n");
    }
    if (r->pressured && !r->interrupted) {
        fprintf(f, "probe: under memory pressure (the caching allocator freeing cached segments "
                   "when a cudaMalloc fails): ");
        if (r->pressure_completes)
            fprintf(f, "fits: the whole step ran in %s of segments, %" PRIu64 " retr%s, %s "
                       "given back\n",
                    memest_fmt_iec(r->pressure_reserved, 1, a, sizeof a), r->pressure_retries,
                    r->pressure_retries == 1 ? "y" : "ies",
                    memest_fmt_iec(r->pressure_released, 1, b, sizeof b));
        else
            fprintf(f, "does not fit: out of memory at event %zu; the step runs in %s of "
                       "segments\n", r->pressure_failed_event,
                    memest_fmt_iec(r->pressure_least, 1, a, sizeof a));
    }
}

static void json_u64_if(struct memest_jsonw *w, const char *key, bool have, uint64_t v)
{
    if (have)
        memest_jsonw_u64(w, key, v);
    else
        memest_jsonw_null(w, key);
}

void memest_probe_json(struct memest_jsonw *w, const struct memest_probe_result *r)
{
    memest_jsonw_obj_begin(w, "probe");
    memest_jsonw_str(w, "device", r->have_device ? r->device_name : NULL);
    json_u64_if(w, "total", r->have_device, r->total);
    json_u64_if(w, "free_before", r->have_overhead, r->free_before);
    json_u64_if(w, "context_overhead", r->have_overhead, r->context_overhead);
    memest_jsonw_u64(w, "predicted_peak", r->predicted_peak);
    json_u64_if(w, "measured_peak", r->have_measured_peak, r->measured_peak);
    if (r->verdict)
        memest_jsonw_bool(w, "fits", r->fits);
    else
        memest_jsonw_null(w, "fits");
    if (r->failed) {
        const struct memest_probe_failure *x = &r->failed_at;
        memest_jsonw_obj_begin(w, "failed_at");
        memest_jsonw_u64(w, "event", x->event);
        memest_jsonw_str(w, "phase", memest_phase_name(x->phase));
        memest_jsonw_str(w, "node", x->node_name[0] ? x->node_name : NULL);
        memest_jsonw_str(w, "what", x->segment ? "segment" : "tensor");
        memest_jsonw_u64(w, "bytes", x->bytes);
        memest_jsonw_u64(w, "live", x->live);
        memest_jsonw_obj_end(w);
    } else {
        memest_jsonw_null(w, "failed_at");
    }
    memest_jsonw_i64(w, "device_index", r->device);
    json_u64_if(w, "free_after_context", r->have_context, r->free_after_ctx);
    json_u64_if(w, "free_at_peak", r->have_measured_peak, r->free_at_peak);
    memest_jsonw_u64(w, "peak_event", r->peak_event);
    memest_jsonw_str(w, "replay", r->segments ? "segments" : "tensors");
    bool seg = r->segments;
    json_u64_if(w, "segments", seg, r->nsegments);
    json_u64_if(w, "predicted_context", r->have_predicted_context, r->predicted_context);
    json_u64_if(w, "predicted_reserved", seg, r->predicted_reserved);
    json_u64_if(w, "measured_reserved", seg && r->have_measured_reserved, r->measured_reserved);
    json_u64_if(w, "predicted_total", seg && r->have_predicted_context,
                memest_sat_add(r->predicted_reserved, r->predicted_context));
    json_u64_if(w, "measured_total", seg && r->have_measured_reserved && r->have_overhead,
                memest_sat_add(r->measured_reserved, r->context_overhead));
    json_u64_if(w, "predicted_reserved_at_peak", seg && r->have_measured_peak,
                r->predicted_reserved_at_peak);
    if (r->pressured) {
        memest_jsonw_obj_begin(w, "pressure");
        memest_jsonw_bool(w, "completes", r->pressure_completes);
        if (r->pressure_completes)
            memest_jsonw_null(w, "failed_event");
        else
            memest_jsonw_u64(w, "failed_event", r->pressure_failed_event);
        memest_jsonw_u64(w, "reserved", r->pressure_reserved);
        memest_jsonw_u64(w, "retries", r->pressure_retries);
        memest_jsonw_u64(w, "released", r->pressure_released);
        memest_jsonw_u64(w, "least", r->pressure_least);
        memest_jsonw_obj_end(w);
    } else {
        memest_jsonw_null(w, "pressure");
    }
    memest_jsonw_obj_end(w);
}
