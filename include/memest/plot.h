/* plot.h - the step's allocation timeline as a CSV file (--timeline) and as
 * a standalone SVG picture of memory over the step (--plot). */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "memest/calc.h"
#include "memest/error.h"
#include "memest/graph.h"
#include "memest/run.h"
#include "memest/timeline.h"

/* One row per event: index, phase, node, event (alloc/free), category,
 * bytes (exact), block (allocator block), then the live exact bytes of each
 * category after the event, their total, and the allocator's allocated and
 * reserved bytes. Node names are CSV fields escaped as escape.h says. Write
 * errors are left in the stream's error indicator (outfile.h checks it). */
void memest_timeline_csv(FILE *f, const struct memest_timeline *tl,
                               const struct memest_graph *g);

/* A standalone SVG: allocated memory over the step's events, stacked by
 * category, the reserved memory as a line, phases shaded and labelled, the
 * peak marked with its figure, phase and node. The title is the model's
 * name, then ": " and `what` (may be NULL); names are escaped for XML and
 * long ones cut (escape.h). Returns 0, or -1 when out of memory; write
 * errors are left in the stream's error indicator. */
int memest_plot_svg(FILE *f, const struct memest_timeline *tl, const struct memest_graph *g,
                          const struct memest_peak *peak, const char *what);

/* Writes the files --timeline (CSV) and --plot (SVG) name (either may be
 * NULL) for one estimate e of run r: tl is the timeline of the step
 * reported, the training step's, or with `inference` the no-grad forward
 * pass's (memest_estimate returns both). Each file is written whole or not
 * at all (outfile.h). 0, or -1 with err (MEMEST_ERR_OUTPUT naming the file
 * and the system's reason, or MEMEST_ERR_NOMEM). */
int memest_write_step_files(const char *timeline_path, const char *plot_path, bool inference,
                            const struct memest_run *r, const struct memest_estimate *e,
                            const struct memest_timeline *tl, struct memest_error *err);
