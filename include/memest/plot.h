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
 * reserved bytes. Returns 0, or -1 when writing fails. */
int memest_timeline_write_csv(FILE *f, const struct memest_timeline *tl,
                              const struct memest_graph *g);

/* A standalone SVG: allocated memory over the step's events, stacked by
 * category, the reserved memory as a line, phases shaded and labelled, the
 * peak marked with its figure, phase and node. `title` heads the picture.
 * Returns 0, or -1 when writing fails. */
int memest_plot_write_svg(FILE *f, const struct memest_timeline *tl, const struct memest_graph *g,
                          const struct memest_peak *peak, const char *title);

/* Writes the files --timeline (CSV) and --plot (SVG) name (either may be
 * NULL) for one estimate: the training step's timeline train_tl, or with
 * `inference` the no-grad forward pass's (rebuilt here). 0, or -1 with err
 * (MEMEST_ERR_IO naming the file). */
int memest_write_step_files(const char *timeline_path, const char *plot_path, bool inference,
                            const struct memest_run *r, const struct memest_step_cfg *cfg,
                            const struct memest_estimate *e, const struct memest_timeline *train_tl,
                            struct memest_error *err);
