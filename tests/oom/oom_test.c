/* oom_test.c - allocation-failure injection for the whole memest command, in
 * the style of SQLite's OOM tests.
 *
 *   oom_test [options] -- MEMEST-ARGUMENTS...
 *
 * This executable replaces glibc's allocator (malloc, calloc, realloc, free
 * and the aligned variants, as glibc's manual allows: libc's own calls and
 * shared libraries such as libcjson use the replacement too) with one that
 * delegates to __libc_malloc and friends, can make the Nth allocation fail
 * (NULL, errno ENOMEM), and keeps the blocks allocated while armed in a list.
 *
 * A clean run counts the allocations of `memest ARGUMENTS` (run in process
 * through memest_main()); then, for each N from 1 to that count, two runs:
 * allocation N fails once (transient), and every allocation from N on fails
 * (persistent). The runs are made in a child process, many in one (a fork
 * costs more than most runs); a fresh child takes over after a run that
 * failed a check, and reruns a run whose allocations 1 to N were not the
 * clean run's (same callers and sizes), which libc's state left by an
 * earlier run can cause. New blocks and the stack are filled with a pattern
 * before each run. Each run must
 *   - end normally (no signal), leaving no block allocated while armed
 *     (a leak), and
 *   - either exit 5 with exactly one error line on stderr ("memest: ...out
 *     of memory", besides warnings), an empty stdout (with --json: the error
 *     document), and in the output directory only complete files (as the
 *     clean run wrote them: an output written before the failure may stay),
 *   - or give exactly the clean run's exit code, stdout, stderr and output
 *     files: the failed allocation was one that libc or memest recovers from
 *     by design (counted and reported as "recovered").
 *
 * Options:
 *   --every K       run only every Kth N, plus the first and the last 100
 *                   (commands with too many allocations to run all)
 *   --exit CODE     the clean run's exit code (default 0; "any")
 *   --partial       (--probe, which prints the estimate before probing) on
 *                   exit 5, stdout may hold the clean run's estimate and then
 *                   lines "probe: ..." ("probe: not run (out of memory)"
 *                   when it did not start)
 *   --no-fail-in L  allocations made by code in the shared library whose
 *                   path contains L are never failed (the fake CUDA driver
 *                   stands for the driver, whose own memory is not memest's)
 *   --warm-up W     run the command W times unarmed before anything else:
 *                   what libc allocates once and keeps (ld.so's lookup data
 *                   after a dlopen()) is then not taken for a leak
 *   --recovered     list the recovered runs
 *   --trace N       only the runs failing allocation N, printing where it is
 *                   made (a backtrace) and what each run gives
 * In the arguments, @TMP stands for a fresh temporary directory (for --plot
 * and --timeline). Prints a summary line; exits 1 on any failure, else 0.
 *
 * memest runs on one thread (MEMEST_THREADS=1: a batch sweep's rows are
 * not spread over threads). Only for builds without sanitizers: ASan and
 * valgrind replace malloc themselves. */
#define _GNU_SOURCE /* dladdr() */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memest/app.h"

/* ---- the allocator ------------------------------------------------------ */

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_memalign(size_t align, size_t size);
void __libc_free(void *p);

/* In front of every block. Blocks allocated while armed are tracked: they
 * carry their allocation number and sit in a doubly linked list. */
struct hdr {
    struct hdr *prev, *next;
    void *base;        /* what glibc returned: the header, or before it when aligned */
    size_t size;       /* the size asked for */
    uint64_t seq;      /* allocation number while armed; 0: not tracked */
    uint64_t magic;    /* MAGIC while allocated */
};
#define HDR sizeof(struct hdr)
#define MAGIC UINT64_C(0x6f6f6d5f74657374)
_Static_assert(sizeof(struct hdr) % 16 == 0, "the header keeps malloc's 16-byte alignment");

static struct {
    bool armed;
    bool persistent;   /* fail every allocation from fail_at on, not only fail_at */
    uint64_t fail_at;  /* 0: never */
    uint64_t count;    /* allocations while armed */
    uint64_t failed;   /* failures injected */
    uint64_t live;     /* tracked blocks not yet freed */
    struct hdr list;   /* the tracked blocks (circular, list.next is the oldest) */
    uint64_t hash;     /* of the callers and sizes of the allocations so far */
    uint64_t fail_hash;   /* hash when allocation fail_at was asked for */
    uint64_t *record;  /* the clean run stores each hash here (record[count]) */
    uint64_t nrecord;  /* record's size */
} A = {.list = {&A.list, &A.list, NULL, 0, 0, 0}};

/* Allocation k's caller and size into the hash of allocations 1..k-1: the
 * same hash at k in two runs means that they made the same allocations. */
static uint64_t mix(uint64_t h, const void *pc, size_t size)
{
    h = (h ^ (uint64_t)(uintptr_t)pc) * UINT64_C(0x100000001b3);
    return (h ^ size) * UINT64_C(0x100000001b3);
}

static struct hdr *hdr_of(void *p)
{
    struct hdr *h = (struct hdr *)((char *)p - HDR);
    if (h->magic != MAGIC) {
        static const char msg[] = "oom_test: free or realloc of a pointer not allocated (or freed twice)\n";
        if (write(2, msg, sizeof msg - 1) < 0) {
            /* nothing more to do */
        }
        abort();
    }
    return h;
}

static uint64_t trace_at; /* --trace N: print where allocation N is made */
static int trace_fd = -1;

static void trace(void)
{
    void *pc[64];
    A.armed = false; /* backtrace() allocates the first time */
    int n = backtrace(pc, 64);
    dprintf(trace_fd, "allocation %llu:\n", (unsigned long long)A.count);
    backtrace_symbols_fd(pc, n, trace_fd);
    A.armed = true;
}

static const char *spare_lib; /* --no-fail-in NAME: allocations made there never fail */

/* Whether the code at pc (an allocation's caller) is in the spared library. */
static bool spared(void *pc)
{
    Dl_info info;
    return spare_lib && dladdr(pc, &info) && info.dli_fname &&
           strstr(info.dli_fname, spare_lib);
}

/* Counts an allocation of size bytes made from pc; true when it must fail
 * (errno set to ENOMEM). */
static bool inject(void *pc, size_t size)
{
    if (!A.armed || spared(pc))
        return false;
    A.count++;
    A.hash = mix(A.hash, pc, size);
    if (A.count < A.nrecord)
        A.record[A.count] = A.hash;
    if (A.count == A.fail_at)
        A.fail_hash = A.hash;
    if (A.count == trace_at)
        trace();
    if (A.fail_at && (A.count == A.fail_at || (A.persistent && A.count > A.fail_at))) {
        A.failed++;
        errno = ENOMEM;
        return true;
    }
    return false;
}

static void track(struct hdr *h, uint64_t seq)
{
    h->seq = seq;
    if (!seq)
        return;
    h->prev = A.list.prev;
    h->next = &A.list;
    A.list.prev->next = h;
    A.list.prev = h;
    A.live++;
}

/* A block of size bytes aligned to align (a power of two), without the
 * injection check; tracked as allocation seq (0: untracked). */
static void *block(size_t align, size_t size, bool zero, uint64_t seq)
{
    size_t off = align <= 16 ? HDR : (HDR + align - 1) / align * align;
    if (size > SIZE_MAX - off) {
        errno = ENOMEM;
        return NULL;
    }
    char *base = align <= 16 ? (zero ? __libc_calloc(1, off + size) : __libc_malloc(off + size))
                             : __libc_memalign(align, off + size);
    if (!base)
        return NULL;
    if (zero && align > 16)
        memset(base + off, 0, size);
    else if (!zero) /* what memest reads before writing shows in its output */
        memset(base + off, 0xA5, size);
    struct hdr *h = (struct hdr *)(base + off - HDR);
    h->base = base;
    h->size = size;
    h->magic = MAGIC;
    h->prev = h->next = NULL;
    track(h, seq);
    return base + off;
}

static void *allocate(size_t align, size_t size, bool zero, void *pc)
{
    if (inject(pc, size))
        return NULL;
    return block(align, size, zero, A.armed ? A.count : 0);
}

void free(void *p)
{
    if (!p)
        return;
    struct hdr *h = hdr_of(p);
    if (h->seq) {
        h->prev->next = h->next;
        h->next->prev = h->prev;
        A.live--;
    }
    h->magic = 0;
    int e = errno;
    __libc_free(h->base);
    errno = e;
}

void *malloc(size_t size)
{
    return allocate(16, size, false, __builtin_return_address(0));
}

void *calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return allocate(16, n * size, true, __builtin_return_address(0));
}

/* A new block and a copy (glibc's realloc(p, 0) frees p and returns NULL).
 * The new block is tracked when the old one was, or when it is new and the
 * allocator is armed. */
void *realloc(void *p, size_t size)
{
    if (!p)
        return allocate(16, size, false, __builtin_return_address(0));
    if (size == 0) {
        free(p);
        return NULL;
    }
    struct hdr *h = hdr_of(p);
    if (inject(__builtin_return_address(0), size))
        return NULL;
    void *q = block(16, size, false, h->seq ? A.count : 0);
    if (!q)
        return NULL;
    memcpy(q, p, h->size < size ? h->size : size);
    free(p);
    return q;
}

static void *aligned(size_t align, size_t size, void *pc)
{
    if (align & (align - 1) || align == 0) {
        errno = EINVAL;
        return NULL;
    }
    return allocate(align, size, false, pc);
}

void *memalign(size_t align, size_t size)
{
    return aligned(align, size, __builtin_return_address(0));
}

void *aligned_alloc(size_t align, size_t size)
{
    return aligned(align, size, __builtin_return_address(0));
}

int posix_memalign(void **out, size_t align, size_t size)
{
    if (align % sizeof(void *) || align & (align - 1) || align == 0)
        return EINVAL;
    int e = errno;
    void *p = allocate(align, size, false, __builtin_return_address(0));
    if (!p) {
        errno = e;
        return ENOMEM;
    }
    *out = p;
    return 0;
}

void *valloc(size_t size)
{
    return aligned((size_t)sysconf(_SC_PAGESIZE), size, __builtin_return_address(0));
}

void *pvalloc(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (size > SIZE_MAX - page) {
        errno = ENOMEM;
        return NULL;
    }
    return aligned(page, (size + page - 1) / page * page, __builtin_return_address(0));
}

size_t malloc_usable_size(void *p)
{
    return p ? hdr_of(p)->size : 0;
}

/* ---- the runs, in a child process ---------------------------------------- */

/* What the parent asks the child for. */
struct command {
    uint64_t fail_at;  /* 0: the clean run */
    int persistent;
};

/* What the child tells the parent after each run. */
struct outcome {
    int exit;          /* memest_main()'s return value */
    uint64_t count;    /* allocations while armed */
    uint64_t failed;   /* failures injected */
    uint64_t fail_hash;   /* the allocations' hash at fail_at */
    uint64_t live;     /* blocks allocated while armed and not freed */
    uint64_t leaked[4];   /* the first leaked blocks' allocation numbers */
    size_t leaked_size[4];
};

struct run {
    bool died;         /* the child ended during the run: status is waitpid()'s */
    int status;
    struct outcome o;
    char *out, *err;   /* stdout, stderr */
    struct file {
        char *name, *content;
    } files[8];        /* the output directory's files, sorted by name */
    size_t nfiles;
};

static uint64_t *g_record;  /* the clean run's allocation hashes (shared memory) */
static uint64_t g_nrecord;
static int g_argc;
static char **g_argv;       /* memest's arguments (argv[0] = "memest") */
static char g_tmp[64] = ""; /* the @TMP directory */
static char g_out[128], g_err[128];
static char g_outbuf[1 << 16], g_errbuf[1 << 16]; /* stdio's buffers, allocated before arming */

/* A fresh copy of the arguments into argv (g_argc + 1 entries), without
 * malloc: getopt_long permutes the array, and memest may write into the
 * strings (as C allows). */
static void copy_args(char **argv)
{
    static char buf[1 << 16];
    size_t used = 0;
    for (int i = 0; i < g_argc; i++) {
        size_t len = strlen(g_argv[i]) + 1;
        if (len > sizeof buf - used)
            abort();
        argv[i] = memcpy(buf + used, g_argv[i], len);
        used += len;
    }
    argv[g_argc] = NULL;
}

/* Fills the stack below the caller with a pattern, as the heap's new blocks
 * are: a run must not read what the run before left there. */
static void __attribute__((noinline)) poison_stack(void)
{
    volatile uint64_t buf[1 << 14];
    for (size_t i = 0; i < sizeof buf / sizeof *buf; i++)
        buf[i] = UINT64_C(0xA5A5A5A5A5A5A5A5);
}

/* memest_main() once, armed as c says, its output in the files g_out and
 * g_err. */
static struct outcome run_armed(const struct command *c)
{
    fflush(stdout);
    fflush(stderr);
    int fo = open(g_out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fe = open(g_err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
        _exit(99);
    close(fo);
    close(fe);
    clearerr(stdout);
    clearerr(stderr);
    char *argv[128];
    copy_args(argv);
    A.count = A.failed = A.fail_hash = 0;
    A.hash = UINT64_C(0xcbf29ce484222325);
    A.fail_at = c->fail_at;
    A.persistent = c->persistent;
    A.record = g_record;
    A.nrecord = c->fail_at ? 0 : g_nrecord;
    poison_stack();
    A.armed = true;
    int rc = memest_main(g_argc, argv);
    fflush(stdout);
    fflush(stderr);
    A.armed = false;
    /* libc keeps dlerror()'s message until the next call; a second call
     * after the message was read frees it */
    while (dlerror()) {
    }
    struct outcome o = {.exit = rc, .count = A.count, .failed = A.failed,
                        .fail_hash = A.fail_hash, .live = A.live};
    size_t i = 0;
    for (struct hdr *h = A.list.next; h != &A.list && i < 4; h = h->next, i++) {
        o.leaked[i] = h->seq;
        o.leaked_size[i] = h->size;
    }
    return o;
}

/* The child: runs what the parent asks until the pipe closes, or until a
 * run leaks (what it leaked stays in this heap: a fresh child goes on). A
 * fork per run would cost more than most runs. */
static void serve(int cmd, int res)
{
    signal(SIGPIPE, SIG_DFL);
    struct command c;
    while (read(cmd, &c, sizeof c) == (ssize_t)sizeof c) {
        struct outcome o = run_armed(&c);
        if (write(res, &o, sizeof o) != (ssize_t)sizeof o || o.live)
            break;
    }
    _exit(0);
}

static struct {
    pid_t pid;         /* 0: none */
    int cmd, res;      /* pipes to and from it */
    uint64_t runs;     /* runs it made */
} C;

static void child_start(void)
{
    int cmd[2], res[2];
    if (pipe(cmd) != 0 || pipe(res) != 0)
        abort();
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        abort();
    if (pid == 0) {
        close(cmd[1]);
        close(res[0]);
        serve(cmd[0], res[1]);
    }
    close(cmd[0]);
    close(res[1]);
    C.pid = pid;
    C.cmd = cmd[1];
    C.res = res[0];
    C.runs = 0;
}

/* Ends the child; its exit status into *status when not NULL. */
static void child_stop(int *status)
{
    if (!C.pid)
        return;
    close(C.cmd);
    close(C.res);
    int st;
    if (waitpid(C.pid, &st, 0) != C.pid)
        abort();
    if (status)
        *status = st;
    C.pid = 0;
}

/* The whole content of a file (NUL-terminated; "" when absent). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    size_t cap = 4096, len = 0;
    char *s = malloc(cap);
    if (!s)
        abort();
    if (f) {
        size_t r;
        while ((r = fread(s + len, 1, cap - len - 1, f)) > 0) {
            len += r;
            if (len + 1 == cap && !(s = realloc(s, cap *= 2)))
                abort();
        }
        fclose(f);
    }
    s[len] = '\0';
    return s;
}

static int cmp_file(const void *a, const void *b)
{
    return strcmp(((const struct file *)a)->name, ((const struct file *)b)->name);
}

/* Reads the files of the @TMP directory into r, sorted, and removes them. */
static void collect_files(struct run *r)
{
    if (!g_tmp[0])
        return;
    DIR *d = opendir(g_tmp);
    if (!d)
        abort();
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", g_tmp, e->d_name);
        if (r->nfiles < sizeof r->files / sizeof *r->files) {
            r->files[r->nfiles].name = strdup(e->d_name);
            r->files[r->nfiles++].content = slurp(path);
        }
        unlink(path);
    }
    closedir(d);
    qsort(r->files, r->nfiles, sizeof *r->files, cmp_file);
}

/* Whether the file is one of the clean run's, with the same content. */
static bool clean_file(const struct run *clean, const struct file *f)
{
    for (size_t i = 0; i < clean->nfiles; i++)
        if (!strcmp(clean->files[i].name, f->name))
            return !strcmp(clean->files[i].content, f->content);
    return false;
}

static bool same_files(const struct run *a, const struct run *b)
{
    if (a->nfiles != b->nfiles)
        return false;
    for (size_t i = 0; i < a->nfiles; i++)
        if (strcmp(a->files[i].name, b->files[i].name) ||
            strcmp(a->files[i].content, b->files[i].content))
            return false;
    return true;
}

static void run_in_child(uint64_t fail_at, bool persistent, struct run *r)
{
    memset(r, 0, sizeof *r);
    if (!C.pid)
        child_start();
    C.runs++;
    struct command c = {fail_at, persistent};
    if (write(C.cmd, &c, sizeof c) != (ssize_t)sizeof c ||
        read(C.res, &r->o, sizeof r->o) != (ssize_t)sizeof r->o) {
        r->died = true;
        child_stop(&r->status);
    } else if (r->o.live) {
        child_stop(NULL);
    }
    r->out = slurp(g_out);
    r->err = slurp(g_err);
    collect_files(r);
}

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
    for (size_t i = 0; i < r->nfiles; i++) {
        free(r->files[i].name);
        free(r->files[i].content);
    }
}

/* Whether the run made the clean run's allocations up to fail_at (the same
 * callers and sizes). */
static bool same_sequence(const struct run *r, uint64_t fail_at)
{
    return r->died || (r->o.count >= fail_at &&
                       (fail_at >= g_nrecord || r->o.fail_hash == g_record[fail_at]));
}

/* The run with allocation fail_at failing (0: none). In the child's process
 * when the runs before left it as a fresh one would be (libc can keep a
 * state: ld.so's after a failed dlopen()); else again in a fresh one. */
static void run_once(uint64_t fail_at, bool persistent, struct run *r)
{
    run_in_child(fail_at, persistent, r);
    if (fail_at && !same_sequence(r, fail_at) && C.runs > 1) {
        run_free(r);
        child_stop(NULL);
        run_in_child(fail_at, persistent, r);
    }
}

/* --warm-up: the command once in this process, not armed, its output
 * discarded, so that libc's one-time allocations that stay by design (the
 * first dlopen()'s) are made before the runs and not counted as leaks. */
static void run_unarmed(void)
{
    fflush(stdout);
    fflush(stderr);
    int save1 = dup(1), save2 = dup(2), null = open("/dev/null", O_WRONLY);
    if (save1 < 0 || save2 < 0 || null < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
        abort();
    char *argv[128];
    copy_args(argv);
    memest_main(g_argc, argv);
    fflush(stdout);
    fflush(stderr);
    if (dup2(save1, 1) < 0 || dup2(save2, 2) < 0)
        abort();
    close(save1);
    close(save2);
    close(null);
    struct run r = {0};
    collect_files(&r);
    run_free(&r);
}

/* ---- the checks ---------------------------------------------------------- */

static bool has_json, partial, show_recovered;
static int warm_up;

/* stderr without the lines of warnings ("memest: warning: ...\n"). */
static void strip_warnings(char *s)
{
    char *w = s;
    for (char *line = s; *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
        if (strncmp(line, "memest: warning: ", 17) != 0) {
            memmove(w, line, len);
            w += len;
        }
        line += len;
    }
    *w = '\0';
}

/* --partial: the offset of the probe's lines ("probe: ...") in stdout. */
static size_t probe_at(const char *out)
{
    const char *p = !strncmp(out, "probe: ", 7) ? out : strstr(out, "\nprobe: ");
    return p ? (size_t)(p - out) + (p != out) : strlen(out);
}

/* --partial: the probe's lines after a failure: each starts "probe: ", and
 * a probe that did not run says why. */
static bool probe_lines_ok(const char *s)
{
    if (!strncmp(s, "probe: not run", 14))
        return !strcmp(s, "probe: not run (out of memory)\n");
    for (const char *nl; *s; s = nl + 1)
        if (strncmp(s, "probe: ", 7) || !(nl = strchr(s, '\n')))
            return false;
    return true;
}

/* Why the run with allocation n failing is wrong, or NULL when it is right;
 * *recovered tells that it ended exactly as the clean run. */
static const char *judge(struct run *r, const struct run *clean, uint64_t n, bool *recovered)
{
    static char why[512];
    *recovered = false;
    if (r->died && WIFSIGNALED(r->status)) {
        snprintf(why, sizeof why, "killed by signal %d", WTERMSIG(r->status));
        return why;
    }
    if (r->died)
        return "the process exited inside memest_main()";
    if (!same_sequence(r, n))
        return "oom_test: allocations 1 to N are not those of the clean run (not deterministic)";
    if (r->o.live) {
        snprintf(why, sizeof why,
                 "leak: %llu blocks allocated while armed are not freed (allocation #%llu of "
                 "%zu bytes first)",
                 (unsigned long long)r->o.live, (unsigned long long)r->o.leaked[0],
                 r->o.leaked_size[0]);
        return why;
    }
    if (r->o.exit == clean->o.exit && !strcmp(r->out, clean->out) &&
        !strcmp(r->err, clean->err) && same_files(r, clean)) {
        *recovered = true;
        return NULL;
    }
    if (r->o.exit != MEMEST_EXIT_RUNTIME) {
        snprintf(why, sizeof why, "exit %d, expected 5 (or the clean run's %d and output)",
                 r->o.exit, clean->o.exit);
        return why;
    }
    strip_warnings(r->err);
    char *nl = strchr(r->err, '\n');
    if (strncmp(r->err, "memest: ", 8) != 0 || !nl || nl[1] || !strstr(r->err, "out of memory"))
        return "stderr is not one \"memest: ...out of memory\" line";
    for (size_t i = 0; i < r->nfiles; i++)
        if (!clean_file(clean, &r->files[i])) {
            snprintf(why, sizeof why, "a partial or stray output file is left: %s",
                     r->files[i].name);
            return why;
        }
    if (!r->out[0])
        return NULL;
    if (has_json && !strncmp(r->out, "{\n", 2) && strstr(r->out, "\"code\": \"nomem\"") &&
        !strstr(r->out, "}\n{"))
        return NULL;
    if (partial && !strncmp(clean->out, r->out, probe_at(r->out)) &&
        probe_at(r->out) == probe_at(clean->out) && probe_lines_ok(r->out + probe_at(r->out)))
        return NULL;
    return "stdout is not empty (nor the JSON error document)";
}

/* True the first time a kind of failure is seen: its reason and stderr with
 * the digits left out (up to 32 kinds; later ones are not printed). */
static bool first_of_kind(const char *why, const char *err)
{
    static char kinds[32][256];
    static size_t n;
    char k[256];
    size_t len = 0;
    for (const char *s = why; *s && len < 128; s++)
        if (*s < '0' || *s > '9')
            k[len++] = *s;
    for (const char *s = err; *s && len < sizeof k - 1; s++)
        if (*s < '0' || *s > '9')
            k[len++] = *s;
    k[len] = '\0';
    for (size_t i = 0; i < n; i++)
        if (!strcmp(kinds[i], k))
            return false;
    if (n == 32)
        return false;
    memcpy(kinds[n++], k, len + 1);
    return true;
}

/* Removes the files and directories made in main() under tmpl. */
static void remove_dirs(const char *tmpl)
{
    rmdir(g_tmp);
    unlink(g_out);
    unlink(g_err);
    rmdir(tmpl);
}

static void print_args(FILE *f)
{
    for (int i = 1; i < g_argc; i++)
        fprintf(f, " %s", g_argv[i]);
}

int main(int argc, char **argv)
{
    /* one thread: the replacement allocator counts allocations in one
     * order, and a batch sweep's rows would run on several (fit.sweep_threads
     * and CI's ThreadSanitizer run check the threads) */
    setenv("MEMEST_THREADS", "1", 1);
    setvbuf(stdout, g_outbuf, _IOFBF, sizeof g_outbuf);
    setvbuf(stderr, g_errbuf, _IOLBF, sizeof g_errbuf);
    uint64_t every = 1;
    int want_exit = 0, i = 1;
    for (; i < argc && strcmp(argv[i], "--"); i++) {
        if (!strcmp(argv[i], "--every") && i + 1 < argc)
            every = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--exit") && i + 1 < argc)
            want_exit = strcmp(argv[++i], "any") ? atoi(argv[i]) : -1;
        else if (!strcmp(argv[i], "--trace") && i + 1 < argc)
            trace_at = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--no-fail-in") && i + 1 < argc)
            spare_lib = argv[++i];
        else if (!strcmp(argv[i], "--warm-up") && i + 1 < argc)
            warm_up = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--recovered"))
            show_recovered = true;
        else if (!strcmp(argv[i], "--partial"))
            partial = true;
        else
            break;
    }
    if (i >= argc || strcmp(argv[i], "--") || every == 0 || argc - i > 100) {
        fprintf(stderr, "usage: oom_test [--every K] [--exit CODE] [--partial] [--no-fail-in LIB] "
                        "[--warm-up W] [--recovered] [--trace N] -- ARGS...\n");
        return 2;
    }
    char tmpl[] = "/tmp/memest-oom-XXXXXX";
    if (!mkdtemp(tmpl))
        abort();
    snprintf(g_tmp, sizeof g_tmp, "%s/out", tmpl);
    snprintf(g_out, sizeof g_out, "%s/stdout", tmpl);
    snprintf(g_err, sizeof g_err, "%s/stderr", tmpl);
    if (mkdir(g_tmp, 0700) != 0)
        abort();
    g_argc = argc - i;
    g_argv = calloc((size_t)g_argc + 1, sizeof *g_argv);
    g_argv[0] = "memest";
    for (int k = 1; k < g_argc; k++) {
        const char *a = argv[i + k], *at = strstr(a, "@TMP");
        if (at) {
            size_t len = strlen(a) + strlen(g_tmp);
            g_argv[k] = malloc(len);
            snprintf(g_argv[k], len, "%.*s%s%s", (int)(at - a), a, g_tmp, at + 4);
        } else {
            g_argv[k] = argv[i + k];
        }
        has_json |= !strcmp(g_argv[k], "--json");
    }

    trace_fd = dup(2);
    signal(SIGPIPE, SIG_IGN); /* a child that died is seen on the result pipe */
    g_nrecord = (uint64_t)1 << 24;
    g_record = mmap(NULL, g_nrecord * sizeof *g_record, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (g_record == MAP_FAILED)
        abort();
    for (int w = 0; w < warm_up; w++)
        run_unarmed();
    struct run clean;
    run_once(0, false, &clean);
    if (trace_at) { /* only the runs with allocation trace_at failing */
        for (int mode = 0; mode < 2; mode++) {
            struct run r;
            run_once(trace_at, mode == 1, &r);
            bool rec;
            const char *why = judge(&r, &clean, trace_at, &rec);
            fprintf(stderr, "%s: exit %d, %s\nstdout:\n%s\nstderr:\n%s\n",
                    mode ? "persistent" : "transient", r.o.exit,
                    why ? why : rec ? "recovered" : "ok", r.out, r.err);
            run_free(&r);
        }
        child_stop(NULL);
        run_free(&clean);
        remove_dirs(tmpl);
        return 0;
    }
    uint64_t total = clean.o.count;
    int fails = 0;
    bool clean_ok = true;
    if (clean.died || (want_exit >= 0 && clean.o.exit != want_exit) || clean.o.live) {
        fprintf(stderr, "oom_test: the clean run of memest");
        print_args(stderr);
        fprintf(stderr, " exits %d (expected %d) with %llu blocks leaked (allocation #%llu "
                "of %zu bytes first)\nstderr: %s", clean.o.exit, want_exit,
                (unsigned long long)clean.o.live, (unsigned long long)clean.o.leaked[0],
                clean.o.leaked_size[0], clean.err);
        fails++;
        clean_ok = false;
    }
    uint64_t runs[2] = {0}, recovered[2] = {0}, injected[2] = {0};
    for (uint64_t n = 1; n <= total && clean_ok; n++) {
        if (n % every && n > 100 && n + 100 <= total)
            continue;
        for (int mode = 0; mode < 2; mode++) {
            struct run r;
            run_once(n, mode == 1, &r);
            bool rec;
            const char *why = judge(&r, &clean, n, &rec);
            if (why)   /* the next run in a fresh process */
                child_stop(NULL);
            runs[mode]++;
            injected[mode] += r.o.failed;
            recovered[mode] += rec;
            if (rec && show_recovered)
                fprintf(stderr, "recovered: allocation %llu failing (%s)\n",
                        (unsigned long long)n, mode ? "persistent" : "transient");
            if (why && ++fails && first_of_kind(why, r.err)) {
                fprintf(stderr, "FAIL: memest");
                print_args(stderr);
                fprintf(stderr, ": allocation %llu of %llu failing (%s): %s\n  stderr: %s",
                        (unsigned long long)n, (unsigned long long)total,
                        mode ? "persistent" : "transient", why, r.err[0] ? r.err : "(empty)\n");
            }
            run_free(&r);
        }
    }
    child_stop(NULL);
    printf("memest");
    print_args(stdout);
    printf(": %llu allocations, exit %d; %s: %llu transient + %llu persistent runs "
           "(%llu + %llu recovered by design), %llu failures injected; %d failed\n",
           (unsigned long long)total, clean.o.exit, every > 1 ? "sampled" : "exhaustive",
           (unsigned long long)runs[0], (unsigned long long)runs[1],
           (unsigned long long)recovered[0], (unsigned long long)recovered[1],
           (unsigned long long)(injected[0] + injected[1]), fails);
    run_free(&clean);
    remove_dirs(tmpl);
    return fails ? 1 : 0;
}
