/* arena.h - bump allocator for everything a model build or a run owns. One
 * memest_arena_free() releases it all, on every path. */
#pragma once

#include <stddef.h>

struct memest_arena_chunk;

struct memest_arena {
    struct memest_arena_chunk *head;
    size_t total;   /* bytes handed out, for limits */
};

/* Zeroed memory, aligned for any type; NULL when out of memory. */
void *memest_arena_alloc(struct memest_arena *a, size_t n);
/* Copy of s (n bytes, then a NUL); NULL when out of memory. */
char *memest_arena_strndup(struct memest_arena *a, const char *s, size_t n);
char *memest_arena_strdup(struct memest_arena *a, const char *s);
/* The concatenation of the NULL-terminated list of strings; NULL when out
 * of memory. Much faster than memest_arena_printf on hot paths. */
char *memest_arena_concat(struct memest_arena *a, ...);
/* printf into the arena; NULL when out of memory. */
char *memest_arena_printf(struct memest_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void memest_arena_free(struct memest_arena *a);
