/* expr.h - the small arithmetic language of argument values in model files:
 * numbers, variables, + - * / // % ( ), comparisons, && || !, c ? a : b,
 * min(a, b), max(a, b), floor(x), ceil(x), true, false.
 * Example: "planes * 4", "repeat_index == 0 ? stride : 1".
 *
 * Values are exact integers (int64), reals (double) or booleans. Integer
 * literals (digits only, below 2^53) and integer variables stay exact
 * through + - * // % unary minus, min, max, floor, ceil, comparisons and
 * c ? a : b; an integer overflow is an error, never a wrapped or rounded
 * number. a / b of integers is an integer when b divides a, else a real.
 * floor and ceil of a real give an integer when it is below 2^53. Anything
 * with a real operand is real (double arithmetic); booleans count as 0 and 1.
 * Number literals use the decimal syntax of format.h (no hex, inf or nan). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum memest_expr_kind { MEMEST_EXPR_INT, MEMEST_EXPR_REAL, MEMEST_EXPR_BOOL };

/* Integers of the model format are below this in magnitude (2^53, exact in
 * a JSON number). */
#define MEMEST_EXPR_INT_LIMIT ((int64_t)1 << 53)

/* A value: i for INT and BOOL (0 or 1), d for REAL. tag is the caller's:
 * the lookup gives each variable's value a tag (or NULL), and a computed
 * value carries a tag of the values it was computed from (the first one
 * that has one; the condition's for c ? a : b when the branch has none). */
struct memest_expr_val {
    enum memest_expr_kind kind;
    int64_t i;
    double d;
    const void *tag;
};

/* The value as a double (integers beyond 2^53 are rounded). */
double memest_expr_real(const struct memest_expr_val *v);
/* A number from JSON (or any double): an INT when it is integral and below
 * 2^53 in magnitude, else a REAL. tag NULL. */
struct memest_expr_val memest_expr_number(double d);
/* v for messages: "3", "-2.5", "true", "3.0000000000000004" (round-trips).
 * Returns buf (32 bytes are enough). */
char *memest_expr_str(const struct memest_expr_val *v, char *buf, size_t n);

/* Looks up a variable; returns 0 and sets *val when it is a number or a
 * boolean, -1 when there is no such number variable. */
typedef int (*memest_expr_lookup)(void *ctx, const char *name, size_t len,
                                  struct memest_expr_val *val);

/* Evaluates s. Returns 0 and sets *out; or, with a one-line reason in
 * errbuf, -1 when the text is at fault (syntax, an unknown variable, a
 * literal out of range, nesting deeper than 64: out->tag NULL), -2 when the
 * values are (a division by zero, an overflow, a non-finite result: out->tag
 * is the divisor's tag, or the operands'). Never reads past the NUL of s. */
int memest_expr_eval(const char *s, memest_expr_lookup lookup, void *ctx,
                     struct memest_expr_val *out, char *errbuf, size_t errlen);
