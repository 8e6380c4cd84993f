/* outfile.h - the files memest writes (--plot, --timeline): whole or not at
 * all, every write checked, and never onto the model, another output or
 * standard output.
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
 * temporary onto the target. 0, or -1 with err set, the temporary removed
 * and the target unchanged. *of is released in both cases. */
int memest_outfile_commit(struct memest_outfile *of, struct memest_error *err);

/* Closes and removes the temporary (after a failure while generating the
 * content); the target is unchanged. */
void memest_outfile_abort(struct memest_outfile *of);

/* The output files of one command (NULL: not asked for) and the model file
 * they must not overwrite. */
struct memest_outpaths {
    const char *model, *plot, *timeline;
};

/* Refuses, as a usage error, output paths of the options that would
 * overwrite what they should not: --plot and --timeline naming the same
 * file, either naming the model file, or naming the regular file that
 * standard output or standard error is (the report would be lost), and
 * standard output being the model file. Files are compared by device and
 * inode when they exist, else by resolved directory and name. Run before
 * any work. 0, or -1 with err set. */
int memest_outfile_check_paths(const struct memest_outpaths *o, struct memest_error *err);
