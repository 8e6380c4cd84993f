/* hf_config.c - a Hugging Face config.json as a model: the architecture
 * template of its "model_type" (a model file with an "hf_config" section,
 * models/README.md) and the values the config gives the template's
 * variables.
 *
 * The template is DIR/<model_type>.json for the first directory DIR of the
 * environment variable MEMEST_ARCH_PATH (colon-separated) that has one, else
 * the one built in from models/arch/. A key of the config is known when it
 * is in the template's "hf_config.keys" or one of the keys that change no
 * memory in any config (PretrainedConfig's, and the ones tools write,
 * below). An unknown key, at the top or inside an object the template
 * knows (rope_scaling), is noted in the model (model.h: unknown): the
 * estimate goes on without it and the command warns, or with
 * --strict-config refuses it (exit 3), as it could change the memory. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "memest/escape.h"
#include "memest/format.h"
#include "memest/suggest.h"

#include "build_internal.h"
#include "hf_internal.h"

/* The keys every config has, which change nothing memest models: the
 * attributes transformers v4.48.0 PretrainedConfig.__init__ sets
 * (src/transformers/configuration_utils.py) and the generation defaults of
 * its _get_global_generation_defaults(), which configs also carry. Left out
 * on purpose: tie_word_embeddings (the templates map it: it changes the
 * parameters), torch_dtype/dtype (read below), quantization_config (read
 * below) and gradient_checkpointing (PreTrainedModel.post_init turns it on
 * for an old config that says true: templates map it if they model it). */
static const char *const generic_keys[] = {
    /* PretrainedConfig.__init__ */
    "return_dict", "output_hidden_states", "output_attentions", "torchscript",
    "use_bfloat16", "tf_legacy_loss", "pruned_heads", "chunk_size_feed_forward",
    "is_encoder_decoder", "is_decoder", "cross_attention_hidden_size", "add_cross_attention",
    "tie_encoder_decoder", "architectures", "finetuning_task", "id2label", "label2id",
    "num_labels", "tokenizer_class", "prefix", "bos_token_id", "pad_token_id", "eos_token_id",
    "sep_token_id", "decoder_start_token_id", "task_specific_params", "problem_type",
    "_name_or_path", "_commit_hash", "transformers_version",
    /* written by save_pretrained of v4.48-era models: attention dispatch, set at load time */
    "_attn_implementation_autoset",
    /* class attributes written by to_dict() */
    "model_type",
    /* the kv cache of generation: no cache in a training step */
    "use_cache",
    /* _get_global_generation_defaults() */
    "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups",
    "diversity_penalty", "temperature", "top_k", "top_p", "typical_p", "repetition_penalty",
    "length_penalty", "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "bad_words_ids",
    "num_return_sequences", "output_scores", "return_dict_in_generate", "forced_bos_token_id",
    "forced_eos_token_id", "remove_invalid_values", "exponential_decay_length_penalty",
    "suppress_tokens", "begin_suppress_tokens",
    /* not PretrainedConfig's but set by nearly every subclass (LlamaConfig,
     * ...): the std of the initial weights, no memory */
    "initializer_range",
    /* the hub repository's own classes for trust_remote_code=True
     * (dynamic_module_utils.py): models/auto/auto_factory.py's
     * from_pretrained builds transformers' own class of the model_type
     * (the template's) unless the caller asks for the remote code; a
     * model_type without a template is refused (load_template) */
    "auto_map",
    /* a class attribute of the config classes that some hub configs carry:
     * Trainer.prediction_step's ignore_keys (trainer.py), no memory */
    "keys_to_ignore_at_inference",
    /* GenerationConfig's _from_model_config (generation/configuration_utils.py:
     * made by from_model_config), which some configs carry: no memory */
    "_from_model_config",
    /* written by Unsloth (its hub configs carry them): PretrainedConfig.
     * __init__ keeps any kwarg it does not know as an attribute, which
     * transformers' modeling code never reads */
    "unsloth_version", "unsloth_fixed",
};
#define NGENERIC ((int)(sizeof generic_keys / sizeof *generic_keys))

/* Keys every config may carry that do change the memory but that memest
 * takes from the command line: unknown keys with their own words. */
#define ATTN_WHY                                                                              \
    "names transformers' attention implementation, which memest takes from --attention "      \
    "(default auto: sdpa), not from the config"
static const struct {
    const char *key, *why;
} option_keys[] = {
    /* PretrainedConfig.__init__ pops attn_implementation into
     * _attn_implementation_internal, and the _attn_implementation setter
     * takes the other spelling: from_pretrained's attention unless the
     * caller names one (modeling_utils.py, _autoset_attn_implementation) */
    {"attn_implementation", ATTN_WHY},
    {"_attn_implementation", ATTN_WHY},
};

#define MAX_MODEL_TYPE 64

struct hf {
    struct memest_model *m;
    struct memest_error *err;
    const char *cfgfile;           /* the config's path */
    const char *model_type;
    const char *arch;              /* the template, for messages */
    const cJSON *vars;             /* the template's "variables" */
    const cJSON *domains;          /* the template's "hf_config.domains" (may be NULL) */
    const cJSON *keys;             /* the template's "hf_config.keys" */
    const cJSON *key_sets;         /* "hf_config.key_sets" (may be NULL): more sets a "rest" names */
    struct memest_override *ov;    /* the values found so far */
    int n, cap;
    struct memest_unknown_key *unknown;   /* the unknown keys (model.h) */
    int nunknown;
    cJSON *checks;                 /* the template's "checks", which "each" specs extend */
};

bool mb_is_hf_config(const cJSON *root)
{
    return cJSON_GetObjectItemCaseSensitive(root, "model_type") &&
           !cJSON_GetObjectItemCaseSensitive(root, "layers");
}

static int nomem(struct hf *h)
{
    return memest_errf(h->err, MEMEST_ERR_NOMEM, NULL, "out of memory");
}

/* The unknown key `key` (a JSON path), with the words of its warning:
 * noted for the command (model.h), the first MEMEST_MAX_UNKNOWN_KEYS of
 * them kept. 0 / -1 (out of memory). */
static int note_unknown(struct hf *h, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int note_unknown(struct hf *h, const char *key, const char *fmt, ...)
{
    if (h->nunknown++ >= MEMEST_MAX_UNKNOWN_KEYS)
        return 0;
    if (!h->unknown &&
        !(h->unknown = memest_arena_alloc(&h->m->arena,
                                          sizeof *h->unknown * MEMEST_MAX_UNKNOWN_KEYS)))
        return nomem(h);
    char msg[sizeof h->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct memest_unknown_key *u = &h->unknown[h->nunknown - 1];
    u->key = memest_arena_strdup(&h->m->arena, key);
    u->msg = memest_arena_strdup(&h->m->arena, msg);
    return u->key && u->msg ? 0 : nomem(h);
}

/* ---- finding the template ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "a, b, c": the model types with a template (built in or on
 * MEMEST_ARCH_PATH), sorted, each once; in buf. */
static const char *supported_list(char *buf, size_t n)
{
    const char *names[256];
    char keep[256][MAX_MODEL_TYPE + 1];
    int k = 0;
    for (size_t i = 0; i < mb_arch_builtin_count && k < 256; i++)
        names[k++] = mb_arch_builtin[i].model_type;
    const char *ap = getenv("MEMEST_ARCH_PATH");
    char dirbuf[4096];
    for (const char *p = ap ? ap : ""; *p && k < 256;) {
        size_t len = strcspn(p, ":");
        if (len > 0 && len < sizeof dirbuf) {
            memcpy(dirbuf, p, len);
            dirbuf[len] = '\0';
            DIR *d = opendir(dirbuf);
            for (struct dirent *e; d && k < 256 && (e = readdir(d));) {
                size_t el = strlen(e->d_name);
                if (el > 5 && el - 5 <= MAX_MODEL_TYPE && e->d_name[0] != '.' &&
                    strcmp(e->d_name + el - 5, ".json") == 0) {
                    memcpy(keep[k], e->d_name, el - 5);
                    keep[k][el - 5] = '\0';
                    names[k] = keep[k];
                    k++;
                }
            }
            if (d)
                closedir(d);
        }
        p += len + (p[len] == ':');
    }
    qsort(names, (size_t)k, sizeof *names, cmp_str);
    size_t pos = 0;
    buf[0] = '\0';
    for (int i = 0; i < k; i++) {
        if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
            continue;
        int w = snprintf(buf + pos, n - pos, "%s%s", pos ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= n - pos)
            break;
        pos += (size_t)w;
    }
    return pos ? buf : "none";
}

/* A model type names a file: letters, digits, '_', '-' and '.', not first. */
static bool bad_model_type(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > MAX_MODEL_TYPE || s[0] == '.')
        return true;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return true;
    }
    return false;
}

/* The template of h->model_type parsed into *out; h->arch names it. A
 * config without one that names custom code (auto_map) is refused with the
 * way to estimate it. */
static int load_template(struct hf *h, bool custom_code, cJSON **out)
{
    const char *ap = getenv("MEMEST_ARCH_PATH");
    for (const char *p = ap ? ap : ""; *p;) {
        size_t len = strcspn(p, ":");
        if (len > 0) {
            char *path = memest_arena_printf(&h->m->arena, "%.*s/%s.json", (int)len, p,
                                             h->model_type);
            if (!path)
                return nomem(h);
            struct stat st;
            if (stat(path, &st) == 0) {
                h->arch = path;
                return mb_json_read_file(path, out, h->err) ||
                       mb_arch_extend(out, h->arch, h->err) ? -1 : 0;
            }
        }
        p += len + (p[len] == ':');
    }
    for (size_t i = 0; i < mb_arch_builtin_count; i++) {
        const struct mb_arch_text *t = &mb_arch_builtin[i];
        if (strcmp(t->model_type, h->model_type) != 0)
            continue;
        h->arch = memest_arena_concat(&h->m->arena, t->file, " (built in)", (char *)NULL);
        if (!h->arch)
            return nomem(h);
        return mb_json_parse_text((const char *)t->text, *t->len, h->arch, out, h->err) ||
               mb_arch_extend(out, h->arch, h->err) ? -1 : 0;
    }
    if (custom_code)   /* the config class and the model are the hub repository's code */
        return memest_errf(h->err, MEMEST_ERR_SCHEMA, "auto_map",
                           "model_type \"%s\" has no architecture template and the model uses "
                           "custom code (auto_map: trust_remote_code=True), which a config does "
                           "not describe: export the model with memest-export "
                           "(src/export/memest-export, doc/memest-export.md) instead",
                           h->model_type);
    char list[400];
    return memest_errf(h->err, MEMEST_ERR_SCHEMA, "model_type",
                       "no architecture template for model_type \"%s\" (supported: %s; "
                       "MEMEST_ARCH_PATH adds directories of templates)",
                       h->model_type, supported_list(list, sizeof list));
}

/* ---- the template's "hf_config" ---- */

/* A template error: the template is at fault, whatever the config says. */
static int tmpl_err(struct hf *h, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int tmpl_err(struct hf *h, const char *path, const char *fmt, ...)
{
    char msg[sizeof h->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memest_err_file(h->err, h->arch);
    return memest_errf(h->err, MEMEST_ERR_SCHEMA, path, "%s (in the architecture template for %s)",
                       msg, h->cfgfile);
}

/* The template's variable `name` when it can take a config's value (a
 * number, boolean or string), else NULL. */
static const cJSON *settable(const struct hf *h, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(h->vars, name);
    return v && (cJSON_IsNumber(v) || cJSON_IsBool(v) || cJSON_IsString(v)) ? v : NULL;
}

/* ---- the values a number variable takes from a config ---- */

/* "hf_config.domains": variable -> one of these (a number variable not
 * listed is a size). What the config class and the modeling code accept:
 * anything else builds no model in transformers (a zero or negative size,
 * a dropout probability past 1), so it is refused rather than estimated. */
static const struct domain {
    const char *name, *expected;
    double lo, hi;
    bool whole;
} domains[] = {
    {"size", "a whole number of at least 1", 1, INT_LIMIT, true},
    {"count", "a whole number of at least 0", 0, INT_LIMIT, true},
    {"real", "a number of at least 0", 0, INFINITY, false},
    {"probability", "a probability between 0 and 1", 0, 1, false},
    {"signed", "a finite number", -INFINITY, INFINITY, false},
};

static const struct domain *domain_named(const char *name)
{
    for (size_t i = 0; i < sizeof domains / sizeof *domains; i++)
        if (strcmp(domains[i].name, name) == 0)
            return &domains[i];
    return NULL;
}

/* The domain of number variable `var` (a size unless listed). */
static const struct domain *domain_of(const struct hf *h, const char *var)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(h->domains, var);
    return cJSON_IsString(d) && domain_named(d->valuestring) ? domain_named(d->valuestring)
                                                               : &domains[0];
}

static int check_spec(struct hf *h, const cJSON *spec, const char *path);

/* "values": {"TEXT": {"variable": value, ...}, ...} */
static int check_values(struct hf *h, const cJSON *vals, const char *path)
{
    if (!cJSON_IsObject(vals) || !vals->child)
        return tmpl_err(h, path, "\"values\" must be a non-empty object of value: "
                        "{variable: value}");
    for (const cJSON *c = vals->child; c; c = c->next) {
        char *cp = memest_arena_concat(&h->m->arena, path, ".", c->string, (char *)NULL);
        if (!cp)
            return nomem(h);
        if (!cJSON_IsObject(c))
            return tmpl_err(h, cp, "an enumerated value sets variables: {variable: value}");
        for (const cJSON *s = c->child; s; s = s->next) {
            const cJSON *v = settable(h, s->string);
            if (!v)
                return tmpl_err(h, cp, "\"%s\" is not a number, boolean or string variable "
                                "of the template", s->string);
            if (cJSON_IsNumber(v) != cJSON_IsNumber(s) || cJSON_IsBool(v) != cJSON_IsBool(s) ||
                cJSON_IsString(v) != cJSON_IsString(s) || (cJSON_IsNumber(s) &&
                                                           !(fabs(s->valuedouble) < INT_LIMIT)))
                return tmpl_err(h, cp, "the value of \"%s\" is not of the variable's kind (%s)",
                                s->string, mb_json_type_name(v));
        }
    }
    return 0;
}

/* The highest element index an "each" spec's "vars" may name, plus one. */
#define MAX_EACH_VARS 16

/* {"each": condition, "codes": {"TEXT": number, ...}, "length": condition on n,
 * "vars": {"n": variable, "0": variable, ...},
 * "comment": ...}: a per-layer list (Qwen3's layer_types, SmolLM3's
 * no_rope_layers) that the template derives from other variables; the
 * config's list must be that one (models/README.md). */
static int check_each_spec(struct hf *h, const cJSON *spec, const char *path)
{
    const cJSON *each = cJSON_GetObjectItemCaseSensitive(spec, "each");
    const cJSON *codes = cJSON_GetObjectItemCaseSensitive(spec, "codes");
    const cJSON *len = cJSON_GetObjectItemCaseSensitive(spec, "length");
    const cJSON *vars = cJSON_GetObjectItemCaseSensitive(spec, "vars");
    int nkeys = cJSON_GetArraySize(spec);
    if (!cJSON_IsString(each) || !each->valuestring[0] || (len && !cJSON_IsString(len)) ||
        nkeys != 1 + (codes != NULL) + (len != NULL) + (vars != NULL) +
                     (cJSON_GetObjectItemCaseSensitive(spec, "comment") != NULL))
        return tmpl_err(h, path, "a list's spec is {\"each\": condition on x (an element) and i "
                        "(its index), \"codes\": {text: number}, \"length\": condition on n (the "
                        "list's length), \"vars\": {\"n\" or an index: variable}} "
                        "(codes, length, vars and a comment optional)");
    for (const cJSON *v = vars ? vars->child : NULL; v; v = v->next) {
        const cJSON *var = cJSON_IsString(v) ? settable(h, v->valuestring) : NULL;
        char *end = NULL;
        long k = strtol(v->string, &end, 10);
        bool index = v->string[0] >= '0' && v->string[0] <= '9' && *end == '\0' && k < MAX_EACH_VARS;
        if (!var || !cJSON_IsNumber(var) || (strcmp(v->string, "n") != 0 && !index))
            return tmpl_err(h, path, "\"vars\" maps \"n\" (the length) or an element's index "
                            "(below %d) to a number variable of the template", MAX_EACH_VARS);
    }
    if (vars && !cJSON_IsObject(vars))
        return tmpl_err(h, path, "\"vars\" must be an object");
    if (codes && !cJSON_IsObject(codes))
        return tmpl_err(h, path, "\"codes\" must be an object of text: number");
    for (const cJSON *c = codes ? codes->child : NULL; c; c = c->next)
        if (!cJSON_IsNumber(c))
            return tmpl_err(h, path, "\"codes\" must be an object of text: number");
    return 0;
}

/* Whether a spec is a known key that changes no memory: null, or an object
 * with only a "comment" saying why. */
static bool spec_is_null(const cJSON *spec)
{
    return cJSON_IsNull(spec) || (cJSON_IsObject(spec) && cJSON_GetArraySize(spec) == 1 &&
                                  cJSON_GetObjectItemCaseSensitive(spec, "comment"));
}

/* The key set a "rest" names: "keys" (hf_config.keys) or a member of
 * hf_config.key_sets; NULL if none. */
static const cJSON *key_set(const struct hf *h, const char *name)
{
    if (strcmp(name, "keys") == 0)
        return h->keys;
    return h->key_sets ? cJSON_GetObjectItemCaseSensitive(h->key_sets, name) : NULL;
}

/* Each spec of an object of key: spec (hf_config.keys, a key set, "top",
 * a "fields"), `path` naming it. */
static int check_spec_object(struct hf *h, const cJSON *obj, const char *path, const char *sep)
{
    for (const cJSON *c = obj->child; c; c = c->next) {
        char *cp = memest_arena_concat(&h->m->arena, path, sep, c->string, (char *)NULL);
        if (!cp)
            return nomem(h);
        if (check_spec(h, c, cp) != 0)
            return -1;
    }
    return 0;
}

/* {"rest": SET, "fields": {key: spec}, "comment"}: a sub-config (LlavaConfig's
 * text_config) read by its own fields, then by the key set SET. */
static int check_rest_spec(struct hf *h, const cJSON *spec, const char *path)
{
    const cJSON *rest = cJSON_GetObjectItemCaseSensitive(spec, "rest");
    const cJSON *fields = cJSON_GetObjectItemCaseSensitive(spec, "fields");
    int nkeys = cJSON_GetArraySize(spec);
    if (nkeys != 1 + (fields != NULL) + (cJSON_GetObjectItemCaseSensitive(spec, "comment") != NULL))
        return tmpl_err(h, path, "a \"rest\" spec has \"rest\", optional \"fields\" and a "
                        "\"comment\"");
    if (!cJSON_IsString(rest) || !cJSON_IsObject(key_set(h, rest->valuestring)))
        return tmpl_err(h, path, "\"rest\" must name \"keys\" or a member of hf_config.key_sets");
    if (!fields)
        return 0;
    if (!cJSON_IsObject(fields))
        return tmpl_err(h, path, "\"fields\" must be an object of key: spec");
    char *fp = memest_arena_concat(&h->m->arena, path, ".fields", (char *)NULL);
    return fp ? check_spec_object(h, fields, fp, ".") : nomem(h);
}

/* A spec of "hf_config.keys" (models/README.md): null (or {"comment"}), a
 * variable's name, {"values": ...}, {"fields": {key: spec}} or {"rest": set}. */
static int check_spec(struct hf *h, const cJSON *spec, const char *path)
{
    if (spec_is_null(spec))
        return 0;
    if (cJSON_IsString(spec))
        return settable(h, spec->valuestring)
                   ? 0
                   : tmpl_err(h, path, "\"%s\" is not a number, boolean or string variable of "
                              "the template", spec->valuestring);
    if (cJSON_IsObject(spec) && cJSON_GetObjectItemCaseSensitive(spec, "each"))
        return check_each_spec(h, spec, path);
    if (cJSON_IsObject(spec) && cJSON_GetObjectItemCaseSensitive(spec, "rest"))
        return check_rest_spec(h, spec, path);
    const cJSON *vals = cJSON_GetObjectItemCaseSensitive(spec, "values");
    const cJSON *fields = cJSON_GetObjectItemCaseSensitive(spec, "fields");
    const cJSON *var = cJSON_GetObjectItemCaseSensitive(spec, "var");
    int nkeys = cJSON_IsObject(spec) ? cJSON_GetArraySize(spec) : 0;
    if (!cJSON_IsObject(spec) || (vals != NULL || var != NULL) + (fields != NULL) != 1 ||
        nkeys != (vals != NULL) + (var != NULL) + (fields != NULL) +
                     (cJSON_GetObjectItemCaseSensitive(spec, "comment") != NULL))
        return tmpl_err(h, path, "a key's spec is null or {\"comment\": ...} (known, changes "
                        "nothing), a variable's name, {\"values\": ...}, {\"var\": name, "
                        "\"values\": ...} or {\"fields\": ...} (and a \"comment\")");
    if (var && (!cJSON_IsString(var) || !settable(h, var->valuestring)))
        return tmpl_err(h, path, "\"var\" must name a number, boolean or string variable of "
                        "the template");
    if (vals) {
        char *vp = memest_arena_concat(&h->m->arena, path, ".values", (char *)NULL);
        return vp ? check_values(h, vals, vp) : nomem(h);
    }
    if (!cJSON_IsObject(fields))
        return tmpl_err(h, path, "\"fields\" must be an object of key: spec");
    return check_spec_object(h, fields, path, ".fields.");
}

/* The key sets hf_config.key_sets, each an object of key: spec. */
static int check_key_sets(struct hf *h)
{
    if (!h->key_sets)
        return 0;
    if (!cJSON_IsObject(h->key_sets))
        return tmpl_err(h, "hf_config.key_sets", "must be an object of name: {key: spec}");
    for (const cJSON *c = h->key_sets->child; c; c = c->next) {
        char *cp = memest_arena_concat(&h->m->arena, "hf_config.key_sets.", c->string, (char *)NULL);
        if (!cp)
            return nomem(h);
        if (!cJSON_IsObject(c) || strcmp(c->string, "keys") == 0)
            return tmpl_err(h, cp, "a key set is an object of key: spec, named other than keys");
        if (check_spec_object(h, c, cp, ".") != 0)
            return -1;
    }
    return 0;
}

/* "hf_config.checkpoint" (optional): {"transposed": [pattern, ...],
 * "comment"}, the module names (fnmatch patterns) of the linear layers
 * whose weight the checkpoint stores [in, out] (safetensors_check.c). */
static int check_checkpoint(struct hf *h, const cJSON *ck)
{
    if (!ck)
        return 0;
    if (!cJSON_IsObject(ck))
        return tmpl_err(h, "hf_config.checkpoint", "must be an object of transposed and comment");
    for (const cJSON *c = ck->child; c; c = c->next) {
        bool ok = strcmp(c->string, "comment") == 0 ? cJSON_IsString(c)
                  : strcmp(c->string, "transposed") == 0 && cJSON_IsArray(c);
        for (const cJSON *e = ok && cJSON_IsArray(c) ? c->child : NULL; e; e = e->next)
            ok = ok && cJSON_IsString(e) && e->valuestring[0];
        if (!ok)
            return tmpl_err(h, "hf_config.checkpoint", "\"%s\": expected transposed (a list of "
                            "module name patterns) or comment (a string)", c->string);
    }
    return 0;
}

/* The template's "hf_config": {"model_type", "follows", "keys", "top",
 * "key_sets", "domains", "checkpoint", "comment"}; *keys gets the specs of
 * the config's top level: "top" when given (a composite config:
 * LlavaConfig, whose text_config is read by "keys"), else "keys". */
static int check_hf_section(struct hf *h, const cJSON *root, const cJSON **keys)
{
    const cJSON *sec = cJSON_GetObjectItemCaseSensitive(root, "hf_config");
    if (!cJSON_IsObject(sec))
        return tmpl_err(h, "hf_config", "an architecture template needs an \"hf_config\" "
                        "object (models/README.md)");
    for (const cJSON *c = sec->child; c; c = c->next)
        if (strcmp(c->string, "model_type") != 0 && strcmp(c->string, "follows") != 0 &&
            strcmp(c->string, "keys") != 0 && strcmp(c->string, "domains") != 0 &&
            strcmp(c->string, "comment") != 0 && strcmp(c->string, "top") != 0 &&
            strcmp(c->string, "key_sets") != 0 && strcmp(c->string, "checkpoint") != 0)
            return tmpl_err(h, "hf_config", "unknown field \"%s\" (hf_config has model_type, "
                            "follows, keys, top, key_sets, domains, checkpoint and comment)",
                            c->string);
    if (check_checkpoint(h, cJSON_GetObjectItemCaseSensitive(sec, "checkpoint")) != 0)
        return -1;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(sec, "model_type");
    if (!cJSON_IsString(mt) || strcmp(mt->valuestring, h->model_type) != 0)
        return tmpl_err(h, "hf_config.model_type", "must be \"%s\", the model_type of the "
                        "file's name", h->model_type);
    const cJSON *fo = cJSON_GetObjectItemCaseSensitive(sec, "follows");
    if (!cJSON_IsString(fo) || !fo->valuestring[0])
        return tmpl_err(h, "hf_config.follows", "must name the modeling code the template "
                        "follows (\"transformers v4.48.0 .../modeling_llama.py\")");
    *keys = cJSON_GetObjectItemCaseSensitive(sec, "keys");
    if (!cJSON_IsObject(*keys))
        return tmpl_err(h, "hf_config.keys", "must be an object of config key: spec");
    h->vars = cJSON_GetObjectItemCaseSensitive(root, "variables");
    h->domains = cJSON_GetObjectItemCaseSensitive(sec, "domains");
    if (h->domains && !cJSON_IsObject(h->domains))
        return tmpl_err(h, "hf_config.domains", "must be an object of variable: domain");
    for (const cJSON *c = h->domains ? h->domains->child : NULL; c; c = c->next) {
        const cJSON *v = settable(h, c->string);
        if (!v || !cJSON_IsNumber(v))
            return tmpl_err(h, "hf_config.domains", "\"%s\" is not a number variable of the "
                            "template", c->string);
        if (!cJSON_IsString(c) || !domain_named(c->valuestring))
            return tmpl_err(h, "hf_config.domains", "the domain of \"%s\" must be size, count, "
                            "real, probability or signed", c->string);
    }
    h->keys = *keys;
    h->key_sets = cJSON_GetObjectItemCaseSensitive(sec, "key_sets");
    const cJSON *top = cJSON_GetObjectItemCaseSensitive(sec, "top");
    if (top && !cJSON_IsObject(top))
        return tmpl_err(h, "hf_config.top", "must be an object of config key: spec");
    if (check_key_sets(h) != 0 || check_spec_object(h, *keys, "hf_config.keys", ".") != 0)
        return -1;
    if (top && check_spec_object(h, top, "hf_config.top", ".") != 0)
        return -1;
    if (top)
        *keys = top;
    return 0;
}

/* ---- the config's values ---- */

static int add_override(struct hf *h, const char *var, const char *value, const char *key)
{
    /* two keys of one variable (GPT-2's n_embd and its alias hidden_size):
     * with two values, the answer would depend on the order of the keys */
    for (int i = 0; i < h->n; i++)
        if (strcmp(h->ov[i].name, var) == 0 && strcmp(h->ov[i].value, value) != 0)
            return memest_errf(h->err, MEMEST_ERR_SCHEMA, key, "sets the template's variable "
                               "\"%s\" to %.40s, which %s set to %.40s: give one value",
                               var, value, h->ov[i].opt, h->ov[i].value);
    if (h->n == h->cap) {
        int ncap = h->cap ? h->cap * 2 : 16;
        struct memest_override *nov = memest_arena_alloc(&h->m->arena, sizeof *nov * (size_t)ncap);
        if (!nov)
            return nomem(h);
        if (h->n)
            memcpy(nov, h->ov, sizeof *nov * (size_t)h->n);
        h->ov = nov, h->cap = ncap;
    }
    const char *opt = memest_arena_strdup(&h->m->arena, key); /* the config's key, in messages */
    const char *v = memest_arena_strdup(&h->m->arena, value);
    if (!opt || !v)
        return nomem(h);
    h->ov[h->n++] = (struct memest_override){var, v, opt};
    return 0;
}

/* A JSON scalar as an override's text: numbers written to read back as the
 * same value (integers exactly), true/false/null as such, strings as they
 * are, and an empty list as "[]" (an enumerated value such as Qwen2-MoE's
 * mlp_only_layers: []). NULL for any other list or an object, or a number of
 * 2^53 or more. */
static const char *scalar_text(const cJSON *j, char *buf, size_t n)
{
    if (cJSON_IsArray(j) && !j->child)
        return "[]";
    if (cJSON_IsString(j))
        return j->valuestring;
    if (cJSON_IsBool(j))
        return cJSON_IsTrue(j) ? "true" : "false";
    if (cJSON_IsNull(j))
        return "null";
    if (!cJSON_IsNumber(j) || !(fabs(j->valuedouble) < INT_LIMIT))
        return NULL;
    if (j->valuedouble == floor(j->valuedouble))
        snprintf(buf, n, "%lld", (long long)j->valuedouble);
    else
        memest_fmt_double(j->valuedouble, buf, n);
    return buf;
}

/* The value val of `key` for the variable `var`: of its kind, and, when
 * the config gives it (not the template's "values" for it), in its
 * domain. */
static int set_var(struct hf *h, const char *var, const cJSON *val, const char *key,
                   bool from_config)
{
    const cJSON *v = settable(h, var);
    char buf[32];
    const char *text = scalar_text(val, buf, sizeof buf);
    if (cJSON_IsNumber(val) && !isfinite(val->valuedouble))   /* Python's json writes them */
        return memest_errf(h->err, MEMEST_ERR_SCHEMA, key, "%s is not a finite number: the key "
                           "sets the template's variable \"%s\" for model_type \"%s\", which "
                           "the model is built with", mb_json_nonfinite(val->valuedouble), var,
                           h->model_type);
    if (cJSON_IsNumber(val) && !text)
        return memest_errf(h->err, MEMEST_ERR_SCHEMA, key, "%s is too large for model_type "
                           "\"%s\" (numbers must be between -2^53 and 2^53, exclusive)",
                           memest_fmt_double(val->valuedouble, buf, sizeof buf), h->model_type);
    if (cJSON_IsNull(val))
        return memest_errf(h->err, MEMEST_ERR_SCHEMA, key, "null is not a value of it for "
                           "model_type \"%s\": the config class keeps None and the model cannot "
                           "be built with it (give %s, or leave the key out for the default)",
                           h->model_type, cJSON_IsNumber(v) ? domain_of(h, var)->expected
                                                            : mb_json_type_name(v));
    if (cJSON_IsNumber(v) != cJSON_IsNumber(val) || cJSON_IsBool(v) != cJSON_IsBool(val) ||
        cJSON_IsString(v) != cJSON_IsString(val))
        return memest_errf(h->err, MEMEST_ERR_SCHEMA, key, "expected %s for model_type \"%s\" "
                           "(the template's variable \"%s\"), got %s", mb_json_type_name(v),
                           h->model_type, var, mb_json_type_name(val));
    if (from_config && cJSON_IsNumber(val)) {
        const struct domain *d = domain_of(h, var);
        double x = val->valuedouble;
        if (!(x >= d->lo && x <= d->hi) || (d->whole && x != floor(x)))
            return memest_errf(h->err, MEMEST_ERR_SCHEMA, key, "expected %s for model_type "
                               "\"%s\", got %s", d->expected, h->model_type, text);
    }
    return add_override(h, var, text, key);
}

static int walk(struct hf *h, const cJSON *spec, const cJSON *val, const char *key);

/* An enumerated value: its text must be one the spec lists. */
static int walk_values(struct hf *h, const cJSON *vals, const cJSON *val, const char *key)
{
    char buf[32];
    const char *text = scalar_text(val, buf, sizeof buf);
    const cJSON *set = text ? cJSON_GetObjectItemCaseSensitive(vals, text) : NULL;
    if (!set) {
        char list[300] = "";
        size_t pos = 0;
        for (const cJSON *c = vals->child; c; c = c->next) {
            int w = snprintf(list + pos, sizeof list - pos, "%s%s", pos ? ", " : "", c->string);
            if (w < 0 || (size_t)w >= sizeof list - pos)
                break;
            pos += (size_t)w;
        }
        char v[80];
        if (text)
            snprintf(v, sizeof v, "\"%.*s\"", memest_utf8_prefix(text, 60), text);
        else if (cJSON_IsNumber(val) && !isfinite(val->valuedouble))
            snprintf(v, sizeof v, "%s", mb_json_nonfinite(val->valuedouble));
        else
            snprintf(v, sizeof v, "%s", mb_json_type_name(val));
        return memest_errf(h->err, MEMEST_ERR_SCHEMA, key, "%s is not supported for model_type "
                           "\"%s\" (supported: %s)", v, h->model_type, list);
    }
    for (const cJSON *s = set->child; s; s = s->next)
        if (set_var(h, s->string, s, key, false) != 0)
            return -1;
    return 0;
}

/* expr with the identifiers x, i and n replaced by xt, it and nt (in
 * parentheses; NULL: left as they are). */
static char *subst_xi(struct hf *h, const char *expr, const char *xt, const char *it,
                      const char *nt)
{
    size_t w = 3 + (xt ? strlen(xt) : 0) + (it ? strlen(it) : 0) + (nt ? strlen(nt) : 0);
    size_t cap = strlen(expr) * w + 1, o = 0;
    char *out = memest_arena_alloc(&h->m->arena, cap);
    if (!out)
        return NULL;
    for (const char *p = expr; *p;) {
        if (isalpha((unsigned char)*p) || *p == '_') {
            const char *q = p;
            while (isalnum((unsigned char)*q) || *q == '_')
                q++;
            const char *rep = q - p != 1 ? NULL : *p == 'x' ? xt : *p == 'i' ? it : *p == 'n' ? nt : NULL;
            o += (size_t)(rep ? snprintf(out + o, cap - o, "(%s)", rep)
                              : snprintf(out + o, cap - o, "%.*s", (int)(q - p), p));
            p = q;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
    return out;
}

static int add_check(struct hf *h, const char *cond, const char *msg)
{
    cJSON *c = cJSON_CreateObject();
    if (!c || !cJSON_AddStringToObject(c, "if", cond) || !cJSON_AddStringToObject(c, "error", msg)) {
        cJSON_Delete(c);
        return nomem(h);
    }
    if (!h->checks) {
        h->checks = cJSON_CreateArray();
        if (!h->checks) {
            cJSON_Delete(c);
            return nomem(h);
        }
    }
    cJSON_AddItemToArray(h->checks, c);
    return 0;
}

/* A list under an "each" spec: a check per element (the condition with x
 * the element, through "codes" for text, and i its index) and one of its
 * length n, added to the template's checks, so that the build refuses a list
 * other than the one the template derives. null: the config class derives
 * it (nothing to check). */
#define MAX_EACH 4096

/* An "each" spec's "vars": the list's length n and the elements it names by
 * index set number variables (Bamba's attn_layer_indices: the first index
 * and the step), so that the template can derive the per-layer pattern the
 * list's checks then hold it to. An index past the list's end sets nothing. */
static int each_vars(struct hf *h, const cJSON *spec, const cJSON *val, const char *key, int n)
{
    const cJSON *vars = cJSON_GetObjectItemCaseSensitive(spec, "vars");
    for (const cJSON *v = vars ? vars->child : NULL; v; v = v->next) {
        const cJSON *e = NULL;
        cJSON *count = NULL;
        if (strcmp(v->string, "n") == 0)
            e = count = cJSON_CreateNumber(n);
        else
            e = cJSON_GetArrayItem(val, (int)strtol(v->string, NULL, 10));
        if (!e) {
            if (strcmp(v->string, "n") == 0)
                return nomem(h);
            continue;
        }
        int rc = set_var(h, v->valuestring, e, key, true);
        cJSON_Delete(count);
        if (rc != 0)
            return -1;
    }
    return 0;
}

static int walk_each(struct hf *h, const cJSON *spec, const cJSON *val, const char *key)
{
    if (cJSON_IsNull(val))
        return 0;
    const char *cond = cJSON_GetObjectItemCaseSensitive(spec, "each")->valuestring;
    const cJSON *codes = cJSON_GetObjectItemCaseSensitive(spec, "codes");
    const cJSON *len = cJSON_GetObjectItemCaseSensitive(spec, "length");
    if (!cJSON_IsArray(val) || cJSON_GetArraySize(val) > MAX_EACH)
        return memest_errf(h->err, MEMEST_ERR_SCHEMA, key, "expected a list (at most %d "
                           "elements) or null for model_type \"%s\", got %s", MAX_EACH,
                           h->model_type, mb_json_type_name(val));
    int i = 0;
    char ibuf[24], xbuf[32], msg[640];
    for (const cJSON *e = val->child; e; e = e->next, i++) {
        const char *xt = NULL;
        if (cJSON_IsString(e) && codes) {
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(codes, e->valuestring);
            xt = c ? scalar_text(c, xbuf, sizeof xbuf) : NULL;
        } else if (cJSON_IsNumber(e) || cJSON_IsBool(e)) {
            xt = scalar_text(e, xbuf, sizeof xbuf);
        }
        if (!xt)
            return memest_errf(h->err, MEMEST_ERR_SCHEMA, key, "element %d is not supported "
                               "for model_type \"%s\"%s", i, h->model_type,
                               codes ? " (an element is one of the texts the template codes)" : "");
        snprintf(ibuf, sizeof ibuf, "%d", i);
        char *c = subst_xi(h, cond, xt, ibuf, NULL);
        if (!c)
            return nomem(h);
        snprintf(msg, sizeof msg, "the config's %.80s[%d] is not the one model_type \"%.64s\" "
                 "derives from the other keys (%.200s): a list of another pattern is not "
                 "modelled", key, i, h->model_type, cond);
        if (add_check(h, c, msg) != 0)
            return -1;
    }
    if (each_vars(h, spec, val, key, i) != 0)
        return -1;
    if (len) {
        snprintf(ibuf, sizeof ibuf, "%d", i);
        char *c = subst_xi(h, len->valuestring, NULL, NULL, ibuf);
        if (!c)
            return nomem(h);
        snprintf(msg, sizeof msg, "the config's %.80s has %d elements: model_type \"%.64s\" "
                 "needs %.200s", key, i, h->model_type, len->valuestring);
        if (add_check(h, c, msg) != 0)
            return -1;
    }
    return 0;
}

static bool is_generic(const char *key)
{
    for (int i = 0; i < NGENERIC; i++)
        if (strcmp(key, generic_keys[i]) == 0)
            return true;
    return false;
}

/* An object under {"fields": ...} or {"rest": SET, "fields": ...} (set
 * non-NULL): each key by its field, else by the key set SET, else, in a
 * sub-config read by a set as at the top level, a generic key (torch_dtype
 * and dtype too: from_pretrained takes the top level's), else an unknown
 * one. */
static int walk_object(struct hf *h, const cJSON *fields, const cJSON *set, const cJSON *val,
                       const char *key)
{
    if (cJSON_IsNull(val))
        return 0;
    if (!cJSON_IsObject(val))
        return memest_errf(h->err, MEMEST_ERR_SCHEMA, key, "expected an object or null for "
                           "model_type \"%s\", got %s", h->model_type, mb_json_type_name(val));
    for (const cJSON *c = val->child; c; c = c->next) {
        char *cp = memest_arena_concat(&h->m->arena, key, ".", c->string, (char *)NULL);
        if (!cp)
            return nomem(h);
        const cJSON *sub = fields ? cJSON_GetObjectItemCaseSensitive(fields, c->string) : NULL;
        if (!sub && set)
            sub = cJSON_GetObjectItemCaseSensitive(set, c->string);
        if (sub) {
            if (walk(h, sub, c, cp) != 0)
                return -1;
        } else if (!(set && (is_generic(c->string) || strcmp(c->string, "torch_dtype") == 0 ||
                             strcmp(c->string, "dtype") == 0)) &&
                   note_unknown(h, cp, "unknown key for model_type \"%s\" (the template %s does "
                                "not list it)", h->model_type, h->arch) != 0) {
            return -1;
        }
    }
    return 0;
}

/* The config's key `key` (a JSON path) with value val, under its spec. */
static int walk(struct hf *h, const cJSON *spec, const cJSON *val, const char *key)
{
    if (spec_is_null(spec))
        return 0;
    if (cJSON_IsString(spec))
        return set_var(h, spec->valuestring, val, key, true);
    if (cJSON_GetObjectItemCaseSensitive(spec, "each"))
        return walk_each(h, spec, val, key);
    const cJSON *fields = cJSON_GetObjectItemCaseSensitive(spec, "fields");
    const cJSON *rest = cJSON_GetObjectItemCaseSensitive(spec, "rest");
    if (rest)
        return walk_object(h, fields, key_set(h, rest->valuestring), val, key);
    const cJSON *vals = cJSON_GetObjectItemCaseSensitive(spec, "values");
    const cJSON *var = cJSON_GetObjectItemCaseSensitive(spec, "var");
    if (var) { /* a variable, with special values (null: None) of its own */
        char buf[32];
        const char *text = scalar_text(val, buf, sizeof buf);
        if (vals && text && cJSON_GetObjectItemCaseSensitive(vals, text))
            return walk_values(h, vals, val, key);
        return set_var(h, var->valuestring, val, key, true);
    }
    if (vals)
        return walk_values(h, vals, val, key);
    return walk_object(h, fields, NULL, val, key);
}

/* torch_dtype (dtype in newer transformers): the parameters' dtype of the
 * checkpoint, which from_pretrained(torch_dtype="auto") loads. */
static int read_dtype(struct hf *h, const cJSON *val, const char *key)
{
    if (cJSON_IsNull(val) || (cJSON_IsString(val) && strcmp(val->valuestring, "auto") == 0))
        return 0;
    static const struct { const char *name; enum memest_dtype t; } known[] = {
        {"float32", MEMEST_F32}, {"float16", MEMEST_F16}, {"bfloat16", MEMEST_BF16}};
    for (int i = 0; i < 3 && cJSON_IsString(val); i++)
        if (strcmp(val->valuestring, known[i].name) == 0) {
            h->m->has_dtype = true;
            h->m->dtype = known[i].t;
            return 0;
        }
    char v[80];
    if (cJSON_IsString(val))
        snprintf(v, sizeof v, "\"%.*s\"", memest_utf8_prefix(val->valuestring, 60),
                 val->valuestring);
    else
        snprintf(v, sizeof v, "%s", mb_json_type_name(val));
    return memest_errf(h->err, MEMEST_ERR_SCHEMA, key, "%s is not supported (float32, float16, "
                       "bfloat16, \"auto\" or null)", v);
}

/* quantization_config: transformers v4.48.0's BitsAndBytesConfig,
 * GPTQConfig and AwqConfig (utils/quantization_config.py) as the pass of
 * quantize.h reads them. The keys that change nothing memest models
 * (llm_int8_threshold, damp_percent, sym, use_exllama, AWQ's zero_point:
 * WQLinear_GEMM keeps qzeros either way, ...) are skipped. */
static const cJSON *qkey(const cJSON *q, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(q, k);
}

static int qbad(struct hf *h, const char *key, const char *what)
{
    return memest_errf(h->err, MEMEST_ERR_SCHEMA, "quantization_config", "%s: %s", key, what);
}

static int q_dtype(struct hf *h, const cJSON *q, const char *key, uint8_t *out, bool *set)
{
    const cJSON *v = qkey(q, key);
    if (!v || cJSON_IsNull(v))
        return 0;
    enum memest_dtype t;
    if (!cJSON_IsString(v) || memest_dtype_parse(v->valuestring, &t) != 0)
        return qbad(h, key, "expected a dtype name such as \"bfloat16\", \"float16\" or "
                            "\"uint8\"");
    *out = (uint8_t)(t + 1);
    *set = true;
    return 0;
}

static int q_skip(struct hf *h, const cJSON *q, const char *key, struct memest_quant_cfg *c)
{
    const cJSON *v = qkey(q, key);
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsArray(v))
        return qbad(h, key, "expected a list of module names");
    c->skip_set = true;
    for (const cJSON *e = v->child; e; e = e->next) {
        if (!cJSON_IsString(e) || !*e->valuestring)
            return qbad(h, key, "expected a list of module names");
        if (c->nskip == MEMEST_QUANT_MAX_SKIP)
            return qbad(h, key, "more than 64 names");
        if (!(c->skip[c->nskip++] = memest_arena_strdup(&h->m->arena, e->valuestring)))
            return nomem(h);
    }
    return 0;
}

/* A boolean of the config (absent or null: false): BitsAndBytesConfig's
 * post_init raises TypeError for any other type ("load_in_4bit must be a
 * boolean"), and so does memest. */
static int q_bool(struct hf *h, const cJSON *q, const char *key, bool *out)
{
    const cJSON *v = qkey(q, key);
    *out = cJSON_IsTrue(v);
    if (!v || cJSON_IsNull(v) || cJSON_IsBool(v))
        return 0;
    char m[120];
    snprintf(m, sizeof m, "expected true or false, got %s", mb_json_type_name(v));
    return qbad(h, key, m);
}

static int read_bnb(struct hf *h, const cJSON *q, struct memest_quant_cfg *c)
{
    bool b8, b4, fp16_weight;
    if (q_bool(h, q, "load_in_8bit", &b8) || q_bool(h, q, "load_in_4bit", &b4) ||
        q_bool(h, q, "llm_int8_has_fp16_weight", &fp16_weight) ||
        q_bool(h, q, "bnb_4bit_use_double_quant", &c->p.double_quant))
        return -1;
    if (b8 && b4)   /* BitsAndBytesConfig.post_init's ValueError */
        return qbad(h, "load_in_4bit", "load_in_4bit and load_in_8bit are both true, but only "
                                       "one can be used at the same time");
    if (fp16_weight && b8)
        return qbad(h, "llm_int8_has_fp16_weight", "true keeps float16 weights beside the int8 "
                                                   "ones (Int8Params has_fp16_weights): not "
                                                   "modelled");
    if (b8) {
        c->format = MEMEST_WF_INT8;
    } else if (b4) {
        const cJSON *t = qkey(q, "bnb_4bit_quant_type");
        c->format = MEMEST_WF_FP4;   /* BitsAndBytesConfig's default */
        if (cJSON_IsString(t) && strcmp(t->valuestring, "nf4") == 0)
            c->format = MEMEST_WF_NF4;
        else if (t && !(cJSON_IsString(t) && strcmp(t->valuestring, "fp4") == 0))
            return qbad(h, "bnb_4bit_quant_type", "expected \"nf4\" or \"fp4\"");
        c->dq_set = true;
        if (q_dtype(h, q, "bnb_4bit_compute_dtype", &c->p.compute_dtype, &c->compute_set) ||
            q_dtype(h, q, "bnb_4bit_quant_storage", &c->p.quant_storage, &c->storage_set))
            return -1;
    } else {
        c->p.double_quant = false;
        return 0;   /* neither: the weights are not quantised */
    }
    return q_skip(h, q, "llm_int8_skip_modules", c);
}

/* Mxfp4Config (transformers' utils/quantization_config.py): dequantize
 * true loads the weights in the model's dtype (what fine-tuning does, and
 * what Mxfp4HfQuantizer falls back to without a GPU and triton_kernels);
 * otherwise the experts outside modules_to_not_convert (fnmatch patterns:
 * "model.layers.*.self_attn") keep their MXFP4 blocks and scales. */
static int read_mxfp4(struct hf *h, const cJSON *q, struct memest_quant_cfg *c)
{
    bool deq;
    if (q_bool(h, q, "dequantize", &deq))
        return -1;
    if (deq)
        return 0;
    c->format = MEMEST_WF_MXFP4;
    return q_skip(h, q, "modules_to_not_convert", c);
}

/* FineGrainedFP8Config (transformers' utils/quantization_config.py):
 * activation_scheme "dynamic" (its only one), fmt "e4m3", weight_block_size
 * [rows, columns] (default [128, 128]); dequantize true: the weights in
 * the model's dtype. FP8Linear replaces every nn.Linear but lm_head and
 * modules_to_not_convert. */
static int read_fp8(struct hf *h, const cJSON *q, struct memest_quant_cfg *c)
{
    bool deq;
    if (q_bool(h, q, "dequantize", &deq))
        return -1;
    const cJSON *a = qkey(q, "activation_scheme"), *f = qkey(q, "fmt"),
                *b = qkey(q, "weight_block_size");
    if (a && !(cJSON_IsString(a) && strcmp(a->valuestring, "dynamic") == 0))
        return qbad(h, "activation_scheme", "FineGrainedFP8Config supports \"dynamic\" only");
    if (f && !(cJSON_IsString(f) && strcmp(f->valuestring, "e4m3") == 0))
        return qbad(h, "fmt", "FineGrainedFP8Config supports \"e4m3\" only");
    c->p.fp8_block[0] = c->p.fp8_block[1] = 128;
    if (b && !cJSON_IsNull(b)) {
        if (!cJSON_IsArray(b) || cJSON_GetArraySize(b) != 2)
            return qbad(h, "weight_block_size", "expected [rows, columns]");
        for (int i = 0; i < 2; i++) {
            const cJSON *e = cJSON_GetArrayItem(b, i);
            double v = cJSON_IsNumber(e) ? e->valuedouble : 0;
            if (!(v >= 1 && v <= 65536 && v == (double)(int32_t)v))
                return qbad(h, "weight_block_size", "expected whole numbers between 1 and 65536");
            c->p.fp8_block[i] = (int32_t)v;
        }
    }
    c->fp8_set = true;
    if (deq)
        return 0;
    c->format = MEMEST_WF_FP8;
    return q_skip(h, q, "modules_to_not_convert", c);
}

/* NVIDIA ModelOpt's quantization_config (hf_quant_config.json's, which
 * vLLM's ModelOptNvFp4Config reads): quant_algo "NVFP4", group_size (16),
 * exclude_modules (fnmatch patterns, as modules_to_not_convert). */
static int read_modelopt(struct hf *h, const cJSON *q, struct memest_quant_cfg *c)
{
    const cJSON *a = qkey(q, "quant_algo"), *g = qkey(q, "group_size");
    if (!(cJSON_IsString(a) && strcmp(a->valuestring, "NVFP4") == 0))
        return qbad(h, "quant_algo", "memest models ModelOpt's \"NVFP4\"");
    c->p.nvfp4_group = 16;
    if (g && !cJSON_IsNull(g)) {
        double v = cJSON_IsNumber(g) ? g->valuedouble : 0;
        if (!(v >= 1 && v <= 65536 && v == (double)(int32_t)v))
            return qbad(h, "group_size", "expected a whole number between 1 and 65536");
        c->p.nvfp4_group = (int32_t)v;
    }
    c->nvfp4_set = true;
    c->format = MEMEST_WF_NVFP4;
    return q_skip(h, q, "exclude_modules", c);
}

static int read_quant(struct hf *h, const cJSON *q)
{
    if (cJSON_IsNull(q))
        return 0;
    if (!cJSON_IsObject(q))
        return qbad(h, "quantization_config", "expected an object");
    struct memest_quant_cfg *c = &h->m->quant;
    const cJSON *meth = qkey(q, "quant_method");
    const char *mm = cJSON_IsString(meth) ? meth->valuestring : "";
    if (strcmp(mm, "bitsandbytes") == 0)
        return read_bnb(h, q, c);
    if (strcmp(mm, "mxfp4") == 0)
        return read_mxfp4(h, q, c);
    if (strcmp(mm, "fp8") == 0)
        return read_fp8(h, q, c);
    if (strcmp(mm, "modelopt") == 0)
        return read_modelopt(h, q, c);
    bool gptq = strcmp(mm, "gptq") == 0;
    if (!gptq && strcmp(mm, "awq") != 0)
        return qbad(h, "quant_method", "memest models \"bitsandbytes\", \"gptq\", \"awq\" "
                                       "(4 bits), \"mxfp4\", \"fp8\" and \"modelopt\" (NVFP4)");
    const cJSON *bits = qkey(q, "bits");
    if (!bits && !gptq)
        bits = qkey(q, "w_bit");   /* AutoAWQ's own quant_config.json spelling */
    if (!cJSON_IsNumber(bits) || bits->valuedouble != 4)
        return qbad(h, "bits", "memest models 4-bit GPTQ and AWQ weights");
    const cJSON *g = qkey(q, qkey(q, "group_size") ? "group_size" : "q_group_size");
    if (g) {
        double gv = cJSON_IsNumber(g) ? g->valuedouble : 0;
        if (!(gv == -1 || (gv >= 1 && gv <= 2147483648.0 && gv == (double)(int64_t)gv)))
            return qbad(h, "group_size", "expected a whole number of at least 1, or -1");
        c->group_set = true;
        c->p.group_size = (int64_t)gv;
    }
    if (!gptq) {
        const cJSON *ver = qkey(q, "version");
        if (ver && !(cJSON_IsString(ver) && (strcmp(ver->valuestring, "gemm") == 0 ||
                                             strcmp(ver->valuestring, "GEMM") == 0)))
            return qbad(h, "version", "memest models AWQ's GEMM layout (WQLinear_GEMM)");
    }
    c->format = gptq ? MEMEST_WF_GPTQ4 : MEMEST_WF_AWQ4;
    c->desc_act_set = gptq;
    if (q_bool(h, q, "desc_act", &c->p.desc_act))
        return -1;
    c->p.desc_act = gptq && c->p.desc_act;
    return q_skip(h, q, "modules_to_not_convert", c);
}

/* One top-level key of the config. */
static int read_key(struct hf *h, const cJSON *keys, const cJSON *c)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(keys, c->string);
    if (spec)
        return walk(h, spec, c, c->string);
    if (strcmp(c->string, "torch_dtype") == 0 || strcmp(c->string, "dtype") == 0) {
        /* transformers v4.56 renamed torch_dtype dtype and reads either: a
         * config with both must not depend on their order */
        const cJSON *other = cJSON_GetObjectItemCaseSensitive(
            h->m->root, strcmp(c->string, "dtype") == 0 ? "torch_dtype" : "dtype");
        if (other && !cJSON_Compare(other, c, true))
            return memest_errf(h->err, MEMEST_ERR_SCHEMA, c->string, "differs from %s, which "
                               "names the same setting: give one, or both alike", other->string);
        return read_dtype(h, c, c->string);
    }
    if (strcmp(c->string, "quantization_config") == 0)
        return read_quant(h, c);
    if (is_generic(c->string))
        return 0;
    for (size_t i = 0; i < sizeof option_keys / sizeof *option_keys; i++)
        if (strcmp(c->string, option_keys[i].key) == 0)
            return note_unknown(h, c->string, "%s", option_keys[i].why);
    const char *cands[256];
    int n = 0;
    for (const cJSON *k = keys->child; k && n < 256; k = k->next)
        cands[n++] = k->string;
    char dym[sizeof h->err->msg];
    return note_unknown(h, c->string, "unknown key for model_type \"%s\" (neither in the "
                        "template %s nor a generic PretrainedConfig key)%s", h->model_type,
                        h->arch, memest_suggest_clause(memest_suggest(c->string, cands, n), dym,
                                                       sizeof dym));
}

int mb_hf_load(struct memest_model *m, struct memest_error *err)
{
    struct hf h = {.m = m, .err = err, .cfgfile = m->file};
    const cJSON *cfg = m->root;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    if (!cJSON_IsString(mt) || bad_model_type(mt->valuestring))
        return memest_errf(err, MEMEST_ERR_SCHEMA, "model_type",
                           "a Hugging Face config's model_type must be a name of 1 to %d "
                           "letters, digits, '_', '-' or '.'", MAX_MODEL_TYPE);
    h.model_type = memest_arena_strdup(&m->arena, mt->valuestring);
    if (!h.model_type)
        return nomem(&h);
    cJSON *tmpl = NULL;
    if (load_template(&h, cJSON_GetObjectItemCaseSensitive(cfg, "auto_map") != NULL, &tmpl) != 0) {
        cJSON_Delete(tmpl);   /* parsed, and its "extends" failed */
        return -1;
    }
    const cJSON *keys = NULL;
    if (check_hf_section(&h, tmpl, &keys) != 0) {
        cJSON_Delete(tmpl);
        return -1;
    }
    memest_err_file(err, h.cfgfile);
    for (const cJSON *c = cfg->child; c; c = c->next)
        if (read_key(&h, keys, c) != 0) {
            cJSON_Delete(h.checks);
            cJSON_Delete(tmpl);
            return -1;
        }
    if (h.checks) { /* the "each" lists' checks, after the template's own */
        cJSON *tc = cJSON_GetObjectItemCaseSensitive(tmpl, "checks");
        if (!tc) {
            cJSON_AddItemToObject(tmpl, "checks", h.checks);
        } else if (cJSON_IsArray(tc)) {
            cJSON *c;
            while ((c = cJSON_DetachItemFromArray(h.checks, 0)) != NULL)
                cJSON_AddItemToArray(tc, c);
            cJSON_Delete(h.checks);
        } else {
            cJSON_Delete(h.checks);
        }
    }
    /* The overrides point into the template (variable names) and the arena;
     * the config's strings were copied. */
    cJSON_Delete(m->root);
    m->root = tmpl;
    m->arch = h.arch;
    m->model_type = h.model_type;
    m->preset = h.ov;
    m->npreset = h.n;
    m->unknown = h.unknown;
    m->nunknown = h.nunknown;
    m->nunknown_kept = h.nunknown < MEMEST_MAX_UNKNOWN_KEYS ? h.nunknown : MEMEST_MAX_UNKNOWN_KEYS;
    return 0;
}
