/* build_block.c - blocks: each definition checked once, and each call
 * expanded with its arguments in a scope of its own. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memest/suggest.h"

#include "build_internal.h"

/* Records the instance of block `bname` whose nodes are first..nnodes-1. */
static int add_block_inst(struct builder *b, const char *fullname, const char *bname,
                          uint32_t first, struct memest_ref arg)
{
    struct memest_graph *g = b->g;
    if (g->nblocks == g->cap_blocks) {
        uint32_t ncap = g->cap_blocks ? g->cap_blocks * 2 : 16;
        struct memest_block_inst *nb = realloc(g->blocks, sizeof *nb * ncap);
        if (!nb)
            return mb_nomem(b);
        g->blocks = nb;
        g->cap_blocks = ncap;
    }
    g->blocks[g->nblocks++] = (struct memest_block_inst){
        .name = fullname, .type = bname, .first = first, .last = g->nnodes - 1,
        .depth = (uint32_t)b->depth, .arg = arg};
    return 0;
}

/* A block's "let": {"name": expression, ...} evaluated in order in its
 * scope (the arguments, then the lets before), appended to sc->vars. */
static int block_lets(struct builder *b, const cJSON *jlet, const char *bpath, struct scope *sc,
                      struct memest_strmap *index)
{
    for (const cJSON *c = jlet ? jlet->child : NULL; c; c = c->next) {
        char *lp = mb_path_join(b, bpath, "let");
        lp = lp ? mb_path_join(b, lp, c->string) : NULL;
        if (!lp)
            return mb_nomem(b);
        struct memest_expr_val v;
        const struct jp jp = {lp, NULL, -1};
        if (mb_eval_number(b, c, sc, &jp, &v) != 0)
            return -1;
        if (v.kind == MEMEST_EXPR_REAL && !(fabs(v.d) < INT_LIMIT))
            return mb_value_err(b, v.tag, MEMEST_ERR_LIMIT, lp, "too large: values must be "
                                "between -2^53 and 2^53, exclusive");
        if (sc->index && memest_strmap_put(index, c->string, strlen(c->string), sc->nvars) != 0)
            return mb_nomem(b);
        sc->vars[sc->nvars++] =
            (struct var){.name = c->string, .kind = v.kind == MEMEST_EXPR_BOOL ? V_BOOL : V_NUM,
                         .val = v, .ov = v.tag};
    }
    return 0;
}

/* The block a "like" block stands for: its definition, with alias's
 * "args" as the values it gives (evaluated where the block is called, so
 * that they may read repeat_index; a call's own arguments win). */
static int follow_like(struct builder *b, const char *bname, const cJSON **def,
                       const cJSON **alias, const char *callpath)
{
    *alias = NULL;
    const cJSON *like = cJSON_GetObjectItemCaseSensitive(*def, "like");
    if (!like)
        return 0;
    const cJSON *target = mb_find_block(b, like->valuestring);
    if (!target || cJSON_GetObjectItemCaseSensitive(target, "like"))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, callpath,
                           "block \"%s\" is like \"%s\", which is %s", bname, like->valuestring,
                           target ? "a \"like\" block too (name the block it is like)"
                                  : "not a block");
    const cJSON *targs = cJSON_GetObjectItemCaseSensitive(target, "args");
    *alias = cJSON_GetObjectItemCaseSensitive(*def, "args");
    for (const cJSON *a = *alias ? (*alias)->child : NULL; a; a = a->next)
        if (!cJSON_GetObjectItemCaseSensitive(targs, a->string))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, callpath,
                               "block \"%s\" sets \"%s\", which is not an argument of \"%s\"",
                               bname, a->string, like->valuestring);
    *def = target;
    return 0;
}

/* The call's arguments: given[i] gets the call's value of argument i
 * (sc's first variables are the arguments); any other key is an error. */
static int match_args(struct builder *b, const char *bname, const cJSON *args, const cJSON *call,
                      const char *callpath, const struct scope *sc, const cJSON **given)
{
    for (const cJSON *c = call->child; c; c = c->next) {
        if (mb_is_node_key(c->string))
            continue;
        const struct var *v = mb_scope_find(&(struct scope){.vars = sc->vars, .nvars = sc->nvars,
                                                         .index = sc->index},
                                         c->string, strlen(c->string));
        if (v) {
            given[v - sc->vars] = c;
            continue;
        }
        const char *cands[64];
        int n = 0;
        for (const cJSON *a = args ? args->child : NULL; a && n < 64; a = a->next)
            cands[n++] = a->string;
        char *ap = mb_path_join(b, callpath, c->string);
        char dym[sizeof b->err->msg];
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, ap ? ap : callpath,
                           "unknown argument \"%s\" for block \"%s\"%s", c->string, bname,
                           memest_suggest_clause(memest_suggest(c->string, cands, n), dym,
                                                 sizeof dym));
    }
    return 0;
}

/* Where a block's argument values come from, in the order they win. */
struct arg_sources {
    const char *bpath;       /* blocks.B: the defaults, under B's "args" */
    const char *apath;       /* blocks.A of a "like" block A: its "args" */
    const char *callpath;    /* the call */
    const cJSON *alias;      /* A's "args" (NULL without "like") */
    const struct scope *caller, *globals;
};

/* vars[i] gets argument i: the call's value, else the "like" block's, else
 * the default (null: required). */
static int bind_args(struct builder *b, const char *bname, const cJSON *args,
                     const cJSON *const *given, const struct arg_sources *src, struct var *vars)
{
    char *argspath = mb_path_join(b, src->bpath, "args");
    char *aliaspath = mb_path_join(b, src->apath, "args");
    if (!argspath || !aliaspath)
        return mb_nomem(b);
    int i = 0, rc = 0;
    for (const cJSON *a = args ? args->child : NULL; rc == 0 && a; a = a->next, i++) {
        const cJSON *mine =
            src->alias ? cJSON_GetObjectItemCaseSensitive(src->alias, a->string) : NULL;
        if (given[i]) {
            rc = mb_eval_value(b, given[i], src->caller, src->callpath, a->string, &vars[i]);
        } else if (mine && !cJSON_IsNull(mine)) {
            rc = mb_eval_value(b, mine, src->caller, aliaspath, a->string, &vars[i]);
        } else if (cJSON_IsNull(a)) {
            char *ap = mb_path_join(b, src->callpath, a->string);
            rc = memest_errf(b->err, MEMEST_ERR_SCHEMA, ap ? ap : src->callpath,
                             "block \"%s\" needs the argument \"%s\"", bname, a->string);
        } else {
            rc = mb_eval_value(b, a, src->globals, argspath, a->string, &vars[i]);
        }
        vars[i].name = a->string;
    }
    return rc;
}

int mb_expand_block(struct builder *b, const char *bname, const cJSON *def, const cJSON *call,
                    const char *callpath, const char *fullname, const struct scope *caller,
                    const struct scope *globals, const struct memest_ref *ins, int nin,
                    bool trainable, struct memest_ref *out)
{
    char *bpath = memest_arena_concat(&b->g->arena, "blocks.", bname, (char *)NULL);
    if (!bpath)
        return mb_nomem(b);
    for (int i = 0; i < b->depth; i++)
        if (strcmp(b->active[i], bname) == 0)
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, callpath,
                               "block \"%s\" uses itself (through %s)", bname,
                               b->active[b->depth - 1]);
    if (b->depth >= MEMEST_MAX_NESTING)
        return memest_errf(b->err, MEMEST_ERR_LIMIT, callpath,
                           "blocks nested deeper than %d", MEMEST_MAX_NESTING);
    const cJSON *alias;   /* a "like" block's own defaults */
    const char *apath = bpath;
    if (follow_like(b, bname, &def, &alias, callpath) != 0)
        return -1;
    if (alias) /* what the expansion says of the block it is like */
        bpath = memest_arena_concat(&b->g->arena, "blocks.",
                                    cJSON_GetObjectItemCaseSensitive(
                                        mb_find_block(b, bname), "like")->valuestring,
                                    (char *)NULL);
    if (!bpath)
        return mb_nomem(b);
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(def, "args");
    const cJSON *jlet = cJSON_GetObjectItemCaseSensitive(def, "let");
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
    int nlet = jlet ? cJSON_GetArraySize(jlet) : 0;
    if (mb_charge(b, 1 + (uint64_t)nargs + (uint64_t)nlet, callpath) != 0)
        return -1;
    struct var *vars = calloc((size_t)nargs + (size_t)nlet + 1, sizeof *vars);
    const cJSON **given = calloc((size_t)nargs + 1, sizeof *given);
    struct memest_strmap argmap = {0}, names = {0};
    struct scope sc = {.parent = globals, .vars = vars, .nvars = nargs};
    int rc = vars && given ? 0 : mb_nomem(b);
    int i = 0;
    for (const cJSON *a = args ? args->child : NULL; rc == 0 && a; a = a->next, i++)
        vars[i].name = a->string;
    if (rc == 0)
        rc = mb_scope_index(b, &sc, &argmap);
    if (rc == 0)
        rc = match_args(b, bname, args, call, callpath, &sc, given);
    if (rc == 0) {
        const struct arg_sources src = {bpath, apath, callpath, alias, caller, globals};
        rc = bind_args(b, bname, args, given, &src, vars);
    }
    if (rc == 0)
        rc = block_lets(b, jlet, bpath, &sc, &argmap);
    char *cpath = mb_path_join(b, bpath, "checks");
    if (rc == 0)
        rc = cpath ? mb_run_checks(b, cJSON_GetObjectItemCaseSensitive(def, "checks"), &sc, cpath)
                   : mb_nomem(b);
    for (int k = 0; k < nformal && rc == 0; k++) {
        const cJSON *f = formals ? cJSON_GetArrayItem(formals, k) : NULL;
        rc = mb_add_name(b, &names, f ? f->valuestring : "x", ins[k], bpath);
    }
    bool flat = b->flat;   /* this call's, set by expand_node */
    b->flat = false;
    char *prefix = memest_arena_concat(&b->g->arena, fullname, *fullname && flat ? "." : "",
                                       flat ? "" : ".", (char *)NULL);
    char *lpath = mb_path_join(b, bpath, "layers");
    if (!prefix || !lpath)
        rc = mb_nomem(b);
    uint32_t first = b->g->nnodes;
    b->active[b->depth++] = bname;
    if (rc == 0)
        rc = mb_expand_list(b, layers, lpath, prefix, &sc, &names, ins[0], trainable, out);
    b->depth--;
    /* an "inline" block is part of its caller's forward: no instance (its
     * inputs are not held to its end, it is not a unit to checkpoint) */
    if (rc == 0 && b->g->nnodes > first && !flat &&
        !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(def, "inline")))
        rc = add_block_inst(b, fullname, bname, first, ins[0]);
    /* "held_until" may name the call: until its last node */
    if (rc == 0 && b->g->nnodes > first && !flat &&
        memest_strmap_put(&b->callmap, fullname, strlen(fullname), b->g->nnodes - 1) != 0)
        rc = mb_nomem(b);
    if (rc == 0 && output) {
        const struct jp op = {bpath, "output", -1};
        mb_set_ctx_node(b, fullname);
        rc = mb_resolve_ref(b, &names, output->valuestring, &op, out);
    }
    memest_strmap_free(&names);
    memest_strmap_free(&argmap);
    free(vars);
    free(given);
    return rc;
}

/* Checks a "like" block's fields: {"like": block, "args": {...}, "comment"}. */
static int check_like_def(struct builder *b, const cJSON *def, const char *path)
{
    const cJSON *like = cJSON_GetObjectItemCaseSensitive(def, "like");
    if (!cJSON_IsString(like) || !*like->valuestring)
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path, "\"like\" must name a block");
    for (const cJSON *c = def->child; c; c = c->next)
        if (strcmp(c->string, "like") != 0 && strcmp(c->string, "args") != 0 &&
            strcmp(c->string, "comment") != 0)
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, path,
                               "a block that is \"like\" another has \"args\" and "
                               "\"comment\" only, not \"%s\"", c->string);
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(def, "args");
    if (args && !cJSON_IsObject(args))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path,
                           "\"args\" must be an object of name: value");
    return 0;
}

/* A name expressions can use: letters, digits and '_', not first a digit. */
static bool is_ident(const char *s)
{
    size_t n = strlen(s);
    bool ok = n > 0 && n <= 100 && !(s[0] >= '0' && s[0] <= '9');
    for (const char *p = s; ok && *p; p++)
        ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
             (*p >= '0' && *p <= '9');
    return ok;
}

/* A block's "let" (names not its arguments') and "checks" (a list). */
static int check_let_checks(struct builder *b, const cJSON *def, const char *path)
{
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(def, "args");
    const cJSON *jlet = cJSON_GetObjectItemCaseSensitive(def, "let");
    if (jlet && !cJSON_IsObject(jlet))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path,
                           "\"let\" must be an object of name: expression");
    for (const cJSON *c = jlet ? jlet->child : NULL; c; c = c->next)
        if (cJSON_GetObjectItemCaseSensitive(args, c->string) || mb_is_node_key(c->string) ||
            strcmp(c->string, "repeat_index") == 0 || strcmp(c->string, "batch") == 0 ||
            !is_ident(c->string))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, path, "let"),
                               "\"%s\": a block's \"let\" names a value expressions can use, "
                               "not an argument of the block or a reserved name", c->string);
    const cJSON *checks = cJSON_GetObjectItemCaseSensitive(def, "checks");
    if (checks && !cJSON_IsArray(checks))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path,
                           "\"checks\" must be a list of {\"if\": condition, \"error\": "
                           "message}");
    return 0;
}

/* Checks a block definition's own fields once. */
int mb_check_block_def(struct builder *b, const cJSON *def, const char *bname)
{
    char path[300];
    snprintf(path, sizeof path, "blocks.%s", bname);
    if (!cJSON_IsObject(def))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path, "a block must be an object");
    if (memest_op_find(bname))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path,
                           "block name \"%s\" is already an op type", bname);
    if (cJSON_GetObjectItemCaseSensitive(def, "like"))
        return check_like_def(b, def, path);
    static const char *const keys[] = {"args", "inputs", "layers", "output", "comment", "let",
                                       "checks", "like", "inline"};
    const int nkeys = (int)(sizeof keys / sizeof *keys);
    for (const cJSON *c = def->child; c; c = c->next) {
        bool ok = false;
        for (int i = 0; i < nkeys; i++)
            ok |= strcmp(c->string, keys[i]) == 0;
        if (!ok) {
            char dym[sizeof b->err->msg];
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, path, "unknown field \"%s\" in a block%s",
                               c->string,
                               memest_suggest_clause(memest_suggest(c->string, keys, nkeys), dym,
                                                     sizeof dym));
        }
    }
    if (mb_check_comment(b, def, path) != 0 || check_let_checks(b, def, path) != 0)
        return -1;
    const cJSON *jinline = cJSON_GetObjectItemCaseSensitive(def, "inline");
    if (jinline && !cJSON_IsBool(jinline))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path, "\"inline\" must be true or false");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(def, "args");
    if (args && !cJSON_IsObject(args))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path,
                           "\"args\" must be an object of name: default (null = required)");
    for (const cJSON *a = args ? args->child : NULL; a; a = a->next)
        if (mb_is_node_key(a->string) || strcmp(a->string, "repeat_index") == 0 ||
            strcmp(a->string, "batch") == 0)
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, path, "args"),
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
    return 0;
}

/* The definition of the block called `name`, or NULL (a hash lookup: a file
 * may define many blocks, and every node visited looks its type up). */
const cJSON *mb_find_block(const struct builder *b, const char *name)
{
    int64_t v;
    if (!memest_strmap_get(&b->blockmap, name, strlen(name), &v))
        return NULL;
    return (const cJSON *)(intptr_t)v;
}
