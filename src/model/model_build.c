/* model_build.c - expands a parsed model file into the layer graph:
 * variables and --set overrides, blocks with arguments, "repeat", "if",
 * input references, weight tying, and every argument checked against its
 * op's argspec. All checks report the JSON path and the node; a value that
 * comes from an override and fails a check is a usage error naming it. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memest/cost.h"
#include "memest/escape.h"
#include "memest/expr.h"
#include "memest/format.h"
#include "memest/graph.h"
#include "memest/model.h"
#include "memest/ops.h"
#include "memest/step.h"
#include "memest/strmap.h"
#include "memest/suggest.h"

#define INT_LIMIT 9007199254740992.0 /* 2^53 */

enum vkind { V_NUM, V_BOOL, V_STR, V_JSON };

struct scope;

struct var {
    const char *name;
    enum vkind kind;
    struct memest_expr_val val;   /* V_NUM, V_BOOL */
    const char *str;
    const cJSON *json;
    const struct scope *defscope; /* where a V_JSON list's elements are evaluated */
    const struct memest_override *ov; /* the --set (or --sweep-var) the value comes from */
};

struct scope {
    const struct scope *parent;
    struct var *vars;
    int nvars;
    const struct memest_strmap *index; /* name -> index in vars, for large scopes */
};

/* Scopes with more variables than this get a hash index. */
#define SCOPE_INDEX_MIN 8
/* Expansion work allowed per allowed node (see charge()). */
#define WORK_PER_NODE 2

struct builder {
    const struct memest_model *m;
    struct memest_graph *g;
    struct memest_error *err;
    uint32_t max_nodes;             /* m->max_nodes, or MEMEST_MAX_NODES */
    uint64_t work, max_work;        /* expansion work done, and its budget */
    uint32_t cap_nodes;
    struct memest_strmap fullnames; /* full node name -> node index */
    const cJSON *blocks;
    struct memest_strmap blockmap;  /* block name -> its definition (a cJSON *) */
    const char *active[MEMEST_MAX_NESTING]; /* blocks being expanded */
    int depth;
    const struct memest_override *ov; /* the command-line overrides */
    int nov;
    bool *ov_read;                  /* [nov]: the expansion read ov[i] */
    const struct memest_override *scale_ov; /* set the count of a "repeat" being expanded */
};

static const char *const node_keys[] = {"name", "type", "inputs", "repeat", "if",
                                        "trainable", "tie_weight", "comment"};
#define N_NODE_KEYS ((int)(sizeof node_keys / sizeof *node_keys))

static bool is_node_key(const char *k)
{
    for (int i = 0; i < N_NODE_KEYS; i++)
        if (strcmp(k, node_keys[i]) == 0)
            return true;
    return false;
}

/* A node or input name: at most 100 bytes, no ':' (it separates an output
 * index) and no control character (names end up in reports). */
static bool bad_name(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++, n++)
        if (*p == ':' || *p < 0x20 || *p == 0x7F)
            return true;
    return n == 0 || n > 100;
}
#define NAME_RULE "a name of 1 to 100 characters without ':' or control characters"

static int nomem(struct builder *b);

/* "path.key" in the graph's arena. NULL when out of memory, with the error
 * set: an error about that path reported next is then not kept (the first
 * error wins), so that out of memory is never reported as a model error. */
static char *path_join(struct builder *b, const char *path, const char *key)
{
    char *p = memest_arena_concat(&b->g->arena, path, *path ? "." : "", key, (char *)NULL);
    if (!p)
        nomem(b);
    return p;
}

/* Decimal digits of v into buf (at least 24 bytes); returns buf. */
static char *decimal(char *buf, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    int k = 0;
    if (v < 0)
        buf[k++] = '-';
    while (n)
        buf[k++] = tmp[--n];
    buf[k] = '\0';
    return buf;
}

/* Names the node being expanded in any error raised from here on. */
static void set_ctx_node(struct builder *b, const char *name)
{
    if (b->err->code == MEMEST_ERR_NONE) {
        size_t n = name ? strlen(name) : 0;
        if (n >= sizeof b->err->node)
            n = sizeof b->err->node - 1;
        memcpy(b->err->node, name ? name : "", n);
        b->err->node[n] = '\0';
    }
}

/* A JSON path formatted only when an error needs it: base, then ".key"
 * (when key is set), then "[idx]" (when idx >= 0). */
struct jp {
    const char *base;
    const char *key;
    int idx;
};

/* The path for an error about p; out of memory is set as the error (and
 * wins, as in path_join) when it cannot be formatted. */
static const char *jp_str(struct builder *b, const struct jp *p)
{
    char idx[24] = "";
    if (p->idx >= 0)
        snprintf(idx, sizeof idx, "[%d]", p->idx);
    const char *s = memest_arena_printf(&b->g->arena, "%s%s%s%s", p->base,
                                        p->key && *p->base ? "." : "", p->key ? p->key : "", idx);
    if (!s)
        nomem(b);
    return s ? s : p->base;
}

static int nomem(struct builder *b)
{
    return memest_errf(b->err, MEMEST_ERR_NOMEM, NULL, "out of memory");
}

/* ---- values from the command line ----
 * A value read from a variable that --set (or --sweep-var) overrides carries
 * the override as its tag through expressions (expr.h); a check that such a
 * value fails is the command line's fault: a usage error (exit 2) naming the
 * option, at the place in the file where the value was refused. */

static const char *opt_of(const struct memest_override *ov)
{
    return ov->opt ? ov->opt : "--set";
}

/* Makes the error just set a usage error naming the override `tag` (a
 * struct memest_override *, or NULL: nothing changes). Returns -1. */
static int blame(struct builder *b, const void *tag)
{
    const struct memest_override *ov = tag;
    struct memest_error *e = b->err;
    if (!ov || e->code == MEMEST_ERR_NONE || e->code == MEMEST_ERR_NOMEM ||
        e->code == MEMEST_ERR_USAGE)
        return -1;
    char msg[sizeof e->msg], path[sizeof e->path];
    memcpy(msg, e->msg, sizeof msg);
    memcpy(path, e->path, sizeof path);
    e->code = MEMEST_ERR_NONE;
    return memest_errf(e, MEMEST_ERR_USAGE, path, "%s %.*s=%.*s: %s", opt_of(ov),
                       memest_utf8_prefix(ov->name, 100), ov->name,
                       memest_utf8_prefix(ov->value, 100), ov->value, msg);
}

static int value_err(struct builder *b, const void *tag, enum memest_errcode code,
                     const char *path, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Sets an error about a value (a model error of `code`, or a usage error
 * when the value comes from an override: see blame()). Returns -1. */
static int value_err(struct builder *b, const void *tag, enum memest_errcode code,
                     const char *path, const char *fmt, ...)
{
    if (b->err->code != MEMEST_ERR_NONE)
        return -1;
    char msg[sizeof b->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memest_errf(b->err, code, path, "%s", msg);
    return blame(b, tag);
}

/* A number held by a variable or a block argument must be below 2^53 in
 * magnitude, as integers are: JSON rounds larger integers silently, and an
 * expression could bring such a value back below 2^53 with a wrong value.
 * Returns 0, or -1 with a limit error at `path`. */
static int check_held(struct builder *b, double d, const char *path)
{
    if (fabs(d) < INT_LIMIT)
        return 0;
    char v[32];
    return memest_errf(b->err, MEMEST_ERR_LIMIT, path,
                       "%s is too large: the numbers of variables and block arguments must be "
                       "between -2^53 and 2^53, exclusive (JSON rounds larger integers)",
                       memest_fmt_double(d, v, sizeof v));
}

/* Notes that the expansion read the override ov (for graph.h's overrides). */
static void note_read(struct builder *b, const struct memest_override *ov)
{
    if (ov && ov >= b->ov && ov < b->ov + b->nov)
        b->ov_read[ov - b->ov] = true;
}

/* Bounds the time a model file can make the builder spend, whatever it
 * holds: every node visited (also those "if" leaves out, and each copy of a
 * "repeat"), every block argument, and every expression evaluated (plus one
 * per 16 bytes of its text) costs a unit, each about what creating a node
 * costs (~1 us); the budget is WORK_PER_NODE units per allowed node, so the
 * worst file takes about as long as the largest model. Returns 0, or -1 with
 * a limit error once the budget is spent. */
static int charge(struct builder *b, uint64_t units, const char *path)
{
    b->work += units;
    if (b->work <= b->max_work)
        return 0;
    return value_err(b, b->scale_ov, MEMEST_ERR_LIMIT, path,
                     "expanding the model takes more than %llu steps (the limit: %u per "
                     "allowed node; nodes left out by \"if\", block arguments and "
                     "expressions count too); check \"repeat\" counts and long expressions",
                     (unsigned long long)b->max_work, WORK_PER_NODE);
}

static const struct var *scope_find(const struct scope *sc, const char *name, size_t len)
{
    for (; sc; sc = sc->parent) {
        int64_t i;
        if (sc->index) {
            if (memest_strmap_get(sc->index, name, len, &i))
                return &sc->vars[i];
            continue;
        }
        for (int k = 0; k < sc->nvars; k++)
            if (strlen(sc->vars[k].name) == len && memcmp(sc->vars[k].name, name, len) == 0)
                return &sc->vars[k];
    }
    return NULL;
}

/* Gives a large scope its hash index (in *map, which the caller frees). */
static int scope_index(struct builder *b, struct scope *sc, struct memest_strmap *map)
{
    if (sc->nvars <= SCOPE_INDEX_MIN)
        return 0;
    for (int i = 0; i < sc->nvars; i++)
        if (memest_strmap_put(map, sc->vars[i].name, strlen(sc->vars[i].name), i) != 0)
            return nomem(b);
    sc->index = map;
    return 0;
}

struct lookup_ctx {
    struct builder *b;
    const struct scope *sc;
};

/* A variable's value for an expression, tagged with its override. */
static int lookup_num(void *ctx, const char *name, size_t len, struct memest_expr_val *val)
{
    const struct lookup_ctx *c = ctx;
    const struct var *v = scope_find(c->sc, name, len);
    if (!v || (v->kind != V_NUM && v->kind != V_BOOL))
        return -1;
    *val = v->val;
    val->tag = v->ov;
    note_read(c->b, v->ov);
    return 0;
}

/* What eval_expr returns besides 0: memest_expr_eval's faults (why says
 * which), or the work budget spent (the error is set). */
enum { EXPR_TEXT = -1, EXPR_VALUE = -2, EXPR_BUDGET = -3 };

/* Evaluates an expression string, charging its length to the work budget. */
static int eval_expr(struct builder *b, const char *s, const struct scope *sc, const char *path,
                     struct memest_expr_val *out, char *why, size_t whylen)
{
    if (charge(b, 1 + strlen(s) / 16, path) != 0)
        return EXPR_BUDGET;
    struct lookup_ctx c = {b, sc};
    return memest_expr_eval(s, lookup_num, &c, out, why, whylen);
}

static const char *json_type_name(const cJSON *j)
{
    if (cJSON_IsNumber(j))
        return "a number";
    if (cJSON_IsString(j))
        return "a string";
    if (cJSON_IsBool(j))
        return "a boolean";
    if (cJSON_IsArray(j))
        return "a list";
    if (cJSON_IsObject(j))
        return "an object";
    return "null";
}

/* "comment" and "description" of obj, when present: free text, a string or
 * a list of strings (one per line). */
static int check_comment(struct builder *b, const cJSON *obj, const char *path)
{
    static const char *const keys[] = {"comment", "description"};
    for (int k = 0; k < 2; k++) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, keys[k]);
        if (!c || cJSON_IsString(c))
            continue;
        bool ok = cJSON_IsArray(c);
        for (const cJSON *e = ok ? c->child : NULL; e; e = e->next)
            ok &= cJSON_IsString(e);
        if (!ok)
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, path_join(b, path, keys[k]),
                               "\"%s\" must be a string or a list of strings, got %s", keys[k],
                               json_type_name(c));
    }
    return 0;
}

/* Evaluates a JSON value to a number (numbers, booleans and expression
 * strings; out->tag: the override it comes from, or NULL). Returns 0, or -1
 * with the error set at `path`. */
static int eval_number(struct builder *b, const cJSON *j, const struct scope *sc, const struct jp *path,
                       struct memest_expr_val *out)
{
    if (cJSON_IsNumber(j)) {
        if (!isfinite(j->valuedouble))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, jp_str(b, path), "number is not finite");
        *out = memest_expr_number(j->valuedouble);
        return 0;
    }
    if (cJSON_IsBool(j)) {
        *out = (struct memest_expr_val){.kind = MEMEST_EXPR_BOOL, .i = cJSON_IsTrue(j)};
        return 0;
    }
    if (cJSON_IsString(j)) {
        const struct var *v = scope_find(sc, j->valuestring, strlen(j->valuestring));
        if (v && v->kind == V_JSON)
            return eval_number(b, v->json, v->defscope, path, out);
        char why[160];
        int rc = eval_expr(b, j->valuestring, sc, path->base, out, why, sizeof why);
        if (rc == EXPR_BUDGET)
            return -1;
        if (rc != 0) {
            if (strstr(why, "'batch'"))
                return memest_errf(b->err, MEMEST_ERR_SCHEMA, jp_str(b, path),
                                   "\"%s\": %s (the batch size is only allowed as the element "
                                   "\"batch\" of a shape list; use -1 to infer a dimension)",
                                   j->valuestring, why);
            return value_err(b, out->tag, MEMEST_ERR_SCHEMA, jp_str(b, path),
                             "\"%.*s\": %s (expected a number, or an expression over the "
                             "variables)", memest_utf8_prefix(j->valuestring, 80), j->valuestring,
                             why);
        }
        return 0;
    }
    return memest_errf(b->err, MEMEST_ERR_SCHEMA, jp_str(b, path), "expected a number, got %s",
                       json_type_name(j));
}

/* Evaluates a JSON value to an integer in [lo, hi] (no bounds when both are
 * 0; always between -2^53 and 2^53, exclusive). *tag (may be NULL) gets the
 * override the value comes from. 0 / -1. */
static int eval_int(struct builder *b, const cJSON *j, const struct scope *sc, const struct jp *path,
                    int64_t lo, int64_t hi, int64_t *out, const void **tag)
{
    struct memest_expr_val v;
    if (eval_number(b, j, sc, path, &v) != 0)
        return -1;
    char got[32];
    memest_expr_str(&v, got, sizeof got);
    if (v.kind == MEMEST_EXPR_BOOL)
        return value_err(b, v.tag, MEMEST_ERR_SCHEMA, jp_str(b, path),
                         "expected an integer, got a boolean");
    if (v.kind == MEMEST_EXPR_REAL && v.d != floor(v.d))
        return value_err(b, v.tag, MEMEST_ERR_SCHEMA, jp_str(b, path),
                         "expected an integer, got %s", got);
    bool big = v.kind == MEMEST_EXPR_REAL ? fabs(v.d) >= INT_LIMIT
                                          : v.i >= MEMEST_EXPR_INT_LIMIT ||
                                                v.i <= -MEMEST_EXPR_INT_LIMIT;
    if (big)
        return value_err(b, v.tag, MEMEST_ERR_LIMIT, jp_str(b, path),
                         "integer %s is too %s (integers must be between -2^53 and 2^53, "
                         "exclusive)", got, memest_expr_real(&v) > 0 ? "large" : "small");
    int64_t i = v.kind == MEMEST_EXPR_REAL ? (int64_t)v.d : v.i;
    snprintf(got, sizeof got, "%lld", (long long)i); /* -0.0 is 0 */
    if ((lo || hi) && (i < lo || i > hi)) {
        if (hi >= (int64_t)INT_LIMIT)
            return value_err(b, v.tag, MEMEST_ERR_SCHEMA, jp_str(b, path),
                             "must be an integer >= %lld, got %s", (long long)lo, got);
        return value_err(b, v.tag, MEMEST_ERR_SCHEMA, jp_str(b, path),
                         "must be an integer between %lld and %lld inclusive, got %s",
                         (long long)lo, (long long)hi, got);
    }
    *out = i;
    if (tag)
        *tag = v.tag;
    return 0;
}

static bool choice_ok(const char *choices, const char *s)
{
    size_t n = strlen(s);
    for (const char *p = choices; *p;) {
        size_t len = strcspn(p, "|");
        if (len == n && strncmp(p, s, n) == 0)
            return true;
        p += len;
        if (*p == '|')
            p++;
    }
    return false;
}

/* Resolves a string that names a variable, for STR, NAME and list args. */
static const cJSON *deref(const cJSON *j, const struct scope **sc)
{
    for (int hops = 0; cJSON_IsString(j) && hops < 16; hops++) {
        const struct var *v = scope_find(*sc, j->valuestring, strlen(j->valuestring));
        if (!v || v->kind != V_JSON)
            break;
        j = v->json;
        *sc = v->defscope;
    }
    return j;
}

static int eval_list(struct builder *b, const struct memest_argspec *spec, const cJSON *j,
                     const struct scope *sc, const struct jp *path, struct memest_argval *av)
{
    int n = cJSON_GetArraySize(j);
    if (n > 64)
        return memest_errf(b->err, MEMEST_ERR_LIMIT, jp_str(b, path), "list has %d elements; at most 64", n);
    if (spec->n && n != spec->n)
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, jp_str(b, path),
                           "expected an integer or a list of %d integers, got a list of %d",
                           spec->n, n);
    if (spec->kind == MEMEST_ARG_SHAPE && n > MEMEST_MAX_DIMS)
        return memest_errf(b->err, MEMEST_ERR_LIMIT, jp_str(b, path),
                           "shape has %d dimensions; memest supports at most %d", n,
                           MEMEST_MAX_DIMS);
    av->n = n;
    av->v = memest_arena_alloc(&b->g->arena, sizeof *av->v * (size_t)(n ? n : 1));
    if (!av->v)
        return nomem(b);
    int i = 0;
    for (const cJSON *e = j->child; e; e = e->next, i++) {
        const struct jp ep = {path->base, path->key, i};
        if (spec->kind == MEMEST_ARG_SHAPE && cJSON_IsString(e) &&
            strcmp(e->valuestring, "batch") == 0) {
            av->v[i] = MEMEST_SHAPE_BATCH;
            continue;
        }
        int64_t lo = spec->lo, hi = spec->hi;
        if (spec->kind == MEMEST_ARG_SHAPE && !lo && !hi)
            lo = -1, hi = (int64_t)INT_LIMIT;
        if (eval_int(b, e, sc, &ep, lo, hi, &av->v[i], NULL) != 0)
            return -1;
    }
    return 0;
}

/* Evaluates one op argument against its spec. */
static int eval_arg(struct builder *b, const struct memest_argspec *spec, const cJSON *j,
                    const struct scope *sc, const struct jp *path, struct memest_argval *av)
{
    j = deref(j, &sc);
    av->given = true;
    av->n = 1;
    if (cJSON_IsNull(j)) {
        if (spec->optional) {
            av->none = true;
            return 0;
        }
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, jp_str(b, path), "may not be null");
    }
    switch (spec->kind) {
    case MEMEST_ARG_INT:
    case MEMEST_ARG_BOOL:
    case MEMEST_ARG_INTS:
    case MEMEST_ARG_SHAPE:
        if (spec->kind == MEMEST_ARG_INTS || spec->kind == MEMEST_ARG_SHAPE) {
            if (cJSON_IsArray(j))
                return eval_list(b, spec, j, sc, path, av);
            if (spec->kind == MEMEST_ARG_SHAPE)
                return memest_errf(b->err, MEMEST_ERR_SCHEMA, jp_str(b, path),
                                   "expected a list of integers, got %s", json_type_name(j));
        }
        av->v = memest_arena_alloc(&b->g->arena, sizeof *av->v * (size_t)(spec->n > 1 ? spec->n : 1));
        if (!av->v)
            return nomem(b);
        if (spec->kind == MEMEST_ARG_BOOL) {
            struct memest_expr_val v;
            if (eval_number(b, j, sc, path, &v) != 0)
                return -1;
            double d = memest_expr_real(&v);
            char got[32];
            if (v.kind != MEMEST_EXPR_BOOL && d != 0 && d != 1)
                return value_err(b, v.tag, MEMEST_ERR_SCHEMA, jp_str(b, path),
                                 "expected true or false, got %s",
                                 memest_expr_str(&v, got, sizeof got));
            av->v[0] = d != 0;
            return 0;
        }
        if (eval_int(b, j, sc, path, spec->lo, spec->hi, &av->v[0], NULL) != 0)
            return -1;
        if (spec->kind == MEMEST_ARG_INTS && spec->n > 1) {
            for (int i = 1; i < spec->n; i++)
                av->v[i] = av->v[0];
            av->n = spec->n;
        }
        return 0;
    case MEMEST_ARG_FLOAT: {
        struct memest_expr_val v;
        if (eval_number(b, j, sc, path, &v) != 0)
            return -1;
        if (v.kind == MEMEST_EXPR_BOOL)
            return value_err(b, v.tag, MEMEST_ERR_SCHEMA, jp_str(b, path),
                             "expected a number, got a boolean");
        av->f = memest_expr_real(&v);
        char lo[32], hi[32], got[32];
        if ((spec->flo != 0 || spec->fhi != 0) && (av->f < spec->flo || av->f > spec->fhi))
            return value_err(b, v.tag, MEMEST_ERR_SCHEMA, jp_str(b, path),
                             "must be between %s and %s, got %s",
                             memest_fmt_double(spec->flo, lo, sizeof lo),
                             memest_fmt_double(spec->fhi, hi, sizeof hi),
                             memest_expr_str(&v, got, sizeof got));
        return 0;
    }
    case MEMEST_ARG_STR:
    case MEMEST_ARG_NAME: {
        if (!cJSON_IsString(j))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, jp_str(b, path), "expected a string, got %s",
                               json_type_name(j));
        const char *s = j->valuestring;
        const struct var *v = scope_find(sc, s, strlen(s));
        const void *tag = NULL;
        if (v && v->kind == V_STR) {
            s = v->str;
            tag = v->ov;
            note_read(b, v->ov);
        }
        if (spec->kind == MEMEST_ARG_STR && spec->choices && !choice_ok(spec->choices, s))
            return value_err(b, tag, MEMEST_ERR_SCHEMA, jp_str(b, path),
                             "\"%s\" is not one of %s", s, spec->choices);
        av->s = s;
        return 0;
    }
    case MEMEST_ARG_COUNT:
        break;
    }
    return memest_errf(b->err, MEMEST_ERR_INTERNAL, jp_str(b, path), "internal: bad argument kind");
}

static int set_default(struct builder *b, const struct memest_argspec *spec,
                       struct memest_argval *av)
{
    av->given = false;
    av->n = 1;
    if (spec->optional) {
        av->none = true;
        return 0;
    }
    int n = spec->kind == MEMEST_ARG_INTS && spec->n > 1 ? spec->n : 1;
    av->v = memest_arena_alloc(&b->g->arena, sizeof *av->v * (size_t)n);
    if (!av->v)
        return nomem(b);
    for (int i = 0; i < n; i++)
        av->v[i] = spec->idef;
    av->n = n;
    if (spec->kind == MEMEST_ARG_INTS && spec->n == 0) /* any-length list: default is one value */
        av->n = 1;
    av->f = spec->fdef;
    av->s = spec->sdef;
    return 0;
}

/* Parses the op arguments of node object `obj` (keys not in skip[]). */
static int parse_args(struct builder *b, const struct memest_op_desc *op, const cJSON *obj,
                      const struct scope *sc, const char *path, struct memest_argval **out)
{
    struct memest_argval *av = memest_arena_alloc(&b->g->arena, sizeof *av * (size_t)(op->nargs ? op->nargs : 1));
    if (!av)
        return nomem(b);
    bool *seen = memest_arena_alloc(&b->g->arena, (size_t)(op->nargs ? op->nargs : 1));
    if (!seen)
        return nomem(b);
    for (const cJSON *c = obj->child; c; c = c->next) {
        if (is_node_key(c->string))
            continue;
        int idx = memest_op_arg_index(op, c->string);
        const struct jp ajp = {path, c->string, -1};
        if (idx < 0) {
            const char *ap = jp_str(b, &ajp);
            const char *cands[64 + N_NODE_KEYS];
            int n = 0;
            for (int i = 0; i < op->nargs && n < 64; i++)
                cands[n++] = op->args[i].name;
            for (int i = 0; i < N_NODE_KEYS; i++)
                cands[n++] = node_keys[i];
            const char *near = memest_suggest(c->string, cands, n);
            if (near)
                return memest_errf(b->err, MEMEST_ERR_SCHEMA, ap,
                                   "unknown argument \"%s\" for %s (did you mean \"%s\"?)",
                                   c->string, op->name, near);
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, ap, "unknown argument \"%s\" for %s",
                               c->string, op->name);
        }
        if (eval_arg(b, &op->args[idx], c, sc, &ajp, &av[idx]) != 0)
            return -1;
        seen[idx] = true;
    }
    for (int i = 0; i < op->nargs; i++) {
        if (seen[i])
            continue;
        if (op->args[i].required) {
            char *ap = path_join(b, path, op->args[i].name);
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, ap ? ap : path,
                               "%s needs the argument \"%s\"", op->name, op->args[i].name);
        }
        if (set_default(b, &op->args[i], &av[i]) != 0)
            return -1;
    }
    *out = av;
    return 0;
}

/* ---- name scopes: local node name -> packed reference ---- */

static int64_t pack(struct memest_ref r) { return ((int64_t)r.node << 16) | r.out; }
static struct memest_ref unpack(int64_t v)
{
    return (struct memest_ref){(uint32_t)(v >> 16), (uint16_t)(v & 0xFFFF)};
}

/* Resolves "name" or "name:K" in `names`. */
static int resolve_ref(struct builder *b, const struct memest_strmap *names, const char *s,
                       const struct jp *jpath, struct memest_ref *out)
{
    size_t len = strlen(s);
    const char *colon = strrchr(s, ':');
    long k = 0;
    if (colon && colon[1]) {
        char *end;
        k = strtol(colon + 1, &end, 10);
        if (*end || k < 0 || k > 255)
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, jp_str(b, jpath),
                               "bad output index in \"%s\" (expected NAME or NAME:K, K in 0..255)", s);
        len = (size_t)(colon - s);
    }
    int64_t v;
    if (!memest_strmap_get(names, s, len, &v)) {
        const char *cands[256];
        int n = 0;
        for (size_t i = 0; i < names->cap && n < 256; i++)
            if (names->keys[i])
                cands[n++] = names->keys[i];
        const char *near = memest_suggest(s, cands, n);
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, jp_str(b, jpath),
                           "\"%.*s\" is not an input or an earlier node here%s%s%s%s", (int)len, s,
                           near ? " (did you mean \"" : "", near ? near : "", near ? "\"?)" : "",
                           " (nodes may only use nodes listed before them, so cycles cannot be written)");
    }
    struct memest_ref r = unpack(v);
    if (k) {
        if (r.out != 0)
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, jp_str(b, jpath),
                               "\"%s\": output index of a reference that already selects one", s);
        r.out = (uint16_t)k;
    }
    *out = r;
    return 0;
}

static int add_name(struct builder *b, struct memest_strmap *names, const char *name,
                    struct memest_ref r, const char *path)
{
    int64_t old;
    if (memest_strmap_get(names, name, strlen(name), &old))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path, "duplicate node name \"%s\"", name);
    if (memest_strmap_put(names, name, strlen(name), pack(r)) != 0)
        return nomem(b);
    return 0;
}

static struct memest_node *new_node(struct builder *b, const char *fullname, const char *path)
{
    struct memest_graph *g = b->g;
    if (g->nnodes >= b->max_nodes) {
        value_err(b, b->scale_ov, MEMEST_ERR_LIMIT, path,
                  "the model expands to more than %u nodes (the limit); check \"repeat\" counts",
                  b->max_nodes);
        return NULL;
    }
    int64_t old;
    if (memest_strmap_get(&b->fullnames, fullname, strlen(fullname), &old)) {
        memest_errf(b->err, MEMEST_ERR_SCHEMA, path, "duplicate node name \"%s\"", fullname);
        memest_err_node(b->err, fullname);
        return NULL;
    }
    if (g->nnodes == b->cap_nodes) {
        uint32_t ncap = b->cap_nodes ? b->cap_nodes * 2 : 256;
        struct memest_node *nn = realloc(g->nodes, sizeof *nn * ncap);
        if (!nn) {
            nomem(b);
            return NULL;
        }
        g->nodes = nn;
        b->cap_nodes = ncap;
    }
    if (memest_strmap_put(&b->fullnames, fullname, strlen(fullname), g->nnodes) != 0) {
        nomem(b);
        return NULL;
    }
    struct memest_node *n = &g->nodes[g->nnodes++];
    memset(n, 0, sizeof *n);
    n->name = fullname;
    n->path = path;
    n->tie_node = -1;
    n->trainable = true;
    return n;
}

/* ---- blocks ---- */

static int expand_list(struct builder *b, const cJSON *layers, const char *path,
                       const char *prefix, const struct scope *sc, struct memest_strmap *names,
                       struct memest_ref first_in, bool trainable, struct memest_ref *out);

/* The value of the block argument `name` of a call at `path`: a number, a
 * boolean, a list, the value of the variable a string names, the value of
 * an expression, or else the string. Returns 0, or -1 when the work budget
 * is spent, a number is too large or an expression's values fail (a
 * division by zero, an overflow). */
static int eval_value(struct builder *b, const cJSON *j, const struct scope *sc, const char *path,
                      const char *name, struct var *out)
{
    struct var v = {.kind = V_JSON, .json = j, .defscope = sc};
    if (cJSON_IsNumber(j)) {
        if (check_held(b, j->valuedouble, path_join(b, path, name)) != 0)
            return -1;
        v.kind = V_NUM;
        v.val = memest_expr_number(j->valuedouble);
    } else if (cJSON_IsBool(j)) {
        v.kind = V_BOOL;
        v.val = (struct memest_expr_val){.kind = MEMEST_EXPR_BOOL, .i = cJSON_IsTrue(j)};
    } else if (cJSON_IsString(j)) {
        const struct var *named = scope_find(sc, j->valuestring, strlen(j->valuestring));
        if (named) {
            v = *named;
        } else {
            char why[160];
            int rc = eval_expr(b, j->valuestring, sc, path, &v.val, why, sizeof why);
            if (rc == EXPR_BUDGET)
                return -1;
            if (rc == EXPR_VALUE) /* an expression, whose values fail */
                return value_err(b, v.val.tag, MEMEST_ERR_SCHEMA, path_join(b, path, name),
                                 "\"%.*s\": %s", memest_utf8_prefix(j->valuestring, 80),
                                 j->valuestring, why);
            v.ov = v.val.tag;
            if (rc == 0) {
                v.kind = v.val.kind == MEMEST_EXPR_BOOL ? V_BOOL : V_NUM;
            } else { /* not an expression: a string */
                v.kind = V_STR;
                v.str = j->valuestring;
            }
        }
    }
    *out = v;
    return 0;
}

/* Records the instance of block `bname` whose nodes are first..nnodes-1. */
static int add_block_inst(struct builder *b, const char *fullname, const char *bname,
                          uint32_t first)
{
    struct memest_graph *g = b->g;
    if (g->nblocks == g->cap_blocks) {
        uint32_t ncap = g->cap_blocks ? g->cap_blocks * 2 : 16;
        struct memest_block_inst *nb = realloc(g->blocks, sizeof *nb * ncap);
        if (!nb)
            return nomem(b);
        g->blocks = nb;
        g->cap_blocks = ncap;
    }
    g->blocks[g->nblocks++] = (struct memest_block_inst){
        .name = fullname, .type = bname, .first = first, .last = g->nnodes - 1,
        .depth = (uint32_t)b->depth};
    return 0;
}

static int expand_block(struct builder *b, const char *bname, const cJSON *def, const cJSON *call,
                        const char *callpath, const char *fullname, const struct scope *caller,
                        const struct scope *globals, const struct memest_ref *ins, int nin,
                        bool trainable, struct memest_ref *out)
{
    char *bpath = memest_arena_concat(&b->g->arena, "blocks.", bname, (char *)NULL);
    if (!bpath)
        return nomem(b);
    for (int i = 0; i < b->depth; i++)
        if (strcmp(b->active[i], bname) == 0)
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, callpath,
                               "block \"%s\" uses itself (through %s)", bname,
                               b->active[b->depth - 1]);
    if (b->depth >= MEMEST_MAX_NESTING)
        return memest_errf(b->err, MEMEST_ERR_LIMIT, callpath,
                           "blocks nested deeper than %d", MEMEST_MAX_NESTING);
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(def, "args");
    const cJSON *formals = cJSON_GetObjectItemCaseSensitive(def, "inputs");
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(def, "layers");
    const cJSON *output = cJSON_GetObjectItemCaseSensitive(def, "output");
    int nformal = formals ? cJSON_GetArraySize(formals) : 1;
    if (nin != nformal)
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, callpath,
                           "block \"%s\" takes %d input%s, got %d", bname, nformal,
                           nformal == 1 ? "" : "s", nin);
    /* the block's arguments: given by the call, else the default. A scope of
     * many arguments is indexed, so that a call costs O(arguments). */
    int nargs = args ? cJSON_GetArraySize(args) : 0;
    if (charge(b, 1 + (uint64_t)nargs, callpath) != 0)
        return -1;
    struct var *vars = calloc((size_t)nargs + 1, sizeof *vars);
    const cJSON **given = calloc((size_t)nargs + 1, sizeof *given);
    struct memest_strmap argmap = {0}, names = {0};
    struct scope sc = {.parent = globals, .vars = vars, .nvars = nargs};
    int rc = vars && given ? 0 : nomem(b);
    int i = 0;
    for (const cJSON *a = args ? args->child : NULL; rc == 0 && a; a = a->next, i++)
        vars[i].name = a->string;
    if (rc == 0)
        rc = scope_index(b, &sc, &argmap);
    for (const cJSON *c = call->child; rc == 0 && c; c = c->next) {
        if (is_node_key(c->string))
            continue;
        const struct var *v = scope_find(&(struct scope){.vars = vars, .nvars = nargs,
                                                         .index = sc.index},
                                         c->string, strlen(c->string));
        if (v) {
            given[v - vars] = c;
            continue;
        }
        const char *cands[64];
        int n = 0;
        for (const cJSON *a = args ? args->child : NULL; a && n < 64; a = a->next)
            cands[n++] = a->string;
        const char *near = memest_suggest(c->string, cands, n);
        char *ap = path_join(b, callpath, c->string);
        rc = memest_errf(b->err, MEMEST_ERR_SCHEMA, ap ? ap : callpath,
                         "unknown argument \"%s\" for block \"%s\"%s%s%s", c->string, bname,
                         near ? " (did you mean \"" : "", near ? near : "", near ? "\"?)" : "");
    }
    char *argspath = path_join(b, bpath, "args"); /* where the defaults are */
    if (rc == 0 && !argspath)
        rc = nomem(b);
    i = 0;
    for (const cJSON *a = args ? args->child : NULL; rc == 0 && a; a = a->next, i++) {
        if (given[i]) {
            rc = eval_value(b, given[i], caller, callpath, a->string, &vars[i]);
        } else if (cJSON_IsNull(a)) {
            char *ap = path_join(b, callpath, a->string);
            rc = memest_errf(b->err, MEMEST_ERR_SCHEMA, ap ? ap : callpath,
                             "block \"%s\" needs the argument \"%s\"", bname, a->string);
        } else {
            rc = eval_value(b, a, globals, argspath, a->string, &vars[i]);
        }
        vars[i].name = a->string;
    }
    for (int k = 0; k < nformal && rc == 0; k++) {
        const cJSON *f = formals ? cJSON_GetArrayItem(formals, k) : NULL;
        rc = add_name(b, &names, f ? f->valuestring : "x", ins[k], bpath);
    }
    char *prefix = memest_arena_concat(&b->g->arena, fullname, ".", (char *)NULL);
    char *lpath = path_join(b, bpath, "layers");
    if (!prefix || !lpath)
        rc = nomem(b);
    uint32_t first = b->g->nnodes;
    b->active[b->depth++] = bname;
    if (rc == 0)
        rc = expand_list(b, layers, lpath, prefix, &sc, &names, ins[0], trainable, out);
    b->depth--;
    if (rc == 0 && b->g->nnodes > first)
        rc = add_block_inst(b, fullname, bname, first);
    if (rc == 0 && output) {
        const struct jp op = {bpath, "output", -1};
        set_ctx_node(b, fullname);
        rc = resolve_ref(b, &names, output->valuestring, &op, out);
    }
    memest_strmap_free(&names);
    memest_strmap_free(&argmap);
    free(vars);
    free(given);
    return rc;
}

/* Checks a block definition's own fields once. */
static int check_block_def(struct builder *b, const cJSON *def, const char *bname)
{
    char path[300];
    snprintf(path, sizeof path, "blocks.%s", bname);
    if (!cJSON_IsObject(def))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path, "a block must be an object");
    static const char *const keys[] = {"args", "inputs", "layers", "output", "comment"};
    for (const cJSON *c = def->child; c; c = c->next) {
        bool ok = false;
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
            ok |= strcmp(c->string, keys[i]) == 0;
        if (!ok) {
            const char *near = memest_suggest(c->string, keys, 5);
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, path,
                               "unknown field \"%s\" in a block%s%s%s", c->string,
                               near ? " (did you mean \"" : "", near ? near : "",
                               near ? "\"?)" : "");
        }
    }
    if (check_comment(b, def, path) != 0)
        return -1;
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(def, "args");
    if (args && !cJSON_IsObject(args))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path,
                           "\"args\" must be an object of name: default (null = required)");
    for (const cJSON *a = args ? args->child : NULL; a; a = a->next)
        if (is_node_key(a->string) || strcmp(a->string, "repeat_index") == 0 ||
            strcmp(a->string, "batch") == 0)
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, path_join(b, path, "args"),
                               "\"%s\" is reserved (a node field or a built-in name); "
                               "expected another argument name", a->string);
    const cJSON *formals = cJSON_GetObjectItemCaseSensitive(def, "inputs");
    if (formals) {
        if (!cJSON_IsArray(formals) || cJSON_GetArraySize(formals) < 1)
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, path,
                               "\"inputs\" must be a non-empty list of names");
        for (const cJSON *f = formals->child; f; f = f->next)
            if (!cJSON_IsString(f) || !*f->valuestring)
                return memest_errf(b->err, MEMEST_ERR_SCHEMA, path,
                                   "\"inputs\" must be a list of names");
    }
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(def, "layers");
    if (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) < 1)
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path,
                           "a block needs \"layers\": a non-empty list of nodes");
    const cJSON *output = cJSON_GetObjectItemCaseSensitive(def, "output");
    if (output && !cJSON_IsString(output))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path, "\"output\" must be a node name");
    if (memest_op_find(bname))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path,
                           "block name \"%s\" is already an op type", bname);
    return 0;
}

/* ---- nodes ---- */

static const struct scope *globals_of(const struct scope *sc)
{
    while (sc->parent)
        sc = sc->parent;
    return sc;
}

static int unknown_type(struct builder *b, const char *type, const char *path)
{
    int nops;
    const struct memest_op_desc *const *ops = memest_op_all(&nops);
    const char **cands = malloc(sizeof *cands * (size_t)(nops + 256));
    if (!cands)
        return nomem(b);
    int n = 0;
    for (int i = 0; i < nops; i++)
        cands[n++] = ops[i]->name;
    for (const cJSON *c = b->blocks ? b->blocks->child : NULL; c && n < nops + 256; c = c->next)
        cands[n++] = c->string;
    const char *near = memest_suggest(type, cands, n);
    memest_errf(b->err, MEMEST_ERR_SCHEMA, path, "unknown layer type \"%s\"%s%s%s", type,
                near ? " (did you mean \"" : "", near ? near : "", near ? "\"?)" : "");
    free(cands);
    return -1;
}

/* The definition of the block called `name`, or NULL (a hash lookup: a file
 * may define many blocks, and every node visited looks its type up). */
static const cJSON *find_block(const struct builder *b, const char *name)
{
    int64_t v;
    if (!memest_strmap_get(&b->blockmap, name, strlen(name), &v))
        return NULL;
    return (const cJSON *)(intptr_t)v;
}

/* A node's "type", which may name a string variable or block argument;
 * *ov (may be NULL) gets the override that variable comes from. */
static const char *resolve_type(const struct scope *sc, const cJSON *jtype,
                                const struct memest_override **ov)
{
    const char *type = jtype->valuestring;
    const struct var *tv = scope_find(sc, type, strlen(type));
    bool var = tv && tv->kind == V_STR;
    if (ov)
        *ov = var ? tv->ov : NULL;
    return var ? tv->str : type;
}

/* Ops without inputs (arange, zeros, parameter, ...) do not default to the
 * previous node. */
static bool takes_no_input(struct builder *b, const struct scope *sc, const cJSON *jtype)
{
    if (!cJSON_IsString(jtype))
        return false;
    const char *type = resolve_type(sc, jtype, NULL);
    if (find_block(b, type))
        return false;
    const struct memest_op_desc *op = memest_op_find(type);
    return op && op->max_in == 0;
}

static int expand_node(struct builder *b, const cJSON *obj, const char *npath, const char *prefix,
                       const struct scope *sc, struct memest_strmap *names, struct memest_ref prev,
                       int index, bool trainable, struct memest_ref *out)
{
    if (charge(b, 1, npath) != 0)
        return -1;
    if (!cJSON_IsObject(obj))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, npath, "a node must be an object, got %s",
                           json_type_name(obj));
    const cJSON *jname = cJSON_GetObjectItemCaseSensitive(obj, "name");
    const cJSON *jtype = cJSON_GetObjectItemCaseSensitive(obj, "type");
    const cJSON *jin = cJSON_GetObjectItemCaseSensitive(obj, "inputs");
    const cJSON *jrep = cJSON_GetObjectItemCaseSensitive(obj, "repeat");
    const cJSON *jif = cJSON_GetObjectItemCaseSensitive(obj, "if");
    const cJSON *jtrain = cJSON_GetObjectItemCaseSensitive(obj, "trainable");
    const cJSON *jtie = cJSON_GetObjectItemCaseSensitive(obj, "tie_weight");
    /* the local name goes into the scope's name map, which keeps the
     * pointer: a default name (the index, as nn.Sequential names children)
     * is owned by the graph's arena, never a buffer of this frame */
    char idx[24];
    const char *name = NULL;
    if (jname) {
        if (!cJSON_IsString(jname))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, path_join(b, npath, "name"),
                               "expected %s, got %s", NAME_RULE, json_type_name(jname));
        name = jname->valuestring;
        if (bad_name(name))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, path_join(b, npath, "name"),
                               "node name \"%.*s\": expected %s",
                               memest_utf8_prefix(name, 40), name, NAME_RULE);
    } else if (!(name = memest_arena_strdup(&b->g->arena, decimal(idx, index)))) {
        return nomem(b);
    }
    if (check_comment(b, obj, npath) != 0)
        return -1;
    char *full = memest_arena_concat(&b->g->arena, prefix, name, (char *)NULL);
    if (!full)
        return nomem(b);
    set_ctx_node(b, full);
    if (!cJSON_IsString(jtype))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path_join(b, npath, "type"),
                           jtype ? "\"type\" must be a string" : "node has no \"type\"");
    const struct memest_override *type_ov;
    const char *type = resolve_type(sc, jtype, &type_ov);
    note_read(b, type_ov);
    /* inputs */
    struct memest_ref ins[MEMEST_MAX_NODE_INPUTS];
    int nin = 0;
    if (jin) {
        if (cJSON_IsString(jin)) {
            const struct jp ip = {npath, "inputs", -1};
            if (resolve_ref(b, names, jin->valuestring, &ip, &ins[0]) != 0)
                return -1;
            nin = 1;
        } else if (cJSON_IsArray(jin)) {
            int i = 0;
            for (const cJSON *e = jin->child; e; e = e->next, i++) {
                const struct jp ip = {npath, "inputs", i};
                if (i >= MEMEST_MAX_NODE_INPUTS)
                    return memest_errf(b->err, MEMEST_ERR_LIMIT, jp_str(b, &ip), "more than %d inputs",
                                       MEMEST_MAX_NODE_INPUTS);
                if (!cJSON_IsString(e))
                    return memest_errf(b->err, MEMEST_ERR_SCHEMA, jp_str(b, &ip),
                                       "an input must be a node name, got %s", json_type_name(e));
                if (resolve_ref(b, names, e->valuestring, &ip, &ins[i]) != 0)
                    return -1;
            }
            nin = i;
        } else {
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, path_join(b, npath, "inputs"),
                               "\"inputs\" must be a list of node names");
        }
    } else if (prev.node != UINT32_MAX && !takes_no_input(b, sc, jtype)) {
        ins[0] = prev;
        nin = 1;
    }
    /* if */
    if (jif) {
        struct memest_expr_val cond;
        const struct jp ifp = {npath, "if", -1};
        if (eval_number(b, jif, sc, &ifp, &cond) != 0)
            return -1;
        if (memest_expr_real(&cond) == 0) { /* skipped: the node passes its first input through */
            if (nin < 1)
                return memest_errf(b->err, MEMEST_ERR_SCHEMA, npath,
                                   "a node that \"if\" can skip needs an input to pass through");
            *out = ins[0];
            return add_name(b, names, name, ins[0], npath);
        }
    }
    if (jtrain) {
        if (!cJSON_IsBool(jtrain))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, path_join(b, npath, "trainable"),
                               "\"trainable\" must be true or false");
        trainable = trainable && cJSON_IsTrue(jtrain);
    }
    int64_t repeat = 1;
    const struct jp rp = {npath, "repeat", -1};
    const void *rep_ov = NULL;
    if (jrep && eval_int(b, jrep, sc, &rp, 1, MEMEST_MAX_NODES, &repeat, &rep_ov) != 0)
        return -1;
    int64_t tie = -1;
    if (jtie) {
        if (!cJSON_IsString(jtie))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, path_join(b, npath, "tie_weight"),
                               "\"tie_weight\" must be the name of an earlier node");
        if (!memest_strmap_get(&b->fullnames, jtie->valuestring, strlen(jtie->valuestring), &tie))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, path_join(b, npath, "tie_weight"),
                               "\"%s\" is not an earlier node (use its full name, e.g. "
                               "\"block.layer\")", jtie->valuestring);
    }
    const cJSON *blockdef = find_block(b, type);
    const struct memest_op_desc *op = blockdef ? NULL : memest_op_find(type);
    if (!blockdef && !op) {
        unknown_type(b, type, path_join(b, npath, "type"));
        return blame(b, type_ov);
    }
    if (blockdef && jtie)
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path_join(b, npath, "tie_weight"),
                           "\"tie_weight\" is for layers with a weight, not blocks");

    struct memest_ref cur = nin ? ins[0] : (struct memest_ref){UINT32_MAX, 0};
    struct var rv = {.name = "repeat_index", .kind = V_NUM};
    struct scope rsc = {.parent = sc, .vars = &rv, .nvars = jrep ? 1 : 0};
    const struct memest_override *outer_scale = b->scale_ov;
    if (rep_ov) /* the limits the copies reach are the override's fault */
        b->scale_ov = rep_ov;
    for (int64_t r = 0; r < repeat; r++) {
        if (r > 0 && charge(b, 1, npath) != 0)
            return -1;
        rv.val = (struct memest_expr_val){.kind = MEMEST_EXPR_INT, .i = r};
        if (nin)
            ins[0] = cur;
        char digits[24];
        char *fname = jrep ? memest_arena_concat(&b->g->arena, full, ".", decimal(digits, r),
                                                 (char *)NULL)
                           : full;
        if (!fname)
            return nomem(b);
        set_ctx_node(b, fname);
        if (blockdef) {
            if (expand_block(b, type, blockdef, obj, npath, fname, &rsc, globals_of(sc), ins, nin,
                             trainable, &cur) != 0)
                return -1;
            set_ctx_node(b, fname);
        } else {
            if (nin < op->min_in || (op->max_in >= 0 && nin > op->max_in)) {
                if (op->min_in == op->max_in)
                    return memest_errf(b->err, MEMEST_ERR_SCHEMA, npath,
                                       "%s takes %d input%s, got %d", op->name, op->min_in,
                                       op->min_in == 1 ? "" : "s", nin);
                return memest_errf(b->err, MEMEST_ERR_SCHEMA, npath,
                                   "%s takes %d to %s inputs, got %d", op->name, op->min_in,
                                   op->max_in < 0 ? "any number of" : "", nin);
            }
            struct memest_node *n = new_node(b, fname, npath);
            if (!n)
                return -1;
            uint32_t id = b->g->nnodes - 1;
            n->op = op;
            n->trainable = trainable;
            n->tie_node = tie;
            n->nin = (uint32_t)nin;
            n->in = memest_arena_alloc(&b->g->arena, sizeof *n->in * (size_t)(nin ? nin : 1));
            if (!n->in)
                return nomem(b);
            memcpy(n->in, ins, sizeof *ins * (size_t)nin);
            struct memest_argval *args;
            if (parse_args(b, op, obj, &rsc, npath, &args) != 0)
                return -1;
            b->g->nodes[id].args = args;
            cur = (struct memest_ref){id, 0};
        }
    }
    b->scale_ov = outer_scale;
    *out = cur;
    return add_name(b, names, name, cur, npath);
}

static int expand_list(struct builder *b, const cJSON *layers, const char *path,
                       const char *prefix, const struct scope *sc, struct memest_strmap *names,
                       struct memest_ref first_in, bool trainable, struct memest_ref *out)
{
    struct memest_ref prev = first_in;
    int i = 0;
    for (const cJSON *n = layers->child; n; n = n->next, i++) {
        char digits[24];
        char *np = memest_arena_concat(&b->g->arena, path, "[", decimal(digits, i), "]", (char *)NULL);
        if (!np)
            return nomem(b);
        if (expand_node(b, n, np, prefix, sc, names, prev, i, trainable, &prev) != 0)
            return -1;
    }
    *out = prev;
    return 0;
}

/* ---- top level ---- */

/* The value of an override: a number in the command line's syntax
 * (format.h: decimal, an optional '-'), true or false, else a string. */
static int parse_override(struct builder *b, const struct memest_override *ov, struct var *v)
{
    const char *s = ov->value, *opt = opt_of(ov);
    bool neg = s[0] == '-';
    struct memest_decimal n;
    memest_decimal_read(s + neg, &n);
    v->ov = ov;
    if (n.len && s[neg + n.len] == '\0') {
        if (n.is_int ? !n.int_ok || n.i >= MEMEST_EXPR_INT_LIMIT
                     : n.real_ok && fabs(n.d) >= INT_LIMIT)
            return memest_errf(b->err, MEMEST_ERR_USAGE, NULL,
                               "%s %s=%s: numbers must be between -2^53 and 2^53, exclusive",
                               opt, ov->name, s);
        if (!n.real_ok)
            return memest_errf(b->err, MEMEST_ERR_USAGE, NULL,
                               "%s %s=%s: the number is out of range (a real must be finite "
                               "and not so small that it rounds to 0)", opt, ov->name, s);
        v->kind = V_NUM;
        v->val = n.is_int ? (struct memest_expr_val){.kind = MEMEST_EXPR_INT, .i = neg ? -n.i : n.i}
                          : memest_expr_number(neg ? -n.d : n.d);
    } else if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0) {
        v->kind = V_BOOL;
        v->val = (struct memest_expr_val){.kind = MEMEST_EXPR_BOOL, .i = s[0] == 't'};
    } else {
        v->kind = V_STR;
        v->str = s;
    }
    return 0;
}

static int load_variables(struct builder *b, const cJSON *jvars, const struct memest_override *ov,
                          int nov, struct scope *globals)
{
    int n = jvars ? cJSON_GetArraySize(jvars) : 0;
    if (jvars && !cJSON_IsObject(jvars))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, "variables",
                           "\"variables\" must be an object of name: value");
    struct var *vars = memest_arena_alloc(&b->g->arena, sizeof *vars * (size_t)(n + 1));
    if (!vars)
        return nomem(b);
    int i = 0;
    for (const cJSON *c = jvars ? jvars->child : NULL; c; c = c->next, i++) {
        char *vp = path_join(b, "variables", c->string);
        if (!vp)
            return nomem(b);
        if (strcmp(c->string, "batch") == 0 || strcmp(c->string, "repeat_index") == 0)
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, vp, "\"%s\" is a reserved name",
                               c->string);
        if (cJSON_IsNumber(c)) {
            if (!isfinite(c->valuedouble))
                return memest_errf(b->err, MEMEST_ERR_SCHEMA, vp, "number is not finite");
            if (check_held(b, c->valuedouble, vp) != 0)
                return -1;
            vars[i] = (struct var){.kind = V_NUM, .val = memest_expr_number(c->valuedouble)};
        } else if (cJSON_IsBool(c)) {
            vars[i] = (struct var){.kind = V_BOOL,
                                   .val = {.kind = MEMEST_EXPR_BOOL, .i = cJSON_IsTrue(c)}};
        } else if (cJSON_IsString(c)) {
            vars[i] = (struct var){.kind = V_STR, .str = c->valuestring};
        } else if (cJSON_IsArray(c)) {
            vars[i] = (struct var){.kind = V_JSON, .json = c, .defscope = globals};
        } else {
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, vp,
                               "a variable must be a number, boolean, string or list");
        }
        vars[i].name = c->string;
    }
    for (int k = 0; k < nov; k++) {
        int j = 0;
        while (j < n && strcmp(vars[j].name, ov[k].name) != 0)
            j++;
        if (j == n) {
            const char *cands[256];
            int m = 0;
            for (int q = 0; q < n && q < 256; q++)
                cands[m++] = vars[q].name;
            const char *near = memest_suggest(ov[k].name, cands, m);
            return memest_errf(b->err, MEMEST_ERR_USAGE, NULL,
                               "%s %s: the model has no variable \"%s\"%s%s%s", opt_of(&ov[k]),
                               ov[k].name, ov[k].name, near ? " (did you mean \"" : "", near ? near : "",
                               near ? "\"?)" : "");
        }
        static const char *const kind_name[] = {[V_NUM] = "a number", [V_BOOL] = "true or false",
                                                [V_STR] = "a string", [V_JSON] = "a list"};
        enum vkind was = vars[j].kind;
        if (was == V_JSON)
            return memest_errf(b->err, MEMEST_ERR_USAGE, NULL,
                               "%s %s: the variable is a list in the model; only numbers, "
                               "booleans and strings can be set", opt_of(&ov[k]), ov[k].name);
        if (parse_override(b, &ov[k], &vars[j]) != 0)
            return -1;
        if (vars[j].kind != was)
            return memest_errf(b->err, MEMEST_ERR_USAGE, NULL,
                               "%s %s=%s: expected %s, as the variable is in the model",
                               opt_of(&ov[k]), ov[k].name, ov[k].value, kind_name[was]);
        vars[j].name = ov[k].name;
    }
    globals->vars = vars;
    globals->nvars = n;
    return 0;
}

static int build_inputs(struct builder *b, const cJSON *jin, const struct scope *globals,
                        struct memest_strmap *names, struct memest_ref *first)
{
    if (!cJSON_IsArray(jin) || cJSON_GetArraySize(jin) < 1)
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, "inputs",
                           jin ? "\"inputs\" must be a non-empty list"
                               : "the model has no \"inputs\" list");
    int i = 0;
    for (const cJSON *c = jin->child; c; c = c->next, i++) {
        char *ip = memest_arena_printf(&b->g->arena, "inputs[%d]", i);
        if (!ip)
            return nomem(b);
        if (!cJSON_IsObject(c))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, ip, "an input must be an object");
        const cJSON *jname = cJSON_GetObjectItemCaseSensitive(c, "name");
        if (!cJSON_IsString(jname) || bad_name(jname->valuestring))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, path_join(b, ip, "name"),
                               "an input needs a \"name\": %s", NAME_RULE);
        struct memest_node *n = new_node(b, jname->valuestring, ip);
        if (!n)
            return -1;
        uint32_t id = b->g->nnodes - 1;
        n->op = &memest_op_input;
        n->trainable = false;
        struct memest_argval *args;
        if (parse_args(b, &memest_op_input, c, globals, ip, &args) != 0)
            return -1;
        b->g->nodes[id].args = args;
        if (add_name(b, names, jname->valuestring, (struct memest_ref){id, 0}, ip) != 0)
            return -1;
        if (i == 0)
            *first = (struct memest_ref){id, 0};
    }
    return 0;
}

/* "loss": {"type": "crossentropyloss"} (PyTorch's loss class name, any
 * case), the loss the training-step simulator applies to the last output. */
static int parse_loss(struct builder *b, const cJSON *j)
{
    if (!j)
        return 0;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
    if (!cJSON_IsObject(j) || !cJSON_IsString(t))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, "loss",
                           "\"loss\" must be an object such as {\"type\": \"crossentropyloss\"}");
    for (const cJSON *c = j->child; c; c = c->next)
        if (strcmp(c->string, "type") != 0 && strcmp(c->string, "comment") != 0)
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, path_join(b, "loss", c->string),
                               "unknown field \"%s\" (a loss has \"type\" and \"comment\")",
                               c->string);
    enum memest_loss l;
    if (memest_loss_parse(t->valuestring, &l) != 0)
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, "loss.type",
                           "unknown loss \"%s\" (one of %s)", t->valuestring, memest_loss_names());
    b->g->loss = memest_loss_name(l);
    return 0;
}

/* graph.h's overrides: the overrides the expansion read, as written on the
 * command line. 0 / -1. */
static int note_overrides(struct builder *b)
{
    const char *note = NULL;
    for (int k = 0; k < b->nov; k++) {
        if (!b->ov_read[k])
            continue;
        const struct memest_override *ov = &b->ov[k];
        note = memest_arena_concat(&b->g->arena, note ? note : "", note ? ", " : "", opt_of(ov),
                                   " ", ov->name, "=", ov->value, (char *)NULL);
        if (!note)
            return nomem(b);
    }
    b->g->overrides = note;
    return 0;
}

static int build(struct builder *b, const cJSON *root, const struct memest_override *ov, int nov)
{
    static const char *const keys[] = {"name", "inputs", "layers", "blocks", "variables",
                                       "outputs", "description", "comment", "loss"};
    const int nkeys = (int)(sizeof keys / sizeof *keys);
    for (const cJSON *c = root->child; c; c = c->next) {
        int k = 0;
        while (k < nkeys && strcmp(c->string, keys[k]) != 0)
            k++;
        if (k == nkeys) {
            const char *near = memest_suggest(c->string, keys, nkeys);
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, c->string,
                               "unknown top-level field \"%s\"%s%s%s", c->string,
                               near ? " (did you mean \"" : "", near ? near : "",
                               near ? "\"?)" : "");
        }
    }
    const cJSON *jname = cJSON_GetObjectItemCaseSensitive(root, "name");
    if (jname && !cJSON_IsString(jname))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, "name", "\"name\" must be a string, got %s",
                           json_type_name(jname));
    if (check_comment(b, root, "") != 0)
        return -1;
    b->g->name = jname ? jname->valuestring : "model";
    b->blocks = cJSON_GetObjectItemCaseSensitive(root, "blocks");
    if (b->blocks && !cJSON_IsObject(b->blocks))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, "blocks",
                           "\"blocks\" must be an object of name: block");
    for (const cJSON *c = b->blocks ? b->blocks->child : NULL; c; c = c->next) {
        if (check_block_def(b, c, c->string) != 0)
            return -1;
        if (memest_strmap_put(&b->blockmap, c->string, strlen(c->string), (int64_t)(intptr_t)c) != 0)
            return nomem(b);
    }
    b->ov = ov;
    b->nov = nov > 0 ? nov : 0;
    b->ov_read = memest_arena_alloc(&b->g->arena, (size_t)b->nov + 1);
    if (!b->ov_read)
        return nomem(b);
    memset(b->ov_read, 0, (size_t)b->nov + 1);
    struct scope globals = {0};
    struct memest_strmap globals_index = {0};
    if (load_variables(b, cJSON_GetObjectItemCaseSensitive(root, "variables"), ov, nov, &globals) != 0 ||
        scope_index(b, &globals, &globals_index) != 0) {
        memest_strmap_free(&globals_index);
        return -1;
    }
    struct memest_strmap names = {0};
    struct memest_ref first = {UINT32_MAX, 0}, last;
    int rc = build_inputs(b, cJSON_GetObjectItemCaseSensitive(root, "inputs"), &globals, &names, &first);
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    if (rc == 0 && (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) < 1))
        rc = memest_errf(b->err, MEMEST_ERR_SCHEMA, "layers",
                         layers ? "\"layers\" must be a non-empty list of nodes"
                                : "the model has no \"layers\" list");
    if (rc == 0)
        rc = expand_list(b, layers, "layers", "", &globals, &names, first, true, &last);
    set_ctx_node(b, ""); /* errors after the nodes are about no node */
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(root, "outputs");
    if (rc == 0 && outs) {
        if (!cJSON_IsArray(outs) || cJSON_GetArraySize(outs) < 1 || cJSON_GetArraySize(outs) > 64)
            rc = memest_errf(b->err, MEMEST_ERR_SCHEMA, "outputs",
                             "\"outputs\" must be a list of 1 to 64 node names");
        int n = rc == 0 ? cJSON_GetArraySize(outs) : 0;
        b->g->outputs = n ? memest_arena_alloc(&b->g->arena, sizeof *b->g->outputs * (size_t)n) : NULL;
        if (n && !b->g->outputs)
            rc = nomem(b);
        int i = 0;
        for (const cJSON *e = outs->child; rc == 0 && e; e = e->next, i++) {
            const struct jp op = {"outputs", NULL, i};
            if (!cJSON_IsString(e))
                rc = memest_errf(b->err, MEMEST_ERR_SCHEMA, jp_str(b, &op), "expected a node name");
            else
                rc = resolve_ref(b, &names, e->valuestring, &op, &b->g->outputs[i]);
        }
        b->g->noutputs = (uint32_t)n;
    } else if (rc == 0) {
        b->g->outputs = memest_arena_alloc(&b->g->arena, sizeof *b->g->outputs);
        if (!b->g->outputs)
            rc = nomem(b);
        else
            b->g->outputs[0] = last, b->g->noutputs = 1;
    }
    if (rc == 0)
        rc = parse_loss(b, cJSON_GetObjectItemCaseSensitive(root, "loss"));
    if (rc == 0)
        rc = note_overrides(b);
    memest_strmap_free(&names);
    memest_strmap_free(&globals_index);
    return rc;
}

int memest_model_build(const struct memest_model *m, const struct memest_override *ov, int nov,
                       struct memest_graph *g, struct memest_error *err)
{
    memset(g, 0, sizeof *g);
    g->file = m->file;
    memest_err_file(err, m->file);
    struct builder b = {.m = m, .g = g, .err = err,
                        .max_nodes = m->max_nodes ? m->max_nodes : MEMEST_MAX_NODES};
    b.max_work = (uint64_t)b.max_nodes * WORK_PER_NODE;
    int rc = build(&b, m->root, ov, nov);
    g->max_cost = memest_cost_limit(b.max_nodes);
    g->build_work = b.work;
    memest_strmap_free(&b.fullnames);
    memest_strmap_free(&b.blockmap);
    if (rc != 0)
        memest_graph_free(g);
    else
        err->node[0] = '\0';
    return rc;
}

void memest_graph_free(struct memest_graph *g)
{
    free(g->nodes);
    free(g->blocks);
    memest_arena_free(&g->arena);
    memset(g, 0, sizeof *g);
}

int64_t memest_graph_find(const struct memest_graph *g, const char *name)
{
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0)
            return i;
    return -1;
}

int memest_graph_unused_inputs(const struct memest_graph *g, uint32_t *count, uint32_t *first,
                               struct memest_error *err)
{
    uint32_t ninputs = 0; /* the inputs are the first nodes */
    while (ninputs < g->nnodes && g->nodes[ninputs].op == &memest_op_input)
        ninputs++;
    bool *used = calloc(ninputs ? ninputs : 1, sizeof *used);
    if (!used)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    for (uint32_t o = 0; o < g->noutputs; o++)
        if (g->outputs[o].node < ninputs)
            used[g->outputs[o].node] = true;
    for (uint32_t n = ninputs; n < g->nnodes; n++)
        for (uint32_t k = 0; k < g->nodes[n].nin; k++)
            if (g->nodes[n].in[k].node < ninputs)
                used[g->nodes[n].in[k].node] = true;
    *count = 0;
    for (uint32_t i = ninputs; i-- > 0;)
        if (!used[i]) {
            ++*count;
            *first = i;
        }
    free(used);
    return 0;
}
