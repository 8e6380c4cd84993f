/* cli_internal.h - what the option rows (cli_options.c) share with the
 * parsers of the options that are not one generic value (cli_parsers.c). */
#pragma once

#include "memest/options.h"
#include "memest/quantize.h"

/* --weights: each name and the format it stands for (int4 and gptq both
 * GPTQ's, int4 becoming AWQ's when the config says awq) */
#define MEMEST_WEIGHTS_NAMES 6
struct memest_weights_name {
    const char *name;
    uint8_t format;
};
extern const struct memest_weights_name memest_weights_names[MEMEST_WEIGHTS_NAMES];
extern const struct memest_vocab memest_vocab_fused, memest_vocab_weights,
    memest_vocab_compute_dtype;

/* The rows' parse functions (options.h: memest_opt_parse_fn): K_CUSTOM
 * options, and the steps some generic ones take after their value. */
int memest_optp_checkpoint(const struct memest_opt *row, char *arg, struct memest_cli *o,
                     struct memest_error *err);
int memest_optp_set(const struct memest_opt *row, char *arg, struct memest_cli *o,
              struct memest_error *err);
int memest_optp_seq(const struct memest_opt *row, char *arg, struct memest_cli *o,
              struct memest_error *err);
int memest_optp_fused(const struct memest_opt *row, char *arg, struct memest_cli *o,
                struct memest_error *err);
int memest_optp_weights(const struct memest_opt *row, char *arg, struct memest_cli *o,
                  struct memest_error *err);
int memest_optp_group_size(const struct memest_opt *row, char *arg, struct memest_cli *o,
                     struct memest_error *err);
int memest_optp_compute_dtype(const struct memest_opt *row, char *arg, struct memest_cli *o,
                        struct memest_error *err);
int memest_optp_lora_targets(const struct memest_opt *row, char *arg, struct memest_cli *o,
                       struct memest_error *err);
int memest_optp_gpu(const struct memest_opt *row, char *arg, struct memest_cli *o,
              struct memest_error *err);
int memest_optp_prices(const struct memest_opt *row, char *arg, struct memest_cli *o,
                 struct memest_error *err);
int memest_optp_sweep_var(const struct memest_opt *row, char *arg, struct memest_cli *o,
                    struct memest_error *err);
int memest_optp_json(const struct memest_opt *row, char *arg, struct memest_cli *o,
               struct memest_error *err);
int memest_optp_after_attention(const struct memest_opt *row, char *arg, struct memest_cli *o,
                    struct memest_error *err);
int memest_optp_after_moe(const struct memest_opt *row, char *arg, struct memest_cli *o,
              struct memest_error *err);
int memest_optp_after_kv_dtype(const struct memest_opt *row, char *arg, struct memest_cli *o,
                   struct memest_error *err);
int memest_optp_after_sweep_list(const struct memest_opt *row, char *arg, struct memest_cli *o,
                     struct memest_error *err);
