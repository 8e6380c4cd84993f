/* expr.c - recursive-descent evaluator for argument expressions, with exact
 * 64-bit integers beside doubles (the rules are in expr.h). */
#include "memest/expr.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "memest/format.h"

#define MAX_DEPTH 64

typedef struct memest_expr_val val;

struct parser {
    const char *s, *p;
    memest_expr_lookup lookup;
    void *ctx;
    char *err;
    size_t errlen;
    int depth;
    bool failed;
    bool value_fault;      /* the values made it fail, not the text */
    const void *fault_tag; /* the tag of those values */
};

static val mk_int(int64_t i, const void *tag) { return (val){MEMEST_EXPR_INT, i, 0, tag}; }
static val mk_real(double d, const void *tag) { return (val){MEMEST_EXPR_REAL, 0, d, tag}; }
static val mk_bool(bool b, const void *tag) { return (val){MEMEST_EXPR_BOOL, b, 0, tag}; }
static bool is_real(val v) { return v.kind == MEMEST_EXPR_REAL; }
static bool truth(val v) { return is_real(v) ? v.d != 0 : v.i != 0; }
static const void *tag2(val a, val b) { return a.tag ? a.tag : b.tag; }

double memest_expr_real(const struct memest_expr_val *v)
{
    return v->kind == MEMEST_EXPR_REAL ? v->d : (double)v->i;
}

struct memest_expr_val memest_expr_number(double d)
{
    if (d == floor(d) && fabs(d) < (double)MEMEST_EXPR_INT_LIMIT)
        return mk_int((int64_t)d, NULL); /* also makes -0 an integer 0 */
    return mk_real(d, NULL);
}

char *memest_expr_str(const struct memest_expr_val *v, char *buf, size_t n)
{
    if (v->kind == MEMEST_EXPR_REAL)
        return memest_fmt_double(v->d, buf, n);
    if (v->kind == MEMEST_EXPR_BOOL)
        snprintf(buf, n, "%s", v->i ? "true" : "false");
    else
        snprintf(buf, n, "%lld", (long long)v->i);
    return buf;
}

/* Records the first error (a fault of the values, with their tag, or of the
 * text) and returns a dummy value: evaluation goes on to the end of the
 * current level, and every later error is ignored. */
static val vfail(struct parser *ps, bool value, const void *tag, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

static val vfail(struct parser *ps, bool value, const void *tag, const char *fmt, va_list ap)
{
    if (!ps->failed) {
        ps->failed = true;
        ps->value_fault = value;
        ps->fault_tag = tag;
        vsnprintf(ps->err, ps->errlen, fmt, ap);
    }
    return mk_int(0, NULL);
}

static val fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static val fail_value(struct parser *ps, const void *tag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A fault of the text: syntax, an unknown name, a bad literal, nesting. */
static val fail(struct parser *ps, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    val v = vfail(ps, false, NULL, fmt, ap);
    va_end(ap);
    return v;
}

/* A fault of the values (tagged `tag`): division by zero, an overflow. */
static val fail_value(struct parser *ps, const void *tag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    val v = vfail(ps, true, tag, fmt, ap);
    va_end(ap);
    return v;
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

/* ---- arithmetic ---- */

enum op { ADD, SUB, MUL, DIV, FLOORDIV, MOD };
static const char *const op_text[] = {"+", "-", "*", "/", "//", "%"};

/* a op b: exact on integers (booleans are 0 and 1), double arithmetic when
 * either is real; / // % are floor-based as in Python. */
static val arith(struct parser *ps, enum op op, val a, val b)
{
    const void *tag = tag2(a, b);
    if (ps->failed)
        return a;
    if (op >= DIV && (is_real(b) ? b.d == 0 : b.i == 0))
        return fail_value(ps, b.tag, "division by zero");
    if (is_real(a) || is_real(b)) {
        double x = memest_expr_real(&a), y = memest_expr_real(&b);
        switch (op) {
        case ADD: return mk_real(x + y, tag);
        case SUB: return mk_real(x - y, tag);
        case MUL: return mk_real(x * y, tag);
        case DIV: return mk_real(x / y, tag);
        case FLOORDIV: return mk_real(floor(x / y), tag);
        case MOD: return mk_real(x - y * floor(x / y), tag);
        }
    }
    int64_t x = a.i, y = b.i, r = 0;
    bool over = false;
    switch (op) {
    case ADD:
        over = __builtin_add_overflow(x, y, &r);
        break;
    case SUB:
        over = __builtin_sub_overflow(x, y, &r);
        break;
    case MUL:
        over = __builtin_mul_overflow(x, y, &r);
        break;
    case DIV:
    case FLOORDIV:
        if (y == -1) { /* x / -1 is -x; x % -1 (UB for INT64_MIN) is 0 */
            over = __builtin_sub_overflow((int64_t)0, x, &r);
            break;
        }
        if (op == DIV && x % y != 0)
            return mk_real((double)x / (double)y, tag);
        r = x / y - (x % y != 0 && (x % y < 0) != (y < 0));
        break;
    case MOD:
        if (y != -1) {
            r = x % y;
            if (r != 0 && (r < 0) != (y < 0))
                r += y;
        }
        break;
    }
    if (over)
        return fail_value(ps, tag, "integer overflow: %lld %s %lld is beyond 64-bit integers",
                       (long long)x, op_text[op], (long long)y);
    return mk_int(r, tag);
}

/* Compares a and b exactly (an integer with a double too): -1, 0 or 1, and
 * 2 when they are unordered (a NaN). */
static int cmp(val a, val b)
{
    if (!is_real(a) && !is_real(b))
        return (a.i > b.i) - (a.i < b.i);
    if (is_real(a) && is_real(b))
        return isnan(a.d) || isnan(b.d) ? 2 : (a.d > b.d) - (a.d < b.d);
    if (is_real(a)) {
        int c = cmp(b, a);
        return c == 2 ? 2 : -c;
    }
    double d = b.d;
    if (isnan(d))
        return 2;
    if (d >= 9223372036854775808.0)
        return -1;
    if (d < -9223372036854775808.0)
        return 1;
    double f = floor(d); /* in [-2^63, 2^63): the cast is exact */
    int64_t t = (int64_t)f;
    if (a.i != t)
        return a.i < t ? -1 : 1;
    return f < d ? -1 : 0;
}

/* ---- the grammar ---- */

static val ternary(struct parser *ps);

static val call(struct parser *ps, const char *name, size_t len)
{
    val a = ternary(ps), b = mk_int(0, NULL);
    bool two = (len == 3 && (strncmp(name, "min", 3) == 0 || strncmp(name, "max", 3) == 0));
    if (two) {
        if (!accept(ps, ","))
            return fail(ps, "%.*s() takes two arguments", (int)len, name);
        b = ternary(ps);
    }
    if (!accept(ps, ")"))
        return fail(ps, "missing ')' after the arguments of %.*s()", (int)len, name);
    if (two) {
        int c = cmp(a, b);
        val pick = (strncmp(name, "min", 3) == 0 ? c == -1 : c == 1) ? a : b;
        if (is_real(a) || is_real(b))
            return mk_real(memest_expr_real(&pick), tag2(a, b));
        return mk_int(pick.i, tag2(a, b));
    }
    if (!is_real(a))
        return mk_int(a.i, a.tag);
    double f = len == 5 ? floor(a.d) : ceil(a.d); /* floor, else ceil */
    if (fabs(f) < (double)MEMEST_EXPR_INT_LIMIT)
        return mk_int((int64_t)f, a.tag);
    return mk_real(f, a.tag);
}

static bool word_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

static val number(struct parser *ps)
{
    const char *p = ps->p;
    struct memest_decimal n;
    memest_decimal_read(p, &n);
    const char *q = p + n.len;
    if (word_char(*q) || *q == '.') {
        while (word_char(*q) || *q == '.')
            q++;
        return fail(ps, "malformed number '%.*s' (numbers are decimal, such as 12, 0.5 or 1e-3)",
                    q - p > 40 ? 40 : (int)(q - p), p);
    }
    ps->p = q;
    if (n.is_int) {
        if (!n.int_ok || n.i >= MEMEST_EXPR_INT_LIMIT)
            return fail(ps, "the integer %.*s%s is too large (integers must be between -2^53 and "
                        "2^53, exclusive)", n.len > 40 ? 37 : (int)n.len, p,
                        n.len > 40 ? "..." : "");
        return mk_int(n.i, NULL);
    }
    if (!n.real_ok)
        return fail(ps, "number out of range");
    return mk_real(n.d, NULL);
}

static val primary(struct parser *ps)
{
    skip_ws(ps);
    const char *p = ps->p;
    if (*p == '(') {
        ps->p++;
        val v = ternary(ps);
        if (!accept(ps, ")"))
            return fail(ps, "missing ')'");
        return v;
    }
    if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1])))
        return number(ps);
    if (isalpha((unsigned char)*p) || *p == '_') {
        const char *q = p;
        while (word_char(*q))
            q++;
        size_t len = (size_t)(q - p);
        ps->p = q;
        if (len == 4 && strncmp(p, "true", 4) == 0)
            return mk_bool(true, NULL);
        if (len == 5 && strncmp(p, "false", 5) == 0)
            return mk_bool(false, NULL);
        if (((len == 3 && (!strncmp(p, "min", 3) || !strncmp(p, "max", 3))) ||
             (len == 5 && !strncmp(p, "floor", 5)) || (len == 4 && !strncmp(p, "ceil", 4))) &&
            accept(ps, "("))
            return call(ps, p, len);
        val v = mk_int(0, NULL);
        if (ps->lookup(ps->ctx, p, len, &v) != 0)
            return fail(ps, "unknown variable '%.*s'", (int)len, p);
        return v;
    }
    if (*p == '\0')
        return fail(ps, "expression ends too early");
    return fail(ps, "unexpected '%c'", *p);
}

static val unary(struct parser *ps)
{
    if (++ps->depth > MAX_DEPTH)
        return fail(ps, "expression nested deeper than %d", MAX_DEPTH);
    val v;
    if (accept(ps, "-")) {
        v = unary(ps);
        if (is_real(v))
            v = mk_real(-v.d, v.tag);
        else if (v.i == INT64_MIN)
            v = fail_value(ps, v.tag, "integer overflow: -(%lld) is beyond 64-bit integers",
                        (long long)v.i);
        else
            v = mk_int(-v.i, v.tag);
    } else if (accept(ps, "+")) {
        v = unary(ps);
    } else if (accept(ps, "!")) {
        v = unary(ps);
        v = mk_bool(!truth(v), v.tag);
    } else {
        v = primary(ps);
    }
    ps->depth--;
    return v;
}

static val term(struct parser *ps)
{
    val a = unary(ps);
    while (!ps->failed) {
        enum op op;
        if (accept(ps, "*"))
            op = MUL;
        else if (accept(ps, "//"))
            op = FLOORDIV;
        else if (accept(ps, "/"))
            op = DIV;
        else if (accept(ps, "%"))
            op = MOD;
        else
            break;
        val b = unary(ps);
        a = arith(ps, op, a, b);
    }
    return a;
}

static val sum(struct parser *ps)
{
    val a = term(ps);
    while (!ps->failed) {
        enum op op;
        if (accept(ps, "+"))
            op = ADD;
        else if (accept(ps, "-"))
            op = SUB;
        else
            break;
        val b = term(ps);
        a = arith(ps, op, a, b);
    }
    return a;
}

static val compare(struct parser *ps)
{
    val a = sum(ps);
    while (!ps->failed) {
        bool le = accept(ps, "<="), ge = !le && accept(ps, ">=");
        bool lt = !le && !ge && accept(ps, "<"), gt = !le && !ge && !lt && accept(ps, ">");
        if (!le && !ge && !lt && !gt)
            break;
        val b = sum(ps);
        int c = cmp(a, b);
        bool r = le ? c == -1 || c == 0 : ge ? c == 1 || c == 0 : lt ? c == -1 : c == 1;
        a = mk_bool(r, tag2(a, b));
    }
    return a;
}

static val equality(struct parser *ps)
{
    val a = compare(ps);
    while (!ps->failed) {
        bool eq = accept(ps, "==");
        if (!eq && !accept(ps, "!="))
            break;
        val b = compare(ps);
        a = mk_bool((cmp(a, b) == 0) == eq, tag2(a, b));
    }
    return a;
}

static val and_expr(struct parser *ps)
{
    val a = equality(ps);
    while (!ps->failed && accept(ps, "&&")) {
        val b = equality(ps);
        a = mk_bool(truth(a) && truth(b), tag2(a, b));
    }
    return a;
}

static val or_expr(struct parser *ps)
{
    val a = and_expr(ps);
    while (!ps->failed && accept(ps, "||")) {
        val b = and_expr(ps);
        a = mk_bool(truth(a) || truth(b), tag2(a, b));
    }
    return a;
}

static val ternary(struct parser *ps)
{
    if (++ps->depth > MAX_DEPTH)
        return fail(ps, "expression nested deeper than %d", MAX_DEPTH);
    val c = or_expr(ps);
    if (!ps->failed && accept(ps, "?")) {
        val a = ternary(ps);
        if (!accept(ps, ":"))
            return fail(ps, "missing ':' in 'c ? a : b'");
        val b = ternary(ps);
        val r = truth(c) ? a : b;
        r.tag = r.tag ? r.tag : c.tag; /* the choice depends on c */
        c = r;
    }
    ps->depth--;
    return c;
}

int memest_expr_eval(const char *s, memest_expr_lookup lookup, void *ctx,
                     struct memest_expr_val *out, char *errbuf, size_t errlen)
{
    struct parser ps = {.s = s, .p = s, .lookup = lookup, .ctx = ctx, .err = errbuf,
                        .errlen = errlen};
    val v = ternary(&ps);
    skip_ws(&ps);
    if (!ps.failed && *ps.p != '\0')
        fail(&ps, "unexpected '%c' at offset %d", *ps.p, (int)(ps.p - s));
    if (!ps.failed && is_real(v) && !isfinite(v.d))
        fail_value(&ps, v.tag, "result is not a finite number");
    if (ps.failed) {
        *out = mk_int(0, ps.fault_tag);
        return ps.value_fault ? -2 : -1;
    }
    *out = v;
    return 0;
}
