/* bounded.c - runs a command within a time and memory bound, for the hostile
 * corpus (tests/hostile/): every case must finish within SECONDS of wall
 * time and its processes' peak resident memory within MIB.
 *
 *     bounded SECONDS MIB COMMAND [ARG...]
 *
 * The command runs in a process group of its own; past SECONDS the whole
 * group is killed and bounded exits 124. Its exit code is passed on, unless
 * the largest resident set of the command or any process it waited for
 * exceeded MIB MiB (exit 125). Unless BOUNDED_NO_AS is set (sanitizers
 * reserve terabytes of address space), the address space of the command is
 * also capped at 4 x MIB, so that a runaway allocation fails instead of
 * taking the machine down. */
#define _DEFAULT_SOURCE /* wait4() */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t expired;

static void on_alarm(int sig)
{
    (void)sig;
    expired = 1;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bounded SECONDS MIB COMMAND [ARG...]\n");
        return 2;
    }
    char *end;
    errno = 0;
    double secs = strtod(argv[1], &end);
    if (errno || *end || !(secs > 0 && secs <= 3600)) {
        fprintf(stderr, "bounded: bad SECONDS '%s'\n", argv[1]);
        return 2;
    }
    unsigned long long mib = strtoull(argv[2], &end, 10);
    if (errno || *end || mib == 0 || mib > (1ull << 20)) {
        fprintf(stderr, "bounded: bad MIB '%s'\n", argv[2]);
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        perror("bounded: fork");
        return 2;
    }
    if (pid == 0) {
        setpgid(0, 0);
        if (!getenv("BOUNDED_NO_AS")) {
            struct rlimit rl = {(rlim_t)(mib * 4) << 20, (rlim_t)(mib * 4) << 20};
            setrlimit(RLIMIT_AS, &rl);
        }
        execvp(argv[3], argv + 3);
        fprintf(stderr, "bounded: cannot run %s: %s\n", argv[3], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 0}, {(time_t)secs, (suseconds_t)((secs - (time_t)secs) * 1e6)}};
    setitimer(ITIMER_REAL, &it, NULL);
    int status = 0;
    struct rusage ru;
    for (;;) {
        pid_t w = wait4(pid, &status, 0, &ru);
        if (w == pid)
            break;
        if (w < 0 && errno == EINTR && expired) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            fprintf(stderr, "bounded: over %g s: killed\n", secs);
            return 124;
        }
        if (w < 0 && errno != EINTR) {
            perror("bounded: wait");
            return 2;
        }
    }
    kill(-pid, SIGKILL);   /* what the command left running in its group */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    struct rusage rc;
    getrusage(RUSAGE_CHILDREN, &rc);
    long peak = ru.ru_maxrss > rc.ru_maxrss ? ru.ru_maxrss : rc.ru_maxrss;   /* KiB */
    if (getenv("BOUNDED_REPORT"))
        fprintf(stderr, "bounded: %.3f s, %ld KiB peak\n", took, peak);
    if ((unsigned long long)peak > mib * 1024) {
        fprintf(stderr, "bounded: peak resident memory %ld KiB, over %llu MiB\n", peak, mib);
        return 125;
    }
    if (took > secs) {
        fprintf(stderr, "bounded: took %.3f s, over %g s\n", took, secs);
        return 124;
    }
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "bounded: killed by signal %d\n", WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    return WEXITSTATUS(status);
}
