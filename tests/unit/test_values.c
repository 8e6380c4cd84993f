/* test_values.c - values in the model builder: exact integer expressions,
 * numbers in messages that read back as the same double, and values that
 * come from --set or --sweep-var (a check such a value fails is a usage
 * error naming the option; graph.overrides lists the overrides read).
 * Expected figures are hand counts in the comments. */
#include <string.h>

#include "check.h"
#include "built.h"

/* one linear 4 -> out_features (an expression over the variables) */
static void build_linear(struct built *b, const char *vars, const char *out_features,
                         const struct memest_override *ov, int nov)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"variables\": {%s}, \"inputs\": [{\"name\": \"x\", \"shape\": [4]}],"
             " \"layers\": [{\"name\": \"fc\", \"type\": \"linear\", \"out_features\": %s}]}",
             vars, out_features);
    build(b, json, ov, nov, 1);
}

/* the build failed with an error of `code` at `path` saying `msg` */
#define CHECK_FAILS(b, code_, path_, msg_)                                    \
    do {                                                                      \
        CHECK_EQ_INT((b)->rc, -1);                                            \
        CHECK_EQ_INT((b)->err.code, (code_));                                 \
        CHECK_STR_EQ((b)->err.path, (path_));                                 \
        CHECK_CONTAINS((b)->err.msg, (msg_));                                 \
    } while (0)

#define OF "layers[0].out_features"

/* A linear whose out_features is refused: the error's code, path and
 * message (an override refused as it is read has no path). */
static const struct {
    const char *vars, *out_features;
    struct memest_override ov; /* name NULL: none */
    enum memest_errcode code;
    const char *path, *msg;
} refused[] = {
    /* an overflow is an error naming the expression, not a rounded number */
    {"\"n\": 9007199254740991", "\"n * n - n * n + 1\"", {0}, MEMEST_ERR_SCHEMA, OF,
     "\"n * n - n * n + 1\": integer overflow"},
    /* literals of 2^53 and more are refused as JSON numbers are; decimal only */
    {"", "\"10000000000000003 - 10000000000000000\"", {0}, MEMEST_ERR_SCHEMA, OF,
     "the integer 10000000000000003 is too large"},
    {"", "\"0x10\"", {0}, MEMEST_ERR_SCHEMA, OF, "malformed number '0x10'"},
    /* a fraction is printed so that it reads back as the same double */
    {"", "3.0000000000000004", {0}, MEMEST_ERR_SCHEMA, OF,
     "expected an integer, got 3.0000000000000004"},
    /* a value from --set that a check refuses: a usage error naming it */
    {"\"width\": 8", "\"width\"", {.name = "width", .value = "-1"}, MEMEST_ERR_USAGE, OF,
     "--set width=-1: must be an integer >= 1, got -1"},
    {"\"width\": 8", "\"width\"", {.name = "width", .value = "3.0000000000000004"},
     MEMEST_ERR_USAGE, OF,
     "--set width=3.0000000000000004: expected an integer, got 3.0000000000000004"},
    {"\"width\": 8", "\"width * 2\"", {.name = "width", .value = "0", .opt = "--sweep-var"},
     MEMEST_ERR_USAGE, OF, "--sweep-var width=0: must be an integer >= 1, got 0"},
    {"\"width\": 8", "\"width\"", {.name = "width", .value = "-0"}, MEMEST_ERR_USAGE, OF,
     "--set width=-0: must be an integer >= 1, got 0"},
    /* through an expression: the divisor, the condition of c ? a : b */
    {"\"d\": 2", "\"16 // d\"", {.name = "d", .value = "0"}, MEMEST_ERR_USAGE, OF,
     "--set d=0: \"16 // d\": division by zero"},
    {"\"width\": 8", "\"width > 4 ? 0 : 8\"", {.name = "width", .value = "5"}, MEMEST_ERR_USAGE, OF,
     "--set width=5: must be an integer >= 1, got 0"},
    /* the file's own bad value stays a model error, overrides or not */
    {"\"width\": 8, \"d\": 2", "\"d - 2\"", {.name = "width", .value = "5"}, MEMEST_ERR_SCHEMA, OF,
     "must be an integer >= 1, got 0"},
    {"\"width\": 8", "\"width // 0\"", {.name = "width", .value = "5"}, MEMEST_ERR_SCHEMA, OF,
     "division by zero"},
    /* --set values: decimal numbers, true/false, else strings */
    {"\"width\": 8", "\"width\"", {.name = "width", .value = "0x10"}, MEMEST_ERR_USAGE, "",
     "--set width=0x10: expected a number, as the variable is in the model"},
    {"\"width\": 8", "\"width\"", {.name = "width", .value = " 8"}, MEMEST_ERR_USAGE, "",
     "expected a number"},
    {"\"width\": 8", "\"width\"", {.name = "width", .value = "8 "}, MEMEST_ERR_USAGE, "",
     "expected a number"},
    {"\"width\": 8", "\"width\"", {.name = "width", .value = "+8"}, MEMEST_ERR_USAGE, "",
     "expected a number"},
    {"\"width\": 8", "\"width\"", {.name = "width", .value = "inf"}, MEMEST_ERR_USAGE, "",
     "expected a number"},
    {"\"width\": 8", "\"width\"", {.name = "width", .value = "nan"}, MEMEST_ERR_USAGE, "",
     "expected a number"},
    {"\"width\": 8", "\"width\"", {.name = "width", .value = "8e"}, MEMEST_ERR_USAGE, "",
     "expected a number"},
    {"\"width\": 8", "\"width\"", {.name = "width", .value = "9007199254740993"},
     MEMEST_ERR_USAGE, "", "numbers must be between -2^53 and 2^53"},
    {"\"width\": 8", "\"width\"", {.name = "width", .value = "1e-400"}, MEMEST_ERR_USAGE, "",
     "out of range"},
};

static void test_linear(void)
{
    struct built b;
    /* (2^53 - 1) * 5 // 5 - (2^53 - 2) = 1 exactly (in double the product
     * rounds down by 3 and the result was 0): linear 4 -> 1 has 4 + 1 = 5 */
    build_linear(&b, "\"n\": 9007199254740991", "\"(n * 5) // 5 - 9007199254740990\"", NULL, 0);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_EQ_U64(b.p.total, 5);
    drop(&b);
    /* n / 2 divides exactly: an integer, 4 * 3 + 3 = 15 */
    build_linear(&b, "\"n\": 6", "\"n / 2\"", NULL, 0);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_EQ_U64(b.p.total, 15);
    drop(&b);
    /* --set width=1e3: 4 * 1000 + 1000 = 5000 */
    struct memest_override e3 = {.name = "width", .value = "1e3"};
    build_linear(&b, "\"width\": 8", "\"width\"", &e3, 1);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_EQ_U64(b.p.total, 5000);
    drop(&b);
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        build_linear(&b, refused[i].vars, refused[i].out_features, &refused[i].ov,
                     refused[i].ov.name ? 1 : 0);
        CHECK_FAILS(&b, refused[i].code, refused[i].path, refused[i].msg);
        drop(&b);
    }
}

/* through a block argument and a "repeat" count */
static void test_blocks(void)
{
    struct built b;
    const char *blocks =
        "{\"variables\": {\"width\": 8, \"n\": 2},"
        " \"inputs\": [{\"name\": \"x\", \"shape\": [4]}],"
        " \"blocks\": {\"fc\": {\"args\": {\"w\": 1},"
        "   \"layers\": [{\"name\": \"l\", \"type\": \"linear\", \"out_features\": \"w\"}]}},"
        " \"layers\": [{\"name\": \"b\", \"type\": \"fc\", \"w\": \"width * 2\", \"repeat\": \"n\"}]}";
    struct memest_override neg = {.name = "width", .value = "-1"};
    build(&b, blocks, &neg, 1, 1);
    CHECK_FAILS(&b, MEMEST_ERR_USAGE, "blocks.fc.layers[0].out_features",
                "--set width=-1: must be an integer >= 1, got -2");
    drop(&b);
    struct memest_override n0 = {.name = "n", .value = "0"};
    build(&b, blocks, &n0, 1, 1);
    CHECK_FAILS(&b, MEMEST_ERR_USAGE, "layers[0].repeat", "--set n=0: must be an integer between 1");
    drop(&b);
    /* 100 copies of a 1-node block pass 20 nodes: the limit is the count's fault */
    struct memest_override n100 = {.name = "n", .value = "100"};
    build_limited(&b, blocks, &n100, 1, 1, 20);
    CHECK_EQ_INT(b.rc, -1);
    CHECK_EQ_INT(b.err.code, MEMEST_ERR_USAGE);
    CHECK_CONTAINS(b.err.msg, "--set n=100: ");
    drop(&b);
    /* the file's own count past the limit stays a model error, though the
     * override of width was read: 2 copies pass 2 nodes */
    struct memest_override w3 = {.name = "width", .value = "3"};
    build_limited(&b, blocks, &w3, 1, 1, 2);
    CHECK_EQ_INT(b.rc, -1);
    CHECK_EQ_INT(b.err.code, MEMEST_ERR_LIMIT);
    drop(&b);
    /* 16 chained copies of linear -> 6: 4 * 6 + 6 = 30, then 15 of 6 * 6 + 6
     * = 42: 30 + 630 = 660 */
    struct memest_override n16[] = {{.name = "n", .value = "16"}, {.name = "width", .value = "3"}};
    build(&b, blocks, n16, 2, 1);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_EQ_U64(b.p.total, 660);
    drop(&b);
}

/* a string variable: as a node type, and as a choice */
static void test_strings(void)
{
    struct built b;
    const char *strs =
        "{\"variables\": {\"act\": \"relu\", \"mode\": \"none\"},"
        " \"inputs\": [{\"name\": \"x\", \"shape\": [4]}],"
        " \"layers\": [{\"type\": \"act\"}, {\"type\": \"gelu\", \"approximate\": \"mode\"}]}";
    struct memest_override act = {.name = "act", .value = "relux"};
    build(&b, strs, &act, 1, 1);
    CHECK_FAILS(&b, MEMEST_ERR_USAGE, "layers[0].type", "--set act=relux: unknown layer type");
    drop(&b);
    struct memest_override mode = {.name = "mode", .value = "fast"};
    build(&b, strs, &mode, 1, 1);
    CHECK_FAILS(&b, MEMEST_ERR_USAGE, "layers[1].approximate",
                "--set mode=fast: \"fast\" is not one of none|tanh");
    drop(&b);
}

/* graph.overrides: the overrides the expansion read, for later messages */
static void test_note(void)
{
    struct built b;
    struct memest_override ov[] = {{.name = "unused", .value = "3"}, {.name = "width", .value = "2"},
                                   {.name = "d", .value = "1", .opt = "--sweep-var"}};
    build_linear(&b, "\"width\": 8, \"d\": 2, \"unused\": 1", "\"width // d\"", ov, 3);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_STR_EQ(b.g.overrides, "--set width=2, --sweep-var d=1");
    drop(&b);
    build_linear(&b, "\"width\": 8, \"unused\": 1", "\"width\"", ov, 1);
    CHECK_EQ_INT(b.rc, 0);
    CHECK(b.g.overrides == NULL);
    drop(&b);
}

int main(void)
{
    test_linear();
    test_blocks();
    test_strings();
    test_note();
    return CHECK_DONE();
}
