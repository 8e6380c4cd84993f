/* progress.h - the progress of long work (sweeps, --max-batch, --advise,
 * card comparisons) on standard error, when standard error is a terminal,
 * and never otherwise: one line, "memest: --sweep: 1200/4096 batches",
 * rewritten in place at most ten times a second and erased when the work
 * ends, so that a terminal keeps only the report. No colour. Updates may
 * come from several threads: one that finds another writing skips its
 * line. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct memest_progress {
    bool on;               /* standard error is a terminal */
    bool shown;            /* a line is on the terminal */
    const char *what;      /* "--sweep"; NULL once ended */
    const char *unit;      /* "batches" */
    uint64_t total;        /* 0: unknown (a count only) */
    int64_t last_ns;       /* when the last line was written */
    int width;             /* of the last line, to erase it */
    pthread_mutex_t lock;
};

/* Starts the progress of `what` over `total` units named `unit` (total 0:
 * unknown). Writes nothing yet. */
void memest_progress_begin(struct memest_progress *p, const char *what, const char *unit,
                           uint64_t total);
/* `done` units are done; note (may be NULL) ends the line ("a100-80gb").
 * Writes the line if a tenth of a second has passed since the last one
 * (the first is written at once). */
void memest_progress_update(struct memest_progress *p, uint64_t done, const char *note);
/* Erases the line; the progress can begin again. Ending it again does
 * nothing. */
void memest_progress_end(struct memest_progress *p);
