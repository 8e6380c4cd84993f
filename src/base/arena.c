/* arena.c - bump allocator: chunks of at least 64 KiB, freed all at once. */
#include "memest/arena.h"

#include <stdarg.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct memest_arena_chunk {
    struct memest_arena_chunk *next;
    size_t used, cap;
    alignas(max_align_t) unsigned char data[];
};

#define CHUNK_MIN (64u * 1024u)

void *memest_arena_alloc(struct memest_arena *a, size_t n)
{
    const size_t align = alignof(max_align_t);
    if (n > SIZE_MAX / 2)
        return NULL;
    n = (n + align - 1) & ~(align - 1);
    struct memest_arena_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK_MIN ? n : CHUNK_MIN;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->next = a->head;
        c->used = 0;
        c->cap = cap;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    a->total += n;
    memset(p, 0, n);
    return p;
}

char *memest_arena_strndup(struct memest_arena *a, const char *s, size_t n)
{
    char *p = memest_arena_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

char *memest_arena_strdup(struct memest_arena *a, const char *s)
{
    return memest_arena_strndup(a, s, strlen(s));
}

char *memest_arena_concat(struct memest_arena *a, ...)
{
    va_list ap;
    size_t n = 0;
    va_start(ap, a);
    for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *))
        n += strlen(s);
    va_end(ap);
    char *p = memest_arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    char *q = p;
    va_start(ap, a);
    for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *)) {
        size_t len = strlen(s);
        memcpy(q, s, len);
        q += len;
    }
    va_end(ap);
    *q = '\0';
    return p;
}

char *memest_arena_printf(struct memest_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *p = memest_arena_alloc(a, (size_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void memest_arena_free(struct memest_arena *a)
{
    struct memest_arena_chunk *c = a->head;
    while (c) {
        struct memest_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}
