/* suggest.c - nearest name by Levenshtein distance (case-insensitive). */
#include "memest/suggest.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MAXLEN 64

static int distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la >= MAXLEN || lb >= MAXLEN)
        return MAXLEN;
    int prev[MAXLEN + 1], cur[MAXLEN + 1];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            int best = prev[j - 1] + cost;
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            cur[j] = best;
        }
        memcpy(prev, cur, sizeof(int) * (lb + 1));
    }
    return prev[lb];
}

const char *memest_suggest(const char *s, const char *const *cands, int n)
{
    const char *best = NULL;
    int best_d = 1 + (int)strlen(s) / 3;
    for (int i = 0; i < n; i++) {
        int d = distance(s, cands[i]);   /* MAXLEN: too long to measure, near nothing */
        if (d < MAXLEN && d <= best_d && (!best || d < best_d)) {
            best = cands[i];
            best_d = d;
        }
    }
    return best;
}

static const char *clause(const char *near, bool single, char *buf, size_t n)
{
    if (n == 0)
        return "";
    if (near)
        snprintf(buf, n, single ? "; did you mean '%s'?" : " (did you mean \"%s\"?)", near);
    else
        buf[0] = '\0';
    return buf;
}

const char *memest_suggest_clause(const char *near, char *buf, size_t n)
{
    return clause(near, false, buf, n);
}

const char *memest_suggest_clause_sq(const char *near, char *buf, size_t n)
{
    return clause(near, true, buf, n);
}
