/* graph_json.c - writes an expanded graph back as a flat model file (see
 * include/memest/graph_json.h). */
#include "memest/graph_json.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memest/format.h"
#include "memest/ops.h"

/* Numbers are written by memest, not by cJSON: cJSON 1.7's printer keeps
 * 15 digits whenever they read back within a relative epsilon, so it
 * writes 8014398509481981 as 8.01439850948198e+15. */
static cJSON *int_json(int64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    return cJSON_CreateRaw(buf);
}

static cJSON *float_json(double v)
{
    char buf[32];
    return cJSON_CreateRaw(memest_fmt_double(v, buf, sizeof buf));
}

/* One argument value, as the builder reads it back: scalars for INT, BOOL,
 * FLOAT and single-element INTS not written as a list, lists for the rest, "batch" in shapes,
 * null for an optional argument set to None. */
static cJSON *arg_json(const struct memest_argspec *spec, const struct memest_argval *av)
{
    if (av->none)
        return cJSON_CreateNull();
    switch (spec->kind) {
    case MEMEST_ARG_INT:
        return int_json(av->v[0]);
    case MEMEST_ARG_BOOL:
        return cJSON_CreateBool(av->v[0] != 0);
    case MEMEST_ARG_FLOAT:
        return float_json(av->f);
    case MEMEST_ARG_STR:
    case MEMEST_ARG_NAME:
        return cJSON_CreateString(av->s ? av->s : "");
    case MEMEST_ARG_INTS:
        if (av->n == 1 && !av->list)
            return int_json(av->v[0]);
        /* fall through */
    case MEMEST_ARG_SHAPE: {
        cJSON *list = cJSON_CreateArray();
        for (int i = 0; list && i < av->n; i++) {
            cJSON *e = spec->kind == MEMEST_ARG_SHAPE && av->v[i] == MEMEST_SHAPE_BATCH
                           ? cJSON_CreateString("batch")
                           : int_json(av->v[i]);
            if (!cJSON_AddItemToArray(list, e)) {
                cJSON_Delete(e);
                cJSON_Delete(list);
                return NULL;
            }
        }
        return list;
    }
    case MEMEST_ARG_COUNT:
        break;
    }
    return NULL;
}

/* "name" or "name:K". */
static cJSON *ref_json(const struct memest_graph *g, struct memest_ref r)
{
    if (r.out == 0)
        return cJSON_CreateString(g->nodes[r.node].name);
    char k[8];
    snprintf(k, sizeof k, ":%u", (unsigned)r.out);
    size_t n = strlen(g->nodes[r.node].name);
    char *s = malloc(n + sizeof k);
    if (!s)
        return NULL;
    memcpy(s, g->nodes[r.node].name, n);
    strcpy(s + n, k);
    cJSON *j = cJSON_CreateString(s);
    free(s);
    return j;
}

static bool add(cJSON *obj, const char *key, cJSON *item)
{
    if (item && cJSON_AddItemToObject(obj, key, item))
        return true;
    cJSON_Delete(item);
    return false;
}

static bool append(cJSON *list, cJSON *item)
{
    if (item && cJSON_AddItemToArray(list, item))
        return true;
    cJSON_Delete(item);
    return false;
}

static cJSON *node_json(const struct memest_graph *g, const struct memest_node *n, bool input)
{
    cJSON *o = cJSON_CreateObject();
    bool ok = o && add(o, "name", cJSON_CreateString(n->name));
    if (ok && !input) {
        cJSON *ins = cJSON_CreateArray();
        ok = add(o, "type", cJSON_CreateString(n->op->name)) && add(o, "inputs", ins);
        for (uint32_t i = 0; ok && i < n->nin; i++)
            ok = append(ins, ref_json(g, n->in[i]));
        if (ok && !n->trainable)
            ok = add(o, "trainable", cJSON_CreateFalse());
        if (ok && n->tie_node >= 0)
            ok = add(o, n->tie_all ? "tie_params" : "tie_weight",
                     cJSON_CreateString(g->nodes[n->tie_node].name));
        if (ok && n->fused)
            ok = add(o, "fused_params", cJSON_CreateString(n->fused));
        if (ok && n->discarded)
            ok = add(o, "discarded", cJSON_CreateTrue());
        if (ok && (n->held_output || n->held_to))   /* the flat file's names are full names */
            ok = add(o, "held_until", cJSON_CreateString(n->held_output ? "output"
                                                         : g->nodes[n->held_to].name));
    }
    for (int a = 0; ok && a < n->op->nargs; a++)
        if (n->args[a].given)
            ok = add(o, n->op->args[a].name, arg_json(&n->op->args[a], &n->args[a]));
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *memest_graph_to_json(const struct memest_graph *g)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    bool ok = cJSON_AddStringToObject(root, "name", g->name ? g->name : "model");
    cJSON *inputs = ok ? cJSON_AddArrayToObject(root, "inputs") : NULL;
    cJSON *layers = inputs ? cJSON_AddArrayToObject(root, "layers") : NULL;
    cJSON *outputs = layers ? cJSON_AddArrayToObject(root, "outputs") : NULL;
    ok = outputs != NULL;
    for (uint32_t i = 0; ok && i < g->nnodes; i++) {
        bool input = g->nodes[i].op->model_input;
        ok = append(input ? inputs : layers, node_json(g, &g->nodes[i], input));
    }
    for (uint32_t o = 0; ok && o < g->noutputs; o++)
        ok = append(outputs, ref_json(g, g->outputs[o]));
    if (ok && g->loss) {
        cJSON *loss = cJSON_AddObjectToObject(root, "loss");
        ok = loss && cJSON_AddStringToObject(loss, "type", g->loss) &&
             (!g->loss_class_dim || cJSON_AddNumberToObject(loss, "class_dim", g->loss_class_dim));
    }
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}
