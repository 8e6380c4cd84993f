/* build_vars.c - the model's variables, the values a Hugging Face config
 * and the --set (and --sweep-var) overrides give them, the derived
 * variables ("let") and the model's "checks" (the scopes they are looked up
 * in and the evaluator: build_eval.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "memest/escape.h"
#include "memest/format.h"
#include "memest/suggest.h"

#include "build_internal.h"
#include "hf_internal.h"

/* A number held by a variable or a block argument must be below 2^53 in
 * magnitude, as integers are: JSON rounds larger integers silently, and an
 * expression could bring such a value back below 2^53 with a wrong value.
 * Returns 0, or -1 with a limit error at `path`. */
int mb_check_held(struct builder *b, double d, const char *path)
{
    if (fabs(d) < INT_LIMIT)
        return 0;
    if (!isfinite(d))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path, "number is not finite (%s)",
                           mb_json_nonfinite(d));
    char v[32];
    return memest_errf(b->err, MEMEST_ERR_LIMIT, path,
                       "%s is too large: the numbers of variables and block arguments must be "
                       "between -2^53 and 2^53, exclusive (JSON rounds larger integers)",
                       memest_fmt_double(d, v, sizeof v));
}

/* The value of an override: a number in the command line's syntax
 * (format.h: decimal, an optional '-'), true or false, else a string. */
static int parse_override(struct builder *b, const struct memest_override *ov, struct var *v)
{
    const char *s = ov->value, *opt = mb_opt_of(ov);
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

/* The name in "variables" nearest to `name` (memest_suggest), or NULL. */
static const char *nearest_variable(const cJSON *jvars, const char *name)
{
    const char *cands[256];
    int n = 0;
    for (const cJSON *v = cJSON_IsObject(jvars) ? jvars->child : NULL; v && n < 256; v = v->next)
        cands[n++] = v->string;
    return memest_suggest(name, cands, n);
}

bool memest_model_has_variable(const struct memest_model *m, const char *name, const char **near)
{
    const cJSON *jvars = cJSON_GetObjectItemCaseSensitive(m->root, "variables");
    for (const cJSON *v = cJSON_IsObject(jvars) ? jvars->child : NULL; v; v = v->next)
        if (strcmp(v->string, name) == 0)
            return true;
    if (near)
        *near = nearest_variable(jvars, name);
    return false;
}

/* Whether "let" defines `name`. */
static bool is_let(const cJSON *jlet, const char *name)
{
    return cJSON_IsObject(jlet) && cJSON_GetObjectItemCaseSensitive(jlet, name) != NULL;
}

/* Applies the override ov to the variable it names in vars[0..n): it must
 * name one and keep its kind. */
static int apply_override(struct builder *b, struct var *vars, int n, const cJSON *jvars,
                          const cJSON *jlet, const struct memest_override *ov)
{
    int j = 0;
    while (j < n && strcmp(vars[j].name, ov->name) != 0)
        j++;
    if (j == n && is_let(jlet, ov->name))
        return memest_errf(b->err, MEMEST_ERR_USAGE, NULL,
                           "%s %s: \"%s\" is derived (a \"let\" of the model) and cannot be "
                           "set; set the variables it is computed from", mb_opt_of(ov), ov->name,
                           ov->name);
    if (j == n) {
        char dym[sizeof b->err->msg];
        return memest_errf(b->err, MEMEST_ERR_USAGE, NULL,
                           "%s %s: the model has no variable \"%s\"%s", mb_opt_of(ov), ov->name,
                           ov->name,
                           memest_suggest_clause(nearest_variable(jvars, ov->name), dym,
                                                 sizeof dym));
    }
    static const char *const kind_name[] = {[V_NUM] = "a number", [V_BOOL] = "true or false",
                                            [V_STR] = "a string", [V_JSON] = "a list"};
    enum vkind was = vars[j].kind;
    if (was == V_JSON)
        return memest_errf(b->err, MEMEST_ERR_USAGE, NULL,
                           "%s %s: the variable is a list in the model; only numbers, "
                           "booleans and strings can be set", mb_opt_of(ov), ov->name);
    if (was == V_STR && mb_from_config(b, ov)) { /* a config's string stays one ("1", "true") */
        vars[j].str = ov->value;
        vars[j].ov = ov;
        return 0;
    }
    if (parse_override(b, ov, &vars[j]) != 0)
        return -1;
    if (vars[j].kind != was)
        return memest_errf(b->err, MEMEST_ERR_USAGE, NULL,
                           "%s %s=%s: expected %s, as the variable is in the model",
                           mb_opt_of(ov), ov->name, ov->value, kind_name[was]);
    vars[j].name = ov->name;
    return 0;
}

/* "let": {"name": expression, ...}, derived variables appended to the
 * global scope in order, each evaluated over the variables (overrides
 * applied) and the lets before it. A value computed from an override
 * carries it, so that a check it fails blames the override. */
static int load_lets(struct builder *b, const cJSON *jlet, const cJSON *jvars,
                     struct scope *globals)
{
    if (jlet && !cJSON_IsObject(jlet))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, "let",
                           "\"let\" must be an object of name: expression");
    for (const cJSON *c = jlet ? jlet->child : NULL; c; c = c->next) {
        char *lp = mb_path_join(b, "let", c->string);
        if (!lp)
            return -1;
        const char *nm = c->string;
        bool ident = (nm[0] >= 'a' && nm[0] <= 'z') || (nm[0] >= 'A' && nm[0] <= 'Z') || nm[0] == '_';
        for (const char *p = nm; ident && *p; p++)
            ident = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
                    (*p >= '0' && *p <= '9');
        if (!ident || strlen(nm) > 100)
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, lp, "a \"let\" name must be a name "
                               "expressions can use: letters, digits and '_', not first a digit, "
                               "at most 100");
        if (strcmp(nm, "batch") == 0 || strcmp(nm, "repeat_index") == 0 ||
            strcmp(nm, "true") == 0 || strcmp(nm, "false") == 0)
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, lp, "\"%s\" is a reserved name", nm);
        if (cJSON_GetObjectItemCaseSensitive(jvars, nm))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, lp, "\"%s\" is already a variable",
                               nm);
        struct memest_expr_val v;
        if (cJSON_IsNumber(c) || cJSON_IsBool(c)) {
            const struct jp jp = {lp, NULL, -1};
            if (mb_eval_number(b, c, globals, &jp, &v) != 0)
                return -1;
        } else if (cJSON_IsString(c)) {
            char why[160];
            int rc = mb_eval_expr(b, c->valuestring, globals, lp, &v, why, sizeof why);
            if (rc == EXPR_BUDGET)
                return -1;
            if (rc != 0)
                return mb_value_err(b, v.tag, MEMEST_ERR_SCHEMA, lp, "\"%.*s\": %s (a \"let\" "
                                    "is an expression over the variables and the lets before it)",
                                    memest_utf8_prefix(c->valuestring, 80), c->valuestring, why);
        } else {
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, lp, "expected an expression, a number "
                               "or a boolean, got %s", mb_json_type_name(c));
        }
        if (v.kind == MEMEST_EXPR_REAL && !(fabs(v.d) < INT_LIMIT)) {
            char t[32];
            return mb_value_err(b, v.tag, MEMEST_ERR_LIMIT, lp, "%s is too large: variables "
                                "must be between -2^53 and 2^53, exclusive",
                                memest_expr_str(&v, t, sizeof t));
        }
        globals->vars[globals->nvars++] =
            (struct var){.name = nm, .kind = v.kind == MEMEST_EXPR_BOOL ? V_BOOL : V_NUM,
                         .val = v, .ov = v.tag};
    }
    return 0;
}

/* "variables" into the global scope, with the overrides applied: those of
 * the model's Hugging Face config (m->preset), then ov[0..nov), which win;
 * then the "let" values after them. 0 / -1. */
int mb_load_variables(struct builder *b, const cJSON *jvars, const cJSON *jlet,
                      const struct memest_override *ov, int nov, struct scope *globals)
{
    int n = jvars ? cJSON_GetArraySize(jvars) : 0;
    int nlet = cJSON_IsObject(jlet) ? cJSON_GetArraySize(jlet) : 0;
    if (jvars && !cJSON_IsObject(jvars))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, "variables",
                           "\"variables\" must be an object of name: value");
    struct var *vars = memest_arena_alloc(&b->g->arena, sizeof *vars * ((size_t)n + (size_t)nlet + 1));
    if (!vars)
        return mb_nomem(b);
    int i = 0;
    for (const cJSON *c = jvars ? jvars->child : NULL; c; c = c->next, i++) {
        char *vp = mb_path_join(b, "variables", c->string);
        if (!vp)
            return mb_nomem(b);
        if (strcmp(c->string, "batch") == 0 || strcmp(c->string, "repeat_index") == 0)
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, vp, "\"%s\" is a reserved name",
                               c->string);
        if (cJSON_IsNumber(c)) {
            if (!isfinite(c->valuedouble))
                return memest_errf(b->err, MEMEST_ERR_SCHEMA, vp, "number is not finite (%s)",
                                   mb_json_nonfinite(c->valuedouble));
            if (mb_check_held(b, c->valuedouble, vp) != 0)
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
    for (int k = 0; k < b->m->npreset; k++)
        if (apply_override(b, vars, n, jvars, jlet, &b->m->preset[k]) != 0)
            return -1;
    for (int k = 0; k < nov; k++)
        if (apply_override(b, vars, n, jvars, jlet, &ov[k]) != 0)
            return -1;
    globals->vars = vars;
    globals->nvars = n;
    return load_lets(b, jlet, jvars, globals);
}

/* "checks": [{"if": condition, "error": message}, ...]: the build fails
 * with the message when a condition is false (a usage error naming the
 * override a value of the condition comes from, as any check). */
int mb_run_checks(struct builder *b, const cJSON *jchecks, const struct scope *globals,
                  const char *path)
{
    if (!jchecks)
        return 0;
    if (!cJSON_IsArray(jchecks))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path,
                           "\"checks\" must be a list of {\"if\": condition, \"error\": message}");
    int i = 0;
    for (const cJSON *c = jchecks->child; c; c = c->next, i++) {
        const struct jp jp = {path, NULL, i};
        const char *cp = mb_jp_str(b, &jp);
        const cJSON *cond = cJSON_GetObjectItemCaseSensitive(c, "if");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(c, "error");
        if (!cJSON_IsObject(c) || !cond || !cJSON_IsString(msg) || !msg->valuestring[0])
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, cp, "a check is {\"if\": condition, "
                               "\"error\": message} (a non-empty message)");
        for (const cJSON *k = c->child; k; k = k->next)
            if (strcmp(k->string, "if") != 0 && strcmp(k->string, "error") != 0 &&
                strcmp(k->string, "comment") != 0)
                return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, cp, k->string),
                                   "unknown field \"%s\" (a check has \"if\", \"error\" "
                                   "and \"comment\")", k->string);
        const struct jp ip = {cp, "if", -1};
        struct memest_expr_val v;
        if (mb_eval_number(b, cond, globals, &ip, &v) != 0)
            return -1;
        if (v.kind != MEMEST_EXPR_BOOL) {
            char t[32];
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_jp_str(b, &ip),
                               "expected a condition (true or false), got %s",
                               memest_expr_str(&v, t, sizeof t));
        }
        if (!v.i)
            return mb_value_err(b, v.tag, MEMEST_ERR_SCHEMA, cp, "%s", msg->valuestring);
    }
    return 0;
}

/* graph.h's overrides: the overrides the expansion read, as written on the
 * command line. 0 / -1. */
int mb_note_overrides(struct builder *b)
{
    const char *note = NULL;
    for (int k = 0; k < b->nov; k++) {
        if (!b->ov_read[k])
            continue;
        const struct memest_override *ov = &b->ov[k];
        note = memest_arena_concat(&b->g->arena, note ? note : "", note ? ", " : "", mb_opt_of(ov),
                                   " ", ov->name, "=", ov->value, (char *)NULL);
        if (!note)
            return mb_nomem(b);
    }
    b->g->overrides = note;
    return 0;
}
