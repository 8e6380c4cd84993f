/* build_expand.c - expanding a list of nodes: node names and references
 * ("name", "name:K"), each node's "inputs", "if", "trainable", "repeat" and
 * "tie_weight", and the ops or blocks its "type" names. */
#include <stdlib.h>
#include <string.h>

#include "memest/escape.h"
#include "memest/suggest.h"

#include "build_internal.h"

/* A node or input name: at most 100 bytes, no ':' (it separates an output
 * index) and no control character (names end up in reports). */
bool mb_bad_name(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++, n++)
        if (*p == ':' || *p < 0x20 || *p == 0x7F)
            return true;
    return n == 0 || n > 100;
}

/* ---- name scopes: local node name -> packed reference ---- */

static int64_t pack(struct memest_ref r) { return ((int64_t)r.node << 16) | r.out; }
static struct memest_ref unpack(int64_t v)
{
    return (struct memest_ref){(uint32_t)(v >> 16), (uint16_t)(v & 0xFFFF)};
}

/* The node a name stands for when "if" left out a node that takes no
 * input (zeros, parameter, buffer, arange): none, an error to refer to. */
#define LEFT_OUT (UINT32_MAX - 1)

/* Resolves "name" or "name:K" in `names`; a name "if" left out for nothing
 * (LEFT_OUT) is an error unless `left_out_ok` (an input of a node "if" also
 * leaves out). */
static int resolve(struct builder *b, const struct memest_strmap *names, const char *s,
                   const struct jp *jpath, bool left_out_ok, struct memest_ref *out)
{
    size_t len = strlen(s);
    const char *colon = strrchr(s, ':');
    long k = 0;
    if (colon && colon[1]) {
        char *end;
        k = strtol(colon + 1, &end, 10);
        if (*end || k < 0 || k > 255)
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_jp_str(b, jpath),
                               "bad output index in \"%s\" (expected NAME or NAME:K, K in 0..255)", s);
        len = (size_t)(colon - s);
    }
    int64_t v;
    if (!memest_strmap_get(names, s, len, &v)) {
        const char *cands[256];
        int n = 0;
        for (size_t i = 0; i < names->cap && n < 256; i++)
            if (names->keys[i])
                cands[n++] = names->keys[i];
        char dym[sizeof b->err->msg];
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_jp_str(b, jpath),
                           "\"%.*s\" is not an input or an earlier node here%s (nodes may only "
                           "use nodes listed before them, so cycles cannot be written)", (int)len,
                           s, memest_suggest_clause(memest_suggest(s, cands, n), dym, sizeof dym));
    }
    struct memest_ref r = unpack(v);
    if (r.node == LEFT_OUT && left_out_ok) {
        *out = r;
        return 0;
    }
    if (r.node == LEFT_OUT)
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_jp_str(b, jpath),
                           "\"%.*s\" is left out (its \"if\" is false) and, taking no input, "
                           "stands for nothing here (give the nodes that use it the same \"if\", "
                           "or it an alternative of the same name)", (int)len, s);
    if (k) {
        if (r.out != 0)
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_jp_str(b, jpath),
                               "\"%s\": output index of a reference that already selects one", s);
        r.out = (uint16_t)k;
    }
    *out = r;
    return 0;
}

/* Adds a local name to `names` (a duplicate is an error at path). */
int mb_resolve_ref(struct builder *b, const struct memest_strmap *names, const char *s,
                   const struct jp *jpath, struct memest_ref *out)
{
    return resolve(b, names, s, jpath, false, out);
}

int mb_add_name(struct builder *b, struct memest_strmap *names, const char *name,
                struct memest_ref r, const char *path)
{
    int64_t old;
    if (memest_strmap_get(names, name, strlen(name), &old))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, path, "duplicate node name \"%s\"", name);
    if (memest_strmap_put(names, name, strlen(name), pack(r)) != 0)
        return mb_nomem(b);
    return 0;
}

/* Appends a node called fullname (unique in the graph, within the node
 * limit) with defaults set; NULL with the error set. */
struct memest_node *mb_new_node(struct builder *b, const char *fullname, const char *path)
{
    struct memest_graph *g = b->g;
    if (g->nnodes >= b->max_nodes) {
        mb_value_err(b, b->scale_ov, MEMEST_ERR_LIMIT, path,
                     "the model expands to more than %u nodes (the limit); check \"repeat\" counts",
                     b->max_nodes);
        return NULL;
    }
    int64_t old;
    if (memest_strmap_get(&b->fullnames, fullname, strlen(fullname), &old)) {
        memest_errf(b->err, MEMEST_ERR_SCHEMA, path, "duplicate node name \"%s\"", fullname);
        memest_err_node(b->err, fullname);
        return NULL;
    }
    if (g->nnodes == b->cap_nodes) {
        uint32_t ncap = b->cap_nodes ? b->cap_nodes * 2 : 256;
        struct memest_node *nn = realloc(g->nodes, sizeof *nn * ncap);
        if (!nn) {
            mb_nomem(b);
            return NULL;
        }
        g->nodes = nn;
        b->cap_nodes = ncap;
    }
    if (memest_strmap_put(&b->fullnames, fullname, strlen(fullname), g->nnodes) != 0) {
        mb_nomem(b);
        return NULL;
    }
    struct memest_node *n = &g->nodes[g->nnodes++];
    memset(n, 0, sizeof *n);
    n->name = fullname;
    n->path = path;
    n->tie_node = -1;
    n->tie_all = false;
    n->trainable = true;
    return n;
}

/* ---- nodes ---- */

static const struct scope *globals_of(const struct scope *sc)
{
    while (sc->parent)
        sc = sc->parent;
    return sc;
}

static int unknown_type(struct builder *b, const char *type, const char *path)
{
    int nops;
    const struct memest_op_desc *const *ops = memest_op_all(&nops);
    const char **cands = malloc(sizeof *cands * (size_t)(nops + 256));
    if (!cands)
        return mb_nomem(b);
    int n = 0;
    for (int i = 0; i < nops; i++)
        cands[n++] = ops[i]->name;
    for (const cJSON *c = b->blocks ? b->blocks->child : NULL; c && n < nops + 256; c = c->next)
        cands[n++] = c->string;
    char dym[sizeof b->err->msg];
    const char *near = memest_op_alias(type);   /* what a PyTorch user means, first */
    memest_errf(b->err, MEMEST_ERR_SCHEMA, path, "unknown layer type \"%s\"%s", type,
                memest_suggest_clause(near ? near : memest_suggest(type, cands, n), dym,
                                      sizeof dym));
    free(cands);
    return -1;
}

/* A node's "type", which may name a string variable or block argument;
 * *ov (may be NULL) gets the override that variable comes from. */
static const char *resolve_type(const struct scope *sc, const cJSON *jtype,
                                const struct memest_override **ov)
{
    const char *type = jtype->valuestring;
    const struct var *tv = mb_scope_find(sc, type, strlen(type));
    bool var = tv && tv->kind == V_STR;
    if (ov)
        *ov = var ? tv->ov : NULL;
    return var ? tv->str : type;
}

/* Ops without inputs (arange, zeros, parameter, ...) do not default to the
 * previous node. */
static bool takes_no_input(struct builder *b, const struct scope *sc, const cJSON *jtype)
{
    if (!cJSON_IsString(jtype))
        return false;
    const char *type = resolve_type(sc, jtype, NULL);
    if (mb_find_block(b, type))
        return false;
    const struct memest_op_desc *op = memest_op_find(type);
    return op && op->max_in == 0;
}

/* Whether a node after obj in its list is called name. */
static bool later_named(const cJSON *obj, const char *name)
{
    for (const cJSON *o = obj->next; o; o = o->next) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
            return true;
    }
    return false;
}

/* A node's local name: its "name", or by default its index (as
 * nn.Sequential names children). The name goes into the scope's name map,
 * which keeps the pointer: a default name is owned by the graph's arena,
 * never a buffer of this frame. */
static int node_name(struct builder *b, const cJSON *jname, const char *npath, int index,
                     const char **out)
{
    char idx[24];
    const char *name = NULL;
    *out = NULL;
    if (jname) {
        if (!cJSON_IsString(jname))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, npath, "name"),
                               "expected %s, got %s", NAME_RULE, mb_json_type_name(jname));
        name = jname->valuestring;
        if (mb_bad_name(name))
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, npath, "name"),
                               "node name \"%.*s\": expected %s",
                               memest_utf8_prefix(name, 40), name, NAME_RULE);
    } else if (!(name = memest_arena_strdup(&b->g->arena, mb_decimal(idx, index)))) {
        return mb_nomem(b);
    }
    *out = name;
    return 0;
}

/* Whether a node's "if" (jif, may be NULL) leaves it out. */
static int node_left_out(struct builder *b, const cJSON *jif, const struct scope *sc,
                         const char *npath, bool *skip)
{
    *skip = false;
    if (!jif)
        return 0;
    struct memest_expr_val cond;
    const struct jp ifp = {npath, "if", -1};
    if (mb_eval_number(b, jif, sc, &ifp, &cond) != 0)
        return -1;
    *skip = memest_expr_real(&cond) == 0;
    return 0;
}

/* A node's "trainable" (jtrain, may be NULL): false makes *trainable
 * false, true keeps what the enclosing block says. */
static int node_trainable(struct builder *b, const cJSON *jtrain, const char *npath,
                          bool *trainable)
{
    if (!jtrain)
        return 0;
    if (!cJSON_IsBool(jtrain))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, npath, "trainable"),
                           "\"trainable\" must be true or false");
    *trainable = *trainable && cJSON_IsTrue(jtrain);
    return 0;
}

/* A node's "inputs" (one name or a list of them) into ins[] and *nin;
 * without "inputs", the previous node (prev), unless the node's type takes
 * no input. `skip`: the node's "if" left it out, so its inputs may be left
 * out too. */
static int node_inputs(struct builder *b, const struct memest_strmap *names,
                       const struct scope *sc, const cJSON *jin, const cJSON *jtype,
                       const char *npath, struct memest_ref prev, bool skip,
                       struct memest_ref ins[MEMEST_MAX_NODE_INPUTS], int *nin)
{
    *nin = 0;
    if (jin) {
        if (cJSON_IsString(jin)) {
            const struct jp ip = {npath, "inputs", -1};
            if (resolve(b, names, jin->valuestring, &ip, skip, &ins[0]) != 0)
                return -1;
            *nin = 1;
        } else if (cJSON_IsArray(jin)) {
            int i = 0;
            for (const cJSON *e = jin->child; e; e = e->next, i++) {
                const struct jp ip = {npath, "inputs", i};
                if (i >= MEMEST_MAX_NODE_INPUTS)
                    return memest_errf(b->err, MEMEST_ERR_LIMIT, mb_jp_str(b, &ip),
                                       "more than %d inputs", MEMEST_MAX_NODE_INPUTS);
                if (!cJSON_IsString(e))
                    return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_jp_str(b, &ip),
                                       "an input must be a node name, got %s",
                                       mb_json_type_name(e));
                if (resolve(b, names, e->valuestring, &ip, skip, &ins[i]) != 0)
                    return -1;
            }
            *nin = i;
        } else {
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, npath, "inputs"),
                               "\"inputs\" must be a list of node names");
        }
    } else if (prev.node != UINT32_MAX && !takes_no_input(b, sc, jtype)) {
        ins[0] = prev;
        *nin = 1;
    }
    return 0;
}

/* A node its "if" left out: it passes its first input through; one that
 * takes no input (a zeros, a parameter, as Python's `if cond: self.bias =
 * nn.Parameter(...)`) is absent: the next node reads the one before it,
 * and its name stands for nothing. */
static int left_out_node(struct builder *b, const cJSON *obj, struct memest_strmap *names,
                         const char *name, const char *npath, struct memest_ref prev,
                         const struct memest_ref *ins, int nin, struct memest_ref *out)
{
    bool nothing = nin == 0 || ins[0].node == LEFT_OUT;
    *out = nothing ? prev : ins[0];
    /* one of two alternatives of the same name (Python's `if tie: self.lm_head = ...
     * else: ...`): the name is the present node's, so a left-out node does not claim
     * a name an earlier node has or a later node of the same list takes */
    int64_t old;
    if (memest_strmap_get(names, name, strlen(name), &old) || later_named(obj, name))
        return 0;
    return mb_add_name(b, names, name, nothing ? (struct memest_ref){LEFT_OUT, 0} : ins[0],
                       npath);
}

/* A node's "tie_weight" or "tie_params" (at most one of them): *tie gets
 * the earlier node it names, -1 without. */
static int node_tie(struct builder *b, const cJSON *jtie, const cJSON *jtie_all,
                    const char *npath, int64_t *tie)
{
    *tie = -1;
    if (jtie && jtie_all)
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, npath, "tie_params"),
                           "\"tie_params\" and \"tie_weight\" exclude each other (tie_params "
                           "shares the weight too)");
    const char *tie_key = jtie_all ? "tie_params" : "tie_weight";
    if (jtie_all)
        jtie = jtie_all;
    if (!jtie)
        return 0;
    if (!cJSON_IsString(jtie))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, npath, tie_key),
                           "\"%s\" must be the name of an earlier node", tie_key);
    if (!memest_strmap_get(&b->fullnames, jtie->valuestring, strlen(jtie->valuestring), tie))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, npath, tie_key),
                           "\"%s\" is not an earlier node (use its full name, e.g. "
                           "\"block.layer\")", jtie->valuestring);
    return 0;
}

/* Whether op takes nin inputs (an error at npath if not). */
static int check_arity(struct builder *b, const struct memest_op_desc *op, int nin,
                       const char *npath)
{
    if (nin >= op->min_in && (op->max_in < 0 || nin <= op->max_in))
        return 0;
    if (op->min_in == op->max_in)
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, npath, "%s takes %d input%s, got %d",
                           op->name, op->min_in, op->min_in == 1 ? "" : "s", nin);
    if (op->max_in < 0)
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, npath,
                           "%s takes at least %d input%s, got %d", op->name, op->min_in,
                           op->min_in == 1 ? "" : "s", nin);
    return memest_errf(b->err, MEMEST_ERR_SCHEMA, npath, "%s takes %d to %d inputs, got %d",
                       op->name, op->min_in, op->max_in, nin);
}

/* The node keys a block call cannot take: they mark one node's outputs. */
static int layer_only_keys(struct builder *b, const cJSON *obj, const char *npath)
{
    if (cJSON_GetObjectItemCaseSensitive(obj, "held_until"))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, npath, "held_until"),
                           "\"held_until\" is for layers, not blocks: mark the block's node");
    if (cJSON_GetObjectItemCaseSensitive(obj, "discarded"))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, npath, "discarded"),
                           "\"discarded\" is for layers, not blocks: mark the block's last node");
    return 0;
}

/* One copy of an op's node, called fname, reading ins[0..nin) and with the
 * arguments obj gives it in scope rsc: *cur gets its first output. */
static int add_op_node(struct builder *b, const struct memest_op_desc *op, const cJSON *obj,
                       const struct scope *rsc, const char *npath, const char *fname,
                       bool trainable, int64_t tie, bool tie_all, const struct memest_ref *ins,
                       int nin, struct memest_ref *cur)
{
    if (check_arity(b, op, nin, npath) != 0)
        return -1;
    struct memest_node *n = mb_new_node(b, fname, npath);
    if (!n || mb_fused_node(b, n, cJSON_GetObjectItemCaseSensitive(obj, "fused_params")) != 0)
        return -1;
    uint32_t id = b->g->nnodes - 1;
    const cJSON *jd = cJSON_GetObjectItemCaseSensitive(obj, "discarded");
    if (jd && !cJSON_IsBool(jd))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, npath, "discarded"),
                           "\"discarded\" must be true or false");
    const cJSON *jh = cJSON_GetObjectItemCaseSensitive(obj, "held_until");
    if (jh && (!cJSON_IsString(jh) || mb_bad_name(jh->valuestring)))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, npath, "held_until"),
                           "\"held_until\" must be \"output\" (held while the training "
                           "loop keeps the model's outputs) or the name of a later layer");
    n->op = op;
    n->discarded = cJSON_IsTrue(jd);
    n->held_output = jh && strcmp(jh->valuestring, "output") == 0;
    if (jh && !n->held_output &&   /* resolved once every node is built */
        !(n->held_name = memest_arena_strdup(&b->g->arena, jh->valuestring)))
        return mb_nomem(b);
    n->trainable = trainable;
    n->tie_node = tie;
    n->tie_all = tie_all;
    n->nin = (uint32_t)nin;
    n->in = memest_arena_alloc(&b->g->arena, sizeof *n->in * (size_t)(nin ? nin : 1));
    if (!n->in)
        return mb_nomem(b);
    memcpy(n->in, ins, sizeof *ins * (size_t)nin);
    struct memest_argval *args;
    if (mb_parse_args(b, op, obj, rsc, npath, &args) != 0)
        return -1;
    b->g->nodes[id].args = args;
    *cur = (struct memest_ref){id, 0};
    return 0;
}

static int expand_node(struct builder *b, const cJSON *obj, const char *npath, const char *prefix,
                       const struct scope *sc, struct memest_strmap *names, struct memest_ref prev,
                       int index, bool trainable, struct memest_ref *out)
{
    if (mb_charge(b, 1, npath) != 0)
        return -1;
    if (!cJSON_IsObject(obj))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, npath, "a node must be an object, got %s",
                           mb_json_type_name(obj));
    const cJSON *jtype = cJSON_GetObjectItemCaseSensitive(obj, "type");
    const cJSON *jrep = cJSON_GetObjectItemCaseSensitive(obj, "repeat");
    const cJSON *jtie = cJSON_GetObjectItemCaseSensitive(obj, "tie_weight");
    const cJSON *jtie_all = cJSON_GetObjectItemCaseSensitive(obj, "tie_params");
    const char *name = NULL;
    if (node_name(b, cJSON_GetObjectItemCaseSensitive(obj, "name"), npath, index, &name) != 0)
        return -1;
    if (mb_check_comment(b, obj, npath) != 0)
        return -1;
    char *full = memest_arena_concat(&b->g->arena, prefix, name, (char *)NULL);
    if (!full)
        return mb_nomem(b);
    mb_set_ctx_node(b, full);
    if (!cJSON_IsString(jtype))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, npath, "type"),
                           jtype ? "\"type\" must be a string" : "node has no \"type\"");
    const struct memest_override *type_ov;
    const char *type = resolve_type(sc, jtype, &type_ov);
    mb_note_read(b, type_ov);
    /* if: evaluated first, so that a node it leaves out may read nodes it
     * leaves out too */
    bool skip;
    if (node_left_out(b, cJSON_GetObjectItemCaseSensitive(obj, "if"), sc, npath, &skip) != 0)
        return -1;
    struct memest_ref ins[MEMEST_MAX_NODE_INPUTS];
    int nin;
    if (node_inputs(b, names, sc, cJSON_GetObjectItemCaseSensitive(obj, "inputs"), jtype, npath,
                    prev, skip, ins, &nin) != 0)
        return -1;
    if (skip)
        return left_out_node(b, obj, names, name, npath, prev, ins, nin, out);
    if (node_trainable(b, cJSON_GetObjectItemCaseSensitive(obj, "trainable"), npath,
                       &trainable) != 0)
        return -1;
    int64_t repeat = 1;
    const struct jp rp = {npath, "repeat", -1};
    const void *rep_ov = NULL;
    if (jrep && mb_eval_int(b, jrep, sc, &rp, 1, MEMEST_MAX_NODES, &repeat, &rep_ov) != 0)
        return -1;
    int64_t tie;
    if (node_tie(b, jtie, jtie_all, npath, &tie) != 0)
        return -1;
    const cJSON *blockdef = mb_find_block(b, type);
    const struct memest_op_desc *op = blockdef ? NULL : memest_op_find(type);
    if (!blockdef && !op) {
        unknown_type(b, type, mb_path_join(b, npath, "type"));
        return mb_blame(b, type_ov);
    }
    const cJSON *jflat = cJSON_GetObjectItemCaseSensitive(obj, "flat");
    bool flat = cJSON_IsTrue(jflat);
    if (jflat && (!cJSON_IsBool(jflat) || !blockdef || jrep))
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, npath, "flat"),
                           "\"flat\" is true or false, for a block called once (no \"repeat\"): "
                           "its nodes are named as the caller's own");
    if (blockdef && layer_only_keys(b, obj, npath) != 0)
        return -1;
    if (blockdef && (jtie || jtie_all)) {
        const char *tie_key = jtie_all ? "tie_params" : "tie_weight";
        return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, npath, tie_key),
                           "\"%s\" is for layers with %s, not blocks", tie_key,
                           jtie_all ? "parameters" : "a weight");
    }

    if (mb_fused_begin(b, cJSON_GetObjectItemCaseSensitive(obj, "fused_params"), jrep != NULL,
                       blockdef != NULL, full, npath) != 0)
        return -1;
    struct memest_ref cur = nin ? ins[0] : (struct memest_ref){UINT32_MAX, 0};
    struct var rv = {.name = "repeat_index", .kind = V_NUM};
    struct scope rsc = {.parent = sc, .vars = &rv, .nvars = jrep ? 1 : 0};
    const struct memest_override *outer_scale = b->scale_ov;
    if (rep_ov) /* the limits the copies reach are the override's fault */
        b->scale_ov = rep_ov;
    for (int64_t r = 0; r < repeat; r++) {
        if (r > 0 && mb_charge(b, 1, npath) != 0)
            return -1;
        rv.val = (struct memest_expr_val){.kind = MEMEST_EXPR_INT, .i = r};
        if (nin)
            ins[0] = cur;
        char digits[24];
        char *fname = jrep ? memest_arena_concat(&b->g->arena, full, ".", mb_decimal(digits, r),
                                                 (char *)NULL)
                           : full;
        if (!fname)
            return mb_nomem(b);
        mb_set_ctx_node(b, fname);
        mb_fused_copy(b, obj, fname);
        if (blockdef) {
            /* flat: the block's nodes are the caller's (prefix unchanged), and
             * no instance is recorded */
            size_t plen = strlen(prefix);
            char *pname = flat ? memest_arena_strdup(&b->g->arena, prefix) : fname;
            if (!pname)
                return mb_nomem(b);
            if (flat && plen)
                pname[plen - 1] = '\0';
            b->flat = flat;
            if (mb_expand_block(b, type, blockdef, obj, npath, pname, &rsc, globals_of(sc), ins,
                                nin, trainable, &cur) != 0)
                return -1;
            mb_set_ctx_node(b, fname);
        } else if (add_op_node(b, op, obj, &rsc, npath, fname, trainable, tie, jtie_all != NULL,
                               ins, nin, &cur) != 0) {
            return -1;
        }
    }
    b->scale_ov = outer_scale;
    mb_fused_end(b, obj);
    *out = cur;
    return mb_add_name(b, names, name, cur, npath);
}

/* The node or block call `name` names from node nd: looked up in nd's own
 * list, then in the lists around it (the prefixes of nd's full name, the
 * longest first); -1 if none. */
static int64_t held_target(struct builder *b, const struct memest_node *nd)
{
    size_t nlen = strlen(nd->held_name), at = strlen(nd->name);
    char *full = malloc(at + 1 + nlen + 1);
    if (!full)
        return -2;
    int64_t to = -1;
    for (;;) {
        while (at > 0 && nd->name[at - 1] != '.')
            at--;   /* nd->name[0..at) is a prefix ending in '.', or empty */
        memcpy(full, nd->name, at);
        memcpy(full + at, nd->held_name, nlen + 1);
        if (memest_strmap_get(&b->fullnames, full, at + nlen, &to) ||
            memest_strmap_get(&b->callmap, full, at + nlen, &to) || at == 0)
            break;
        to = -1;
        at--;
    }
    free(full);
    return to;
}

int mb_resolve_held(struct builder *b)
{
    for (uint32_t n = 0; n < b->g->nnodes; n++) {
        struct memest_node *nd = &b->g->nodes[n];
        if (!nd->held_name)
            continue;
        int64_t to = held_target(b, nd);
        if (to == -2)
            return mb_nomem(b);
        if (to <= (int64_t)n) {
            mb_set_ctx_node(b, nd->name);
            return memest_errf(b->err, MEMEST_ERR_SCHEMA, mb_path_join(b, nd->path, "held_until"),
                               "\"held_until\": \"%s\" is no later node or block call of its "
                               "list or the lists around it (not a repeated one; or \"output\")",
                               nd->held_name);
        }
        nd->held_to = (uint32_t)to;
    }
    return 0;
}

/* Expands the nodes of `layers` in order, each reading the one before unless
 * it names its inputs (the first reads first_in); *out gets the last. */
int mb_expand_list(struct builder *b, const cJSON *layers, const char *path,
                   const char *prefix, const struct scope *sc, struct memest_strmap *names,
                   struct memest_ref first_in, bool trainable, struct memest_ref *out)
{
    struct memest_ref prev = first_in;
    int i = 0;
    for (const cJSON *n = layers->child; n; n = n->next, i++) {
        char digits[24];
        char *np = memest_arena_concat(&b->g->arena, path, "[", mb_decimal(digits, i), "]", (char *)NULL);
        if (!np)
            return mb_nomem(b);
        if (expand_node(b, n, np, prefix, sc, names, prev, i, trainable, &prev) != 0)
            return -1;
    }
    *out = prev;
    return 0;
}
