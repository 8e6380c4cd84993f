/* test_jsonw.c - the JSON writer: layout, escaping, numbers. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "memest/jsonw.h"

struct buf {
    char *data;
    size_t len;
    FILE *f;
};

static struct memest_jsonw *open_buf(struct buf *b, struct memest_jsonw *w, bool pretty)
{
    b->data = NULL;
    b->len = 0;
    b->f = open_memstream(&b->data, &b->len);
    memest_jsonw_init(w, b->f, pretty);
    return w;
}

/* Closes the stream; the caller frees b->data. */
static const char *close_buf(struct buf *b)
{
    fclose(b->f);
    return b->data;
}

static void write_sample(struct memest_jsonw *w)
{
    memest_jsonw_obj_begin(w, NULL);
    memest_jsonw_str(w, "name", "resnet");
    memest_jsonw_u64(w, "big", UINT64_MAX);
    memest_jsonw_i64(w, "neg", INT64_MIN);
    memest_jsonw_f64(w, "f", 0.5);
    memest_jsonw_f64(w, "inf", INFINITY);
    memest_jsonw_bool(w, "t", true);
    memest_jsonw_null(w, "n");
    memest_jsonw_str(w, "s", NULL);
    memest_jsonw_arr_begin(w, "list");
    memest_jsonw_u64(w, NULL, 1);
    memest_jsonw_obj_begin(w, NULL);
    memest_jsonw_obj_end(w);
    memest_jsonw_arr_begin(w, NULL);
    memest_jsonw_arr_end(w);
    memest_jsonw_obj_begin(w, NULL);
    memest_jsonw_u64(w, "x", 2);
    memest_jsonw_obj_end(w);
    memest_jsonw_arr_end(w);
    memest_jsonw_obj_end(w);
    memest_jsonw_finish(w);
}

static void test_compact(void)
{
    struct buf b;
    struct memest_jsonw w;
    write_sample(open_buf(&b, &w, false));
    CHECK_STR_EQ(close_buf(&b),
                 "{\"name\":\"resnet\",\"big\":18446744073709551615,"
                 "\"neg\":-9223372036854775808,\"f\":0.5,\"inf\":null,\"t\":true,"
                 "\"n\":null,\"s\":null,\"list\":[1,{},[],{\"x\":2}]}\n");
    free(b.data);
}

static void test_pretty(void)
{
    struct buf b;
    struct memest_jsonw w;
    write_sample(open_buf(&b, &w, true));
    CHECK_STR_EQ(close_buf(&b),
                 "{\n"
                 "  \"name\": \"resnet\",\n"
                 "  \"big\": 18446744073709551615,\n"
                 "  \"neg\": -9223372036854775808,\n"
                 "  \"f\": 0.5,\n"
                 "  \"inf\": null,\n"
                 "  \"t\": true,\n"
                 "  \"n\": null,\n"
                 "  \"s\": null,\n"
                 "  \"list\": [\n"
                 "    1,\n"
                 "    {},\n"
                 "    [],\n"
                 "    {\n"
                 "      \"x\": 2\n"
                 "    }\n"
                 "  ]\n"
                 "}\n");
    free(b.data);

    write_sample(open_buf(&b, &w, true));   /* the writer is reusable */
    free((char *)close_buf(&b));
    open_buf(&b, &w, true);
    memest_jsonw_obj_begin(&w, NULL);
    memest_jsonw_obj_end(&w);
    memest_jsonw_finish(&w);
    CHECK_STR_EQ(close_buf(&b), "{}\n");
    free(b.data);
}

static void test_escaping(void)
{
    struct buf b;
    struct memest_jsonw w;
    open_buf(&b, &w, false);
    memest_jsonw_arr_begin(&w, NULL);
    memest_jsonw_str(&w, NULL, "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f");
    memest_jsonw_str(&w, NULL, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");  /* valid UTF-8 */
    memest_jsonw_str(&w, NULL, "a\xff" "b\xc3" "c\xc0\xaf" "d\xed\xa0\x80" "e\xf4\x90\x80\x80");
    /* C1 CSI, a right-to-left override, the line separator, a noncharacter:
     * \u escapes, which a reader decodes back and a terminal ignores */
    memest_jsonw_str(&w, NULL, "\xc2\x9b" "31m \xe2\x80\xae \xe2\x80\xa8 \xef\xbf\xbf \xc2\xa0");
    memest_jsonw_arr_end(&w);
    memest_jsonw_obj_begin(&w, NULL);   /* escaped keys */
    memest_jsonw_u64(&w, "k\"\n", 1);
    memest_jsonw_obj_end(&w);
    memest_jsonw_finish(&w);
    CHECK_STR_EQ(close_buf(&b),
                 "[\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f\","
                 "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\","
                 "\"a\\ufffdb\\ufffdc\\ufffd\\ufffdd\\ufffd\\ufffd\\ufffde"
                 "\\ufffd\\ufffd\\ufffd\\ufffd\","
                 "\"\\u009b31m \\u202e \\u2028 \\uffff \xc2\xa0\"]{\"k\\\"\\n\":1}\n");
    free(b.data);
}

static void test_numbers(void)
{
    struct buf b;
    struct memest_jsonw w;
    open_buf(&b, &w, false);
    memest_jsonw_arr_begin(&w, NULL);
    memest_jsonw_f64(&w, NULL, 0.1);
    memest_jsonw_f64(&w, NULL, 1e300);
    memest_jsonw_f64(&w, NULL, NAN);
    memest_jsonw_f64(&w, NULL, -INFINITY);
    memest_jsonw_f64(&w, NULL, 3.0);
    memest_jsonw_u64(&w, NULL, 0);
    memest_jsonw_i64(&w, NULL, -1);
    memest_jsonw_arr_end(&w);
    memest_jsonw_finish(&w);
    const char *s = close_buf(&b);
    CHECK_STR_EQ(s, "[0.10000000000000001,1.0000000000000001e+300,null,null,3,0,-1]\n");
    free(b.data);
}

/* memest_jsonw_count: an integer when in [0, 9.2e18), rounded to the
 * nearest; %.17g otherwise. */
static void test_count(void)
{
    struct buf b;
    struct memest_jsonw w;
    open_buf(&b, &w, false);
    memest_jsonw_arr_begin(&w, NULL);
    memest_jsonw_count(&w, NULL, 4089446400.0);
    memest_jsonw_count(&w, NULL, 2.5);           /* llround: half away from zero */
    memest_jsonw_count(&w, NULL, 0.0);
    memest_jsonw_count(&w, NULL, 9007199254740993.0);   /* 2^53 + 1 is not a double: 2^53 */
    memest_jsonw_count(&w, NULL, 1e19);          /* past 2^63 */
    memest_jsonw_count(&w, NULL, -1.0);
    memest_jsonw_count(&w, NULL, INFINITY);
    memest_jsonw_arr_end(&w);
    memest_jsonw_finish(&w);
    CHECK_STR_EQ(close_buf(&b), "[4089446400,3,0,9007199254740992,1e+19,-1,null]\n");
    free(b.data);
}

int main(void)
{
    test_count();
    test_compact();
    test_pretty();
    test_escaping();
    test_numbers();
    return CHECK_DONE();
}
