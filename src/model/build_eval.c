/* build_eval.c - the value evaluator: the scopes expressions look names up
 * in (globals, a block's arguments, "repeat_index"), an expression string
 * evaluated over them (expr.h) with its length charged to the work budget,
 * and a JSON value evaluated to a number (build_internal.h). */
#include <math.h>
#include <string.h>

#include "memest/escape.h"

#include "build_internal.h"
#include "hf_internal.h"

/* Notes that the expansion read the override ov (for graph.h's overrides). */
void mb_note_read(struct builder *b, const struct memest_override *ov)
{
    if (ov && b->nov > 0 && ov >= b->ov && ov < b->ov + b->nov)
        b->ov_read[ov - b->ov] = true;
}

/* The variable `name` (len bytes) of sc or the nearest scope around it that
 * has one, or NULL. */
const struct var *mb_scope_find(const struct scope *sc, const char *name, size_t len)
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
int mb_scope_index(struct builder *b, struct scope *sc, struct memest_strmap *map)
{
    if (sc->nvars <= SCOPE_INDEX_MIN)
        return 0;
    for (int i = 0; i < sc->nvars; i++)
        if (memest_strmap_put(map, sc->vars[i].name, strlen(sc->vars[i].name), i) != 0)
            return mb_nomem(b);
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
    const struct var *v = mb_scope_find(c->sc, name, len);
    if (!v || (v->kind != V_NUM && v->kind != V_BOOL))
        return -1;
    *val = v->val;
    val->tag = v->ov;
    mb_note_read(c->b, v->ov);
    return 0;
}

/* Evaluates an expression string, charging its length to the work budget. */
int mb_eval_expr(struct builder *b, const char *s, const struct scope *sc, const char *path,
                 struct memest_expr_val *out, char *why, size_t whylen)
{
    if (mb_charge(b, 1 + strlen(s) / 16, path) != 0)
        return EXPR_BUDGET;
    struct lookup_ctx c = {b, sc};
    return memest_expr_eval(s, lookup_num, &c, out, why, whylen);
}

/* Evaluates a JSON value to a number (numbers, booleans and expression
 * strings; out->tag: the override it comes from, or NULL). Returns 0, or -1
 * with the error set at `path`. */
int mb_eval_number(struct builder *b, const cJSON *j, const struct scope *sc,
                   const struct jp *path, struct memest_expr_val *out)
{
    if (cJSON_IsNumber(j)) {
        if (!isfinite(j->valuedouble))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_jp_str(b, path),
                               "number is not finite (%s)", mb_json_nonfinite(j->valuedouble));
        *out = memest_expr_number(j->valuedouble);
        return 0;
    }
    if (cJSON_IsBool(j)) {
        *out = (struct memest_expr_val){.kind = MEMEST_EXPR_BOOL, .i = cJSON_IsTrue(j)};
        return 0;
    }
    if (cJSON_IsString(j)) {
        const struct var *v = mb_scope_find(sc, j->valuestring, strlen(j->valuestring));
        if (v && v->kind == V_JSON)
            return mb_eval_number(b, v->json, v->defscope, path, out);
        char why[160];
        int rc = mb_eval_expr(b, j->valuestring, sc, path->base, out, why, sizeof why);
        if (rc == EXPR_BUDGET)
            return -1;
        if (rc != 0) {
            if (strstr(why, "'batch'"))
                return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_jp_str(b, path),
                                   "\"%s\": %s (the batch size is only allowed as the element "
                                   "\"batch\" of a shape list; use -1 to infer a dimension)",
                                   j->valuestring, why);
            return mb_value_err(b, out->tag, MEMEST_ERR_SCHEMA, mb_jp_str(b, path),
                                "\"%.*s\": %s (expected a number, or an expression over the "
                                "variables)", memest_utf8_prefix(j->valuestring, 80), j->valuestring,
                                why);
        }
        return 0;
    }
    return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_jp_str(b, path), "expected a number, got %s",
                       mb_json_type_name(j));
}
