/* test_help.c - --help and doc/options.md's Options table name what the parser
 * takes: for each option with a fixed set of values (--optim, --optim-impl,
 * --zero-grad, --dtype, --amp, --loss), both list exactly the vocabulary
 * table's names, in table order, with the parser's default marked; both
 * state the default --overhead; both give the exit codes of error.h in
 * order, with their meanings. The expected names come from the tables
 * (step.h, dtype.h), the defaults and the accepted values from the parser
 * itself (memest_cli_parse), never from the texts checked. Also: every
 * --help line fits 80 columns. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memest/cli.h"
#include "memest/cuda_overhead.h"
#include "memest/error.h"

#define MAXV 32

/* A failed check with its own message (the names missing, extra, ...). */
#define fail(...) fail_at(__LINE__, __VA_ARGS__)
static void fail_at(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_at(int line, const char *fmt, ...)
{
    ++*check_counter_(0);
    check_fail_(__FILE__, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *s = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&s, &n);
    int c;
    while (m && (c = fgetc(f)) != EOF)
        fputc(c, m);
    fclose(f);
    if (m)
        fclose(m);
    return s;
}

static char *help_text(void)
{
    char *s = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&s, &n);
    if (!m)
        return NULL;
    memest_cli_usage(m);
    fclose(m);
    return s;
}

/* ---- finding the texts ---- */

/* The meaning cell of doc/options.md's Options row for `key` ("--loss NAME"),
 * into buf; false when there is no such row. */
static bool readme_row(const char *doc, const char *key, char *buf, size_t n)
{
    char head[128];
    snprintf(head, sizeof head, "\n| `%s` | ", key);
    const char *p = strstr(doc, head);
    if (!p)
        return false;
    p += strlen(head);
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    while (len && (p[len - 1] == ' ' || p[len - 1] == '|'))
        len--;
    snprintf(buf, n, "%.*s", (int)len, p);
    return true;
}

/* The description of --help's entry for `key` ("--loss NAME"), its
 * continuation lines joined with spaces, into buf; false when none. */
static bool help_entry(const char *help, const char *key, char *buf, size_t n)
{
    for (const char *line = help; *line;) {
        const char *end = strchr(line, '\n');
        if (!end)
            end = line + strlen(line);
        const char *p = line + strspn(line, " ");
        size_t k = strlen(key);
        if (strncmp(p, key, k) == 0 && p[k] == ' ') {
            size_t used = 0;
            buf[0] = '\0';
            for (p += k;;) {
                p += strspn(p, " ");
                used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "%s%.*s",
                                         used ? " " : "", (int)(end - p), p);
                /* a continuation line is indented past the option column */
                if (!*end || strspn(end + 1, " ") < 20)
                    return used < n;
                p = end + 1;
                end = strchr(p, '\n');
                if (!end)
                    end = p + strlen(p);
            }
        }
        line = *end ? end + 1 : end;
    }
    return false;
}

/* ---- reading the values a text names ---- */

/* The values an option's text names, outside parentheses: in doc/options.md
 * (code) the `quoted` words; in --help the items after the last ": ",
 * separated by ", " or " or ". *dflt: the value followed by "(default",
 * or -1. Returns how many. */
static int values(const char *text, bool code, char v[][64], int *dflt)
{
    char flat[2048]; /* text outside parentheses; '\1' where "(default" was */
    size_t f = 0;
    int depth = 0;
    for (const char *p = text; *p && f + 1 < sizeof flat; p++) {
        if (*p == '(') {
            if (depth++ == 0 && strncmp(p, "(default", 8) == 0)
                flat[f++] = '\1';
        } else if (*p == ')') {
            depth--;
        } else if (depth == 0) {
            flat[f++] = *p;
        }
    }
    flat[f] = '\0';
    int n = 0;
    *dflt = -1;
    if (code) {
        for (char *p = flat; (p = strchr(p, '`')) && n < MAXV;) {
            char *e = strchr(p + 1, '`');
            if (!e)
                break;
            snprintf(v[n], 64, "%.*s", (int)(e - p - 1), p + 1);
            p = e + 1;
            if (p[strspn(p, " ")] == '\1')
                *dflt = n;
            n++;
        }
        return n;
    }
    char *p = flat;
    for (char *c; (c = strstr(p, ": "));)
        p = c + 2;
    while (*p && n < MAXV) {
        char *comma = strstr(p, ", "), *or = strstr(p, " or ");
        char *e = comma && (!or || comma < or) ? comma : or;
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char item[128];
        snprintf(item, sizeof item, "%.*s", (int)len, p);
        char *mark = strchr(item, '\1');
        if (mark) {
            *mark = '\0';
            *dflt = n;
        }
        size_t l = strlen(item);
        while (l && item[l - 1] == ' ')
            item[--l] = '\0';
        snprintf(v[n++], 64, "%s", item + strspn(item, " "));
        p = e ? e + (e == comma ? 2 : 4) : p + len;
    }
    return n;
}

static int find(char v[][64], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v[i], name) == 0)
            return i;
    return -1;
}

/* Checks that `where` (e.g. "doc/options.md's `--loss NAME` row") names exactly
 * want[0..nw), in that order, with want[wdflt] the default (-1: none). */
static void check_names(const char *where, const char *text, bool code, const char *const *want,
                        int nw, int wdflt)
{
    char got[MAXV][64];
    int gdflt, ng = values(text, code, got, &gdflt);
    bool same = ng == nw;
    for (int i = 0; i < nw; i++) {
        if (find(got, ng, want[i]) < 0)
            fail("%s lacks \"%s\" (in the table; it names: %s)", where, want[i], text);
        same = same && i < ng && strcmp(got[i], want[i]) == 0;
    }
    for (int i = 0; i < ng; i++) {
        bool known = false;
        for (int j = 0; j < nw; j++)
            known = known || strcmp(got[i], want[j]) == 0;
        if (!known)
            fail("%s names \"%s\", which is not in the table", where, got[i]);
    }
    ++*check_counter_(0);
    if (!same) {
        check_fail_(__FILE__, __LINE__);
        fprintf(stderr, "%s: expected, in table order:", where);
        for (int i = 0; i < nw; i++)
            fprintf(stderr, " %s", want[i]);
        fprintf(stderr, "\n  got:");
        for (int i = 0; i < ng; i++)
            fprintf(stderr, " %s", got[i]);
        fputc('\n', stderr);
    }
    if (wdflt >= 0 && (gdflt < 0 || strcmp(got[gdflt], want[wdflt]) != 0))
        fail("%s: the default is \"%s\", marked: \"%s\"", where, want[wdflt],
             gdflt < 0 ? "(none)" : got[gdflt]);
    if (wdflt < 0 && gdflt >= 0)
        fail("%s marks \"%s\" as the default, but the option has none", where, got[gdflt]);
}

/* ---- the parser: defaults and accepted values ---- */

/* memest_cli_parse of "memest [OPT VAL] m.json"; 0 / -1. */
static int parse(const char *opt, const char *val, struct memest_cli *o)
{
    char a0[] = "memest", a1[64], a2[64], a3[] = "m.json";
    snprintf(a1, sizeof a1, "%s", opt ? opt : "m.json");
    snprintf(a2, sizeof a2, "%s", val ? val : "");
    char *argv[] = {a0, a1, a2, a3, NULL};
    struct memest_error err = {0};
    return opt ? memest_cli_parse(4, argv, o, &err) : memest_cli_parse(2, argv, o, &err);
}

/* One option with a fixed set of values: its texts' keys, the table's
 * names, the parser's default (-1: none). */
struct vocab {
    const char *readme_key, *help_key, *opt;
    const char *names[MAXV];
    int n, dflt;
};

static void check_vocab(const char *doc, const char *help, const struct vocab *v)
{
    char text[2048], where[128];
    snprintf(where, sizeof where, "doc/options.md's `%s` row", v->readme_key);
    if (!readme_row(doc, v->readme_key, text, sizeof text))
        fail("doc/options.md has no Options row `%s`", v->readme_key);
    else
        check_names(where, text, true, v->names, v->n, v->dflt);
    snprintf(where, sizeof where, "--help's %s entry", v->help_key);
    if (!help_entry(help, v->help_key, text, sizeof text))
        fail("--help has no entry %s", v->help_key);
    else
        check_names(where, text, false, v->names, v->n, v->dflt);
}

static void check_vocabularies(const char *doc, const char *help)
{
    struct memest_cli d, o;
    CHECK(parse(NULL, NULL, &d) == 0);
    struct vocab v;

    v = (struct vocab){"-o, --optim NAME", "-o, --optim NAME", "--optim", {0}, 0, -1};
    for (int k = 0; k < MEMEST_OPT_COUNT; k++) {
        v.names[v.n++] = memest_optim_name(k);
        CHECK(parse("--optim", memest_optim_name(k), &o) == 0 && (int)o.step.optim.kind == k);
    }
    v.dflt = (int)d.step.optim.kind;
    check_vocab(doc, help, &v);

    v = (struct vocab){"--optim-impl I", "--optim-impl I", "--optim-impl", {0}, 0, -1};
    for (int k = 0; k < MEMEST_IMPL_COUNT; k++) {
        v.names[v.n++] = memest_optim_impl_name(k);
        CHECK(parse("--optim-impl", memest_optim_impl_name(k), &o) == 0 && (int)o.step.impl == k);
    }
    v.dflt = (int)d.step.impl;
    check_vocab(doc, help, &v);

    v = (struct vocab){"--zero-grad MODE", "--zero-grad MODE", "--zero-grad", {0}, 0, -1};
    for (int k = 0; k < MEMEST_ZERO_GRAD_COUNT; k++) {
        v.names[v.n++] = memest_zero_grad_name(k);
        CHECK(parse("--zero-grad", memest_zero_grad_name(k), &o) == 0 &&
              o.step.zero_grad_zeros == (k == MEMEST_ZERO_GRAD_ZEROS));
    }
    v.dflt = d.step.zero_grad_zeros ? MEMEST_ZERO_GRAD_ZEROS : MEMEST_ZERO_GRAD_NONE;
    check_vocab(doc, help, &v);

    /* --dtype: the types the parser takes, in the dtype table's order */
    v = (struct vocab){"--dtype T", "--dtype T", "--dtype", {0}, 0, -1};
    for (int k = 0; k < MEMEST_DTYPE_COUNT; k++) {
        if (parse("--dtype", memest_dtype_name(k), &o) != 0)
            continue;
        CHECK_EQ_INT(o.dtype, k);
        if (k == (int)d.dtype)
            v.dflt = v.n;
        v.names[v.n++] = memest_dtype_name(k);
    }
    CHECK(v.n >= 2 && v.dflt >= 0);
    check_vocab(doc, help, &v);

    /* --amp: every autocast type but "none" (no --amp), which it refuses */
    v = (struct vocab){"--amp T", "--amp T", "--amp", {0}, 0, -1};
    CHECK(parse("--amp", memest_amp_name(MEMEST_AMP_NONE), &o) != 0);
    CHECK_EQ_INT(d.step.amp, MEMEST_AMP_NONE);
    for (int k = MEMEST_AMP_NONE + 1; k < MEMEST_AMP_COUNT; k++) {
        v.names[v.n++] = memest_amp_name(k);
        CHECK(parse("--amp", memest_amp_name(k), &o) == 0 && (int)o.step.amp == k);
    }
    check_vocab(doc, help, &v);

    v = (struct vocab){"--loss NAME", "--loss NAME", "--loss", {0}, 0, -1};
    for (int k = 0; k < MEMEST_LOSS_COUNT; k++) {
        v.names[v.n++] = memest_loss_name(k);
        CHECK(parse("--loss", memest_loss_name(k), &o) == 0 && (int)o.step.loss == k);
    }
    v.dflt = (int)d.step.loss;
    check_vocab(doc, help, &v);
}

/* --overhead: one default for every card, stated in MiB by both texts. */
static void check_overhead(const char *doc, const char *help)
{
    struct memest_cli d;
    CHECK(parse(NULL, NULL, &d) == 0);
    CHECK(!d.step.overhead_set);
    uint64_t def = memest_default_overhead(0);
    /* compute capabilities from Kepler to Blackwell: the texts name no card */
    static const unsigned archs[] = {35, 50, 60, 61, 70, 75, 80, 86, 89, 90, 100, 120};
    for (size_t i = 0; i < sizeof archs / sizeof *archs; i++)
        if (memest_default_overhead(archs[i]) != def)
            fail("the default overhead of sm%u differs from the one doc/options.md and --help state",
                 archs[i]);
    CHECK(def % 1048576 == 0); /* a whole number of MiB, as the texts write it */
    char want[64], text[2048];
    snprintf(want, sizeof want, "(default %" PRIu64 " MiB)", def / 1048576);
    CHECK(help_entry(help, "--overhead SIZE", text, sizeof text));
    CHECK_CONTAINS(text, want);
    snprintf(want, sizeof want, "(%" PRIu64 " MiB)", def / 1048576);
    CHECK(readme_row(doc, "--overhead SIZE", text, sizeof text));
    CHECK_CONTAINS(text, want);
}

/* The "Exit codes: 0 ...; 1 ...; ... ." paragraph of a text: each item,
 * split at the semicolons outside parentheses, must be "CODE MEANING"
 * (then a parenthesis or nothing), for every code of error.h in order. */
static void check_exit_codes(const char *where, const char *text)
{
    const char *p = strstr(text, "Exit codes: ");
    if (!p) {
        fail("%s has no \"Exit codes: \" paragraph", where);
        return;
    }
    p += strlen("Exit codes: ");
    char item[1024];
    size_t n = 0;
    int depth = 0, code = 0;
    for (;; p++) {
        bool end = !*p || (depth == 0 && *p == '.' && (!p[1] || p[1] == ' ' || p[1] == '\n'));
        if (*p == '(')
            depth++;
        if (*p == ')')
            depth--;
        if (end || (depth == 0 && *p == ';')) {
            item[n] = '\0';
            const char *it = item + strspn(item, " ");
            const struct memest_exit_doc *d = memest_exit_doc(code);
            char head[160];
            if (d)
                snprintf(head, sizeof head, "%d %s", code, d->meaning);
            size_t hl = d ? strlen(head) : 0;
            if (!d)
                fail("%s: an exit code beyond %d: \"%s\"", where, MEMEST_EXIT_COUNT - 1, it);
            else if (strncmp(it, head, hl) != 0 || (it[hl] && it[hl] != ' '))
                fail("%s: exit code %d: expected \"%s\", got \"%s\"", where, code, head, it);
            code++;
            n = 0;
            if (end)
                break;
            continue;
        }
        if (n + 1 < sizeof item)
            item[n++] = *p == '\n' ? ' ' : *p;
    }
    if (code < MEMEST_EXIT_COUNT)
        fail("%s: exit codes %d to %d are missing", where, code, MEMEST_EXIT_COUNT - 1);
}

static void check_width(const char *help)
{
    int line = 1;
    for (const char *p = help; *p; line++) {
        size_t len = strcspn(p, "\n");
        if (len > 80)
            fail("--help line %d is %zu columns (at most 80): %.*s", line, len, (int)len, p);
        p += len + (p[len] == '\n');
    }
}

int main(void)
{
    char *doc = read_all("doc/options.md"); /* the tests run in the source tree */
    char *help = help_text();
    CHECK(doc != NULL);
    CHECK(help != NULL);
    if (doc && help) {
        check_vocabularies(doc, help);
        check_overhead(doc, help);
        check_exit_codes("doc/options.md", doc);
        check_exit_codes("--help", help);
        check_width(help);
    }
    free(doc);
    free(help);
    return CHECK_DONE();
}
