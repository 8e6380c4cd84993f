/* json_load.c - reading model files: size limit, UTF-8 and NUL checks,
 * cJSON parsing with line:column on errors, duplicate-key rejection. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memest/graph.h"
#include "memest/model.h"

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

int memest_model_read_string(const char *text, size_t len, const char *label,
                             struct memest_model *m, struct memest_error *err)
{
    memset(m, 0, sizeof *m);
    memest_err_file(err, label);
    if (len == 0)
        return memest_errf(err, MEMEST_ERR_PARSE, NULL, "the file is empty (expected a JSON object)");
    const char *nul = memchr(text, '\0', len);
    if (nul)
        return located(err, text, (size_t)(nul - text),
                       "the file contains a NUL byte (binary data, not JSON text)");
    size_t bad = utf8_invalid_at((const unsigned char *)text, len);
    if (bad < len)
        return located(err, text, bad, "invalid UTF-8 byte sequence");
    char *buf = malloc(len + 1);
    if (!buf)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    memcpy(buf, text, len);
    buf[len] = '\0';
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(buf, len + 1, &end, 1);
    if (!root) {
        size_t off = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;
        if (off >= len) {
            located(err, buf, len, "unexpected end of file: the JSON is truncated");
        } else {
            char what[16];
            unsigned char c = (unsigned char)buf[off];
            if (c >= 0x20 && c < 0x7F)
                snprintf(what, sizeof what, "'%c'", c);
            else
                snprintf(what, sizeof what, "byte 0x%02X", c);
            char msg[96];
            snprintf(msg, sizeof msg, "malformed JSON at %s (or nesting deeper than 1000)", what);
            located(err, buf, off, msg);
        }
        free(buf);
        return -1;
    }
    free(buf);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return memest_errf(err, MEMEST_ERR_SCHEMA, "$", "a model file must be a JSON object");
    }
    char path[512] = "";
    if (check_duplicates(root, path, sizeof path, err) != 0) {
        cJSON_Delete(root);
        return -1;
    }
    m->root = root;
    m->file = label;
    return 0;
}

int memest_model_read_file(const char *path, struct memest_model *m, struct memest_error *err)
{
    memset(m, 0, sizeof *m);
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
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > MEMEST_MAX_FILE_BYTES) {
        close(fd);
        return memest_errf(err, MEMEST_ERR_LIMIT, NULL,
                           "file is %lld bytes; model files are limited to %u MiB",
                           (long long)st.st_size, MEMEST_MAX_FILE_BYTES >> 20);
    }
    size_t cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 65536, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    }
    for (;;) {
        if (len == cap) {
            if (cap > MEMEST_MAX_FILE_BYTES) {
                free(buf);
                close(fd);
                return memest_errf(err, MEMEST_ERR_LIMIT, NULL,
                                   "file is larger than the %u MiB limit for model files",
                                   MEMEST_MAX_FILE_BYTES >> 20);
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                close(fd);
                return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - len);
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
        len += (size_t)r;
    }
    close(fd);
    int rc = memest_model_read_string(buf, len, path, m, err);
    free(buf);
    return rc;
}

void memest_model_free(struct memest_model *m)
{
    cJSON_Delete(m->root);
    m->root = NULL;
}
