/* format.c - human number formats and strict number parsing. */
#include "memest/format.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *memest_fmt_iec(uint64_t bytes, int decimals, char *buf, size_t n)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(buf, n, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    /* dividing by 1024 is exact: v is bytes / 1024^u as (double)bytes has it */
    double v = (double)bytes / 1024;
    char num[48];
    int u = 1;
    for (;; v /= 1024, u++) {
        snprintf(num, sizeof num, "%.*f", decimals, v);
        /* the unit where the figure, as printed (rounded), is below 1024 */
        if (u == 6 || strtod(num, NULL) < 1024)
            break;
    }
    snprintf(buf, n, "%s %s", num, units[u]);
    return buf;
}

char *memest_fmt_bytes(uint64_t bytes, char *buf, size_t n)
{
    return memest_fmt_iec(bytes, 2, buf, n);
}

char *memest_fmt_count(uint64_t v, char *buf, size_t n)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
    char out[48];
    int o = 0;
    for (int i = 0; i < len; i++) {
        if (i && (len - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
    snprintf(buf, n, "%s", out);
    return buf;
}

char *memest_fmt_si(double v, char *buf, size_t n)
{
    static const char *const prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
    int p = 0;
    while (fabs(v) >= 1000 && p < 6) {
        v /= 1000;
        p++;
    }
    snprintf(buf, n, "%.*f %s", fabs(v) >= 100 ? 1 : 2, v, prefixes[p]);
    return buf;
}

char *memest_fmt_double(double v, char *buf, size_t n)
{
    for (int prec = 15;; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (prec == 17 || strtod(buf, NULL) == v)
            return buf;
    }
}

static const char *skip_digits(const char *p)
{
    while (isdigit((unsigned char)*p))
        p++;
    return p;
}

void memest_decimal_read(const char *s, struct memest_decimal *out)
{
    memset(out, 0, sizeof *out);
    const char *p = skip_digits(s);
    bool whole = p > s, is_int = true;
    if (*p == '.') {
        const char *q = skip_digits(p + 1);
        if (!whole && q == p + 1)
            return; /* "." alone */
        p = q;
        is_int = false;
    } else if (!whole) {
        return;
    }
    if (*p == 'e' || *p == 'E') {
        const char *q = p + 1 + (p[1] == '+' || p[1] == '-');
        if (isdigit((unsigned char)*q)) {
            p = skip_digits(q);
            is_int = false;
            out->exponent = true;
        }
    }
    out->len = (size_t)(p - s);
    out->is_int = is_int;
    char *end;
    if (is_int) {
        errno = 0;
        long long v = strtoll(s, &end, 10);
        out->int_ok = errno != ERANGE && end == p;
        out->i = out->int_ok ? v : 0;
        if (out->int_ok) { /* the conversion rounds as strtod would, faster */
            out->real_ok = true;
            out->d = (double)v;
            return;
        }
    }
    errno = 0;
    double d = strtod(s, &end);
    /* strtod reads further than the decimal syntax only after "0x" (hex),
     * where the number is the "0" */
    if (end != p && out->len == 1 && s[0] == '0')
        d = 0, end = (char *)p, errno = 0;
    out->real_ok = end == p && errno != ERANGE && isfinite(d);
    out->d = out->real_ok ? d : 0;
}

int memest_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    struct memest_decimal n;
    if (!s)
        return -1;
    memest_decimal_read(s, &n);
    if (!n.len || s[n.len] != '\0' || !n.int_ok || (uint64_t)n.i < lo || (uint64_t)n.i > hi)
        return -1;
    *out = (uint64_t)n.i;
    return 0;
}

int memest_parse_double(const char *s, double lo, double hi, double *out)
{
    struct memest_decimal n;
    if (!s)
        return -1;
    bool neg = s[0] == '-' && lo < 0;
    memest_decimal_read(s + neg, &n);
    if (!n.len || s[neg + n.len] != '\0' || !n.real_ok)
        return -1;
    double v = neg ? -n.d : n.d;
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int memest_parse_size(const char *s, uint64_t *out)
{
    static const struct {
        const char *suffix;
        double mult;
    } units[] = {
        {"", 1}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
        {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
    };
    struct memest_decimal n;
    if (!s)
        return -1;
    memest_decimal_read(s, &n);
    if (!n.len || n.exponent || !n.real_ok)
        return -1;
    const char *unit = s + n.len;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        if (strcmp(unit, units[i].suffix) != 0)
            continue;
        if (units[i].mult == 1) { /* plain bytes: an exact integer */
            if (!n.int_ok)
                return -1;
            *out = (uint64_t)n.i;
            return 0;
        }
        double bytes = n.d * units[i].mult;
        if (bytes >= 9223372036854775807.0 || bytes != floor(bytes))
            return -1;
        *out = (uint64_t)bytes;
        return 0;
    }
    return -1;
}
