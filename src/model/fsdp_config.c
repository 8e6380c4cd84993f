/* fsdp_config.c - an FSDP config onto the several-GPU layout
 * (fsdp_config.h). The keys follow accelerate's FullyShardedDataParallelPlugin
 * (accelerate/utils/dataclasses.py: fsdp_sharding_strategy,
 * fsdp_auto_wrap_policy, fsdp_transformer_layer_cls_to_wrap,
 * fsdp_offload_params, fsdp_backward_prefetch, fsdp_forward_prefetch,
 * fsdp_activation_checkpointing, ...) and the Trainer's fsdp_config, which
 * has the same keys without the fsdp_ prefix (transformers
 * training_args.py). A YAML file is read into the same cJSON tree a JSON
 * file gives (yaml_read.c: as yaml.safe_load types it, within a budget),
 * then one reader takes both. Values are read as accelerate reads them: it
 * hands the config's values to the FSDP plugin as environment variables
 * (commands/launch.py), which parses booleans with str_to_bool
 * (utils/environment.py: y, yes, t, true, on, 1 / n, no, f, false, off, 0,
 * in any case) and enum members by name or, when the text is all digits, by
 * number (utils/dataclasses.py, FullyShardedDataParallelPlugin). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "memest/format.h"
#include "memest/fsdp_config.h"

#include "config_keys.h"
#include "hf_internal.h"
#include "yaml_read.h"

/* ---- the keys ---- */

struct rd {
    struct mb_cfg c;    /* the file, the error, the noted keys */
    struct memest_fsdp_settings *s;
    struct mb_cfg_seen seen;
};

static int bad(struct rd *r, const char *path, const char *what)
{
    return mb_cfg_bad(&r->c, path, what);
}

/* A setting given under two names (fsdp_X and X, or in fsdp_config and at
 * the top of a Trainer's config) would depend on the order of the keys:
 * refused. */
static int once(struct rd *r, const char *name, const char *path)
{
    return mb_cfg_once(&r->c, &r->seen, name, path);
}

/* A boolean as accelerate's str_to_bool reads the text of the value: YAML
 * true/false (and yes/no, on/off), 1 or 0, or one of str_to_bool's words
 * in a string. */
static int boolean(struct rd *r, const cJSON *v, const char *path, bool *out)
{
    static const char *const yes[] = {"y", "yes", "t", "true", "on", "1"};
    static const char *const no[] = {"n", "no", "f", "false", "off", "0"};
    if (cJSON_IsBool(v)) {
        *out = cJSON_IsTrue(v);
        return 0;
    }
    if (cJSON_IsNumber(v) && (v->valuedouble == 0 || v->valuedouble == 1)) {
        *out = v->valuedouble == 1;
        return 0;
    }
    for (size_t i = 0; cJSON_IsString(v) && i < sizeof yes / sizeof *yes; i++) {
        if (!strcasecmp(v->valuestring, yes[i]) || !strcasecmp(v->valuestring, no[i])) {
            *out = !strcasecmp(v->valuestring, yes[i]);
            return 0;
        }
    }
    return mb_cfg_bad_value(&r->c, path, v, "expected true or false");
}

/* A member of one of FSDP's enums: its name (in any case), or its number
 * (1-based) as a whole number or a text of digits only. */
static int choice(struct rd *r, const cJSON *v, const char *path, const char *const *names, int n,
                  int *out)
{
    uint64_t u = 0;
    *out = -1;   /* set on every path */
    bool num = (cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble <= n &&
                floor(v->valuedouble) == v->valuedouble && (u = (uint64_t)v->valuedouble)) ||
               (cJSON_IsString(v) && memest_parse_u64(v->valuestring, 1, (uint64_t)n, &u) == 0);
    for (int i = 0; i < n; i++) {
        if ((num && u == (uint64_t)i + 1) ||
            (cJSON_IsString(v) && !strcasecmp(v->valuestring, names[i]))) {
            *out = i;
            return 0;
        }
    }
    char m[200] = "expected one of";
    for (int i = 0; i < n; i++) {
        size_t k = strlen(m);
        snprintf(m + k, sizeof m - k, "%s %s", i ? "," : "", names[i]);
    }
    size_t k = strlen(m);
    snprintf(m + k, sizeof m - k, " (or its number, 1 to %d)", n);
    return mb_cfg_bad_value(&r->c, path, v, m);
}

/* A count of the layout (num_processes, num_machines): a whole number, or a
 * text of digits only, between 1 and 2^20, as --gpus takes it. */
static int whole(struct rd *r, const cJSON *v, const char *path, int64_t *out)
{
    uint64_t u;
    bool ok = cJSON_IsNumber(v) ? v->valuedouble >= 1 && v->valuedouble <= 1048576 &&
                                      floor(v->valuedouble) == v->valuedouble
                                : cJSON_IsString(v) &&
                                      memest_parse_u64(v->valuestring, 1, 1048576, &u) == 0;
    if (!ok)
        return mb_cfg_bad_value(&r->c, path, v, "expected a whole number between 1 and 1048576");
    *out = cJSON_IsNumber(v) ? (int64_t)v->valuedouble : (int64_t)u;
    return 0;
}

static const char *const fsdp_ignored[] = {
    "cpu_ram_efficient_loading", "sync_module_states", "state_dict_type",
    "limit_all_gathers", "xla", "xla_fsdp_grad_ckpt", "xla_fsdp_settings",
};

static int fsdp_keys(struct rd *r, const cJSON *o, const char *base, struct memest_dist_cfg *d)
{
    static const char *const strategies[] = {"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD",
                                             "HYBRID_SHARD", "HYBRID_SHARD_ZERO2"};
    static const char *const prefetch[] = {"BACKWARD_PRE", "BACKWARD_POST", "NO_PREFETCH"};
    static const char *const policies[] = {"TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP", "NO_WRAP"};
    char path[160];
    for (const cJSON *k = o->child; k; k = k->next) {
        const char *n = k->string;
        snprintf(path, sizeof path, "%s%s%s", base, *base ? "." : "", n);
        if (!strncmp(n, "fsdp_", 5))
            n += 5;
        int i;
        bool b;
        if (once(r, n, path) != 0)
            return -1;
        if (!strcmp(n, "sharding_strategy")) {
            if (choice(r, k, path, strategies, 5, &i) != 0)
                return -1;
            if (i == 4)
                return bad(r, path, "HYBRID_SHARD_ZERO2 is not modelled (HYBRID_SHARD and "
                                    "SHARD_GRAD_OP are)");
            static const enum memest_strategy map[] = {MEMEST_STRAT_FSDP, MEMEST_STRAT_FSDP_GRAD_OP,
                                                       MEMEST_STRAT_DDP, MEMEST_STRAT_HSDP};
            d->strategy = map[i];
        } else if (!strcmp(n, "auto_wrap_policy")) {
            if (choice(r, k, path, policies, 3, &i) != 0)
                return -1;
            if (i != 0)
                return bad(r, path, "only TRANSFORMER_BASED_WRAP is modelled (units by the "
                                    "transformer layer class)");
        } else if (!strcmp(n, "transformer_layer_cls_to_wrap")) {
            const cJSON *v = cJSON_IsArray(k) ? k->child : k;
            if (cJSON_IsArray(k) && cJSON_GetArraySize(k) != 1)
                return bad(r, path, "one layer class is modelled");
            if (!cJSON_IsString(v) || !*v->valuestring || strchr(v->valuestring, ','))
                return bad(r, path, "expected one layer class name (e.g. LlamaDecoderLayer)");
            snprintf(r->s->wrap, sizeof r->s->wrap, "%s", v->valuestring);
            d->eng.wrap_block = r->s->wrap;
        } else if (!strcmp(n, "offload_params")) {
            if (boolean(r, k, path, &b) != 0)
                return -1;
            d->offload = b ? MEMEST_OFFLOAD_OPTIMIZER_PARAMS : MEMEST_OFFLOAD_NONE;
        } else if (!strcmp(n, "backward_prefetch")) {
            if (cJSON_IsNull(k))
                i = 2;
            else if (choice(r, k, path, prefetch, 3, &i) != 0)
                return -1;
            d->eng.backward_prefetch = i != 2;
        } else if (!strcmp(n, "forward_prefetch")) {
            if (boolean(r, k, path, &d->eng.forward_prefetch) != 0)
                return -1;
        } else if (!strcmp(n, "use_orig_params")) {
            if (boolean(r, k, path, &d->eng.use_orig_params) != 0)
                return -1;
        } else if (!strcmp(n, "activation_checkpointing")) {
            if (boolean(r, k, path, &r->s->checkpoint) != 0)
                return -1;
        } else if (!strcmp(n, "version")) {
            static const char *const versions[] = {"1", "2"};
            if (choice(r, k, path, versions, 2, &i) != 0)
                return -1;
            d->eng.fsdp2 = i == 1;   /* fully_shard: each parameter on its own */
        } else if (!strcmp(n, "min_num_params")) {
            return bad(r, path, "a size-based wrap policy is not modelled (units by the "
                                "transformer layer class are)");
        } else {
            bool known = mb_cfg_listed(n, fsdp_ignored, sizeof fsdp_ignored / sizeof *fsdp_ignored);
            if (!known)
                return bad(r, path, "unknown FSDP config key (a typo would change the estimate "
                                    "silently)");
            mb_cfg_ignore(&r->c, path);
        }
    }
    return 0;
}

static const char *const top_ignored[] = {
    "compute_environment", "machine_rank", "main_training_function", "rdzv_backend",
    "same_network", "use_cpu", "tpu_env", "tpu_use_cluster", "tpu_use_sudo", "main_process_ip",
    "main_process_port", "downcast_bf16", "enable_cpu_affinity", "debug", "gpu_ids",
    "dynamo_config",
};

int memest_fsdp_config_read(const char *path, struct memest_dist_cfg *d,
                            struct memest_fsdp_settings *s, struct memest_error *err)
{
    memset(s, 0, sizeof *s);
    char *text;
    size_t len;
    if (mb_read_all(path, MB_CONFIG_MAX_BYTES, "config files", &text, &len, err) != 0)
        return -1;
    /* JSON when it opens with '{' (after a byte order mark and white space) */
    size_t i = len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0;
    while (i < len && strchr(" \t\r\n", text[i]) && text[i])
        i++;
    cJSON *root = NULL;
    int parsed;
    if (i < len && text[i] == '{') {
        /* JSON, or a YAML document in flow style ({distributed_type: FSDP}):
         * the JSON reading, unless only YAML reads it */
        struct memest_error je = {0}, ye = {0};
        parsed = mb_json_parse_text(text, len, path, &root, &je);
        if (parsed != 0 && je.code == MEMEST_ERR_PARSE &&
            (parsed = mb_yaml_parse(text, len, path, &root, &ye)) != 0 &&
            ye.code == MEMEST_ERR_NOMEM)
            je = ye;
        if (parsed != 0 && err->code == MEMEST_ERR_NONE)
            *err = je;
    } else {
        parsed = mb_yaml_parse(text, len, path, &root, err);
    }
    free(text);
    if (parsed != 0)
        return -1;
    struct rd r = {.c = {path, err, s->ignored, sizeof s->ignored}, .s = s};
    int rc = 0;
    d->strategy = MEMEST_STRAT_FSDP;   /* the Trainer's and accelerate's default */
    if (!cJSON_IsObject(root)) {
        rc = bad(&r, "$", "expected a mapping (an accelerate or FSDP config)");
        goto end;
    }
    for (const cJSON *k = root->child; k && rc == 0; k = k->next) {
        const char *n = k->string;
        if (!strcmp(n, "fsdp_config")) {
            rc = cJSON_IsObject(k) ? fsdp_keys(&r, k, n, d) : bad(&r, n, "expected a mapping");
        } else if (!strcmp(n, "distributed_type")) {
            if (!cJSON_IsString(k) || (strcmp(k->valuestring, "FSDP") &&
                                       strcmp(k->valuestring, "MULTI_GPU")))
                rc = mb_cfg_bad_value(&r.c, n, k, "FSDP or MULTI_GPU is modelled here "
                                      "(DeepSpeed: --deepspeed)");
            else if (!strcmp(k->valuestring, "MULTI_GPU"))
                d->strategy = MEMEST_STRAT_DDP;
        } else if (!strcmp(n, "mixed_precision")) {
            /* an unquoted no is YAML 1.1's false, which accelerate's
             * config classes take as "no" */
            if (cJSON_IsFalse(k)) {
                d->eng.no_mixed_precision = true;
                continue;
            }
            if (!cJSON_IsString(k) || (strcmp(k->valuestring, "no") &&
                                       strcmp(k->valuestring, "fp16") &&
                                       strcmp(k->valuestring, "bf16")))
                rc = mb_cfg_bad_value(&r.c, n, k, "expected no, fp16 or bf16 (fp8 is not "
                                      "modelled)");
            else if (!strcmp(k->valuestring, "no"))
                d->eng.no_mixed_precision = true;   /* no upcast (accelerator.py:1991) */
            else {
                s->half_set = true;
                s->half = !strcmp(k->valuestring, "bf16") ? MEMEST_BF16 : MEMEST_F16;
            }
        } else if (!strcmp(n, "num_processes")) {
            rc = whole(&r, k, n, &s->processes);
        } else if (!strcmp(n, "num_machines")) {
            rc = whole(&r, k, n, &s->machines);
        } else {
            bool known = mb_cfg_listed(n, top_ignored, sizeof top_ignored / sizeof *top_ignored);
            if (known) {
                mb_cfg_ignore(&r.c, n);
                continue;
            }
            /* the Trainer's fsdp_config: the FSDP keys at the top */
            cJSON *one = cJSON_CreateObject();
            cJSON *dup = one ? cJSON_Duplicate(k, 1) : NULL;
            if (!one || !dup) {
                cJSON_Delete(one);
                rc = memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
                break;
            }
            cJSON_AddItemToObject(one, n, dup);
            rc = fsdp_keys(&r, one, "", d);
            cJSON_Delete(one);
        }
    }
end:
    cJSON_Delete(root);
    return rc;
}
