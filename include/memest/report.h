/* report.h - the report layer: every document memest prints on standard
 * output, and its files (plot.h), is written by src/report. The flows
 * (src/app) compute a document's figures and hand them to one of the
 * memest_render_* dispatchers below with the output format (output.h);
 * each dispatcher is one switch over the format (src/report/report.c).
 *
 *   report.c          the dispatchers
 *   report_text.c     one estimate as text, and the --layers table
 *   report_json.c     one estimate (and --max-batch) as JSON; the error document
 *   report_card.c     the target card's section of one estimate (text, JSON)
 *   report_fit.c      the one-line fit verdict
 *   report_probe.c    the probe's lines and "probe" member
 *   report_maxbatch.c --max-batch as text
 *   report_advise.c   --advise as text and JSON
 *   report_sweep.c    sweeps as text, CSV and JSON
 *   report_compare.c  a comparison of cards (--gpu all) as text, CSV and JSON
 *   report_plot.c     --timeline (CSV) and --plot (SVG) files
 *   report_gpus.c     --list-gpus, report_ops.c --list-ops (Markdown)
 *
 * Renderers compute nothing: every figure comes in the document, or from
 * the layer that computes it (memest_node_params, memest_calc_loss). A new
 * output format is a value in output.h, one file src/report/report_FORMAT.c
 * with its writers (declared below), one case per document in report.c,
 * and the option that picks it (cli.c). */
#pragma once

#include <stdio.h>

#include "memest/calc.h"
#include "memest/compare.h"
#include "memest/fit.h"
#include "memest/generate.h"
#include "memest/gpu.h"
#include "memest/graph.h"
#include "memest/jsonw.h"
#include "memest/lora.h"
#include "memest/output.h"
#include "memest/probe.h"
#include "memest/run.h"
#include "memest/safetensors.h"
#include "memest/step.h"
#include "memest/sweep.h"

#define MEMEST_SCHEMA_VERSION 1

/* ---- the documents ---- */

/* --max-batch: the answer, and the batch after it. */
struct memest_max_batch_result {
    struct memest_max_batch mb;   /* best (0: none fits), steady, calls */
    bool has_next;                /* batch best + 1 was evaluated (best > 0, below the limit) */
    bool next_limit;              /* ... and is beyond memest's limits */
    struct memest_fit next_fit;   /* ... otherwise its verdict */
};

/* What the command asked for that the documents show (the command line's
 * options, cli.h, as the reports need them: the reports never read the
 * command line itself). */
struct memest_report_opts {
    bool inference;          /* --inference: the no-grad forward pass */
    bool fit;                /* --fit: the one-line verdict */
    bool layers;             /* --layers: the per-layer table */
    enum memest_dtype dtype; /* --dtype */
    double headroom;         /* --headroom, percent */
    double mfu;              /* --mfu */
    const struct memest_lora_summary *lora;   /* --lora: the adapters; NULL: none */
    const struct memest_ckpt *checkpoint;     /* a folder's safetensors checkpoint, checked
                                                 against the model; NULL: none */
};

/* One pipeline stage's figures (several GPUs with --pp), for the per-rank
 * table of the reports. */
struct memest_rank_fig {
    int64_t stage;
    uint64_t params;          /* the stage's parameters (elements) */
    uint32_t layers;          /* its layers (top-level block instances) */
    int64_t chunks, per;      /* micro-batch activations in flight: chunks / per */
    uint64_t activations;     /* saved by one micro-batch */
    uint64_t inflight;        /* held for the other micro-batches in flight */
    uint64_t model_states;    /* the rank's model states */
    uint64_t peak, reserved, total_device;
    uint8_t phase;
    const char *node;         /* where the peak is, or NULL */
};

/* The line PEFT's print_trainable_parameters() prints for these counts,
 * into buf (returned). */
char *memest_lora_text(char *buf, size_t n, const struct memest_param_totals *p);

/* One estimate (the default document, --fit, --probe), or --max-batch's
 * estimate at its answer (or at batch 1 when nothing fits). */
struct memest_report {
    struct memest_report_opts opts;           /* what the command asked to see */
    const struct memest_step_cfg *step;       /* the step simulated: the options' with
                                                 the loss resolved (step.h) */
    const struct memest_graph *g;
    const struct memest_run *r;
    const struct memest_estimate *e;
    const struct memest_probe_result *probe;  /* NULL: no probe ran */
    const struct memest_card_report *card;    /* NULL: no target card */
    const struct memest_max_batch_result *max_batch;  /* --max-batch: "max_batch" first */
    const struct memest_rank_fig *figs;       /* --pp: every stage, NULL otherwise */
    int64_t nfigs, binding;
    const struct memest_error *error;          /* the run failed after the estimate (the
                                                  probe): the "error" member, last ... */
    int error_exit;                            /* ... with the process exit code */
};

/* One way to save memory of --advise, with the figures memest computed
 * with the change. */
struct memest_advice_option {
    const char *key;         /* stable name, for --json */
    char change[200];        /* what to change: flags, or the model edit */
    char note[560];
    bool computed;           /* has figures */
    int64_t batch;
    uint64_t needs;
    int64_t saves;           /* the current needs minus needs (negative: costs more) */
    bool fits;
    bool may_fit;            /* the allocated peak plus overhead fits: a monotone bound */
    bool has_time;
    double step_s, samples_per_s;
};

/* --advise: the configuration now, and the options sorted by the memory
 * saved. */
struct memest_advice {
    const char *model, *file;
    int64_t batch;
    const char *optimizer, *dtype;
    const struct memest_card *card;
    double headroom_pct, mfu;
    struct memest_fit now;          /* the verdict of the configuration as given */
    bool has_time;                  /* now_samples_per_s is known (a card preset) */
    double now_samples_per_s;
    const struct memest_advice_option *opts;
    int nopts;
    bool strategies;                /* several GPUs: the engines were weighed */
};

/* --generate (report_generate.c): the generation estimate, its verdict on
 * the card, the speed estimates and vLLM's paged cache. */
struct memest_gen_row {        /* one context of --sweep-context */
    int64_t context;
    uint64_t kv, prefill, decode, total;
    bool has_fit, fits, has_speed;
    double prefill_s, tok_s;
};
struct memest_gen_report {
    const char *model;
    bool has_max_batch, has_max_context;  /* --max-batch / --max-context: the answer
                                             (0: nothing fits), the estimate at it */
    int64_t max_batch, max_context;
    struct memest_gen_row *rows;          /* --sweep-context (e NULL) */
    size_t nrows;
    enum memest_dtype dtype;
    const struct memest_gen_estimate *e;
    const struct memest_card *card;       /* NULL: no card */
    struct memest_fit fit;
    const struct memest_gen_speed *speed; /* NULL: no preset */
    const struct memest_paged *paged;     /* NULL: no --kv-block */
    int64_t kv_block;
    double gpu_util;
    uint64_t profile_peak;                /* the profile run's allocated peak (weights in) */
};

/* ---- the dispatchers: one per document, a switch over the format ---- */

/* One estimate. Text: the summary (or with --fit only the verdict line),
 * the card section, the probe's lines; JSON: the document. */
void memest_render_estimate(FILE *f, enum memest_output fmt, const struct memest_report *rep);
/* --max-batch (rep->max_batch set). */
void memest_render_max_batch(FILE *f, enum memest_output fmt, const struct memest_report *rep);
void memest_render_sweep(FILE *f, enum memest_output fmt, const struct memest_sweep_report *s);
void memest_render_advice(FILE *f, enum memest_output fmt, const struct memest_advice *ad);
/* --gpu all, or a list of cards. */
void memest_render_compare(FILE *f, enum memest_output fmt, const struct memest_compare_report *c);
/* --generate. */
void memest_render_generate(FILE *f, enum memest_output fmt, const struct memest_gen_report *g);
/* A failed command: with JSON the error document; the text formats print
 * nothing here (the one-line message on stderr is the CLI's). */
void memest_render_error(FILE *f, enum memest_output fmt, const struct memest_error *err);

/* ---- the writers, memest_<document>_<format> ---- */

/* The text report of one estimate. Strings from outside (the model's name
 * and node names, the file path, a probed device's name) are escaped as
 * escape.h says, in every text report. */
void memest_summary_text(FILE *f, const struct memest_report *rep);
/* ", rnn kernel cudnn (reserve space estimated)" or ", rnn kernel native"
 * when the run has recurrent nodes (--rnn-kernel), else "": for the
 * reports' header lines. */
const char *memest_rnn_kernel_note(const struct memest_run *r);
/* The text document of one estimate: with --fit only the verdict line,
 * otherwise memest_summary_text and the card section; then the probe's
 * lines when a probe ran. */
void memest_report_text(FILE *f, const struct memest_report *rep);
/* The per-layer table (--layers) of the report's run: name, type, output
 * shape, parameters, saved bytes, forward MACs; then, for a training step
 * with a loss, the loss's row (name "loss") and its input and target. */
void memest_layers_text(FILE *f, const struct memest_report *rep);
/* Several GPUs (report_dist.c): the layout and the rank's model states;
 * nothing on one GPU. */
struct memest_jsonw;
void memest_dist_text(FILE *f, const struct memest_report *rep);
void memest_dist_json(struct memest_jsonw *w, const struct memest_report *rep);
void memest_report_json(FILE *f, const struct memest_report *rep);
/* {"schema_version": 1, "error": {"code", "message", "file", "path", "node", "line", "col"}} */
void memest_error_json(FILE *f, const struct memest_error *err);
/* --max-batch as text: the answer, the verdicts around it, the time. */
void memest_max_batch_text(FILE *f, const struct memest_report *rep);

/* report_advise.c */
void memest_advice_text(FILE *f, const struct memest_advice *ad);
void memest_advice_json(FILE *f, const struct memest_advice *ad);

/* report_sweep.c */
void memest_sweep_text(FILE *f, const struct memest_sweep_report *s);
/* Header row, then one line per value. Sizes in bytes, times in seconds,
 * fields that do not apply are empty. */
void memest_sweep_csv(FILE *f, const struct memest_sweep_report *s);
void memest_sweep_json(FILE *f, const struct memest_sweep_report *s);

/* report_compare.c */
void memest_compare_text(FILE *f, const struct memest_compare_report *c);
/* Header row, then one line per card, in the report's order. */
void memest_compare_csv(FILE *f, const struct memest_compare_report *c);
void memest_compare_json(FILE *f, const struct memest_compare_report *c);

/* report_fit.c */
/* The one-line verdict, without a newline:
 *   "fits: 31.2 GiB of 40.0 GiB (78%), headroom 8.8 GiB"
 *   "does not fit: needs 52.1 GiB, card has 40.0 GiB"
 *   "does not fit: needs 39.0 GiB, card has 40.0 GiB (38.0 GiB with 5% headroom)"
 * Each size in its own IEC unit with one decimal (more, up to four, when a
 * step that does not fit would otherwise print the two figures compared
 * alike). The headroom is what stays free on the card. Returns buf. */
char *memest_fit_text(const struct memest_fit *f, char *buf, size_t n);

/* report_card.c */
/* The members "card", "fit" and "time" of the --json
 * document, in this order ("time" null without a preset). */
void memest_card_json(struct memest_jsonw *w, const struct memest_card_report *c);
/* The text section: the card, the verdict line, the time estimate and the
 * slowest memory-bound layers. */
void memest_card_text(FILE *f, const struct memest_card_report *c,
                            const struct memest_graph *g, int64_t batch);
/* "card": {"name", "label", "source", "memory", "memory_exact", "arch"} only. */
void memest_card_id_json(struct memest_jsonw *w, const struct memest_card *card);
/* The members of one time estimate ("forward_seconds", ... see doc/cards-and-fit.md),
 * written into the object being written. */
void memest_time_json(struct memest_jsonw *w, const struct memest_time *t);
/* "31.1 ms", "1.24 s", "850 us". Returns buf. */
char *memest_fmt_seconds(double s, char *buf, size_t n);

/* report_probe.c */
/* Human report, several lines each starting "probe: ", sizes in IEC units
 * ("39.4 GiB"). Prints only what was measured. */
void memest_probe_text(FILE *f, const struct memest_probe_result *r);

/* Writes the member "probe": {"device", "total", "free_before",
 * "context_overhead", "predicted_peak", "measured_peak", "fits", "failed_at",
 * "device_index", "free_after_context", "free_at_peak", "peak_event"} into
 * the object being written. Bytes are integers; unmeasured figures, and
 * "fits" without a verdict, are null. "failed_at" is null or {"event",
 * "phase", "node" (null if unknown), "bytes", "live"}. */
void memest_probe_json(struct memest_jsonw *w, const struct memest_probe_result *r);

/* report_generate.c: --generate's document (and --sweep-context's table
 * when g->e is NULL), as text and as JSON. */
void memest_generate_text(FILE *f, const struct memest_gen_report *g);
void memest_generate_json(FILE *f, const struct memest_gen_report *g);

/* report_gpus.c: `memest --list-gpus`, a Markdown table (doc/cards-and-fit.md includes it). */
void memest_gpus_markdown(FILE *f, const struct memest_gpu_table *t);
/* report_ops.c: `memest --list-ops`, the op table as Markdown. */
void memest_ops_markdown(FILE *f);
