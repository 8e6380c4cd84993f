/* test_expr.c - the argument expression language. */
#include <string.h>

#include "check.h"
#include "memest/expr.h"

static int lookup(void *ctx, const char *name, size_t len, double *val, bool *is_bool)
{
    (void)ctx;
    if (len == 6 && memcmp(name, "planes", 6) == 0) {
        *val = 64;
        *is_bool = false;
        return 0;
    }
    if (len == 4 && memcmp(name, "down", 4) == 0) {
        *val = 1;
        *is_bool = true;
        return 0;
    }
    return -1;
}

static double eval(const char *s, int *rc)
{
    double v = -12345;
    bool b;
    char err[128];
    *rc = memest_expr_eval(s, lookup, NULL, &v, &b, err, sizeof err);
    return v;
}

#define CHECK_EVAL(s, want)                 \
    do {                                    \
        int rc_;                            \
        double v_ = eval(s, &rc_);          \
        CHECK_EQ_INT(rc_, 0);               \
        CHECK(v_ == (want));                \
    } while (0)

#define CHECK_BAD(s)                        \
    do {                                    \
        int rc_;                            \
        eval(s, &rc_);                      \
        CHECK_EQ_INT(rc_, -1);              \
    } while (0)

int main(void)
{
    CHECK_EVAL("planes * 4", 256);
    CHECK_EVAL("1 + 2 * 3", 7);
    CHECK_EVAL("(1 + 2) * 3", 9);
    CHECK_EVAL("7 // 2", 3);
    CHECK_EVAL("-7 // 2", -4); /* floor division, as Python */
    CHECK_EVAL("7 / 2", 3.5);
    CHECK_EVAL("7 % 3", 1);
    CHECK_EVAL("2 < 3 && 3 <= 3", 1);
    CHECK_EVAL("down ? 2 : 1", 2);
    CHECK_EVAL("!down ? 2 : 1", 1);
    CHECK_EVAL("planes == 64 || false", 1);
    CHECK_EVAL("min(3, planes)", 3);
    CHECK_EVAL("max(3, planes)", 64);
    CHECK_EVAL("floor(7 / 2) + ceil(7 / 2)", 7);
    CHECK_EVAL("  42  ", 42);
    CHECK_EVAL("1e3", 1000);
    CHECK_BAD("");
    CHECK_BAD("planes *");
    CHECK_BAD("unknown + 1");
    CHECK_BAD("1 / 0");
    CHECK_BAD("(1 + 2");
    CHECK_BAD("1 2");
    CHECK_BAD("a ? 1");
    CHECK_BAD("1e999");
    /* nesting beyond the limit is an error, not a stack overflow */
    char deep[2100];
    memset(deep, '(', 1000);
    deep[1000] = '1';
    memset(deep + 1001, ')', 1000);
    deep[2001] = '\0';
    CHECK_BAD(deep);
    return CHECK_DONE();
}
