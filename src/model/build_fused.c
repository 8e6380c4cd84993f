/* build_fused.c - "fused_params": the parameters of a set of layers are
 * slices of fused parameters, each layer reading its slice through a select
 * (transformers' fused experts: self.gate_up_proj[expert_idx] of an [E, ...]
 * nn.Parameter). Each layer gets the group's name (graph.h: fused) and
 * number (fuse_group); the step simulator makes the gradients as
 * SelectBackward and AccumulateGrad do (src/sim/sim_fused_grad.c).
 *   "fused_params": true on a node with "repeat": the copies' layers are
 *     fused, each with the layer of the same name in every other copy, named
 *     "<repeat's full name>.*.<name in the copy>" ("mlp.experts.*.down_proj";
 *     a repeated layer: "<its full name>.*");
 *   "fused_params": "NAME" on a layer: the layers given the same NAME are
 *     fused (what the flat file of an expanded graph writes, graph_json.c);
 *   "fused_params": false: not fused (a layer of a fused repeat's copy that
 *     has parameters of its own). */
#include <string.h>

#include "build_internal.h"

int mb_fused_begin(struct builder *b, const cJSON *jf, bool repeated, bool block,
                   const char *full, const char *npath)
{
    if (!jf || cJSON_IsFalse(jf))
        return 0;
    const char *why = NULL;
    if (b->fuse_base)
        why = "\"fused_params\" true or a name inside a repeat that has \"fused_params\": true (a fused "
              "parameter of fused parameters is not written)";
    else if (cJSON_IsTrue(jf) && !repeated)
        why = "\"fused_params\": true is for a node with \"repeat\" (its copies' parameters are "
              "the slices); name the group with a string on a layer";
    else if (cJSON_IsString(jf) && (block || !jf->valuestring[0]))
        why = "\"fused_params\": a name is for a layer (use true on a repeated block)";
    else if (!cJSON_IsBool(jf) && !cJSON_IsString(jf))
        why = "\"fused_params\" must be true, false or a name";
    if (why)
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, npath, "fused_params"), "%s",
                           why);
    if (cJSON_IsTrue(jf))
        b->fuse_base = full;
    return 0;
}

void mb_fused_copy(struct builder *b, const cJSON *obj, const char *fname)
{
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, "fused_params")))
        b->fuse_copy = fname;
}

void mb_fused_end(struct builder *b, const cJSON *obj)
{
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, "fused_params")))
        b->fuse_base = b->fuse_copy = NULL;
}

int mb_fused_node(struct builder *b, struct memest_node *n, const cJSON *jf)
{
    char *key;
    if (cJSON_IsFalse(jf)) {
        return 0;
    } else if (cJSON_IsString(jf)) {
        key = memest_arena_strdup(&b->g->arena, jf->valuestring);
    } else if (b->fuse_base && b->fuse_copy) {
        /* the node's name in the copy: after "<copy>" ("" for a repeated layer) */
        size_t cl = strlen(b->fuse_copy);
        const char *rest = strncmp(n->name, b->fuse_copy, cl) == 0 ? n->name + cl : n->name;
        key = memest_arena_concat(&b->g->arena, b->fuse_base, ".*", rest, (char *)NULL);
    } else {
        return 0;
    }
    if (!key)
        return mb_nomem(b);
    int64_t first;
    if (memest_strmap_get(&b->fusemap, key, strlen(key), &first)) {
        n->fused = b->g->nodes[first].fused;
        n->fuse_group = b->g->nodes[first].fuse_group;
        return 0;
    }
    n->fused = key;
    n->fuse_group = ++b->nfuse;
    if (memest_strmap_put(&b->fusemap, key, strlen(key), n - b->g->nodes) != 0)
        return mb_nomem(b);
    return 0;
}
