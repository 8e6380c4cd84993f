/* app.c - what every flow of the command shares: the model read once, its
 * graph, the target card, the time-estimate options, the card section of a
 * report, and error output (one estimate: app_estimate.c). */
#include "memest/app.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "memest/checked.h"
#include "memest/escape.h"
#include "memest/format.h"
#include "memest/ops.h"
#include "memest/report.h"
#include "memest/safetensors.h"

int memest_app_fail(const struct memest_cli *o, const struct memest_error *err)
{
    char msg[1200];
    memest_error_format(err, msg, sizeof msg);
    fprintf(stderr, "memest: %s\n", msg);
    if (err->code == MEMEST_ERR_USAGE)
        fprintf(stderr, "Use memest --help for help with command-line options.\n");
    if (o)
        memest_render_error(stdout, o->format, err);
    return memest_error_exit(err);
}

/* A Hugging Face config's unknown keys (model.h): with --strict-config the
 * first one is the error (the warning's words), else each is a warning.
 * The model is read once whatever the flow estimates after (sweeps,
 * comparisons), so each is told once. 0 / -1. */
static int config_unknown_keys(const struct memest_model *m, bool strict,
                               struct memest_error *err)
{
    for (int i = 0; i < m->nunknown_kept; i++) {
        struct memest_error w = {0};
        memest_err_file(&w, m->file);
        memest_errf(&w, MEMEST_ERR_SCHEMA, m->unknown[i].key, "%s", m->unknown[i].msg);
        if (strict) {
            *err = w;
            return -1;
        }
        char line[1200];
        memest_error_format(&w, line, sizeof line);
        fprintf(stderr, "memest: warning: %s; the estimate ignores it (--strict-config refuses "
                        "it)\n", line);
    }
    if (m->nunknown > m->nunknown_kept) {
        char file[MEMEST_ESC_NAME];
        fprintf(stderr, "memest: warning: %s: %d more unknown keys, ignored as well\n",
                memest_esc_text(m->file, file, sizeof file), m->nunknown - m->nunknown_kept);
    }
    return 0;
}

/* PYTORCH_CUDA_ALLOC_CONF: --alloc-conf, else the environment's, as
 * PyTorch 2.6 parses it (alloc_conf.h); a setting PyTorch refuses is a
 * usage error naming where it came from. 0 / -1. */
int memest_app_alloc_conf(struct memest_app *a, struct memest_error *err)
{
    const char *s = a->o->alloc_conf, *from = "--alloc-conf";
    if (!s) {
        s = getenv("PYTORCH_CUDA_ALLOC_CONF");
        from = "PYTORCH_CUDA_ALLOC_CONF";
    }
    char msg[256];
    if (memest_alloc_conf_parse(s, &a->step.alloc, msg, sizeof msg) != 0)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "%s: %s", from, msg);
    return 0;
}

/* NCCL's environment the rule of src/sim/nccl_mem.c reads: NVLS off with
 * NCCL_NVLS_ENABLE=0, and NCCL_BUFFSIZE (bytes; NCCL reads it with strtoll
 * and keeps its default for anything else, as here for a value that is not
 * a positive whole number). */
static void nccl_env(struct memest_app *a)
{
    const char *nvls = getenv("NCCL_NVLS_ENABLE"), *bs = getenv("NCCL_BUFFSIZE");
    a->step.nvls_off = nvls && strcmp(nvls, "0") == 0;
    a->step.nccl_buffsize = 0;
    if (bs && *bs >= '1' && *bs <= '9') {
        char *end;
        unsigned long long v = strtoull(bs, &end, 10);
        if (!*end && v < ((unsigned long long)1 << 40))
            a->step.nccl_buffsize = v;
    }
}

void memest_app_card_usable(struct memest_app *a)
{
    a->step.card_usable = 0;
    a->step.least = true;
    a->step.pressure_inference = a->o->inference;
    if (!a->has_card)
        return;
    struct memest_fit f;
    memest_fit_check(0, a->card.memory, a->o->headroom, &f);
    uint64_t used = a->o->used_set ? a->o->used : 0;
    /* 0 is "no card": a card with nothing left is one byte */
    a->step.card_usable = f.usable > used ? f.usable - used : 1;
    a->step.fraction_cap = 0;
    if (!a->o->memory_fraction_set)
        return;
    /* allowed_memory_maximum = fraction * total (setMemoryFraction) */
    double allowed = floor(a->o->memory_fraction * (double)a->card.memory);
    a->step.fraction_cap = allowed >= (double)a->card.memory ? a->card.memory : (uint64_t)allowed;
    if (!a->step.fraction_cap)
        a->step.fraction_cap = 1;
}

int memest_app_open(struct memest_app *a, const struct memest_cli *o, struct memest_error *err)
{
    memset(a, 0, sizeof *a);
    a->o = o;
    a->batch = o->batch;
    a->step = o->step;
    a->step.torch_version = o->run.torch;   /* --torch: the step's rules too (step.h) */
    a->est.g = &a->g;   /* before the first estimate, the model's */
    a->est.r = &a->est.run;
    a->max_work = MEMEST_MAX_WORK;
    /* the presets are parsed only for a command that names a card (or
     * probes one: --gpu auto matches the device's name) */
    if ((o->gpu || o->probe) && memest_app_presets(o, &a->gpus, err) != 0)
        return memest_error_exit(err);
    if (o->gpu && strcmp(o->gpu, "auto") != 0 && !o->compare) {
        const struct memest_gpu *g = memest_gpu_lookup(&a->gpus, o->gpu, err);
        if (!g)
            return memest_error_exit(err);
        a->card = (struct memest_card){MEMEST_CARD_PRESET, g->name, g->label, g->memory, g};
        a->has_card = true;
        a->step.gpu_arch = g->compute_capability;
        a->step.nvswitch = g->nvswitch;
    } else if (o->mem_set) {
        char b[32];
        snprintf(a->mem_label, sizeof a->mem_label, "a %s card (--mem)",
                 memest_fmt_bytes(o->mem, b, sizeof b));
        a->card = (struct memest_card){MEMEST_CARD_MEM, "mem", a->mem_label, o->mem, NULL};
        a->has_card = true;
    }
    nccl_env(a);
    if (memest_app_alloc_conf(a, err) != 0)
        return memest_error_exit(err);
    memest_app_card_usable(a);
    /* --tp, --sequence-parallel, --ep and --cp through the model's own
     * variables (doc/several-gpus.md), as every graph built is given them */
    struct memest_override sets[MEMEST_MAX_SETS + MEMEST_DIST_VARS + MEMEST_STACK_VARS];
    struct memest_dist_vars dv;
    struct memest_stack_vars sv;
    memcpy(sets, o->sets, sizeof *sets * (size_t)o->nsets);
    int nsets = memest_cli_dist_sets(o, sets, o->nsets, &dv, err);
    if (nsets < 0)
        return memest_error_exit(err);
    if (memest_model_read_file(o->model, &a->m, err) != 0)
        return memest_error_exit(err);
    if (a->step.loop == MEMEST_LOOP_DEFAULT)   /* a config: the Trainer; a model file: plain */
        a->step.loop = a->m.arch ? MEMEST_LOOP_TRAINER : MEMEST_LOOP_PLAIN;
    if (memest_cli_stack_check(o, &a->m, err) != 0)
        return memest_error_exit(err);
    nsets = memest_cli_stack_sets(o, &a->m, &a->step, sets, nsets, &sv);
    if (o->strict_config && !a->m.arch) {   /* a model file's unknown fields are errors */
        memest_errf(err, MEMEST_ERR_USAGE, NULL, "--strict-config: the model is a model file, "
                    "not a Hugging Face config: it would change nothing");
        return memest_error_exit(err);
    }
    if ((o->strict_config && config_unknown_keys(&a->m, true, err) != 0) ||
        memest_model_build(&a->m, sets, nsets, &a->g, err) != 0 ||
        memest_step_cfg_resolve_loss(&a->step, a->g.loss, err) != 0)   /* once, here */
        return memest_error_exit(err);
    /* a folder's checkpoint against the model of the config and the --set
     * overrides, on one GPU, with the config's quantisation only */
    if (a->m.ckpt && memest_ckpt_check(a->m.ckpt, &a->m, o->sets, o->nsets, err) != 0)
        return memest_error_exit(err);
    if (a->m.ckpt && a->m.ckpt->note[0]) {   /* the config's torch_dtype and the checkpoint's */
        char file[MEMEST_ESC_NAME];
        fprintf(stderr, "memest: note: %s: %s\n", memest_esc_text(a->m.file, file, sizeof file),
                a->m.ckpt->note);
    }
    /* a Hugging Face config's torch_dtype is the weights' type, as
     * from_pretrained(torch_dtype="auto") loads them: the default unless
     * --dtype or --amp (float32 parameters) says otherwise */
    a->dtype = o->dtype;
    if (!o->dtype_set && o->step.amp == MEMEST_AMP_NONE && a->m.has_dtype)
        a->dtype = a->m.dtype;
    bool checkpoint = a->step.checkpoint;
    if (memest_app_dist(a, err) != 0)
        return memest_error_exit(err);
    /* a config that turns checkpointing on (--fsdp-config) turns use_cache
     * off (cli_stack.c): the graph is built again with the stack it sets */
    if (a->step.checkpoint != checkpoint && memest_model_has_variable(&a->m, "forward_cache", NULL)) {
        nsets = memest_cli_stack_sets(o, &a->m, &a->step, sets, nsets - (int)sv.n, &sv);
        memest_graph_free(&a->g);
        memset(&a->g, 0, sizeof a->g);
        if (memest_model_build(&a->m, sets, nsets, &a->g, err) != 0)
            return memest_error_exit(err);
    }
    if (memest_app_graph_passes(a, &a->g, err) != 0 || memest_app_stages(a, err) != 0)
        return memest_error_exit(err);
    config_unknown_keys(&a->m, false, err);
    uint32_t unused, unused_at;
    if (memest_graph_unused_inputs(&a->g, &unused, &unused_at, err) != 0)
        return memest_error_exit(err);
    if (unused) { /* allowed, as in PyTorch (issue 6), but likely a mistake */
        char file[MEMEST_ESC_NAME], name[MEMEST_ESC_NAME];
        fprintf(stderr, "memest: warning: %s: %s: the input \"%s\" is not used by any node%s\n",
                memest_esc_text(a->g.file, file, sizeof file), a->g.nodes[unused_at].path,
                memest_esc_text(a->g.nodes[unused_at].name, name, sizeof name),
                unused > 1 ? " (nor are other inputs)" : "");
    }
    if (memest_graph_unused_nodes(&a->g, &unused, &unused_at, err) != 0)
        return memest_error_exit(err);
    if (unused) { /* the same for a node: no node reads it, and it is no output */
        char file[MEMEST_ESC_NAME], name[MEMEST_ESC_NAME];
        fprintf(stderr, "memest: warning: %s: %s: node \"%s\" (%s) is never used: no node reads "
                        "it and it is no model output%s\n",
                memest_esc_text(a->g.file, file, sizeof file), a->g.nodes[unused_at].path,
                memest_esc_text(a->g.nodes[unused_at].name, name, sizeof name),
                a->g.nodes[unused_at].op->name, unused > 1 ? " (nor are other nodes)" : "");
    }
    return MEMEST_EXIT_OK;
}

int memest_app_graph_passes(struct memest_app *a, struct memest_graph *g, struct memest_error *err)
{
    const struct memest_cli *o = a->o;
    /* quantisation first: PEFT wraps the quantised layer (its bnb forward) */
    struct memest_quant_cfg q;
    memest_quant_cfg_merge(&a->m.quant, &o->quant, &q);
    uint32_t quantized;
    if (memest_quantize(g, &q, a->dtype, &quantized, err) != 0)
        return -1;
    if (o->quant.format != MEMEST_WF_DENSE && quantized == 0)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--weights %s: the model has no linear "
                           "layer the library would replace (the output head and tied layers "
                           "stay dense): it would change nothing",
                           memest_wformat_name((enum memest_wformat)o->quant.format));
    return memest_lora_apply(g, &o->lora, o->step.amp != MEMEST_AMP_NONE, a->m.model_type,
                             &a->lora, err);
}

void memest_app_close(struct memest_app *a)
{
    memest_app_stages_free(a);
    memest_run_free(&a->est.run);
    memest_graph_free(&a->g);
    memest_model_free(&a->m);
    memest_gpu_table_free(&a->gpus);
}

bool memest_app_time_opts(const struct memest_app *a, const struct memest_step_cfg *step,
                          enum memest_dtype dtype, struct memest_time_opts *t,
                          enum memest_precision *prec, bool *fallback)
{
    if (!a->has_card || !a->card.gpu)
        return false;
    enum memest_precision p = memest_gpu_step_precision(dtype, step->amp);
    bool fb;
    *t = (struct memest_time_opts){
        .peak_flops = memest_gpu_peak(a->card.gpu, p, &fb),
        .bandwidth = a->card.gpu->bandwidth,
        .mfu = a->o->mfu,
        .grad_accum = step->grad_accum > 0 ? step->grad_accum : 1,
        .inference = a->o->inference,
        .step = step,
        .host_bw = a->o->offload_bw,
        .cpu_optim_rate = a->o->cpu_optim_rate,
    };
    if (step->rank) {   /* the pipeline's slots, the samples of every data-parallel rank */
        const struct memest_dist_cfg *c = step->rank->cfg;
        double m = (double)memest_dist_step_micro_batches(c, t->grad_accum);
        t->slots = c->pp > 1 ? m + (double)(c->pp - 1) / (double)c->virtual_stages : 0;
        t->samples_k = m * (double)memest_dist_dp(c);
    }
    if (prec)
        *prec = p;
    if (fallback)
        *fallback = fb;
    return true;
}

int memest_app_card_report(const struct memest_app *a, const struct memest_estimate *e,
                           const struct memest_step_cfg *step, enum memest_dtype dtype,
                           struct memest_card_report *c, struct memest_node_time *nodes,
                           struct memest_error *err)
{
    memset(c, 0, sizeof *c);
    c->card = &a->card;
    bool inf = a->o->inference;
    memest_fit_judge(e, inf, a->card.memory, a->o->headroom, &c->fit);
    c->reserved = inf ? e->infer_reserved_peak : e->reserved_peak;
    c->overhead = e->overhead;
    c->mfu = a->o->mfu;
    c->grad_accum = inf ? 1 : step->grad_accum;
    struct memest_time_opts t;
    if (!memest_app_time_opts(a, step, dtype, &t, &c->precision, &c->peak_fallback))
        return 0;
    c->slots = t.slots;
    c->samples_k = t.samples_k;
    int rc = memest_roofline(a->est.r, e, &t, &c->time, nodes);
    if (rc == -2)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    if (rc == 0) {
        c->has_time = true;
        c->peak_flops = t.peak_flops;
        c->nodes = nodes;
    }
    return 0;
}

const char *memest_app_user_gpus_path(char *buf, size_t n)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    int k = -1;
    if (xdg && xdg[0] == '/')   /* the XDG base directory spec: a relative one is ignored */
        k = snprintf(buf, n, "%s/memest/gpus.json", xdg);
    else if (home && home[0])
        k = snprintf(buf, n, "%s/.config/memest/gpus.json", home);
    return k > 0 && (size_t)k < n ? buf : NULL;
}

int memest_app_presets(const struct memest_cli *o, struct memest_gpu_table *t,
                       struct memest_error *err)
{
    if (memest_gpu_table_builtin(t, err) != 0)
        return -1;
    char buf[4096];
    const char *path = o->gpus_file;
    struct stat st;
    if (!path) {   /* the per-user file, when there is one */
        path = memest_app_user_gpus_path(buf, sizeof buf);
        if (path && stat(path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR))
            path = NULL;
    }
    if (path && memest_gpu_table_add_file(t, path, err) != 0) {
        memest_gpu_table_free(t);
        return -1;
    }
    return 0;
}

int memest_flow_list_gpus(const struct memest_cli *o)
{
    struct memest_gpu_table t;
    struct memest_error err = {0};
    if (memest_app_presets(o, &t, &err) != 0)
        return memest_app_fail(o, &err);
    memest_gpus_markdown(stdout, &t);
    memest_gpu_table_free(&t);
    return MEMEST_EXIT_OK;
}

struct memest_report_opts memest_app_report_opts(const struct memest_app *a)
{
    const struct memest_cli *o = a->o;
    return (struct memest_report_opts){.inference = o->inference, .fit = o->fit,
                                       .layers = o->layers, .dtype = a->dtype,
                                       .headroom = o->headroom, .mfu = o->mfu,
                                       .lora = o->lora.r ? &a->lora : NULL,
                                       .checkpoint = a->m.ckpt};
}
