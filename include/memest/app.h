/* app.h - the flows of the memest command. main() parses the options, opens
 * the app (reads the model once, builds the graph, resolves the card) and
 * runs one flow; each flow lives in its own file and returns the exit code.
 * A flow computes its document's figures and hands them, with the output
 * format the options chose, to the report layer (report.h), which prints
 * everything on standard output; a flow itself writes only messages on
 * standard error.
 *
 *   src/app/app.c            opening, the target card, the card section
 *   src/app/app_estimate.c   one estimate of one graph, its run options, its cost
 *   src/app/app_stages.c     the model's estimate: the whole graph, or its --pp stages
 *   src/app/flow_single.c    one estimate: the report, --fit, --probe
 *   src/app/flow_sweep.c     --sweep, --sweep-var and --max-batch
 *   src/app/advise.c         --advise
 *   src/app/flow_compare.c   --gpu all or a list: the cards compared
 *   src/app/flow_generate.c  --generate (its --max-batch, --max-context, --sweep-context)
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
#include "memest/ds_config.h"
#include "memest/fsdp_config.h"
#include "memest/fit.h"
#include "memest/gpu.h"
#include "memest/model.h"
#include "memest/outfile.h"
#include "memest/report.h"
#include "memest/roofline.h"
#include "memest/run.h"

/* One estimate's state (memest_app_estimate_model): the graph and run the
 * last estimate left for the report, the whole model's run, and with --pp
 * each stage's run and the figures of every stage, the binding one's in g
 * and r. */
struct memest_app_est {
    struct memest_graph *g;        /* the graph estimated last: the model's (the app's
                                      g), or with --pp the binding stage's */
    struct memest_run *r;          /* its run: run, or one of stage_runs */
    struct memest_run run;         /* the whole model's */
    struct memest_run *stage_runs; /* --pp: each stage's (nstages) */
    int64_t binding;               /* --pp: the stage with the largest device total */
    struct memest_rank_fig *figs;  /* --pp: the last estimate's figures per stage */
    unsigned sims;                 /* the simulations it runs (calc.h: enum
                                      memest_sims; 0: both) */
};

/* What the whole command shares: its options, the presets and the card, the
 * model read once and its graph (and stages) built once, the settled step
 * and layout, the work budget; and the state of its estimate (est). */
struct memest_app {
    const struct memest_cli *o;
    struct memest_gpu_table gpus;
    struct memest_model m;
    struct memest_graph g;         /* the model's graph (a --sweep-var rebuilds it) */
    int64_t batch;                 /* --batch, else a --deepspeed config's micro-batch
                                      (settled by memest_app_dist; the options stay
                                      as parsed) */
    bool has_card;                 /* --gpu NAME or --mem (for --gpu auto: after the probe) */
    struct memest_card card;
    struct memest_step_cfg step;   /* the options' step, with the card's compute capability */
    enum memest_dtype dtype;       /* --dtype; else a config's torch_dtype (without --amp); else fp32 */
    struct memest_lora_summary lora;   /* --lora: what the LoRA pass did */
    char mem_label[64];            /* the label of a --mem card */
    /* the command's work (cost.h), charged by memest_app_estimate and the
     * flows: spent so far, the budget (MEMEST_MAX_WORK), the costliest
     * estimate so far, the estimates run, and the option named in a
     * message when the budget runs out ("--max-batch") */
    uint64_t work, max_work, top_cost;
    uint32_t estimates;
    const char *flow;
    bool over_budget;              /* a charge was refused: the command must stop */
    /* several GPUs (app_dist.c): the layout (the options over a --deepspeed
     * config), what the config said, and the rank the step simulates */
    struct memest_dist_cfg dist;
    struct memest_ds_settings ds;
    struct memest_fsdp_settings fsdp;
    struct memest_rank_view view;
    /* pipeline stages (--pp): each stage's graph (pipeline.h) */
    struct memest_graph *stages;
    int64_t nstages;
    struct memest_app_est est;
};

/* The allocator's settings into a->step.alloc: --alloc-conf, else the
 * environment's PYTORCH_CUDA_ALLOC_CONF. 0 / -1 (a usage error). */
int memest_app_alloc_conf(struct memest_app *a, struct memest_error *err);
/* a->step's card for the verdict's replay (step.h: card_usable): the card's
 * memory less the headroom and --used, or none without a card; and the
 * least memory searched (step.least), which a search's flow turns off for
 * its points. Call it whenever the card changes. */
void memest_app_card_usable(struct memest_app *a);

/* Several GPUs (app_dist.c): reads --deepspeed's config, settles the
 * layout, the step's rank (a->step.rank) and the batch (a->batch, from the
 * config's micro-batch without --batch); nothing without the options.
 * 0 / -1. */
int memest_app_dist(struct memest_app *a, struct memest_error *err);
/* The run options given by name (cli.h: run_named) that no op of r's graph
 * applied (run.h: memest_run.used) are refused, as usage errors: they would
 * change nothing. The whole model's run (a pipeline stage's may lack an
 * op another stage has). 0 / -1. */
int memest_app_options_used(const struct memest_app *a, const struct memest_run *r,
                            struct memest_error *err);
/* --pp: cuts the graph (after the graph passes) into its stages. 0 / -1. */
int memest_app_stages(struct memest_app *a, struct memest_error *err);
void memest_app_stages_free(struct memest_app *a);
/* --pp with --timeline or --plot: every stage's files beside the binding
 * one's, "-stage<s>" before the extension; leaves the binding stage's
 * estimate in e, a->est.g and a->est.r. 0 / -1. */
int memest_app_stage_files(struct memest_app *a, int64_t batch, const struct memest_step_cfg *step,
                           enum memest_dtype dtype, struct memest_estimate *e,
                           struct memest_error *err);
/* Every file the command writes (outfile.h): --plot and --timeline as
 * named, then with nstages > 1 (--pp) each stage's beside them, as
 * memest_app_stage_files names them; for memest_outfile_check_paths.
 * 0, or -1 when out of memory (err set). */
struct memest_app_outputs {
    struct memest_outpath *v;
    size_t n;
};
int memest_app_output_paths(const struct memest_cli *o, int64_t nstages,
                            struct memest_app_outputs *out, struct memest_error *err);
void memest_app_output_paths_free(struct memest_app_outputs *p);
/* The model's estimate at `batch` (memest_app_estimate's contract), left in
 * e, a->est.g and a->est.r: of its graph a->g into a->est.run; with --pp of
 * every pipeline stage, each with the activations of the micro-batches it
 * holds in flight, the binding stage's (the largest device total) in e,
 * a->est.g and a->est.r with its timelines, a->est.figs with them all
 * (src/app/app_stages.c). */
int memest_app_estimate_model(struct memest_app *a, int64_t batch,
                              const struct memest_step_cfg *step, enum memest_dtype dtype,
                              struct memest_estimate *e, struct memest_timeline *train_tl,
                              struct memest_timeline *infer_tl, struct memest_error *err);

/* Loads the GPU presets and resolves --gpu NAME / --mem (an unknown name is
 * a usage error), then reads the model and builds its graph with the --set
 * overrides. Returns an exit code: MEMEST_EXIT_OK, or the error's (err set).
 * Call memest_app_close() in every case. */
int memest_app_open(struct memest_app *a, const struct memest_cli *o, struct memest_error *err);
void memest_app_close(struct memest_app *a);
/* The graph passes after a graph of the model is built (a->g by
 * memest_app_open, a --sweep-var rebuild, --generate's graphs at other
 * sequence lengths): the quantisation pass (quantize.h: the config's
 * quantization_config under --weights, --group-size, --double-quant,
 * --kbit-prep), then LoRA (lora.h); after a->dtype is set. 0, or -1 with err set. */
int memest_app_graph_passes(struct memest_app *a, struct memest_graph *g, struct memest_error *err);

/* The run options of one estimate at `batch` with `step` and `dtype`: the
 * options' (--attention, --fused, ...; --inference without the fused loss)
 * under the step's autocast (--amp), made before its first shape inference,
 * which is then its only one. */
struct memest_run_opts memest_app_run_opts(const struct memest_app *a, int64_t batch,
                                           const struct memest_step_cfg *step,
                                           enum memest_dtype dtype);

/* One estimate of one graph (src/app/app_estimate.c). */
/* memest_app_estimate's first half on run r, leaving a as it is (so that
 * threads of a sweep can run it on runs of their own): shape inference at
 * `batch` on g (the model's a->g, whose run must use every run option
 * named, or a pipeline stage's) and the estimate's cost into *c. -1 with
 * err set on a refusal, *c then what it cost (the records). */
int memest_app_prepare(const struct memest_app *a, const struct memest_graph *g,
                       struct memest_run *r, int64_t batch, const struct memest_step_cfg *step,
                       enum memest_dtype dtype, struct memest_cost *c, struct memest_error *err);

/* Runs shape inference at `batch` on g into r (one inference, under the
 * step's autocast: memest_app_run_opts) and every calculator with `step`,
 * after charging the estimate's cost to the command's work
 * (memest_app_charge: a usage error when the budget would run out, before
 * anything is simulated; an estimate that fails is charged what it did).
 * The step's timelines go to train_tl and infer_tl (may be NULL), as
 * memest_estimate says. 0 / -1. */
int memest_app_estimate(struct memest_app *a, const struct memest_graph *g, struct memest_run *r,
                        int64_t batch, const struct memest_step_cfg *step,
                        enum memest_dtype dtype, struct memest_estimate *e,
                        struct memest_timeline *train_tl, struct memest_timeline *infer_tl,
                        struct memest_error *err);

/* The command's work budget (src/app/app_budget.c, cost.h). */
/* Adds `units` to the work; a usage error (exit 2) naming a->flow, the
 * budget and what was spent, when that passes a->max_work. 0 / -1. */
int memest_app_charge(struct memest_app *a, uint64_t units, struct memest_error *err);
/* What one estimate at `batch` with `step` would cost, without simulating
 * anything (shape inference and the count, on a->est.g into a->est.r,
 * src/app/app_estimate.c): *units. A batch or
 * model beyond memest's limits (a row that says so) counts what its
 * refusal costs: the records shape inference made. 0, or -1 with err set
 * on another error. */
int memest_app_cost(struct memest_app *a, int64_t batch, const struct memest_step_cfg *step,
                    enum memest_dtype dtype, uint64_t *units, struct memest_error *err);
/* How many more estimates as costly as the costliest so far the budget
 * allows (0 when none has run). */
int64_t memest_app_affordable(const struct memest_app *a);

/* Shape inference or an estimate of a->g failed: the graph's values passed
 * the builder's checks, so the fault is in the model as the --set and
 * --sweep-var overrides made it: a model error, whose message gets
 * " (the model with --set ...)" when there were overrides. Returns -1. */
int memest_app_overrides_note(const struct memest_app *a, struct memest_error *err);

/* The options the documents show (report.h), from the command line. */
struct memest_report_opts memest_app_report_opts(const struct memest_app *a);

/* The time-estimate options for the card at this step configuration; false
 * when the card has no preset (no throughput figures). *prec and *fallback
 * (may be NULL) tell which peak applies. */
bool memest_app_time_opts(const struct memest_app *a, const struct memest_step_cfg *step,
                          enum memest_dtype dtype, struct memest_time_opts *t,
                          enum memest_precision *prec, bool *fallback);

/* The card section of one estimate e (run in a->est.r): verdict and, with a
 * preset, the time estimate; nodes (a->est.g->nnodes entries, or NULL) receive
 * the per-layer times. Requires a->has_card. 0, or -1 when out of memory
 * (err set). */
int memest_app_card_report(const struct memest_app *a, const struct memest_estimate *e,
                           const struct memest_step_cfg *step, enum memest_dtype dtype,
                           struct memest_card_report *c, struct memest_node_time *nodes,
                           struct memest_error *err);

/* Prints the error: one line on stderr (and a hint for usage errors), and
 * the JSON error document on stdout with --json (o may be NULL: none);
 * returns its exit code. */
int memest_app_fail(const struct memest_cli *o, const struct memest_error *err);

/* The whole memest command (src/app/memest_main.c): options, model, one flow,
 * then standard output flushed and checked. Returns the process exit code.
 * SIGXFSZ is ignored from then on (a file-size limit fails a write with
 * EFBIG), and a closed standard output or error is held open on /dev/null,
 * read-only, so that writing to it still fails. */
int memest_main(int argc, char **argv);

/* Standard output could not be written (errnum: errno, or -1 when the
 * system gave no reason): says so on stderr, once per command, and returns
 * the exit code: MEMEST_EXIT_OUTPUT in place of a result (0 or 1), rc when
 * it is already a failure (2 to 5), whose message came first. */
int memest_stdout_failed(int rc, int errnum);

/* One row of figures at `batch` on the current graph and card (sweep.h):
 * the estimate of the step (or of the no-grad pass with --inference) only,
 * the fit with a card, the time with a preset. A batch beyond memest's
 * limits gives a row marked `limit` that does not fit; any other error is
 * returned (-1, err set). (src/app/flow_sweep.c) */
struct memest_sweep_row;
int memest_app_row(struct memest_app *a, int64_t batch, struct memest_sweep_row *row,
                   struct memest_error *err);
/* memest_app_row for a verdict only: the replay on the card, without the
 * least memory's search (row->least 0). */
int memest_app_row_verdict(struct memest_app *a, int64_t batch, struct memest_sweep_row *row,
                           struct memest_error *err);
/* The fit check of a step whose least device memory (0: not searched) and
 * unconstrained total are given, on the current card ... */
void memest_app_fit_from(const struct memest_app *a, uint64_t least, uint64_t total,
                         bool least_exact, struct memest_fit *f);
/* ... and the verdict on a row's estimate (its replay on the card:
 * row->fits) as memest_fit_judge gives it for an estimate. */
void memest_app_row_fit(const struct memest_app *a, const struct memest_sweep_row *row,
                        struct memest_fit *f);

/* The flows; each returns the process exit code. */
int memest_flow_single(struct memest_app *a);
int memest_flow_sweep(struct memest_app *a);
int memest_flow_max_batch(struct memest_app *a);
int memest_flow_advise(struct memest_app *a);
/* --gpu all or a list of cards (src/app/flow_compare.c). */
int memest_flow_compare(struct memest_app *a);
/* --generate (src/app/flow_generate.c). */
int memest_flow_generate(struct memest_app *a);
/* --list-gpus: the presets as a Markdown table. */
int memest_flow_list_gpus(const struct memest_cli *o);
/* The GPU presets: the built-in ones, then the user's presets file
 * (memest_gpu_table_add): --gpus-file FILE, else the per-user file
 * (memest_app_user_gpus_path) when it exists. 0 / -1 (err set; t empty). */
int memest_app_presets(const struct memest_cli *o, struct memest_gpu_table *t,
                       struct memest_error *err);
/* The per-user presets file, $XDG_CONFIG_HOME/memest/gpus.json (an absolute
 * XDG_CONFIG_HOME), else $HOME/.config/memest/gpus.json, into buf; NULL when
 * neither variable gives one (or it does not fit). */
const char *memest_app_user_gpus_path(char *buf, size_t n);
