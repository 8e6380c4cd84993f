/* report_plot.c - the step's timeline as CSV (--timeline) and as a
 * standalone SVG plot of memory over the step (--plot). */
#include "memest/plot.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "memest/escape.h"
#include "memest/format.h"
#include "memest/outfile.h"

static const char *node_label(const struct memest_graph *g, uint32_t node, uint8_t phase)
{
    if (node < g->nnodes)
        return g->nodes[node].name;
    return phase == MEMEST_PH_LOSS ? "loss" : "";
}

void memest_timeline_csv(FILE *f, const struct memest_timeline *tl,
                               const struct memest_graph *g)
{
    struct memest_live live = {0}, blocks = {0};
    /* the engines' buffers have a column only in a several-GPU step */
    bool comm = false;
    for (size_t i = 0; i < tl->n && !comm; i++)
        comm = tl->ev[i].category == MEMEST_CAT_COMM;
    int ncat = comm ? MEMEST_CAT_COUNT : MEMEST_CAT_COMM;
    static_assert(MEMEST_CAT_COMM == MEMEST_CAT_COUNT - 1, "the optional column is the last");
    fputs("index,phase,node,event,allocation,category,bytes,block", f);
    for (int c = 0; c < ncat; c++)
        fprintf(f, ",%s", memest_category_name((enum memest_category)c));
    fputs(",live_tensors,allocated,reserved\n", f);
    for (size_t i = 0; i < tl->n; i++) {
        const struct memest_event *e = &tl->ev[i];
        bool a = e->kind == MEMEST_EV_ALLOC;
        uint8_t c = memest_live_apply(&live, e, MEMEST_LIVE_TENSORS);
        memest_live_apply(&blocks, e, MEMEST_LIVE_BLOCKS);
        fprintf(f, "%zu,%s,", i, memest_phase_name((enum memest_phase)e->phase));
        memest_esc_csv(f, node_label(g, e->node, e->phase));
        fprintf(f, ",%s,%" PRIu32 ",%s,%" PRIu64 ",%" PRIu64, a ? "alloc" : "free", e->id,
                memest_category_name((enum memest_category)c), e->bytes, e->block);
        for (int k = 0; k < ncat; k++)
            fprintf(f, ",%" PRIu64, live.cat[k]);
        fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", live.total, blocks.total,
                (uint64_t)e->reserved * MEMEST_TIMELINE_RESERVED_UNIT);
    }
}

/* ---- SVG ---- */

static const char *const colors[MEMEST_CAT_COUNT] = {
    [MEMEST_CAT_PARAMS] = "#4e79a7",   [MEMEST_CAT_BUFFERS] = "#a0cbe8",
    [MEMEST_CAT_GRADS] = "#f28e2b",    [MEMEST_CAT_OPTSTATE] = "#ffbe7d",
    [MEMEST_CAT_INPUTS] = "#59a14f",   [MEMEST_CAT_SAVED] = "#8cd17d",
    [MEMEST_CAT_TRANSIENT] = "#b6992d", [MEMEST_CAT_ACTGRADS] = "#e15759",
    [MEMEST_CAT_OPTTEMP] = "#ff9d9a",  [MEMEST_CAT_WORKSPACE] = "#79706e",
    [MEMEST_CAT_COMM] = "#b07aa1",
};
static_assert(MEMEST_CAT_COUNT == 11, "MEMEST_CAT_COUNT changed: add a color");

static const char *const phase_fill[MEMEST_PH_COUNT] = {
    [MEMEST_PH_SETUP] = "#f4f4f4",    [MEMEST_PH_FORWARD] = "#eaf2fb",
    [MEMEST_PH_LOSS] = "#fdf3e1",     [MEMEST_PH_BACKWARD] = "#fbecec",
    [MEMEST_PH_OPTIMIZER] = "#eef7ec", [MEMEST_PH_TEARDOWN] = "#f4f4f4",
};

enum { W = 1200, H = 620, ML = 90, MR = 250, MT = 60, MB = 70 };
enum { TITLE_CHARS = 80, NODE_CHARS = 60 };   /* longer names are cut with an ellipsis */
#define PW (W - ML - MR)
#define PH (H - MT - MB)

struct col {                 /* one pixel column: the state at its highest point */
    uint64_t cat[MEMEST_CAT_COUNT];
    uint64_t total, reserved;
    uint8_t phase;
    bool used;
};

/* Event index -> pixel column. */
struct xmap {
    size_t s_end, t_start;   /* first non-setup event, first teardown event */
    int setup_w;             /* columns for the setup */
};

static int xpos(const struct xmap *m, size_t i)
{
    if (i < m->s_end)
        return (int)(i * (size_t)m->setup_w / m->s_end);
    size_t span = m->t_start - m->s_end, w = (size_t)(PW - m->setup_w);
    size_t x = span > 1 ? (i - m->s_end) * (w - 1) / (span - 1) : 0;
    return m->setup_w + (int)(x < w ? x : w - 1);
}

/* A round tick step (1, 2 or 5 times a power of 1024 or 10) for max bytes. */
static uint64_t tick_step(uint64_t max)
{
    static const uint64_t units[] = {1, 1024, 1024 * 1024, 1024ull * 1024 * 1024,
                                     1024ull * 1024 * 1024 * 1024};
    for (size_t u = 0; u < sizeof units / sizeof *units; u++) {
        for (uint64_t m = 1; m <= 1000; m *= 10) {
            static const uint64_t k[] = {1, 2, 5};
            for (int i = 0; i < 3; i++) {
                uint64_t s = units[u] * m * k[i];
                if (s && max / s <= 8)
                    return s;
            }
        }
    }
    return max / 5 + 1;
}

/* The y scale: bytes -> pixel row. */
struct yscale {
    uint64_t step, top;      /* the ticks' step, the top of the axis */
    double per_byte;
};

static double ypos(const struct yscale *ys, uint64_t v)
{
    return (double)MT + (double)PH - (double)v * ys->per_byte;
}

/* The pixel columns of the timeline (PW of them) and the x map: the
 * setup's allocations get a narrow strip, the teardown none; *ymax the
 * highest allocated or reserved bytes (at least 1). */
static void fill_columns(const struct memest_timeline *tl, struct col *cols, struct xmap *xm,
                         uint64_t *ymax)
{
    size_t n = tl->n;
    *xm = (struct xmap){0, n, 0};
    while (xm->s_end < n && tl->ev[xm->s_end].phase == MEMEST_PH_SETUP)
        xm->s_end++;
    while (xm->t_start > xm->s_end && tl->ev[xm->t_start - 1].phase == MEMEST_PH_TEARDOWN)
        xm->t_start--;
    xm->setup_w = xm->s_end > 0 ? PW / 20 : 0;
    struct memest_live live = {0};
    *ymax = 1;
    for (size_t i = 0; i < xm->t_start; i++) {
        const struct memest_event *e = &tl->ev[i];
        memest_live_apply(&live, e, MEMEST_LIVE_BLOCKS);
        uint64_t total = live.total;
        struct col *k = &cols[xpos(xm, i)];
        uint64_t res = (uint64_t)e->reserved * MEMEST_TIMELINE_RESERVED_UNIT;
        if (!k->used || total > k->total) {
            memcpy(k->cat, live.cat, sizeof live.cat);
            k->total = total;
            k->phase = e->phase < MEMEST_PH_COUNT ? e->phase : 0;
        }
        if (res > k->reserved)
            k->reserved = res;
        k->used = true;
        if (total > *ymax)
            *ymax = total;
        if (res > *ymax)
            *ymax = res;
    }
    for (int x = 1; x < PW; x++)   /* columns no event maps to repeat their left neighbour */
        if (!cols[x].used && cols[x - 1].used) {
            cols[x] = cols[x - 1];
        }
}

/* The SVG's opening, its background and the title: the model's name and
 * what (may be NULL). */
static void svg_head(FILE *f, const struct memest_graph *g, const char *what)
{
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
               "font-size=\"12\">\n",
            W, H, W, H);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n<text x=\"%d\" y=\"28\" "
               "font-size=\"16\" font-weight=\"bold\">", W, H, ML);
    memest_esc_xml(f, g->name, TITLE_CHARS);
    if (what) {
        fputs(": ", f);
        memest_esc_xml(f, what, TITLE_CHARS);
    }
    fputs("</text>\n", f);
}

/* The phases: a band of its color for each run of columns, named where
 * there is room. */
static void svg_phases(FILE *f, const struct col *cols)
{
    int x0 = 0;
    for (int x = 1; x <= PW; x++) {
        if (x < PW && cols[x].phase == cols[x0].phase)
            continue;
        uint8_t ph = cols[x0].phase;
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", ML + x0,
                MT, x - x0, PH, phase_fill[ph]);
        if (x - x0 >= 40)
            fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">%s</text>\n",
                    ML + (x0 + x) / 2, MT - 6, memest_phase_name((enum memest_phase)ph));
        x0 = x;
    }
}

/* The grid and the y axis' labels. */
static void svg_grid(FILE *f, const struct yscale *ys)
{
    for (uint64_t v = 0; v <= ys->top; v += ys->step) {
        char b[32];
        double y = ypos(ys, v);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", ML, y,
                ML + PW, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", ML - 6, y + 4,
                memest_fmt_bytes(v, b, sizeof b));
        if (ys->step == 0)
            break;
    }
}

/* The stacked areas, bottom category first; -1 out of memory. */
static int svg_areas(FILE *f, const struct col *cols, const struct yscale *ys)
{
    uint64_t *below = calloc(PW, sizeof *below);
    if (!below)
        return -1;
    for (int c = 0; c < MEMEST_CAT_COUNT; c++) {
        bool any = false;
        for (int x = 0; x < PW && !any; x++)
            any = cols[x].cat[c] > 0;
        if (!any)
            continue;
        fprintf(f, "<polygon fill=\"%s\" stroke=\"none\" points=\"", colors[c]);
        for (int x = 0; x < PW; x++)
            fprintf(f, "%d,%.1f %d,%.1f ", ML + x, ypos(ys, below[x] + cols[x].cat[c]),
                    ML + x + 1, ypos(ys, below[x] + cols[x].cat[c]));
        for (int x = PW; x-- > 0;)
            fprintf(f, "%d,%.1f %d,%.1f ", ML + x + 1, ypos(ys, below[x]), ML + x,
                    ypos(ys, below[x]));
        fputs("\"/>\n", f);
        for (int x = 0; x < PW; x++)
            below[x] += cols[x].cat[c];
    }
    free(below);
    return 0;
}

/* The reserved bytes' dashed line, the axes and the x axis' label
 * (nevents: the events drawn). */
static void svg_reserved_axes(FILE *f, const struct col *cols, const struct yscale *ys,
                              size_t nevents)
{
    fputs("<polyline fill=\"none\" stroke=\"#333\" stroke-width=\"1.5\" stroke-dasharray=\"6,3\" "
          "points=\"", f);
    for (int x = 0; x < PW; x++)
        fprintf(f, "%d,%.1f ", ML + x, ypos(ys, cols[x].reserved));
    fputs("\"/>\n", f);

    /* axes */
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", ML, MT + PH,
            ML + PW, MT + PH);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", ML, MT, ML,
            MT + PH);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#333\">allocation events "
               "of the step (%zu; setup compressed, teardown omitted)</text>\n",
            ML + PW / 2, H - MB + 36, nevents);
}

/* The peak: a red line and dot at its event, labelled with its bytes,
 * phase and node. */
static void svg_peak(FILE *f, const struct memest_graph *g, const struct memest_peak *peak,
                     const struct xmap *xm, const struct yscale *ys)
{
    char b[32];
    double px = ML + (double)xpos(xm, peak->event);
    double py = ypos(ys, peak->bytes);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#c00\" "
               "stroke-dasharray=\"4,3\"/>\n<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
               "fill=\"#c00\"/>\n",
            px, MT, px, MT + PH, px, py);
    bool left = px > ML + PW * 0.6;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#c00\" font-weight=\"bold\" "
               "text-anchor=\"%s\">peak %s (",
            left ? px - 8 : px + 8, py < MT + 30 ? py + 16 : py - 8, left ? "end" : "start",
            memest_fmt_bytes(peak->bytes, b, sizeof b));
    fputs(memest_phase_name((enum memest_phase)peak->phase), f);
    const char *nl = node_label(g, peak->node, peak->phase);
    if (*nl && peak->node < g->nnodes) {
        fputs(", ", f);
        memest_esc_xml(f, nl, NODE_CHARS);
    }
    fputs(")</text>\n", f);
}

/* The legend: categories with their bytes at the peak (peak may be NULL),
 * the reserved line, the peaks. */
static void svg_legend(FILE *f, const struct memest_peak *peak)
{
    int ly = MT + 10;
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">at the peak</text>\n", ML + PW + 20,
            ly);
    ly += 18;
    for (int c = MEMEST_CAT_COUNT; c-- > 0;) {
        char b[32];
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>\n",
                ML + PW + 20, ly - 10, colors[c]);
        fprintf(f, "<text x=\"%d\" y=\"%d\">%s  %s</text>\n", ML + PW + 38, ly,
                memest_category_name((enum memest_category)c),
                memest_fmt_bytes(peak ? peak->at_peak[c] : 0, b, sizeof b));
        ly += 18;
    }
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\" stroke-width=\"1.5\" "
               "stroke-dasharray=\"6,3\"/>\n<text x=\"%d\" y=\"%d\">reserved (segments)</text>\n",
            ML + PW + 20, ly - 4, ML + PW + 32, ly - 4, ML + PW + 38, ly);
    if (peak) {
        char b[32], c2[32];
        ly += 26;
        fprintf(f, "<text x=\"%d\" y=\"%d\">allocated peak %s</text>\n", ML + PW + 20, ly,
                memest_fmt_bytes(peak->bytes, b, sizeof b));
        ly += 18;
        fprintf(f, "<text x=\"%d\" y=\"%d\">reserved peak %s</text>\n", ML + PW + 20, ly,
                memest_fmt_bytes(peak->reserved, c2, sizeof c2));
        ly += 18;
        fprintf(f, "<text x=\"%d\" y=\"%d\">tensor bytes peak %s</text>\n", ML + PW + 20, ly,
                memest_fmt_bytes(peak->tensor_bytes, b, sizeof b));
    }
}

int memest_plot_svg(FILE *f, const struct memest_timeline *tl, const struct memest_graph *g,
                          const struct memest_peak *peak, const char *what)
{
    struct col *cols = calloc(PW, sizeof *cols);
    if (!cols)
        return -1;
    struct xmap xm;
    uint64_t ymax;
    fill_columns(tl, cols, &xm, &ymax);
    struct yscale ys = {.step = tick_step(ymax)};
    ys.top = (ymax + ys.step - 1) / ys.step * ys.step;
    ys.per_byte = (double)PH / (double)ys.top;

    svg_head(f, g, what);
    svg_phases(f, cols);
    svg_grid(f, &ys);
    if (svg_areas(f, cols, &ys) != 0) {
        free(cols);
        return -1;
    }
    svg_reserved_axes(f, cols, &ys, xm.t_start);
    if (peak && tl->n > 0 && peak->event < xm.t_start)
        svg_peak(f, g, peak, &xm, &ys);
    svg_legend(f, peak);
    fputs("</svg>\n", f);
    free(cols);
    return 0;
}

/* ---- the --timeline and --plot files of one estimate ---- */

static int write_file(const char *path, const struct memest_timeline *tl,
                      const struct memest_graph *g, const struct memest_peak *pk, const char *what,
                      bool svg, struct memest_error *err)
{
    struct memest_outfile of;
    if (memest_outfile_open(&of, path, err) != 0)
        return -1;
    if (svg && memest_plot_svg(of.f, tl, g, pk, what) != 0) {
        memest_outfile_abort(&of);
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    }
    if (!svg)
        memest_timeline_csv(of.f, tl, g);
    return memest_outfile_commit(&of, err);
}

int memest_write_step_files(const char *timeline_path, const char *plot_path, bool inference,
                            const struct memest_run *r, const struct memest_estimate *e,
                            const struct memest_timeline *tl, struct memest_error *err)
{
    if (!timeline_path && !plot_path)
        return 0;
    const struct memest_peak *pk = inference ? &e->infer_peak : &e->train_peak;
    char what[64];
    snprintf(what, sizeof what, "%s, batch %lld",
             inference ? "no-grad forward pass" : "one training step", (long long)r->opts.batch);
    int rc = 0;
    if (timeline_path)
        rc = write_file(timeline_path, tl, r->g, pk, what, false, err);
    if (rc == 0 && plot_path)
        rc = write_file(plot_path, tl, r->g, pk, what, true, err);
    return rc;
}
