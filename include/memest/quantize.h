/* quantize.h - the quantisation graph pass: which linear layers
 * bitsandbytes (load_in_8bit / load_in_4bit), GPTQ or AWQ replace, with the
 * formats of quant.h, and PEFT's prepare_model_for_kbit_training. The
 * settings come from a Hugging Face config's quantization_config
 * (hf_config.c) and the command line (--weights, --group-size,
 * --double-quant, --kbit-prep), the command line winning. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/dtype.h"
#include "memest/error.h"
#include "memest/graph.h"
#include "memest/quant.h"

#define MEMEST_QUANT_MAX_SKIP 64

/* The settings one source gives: each field with a flag saying whether
 * that source gave it. */
struct memest_quant_cfg {
    uint8_t format;             /* enum memest_wformat; DENSE: none given */
    bool int4;                  /* --weights int4: GPTQ, or AWQ when the
                                   config's quant_method is awq */
    bool group_set, dq_set, compute_set, storage_set, desc_act_set, fp8_set, nvfp4_set;
    bool compute_cli;       /* compute_set by --compute-dtype (for its messages) */
    struct memest_quant_params p;   /* the values given (group_size, ...) */
    /* llm_int8_skip_modules (bitsandbytes) / modules_to_not_convert
     * (GPTQ, AWQ): module names matched as transformers does; given, they
     * replace bitsandbytes' default (the output head) */
    const char *skip[MEMEST_QUANT_MAX_SKIP];
    int nskip;
    bool skip_set;
    bool kbit_prep;             /* --kbit-prep */
    bool dense;                 /* --weights dense: a config's quantization_config
                                   set aside (the weights in the model's dtype) */
};

/* The settings of the command line (`cli`) over those of the config
 * (`config`, may be NULL): a field the command line gives wins. */
void memest_quant_cfg_merge(const struct memest_quant_cfg *config,
                            const struct memest_quant_cfg *cli, struct memest_quant_cfg *out);

/* Runs the pass on a freshly built graph whose parameters are of type
 * `dtype` (the run's): sets g->quant and the wformat of every nn.Linear
 * (op .ce_head) the library replaces: not the output head (transformers'
 * get_keys_to_not_convert; for bitsandbytes unless a skip list replaces
 * that default), not a layer whose weight is tied, not a module the skip
 * list names. With kbit_prep, PEFT's prepare_model_for_kbit_training:
 * every node frozen, and the fp16/bf16 parameters of the layers left
 * dense cast to float32 (node param_dtype). *count gets the number of
 * quantised layers (may be NULL). 0, or -1 with err set (a usage error:
 * --kbit-prep, --group-size or --double-quant without quantised weights,
 * or the last two on weights of another method). */
int memest_quantize(struct memest_graph *g, const struct memest_quant_cfg *q,
                    enum memest_dtype dtype, uint32_t *count, struct memest_error *err);
