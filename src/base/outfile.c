/* outfile.c - output files written whole or not at all (a temporary file
 * renamed onto the target), and the refusal of output paths that would
 * overwrite the model, another output or standard output (outfile.h). */
#define _XOPEN_SOURCE 700 /* realpath() (XSI) */
#include "memest/outfile.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The error of a failed write: errnum < 0 when the system gave no reason.
 * A fresh record, so that the message names the output, not the model file
 * the caller's record may already carry. Returns -1. */
static int fail(struct memest_error *err, const char *path, int errnum)
{
    struct memest_error e = {0};
    if (errnum == ENOMEM)
        memest_errf(&e, MEMEST_ERR_NOMEM, NULL, "out of memory");
    else
        memest_errf(&e, MEMEST_ERR_OUTPUT, NULL, "cannot write %s: %s", path,
                    errnum > 0 ? strerror(errnum) : "a write failed");
    if (err && err->code == MEMEST_ERR_NONE)
        *err = e;
    return -1;
}

static void release(struct memest_outfile *of)
{
    free(of->target);
    free(of->tmp);
    of->target = of->tmp = NULL;
    of->f = NULL;
}

/* "DIR/.NAME.XXXXXX" for target "DIR/NAME" (NAME cut to 100 bytes, so that
 * the name stays within the file system's limit); NULL when out of memory. */
static char *tmp_name(const char *target)
{
    const char *slash = strrchr(target, '/');
    size_t dirlen = slash ? (size_t)(slash - target) + 1 : 0;
    size_t blen = strlen(target + dirlen);
    if (blen > 100)
        blen = 100;
    char *t = malloc(dirlen + 1 + blen + sizeof ".XXXXXX");
    if (!t)
        return NULL;
    memcpy(t, target, dirlen);
    t[dirlen] = '.';
    memcpy(t + dirlen + 1, target + dirlen, blen);
    memcpy(t + dirlen + 1 + blen, ".XXXXXX", sizeof ".XXXXXX");
    return t;
}

int memest_outfile_open(struct memest_outfile *of, const char *path, struct memest_error *err)
{
    memset(of, 0, sizeof *of);
    of->path = path;
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {   /* a device, a FIFO: written in place */
        of->f = fopen(path, "w");
        return of->f ? 0 : fail(err, path, errno);
    }
    mode_t mode;
    if (exists) {
        /* a file the user may not write stays as it is, as with fopen */
        if (access(path, W_OK) != 0)
            return fail(err, path, errno);
        of->target = realpath(path, NULL);   /* through symbolic links */
        mode = st.st_mode & 0777;
    } else {
        of->target = strdup(path);
        mode_t mask = umask(0);
        umask(mask);
        mode = 0666 & ~mask;
    }
    int e = of->target ? ENOMEM : errno;
    if (!of->target || !(of->tmp = tmp_name(of->target))) {
        release(of);
        return fail(err, path, e);
    }
    int fd = mkstemp(of->tmp);
    if (fd < 0) {
        e = errno;
        release(of);
        return fail(err, path, e);
    }
    if (fchmod(fd, mode) != 0 || !(of->f = fdopen(fd, "w"))) {
        e = errno;
        close(fd);
        unlink(of->tmp);
        release(of);
        return fail(err, path, e);
    }
    return 0;
}

int memest_outfile_commit(struct memest_outfile *of, struct memest_error *err)
{
    int e = 0;
    errno = 0;
    if (fflush(of->f) != 0)
        e = errno ? errno : -1;
    else if (ferror(of->f))   /* an earlier write failed and its data is gone */
        e = -1;
    errno = 0;
    if (fclose(of->f) != 0 && e == 0)
        e = errno ? errno : -1;
    if (e == 0 && of->tmp && rename(of->tmp, of->target) != 0)
        e = errno;
    if (e != 0 && of->tmp)
        unlink(of->tmp);
    release(of);
    return e != 0 ? fail(err, of->path, e) : 0;
}

void memest_outfile_abort(struct memest_outfile *of)
{
    if (of->f)
        fclose(of->f);
    if (of->tmp)
        unlink(of->tmp);
    release(of);
}

/* ---- paths that must not be written ---- */

/* realpath of path's directory, then "/" and its last component; NULL
 * when the directory cannot be resolved (or out of memory). */
static char *resolve(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    char *rdir = dir ? realpath(dir, NULL) : NULL;
    free(dir);
    if (!rdir)
        return NULL;
    const char *base = slash ? slash + 1 : path;
    size_t n = strlen(rdir) + 1 + strlen(base) + 1;
    char *r = malloc(n);
    if (r)
        snprintf(r, n, "%s/%s", rdir, base);
    free(rdir);
    return r;
}

/* Whether writing a and b would write the same file: the same existing
 * regular file (device and inode; writing /dev/null twice harms nothing),
 * or, when neither exists, the same name in the same directory. */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea != eb)
        return false;
    if (ea)
        return S_ISREG(sa.st_mode) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char *ra = resolve(a), *rb = resolve(b);
    bool same = ra && rb ? strcmp(ra, rb) == 0 : strcmp(a, b) == 0;
    free(ra);
    free(rb);
    return same;
}

/* Whether descriptor fd is the regular file `path`. */
static bool fd_is(int fd, const char *path)
{
    struct stat sf, sp;
    return fstat(fd, &sf) == 0 && S_ISREG(sf.st_mode) && stat(path, &sp) == 0 &&
           sf.st_dev == sp.st_dev && sf.st_ino == sp.st_ino;
}

int memest_outfile_check_paths(const struct memest_outpaths *o, struct memest_error *err)
{
    static const char *const std_name[] = {NULL, "standard output", "standard error"};
    const struct {
        const char *opt, *path;
    } out[] = {{"--plot", o->plot}, {"--timeline", o->timeline}};
    for (size_t i = 0; i < sizeof out / sizeof *out; i++) {
        const char *p = out[i].path;
        if (!p)
            continue;
        if (!*p)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL, "%s: expected a file name, got ''",
                               out[i].opt);
        if (o->model && same_file(p, o->model))
            return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                               "%s %s is the model file: it would be overwritten", out[i].opt, p);
        for (size_t j = 0; j < i; j++)
            if (out[j].path && same_file(p, out[j].path))
                return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                                   "%s %s and %s %s are the same file", out[j].opt, out[j].path,
                                   out[i].opt, p);
        for (int fd = 1; fd <= 2; fd++)
            if (fd_is(fd, p))
                return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                                   "%s %s is also %s: one would overwrite the other", out[i].opt,
                                   p, std_name[fd]);
    }
    if (o->model && fd_is(1, o->model))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "standard output is the model file %s: it would be overwritten",
                           o->model);
    return 0;
}
