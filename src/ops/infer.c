/* infer.c - the shape-inference engine: walks the graph in order, calls each
 * op's infer function and records values, storages, parameters, buffers,
 * saved tensors and MACs in a memest_run. Implements the memest_ictx calls
 * declared in ops.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memest/checked.h"
#include "memest/cost.h"
#include "memest/ops.h"
#include "memest/run.h"

struct memest_ictx {
    struct memest_run *r;
    const struct memest_node *node;
    uint32_t id;
    struct memest_nodeinfo *ni;
    uint32_t in[MEMEST_MAX_NODE_INPUTS];   /* value indices */
    int nin;
    int8_t rg_override[256];   /* per output: -1 none, 0/1 forced requires_grad */
    struct memest_error *err;
};

/* ---- growable arrays ---- */

static int grow(void **arr, uint32_t *cap, uint32_t need, size_t elem, struct memest_error *err)
{
    if (need <= *cap)
        return 0;
    if (need > UINT32_MAX / 2)
        return memest_errf(err, MEMEST_ERR_LIMIT, NULL, "too many tensors (more than 2^31)");
    uint32_t ncap = *cap ? *cap : 64;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*arr, elem * ncap);
    if (!p)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    *arr = p;
    *cap = ncap;
    return 0;
}

#define GROW(c, field, capf, n) \
    grow((void **)&(c)->r->field, &(c)->r->capf, (n), sizeof *(c)->r->field, (c)->err)

/* ---- errors ---- */

int memest_fail(struct memest_ictx *c, const char *fmt, ...)
{
    if (c->err->code != MEMEST_ERR_NONE)
        return -1;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char shapes[200] = "";
    size_t used = 0;
    for (int i = 0; i < c->nin && used < sizeof shapes; i++) {
        char s[96];
        memest_shape_str(&c->r->values[c->in[i]].shape, s, sizeof s);
        used += (size_t)snprintf(shapes + used, sizeof shapes - used, "%s%s", i ? ", " : "", s);
    }
    memest_errf(c->err, MEMEST_ERR_SHAPE, c->node->path, "%s: %s%s%s", c->node->op->name, msg,
                c->nin ? "; input shapes: " : "", shapes);
    snprintf(c->err->node, sizeof c->err->node, "%s", c->node->name);
    return -1;
}

/* A tensor beyond 2^63 - 1 elements or bytes: a limit error (exit 3). */
static int fail_limit(struct memest_ictx *c, int ndim, const int64_t *size, const char *what)
{
    char shape[160];
    struct memest_shape s = {.ndim = ndim};
    for (int d = 0; d < ndim && d < MEMEST_MAX_DIMS; d++)
        s.size[d] = size[d];
    int rc = memest_fail(c, "a tensor of shape %s has %s (memest's limit)",
                         memest_shape_str(&s, shape, sizeof shape), what);
    if (c->err->code == MEMEST_ERR_SHAPE)
        c->err->code = MEMEST_ERR_LIMIT;
    return rc;
}

/* Also bounds the product of the non-zero sizes, so that an empty tensor
 * cannot carry dims whose products (rows, strides) overflow in the ops. */
bool memest_numel(struct memest_ictx *c, int ndim, const int64_t *size, uint64_t *out)
{
    uint64_t n = 1, extent = 1;
    for (int d = 0; d < ndim; d++) {
        if (size[d] < 0) {
            memest_fail(c, "negative dimension %lld", (long long)size[d]);
            return false;
        }
        if (!memest_mul(extent, size[d] ? (uint64_t)size[d] : 1, &extent)) {
            bool empty = false;
            for (int k = 0; k < ndim; k++)
                empty |= size[k] == 0;
            fail_limit(c, ndim, size, empty ? "sizes whose product exceeds 2^63 - 1"
                                            : "more than 2^63 - 1 elements");
            return false;
        }
        n *= (uint64_t)size[d]; /* <= extent */
    }
    *out = n;
    return true;
}

/* ---- inputs and arguments ---- */

int memest_in_count(const struct memest_ictx *c) { return c->nin; }
const struct memest_shape *memest_in_shape(const struct memest_ictx *c, int i)
{
    return &c->r->values[c->in[i]].shape;
}
enum memest_dtype memest_in_dtype(const struct memest_ictx *c, int i)
{
    return (enum memest_dtype)c->r->values[c->in[i]].dtype;
}
bool memest_in_requires_grad(const struct memest_ictx *c, int i)
{
    return c->r->values[c->in[i]].requires_grad;
}
bool memest_in_same_storage(const struct memest_ictx *c, int i, int j)
{
    return c->r->values[c->in[i]].storage == c->r->values[c->in[j]].storage;
}
const struct memest_argval *memest_arg(const struct memest_ictx *c, int idx)
{
    return &c->node->args[idx];
}
int64_t memest_arg_int(const struct memest_ictx *c, int idx) { return c->node->args[idx].v[0]; }
bool memest_arg_bool(const struct memest_ictx *c, int idx) { return c->node->args[idx].v[0] != 0; }
double memest_arg_float(const struct memest_ictx *c, int idx) { return c->node->args[idx].f; }
int64_t memest_batch(const struct memest_ictx *c) { return c->r->opts.batch; }
enum memest_dtype memest_float_dtype(const struct memest_ictx *c) { return c->r->opts.dtype; }
enum memest_dtype memest_param_dtype(const struct memest_ictx *c)
{
    return c->node->param_dtype != 0 ? (enum memest_dtype)(c->node->param_dtype - 1)
                                     : c->r->opts.dtype;
}
const struct memest_run_opts *memest_run_options(const struct memest_ictx *c) { return &c->r->opts; }
void memest_run_option_used(const struct memest_ictx *c, uint32_t what) { c->r->used |= what; }
bool memest_run_option_was_used(const struct memest_ictx *c, uint32_t what)
{
    return (c->r->used & what) != 0;
}
bool memest_node_is_output_head(const struct memest_ictx *c)
{
    return memest_graph_output_head(c->r->g) == (int64_t)c->id;
}
bool memest_trainable(const struct memest_ictx *c) { return c->node->trainable; }

bool memest_needs_grad(const struct memest_ictx *c)
{
    for (int i = 0; i < c->nin; i++)
        if (c->r->values[c->in[i]].requires_grad)
            return true;
    for (uint32_t p = c->ni->param_first; p < c->r->nparams; p++)
        if (c->r->params[p].trainable)
            return true;
    return false;
}

/* ---- storages and values ---- */

static int push_save(struct memest_ictx *c, uint32_t storage);

/* A storage for numel elements of a tensor of the given sizes (for messages). */
static int new_storage(struct memest_ictx *c, int ndim, const int64_t *size, uint64_t numel,
                       enum memest_dtype dt, uint8_t kind, uint32_t *id)
{
    uint64_t bytes;
    if (!memest_mul(numel, memest_dtype_size(dt), &bytes)) {
        char what[64];
        snprintf(what, sizeof what, "more than 2^63 - 1 bytes of %s", memest_dtype_name(dt));
        return fail_limit(c, ndim, size, what);
    }
    if (GROW(c, storages, cap_storages, c->r->nstorages + 1) != 0)
        return -1;
    *id = c->r->nstorages++;
    c->r->storages[*id] = (struct memest_storage){.bytes = bytes, .node = c->id, .kind = kind,
                                                  .dtype = (uint8_t)dt, .last_use = c->id,
                                                  .src = UINT32_MAX, .cast = UINT32_MAX};
    return 0;
}

/* geom may point into r->values (an input's shape), which GROW can move:
 * it is copied first. */
static int push_value(struct memest_ictx *c, const struct memest_shape *geom, int64_t offset,
                      uint32_t storage, enum memest_dtype dt)
{
    const struct memest_shape shape = *geom;
    if (c->r->nvalues - c->ni->out_first >= 255)
        return memest_fail(c, "more than 255 outputs");
    if (GROW(c, values, cap_values, c->r->nvalues + 1) != 0)
        return -1;
    struct memest_value *v = &c->r->values[c->r->nvalues++];
    v->shape = shape;
    v->offset = offset;
    v->storage = storage;
    v->dtype = (uint8_t)dt;
    v->requires_grad = false;
    return (int)(c->r->nvalues - 1 - c->ni->out_first);
}

static int check_ndim(struct memest_ictx *c, int ndim)
{
    if (ndim < 0 || ndim > MEMEST_MAX_DIMS)
        return memest_fail(c, "result would have %d dimensions; memest supports at most %d", ndim,
                           MEMEST_MAX_DIMS);
    return 0;
}

int memest_out_new(struct memest_ictx *c, int ndim, const int64_t *size, enum memest_dtype dt)
{
    uint64_t numel;
    uint32_t st;
    if (check_ndim(c, ndim) != 0 || !memest_numel(c, ndim, size, &numel))
        return -1;
    if (new_storage(c, ndim, size, numel, dt,
                    c->node->op->model_input ? MEMEST_ST_INPUT : MEMEST_ST_ACT,
                    &st) != 0)
        return -1;
    struct memest_shape s;
    memest_shape_set(&s, ndim, size);
    return push_value(c, &s, 0, st, dt);
}

int memest_out_like(struct memest_ictx *c, const struct memest_shape *sizes, int like,
                    enum memest_dtype dt)
{
    struct memest_shape s = *sizes;
    const struct memest_shape *ls = memest_in_shape(c, like);
    if (memest_shape_equal(&s, ls))
        memest_shape_like(&s, ls);
    else
        memest_shape_contiguous_strides(&s);
    uint64_t numel;
    uint32_t st;
    if (check_ndim(c, s.ndim) != 0 || !memest_numel(c, s.ndim, s.size, &numel) ||
        new_storage(c, s.ndim, s.size, numel, dt, MEMEST_ST_ACT, &st) != 0)
        return -1;
    return push_value(c, &s, 0, st, dt);
}

int memest_out_new_strided(struct memest_ictx *c, const struct memest_shape *geom, uint64_t numel,
                           enum memest_dtype dt)
{
    uint64_t n, extent = 1;
    uint32_t st;
    if (check_ndim(c, geom->ndim) != 0 || !memest_numel(c, geom->ndim, geom->size, &n))
        return -1;
    for (int d = 0; d < geom->ndim && n > 0; d++)
        extent += (uint64_t)(geom->size[d] - 1) * (uint64_t)geom->stride[d];
    if (n > 0 && extent > numel)
        return memest_fail(c, "internal: an output's strides reach past its storage");
    if (new_storage(c, geom->ndim, geom->size, numel, dt, MEMEST_ST_ACT, &st) != 0)
        return -1;
    return push_value(c, geom, 0, st, dt);
}

int memest_out_view(struct memest_ictx *c, int in, const struct memest_shape *geom, int64_t offset)
{
    const struct memest_value v = c->r->values[c->in[in]];
    uint64_t numel;
    if (check_ndim(c, geom->ndim) != 0 || !memest_numel(c, geom->ndim, geom->size, &numel))
        return -1;
    return push_value(c, geom, v.offset + offset, v.storage, (enum memest_dtype)v.dtype);
}

int memest_out_reshape(struct memest_ictx *c, int in, int ndim, const int64_t *size)
{
    if (check_ndim(c, ndim) != 0)
        return -1;
    struct memest_shape to;
    memest_shape_set(&to, ndim, size);
    if (memest_shape_view_strides(memest_in_shape(c, in), &to))
        return memest_out_view(c, in, &to, 0);
    return memest_out_new(c, ndim, size, memest_in_dtype(c, in));
}

int memest_out_inplace(struct memest_ictx *c, int in)
{
    const struct memest_value v = c->r->values[c->in[in]];
    return push_value(c, &v.shape, v.offset, v.storage, (enum memest_dtype)v.dtype);
}

int memest_out_param(struct memest_ictx *c, const char *name)
{
    for (uint32_t p = c->ni->param_first; p < c->r->nparams; p++) {
        const struct memest_param *pp = &c->r->params[p];
        if (strcmp(pp->name, name) == 0) {
            int k = push_value(c, &pp->shape, 0, pp->storage,
                               (enum memest_dtype)c->r->storages[pp->storage].dtype);
            if (k >= 0 && k < 256)
                c->rg_override[k] = pp->trainable;
            return k;
        }
    }
    return memest_fail(c, "internal: no parameter \"%s\"", name);
}

void memest_out_set_requires_grad(struct memest_ictx *c, int k, bool rg)
{
    if (k >= 0 && k < 256)
        c->rg_override[k] = rg;
}

const struct memest_shape *memest_out_shape(const struct memest_ictx *c, int k)
{
    return &c->r->values[c->ni->out_first + (uint32_t)k].shape;
}

/* ---- parameters and buffers ---- */

static int find_tied(struct memest_ictx *c, const char *name, const struct memest_shape *s,
                     int64_t *idx)
{
    *idx = -1;
    bool all = c->node->tie_all;
    if (c->node->tie_node < 0 || (!all && strcmp(name, "weight") != 0))
        return 0;
    const struct memest_nodeinfo *t = &c->r->nodes[c->node->tie_node];
    for (uint32_t p = t->param_first; p < t->param_first + t->nparam; p++) {
        const struct memest_param *pp = &c->r->params[p];
        if (strcmp(pp->name, name) != 0)
            continue;
        if (!memest_shape_equal(&pp->shape, s)) {
            char a[96], b[96];
            return memest_fail(c, "cannot tie its %s %s to the %s %s of \"%s\"", name,
                               memest_shape_str(s, a, sizeof a), name,
                               memest_shape_str(&pp->shape, b, sizeof b),
                               c->r->g->nodes[c->node->tie_node].name);
        }
        *idx = pp->tied_to >= 0 ? pp->tied_to : (int64_t)p;
        return 0;
    }
    return memest_fail(c, "%s: node \"%s\" has no %s", all ? "tie_params" : "tie_weight",
                       c->r->g->nodes[c->node->tie_node].name, all ? name : "weight");
}

/* ---- autocast ----
 * Under --amp, an op listed as lower_precision_fp reads fp16/bf16 copies of
 * its float inputs and parameters, an fp32 op float32 copies of its
 * low-precision inputs (autocast_mode.cpp, cached_cast()). A parameter's copy
 * (a leaf that requires grad) is cached for the whole forward and shared by
 * every op that uses it; other copies belong to the op. */

/* The cached autocast copy of parameter storage `st` (created on first use,
 * by this node). */
static int param_cast(struct memest_ictx *c, uint32_t st, uint32_t *out)
{
    if (c->r->storages[st].cast != UINT32_MAX) {
        *out = c->r->storages[st].cast;
        return 0;
    }
    const struct memest_storage *ps = &c->r->storages[st];
    uint64_t numel = ps->bytes / memest_dtype_size((enum memest_dtype)ps->dtype);
    int64_t n = (int64_t)numel;
    if (new_storage(c, 1, &n, numel, c->r->opts.amp_dtype, MEMEST_ST_CAST, out) != 0)
        return -1;
    c->r->storages[*out].src = st;
    c->r->storages[st].cast = *out;
    return 0;
}

/* Appends a value that is not an output of the node (an input's copy). */
static int push_cast_value(struct memest_ictx *c, const struct memest_shape *geom, uint32_t st,
                           enum memest_dtype dt, uint32_t *out)
{
    const struct memest_shape shape = *geom;
    if (GROW(c, values, cap_values, c->r->nvalues + 1) != 0)
        return -1;
    *out = c->r->nvalues++;
    c->r->values[*out] = (struct memest_value){.shape = shape, .storage = st, .dtype = (uint8_t)dt,
                                               .requires_grad = false};
    return 0;
}

/* Casts the node's inputs as the op's autocast policy says (before the op's
 * outputs are declared). */
static int autocast_inputs(struct memest_ictx *c)
{
    const struct memest_run_opts *o = &c->r->opts;
    uint8_t pol = c->node->op->amp;
    if (!o->amp || pol == MEMEST_AMPP_ANY)
        return 0;
    for (int i = 0; i < c->nin; i++) {
        const struct memest_value v = c->r->values[c->in[i]];
        enum memest_dtype from = (enum memest_dtype)v.dtype, to;
        if (!memest_dtype_is_float(from) || from == MEMEST_F64)
            continue;
        to = pol == MEMEST_AMPP_LOW ? o->amp_dtype : MEMEST_F32;
        if (from == to)
            continue;
        struct memest_shape g;
        memest_shape_like(&g, &v.shape);
        uint32_t st;
        if (c->r->storages[v.storage].kind == MEMEST_ST_PARAM && pol == MEMEST_AMPP_LOW) {
            if (param_cast(c, v.storage, &st) != 0)
                return -1;
        } else {
            uint64_t numel;
            if (!memest_numel(c, g.ndim, g.size, &numel) ||
                new_storage(c, g.ndim, g.size, numel, to, MEMEST_ST_CAST, &st) != 0)
                return -1;
            c->r->storages[st].src = v.storage;
            /* softmax reads an fp16 input directly (half_to_float) */
            if (pol == MEMEST_AMPP_FP32_OUT && from == MEMEST_F16)
                c->r->storages[st].bytes = 0;
        }
        uint32_t nv;
        if (push_cast_value(c, &g, st, to, &nv) != 0)
            return -1;
        c->r->values[nv].requires_grad = v.requires_grad;
        c->in[i] = nv;
        c->r->ins[c->ni->in_first + (uint32_t)i].value = nv;
    }
    return 0;
}

int memest_save_param(struct memest_ictx *c, const char *name)
{
    if (!c->r->opts.amp)
        return 0;   /* no autocast copies */
    for (uint32_t p = c->ni->param_first; p < c->r->nparams; p++) {
        const struct memest_param *pp = &c->r->params[p];
        if (strcmp(pp->name, name) == 0) {
            uint32_t cast = c->r->storages[pp->storage].cast;
            return cast == UINT32_MAX ? 0 : push_save(c, cast);
        }
    }
    return 0;
}

/* ---- backward rules ---- */

static struct memest_nodein *nodein(struct memest_ictx *c, int i)
{
    return &c->r->ins[c->ni->in_first + (uint32_t)i];
}

static void set_grad(struct memest_ictx *c, int i, enum memest_grad_kind k, int out)
{
    if (i < 0 || i >= c->nin)
        return;
    struct memest_nodein *in = nodein(c, i);
    in->grad = (uint8_t)k;
    in->from = (uint8_t)(out >= 0 && out < 256 ? out : 0);
}

void memest_grad_same(struct memest_ictx *c, int i, int out) { set_grad(c, i, MEMEST_GRAD_SAME, out); }
void memest_grad_reshape(struct memest_ictx *c, int i, int out)
{
    set_grad(c, i, MEMEST_GRAD_RESHAPE, out);
}
void memest_grad_none(struct memest_ictx *c, int i) { set_grad(c, i, MEMEST_GRAD_NONE, 0); }

void memest_grad_permute(struct memest_ictx *c, int i, int out, const int *perm)
{
    set_grad(c, i, MEMEST_GRAD_PERMUTE, out);
    if (i < 0 || i >= c->nin)
        return;
    for (int d = 0; d < MEMEST_MAX_DIMS; d++)
        nodein(c, i)->perm[d] = (uint8_t)(perm && d < memest_in_shape(c, i)->ndim ? perm[d] : d);
}

void memest_grad_slice(struct memest_ictx *c, int i, int out, int dim)
{
    set_grad(c, i, MEMEST_GRAD_SLICE, out);
    if (i >= 0 && i < c->nin)
        nodein(c, i)->perm[0] = (uint8_t)(dim >= 0 && dim < MEMEST_MAX_DIMS ? dim : 0);
}

void memest_bwd_workspace(struct memest_ictx *c, uint64_t bytes)
{
    c->ni->bwd_work_bytes = memest_sat_add(c->ni->bwd_work_bytes, bytes);
}

void memest_bwd_contiguous(struct memest_ictx *c) { c->ni->bwd_flags |= MEMEST_BWD_CONTIG_OUT; }
void memest_bwd_work_first(struct memest_ictx *c) { c->ni->bwd_flags |= MEMEST_BWD_WORK_FIRST; }
void memest_work_first(struct memest_ictx *c) { c->ni->work_first = true; }
void memest_bwd_early_release(struct memest_ictx *c, uint64_t bytes)
{
    c->ni->bwd_early_release = memest_sat_add(c->ni->bwd_early_release, bytes);
}
void memest_late_saves(struct memest_ictx *c)
{
    uint32_t n = c->r->nsaves - c->ni->save_first;
    c->ni->late_saves = (uint8_t)(n < UINT8_MAX ? n : UINT8_MAX);
}

void memest_set_sac_op(struct memest_ictx *c, uint8_t op) { c->ni->sac = op; }

void memest_model_mask(struct memest_ictx *c, uint64_t bytes)
{
    c->ni->mask_bytes = memest_sat_add(c->ni->mask_bytes, bytes);
    memest_workspace(c, bytes);
}

/* memest_param and memest_param_packed: a packed parameter has its own
 * element type and bytes, and is frozen. */
static int declare_param(struct memest_ictx *c, const char *name, int ndim, const int64_t *size,
                         int npacked, const enum memest_dtype *pdts, const uint64_t *pbytes)
{
    bool packed = npacked > 0;
    if (c->ni->nparam >= MEMEST_MAX_NODE_PARAMS) {   /* graph.h: a limit error (exit 3) */
        int rc = memest_fail(c, "more than %u parameter tensors (memest's limit for one node)",
                             MEMEST_MAX_NODE_PARAMS);
        if (c->err->code == MEMEST_ERR_SHAPE)
            c->err->code = MEMEST_ERR_LIMIT;
        return rc;
    }
    uint64_t numel;
    if (check_ndim(c, ndim) != 0 || !memest_numel(c, ndim, size, &numel))
        return -1;
    struct memest_shape s;
    memest_shape_set(&s, ndim, size);
    int64_t tied;
    if (find_tied(c, name, &s, &tied) != 0)
        return -1;
    uint32_t st;
    if (tied >= 0)
        st = c->r->params[tied].storage;
    else if (new_storage(c, ndim, size, numel, packed ? pdts[0] : memest_param_dtype(c),
                         MEMEST_ST_PARAM, &st) != 0)
        return -1;
    uint64_t state = 0;
    if (packed && tied < 0) {
        c->r->storages[st].bytes = pbytes[0];
        for (int i = 1; i < npacked; i++) {   /* the state: storages of its own */
            uint32_t x;
            int64_t one = 1;
            if (new_storage(c, 1, &one, 1, pdts[i], MEMEST_ST_PARAM, &x) != 0)
                return -1;
            c->r->storages[x].bytes = pbytes[i];
            state = memest_sat_add(state, pbytes[i]);
        }
    }
    if (GROW(c, params, cap_params, c->r->nparams + 1) != 0)
        return -1;
    c->r->params[c->r->nparams++] = (struct memest_param){
        .node = c->id, .name = name, .numel = numel, .shape = s,
        .trainable = packed || c->r->opts.no_grad ? false
                     : tied >= 0 ? c->r->params[tied].trainable : c->node->trainable,
        .tied_to = tied, .storage = st, .state_bytes = state};
    c->ni->nparam++;
    enum memest_dtype pdt = (enum memest_dtype)c->r->storages[st].dtype;
    if (!packed && c->r->opts.amp && c->node->op->amp == MEMEST_AMPP_LOW &&
        memest_dtype_is_float(pdt) && pdt != c->r->opts.amp_dtype) {
        uint32_t cast;
        return param_cast(c, st, &cast);
    }
    return 0;
}

int memest_param(struct memest_ictx *c, const char *name, int ndim, const int64_t *size)
{
    return declare_param(c, name, ndim, size, 0, NULL, NULL);
}

int memest_param_packed(struct memest_ictx *c, const char *name, int ndim, const int64_t *size,
                        int n, const enum memest_dtype *dt, const uint64_t *bytes)
{
    if (n < 1)
        return memest_fail(c, "a packed parameter needs its data tensor");
    return declare_param(c, name, ndim, size, n, dt, bytes);
}

enum memest_wformat memest_wformat(const struct memest_ictx *c)
{
    return c->node->wformat < MEMEST_WF_COUNT ? (enum memest_wformat)c->node->wformat
                                              : MEMEST_WF_DENSE;
}

const struct memest_quant_params *memest_quant_params(const struct memest_ictx *c)
{
    return &c->r->g->quant;
}

/* True when the node declared a parameter called `name`. */
static bool param_declared(const struct memest_ictx *c, const char *name)
{
    for (uint32_t p = c->ni->param_first; p < c->r->nparams; p++)
        if (strcmp(c->r->params[p].name, name) == 0)
            return true;
    return false;
}

bool memest_param_trainable(const struct memest_ictx *c, const char *name)
{
    for (uint32_t p = c->ni->param_first; p < c->r->nparams; p++)
        if (strcmp(c->r->params[p].name, name) == 0)
            return c->r->params[p].trainable;
    return false;
}

int memest_buffer(struct memest_ictx *c, const char *name, int ndim, const int64_t *size,
                  enum memest_dtype dt)
{
    uint64_t numel;
    uint32_t st;
    if (check_ndim(c, ndim) != 0 || !memest_numel(c, ndim, size, &numel) ||
        new_storage(c, ndim, size, numel, dt, MEMEST_ST_BUFFER, &st) != 0)
        return -1;
    if (GROW(c, buffers, cap_buffers, c->r->nbuffers + 1) != 0)
        return -1;
    c->r->buffers[c->r->nbuffers++] =
        (struct memest_buffer){.node = c->id, .name = name, .numel = numel, .dtype = (uint8_t)dt};
    c->ni->nbuffer++;
    return 0;
}

int memest_out_buffer(struct memest_ictx *c, const char *name, int ndim, const int64_t *size,
                      enum memest_dtype dt)
{
    if (memest_buffer(c, name, ndim, size, dt) != 0)
        return -1;
    struct memest_shape s;
    memest_shape_set(&s, ndim, size);
    int k = push_value(c, &s, 0, c->r->nstorages - 1, dt);
    if (k >= 0 && k < 256)
        c->rg_override[k] = 0;
    return k;
}

/* ---- saved tensors, MACs ---- */

/* Appends storage to the node's saved tensors; `fresh`: made just now, so
 * not among them yet (no search). */
static int push_save_any(struct memest_ictx *c, uint32_t storage, bool fresh)
{
    for (uint32_t i = c->ni->save_first; !fresh && i < c->r->nsaves; i++)
        if (c->r->saves[i] == storage)
            return 0;
    if (GROW(c, saves, cap_saves, c->r->nsaves + 1) != 0 ||
        GROW(c, save_packs, cap_save_packs, c->r->nsaves + 1) != 0)
        return -1;
    c->r->save_packs[c->r->nsaves] = 1;
    c->r->saves[c->r->nsaves++] = storage;
    return 0;
}

void memest_save_repack(struct memest_ictx *c)
{
    uint32_t k = c->r->nsaves - 1;
    if (c->r->nsaves > c->ni->save_first && c->r->save_packs[k] < UINT8_MAX)
        c->r->save_packs[k]++;
}

static int push_save(struct memest_ictx *c, uint32_t storage)
{
    return push_save_any(c, storage, false);
}

int memest_save_in(struct memest_ictx *c, int i)
{
    return push_save(c, c->r->values[c->in[i]].storage);
}

int memest_save_out(struct memest_ictx *c, int k)
{
    return push_save(c, c->r->values[c->ni->out_first + (uint32_t)k].storage);
}

int memest_save_new(struct memest_ictx *c, int ndim, const int64_t *size, enum memest_dtype dt)
{
    uint64_t numel;
    uint32_t st;
    if (check_ndim(c, ndim) != 0 || !memest_numel(c, ndim, size, &numel) ||
        new_storage(c, ndim, size, numel, dt, MEMEST_ST_EXTRA, &st) != 0)
        return -1;
    return push_save_any(c, st, true);
}

int memest_save_in_reshaped(struct memest_ictx *c, int i, int ndim, const int64_t *size)
{
    if (check_ndim(c, ndim) != 0)
        return -1;
    struct memest_shape to;
    memest_shape_set(&to, ndim, size);
    if (memest_shape_view_strides(memest_in_shape(c, i), &to))
        return memest_save_in(c, i);
    return memest_save_new(c, ndim, size, memest_in_dtype(c, i));
}

void memest_macs(struct memest_ictx *c, double fwd) { c->ni->fwd_macs += fwd; }
void memest_macs_bwd(struct memest_ictx *c, double bwd) { c->ni->bwd_macs += bwd; }
void memest_workspace(struct memest_ictx *c, uint64_t bytes)
{
    c->ni->work_bytes = memest_sat_add(c->ni->work_bytes, bytes);
}

void memest_in0_first(struct memest_ictx *c)
{
    c->ni->in0_first = true;
}

/* ---- the walk ---- */

static void reset(struct memest_run *r)
{
    r->nvalues = r->nstorages = r->nsaves = r->nparams = r->nbuffers = r->nins = 0;
}

static int infer_node(struct memest_run *r, uint32_t id, struct memest_error *err)
{
    const struct memest_node *n = &r->g->nodes[id];
    struct memest_nodeinfo *ni = &r->nodes[id];
    memset(ni, 0, sizeof *ni);
    ni->out_first = r->nvalues;
    ni->save_first = r->nsaves;
    ni->param_first = r->nparams;
    ni->buffer_first = r->nbuffers;
    struct memest_ictx c = {.r = r, .node = n, .id = id, .ni = ni, .err = err};
    memset(c.rg_override, -1, sizeof c.rg_override);
    if (n->nin > MEMEST_MAX_NODE_INPUTS)
        return memest_fail(&c, "more than %d inputs", MEMEST_MAX_NODE_INPUTS);
    for (uint32_t i = 0; i < n->nin; i++) {
        const struct memest_nodeinfo *src = &r->nodes[n->in[i].node];
        if (n->in[i].out >= src->nout) {
            c.nin = (int)i;
            return memest_fail(&c, "input \"%s:%u\": node \"%s\" has only %u output%s",
                               r->g->nodes[n->in[i].node].name, n->in[i].out,
                               r->g->nodes[n->in[i].node].name, src->nout,
                               src->nout == 1 ? "" : "s");
        }
        c.in[i] = src->out_first + n->in[i].out;
        struct memest_storage *st = &r->storages[r->values[c.in[i]].storage];
        st->last_use = id;
    }
    c.nin = (int)n->nin;
    ni->in_first = r->nins;
    if (grow((void **)&r->ins, &r->cap_ins, r->nins + n->nin, sizeof *r->ins, err) != 0)
        return -1;
    r->nins += n->nin;
    for (uint32_t i = 0; i < n->nin; i++)
        r->ins[ni->in_first + i] = (struct memest_nodein){.value = c.in[i], .src = c.in[i],
                                                          .grad = MEMEST_GRAD_NEW};
    if (autocast_inputs(&c) != 0)
        return -1;
    ni->out_first = r->nvalues;
    if (n->op->infer(&c) != 0) {
        if (err->code == MEMEST_ERR_NONE)
            memest_fail(&c, "shape inference failed");
        return -1;
    }
    ni->nout = r->nvalues - ni->out_first;
    if (ni->nout == 0)
        return memest_fail(&c, "internal: the op declared no output");
    if (ni->fwd_macs > 0 && n->op->lib == MEMEST_LIB_NONE)
        return memest_fail(&c, "internal: the op declares MACs but no math library (.lib)");
    if (n->tie_node >= 0 && !n->tie_all && !param_declared(&c, "weight"))
        return memest_fail(&c, "tie_weight: a %s has no weight to share with \"%s\"",
                           n->op->name, r->g->nodes[n->tie_node].name);
    if (n->tie_all && ni->nparam != r->nodes[n->tie_node].nparam)
        return memest_fail(&c, "tie_params: this %s has %u parameter tensors, \"%s\" has %u: "
                               "tie_params shares all of them, one for one",
                           n->op->name, ni->nparam, r->g->nodes[n->tie_node].name,
                           r->nodes[n->tie_node].nparam);
    ni->needs_grad = memest_needs_grad(&c);
    for (uint32_t k = 0; k < ni->nout; k++) {
        int8_t o = k < 256 ? c.rg_override[k] : -1;
        r->values[ni->out_first + k].requires_grad = o >= 0 ? o != 0 : ni->needs_grad;
    }
    if (!ni->needs_grad) {
        r->nsaves = ni->save_first; /* autograd records nothing */
        ni->bwd_macs = 0;
    }
    ni->nsave = r->nsaves - ni->save_first;
    return 0;
}

int memest_run_infer(struct memest_run *r, const struct memest_graph *g,
                     const struct memest_run_opts *opts, struct memest_error *err)
{
    if (r->g != g || !r->nodes) {
        free(r->nodes);
        r->nodes = calloc(g->nnodes ? g->nnodes : 1, sizeof *r->nodes);
        if (!r->nodes)
            return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    }
    r->g = g;
    r->opts = *opts;
    r->used = 0;
    r->infers++;
    reset(r);
    memest_err_file(err, g->file);
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (infer_node(r, i, err) != 0 || memest_cost_check_records(r, i, err) != 0)
            return -1;
    for (uint32_t o = 0; o < g->noutputs; o++) {
        struct memest_ref ref = g->outputs[o];
        if (ref.out >= r->nodes[ref.node].nout) {
            char path[32];
            snprintf(path, sizeof path, "outputs[%u]", o);
            return memest_errf(err, MEMEST_ERR_SHAPE, path,
                               "output %u of node \"%s\" does not exist (it has %u output%s)",
                               ref.out, g->nodes[ref.node].name, r->nodes[ref.node].nout,
                               r->nodes[ref.node].nout == 1 ? "" : "s");
        }
        r->storages[memest_run_value(r, ref)->storage].last_use = g->nnodes;
    }
    return 0;
}

const struct memest_value *memest_run_value(const struct memest_run *r, struct memest_ref ref)
{
    return &r->values[r->nodes[ref.node].out_first + ref.out];
}

void memest_run_free(struct memest_run *r)
{
    free(r->nodes);
    free(r->values);
    free(r->storages);
    free(r->saves);
    free(r->save_packs);
    free(r->params);
    free(r->buffers);
    free(r->ins);
    memset(r, 0, sizeof *r);
}
