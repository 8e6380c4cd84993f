/* fsdp_config.c - an FSDP config onto the several-GPU layout
 * (fsdp_config.h). The keys follow accelerate's FullyShardedDataParallelPlugin
 * (accelerate/utils/dataclasses.py: fsdp_sharding_strategy,
 * fsdp_auto_wrap_policy, fsdp_transformer_layer_cls_to_wrap,
 * fsdp_offload_params, fsdp_backward_prefetch, fsdp_forward_prefetch,
 * fsdp_activation_checkpointing, ...) and the Trainer's fsdp_config, which
 * has the same keys without the fsdp_ prefix (transformers
 * training_args.py). A YAML file is read with libyaml into the same cJSON
 * tree a JSON file gives (plain scalars true/false, null and numbers typed
 * as YAML 1.1 reads them), then one reader takes both. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

#include "memest/fsdp_config.h"

#include "config_keys.h"
#include "hf_internal.h"

#define FSDP_MAX_BYTES (1u << 20)   /* a config file: 1 MiB is far past any */

/* ---- YAML into cJSON ---- */

static cJSON *scalar(const yaml_node_t *n)
{
    const char *v = (const char *)n->data.scalar.value;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return cJSON_CreateString(v);
    if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE"))
        return cJSON_CreateTrue();
    if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE"))
        return cJSON_CreateFalse();
    if (!strcmp(v, "null") || !strcmp(v, "~") || !*v)
        return cJSON_CreateNull();
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (*v && !*end && errno == 0 && isfinite(d) && strchr("+-.0123456789", *v))
        return cJSON_CreateNumber(d);
    return cJSON_CreateString(v);
}

static cJSON *convert(yaml_document_t *doc, const yaml_node_t *n, int depth)
{
    if (!n || depth > 32)
        return NULL;
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return scalar(n);
    case YAML_SEQUENCE_NODE: {
        cJSON *a = cJSON_CreateArray();
        for (yaml_node_item_t *i = n->data.sequence.items.start; a && i < n->data.sequence.items.top;
             i++) {
            cJSON *c = convert(doc, yaml_document_get_node(doc, *i), depth + 1);
            if (!c) {
                cJSON_Delete(a);
                return NULL;
            }
            cJSON_AddItemToArray(a, c);
        }
        return a;
    }
    case YAML_MAPPING_NODE: {
        cJSON *o = cJSON_CreateObject();
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; o && p < n->data.mapping.pairs.top;
             p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            cJSON *c = convert(doc, yaml_document_get_node(doc, p->value), depth + 1);
            if (!k || k->type != YAML_SCALAR_NODE || !c) {
                cJSON_Delete(c);
                cJSON_Delete(o);
                return NULL;
            }
            cJSON_AddItemToObject(o, (const char *)k->data.scalar.value, c);
        }
        return o;
    }
    case YAML_NO_NODE:
        break;
    }
    return NULL;
}

static int read_yaml(const char *path, cJSON **out, struct memest_error *err)
{
    *out = NULL;
    memest_err_file(err, path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return memest_errf(err, MEMEST_ERR_IO, NULL, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || S_ISDIR(st.st_mode) || st.st_size > FSDP_MAX_BYTES) {
        fclose(f);
        return memest_errf(err, MEMEST_ERR_IO, NULL, "cannot read (a directory, or over 1 MiB)");
    }
    yaml_parser_t p;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&p)) {
        fclose(f);
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    }
    yaml_parser_set_input_file(&p, f);
    int rc = 0;
    if (!yaml_parser_load(&p, &doc)) {
        memest_errf(err, MEMEST_ERR_PARSE, NULL, "malformed YAML: %s",
                    p.problem ? p.problem : "unreadable");
        err->line = (int)p.problem_mark.line + 1;
        err->col = (int)p.problem_mark.column + 1;
        rc = -1;
    } else {
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        *out = root ? convert(&doc, root, 0) : cJSON_CreateNull();
        if (!*out)
            rc = memest_errf(err, MEMEST_ERR_SCHEMA, NULL,
                             "not a config: nested too deep, or a mapping key that is not text");
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&p);
    fclose(f);
    return rc;
}

/* ---- the keys ---- */

struct rd {
    struct mb_cfg c;    /* the file, the error, the noted keys */
    struct memest_fsdp_settings *s;
};

static int bad(struct rd *r, const char *path, const char *what)
{
    return mb_cfg_bad(&r->c, path, what);
}

/* A boolean, also as accelerate writes some ("true"/"false" strings). */
static int boolean(struct rd *r, const cJSON *v, const char *path, bool *out)
{
    if (cJSON_IsBool(v)) {
        *out = cJSON_IsTrue(v);
        return 0;
    }
    if (cJSON_IsString(v) && (!strcasecmp(v->valuestring, "true") || !strcasecmp(v->valuestring, "false"))) {
        *out = !strcasecmp(v->valuestring, "true");
        return 0;
    }
    return bad(r, path, "expected true or false");
}

/* A name or its number, as FSDP's enums take them ("FULL_SHARD" or 1). */
static int choice(struct rd *r, const cJSON *v, const char *path, const char *const *names, int n,
                  int *out)
{
    for (int i = 0; i < n; i++) {
        if ((cJSON_IsString(v) && !strcasecmp(v->valuestring, names[i])) ||
            (cJSON_IsNumber(v) && v->valuedouble == i + 1) ||
            (cJSON_IsString(v) && atoi(v->valuestring) == i + 1)) {
            *out = i;
            return 0;
        }
    }
    char m[200] = "expected one of";
    for (int i = 0; i < n; i++) {
        size_t k = strlen(m);
        snprintf(m + k, sizeof m - k, "%s %s", i ? "," : "", names[i]);
    }
    return bad(r, path, m);
}

static int whole(struct rd *r, const cJSON *v, const char *path, int64_t *out)
{
    double d = cJSON_IsNumber(v) ? v->valuedouble : cJSON_IsString(v) ? atof(v->valuestring) : -1;
    if (!(d >= 1 && d <= 1048576 && floor(d) == d))
        return bad(r, path, "expected a whole number between 1 and 1048576");
    *out = (int64_t)d;
    return 0;
}

static const char *const fsdp_ignored[] = {
    "use_orig_params", "cpu_ram_efficient_loading", "sync_module_states", "state_dict_type",
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
        } else if (!strcmp(n, "activation_checkpointing")) {
            if (boolean(r, k, path, &r->s->checkpoint) != 0)
                return -1;
        } else if (!strcmp(n, "version")) {
            if (!cJSON_IsNumber(k) || k->valuedouble != 1)
                return bad(r, path, "FSDP2 (fsdp_version 2) is not modelled: FSDP1's flat "
                                    "parameters are");
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
    /* JSON when it opens with '{' */
    FILE *f = fopen(path, "rb");
    int c = ' ';
    while (f && (c = fgetc(f)) != EOF && (c == ' ' || c == '\t' || c == '\n' || c == '\r'))
        ;
    if (f)
        fclose(f);
    cJSON *root = NULL;
    if ((c == '{' ? mb_json_read_file(path, &root, err) : read_yaml(path, &root, err)) != 0)
        return -1;
    struct rd r = {{path, err, s->ignored, sizeof s->ignored}, s};
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
                rc = bad(&r, n, "FSDP or MULTI_GPU is modelled here (DeepSpeed: --deepspeed)");
            else if (!strcmp(k->valuestring, "MULTI_GPU"))
                d->strategy = MEMEST_STRAT_DDP;
        } else if (!strcmp(n, "mixed_precision")) {
            if (!cJSON_IsString(k) || (strcmp(k->valuestring, "no") &&
                                       strcmp(k->valuestring, "fp16") &&
                                       strcmp(k->valuestring, "bf16")))
                rc = bad(&r, n, "expected no, fp16 or bf16 (fp8 is not modelled)");
            else if (strcmp(k->valuestring, "no")) {
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
