/* expr.h - the small arithmetic language of argument values in model files:
 * numbers, variables, + - * / // % ( ), comparisons, && || !, c ? a : b,
 * min(a, b), max(a, b), floor(x), ceil(x), true, false.
 * Example: "planes * 4", "repeat_index == 0 ? stride : 1". */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Looks up a variable; returns 0 and sets *val (and *is_bool) when it is a
 * number or boolean, -1 when there is no such number variable. */
typedef int (*memest_expr_lookup)(void *ctx, const char *name, size_t len, double *val,
                                  bool *is_bool);

/* Evaluates s. Returns 0 and sets *out (booleans are 1 or 0, *is_bool set),
 * or -1 with a one-line reason in errbuf. Never reads past the NUL of s;
 * nesting deeper than 64 is an error. */
int memest_expr_eval(const char *s, memest_expr_lookup lookup, void *ctx, double *out,
                     bool *is_bool, char *errbuf, size_t errlen);
