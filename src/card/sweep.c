/* sweep.c - parsing the LIST of --sweep and --sweep-var: "1,2,8,32",
 * "START:END:xK" or "START:END:+K", strictly (digits only), overflow-checked
 * and bounded in length. */
#include "memest/sweep.h"

#include <stdlib.h>
#include <string.h>

#include "memest/format.h"

static int bad(struct memest_error *err, const char *opt, const char *list, const char *why)
{
    size_t len = strlen(list);
    return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                       "%s: bad list '%.*s%s': %s (expected 1,2,8,32 or START:END:xK or "
                       "START:END:+K)",
                       opt, len > 60 ? 57 : (int)len, list, len > 60 ? "..." : "", why);
}

/* A whole number in [1, 2^53 - 1], decimal digits only (the s[len] that
 * follows is a separator). */
static bool parse_num(const char *s, size_t len, int64_t *out)
{
    char buf[32];
    uint64_t v;
    if (len >= sizeof buf)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (memest_parse_u64(buf, 1, MEMEST_SWEEP_MAX_VALUE, &v) != 0)
        return false;
    *out = (int64_t)v;
    return true;
}

static int num_or_fail(const char *s, size_t len, int64_t *out, struct memest_error *err,
                       const char *opt, const char *list)
{
    *out = 0;   /* set on every path: a caller never reads an unset value */
    if (parse_num(s, len, out))
        return 0;
    char why[96];
    snprintf(why, sizeof why, "'%.*s' is not a whole number between 1 and 2^53-1",
             (int)(len > 40 ? 40 : len), s);
    return bad(err, opt, list, why);
}

static int parse_range(const char *list, const char *opt, struct memest_sweep_list *out,
                       struct memest_error *err)
{
    const char *c1 = strchr(list, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || strchr(c2 + 1, ':'))
        return bad(err, opt, list, "a range has three parts START:END:xK or START:END:+K");
    int64_t start, end, k;
    if (num_or_fail(list, (size_t)(c1 - list), &start, err, opt, list) != 0 ||
        num_or_fail(c1 + 1, (size_t)(c2 - c1 - 1), &end, err, opt, list) != 0)
        return -1;
    char step = c2[1];
    if (step != 'x' && step != '+')
        return bad(err, opt, list, "the step is xK (geometric) or +K (arithmetic)");
    if (num_or_fail(c2 + 2, strlen(c2 + 2), &k, err, opt, list) != 0)
        return -1;
    if (start > end)
        return bad(err, opt, list, "START is greater than END");
    if (step == 'x' && k < 2)
        return bad(err, opt, list, "a geometric step xK needs K >= 2");
    uint64_t count = 0;
    if (step == '+') {
        count = (uint64_t)((end - start) / k) + 1;
    } else {
        for (int64_t v = start;; v *= k) {
            count++;
            if (v > end / k)
                break;
        }
    }
    if (count > MEMEST_SWEEP_MAX_VALUES) {
        char why[96];
        snprintf(why, sizeof why, "it has %llu values, more than %d", (unsigned long long)count,
                 MEMEST_SWEEP_MAX_VALUES);
        return bad(err, opt, list, why);
    }
    out->v = malloc(sizeof *out->v * (size_t)count);
    if (!out->v)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    int64_t v = start;
    for (uint64_t i = 0; i < count; i++) {
        out->v[out->n++] = v;
        if (i + 1 < count)
            v = step == '+' ? v + k : v * k; /* stays <= end: no overflow */
    }
    return 0;
}

int memest_sweep_parse(const char *list, const char *opt, struct memest_sweep_list *out,
                       struct memest_error *err)
{
    memset(out, 0, sizeof *out);
    if (!list || !*list)
        return bad(err, opt, list ? list : "", "it is empty");
    if (strchr(list, ':')) {
        if (strchr(list, ','))
            return bad(err, opt, list, "a range and a list of values cannot be mixed");
        return parse_range(list, opt, out, err);
    }
    size_t count = 1;
    for (const char *c = list; *c; c++)
        count += *c == ',';
    if (count > MEMEST_SWEEP_MAX_VALUES) {
        char why[96];
        snprintf(why, sizeof why, "it has %zu values, more than %d", count,
                 MEMEST_SWEEP_MAX_VALUES);
        return bad(err, opt, list, why);
    }
    out->v = malloc(sizeof *out->v * count);
    if (!out->v)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    const char *s = list;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        int64_t v;
        if (num_or_fail(s, len, &v, err, opt, list) != 0) {
            memest_sweep_list_free(out);
            return -1;
        }
        out->v[out->n++] = v;
        if (!comma)
            break;
        s = comma + 1;
    }
    return 0;
}

void memest_sweep_list_free(struct memest_sweep_list *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}
