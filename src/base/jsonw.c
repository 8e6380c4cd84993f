/* jsonw.c - streaming JSON writer: pretty (two-space indent) or compact
 * output, keys in the order written, exact 64-bit integers, strings escaped
 * to valid JSON (control characters as \u escapes, invalid UTF-8 as U+FFFD). */
#include "memest/jsonw.h"

#include <inttypes.h>
#include <math.h>

#include "memest/escape.h"

void memest_jsonw_init(struct memest_jsonw *w, FILE *f, bool pretty)
{
    w->f = f;
    w->depth = 0;
    w->pretty = pretty;
    for (int i = 0; i < MEMEST_JSONW_DEPTH; i++)
        w->first[i] = true;
}

/* first[] slot for a depth; nesting past the array shares the last slot
 * (the output stays valid JSON, only the commas may be misplaced there). */
static bool *first_at(struct memest_jsonw *w, int depth)
{
    if (depth < 0)
        depth = 0;
    if (depth >= MEMEST_JSONW_DEPTH)
        depth = MEMEST_JSONW_DEPTH - 1;
    return &w->first[depth];
}

static void indent(struct memest_jsonw *w, int depth)
{
    fputc('\n', w->f);
    for (int i = 0; i < depth; i++)
        fputs("  ", w->f);
}

/* Writes the JSON string literal for s (s[0..] up to the NUL): the unsafe
 * characters of escape.h as \u escapes (a JSON reader gets them back;
 * a terminal showing the document does not act on them), bytes that are
 * not UTF-8 as U+FFFD. */
static void write_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const char *p = s; *p;) {
        uint32_t cp;
        size_t len = memest_utf8_decode(p, &cp);
        if (len == 0) {
            fputs("\\ufffd", f);
            p++;
            continue;
        }
        switch (cp) {
        case '"':  fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (memest_char_unsafe(cp))   /* all below U+10000 */
                fprintf(f, "\\u%04x", (unsigned)cp);
            else
                fwrite(p, 1, len, f);
        }
        p += len;
    }
    fputc('"', f);
}

/* Comma, newline and indent before a value, then its key if any. */
static void member(struct memest_jsonw *w, const char *key)
{
    if (w->depth > 0) {
        bool *first = first_at(w, w->depth);
        if (!*first)
            fputc(',', w->f);
        *first = false;
        if (w->pretty)
            indent(w, w->depth);
    }
    if (key) {
        write_string(w->f, key);
        fputs(w->pretty ? ": " : ":", w->f);
    }
}

static void open_(struct memest_jsonw *w, const char *key, char c)
{
    member(w, key);
    fputc(c, w->f);
    w->depth++;
    *first_at(w, w->depth) = true;
}

static void close_(struct memest_jsonw *w, char c)
{
    if (w->depth <= 0)
        return;
    bool empty = *first_at(w, w->depth);
    w->depth--;
    if (w->pretty && !empty)
        indent(w, w->depth);
    fputc(c, w->f);
}

void memest_jsonw_obj_begin(struct memest_jsonw *w, const char *key) { open_(w, key, '{'); }
void memest_jsonw_obj_end(struct memest_jsonw *w) { close_(w, '}'); }
void memest_jsonw_arr_begin(struct memest_jsonw *w, const char *key) { open_(w, key, '['); }
void memest_jsonw_arr_end(struct memest_jsonw *w) { close_(w, ']'); }

void memest_jsonw_str(struct memest_jsonw *w, const char *key, const char *s)
{
    member(w, key);
    if (s)
        write_string(w->f, s);
    else
        fputs("null", w->f);
}

void memest_jsonw_u64(struct memest_jsonw *w, const char *key, uint64_t v)
{
    member(w, key);
    fprintf(w->f, "%" PRIu64, v);
}

void memest_jsonw_i64(struct memest_jsonw *w, const char *key, int64_t v)
{
    member(w, key);
    fprintf(w->f, "%" PRId64, v);
}

void memest_jsonw_f64(struct memest_jsonw *w, const char *key, double v)
{
    member(w, key);
    if (isfinite(v))
        fprintf(w->f, "%.17g", v);
    else
        fputs("null", w->f);
}

void memest_jsonw_count(struct memest_jsonw *w, const char *key, double v)
{
    if (v >= 0 && v < 9.2e18)   /* below 2^63, so that the conversion is defined */
        memest_jsonw_u64(w, key, (uint64_t)llround(v));
    else
        memest_jsonw_f64(w, key, v);
}

void memest_jsonw_bool(struct memest_jsonw *w, const char *key, bool v)
{
    member(w, key);
    fputs(v ? "true" : "false", w->f);
}

void memest_jsonw_null(struct memest_jsonw *w, const char *key)
{
    member(w, key);
    fputs("null", w->f);
}

void memest_jsonw_finish(struct memest_jsonw *w)
{
    fputc('\n', w->f);
}
