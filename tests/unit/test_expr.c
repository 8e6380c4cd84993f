/* test_expr.c - the argument expression language: exact integers beside
 * doubles, overflow errors, the decimal literal syntax, and the tags that
 * say which variable a value (or a fault) comes from. Expected values are
 * worked out by hand in the comments. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "memest/expr.h"

static const char tag_n[] = "n", tag_big[] = "big";

/* planes = 64, down = true, n = 0 and big = 2^52 + 1 (tagged), half = 0.5 */
static int lookup(void *ctx, const char *name, size_t len, struct memest_expr_val *val)
{
    (void)ctx;
    static const struct {
        const char *name;
        struct memest_expr_val v;
    } vars[] = {
        {"planes", {MEMEST_EXPR_INT, 64, 0, NULL}},
        {"down", {MEMEST_EXPR_BOOL, 1, 0, NULL}},
        {"n", {MEMEST_EXPR_INT, 0, 0, tag_n}},
        {"big", {MEMEST_EXPR_INT, 4503599627370497, 0, tag_big}},
        {"half", {MEMEST_EXPR_REAL, 0, 0.5, NULL}},
    };
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (strlen(vars[i].name) == len && memcmp(vars[i].name, name, len) == 0) {
            *val = vars[i].v;
            return 0;
        }
    return -1;
}

static char err[160];

static int eval(const char *s, struct memest_expr_val *v)
{
    err[0] = '\0';
    *v = (struct memest_expr_val){MEMEST_EXPR_INT, -12345, 0, NULL};
    return memest_expr_eval(s, lookup, NULL, v, err, sizeof err);
}

/* s evaluates to the integer `want`, exactly */
#define CHECK_INT(s, want)                                                     \
    do {                                                                       \
        struct memest_expr_val v_;                                             \
        CHECK_EQ_INT(eval(s, &v_), 0);                                         \
        CHECK_EQ_INT(v_.kind, MEMEST_EXPR_INT);                                \
        CHECK_EQ_INT(v_.i, (want));                                            \
    } while (0)

/* s evaluates to the real (double) `want` */
#define CHECK_REAL(s, want)                                                    \
    do {                                                                       \
        struct memest_expr_val v_;                                             \
        CHECK_EQ_INT(eval(s, &v_), 0);                                         \
        CHECK_EQ_INT(v_.kind, MEMEST_EXPR_REAL);                               \
        CHECK(v_.d == (want));                                                 \
    } while (0)

#define CHECK_BOOL(s, want)                                                    \
    do {                                                                       \
        struct memest_expr_val v_;                                             \
        CHECK_EQ_INT(eval(s, &v_), 0);                                         \
        CHECK_EQ_INT(v_.kind, MEMEST_EXPR_BOOL);                               \
        CHECK_EQ_INT(v_.i, (want));                                            \
    } while (0)

/* s fails (rc -1: the text is at fault, -2: the values) with a reason
 * containing `why`, the fault tagged `t` */
#define CHECK_FAILS(s, rc, why, t)                                             \
    do {                                                                       \
        struct memest_expr_val v_;                                             \
        CHECK_EQ_INT(eval(s, &v_), (rc));                                      \
        CHECK(strstr(err, (why)) != NULL);                                     \
        CHECK(v_.tag == (const void *)(t));                                    \
    } while (0)
#define CHECK_BAD(s, why) CHECK_FAILS(s, -1, why, NULL)
#define CHECK_FAULT(s, why, t) CHECK_FAILS(s, -2, why, t)

static void test_language(void)
{
    CHECK_INT("planes * 4", 256);
    CHECK_INT("1 + 2 * 3", 7);
    CHECK_INT("(1 + 2) * 3", 9);
    CHECK_INT("7 // 2", 3);
    CHECK_INT("-7 // 2", -4); /* floor division, as Python */
    CHECK_INT("7 // -2", -4);
    CHECK_INT("-7 // -2", 3);
    CHECK_REAL("7 / 2", 3.5);
    CHECK_INT("6 / 3", 2);    /* an exact quotient stays an integer */
    CHECK_REAL("-7 / 2", -3.5);
    CHECK_INT("7 % 3", 1);
    CHECK_INT("-7 % 3", 2);   /* the sign of the divisor, as Python */
    CHECK_INT("7 % -3", -2);
    CHECK_BOOL("2 < 3 && 3 <= 3", 1);
    CHECK_INT("down ? 2 : 1", 2);
    CHECK_INT("!down ? 2 : 1", 1);
    CHECK_BOOL("planes == 64 || false", 1);
    CHECK_INT("min(3, planes)", 3);
    CHECK_INT("max(3, planes)", 64);
    CHECK_INT("floor(7 / 2) + ceil(7 / 2)", 7); /* 3 + 4 */
    CHECK_INT("ceil(-7 / 2)", -3);
    CHECK_INT("  42  ", 42);
    CHECK_REAL("1e3", 1000);  /* a literal with an exponent is real */
    CHECK_REAL("2.5", 2.5);
    CHECK_REAL(".5", 0.5);
    CHECK_REAL("1 + half", 1.5);
    CHECK_REAL("min(2, 2.5)", 2); /* mixed: real */
    CHECK_REAL("floor(1e300)", 1e300); /* beyond 2^53: stays real */
    CHECK_INT("true + 1", 2);
    CHECK_INT("-down", -1);
    CHECK_BAD("", "ends too early");
    CHECK_BAD("planes *", "ends too early");
    CHECK_BAD("unknown + 1", "unknown variable 'unknown'");
    CHECK_FAULT("1 / 0", "division by zero", NULL);
    CHECK_FAULT("1.5 // 0.0", "division by zero", NULL);
    CHECK_BAD("(1 + 2", "missing ')'");
    CHECK_BAD("1 2", "unexpected '2'");
    CHECK_BAD("a ? 1", "unknown variable");
    CHECK_BAD("1e999", "number out of range");
    CHECK_FAULT("1e308 * 10", "not a finite number", NULL);
    /* nesting beyond the limit is an error, not a stack overflow */
    char deep[2100];
    memset(deep, '(', 1000);
    deep[1000] = '1';
    memset(deep + 1001, ')', 1000);
    deep[2001] = '\0';
    CHECK_BAD(deep, "nested deeper than 64");
}

/* Integers are exact where doubles round (the old evaluator's answers,
 * all in double, are in the comments). */
static void test_exact(void)
{
    /* 2^53 - 1 + 2 = 2^53 + 1 rounds to 2^53 in double: old 9007199254740990 */
    CHECK_INT("9007199254740991 + 2 - 2", 9007199254740991);
    /* (2^53 - 1) * 5 = 45035996273704955 rounds to ...952 in double, and
     * ...952 / 5 to 9007199254740990: old 9007199254740990 for both */
    CHECK_INT("(9007199254740991 * 5) // 5", 9007199254740991);
    CHECK_INT("(9007199254740991 * 5) / 5", 9007199254740991);
    /* (2^53 - 1) * 5 = 45035996273704955 = 7 * 6433713753386422 + 1 (old: 0) */
    CHECK_INT("(9007199254740991 * 5) % 7", 1);
    /* big = 2^52 + 1: big * 3 - big * 2 = big (double: 13510798882111491 is
     * not representable; old 4503599627370498) */
    CHECK_INT("big * 3 - big * 2", 4503599627370497);
    /* 2 * (2^53 - 1) + 1 = 18014398509481983 = 2^54 - 1: in double it rounds
     * to 2^54 and compares equal to it (old: 1) */
    CHECK_BOOL("9007199254740991 * 2 + 1 == 18014398509481984.0", 0);
    CHECK_BOOL("9007199254740991 * 2 + 1 < 18014398509481984.0", 1);
    CHECK_BOOL("9007199254740991 * 2 + 2 == 18014398509481984.0", 1);
    CHECK_INT("max(9007199254740991 * 2 + 1, 9007199254740991 * 2)", 18014398509481983);
    /* -2^20 * 2^20 * 2^20 * 8 = -2^63, the smallest int64, exactly */
    CHECK_INT("-1048576 * 1048576 * 1048576 * 8", INT64_MIN);
    CHECK_INT("(-1048576 * 1048576 * 1048576 * 8) % -1", 0);
    CHECK_INT("(-1048576 * 1048576 * 1048576 * 8) // 2", INT64_MIN / 2);
}

/* Overflows and out-of-range literals are errors, never a rounded number. */
static void test_overflow(void)
{
    /* (2^53 - 1)^2 is about 8.1e31: old 8.112963841460666e+31 */
    CHECK_FAULT("9007199254740991 * 9007199254740991", "integer overflow", NULL);
    CHECK_FAULT("1048576 * 1048576 * 1048576 * 8", "integer overflow", NULL); /* 2^63 */
    CHECK_FAULT("-(-1048576 * 1048576 * 1048576 * 8)", "integer overflow", NULL);
    CHECK_FAULT("(-1048576 * 1048576 * 1048576 * 8) // -1", "integer overflow", NULL);
    CHECK_FAULT("(-1048576 * 1048576 * 1048576 * 8) / -1", "integer overflow", NULL);
    CHECK_FAULT("-1048576 * 1048576 * 1048576 * 8 - 1", "integer overflow", NULL);
    CHECK_FAULT("big * big * 4", "integer overflow", tag_big);
    /* literals: integers below 2^53 only, decimal only */
    CHECK_INT("9007199254740991", 9007199254740991);
    CHECK_BAD("9007199254740992", "the integer 9007199254740992 is too large");
    CHECK_BAD("10000000000000003 - 10000000000000000", "is too large"); /* old: 4 */
    CHECK_BAD("99999999999999999999999", "is too large");
    CHECK_BAD("0x10", "malformed number '0x10'"); /* old: 16 */
    CHECK_BAD("0X1p3", "malformed number");      /* old: 8 */
    CHECK_BAD("1.5.2", "malformed number '1.5.2'");
    CHECK_BAD("2e", "malformed number '2e'");
    CHECK_BAD("3abc", "malformed number '3abc'");
    CHECK_BAD("inf", "unknown variable 'inf'");
    CHECK_BAD("nan", "unknown variable 'nan'");
}

/* Tags: a value carries the tag of the variables it was computed from, a
 * fault the tag of the values that caused it. */
static void test_tags(void)
{
    struct memest_expr_val v;
    CHECK(eval("n * 2 + 1", &v) == 0 && v.tag == tag_n);
    CHECK(eval("planes * 2", &v) == 0 && v.tag == NULL);
    CHECK(eval("n > 3 ? 1 : 0", &v) == 0 && v.tag == tag_n && v.i == 0); /* the choice */
    CHECK(eval("min(planes, big)", &v) == 0 && v.tag == tag_big && v.i == 64);
    CHECK_FAULT("4 // n", "division by zero", tag_n);
    CHECK_FAULT("n // 0", "division by zero", NULL); /* the divisor is the file's */
    CHECK_BAD("n +", "ends too early");      /* the text is at fault */
    CHECK_BAD("n + nope", "unknown variable");
}

static void test_numbers(void)
{
    struct memest_expr_val v = memest_expr_number(3.0);
    CHECK(v.kind == MEMEST_EXPR_INT && v.i == 3);
    v = memest_expr_number(-0.0);
    CHECK(v.kind == MEMEST_EXPR_INT && v.i == 0);
    v = memest_expr_number(9007199254740992.0); /* 2^53: not an integer of the format */
    CHECK(v.kind == MEMEST_EXPR_REAL && v.d == 9007199254740992.0);
    v = memest_expr_number(2.5);
    CHECK(v.kind == MEMEST_EXPR_REAL && v.d == 2.5);
    char buf[32];
    v = (struct memest_expr_val){MEMEST_EXPR_REAL, 0, 3.0000000000000004, NULL};
    CHECK_STR_EQ(memest_expr_str(&v, buf, sizeof buf), "3.0000000000000004");
    v.d = 0.1;
    CHECK_STR_EQ(memest_expr_str(&v, buf, sizeof buf), "0.1");
    v = (struct memest_expr_val){MEMEST_EXPR_INT, INT64_MIN, 0, NULL};
    CHECK_STR_EQ(memest_expr_str(&v, buf, sizeof buf), "-9223372036854775808");
    v = (struct memest_expr_val){MEMEST_EXPR_BOOL, 1, 0, NULL};
    CHECK_STR_EQ(memest_expr_str(&v, buf, sizeof buf), "true");
    CHECK(memest_expr_real(&(struct memest_expr_val){MEMEST_EXPR_INT, 7, 0, NULL}) == 7.0);
}

int main(void)
{
    test_language();
    test_exact();
    test_overflow();
    test_tags();
    test_numbers();
    return CHECK_DONE();
}
