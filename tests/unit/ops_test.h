/* ops_test.h - helpers for the op-family unit tests (test_ops_*.c): build a
 * graph from a JSON string, run shape inference for a batch size, and read
 * back one node's outputs, parameters, buffers, saved tensors and MACs.
 *
 * JSON is written with single quotes inside C strings ('x' for "x"); they
 * are turned into double quotes before parsing. Include after check.h, in
 * one test file. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memest/error.h"
#include "memest/graph.h"
#include "memest/model.h"
#include "memest/run.h"
#include "memest/shape.h"

struct t_model {
    struct memest_model m;
    struct memest_graph g;
    struct memest_run r;
    struct memest_error err;
    bool model_ok, graph_ok;
    char msg[1200];
};

static inline void t_free(struct t_model *t)
{
    memest_run_free(&t->r);
    if (t->graph_ok)
        memest_graph_free(&t->g);
    if (t->model_ok)
        memest_model_free(&t->m);
    t->model_ok = t->graph_ok = false;
}

/* Builds and infers `json` (single-quoted) with the run options `o`
 * (batch size, dtype, autocast, the LLM options). 0, or -1 with the
 * formatted error in t->msg. */
static inline int t_load_opts(struct t_model *t, const char *json,
                              const struct memest_run_opts *o)
{
    memset(t, 0, sizeof *t);
    size_t n = strlen(json);
    char *text = malloc(n + 1);
    if (!text)
        return -1;
    for (size_t i = 0; i <= n; i++)
        text[i] = json[i] == '\'' ? '"' : json[i];
    int rc = memest_model_read_string(text, n, "test.json", &t->m, &t->err);
    free(text);
    if (rc == 0) {
        t->model_ok = true;
        rc = memest_model_build(&t->m, NULL, 0, &t->g, &t->err);
    }
    if (rc == 0) {
        t->graph_ok = true;
        rc = memest_run_infer(&t->r, &t->g, o, &t->err);
    }
    if (rc != 0)
        memest_error_format(&t->err, t->msg, sizeof t->msg);
    return rc;
}

/* The same with only the batch size and dtype. */
static inline int t_load_dt(struct t_model *t, const char *json, int64_t batch,
                            enum memest_dtype dt)
{
    struct memest_run_opts o = {.batch = batch, .dtype = dt};
    return t_load_opts(t, json, &o);
}

static inline int t_load(struct t_model *t, const char *json, int64_t batch)
{
    return t_load_dt(t, json, batch, MEMEST_F32);
}

/* Loads a model that must fail; returns its message (valid until t_free). */
static inline const char *t_error(struct t_model *t, const char *json, int64_t batch)
{
    if (t_load(t, json, batch) == 0)
        snprintf(t->msg, sizeof t->msg, "(no error)");
    return t->msg;
}

static inline uint32_t t_node(const struct t_model *t, const char *name)
{
    int64_t id = memest_graph_find(&t->g, name);
    if (id < 0) {
        fprintf(stderr, "no node \"%s\"\n", name);
        abort();
    }
    return (uint32_t)id;
}

static inline const struct memest_nodeinfo *t_info(const struct t_model *t, const char *name)
{
    return &t->r.nodes[t_node(t, name)];
}

static inline uint32_t t_nout(const struct t_model *t, const char *name)
{
    return t_info(t, name)->nout;
}

static inline const struct memest_value *t_out(const struct t_model *t, const char *name,
                                               uint32_t k)
{
    const struct memest_nodeinfo *ni = t_info(t, name);
    if (k >= ni->nout) {
        fprintf(stderr, "node \"%s\" has no output %u\n", name, k);
        abort();
    }
    return &t->r.values[ni->out_first + k];
}

/* Output k's sizes as "[2, 3]" (a rotating static buffer, 8 deep). */
static inline const char *t_shape(const struct t_model *t, const char *name, uint32_t k)
{
    static char bufs[8][160];
    static int next;
    char *b = bufs[next++ % 8];
    return memest_shape_str(&t_out(t, name, k)->shape, b, 160);
}

/* Output k's strides as "[12, 4, 1]". */
static inline const char *t_strides(const struct t_model *t, const char *name, uint32_t k)
{
    static char bufs[4][160];
    static int next;
    char *b = bufs[next++ % 4];
    const struct memest_shape *s = &t_out(t, name, k)->shape;
    size_t used = (size_t)snprintf(b, 160, "[");
    for (int d = 0; d < s->ndim; d++)
        used += (size_t)snprintf(b + used, 160 - used, "%s%lld", d ? ", " : "",
                                 (long long)s->stride[d]);
    snprintf(b + used, 160 - used, "]");
    return b;
}

/* The storage of output k of node `name`. */
static inline uint32_t t_storage(const struct t_model *t, const char *name, uint32_t k)
{
    return t_out(t, name, k)->storage;
}

/* Bytes of the non-parameter, non-buffer storages the node saves. */
static inline uint64_t t_saved(const struct t_model *t, const char *name)
{
    const struct memest_nodeinfo *ni = t_info(t, name);
    uint64_t sum = 0;
    for (uint32_t i = ni->save_first; i < ni->save_first + ni->nsave; i++) {
        const struct memest_storage *st = &t->r.storages[t->r.saves[i]];
        if (st->kind != MEMEST_ST_PARAM && st->kind != MEMEST_ST_BUFFER)
            sum += st->bytes;
    }
    return sum;
}

/* Number of distinct storages (of any kind) the node saves. */
static inline uint32_t t_nsaved(const struct t_model *t, const char *name)
{
    return t_info(t, name)->nsave;
}

/* True when the node saves storage `st`. */
static inline bool t_saves_storage(const struct t_model *t, const char *name, uint32_t st)
{
    const struct memest_nodeinfo *ni = t_info(t, name);
    for (uint32_t i = ni->save_first; i < ni->save_first + ni->nsave; i++)
        if (t->r.saves[i] == st)
            return true;
    return false;
}

/* Element count of the node's parameter `pname` (0 when absent). */
static inline uint64_t t_param(const struct t_model *t, const char *name, const char *pname)
{
    const struct memest_nodeinfo *ni = t_info(t, name);
    for (uint32_t p = ni->param_first; p < ni->param_first + ni->nparam; p++)
        if (strcmp(t->r.params[p].name, pname) == 0)
            return t->r.params[p].numel;
    return 0;
}

static inline uint64_t t_params_total(const struct t_model *t, const char *name)
{
    const struct memest_nodeinfo *ni = t_info(t, name);
    uint64_t sum = 0;
    for (uint32_t p = ni->param_first; p < ni->param_first + ni->nparam; p++)
        sum += t->r.params[p].numel;
    return sum;
}

/* Element count of the node's buffer `bname` (0 when absent). */
static inline uint64_t t_buffer(const struct t_model *t, const char *name, const char *bname)
{
    const struct memest_nodeinfo *ni = t_info(t, name);
    for (uint32_t b = ni->buffer_first; b < ni->buffer_first + ni->nbuffer; b++)
        if (strcmp(t->r.buffers[b].name, bname) == 0)
            return t->r.buffers[b].numel;
    return 0;
}

static inline double t_fwd(const struct t_model *t, const char *name)
{
    return t_info(t, name)->fwd_macs;
}

static inline double t_bwd(const struct t_model *t, const char *name)
{
    return t_info(t, name)->bwd_macs;
}

/* LOAD with full run options: LOAD_OPTS(&t, json, .batch = 2, .dtype =
 * MEMEST_F32, .torch = 113, ...). */
#define LOAD_OPTS(t, json, ...)                                                                 \
    do {                                                                                        \
        struct memest_run_opts load_o_ = {__VA_ARGS__};                                         \
        int load_rc_ = t_load_opts((t), (json), &load_o_);                                      \
        if (load_rc_ != 0)                                                                      \
            fprintf(stderr, "%s:%d: load failed: %s\n", __FILE__, __LINE__, (t)->msg);          \
        CHECK(load_rc_ == 0);                                                                   \
        if (load_rc_ != 0) {                                                                    \
            t_free(t);                                                                          \
            return;                                                                             \
        }                                                                                       \
    } while (0)

/* Loads `json` (float32, batch size `batch`) or, on failure, reports it and
 * returns from the calling (void) test function. */
#define LOAD(t, json, nbatch) LOAD_OPTS((t), (json), .batch = (nbatch), .dtype = MEMEST_F32)
