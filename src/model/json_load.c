/* json_load.c - reading model files: size and value-count limits, UTF-8 and
 * NUL checks, cJSON parsing with line:column on errors, duplicate-key
 * rejection. Memory stays within a small multiple of the limits whatever the
 * file holds: the file is read once into one buffer (at most
 * MEMEST_MAX_FILE_BYTES + 1, also from pipes and devices), and a linear
 * pre-scan refuses more than MEMEST_MAX_JSON_VALUES values before cJSON
 * allocates a node for each. Python's Infinity, -Infinity and NaN are read
 * as those numbers (below). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memest/format.h"
#include "memest/graph.h"
#include "memest/model.h"

#include "hf_internal.h"

/* cJSON's nesting limit (1000 unless the library was built otherwise). */
#define MEMEST_JSON_DEPTH_LIMIT CJSON_NESTING_LIMIT

static void line_col(const char *text, size_t off, int *line, int *col)
{
    int l = 1, c = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            l++;
            c = 1;
        } else if (((unsigned char)text[i] & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

static int located(struct memest_error *err, const char *text, size_t off, const char *msg)
{
    memest_errf(err, MEMEST_ERR_PARSE, NULL, "%s", msg);
    line_col(text, off, &err->line, &err->col);
    return -1;
}

/* Returns the offset of the first invalid UTF-8 sequence, or len. */
static size_t utf8_invalid_at(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        size_t n;
        unsigned min;
        unsigned cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return i;
        }
        if (len - i <= n)
            return i;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += n + 1;
    }
    return len;
}

/* Counts the JSON values of text (buf[len] == '\0'), stopping at the first
 * value past MEMEST_MAX_JSON_VALUES: returns its offset, or len when the
 * count is within the limit. A value starts after '[' (unless the array is
 * empty), after ':' and after ',' inside an array; strings are skipped.
 * Malformed text is left to cJSON: the count only has to be an upper bound
 * of what cJSON would allocate for text it accepts. */
static size_t values_over_limit(const char *buf, size_t len)
{
    unsigned char in_array[MEMEST_JSON_DEPTH_LIMIT / 8 + 1] = {0};
    size_t depth = 0;
    uint64_t values = 1;
    for (size_t i = 0; i < len; i++) {
        char c = buf[i];
        bool value = false;
        switch (c) {
        case '"':
            for (i++; i < len && buf[i] != '"'; i++)
                if (buf[i] == '\\')
                    i++;
            continue;
        case '[':
        case '{':
            if (depth < MEMEST_JSON_DEPTH_LIMIT) {
                if (c == '[')
                    in_array[depth / 8] |= (unsigned char)(1u << (depth % 8));
                else
                    in_array[depth / 8] &= (unsigned char)~(1u << (depth % 8));
            }
            depth++;
            if (c == '[') {
                size_t j = i + 1;
                while (j < len && (buf[j] == ' ' || buf[j] == '\t' || buf[j] == '\n' ||
                                   buf[j] == '\r'))
                    j++;
                value = j < len && buf[j] != ']';
            }
            break;
        case ']':
        case '}':
            if (depth > 0)
                depth--;
            break;
        case ':':
            value = true;
            break;
        case ',':
            value = depth > 0 && depth <= MEMEST_JSON_DEPTH_LIMIT &&
                    (in_array[(depth - 1) / 8] >> ((depth - 1) % 8) & 1);
            break;
        default:
            break;
        }
        if (value && ++values > MEMEST_MAX_JSON_VALUES)
            return i;
    }
    return len;
}

/* ---- Python's Infinity, -Infinity and NaN ----
 *
 * Python's json module (json.dump, whose allow_nan is on by default) writes
 * float("inf"), float("-inf") and float("nan") as the bare words Infinity,
 * -Infinity and NaN, which JSON and cJSON refuse; config.json files carry
 * them (Nemotron-H's time_step_limit: [0.0, Infinity]). Outside strings,
 * where a value starts (after '[', ':' or ','), each word is rewritten in a
 * copy of the text to a 0 padded with spaces to its length, so that offsets
 * and line:column stay the file's, and its number is set after cJSON parsed
 * the copy: the k-th number of the text is the k-th number node of a
 * depth-first walk. The readers refuse a non-finite number wherever the
 * model is built with it (mb_json_nonfinite names it in their messages). */

struct nonfinite {
    uint64_t rank;   /* the number's rank among the text's numbers */
    double value;
};

const char *mb_json_nonfinite(double d)
{
    return isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity";
}

static bool word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

static bool number_char(char c)
{
    return (c >= '0' && c <= '9') || c == '+' || c == '-' || c == 'e' || c == 'E' || c == '.';
}

/* The length of the word at buf[i] when it is one of the three, a whole
 * word (*value its number); else 0. */
static size_t nonfinite_at(const char *buf, size_t i, size_t len, double *value)
{
    static const struct {
        const char *word;
        size_t n;
        double value;
    } words[] = {{"Infinity", 8, INFINITY}, {"-Infinity", 9, -INFINITY}, {"NaN", 3, NAN}};
    for (size_t k = 0; k < sizeof words / sizeof *words; k++) {
        size_t n = words[k].n;
        if (len - i >= n && memcmp(buf + i, words[k].word, n) == 0 &&
            (i + n == len || !word_char(buf[i + n]))) {
            *value = words[k].value;
            return n;
        }
    }
    return 0;
}

/* The words of buf[0..len) (buf[len] == '\0'): *copy gets the text with
 * them rewritten (NULL when there is none), *list their ranks and values,
 * *n their count (the caller frees both). 0 / -1 (out of memory). Numbers
 * are counted as cJSON reads them (a '-' or a digit, then the characters
 * of a number); malformed text is left to cJSON. */
static int nonfinite_scan(const char *buf, size_t len, char **copy, struct nonfinite **list,
                          size_t *n)
{
    *copy = NULL;
    *list = NULL;
    *n = 0;
    size_t cap = 0;
    uint64_t rank = 0;
    char prev = '\0';   /* the last character outside strings and white space */
    for (size_t i = 0; i < len; i++) {
        char c = buf[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
            continue;
        if (c == '"') {
            for (i++; i < len && buf[i] != '"'; i++)
                if (buf[i] == '\\')
                    i++;
            prev = c;
            continue;
        }
        double v;
        size_t w = (prev == '[' || prev == ':' || prev == ',') ? nonfinite_at(buf, i, len, &v) : 0;
        if (w) {
            if (!*copy) {
                if (!(*copy = malloc(len + 1)))
                    return -1;
                memcpy(*copy, buf, len + 1);
            }
            if (*n == cap) {
                cap = cap ? cap * 2 : 8;
                struct nonfinite *nl = realloc(*list, sizeof *nl * cap);
                if (!nl)
                    return -1;
                *list = nl;
            }
            (*list)[(*n)++] = (struct nonfinite){rank++, v};
            (*copy)[i] = '0';
            memset(*copy + i + 1, ' ', w - 1);
            i += w - 1;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            rank++;
            while (i + 1 < len && number_char(buf[i + 1]))
                i++;
        } else if (word_char(c)) {   /* true, false, null */
            while (i + 1 < len && word_char(buf[i + 1]))
                i++;
        }
        prev = c;
    }
    return 0;
}

/* Sets the values of list[*k..n) on the number nodes of node and after,
 * the numbers counted in *rank. */
static void nonfinite_set(cJSON *node, const struct nonfinite *list, size_t n, size_t *k,
                          uint64_t *rank)
{
    if (cJSON_IsNumber(node)) {
        if (*rank == list[*k].rank) {
            double v = list[(*k)++].value;
            node->valuedouble = v;
            node->valueint = isnan(v) ? 0 : v > 0 ? INT_MAX : INT_MIN;   /* cJSON saturates */
        }
        ++*rank;
        return;
    }
    for (cJSON *c = node->child; c && *k < n; c = c->next)
        nonfinite_set(c, list, n, k, rank);
}

static int cmp_keys(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    return strcmp(x->string, y->string);
}

/* Rejects objects with the same key twice (cJSON keeps both, and lookups
 * see only the first). Sorting keeps it O(k log k) per object; recursion
 * depth is bounded by cJSON's nesting limit. */
static int check_duplicates(const cJSON *node, char *path, size_t cap, struct memest_error *err)
{
    if (!cJSON_IsObject(node) && !cJSON_IsArray(node))
        return 0;
    size_t len = strlen(path);
    if (cJSON_IsObject(node)) {
        size_t n = 0;
        for (const cJSON *c = node->child; c; c = c->next)
            n++;
        if (n > 1) {
            const cJSON **keys = malloc(sizeof *keys * n);
            if (!keys)
                return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
            size_t i = 0;
            for (const cJSON *c = node->child; c; c = c->next)
                keys[i++] = c;
            qsort(keys, n, sizeof *keys, cmp_keys);
            for (i = 1; i < n; i++) {
                if (strcmp(keys[i]->string, keys[i - 1]->string) == 0) {
                    snprintf(path + len, cap - len, "%s%s", len ? "." : "", keys[i]->string);
                    memest_errf(err, MEMEST_ERR_SCHEMA, path,
                                "duplicate key \"%s\" in the same object", keys[i]->string);
                    free(keys);
                    return -1;
                }
            }
            free(keys);
        }
    }
    int idx = 0;
    for (const cJSON *c = node->child; c; c = c->next, idx++) {
        if (cJSON_IsObject(node))
            snprintf(path + len, cap - len, "%s%s", len ? "." : "", c->string);
        else
            snprintf(path + len, cap - len, "[%d]", idx);
        if (check_duplicates(c, path, cap, err) != 0)
            return -1;
    }
    path[len] = '\0';
    return 0;
}

/* Whether any object under node has a key twice: the check without the
 * paths, which check_duplicates() then writes for the message (a file
 * without duplicates, every file memest accepts, pays for no path). Small
 * objects compare their keys pairwise, larger ones sort them. 1 / 0; -1
 * when out of memory. */
static int has_duplicates(const cJSON *node)
{
    if (!cJSON_IsObject(node) && !cJSON_IsArray(node))
        return 0;
    if (cJSON_IsObject(node)) {
        size_t n = 0;
        for (const cJSON *c = node->child; c; c = c->next)
            n++;
        if (n > 1 && n <= 16) {
            for (const cJSON *c = node->child; c; c = c->next)
                for (const cJSON *d = c->next; d; d = d->next)
                    if (strcmp(c->string, d->string) == 0)
                        return 1;
        } else if (n > 16) {
            const cJSON **keys = malloc(sizeof *keys * n);
            if (!keys)
                return -1;
            size_t i = 0;
            for (const cJSON *c = node->child; c; c = c->next)
                keys[i++] = c;
            qsort(keys, n, sizeof *keys, cmp_keys);
            int dup = 0;
            for (i = 1; i < n && !dup; i++)
                dup = strcmp(keys[i]->string, keys[i - 1]->string) == 0;
            free(keys);
            if (dup)
                return 1;
        }
    }
    for (const cJSON *c = node->child; c; c = c->next) {
        int d = has_duplicates(c);
        if (d != 0)
            return d;
    }
    return 0;
}

/* Parses buf[0..len) as a model file into *out (an object); buf[len] must
 * be '\0'. */
static int parse_buffer(const char *buf, size_t len, const char *label, cJSON **out,
                        struct memest_error *err)
{
    *out = NULL;
    memest_err_file(err, label);
    const char *nul = memchr(buf, '\0', len);
    if (nul)
        return located(err, buf, (size_t)(nul - buf),
                       "the file contains a NUL byte (binary data, not JSON text)");
    size_t bad = utf8_invalid_at((const unsigned char *)buf, len);
    if (bad < len)
        return located(err, buf, bad, "invalid UTF-8 byte sequence (expected UTF-8 JSON text)");
    size_t skip = 0; /* a UTF-8 byte order mark, as some editors write */
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
        skip = 3;
    size_t i = skip;
    while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
        i++;
    if (i == len)
        return memest_errf(err, MEMEST_ERR_PARSE, NULL,
                           len ? "the file holds only white space (expected a JSON object)"
                               : "the file is empty (expected a JSON object)");
    size_t over = values_over_limit(buf, len);
    if (over < len) {
        char msg[160];
        snprintf(msg, sizeof msg, "more than %u JSON values (the limit for model files)",
                 MEMEST_MAX_JSON_VALUES);
        located(err, buf, over, msg);
        err->code = MEMEST_ERR_LIMIT;
        return -1;
    }
    char *copy;
    struct nonfinite *nf;
    size_t nnf;
    if (nonfinite_scan(buf, len, &copy, &nf, &nnf) != 0) {
        free(copy);
        free(nf);
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    }
    const char *text = copy ? copy : buf;   /* the same length: offsets are the file's */
    const char *end = NULL;
    errno = 0; /* cJSON fails alike on bad text and on malloc failing with ENOMEM */
    cJSON *root = cJSON_ParseWithLengthOpts(text + skip, len - skip + 1, &end, 1);
    int parse_errno = errno;
    size_t off = end && end >= text + skip && end <= text + len ? (size_t)(end - text) : skip;
    free(copy);
    if (root && nnf) {
        size_t k = 0;
        uint64_t rank = 0;
        nonfinite_set(root, nf, nnf, &k, &rank);
        if (k != nnf) {
            free(nf);
            cJSON_Delete(root);
            return memest_errf(err, MEMEST_ERR_INTERNAL, NULL, "a non-finite number was lost "
                               "in parsing");
        }
    }
    free(nf);
    if (!root && parse_errno == ENOMEM)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    if (!root) {
        if (off >= len) {
            located(err, buf, len, "unexpected end of file: the JSON is truncated");
        } else {
            char what[16];
            unsigned char c = (unsigned char)buf[off];
            if (c >= 0x20 && c < 0x7F)
                snprintf(what, sizeof what, "'%c'", c);
            else
                snprintf(what, sizeof what, "byte 0x%02X", c);
            char msg[160];
            if (c == '\\')
                snprintf(msg, sizeof msg,
                         "malformed JSON string: bad escape sequence (a lone UTF-16 surrogate "
                         "or an unknown escape)");
            else
                snprintf(msg, sizeof msg,
                         "malformed JSON at %s (expected a JSON value, ',' or a closing "
                         "bracket; or nesting deeper than %d)", what, MEMEST_JSON_DEPTH_LIMIT);
            located(err, buf, off, msg);
        }
        return -1;
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return memest_errf(err, MEMEST_ERR_SCHEMA, "$", "the file must be a JSON object");
    }
    char path[512] = "";
    int dup = has_duplicates(root);
    if (dup < 0) {
        cJSON_Delete(root);
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    }
    if (dup && check_duplicates(root, path, sizeof path, err) != 0) {
        cJSON_Delete(root);
        return -1;
    }
    *out = root;
    return 0;
}

void mb_template_model_type(struct memest_model *m)
{
    const cJSON *sec = cJSON_GetObjectItemCaseSensitive(m->root, "hf_config");
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(sec, "model_type");
    if (cJSON_IsString(mt))
        m->model_type = mt->valuestring;
}

int memest_model_read_string(const char *text, size_t len, const char *label,
                             struct memest_model *m, struct memest_error *err)
{
    memset(m, 0, sizeof *m);
    if (len > MEMEST_MAX_FILE_BYTES) {
        memest_err_file(err, label);
        return memest_errf(err, MEMEST_ERR_LIMIT, NULL,
                           "the model is %zu bytes; model files are limited to %u MiB", len,
                           MEMEST_MAX_FILE_BYTES >> 20);
    }
    char *buf = malloc(len + 1);
    if (!buf) {
        memest_err_file(err, label);
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    }
    memcpy(buf, text, len);
    buf[len] = '\0';
    int rc = parse_buffer(buf, len, label, &m->root, err);
    free(buf);
    if (rc == 0) {
        m->file = label;
        rc = mb_arch_extend(&m->root, label, err);
        if (rc == 0)
            mb_template_model_type(m);
        else
            memest_model_free(m);   /* the caller frees nothing on failure */
    }
    return rc;
}

int mb_json_parse_text(const char *text, size_t len, const char *label, cJSON **out,
                       struct memest_error *err)
{
    *out = NULL;
    memest_err_file(err, label);
    if (len > MEMEST_MAX_FILE_BYTES)
        return memest_errf(err, MEMEST_ERR_LIMIT, NULL,
                           "the file is %zu bytes; model files are limited to %u MiB", len,
                           MEMEST_MAX_FILE_BYTES >> 20);
    if (text[len] != '\0')
        return memest_errf(err, MEMEST_ERR_INTERNAL, NULL, "text without its NUL");
    return parse_buffer(text, len, label, out, err);
}

int mb_read_all(const char *path, size_t limit, const char *kind, char **text, size_t *len,
                struct memest_error *err)
{
    *text = NULL;
    *len = 0;
    memest_err_file(err, path);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return memest_errf(err, MEMEST_ERR_IO, NULL, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        int e = errno;
        close(fd);
        return memest_errf(err, MEMEST_ERR_IO, NULL, "cannot read: %s",
                           S_ISDIR(st.st_mode) ? "is a directory" : strerror(e));
    }
    char lim[32];
    memest_fmt_iec(limit, 0, lim, sizeof lim);
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > limit) {
        close(fd);
        return memest_errf(err, MEMEST_ERR_LIMIT, NULL, "the file is %lld bytes; %s are limited "
                           "to %s", (long long)st.st_size, kind, lim);
    }
    /* Room for the file and a NUL; a pipe, FIFO or device grows the buffer
     * up to the limit + 1 byte, enough to tell that it is too large. A
     * regular file's buffer has one spare byte, so that reading its end
     * needs no growth. Everything is read through this one descriptor:
     * nothing is read twice, so a pipe loses nothing. */
    size_t cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 2 : 65536, n = 0;
    if (cap > limit + 2)
        cap = limit + 2;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    }
    for (;;) {
        if (n > limit) {
            free(buf);
            close(fd);
            return memest_errf(err, MEMEST_ERR_LIMIT, NULL, "the file is larger than the %s "
                               "limit for %s", lim, kind);
        }
        if (n + 1 == cap) { /* keep a byte for the NUL */
            size_t ncap = cap * 2 > limit + 2 ? limit + 2 : cap * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                close(fd);
                return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return memest_errf(err, MEMEST_ERR_IO, NULL, "cannot read: %s", strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return 0;
}

int memest_model_read_text(const char *path, size_t limit, const char *kind, char **text,
                           size_t *len, struct memest_error *err)
{
    return mb_read_all(path, limit, kind, text, len, err);
}

int mb_json_read_file(const char *path, cJSON **out, struct memest_error *err)
{
    *out = NULL;
    char *buf;
    size_t len;
    if (mb_read_all(path, MEMEST_MAX_FILE_BYTES, "model files", &buf, &len, err) != 0)
        return -1;
    int rc = parse_buffer(buf, len, path, out, err);
    free(buf);
    return rc;
}

void memest_model_free(struct memest_model *m)
{
    cJSON_Delete(m->root);
    m->root = NULL;
    memest_arena_free(&m->arena);
}
