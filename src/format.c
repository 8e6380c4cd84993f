/* format.c - human number formats and strict number parsing. */
#include "memest/format.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *memest_fmt_bytes(uint64_t bytes, char *buf, size_t n)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(buf, n, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 6) {
        v /= 1024;
        u++;
    }
    snprintf(buf, n, "%.2f %s", v, units[u]);
    return buf;
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

int memest_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (!s || !isdigit((unsigned char)s[0]))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int memest_parse_double(const char *s, double lo, double hi, double *out)
{
    if (!s || !*s || isspace((unsigned char)s[0]))
        return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno == ERANGE || *end != '\0' || !isfinite(v) || v < lo || v > hi)
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
    if (!s || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
        return -1;
    /* digits, optionally a fraction: no exponent, hex or infinity */
    const char *num_end = s;
    while (isdigit((unsigned char)*num_end))
        num_end++;
    if (*num_end == '.') {
        num_end++;
        while (isdigit((unsigned char)*num_end))
            num_end++;
    }
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (end != num_end)
        return -1;
    if (errno == ERANGE || !isfinite(v) || v < 0)
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        if (strcmp(end, units[i].suffix) != 0)
            continue;
        double bytes = v * units[i].mult;
        if (bytes >= 9223372036854775807.0 || bytes != floor(bytes))
            return -1;
        if (units[i].mult == 1) { /* plain bytes: exact integer parse */
            char *e2;
            errno = 0;
            unsigned long long b = strtoull(s, &e2, 10);
            if (errno == ERANGE || e2 != end || b > INT64_MAX)
                return -1;
            *out = b;
            return 0;
        }
        *out = (uint64_t)bytes;
        return 0;
    }
    return -1;
}
