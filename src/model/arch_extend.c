/* arch_extend.c - "extends": a model file or template built on the shared
 * library of models/arch/lib/ (embedded, or DIR/lib/NAME.json under a
 * directory DIR of MEMEST_ARCH_PATH), or on another built-in template (a
 * family's base, as transformers' modular files inherit: gemma2 on gemma).
 *
 * The bases are merged in the order named, then the file itself: objects
 * merge key by key, recursively, the later value winning; any other value
 * (a list, a string, a number) is replaced whole, except the top level's
 * "checks", which add up (the bases' first). A base may extend others, up
 * to MAX_DEPTH deep; a file may name at most MAX_BASES. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "memest/arena.h"

#include "hf_internal.h"

#define MAX_DEPTH 8
#define MAX_BASES 8
#define MAX_NAME 64
#define MAX_LOADS 32 /* parts read for one file, all depths together */

static bool bad_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > MAX_NAME)
        return true;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return true;
    }
    return false;
}

/* "a, b": the built-in library's names, in buf. */
static const char *lib_names(char *buf, size_t n)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < mb_arch_lib_count; i++) {
        int w = snprintf(buf + pos, n - pos, "%s%s", pos ? ", " : "", mb_arch_lib[i].model_type);
        if (w < 0 || (size_t)w >= n - pos)
            break;
        pos += (size_t)w;
    }
    return pos ? buf : "none";
}

/* The library part `name` parsed into *out. */
static int load_base(const char *name, const char *file, cJSON **out, struct memest_error *err)
{
    const char *ap = getenv("MEMEST_ARCH_PATH");
    char path[4200];
    for (const char *p = ap ? ap : ""; *p;) {
        size_t len = strcspn(p, ":");
        struct stat st;
        if (len > 0 && len < 4096 &&
            snprintf(path, sizeof path, "%.*s/lib/%s.json", (int)len, p, name) < (int)sizeof path &&
            stat(path, &st) == 0)
            return mb_json_read_file(path, out, err);
        p += len + (p[len] == ':');
    }
    for (size_t i = 0; i < mb_arch_lib_count; i++) {
        const struct mb_arch_text *t = &mb_arch_lib[i];
        if (strcmp(t->model_type, name) == 0)
            return mb_json_parse_text((const char *)t->text, *t->len, t->file, out, err);
    }
    for (size_t i = 0; i < mb_arch_builtin_count; i++) {   /* a template: its family's base */
        const struct mb_arch_text *t = &mb_arch_builtin[i];
        if (strcmp(t->model_type, name) == 0)
            return mb_json_parse_text((const char *)t->text, *t->len, t->file, out, err);
    }
    char list[400];
    memest_err_file(err, file);
    return memest_errf(err, MEMEST_ERR_SCHEMA, "extends",
                       "no library part or template \"%s\" (the parts of models/arch/lib/ are: "
                       "%s; MEMEST_ARCH_PATH's DIR/lib/ adds parts)",
                       name, lib_names(list, sizeof list));
}

/* Merges src into dst (both objects): see the file's comment. */
static int merge(cJSON *dst, const cJSON *src, bool top)
{
    for (const cJSON *c = src->child; c; c = c->next) {
        if (top && strcmp(c->string, "extends") == 0)
            continue;
        cJSON *d = cJSON_GetObjectItemCaseSensitive(dst, c->string);
        if (d && cJSON_IsObject(d) && cJSON_IsObject(c)) {
            if (merge(d, c, false) != 0)
                return -1;
            continue;
        }
        if (d && top && strcmp(c->string, "checks") == 0 && cJSON_IsArray(d) &&
            cJSON_IsArray(c)) {
            for (const cJSON *e = c->child; e; e = e->next) {
                cJSON *dup = cJSON_Duplicate(e, true);
                if (!dup || !cJSON_AddItemToArray(d, dup)) {
                    cJSON_Delete(dup);
                    return -1;
                }
            }
            continue;
        }
        cJSON *dup = cJSON_Duplicate(c, true);
        if (!dup)
            return -1;
        if (d ? !cJSON_ReplaceItemViaPointer(dst, d, dup)
              : !cJSON_AddItemToObject(dst, c->string, dup)) {
            cJSON_Delete(dup);
            return -1;
        }
    }
    return 0;
}

static int resolve(cJSON **root, const char *file, int depth, int *loads,
                   struct memest_error *err);

/* The names of "extends" (a name or a list of names) into names[], *n. */
static int base_names(const cJSON *ext, const char *file, const char **names, int *n,
                      struct memest_error *err)
{
    *n = 0;
    const cJSON *one = cJSON_IsString(ext) ? ext : NULL;
    if (!one && !cJSON_IsArray(ext))
        goto bad;
    for (const cJSON *e = one ? one : ext->child; e; e = one ? NULL : e->next) {
        if (!cJSON_IsString(e) || bad_name(e->valuestring))
            goto bad;
        if (*n == MAX_BASES) {
            memest_err_file(err, file);
            return memest_errf(err, MEMEST_ERR_LIMIT, "extends",
                               "more than %d library parts", MAX_BASES);
        }
        names[(*n)++] = e->valuestring;
    }
    if (*n > 0)
        return 0;
bad:
    memest_err_file(err, file);
    return memest_errf(err, MEMEST_ERR_SCHEMA, "extends",
                       "expected the name of a library part of models/arch/lib/, or a "
                       "non-empty list of them (lower-case letters, digits and '_', at most %d)",
                       MAX_NAME);
}

static int resolve(cJSON **root, const char *file, int depth, int *loads,
                   struct memest_error *err)
{
    const cJSON *ext = cJSON_GetObjectItemCaseSensitive(*root, "extends");
    if (!ext)
        return 0;
    if (depth >= MAX_DEPTH) {
        memest_err_file(err, file);
        return memest_errf(err, MEMEST_ERR_SCHEMA, "extends",
                           "library parts extend each other more than %d deep (a circle?)",
                           MAX_DEPTH);
    }
    const char *names[MAX_BASES];
    int n;
    if (base_names(ext, file, names, &n, err) != 0)
        return -1;
    cJSON *acc = cJSON_CreateObject();
    int rc = acc ? 0 : memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    for (int i = 0; rc == 0 && i < n; i++) {
        cJSON *base = NULL;
        if (++*loads > MAX_LOADS) {
            memest_err_file(err, file);
            rc = memest_errf(err, MEMEST_ERR_LIMIT, "extends",
                             "more than %d library parts in all", MAX_LOADS);
            break;
        }
        rc = load_base(names[i], file, &base, err);
        if (rc == 0)
            rc = resolve(&base, names[i], depth + 1, loads, err);
        if (rc == 0 && merge(acc, base, true) != 0)
            rc = memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
        cJSON_Delete(base);
    }
    if (rc == 0 && merge(acc, *root, true) != 0)
        rc = memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    if (rc != 0) {
        cJSON_Delete(acc);
        return -1;
    }
    cJSON_Delete(*root);
    *root = acc;
    return 0;
}

int mb_arch_extend(cJSON **root, const char *file, struct memest_error *err)
{
    int loads = 0;
    return resolve(root, file, 0, &loads, err);
}
