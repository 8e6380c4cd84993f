/* lora.c - PEFT's LoRA as a graph pass (lora.h). Follows huggingface/peft
 * v0.17.1:
 *
 *   which layers: tuners/tuners_utils.py check_target_module_exists (a
 *     module whose name is a target, or ends with "." + a target) and
 *     _maybe_include_all_linear_layers ("all-linear": every nn.Linear but
 *     the output layer get_output_embeddings() names; v0.17.1 keeps the
 *     full module names, so a layer elsewhere called like the head is still
 *     adapted); without target_modules, utils/constants.py
 *     TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING[model_type];
 *   the forward: tuners/lora/layer.py Linear.forward (also gptq.py and
 *     awq.py, the same steps) -
 *         result = self.base_layer(x)
 *         torch_result_dtype = result.dtype
 *         x = self._cast_input_dtype(x, lora_A.weight.dtype)
 *         result = result + lora_B(lora_A(dropout(x))) * scaling
 *         result = result.to(torch_result_dtype)
 *     and tuners/lora/bnb.py Linear8bitLt / Linear4bit.forward for a
 *     bitsandbytes base -
 *         result = self.base_layer(x)
 *         result = result.clone()           # Linear4bit only
 *         requires_conversion = not torch.is_autocast_enabled()
 *         if requires_conversion: expected_dtype = result.dtype
 *                                 x = self._cast_input_dtype(x, lora_A.weight.dtype)
 *         output = lora_B(lora_A(dropout(x))) * scaling
 *         if requires_conversion: output = output.to(expected_dtype)
 *         result = result + output
 *   dropout: nn.Dropout(p) when lora_dropout > 0, else nn.Identity (no node);
 *   scaling: lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora
 *     (layer.py update_layer);
 *   dtypes: the adapters are float32 (lora.h). The result's dtype is the
 *     base layer's input dtype without autocast (F.linear needs the input
 *     and the weight of one dtype; bitsandbytes returns out.to(inp_dtype)),
 *     so the cast back is a type_as(x): reading x there changes no
 *     lifetime, the caller holding x for the whole call. Under autocast the
 *     base output and the adapter path are both in the autocast dtype: the
 *     cast back is a no-op and no node, bnb.py skips both casts.
 *
 * Freezing: get_peft_model marks every base parameter requires_grad=False
 * (tuners_utils.py _mark_only_adapters_as_trainable, bias="none"); the
 * adapter linears alone are trainable. */
#include "memest/lora.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "memest/ops.h"
#include "memest/quant.h"
#include "memest/strmap.h"

/* PEFT v0.17.1 utils/constants.py, TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING.
 * Keyed, as PEFT keys it, by the model_type the model file itself declares
 * (a config.json's "model_type", a template's hf_config.model_type), never
 * by the file's name; the targets are then matched against the graph's node
 * names, so a model without such layers gets an error, not a guess. */
static const struct {
    const char *model_type, *targets;
} default_targets[] = {
    {"t5", "q,v"},
    {"mt5", "q,v"},
    {"bart", "q_proj,v_proj"},
    {"gpt2", "c_attn"},
    {"bloom", "query_key_value"},
    {"blip-2", "q,v,q_proj,v_proj"},
    {"opt", "q_proj,v_proj"},
    {"gptj", "q_proj,v_proj"},
    {"gpt_neox", "query_key_value"},
    {"gpt_neo", "q_proj,v_proj"},
    {"bert", "query,value"},
    {"roberta", "query,value"},
    {"xlm-roberta", "query,value"},
    {"electra", "query,value"},
    {"deberta-v2", "query_proj,value_proj"},
    {"deberta", "in_proj"},
    {"layoutlm", "query,value"},
    {"llama", "q_proj,v_proj"},
    {"llama4", "q_proj,v_proj"},
    {"chatglm", "query_key_value"},
    {"gpt_bigcode", "c_attn"},
    {"mpt", "Wqkv"},
    {"RefinedWebModel", "query_key_value"},
    {"RefinedWeb", "query_key_value"},
    {"falcon", "query_key_value"},
    {"btlm", "c_proj,c_attn"},
    {"codegen", "qkv_proj"},
    {"mistral", "q_proj,v_proj"},
    {"mixtral", "q_proj,v_proj"},
    {"stablelm", "q_proj,v_proj"},
    {"phi", "q_proj,v_proj,fc1,fc2"},
    {"gemma", "q_proj,v_proj"},
    {"gemma2", "q_proj,v_proj"},
    {"gemma3_text", "q_proj,v_proj"},
    {"qwen2", "q_proj,v_proj"},
    {"qwen3", "q_proj,v_proj"},
};

const char *memest_lora_default_targets(const char *model_type)
{
    if (!model_type)
        return NULL;
    for (size_t i = 0; i < sizeof default_targets / sizeof *default_targets; i++)
        if (strcmp(default_targets[i].model_type, model_type) == 0)
            return default_targets[i].targets;
    return NULL;
}

#define MAX_TARGETS 64

struct targets {
    bool all_linear;
    int n;
    const char *name[MAX_TARGETS];
    size_t len[MAX_TARGETS];
};

static int parse_targets(const char *list, struct targets *t, struct memest_error *err)
{
    memset(t, 0, sizeof *t);
    if (strcasecmp(list, "all-linear") == 0) { /* PEFT lower-cases the shorthand */
        t->all_linear = true;
        return 0;
    }
    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");
        const char *s = p;
        while (len && *s == ' ') { /* "q_proj, v_proj" */
            s++;
            len--;
        }
        while (len && s[len - 1] == ' ')
            len--;
        if (len == 0)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                               "--lora-targets: expected layer names separated by commas, or "
                               "all-linear, got '%s'", list);
        if (t->n == MAX_TARGETS)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--lora-targets: at most %d names",
                               MAX_TARGETS);
        t->name[t->n] = s;
        t->len[t->n++] = len;
        p += strcspn(p, ",");
        if (!*p)
            return 0;
        p++;
    }
}

/* check_target_module_exists: `key in target_modules or any(key.endswith(f".{t}"))` */
static bool matches(const struct targets *t, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < t->n; i++) {
        size_t k = t->len[i];
        if (n == k && memcmp(name, t->name[i], k) == 0)
            return true;
        if (n > k && name[n - k - 1] == '.' && memcmp(name + n - k, t->name[i], k) == 0)
            return true;
    }
    return false;
}

/* The nodes inserted after one adapted linear, in order. */
enum step { S_CLONE, S_CAST_IN, S_DROPOUT, S_A, S_B, S_SCALE, S_ADD, S_CAST_OUT, S_COUNT };

struct plan {
    bool bnb;         /* bnb.py's forward */
    bool step[S_COUNT];
    int order[S_COUNT], k;
};

static void make_plan(struct plan *p, uint8_t wformat, double dropout, bool amp)
{
    memset(p, 0, sizeof *p);
    p->bnb = wformat == MEMEST_WF_INT8 || wformat == MEMEST_WF_NF4 || wformat == MEMEST_WF_FP4;
    p->step[S_CLONE] = wformat == MEMEST_WF_NF4 || wformat == MEMEST_WF_FP4;
    p->step[S_CAST_IN] = !(p->bnb && amp);
    p->step[S_DROPOUT] = dropout > 0;
    p->step[S_A] = p->step[S_B] = p->step[S_SCALE] = p->step[S_ADD] = true;
    p->step[S_CAST_OUT] = !amp;
    /* layer.py adds, then casts the sum; bnb.py casts the output, then adds */
    static const enum step plain[] = {S_CAST_IN, S_DROPOUT, S_A, S_B, S_SCALE, S_ADD, S_CAST_OUT};
    static const enum step bnb[] = {S_CLONE, S_CAST_IN, S_DROPOUT, S_A,
                                    S_B,     S_SCALE,   S_CAST_OUT, S_ADD};
    const enum step *o = p->bnb ? bnb : plain;
    int n = p->bnb ? (int)(sizeof bnb / sizeof *bnb) : (int)(sizeof plain / sizeof *plain);
    for (int i = 0; i < n; i++)
        if (p->step[o[i]])
            p->order[p->k++] = o[i];
}

static const char *const step_suffix[S_COUNT] = {
    [S_CLONE] = ".base_clone",
    [S_CAST_IN] = ".lora_input_cast",
    [S_DROPOUT] = ".lora_dropout.default",
    [S_A] = ".lora_A.default",
    [S_B] = ".lora_B.default",
    [S_SCALE] = ".lora_scaling",
    [S_ADD] = ".lora_add",
    [S_CAST_OUT] = ".lora_output_cast",
};

struct pass {
    struct memest_graph *g;
    struct memest_error *err;
    const struct memest_lora_opts *o;
    double scaling;
    const struct memest_op_desc *linear, *to, *dropout, *mul, *add, *clone;
};

static int nomem(struct memest_error *err)
{
    return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
}

/* The op's arguments at their defaults (the model builder's rule), none of
 * them `given`; arg() marks those the pass sets, which a graph written back
 * as a model file (graph_json.c) then prints. */
static struct memest_argval *default_args(struct pass *ps, const struct memest_op_desc *op)
{
    struct memest_argval *av =
        memest_arena_alloc(&ps->g->arena, sizeof *av * (size_t)(op->nargs ? op->nargs : 1));
    if (!av)
        return NULL;
    memset(av, 0, sizeof *av * (size_t)(op->nargs ? op->nargs : 1));
    for (int i = 0; i < op->nargs; i++) {
        const struct memest_argspec *s = &op->args[i];
        av[i].n = 1;
        if (s->optional) {
            av[i].none = true;
            continue;
        }
        av[i].v = memest_arena_alloc(&ps->g->arena, sizeof *av[i].v);
        if (!av[i].v)
            return NULL;
        av[i].v[0] = s->idef;
        av[i].f = s->fdef;
        av[i].s = s->sdef;
    }
    return av;
}

static struct memest_argval *arg(const struct memest_op_desc *op, struct memest_argval *av,
                                 const char *name)
{
    int i = memest_op_arg_index(op, name);
    av[i].given = true;
    av[i].none = false;
    return &av[i];
}

static int set_int(struct pass *ps, const struct memest_op_desc *op, struct memest_argval *av,
                   const char *name, int64_t v)
{
    struct memest_argval *a = arg(op, av, name);
    if (!a->v && !(a->v = memest_arena_alloc(&ps->g->arena, sizeof *a->v)))
        return -1;
    a->v[0] = v;
    a->n = 1;
    return 0;
}

/* Fills node *n, step `s` of the adapter of linear `base` (new index bi,
 * its input x), its own index self. */
static int make_node(struct pass *ps, struct memest_node *n, enum step s, const struct memest_node *base,
                     uint32_t bi, struct memest_ref x, uint32_t self, const struct plan *p)
{
    static const struct memest_ref none = {0, 0};
    const struct memest_op_desc *op = NULL;
    struct memest_ref in[2] = {none, none};
    uint32_t nin = 1;
    struct memest_ref prev = {self - 1, 0};
    switch (s) {
    case S_CLONE: op = ps->clone; in[0] = (struct memest_ref){bi, 0}; break;
    case S_CAST_IN: op = ps->to; in[0] = x; break;
    case S_DROPOUT: op = ps->dropout; in[0] = p->step[S_CAST_IN] ? prev : x; break;
    case S_A:
        op = ps->linear;
        in[0] = p->step[S_DROPOUT] || p->step[S_CAST_IN] ? prev : x;
        break;
    case S_B: op = ps->linear; in[0] = prev; break;
    case S_SCALE: op = ps->mul; in[0] = prev; break;
    case S_CAST_OUT: op = ps->to; in[0] = prev; in[1] = x; nin = 2; break;
    case S_ADD:
        op = ps->add;
        nin = 2;
        /* the base result (or its clone), then the adapter's output; bnb.py
         * adds after its cast, layer.py casts after the add */
        in[0] = (struct memest_ref){p->step[S_CLONE] ? bi + 1 : bi, 0};
        in[1] = prev;
        break;
    case S_COUNT: break;
    }
    struct memest_argval *av = default_args(ps, op);
    struct memest_ref *refs = memest_arena_alloc(&ps->g->arena, sizeof *refs * nin);
    char *name = memest_arena_concat(&ps->g->arena, base->name, step_suffix[s], (char *)NULL);
    if (!av || !refs || !name)
        return nomem(ps->err);
    memcpy(refs, in, sizeof *refs * nin);
    *n = (struct memest_node){.name = name, .path = base->path, .op = op, .in = refs, .nin = nin,
                              .args = av, .trainable = false, .tie_node = -1};
    int rc = 0;
    if (s == S_CAST_IN) {
        arg(op, av, "dtype")->s = "float32";   /* lora_A.weight.dtype */
    } else if (s == S_DROPOUT) {
        arg(op, av, "p")->f = ps->o->dropout;
    } else if (s == S_A || s == S_B) {
        int64_t out = s == S_A ? ps->o->r
                                : base->args[memest_op_arg_index(ps->linear, "out_features")].v[0];
        rc = set_int(ps, op, av, "out_features", out);
        rc = rc ? rc : set_int(ps, op, av, "bias", 0);   /* LoraConfig.lora_bias=False */
        n->trainable = true;
        n->param_dtype = (uint8_t)(MEMEST_F32 + 1);
    } else if (s == S_SCALE) {
        arg(op, av, "other")->f = ps->scaling;
    }
    return rc ? nomem(ps->err) : 0;
}

static int find_ops(struct pass *ps)
{
    ps->linear = memest_op_find("linear");
    ps->to = memest_op_find("to");
    ps->dropout = memest_op_find("dropout");
    ps->mul = memest_op_find("mul");
    ps->add = memest_op_find("add");
    ps->clone = memest_op_find("clone");
    if (!ps->linear || !ps->to || !ps->dropout || !ps->mul || !ps->add || !ps->clone)
        return memest_errf(ps->err, MEMEST_ERR_INTERNAL, NULL, "internal: an op LoRA needs is missing");
    return 0;
}

/* Which nodes get an adapter (1) and how many nodes each inserts. */
static int select_targets(struct pass *ps, const struct targets *t, const char *list,
                          bool amp, struct plan *plans, uint32_t *nadapt, uint64_t *extra)
{
    struct memest_graph *g = ps->g;
    int64_t head = t->all_linear ? memest_graph_output_head(g) : -1;
    *nadapt = 0;
    *extra = 0;
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const struct memest_node *n = &g->nodes[i];
        plans[i].k = 0;
        bool hit = t->all_linear ? n->op == ps->linear && (int64_t)i != head
                                 : !n->op->model_input && matches(t, n->name);
        if (!hit)
            continue;
        if (n->op != ps->linear)  /* PEFT: "Target module ... is not supported" */
            return memest_errf(ps->err, MEMEST_ERR_USAGE, NULL,
                               "--lora-targets: '%s' names \"%s\", a node of type %s; LoRA adapts "
                               "linear layers only", list, n->name, n->op->name);
        make_plan(&plans[i], n->wformat, ps->o->dropout, amp);
        (*nadapt)++;
        *extra += (uint64_t)plans[i].k;
    }
    if (*nadapt == 0) /* tuners_utils.py inject_adapter's ValueError */
        return memest_errf(ps->err, MEMEST_ERR_USAGE, NULL,
                           "--lora-targets: target modules %s not found in the model "
                           "(PEFT matches a layer's full name or its last parts, as q_proj "
                           "matches model.layers.0.self_attn.q_proj)", list);
    if (*extra + g->nnodes > MEMEST_MAX_NODES)
        return memest_errf(ps->err, MEMEST_ERR_LIMIT, NULL,
                           "--lora: the adapters take the model past %u nodes", MEMEST_MAX_NODES);
    return 0;
}

/* The new graph: old node i at map[i], its adapter nodes after it. */
static int rebuild(struct pass *ps, const struct plan *plans, uint64_t extra)
{
    struct memest_graph *g = ps->g;
    uint32_t n = g->nnodes, total = n + (uint32_t)extra;
    uint32_t *map = malloc(sizeof *map * (n ? n : 1));
    struct memest_node *nodes = calloc(total, sizeof *nodes);
    struct memest_strmap names = {0};
    int rc = -1;
    if (!map || !nodes) {
        nomem(ps->err);
        goto out;
    }
    for (uint32_t i = 0, at = 0; i < n; i++) {
        map[i] = at;
        at += 1 + (uint32_t)plans[i].k;
    }
    for (uint32_t i = 0; i < n; i++)
        if (memest_strmap_put(&names, g->nodes[i].name, strlen(g->nodes[i].name), i) != 0) {
            nomem(ps->err);
            goto out;
        }
    /* a reference to an adapted linear's output reads its adapter's last node */
#define REMAP(r)                                                                                \
    ((r).out == 0 && plans[(r).node].k ? (struct memest_ref){map[(r).node] + (uint32_t)plans[(r).node].k, 0} \
                                        : (struct memest_ref){map[(r).node], (r).out})
    for (uint32_t i = 0; i < n; i++) {
        struct memest_node *d = &nodes[map[i]];
        *d = g->nodes[i];
        d->trainable = false;   /* the base is frozen */
        if (d->tie_node >= 0)
            d->tie_node = map[d->tie_node];
        if (d->held_to)   /* an adapted layer's last node: its adapter's */
            d->held_to = REMAP(((struct memest_ref){d->held_to, 0})).node;
        if (d->nin) {
            struct memest_ref *in = memest_arena_alloc(&g->arena, sizeof *in * d->nin);
            if (!in) {
                nomem(ps->err);
                goto out;
            }
            for (uint32_t k = 0; k < d->nin; k++)
                in[k] = REMAP(g->nodes[i].in[k]);
            d->in = in;
        }
        const struct plan *p = &plans[i];
        for (int k = 0; k < p->k; k++) {
            uint32_t self = map[i] + 1 + (uint32_t)k;
            struct memest_ref x = REMAP(g->nodes[i].in[0]);
            if (make_node(ps, &nodes[self], (enum step)p->order[k], &g->nodes[i], map[i], x,
                          self, p) != 0)
                goto out;
            const char *nm = nodes[self].name;
            int64_t dup;
            if (memest_strmap_get(&names, nm, strlen(nm), &dup)) {
                memest_errf(ps->err, MEMEST_ERR_USAGE, NULL,
                            "--lora: the model has a node called \"%s\" already, the name of "
                            "an adapter node", nm);
                goto out;
            }
        }
    }
    for (uint32_t o = 0; o < g->noutputs; o++)
        g->outputs[o] = REMAP(g->outputs[o]);
    for (uint32_t b = 0; b < g->nblocks; b++)
        g->blocks[b].arg = REMAP(g->blocks[b].arg);
#undef REMAP
    for (uint32_t b = 0; b < g->nblocks; b++) {
        struct memest_block_inst *bl = &g->blocks[b];
        uint32_t last = bl->last;
        bl->first = map[bl->first];
        bl->last = map[last] + (uint32_t)plans[last].k;   /* its adapters are inside */
    }
    free(g->nodes);
    g->nodes = nodes;
    g->nnodes = total;
    nodes = NULL;
    rc = 0;
out:
    memest_strmap_free(&names);
    free(nodes);
    free(map);
    return rc;
}

int memest_lora_apply(struct memest_graph *g, const struct memest_lora_opts *o, bool amp,
                      const char *model_type, struct memest_lora_summary *out,
                      struct memest_error *err)
{
    memset(out, 0, sizeof *out);
    out->opts = *o;
    if (o->r <= 0)
        return 0;
    const char *list = o->targets;
    if (!list && !(list = memest_lora_default_targets(model_type))) {
        if (model_type)
            return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                               "--lora: PEFT has no default target modules for model_type "
                               "\"%s\"; name them with --lora-targets (e.g. q_proj,v_proj or "
                               "all-linear)", model_type);
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--lora: the model file has no model_type to take PEFT's default "
                           "target modules from; name them with --lora-targets (e.g. "
                           "q_proj,v_proj or all-linear)");
    }
    struct targets t;
    if (parse_targets(list, &t, err) != 0)
        return -1;
    struct pass ps = {.g = g, .err = err, .o = o,
                      .scaling = o->rslora ? o->alpha / sqrt((double)o->r) : o->alpha / (double)o->r};
    if (find_ops(&ps) != 0)
        return -1;
    struct plan *plans = calloc(g->nnodes ? g->nnodes : 1, sizeof *plans);
    if (!plans)
        return nomem(err);
    uint32_t nadapt;
    uint64_t extra;
    int rc = select_targets(&ps, &t, list, amp, plans, &nadapt, &extra);
    if (rc == 0) {
        for (uint32_t i = 0; i < g->nnodes; i++)
            out->bnb_modules += plans[i].k && plans[i].bnb;
        rc = rebuild(&ps, plans, extra);
    }
    free(plans);
    if (rc != 0)
        return -1;
    out->scaling = ps.scaling;
    out->modules = nadapt;
    if (t.all_linear) {
        snprintf(out->targets, sizeof out->targets, "all-linear");
    } else {
        size_t at = 0;
        for (int i = 0; i < t.n && at < sizeof out->targets; i++)
            at += (size_t)snprintf(out->targets + at, sizeof out->targets - at, "%s%.*s",
                                   i ? ", " : "", (int)t.len[i], t.name[i]);
    }
    return 0;
}
