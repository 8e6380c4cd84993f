/* outfile.c - output files written whole or not at all (a temporary file
 * renamed onto the target), the outputs of one command renamed together
 * or not at all (a set), and the refusal of output paths that would
 * overwrite an input, another output or standard output (outfile.h). */
#define _XOPEN_SOURCE 700 /* realpath() (XSI) */
#include "memest/outfile.h"

#include <errno.h>
#include <limits.h>
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

/* ENAMETOOLONG when a file `path` (that does not exist) cannot be made
 * for the length of its name or path, ENOMEM out of memory, else 0. */
static int name_too_long(const char *path)
{
    if (strlen(path) >= PATH_MAX)
        return ENAMETOOLONG;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir)
        return ENOMEM;
    errno = 0;
    long max = pathconf(dir, _PC_NAME_MAX);   /* -1: no limit, or no such directory */
    free(dir);
    return max > 0 && strlen(base) > (size_t)max ? ENAMETOOLONG : 0;
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
        /* a name the file system cannot hold fails here, not when the
         * temporary (its name cut short) is renamed at the end */
        int e = name_too_long(path);
        if (e)
            return fail(err, path, e);
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

/* The active set (memest_outset_begin), NULL: commits rename at once. */
static struct memest_outset *active;

struct memest_outset_entry {
    char *tmp;      /* the complete temporary; NULL once renamed */
    char *target;   /* where it goes */
    char *path;     /* the target as given, for messages */
    char *backup;   /* while the set is committed: a hard link of the old target */
    bool existed;   /* the target existed when the set was committed */
};

/* Hands the complete temporary of `of` to the active set (a file of the
 * same target already there gives way to it). 0, or an errno. */
static int to_set(struct memest_outfile *of)
{
    struct memest_outset *s = active;
    for (size_t i = 0; i < s->n; i++) {
        struct memest_outset_entry *x = &s->e[i];
        if (strcmp(x->target, of->target) != 0)
            continue;
        char *path = strdup(of->path);
        if (!path)
            return ENOMEM;
        unlink(x->tmp);   /* the earlier content of the same file */
        free(x->tmp);
        free(x->path);
        x->tmp = of->tmp;
        x->path = path;
        free(of->target);
        of->tmp = of->target = NULL;
        return 0;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        struct memest_outset_entry *e = realloc(s->e, cap * sizeof *e);
        if (!e)
            return ENOMEM;
        s->e = e;
        s->cap = cap;
    }
    char *path = strdup(of->path);
    if (!path)
        return ENOMEM;
    s->e[s->n++] = (struct memest_outset_entry){.tmp = of->tmp, .target = of->target,
                                                .path = path};
    of->tmp = of->target = NULL;
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
    if (e == 0 && of->tmp && active)
        e = to_set(of);
    else if (e == 0 && of->tmp && rename(of->tmp, of->target) != 0)
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

/* ---- the outputs of one command ---- */

void memest_outset_begin(struct memest_outset *set)
{
    memset(set, 0, sizeof *set);
    active = set;
}

static void outset_end(struct memest_outset *set)
{
    for (size_t i = 0; i < set->n; i++) {
        struct memest_outset_entry *x = &set->e[i];
        if (x->tmp)
            unlink(x->tmp);
        if (x->backup)
            unlink(x->backup);
        free(x->tmp);
        free(x->backup);
        free(x->target);
        free(x->path);
    }
    free(set->e);
    memset(set, 0, sizeof *set);
    if (active == set)
        active = NULL;
}

/* A second name of the regular file `target` (a hard link beside it, named
 * as a temporary), so that its content can be put back; NULL when the file
 * system does not allow one (then it cannot be). */
static char *backup_link(const char *target)
{
    char *b = tmp_name(target);
    if (!b)
        return NULL;
    int fd = mkstemp(b);   /* a free name, */
    if (fd >= 0) {
        close(fd);
        unlink(b);         /* then the old file under it */
        if (link(target, b) == 0)
            return b;
    }
    free(b);
    return NULL;
}

int memest_outset_commit(struct memest_outset *set, struct memest_error *err)
{
    if (active == set)
        active = NULL;
    size_t i = 0;
    int e = 0;
    for (; i < set->n; i++) {
        struct memest_outset_entry *x = &set->e[i];
        struct stat st;
        x->existed = lstat(x->target, &st) == 0;
        if (x->existed && S_ISREG(st.st_mode))
            x->backup = backup_link(x->target);
        if (rename(x->tmp, x->target) != 0) {
            e = errno;
            break;
        }
        free(x->tmp);
        x->tmp = NULL;
    }
    if (e == 0) {
        outset_end(set);   /* removes the backups */
        return 0;
    }
    /* put back what the renames before the failed one replaced */
    for (size_t j = i; j-- > 0;) {
        struct memest_outset_entry *x = &set->e[j];
        if (x->backup && rename(x->backup, x->target) == 0) {
            free(x->backup);
            x->backup = NULL;
        } else if (!x->existed) {
            unlink(x->target);
        }
    }
    fail(err, set->e[i].path, e);
    outset_end(set);
    return -1;
}

void memest_outset_abort(struct memest_outset *set)
{
    outset_end(set);
}

/* ---- paths that must not be written ---- */

/* realpath of the directory `dir` (len bytes of a path; 0: "."), kept in
 * *cache (the last directory resolved, *cdir its spelling) for the next
 * path in the same one; NULL when it cannot be resolved or out of memory
 * (*nomem then true). */
static const char *resolve_dir(const char *dir, size_t len, char **cdir, char **cache, bool *nomem)
{
    if (*cdir && strlen(*cdir) == len && memcmp(*cdir, dir, len) == 0)
        return *cache;
    free(*cdir);
    free(*cache);
    *cache = NULL;
    *cdir = len ? strndup(dir, len) : strdup("");
    if (!*cdir) {
        *nomem = true;
        return NULL;
    }
    errno = 0;
    *cache = realpath(len ? *cdir : ".", NULL);
    if (!*cache && errno == ENOMEM)
        *nomem = true;
    return *cache;
}

/* The resolved directory of path, then "/" and its last component (path
 * itself when the directory cannot be resolved); NULL when out of memory. */
static char *resolve(const char *path, char **cdir, char **cache, bool *nomem)
{
    const char *slash = strrchr(path, '/');
    size_t dlen = slash ? (slash == path ? 1 : (size_t)(slash - path)) : 0;
    const char *rdir = resolve_dir(path, dlen, cdir, cache, nomem);
    if (*nomem)
        return NULL;
    if (!rdir) {
        char *r = strdup(path);
        *nomem = !r;
        return r;
    }
    const char *base = slash ? slash + 1 : path;
    size_t n = strlen(rdir) + 1 + strlen(base) + 1;
    char *r = malloc(n);
    if (r)
        snprintf(r, n, "%s/%s", rdir, base);
    *nomem = !r;
    return r;
}

/* What writing a file would write: an existing regular file (by device
 * and inode), a file that does not exist yet (by resolved name), or
 * something else (a device, a FIFO: writing it twice harms nothing). */
enum kind { K_OTHER, K_INODE, K_NAME };
struct ident {
    enum kind kind;
    dev_t dev;
    ino_t ino;
    char *name;    /* K_NAME */
    size_t i;      /* its index among the outputs */
};

static int ident_of(const char *path, size_t i, struct ident *d, char **cdir, char **cache)
{
    struct stat st;
    memset(d, 0, sizeof *d);
    d->i = i;
    if (stat(path, &st) == 0) {
        d->kind = S_ISREG(st.st_mode) ? K_INODE : K_OTHER;
        d->dev = st.st_dev;
        d->ino = st.st_ino;
        return 0;
    }
    bool nomem = false;
    d->kind = K_NAME;
    d->name = resolve(path, cdir, cache, &nomem);
    return nomem ? -1 : 0;
}

static int cmp_ident(const struct ident *a, const struct ident *b)
{
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->kind == K_INODE) {
        if (a->dev != b->dev)
            return a->dev < b->dev ? -1 : 1;
        if (a->ino != b->ino)
            return a->ino < b->ino ? -1 : 1;
    } else if (a->kind == K_NAME) {
        int c = strcmp(a->name, b->name);
        if (c)
            return c;
    }
    return 0;
}

static int by_ident(const void *x, const void *y)
{
    const struct ident *a = x, *b = y;
    int c = cmp_ident(a, b);
    return c ? c : (a->i > b->i) - (a->i < b->i);
}

/* Whether writing a would write b: the same existing regular file, or the
 * same name when neither exists. */
static bool same(const struct ident *a, const struct ident *b)
{
    return a->kind != K_OTHER && cmp_ident(a, b) == 0;
}

/* Whether descriptor fd is the regular file `path`. */
static bool fd_is(int fd, const char *path)
{
    struct stat sf, sp;
    return fstat(fd, &sf) == 0 && S_ISREG(sf.st_mode) && stat(path, &sp) == 0 &&
           sf.st_dev == sp.st_dev && sf.st_ino == sp.st_ino;
}

/* An output as messages name it: "--plot q.svg", or for a derived file
 * "q-stage1.svg (which --plot q.svg also writes)". */
static const char *desc(const struct memest_outpath *p, char *buf, size_t n)
{
    if (strcmp(p->path, p->given) == 0)
        snprintf(buf, n, "%s %s", p->opt, p->given);
    else
        snprintf(buf, n, "%s (which %s %s also writes)", p->path, p->opt, p->given);
    return buf;
}

/* The first fault of the outputs, in their order: for each, an input, an
 * earlier output, standard output or error. */
static int check_outputs(const struct memest_outpaths *o, const struct ident *in,
                         const struct ident *out, const size_t *first, struct memest_error *err)
{
    static const char *const std_name[] = {NULL, "standard output", "standard error"};
    struct ident std[3] = {{0}};
    for (int fd = 1; fd <= 2; fd++) {
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
            std[fd] = (struct ident){.kind = K_INODE, .dev = st.st_dev, .ino = st.st_ino};
    }
    char a[600], b[600];
    for (size_t i = 0; i < o->nout; i++) {
        const struct memest_outpath *p = &o->out[i];
        for (size_t k = 0; k < o->nin; k++)
            if (same(&out[i], &in[k]))
                return memest_errf(err, MEMEST_ERR_USAGE, NULL, "%s is %s: it would be overwritten",
                                   desc(p, a, sizeof a), o->in[k].what);
        if (first[i] < i)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL, "%s and %s are the same file",
                               desc(&o->out[first[i]], a, sizeof a), desc(p, b, sizeof b));
        for (int fd = 1; fd <= 2; fd++)
            if (std[fd].kind == K_INODE && same(&out[i], &std[fd]))
                return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                                   "%s is also %s: one would overwrite the other",
                                   desc(p, a, sizeof a), std_name[fd]);
    }
    return 0;
}

int memest_outfile_check_paths(const struct memest_outpaths *o, struct memest_error *err)
{
    for (size_t i = 0; i < o->nout; i++)
        if (!*o->out[i].given || !*o->out[i].path)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL, "%s: expected a file name, got ''",
                               o->out[i].opt);
    size_t n = o->nout, nin = o->nin;
    struct ident *in = calloc(nin ? nin : 1, sizeof *in);
    struct ident *out = calloc(n ? n : 1, sizeof *out);
    struct ident *sorted = calloc(n ? n : 1, sizeof *sorted);
    size_t *first = calloc(n ? n : 1, sizeof *first);
    char *cdir = NULL, *cache = NULL;
    int rc = in && out && sorted && first ? 0 : -1;
    for (size_t k = 0; rc == 0 && k < nin; k++)
        rc = ident_of(o->in[k].path, k, &in[k], &cdir, &cache);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = ident_of(o->out[i].path, i, &out[i], &cdir, &cache);
    if (rc != 0) {
        memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    } else {
        /* each output's first one of the same file: sorted, the first of
         * each run of equals */
        if (n)
            memcpy(sorted, out, n * sizeof *out);
        qsort(sorted, n, sizeof *sorted, by_ident);
        for (size_t j = 0; j < n; j++)
            first[sorted[j].i] =
                j > 0 && same(&sorted[j], &sorted[j - 1]) ? first[sorted[j - 1].i] : sorted[j].i;
        rc = check_outputs(o, in, out, first, err);
    }
    for (size_t k = 0; rc == 0 && k < nin; k++)
        if (fd_is(1, o->in[k].path))
            rc = memest_errf(err, MEMEST_ERR_USAGE, NULL,
                             "standard output is %s %s: it would be overwritten", o->in[k].what,
                             o->in[k].path);
    for (size_t k = 0; in && k < nin; k++)
        free(in[k].name);
    for (size_t i = 0; out && i < n; i++)
        free(out[i].name);
    free(in);
    free(out);
    free(sorted);
    free(first);
    free(cdir);
    free(cache);
    return rc;
}
