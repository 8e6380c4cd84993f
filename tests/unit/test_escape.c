/* test_escape.c - outside strings made safe for text, CSV, XML and error
 * messages (escape.h): every unsafe character shown as \xNN, cuts only
 * between characters, quoting and entities where the format needs them.
 * Expected strings are written out by hand from the rules in escape.h. */
#include <stdlib.h>

#include "check.h"
#include "memest/error.h"
#include "memest/escape.h"

static void test_decode(void)
{
    static const struct {
        const char *s;
        size_t len;
        uint32_t cp;
    } cases[] = {
        {"A", 1, 0x41},
        {"\xc3\xa9", 2, 0xe9},
        {"\xe2\x82\xac", 3, 0x20ac},
        {"\xf0\x9f\x98\x80", 4, 0x1f600},
        {"\xf4\x8f\xbf\xbf", 4, 0x10ffff},
        {"\xc0\xaf", 0, 0xc0},          /* overlong '/' */
        {"\xe0\x80\xaf", 0, 0xe0},      /* overlong */
        {"\xed\xa0\x80", 0, 0xed},      /* surrogate U+D800 */
        {"\xf4\x90\x80\x80", 0, 0xf4},  /* past U+10FFFF */
        {"\xe2\x82", 0, 0xe2},          /* cut short by the NUL */
        {"\x80", 0, 0x80},              /* a lone continuation byte */
        {"\xff", 0, 0xff},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint32_t cp;
        CHECK_EQ_U64(memest_utf8_decode(cases[i].s, &cp), cases[i].len);
        CHECK_EQ_U64(cp, cases[i].cp);
    }
}

static void test_unsafe(void)
{
    static const uint32_t unsafe[] = {0x00, 0x09, 0x0a, 0x1b, 0x1f, 0x7f, 0x80, 0x85, 0x9b,
                                      0x9f, 0x200e, 0x200f, 0x202a, 0x202e, 0x2066, 0x2069,
                                      0x2028, 0x2029, 0xfffe, 0xffff};
    static const uint32_t safe[] = {0x20, 0x7e, 0xa0, 0xe9, 0x200d, 0x2030, 0x2065, 0x206a,
                                    0xfffd, 0x1f600};
    for (size_t i = 0; i < sizeof unsafe / sizeof *unsafe; i++)
        CHECK(memest_char_unsafe(unsafe[i]));
    for (size_t i = 0; i < sizeof safe / sizeof *safe; i++)
        CHECK(!memest_char_unsafe(safe[i]));
}

static void test_text(void)
{
    char b[MEMEST_ESC_NAME];
    CHECK_STR_EQ(memest_esc_text("layer1.0.conv1", b, sizeof b), "layer1.0.conv1");
    /* a terminal escape, a forged line, DEL, C1 CSI, a right-to-left
     * override, the line separator, a noncharacter */
    CHECK_STR_EQ(memest_esc_text("\x1b[31mx\nmemest: forged\r\t\x7f", b, sizeof b),
                 "\\x1B[31mx\\x0Amemest: forged\\x0D\\x09\\x7F");
    CHECK_STR_EQ(memest_esc_text("\xc2\x9b" "2J \xe2\x80\xae \xe2\x80\xa8 \xef\xbf\xbe", b, sizeof b),
                 "\\xC2\\x9B2J \\xE2\\x80\\xAE \\xE2\\x80\\xA8 \\xEF\\xBF\\xBE");
    /* what is not UTF-8, byte by byte; good characters kept */
    CHECK_STR_EQ(memest_esc_text("a\xff" "b\xc0\xaf" "c\xed\xa0\x80" "d\xc3", b, sizeof b),
                 "a\\xFFb\\xC0\\xAFc\\xED\\xA0\\x80d\\xC3");
    CHECK_STR_EQ(memest_esc_text("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 <&>\"'", b, sizeof b),
                 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 <&>\"'");
}

static void test_text_cut(void)
{
    char b[16];
    /* 10 bytes of e-acute do not fit 8: cut between characters, "..." */
    CHECK_STR_EQ(memest_esc_text("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", b, 8),
                 "\xc3\xa9\xc3\xa9...");
    /* never inside an escape */
    CHECK_STR_EQ(memest_esc_text("\x01\x01\x01", b, 10), "\\x01...");
    /* exactly fits: no cut */
    CHECK_STR_EQ(memest_esc_text("\x01\x01\x01", b, 13), "\\x01\\x01\\x01");
    CHECK_STR_EQ(memest_esc_text("", b, 4), "");

    /* append: stops between characters and marks the cut with *pos = n */
    char a[8] = "ab";
    size_t pos = 2;
    CHECK(!memest_esc_append(a, sizeof a, &pos, "\xe2\x82\xac\xe2\x82\xac"));
    CHECK_EQ_U64(pos, sizeof a);
    CHECK_STR_EQ(a, "ab\xe2\x82\xac");
    pos = 0;
    CHECK(memest_esc_append(a, sizeof a, &pos, "\x1b"));
    CHECK_EQ_U64(pos, 4);
    CHECK_STR_EQ(a, "\\x1B");
}

/* What f received, as a string; the caller frees it. */
static char *drain(FILE *f, char **data)
{
    fclose(f);
    return *data;
}

static void test_csv(void)
{
    char *data = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&data, &len);
    memest_esc_csv(f, "plain");
    fputc('|', f);
    memest_esc_csv(f, "a,b");
    fputc('|', f);
    memest_esc_csv(f, "q\"x");
    fputc('|', f);
    memest_esc_csv(f, "line\r\nbreak");
    fputc('|', f);
    memest_esc_csv(f, "too many tensors (more than 2^31)"); /* a sweep's error column */
    fputc('|', f);
    memest_esc_csv(f, "\xc2\x9b,\"");
    CHECK_STR_EQ(drain(f, &data),
                 "plain|\"a,b\"|\"q\"\"x\"|line\\x0D\\x0Abreak|"
                 "too many tensors (more than 2^31)|\"\\xC2\\x9B,\"\"\"");
    free(data);
}

static void test_xml(void)
{
    char *data = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&data, &len);
    memest_esc_xml(f, "<a href=\"x\">&'</a>", 100);
    fputc('|', f);
    memest_esc_xml(f, "\x01\x0b\x0c\xef\xbf\xbe\xef\xbf\xbf ok", 100);
    fputc('|', f);
    memest_esc_xml(f, "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac", 2);  /* cut: ellipsis */
    fputc('|', f);
    memest_esc_xml(f, "\xe2\x82\xac\xe2\x82\xac", 2);                          /* fits */
    fputc('|', f);
    memest_esc_xml(f, "\x1b\x1b\x1b", 1);  /* an escaped character counts as one */
    CHECK_STR_EQ(drain(f, &data),
                 "&lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;|"
                 "\\x01\\x0B\\x0C\\xEF\\xBF\\xBE\\xEF\\xBF\\xBF ok|"
                 "\xe2\x82\xac\xe2\x82\xac\xe2\x80\xa6|"
                 "\xe2\x82\xac\xe2\x82\xac|"
                 "\\x1B\xe2\x80\xa6");
    free(data);
}

/* Error messages use the same escaping (they name nodes and paths). */
static void test_error_message(void)
{
    struct memest_error e = {0};
    memest_errf(&e, MEMEST_ERR_SCHEMA, "layers[0]", "bad name \"%s\"", "\xc2\x9b" "1m\xe2\x80\xae");
    memest_err_node(&e, "n\xe2\x81\xa6");
    char msg[256];
    memest_error_format(&e, msg, sizeof msg);
    CHECK_STR_EQ(msg, "layers[0]: node 'n\\xE2\\x81\\xA6': bad name \"\\xC2\\x9B1m\\xE2\\x80\\xAE\"");
}

/* Prefixes for "%.*s": never half a character. "a" then U+00E9 (2 bytes)
 * then U+20AC (3 bytes) then U+1F600 (4 bytes): boundaries at 0, 1, 3, 6,
 * 10. */
static void test_prefix(void)
{
    const char *s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
    static const int want[] = {0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 10, 10};
    for (size_t max = 0; max < sizeof want / sizeof *want; max++)
        CHECK_EQ_INT(memest_utf8_prefix(s, max), want[max]);
    CHECK_EQ_INT(memest_utf8_prefix("", 5), 0);
}

int main(void)
{
    test_prefix();
    test_decode();
    test_unsafe();
    test_text();
    test_text_cut();
    test_csv();
    test_xml();
    test_error_message();
    return CHECK_DONE();
}
