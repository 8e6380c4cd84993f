/* error.h - error reporting: one located error per failed call, exit codes.
 *
 * Every function that can fail returns 0 on success and -1 on failure, after
 * filling the caller-owned struct memest_error. Only the first error is kept:
 * later calls to memest_errf() on an error that is already set do nothing, so
 * the root cause is what the user sees. */
#pragma once

#include <stddef.h>

/* Process exit codes, documented in --help and doc/options.md. */
enum memest_exit {
    MEMEST_EXIT_OK = 0,       /* success (and: fits) */
    MEMEST_EXIT_NOFIT = 1,    /* --fit / --probe: does not fit */
    MEMEST_EXIT_USAGE = 2,    /* bad command line */
    MEMEST_EXIT_MODEL = 3,    /* invalid or unreadable model file */
    MEMEST_EXIT_NODEV = 4,    /* --probe: no usable CUDA driver or device */
    MEMEST_EXIT_RUNTIME = 5,  /* out of memory, or a CUDA driver call that failed
                                 during --probe (probe.h) */
    MEMEST_EXIT_OUTPUT = 6,   /* an output (stdout, --plot, --timeline) could not be written */
    MEMEST_EXIT_INTERNAL = 7, /* an internal error (MEMEST_ERR_INTERNAL): a bug in
                                 memest, not a bad input */
    MEMEST_EXIT_COUNT
};

/* What an exit code means, in the words --help and doc/options.md's "Exit codes"
 * paragraph give it: `meaning` ("usage error") opens the code's entry in
 * both (tests/unit/test_help.c checks doc/options.md against it), `detail` is
 * --help's parenthesis after it ("" for none). NULL out of range. */
struct memest_exit_doc {
    const char *meaning;
    const char *detail;
};
const struct memest_exit_doc *memest_exit_doc(int code);

enum memest_errcode {
    MEMEST_ERR_NONE = 0,
    MEMEST_ERR_IO,      /* file cannot be read */
    MEMEST_ERR_PARSE,   /* malformed JSON */
    MEMEST_ERR_SCHEMA,  /* wrong field, type or value */
    MEMEST_ERR_SHAPE,   /* shape inference failed */
    MEMEST_ERR_LIMIT,   /* a documented size limit or 64-bit overflow */
    MEMEST_ERR_USAGE,   /* bad command-line value */
    MEMEST_ERR_NOMEM,   /* allocation failed */
    MEMEST_ERR_PROBE,   /* CUDA probe could not run */
    MEMEST_ERR_OUTPUT,  /* an output could not be written */
    MEMEST_ERR_INTERNAL, /* a bug in memest: an invariant does not hold */
    MEMEST_ERR_COUNT
};

struct memest_error {
    enum memest_errcode code;
    char file[256];   /* model file, "" when not about a file */
    int line, col;    /* 1-based; 0 = unknown */
    char path[256];   /* JSON path, e.g. "layers[3].out_features"; "" = none */
    char node[160];   /* node name, "" = none */
    char msg[512];
};

/* Sets the error (if none is set yet) and returns -1. `path` may be NULL. */
int memest_errf(struct memest_error *e, enum memest_errcode code, const char *path,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Names the node the error is about, if no node is named yet. Returns -1. */
int memest_err_node(struct memest_error *e, const char *node);

/* Names the file the next error is about: replaces the name while no error
 * is set (the file being read now), fills it in when an error without a
 * file is set, and never changes the file of an error. */
void memest_err_file(struct memest_error *e, const char *file);

/* "FILE:LINE:COL: PATH: node 'N': MESSAGE" (absent parts left out) into buf. */
void memest_error_format(const struct memest_error *e, char *buf, size_t n);

/* The process exit code for an error. */
int memest_error_exit(const struct memest_error *e);

/* "parse", "schema", ... for --json error output. */
const char *memest_errcode_name(enum memest_errcode c);
