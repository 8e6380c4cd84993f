/* lora.h - PEFT's LoRA as a graph pass (src/model/lora.c): get_peft_model()
 * with a LoraConfig, as huggingface/peft v0.17.1 applies it.
 *
 * The pass freezes every node of the graph and, after each targeted linear
 * layer, inserts the nodes of PEFT's lora.Linear forward (tuners/lora/
 * layer.py; for a bitsandbytes base, tuners/lora/bnb.py): the input cast
 * to the adapters' dtype, the dropout (only when p > 0: PEFT puts an
 * nn.Identity otherwise), lora_A, lora_B, the scaling, the add and the cast
 * of the result back. The layers that read the base layer's output read the
 * last of them instead. Adapters are float32 parameters (graph node
 * param_dtype): PEFT creates them as nn.Linear (float32), casts them to the
 * base weight's dtype (_move_adapter_to_device_of_base_layer) and
 * get_peft_model(autocast_adapter_dtype=True) casts float16/bfloat16 ones
 * back to float32 (tuners_utils.py _cast_adapter_dtype). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/error.h"
#include "memest/graph.h"

#define MEMEST_LORA_MAX_R 65536            /* --lora R limit */
#define MEMEST_LORA_TARGETS_LEN 512        /* the target names, as the report lists them */

struct memest_lora_opts {
    int64_t r;             /* --lora R (LoraConfig.r); 0: no LoRA */
    double alpha;          /* --lora-alpha (lora_alpha, default 8) */
    double dropout;        /* --lora-dropout (lora_dropout, default 0) */
    const char *targets;   /* --lora-targets as given: "q_proj,v_proj" or "all-linear";
                              NULL: PEFT's default for the model_type */
    bool rslora;           /* --lora-rslora: scaling alpha / sqrt(r), not alpha / r */
};

/* What the pass did, for the report. */
struct memest_lora_summary {
    struct memest_lora_opts opts;
    double scaling;              /* alpha / r, or alpha / sqrt(r) */
    uint32_t modules;            /* linear layers adapted */
    uint32_t bnb_modules;        /* ... of them with a bitsandbytes base (bnb.py's forward) */
    char targets[MEMEST_LORA_TARGETS_LEN];  /* "q_proj, v_proj" or "all-linear" */
};

/* PEFT's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING entry for
 * `model_type` (utils/constants.py), as "q_proj,v_proj"; NULL when PEFT has
 * none (get_peft_model then asks for target_modules). */
const char *memest_lora_default_targets(const char *model_type);

/* Applies LoRA to g (nothing when o->r == 0). amp: autocast is on (--amp:
 * the casts of the forward differ). model_type: the model's (struct
 * memest_model), may be NULL. 0, or -1 with err set: a usage error
 * when no target is given or known, when a target matches no layer, or
 * matches a layer that is not a linear one; out of memory; the node limit. */
int memest_lora_apply(struct memest_graph *g, const struct memest_lora_opts *o, bool amp,
                      const char *model_type,
                      struct memest_lora_summary *out, struct memest_error *err);
