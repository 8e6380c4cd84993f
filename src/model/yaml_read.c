/* yaml_read.c - YAML text into cJSON within a budget (yaml_read.h).
 *
 * libyaml's parser gives events (a scalar, the start or end of a mapping or
 * sequence, an alias); the tree is built from them as they come, so that
 * the budget is kept while reading: an alias is a copy of its anchor's
 * nodes, counted each time it is used (libyaml's loader shares them, and a
 * tree built from its document copies each reference: a 580-byte "billion
 * laughs" grows to gigabytes), and the nesting is refused at its 33rd level
 * (libyaml's scanner costs time quadratic in the nesting of flow
 * collections: reading stops long before that matters). Plain scalars are
 * typed as PyYAML's Resolver types them (pyyaml 6.0 lib/yaml/resolver.py,
 * the implicit resolvers of YAML 1.1) and built as its SafeConstructor
 * builds them (constructor.py, construct_yaml_int / _float). */
#include "yaml_read.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "memest/strmap.h"

#define TAG_PREFIX "tag:yaml.org,2002:"

struct frame {
    cJSON *node;
    bool mapping;
    char *key;          /* a mapping's key waiting for its value (malloc'd); NULL: a key is next */
    struct memest_strmap keys;   /* a mapping's keys so far (the tree's strings): O(1) duplicates */
    long anchor;        /* the anchor this collection defines, or -1 */
    size_t first;       /* the node count when it started */
};

struct anchor {
    char *name;         /* malloc'd; the map's key */
    cJSON *node;
    size_t nodes;       /* what one use of it adds to the budget */
    bool done;          /* its node is complete (an alias inside it is recursive) */
};

struct yr {
    const char *label;
    struct memest_error *err;
    size_t nodes;
    struct frame st[MB_YAML_MAX_DEPTH];
    int depth;
    cJSON *root;
    struct anchor *anchors;
    size_t nanchors, cap;
    struct memest_strmap names;   /* anchor name -> index */
};

static int at(struct yr *y, yaml_mark_t m, enum memest_errcode code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int at(struct yr *y, yaml_mark_t m, enum memest_errcode code, const char *fmt, ...)
{
    char msg[sizeof y->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memest_err_file(y->err, y->label);
    if (y->err->code == MEMEST_ERR_NONE) {
        memest_errf(y->err, code, NULL, "%s", msg);
        y->err->line = (int)m.line + 1;
        y->err->col = (int)m.column + 1;
    }
    return -1;
}

static int nomem(struct yr *y)
{
    memest_err_file(y->err, y->label);
    return memest_errf(y->err, MEMEST_ERR_NOMEM, NULL, "out of memory");
}

/* Adds n nodes to the budget. */
static int spend(struct yr *y, size_t n, yaml_mark_t m)
{
    if (n > MB_YAML_MAX_NODES - y->nodes)
        return at(y, m, MEMEST_ERR_LIMIT, "more than %d YAML nodes (aliases count every node "
                  "they stand for, each time they are used; the limit for config files)",
                  MB_YAML_MAX_NODES);
    y->nodes += n;
    return 0;
}

/* ---- plain scalars, as PyYAML's Resolver and SafeConstructor read them ---- */

static bool is_one_of(const char *s, const char *const *words, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, words[i]) == 0)
            return true;
    return false;
}

static int is_bool(const char *s)
{
    static const char *const t[] = {"yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"};
    static const char *const f[] = {"no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"};
    return is_one_of(s, t, 9) ? 1 : is_one_of(s, f, 9) ? 0 : -1;
}

static bool is_null(const char *s)
{
    static const char *const n[] = {"~", "null", "Null", "NULL", ""};
    return is_one_of(s, n, 5);
}

/* At least one character of `set` or '_' from *p on; moves *p past them. */
static bool run_of(const char **p, const char *set)
{
    const char *s = *p;
    while (**p && (strchr(set, **p) || **p == '_'))
        (*p)++;
    return *p > s;
}

/* ":" [0-5]? [0-9], one or more times (base 60); moves *p past them. */
static bool sexagesimal_tail(const char **p)
{
    const char *s = *p;
    while ((*p)[0] == ':' && (*p)[1] >= '0' && (*p)[1] <= '9') {
        if ((*p)[1] <= '5' && (*p)[2] >= '0' && (*p)[2] <= '9')
            *p += 3;
        else
            *p += 2;
    }
    return *p > s;
}

/* The value of digits of `base` with '_' between them ("1_000"). */
static double digits_value(const char *s, const char *end, int base)
{
    double v = 0;
    for (; s < end; s++) {
        if (*s == '_')
            continue;
        int d = *s >= 'a' ? *s - 'a' + 10 : *s >= 'A' ? *s - 'A' + 10 : *s - '0';
        v = v * base + d;
    }
    return v;
}

/* The int regular expression of the Resolver:
 *   [-+]?0b[0-1_]+ | [-+]?0[0-7_]+ | [-+]?(?:0|[1-9][0-9_]*)
 *   | [-+]?0x[0-9a-fA-F_]+ | [-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
 * and construct_yaml_int's value. */
static bool as_int(const char *s, double *out)
{
    double sign = 1;
    if (*s == '-' || *s == '+')
        sign = *s++ == '-' ? -1 : 1;
    const char *p = s;
    if (s[0] == '0' && s[1] == 'b') {
        p = s + 2;
        if (!run_of(&p, "01") || *p)
            return false;
        *out = sign * digits_value(s + 2, p, 2);
        return true;
    }
    if (s[0] == '0' && s[1] == 'x') {
        p = s + 2;
        if (!run_of(&p, "0123456789abcdefABCDEF") || *p)
            return false;
        *out = sign * digits_value(s + 2, p, 16);
        return true;
    }
    if (s[0] == '0') {
        p = s + 1;
        if (!*p) {
            *out = 0;
            return true;
        }
        if (!run_of(&p, "01234567") || *p)
            return false;
        *out = sign * digits_value(s + 1, p, 8);
        return true;
    }
    if (!(*s >= '1' && *s <= '9'))
        return false;
    p = s + 1;
    run_of(&p, "0123456789");
    if (!*p) {
        *out = sign * digits_value(s, p, 10);
        return true;
    }
    const char *head = p;
    if (!sexagesimal_tail(&p) || *p)
        return false;
    double v = digits_value(s, head, 10);
    for (const char *q = head; q < p;) {   /* ":NN" groups */
        const char *e = q + 1;
        while (e < p && *e != ':')
            e++;
        v = v * 60 + digits_value(q + 1, e, 10);
        q = e;
    }
    *out = sign * v;
    return true;
}

/* The float regular expression of the Resolver:
 *   [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)? | \.[0-9_]+(?:[eE][-+][0-9]+)?
 *   | [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]* | [-+]?\.(?:inf|Inf|INF) | \.(?:nan|NaN|NAN)
 * 1: a real in *out; 2: an infinity or NaN; 0: not a float. */
static int as_float(const char *s, double *out)
{
    const char *t = s;
    bool signed_ = *t == '-' || *t == '+';
    if (signed_)
        t++;
    if (!strcmp(t, ".inf") || !strcmp(t, ".Inf") || !strcmp(t, ".INF"))
        return 2;
    if (!signed_ && (!strcmp(t, ".nan") || !strcmp(t, ".NaN") || !strcmp(t, ".NAN")))
        return 2;
    const char *p = t;
    bool lead = *p >= '0' && *p <= '9';
    if (lead) {
        p++;
        run_of(&p, "0123456789");
    } else if (signed_ || *p != '.') {
        return 0;   /* ".5" only unsigned */
    }
    bool sexa = lead && sexagesimal_tail(&p);
    if (*p != '.')
        return 0;
    p++;
    const char *frac = p;
    run_of(&p, "0123456789");
    if (!lead && p == frac)
        return 0;
    if (!sexa && (*p == 'e' || *p == 'E') && (p[1] == '-' || p[1] == '+') && p[2] >= '0' &&
        p[2] <= '9') {
        p += 2;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p)
        return 0;
    /* construct_yaml_float: '_' removed, then float() or base 60 */
    char buf[128];
    size_t n = 0;
    for (const char *q = s; *q && n + 1 < sizeof buf; q++)
        if (*q != '_')
            buf[n++] = *q;
    buf[n] = '\0';
    if (n + 1 >= sizeof buf)
        return 0;
    double v;
    if (sexa) {
        char *colon = strchr(buf, ':');
        double sign = buf[0] == '-' ? -1 : 1;
        const char *q = buf + (buf[0] == '-' || buf[0] == '+');
        v = digits_value(q, colon, 10);
        for (char *c = colon; c;) {
            char *e = strchr(c + 1, ':');
            if (e) {
                v = v * 60 + digits_value(c + 1, e, 10);
            } else {
                v = v * 60 + strtod(c + 1, NULL);
            }
            c = e;
        }
        v *= sign;
    } else {
        v = strtod(buf, NULL);
    }
    if (!isfinite(v))
        return 2;
    *out = v;
    return 1;
}

/* A scalar's node: its tag (NULL: none) and style decide its type. */
static cJSON *scalar(struct yr *y, const yaml_event_t *ev)
{
    const char *v = (const char *)ev->data.scalar.value;
    const char *tag = (const char *)ev->data.scalar.tag;
    bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    const char *kind = NULL;   /* the type asked for: NULL resolves a plain scalar */
    if (tag && strcmp(tag, "!") != 0) {
        if (strncmp(tag, TAG_PREFIX, sizeof TAG_PREFIX - 1) != 0 ||
            !is_one_of(tag + sizeof TAG_PREFIX - 1,
                       (const char *const[]){"str", "int", "float", "bool", "null"}, 5)) {
            at(y, ev->start_mark, MEMEST_ERR_PARSE, "the tag \"%.60s\" is not read "
               "(yaml.safe_load constructs only the standard scalars, mappings and sequences)",
               tag);
            return NULL;
        }
        kind = tag + sizeof TAG_PREFIX - 1;
    } else if (tag || !plain) {
        kind = "str";   /* quoted, or the non-specific tag "!" */
    }
    if (kind && !strcmp(kind, "str"))
        return cJSON_CreateString(v);
    int b;
    double d;
    if ((!kind || !strcmp(kind, "null")) && is_null(v))
        return cJSON_CreateNull();
    if ((!kind || !strcmp(kind, "bool")) && (b = is_bool(v)) >= 0)
        return cJSON_CreateBool(b);
    if ((!kind || !strcmp(kind, "int") || !strcmp(kind, "float")) && as_int(v, &d))
        return cJSON_CreateNumber(d);
    int f = !kind || !strcmp(kind, "float") ? as_float(v, &d) : 0;
    if (f == 1)
        return cJSON_CreateNumber(d);
    if (f == 2) {
        at(y, ev->start_mark, MEMEST_ERR_PARSE, "\"%.40s\" is not a finite number", v);
        return NULL;
    }
    if (kind) {
        at(y, ev->start_mark, MEMEST_ERR_PARSE, "\"%.40s\" is not a YAML %s", v, kind);
        return NULL;
    }
    return cJSON_CreateString(v);
}

/* ---- the tree ---- */

static int define_anchor(struct yr *y, const yaml_char_t *name, cJSON *node, bool done,
                         long *index)
{
    if (y->nanchors == y->cap) {
        size_t ncap = y->cap ? y->cap * 2 : 8;
        struct anchor *na = realloc(y->anchors, ncap * sizeof *na);
        if (!na)
            return nomem(y);
        y->anchors = na, y->cap = ncap;
    }
    char *n = strdup((const char *)name);
    if (!n)
        return nomem(y);
    y->anchors[y->nanchors] = (struct anchor){n, node, 1, done};
    if (memest_strmap_put(&y->names, n, strlen(n), (int64_t)y->nanchors) != 0) {
        free(n);
        return nomem(y);
    }
    *index = (long)y->nanchors++;
    return 0;
}

/* Puts node (made at mark) where the document is: its root, the value of
 * the pending key, or the next item of a sequence. node is owned by the
 * tree, or deleted. */
static int place(struct yr *y, cJSON *node, yaml_mark_t m)
{
    if (y->depth == 0) {
        y->root = node;
        return 0;
    }
    struct frame *f = &y->st[y->depth - 1];
    if (!f->mapping) {
        if (!cJSON_AddItemToArray(f->node, node)) {
            cJSON_Delete(node);
            return nomem(y);
        }
        return 0;
    }
    if (!f->key) {   /* handled by key(); a collection or an alias cannot be a key */
        cJSON_Delete(node);
        return at(y, m, MEMEST_ERR_PARSE, "a mapping key must be a scalar (config keys are "
                  "names)");
    }
    bool added = cJSON_AddItemToObject(f->node, f->key, node);
    free(f->key);
    f->key = NULL;
    if (!added) {
        cJSON_Delete(node);
        return nomem(y);
    }
    if (memest_strmap_put(&f->keys, node->string, strlen(node->string), 0) != 0)
        return nomem(y);
    return 0;
}

/* A scalar where a mapping expects its key. */
static int key(struct yr *y, const yaml_event_t *ev)
{
    struct frame *f = &y->st[y->depth - 1];
    const char *k = (const char *)ev->data.scalar.value;
    if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !strcmp(k, "<<"))
        return at(y, ev->start_mark, MEMEST_ERR_PARSE, "a merge key (<<) is not read: write the "
                  "keys out");
    int64_t seen;
    if (memest_strmap_get(&f->keys, k, strlen(k), &seen))
        return at(y, ev->start_mark, MEMEST_ERR_PARSE, "duplicate key \"%.60s\" in the same "
                  "mapping", k);
    if (ev->data.scalar.anchor)
        return at(y, ev->start_mark, MEMEST_ERR_PARSE, "an anchor on a mapping key is not read");
    if (!(f->key = strdup(k)))
        return nomem(y);
    return spend(y, 1, ev->start_mark);
}

static bool expects_key(const struct yr *y)
{
    return y->depth > 0 && y->st[y->depth - 1].mapping && !y->st[y->depth - 1].key;
}

static int on_scalar(struct yr *y, const yaml_event_t *ev)
{
    if (expects_key(y))
        return key(y, ev);
    if (spend(y, 1, ev->start_mark) != 0)
        return -1;
    cJSON *n = scalar(y, ev);
    if (!n)
        return y->err->code != MEMEST_ERR_NONE ? -1 : nomem(y);
    long i;
    if (ev->data.scalar.anchor && define_anchor(y, ev->data.scalar.anchor, n, true, &i) != 0) {
        cJSON_Delete(n);
        return -1;
    }
    return place(y, n, ev->start_mark);
}

static int on_alias(struct yr *y, const yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    int64_t i;
    if (expects_key(y))
        return at(y, ev->start_mark, MEMEST_ERR_PARSE, "a mapping key must be a scalar, not "
                  "an alias");
    if (!memest_strmap_get(&y->names, name, strlen(name), &i))
        return at(y, ev->start_mark, MEMEST_ERR_PARSE, "the alias *%.60s names no anchor "
                  "defined before it", name);
    const struct anchor *a = &y->anchors[i];
    if (!a->done)
        return at(y, ev->start_mark, MEMEST_ERR_PARSE, "the alias *%.60s is inside the node it "
                  "names (a recursive structure)", name);
    if (spend(y, a->nodes, ev->start_mark) != 0)
        return -1;
    cJSON *n = cJSON_Duplicate(a->node, 1);
    if (!n)
        return nomem(y);
    return place(y, n, ev->start_mark);
}

static int on_start(struct yr *y, const yaml_event_t *ev, bool mapping)
{
    const char *tag = (const char *)(mapping ? ev->data.mapping_start.tag
                                             : ev->data.sequence_start.tag);
    const yaml_char_t *anchor = mapping ? ev->data.mapping_start.anchor
                                        : ev->data.sequence_start.anchor;
    if (expects_key(y))
        return at(y, ev->start_mark, MEMEST_ERR_PARSE, "a mapping key must be a scalar (config "
                  "keys are names)");
    if (tag && strcmp(tag, "!") != 0 && strcmp(tag, mapping ? TAG_PREFIX "map" : TAG_PREFIX "seq"))
        return at(y, ev->start_mark, MEMEST_ERR_PARSE, "the tag \"%.60s\" is not read "
                  "(yaml.safe_load constructs only the standard scalars, mappings and "
                  "sequences)", tag);
    if (y->depth == MB_YAML_MAX_DEPTH)
        return at(y, ev->start_mark, MEMEST_ERR_LIMIT, "nested deeper than %d mappings and "
                  "sequences (the limit for config files)", MB_YAML_MAX_DEPTH);
    if (spend(y, 1, ev->start_mark) != 0)
        return -1;
    cJSON *n = mapping ? cJSON_CreateObject() : cJSON_CreateArray();
    if (!n)
        return nomem(y);
    long a = -1;
    if (anchor && define_anchor(y, anchor, n, false, &a) != 0) {
        cJSON_Delete(n);
        return -1;
    }
    size_t first = y->nodes;
    if (place(y, n, ev->start_mark) != 0)
        return -1;
    y->st[y->depth++] = (struct frame){n, mapping, NULL, {0}, a, first};
    return 0;
}

static void on_end(struct yr *y)
{
    struct frame *f = &y->st[--y->depth];
    free(f->key);   /* libyaml pairs every key with a value: NULL here */
    memest_strmap_free(&f->keys);
    if (f->anchor >= 0) {
        y->anchors[f->anchor].done = true;
        y->anchors[f->anchor].nodes = y->nodes - f->first + 1;
    }
}

int mb_yaml_parse(const char *text, size_t len, const char *label, cJSON **out,
                  struct memest_error *err)
{
    *out = NULL;
    struct yr y = {.label = label, .err = err};
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return nomem(&y);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int rc = 0, docs = 0;
    for (bool end = false; !end && rc == 0;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            if (p.error == YAML_MEMORY_ERROR)
                rc = nomem(&y);
            else
                rc = at(&y, p.problem_mark, MEMEST_ERR_PARSE, "malformed YAML: %s%s%s",
                        p.problem ? p.problem : "unreadable", p.context ? " " : "",
                        p.context ? p.context : "");
            break;
        }
        switch (ev.type) {
        case YAML_DOCUMENT_START_EVENT:
            if (docs++ > 0)
                rc = at(&y, ev.start_mark, MEMEST_ERR_PARSE, "a second YAML document in the "
                        "file (accelerate's yaml.safe_load reads exactly one)");
            break;
        case YAML_SCALAR_EVENT:
            rc = on_scalar(&y, &ev);
            break;
        case YAML_ALIAS_EVENT:
            rc = on_alias(&y, &ev);
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            rc = on_start(&y, &ev, ev.type == YAML_MAPPING_START_EVENT);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            on_end(&y);
            break;
        case YAML_STREAM_END_EVENT:
            end = true;
            break;
        case YAML_NO_EVENT:
        case YAML_STREAM_START_EVENT:
        case YAML_DOCUMENT_END_EVENT:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    while (y.depth > 0) {
        free(y.st[--y.depth].key);
        memest_strmap_free(&y.st[y.depth].keys);
    }
    for (size_t i = 0; i < y.nanchors; i++)
        free(y.anchors[i].name);
    free(y.anchors);
    memest_strmap_free(&y.names);
    if (rc == 0 && !y.root && !(y.root = cJSON_CreateNull()))
        rc = nomem(&y);
    if (rc != 0) {
        cJSON_Delete(y.root);
        return -1;
    }
    *out = y.root;
    return 0;
}
