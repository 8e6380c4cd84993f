/* app.h - the flows of the memest command. main() parses the options, opens
 * the app (reads the model once, builds the graph, resolves the card) and
 * runs one flow; each flow lives in its own file and returns the exit code.
 *
 *   src/app.c            opening, the target card, one estimate at a batch
 *   src/flow_single.c    one estimate: the report, --fit, --probe
 *   src/flow_sweep.c     --sweep, --sweep-var and --max-batch
 *   src/advise.c         --advise
 *
 * Sweeps reuse what does not change: a batch sweep re-runs only shape
 * inference and the calculators (memest_run_infer + memest_estimate) on the
 * graph built once; a variable sweep rebuilds the graph from the document
 * parsed once, with the variable overridden. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/calc.h"
#include "memest/cli.h"
#include "memest/fit.h"
#include "memest/gpu.h"
#include "memest/model.h"
#include "memest/roofline.h"
#include "memest/run.h"

struct memest_app {
    const struct memest_cli *o;
    struct memest_gpu_table gpus;
    struct memest_model m;
    struct memest_graph g;
    struct memest_run r;
    bool has_card;                 /* --gpu NAME or --mem (for --gpu auto: after the probe) */
    struct memest_card card;
    struct memest_step_cfg step;   /* the options' step, with the card's compute capability */
    char mem_label[64];            /* the label of a --mem card */
};

/* Loads the GPU presets and resolves --gpu NAME / --mem (an unknown name is
 * a usage error), then reads the model and builds its graph with the --set
 * overrides. Returns an exit code: MEMEST_EXIT_OK, or the error's (err set).
 * Call memest_app_close() in every case. */
int memest_app_open(struct memest_app *a, const struct memest_cli *o, struct memest_error *err);
void memest_app_close(struct memest_app *a);

/* Runs shape inference at `batch` (dtype from the options) on a->g into a->r
 * and every calculator with `step`. 0 / -1. */
int memest_app_estimate(struct memest_app *a, int64_t batch, const struct memest_step_cfg *step,
                        enum memest_dtype dtype, struct memest_estimate *e,
                        struct memest_timeline *train_tl, struct memest_error *err);

/* The time-estimate options for the card at this step configuration; false
 * when the card has no preset (no throughput figures). *prec and *fallback
 * (may be NULL) tell which peak applies. */
bool memest_app_time_opts(const struct memest_app *a, const struct memest_step_cfg *step,
                          enum memest_dtype dtype, struct memest_time_opts *t,
                          enum memest_precision *prec, bool *fallback);

/* The card section of one estimate e (run in a->r): verdict and, with a
 * preset, the time estimate; nodes (a->g.nnodes entries, or NULL) receive
 * the per-layer times. Requires a->has_card. 0, or -1 when out of memory
 * (err set). */
int memest_app_card_report(const struct memest_app *a, const struct memest_estimate *e,
                           const struct memest_step_cfg *step, enum memest_dtype dtype,
                           struct memest_card_report *c, struct memest_node_time *nodes,
                           struct memest_error *err);

/* Prints the error as main() does (stderr, and the JSON error document on
 * stdout with --json); returns its exit code. */
int memest_app_fail(const struct memest_cli *o, const struct memest_error *err);

/* The whole memest command (src/memest_main.c): options, model, one flow.
 * Returns the process exit code. */
int memest_main(int argc, char **argv);

/* The flows; each returns the process exit code. */
int memest_flow_single(struct memest_app *a);
int memest_flow_sweep(struct memest_app *a);
int memest_flow_max_batch(struct memest_app *a);
int memest_flow_advise(struct memest_app *a);
/* --list-gpus: the presets as a Markdown table. */
int memest_flow_list_gpus(void);
