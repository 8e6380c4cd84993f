/* cli_values.c - an option's argument into its field, by the row's kind
 * (options.h), and the words every message and --help use for it: the
 * bounds of a number, the names of a value table, the default. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "memest/format.h"
#include "memest/options.h"

int memest_opt_bad(struct memest_error *err, const char *opt, const char *val,
                   const char *expected)
{
    return memest_errf(err, MEMEST_ERR_USAGE, NULL, "%s: expected %s, got '%s'", opt, expected, val);
}

int memest_vocab_find(const struct memest_vocab *v, const char *s)
{
    int k;
    if (v->parse && v->parse(s, &k) == 0 && k >= v->first && k < v->count && v->name(k) &&
        (!v->takes || v->takes(k)))
        return k;
    for (k = v->first; k < v->count; k++)
        if (v->name(k) && (!v->takes || v->takes(k)) && strcmp(v->name(k), s) == 0)
            return k;
    return -1;
}

const char *memest_vocab_words(const struct memest_vocab *v, const char *last, char *buf,
                               size_t n)
{
    int total = 0, seen = 0;
    for (int k = v->first; k < v->count; k++)
        total += v->name(k) && (!v->takes || v->takes(k));
    size_t len = 0;
    buf[0] = 0;
    for (int k = v->first; k < v->count && len < n; k++) {
        if (!v->name(k) || (v->takes && !v->takes(k)))
            continue;
        const char *sep = seen == 0 ? "" : seen + 1 == total ? last : ", ";
        int w = snprintf(buf + len, n - len, "%s%s", sep, v->name(k));
        len += w > 0 ? (size_t)w : 0;
        seen++;
    }
    return buf;
}

/* A bound as the messages write it: 2^k or 2^k-1 past 2^20, else decimal. */
static void bound_text(double x, char *buf, size_t n)
{
    if (x > (double)(1u << 20) && x == floor(x)) {
        int k = (int)llround(log2(x + 1));
        if (ldexp(1, k) - 1 == x) {
            snprintf(buf, n, "2^%d-1", k);
            return;
        }
        k = (int)llround(log2(x));
        if (ldexp(1, k) == x) {
            snprintf(buf, n, "2^%d", k);
            return;
        }
    }
    snprintf(buf, n, "%.15g", x);
}

const char *memest_opt_expected(const struct memest_opt *row, char *buf, size_t n)
{
    char lo[32], hi[32], words[256];
    if (row->expected) {
        snprintf(buf, n, "%s", row->expected);
        return buf;
    }
    if (row->vocab && row->kind == MEMEST_K_CUSTOM) {
        memest_vocab_words(row->vocab, " or ", words, sizeof words);
        snprintf(buf, n, "%s", words);
        return buf;
    }
    const char *noun = row->noun ? row->noun : row->kind == MEMEST_K_U64 ? "a whole number"
                                                                         : "a number";
    bound_text(row->lo, lo, sizeof lo);
    bound_text(row->hi, hi, sizeof hi);
    switch (row->kind) {
    case MEMEST_K_U64:
        snprintf(buf, n, "%s between %s and %s", noun, lo, hi);
        break;
    case MEMEST_K_REAL:
        snprintf(buf, n, "%s between %s and %s", noun, lo, hi);
        break;
    case MEMEST_K_SIZE:
        if (row->hi > 0) {
            memest_fmt_iec((uint64_t)row->hi, 0, hi, sizeof hi);
            char *sp = strchr(hi, ' ');   /* "1TiB", as a size is written */
            if (sp)
                memmove(sp, sp + 1, strlen(sp));
            snprintf(buf, n, "a size up to %s such as 500MiB, 1GiB or 300000000", hi);
        } else {
            snprintf(buf, n, "a size such as 24GiB, 16GB or 8000000000");
        }
        break;
    case MEMEST_K_VOCAB:
        snprintf(buf, n, "%s", memest_vocab_words(row->vocab, " or ", words, sizeof words));
        break;
    default:
        snprintf(buf, n, "a value");
        break;
    }
    return buf;
}

/* v into an integer field of `size` bytes */
static void store_int(void *p, size_t size, int64_t v)
{
    switch (size) {
    case 1: {
        uint8_t x = (uint8_t)v;
        memcpy(p, &x, 1);
        break;
    }
    case 2: {
        uint16_t x = (uint16_t)v;
        memcpy(p, &x, 2);
        break;
    }
    case 4: {
        int32_t x = (int32_t)v;
        memcpy(p, &x, 4);
        break;
    }
    default:
        memcpy(p, &v, sizeof v);
        break;
    }
}

/* the integer field of `size` bytes at p (a vocabulary's value) */
static int64_t load_int(const void *p, size_t size)
{
    uint8_t b;
    uint16_t h;
    int32_t w;
    int64_t v = 0;
    switch (size) {
    case 1:
        memcpy(&b, p, 1);
        return b;
    case 2:
        memcpy(&h, p, 2);
        return h;
    case 4:
        memcpy(&w, p, 4);
        return w;
    default:
        memcpy(&v, p, sizeof v);
        return v;
    }
}

int memest_opt_store(const struct memest_opt *row, char *arg, struct memest_cli *o,
                     struct memest_error *err)
{
    char opt[48], expected[320];
    snprintf(opt, sizeof opt, "--%s", row->name);
    char *field = (char *)o + row->off;
    uint64_t u;
    double d;
    int k;
    switch (row->kind) {
    case MEMEST_K_FLAG:
    case MEMEST_K_ACTION:
        store_int(field, row->size, 1);
        break;
    case MEMEST_K_U64:
        if (memest_parse_u64(arg, (uint64_t)row->lo, (uint64_t)row->hi, &u) != 0)
            return memest_opt_bad(err, opt, arg, memest_opt_expected(row, expected, sizeof expected));
        store_int(field, row->size, (int64_t)u);
        break;
    case MEMEST_K_REAL:
        if (memest_parse_double(arg, row->lo, row->hi, &d) != 0)
            return memest_opt_bad(err, opt, arg, memest_opt_expected(row, expected, sizeof expected));
        memcpy(field, &d, sizeof d);
        break;
    case MEMEST_K_SIZE:
        if (memest_parse_size(arg, &u) != 0 || (double)u < row->lo || (row->hi > 0 && (double)u > row->hi))
            return memest_opt_bad(err, opt, arg, memest_opt_expected(row, expected, sizeof expected));
        memcpy(field, &u, sizeof u);
        break;
    case MEMEST_K_STR:
        if (!*arg)
            return memest_opt_bad(err, opt, arg, memest_opt_expected(row, expected, sizeof expected));
        memcpy(field, &arg, sizeof arg);
        break;
    case MEMEST_K_VOCAB:
        if ((k = memest_vocab_find(row->vocab, arg)) < 0)
            return memest_opt_bad(err, opt, arg, memest_opt_expected(row, expected, sizeof expected));
        store_int(field, row->size, k);
        break;
    case MEMEST_K_CUSTOM:
        break;
    }
    return 0;
}

int memest_opt_apply(const struct memest_opt *row, char *arg, struct memest_cli *o,
                     struct memest_error *err)
{
    if (memest_opt_store(row, arg, o, err) != 0)
        return -1;
    if (row->given_off)
        *(bool *)((char *)o + row->given_off) = true;
    return row->parse ? row->parse(row, arg, o, err) : 0;
}

const char *memest_opt_flags(const struct memest_opt *row, bool with_short, char *buf, size_t n)
{
    const char *mv = row->metavar ? row->metavar : "";
    if (row->arg == MEMEST_ARG_OPTIONAL)
        snprintf(buf, n, "--%s[=%s]", row->name, mv);
    else if (row->shrt && with_short)
        snprintf(buf, n, "-%c, --%s%s%s", row->shrt, row->name, *mv ? " " : "", mv);
    else
        snprintf(buf, n, "--%s%s%s", row->name, *mv ? " " : "", mv);
    return buf;
}

const char *memest_opt_default(const struct memest_opt *row, char *buf, size_t n)
{
    if (row->dflt_fn)
        return row->dflt_fn(buf, n);
    if (row->dflt_text)
        return row->dflt_text;
    if (row->dflt)
        return row->dflt;
    if (row->kind != MEMEST_K_VOCAB || !row->vocab)
        return NULL;
    /* a vocabulary's default is the value its field starts with */
    struct memest_cli start;
    memest_cli_defaults(&start);
    int64_t v = load_int((const char *)&start + row->off, row->size);
    if (v < row->vocab->first || v >= row->vocab->count || !row->vocab->name((int)v) ||
        (row->vocab->takes && !row->vocab->takes((int)v)))
        return NULL;
    snprintf(buf, n, "%s", row->vocab->name((int)v));
    return buf;
}
