/* cli.h - command-line options, parsed and checked in one place (cli.c,
 * over the rows of options.h); each feature reads its fields from struct
 * memest_cli. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "memest/dist.h"
#include "memest/dtype.h"
#include "memest/error.h"
#include "memest/lora.h"
#include "memest/model.h"
#include "memest/step.h"
#include "memest/output.h"
#include "memest/quantize.h"
#include "memest/run.h"

#define MEMEST_MAX_SETS 64
#define MEMEST_MAX_PRICES 64

/* One --price NAME=X: the user's price per hour of one card of preset NAME
 * (as written; resolved against the presets by the comparison). */
struct memest_price {
    char name[64];
    double per_hour;
};

struct memest_cli {
    const char *model;
    int64_t batch;                 /* --batch, default 1 */
    bool batch_set;
    struct memest_step_cfg step;   /* optimizer and step simulation */
    bool optim_set, grad_accum_set, impl_set;   /* --optim, --grad-accum given (a DeepSpeed
                                         config's values do not replace them) */
    bool momentum_set, zero_grad_set;   /* --momentum, --zero-grad given */
    enum memest_dtype dtype;       /* --dtype */
    bool dtype_set;                /* --dtype was given */
    struct memest_override sets[MEMEST_MAX_SETS];   /* --set, and --seq N (seq_len=N) */
    int nsets;
    /* --attention, --moe-imbalance, --fused, --torch: the fields of the run
     * options (run.h) besides batch and dtypes */
    struct memest_run_opts run;
    uint16_t transformers;         /* --transformers: the release a template's rules
                                      follow, 400 + minor for 4.x, 500 for 5.x; 0: not
                                      given (5.x) */
    bool fused_ce_named;           /* --fused names linear-ce (not through "all") */
    uint32_t run_named;            /* the run options asked for by name (memest_run.used's
                                      bits: --fused's kernels but through "all", --attention
                                      but auto and eager, --moe-imbalance): refused where no op applies
                                      them */
    /* --weights, --group-size, --double-quant, --kbit-prep: quantised
     * weights, over a config's quantization_config (quantize.h) */
    struct memest_quant_cfg quant;
    bool strict_config;            /* --strict-config: a config's unknown key is an error */

    /* output */
    enum memest_output format;     /* text, --json or --csv */
    bool layers;
    const char *timeline_path;     /* --timeline FILE.csv */
    const char *plot_path;         /* --plot FILE.svg */
    bool inference;                /* --inference: the no-grad forward pass */

    /* probe */
    bool probe;
    int device;
    bool device_set;               /* --device given */

    /* target card, fit, sweeps */
    const char *gpu;               /* --gpu NAME or "auto"; NULL: none */
    const char *gpus_file;         /* --gpus-file F.json: the user's presets; NULL: the default */
    bool compare;                  /* --gpu all or a comma list: the card comparison */
    struct memest_price prices[MEMEST_MAX_PRICES];   /* --price, in the order given */
    int nprices;
    bool mem_set;
    uint64_t mem;                  /* --mem SIZE */
    bool fit;
    double headroom;               /* --headroom P, percent, default 5 */
    bool headroom_set;
    uint64_t used;                 /* --used SIZE: the card's memory other processes hold */
    bool used_set;
    const char *alloc_conf;        /* --alloc-conf STR (else PYTORCH_CUDA_ALLOC_CONF) */
    bool alloc_conf_set;
    double memory_fraction;        /* --memory-fraction F: set_per_process_memory_fraction */
    bool memory_fraction_set;
    const char *sweep;             /* --sweep LIST, as given */
    const char *sweep_var;         /* --sweep-var NAME=LIST, as given */
    bool max_batch;
    double mfu;                    /* --mfu, default 0.4 */
    double offload_bw;             /* --offload-bw: the host link, bytes/s */
    double cpu_optim_rate;         /* --cpu-optim-rate: parameter updates/s on the host */
    bool offload_bw_set, cpu_optim_rate_set;
    bool mfu_set;
    bool advise;
    /* LoRA (lora.h): --lora R, --lora-alpha, --lora-dropout, --lora-targets,
     * --lora-rslora; lora_extra: the last of the four given, for a message */
    struct memest_lora_opts lora;
    const char *lora_extra;
    bool lora_dropout_set;         /* --lora-dropout given */

    /* --generate and its options (helper generate): doc/fine-tuning.md, "Generation
     * and serving" */
    bool generate;
    int64_t gen_context;           /* --context C: prompt tokens (seq_len = C) */
    int64_t gen_new_tokens;        /* --new-tokens N, default 128 */
    bool new_tokens_set;
    enum memest_dtype kv_dtype;    /* --kv-dtype */
    bool kv_dtype_set;
    bool kv_fp8;                   /* --kv-dtype fp8 (kv_dtype: a one-byte type) */
    uint8_t gen_cache;             /* --cache: enum memest_kv_cache (generate.h) */
    bool all_logits;               /* --all-logits */
    int64_t kv_block;              /* --kv-block B: vLLM's paged cache; 0: none */
    double gpu_util;               /* --gpu-util U, default 0.9 */
    bool gpu_util_set;
    bool max_context;              /* --max-context */
    const char *gen_sweep;         /* --sweep-context LIST */
    char gen_context_str[24];      /* --context as the seq_len override's value */

    /* several GPUs (cli_dist.c): --gpus, --strategy, --offload, --deepspeed, ... */
    struct memest_dist_cfg dist;

    bool csv;                      /* --csv (format: MEMEST_OUTPUT_CSV once checked) */
    uint8_t mode;                  /* enum memest_mode (options.h): the subcommand */
    bool help, version, list_ops, list_gpus, dump_options;
    const char *help_topic;        /* --help GROUP|all, memest help SUBCOMMAND; NULL: none */
};

/* The checks that need every option (sizes, strategy, what they exclude),
 * and the defaults that depend on others (micro-batches: --pp; a strategy:
 * ddp when data-parallel without one). 0 / -1. */
int memest_cli_dist_check(struct memest_cli *o, struct memest_error *err);

/* The model variables the several-GPU options set (doc/several-gpus.md): --tp T the variable tp, --sequence-parallel sp = T, --ep E the
 * variable ep, and --cp C divides the last seq_len override among
 * sets[0..n) (--seq or --set seq_len): a usage error when there is none,
 * or C does not divide it. Appends at most
 * MEMEST_DIST_VARS overrides to sets, their values kept in *buf. Returns
 * the new count, or -1 with err set. */
#define MEMEST_DIST_VARS 3
struct memest_dist_vars {
    char tp[24], ep[24], seq[24];
};
int memest_cli_dist_sets(const struct memest_cli *o, struct memest_override *sets, int n,
                         struct memest_dist_vars *buf, struct memest_error *err);

/* The variables of the stack a model may declare (cli_stack.c):
 * transformers (400 + minor, 500 for 5.x), torch (206 for 2.x, 113),
 * labels (the model computes its
 * loss: a training step whose loop passes labels) and forward_cache (its
 * forward may build a DynamicCache: not under checkpointing, nor in
 * generation). Appends those m declares to sets[n..], at most
 * MEMEST_STACK_VARS, their text kept in *buf; returns the new count. */
#define MEMEST_STACK_VARS 5
struct memest_stack_vars {
    char transformers[8], torch[8];
    int n;   /* how many sets it appended */
};
int memest_cli_stack_sets(const struct memest_cli *o, const struct memest_model *m,
                          const struct memest_step_cfg *step, struct memest_override *sets, int n,
                          struct memest_stack_vars *buf);
/* --transformers for a model file (not a Hugging Face config): refused, it
 * would change nothing. 0 / -1. */
int memest_cli_stack_check(const struct memest_cli *o, const struct memest_model *m,
                           struct memest_error *err);

/* The overrides of --set, --seq, --context and --sweep-var: none set
 * twice, none a variable a several-GPU option sets (cli_dist.c). 0 / -1. */
int memest_cli_check_overrides(const struct memest_cli *o, struct memest_error *err);

/* Parses argv: an optional subcommand (options.h: the modes, or help), then
 * the options with getopt_long over the option rows (cli_options.c). 0, or -1 with err (MEMEST_ERR_USAGE) set;
 * o->format is MEMEST_OUTPUT_JSON in both cases when argv has --json
 * anywhere (so that every error can be printed as the JSON document). --help, --version,
 * --list-ops and --list-gpus set their flag and return 0 without requiring
 * a model. */
int memest_cli_parse(int argc, char **argv, struct memest_cli *o, struct memest_error *err);
