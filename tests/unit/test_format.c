/* test_format.c - number formats and strict parsing. */
#include "check.h"
#include "memest/format.h"

int main(void)
{
    char b[64];
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
    return CHECK_DONE();
}
