/* fuzz_common.h - what the fuzz targets share (fuzz_model.c, fuzz_hf.c,
 * fuzz_ds.c, fuzz_fsdp.c): the input handed to a reader that takes a path,
 * through a memfd (no disk write per input), the invariant checks every
 * target applies to an error, an estimate and a --json document, and the
 * flow of the several-GPU configs' targets (fuzz_ds.c, fuzz_fsdp.c). A broken
 * invariant aborts with one line "fuzz: invariant broken: ..." on the
 * standard error the process started with (the targets' own notes on
 * stderr may be discarded: tests/fuzz/run.sh passes -close_fd_mask=2). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memest/calc.h"
#include "memest/dist.h"
#include "memest/ds_config.h"
#include "memest/error.h"
#include "memest/fsdp_config.h"
#include "memest/report.h"

/* The builder's node limit in the targets (fuzz_hf.c lowers it further):
 * every input stays well under a second. */
#define FUZZ_MAX_NODES 5000u

/* The entry points: each target's LLVMFuzzerTestOneInput; fuzz_common.c's
 * LLVMFuzzerInitialize calls fuzz_init, before libFuzzer's -close_fd_mask=2
 * closes the standard error (the standalone runner calls none: fuzz_bug
 * calls fuzz_init). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Keeps a copy of the standard error for fuzz_bug and the sanitizers'
 * reports; LLVMFuzzerInitialize calls it, or call it at each input. */
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
/* With the exit codes: the file's text comes quoted in every message (a
 * model file's, fuzz_model.c), so that "internal:" anywhere before the
 * first '"' marks a memest bug; without it (a config reader may quote the
 * file's text or not), only a message that opens with "internal:". */
#define FUZZ_QUOTED (1u << 31)

/* An error as the invariants want it: a code, a one-line message without
 * control characters, no "internal:" (a memest bug; see FUZZ_QUOTED), an
 * exit code in `exits`, the file `file` named when file is not NULL (the
 * error's file is it, or it and what it was read through: "FILE [...]"),
 * and a --json error document that is valid JSON. */
void fuzz_check_error(const struct memest_error *err, const char *stage, const char *file,
                      unsigned exits);

/* A NUL-terminated text within its cap bytes (the file's text as it is:
 * what prints it escapes it). */
void fuzz_check_cstr(const char *s, size_t cap, const char *what);

/* The figures of an estimate (of a graph of nnodes nodes): every byte count
 * and total at most 2^63 - 1, finite non-negative FLOPs, the categories of
 * each peak summing to it, the
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

/* One estimate of the app at batch as the single-estimate flow runs it
 * (memest_app_estimate with the app's step and parameters' type), checked:
 * no error set, under dist (the option that names a several-GPU config,
 * "--deepspeed"; NULL: none) the rank's view, the figures
 * (fuzz_check_estimate) and the --json report (fuzz_check_report_json).
 * Returns true with *e set, or false with err set for the caller to check
 * (whose fault it may be depends on the target). */
bool fuzz_app_estimate(struct memest_app *a, int64_t batch, const char *dist,
                       struct memest_estimate *e, struct memest_error *err);

/* The several-GPU configs' targets (fuzz_ds.c, fuzz_fsdp.c): a reader of
 * a config file, then the file applied as the tool applies it on the small
 * Llama. A target gives its reader and its own checks of what it read.
 * A reading of the file: the layout, and the settings its reader found
 * (the target's member of s). */
struct fuzz_reading {
    struct memest_dist_cfg d;
    union {
        struct memest_ds_settings ds;
        struct memest_fsdp_settings fsdp;
    } s;
};
#define FUZZ_MAX_ARGS 48
struct fuzz_dist_target {
    const char *file, *reversed;   /* the memfds' names: the input; it with its keys reversed */
    char *option;                  /* the tool's option naming the file: "--deepspeed" */
    /* NULL-terminated: the options of the file alone, before option FILE
     * (after the model and --seq 32), and those that win over the file,
     * after it (FUZZ_MAX_ARGS in all) */
    char *const *args, *const *over;
    /* the reader on its own: 0, or -1 with err set */
    int (*read)(const char *path, struct fuzz_reading *r, struct memest_error *err);
    /* whether two readings are the same; note: whether the note of ignored
     * keys counts (it lists them in the file's order) */
    bool (*same)(const struct fuzz_reading *a, const struct fuzz_reading *b, bool note);
    /* whether the input is JSON, whose keys reversed read the same (NULL:
     * every input) */
    bool (*json)(const uint8_t *data, size_t size);
    /* the values of a reading the reader took */
    void (*check_read)(const struct fuzz_reading *r);
    /* the tool refused the file the reader took (r), with err; over: under
     * the options that win over it */
    void (*check_refused)(const struct fuzz_reading *r, const char *path, bool over,
                          const struct memest_error *err);
    /* the tool took the file (r): its app, before the estimate */
    void (*check_tool)(const struct fuzz_reading *r, const struct memest_app *a, bool over);
    /* the estimate's batch under the options o (NULL: o->batch) */
    int64_t (*batch)(const struct memest_app *a, const struct memest_cli *o);
};

/* One input of target t (its LLVMFuzzerTestOneInput): the bytes as the
 * config file (a memfd; the built-in templates only, no MEMEST_ARCH_PATH),
 * and aborts when
 *   - reading it twice gives other results, the reader refuses it otherwise
 *     than as the file's fault (exit 3, naming it), or takes it with an
 *     error set or breaks the target's check_read;
 *   - the input with its keys in reverse order (t->json) reads otherwise
 *     where the reader took it;
 *   - the tool (fuzz_app_dist), on the file alone and, where the reader took
 *     it, with the options over it: fails otherwise than the reader where
 *     the reader refuses the file; breaks check_refused where it refuses a
 *     file the reader took; where it takes it, has a layout that fails its
 *     own check (memest_dist_check), runs another strategy or offload than
 *     the file alone says, breaks check_tool, or makes an estimate that
 *     fails otherwise than as the file's fault (exit 3) or breaks
 *     fuzz_app_estimate's checks under t->option.
 * Returns 0. */
int fuzz_dist_input(const struct fuzz_dist_target *t, const uint8_t *data, size_t size);
