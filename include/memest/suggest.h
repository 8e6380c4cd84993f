/* suggest.h - "did you mean" for unknown names. */
#pragma once

#include <stddef.h>

/* The candidate nearest to `s` by edit distance, or NULL when none is close
 * enough (distance at most 1 + strlen(s) / 3) or either is 64 characters or
 * longer (too long to measure). */
const char *memest_suggest(const char *s, const char *const *cands, int n);

/* The clause a message about an unknown name ends with, for the nearest
 * candidate `near` (memest_suggest's answer): " (did you mean \"NEAR\"?)",
 * or "" when near is NULL. Written into buf (n bytes) and returned; a longer
 * clause is cut, so a buf the size of the message it goes into (struct
 * memest_error's msg) cuts only what that message would cut anyway.
 *
 *   char dym[sizeof err->msg];
 *   memest_errf(err, ..., "unknown field \"%s\"%s", key,
 *               memest_suggest_clause(memest_suggest(key, keys, n), dym, sizeof dym)); */
const char *memest_suggest_clause(const char *near, char *buf, size_t n);
/* The same for a message that quotes names in single quotes, as the GPU
 * table's do (gpu.c): "; did you mean 'NEAR'?", or "". */
const char *memest_suggest_clause_sq(const char *near, char *buf, size_t n);
