/* memest_main.c - the memest command: parse the options, open the model
 * once, run one flow (one estimate, a sweep, the largest batch, or advice)
 * and return its exit code, after checking that standard output took
 * everything written to it. The flows live in src/flow_*.c and src/app/advise.c
 * (app.h). In the core library, so that tests can run the whole command in
 * process (tests/oom/oom_test.c injects allocation failures this way). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "memest/app.h"
#include "memest/cli.h"
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

static int run(int argc, char **argv)
{
    struct memest_cli o;
    struct memest_error err = {0};
    if (memest_cli_parse(argc, argv, &o, &err) != 0)
        return memest_app_fail(&o, &err);
    if (o.help) {
        memest_cli_usage(stdout);
        return MEMEST_EXIT_OK;
    }
    if (o.list_ops) {
        memest_ops_print_markdown(stdout);
        return MEMEST_EXIT_OK;
    }
    if (o.list_gpus)
        return memest_flow_list_gpus(&o);
    if (o.version) {
        printf("memest %s\n", MEMEST_VERSION);
        return MEMEST_EXIT_OK;
    }
    struct memest_outpaths paths = {.model = o.model, .plot = o.plot_path,
                                    .timeline = o.timeline_path};
    if (memest_outfile_check_paths(&paths, &err) != 0)
        return memest_app_fail(&o, &err);
    struct memest_app a;
    int rc = memest_app_open(&a, &o, &err);
    if (rc == MEMEST_EXIT_OK && a.ds.micro_batch && !o.batch_set)
        o.batch = a.ds.micro_batch;   /* train_micro_batch_size_per_gpu */
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
    int rc = run(argc, argv);
    errno = 0;
    if (fflush(stdout) != 0)
        rc = memest_stdout_failed(rc, errno);
    else if (ferror(stdout))   /* an earlier write failed and its data is gone */
        rc = memest_stdout_failed(rc, -1);
    return rc;
}
