/* built.h - for unit tests of the model builder: a model built from a JSON
 * string with --set overrides, its shapes inferred and its parameters
 * counted. Include in one test file. */
#pragma once

#include <stdio.h>
#include <string.h>

#include "memest/calc.h"
#include "memest/model.h"
#include "memest/run.h"

struct built {
    struct memest_model m;
    struct memest_graph g;
    struct memest_run r;
    struct memest_param_totals p;
    struct memest_error err;
    int rc;      /* 0, or -1 when a step failed (err says why; also on stderr) */
};

/* Reads json, builds it with the overrides and a node limit (0: the
 * default), infers shapes at batch and counts the parameters. Free with
 * drop(). */
static inline void build_limited(struct built *b, const char *json,
                                 const struct memest_override *ov, int nov, int64_t batch,
                                 uint32_t max_nodes)
{
    memset(b, 0, sizeof *b);
    struct memest_run_opts o = {.batch = batch, .dtype = MEMEST_F32};
    b->rc = memest_model_read_string(json, strlen(json), "test.json", &b->m, &b->err);
    b->m.max_nodes = max_nodes;
    if (b->rc == 0)
        b->rc = memest_model_build(&b->m, ov, nov, &b->g, &b->err);
    if (b->rc == 0)
        b->rc = memest_run_infer(&b->r, &b->g, &o, &b->err);
    if (b->rc == 0)
        b->rc = memest_calc_params(&b->r, &b->p, &b->err);
    if (b->rc != 0) {
        char msg[1200];
        memest_error_format(&b->err, msg, sizeof msg);
        fprintf(stderr, "(error) %s\n", msg);
    }
}

static inline void build(struct built *b, const char *json, const struct memest_override *ov,
                         int nov, int64_t batch)
{
    build_limited(b, json, ov, nov, batch, 0);
}

static inline void drop(struct built *b)
{
    memest_run_free(&b->r);
    memest_graph_free(&b->g);
    memest_model_free(&b->m);
}
