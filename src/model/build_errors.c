/* build_errors.c - how the model builder reports: JSON paths (formatted
 * only when an error needs one), the node named in errors, values from the
 * command line blamed on their option, the work budget that bounds the
 * expansion, and the checks every object of a model file shares. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "memest/escape.h"

#include "build_internal.h"

/* "path.key" in the graph's arena. NULL when out of memory, with the error
 * set: an error about that path reported next is then not kept (the first
 * error wins), so that out of memory is never reported as a model error. */
char *mb_path_join(struct builder *b, const char *path, const char *key)
{
    char *p = memest_arena_concat(&b->g->arena, path, *path ? "." : "", key, (char *)NULL);
    if (!p)
        mb_nomem(b);
    return p;
}

/* Decimal digits of v into buf (at least 24 bytes); returns buf. */
char *mb_decimal(char *buf, int64_t v)
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
void mb_set_ctx_node(struct builder *b, const char *name)
{
    if (b->err->code == MEMEST_ERR_NONE) {
        size_t n = name ? strlen(name) : 0;
        if (n >= sizeof b->err->node)
            n = sizeof b->err->node - 1;
        memcpy(b->err->node, name ? name : "", n);
        b->err->node[n] = '\0';
    }
}

/* The path for an error about p; out of memory is set as the error (and
 * wins, as in path_join) when it cannot be formatted. */
const char *mb_jp_str(struct builder *b, const struct jp *p)
{
    char idx[24] = "";
    if (p->idx >= 0)
        snprintf(idx, sizeof idx, "[%d]", p->idx);
    const char *s = memest_arena_printf(&b->g->arena, "%s%s%s%s", p->base,
                                        p->key && *p->base ? "." : "", p->key ? p->key : "", idx);
    if (!s)
        mb_nomem(b);
    return s ? s : p->base;
}

int mb_nomem(struct builder *b)
{
    return memest_errf(b->err, MEMEST_ERR_NOMEM, NULL, "out of memory");
}

/* ---- values from the command line ----
 * A value read from a variable that --set (or --sweep-var) overrides carries
 * the override as its tag through expressions (expr.h); a check that such a
 * value fails is the command line's fault: a usage error (exit 2) naming the
 * option, at the place in the file where the value was refused. */

/* Whether ov is one of the values of the model's Hugging Face config. */
bool mb_from_config(const struct builder *b, const struct memest_override *ov)
{
    return b->m->npreset > 0 && ov >= b->m->preset && ov < b->m->preset + b->m->npreset;
}

const char *mb_opt_of(const struct memest_override *ov)
{
    return ov->opt ? ov->opt : "--set";
}

/* Makes the error just set a usage error naming the override `tag` (a
 * struct memest_override *, or NULL: nothing changes); a value of a
 * Hugging Face config stays a model error, naming the config's key.
 * Returns -1. */
int mb_blame(struct builder *b, const void *tag)
{
    const struct memest_override *ov = tag;
    struct memest_error *e = b->err;
    if (!ov || e->code == MEMEST_ERR_NONE || e->code == MEMEST_ERR_NOMEM ||
        e->code == MEMEST_ERR_USAGE)
        return -1;
    char msg[sizeof e->msg], path[sizeof e->path];
    memcpy(msg, e->msg, sizeof msg);
    memcpy(path, e->path, sizeof path);
    enum memest_errcode code = e->code;
    e->code = MEMEST_ERR_NONE;
    if (mb_from_config(b, ov)) { /* the config file's fault: a model error naming its key */
        if (strcmp(ov->opt, ov->name) == 0)
            return memest_errf(e, code, path, "the config's %.*s=%.*s: %s",
                               memest_utf8_prefix(ov->name, 100), ov->name,
                               memest_utf8_prefix(ov->value, 100), ov->value, msg);
        return memest_errf(e, code, path, "the config's %.*s (%.*s=%.*s): %s",
                           memest_utf8_prefix(ov->opt, 100), ov->opt,
                           memest_utf8_prefix(ov->name, 100), ov->name,
                           memest_utf8_prefix(ov->value, 100), ov->value, msg);
    }
    return memest_errf(e, MEMEST_ERR_USAGE, path, "%s %.*s=%.*s: %s", mb_opt_of(ov),
                       memest_utf8_prefix(ov->name, 100), ov->name,
                       memest_utf8_prefix(ov->value, 100), ov->value, msg);
}

/* Sets an error about a value (a model error of `code`, or a usage error
 * when the value comes from an override: see mb_blame()). Returns -1. */
int mb_value_err(struct builder *b, const void *tag, enum memest_errcode code,
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
    return mb_blame(b, tag);
}

/* ---- the work budget, and checks every object shares ---- */

/* Bounds the time a model file can make the builder spend, whatever it
 * holds: every node visited (also those "if" leaves out, and each copy of a
 * "repeat"), every block argument, and every expression evaluated (plus one
 * per 16 bytes of its text) costs a unit, each about what creating a node
 * costs (~1 us); the budget is WORK_PER_NODE units per allowed node, so the
 * worst file takes about as long as the largest model. Returns 0, or -1 with
 * a limit error once the budget is spent. */
int mb_charge(struct builder *b, uint64_t units, const char *path)
{
    b->work += units;
    if (b->work <= b->max_work)
        return 0;
    return mb_value_err(b, b->scale_ov, MEMEST_ERR_LIMIT, path,
                        "expanding the model takes more than %llu steps (the limit: %u per "
                        "allowed node; nodes left out by \"if\", block arguments and "
                        "expressions count too); check \"repeat\" counts and long expressions",
                        (unsigned long long)b->max_work, WORK_PER_NODE);
}

const char *mb_json_type_name(const cJSON *j)
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
int mb_check_comment(struct builder *b, const cJSON *obj, const char *path)
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
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, path, keys[k]),
                               "\"%s\" must be a string or a list of strings, got %s", keys[k],
                               mb_json_type_name(c));
    }
    return 0;
}
