/* model.h - reading a model file (JSON) and building its layer graph.
 *
 *   struct memest_model m; struct memest_graph g; struct memest_error err = {0};
 *   if (memest_model_read_file("models/resnet50.json", &m, &err) != 0 ||
 *       memest_model_build(&m, NULL, 0, &g, &err) != 0) { report(&err); }
 *
 * The parsed document is kept in `m`, so the graph can be rebuilt with other
 * variable values (--set, --sweep-var) without reading the file again. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memest/arena.h"
#include "memest/dtype.h"
#include "memest/error.h"
#include "memest/graph.h"
#include "memest/quantize.h"

struct cJSON;
struct memest_ckpt;

/* A --set NAME=VALUE override of a model variable. A value that fails a
 * check of the model builder because of an override is a usage error naming
 * the option (opt, NAME and VALUE). The values a Hugging Face config gives
 * the variables of its architecture template are overrides too (struct
 * memest_model's preset: opt names the config key, and a check they fail is
 * a model error). */
struct memest_override {
    const char *name;
    const char *value;  /* a number (format.h's syntax), true/false, or else a string */
    const char *opt;    /* the option, for messages: "--sweep-var"; NULL: "--set" */
};

/* A config key memest does not know: its JSON path ("rope_scaling.beta_fast")
 * and why ("unknown key for model_type \"llama\" (...)"), the words of
 * the warning and of the --strict-config error. */
struct memest_unknown_key {
    const char *key;
    const char *msg;
};
#define MEMEST_MAX_UNKNOWN_KEYS 8

struct memest_model {
    struct cJSON *root;
    const char *file;   /* label used in messages */
    /* Node limit of memest_model_build (0: MEMEST_MAX_NODES); the expansion
     * work budget scales with it. The fuzzer lowers it to keep every input
     * fast; the tool never changes it. */
    uint32_t max_nodes;
    /* A Hugging Face config.json read through its architecture template
     * (hf_config.c); all zero for a model file. root is then the template,
     * file the config file, and build applies `preset` (the config's values
     * of the template's variables) before the caller's overrides, which win. */
    const char *arch;                 /* the template: "models/arch/llama.json (built in)" */
    const struct memest_override *preset;
    int npreset;
    bool has_dtype;                   /* the config's torch_dtype (or dtype), when it */
    enum memest_dtype dtype;          /* names one ("auto" or absent: none) */
    /* The model's Hugging Face model_type: a config's, or the "hf_config"
     * section's of a template read as a model file; NULL for other model
     * files. PEFT's default LoRA targets depend on it (lora.h). */
    const char *model_type;
    struct memest_quant_cfg quant;    /* its quantization_config (format DENSE: none) */
    /* The config's keys memest does not know (neither in the template's
     * hf_config.keys nor a generic key, hf_config.c): the first
     * MEMEST_MAX_UNKNOWN_KEYS of them in document order, each once, and
     * how many there are. The estimate ignores them; the command warns
     * about each, or with --strict-config refuses the first (exit 3). */
    const struct memest_unknown_key *unknown;
    int nunknown_kept, nunknown;
    /* A folder's safetensors checkpoint (safetensors.h): its headers, read
     * and bounded (memest_ckpt_check checks them against the model); NULL
     * for none. Its dtype is the parameters' (has_dtype) when the config
     * names none. */
    struct memest_ckpt *ckpt;
    struct memest_arena arena;        /* what the fields above point to */
};

/* Reads and parses a file: size limit MEMEST_MAX_FILE_BYTES, valid UTF-8, no
 * NUL bytes, exactly one JSON value, no duplicate keys. 0 / -1 (err names the
 * file and line:col). A directory stands for its config.json, and a file
 * whose top level has "model_type" and no "layers" is a Hugging Face config:
 * it is read through the architecture template of its model_type
 * (MEMEST_ARCH_PATH, then the templates built in; see hf_config.c). A
 * directory's safetensors checkpoint beside its config.json is read from
 * its headers (safetensors.h: m->ckpt). */
int memest_model_read_file(const char *path, struct memest_model *m, struct memest_error *err);
/* The same for text in memory (`label` names it in messages). */
int memest_model_read_string(const char *text, size_t len, const char *label,
                             struct memest_model *m, struct memest_error *err);
/* The whole of a file of at most `limit` bytes (`kind`, "GPU presets
 * files", names such files in the refusal), NUL-terminated, into *text (the
 * caller frees it), through one descriptor (a pipe or FIFO too). 0 / -1 (err
 * names the file). */
int memest_model_read_text(const char *path, size_t limit, const char *kind, char **text,
                           size_t *len, struct memest_error *err);
/* Expands blocks, repeats, conditions and variables into a graph, checking
 * every field. 0 / -1 (err names the JSON path and the node). */
int memest_model_build(const struct memest_model *m, const struct memest_override *ov, int nov,
                       struct memest_graph *g, struct memest_error *err);
/* Whether the model declares the variable `name` (in "variables", before
 * any override). When it does not, *near (may be NULL) gets the declared
 * name nearest to it (suggest.h), or NULL. */
bool memest_model_has_variable(const struct memest_model *m, const char *name, const char **near);
void memest_model_free(struct memest_model *m);
