/* error.c - the first-error-wins error record, its one-line rendering and
 * the mapping from error codes to process exit codes. */
#include "memest/error.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "memest/escape.h"

static const char *const errcode_names[] = {
    [MEMEST_ERR_NONE] = "none",     [MEMEST_ERR_IO] = "io",
    [MEMEST_ERR_PARSE] = "parse",   [MEMEST_ERR_SCHEMA] = "schema",
    [MEMEST_ERR_SHAPE] = "shape",   [MEMEST_ERR_LIMIT] = "limit",
    [MEMEST_ERR_USAGE] = "usage",   [MEMEST_ERR_NOMEM] = "nomem",
    [MEMEST_ERR_PROBE] = "probe",   [MEMEST_ERR_OUTPUT] = "output",
    [MEMEST_ERR_INTERNAL] = "internal",
};
static_assert(sizeof errcode_names / sizeof *errcode_names == MEMEST_ERR_COUNT,
              "one name per error code");

/* Length of s cut to at most max bytes without splitting a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    return max;
}

/* Drops an incomplete UTF-8 sequence at the end of s (left by truncation). */
static void utf8_trim(char *s)
{
    size_t len = strlen(s), j = len;
    while (j > 0 && len - j < 3 && ((unsigned char)s[j - 1] & 0xC0) == 0x80)
        j--;
    if (j == 0)
        return;
    unsigned char lead = (unsigned char)s[j - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (len - (j - 1) < need)
        s[j - 1] = '\0';
}

/* Copies src into dst[n], truncating (never inside a UTF-8 sequence); dst
 * is always terminated. */
static void copy_str(char *dst, size_t n, const char *src)
{
    if (n == 0)
        return;
    size_t len = src ? strlen(src) : 0;
    if (len >= n)
        len = utf8_cut(src, len, n - 1);
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
    int k = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    if (k >= (int)sizeof e->msg)
        utf8_trim(e->msg);
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
    /* While no error is set, the latest file is the one the next error is
     * about (a loader that succeeded must not lend its name to a later
     * error); once an error is set, its file stays. */
    if (e && file && (e->code == MEMEST_ERR_NONE || e->file[0] == '\0'))
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
        memest_esc_append(buf, n, &pos, e->file);
        if (e->line > 0) {
            append(buf, n, &pos, ":%d", e->line);
            if (e->col > 0)
                append(buf, n, &pos, ":%d", e->col);
        }
        append(buf, n, &pos, ": ");
    }
    if (e->path[0]) {
        memest_esc_append(buf, n, &pos, e->path);
        append(buf, n, &pos, ": ");
    }
    if (e->node[0]) {
        append(buf, n, &pos, "node '");
        memest_esc_append(buf, n, &pos, e->node);
        append(buf, n, &pos, "': ");
    }
    if (e->msg[0])
        memest_esc_append(buf, n, &pos, e->msg);
    else if (e->code != MEMEST_ERR_NONE)
        append(buf, n, &pos, "%s error", memest_errcode_name(e->code));
    if (pos >= n) /* truncated: do not end inside a UTF-8 sequence */
        utf8_trim(buf);
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
    case MEMEST_ERR_OUTPUT:
        return MEMEST_EXIT_OUTPUT;
    case MEMEST_ERR_NOMEM:
        return MEMEST_EXIT_RUNTIME;
    case MEMEST_ERR_INTERNAL:
    case MEMEST_ERR_COUNT:
        break;
    }
    return MEMEST_EXIT_INTERNAL;
}

/* The exit codes' documentation (error.h): --help prints it, and doc/options.md's
 * table (generated) and tests/unit/test_help.c check it against the meanings. */
static const struct memest_exit_doc exit_docs[] = {
    [MEMEST_EXIT_OK] = {"success", "and fits"},
    [MEMEST_EXIT_NOFIT] = {"does not fit",
                           "--fit, --probe, and --max-batch when not even batch 1 fits"},
    [MEMEST_EXIT_USAGE] = {"usage error", "also a command asking for more work than memest "
                                          "does for one, doc/robustness.md: Limits and cost"},
    [MEMEST_EXIT_MODEL] = {"invalid or unreadable model, config or GPU presets file",
                            "also one past a limit"},
    [MEMEST_EXIT_NODEV] = {"no usable CUDA driver or device", "--probe"},
    [MEMEST_EXIT_RUNTIME] = {"out of memory", "or a CUDA call that failed during --probe"},
    [MEMEST_EXIT_OUTPUT] = {"an output could not be written",
                            "standard output, --plot, --timeline"},
    [MEMEST_EXIT_INTERNAL] = {"internal error", "a bug in memest"},
};
static_assert(sizeof exit_docs / sizeof *exit_docs == MEMEST_EXIT_COUNT,
              "one documentation entry per exit code");

const struct memest_exit_doc *memest_exit_doc(int code)
{
    return code >= 0 && code < MEMEST_EXIT_COUNT ? &exit_docs[code] : NULL;
}

const char *memest_errcode_name(enum memest_errcode c)
{
    if ((unsigned)c >= MEMEST_ERR_COUNT)
        return "internal";
    return errcode_names[c];
}
