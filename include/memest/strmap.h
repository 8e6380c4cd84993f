/* strmap.h - open-addressing hash map from strings (not copied: the caller
 * keeps them alive, usually in an arena) to 64-bit values. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct memest_strmap {
    const char **keys;
    size_t *lens;
    int64_t *vals;
    size_t cap, count;
};

/* Inserts or replaces. Returns 0, or -1 when out of memory. */
int memest_strmap_put(struct memest_strmap *m, const char *key, size_t len, int64_t val);
/* Returns true and sets *val when found. */
bool memest_strmap_get(const struct memest_strmap *m, const char *key, size_t len, int64_t *val);
void memest_strmap_free(struct memest_strmap *m);
