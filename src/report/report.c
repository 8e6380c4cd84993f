/* report.c - the dispatchers: for each document, the one switch over the
 * output format that picks its writer. A format a document is not offered
 * in is refused by the command line (cli.c) before anything runs; its case
 * here says so and writes nothing. */
#include "memest/report.h"

void memest_render_estimate(FILE *f, enum memest_output fmt, const struct memest_report *rep)
{
    switch (fmt) {
    case MEMEST_OUTPUT_TEXT:
        memest_report_text(f, rep);
        break;
    case MEMEST_OUTPUT_JSON:
        memest_report_json(f, rep);
        break;
    case MEMEST_OUTPUT_CSV:   /* refused: --csv is for sweeps */
        break;
    }
}

void memest_render_max_batch(FILE *f, enum memest_output fmt, const struct memest_report *rep)
{
    switch (fmt) {
    case MEMEST_OUTPUT_TEXT:
        memest_max_batch_text(f, rep);
        break;
    case MEMEST_OUTPUT_JSON:
        memest_report_json(f, rep);   /* the estimate's document, "max_batch" first */
        break;
    case MEMEST_OUTPUT_CSV:   /* refused: --csv is for sweeps */
        break;
    }
}

void memest_render_compare(FILE *f, enum memest_output fmt, const struct memest_compare_report *c)
{
    switch (fmt) {
    case MEMEST_OUTPUT_TEXT:
        memest_compare_text(f, c);
        break;
    case MEMEST_OUTPUT_JSON:
        memest_compare_json(f, c);
        break;
    case MEMEST_OUTPUT_CSV:
        memest_compare_csv(f, c);
        break;
    }
}

void memest_render_sweep(FILE *f, enum memest_output fmt, const struct memest_sweep_report *s)
{
    switch (fmt) {
    case MEMEST_OUTPUT_TEXT:
        memest_sweep_text(f, s);
        break;
    case MEMEST_OUTPUT_JSON:
        memest_sweep_json(f, s);
        break;
    case MEMEST_OUTPUT_CSV:
        memest_sweep_csv(f, s);
        break;
    }
}

void memest_render_advice(FILE *f, enum memest_output fmt, const struct memest_advice *ad)
{
    switch (fmt) {
    case MEMEST_OUTPUT_TEXT:
        memest_advice_text(f, ad);
        break;
    case MEMEST_OUTPUT_JSON:
        memest_advice_json(f, ad);
        break;
    case MEMEST_OUTPUT_CSV:   /* refused: --csv is for sweeps */
        break;
    }
}

void memest_render_error(FILE *f, enum memest_output fmt, const struct memest_error *err)
{
    switch (fmt) {
    case MEMEST_OUTPUT_TEXT:
    case MEMEST_OUTPUT_CSV:   /* the message on stderr is all */
        break;
    case MEMEST_OUTPUT_JSON:
        memest_error_json(f, err);
        break;
    }
}

void memest_render_generate(FILE *f, enum memest_output fmt, const struct memest_gen_report *g)
{
    switch (fmt) {
    case MEMEST_OUTPUT_TEXT:
        memest_generate_text(f, g);
        break;
    case MEMEST_OUTPUT_JSON:
        memest_generate_json(f, g);
        break;
    case MEMEST_OUTPUT_CSV:   /* refused: --generate excludes --csv */
        break;
    }
}
