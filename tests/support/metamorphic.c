/* metamorphic.c - rewrites of model files that keep their figures, and the
 * comparison (see metamorphic.h). */
#include "metamorphic.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memest/graph_json.h"
#include "memest/model.h"
#include "memest/ops.h"
#include "memest/strmap.h"

/* ---- names and references ---- */

/* A node's "tie_weight" or "tie_params" (a full node name), or NULL. */
static cJSON *tie_item(const cJSON *n)
{
    cJSON *t = cJSON_GetObjectItemCaseSensitive(n, "tie_weight");
    return t ? t : cJSON_GetObjectItemCaseSensitive(n, "tie_params");
}

/* A map from old node names to new names (both copied). */
struct renames {
    struct memest_strmap map;  /* old name -> index into names */
    char **names, **olds;
    size_t n, cap;
};

static void renames_free(struct renames *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->names[i]);
        free(r->olds[i]);
    }
    free(r->names);
    free(r->olds);
    memest_strmap_free(&r->map);
}

static int renames_put(struct renames *r, const char *old, const char *new_name)
{
    if (r->n == r->cap) {
        size_t ncap = r->cap ? r->cap * 2 : 64;
        char **nn = realloc(r->names, sizeof *nn * ncap);
        if (!nn)
            return -1;
        r->names = nn;
        char **no = realloc(r->olds, sizeof *no * ncap);
        if (!no)
            return -1;
        r->olds = no;
        r->cap = ncap;
    }
    char *copy = strdup(new_name), *key = strdup(old);
    if (!copy || !key || memest_strmap_put(&r->map, key, strlen(key), (int64_t)r->n) != 0) {
        free(copy);
        free(key);
        return -1;
    }
    r->olds[r->n] = key;
    r->names[r->n++] = copy;
    return 0;
}

/* The new name for old (len bytes), or NULL when it is not renamed. */
static const char *renames_get(const struct renames *r, const char *old, size_t len)
{
    int64_t i;
    return memest_strmap_get(&r->map, old, len, &i) ? r->names[i] : NULL;
}

/* Length of the name part of a reference "name" or "name:K". */
static size_t ref_name_len(const char *ref)
{
    const char *colon = strrchr(ref, ':');
    return colon && colon[1] ? (size_t)(colon - ref) : strlen(ref);
}

/* Rewrites one reference string in place (the node keeps its output index). */
static int rename_ref(cJSON *s, const struct renames *r, const char *suffix)
{
    if (!cJSON_IsString(s))
        return 0;
    size_t len = ref_name_len(s->valuestring);
    const char *nn = renames_get(r, s->valuestring, len);
    if (!nn)
        return 0;
    const char *tail = s->valuestring + len;
    size_t need = strlen(nn) + strlen(suffix) + strlen(tail) + 1;
    char *buf = malloc(need);
    if (!buf)
        return -1;
    snprintf(buf, need, "%s%s%s", nn, suffix, tail);
    char *ok = cJSON_SetValuestring(s, buf);
    free(buf);
    return ok ? 0 : -1;
}

/* Every reference of a flat document: node inputs, outputs, and (with
 * ties != NULL, a map for full names) tie_weight. */
static int rename_refs(cJSON *doc, const struct renames *r, const struct renames *ties)
{
    cJSON *layers = cJSON_GetObjectItemCaseSensitive(doc, "layers");
    cJSON *n;
    cJSON_ArrayForEach(n, layers)
    {
        cJSON *in = cJSON_GetObjectItemCaseSensitive(n, "inputs"), *e;
        if (cJSON_IsString(in) && rename_ref(in, r, "") != 0)
            return -1;
        cJSON *list = cJSON_IsArray(in) ? in : NULL;
        cJSON_ArrayForEach(e, list)
        {
            if (rename_ref(e, r, "") != 0)
                return -1;
        }
        cJSON *tie = tie_item(n);
        if (tie && cJSON_IsString(tie)) {
            /* a full name: no output index, compared whole */
            const char *nn = renames_get(ties ? ties : r, tie->valuestring, strlen(tie->valuestring));
            if (nn && !cJSON_SetValuestring(tie, nn))
                return -1;
        }
        /* held_until names a node of the list (or "output") */
        cJSON *held = cJSON_GetObjectItemCaseSensitive(n, "held_until");
        if (cJSON_IsString(held)) {
            const char *nn = renames_get(r, held->valuestring, strlen(held->valuestring));
            if (nn && !cJSON_SetValuestring(held, nn))
                return -1;
        }
    }
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "outputs"))
    {
        if (rename_ref(e, r, "") != 0)
            return -1;
    }
    return 0;
}

static cJSON *fail(cJSON *doc)
{
    cJSON_Delete(doc);
    return NULL;
}

static const char *name_of(const cJSON *node)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(node, "name");
    return cJSON_IsString(n) ? n->valuestring : NULL;
}

static bool set_string(cJSON *obj, const char *key, const char *val)
{
    cJSON *s = cJSON_CreateString(val);
    if (!s)
        return false;
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        return cJSON_ReplaceItemInObjectCaseSensitive(obj, key, s);
    if (cJSON_AddItemToObject(obj, key, s))
        return true;
    cJSON_Delete(s);
    return false;
}

/* ---- the rewrites ---- */

cJSON *mm_flat(const struct memest_graph *g)
{
    /* every node left out by "if": a model file needs one in "layers" */
    uint32_t layers = 0;
    for (uint32_t n = 0; n < g->nnodes; n++)
        layers += !g->nodes[n].op->model_input;
    return layers ? memest_graph_to_json(g) : NULL;
}

/* Renames every input and layer: to "input_K" and no name at all (the
 * index names it) when `by_index`, else to names with dots, multi-byte
 * characters and digits made from the index and `salt`. */
static cJSON *renamed(const cJSON *flat, bool by_index, uint32_t salt)
{
    cJSON *doc = cJSON_Duplicate(flat, 1);
    struct renames r = {0};
    if (!doc)
        return NULL;
    char buf[128];
    int k = 0;
    cJSON *n;
    cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(flat, "inputs"))
    {
        if (by_index)
            snprintf(buf, sizeof buf, "input_%d", k++);
        else
            snprintf(buf, sizeof buf, "x\xc2\xb7%d", k++);
        if (!name_of(n) || renames_put(&r, name_of(n), buf) != 0)
            goto fail;
    }
    k = 0;
    cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(flat, "layers"))
    {
        if (by_index)
            snprintf(buf, sizeof buf, "%d", k);
        else
            snprintf(buf, sizeof buf, "n%u.\xc3\xa9%x", (unsigned)k,
                     (unsigned)k * 2654435761u ^ salt);
        k++;
        if (!name_of(n) || renames_put(&r, name_of(n), buf) != 0)
            goto fail;
    }
    if (rename_refs(doc, &r, NULL) != 0)
        goto fail;
    cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(doc, "inputs"))
    {
        if (!set_string(n, "name", renames_get(&r, name_of(n), strlen(name_of(n)))))
            goto fail;
    }
    cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(doc, "layers"))
    {
        if (!by_index) {
            if (!set_string(n, "name", renames_get(&r, name_of(n), strlen(name_of(n)))))
                goto fail;
        } else {
            cJSON_DeleteItemFromObjectCaseSensitive(n, "name");
        }
    }
    renames_free(&r);
    return doc;
fail:
    renames_free(&r);
    return fail(doc);
}

cJSON *mm_index_names(const cJSON *flat)
{
    return renamed(flat, true, 0);
}

cJSON *mm_rename(const cJSON *flat, uint32_t seed)
{
    return renamed(flat, false, seed);
}

/* Adds every node name a reference in `j` (any depth) may mean to `refs`:
 * the names in "inputs", "output" and "outputs", and each dot-separated
 * part of a "tie_weight" full name. Values are not copied (they live in
 * the document). */
static int collect_refs(const cJSON *j, struct memest_strmap *refs)
{
    for (const cJSON *c = j ? j->child : NULL; c; c = c->next) {
        const char *key = c->string;
        bool is_ref = key && (strcmp(key, "inputs") == 0 || strcmp(key, "output") == 0 ||
                              strcmp(key, "outputs") == 0);
        bool is_tie = key && (strcmp(key, "tie_weight") == 0 || strcmp(key, "tie_params") == 0 ||
                              strcmp(key, "held_until") == 0);   /* dotted names, each part */
        if (is_ref && cJSON_IsString(c)) {
            if (memest_strmap_put(refs, c->valuestring, ref_name_len(c->valuestring), 1) != 0)
                return -1;
        } else if (is_ref && cJSON_IsArray(c)) {
            for (const cJSON *e = c->child; e; e = e->next)
                if (cJSON_IsString(e) &&
                    memest_strmap_put(refs, e->valuestring, ref_name_len(e->valuestring), 1) != 0)
                    return -1;
        } else if (is_tie && cJSON_IsString(c)) {
            for (const char *p = c->valuestring;;) {
                size_t len = strcspn(p, ".");
                if (memest_strmap_put(refs, p, len, 1) != 0)
                    return -1;
                if (!p[len])
                    break;
                p += len + 1;
            }
        } else if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
            if (collect_refs(c, refs) != 0)
                return -1;
        }
    }
    return 0;
}

static bool in_map(const struct memest_strmap *m, const char *s)
{
    int64_t v;
    return memest_strmap_get(m, s, strlen(s), &v);
}

/* Whether a sibling's name starts with "idx.": a node named idx would give
 * its repeats or inner nodes the same full names. */
static bool prefix_taken(const cJSON *layers, const char *idx)
{
    size_t n = strlen(idx);
    const cJSON *c;
    cJSON_ArrayForEach(c, layers)
    {
        const char *s = name_of(c);
        if (s && strncmp(s, idx, n) == 0 && s[n] == '.')
            return true;
    }
    return false;
}

/* Drops the unreferenced names of one list of nodes; `scope` holds the
 * other names visible there (model or block inputs). */
static int strip_list(cJSON *layers, const struct memest_strmap *refs, const cJSON *scope)
{
    struct memest_strmap taken = {0};
    int rc = 0;
    cJSON *n, *e;
    cJSON_ArrayForEach(n, layers)
    {
        if (name_of(n) && memest_strmap_put(&taken, name_of(n), strlen(name_of(n)), 1) != 0)
            rc = -1;
    }
    cJSON_ArrayForEach(e, scope)
    {
        const char *s = cJSON_IsString(e) ? e->valuestring : name_of(e);
        if (s && memest_strmap_put(&taken, s, strlen(s), 1) != 0)
            rc = -1;
    }
    /* decide first, then delete: the maps point into the names */
    int i = 0, len = cJSON_GetArraySize(layers);
    bool *strip = calloc((size_t)(len ? len : 1), sizeof *strip);
    if (!strip)
        rc = -1;
    cJSON_ArrayForEach(n, layers)
    {
        char idx[16];
        snprintf(idx, sizeof idx, "%d", i);
        const char *name = name_of(n);
        if (rc == 0 && name && !in_map(refs, name) && !in_map(refs, idx) &&
            !in_map(&taken, idx) && !prefix_taken(layers, idx))
            strip[i] = true;
        i++;
    }
    memest_strmap_free(&taken);
    i = 0;
    cJSON_ArrayForEach(n, layers)
    {
        if (rc == 0 && strip[i++])
            cJSON_DeleteItemFromObjectCaseSensitive(n, "name");
    }
    free(strip);
    return rc;
}

cJSON *mm_strip_names(const cJSON *model)
{
    cJSON *doc = cJSON_Duplicate(model, 1);
    struct memest_strmap refs = {0};
    if (!doc || collect_refs(doc, &refs) != 0)
        goto fail;
    if (strip_list(cJSON_GetObjectItemCaseSensitive(doc, "layers"), &refs,
                   cJSON_GetObjectItemCaseSensitive(doc, "inputs")) != 0)
        goto fail;
    cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(doc, "blocks"))
    {
        if (strip_list(cJSON_GetObjectItemCaseSensitive(b, "layers"), &refs,
                       cJSON_GetObjectItemCaseSensitive(b, "inputs")) != 0)
            goto fail;
    }
    memest_strmap_free(&refs);
    return doc;
fail:
    memest_strmap_free(&refs);
    return fail(doc);
}

static bool ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Replaces the identifier repeat_index by "(i)" in every string of j (any
 * depth) but the node fields that are names. */
static int subst_index(cJSON *j, int i)
{
    static const char id[] = "repeat_index";
    for (cJSON *c = j->child; c; c = c->next) {
        if (c->string && (strcmp(c->string, "name") == 0 || strcmp(c->string, "inputs") == 0))
            continue;
        if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
            if (subst_index(c, i) != 0)
                return -1;
            continue;
        }
        if (!cJSON_IsString(c) || !strstr(c->valuestring, id))
            continue;
        const char *s = c->valuestring;
        size_t cap = strlen(s) * 2 + 32, k = 0;
        char *out = malloc(cap);
        if (!out)
            return -1;
        for (size_t p = 0; s[p];) {
            size_t n = sizeof id - 1;
            if (strncmp(s + p, id, n) == 0 && (p == 0 || !ident_char(s[p - 1])) &&
                !ident_char(s[p + n])) {
                k += (size_t)snprintf(out + k, cap - k, "(%d)", i);
                p += n;
            } else {
                out[k++] = s[p++];
            }
        }
        out[k] = '\0';
        char *ok = cJSON_SetValuestring(c, out);
        free(out);
        if (!ok)
            return -1;
    }
    return 0;
}

/* The count of a "repeat": a whole number, or the name of a global variable
 * holding one; 0 when it is anything else (an expression, a block argument). */
static int repeat_count(const cJSON *rep, const cJSON *vars)
{
    if (cJSON_IsString(rep))
        rep = cJSON_GetObjectItemCaseSensitive(vars, rep->valuestring);
    if (!cJSON_IsNumber(rep) || rep->valuedouble < 1 || rep->valuedouble > 64 ||
        rep->valuedouble != (int)rep->valuedouble)
        return 0;
    return (int)rep->valuedouble;
}

/* Unrolls the repeats of one list of nodes; `out` is the scope's "output"
 * (a string) or "outputs" (a list), references renamed with the siblings'. */
static int unroll_list(cJSON *layers, const cJSON *vars, cJSON *out)
{
    struct renames r = {0};
    int i = 0, rc = 0;
    cJSON *n;
    /* every node named (its default name is its index, which unrolling moves) */
    cJSON_ArrayForEach(n, layers)
    {
        char idx[16];
        snprintf(idx, sizeof idx, "%d", i++);
        if (!name_of(n) && !set_string(n, "name", idx))
            return -1;
    }
    /* the list is rebuilt by appending (cJSON_InsertItemInArray cannot be
     * trusted: Debian 12's libcjson 1.7.15-1+deb12u4 refuses every insertion
     * before an existing item) */
    int len = cJSON_GetArraySize(layers);
    cJSON **items = malloc(sizeof *items * (size_t)(len ? len : 1));
    if (!items)
        return -1;
    for (i = 0; i < len; i++)
        items[i] = cJSON_DetachItemViaPointer(layers, layers->child);
    for (i = 0; i < len; i++) {
        n = items[i];
        items[i] = NULL;
        cJSON *e;
        /* this node's references, to nodes unrolled before it */
        cJSON *in = cJSON_GetObjectItemCaseSensitive(n, "inputs");
        if (rc == 0 && cJSON_IsString(in))
            rc = rename_ref(in, &r, "");
        cJSON *list = cJSON_IsArray(in) ? in : NULL;
        cJSON_ArrayForEach(e, list)
        {
            if (rc == 0)
                rc = rename_ref(e, &r, "");
        }
        int count = rc ? 0 : repeat_count(cJSON_GetObjectItemCaseSensitive(n, "repeat"), vars);
        if (strlen(name_of(n)) > 96) /* "name.K" must stay a valid name */
            count = 0;
        if (count == 0) {
            if (!cJSON_AddItemToArray(layers, n)) {
                cJSON_Delete(n);
                rc = -1;
            }
            continue;
        }
        /* count copies in place of n */
        char prev[160] = "", name[160];
        for (int k = 0; rc == 0 && k < count; k++) {
            cJSON *c = cJSON_Duplicate(n, 1);
            snprintf(name, sizeof name, "%s.%d", name_of(n), k);
            if (!c || !cJSON_AddItemToArray(layers, c)) {
                cJSON_Delete(c);
                rc = -1;
                break;
            }
            cJSON_DeleteItemFromObjectCaseSensitive(c, "repeat");
            cJSON *cin = cJSON_GetObjectItemCaseSensitive(c, "inputs");
            if (!set_string(c, "name", name) || subst_index(c, k) != 0)
                rc = -1;
            else if (k > 0 && cJSON_IsString(cin))
                rc = cJSON_SetValuestring(cin, prev) ? 0 : -1;
            else if (k > 0 && cJSON_IsArray(cin) && cin->child)
                rc = cJSON_SetValuestring(cin->child, prev) ? 0 : -1;
            snprintf(prev, sizeof prev, "%s", name);
        }
        if (rc == 0)
            rc = renames_put(&r, name_of(n), prev);
        cJSON_Delete(n);
    }
    for (i = 0; i < len; i++)
        cJSON_Delete(items[i]);
    free(items);
    if (rc == 0 && cJSON_IsString(out))
        rc = rename_ref(out, &r, "");
    cJSON *e;
    cJSON *olist = cJSON_IsArray(out) ? out : NULL;
    cJSON_ArrayForEach(e, olist)
    {
        if (rc == 0)
            rc = rename_ref(e, &r, "");
    }
    renames_free(&r);
    return rc;
}

cJSON *mm_unroll_repeats(const cJSON *model)
{
    cJSON *doc = cJSON_Duplicate(model, 1);
    if (!doc)
        return NULL;
    const cJSON *vars = cJSON_GetObjectItemCaseSensitive(doc, "variables");
    if (unroll_list(cJSON_GetObjectItemCaseSensitive(doc, "layers"), vars,
                    cJSON_GetObjectItemCaseSensitive(doc, "outputs")) != 0)
        return fail(doc);
    cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(doc, "blocks"))
    {
        /* in a block, a name may be a block argument: literal counts only */
        if (unroll_list(cJSON_GetObjectItemCaseSensitive(b, "layers"), NULL,
                        cJSON_GetObjectItemCaseSensitive(b, "output")) != 0)
            return fail(doc);
    }
    return doc;
}

/* The node's "inputs" as a list (a flat file always has one). */
static int input_count(const cJSON *node)
{
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(node, "inputs");
    return cJSON_IsArray(in) ? cJSON_GetArraySize(in) : cJSON_IsString(in) ? 1 : -1;
}

cJSON *mm_wrap_blocks(const cJSON *flat)
{
    cJSON *doc = cJSON_Duplicate(flat, 1);
    struct renames ties = {0};
    if (!doc)
        return NULL;
    cJSON *blocks = cJSON_AddObjectToObject(doc, "blocks");
    if (!blocks)
        goto fail;
    /* tie_weight names full names: the wrapped node is "name.op" */
    cJSON *n;
    cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(flat, "layers"))
    {
        char full[256];
        if (input_count(n) > 0 && name_of(n)) {
            snprintf(full, sizeof full, "%s.op", name_of(n));
            if (renames_put(&ties, name_of(n), full) != 0)
                goto fail;
        }
    }
    int k = 0;
    cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(doc, "layers"))
    {
        int nin = input_count(n);
        cJSON *tie = tie_item(n);
        if (tie && cJSON_IsString(tie)) {
            const char *nn = renames_get(&ties, tie->valuestring, strlen(tie->valuestring));
            if (nn && !cJSON_SetValuestring(tie, nn))
                goto fail;
        }
        if (nin <= 0) {
            k++;
            continue;
        }
        char bname[32];
        snprintf(bname, sizeof bname, "mm_b%d", k++);
        /* the block: formal inputs i0..., the node itself as "op" */
        cJSON *inner = cJSON_Duplicate(n, 1), *formals = cJSON_CreateArray();
        cJSON *def = cJSON_AddObjectToObject(blocks, bname);
        if (!inner || !formals || !def || !cJSON_AddItemToObject(def, "inputs", formals)) {
            cJSON_Delete(inner);
            cJSON_Delete(formals);
            goto fail;
        }
        cJSON *layers = cJSON_AddArrayToObject(def, "layers");
        if (!layers || !cJSON_AddItemToArray(layers, inner)) {
            cJSON_Delete(inner);
            goto fail;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(inner, "inputs");
        cJSON *iin = cJSON_AddArrayToObject(inner, "inputs");
        if (!iin || !set_string(inner, "name", "op"))
            goto fail;
        for (int i = 0; i < nin; i++) {
            char f[16];
            snprintf(f, sizeof f, "i%d", i);
            cJSON *a = cJSON_CreateString(f), *b = cJSON_CreateString(f);
            if (!a || !b || !cJSON_AddItemToArray(formals, a) || !cJSON_AddItemToArray(iin, b)) {
                cJSON_Delete(a);
                cJSON_Delete(b);
                goto fail;
            }
        }
        /* the call: name, type, inputs; nothing else */
        for (cJSON *c = n->child; c;) {
            cJSON *next = c->next;
            if (strcmp(c->string, "name") != 0 && strcmp(c->string, "inputs") != 0)
                cJSON_Delete(cJSON_DetachItemViaPointer(n, c));
            c = next;
        }
        if (!set_string(n, "type", bname))
            goto fail;
    }
    renames_free(&ties);
    return doc;
fail:
    renames_free(&ties);
    return fail(doc);
}

/* Node n's content without "name" and "inputs", for comparing nodes. */
static cJSON *content(const cJSON *n)
{
    cJSON *c = cJSON_Duplicate(n, 1);
    if (c) {
        cJSON_DeleteItemFromObjectCaseSensitive(c, "name");
        cJSON_DeleteItemFromObjectCaseSensitive(c, "inputs");
    }
    return c;
}

/* The single plain reference of a node ("name", no output index), or NULL. */
static const char *single_ref(const cJSON *n)
{
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(n, "inputs");
    if (cJSON_IsArray(in) && cJSON_GetArraySize(in) == 1)
        in = in->child;
    if (!cJSON_IsString(in) || ref_name_len(in->valuestring) != strlen(in->valuestring))
        return NULL;
    return in->valuestring;
}

/* Adds `weight` uses of the name a reference string means. */
static int use(struct memest_strmap *uses, const cJSON *ref, int64_t weight)
{
    if (!cJSON_IsString(ref))
        return 0;
    size_t len = ref_name_len(ref->valuestring);
    int64_t v = 0;
    memest_strmap_get(uses, ref->valuestring, len, &v);
    /* an output index makes the use count double: never rolled */
    if (len != strlen(ref->valuestring))
        weight = 2;
    return memest_strmap_put(uses, ref->valuestring, len, v + weight);
}

/* How many times each name is referenced: inputs count 1, ties and model
 * outputs 2 (their node cannot disappear into a repeat). */
static int count_refs(const cJSON *doc, struct memest_strmap *uses)
{
    const cJSON *n, *e;
    cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(doc, "layers"))
    {
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(n, "inputs");
        if (use(uses, in, 1) != 0 ||
            use(uses, tie_item(n), 2) != 0)
            return -1;
        const cJSON *list = cJSON_IsArray(in) ? in : NULL;
        cJSON_ArrayForEach(e, list)
        {
            if (use(uses, e, 1) != 0)
                return -1;
        }
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "outputs"))
    {
        if (use(uses, e, 2) != 0)
            return -1;
    }
    return 0;
}

cJSON *mm_roll_repeats(const cJSON *flat)
{
    cJSON *doc = cJSON_Duplicate(flat, 1);
    struct memest_strmap uses = {0};
    struct renames r = {0}, ties = {0};
    bool rolled = false;
    if (!doc || count_refs(flat, &uses) != 0)
        goto fail;
    cJSON *layers = cJSON_GetObjectItemCaseSensitive(doc, "layers");
    int k = 0;
    for (cJSON *first = layers ? layers->child : NULL; first; first = first->next, k++) {
        if (!single_ref(first) || !name_of(first) ||
            tie_item(first))
            continue;
        cJSON *want = content(first);
        if (!want)
            goto fail;
        int m = 1;
        cJSON *last = first;
        for (cJSON *nx = first->next; nx; nx = nx->next) {
            const char *ref = single_ref(nx);
            int64_t u = 0;
            memest_strmap_get(&uses, name_of(last), strlen(name_of(last)), &u);
            if (!ref || !name_of(nx) || strcmp(ref, name_of(last)) != 0 || u != 1)
                break;
            cJSON *have = content(nx);
            bool same = have && cJSON_Compare(want, have, 1);
            cJSON_Delete(have);
            if (!same)
                break;
            last = nx;
            m++;
        }
        cJSON_Delete(want);
        if (m < 2)
            continue;
        /* one node "mm_r<k>" with repeat m; references to the run's last node
         * now name the repeat (its last copy's output) */
        char name[32], lastfull[48];
        snprintf(name, sizeof name, "mm_r%d", k);
        snprintf(lastfull, sizeof lastfull, "%s.%d", name, m - 1);
        if (renames_put(&r, name_of(last), name) != 0 ||
            renames_put(&ties, name_of(last), lastfull) != 0)
            goto fail;
        for (int i = 1; i < m; i++)
            cJSON_Delete(cJSON_DetachItemViaPointer(layers, first->next));
        if (!set_string(first, "name", name) ||
            !cJSON_AddNumberToObject(first, "repeat", m))
            goto fail;
        rolled = true;
    }
    if (!rolled || rename_refs(doc, &r, &ties) != 0)
        goto fail;
    memest_strmap_free(&uses);
    renames_free(&r);
    renames_free(&ties);
    return doc;
fail:
    memest_strmap_free(&uses);
    renames_free(&r);
    renames_free(&ties);
    return fail(doc);
}

/* ---- another topological order ---- */

struct edges {
    uint32_t *from, *to;
    size_t n, cap;
};

static int edge(struct edges *e, uint32_t from, uint32_t to)
{
    if (from == to)
        return 0;
    if (e->n == e->cap) {
        size_t ncap = e->cap ? e->cap * 2 : 256;
        uint32_t *f = realloc(e->from, sizeof *f * ncap);
        if (!f)
            return -1;
        e->from = f;
        uint32_t *t = realloc(e->to, sizeof *t * ncap);
        if (!t)
            return -1;
        e->to = t;
        e->cap = ncap;
    }
    e->from[e->n] = from;
    e->to[e->n++] = to;
    return 0;
}

/* The dependencies between the layers (graph nodes ni..): data, ties, and
 * the original order among the nodes that touch an aliased storage. */
static int dependencies(const struct memest_graph *g, const struct memest_run *r, uint32_t ni,
                        struct edges *e)
{
    uint32_t ns = r->nstorages;
    bool *aliased = calloc(ns ? ns : 1, sizeof *aliased);
    uint32_t *last = malloc(sizeof *last * (ns ? ns : 1));
    if (!aliased || !last) {
        free(aliased);
        free(last);
        return -1;
    }
    for (uint32_t s = 0; s < ns; s++)
        last[s] = UINT32_MAX;
    for (uint32_t n = ni; n < g->nnodes; n++) {
        const struct memest_nodeinfo *in = &r->nodes[n];
        for (uint32_t o = 0; o < in->nout; o++) {
            uint32_t s = r->values[in->out_first + o].storage;
            if (r->storages[s].node != n)
                aliased[s] = true;
        }
    }
    int rc = 0;
    for (uint32_t n = ni; rc == 0 && n < g->nnodes; n++) {
        const struct memest_node *node = &g->nodes[n];
        for (uint32_t i = 0; rc == 0 && i < node->nin; i++)
            if (node->in[i].node >= ni)
                rc = edge(e, node->in[i].node - ni, n - ni);
        if (rc == 0 && node->tie_node >= (int64_t)ni)
            rc = edge(e, (uint32_t)node->tie_node - ni, n - ni);
        /* storages touched: read through an input, or aliased by an output */
        const struct memest_nodeinfo *info = &r->nodes[n];
        for (uint32_t t = 0; rc == 0 && t < node->nin + info->nout; t++) {
            uint32_t s = t < node->nin ? memest_run_value(r, node->in[t])->storage
                                       : r->values[info->out_first + (t - node->nin)].storage;
            if (!aliased[s] || last[s] == n)
                continue;
            if (last[s] != UINT32_MAX && last[s] >= ni)
                rc = edge(e, last[s] - ni, n - ni);
            last[s] = n;
        }
    }
    free(aliased);
    free(last);
    return rc;
}

cJSON *mm_reorder(const cJSON *flat, const struct memest_graph *g, const struct memest_run *r,
                  uint32_t seed)
{
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(flat, "layers");
    uint32_t nl = (uint32_t)cJSON_GetArraySize(layers);
    if (nl > g->nnodes)
        return NULL;
    uint32_t ni = g->nnodes - nl;
    struct edges e = {0};
    uint32_t *indeg = calloc(nl ? nl : 1, sizeof *indeg), *ready = malloc(sizeof *ready * (nl ? nl : 1));
    uint32_t *first = calloc((size_t)nl + 1, sizeof *first), *adj = NULL, *order = NULL;
    cJSON *doc = NULL, **items = NULL;
    if (!indeg || !ready || !first || dependencies(g, r, ni, &e) != 0)
        goto out;
    /* adjacency lists in one array (counting sort by source) */
    adj = malloc(sizeof *adj * (e.n ? e.n : 1));
    order = malloc(sizeof *order * (nl ? nl : 1));
    if (!adj || !order)
        goto out;
    for (size_t i = 0; i < e.n; i++) {
        first[e.from[i] + 1]++;
        indeg[e.to[i]]++;
    }
    for (uint32_t i = 0; i < nl; i++)
        first[i + 1] += first[i];
    for (size_t i = 0; i < e.n; i++)
        adj[first[e.from[i]]++] = e.to[i];
    for (uint32_t i = nl; i > 0; i--) /* undo the shift of the fill */
        first[i] = first[i - 1];
    first[0] = 0;
    /* Kahn's algorithm, taking a random ready node each time */
    uint32_t nready = 0, norder = 0, state = seed * 2654435761u + 1;
    for (uint32_t i = 0; i < nl; i++)
        if (!indeg[i])
            ready[nready++] = i;
    while (nready) {
        state = state * 1664525u + 1013904223u;
        uint32_t pick = (state >> 8) % nready, n = ready[pick];
        ready[pick] = ready[--nready];
        order[norder++] = n;
        for (uint32_t k = first[n]; k < first[n + 1]; k++)
            if (--indeg[adj[k]] == 0)
                ready[nready++] = adj[k];
    }
    if (norder != nl)
        goto out;
    doc = cJSON_Duplicate(flat, 1);
    cJSON *dl = doc ? cJSON_GetObjectItemCaseSensitive(doc, "layers") : NULL;
    items = malloc(sizeof *items * (nl ? nl : 1));
    if (!dl || !items) {
        cJSON_Delete(doc);
        doc = NULL;
        goto out;
    }
    uint32_t k = 0;
    for (cJSON *c = dl->child; c && k < nl; c = c->next)
        items[k++] = c;
    for (k = 0; k < nl; k++)
        cJSON_DetachItemViaPointer(dl, items[k]);
    for (k = 0; k < nl; k++)
        cJSON_AddItemToArray(dl, items[order[k]]);
out:
    free(e.from);
    free(e.to);
    free(indeg);
    free(ready);
    free(first);
    free(adj);
    free(order);
    free(items);
    return doc;
}

/* ---- figures ---- */

/* Turns every whole number of `j` (any depth) into its exact decimal text:
 * cJSON 1.7's printer keeps 15 digits whenever they read back within a
 * relative epsilon (9007199254740939 prints as 9.00719925474094e+15), so a
 * parsed document printed as is would not be the document read. Whole
 * numbers below 2^63 are exact in a double and in "%.0f". 0 / -1 (memory). */
static int exact_numbers(cJSON *j)
{
    for (cJSON *c = j ? j->child : NULL; c; c = c->next) {
        if (cJSON_IsNumber(c) && c->valuedouble == floor(c->valuedouble) &&
            fabs(c->valuedouble) < 9.2e18) {
            char buf[32];
            snprintf(buf, sizeof buf, "%.0f", c->valuedouble);
            char *text = malloc(strlen(buf) + 1);
            if (!text)
                return -1;
            memcpy(text, buf, strlen(buf) + 1);
            c->type = cJSON_Raw;
            c->valuestring = text;
        } else if ((cJSON_IsArray(c) || cJSON_IsObject(c)) && exact_numbers(c) != 0) {
            return -1;
        }
    }
    return 0;
}

void mm_figures_of(const cJSON *doc, const char *label, uint32_t max_nodes, int64_t batch,
                   enum memest_dtype dtype, const struct memest_step_cfg *cfg,
                   struct mm_figures *out)
{
    memset(out, 0, sizeof *out);
    struct memest_error err = {0};
    struct memest_model m = {0};
    struct memest_graph g = {0};
    struct memest_run r = {0};
    cJSON *exact = cJSON_Duplicate(doc, 1);
    char *text = exact && exact_numbers(exact) == 0 ? cJSON_PrintUnformatted(exact) : NULL;
    cJSON_Delete(exact);
    out->rc = -1;
    if (!text) {
        memest_errf(&err, MEMEST_ERR_NOMEM, NULL, "out of memory printing the document");
    } else if (memest_model_read_string(text, strlen(text), label, &m, &err) == 0) {
        m.max_nodes = max_nodes;
        struct memest_run_opts ro = {.batch = batch, .dtype = dtype};
        if (memest_model_build(&m, NULL, 0, &g, &err) == 0) {
            out->nnodes = g.nnodes;
            struct memest_step_cfg step = *cfg;   /* with the document's loss */
            if (memest_step_cfg_resolve_loss(&step, g.loss, &err) == 0 &&
                memest_run_infer(&r, &g, &ro, &err) == 0 &&
                memest_estimate(&r, &step, &out->e, NULL, NULL, &err) == 0)
                out->rc = 0;
            memest_run_free(&r);
            memest_graph_free(&g);
        }
        memest_model_free(&m);
    }
    free(text);
    out->code = err.code;
    if (out->rc != 0)
        memest_error_format(&err, out->msg, sizeof out->msg);
}

#define DIFF(field)                                                                       \
    do {                                                                                  \
        if (a->field != b->field) {                                                       \
            snprintf(why, whylen, "%s: %llu != %llu", #field,                             \
                     (unsigned long long)a->field, (unsigned long long)b->field);         \
            return false;                                                                 \
        }                                                                                 \
    } while (0)

static bool same_order_free(const struct memest_estimate *a, const struct memest_estimate *b,
                            char *why, size_t whylen)
{
    DIFF(params.total);
    DIFF(params.trainable);
    DIFF(params.frozen);
    DIFF(params.tensors);
    DIFF(params.trainable_tensors);
    DIFF(params.bytes);
    DIFF(params.trainable_bytes);
    DIFF(params.buffer_elems);
    DIFF(params.buffer_bytes);
    DIFF(params.buffer_tensors);
    DIFF(gradients);
    DIFF(opt.copies);
    DIFF(opt.device_bytes);
    DIFF(opt.step_tensors);
    DIFF(opt.host_bytes);
    DIFF(activations);
    return true;
}

static bool same_macs(double a, double b, double rel)
{
    return a == b || fabs(a - b) <= rel * fmax(fabs(a), fabs(b));
}

static bool same_peak(const struct memest_peak *a, const struct memest_peak *b, char *why,
                      size_t whylen)
{
    DIFF(bytes);
    DIFF(event);
    DIFF(phase);
    DIFF(node);
    for (int c = 0; c < MEMEST_CAT_COUNT; c++)
        DIFF(at_peak[c]);
    DIFF(tensor_bytes);
    DIFF(tensor_event);
    DIFF(reserved);
    DIFF(segments);
    return true;
}

bool mm_same(const struct mm_figures *fa, const struct mm_figures *fb, enum mm_compare how,
             char *why, size_t whylen)
{
    if (fa->rc != 0 || fb->rc != 0) {
        if (fa->rc == fb->rc && fa->code == fb->code)
            return true;
        snprintf(why, whylen, "one fails, the other not, or not alike: [%s] vs [%s]",
                 fa->rc ? fa->msg : "ok", fb->rc ? fb->msg : "ok");
        return false;
    }
    const struct memest_estimate *a = &fa->e, *b = &fb->e;
    if (!same_order_free(a, b, why, whylen))
        return false;
    /* MAC sums add the nodes in another order after mm_reorder: equal to the
     * last bits of a double */
    double rel = how == MM_ALL ? 0 : 1e-12;
    if (!same_macs(a->flops.fwd_macs, b->flops.fwd_macs, rel) ||
        !same_macs(a->flops.bwd_macs, b->flops.bwd_macs, rel)) {
        snprintf(why, whylen, "MACs: %.17g + %.17g != %.17g + %.17g", a->flops.fwd_macs,
                 a->flops.bwd_macs, b->flops.fwd_macs, b->flops.bwd_macs);
        return false;
    }
    if (how == MM_ORDER_FREE)
        return true;
    if (fa->nnodes != fb->nnodes) {
        snprintf(why, whylen, "%u nodes != %u nodes", fa->nnodes, fb->nnodes);
        return false;
    }
    char sub[200];
    if (!same_peak(&a->train_peak, &b->train_peak, sub, sizeof sub)) {
        snprintf(why, whylen, "training peak: %s", sub);
        return false;
    }
    if (!same_peak(&a->infer_peak, &b->infer_peak, sub, sizeof sub)) {
        snprintf(why, whylen, "inference peak: %s", sub);
        return false;
    }
    DIFF(reserved_peak);
    DIFF(infer_reserved_peak);
    DIFF(overhead);
    DIFF(total_device);
    DIFF(infer_total_device);
    return true;
}
