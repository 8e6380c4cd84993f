/* memest_main.c - the memest command: parse the options, refuse output
 * files that would overwrite an input, each other or standard output, open
 * the model once, run one flow (one estimate, a sweep, the largest batch,
 * or advice) and return its exit code, after checking that standard output
 * took everything written to it; the output files are renamed into place
 * then, all of them, or removed when the command failed. The flows live in
 * src/app/flow_*.c and src/app/advise.c (app.h). In the core library, so
 * that tests can run the whole command in process (tests/oom/oom_test.c
 * injects allocation failures this way). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memest/app.h"
#include "memest/cli.h"
#include "memest/options.h"
#include "memest/outfile.h"
#include "memest/report.h"

static bool stdout_failure_told;

int memest_stdout_failed(int rc, int errnum)
{
    if (stdout_failure_told)
        return rc;
    stdout_failure_told = true;
    fprintf(stderr, "memest: cannot write to standard output: %s\n",
            errnum > 0 ? strerror(errnum) : "a write failed");
    return rc == MEMEST_EXIT_OK || rc == MEMEST_EXIT_NOFIT ? MEMEST_EXIT_OUTPUT : rc;
}

/* A closed standard output or error is held by /dev/null opened read-only:
 * no file memest opens (the model, a temporary output file) can take its
 * number and receive the report or a message, and writes to it still fail
 * (EBADF), so that a closed standard output is reported. */
static void hold_closed_std_fds(void)
{
    for (int fd = STDOUT_FILENO; fd <= STDERR_FILENO; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        int h = open("/dev/null", O_RDONLY);
        if (h >= 0 && h != fd)
            close(h);
    }
}

/* The files the command reads, as output paths must not be: the model
 * (a directory's config.json), the --deepspeed and --fsdp-config files;
 * *dirconf (free it) holds the config.json's path. Returns their number,
 * or -1 when out of memory. */
static int inputs(const struct memest_cli *o, struct memest_inpath in[3], char **dirconf)
{
    int n = 0;
    struct stat st;
    *dirconf = NULL;
    if (o->model && stat(o->model, &st) == 0 && S_ISDIR(st.st_mode)) {
        size_t len = strlen(o->model);
        bool slash = len && o->model[len - 1] == '/';
        *dirconf = malloc(len + sizeof "/config.json");
        if (!*dirconf)
            return -1;
        /* as the model reader names it (json_load.c) */
        snprintf(*dirconf, len + sizeof "/config.json", "%s%s", o->model,
                 slash ? "config.json" : "/config.json");
        in[n++] = (struct memest_inpath){"the model's config.json", *dirconf};
    } else if (o->model) {
        in[n++] = (struct memest_inpath){"the model file", o->model};
    }
    if (o->dist.config_path)
        in[n++] = (struct memest_inpath){"the --deepspeed config", o->dist.config_path};
    if (o->dist.fsdp_path)
        in[n++] = (struct memest_inpath){"the --fsdp-config file", o->dist.fsdp_path};
    return n;
}

/* Refuses output files that would overwrite an input, each other or
 * standard output (outfile.h): those derived from --plot and --timeline
 * for nstages pipeline stages too. 0 / -1. */
static int check_outputs(const struct memest_cli *o, int64_t nstages, struct memest_error *err)
{
    struct memest_inpath in[3];
    char *dirconf;
    struct memest_error e = {0};   /* about the command line, not the model read */
    int nin = inputs(o, in, &dirconf), rc = -1;
    struct memest_app_outputs out;
    if (nin < 0) {
        memest_errf(&e, MEMEST_ERR_NOMEM, NULL, "out of memory");
    } else if ((rc = memest_app_output_paths(o, nstages, &out, &e)) == 0) {
        struct memest_outpaths paths = {.in = in, .nin = (size_t)nin, .out = out.v,
                                        .nout = out.n};
        rc = memest_outfile_check_paths(&paths, &e);
        memest_app_output_paths_free(&out);
    }
    free(dirconf);
    if (rc != 0 && err->code == MEMEST_ERR_NONE)
        *err = e;
    return rc;
}

static int run(int argc, char **argv)
{
    struct memest_cli o;
    struct memest_error err = {0};
    if (memest_cli_parse(argc, argv, &o, &err) != 0)
        return memest_app_fail(&o, &err);
    if (o.help)
        return memest_cli_help(stdout, o.help_topic, &err) == 0 ? MEMEST_EXIT_OK
                                                                 : memest_app_fail(&o, &err);
    if (o.dump_options) {
        memest_cli_dump(stdout);
        return MEMEST_EXIT_OK;
    }
    if (o.list_ops) {
        memest_ops_markdown(stdout);
        return MEMEST_EXIT_OK;
    }
    if (o.list_gpus)
        return memest_flow_list_gpus(&o);
    if (o.version) {
        printf("memest %s\n", MEMEST_VERSION);
        return MEMEST_EXIT_OK;
    }
    /* the files named, before anything is read; once the model is cut into
     * its pipeline stages, the files derived for them too (before any
     * estimate) */
    if (check_outputs(&o, 1, &err) != 0)
        return memest_app_fail(&o, &err);
    struct memest_app a;
    int rc = memest_app_open(&a, &o, &err);
    if (rc == MEMEST_EXIT_OK && a.nstages > 1 && check_outputs(&o, a.nstages, &err) != 0)
        rc = memest_error_exit(&err);
    if (rc != MEMEST_EXIT_OK)
        rc = memest_app_fail(&o, &err);
    else if (o.generate)
        rc = memest_flow_generate(&a);
    else if (o.sweep || o.sweep_var)
        rc = memest_flow_sweep(&a);
    else if (o.compare)
        rc = memest_flow_compare(&a);
    else if (o.max_batch)
        rc = memest_flow_max_batch(&a);
    else if (o.advise)
        rc = memest_flow_advise(&a);
    else
        rc = memest_flow_single(&a);
    memest_app_close(&a);
    return rc;
}

int memest_main(int argc, char **argv)
{
    /* past a file-size limit a write fails with EFBIG (exit 6), instead of
     * the signal killing memest with a partial file */
    signal(SIGXFSZ, SIG_IGN);
    hold_closed_std_fds();
    clearerr(stdout);
    stdout_failure_told = false;
    /* the output files stay in their temporaries until the command has
     * succeeded (its result is 0 or 1, standard output written): then all
     * are renamed into place, else none (outfile.h) */
    struct memest_outset outputs;
    memest_outset_begin(&outputs);
    int rc = run(argc, argv);
    errno = 0;
    if (fflush(stdout) != 0)
        rc = memest_stdout_failed(rc, errno);
    else if (ferror(stdout))   /* an earlier write failed and its data is gone */
        rc = memest_stdout_failed(rc, -1);
    if (rc != MEMEST_EXIT_OK && rc != MEMEST_EXIT_NOFIT) {
        memest_outset_abort(&outputs);
    } else {
        struct memest_error err = {0};
        /* the report is out: the message alone (no second --json document) */
        if (memest_outset_commit(&outputs, &err) != 0)
            rc = memest_app_fail(NULL, &err);
    }
    return rc;
}
