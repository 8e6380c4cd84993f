/* quantize.c - the quantisation pass (quantize.h).
 *
 * Which modules the libraries replace, from transformers v4.48.0:
 * integrations/bitsandbytes.py _replace_with_bnb_linear replaces every
 * nn.Linear (and Conv1D) whose dotted name contains none of
 * modules_to_not_convert (`any(key in ".".join(current_key_name) ...)`: a
 * substring match), and quantizers/quantizer_bnb_4bit.py (and _8bit)
 * _process_model_before_weight_loading sets modules_to_not_convert to
 * llm_int8_skip_modules when the config gives it, else to
 * get_keys_to_not_convert(model): the tied parameters and the output
 * embeddings (lm_head). GPTQ and AWQ checkpoints quantise the linear layers
 * of the decoder layers, never the head, and their configs'
 * modules_to_not_convert adds to that.
 *
 * prepare_model_for_kbit_training (huggingface/peft v0.13.2,
 * src/peft/utils/other.py): every parameter requires_grad = False; unless
 * GPTQ, every float16/bfloat16 parameter that is not a Params4bit is cast
 * to float32 (Int8Params are int8: untouched); gradient checkpointing on
 * (memest's --checkpoint) with model.enable_input_require_grads(). */
#include "memest/quantize.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "memest/ops.h"

void memest_quant_cfg_merge(const struct memest_quant_cfg *config,
                            const struct memest_quant_cfg *cli, struct memest_quant_cfg *out)
{
    static const struct memest_quant_cfg none;
    const struct memest_quant_cfg *c = config ? config : &none;
    *out = cli->dense ? none : *c;
    if (cli->format != MEMEST_WF_DENSE) {
        uint8_t f = cli->format;
        if (cli->int4 && c->format == MEMEST_WF_AWQ4)
            f = MEMEST_WF_AWQ4;   /* int4: GPTQ's layout unless the config says AWQ */
        if (f != c->format)       /* another method: the config's settings are not its */
            *out = (struct memest_quant_cfg){0};
        out->format = f;
    }
    if (cli->group_set) {
        out->group_set = true;
        out->p.group_size = cli->p.group_size;
    }
    if (cli->dq_set) {
        out->dq_set = true;
        out->p.double_quant = cli->p.double_quant;
    }
    if (cli->compute_set) {
        out->compute_set = out->compute_cli = true;
        out->p.compute_dtype = cli->p.compute_dtype;
    }
    if (cli->storage_set) {
        out->storage_set = true;
        out->p.quant_storage = cli->p.quant_storage;
    }
    out->kbit_prep = cli->kbit_prep;
}

static void free_patterns(char **in, int n)
{
    for (int i = 0; in && i < n; i++)
        free(in[i]);
    free(in);
}

/* The keys of modules_to_not_convert with '*' (fnmatch patterns) as the
 * patterns of the modules inside ("pattern.*": without FNM_PATHNAME '*'
 * matches dots too); NULL for the others. *out NULL: out of memory. */
static void inside_patterns(const struct memest_quant_cfg *q, char ***out)
{
    char **in = calloc((size_t)q->nskip + 1, sizeof *in);
    for (int i = 0; in && i < q->nskip; i++) {
        if (!strchr(q->skip[i], '*'))
            continue;
        size_t n = strlen(q->skip[i]);
        if (!(in[i] = malloc(n + 3))) {
            free_patterns(in, i);
            in = NULL;
            break;
        }
        memcpy(in[i], q->skip[i], n);
        memcpy(in[i] + n, ".*", 3);
    }
    *out = in;
}

/* transformers' test: a key of modules_to_not_convert occurs in the dotted
 * module name; a key with '*' (Mxfp4Config's "model.layers.*.self_attn")
 * is an fnmatch pattern of the module or of a module it is inside
 * (inside[i]) */
static bool skipped(const struct memest_quant_cfg *q, char *const *inside, const char *name)
{
    for (int i = 0; i < q->nskip; i++) {
        const char *k = q->skip[i];
        if (!strchr(k, '*') ? strstr(name, k) != NULL
                            : fnmatch(k, name, 0) == 0 || fnmatch(inside[i], name, 0) == 0)
            return true;
    }
    return false;
}

static void set_params(struct memest_graph *g, const struct memest_quant_cfg *q)
{
    memest_quant_defaults(&g->quant);
    if (q->group_set)
        g->quant.group_size = q->p.group_size;
    if (q->dq_set)
        g->quant.double_quant = q->p.double_quant;
    if (q->compute_set)
        g->quant.compute_dtype = q->p.compute_dtype;
    if (q->storage_set)
        g->quant.quant_storage = q->p.quant_storage;
    if (q->desc_act_set)
        g->quant.desc_act = q->p.desc_act;
    if (q->fp8_set) {
        g->quant.fp8_block[0] = q->p.fp8_block[0];
        g->quant.fp8_block[1] = q->p.fp8_block[1];
    }
    if (q->nvfp4_set)
        g->quant.nvfp4_group = q->p.nvfp4_group;
}

/* PEFT's prepare_model_for_kbit_training on the graph: frozen, and every
 * fp16/bf16 parameter but a Params4bit in float32 (not under GPTQ): the
 * layers left dense and the biases of the quantised ones (their packed
 * weights and GPTQ/AWQ buffers keep their own types). */
static void kbit_prep(struct memest_graph *g, enum memest_wformat f, enum memest_dtype dtype)
{
    bool cast = f != MEMEST_WF_GPTQ4 && memest_dtype_is_half(dtype);
    for (uint32_t n = 0; n < g->nnodes; n++) {
        struct memest_node *nd = &g->nodes[n];
        nd->trainable = false;
        if (cast && nd->param_dtype == 0)
            nd->param_dtype = (uint8_t)(MEMEST_F32 + 1);
    }
}

int memest_quantize(struct memest_graph *g, const struct memest_quant_cfg *q,
                    enum memest_dtype dtype, uint32_t *count, struct memest_error *err)
{
    uint32_t k = 0;
    if (count)
        *count = 0;
    enum memest_wformat f = (enum memest_wformat)q->format;
    bool dense = f == MEMEST_WF_DENSE || f >= MEMEST_WF_COUNT;
    const char *opt = q->kbit_prep ? "--kbit-prep" : q->group_set ? "--group-size"
                      : q->dq_set && q->p.double_quant ? "--double-quant"
                      : q->compute_cli ? "--compute-dtype" : NULL;
    if (dense && opt)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "%s applies to quantised weights: it needs --weights (or a config's "
                           "quantization_config)", opt);
    if (dense)
        return 0;
    /* what the command line adds to a config's method must be of that method */
    if (q->group_set && f != MEMEST_WF_GPTQ4 && f != MEMEST_WF_AWQ4)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--group-size is the group of GPTQ and "
                           "AWQ, not of the config's %s weights", memest_wformat_name(f));
    if (q->dq_set && q->p.double_quant && !memest_wformat_bnb4(f))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--double-quant is bitsandbytes' 4-bit "
                           "option, not of the config's %s weights", memest_wformat_name(f));
    if (q->compute_cli && !memest_wformat_bnb4(f))
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--compute-dtype is bitsandbytes' 4-bit "
                           "option, not of the config's %s weights", memest_wformat_name(f));
    set_params(g, q);
    int64_t head = memest_graph_output_head(g);
    bool bnb = f == MEMEST_WF_INT8 || memest_wformat_bnb4(f);
    /* the nodes whose weight another node ties to itself */
    bool *tied = calloc(g->nnodes ? g->nnodes : 1, sizeof *tied);
    char **inside;
    inside_patterns(q, &inside);
    if (!tied || !inside) {
        free(tied);
        free_patterns(inside, q->nskip);
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    }
    for (uint32_t n = 0; n < g->nnodes; n++)
        if (g->nodes[n].tie_node >= 0 && (uint64_t)g->nodes[n].tie_node < g->nnodes)
            tied[g->nodes[n].tie_node] = true;
    for (uint32_t n = 0; n < g->nnodes; n++) {
        struct memest_node *nd = &g->nodes[n];
        if (!nd->op->ce_head || nd->tie_node >= 0 || tied[n] || skipped(q, inside, nd->name))
            continue;
        if ((int64_t)n == head && (!bnb || !q->skip_set))
            continue;
        nd->wformat = (uint8_t)f;
        k++;
    }
    free(tied);
    free_patterns(inside, q->nskip);
    if (q->kbit_prep)
        kbit_prep(g, f, dtype);
    if (count)
        *count = k;
    return 0;
}
