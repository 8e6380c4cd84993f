/* error.c - the first-error-wins error record, its one-line rendering and
 * the mapping from error codes to process exit codes. */
#include "memest/error.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const errcode_names[MEMEST_ERR_COUNT] = {
    [MEMEST_ERR_NONE] = "none",     [MEMEST_ERR_IO] = "io",
    [MEMEST_ERR_PARSE] = "parse",   [MEMEST_ERR_SCHEMA] = "schema",
    [MEMEST_ERR_SHAPE] = "shape",   [MEMEST_ERR_LIMIT] = "limit",
    [MEMEST_ERR_USAGE] = "usage",   [MEMEST_ERR_NOMEM] = "nomem",
    [MEMEST_ERR_PROBE] = "probe",
};
static_assert(MEMEST_ERR_COUNT == 9, "MEMEST_ERR_COUNT changed: update errcode_names");

/* Copies src into dst[n], truncating; dst is always terminated. */
static void copy_str(char *dst, size_t n, const char *src)
{
    if (n == 0)
        return;
    size_t len = src ? strlen(src) : 0;
    if (len >= n)
        len = n - 1;
    if (len)
        memcpy(dst, src, len);
    dst[len] = '\0';
}

int memest_errf(struct memest_error *e, enum memest_errcode code, const char *path,
                const char *fmt, ...)
{
    if (!e || e->code != MEMEST_ERR_NONE)
        return -1;
    assert(code != MEMEST_ERR_NONE && code < MEMEST_ERR_COUNT);
    e->code = code;
    copy_str(e->path, sizeof e->path, path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int memest_err_node(struct memest_error *e, const char *node)
{
    if (e && node && e->node[0] == '\0')
        copy_str(e->node, sizeof e->node, node);
    return -1;
}

void memest_err_file(struct memest_error *e, const char *file)
{
    if (e && file && e->file[0] == '\0')
        copy_str(e->file, sizeof e->file, file);
}

/* Appends printf output at *pos in buf[n], truncating; *pos saturates at n. */
__attribute__((format(printf, 4, 5)))
static void append(char *buf, size_t n, size_t *pos, const char *fmt, ...)
{
    if (*pos >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *pos, n - *pos, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    *pos = (size_t)k >= n - *pos ? n : *pos + (size_t)k;
}

void memest_error_format(const struct memest_error *e, char *buf, size_t n)
{
    if (!buf || n == 0)
        return;
    buf[0] = '\0';
    if (!e)
        return;
    size_t pos = 0;
    if (e->file[0]) {
        append(buf, n, &pos, "%s", e->file);
        if (e->line > 0) {
            append(buf, n, &pos, ":%d", e->line);
            if (e->col > 0)
                append(buf, n, &pos, ":%d", e->col);
        }
        append(buf, n, &pos, ": ");
    }
    if (e->path[0])
        append(buf, n, &pos, "%s: ", e->path);
    if (e->node[0])
        append(buf, n, &pos, "node '%s': ", e->node);
    if (e->msg[0])
        append(buf, n, &pos, "%s", e->msg);
    else if (e->code != MEMEST_ERR_NONE)
        append(buf, n, &pos, "%s error", memest_errcode_name(e->code));
}

int memest_error_exit(const struct memest_error *e)
{
    switch (e ? e->code : MEMEST_ERR_NONE) {
    case MEMEST_ERR_NONE:
        return MEMEST_EXIT_OK;
    case MEMEST_ERR_IO:
    case MEMEST_ERR_PARSE:
    case MEMEST_ERR_SCHEMA:
    case MEMEST_ERR_SHAPE:
    case MEMEST_ERR_LIMIT:
        return MEMEST_EXIT_MODEL;
    case MEMEST_ERR_USAGE:
        return MEMEST_EXIT_USAGE;
    case MEMEST_ERR_PROBE:
        return MEMEST_EXIT_NODEV;
    case MEMEST_ERR_NOMEM:
    case MEMEST_ERR_COUNT:
        break;
    }
    return MEMEST_EXIT_INTERNAL;
}

const char *memest_errcode_name(enum memest_errcode c)
{
    if ((unsigned)c >= MEMEST_ERR_COUNT)
        return "internal";
    return errcode_names[c];
}
