/* build_args.c - argument values: a JSON value evaluated to a number or an
 * integer, each op argument checked against its op's argspec (defaults for
 * those not written), and the values of block arguments. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "memest/escape.h"
#include "memest/format.h"
#include "memest/suggest.h"

#include "build_internal.h"

static const char *const node_keys[] = {"name", "type", "inputs", "repeat", "if",
                                        "trainable", "tie_weight", "tie_params", "comment",
                                        "flat", "discarded", "fused_params", "held_until"};
#define N_NODE_KEYS ((int)(sizeof node_keys / sizeof *node_keys))

bool mb_is_node_key(const char *k)
{
    for (int i = 0; i < N_NODE_KEYS; i++)
        if (strcmp(k, node_keys[i]) == 0)
            return true;
    return false;
}

/* Evaluates a JSON value to an integer in [lo, hi] (no bounds when both are
 * 0; always between -2^53 and 2^53, exclusive). *tag (may be NULL) gets the
 * override the value comes from. 0 / -1. */
int mb_eval_int(struct builder *b, const cJSON *j, const struct scope *sc, const struct jp *path,
                int64_t lo, int64_t hi, int64_t *out, const void **tag)
{
    struct memest_expr_val v;
    if (mb_eval_number(b, j, sc, path, &v) != 0)
        return -1;
    char got[32];   /* the value as a message shows it: written on an error only */
    if (v.kind == MEMEST_EXPR_BOOL)
        return mb_value_err(b, v.tag, MEMEST_ERR_SCHEMA, mb_jp_str(b, path),
                            "expected an integer, got a boolean");
    if (v.kind == MEMEST_EXPR_REAL && v.d != floor(v.d))
        return mb_value_err(b, v.tag, MEMEST_ERR_SCHEMA, mb_jp_str(b, path),
                            "expected an integer, got %s", memest_expr_str(&v, got, sizeof got));
    bool big = v.kind == MEMEST_EXPR_REAL ? fabs(v.d) >= INT_LIMIT
                                          : v.i >= MEMEST_EXPR_INT_LIMIT ||
                                                v.i <= -MEMEST_EXPR_INT_LIMIT;
    if (big)
        return mb_value_err(b, v.tag, MEMEST_ERR_LIMIT, mb_jp_str(b, path),
                            "integer %s is too %s (integers must be between -2^53 and 2^53, "
                            "exclusive)", memest_expr_str(&v, got, sizeof got),
                            memest_expr_real(&v) > 0 ? "large" : "small");
    int64_t i = v.kind == MEMEST_EXPR_REAL ? (int64_t)v.d : v.i;
    if ((lo || hi) && (i < lo || i > hi)) {
        snprintf(got, sizeof got, "%lld", (long long)i); /* -0.0 is 0 */
        if (hi >= (int64_t)INT_LIMIT)
            return mb_value_err(b, v.tag, MEMEST_ERR_SCHEMA, mb_jp_str(b, path),
                                "must be an integer >= %lld, got %s", (long long)lo, got);
        return mb_value_err(b, v.tag, MEMEST_ERR_SCHEMA, mb_jp_str(b, path),
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
        const struct var *v = mb_scope_find(*sc, j->valuestring, strlen(j->valuestring));
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
        return memest_errf(b->err, MEMEST_ERR_LIMIT, mb_jp_str(b, path), "list has %d elements; at most 64", n);
    if (spec->n && n != spec->n)
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_jp_str(b, path),
                           "expected an integer or a list of %d integers, got a list of %d",
                           spec->n, n);
    if (spec->kind == MEMEST_ARG_SHAPE && n > MEMEST_MAX_DIMS)
        return memest_errf(b->err, MEMEST_ERR_LIMIT, mb_jp_str(b, path),
                           "shape has %d dimensions; memest supports at most %d", n,
                           MEMEST_MAX_DIMS);
    av->n = n;
    av->list = true;
    av->v = memest_arena_alloc(&b->g->arena, sizeof *av->v * (size_t)(n ? n : 1));
    if (!av->v)
        return mb_nomem(b);
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
        if (mb_eval_int(b, e, sc, &ep, lo, hi, &av->v[i], NULL) != 0)
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
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_jp_str(b, path), "may not be null");
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
                return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_jp_str(b, path),
                                   "expected a list of integers, got %s", mb_json_type_name(j));
        }
        av->v = memest_arena_alloc(&b->g->arena, sizeof *av->v * (size_t)(spec->n > 1 ? spec->n : 1));
        if (!av->v)
            return mb_nomem(b);
        if (spec->kind == MEMEST_ARG_BOOL) {
            struct memest_expr_val v;
            if (mb_eval_number(b, j, sc, path, &v) != 0)
                return -1;
            double d = memest_expr_real(&v);
            char got[32];
            if (v.kind != MEMEST_EXPR_BOOL && d != 0 && d != 1)
                return mb_value_err(b, v.tag, MEMEST_ERR_SCHEMA, mb_jp_str(b, path),
                                    "expected true or false, got %s",
                                    memest_expr_str(&v, got, sizeof got));
            av->v[0] = d != 0;
            return 0;
        }
        if (mb_eval_int(b, j, sc, path, spec->lo, spec->hi, &av->v[0], NULL) != 0)
            return -1;
        if (spec->kind == MEMEST_ARG_INTS && spec->n > 1) {
            for (int i = 1; i < spec->n; i++)
                av->v[i] = av->v[0];
            av->n = spec->n;
        }
        return 0;
    case MEMEST_ARG_FLOAT: {
        struct memest_expr_val v;
        if (mb_eval_number(b, j, sc, path, &v) != 0)
            return -1;
        if (v.kind == MEMEST_EXPR_BOOL)
            return mb_value_err(b, v.tag, MEMEST_ERR_SCHEMA, mb_jp_str(b, path),
                                "expected a number, got a boolean");
        av->f = memest_expr_real(&v);
        char lo[32], hi[32], got[32];
        if ((spec->flo != 0 || spec->fhi != 0) && (av->f < spec->flo || av->f > spec->fhi))
            return mb_value_err(b, v.tag, MEMEST_ERR_SCHEMA, mb_jp_str(b, path),
                                "must be between %s and %s, got %s",
                                memest_fmt_double(spec->flo, lo, sizeof lo),
                                memest_fmt_double(spec->fhi, hi, sizeof hi),
                                memest_expr_str(&v, got, sizeof got));
        return 0;
    }
    case MEMEST_ARG_STR:
    case MEMEST_ARG_NAME: {
        if (!cJSON_IsString(j))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_jp_str(b, path),
                               "expected a string, got %s", mb_json_type_name(j));
        const char *s = j->valuestring;
        const struct var *v = mb_scope_find(sc, s, strlen(s));
        const void *tag = NULL;
        if (v && v->kind == V_STR) {
            s = v->str;
            tag = v->ov;
            mb_note_read(b, v->ov);
        }
        if (spec->kind == MEMEST_ARG_STR && spec->choices && !choice_ok(spec->choices, s))
            return mb_value_err(b, tag, MEMEST_ERR_SCHEMA, mb_jp_str(b, path),
                                "\"%s\" is not one of %s", s, spec->choices);
        av->s = s;
        return 0;
    }
    case MEMEST_ARG_COUNT:
        break;
    }
    return memest_errf(b->err, MEMEST_ERR_INTERNAL, mb_jp_str(b, path), "internal: bad argument kind");
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
        return mb_nomem(b);
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
int mb_parse_args(struct builder *b, const struct memest_op_desc *op, const cJSON *obj,
                  const struct scope *sc, const char *path, struct memest_argval **out)
{
    struct memest_argval *av = memest_arena_alloc(&b->g->arena, sizeof *av * (size_t)(op->nargs ? op->nargs : 1));
    if (!av)
        return mb_nomem(b);
    bool *seen = memest_arena_alloc(&b->g->arena, (size_t)(op->nargs ? op->nargs : 1));
    if (!seen)
        return mb_nomem(b);
    for (const cJSON *c = obj->child; c; c = c->next) {
        if (mb_is_node_key(c->string))
            continue;
        int idx = memest_op_arg_index(op, c->string);
        const struct jp ajp = {path, c->string, -1};
        if (idx < 0) {
            const char *ap = mb_jp_str(b, &ajp);
            const char *cands[64 + N_NODE_KEYS];
            int n = 0;
            for (int i = 0; i < op->nargs && n < 64; i++)
                cands[n++] = op->args[i].name;
            for (int i = 0; i < N_NODE_KEYS; i++)
                cands[n++] = node_keys[i];
            char dym[sizeof b->err->msg];
            const char *near = memest_op_arg_alias(op, c->string);   /* epsilon -> eps */
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, ap, "unknown argument \"%s\" for %s%s",
                               c->string, op->name,
                               memest_suggest_clause(near ? near : memest_suggest(c->string, cands, n),
                                                     dym, sizeof dym));
        }
        if (eval_arg(b, &op->args[idx], c, sc, &ajp, &av[idx]) != 0)
            return -1;
        seen[idx] = true;
    }
    for (int i = 0; i < op->nargs; i++) {
        if (seen[i])
            continue;
        if (op->args[i].required) {
            char *ap = mb_path_join(b, path, op->args[i].name);
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, ap ? ap : path,
                               "%s needs the argument \"%s\"", op->name, op->args[i].name);
        }
        if (set_default(b, &op->args[i], &av[i]) != 0)
            return -1;
    }
    *out = av;
    return 0;
}

/* The value of the block argument `name` of a call at `path`: a number, a
 * boolean, a list, the value of the variable a string names, the value of
 * an expression, or else the string. Returns 0, or -1 when the work budget
 * is spent, a number is too large or an expression's values fail (a
 * division by zero, an overflow). */
int mb_eval_value(struct builder *b, const cJSON *j, const struct scope *sc, const char *path,
                  const char *name, struct var *out)
{
    struct var v = {.kind = V_JSON, .json = j, .defscope = sc};
    if (cJSON_IsNumber(j)) {
        if (mb_check_held(b, j->valuedouble, mb_path_join(b, path, name)) != 0)
            return -1;
        v.kind = V_NUM;
        v.val = memest_expr_number(j->valuedouble);
    } else if (cJSON_IsBool(j)) {
        v.kind = V_BOOL;
        v.val = (struct memest_expr_val){.kind = MEMEST_EXPR_BOOL, .i = cJSON_IsTrue(j)};
    } else if (cJSON_IsString(j)) {
        const struct var *named = mb_scope_find(sc, j->valuestring, strlen(j->valuestring));
        if (named) {
            v = *named;
        } else {
            char why[160];
            int rc = mb_eval_expr(b, j->valuestring, sc, path, &v.val, why, sizeof why);
            if (rc == EXPR_BUDGET)
                return -1;
            if (rc == EXPR_VALUE) /* an expression, whose values fail */
                return mb_value_err(b, v.val.tag, MEMEST_ERR_SCHEMA, mb_path_join(b, path, name),
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
