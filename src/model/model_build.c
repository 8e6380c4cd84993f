/* model_build.c - the model builder's entry point: reads a model through
 * its front-end (a model file, or a Hugging Face config through its
 * architecture template) and expands it into the layer graph (model.h). The top-level fields, the model's
 * inputs, outputs and loss are read here; variables and --set overrides,
 * blocks with arguments, "repeat", "if", input references, weight tying and
 * every argument checked against its op's argspec are done by the files
 * build_internal.h lists. All checks report the JSON path and the node; a
 * value that comes from an override and fails a check is a usage error
 * naming it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "memest/step.h"
#include "memest/cost.h"
#include "memest/safetensors.h"
#include "memest/suggest.h"

#include "build_internal.h"
#include "hf_internal.h"

/* A Hugging Face folder's safetensors checkpoint (safetensors.h): its
 * headers (the command checks them against the model it builds). Its dtype is the parameters' when the config
 * names no torch_dtype; when the config names another, the config's wins,
 * as from_pretrained(torch_dtype="auto") loads the weights in the config's
 * torch_dtype (transformers v4.48.0 modeling_utils.py), with a note. */
static int read_checkpoint(struct memest_model *m, const char *dir, struct memest_error *err)
{
    struct memest_ckpt *c;
    if (memest_ckpt_read(dir, &m->arena, &c, err) != 0)
        return -1;
    if (!c)
        return 0;
    if (c->has_dtype && !m->has_dtype) {
        m->has_dtype = true;
        m->dtype = c->dtype;
    } else if (c->has_dtype && m->dtype != c->dtype) {
        snprintf(c->note, sizeof c->note, "torch_dtype is %s, but the checkpoint stores %s "
                 "weights: memest estimates %s parameters, as from_pretrained(torch_dtype="
                 "\"auto\") loads them (--dtype %s for the checkpoint's)",
                 memest_dtype_name(m->dtype), memest_dtype_name(c->dtype),
                 memest_dtype_name(m->dtype), memest_dtype_name(c->dtype));
    }
    m->ckpt = c;
    return 0;
}

/* The front-end of a file: a directory stands for its config.json, which
 * the Hugging Face reader turns into its architecture template
 * (hf_config.c), and its safetensors checkpoint; any other file is a model
 * file (json_load.c). */
int memest_model_read_file(const char *path, struct memest_model *m, struct memest_error *err)
{
    memset(m, 0, sizeof *m);
    memest_err_file(err, path);
    /* A directory stands for its config.json (a Hugging Face checkpoint). */
    struct stat st;
    const char *file = path;
    bool dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    if (dir) {
        file = memest_arena_concat(&m->arena, path, path[0] && path[strlen(path) - 1] == '/' ? "" : "/",
                                   "config.json", (char *)NULL);
        if (!file)
            return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
        memest_err_file(err, file);
        if (stat(file, &st) != 0) {
            int e = errno;
            memest_arena_free(&m->arena);
            memest_err_file(err, path);
            return memest_errf(err, MEMEST_ERR_IO, NULL,
                               "a directory without a config.json (%s): memest reads a model "
                               "file, a Hugging Face config.json, or a directory holding one",
                               strerror(e));
        }
    }
    cJSON *root;
    if (mb_json_read_file(file, &root, err) != 0) {
        memest_arena_free(&m->arena);
        return -1;
    }
    m->root = root;
    m->file = file;
    if (mb_is_hf_config(root)) {
        if (mb_hf_load(m, err) != 0 || (dir && read_checkpoint(m, path, err) != 0)) {
            memest_model_free(m);
            return -1;
        }
        memest_err_file(err, file);
    } else if (mb_arch_extend(&m->root, file, err) != 0) {
        memest_model_free(m);
        return -1;
    } else {
        mb_template_model_type(m);
    }
    return 0;
}


/* "inputs": the model's inputs, the graph's first nodes (op "input"); *first
 * gets the first one, which the first layer reads unless it says otherwise. */
static int build_inputs(struct builder *b, const cJSON *jin, const struct scope *globals,
                        struct memest_strmap *names, struct memest_ref *first)
{
    if (!cJSON_IsArray(jin) || cJSON_GetArraySize(jin) < 1)
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, "inputs",
                           jin ? "\"inputs\" must be a non-empty list"
                               : "the model has no \"inputs\" list");
    int i = 0;
    for (const cJSON *c = jin->child; c; c = c->next, i++) {
        char *ip = memest_arena_printf(&b->g->arena, "inputs[%d]", i);
        if (!ip)
            return mb_nomem(b);
        if (!cJSON_IsObject(c))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, ip, "an input must be an object");
        const cJSON *jname = cJSON_GetObjectItemCaseSensitive(c, "name");
        if (!cJSON_IsString(jname) || mb_bad_name(jname->valuestring))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, ip, "name"),
                               "an input needs a \"name\": %s", NAME_RULE);
        struct memest_node *n = mb_new_node(b, jname->valuestring, ip);
        if (!n)
            return -1;
        uint32_t id = b->g->nnodes - 1;
        n->op = &memest_op_input;
        n->trainable = false;
        struct memest_argval *args;
        if (mb_parse_args(b, &memest_op_input, c, globals, ip, &args) != 0)
            return -1;
        b->g->nodes[id].args = args;
        if (mb_add_name(b, names, jname->valuestring, (struct memest_ref){id, 0}, ip) != 0)
            return -1;
        if (i == 0)
            *first = (struct memest_ref){id, 0};
    }
    return 0;
}

/* "loss": {"type": "crossentropyloss"} (PyTorch's loss class name, any
 * case), the loss the training-step simulator applies to the last output. */
static int parse_loss(struct builder *b, const cJSON *j)
{
    if (!j)
        return 0;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
    if (!cJSON_IsObject(j) || !cJSON_IsString(t))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, "loss",
                           "\"loss\" must be an object such as {\"type\": \"crossentropyloss\"}");
    for (const cJSON *c = j->child; c; c = c->next)
        if (strcmp(c->string, "type") != 0 && strcmp(c->string, "comment") != 0 &&
            strcmp(c->string, "class_dim") != 0)
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, "loss", c->string),
                               "unknown field \"%s\" (a loss has \"type\", \"class_dim\" and "
                               "\"comment\")", c->string);
    /* class_dim: where crossentropyloss and nllloss find the classes (step.h) */
    const cJSON *cd = cJSON_GetObjectItemCaseSensitive(j, "class_dim");
    if (cd && (!cJSON_IsNumber(cd) ||
               (cd->valuedouble != MEMEST_CLASS_DIM_TORCH && cd->valuedouble != MEMEST_CLASS_DIM_LAST)))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, "loss.class_dim",
                           "\"class_dim\" must be 1 (PyTorch's: (N, C, d1, ...), the default) or "
                           "-1 (the last dim: out.view(-1, C), as a language model's loss)");
    b->g->loss_class_dim = cd ? (int)cd->valuedouble : 0;
    enum memest_loss l;
    char names[MEMEST_LOSS_NAMES_LEN];
    if (memest_loss_parse(t->valuestring, &l) != 0)
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, "loss.type",
                           "unknown loss \"%s\" (one of %s)", t->valuestring,
                           memest_loss_names(names, sizeof names));
    b->g->loss = memest_loss_name(l);
    return 0;
}

static int build(struct builder *b, const cJSON *root, const struct memest_override *ov, int nov)
{
    static const char *const keys[] = {"name", "inputs", "layers", "blocks", "variables",
                                       "outputs", "description", "comment", "loss", "let", "checks",
                                       "hf_config"};
    const int nkeys = (int)(sizeof keys / sizeof *keys);
    for (const cJSON *c = root->child; c; c = c->next) {
        int k = 0;
        while (k < nkeys && strcmp(c->string, keys[k]) != 0)
            k++;
        if (k == nkeys) {
            char dym[sizeof b->err->msg];
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, c->string,
                               "unknown top-level field \"%s\"%s", c->string,
                               memest_suggest_clause(memest_suggest(c->string, keys, nkeys), dym,
                                                     sizeof dym));
        }
    }
    const cJSON *jname = cJSON_GetObjectItemCaseSensitive(root, "name");
    if (jname && !cJSON_IsString(jname))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, "name", "\"name\" must be a string, got %s",
                           mb_json_type_name(jname));
    if (mb_check_comment(b, root, "") != 0)
        return -1;
    b->g->name = jname ? jname->valuestring : "model";
    b->blocks = cJSON_GetObjectItemCaseSensitive(root, "blocks");
    if (b->blocks && !cJSON_IsObject(b->blocks))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, "blocks",
                           "\"blocks\" must be an object of name: block");
    for (const cJSON *c = b->blocks ? b->blocks->child : NULL; c; c = c->next) {
        if (mb_check_block_def(b, c, c->string) != 0)
            return -1;
        if (memest_strmap_put(&b->blockmap, c->string, strlen(c->string), (int64_t)(intptr_t)c) != 0)
            return mb_nomem(b);
    }
    b->ov = ov;
    b->nov = nov > 0 ? nov : 0;
    b->ov_read = memest_arena_alloc(&b->g->arena, (size_t)b->nov + 1);
    if (!b->ov_read)
        return mb_nomem(b);
    memset(b->ov_read, 0, (size_t)b->nov + 1);
    struct scope globals = {0};
    struct memest_strmap globals_index = {0};
    if (mb_load_variables(b, cJSON_GetObjectItemCaseSensitive(root, "variables"),
                          cJSON_GetObjectItemCaseSensitive(root, "let"), ov, nov, &globals) != 0 ||
        mb_scope_index(b, &globals, &globals_index) != 0 ||
        mb_run_checks(b, cJSON_GetObjectItemCaseSensitive(root, "checks"), &globals,
                      "checks") != 0) {
        memest_strmap_free(&globals_index);
        return -1;
    }
    struct memest_strmap names = {0};
    struct memest_ref first = {UINT32_MAX, 0}, last;
    int rc = build_inputs(b, cJSON_GetObjectItemCaseSensitive(root, "inputs"), &globals, &names, &first);
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    if (rc == 0 && (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) < 1))
        rc = memest_errf(b->err, MEMEST_ERR_SCHEMA, "layers",
                         layers ? "\"layers\" must be a non-empty list of nodes"
                                : "the model has no \"layers\" list");
    if (rc == 0)
        rc = mb_expand_list(b, layers, "layers", "", &globals, &names, first, true, &last);
    if (rc == 0)
        rc = mb_resolve_held(b);
    mb_set_ctx_node(b, ""); /* errors after the nodes are about no node */
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(root, "outputs");
    if (rc == 0 && outs) {
        if (!cJSON_IsArray(outs) || cJSON_GetArraySize(outs) < 1 || cJSON_GetArraySize(outs) > 64)
            rc = memest_errf(b->err, MEMEST_ERR_SCHEMA, "outputs",
                             "\"outputs\" must be a list of 1 to 64 node names");
        int n = rc == 0 ? cJSON_GetArraySize(outs) : 0;
        b->g->outputs = n ? memest_arena_alloc(&b->g->arena, sizeof *b->g->outputs * (size_t)n) : NULL;
        if (n && !b->g->outputs)
            rc = mb_nomem(b);
        int i = 0;
        for (const cJSON *e = outs->child; rc == 0 && e; e = e->next, i++) {
            const struct jp op = {"outputs", NULL, i};
            if (!cJSON_IsString(e))
                rc = memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_jp_str(b, &op),
                                 "expected a node name");
            else
                rc = mb_resolve_ref(b, &names, e->valuestring, &op, &b->g->outputs[i]);
        }
        b->g->noutputs = (uint32_t)n;
    } else if (rc == 0) {
        b->g->outputs = memest_arena_alloc(&b->g->arena, sizeof *b->g->outputs);
        if (!b->g->outputs)
            rc = mb_nomem(b);
        else
            b->g->outputs[0] = last, b->g->noutputs = 1;
    }
    if (rc == 0)
        rc = parse_loss(b, cJSON_GetObjectItemCaseSensitive(root, "loss"));
    if (rc == 0)
        rc = mb_note_overrides(b);
    memest_strmap_free(&names);
    memest_strmap_free(&globals_index);
    return rc;
}

int memest_model_build(const struct memest_model *m, const struct memest_override *ov, int nov,
                       struct memest_graph *g, struct memest_error *err)
{
    memset(g, 0, sizeof *g);
    g->file = m->file;
    memest_err_file(err, m->file);
    /* Errors inside a template name the config and the template. */
    char label[sizeof err->file];
    if (m->arch) {
        snprintf(label, sizeof label, "%s [template %s]", m->file, m->arch);
        memest_err_file(err, label);
    }
    struct builder b = {.m = m, .g = g, .err = err,
                        .max_nodes = m->max_nodes ? m->max_nodes : MEMEST_MAX_NODES};
    b.max_work = (uint64_t)b.max_nodes * WORK_PER_NODE;
    int rc = build(&b, m->root, ov, nov);
    g->max_cost = memest_cost_limit(b.max_nodes);
    g->build_work = b.work;
    memest_strmap_free(&b.fullnames);
    memest_strmap_free(&b.fusemap);
    memest_strmap_free(&b.blockmap);
    memest_strmap_free(&b.callmap);
    if (rc != 0)
        memest_graph_free(g);
    else
        err->node[0] = '\0';
    return rc;
}
