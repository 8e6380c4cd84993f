/* build_block.c - blocks: each definition checked once, and each call
 * expanded with its arguments in a scope of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memest/suggest.h"

#include "build_internal.h"

/* Records the instance of block `bname` whose nodes are first..nnodes-1. */
static int add_block_inst(struct builder *b, const char *fullname, const char *bname,
                          uint32_t first)
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
        .depth = (uint32_t)b->depth};
    return 0;
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
    if (mb_charge(b, 1 + (uint64_t)nargs, callpath) != 0)
        return -1;
    struct var *vars = calloc((size_t)nargs + 1, sizeof *vars);
    const cJSON **given = calloc((size_t)nargs + 1, sizeof *given);
    struct memest_strmap argmap = {0}, names = {0};
    struct scope sc = {.parent = globals, .vars = vars, .nvars = nargs};
    int rc = vars && given ? 0 : mb_nomem(b);
    int i = 0;
    for (const cJSON *a = args ? args->child : NULL; rc == 0 && a; a = a->next, i++)
        vars[i].name = a->string;
    if (rc == 0)
        rc = mb_scope_index(b, &sc, &argmap);
    for (const cJSON *c = call->child; rc == 0 && c; c = c->next) {
        if (mb_is_node_key(c->string))
            continue;
        const struct var *v = mb_scope_find(&(struct scope){.vars = vars, .nvars = nargs,
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
        char *ap = mb_path_join(b, callpath, c->string);
        char dym[sizeof b->err->msg];
        rc = memest_errf(b->err, MEMEST_ERR_SCHEMA, ap ? ap : callpath,
                         "unknown argument \"%s\" for block \"%s\"%s", c->string, bname,
                         memest_suggest_clause(memest_suggest(c->string, cands, n), dym,
                                               sizeof dym));
    }
    char *argspath = mb_path_join(b, bpath, "args"); /* where the defaults are */
    if (rc == 0 && !argspath)
        rc = mb_nomem(b);
    i = 0;
    for (const cJSON *a = args ? args->child : NULL; rc == 0 && a; a = a->next, i++) {
        if (given[i]) {
            rc = mb_eval_value(b, given[i], caller, callpath, a->string, &vars[i]);
        } else if (cJSON_IsNull(a)) {
            char *ap = mb_path_join(b, callpath, a->string);
            rc = memest_errf(b->err, MEMEST_ERR_SCHEMA, ap ? ap : callpath,
                             "block \"%s\" needs the argument \"%s\"", bname, a->string);
        } else {
            rc = mb_eval_value(b, a, globals, argspath, a->string, &vars[i]);
        }
        vars[i].name = a->string;
    }
    for (int k = 0; k < nformal && rc == 0; k++) {
        const cJSON *f = formals ? cJSON_GetArrayItem(formals, k) : NULL;
        rc = mb_add_name(b, &names, f ? f->valuestring : "x", ins[k], bpath);
    }
    char *prefix = memest_arena_concat(&b->g->arena, fullname, ".", (char *)NULL);
    char *lpath = mb_path_join(b, bpath, "layers");
    if (!prefix || !lpath)
        rc = mb_nomem(b);
    uint32_t first = b->g->nnodes;
    b->active[b->depth++] = bname;
    if (rc == 0)
        rc = mb_expand_list(b, layers, lpath, prefix, &sc, &names, ins[0], trainable, out);
    b->depth--;
    if (rc == 0 && b->g->nnodes > first)
        rc = add_block_inst(b, fullname, bname, first);
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

/* Checks a block definition's own fields once. */
int mb_check_block_def(struct builder *b, const cJSON *def, const char *bname)
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
            char dym[sizeof b->err->msg];
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, path, "unknown field \"%s\" in a block%s",
                               c->string,
                               memest_suggest_clause(memest_suggest(c->string, keys, 5), dym,
                                                     sizeof dym));
        }
    }
    if (mb_check_comment(b, def, path) != 0)
        return -1;
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
    if (memest_op_find(bname))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path,
                           "block name \"%s\" is already an op type", bname);
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
