/* report.h - the text summary and the JSON document memest prints. */
#pragma once

#include <stdio.h>

#include "memest/calc.h"
#include "memest/cli.h"
#include "memest/fit.h"
#include "memest/graph.h"
#include "memest/probe.h"
#include "memest/run.h"

#define MEMEST_SCHEMA_VERSION 1

struct memest_report {
    const struct memest_cli *cli;
    const struct memest_step_cfg *step;       /* the step simulated: the options' with
                                                 the loss resolved (step.h) */
    const struct memest_graph *g;
    const struct memest_run *r;
    const struct memest_estimate *e;
    const struct memest_probe_result *probe;  /* NULL: no probe ran */
    const struct memest_card_report *card;    /* NULL: no target card */
    bool has_max_batch;                        /* --max-batch: "max_batch" first */
    int64_t max_batch, max_batch_steady;
    const struct memest_error *error;          /* the run failed after the estimate (the
                                                  probe): the "error" member, last ... */
    int error_exit;                            /* ... with the process exit code */
};

/* Sum of the element counts of a node's own (untied) parameters. */
uint64_t memest_node_params(const struct memest_run *r, uint32_t node);
/* The text report of one estimate. Strings from outside (the model's name
 * and node names, the file path, a probed device's name) are escaped as
 * escape.h says, in every text report. */
void memest_report_text(FILE *f, const struct memest_report *rep);
/* The per-layer table (--layers) of run r: name, type, output shape,
 * parameters, saved bytes, forward MACs. */
void memest_report_layers(FILE *f, const struct memest_graph *g, const struct memest_run *r);
void memest_report_json(FILE *f, const struct memest_report *rep);
/* {"schema_version": 1, "error": {"code", "message", "file", "path", "node", "line", "col"}} */
void memest_report_error_json(FILE *f, const struct memest_error *err);
