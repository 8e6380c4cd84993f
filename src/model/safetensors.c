/* safetensors.c - a checkpoint's safetensors headers (safetensors.h): the
 * files of the folder as transformers v4.48.0 finds them (modeling_utils.py
 * from_pretrained: model.safetensors first, else the index's shards), and
 * each header held to what the safetensors library (v0.4.5,
 * safetensors/src/tensor.rs: Metadata::validate, read_metadata) checks
 * before it loads a tensor: the header length at most MAX_HEADER_SIZE and
 * within the file, the JSON, every dtype known, each tensor's data_offsets
 * exactly its element count times its dtype's size, the tensors' data
 * back to back from 0 to the end of the file. Only the first 8 bytes and
 * the header are read, with fread into a buffer of the header's size. */
#include "memest/safetensors.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "memest/checked.h"
#include "memest/format.h"
#include "memest/strmap.h"

#include "hf_internal.h"
#include "safetensors_internal.h"

static const struct {
    const char *name;
    unsigned bits;
} dtypes[MEMEST_CK_COUNT] = {
    [MEMEST_CK_BOOL] = {"BOOL", 8},        [MEMEST_CK_U8] = {"U8", 8},
    [MEMEST_CK_I8] = {"I8", 8},            [MEMEST_CK_F8_E5M2] = {"F8_E5M2", 8},
    [MEMEST_CK_F8_E4M3] = {"F8_E4M3", 8},  [MEMEST_CK_F8_E8M0] = {"F8_E8M0", 8},
    [MEMEST_CK_I16] = {"I16", 16},         [MEMEST_CK_U16] = {"U16", 16},
    [MEMEST_CK_F16] = {"F16", 16},         [MEMEST_CK_BF16] = {"BF16", 16},
    [MEMEST_CK_I32] = {"I32", 32},         [MEMEST_CK_U32] = {"U32", 32},
    [MEMEST_CK_F32] = {"F32", 32},         [MEMEST_CK_F64] = {"F64", 64},
    [MEMEST_CK_I64] = {"I64", 64},         [MEMEST_CK_U64] = {"U64", 64},
    [MEMEST_CK_C64] = {"C64", 64},         [MEMEST_CK_F4] = {"F4", 4},
    [MEMEST_CK_F6_E2M3] = {"F6_E2M3", 6},  [MEMEST_CK_F6_E3M2] = {"F6_E3M2", 6},
};

const char *memest_ckpt_dtype_name(enum memest_ckpt_dtype d)
{
    return (unsigned)d < MEMEST_CK_COUNT ? dtypes[d].name : "?";
}

unsigned memest_ckpt_dtype_bits(enum memest_ckpt_dtype d)
{
    return (unsigned)d < MEMEST_CK_COUNT ? dtypes[d].bits : 0;
}

#define INDEX_NAME "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"

struct reader {
    struct memest_ckpt *c;
    struct memest_arena *a;
    struct memest_error *err;
    struct memest_strmap names;    /* tensor name -> index into c->t */
    uint64_t cap;                  /* of tmp */
    struct memest_ckpt_tensor *tmp;   /* grown while reading (malloc), then copied */
};

static int nomem(struct reader *R)
{
    return memest_errf(R->err, MEMEST_ERR_NOMEM, NULL, "out of memory");
}

int mb_st_fail(struct memest_error *err, const char *file, const char *tensor,
               enum memest_errcode code, const char *fmt, ...)
{
    char msg[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memest_err_file(err, file);
    return memest_errf(err, code, tensor, "%s", msg);
}

const char *mb_st_dims(int ndim, const int64_t *size, char *buf, size_t n)
{
    struct memest_shape s = {.ndim = ndim};
    for (int d = 0; d < ndim && d < MEMEST_MAX_DIMS; d++)
        s.size[d] = size[d];
    return memest_shape_str(&s, buf, n);
}

#define bad(R, ...) mb_st_fail((R)->err, __VA_ARGS__)

/* A whole number of at least 0 that a double holds exactly (at most 2^53). */
static bool whole(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 9007199254740992.0) ||
        v->valuedouble != (double)(uint64_t)v->valuedouble)
        return false;
    *out = (uint64_t)v->valuedouble;
    return true;
}

static int parse_dtype(const char *s, uint8_t *out)
{
    for (int i = 0; i < MEMEST_CK_COUNT; i++)
        if (strcmp(s, dtypes[i].name) == 0) {
            *out = (uint8_t)i;
            return 0;
        }
    return -1;
}

/* One tensor entry {dtype, shape, data_offsets}: into *t, its offsets in
 * *begin, *end. */
static int parse_tensor(struct reader *R, const char *file, const cJSON *e,
                        struct memest_ckpt_tensor *t, uint64_t *begin, uint64_t *end)
{
    const char *name = e->string;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsObject(e) || !dt || !sh || !off)
        return bad(R, file, name, MEMEST_ERR_SCHEMA, "a tensor's entry is an object of dtype, "
                   "shape and data_offsets");
    if (!cJSON_IsString(dt) || parse_dtype(dt->valuestring, &t->dtype) != 0) {
        char list[400] = "";
        size_t pos = 0;
        for (int i = 0; i < MEMEST_CK_COUNT; i++)
            pos += (size_t)snprintf(list + pos, sizeof list - pos, "%s%s", i ? ", " : "",
                                    dtypes[i].name);
        return bad(R, file, name, MEMEST_ERR_SCHEMA, "dtype: expected one of safetensors' %s",
                   list);
    }
    if (!cJSON_IsArray(sh))
        return bad(R, file, name, MEMEST_ERR_SCHEMA, "shape: expected a list of sizes");
    int nd = cJSON_GetArraySize(sh);
    if (nd > MEMEST_MAX_DIMS)
        return bad(R, file, name, MEMEST_ERR_LIMIT, "shape: %d dimensions, more than memest's "
                   "limit of %d", nd, MEMEST_MAX_DIMS);
    t->ndim = nd;
    uint64_t numel = 1, bits;
    int d = 0;
    for (const cJSON *s = sh->child; s; s = s->next, d++) {
        uint64_t v;
        if (!whole(s, &v))
            return bad(R, file, name, MEMEST_ERR_SCHEMA, "shape: expected whole numbers of at "
                       "least 0");
        t->shape[d] = (int64_t)v;
        if (!memest_mul(numel, v, &numel))
            return bad(R, file, name, MEMEST_ERR_LIMIT, "shape: more than 2^63-1 elements");
    }
    char sb[160];
    mb_st_dims(t->ndim, t->shape, sb, sizeof sb);
    if (!memest_mul(numel, dtypes[t->dtype].bits, &bits))
        return bad(R, file, name, MEMEST_ERR_LIMIT, "shape %s of %s: more than 2^63-1 bits", sb,
                   dtypes[t->dtype].name);
    if (bits % 8 != 0)
        return bad(R, file, name, MEMEST_ERR_SCHEMA, "shape %s of %s is not a whole number of "
                   "bytes", sb, dtypes[t->dtype].name);
    t->bytes = bits / 8;
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 || !whole(off->child, begin) ||
        !whole(off->child->next, end) || *end < *begin)
        return bad(R, file, name, MEMEST_ERR_SCHEMA, "data_offsets: expected [begin, end], two "
                   "whole numbers with begin <= end");
    if (*end - *begin != t->bytes)
        return bad(R, file, name, MEMEST_ERR_SCHEMA, "data_offsets [%llu, %llu] hold %llu bytes, "
                   "but %s of shape %s is %llu bytes", (unsigned long long)*begin,
                   (unsigned long long)*end, (unsigned long long)(*end - *begin),
                   dtypes[t->dtype].name, sb, (unsigned long long)t->bytes);
    return 0;
}

struct span {
    uint64_t begin, end, t;
};

static int cmp_span(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

/* The tensors' data back to back from byte 0 and filling the data region
 * of `data` bytes (safetensors' InvalidOffset, MetadataIncompleteBuffer). */
static int check_spans(struct reader *R, const char *file, struct span *s, size_t n, uint64_t data)
{
    qsort(s, n, sizeof *s, cmp_span);
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = R->tmp[s[i].t].name;
        if (s[i].begin != at)
            return bad(R, file, name, MEMEST_ERR_SCHEMA, "data_offsets [%llu, %llu] %s: the "
                       "tensors' data must follow one another from byte 0",
                       (unsigned long long)s[i].begin, (unsigned long long)s[i].end,
                       s[i].begin < at ? "overlap the tensor before"
                       : i ? "leave a gap after the tensor before" : "do not begin at byte 0");
        at = s[i].end;
    }
    if (at != data)
        return bad(R, file, n ? R->tmp[s[n - 1].t].name : NULL, MEMEST_ERR_SCHEMA,
                   "the tensors' data ends at byte %llu, but the file holds %llu bytes of data "
                   "after its header%s", (unsigned long long)at, (unsigned long long)data,
                   at > data ? " (truncated?)" : "");
    return 0;
}

/* "__metadata__": an object of strings. */
static int check_metadata(struct reader *R, const char *file, const cJSON *md)
{
    bool ok = cJSON_IsObject(md);
    for (const cJSON *c = ok ? md->child : NULL; c; c = c->next)
        ok = ok && cJSON_IsString(c);
    return ok ? 0 : bad(R, file, "__metadata__", MEMEST_ERR_SCHEMA,
                        "expected an object of strings");
}

/* The tensors of a parsed header appended to R->tmp. */
static int add_tensors(struct reader *R, const char *file, uint32_t fi, const cJSON *root,
                       uint64_t data)
{
    uint64_t n = (uint64_t)cJSON_GetArraySize(root);
    uint64_t need = R->c->ntensors + n;
    if (need > R->cap) {
        uint64_t cap = R->cap ? R->cap : 256;
        while (cap < need)
            cap *= 2;
        void *p = realloc(R->tmp, (size_t)cap * sizeof *R->tmp);
        if (!p)
            return nomem(R);
        R->tmp = p;
        R->cap = cap;
    }
    struct span *s = malloc(((size_t)n + 1) * sizeof *s);
    if (!s)
        return nomem(R);
    size_t ns = 0;
    int rc = 0;
    for (const cJSON *e = root->child; e && rc == 0; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) {
            rc = check_metadata(R, file, e);
            continue;
        }
        if (R->c->ntensors >= MEMEST_CKPT_MAX_TENSORS) {
            rc = bad(R, file, e->string, MEMEST_ERR_LIMIT, "more than %u tensors in the "
                     "checkpoint (memest's limit)", MEMEST_CKPT_MAX_TENSORS);
            break;
        }
        struct memest_ckpt_tensor *t = &R->tmp[R->c->ntensors];
        *t = (struct memest_ckpt_tensor){.file = fi};
        if (parse_tensor(R, file, e, t, &s[ns].begin, &s[ns].end) != 0) {
            rc = -1;
            break;
        }
        size_t len = strlen(e->string);
        int64_t was;
        if (memest_strmap_get(&R->names, e->string, len, &was)) {
            rc = bad(R, file, e->string, MEMEST_ERR_SCHEMA, "also in %s",
                     R->c->files[R->tmp[was].file]);
            break;
        }
        if (!(t->name = memest_arena_strndup(R->a, e->string, len)) ||
            memest_strmap_put(&R->names, t->name, len, (int64_t)R->c->ntensors) != 0) {
            rc = nomem(R);
            break;
        }
        s[ns].t = R->c->ntensors++;
        ns++;
    }
    if (rc == 0)
        rc = check_spans(R, file, s, ns, data);
    free(s);
    return rc;
}

/* One safetensors file: its 8-byte length, its header, its tensors. */
static int read_file(struct reader *R, const char *path, uint32_t fi)
{
    memest_err_file(R->err, path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno == ENOMEM ? nomem(R) : bad(R, path, NULL, MEMEST_ERR_IO, "cannot open: %s",
                                                strerror(errno));
    setvbuf(f, NULL, _IONBF, 0);   /* two reads into buffers of their own: no stdio buffer */
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return bad(R, path, NULL, MEMEST_ERR_IO, "not a regular file");
    }
    uint64_t size = (uint64_t)st.st_size;
    unsigned char b8[8];
    if (size < 8 || fread(b8, 1, 8, f) != 8) {
        fclose(f);
        return bad(R, path, NULL, MEMEST_ERR_PARSE, "%llu bytes: too short for a safetensors "
                   "file (8 bytes of header length, then the header)", (unsigned long long)size);
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | b8[i];
    if (n > MEMEST_CKPT_MAX_HEADER || n > size - 8) {
        fclose(f);
        return bad(R, path, NULL, n > MEMEST_CKPT_MAX_HEADER ? MEMEST_ERR_LIMIT : MEMEST_ERR_PARSE,
                   "the header's length is %llu bytes, %s (the file has %llu)",
                   (unsigned long long)n, n > MEMEST_CKPT_MAX_HEADER
                   ? "over safetensors' limit of 100,000,000"
                   : "past the end of the file: truncated, or not a safetensors file",
                   (unsigned long long)size);
    }
    char *buf = malloc((size_t)n + 1);
    if (!buf) {
        fclose(f);
        return nomem(R);
    }
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    if (got != n) {
        free(buf);
        return bad(R, path, NULL, MEMEST_ERR_IO, "cannot read the header's %llu bytes",
                   (unsigned long long)n);
    }
    buf[n] = '\0';
    cJSON *root;
    int rc = mb_json_parse_text(buf, (size_t)n, path, &root, R->err);
    free(buf);
    if (rc != 0)
        return -1;
    rc = add_tensors(R, path, fi, root, size - 8 - n);
    cJSON_Delete(root);
    return rc;
}

static const char *join(struct reader *R, const char *name)
{
    const char *d = R->c->dir;
    size_t n = strlen(d);
    return memest_arena_concat(R->a, d, n && d[n - 1] == '/' ? "" : "/", name, (char *)NULL);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Adds file `name` of the folder to c->files; *fi gets its index. */
static int add_file(struct reader *R, struct memest_strmap *byname, const char *name,
                    uint32_t *fi)
{
    int64_t v;
    if (memest_strmap_get(byname, name, strlen(name), &v)) {
        *fi = (uint32_t)v;
        return 0;
    }
    if (R->c->nfiles >= MEMEST_CKPT_MAX_FILES)
        return bad(R, R->c->index, NULL, MEMEST_ERR_LIMIT, "more than %u files (memest's limit)",
                   MEMEST_CKPT_MAX_FILES);
    const char *path = join(R, name);
    if (!path || memest_strmap_put(byname, name, strlen(name), R->c->nfiles) != 0)
        return nomem(R);
    R->c->files[R->c->nfiles] = path;
    *fi = R->c->nfiles++;
    return 0;
}

/* A shard's name in the weight_map: a file of the folder itself. */
static bool plain_name(const char *s)
{
    return *s && strchr(s, '/') == NULL && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

/* model.safetensors.index.json: the shards its weight_map names, read, and
 * the map and the headers agreeing tensor for tensor. */
static int read_index(struct reader *R, const char *ipath)
{
    cJSON *root;
    if (mb_json_read_file(ipath, &root, R->err) != 0)
        return -1;
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    int n = cJSON_IsObject(wm) ? cJSON_GetArraySize(wm) : 0;
    struct memest_strmap byname = {0};
    uint32_t *where = malloc(((size_t)n + 1) * sizeof *where);
    int rc = where ? 0 : nomem(R);
    if (rc == 0 && n == 0)
        rc = bad(R, ipath, "weight_map", MEMEST_ERR_SCHEMA, "expected a non-empty object of "
                 "tensor name: shard file");
    if (rc == 0 && !(R->c->files = memest_arena_alloc(R->a, sizeof *R->c->files *
                                                      (n < (int)MEMEST_CKPT_MAX_FILES
                                                           ? (size_t)n : MEMEST_CKPT_MAX_FILES))))
        rc = nomem(R);
    int i = 0;
    for (const cJSON *e = rc == 0 ? wm->child : NULL; e && rc == 0; e = e->next, i++) {
        char *p = memest_arena_concat(R->a, "weight_map.", e->string, (char *)NULL);
        if (!p)
            rc = nomem(R);
        else if (!cJSON_IsString(e) || !plain_name(e->valuestring))
            rc = bad(R, ipath, p, MEMEST_ERR_SCHEMA, "expected the name of a file of the folder");
        else
            rc = add_file(R, &byname, e->valuestring, &where[i]);
    }
    for (uint32_t f = 0; rc == 0 && f < R->c->nfiles; f++)
        rc = read_file(R, R->c->files[f], f);
    /* every entry of the map in the header of its shard, and no other tensor */
    bool *seen = rc == 0 ? calloc((size_t)R->c->ntensors + 1, sizeof *seen) : NULL;
    if (rc == 0 && !seen)
        rc = nomem(R);
    i = 0;
    for (const cJSON *e = rc == 0 ? wm->child : NULL; e && rc == 0; e = e->next, i++) {
        int64_t t;
        if (!memest_strmap_get(&R->names, e->string, strlen(e->string), &t) ||
            R->tmp[t].file != where[i])
            rc = bad(R, ipath, e->string, MEMEST_ERR_SCHEMA, "the weight_map puts it in %s, "
                     "whose header does not have it", e->valuestring);
        else
            seen[t] = true;
    }
    for (uint64_t t = 0; rc == 0 && t < R->c->ntensors; t++)
        if (!seen[t])
            rc = bad(R, R->c->files[R->tmp[t].file], R->tmp[t].name, MEMEST_ERR_SCHEMA,
                     "not in the weight_map of %s", ipath);
    free(seen);
    free(where);
    memest_strmap_free(&byname);
    cJSON_Delete(root);
    return rc;
}

/* "model-00002-of-00004.safetensors": 2 and 4 (five digits each, as
 * transformers' shard names have them). */
static bool shard_name(const char *s, unsigned *k, unsigned *m)
{
    unsigned v[2] = {0, 0};
    if (strncmp(s, "model-", 6) != 0)
        return false;
    s += 6;
    for (int part = 0; part < 2; part++) {
        for (int i = 0; i < 5; i++, s++) {
            if (*s < '0' || *s > '9')
                return false;
            v[part] = v[part] * 10 + (unsigned)(*s - '0');
        }
        if (part == 0 && strncmp(s, "-of-", 4) != 0)
            return false;
        s += part == 0 ? 4 : 0;
    }
    *k = v[0];
    *m = v[1];
    return strcmp(s, ".safetensors") == 0 && v[0] >= 1 && v[0] <= v[1];
}

/* Shards without an index: all M of them, in order. *n gets 0 when the
 * folder has none. */
static int find_shards(struct reader *R, uint32_t *n)
{
    *n = 0;
    DIR *d = opendir(R->c->dir);
    if (!d)
        return bad(R, R->c->dir, NULL, MEMEST_ERR_IO, "cannot list the folder: %s",
                   strerror(errno));
    unsigned total = 0, found = 0, k, m;
    bool mixed = false;
    bool *have = NULL;
    for (struct dirent *e; (e = readdir(d));) {
        if (!shard_name(e->d_name, &k, &m))
            continue;
        if (total == 0) {
            total = m;
            if (m > MEMEST_CKPT_MAX_FILES || !(have = calloc(m + 1, sizeof *have)))
                break;
        }
        mixed = mixed || m != total;
        if (m == total && !have[k])
            have[k] = true, found++;
    }
    closedir(d);
    int rc = 0;
    if (total > MEMEST_CKPT_MAX_FILES)
        rc = bad(R, R->c->dir, NULL, MEMEST_ERR_LIMIT, "shards of %u files, more than %u "
                 "(memest's limit)", total, MEMEST_CKPT_MAX_FILES);
    else if (total && !have)
        rc = nomem(R);
    else if (mixed)
        rc = bad(R, R->c->dir, NULL, MEMEST_ERR_SCHEMA, "shards of different sets "
                 "(model-NNNNN-of-MMMMM.safetensors with two values of MMMMM) and no %s",
                 INDEX_NAME);
    else if (found < total)
        for (unsigned i = 1; i <= total; i++)
            if (!have[i]) {
                char name[64];
                snprintf(name, sizeof name, "model-%05u-of-%05u.safetensors", i, total);
                rc = bad(R, R->c->dir, NULL, MEMEST_ERR_IO, "%s is missing (%u of the %u shards "
                         "are here, and no %s)", name, found, total, INDEX_NAME);
                break;
            }
    if (rc == 0 && total && !(R->c->files = memest_arena_alloc(R->a, sizeof *R->c->files * total)))
        rc = nomem(R);
    for (unsigned i = 1; rc == 0 && i <= total; i++) {
        char name[64];
        snprintf(name, sizeof name, "model-%05u-of-%05u.safetensors", i, total);
        if (!(R->c->files[i - 1] = join(R, name)))
            rc = nomem(R);
    }
    free(have);
    *n = rc == 0 ? total : 0;
    return rc;
}

/* The floating type of the most elements among the weights and biases
 * (else among every tensor): transformers' get_state_dict_dtype takes the
 * first floating tensor's, which for a mixed checkpoint depends on the
 * order; the majority does not. */
static void vote_dtype(struct memest_ckpt *c)
{
    static const struct { uint8_t ck; enum memest_dtype t; } fl[] = {
        {MEMEST_CK_F32, MEMEST_F32}, {MEMEST_CK_F16, MEMEST_F16}, {MEMEST_CK_BF16, MEMEST_BF16}};
    for (int pass = 0; pass < 2 && !c->has_dtype; pass++) {
        uint64_t elems[3] = {0, 0, 0};
        for (uint64_t i = 0; i < c->ntensors; i++) {
            const struct memest_ckpt_tensor *t = &c->t[i];
            size_t len = strlen(t->name);
            bool wb = (len > 7 && strcmp(t->name + len - 7, ".weight") == 0) ||
                      (len > 5 && strcmp(t->name + len - 5, ".bias") == 0);
            for (int k = 0; k < 3; k++)
                if (t->dtype == fl[k].ck && (wb || pass == 1))
                    elems[k] = memest_sat_add(elems[k], t->bytes / (dtypes[t->dtype].bits / 8));
        }
        int best = -1;
        for (int k = 0; k < 3; k++)
            if (elems[k] && (best < 0 || elems[k] > elems[best]))
                best = k;
        if (best >= 0) {
            c->has_dtype = true;
            c->dtype = fl[best].t;
        }
    }
}

static int read_all(struct reader *R)
{
    struct memest_ckpt *c = R->c;
    const char *single = join(R, SINGLE_NAME), *index = join(R, INDEX_NAME);
    if (!single || !index)
        return nomem(R);
    if (exists(single)) {
        if (!(c->files = memest_arena_alloc(R->a, sizeof *c->files)))
            return nomem(R);
        c->files[0] = single;
        c->nfiles = 1;
        return read_file(R, single, 0);
    }
    if (exists(index)) {
        c->index = index;
        return read_index(R, index);
    }
    uint32_t n;
    if (find_shards(R, &n) != 0)
        return -1;
    c->nfiles = n;
    for (uint32_t f = 0; f < n; f++)
        if (read_file(R, c->files[f], f) != 0)
            return -1;
    return 0;
}

int memest_ckpt_read(const char *dir, struct memest_arena *a, struct memest_ckpt **out,
                     struct memest_error *err)
{
    *out = NULL;
    struct memest_ckpt *c = memest_arena_alloc(a, sizeof *c);
    if (!c || !(c->dir = memest_arena_strdup(a, dir)))
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    struct reader R = {.c = c, .a = a, .err = err};
    int rc = read_all(&R);
    if (rc == 0 && c->nfiles > 0 &&
        !(c->t = memest_arena_alloc(a, sizeof *c->t * (size_t)(c->ntensors + 1))))
        rc = nomem(&R);
    if (rc == 0 && c->nfiles > 0) {
        if (c->ntensors)
            memcpy(c->t, R.tmp, sizeof *c->t * (size_t)c->ntensors);
        for (uint64_t i = 0; i < c->ntensors; i++) {
            c->bytes = memest_sat_add(c->bytes, c->t[i].bytes);
            c->dtype_bytes[c->t[i].dtype] = memest_sat_add(c->dtype_bytes[c->t[i].dtype],
                                                           c->t[i].bytes);
        }
        vote_dtype(c);
        *out = c;
    }
    free(R.tmp);
    memest_strmap_free(&R.names);
    return rc;
}
