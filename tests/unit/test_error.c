/* test_error.c - the first-error-wins record, its formatting and exit codes. */
#include <string.h>

#include "check.h"
#include "memest/error.h"

static void test_first_error_wins(void)
{
    struct memest_error e = {0};
    CHECK_EQ_INT(memest_errf(&e, MEMEST_ERR_SCHEMA, "layers[3].out_features",
                             "must be between %d and %d inclusive", 1, 65536), -1);
    CHECK_EQ_INT(memest_errf(&e, MEMEST_ERR_SHAPE, "other", "later error"), -1);
    CHECK_EQ_INT(e.code, MEMEST_ERR_SCHEMA);
    CHECK_STR_EQ(e.path, "layers[3].out_features");
    CHECK_STR_EQ(e.msg, "must be between 1 and 65536 inclusive");
    CHECK_EQ_INT(memest_errf(NULL, MEMEST_ERR_IO, NULL, "no error struct"), -1);
}

static void test_node_and_file(void)
{
    struct memest_error e = {0};
    memest_errf(&e, MEMEST_ERR_SHAPE, NULL, "cannot multiply [2, 3] by [4, 5]");
    CHECK_EQ_INT(memest_err_node(&e, "layer1.0.conv1"), -1);
    memest_err_node(&e, "outer");
    memest_err_file(&e, "model.json");
    memest_err_file(&e, "other.json");
    CHECK_STR_EQ(e.node, "layer1.0.conv1");
    CHECK_STR_EQ(e.file, "model.json");
    CHECK_STR_EQ(e.path, "");

    /* Before an error, the latest file wins: a file read without error
     * (the GPU presets) does not lend its name to the model's error. */
    struct memest_error f = {0};
    memest_err_file(&f, "gpus.json");
    memest_err_file(&f, "model.json");
    memest_errf(&f, MEMEST_ERR_SCHEMA, "layers", "bad");
    memest_err_file(&f, "later.json");
    CHECK_STR_EQ(f.file, "model.json");
}

static void test_format(void)
{
    char buf[1024];
    struct memest_error e = {0};
    memest_errf(&e, MEMEST_ERR_SCHEMA, "layers[3].out_features", "must be an integer");
    memest_err_file(&e, "m.json");
    e.line = 12;
    e.col = 7;
    memest_err_node(&e, "fc1");
    memest_error_format(&e, buf, sizeof buf);
    CHECK_STR_EQ(buf, "m.json:12:7: layers[3].out_features: node 'fc1': must be an integer");

    e.col = 0;
    memest_error_format(&e, buf, sizeof buf);
    CHECK_STR_EQ(buf, "m.json:12: layers[3].out_features: node 'fc1': must be an integer");

    e.line = 0;
    e.col = 5;   /* a column without a line is not printed */
    e.node[0] = '\0';
    memest_error_format(&e, buf, sizeof buf);
    CHECK_STR_EQ(buf, "m.json: layers[3].out_features: must be an integer");

    struct memest_error p = {0};
    memest_errf(&p, MEMEST_ERR_PROBE, NULL, "no CUDA driver found (libcuda.so.1)");
    memest_error_format(&p, buf, sizeof buf);
    CHECK_STR_EQ(buf, "no CUDA driver found (libcuda.so.1)");

    struct memest_error none = {0};
    memest_error_format(&none, buf, sizeof buf);
    CHECK_STR_EQ(buf, "");
    struct memest_error bare = { .code = MEMEST_ERR_NOMEM };
    memest_error_format(&bare, buf, sizeof buf);
    CHECK_STR_EQ(buf, "nomem error");

    /* Truncation keeps a terminated prefix. */
    char small[10];
    memest_error_format(&e, small, sizeof small);
    CHECK_STR_EQ(small, "m.json: l");
    memest_error_format(&e, small, 0);   /* must not write */

    /* Long messages are truncated, not overflowed. */
    struct memest_error l = {0};
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memest_errf(&l, MEMEST_ERR_IO, big, "%s", big);
    CHECK_EQ_U64(strlen(l.path), sizeof l.path - 1);
    CHECK_EQ_U64(strlen(l.msg), sizeof l.msg - 1);
    memest_err_node(&l, big);
    memest_err_file(&l, big);
    CHECK_EQ_U64(strlen(l.node), sizeof l.node - 1);
    CHECK_EQ_U64(strlen(l.file), sizeof l.file - 1);
    memest_error_format(&l, buf, sizeof buf);
    CHECK_EQ_U64(strlen(buf), sizeof buf - 1);
}

/* Control characters from model files are escaped; truncation never
 * leaves half a UTF-8 sequence. */
static void test_escaping(void)
{
    char buf[256];
    struct memest_error e = {0};
    memest_errf(&e, MEMEST_ERR_SCHEMA, "layers[0].a\nb", "unknown argument \"a\nb\x1b[31m\"");
    memest_err_node(&e, "n\t1");
    memest_err_file(&e, "m\r.json");
    memest_error_format(&e, buf, sizeof buf);
    CHECK_STR_EQ(buf, "m\\x0D.json: layers[0].a\\x0Ab: node 'n\\x091': "
                      "unknown argument \"a\\x0Ab\\x1B[31m\"");

    struct memest_error u = {0};
    char big[600];
    memset(big, 'x', sizeof big);
    for (size_t i = 1; i + 1 < sizeof big; i += 2) /* "\xC3\xA9" = U+00E9 */
        big[i] = (char)0xC3, big[i + 1] = (char)0xA9;
    big[sizeof big - 1] = '\0';
    memest_errf(&u, MEMEST_ERR_SCHEMA, big, "%s", big);
    memest_err_node(&u, big);
    CHECK_EQ_INT(((unsigned char)u.msg[strlen(u.msg) - 1]), 0xA9);
    CHECK_EQ_INT(((unsigned char)u.path[strlen(u.path) - 1]), 0xA9);
    CHECK_EQ_INT(((unsigned char)u.node[strlen(u.node) - 1]), 0xA9);
    for (size_t n = 2; n < 40; n++) {
        char small[40];
        memest_error_format(&u, small, n);
        size_t len = strlen(small);
        CHECK(len < n);
        CHECK(len == 0 || (unsigned char)small[len - 1] != 0xC3);
    }
}

static void test_exit_codes(void)
{
    static const struct { enum memest_errcode c; int exit; const char *name; } cases[] = {
        { MEMEST_ERR_NONE, MEMEST_EXIT_OK, "none" },
        { MEMEST_ERR_IO, 3, "io" },
        { MEMEST_ERR_PARSE, 3, "parse" },
        { MEMEST_ERR_SCHEMA, 3, "schema" },
        { MEMEST_ERR_SHAPE, 3, "shape" },
        { MEMEST_ERR_LIMIT, 3, "limit" },
        { MEMEST_ERR_USAGE, 2, "usage" },
        { MEMEST_ERR_PROBE, 4, "probe" },
        { MEMEST_ERR_NOMEM, 5, "nomem" },
        { MEMEST_ERR_OUTPUT, 6, "output" },
        { MEMEST_ERR_INTERNAL, 7, "internal" },   /* a bug: not shared with out of memory */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct memest_error e = { .code = cases[i].c };
        CHECK_EQ_INT(memest_error_exit(&e), cases[i].exit);
        CHECK_STR_EQ(memest_errcode_name(cases[i].c), cases[i].name);
    }
    CHECK_EQ_INT(memest_error_exit(NULL), 0);
    CHECK_STR_EQ(memest_errcode_name(MEMEST_ERR_COUNT), "internal");
    struct memest_error beyond = { .code = MEMEST_ERR_COUNT };
    CHECK_EQ_INT(memest_error_exit(&beyond), 7);
}

int main(void)
{
    test_first_error_wins();
    test_node_and_file();
    test_format();
    test_escaping();
    test_exit_codes();
    return CHECK_DONE();
}
