/* cli_internal.h - what the option rows (cli_options.c) share with the
 * parsers of the options that are not one generic value (cli_parsers.c). */
#pragma once

#include "memest/options.h"
#include "memest/quantize.h"

/* --weights: each name and the format it stands for (int4 and gptq both
 * GPTQ's, int4 becoming AWQ's when the config says awq) */
#define MEMEST_WEIGHTS_NAMES 10
struct memest_weights_name {
    const char *name;
    uint8_t format;
};
extern const struct memest_weights_name memest_weights_names[MEMEST_WEIGHTS_NAMES];
extern const struct memest_vocab memest_vocab_fused, memest_vocab_weights,
    memest_vocab_compute_dtype;

/* The rows' parse functions (options.h: memest_opt_parse_fn): K_CUSTOM
 * options, and the steps some generic ones take after their value. */
memest_opt_parse_f memest_optp_checkpoint, memest_optp_checkpoint_policy, memest_optp_checkpoint_every,
    memest_optp_checkpoint_early_stop,
    memest_optp_set,
    memest_optp_seq,
    memest_optp_transformers,
    memest_optp_fused,
    memest_optp_weights,
    memest_optp_group_size,
    memest_optp_compute_dtype,
    memest_optp_quant_storage,
    memest_optp_lora_targets,
    memest_optp_gpu,
    memest_optp_prices,
    memest_optp_sweep_var,
    memest_optp_json,
    memest_optp_after_attention,
    memest_optp_after_moe,
    memest_optp_after_fp8,
    memest_optp_after_rnn_kernel,
    memest_optp_after_kv_dtype,
    memest_optp_after_sweep_list;
