/* test_format.c - number formats and strict parsing. */
#include "check.h"
#include "memest/format.h"

/* One number syntax for every command-line number: decimal only. */
static void test_one_syntax(void)
{
    double d;
    uint64_t v;
    /* reals: fraction and exponent, no hex, no sign but where negatives are
     * allowed, no spaces, nothing after (strtod took "0x10", "+5", "0x1p-1") */
    CHECK(memest_parse_double("5", 0, 99, &d) == 0 && d == 5);
    CHECK(memest_parse_double("1e-3", 0, 1, &d) == 0 && d == 0.001);
    CHECK(memest_parse_double("2.5E1", 0, 99, &d) == 0 && d == 25);
    CHECK(memest_parse_double(".5", 0, 1, &d) == 0 && d == 0.5);
    CHECK(memest_parse_double("0x10", 0, 99, &d) != 0);
    CHECK(memest_parse_double("0x1p-1", 0, 1, &d) != 0);
    CHECK(memest_parse_double("+5", 0, 99, &d) != 0);
    CHECK(memest_parse_double("-0.5", 0, 1, &d) != 0);
    CHECK(memest_parse_double("-0.5", -1, 1, &d) == 0 && d == -0.5);
    CHECK(memest_parse_double(" 5", 0, 99, &d) != 0);
    CHECK(memest_parse_double("5 ", 0, 99, &d) != 0);
    CHECK(memest_parse_double("", 0, 99, &d) != 0);
    CHECK(memest_parse_double("inf", 0, 1e300, &d) != 0);
    CHECK(memest_parse_double("infinity", 0, 1e300, &d) != 0);
    CHECK(memest_parse_double("1e999", 0, 1e300, &d) != 0);
    CHECK(memest_parse_double("1e-400", 0, 1, &d) != 0); /* underflows to 0 */
    CHECK(memest_parse_double("1e", 0, 99, &d) != 0);
    CHECK(memest_parse_double(".", 0, 99, &d) != 0);
    /* integers: digits only */
    CHECK(memest_parse_u64("007", 1, 100, &v) == 0 && v == 7);
    CHECK(memest_parse_u64("+5", 1, 100, &v) != 0);
    CHECK(memest_parse_u64("0x10", 1, 100, &v) != 0);
    CHECK(memest_parse_u64("5.0", 1, 100, &v) != 0);
    CHECK(memest_parse_u64("", 1, 100, &v) != 0);
    CHECK(memest_parse_u64("9223372036854775807", 1, INT64_MAX, &v) == 0 && v == INT64_MAX);
    /* sizes: no exponent; plain bytes are digits */
    CHECK(memest_parse_size("1.5", &v) != 0);
    CHECK(memest_parse_size(".5KiB", &v) == 0 && v == 512);
    CHECK(memest_parse_size("1e3", &v) != 0);
    CHECK(memest_parse_size("9223372036854775807", &v) == 0 && v == INT64_MAX);
    CHECK(memest_parse_size("9223372036854775808", &v) != 0);
    CHECK(memest_parse_size("8388608TiB", &v) != 0); /* 2^63 */
}

static void test_decimal_read(void)
{
    struct memest_decimal n;
    memest_decimal_read("12abc", &n);
    CHECK(n.len == 2 && n.is_int && n.int_ok && n.i == 12 && n.real_ok && n.d == 12);
    memest_decimal_read("1.5e3x", &n);
    CHECK(n.len == 5 && !n.is_int && n.exponent && n.real_ok && n.d == 1500);
    memest_decimal_read("0x10", &n); /* the number is the 0; the caller refuses the x */
    CHECK(n.len == 1 && n.is_int && n.i == 0 && n.real_ok && n.d == 0);
    memest_decimal_read("1e+", &n);
    CHECK(n.len == 1 && n.is_int && n.i == 1);
    memest_decimal_read("99999999999999999999", &n);
    CHECK(n.len == 20 && n.is_int && !n.int_ok && n.real_ok && n.d == 1e20);
    memest_decimal_read("-1", &n);
    CHECK(n.len == 0);
    memest_decimal_read(".e3", &n);
    CHECK(n.len == 0);
    memest_decimal_read("5.", &n);
    CHECK(n.len == 2 && !n.is_int && n.d == 5);
    memest_decimal_read("1e400", &n);
    CHECK(n.len == 5 && !n.real_ok);
}

/* The shortest of %.15g, %.16g, %.17g that reads back as the same double. */
static void test_fmt_double(void)
{
    char b[32];
    CHECK_STR_EQ(memest_fmt_double(3.0000000000000004, b, sizeof b), "3.0000000000000004");
    CHECK_STR_EQ(memest_fmt_double(0.1, b, sizeof b), "0.1");
    CHECK_STR_EQ(memest_fmt_double(2.5, b, sizeof b), "2.5");
    CHECK_STR_EQ(memest_fmt_double(1.0 / 3.0, b, sizeof b), "0.3333333333333333");
    CHECK_STR_EQ(memest_fmt_double(9007199254740992.0, b, sizeof b), "9007199254740992");
    CHECK_STR_EQ(memest_fmt_double(1e300, b, sizeof b), "1e+300");
    CHECK_STR_EQ(memest_fmt_double(-0.0, b, sizeof b), "-0");
}

/* The one IEC formatter (memest_fmt_iec): the unit is the largest in which
 * the figure, rounded to the decimals asked for, stays below 1024. */
static void test_iec(void)
{
    char b[64];
    CHECK_STR_EQ(memest_fmt_iec(1023, 1, b, sizeof b), "1023 B");
    CHECK_STR_EQ(memest_fmt_iec(1024, 1, b, sizeof b), "1.0 KiB");
    /* 1048524 / 1024 = 1023.94921875: "1023.9"; 1048525 / 1024 =
     * 1023.9501953125 rounds to 1024.0, so a MiB: 1048525 / 2^20 = 0.99995 */
    CHECK_STR_EQ(memest_fmt_iec(1048524, 1, b, sizeof b), "1023.9 KiB");
    CHECK_STR_EQ(memest_fmt_iec(1048525, 1, b, sizeof b), "1.0 MiB");
    /* two decimals: 1048570 / 1024 = 1023.994140625, 1048571 / 1024 =
     * 1023.9951171875 (rounds to 1024.00) */
    CHECK_STR_EQ(memest_fmt_iec(1048570, 2, b, sizeof b), "1023.99 KiB");
    CHECK_STR_EQ(memest_fmt_iec(1048571, 2, b, sizeof b), "1.00 MiB");
    /* 40 GiB less 1 MiB = 40959 MiB = 39.99902 GiB */
    CHECK_STR_EQ(memest_fmt_iec(40959ull << 20, 1, b, sizeof b), "40.0 GiB");
    CHECK_STR_EQ(memest_fmt_iec(40959ull << 20, 4, b, sizeof b), "39.9990 GiB");
    CHECK_STR_EQ(memest_fmt_iec(UINT64_MAX, 2, b, sizeof b), "16.00 EiB");   /* 2^64 / 2^60 */
    CHECK_STR_EQ(memest_fmt_iec(3ull << 50, 0, b, sizeof b), "3 PiB");
}

int main(void)
{
    char b[64];
    test_iec();
    CHECK_STR_EQ(memest_fmt_bytes(512, b, sizeof b), "512 B");
    CHECK_STR_EQ(memest_fmt_bytes(1536, b, sizeof b), "1.50 KiB");
    CHECK_STR_EQ(memest_fmt_bytes(3ull << 30, b, sizeof b), "3.00 GiB");
    CHECK_STR_EQ(memest_fmt_count(25557032, b, sizeof b), "25,557,032");
    CHECK_STR_EQ(memest_fmt_count(0, b, sizeof b), "0");
    CHECK_STR_EQ(memest_fmt_count(999, b, sizeof b), "999");
    CHECK_STR_EQ(memest_fmt_count(1000, b, sizeof b), "1,000");

    uint64_t v;
    CHECK(memest_parse_u64("32", 1, 100, &v) == 0 && v == 32);
    CHECK(memest_parse_u64("0", 1, 100, &v) != 0);
    CHECK(memest_parse_u64("-1", 1, 100, &v) != 0);
    CHECK(memest_parse_u64("1e99", 1, 100, &v) != 0);
    CHECK(memest_parse_u64("12x", 1, 100, &v) != 0);
    CHECK(memest_parse_u64(" 12", 1, 100, &v) != 0);
    CHECK(memest_parse_u64("99999999999999999999999", 1, UINT64_MAX, &v) != 0);

    CHECK(memest_parse_size("24GiB", &v) == 0 && v == 24ull * 1024 * 1024 * 1024);
    CHECK(memest_parse_size("24GB", &v) == 0 && v == 24000000000ull);
    CHECK(memest_parse_size("500MiB", &v) == 0 && v == 500ull * 1024 * 1024);
    CHECK(memest_parse_size("1.5KiB", &v) == 0 && v == 1536);
    CHECK(memest_parse_size("4096", &v) == 0 && v == 4096);
    CHECK(memest_parse_size("4096B", &v) == 0 && v == 4096);
    CHECK(memest_parse_size("24 GiB", &v) != 0);
    CHECK(memest_parse_size("24gib", &v) != 0);
    CHECK(memest_parse_size("-1GB", &v) != 0);
    CHECK(memest_parse_size("1.3B", &v) != 0);
    CHECK(memest_parse_size("1e30GB", &v) != 0);
    CHECK(memest_parse_size("GB", &v) != 0);
    CHECK(memest_parse_size("1e3GiB", &v) != 0);   /* no exponents */
    CHECK(memest_parse_size("0x10GiB", &v) != 0);  /* no hex */
    CHECK(memest_parse_size("24GiBs", &v) != 0);
    CHECK(memest_parse_size("64MiB", &v) == 0 && v == 64ull << 20);

    double d;
    CHECK(memest_parse_double("0.9", 0, 1, &d) == 0 && d == 0.9);
    CHECK(memest_parse_double("nan", 0, 1, &d) != 0);
    CHECK(memest_parse_double("2", 0, 1, &d) != 0);
    test_one_syntax();
    test_decimal_read();
    test_fmt_double();
    return CHECK_DONE();
}
