/* gpu.h - the GPU presets (--gpu NAME, --list-gpus) and the target card of
 * a fit check or a sweep.
 *
 * The presets are data: models/gpus.json, compiled into the binary at build
 * time (the generated memest_gpus_json[] array) and parsed with cJSON at run
 * time, so the table is edited as JSON, never in C.
 *
 *     struct memest_gpu_table t;
 *     struct memest_error err = {0};
 *     if (memest_gpu_table_builtin(&t, &err) != 0) ... internal error
 *     const struct memest_gpu *g = memest_gpu_find(&t, "a100-40gb");
 *     ...
 *     memest_gpu_table_free(&t);
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memest/calc.h"
#include "memest/dtype.h"
#include "memest/error.h"

/* Generated from models/gpus.json by CMake (src/embed.cmake): the bytes of
 * the file followed by a NUL; the length excludes the NUL. */
extern const unsigned char memest_gpus_json[];
extern const size_t memest_gpus_json_len;

/* Dense peak throughput of one card per precision, in FLOP/s; 0 when the
 * card has no such tensor-core mode (JSON null). */
enum memest_precision {
    MEMEST_PREC_FP32 = 0,   /* CUDA cores / vector units */
    MEMEST_PREC_TF32,
    MEMEST_PREC_FP16,
    MEMEST_PREC_BF16,
    MEMEST_PREC_COUNT
};

#define MEMEST_GPU_MAX_NAMES 8

struct memest_gpu {
    const char *name;            /* "a100-40gb": what --gpu takes */
    const char *aliases[MEMEST_GPU_MAX_NAMES];
    int naliases;
    const char *label;           /* "NVIDIA A100 40 GB (SXM4)" */
    const char *device_names[MEMEST_GPU_MAX_NAMES];  /* as the driver names it */
    int ndevice_names;
    const char *arch;            /* "volta", "turing", "ampere", "ada", "hopper", "cdna3" */
    unsigned compute_capability; /* CUDA major * 10 + minor (80 for an A100); 0: none (AMD) */
    uint64_t memory;             /* bytes, as the driver reports the total */
    bool memory_exact;           /* memory is a driver-reported total */
    const char *memory_source;
    double peak_flops[MEMEST_PREC_COUNT];  /* FLOP/s; 0: not available */
    double bandwidth;            /* bytes per second */
    const char *spec_source;
    bool nvswitch;               /* "nvswitch": the GPUs of its node meet at NVSwitches
                                    (SXM, HGX): NCCL's channels and NVLS (nccl_mem.h) */
    bool user;                   /* from the user's presets file (memest_gpu_table_add) */
    const char *replaces;        /* user: the built-in preset it replaces, or NULL */
};

/* A user presets file: at most this many bytes, and a table at most this
 * many presets. */
#define MEMEST_GPUS_FILE_MAX_BYTES (1u << 20)
#define MEMEST_GPU_MAX_PRESETS 1024

struct memest_gpu_table {
    struct memest_gpu *gpus;
    size_t n;
    struct cJSON *root;          /* owns the strings */
    struct cJSON *user_root;     /* the user file's document (its presets' strings), or NULL */
    char *user_file;             /* its path, or NULL */
};

/* Parses a presets document (the models/gpus.json format, checked strictly:
 * unknown or missing fields, wrong types, duplicate names are errors naming
 * the JSON path). `label` names the text in messages. 0 / -1. */
int memest_gpu_table_parse(const char *text, size_t len, const char *label,
                           struct memest_gpu_table *t, struct memest_error *err);
/* The presets compiled into the binary. 0 / -1 (only if the build embedded a
 * bad file, or out of memory). */
int memest_gpu_table_builtin(struct memest_gpu_table *t, struct memest_error *err);
void memest_gpu_table_free(struct memest_gpu_table *t);

/* Adds the presets of a user presets file (the same format) to t, once: a
 * user preset whose name or an alias is a name or alias of a preset already
 * in t replaces that preset (at its place in the table; every preset it
 * collides with is replaced), the others follow in the file's order. A
 * user preset comes before the others in device-name matching. The text
 * version takes the file's text, `label` naming it. 0 / -1 (err names the
 * file and the JSON path; t is unchanged). */
int memest_gpu_table_add(struct memest_gpu_table *t, const char *text, size_t len,
                         const char *label, struct memest_error *err);
int memest_gpu_table_add_file(struct memest_gpu_table *t, const char *path,
                              struct memest_error *err);

/* The preset called `name` or one of its aliases (case-insensitive), or NULL. */
const struct memest_gpu *memest_gpu_find(const struct memest_gpu_table *t, const char *name);
/* The preset whose device_names contain `device_name` (as the driver reports
 * it, case-insensitive), or NULL. */
const struct memest_gpu *memest_gpu_match_device(const struct memest_gpu_table *t,
                                                 const char *device_name);
/* Looks up --gpu NAME; an unknown name is a usage error that lists the nearest
 * name ("did you mean"), and a name that begins several presets' names or
 * aliases (a family: "a100") one that lists them. NULL with err set. */
const struct memest_gpu *memest_gpu_lookup(const struct memest_gpu_table *t, const char *name,
                                           struct memest_error *err);
/* The same for a name given to option opt ("--price"). */
const struct memest_gpu *memest_gpu_lookup_opt(const struct memest_gpu_table *t, const char *name,
                                               const char *opt, struct memest_error *err);

/* The precision whose peak a training step of this configuration runs at,
 * and its FLOP/s on the card. The rule (doc/cards-and-fit.md, "Time estimate"): --amp
 * fp16/bf16 or --dtype fp16/bf16 use that tensor-core peak; fp32 training
 * uses the plain fp32 peak (PyTorch's default: torch.backends.cuda.matmul.
 * allow_tf32 is False). A card without that tensor-core mode (bf16 on a V100)
 * falls back to its fp32 peak, and *fallback is set. */
enum memest_precision memest_gpu_step_precision(enum memest_dtype dtype, enum memest_amp amp);
double memest_gpu_peak(const struct memest_gpu *g, enum memest_precision p, bool *fallback);
const char *memest_precision_name(enum memest_precision p);

