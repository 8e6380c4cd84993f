/* build_internal.h - what the files of the model builder share (private to
 * src/model; the public entry point is model.h's memest_model_build).
 *
 * The builder expands a parsed model file into the layer graph, in stages
 * that each have a file:
 *   model_build.c   the entry point: top-level fields, inputs, outputs, loss
 *   build_eval.c    name scopes and the value evaluator: expressions, numbers
 *   build_vars.c    variables, overrides, "let", "checks"
 *   build_args.c    argument values: numbers, integers, op arguments
 *   build_expand.c  nodes: names and references, "inputs", "if", "repeat"
 *   build_block.c   blocks: their definitions and their calls
 *   build_fused.c   "fused_params": layers whose parameters are slices of
 *                   fused parameters, read through a select per slice
 *   build_errors.c  JSON paths, the node named in errors, the blame of
 *                   overrides, the work budget, checks every object shares
 * and graph.c answers graph.h's questions about the result. The functions
 * the files share are named mb_ (model builder) to keep them apart from the
 * library's public memest_ names. */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memest/error.h"
#include "memest/expr.h"
#include "memest/graph.h"
#include "memest/model.h"
#include "memest/ops.h"
#include "memest/strmap.h"

#define INT_LIMIT 9007199254740992.0 /* 2^53 */

enum vkind { V_NUM, V_BOOL, V_STR, V_JSON };

struct scope;

struct var {
    const char *name;
    enum vkind kind;
    struct memest_expr_val val;   /* V_NUM, V_BOOL */
    const char *str;
    const cJSON *json;
    const struct scope *defscope; /* where a V_JSON list's elements are evaluated */
    const struct memest_override *ov; /* the --set (or --sweep-var) the value comes from */
};

struct scope {
    const struct scope *parent;
    struct var *vars;
    int nvars;
    const struct memest_strmap *index; /* name -> index in vars, for large scopes */
};

/* Scopes with more variables than this get a hash index. */
#define SCOPE_INDEX_MIN 8
/* Expansion work allowed per allowed node (see mb_charge()). */
#define WORK_PER_NODE 2

struct builder {
    const struct memest_model *m;
    struct memest_graph *g;
    struct memest_error *err;
    uint32_t max_nodes;             /* m->max_nodes, or MEMEST_MAX_NODES */
    uint64_t work, max_work;        /* expansion work done, and its budget */
    uint32_t cap_nodes;
    struct memest_strmap fullnames; /* full node name -> node index */
    const cJSON *blocks;
    struct memest_strmap blockmap;  /* block name -> its definition (a cJSON *) */
    struct memest_strmap callmap;   /* a block call's full name -> its last node */
    const char *active[MEMEST_MAX_NESTING]; /* blocks being expanded */
    int depth;
    const struct memest_override *ov; /* the command-line overrides */
    int nov;
    bool *ov_read;                  /* [nov]: the expansion read ov[i] */
    const struct memest_override *scale_ov; /* set the count of a "repeat" being expanded */
    bool flat;                    /* the block call being expanded is "flat" */
    /* "fused_params": true on a repeat being expanded (build_fused.c): its
     * full name and the copy's, NULL outside one */
    const char *fuse_base, *fuse_copy;
    struct memest_strmap fusemap;   /* fused name -> its first node */
    uint32_t nfuse;                 /* fused groups so far */
};

/* A JSON path formatted only when an error needs it: base, then ".key"
 * (when key is set), then "[idx]" (when idx >= 0). */
struct jp {
    const char *base;
    const char *key;
    int idx;
};

/* ---- build_errors.c (each documented there) ---- */
char *mb_path_join(struct builder *b, const char *path, const char *key);
char *mb_decimal(char *buf, int64_t v);
void mb_set_ctx_node(struct builder *b, const char *name);
const char *mb_jp_str(struct builder *b, const struct jp *p);
int mb_nomem(struct builder *b);
bool mb_from_config(const struct builder *b, const struct memest_override *ov);
const char *mb_opt_of(const struct memest_override *ov);
int mb_blame(struct builder *b, const void *tag);
int mb_value_err(struct builder *b, const void *tag, enum memest_errcode code,
                 const char *path, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
int mb_charge(struct builder *b, uint64_t units, const char *path);
const char *mb_json_type_name(const cJSON *j);
int mb_check_comment(struct builder *b, const cJSON *obj, const char *path);

/* ---- build_eval.c ---- */
void mb_note_read(struct builder *b, const struct memest_override *ov);
const struct var *mb_scope_find(const struct scope *sc, const char *name, size_t len);
int mb_scope_index(struct builder *b, struct scope *sc, struct memest_strmap *map);
/* What eval_expr returns besides 0: memest_expr_eval's faults (why says
 * which), or the work budget spent (the error is set). */
enum { EXPR_TEXT = -1, EXPR_VALUE = -2, EXPR_BUDGET = -3 };
int mb_eval_expr(struct builder *b, const char *s, const struct scope *sc, const char *path,
                 struct memest_expr_val *out, char *why, size_t whylen);
int mb_eval_number(struct builder *b, const cJSON *j, const struct scope *sc, const struct jp *path,
                   struct memest_expr_val *out);

/* ---- build_vars.c ---- */
int mb_check_held(struct builder *b, double d, const char *path);
/* Each node's "held_until": "NAME" resolved to its layer (memest_node.held_to);
 * an error unless NAME is a later layer. 0 / -1. */
int mb_resolve_held(struct builder *b);
int mb_load_variables(struct builder *b, const cJSON *jvars, const cJSON *jlet,
                      const struct memest_override *ov, int nov, struct scope *globals);
/* "checks" at path ("checks", "blocks.X.checks") over the scope sc. */
int mb_run_checks(struct builder *b, const cJSON *jchecks, const struct scope *sc,
                  const char *path);
int mb_note_overrides(struct builder *b);

/* ---- build_args.c ---- */
bool mb_is_node_key(const char *k);
int mb_eval_int(struct builder *b, const cJSON *j, const struct scope *sc, const struct jp *path,
                int64_t lo, int64_t hi, int64_t *out, const void **tag);
int mb_parse_args(struct builder *b, const struct memest_op_desc *op, const cJSON *obj,
                  const struct scope *sc, const char *path, struct memest_argval **out);
int mb_eval_value(struct builder *b, const cJSON *j, const struct scope *sc, const char *path,
                  const char *name, struct var *out);

/* ---- build_expand.c ---- */
#define NAME_RULE "a name of 1 to 100 characters without ':' or control characters"
bool mb_bad_name(const char *s);
int mb_resolve_ref(struct builder *b, const struct memest_strmap *names, const char *s,
                   const struct jp *jpath, struct memest_ref *out);
int mb_add_name(struct builder *b, struct memest_strmap *names, const char *name,
                struct memest_ref r, const char *path);
struct memest_node *mb_new_node(struct builder *b, const char *fullname, const char *path);
int mb_expand_list(struct builder *b, const cJSON *layers, const char *path,
                   const char *prefix, const struct scope *sc, struct memest_strmap *names,
                   struct memest_ref first_in, bool trainable, struct memest_ref *out);

/* ---- build_fused.c ---- */
/* A node's "fused_params" (jf, may be NULL) checked: true on a repeated
 * node, a name on a layer; refused inside a fused repeat. With true (node
 * obj), its copy fname is expanded after mb_fused_copy, and mb_fused_end
 * ends the fused repeat; both do nothing for another node. */
int mb_fused_begin(struct builder *b, const cJSON *jf, bool repeated, bool block,
                   const char *full, const char *npath);
void mb_fused_copy(struct builder *b, const cJSON *obj, const char *fname);
void mb_fused_end(struct builder *b, const cJSON *obj);
/* Node n (a layer, just made) joins its fused group: the name jf gives,
 * or, inside a fused repeat, the repeat's name with "*" for the copy. */
int mb_fused_node(struct builder *b, struct memest_node *n, const cJSON *jf);

/* ---- build_block.c ---- */
int mb_expand_block(struct builder *b, const char *bname, const cJSON *def, const cJSON *call,
                    const char *callpath, const char *fullname, const struct scope *caller,
                    const struct scope *globals, const struct memest_ref *ins, int nin,
                    bool trainable, struct memest_ref *out);
int mb_check_block_def(struct builder *b, const cJSON *def, const char *bname);
const cJSON *mb_find_block(const struct builder *b, const char *name);
