/* fuzz_common.h - what the reader fuzz targets share (fuzz_hf.c, fuzz_ds.c,
 * fuzz_fsdp.c): the input handed to a reader that takes a path, through a
 * memfd (no disk write per input), and the invariant checks every target
 * applies to an error, an estimate and a --json document. A broken
 * invariant aborts with one line "fuzz: invariant broken: ..." on the
 * standard error the process started with (the targets' own notes on
 * stderr may be discarded: tests/fuzz/run.sh passes -close_fd_mask=2). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memest/calc.h"
#include "memest/error.h"
#include "memest/report.h"

/* The builder's node limit in the targets (as fuzz_model.c): every input
 * stays well under a second. */
#define FUZZ_MAX_NODES 5000u

/* Keeps a copy of the standard error for fuzz_bug and the sanitizers'
 * reports; call it first, from LLVMFuzzerInitialize or the first input. */
void fuzz_init(void);

__attribute__((noreturn, format(printf, 1, 2)))
void fuzz_bug(const char *fmt, ...);

/* An in-memory file that readers open by its path "/proc/self/fd/N". */
struct fuzz_file {
    int fd;            /* 0: not created yet */
    char path[40];
};
/* Replaces the file's contents with data[0..size) (creating the memfd the
 * first time) and returns its path. */
const char *fuzz_file_set(struct fuzz_file *f, const char *name, const void *data, size_t size);

/* Exit codes an error may map to, as a mask of bits (1u << code). */
#define FUZZ_EXIT(c) (1u << (c))

/* An error as the invariants want it: a code, a one-line message without
 * control characters, no "internal:" (a memest bug), an exit code in
 * `exits`, the file `file` named when file is not NULL, and a --json error
 * document that is valid JSON. */
void fuzz_check_error(const struct memest_error *err, const char *stage, const char *file,
                      unsigned exits);

/* A NUL-terminated text within its cap bytes (the file's text as it is:
 * what prints it escapes it). */
void fuzz_check_cstr(const char *s, size_t cap, const char *what);

/* The figures of an estimate: every byte count and total at most 2^63 - 1,
 * finite non-negative FLOPs, the categories of each peak summing to it, the
 * reserved peak at least the allocated one, no more events than the cost
 * model's bound, the cost within the limit of FUZZ_MAX_NODES; one GPU
 * (resident): the training peak at least the parameters and buffers;
 * several GPUs: the rank's model states add up, and the training peak
 * holds the device's parameters, optimizer state and master weights. */
void fuzz_check_estimate(const struct memest_estimate *e, uint32_t nnodes);

/* Writes the report as --json into memory and checks that it is one valid
 * JSON document. */
void fuzz_check_report_json(const struct memest_report *rep);

/* Whether two estimates have the same figures (parameters, gradients,
 * optimizer state, activations, both peaks, MACs, the rank's states). */
bool fuzz_same_estimate(const struct memest_estimate *a, const struct memest_estimate *b);

/* A small Llama config (2 LlamaDecoderLayer blocks, hidden size 64: the
 * model of fuzz_ds.c and fuzz_fsdp.c, read through the built-in template). */
#define FUZZ_TINY_LLAMA_HIDDEN 64
extern const char fuzz_tiny_llama[];

/* The JSON text data[0..size) with every object's keys in reverse order
 * (arrays keep theirs), pretty-printed: malloc'd, or NULL when cJSON does
 * not parse it. A config means the same whatever the order of its keys. */
char *fuzz_json_reversed(const void *data, size_t size);

struct memest_app;
struct memest_cli;
/* The tool's app on the small Llama (fuzz_tiny_llama, --seq 32), opened
 * once by memest_app_open. */
struct memest_app *fuzz_tiny_app(void);
/* What memest_app_open does after it built the graph, for the options o
 * (whose model is the small Llama's): the step and the parameters' type
 * from the options and the model, then the several-GPU flow
 * (memest_app_dist: a --deepspeed or --fsdp-config file read and applied);
 * the command's work budget fresh. Returns MEMEST_EXIT_OK, or the error's
 * exit code with err set. The graph passes and the pipeline stages, which
 * none of the targets' options asks for, are not redone. */
int fuzz_app_dist(struct memest_app *a, const struct memest_cli *o, struct memest_error *err);
