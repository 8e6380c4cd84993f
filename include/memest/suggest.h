/* suggest.h - "did you mean" for unknown names. */
#pragma once

/* The candidate nearest to `s` by edit distance, or NULL when none is close
 * enough (distance at most 1 + strlen(s) / 3). */
const char *memest_suggest(const char *s, const char *const *cands, int n);
