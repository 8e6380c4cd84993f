/* expr.c - recursive-descent evaluator for argument expressions. */
#include "memest/expr.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

struct parser {
    const char *s, *p;
    memest_expr_lookup lookup;
    void *ctx;
    char *err;
    size_t errlen;
    int depth;
    bool failed;
};

struct val {
    double v;
    bool is_bool;
};

static struct val fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static struct val fail(struct parser *ps, const char *fmt, ...)
{
    if (!ps->failed) {
        ps->failed = true;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->err, ps->errlen, fmt, ap);
        va_end(ap);
    }
    return (struct val){0, false};
}

static void skip_ws(struct parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t')
        ps->p++;
}

/* Takes the 1- or 2-character token tok. The first character is compared
 * first: accept() runs for every operator at every precedence level, and the
 * cost of each expression is charged per byte by the model builder. */
static bool accept(struct parser *ps, const char *tok)
{
    skip_ws(ps);
    const char *p = ps->p;
    if (p[0] != tok[0])
        return false;
    if (tok[1]) {
        if (p[1] != tok[1])
            return false;
        ps->p += 2;
        return true;
    }
    /* do not take "/" from "//", "<" from "<=", "!" from "!=", ... */
    if ((tok[0] == '/' && p[1] == '/') ||
        ((tok[0] == '<' || tok[0] == '>' || tok[0] == '!') && p[1] == '='))
        return false;
    ps->p += 1;
    return true;
}

static struct val ternary(struct parser *ps);

static struct val number_of(bool b) { return (struct val){b ? 1.0 : 0.0, true}; }

static struct val call(struct parser *ps, const char *name, size_t len)
{
    struct val a = ternary(ps), b = {0, false};
    bool two = (len == 3 && (strncmp(name, "min", 3) == 0 || strncmp(name, "max", 3) == 0));
    if (two) {
        if (!accept(ps, ","))
            return fail(ps, "%.*s() takes two arguments", (int)len, name);
        b = ternary(ps);
    }
    if (!accept(ps, ")"))
        return fail(ps, "missing ')' after the arguments of %.*s()", (int)len, name);
    if (len == 3 && strncmp(name, "min", 3) == 0)
        return (struct val){a.v < b.v ? a.v : b.v, false};
    if (len == 3 && strncmp(name, "max", 3) == 0)
        return (struct val){a.v > b.v ? a.v : b.v, false};
    if (len == 5 && strncmp(name, "floor", 5) == 0)
        return (struct val){floor(a.v), false};
    return (struct val){ceil(a.v), false}; /* ceil: the only one left */
}

static struct val primary(struct parser *ps)
{
    skip_ws(ps);
    const char *p = ps->p;
    if (*p == '(') {
        ps->p++;
        struct val v = ternary(ps);
        if (!accept(ps, ")"))
            return fail(ps, "missing ')'");
        return v;
    }
    if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
        char *end;
        double v = strtod(p, &end);
        if (!isfinite(v))
            return fail(ps, "number out of range");
        ps->p = end;
        return (struct val){v, false};
    }
    if (isalpha((unsigned char)*p) || *p == '_') {
        const char *q = p;
        while (isalnum((unsigned char)*q) || *q == '_')
            q++;
        size_t len = (size_t)(q - p);
        ps->p = q;
        if (len == 4 && strncmp(p, "true", 4) == 0)
            return number_of(true);
        if (len == 5 && strncmp(p, "false", 5) == 0)
            return number_of(false);
        if (((len == 3 && (!strncmp(p, "min", 3) || !strncmp(p, "max", 3))) ||
             (len == 5 && !strncmp(p, "floor", 5)) || (len == 4 && !strncmp(p, "ceil", 4))) &&
            accept(ps, "("))
            return call(ps, p, len);
        struct val v = {0, false};
        if (ps->lookup(ps->ctx, p, len, &v.v, &v.is_bool) != 0)
            return fail(ps, "unknown variable '%.*s'", (int)len, p);
        return v;
    }
    if (*p == '\0')
        return fail(ps, "expression ends too early");
    return fail(ps, "unexpected '%c'", *p);
}

static struct val unary(struct parser *ps)
{
    if (++ps->depth > MAX_DEPTH)
        return fail(ps, "expression nested deeper than %d", MAX_DEPTH);
    struct val v;
    if (accept(ps, "-")) {
        v = unary(ps);
        v = (struct val){-v.v, false};
    } else if (accept(ps, "+")) {
        v = unary(ps);
    } else if (accept(ps, "!")) {
        v = unary(ps);
        v = number_of(v.v == 0);
    } else {
        v = primary(ps);
    }
    ps->depth--;
    return v;
}

static struct val term(struct parser *ps)
{
    struct val a = unary(ps);
    while (!ps->failed) {
        if (accept(ps, "*")) {
            a = (struct val){a.v * unary(ps).v, false};
        } else if (accept(ps, "//")) {
            double b = unary(ps).v;
            if (b == 0)
                return fail(ps, "division by zero");
            a = (struct val){floor(a.v / b), false};
        } else if (accept(ps, "/")) {
            double b = unary(ps).v;
            if (b == 0)
                return fail(ps, "division by zero");
            a = (struct val){a.v / b, false};
        } else if (accept(ps, "%")) {
            double b = unary(ps).v;
            if (b == 0)
                return fail(ps, "division by zero");
            a = (struct val){a.v - b * floor(a.v / b), false};
        } else {
            break;
        }
    }
    return a;
}

static struct val sum(struct parser *ps)
{
    struct val a = term(ps);
    while (!ps->failed) {
        if (accept(ps, "+"))
            a = (struct val){a.v + term(ps).v, false};
        else if (accept(ps, "-"))
            a = (struct val){a.v - term(ps).v, false};
        else
            break;
    }
    return a;
}

static struct val compare(struct parser *ps)
{
    struct val a = sum(ps);
    while (!ps->failed) {
        if (accept(ps, "<="))
            a = number_of(a.v <= sum(ps).v);
        else if (accept(ps, ">="))
            a = number_of(a.v >= sum(ps).v);
        else if (accept(ps, "<"))
            a = number_of(a.v < sum(ps).v);
        else if (accept(ps, ">"))
            a = number_of(a.v > sum(ps).v);
        else
            break;
    }
    return a;
}

static struct val equality(struct parser *ps)
{
    struct val a = compare(ps);
    while (!ps->failed) {
        if (accept(ps, "=="))
            a = number_of(a.v == compare(ps).v);
        else if (accept(ps, "!="))
            a = number_of(a.v != compare(ps).v);
        else
            break;
    }
    return a;
}

static struct val and_expr(struct parser *ps)
{
    struct val a = equality(ps);
    while (!ps->failed && accept(ps, "&&")) {
        struct val b = equality(ps);
        a = number_of(a.v != 0 && b.v != 0);
    }
    return a;
}

static struct val or_expr(struct parser *ps)
{
    struct val a = and_expr(ps);
    while (!ps->failed && accept(ps, "||")) {
        struct val b = and_expr(ps);
        a = number_of(a.v != 0 || b.v != 0);
    }
    return a;
}

static struct val ternary(struct parser *ps)
{
    if (++ps->depth > MAX_DEPTH)
        return fail(ps, "expression nested deeper than %d", MAX_DEPTH);
    struct val c = or_expr(ps);
    if (!ps->failed && accept(ps, "?")) {
        struct val a = ternary(ps);
        if (!accept(ps, ":"))
            return fail(ps, "missing ':' in 'c ? a : b'");
        struct val b = ternary(ps);
        c = c.v != 0 ? a : b;
    }
    ps->depth--;
    return c;
}

int memest_expr_eval(const char *s, memest_expr_lookup lookup, void *ctx, double *out,
                     bool *is_bool, char *errbuf, size_t errlen)
{
    struct parser ps = {.s = s, .p = s, .lookup = lookup, .ctx = ctx, .err = errbuf,
                        .errlen = errlen};
    struct val v = ternary(&ps);
    skip_ws(&ps);
    if (!ps.failed && *ps.p != '\0')
        fail(&ps, "unexpected '%c' at offset %d", *ps.p, (int)(ps.p - s));
    if (!ps.failed && !isfinite(v.v))
        fail(&ps, "result is not a finite number");
    if (ps.failed)
        return -1;
    *out = v.v;
    if (is_bool)
        *is_bool = v.is_bool;
    return 0;
}
