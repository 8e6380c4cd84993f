/* gpu.c - the GPU presets: parsing models/gpus.json (embedded in the binary
 * at build time), lookup by name with "did you mean", the precision rule of
 * the time estimate, and the --list-gpus table. */
#include "memest/gpu.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "memest/format.h"
#include "memest/model.h"
#include "memest/suggest.h"

static const char *const prec_names[MEMEST_PREC_COUNT] = {
    [MEMEST_PREC_FP32] = "fp32",
    [MEMEST_PREC_TF32] = "tf32",
    [MEMEST_PREC_FP16] = "fp16",
    [MEMEST_PREC_BF16] = "bf16",
};
_Static_assert(MEMEST_PREC_COUNT == 4, "MEMEST_PREC_COUNT changed: update prec_names");

static const char *const arch_names[] = {"volta", "turing", "ampere", "ada",
                                         "hopper", "blackwell", "cdna2", "cdna3"};

const char *memest_precision_name(enum memest_precision p)
{
    return p < MEMEST_PREC_COUNT ? prec_names[p] : "?";
}

/* ---- parsing ---- */

struct parser {
    const char *label;
    struct memest_error *err;
    char path[128];
};

static int fail(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct parser *p, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memest_errf(p->err, MEMEST_ERR_SCHEMA, p->path, "%s", msg);
    memest_err_file(p->err, p->label);
    return -1;
}

static void set_path(struct parser *p, size_t i, const char *key)
{
    snprintf(p->path, sizeof p->path, "gpus[%zu]%s%.60s", i, key ? "." : "", key ? key : "");
}

/* Each key of obj must be one of keys[]; required[] flags which must appear. */
static int check_keys(struct parser *p, const cJSON *obj, const char *const *keys,
                      const bool *required, int n)
{
    char base[128];
    snprintf(base, sizeof base, "%s", p->path);
    bool seen[16] = {0};
    for (const cJSON *it = obj->child; it; it = it->next) {
        int k = 0;
        while (k < n && strcmp(it->string, keys[k]) != 0)
            k++;
        if (k == n) {
            snprintf(p->path, sizeof p->path, "%.60s%s%.60s", base, base[0] ? "." : "",
                     it->string);
            return fail(p, "unknown field \"%s\"", it->string);
        }
        seen[k] = true;
    }
    for (int k = 0; k < n; k++) {
        if (required[k] && !seen[k]) {
            snprintf(p->path, sizeof p->path, "%s", base);
            return fail(p, "missing field \"%s\"", keys[k]);
        }
    }
    return 0;
}

static int get_str(struct parser *p, const cJSON *obj, const char *key, const char **out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsString(it) || !it->valuestring[0])
        return fail(p, "\"%s\" must be a non-empty string", key);
    *out = it->valuestring;
    return 0;
}

static int get_strs(struct parser *p, const cJSON *obj, const char *key, const char **out,
                    int *n, bool required)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, key);
    *n = 0;
    if (!arr && !required)
        return 0;
    if (!cJSON_IsArray(arr))
        return fail(p, "\"%s\" must be a list of strings", key);
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        if (!cJSON_IsString(it) || !it->valuestring[0])
            return fail(p, "\"%s\" must be a list of non-empty strings", key);
        if (*n == MEMEST_GPU_MAX_NAMES)
            return fail(p, "\"%s\": at most 8 names", key);
        out[(*n)++] = it->valuestring;
    }
    if (required && *n == 0)
        return fail(p, "\"%s\" must not be empty", key);
    return 0;
}

static int get_positive(struct parser *p, const cJSON *it, const char *what, double *out)
{
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble <= 0)
        return fail(p, "%s must be a positive number", what);
    *out = it->valuedouble;
    return 0;
}

/* Lower-case letters, digits and '-', at most MAX_NAME characters. */
#define MAX_NAME 40
static bool valid_name(const char *s)
{
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-') ||
            c - s >= MAX_NAME)
            return false;
    return s[0] != '\0';
}

static int parse_tflops(struct parser *p, const cJSON *obj, struct memest_gpu *g)
{
    if (!cJSON_IsObject(obj))
        return fail(p, "%s must be an object {\"fp32\", \"tf32\", \"fp16\", \"bf16\"}", "tflops");
    static const bool req[MEMEST_PREC_COUNT] = {true, true, true, true};
    if (check_keys(p, obj, prec_names, req, MEMEST_PREC_COUNT) != 0)
        return -1;
    char base[128];
    snprintf(base, sizeof base, "%s", p->path);
    for (int k = 0; k < MEMEST_PREC_COUNT; k++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, prec_names[k]);
        snprintf(p->path, sizeof p->path, "%.100s.%s", base, prec_names[k]);
        double v = 0;
        if (k != MEMEST_PREC_FP32 && cJSON_IsNull(it))
            v = 0;
        else if (get_positive(p, it, k == MEMEST_PREC_FP32 ? "fp32 (TFLOP/s)"
                                                         : "a TFLOP/s figure (or null)", &v) != 0)
            return -1;
        g->peak_flops[k] = v * 1e12;
    }
    return 0;
}

static int parse_gpu(struct parser *p, size_t i, const cJSON *o, struct memest_gpu *g)
{
    static const char *const keys[] = {
        "name",          "aliases", "label",  "device_names",  "arch",       "memory",
        "memory_exact",  "memory_source",     "tflops",        "bandwidth_gbs", "spec_source",
        "compute_capability", "nvswitch",
    };
    static const bool req[] = {true, false, true, true, true, true,
                               true, true,  true, true, true, true, false};
    _Static_assert(sizeof keys / sizeof *keys == sizeof req / sizeof *req, "keys and req differ");
    set_path(p, i, NULL);
    if (!cJSON_IsObject(o))
        return fail(p, "%s must be an object", "a GPU");
    if (check_keys(p, o, keys, req, (int)(sizeof keys / sizeof *keys)) != 0)
        return -1;
    memset(g, 0, sizeof *g);
#define AT(key) set_path(p, i, key)
    AT("name");
    if (get_str(p, o, "name", &g->name) != 0)
        return -1;
    if (!valid_name(g->name))
        return fail(p, "\"%.60s\": a name is lower-case letters, digits and '-', at most %d",
                    g->name, MAX_NAME);
    AT("aliases");
    if (get_strs(p, o, "aliases", g->aliases, &g->naliases, false) != 0)
        return -1;
    for (int a = 0; a < g->naliases; a++)
        if (!valid_name(g->aliases[a]))
            return fail(p, "\"%.60s\": a name is lower-case letters, digits and '-', at most %d",
                        g->aliases[a], MAX_NAME);
    AT("label");
    if (get_str(p, o, "label", &g->label) != 0)
        return -1;
    AT("device_names");
    if (get_strs(p, o, "device_names", g->device_names, &g->ndevice_names, true) != 0)
        return -1;
    AT("arch");
    if (get_str(p, o, "arch", &g->arch) != 0)
        return -1;
    size_t a = 0;
    while (a < sizeof arch_names / sizeof *arch_names && strcmp(g->arch, arch_names[a]) != 0)
        a++;
    if (a == sizeof arch_names / sizeof *arch_names)
        return fail(p, "unknown arch \"%s\" (volta, turing, ampere, ada, hopper, blackwell, cdna2, "
                       "cdna3)", g->arch);
    AT("compute_capability");
    const cJSON *cc = cJSON_GetObjectItemCaseSensitive(o, "compute_capability");
    if (!cJSON_IsNull(cc)) {
        /* major is one or two digits: Blackwell is 10.0 (B200) and 12.0 */
        const char *v = cJSON_IsString(cc) ? cc->valuestring : "";
        unsigned major = 0;
        size_t k = 0;
        while (k < 2 && v[k] >= '0' && v[k] <= '9')
            major = major * 10 + (unsigned)(v[k++] - '0');
        if (!(k > 0 && major > 0 && v[0] != '0' && v[k] == '.' && v[k + 1] >= '0' &&
              v[k + 1] <= '9' && !v[k + 2]))
            return fail(p, "%s must be \"major.minor\" (such as \"8.0\") or null",
                        "compute_capability");
        g->compute_capability = major * 10 + (unsigned)(v[k + 1] - '0');
    }
    AT("memory");
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(o, "memory");
    double d = cJSON_IsNumber(mem) ? mem->valuedouble : -1;
    if (!isfinite(d) || d < 1 || d != floor(d) || d >= 9007199254740992.0)
        return fail(p, "%s must be a whole number of bytes between 1 and 2^53 - 1", "memory");
    g->memory = (uint64_t)d;
    AT("memory_exact");
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(o, "memory_exact");
    if (!cJSON_IsBool(ex))
        return fail(p, "%s must be true or false", "memory_exact");
    g->memory_exact = cJSON_IsTrue(ex);
    AT("memory_source");
    if (get_str(p, o, "memory_source", &g->memory_source) != 0)
        return -1;
    AT("tflops");
    if (parse_tflops(p, cJSON_GetObjectItemCaseSensitive(o, "tflops"), g) != 0)
        return -1;
    AT("bandwidth_gbs");
    if (get_positive(p, cJSON_GetObjectItemCaseSensitive(o, "bandwidth_gbs"), "bandwidth_gbs",
                     &g->bandwidth) != 0)
        return -1;
    g->bandwidth *= 1e9;
    AT("nvswitch");
    const cJSON *nvs = cJSON_GetObjectItemCaseSensitive(o, "nvswitch");
    if (nvs && !cJSON_IsBool(nvs))
        return fail(p, "%s must be true or false", "nvswitch");
    g->nvswitch = cJSON_IsTrue(nvs);
    AT("spec_source");
    if (get_str(p, o, "spec_source", &g->spec_source) != 0)
        return -1;
#undef AT
    return 0;
}

/* Every name and alias is unique across the table. */
static int check_unique(struct parser *p, const struct memest_gpu_table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct memest_gpu *g = &t->gpus[i];
        for (int a = -1; a < g->naliases; a++) {
            const char *nm = a < 0 ? g->name : g->aliases[a];
            for (size_t j = 0; j <= i; j++) {
                const struct memest_gpu *h = &t->gpus[j];
                for (int b = -1; b < h->naliases; b++) {
                    if (j == i && b >= a)
                        break;
                    if (strcasecmp(nm, b < 0 ? h->name : h->aliases[b]) == 0) {
                        set_path(p, i, a < 0 ? "name" : "aliases");
                        return fail(p, "the name \"%s\" is used twice", nm);
                    }
                }
            }
        }
    }
    return 0;
}

int memest_gpu_table_parse(const char *text, size_t len, const char *label,
                           struct memest_gpu_table *t, struct memest_error *err)
{
    memset(t, 0, sizeof *t);
    /* a private error record: the reader names the file in it even when it
     * succeeds, and the caller's record must stay clean then */
    struct memest_error le = {0};
    struct memest_model m = {0};
    if (memest_model_read_string(text, len, label, &m, &le) != 0) {
        if (err && err->code == MEMEST_ERR_NONE)
            *err = le;
        return -1;
    }
    memset(&le, 0, sizeof le);
    t->root = m.root;
    struct parser p = {.label = label, .err = &le};
    const cJSON *root = t->root;
    static const char *const keys[] = {"schema_version", "description", "comment", "gpus"};
    static const bool req[] = {true, false, false, true};
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(root, "gpus");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "schema_version");
    if (!cJSON_IsObject(root)) {
        fail(&p, "%s must be a JSON object", "the GPU table");
        goto fail;
    }
    if (check_keys(&p, root, keys, req, 4) != 0)
        goto fail;
    if (!cJSON_IsNumber(ver) || ver->valuedouble != 1) {
        snprintf(p.path, sizeof p.path, "schema_version");
        fail(&p, "%s must be 1", "schema_version");
        goto fail;
    }
    int n = cJSON_GetArraySize(gpus);
    if (!cJSON_IsArray(gpus) || n == 0) {
        snprintf(p.path, sizeof p.path, "gpus");
        fail(&p, "%s must be a non-empty list", "\"gpus\"");
        goto fail;
    }
    if (n > MEMEST_GPU_MAX_PRESETS) {
        snprintf(p.path, sizeof p.path, "gpus");
        fail(&p, "%d presets; a table holds at most %d", n, MEMEST_GPU_MAX_PRESETS);
        goto fail;
    }
    t->gpus = calloc((size_t)n, sizeof *t->gpus);
    if (!t->gpus) {
        memest_errf(&le, MEMEST_ERR_NOMEM, NULL, "out of memory");
        goto fail;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, gpus)
    {
        if (parse_gpu(&p, t->n, it, &t->gpus[t->n]) != 0)
            goto fail;
        t->n++;
    }
    if (check_unique(&p, t) != 0)
        goto fail;
    return 0;
fail:
    memest_gpu_table_free(t);
    if (err && err->code == MEMEST_ERR_NONE)
        *err = le;
    return -1;
}

int memest_gpu_table_builtin(struct memest_gpu_table *t, struct memest_error *err)
{
    return memest_gpu_table_parse((const char *)memest_gpus_json, memest_gpus_json_len,
                                  "models/gpus.json (built in)", t, err);
}

void memest_gpu_table_free(struct memest_gpu_table *t)
{
    free(t->gpus);
    cJSON_Delete(t->root);
    cJSON_Delete(t->user_root);
    free(t->user_file);
    memset(t, 0, sizeof *t);
}

/* ---- the user's presets ---- */

/* Whether a name or an alias of a is a name or an alias of b. */
static bool shares_name(const struct memest_gpu *a, const struct memest_gpu *b)
{
    for (int i = -1; i < a->naliases; i++)
        for (int j = -1; j < b->naliases; j++)
            if (strcasecmp(i < 0 ? a->name : a->aliases[i], j < 0 ? b->name : b->aliases[j]) == 0)
                return true;
    return false;
}

int memest_gpu_table_add(struct memest_gpu_table *t, const char *text, size_t len,
                         const char *label, struct memest_error *err)
{
    if (t->user_root)
        return memest_errf(err, MEMEST_ERR_INTERNAL, NULL, "internal: a second presets file");
    struct memest_gpu_table u;
    if (memest_gpu_table_parse(text, len, label, &u, err) != 0)
        return -1;
    struct memest_gpu *g = calloc(t->n + u.n, sizeof *g);
    bool *placed = calloc(u.n, sizeof *placed);
    char *file = strdup(label);
    if (!g || !placed || !file) {
        free(g);
        free(placed);
        free(file);
        memest_gpu_table_free(&u);
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    }
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++) {
        size_t k = 0;
        while (k < u.n && !shares_name(&t->gpus[i], &u.gpus[k]))
            k++;
        if (k == u.n) {
            g[n++] = t->gpus[i];
        } else if (!placed[k]) {   /* at the place of the first preset it replaces */
            g[n] = u.gpus[k];
            g[n].user = true;
            g[n++].replaces = t->gpus[i].name;
            placed[k] = true;
        }
    }
    for (size_t k = 0; k < u.n; k++)
        if (!placed[k]) {
            g[n] = u.gpus[k];
            g[n++].user = true;
        }
    free(placed);
    free(u.gpus);   /* its strings stay in u.root, which t now owns */
    free(t->gpus);
    t->gpus = g;
    t->n = n;
    t->user_root = u.root;
    t->user_file = file;
    return 0;
}

int memest_gpu_table_add_file(struct memest_gpu_table *t, const char *path,
                              struct memest_error *err)
{
    /* a private record: the reader names the file in it even when it
     * succeeds, and the caller's record must stay clean then */
    struct memest_error le = {0};
    char *text = NULL;
    size_t len = 0;
    int rc = memest_model_read_text(path, MEMEST_GPUS_FILE_MAX_BYTES, "GPU presets files", &text,
                                    &len, &le);
    if (rc == 0)
        rc = memest_gpu_table_add(t, text, len, path, &le);
    free(text);
    if (rc != 0 && err && err->code == MEMEST_ERR_NONE)
        *err = le;
    return rc;
}

/* ---- lookup ---- */

const struct memest_gpu *memest_gpu_find(const struct memest_gpu_table *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct memest_gpu *g = &t->gpus[i];
        if (strcasecmp(g->name, name) == 0)
            return g;
        for (int a = 0; a < g->naliases; a++)
            if (strcasecmp(g->aliases[a], name) == 0)
                return g;
    }
    return NULL;
}

const struct memest_gpu *memest_gpu_match_device(const struct memest_gpu_table *t,
                                                 const char *device_name)
{
    for (int user = 1; user >= 0; user--)   /* the user's presets first */
        for (size_t i = 0; i < t->n; i++)
            for (int d = 0; d < t->gpus[i].ndevice_names && t->gpus[i].user == user; d++)
                if (strcasecmp(t->gpus[i].device_names[d], device_name) == 0)
                    return &t->gpus[i];
    return NULL;
}

const struct memest_gpu *memest_gpu_lookup(const struct memest_gpu_table *t, const char *name,
                                           struct memest_error *err)
{
    return memest_gpu_lookup_opt(t, name, "--gpu", err);
}

/* Whether s begins (ignoring case) the name or an alias of g. */
static bool begins_name(const struct memest_gpu *g, const char *s)
{
    size_t n = strlen(s);
    for (int a = -1; a < g->naliases; a++)
        if (strncasecmp(a < 0 ? g->name : g->aliases[a], s, n) == 0)
            return true;
    return false;
}

/* The presets whose name or an alias begins with name, as "a, b, c" into
 * buf (the first ones when they do not all fit, then "..."), the first in
 * *one; their count. */
static size_t family(const struct memest_gpu_table *t, const char *name, char *buf, size_t n,
                     const struct memest_gpu **one)
{
    size_t count = 0, len = 0;
    bool full = false;
    buf[0] = '\0';
    for (size_t i = 0; i < t->n; i++) {
        const struct memest_gpu *g = &t->gpus[i];
        if (!begins_name(g, name))
            continue;
        if (count++ == 0)
            *one = g;
        if (full)
            continue;
        const char *sep = len ? ", " : "";
        if (len + strlen(sep) + strlen(g->name) + sizeof ", ..." > n) {
            snprintf(buf + len, n - len, ", ...");
            full = true;
            continue;
        }
        len += (size_t)snprintf(buf + len, n - len, "%s%s", sep, g->name);
    }
    return count;
}

const struct memest_gpu *memest_gpu_lookup_opt(const struct memest_gpu_table *t, const char *name,
                                               const char *opt, struct memest_error *err)
{
    const struct memest_gpu *g = memest_gpu_find(t, name);
    if (g)
        return g;
    const char *list_hint = strcmp(opt, "--gpu") == 0 ? "; --mem SIZE for any other card" : "";
    char names[256];
    const struct memest_gpu *one = NULL;
    size_t count = name[0] ? family(t, name, names, sizeof names, &one) : 0;
    if (count > 1) {
        memest_errf(err, MEMEST_ERR_USAGE, NULL,
                    "%s: '%.64s' matches several presets: %s; name one (memest --list-gpus "
                    "lists them)", opt, name, names);
        return NULL;
    }
    const char *near = count == 1 ? one->name : NULL;
    if (!near) {   /* the nearest name or alias (memest_suggest ignores case) */
        size_t total = 0;
        for (size_t i = 0; i < t->n; i++)
            total += 1 + (size_t)t->gpus[i].naliases;
        const char **cands = malloc((total ? total : 1) * sizeof *cands);
        int nc = 0;
        for (size_t i = 0; cands && i < t->n; i++) {
            cands[nc++] = t->gpus[i].name;
            for (int a = 0; a < t->gpus[i].naliases; a++)
                cands[nc++] = t->gpus[i].aliases[a];
        }
        near = cands ? memest_suggest(name, cands, nc) : NULL;
        free(cands);
    }
    char dym[sizeof err->msg];
    memest_errf(err, MEMEST_ERR_USAGE, NULL,
                "%s: unknown GPU '%s'%s (memest --list-gpus lists them%s)", opt, name,
                memest_suggest_clause_sq(near, dym, sizeof dym), list_hint);
    return NULL;
}

/* ---- precision ---- */

enum memest_precision memest_gpu_step_precision(enum memest_dtype dtype, enum memest_amp amp)
{
    if (dtype == MEMEST_F16 || amp == MEMEST_AMP_FP16)
        return MEMEST_PREC_FP16;
    if (dtype == MEMEST_BF16 || amp == MEMEST_AMP_BF16)
        return MEMEST_PREC_BF16;
    return MEMEST_PREC_FP32;
}

double memest_gpu_peak(const struct memest_gpu *g, enum memest_precision p, bool *fallback)
{
    bool fb = p >= MEMEST_PREC_COUNT || g->peak_flops[p] <= 0;
    if (fallback)
        *fallback = fb;
    return fb ? g->peak_flops[MEMEST_PREC_FP32] : g->peak_flops[p];
}
