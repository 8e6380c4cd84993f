/* alloc_conf.c - PYTORCH_CUDA_ALLOC_CONF parsed as PyTorch 2.6 parses it
 * (c10/cuda/CUDAAllocatorConfig.cpp: lexArgs, parseArgs and the parse*
 * functions it calls).
 *
 * lexArgs: every ',', ':', '[' and ']' is a token of its own, spaces are
 * dropped, anything else runs together into a token. parseArgs reads
 * `key ':' value` items separated by ','; consumeToken refuses any other
 * separator. Numbers are read with std::stoi (std::stoul for an interval,
 * std::stod for the threshold): leading digits, the rest of the token
 * ignored, no digits an error, an int past 2^31 - 1 an error. memest also
 * refuses a negative size, which PyTorch would wrap to 2^64 - N. */
#include "memest/alloc_conf.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB ((uint64_t)1 << 20)
#define LARGE_BUFFER_MB 20u   /* kLargeBuffer / 1 MiB */
#define MAX_TOKENS 256
#define TOKEN_MAX 64

struct lex {
    char tok[MAX_TOKENS][TOKEN_MAX];
    size_t n;
};

struct parse {
    const struct lex *lx;
    size_t i;
    char *msg;
    size_t msglen;
};

__attribute__((format(printf, 2, 3))) static int fail(struct parse *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->msg, p->msglen, fmt, ap);
    va_end(ap);
    return -1;
}

static bool is_sep(char ch) { return ch == ',' || ch == ':' || ch == '[' || ch == ']'; }

/* lexArgs. -1 past MAX_TOKENS tokens or TOKEN_MAX characters in one. */
static int lex(const char *s, struct lex *lx, struct parse *p)
{
    size_t len = 0;
    lx->n = 0;
    for (const char *c = s;; c++) {
        bool end = *c == '\0';
        if (end || is_sep(*c)) {
            if (len > 0) {
                if (lx->n == MAX_TOKENS)
                    return fail(p, "more than %d tokens", MAX_TOKENS);
                lx->tok[lx->n++][len] = '\0';
                len = 0;
            }
            if (end)
                return 0;
            if (lx->n == MAX_TOKENS)
                return fail(p, "more than %d tokens", MAX_TOKENS);
            lx->tok[lx->n][0] = *c;
            lx->tok[lx->n++][1] = '\0';
        } else if (*c != ' ') {
            if (len + 1 >= TOKEN_MAX)
                return fail(p, "a token of more than %d characters", TOKEN_MAX - 1);
            lx->tok[lx->n][len++] = *c;
        }
    }
}

static const char *tok(const struct parse *p, size_t i) { return i < p->lx->n ? p->lx->tok[i] : NULL; }

/* consumeToken(config, ++i, c) */
static int consume(struct parse *p, char c)
{
    const char *t = tok(p, ++p->i);
    if (!t || t[0] != c || t[1] != '\0')
        return fail(p, "Error parsing CachingAllocator settings, expected %c", c);
    return 0;
}

/* The value token after the ':' (++i), or an error naming `what`. */
static const char *value(struct parse *p, const char *what)
{
    const char *t = tok(p, ++p->i);
    if (!t)
        fail(p, "Error, expecting %s value", what);
    return t;
}

/* std::stoi / std::stoul: leading digits (a sign allowed), the rest
 * ignored. */
static int read_int(struct parse *p, const char *t, const char *key, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(t, &end, 10);
    if (end == t)
        return fail(p, "%s: '%s' is not a number (std::stoi: invalid_argument)", key, t);
    if (errno == ERANGE || v > max || v < -max)
        return fail(p, "%s: '%s' is out of range (std::stoi: out_of_range)", key, t);
    if (v < 0)
        return fail(p, "%s: '%s' is negative (PyTorch would read it as 2^64 - %lld)", key, t, -v);
    *out = v;
    return 0;
}

static bool pow2(long long v) { return v > 0 && (v & (v - 1)) == 0; }

static unsigned log2u(unsigned long long v) { return 63u - (unsigned)__builtin_clzll(v); }

/* parseMaxSplitSize / parseMaxNonSplitRoundingSize */
static int parse_mb(struct parse *p, const char *key, bool split, uint64_t *out)
{
    long long v;
    const char *t;
    if (consume(p, ':') != 0 || !(t = value(p, key)) || read_int(p, t, key, INT_MAX, &v) != 0)
        return -1;
    if (split && v <= LARGE_BUFFER_MB)
        return fail(p, "CachingAllocator option max_split_size_mb too small, must be > %u",
                    LARGE_BUFFER_MB);
    if (!split && v < LARGE_BUFFER_MB)
        return fail(p, "CachingAllocator option max_non_split_rounding_mb too small, must be "
                    ">= %u", LARGE_BUFFER_MB);
    *out = (uint64_t)v * MIB;
    return 0;
}

/* parseGarbageCollectionThreshold */
static int parse_gc(struct parse *p, double *out)
{
    const char *t;
    if (consume(p, ':') != 0 || !(t = value(p, "garbage_collection_threshold")))
        return -1;
    char *end;
    double v = strtod(t, &end);
    if (end == t)
        return fail(p, "garbage_collection_threshold: '%s' is not a number", t);
    if (!(v > 0))
        return fail(p, "garbage_collect_threshold too small, set it 0.0~1.0");
    if (!(v < 1.0))
        return fail(p, "garbage_collect_threshold too big, set it 0.0~1.0");
    *out = v;
    return 0;
}

/* parseRoundUpPower2Divisions: a plain power of two for every interval,
 * or a list [MB:D, ..., >:D]. */
static int parse_roundup(struct parse *p, uint32_t *div)
{
    const char *key = "roundup_power2_divisions", *t;
    long long v;
    if (consume(p, ':') != 0 || !(t = value(p, key)))
        return -1;
    if (strcmp(t, "[") != 0) {
        if (read_int(p, t, key, INT_MAX, &v) != 0)
            return -1;
        if (!pow2(v))
            return fail(p, "For roundups, the divisons has to be power of 2");
        for (size_t k = 0; k < MEMEST_ALLOC_ROUNDUP_INTERVALS; k++)
            div[k] = (uint32_t)v;
        return 0;
    }
    size_t last = 0;
    bool first = true;
    while ((t = tok(p, ++p->i)) && strcmp(t, "]") != 0) {
        const char *interval = t, *d;
        if (consume(p, ':') != 0 || !(d = value(p, key)) || read_int(p, d, key, INT_MAX, &v) != 0)
            return -1;
        if (v != 0 && !pow2(v))
            return fail(p, "For roundups, the divisons has to be power of 2 or 0 to disable "
                        "roundup");
        if (strcmp(interval, ">") == 0) {
            for (size_t k = last; k < MEMEST_ALLOC_ROUNDUP_INTERVALS; k++)
                div[k] = (uint32_t)v;
        } else {
            long long mb;
            if (read_int(p, interval, key, LLONG_MAX, &mb) != 0)
                return -1;
            if (!pow2(mb))
                return fail(p, "For roundups, the intervals have to be power of 2");
            size_t k = log2u((unsigned long long)mb);
            if (k > MEMEST_ALLOC_ROUNDUP_INTERVALS - 1)
                k = MEMEST_ALLOC_ROUNDUP_INTERVALS - 1;
            if (first) {
                for (size_t j = 0; j < k; j++)
                    div[j] = (uint32_t)v;
                first = false;
            }
            div[k] = (uint32_t)v;
            last = k;
        }
        const char *next = tok(p, p->i + 1);
        if (!next)
            return fail(p, "%s: the list has no closing ']'", key);
        if (strcmp(next, "]") != 0 && consume(p, ',') != 0)
            return -1;
    }
    if (!t)
        return fail(p, "%s: the list has no closing ']'", key);
    return 0;
}

/* "True" or "False" after the ':' */
static int parse_bool(struct parse *p, const char *key, bool *out)
{
    const char *t;
    if (consume(p, ':') != 0)
        return -1;
    t = tok(p, ++p->i);
    if (!t || (strcmp(t, "True") != 0 && strcmp(t, "False") != 0))
        return fail(p, "Expected a single True/False argument for %s", key);
    *out = strcmp(t, "True") == 0;
    return 0;
}

/* parsePinnedNumRegisterThreads: a power of two up to 128
 * (pinned_max_register_threads). */
static int parse_threads(struct parse *p)
{
    long long v;
    const char *t, *key = "pinned_num_register_threads";
    if (consume(p, ':') != 0 || !(t = value(p, key)) || read_int(p, t, key, INT_MAX, &v) != 0)
        return -1;
    if (!pow2(v))
        return fail(p, "Number of register threads has to be power of 2");
    if (v > 128)
        return fail(p, "Number of register threads should be less than or equal to 128");
    return 0;
}

void memest_alloc_conf_default(struct memest_alloc_conf *c)
{
    memset(c, 0, sizeof *c);
}

/* c->text: the settings that differ from the defaults, in PyTorch's order. */
static void describe(struct memest_alloc_conf *c)
{
    size_t n = 0, cap = sizeof c->text;
    c->text[0] = '\0';
#define ADD(...)                                                                     \
    do {                                                                             \
        int w = snprintf(c->text + n, cap - n, "%s", n ? "," : "");                  \
        n += w > 0 && (size_t)w < cap - n ? (size_t)w : 0;                           \
        w = snprintf(c->text + n, cap - n, __VA_ARGS__);                             \
        n += w > 0 && (size_t)w < cap - n ? (size_t)w : 0;                           \
    } while (0)
    if (c->max_split)
        ADD("max_split_size_mb:%llu", (unsigned long long)(c->max_split / MIB));
    if (c->max_non_split_rounding && c->max_non_split_rounding != (uint64_t)LARGE_BUFFER_MB * MIB)
        ADD("max_non_split_rounding_mb:%llu",
            (unsigned long long)(c->max_non_split_rounding / MIB));
    if (c->gc_threshold > 0)
        ADD("garbage_collection_threshold:%g", c->gc_threshold);
    bool any = false;
    for (size_t k = 0; k < MEMEST_ALLOC_ROUNDUP_INTERVALS; k++)
        any |= c->roundup[k] > 1;
    if (any) {
        ADD("roundup_power2_divisions:[");
        for (size_t k = 0; k < MEMEST_ALLOC_ROUNDUP_INTERVALS; k++) {
            int w = snprintf(c->text + n, cap - n, "%s%s%llu:%u", k ? "," : "",
                             k + 1 == MEMEST_ALLOC_ROUNDUP_INTERVALS ? ">" : "",
                             k + 1 == MEMEST_ALLOC_ROUNDUP_INTERVALS ? 0ull : 1ull << k,
                             (unsigned)c->roundup[k]);
            n += w > 0 && (size_t)w < cap - n ? (size_t)w : 0;
        }
        int w = snprintf(c->text + n, cap - n, "]");
        n += w > 0 && (size_t)w < cap - n ? (size_t)w : 0;
    }
    if (c->expandable)
        ADD("expandable_segments:True");
#undef ADD
}

static int parse_item(struct parse *p, struct memest_alloc_conf *c)
{
    const char *key = tok(p, p->i);
    bool ignored;
    if (strcmp(key, "max_split_size_mb") == 0)
        return parse_mb(p, key, true, &c->max_split);
    if (strcmp(key, "max_non_split_rounding_mb") == 0)
        return parse_mb(p, key, false, &c->max_non_split_rounding);
    if (strcmp(key, "garbage_collection_threshold") == 0)
        return parse_gc(p, &c->gc_threshold);
    if (strcmp(key, "roundup_power2_divisions") == 0)
        return parse_roundup(p, c->roundup);
    if (strcmp(key, "expandable_segments") == 0)
        return parse_bool(p, key, &c->expandable);
    if (strcmp(key, "backend") == 0) {
        const char *t;
        if (consume(p, ':') != 0 || !(t = value(p, key)))
            return -1;
        if (strcmp(t, "cudaMallocAsync") == 0)
            return fail(p, "backend:cudaMallocAsync is CUDA's stream-ordered allocator, which "
                        "memest does not model (it models the native caching allocator)");
        if (strcmp(t, "native") != 0)
            return fail(p, "Unknown allocator backend '%s', options are native and "
                        "cudaMallocAsync", t);
        return 0;
    }
    if (strcmp(key, "release_lock_on_cudamalloc") == 0 ||
        strcmp(key, "pinned_use_cuda_host_register") == 0)
        return parse_bool(p, key, &ignored);
    if (strcmp(key, "pinned_num_register_threads") == 0)
        return parse_threads(p);
    return fail(p, "Unrecognized CachingAllocator option: %s", key);
}

int memest_alloc_conf_parse(const char *s, struct memest_alloc_conf *c, char *msg, size_t msglen)
{
    memest_alloc_conf_default(c);
    if (!s || !*s)
        return 0;
    struct lex lx;
    struct parse p = {.lx = &lx, .msg = msg, .msglen = msglen};
    if (lex(s, &lx, &p) != 0)
        return -1;
    for (p.i = 0; p.i < lx.n; p.i++) {
        if (parse_item(&p, c) != 0)
            return -1;
        if (p.i + 1 < lx.n && consume(&p, ',') != 0)
            return -1;
    }
    describe(c);
    return 0;
}

uint32_t memest_alloc_conf_divisions(const struct memest_alloc_conf *c, uint64_t size)
{
    int k = size ? (int)log2u(size) - 20 : 0;
    k = k < 0 ? 0 : k > MEMEST_ALLOC_ROUNDUP_INTERVALS - 1 ? MEMEST_ALLOC_ROUNDUP_INTERVALS - 1 : k;
    return c->roundup[k];
}
