/* ds_config.c - a DeepSpeed config file onto the several-GPU layout
 * (ds_config.h). The keys and their defaults follow DeepSpeed v0.16
 * (deepspeed/runtime/config.py, deepspeed/runtime/zero/config.py and
 * offload_config.py); "auto" values follow the Hugging Face Trainer's
 * integration (transformers integrations/deepspeed.py, trainer_config_process
 * and trainer_config_finalize: reduce_bucket_size = hidden_size^2,
 * stage3_prefetch_bucket_size = 0.9 hidden_size^2,
 * stage3_param_persistence_threshold = 10 hidden_size). Each key is one of:
 * read (it sets memory), ignored (it changes no memory: noted), or refused
 * (it changes memory in a way memest does not model). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "memest/checked.h"
#include "memest/ds_config.h"
#include "memest/model.h"

#include "config_keys.h"
#include "hf_internal.h"

struct rd {
    struct mb_cfg c;    /* the file, the error, the noted keys */
    struct memest_ds_settings *s;
    struct mb_cfg_seen seen;
};

/* A setting that two keys give (a deprecated key and the one replacing it:
 * DeepSpeedConfigModel asserts "Cannot provide deprecated parameter ... and
 * replacing parameter ... together", deepspeed/runtime/config_utils.py). */
static int once(struct rd *r, const char *name, const char *path)
{
    return mb_cfg_once(&r->c, &r->seen, name, path);
}

static int bad(struct rd *r, const char *path, const char *what)
{
    return mb_cfg_bad(&r->c, path, what);
}

static bool is_auto(const cJSON *v)
{
    return cJSON_IsString(v) && strcmp(v->valuestring, "auto") == 0;
}

/* A whole number >= lo (JSON numbers such as 5e8 included), or "auto"
 * (*out untouched, returns 1). 0 / 1 / -1. */
static int whole(struct rd *r, const cJSON *v, const char *path, double lo, uint64_t *out)
{
    if (is_auto(v))
        return 1;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > 9.007199254740992e15 || floor(v->valuedouble) != v->valuedouble) {
        char m[160];
        snprintf(m, sizeof m, "expected a whole number of at least %.0f (or \"auto\")", lo);
        return mb_cfg_bad_value(&r->c, path, v, m);
    }
    *out = (uint64_t)v->valuedouble;
    return 0;
}

/* A JSON boolean, or "auto" (*out untouched, returns 1). A text such as
 * "true" is refused: DeepSpeed's own readers take it as true whatever it
 * says (get_scalar_param hands the value on; any non-empty text is truthy),
 * or coerce it (pydantic): either way, not what the file appears to say. */
static int boolean(struct rd *r, const cJSON *v, const char *path, bool *out)
{
    if (is_auto(v))
        return 1;
    if (!cJSON_IsBool(v))
        return mb_cfg_bad_value(&r->c, path, v, "expected true or false (or \"auto\")");
    *out = cJSON_IsTrue(v);
    return 0;
}

/* "device": "cpu" / "nvme" on, "none" off. */
static int offload(struct rd *r, const cJSON *o, const char *path, bool *on)
{
    char p[96];
    if (cJSON_IsNull(o)) {
        *on = false;
        return 0;
    }
    if (!cJSON_IsObject(o))
        return bad(r, path, "expected an object with \"device\"");
    *on = false;
    for (const cJSON *k = o->child; k; k = k->next) {
        snprintf(p, sizeof p, "%s.%s", path, k->string);
        if (strcmp(k->string, "device") == 0) {
            if (!cJSON_IsString(k))
                return bad(r, p, "expected \"cpu\", \"nvme\" or \"none\"");
            if (strcmp(k->valuestring, "cpu") == 0 || strcmp(k->valuestring, "nvme") == 0)
                *on = true;
            else if (strcmp(k->valuestring, "none") != 0)
                return bad(r, p, "expected \"cpu\", \"nvme\" or \"none\"");
        } else if (strcmp(k->string, "pin_memory") && strcmp(k->string, "nvme_path") &&
                   strcmp(k->string, "buffer_count") && strcmp(k->string, "buffer_size") &&
                   strcmp(k->string, "max_in_cpu") && strcmp(k->string, "pipeline_read") &&
                   strcmp(k->string, "pipeline_write") && strcmp(k->string, "fast_init") &&
                   strcmp(k->string, "ratio")) {
            return bad(r, p, "unknown offload key");
        }
    }
    return 0;
}

static const char *const zero_ignored[] = {
    /* change no device memory of the step: communication patterns, saving,
     * checkpoint loading, elasticity */
    "allgather_partitions", "reduce_scatter", "round_robin_gradients", "load_from_fp32_weights",
    "elastic_checkpoint", "ignore_unused_parameters", "legacy_stage1",
    "stage3_gather_16bit_weights_on_model_save", "stage3_gather_fp16_weights_on_model_save",
    "gather_16bit_weights_on_model_save", "use_multi_rank_bucket_allreduce",
    "memory_efficient_linear", "log_trace_cache_warnings", "zero_hpz_partition_size",
};

static int zero(struct rd *r, const cJSON *z, struct memest_dist_cfg *d, int64_t hidden,
                bool *off_opt, bool *off_par)
{
    char p[128];
    if (!cJSON_IsObject(z))
        return bad(r, "zero_optimization", "expected an object");
    uint64_t stage = 0;
    int rc;
    struct memest_engine_cfg *e = &d->eng;
    uint64_t h2 = hidden > 0 ? (uint64_t)hidden * (uint64_t)hidden : 0;
    for (const cJSON *k = z->child; k; k = k->next) {
        const char *n = k->string;
        snprintf(p, sizeof p, "zero_optimization.%s", n);
        if (strcmp(n, "stage") == 0) {
            if ((rc = whole(r, k, p, 0, &stage)) != 0 || stage > 3)
                return rc < 0 ? -1 : bad(r, p, "expected 0, 1, 2 or 3");
        } else if (strcmp(n, "offload_optimizer") == 0) {
            if (once(r, "offload_optimizer", p) != 0 || offload(r, k, p, off_opt) != 0)
                return -1;
        } else if (strcmp(n, "offload_param") == 0) {
            if (once(r, "offload_param", p) != 0 || offload(r, k, p, off_par) != 0)
                return -1;
        } else if (strcmp(n, "cpu_offload") == 0) {   /* deprecated: offload_optimizer cpu */
            if (once(r, "offload_optimizer", p) != 0 || boolean(r, k, p, off_opt) < 0)
                return -1;
        } else if (strcmp(n, "cpu_offload_param") == 0) {   /* deprecated: offload_param cpu */
            if (once(r, "offload_param", p) != 0 || boolean(r, k, p, off_par) < 0)
                return -1;
        } else if (strcmp(n, "reduce_bucket_size") == 0) {
            if ((rc = whole(r, k, p, 1, &e->reduce_bucket_size)) < 0)
                return -1;
            if (rc == 1 && h2)
                e->reduce_bucket_size = h2;
        } else if (strcmp(n, "allgather_bucket_size") == 0) {
            if (whole(r, k, p, 1, &e->allgather_bucket_size) < 0)
                return -1;
        } else if (strcmp(n, "stage3_prefetch_bucket_size") == 0) {
            if ((rc = whole(r, k, p, 0, &e->prefetch_bucket_size)) < 0)
                return -1;
            if (rc == 1 && h2)
                e->prefetch_bucket_size = (uint64_t)(0.9 * (double)h2);
        } else if (strcmp(n, "stage3_param_persistence_threshold") == 0) {
            if ((rc = whole(r, k, p, 0, &e->param_persistence_threshold)) < 0)
                return -1;
            if (rc == 1 && hidden > 0)
                e->param_persistence_threshold = 10 * (uint64_t)hidden;
        } else if (strcmp(n, "stage3_max_live_parameters") == 0) {
            if (whole(r, k, p, 0, &e->max_live_parameters) < 0)
                return -1;
        } else if (strcmp(n, "stage3_max_reuse_distance") == 0) {
            if (whole(r, k, p, 0, &e->max_reuse_distance) < 0)
                return -1;
        } else if (strcmp(n, "sub_group_size") == 0) {
            /* DeepSpeed v0.16.9 deepspeed/runtime/zero/config.py:168:
             * Field(pp_int(1e9), ge=0); 0 puts each parameter in a
             * sub-group of its own (stage3.py:958) */
            if (whole(r, k, p, 0, &e->sub_group_size) < 0)
                return -1;
        } else if (strcmp(n, "overlap_comm") == 0) {
            if ((rc = boolean(r, k, p, &e->overlap_comm)) < 0)
                return -1;
            e->overlap_comm_set = rc == 0;
        } else if (strcmp(n, "contiguous_gradients") == 0) {
            if (boolean(r, k, p, &e->contiguous_gradients) < 0)
                return -1;
        } else if (strcmp(n, "zero_quantized_weights") == 0 ||
                   strcmp(n, "zero_quantized_gradients") == 0 ||
                   strcmp(n, "zero_quantized_nontrainable_weights") == 0 ||
                   strcmp(n, "mics_shard_size") == 0 || strcmp(n, "zeropp_loco_param") == 0) {
            /* ZeRO++ (booleans), MiCS (a shard size, on when > 0; -1 its
             * default), LoCo (an object, on when given) */
            bool on = false;
            if (!strcmp(n, "mics_shard_size")) {
                if (!is_auto(k) && !(cJSON_IsNumber(k) && k->valuedouble == floor(k->valuedouble) &&
                                     fabs(k->valuedouble) < 9.007199254740992e15))
                    return mb_cfg_bad_value(&r->c, p, k, "expected a whole number (-1: off)");
                on = cJSON_IsNumber(k) && k->valuedouble > 0;
            } else if (!strcmp(n, "zeropp_loco_param")) {
                if (!cJSON_IsNull(k) && !cJSON_IsObject(k))
                    return mb_cfg_bad_value(&r->c, p, k, "expected an object or null");
                on = cJSON_IsObject(k);
            } else if (boolean(r, k, p, &on) < 0) {
                return -1;
            }
            if (on)
                return bad(r, p, "changes the memory in a way memest does not model (ZeRO++ / "
                                 "MiCS): remove it to estimate the plain ZeRO step");
        } else {
            bool known = mb_cfg_listed(n, zero_ignored, sizeof zero_ignored / sizeof *zero_ignored);
            if (!known)
                return bad(r, p, "unknown zero_optimization key (a typo would change the "
                                 "estimate silently)");
            mb_cfg_ignore(&r->c, p);
        }
    }
    if (stage == 0 && (*off_opt || *off_par))
        return bad(r, *off_opt ? "zero_optimization.offload_optimizer"
                               : "zero_optimization.offload_param",
                   "offloads with ZeRO stage 1, 2 or 3 only: stage 0 runs no ZeRO optimizer");
    static const enum memest_strategy by_stage[] = {MEMEST_STRAT_DDP, MEMEST_STRAT_ZERO1,
                                                    MEMEST_STRAT_ZERO2, MEMEST_STRAT_ZERO3};
    d->strategy = by_stage[stage];
    return 0;
}

static int half(struct rd *r, const cJSON *v, const char *key, enum memest_dtype t)
{
    char p[64];
    if (once(r, t == MEMEST_BF16 ? "bf16" : "fp16", key) != 0)
        return -1;
    if (!cJSON_IsObject(v))
        return bad(r, key, "expected an object");
    for (const cJSON *k = v->child; k; k = k->next) {
        snprintf(p, sizeof p, "%s.%s", key, k->string);
        if (strcmp(k->string, "enabled") == 0) {
            bool on = false;
            int rc = boolean(r, k, p, &on);
            if (rc < 0)
                return -1;
            if (rc == 0 && on) {
                if (r->s->half_set && r->s->half != t)
                    return bad(r, p, "bf16 and fp16 are both enabled");
                r->s->half_set = true;
                r->s->half = t;
            }
        } else if (strcmp(k->string, "immediate_grad_update") == 0 ||
                   strcmp(k->string, "check_grad_overflow") == 0 ||
                   strcmp(k->string, "auto_cast") == 0) {
            return bad(r, p, "changes the memory in a way memest does not model");
        } else {
            mb_cfg_ignore(&r->c, p);   /* loss scaling settings */
        }
    }
    return 0;
}

static int optimizer(struct rd *r, const cJSON *v)
{
    if (!cJSON_IsObject(v))
        return bad(r, "optimizer", "expected an object");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(v, "type");
    if (!cJSON_IsString(t))
        return bad(r, "optimizer.type", "expected a string");
    const char *n = t->valuestring;
    if (strcasecmp(n, "adam") == 0 || strcasecmp(n, "cpuadam") == 0 ||
        strcasecmp(n, "fusedadam") == 0)
        r->s->optim = MEMEST_OPT_ADAM;
    else if (strcasecmp(n, "adamw") == 0)
        r->s->optim = MEMEST_OPT_ADAMW;
    else if (strcasecmp(n, "sgd") == 0)
        r->s->optim = MEMEST_OPT_SGD;
    else
        return bad(r, "optimizer.type", "an optimizer memest does not model here (Adam, AdamW "
                                        "and SGD are; give --optim for the others)");
    r->s->optim_set = true;
    const cJSON *pa = cJSON_GetObjectItemCaseSensitive(v, "params");
    if (pa && !cJSON_IsObject(pa))
        return mb_cfg_bad_value(&r->c, "optimizer.params", pa, "expected an object");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(pa, "momentum");
    if (m && !is_auto(m)) {   /* checked as --momentum checks it (app_dist.c) */
        if (!cJSON_IsNumber(m))
            return mb_cfg_bad_value(&r->c, "optimizer.params.momentum", m, "expected a number");
        r->s->momentum = m->valuedouble;
        r->s->momentum_set = true;
    }
    return 0;
}

static const char *const top_ignored[] = {
    "scheduler", "gradient_clipping", "steps_per_print", "wall_clock_breakdown", "tensorboard",
    "wandb", "csv_monitor", "comet", "flops_profiler", "comms_logger", "zero_allow_untested_optimizer",
    "zero_force_ds_cpu_optimizer", "prescale_gradients", "gradient_predivide_factor",
    "communication_data_type", "dump_state", "memory_breakdown", "checkpoint", "elasticity",
    "autotuning", "aio", "activation_checkpointing", "sparse_gradients", "seq_parallel_communication_data_type",
    "timers", "monitor_config", "use_data_before_expert_parallelism", "disable_allgather",
    "nebula", "data_efficiency", "curriculum_learning",
};

int memest_ds_config_read(const char *path, int64_t hidden, struct memest_dist_cfg *d,
                          struct memest_ds_settings *s, struct memest_error *err)
{
    cJSON *root = NULL;
    memset(s, 0, sizeof *s);
    char *text;
    size_t len;
    if (mb_read_all(path, MB_CONFIG_MAX_BYTES, "config files", &text, &len, err) != 0)
        return -1;
    int parsed = mb_json_parse_text(text, len, path, &root, err);
    free(text);
    if (parsed != 0)
        return -1;
    struct rd r = {.c = {path, err, s->ignored, sizeof s->ignored}, .s = s};
    int rc = 0;
    bool off_opt = false, off_par = false, zero_seen = false;
    if (!cJSON_IsObject(root)) {
        rc = bad(&r, "(top level)", "expected a JSON object (a DeepSpeed config)");
        goto end;
    }
    for (const cJSON *k = root->child; k && rc == 0; k = k->next) {
        const char *n = k->string;
        uint64_t u = 0;
        int w;
        if (strcmp(n, "zero_optimization") == 0) {
            zero_seen = true;
            rc = zero(&r, k, d, hidden, &off_opt, &off_par);
        } else if (strcmp(n, "bf16") == 0 || strcmp(n, "bfloat16") == 0) {
            rc = half(&r, k, n, MEMEST_BF16);
        } else if (strcmp(n, "fp16") == 0) {
            rc = half(&r, k, n, MEMEST_F16);
        } else if (strcmp(n, "train_micro_batch_size_per_gpu") == 0) {
            if ((w = whole(&r, k, n, 1, &u)) < 0)
                rc = -1;
            else if (w == 0)
                s->micro_batch = (int64_t)u;
        } else if (strcmp(n, "train_batch_size") == 0) {
            if ((w = whole(&r, k, n, 1, &u)) < 0)
                rc = -1;
            else if (w == 0)
                s->train_batch = (int64_t)u;
        } else if (strcmp(n, "gradient_accumulation_steps") == 0) {
            if ((w = whole(&r, k, n, 1, &u)) < 0)
                rc = -1;
            else if (w == 0)
                s->grad_accum = (int64_t)u;
        } else if (strcmp(n, "optimizer") == 0) {
            rc = optimizer(&r, k);
        } else if (strcmp(n, "amp") == 0 || strcmp(n, "compression_training") == 0 ||
                   strcmp(n, "pipeline") == 0 || strcmp(n, "data_types") == 0) {
            const cJSON *en = cJSON_IsObject(k) ? cJSON_GetObjectItemCaseSensitive(k, "enabled") : NULL;
            char p[64];
            snprintf(p, sizeof p, "%s.enabled", n);
            bool on = false;
            if (en && boolean(&r, en, p, &on) < 0)
                rc = -1;
            else if (strcmp(n, "pipeline") == 0 || strcmp(n, "data_types") == 0 || on)
                rc = bad(&r, n, "changes the memory in a way memest does not model (apex amp, "
                                "compression, pipeline engine, data_types.grad_accum_dtype)");
            else
                mb_cfg_ignore(&r.c, n);
        } else {
            bool known = mb_cfg_listed(n, top_ignored, sizeof top_ignored / sizeof *top_ignored);
            if (!known)
                rc = bad(&r, n, "unknown DeepSpeed config key (a typo would change the estimate "
                                "silently)");
            else
                mb_cfg_ignore(&r.c, n);
        }
    }
    if (rc == 0 && !zero_seen)
        d->strategy = MEMEST_STRAT_DDP;   /* stage 0: the engine all-reduces whole gradients */
    if (rc == 0)
        d->offload = off_par && off_opt ? MEMEST_OFFLOAD_OPTIMIZER_PARAMS
                     : off_opt          ? MEMEST_OFFLOAD_OPTIMIZER
                                        : MEMEST_OFFLOAD_NONE;
    if (rc == 0 && off_par && !off_opt)
        rc = bad(&r, "zero_optimization.offload_param",
                 "offloading the parameters without the optimizer is not modelled");
end:
    cJSON_Delete(root);
    return rc;
}

int memest_ds_batch(const char *path, const struct memest_ds_settings *s, int64_t micro,
                    int64_t accum, int64_t world, int64_t *micro_out, int64_t *accum_out,
                    struct memest_error *err)
{
    uint64_t t = (uint64_t)s->train_batch, m = (uint64_t)(micro ? micro : s->micro_batch),
             g = (uint64_t)(accum ? accum : s->grad_accum), w = (uint64_t)world;
    const char *mk = micro ? "--batch" : "train_micro_batch_size_per_gpu";
    const char *gk = accum ? "--grad-accum" : "gradient_accumulation_steps";
    memest_err_file(err, path);
    if (!t) {   /* the Trainer fills what "auto" leaves; memest's default is 1 */
        *micro_out = m ? (int64_t)m : 1;
        *accum_out = g ? (int64_t)g : 1;
        return 0;
    }
    if (m && !g) {
        g = t / m / w;
    } else if (g && !m) {
        m = t / w / g;
    } else if (!m && !g) {
        g = 1;
        m = t / w;
    }
    uint64_t mg, mgw;
    if (m == 0 || g == 0)
        return memest_errf(err, MEMEST_ERR_SCHEMA, "train_batch_size",
                           "%llu over %llu data-parallel GPUs leaves %s of 0 (DeepSpeed needs "
                           "at least 1)", (unsigned long long)t, (unsigned long long)w,
                           m == 0 ? "a micro-batch" : "an accumulation");
    if (!memest_mul(m, g, &mg) || !memest_mul(mg, w, &mgw) || mgw != t)
        return memest_errf(err, MEMEST_ERR_SCHEMA, "train_batch_size",
                           "%llu is not %s %llu x %s %llu x %llu data-parallel GPUs (DeepSpeed's "
                           "check: train_batch_size = micro-batch x accumulation x world size)",
                           (unsigned long long)t, mk, (unsigned long long)m, gk,
                           (unsigned long long)g, (unsigned long long)w);
    *micro_out = (int64_t)m;
    *accum_out = (int64_t)g;
    return 0;
}

int64_t memest_ds_model_hidden(const struct memest_model *m)
{
    /* a Hugging Face config's hidden size (its value of the template's
     * variable, else the template's default), by the names
     * PretrainedConfig's attribute_map gives it (GPT-2's n_embd, T5's
     * d_model), or a model file's variable of that name */
    static const char *const keys[] = {"hidden_size", "n_embd", "d_model"};
    if (!m || !cJSON_IsObject(m->root))
        return 0;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        for (int k = 0; k < m->npreset; k++) {
            if (strcmp(m->preset[k].name, keys[i]) != 0)
                continue;
            char *end;
            long long v = strtoll(m->preset[k].value, &end, 10);
            if (*end == 0 && v >= 1 && v < 1000000000)
                return (int64_t)v;
        }
        const cJSON *vars = cJSON_GetObjectItemCaseSensitive(m->root, "variables");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(vars, keys[i]);
        if (cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble < 1e9)
            return (int64_t)v->valuedouble;
    }
    return 0;
}
