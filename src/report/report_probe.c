/* report_probe.c - what the CUDA probe measured (probe.h): the "probe:"
 * lines of the text report and the "probe" member of the --json document. */
#include <inttypes.h>
#include <stdio.h>

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

void memest_probe_print_text(FILE *f, const struct memest_probe_result *r)
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
    if (r->have_overhead)
        fprintf(f, "probe:   free before memest: %s; CUDA context: %s; free after it: %s\n",
                memest_fmt_iec(r->free_before, 1, a, sizeof a),
                memest_fmt_iec(r->context_overhead, 1, b, sizeof b),
                memest_fmt_iec(r->free_after_ctx, 1, c, sizeof c));
    else if (r->have_context)
        fprintf(f, "probe:   free after memest's CUDA context: %s (context size not measured)\n",
                memest_fmt_iec(r->free_after_ctx, 1, a, sizeof a));
    fprintf(f, "probe:   predicted peak: %s", memest_fmt_iec(r->predicted_peak, 1, a, sizeof a));
    if (r->predicted_peak > 0) {
        fputs(" at ", f);
        print_where(f, r->peak_event, r->peak_phase, r->peak_node);
    }
    fputc('\n', f);
    if (r->have_measured_peak) {
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
        fprintf(f, "probe: %s at ", r->verdict ? "does not fit: out of memory" : "driver error");
        print_where(f, x->event, x->phase, x->node_name);
        fprintf(f, " allocating %s with %s live\n", memest_fmt_iec(x->bytes, 1, a, sizeof a),
                memest_fmt_iec(x->live, 1, b, sizeof b));
    } else if (r->verdict && r->fits) {
        fprintf(f, "probe: fits: the whole step was allocated on this device\n");
    } else {
        fprintf(f, "probe: no verdict\n");
    }
}

static void json_u64_if(struct memest_jsonw *w, const char *key, bool have, uint64_t v)
{
    if (have)
        memest_jsonw_u64(w, key, v);
    else
        memest_jsonw_null(w, key);
}

void memest_probe_write_json(struct memest_jsonw *w, const struct memest_probe_result *r)
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
    memest_jsonw_obj_end(w);
}
