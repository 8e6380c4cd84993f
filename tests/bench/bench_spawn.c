/* bench_spawn - runs a command N times and prints the median wall-clock
 * time, the fastest run and the peak resident memory of the command itself
 * (wait4's rusage of each child, which a fork from a small process does not
 * inflate).  A tool of tests/bench/run.sh, not part of memest.
 *
 *   bench_spawn [-a BYTES] [-t SECONDS] N command [args...]
 *   -> "median_ms min_ms max_rss_kib exit_code"
 *
 * -a caps the command's address space (RLIMIT_AS, as prlimit --as does) and
 * -t kills a run after that many seconds (exit code 124, as timeout(1)
 * reports it; the remaining runs are skipped): set in the child itself, so
 * that no prlimit or timeout process sits between the timer and the command.
 * exit_code is the last run's: its exit status, or 128 + the signal.
 * The command's standard output and error go to /dev/null. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t timed_out;

static void on_alarm(int sig)
{
    (void)sig;
    timed_out = 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    *out = strtol(s, &end, 10);
    return !errno && end != s && !*end && *out >= lo && *out <= hi;
}

static _Noreturn void usage(void)
{
    fprintf(stderr, "usage: bench_spawn [-a BYTES] [-t SECONDS] N command [args...]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    long n = 0, as_bytes = 0, limit_s = 0, runs = 0;
    double *ms;
    long max_rss = 0;
    int code = 0, opt;
    struct sigaction sa;

    while ((opt = getopt(argc, argv, "+a:t:")) != -1) {
        if (opt == 'a' && parse_long(optarg, 1, LONG_MAX, &as_bytes))
            continue;
        if (opt == 't' && parse_long(optarg, 1, 86400, &limit_s))
            continue;
        usage();
    }
    if (argc - optind < 2 || !parse_long(argv[optind], 1, 100000, &n))
        usage();
    argv += optind;
    ms = calloc((size_t)n, sizeof *ms);
    if (!ms) {
        perror("bench_spawn");
        return 2;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: wait4 returns EINTR */
    sigaction(SIGALRM, &sa, NULL);
    for (long i = 0; i < n && !timed_out; i++) {
        pid_t pid;
        int st;
        struct rusage ru;
        double t0 = now_ms();
        /* fork, not vfork: the child's peak RSS must not include ours */
        pid = fork();
        if (pid < 0) {
            perror("bench_spawn: fork");
            return 2;
        }
        if (pid == 0) {
            int fd = open("/dev/null", O_WRONLY);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
            }
            if (as_bytes) {
                struct rlimit rl = {(rlim_t)as_bytes, (rlim_t)as_bytes};
                if (setrlimit(RLIMIT_AS, &rl) != 0)
                    _exit(126);
            }
            execvp(argv[1], argv + 1);
            _exit(127);
        }
        if (limit_s)
            alarm((unsigned)limit_s);
        for (;;) {
            if (timed_out)
                kill(pid, SIGKILL);
            if (wait4(pid, &st, 0, &ru) >= 0)
                break;
            if (errno != EINTR) {
                perror("bench_spawn: wait4");
                return 2;
            }
        }
        alarm(0);
        ms[runs++] = now_ms() - t0;
        if (ru.ru_maxrss > max_rss)
            max_rss = ru.ru_maxrss;
        code = timed_out ? 124 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
    printf("%.3f %.3f %ld %d\n", runs % 2 ? ms[runs / 2] : (ms[runs / 2 - 1] + ms[runs / 2]) / 2,
           ms[0], max_rss, code);
    free(ms);
    return 0;
}
