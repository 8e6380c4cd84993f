/* cli.h - command-line options. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "memest/calc.h"
#include "memest/dtype.h"
#include "memest/error.h"
#include "memest/model.h"

#define MEMEST_MAX_SETS 64

struct memest_cli {
    const char *model;
    int64_t batch;
    struct memest_optim_cfg optim;
    enum memest_dtype dtype;
    bool layers;
    bool json;
    struct memest_override sets[MEMEST_MAX_SETS];
    int nsets;
    bool probe;
    int device;
    bool help, version, list_ops;
};

/* Parses argv with getopt_long. 0, or -1 with err (MEMEST_ERR_USAGE) set.
 * --help / --version set o->help / o->version and return 0. */
int memest_cli_parse(int argc, char **argv, struct memest_cli *o, struct memest_error *err);
void memest_cli_usage(FILE *f);
/* The op table as Markdown (src/ops_doc.c). */
void memest_ops_print_markdown(FILE *f);
