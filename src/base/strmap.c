/* strmap.c - string -> int64 hash map (FNV-1a, linear probing, load <= 1/2). */
#include "memest/strmap.h"

#include <stdlib.h>
#include <string.h>

static size_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return (size_t)h;
}

static size_t slot(const struct memest_strmap *m, const char *key, size_t len)
{
    size_t i = hash(key, len) & (m->cap - 1);
    while (m->keys[i] && !(m->lens[i] == len && memcmp(m->keys[i], key, len) == 0))
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int grow(struct memest_strmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 16;
    struct memest_strmap n = {calloc(ncap, sizeof *n.keys), calloc(ncap, sizeof *n.lens),
                              calloc(ncap, sizeof *n.vals), ncap, 0};
    if (!n.keys || !n.lens || !n.vals) {
        memest_strmap_free(&n);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i]) {
            size_t j = slot(&n, m->keys[i], m->lens[i]);
            n.keys[j] = m->keys[i];
            n.lens[j] = m->lens[i];
            n.vals[j] = m->vals[i];
            n.count++;
        }
    }
    memest_strmap_free(m);
    *m = n;
    return 0;
}

int memest_strmap_put(struct memest_strmap *m, const char *key, size_t len, int64_t val)
{
    if ((m->count + 1) * 2 > m->cap && grow(m) != 0)
        return -1;
    size_t i = slot(m, key, len);
    if (!m->keys[i]) {
        m->keys[i] = key;
        m->lens[i] = len;
        m->count++;
    }
    m->vals[i] = val;
    return 0;
}

bool memest_strmap_get(const struct memest_strmap *m, const char *key, size_t len, int64_t *val)
{
    if (!m->cap)
        return false;
    size_t i = slot(m, key, len);
    if (!m->keys[i])
        return false;
    *val = m->vals[i];
    return true;
}

void memest_strmap_free(struct memest_strmap *m)
{
    free(m->keys);
    free(m->lens);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
