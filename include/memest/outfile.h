/* outfile.h - the files memest writes (--plot, --timeline, and the files
 * derived from them): whole or not at all, every write checked, the outputs
 * of one command all together or none of them, and never onto an input,
 * another output or standard output.
 *
 * A target that is a regular file, or does not exist, is written to a
 * temporary file in its directory (".NAME.XXXXXX"; through a symbolic link,
 * in the linked file's directory), which is renamed onto it once complete:
 * a failure leaves the target as it was and removes the temporary. The new
 * file gets the old one's permissions, or 0666 less the umask. A target
 * that exists and is not a regular file (/dev/stdout, /dev/null, a FIFO) is
 * written directly: it cannot be replaced, and is never renamed over.
 *
 *     struct memest_outfile of;
 *     if (memest_outfile_open(&of, path, err) != 0) return -1;
 *     ... write to of.f ...
 *     if (generation failed) { memest_outfile_abort(&of); return -1; }
 *     return memest_outfile_commit(&of, err);
 *
 * Errors are MEMEST_ERR_OUTPUT, "cannot write PATH: REASON" with the
 * system's reason (MEMEST_ERR_NOMEM when out of memory). */
#pragma once

#include <stdio.h>

#include "memest/error.h"

struct memest_outfile {
    FILE *f;            /* write here */
    const char *path;   /* the target, as given */
    char *target;       /* where the temporary is renamed to; NULL: written directly */
    char *tmp;          /* the temporary file; NULL: written directly */
};

/* Opens `path` for writing as above. 0, or -1 with err set (nothing is
 * left behind). */
int memest_outfile_open(struct memest_outfile *of, const char *path, struct memest_error *err);

/* Flushes and closes the file, checking every step, and renames the
 * temporary onto the target (while a set is active, below: hands the
 * temporary to the set). 0, or -1 with err set, the temporary removed and
 * the target unchanged. *of is released in both cases. */
int memest_outfile_commit(struct memest_outfile *of, struct memest_error *err);

/* Closes and removes the temporary (after a failure while generating the
 * content); the target is unchanged. */
void memest_outfile_abort(struct memest_outfile *of);

/* ---- the outputs of one command: all of them or none ----
 *
 * Between memest_outset_begin(&set) and memest_outset_commit() or
 * memest_outset_abort(), memest_outfile_commit() completes each file
 * (flushed, closed, every step checked) but leaves it in its temporary, in
 * the set, instead of renaming it: memest_outset_commit() renames them all
 * onto their targets once the whole command has succeeded, and
 * memest_outset_abort() removes them, every target left as it was. A file
 * committed twice to the same target keeps the later content. A target
 * that is not a regular file (written directly) cannot wait: it is
 * complete when its commit returns. One set is active at a time (the
 * command's: memest_main). */
struct memest_outset_entry;
struct memest_outset {
    struct memest_outset_entry *e;
    size_t n, cap;
};

/* Makes `set` (emptied) the active set: the commits that follow go to it. */
void memest_outset_begin(struct memest_outset *set);
/* Renames every file of the set onto its target, in the order committed,
 * and ends the set. When a rename fails, the targets already replaced get
 * their old content back (a target that did not exist is removed again,
 * where the file system allows a hard link of the old one), the other
 * temporaries are removed, and it returns -1 with err naming the file
 * (MEMEST_ERR_OUTPUT); else 0. */
int memest_outset_commit(struct memest_outset *set, struct memest_error *err);
/* Removes every temporary of the set and ends it: no target changes. */
void memest_outset_abort(struct memest_outset *set);

/* ---- paths that must not be written ----
 *
 * One output file of a command: the option and its value, and the file
 * written, the value itself or a file derived from it (a pipeline stage's
 * "F-stage1.svg" beside --plot F.svg). */
struct memest_outpath {
    const char *opt;     /* "--plot" */
    const char *given;   /* the option's value */
    const char *path;    /* the file written: given, or derived from it */
};
/* A file the command reads: what it is, for messages ("the model file",
 * "the --deepspeed config"), and its path. */
struct memest_inpath {
    const char *what;
    const char *path;
};
struct memest_outpaths {
    const struct memest_inpath *in;
    size_t nin;
    const struct memest_outpath *out;
    size_t nout;
};

/* Refuses, as a usage error, output files that would overwrite what they
 * should not: an option's value that is empty, an output that is one of the
 * input files, two outputs (named or derived) that are the same file, an
 * output that is the regular file standard output or standard error is
 * (the report would be lost), and standard output being an input file.
 * Files are compared by device and inode when they exist, else by resolved
 * directory and name. Linear in the outputs but for a sort (a pipeline of
 * many stages has many). Run before any work. 0, or -1 with err set
 * (MEMEST_ERR_NOMEM when out of memory). */
int memest_outfile_check_paths(const struct memest_outpaths *o, struct memest_error *err);
