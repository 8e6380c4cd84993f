/* test_outfile.c - output files (src/base/outfile.c): a set of outputs
 * renamed together once the command succeeded, or removed; a rename that
 * fails half-way puts back what the earlier ones replaced; the refused
 * output paths (an input, two outputs that are one file, derived files
 * among them), linear in many outputs. */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "memest/outfile.h"

static char dir[64];

static const char *at(const char *name, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s", dir, name);
    return buf;
}

static void put(const char *name, const char *text)
{
    char p[128];
    FILE *f = fopen(at(name, p, sizeof p), "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* The file's first line, "" when it does not exist. */
static const char *get(const char *name, char *buf, size_t n)
{
    char p[128];
    FILE *f = fopen(at(name, p, sizeof p), "r");
    buf[0] = 0;
    if (f) {
        if (!fgets(buf, (int)n, f))
            buf[0] = 0;
        fclose(f);
    }
    return buf;
}

/* The entries of the directory, "." and ".." aside. */
static int entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    return n;
}

static int write_out(const char *name, const char *text, struct memest_error *err)
{
    char p[128];
    struct memest_outfile of;
    if (memest_outfile_open(&of, at(name, p, sizeof p), err) != 0)
        return -1;
    fputs(text, of.f);
    return memest_outfile_commit(&of, err);
}

static void test_set_commit_abort(void)
{
    char b[64];
    struct memest_error err = {0};
    struct memest_outset set;
    put("a", "old a\n");
    memest_outset_begin(&set);
    CHECK(write_out("a", "new a\n", &err) == 0);
    CHECK(write_out("b", "new b\n", &err) == 0);
    CHECK(write_out("b", "newer b\n", &err) == 0);   /* the same target again */
    CHECK_STR_EQ(get("a", b, sizeof b), "old a\n");  /* nothing in place yet */
    CHECK_STR_EQ(get("b", b, sizeof b), "");
    CHECK_EQ_INT(entries(), 3);                      /* a and the two temporaries */
    memest_outset_abort(&set);
    CHECK_STR_EQ(get("a", b, sizeof b), "old a\n");
    CHECK_EQ_INT(entries(), 1);

    memest_outset_begin(&set);
    CHECK(write_out("a", "new a\n", &err) == 0);
    CHECK(write_out("b", "new b\n", &err) == 0);
    CHECK(write_out("b", "newer b\n", &err) == 0);
    CHECK(memest_outset_commit(&set, &err) == 0);
    CHECK_STR_EQ(get("a", b, sizeof b), "new a\n");
    CHECK_STR_EQ(get("b", b, sizeof b), "newer b\n");
    CHECK_EQ_INT(entries(), 2);                      /* no backup, no temporary */
    CHECK_EQ_INT(err.code, MEMEST_ERR_NONE);

    /* no set: written at once */
    CHECK(write_out("c", "c\n", &err) == 0);
    CHECK_STR_EQ(get("c", b, sizeof b), "c\n");
    char p[128];
    unlink(at("a", p, sizeof p));
    unlink(at("b", p, sizeof p));
    unlink(at("c", p, sizeof p));
}

static void test_set_rollback(void)
{
    char b[64], p[128];
    struct memest_error err = {0};
    struct memest_outset set;
    put("x", "old x\n");
    memest_outset_begin(&set);
    CHECK(write_out("x", "new x\n", &err) == 0);
    CHECK(write_out("y", "new y\n", &err) == 0);
    CHECK(write_out("z", "new z\n", &err) == 0);
    mkdir(at("z", p, sizeof p), 0700);   /* z's rename fails: a directory now */
    CHECK(memest_outset_commit(&set, &err) != 0);
    CHECK_EQ_INT(err.code, MEMEST_ERR_OUTPUT);
    CHECK_CONTAINS(err.msg, "/z: Is a directory");
    CHECK_STR_EQ(get("x", b, sizeof b), "old x\n");   /* put back */
    CHECK_STR_EQ(get("y", b, sizeof b), "");          /* removed again */
    CHECK_EQ_INT(entries(), 2);                       /* x and the directory z */
    rmdir(p);
    unlink(at("x", p, sizeof p));
}

static int check(const struct memest_inpath *in, size_t nin, const struct memest_outpath *out,
                 size_t nout, struct memest_error *err)
{
    struct memest_outpaths o = {in, nin, out, nout};
    memset(err, 0, sizeof *err);
    return memest_outfile_check_paths(&o, err);
}

static void test_check_paths(void)
{
    char m[128], q[128], q1[128], t[128], t1[128];
    struct memest_error err;
    put("m.json", "{}\n");
    at("m.json", m, sizeof m);
    at("q.svg", q, sizeof q);
    at("q-stage1.svg", q1, sizeof q1);
    at("t.csv", t, sizeof t);
    at("t-stage1.csv", t1, sizeof t1);
    struct memest_inpath in[] = {{"the model file", m}, {"the --deepspeed config", "/nonexistent/ds.json"}};
    struct memest_outpath ok[] = {{"--plot", q, q}, {"--plot", q, q1}, {"--timeline", t, t},
                                  {"--timeline", t, t1}};
    CHECK(check(in, 2, ok, 4, &err) == 0);
    /* a derived file that is the model (a hard link of it) */
    CHECK(link(m, q1) == 0);
    CHECK(check(in, 2, ok, 4, &err) != 0);
    CHECK_CONTAINS(err.msg, "q-stage1.svg (which --plot ");
    CHECK_CONTAINS(err.msg, " also writes) is the model file: it would be overwritten");
    unlink(q1);
    /* two derived files that are one (not existing yet: by name) */
    struct memest_outpath twice[] = {{"--plot", q, q}, {"--plot", q, q1}, {"--timeline", t, t},
                                     {"--timeline", "./x", q1}};
    CHECK(check(in, 2, twice, 4, &err) != 0);
    CHECK_CONTAINS(err.msg, "are the same file");
    CHECK_CONTAINS(err.msg, "(which --timeline ./x also writes)");
    /* an input that does not exist, named as an output */
    struct memest_outpath ds[] = {{"--plot", "/nonexistent/ds.json", "/nonexistent/ds.json"}};
    CHECK(check(in, 2, ds, 1, &err) != 0);
    CHECK_CONTAINS(err.msg, "--plot /nonexistent/ds.json is the --deepspeed config");
    /* an empty name */
    struct memest_outpath empty[] = {{"--timeline", "", ""}};
    CHECK(check(in, 2, empty, 1, &err) != 0);
    CHECK_CONTAINS(err.msg, "--timeline: expected a file name, got ''");
    /* devices may be written twice */
    struct memest_outpath null[] = {{"--plot", "/dev/null", "/dev/null"},
                                    {"--timeline", "/dev/null", "/dev/null"}};
    CHECK(check(in, 2, null, 2, &err) == 0);
    unlink(m);
}

/* 100,000 derived files (a pipeline of 50,000 stages, two options): the
 * check is a sort, not every pair (which would take minutes) */
static void test_check_many(void)
{
    enum { N = 100000 };
    struct memest_outpath *out = calloc(N, sizeof *out);
    char *names = malloc((size_t)N * 96);
    char q[128], t[128];
    struct memest_error err;
    CHECK(out && names);
    if (!out || !names)
        return;
    at("q.svg", q, sizeof q);
    at("t.csv", t, sizeof t);
    for (int i = 0; i < N; i++) {
        char *p = names + (size_t)i * 96;
        snprintf(p, 96, "%s/%s-stage%d.%s", dir, i < N / 2 ? "q" : "t", i % (N / 2),
                 i < N / 2 ? "svg" : "csv");
        out[i] = (struct memest_outpath){i < N / 2 ? "--plot" : "--timeline", i < N / 2 ? q : t, p};
    }
    clock_t c0 = clock();
    CHECK(check(NULL, 0, out, N, &err) == 0);
    /* the last one is the first one */
    snprintf(names + (size_t)(N - 1) * 96, 96, "%s/q-stage0.svg", dir);
    CHECK(check(NULL, 0, out, N, &err) != 0);
    CHECK_CONTAINS(err.msg, "q-stage0.svg (which --plot ");
    CHECK_CONTAINS(err.msg, "are the same file");
    double s = (double)(clock() - c0) / CLOCKS_PER_SEC;
    CHECK(s < 10);
    free(out);
    free(names);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/memest-outfile.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_set_commit_abort();
    test_set_rollback();
    test_check_paths();
    test_check_many();
    CHECK_EQ_INT(entries(), 0);
    rmdir(dir);
    return CHECK_DONE();
}
