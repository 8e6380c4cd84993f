/* safetensors_check.c - a checkpoint's tensors against the model its
 * config describes (safetensors.h: memest_ckpt_check).
 *
 * The model is built as the config gives it with the command's --set (on
 * one GPU), its quantization_config applied (quantize.h), and shape
 * inference run once for its parameters and buffers. What the checkpoint must hold, as
 * transformers' save_pretrained writes the state_dict (v4.48.0
 * modeling_utils.py; tied parameters saved once, non-persistent buffers
 * not at all):
 *   - every parameter, named "<module>.<parameter>" as the template names
 *     the module, with its shape; one tied to another may be absent;
 *   - a buffer may be present (a persistent one: its element count is
 *     checked) or absent (rotary inv_freq, persistent=False);
 *   - a quantised linear layer as its library saves it, each tensor with
 *     the shape and element size memest lays out (quant.h): GPTQ's and
 *     AWQ's qweight, qzeros, scales (g_idx, bias) buffers (AutoGPTQ
 *     qlinear_cuda.py, AutoAWQ gemm.py); bitsandbytes 4-bit's weight and
 *     its QuantState.as_dict(packed=True) (bitsandbytes 0.49.2
 *     functional.py: absmax, quant_map, nested_absmax, nested_quant_map,
 *     and quant_state.bitsandbytes__<type>, the packed rest, nested_offset
 *     among it); bitsandbytes 8-bit's weight, SCB and weight_format
 *     (nn/modules.py Linear8bitLt._save_to_state_dict); MXFP4's
 *     (Mxfp4GptOssExperts) blocks and scales, its bias a parameter;
 *   - the experts a template writes one by one ("experts.<e>.gate_up_proj"),
 *     which transformers' fused experts modules keep as one tensor [E, ...]
 *     per projection: a checkpoint tensor stacking them (fused_names).
 * A template's buffer and parameter nodes (op module_state) are named as
 * their tensor; the linear layers its hf_config.checkpoint.transposed names
 * (transformers' Conv1D: GPT-2's c_attn, c_proj, c_fc; GptOssExperts) store
 * their weight transposed, [in, out].
 * A checkpoint tensor that is none of these is an error, but for an old
 * checkpoint's rotary inv_freq, which transformers no longer loads. A
 * checkpoint of the base model (LlamaModel: "layers.0...") has the
 * template's first name component ("model.") added, as from_pretrained
 * adds base_model_prefix. */
#include "memest/safetensors.h"

#include <cjson/cJSON.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memest/checked.h"
#include "memest/format.h"
#include "memest/model.h"
#include "memest/ops.h"
#include "memest/quantize.h"
#include "memest/run.h"
#include "memest/strmap.h"
#include "memest/suggest.h"

#include "safetensors_internal.h"

enum want_kind {
    W_PARAM,    /* a parameter: must be present, with its shape */
    W_TIED,     /* a parameter tied to another: may be absent */
    W_BUFFER,   /* a buffer: may be absent; its element count */
    W_QUANT,    /* a tensor of a quantised layer: must be present, shape and element size */
    W_EXTRA,    /* a library's record (bnb's packed quant_state): may be absent, any shape */
};

struct want {
    const char *name;
    uint8_t kind;
    int ndim;
    int64_t size[MEMEST_MAX_DIMS];
    uint64_t numel;
    unsigned bits;     /* W_QUANT: bits per element */
    bool seen;
};

struct checker {
    struct memest_ckpt *c;
    const struct memest_model *m;
    const struct memest_override *ov;
    int nov;
    struct memest_error *err;
    struct memest_graph g;
    struct memest_run r;
    enum memest_wformat format;
    const cJSON *transposed;      /* the template's hf_config.checkpoint.transposed */
    struct want *w;
    size_t n, cap;
    struct memest_strmap map;     /* want name -> index */
    struct memest_strmap names;   /* checkpoint tensor name -> index */
    struct memest_arena a;        /* the names */
};

static int nomem(struct checker *K)
{
    return memest_errf(K->err, MEMEST_ERR_NOMEM, NULL, "out of memory");
}

#define bad(K, ...) mb_st_fail((K)->err, __VA_ARGS__)

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* "BF16 1.50 GiB, F8_E4M3 6.00 GiB": the checkpoint's bytes by dtype. */
static const char *by_dtype(const struct memest_ckpt *c, char *buf, size_t n)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int d = 0; d < MEMEST_CK_COUNT && pos < n; d++) {
        if (!c->dtype_bytes[d])
            continue;
        char b[32];
        int w = snprintf(buf + pos, n - pos, "%s%s %s", pos ? ", " : "",
                         memest_ckpt_dtype_name((enum memest_ckpt_dtype)d),
                         memest_fmt_bytes(c->dtype_bytes[d], b, sizeof b));
        if (w < 0)
            break;
        pos += (size_t)w;
    }
    return buf;
}

/* The checkpoint's tensor called `name`, or NULL (K->names, made first). */
static const struct memest_ckpt_tensor *find_tensor(const struct checker *K, const char *name)
{
    int64_t i;
    return memest_strmap_get(&K->names, name, strlen(name), &i) ? &K->c->t[i] : NULL;
}

/* The weights of a format memest does not match: FP8 (F8_E4M3 or F8_E5M2,
 * with weight_scale or weight_scale_inv) unless the config's
 * quantization_config is FP8's (FP8Linear's weight and weight_scale_inv are
 * then the layout's, matched as the others are), MXFP4 (gpt-oss: *_blocks
 * and *_scales, both U8) unless it is MXFP4's (Mxfp4GptOssExperts' layout,
 * stacked over the experts), and the microscaling and sub-byte float types. */
static int unmodelled(struct checker *K)
{
    const struct memest_ckpt *c = K->c;
    for (uint64_t i = 0; i < c->ntensors; i++) {
        const struct memest_ckpt_tensor *t = &c->t[i];
        const char *what = NULL, *with = "";
        char sib[512];
        if ((t->dtype == MEMEST_CK_F8_E4M3 || t->dtype == MEMEST_CK_F8_E5M2) &&
            K->format == MEMEST_WF_FP8) {
            continue;   /* FP8Linear's weights: the layout's, matched below */
        } else if (t->dtype == MEMEST_CK_F8_E4M3 || t->dtype == MEMEST_CK_F8_E5M2) {
            what = "FP8";
            size_t len = strlen(t->name);
            if (ends_with(t->name, ".weight") && len - 7 < 400) {
                snprintf(sib, sizeof sib, "%.*s.weight_scale_inv", (int)(len - 7), t->name);
                const char *s = find_tensor(K, sib) ? ", with weight_scale_inv" : "";
                snprintf(sib, sizeof sib, "%.*s.weight_scale", (int)(len - 7), t->name);
                with = find_tensor(K, sib) ? ", with weight_scale" : s;
            }
        } else if (t->dtype == MEMEST_CK_F8_E8M0 || t->dtype == MEMEST_CK_F4 ||
                   t->dtype == MEMEST_CK_F6_E2M3 || t->dtype == MEMEST_CK_F6_E3M2) {
            what = "microscaling or sub-byte float";
        } else if (t->dtype == MEMEST_CK_U8 && ends_with(t->name, "_blocks") &&
                   strlen(t->name) < 400 && K->format != MEMEST_WF_MXFP4) {
            snprintf(sib, sizeof sib, "%.*s_scales", (int)(strlen(t->name) - 7), t->name);
            const struct memest_ckpt_tensor *s = find_tensor(K, sib);
            if (s && s->dtype == MEMEST_CK_U8)
                what = "MXFP4", with = ", with its _scales";
        }
        if (what) {
            /* FP8, MXFP4: modelled from a config that says so; the others: not matched */
            char b[32], list[200], why[400];
            bool fp8 = strcmp(what, "FP8") == 0;
            if (fp8 || strcmp(what, "MXFP4") == 0)
                snprintf(why, sizeof why, ", but %s has no quantization_config of quant_method "
                         "\"%s\" (memest takes %s layout from it;", K->m->file,
                         fp8 ? "fp8" : "mxfp4", fp8 ? "FP8Linear's" : "Mxfp4GptOssExperts'");
            else
                snprintf(why, sizeof why, ": memest does not match %s checkpoints' headers yet "
                         "(give the folder's config.json itself;", what);
            return bad(K, c->files[t->file], t->name, MEMEST_ERR_SCHEMA,
                       "%s weights (%s%s)%s this checkpoint holds %s: %s)", what,
                       memest_ckpt_dtype_name((enum memest_ckpt_dtype)t->dtype), with, why,
                       memest_fmt_bytes(c->bytes, b, sizeof b), by_dtype(c, list, sizeof list));
        }
    }
    return 0;
}

/* A quantised layer's tensors in a checkpoint whose config has no
 * quantization_config of that method. */
static int format_agrees(struct checker *K)
{
    static const struct {
        const char *suffix, *what;
        enum memest_wformat f, g;   /* the formats that save it */
    } marks[] = {
        {".qweight", "a GPTQ or AWQ tensor", MEMEST_WF_GPTQ4, MEMEST_WF_AWQ4},
        {".weight.quant_state.bitsandbytes__nf4", "a bitsandbytes 4-bit (nf4) tensor",
         MEMEST_WF_NF4, MEMEST_WF_NF4},
        {".weight.quant_state.bitsandbytes__fp4", "a bitsandbytes 4-bit (fp4) tensor",
         MEMEST_WF_FP4, MEMEST_WF_FP4},
        {".SCB", "a bitsandbytes 8-bit tensor", MEMEST_WF_INT8, MEMEST_WF_INT8},
    };
    const struct memest_ckpt *c = K->c;
    for (uint64_t i = 0; i < c->ntensors; i++)
        for (size_t k = 0; k < sizeof marks / sizeof *marks; k++)
            if (ends_with(c->t[i].name, marks[k].suffix) && K->format != marks[k].f &&
                K->format != marks[k].g)
                return bad(K, c->files[c->t[i].file], c->t[i].name, MEMEST_ERR_SCHEMA,
                           "%s, but %s %s", marks[k].what, K->m->file,
                           K->format == MEMEST_WF_DENSE
                               ? "has no quantization_config (memest takes the layout's "
                                 "settings from it)"
                               : "quantises with another method or type");
    return 0;
}

static int add_want(struct checker *K, const char *node, const char *name, enum want_kind kind,
                    int ndim, const int64_t *size, uint64_t numel, unsigned bits)
{
    const char *full = name[0] ? memest_arena_concat(&K->a, node, ".", name, (char *)NULL)
                               : memest_arena_strdup(&K->a, node);
    if (!full)
        return nomem(K);
    int64_t was;
    if (memest_strmap_get(&K->map, full, strlen(full), &was))
        return 0;   /* two nodes, one tensor: the first one's */
    if (K->n == K->cap) {
        size_t cap = K->cap ? K->cap * 2 : 256;
        void *p = realloc(K->w, cap * sizeof *K->w);
        if (!p)
            return nomem(K);
        K->w = p;
        K->cap = cap;
    }
    struct want *w = &K->w[K->n];
    *w = (struct want){.name = full, .kind = (uint8_t)kind, .ndim = ndim, .numel = numel,
                       .bits = bits};
    for (int d = 0; d < ndim && d < MEMEST_MAX_DIMS; d++)
        w->size[d] = size[d];
    if (memest_strmap_put(&K->map, full, strlen(full), (int64_t)K->n) != 0)
        return nomem(K);
    K->n++;
    return 0;
}

static bool node_has(const struct checker *K, uint32_t n, const char *name)
{
    const struct memest_nodeinfo *ni = &K->r.nodes[n];
    for (uint32_t p = ni->param_first; p < ni->param_first + ni->nparam; p++)
        if (strcmp(K->r.params[p].name, name) == 0)
            return true;
    for (uint32_t b = ni->buffer_first; b < ni->buffer_first + ni->nbuffer; b++)
        if (strcmp(K->r.buffers[b].name, name) == 0)
            return true;
    return false;
}

/* The tensors a quantised linear layer is saved as; *buffers: GPTQ/AWQ
 * (the layout is the node's buffers, its bias among them). */
static int want_quant(struct checker *K, uint32_t n, uint64_t *model_bytes, bool *buffers)
{
    const struct memest_node *nd = &K->g.nodes[n];
    enum memest_wformat f = (enum memest_wformat)nd->wformat;
    const struct memest_shape *in = &memest_run_value(&K->r, nd->in[0])->shape;
    const struct memest_shape *out = &memest_run_value(&K->r, (struct memest_ref){n, 0})->shape;
    struct memest_quant_layout l;
    char why[256];
    if (memest_quant_layout(f, &K->g.quant, out->size[out->ndim - 1], in->size[in->ndim - 1],
                            node_has(K, n, "bias"), &l, why, sizeof why) != 0)
        return memest_errf(K->err, MEMEST_ERR_INTERNAL, NULL, "%s: %s", nd->name, why);
    *buffers = l.buffers;
    for (int i = 0; i < l.n; i++) {
        const struct memest_quant_tensor *t = &l.t[i];
        if (strcmp(t->name, "weight.nested_offset") == 0)
            continue;   /* in the packed quant_state */
        const char *name = f == MEMEST_WF_INT8 && strcmp(t->name, "weight.SCB") == 0 ? "SCB"
                                                                                      : t->name;
        if (!l.buffers && strcmp(t->name, "bias") == 0) {
            /* a parameter (MXFP4's float32 bias): loading copies the checkpoint's
             * tensor into it, of any floating type; its shape is checked */
            uint64_t numel = (uint64_t)t->size[0];
            if (add_want(K, nd->name, name, W_PARAM, t->ndim, t->size, numel, 0) != 0)
                return -1;
            continue;
        }
        *model_bytes = memest_sat_add(*model_bytes, memest_quant_tensor_bytes(t));
        if (add_want(K, nd->name, name, W_QUANT, t->ndim, t->size, 0,
                     memest_dtype_size(t->dtype) * 8) != 0)
            return -1;
    }
    const char *extra = f == MEMEST_WF_NF4 ? "weight.quant_state.bitsandbytes__nf4"
                        : f == MEMEST_WF_FP4 ? "weight.quant_state.bitsandbytes__fp4"
                        : f == MEMEST_WF_INT8 ? "weight_format" : NULL;
    return extra ? add_want(K, nd->name, extra, W_EXTRA, 0, NULL, 0, 0) : 0;
}

/* A linear layer whose weight the checkpoint stores [in, out] where the
 * template writes [out, in]: a module the template's
 * hf_config.checkpoint.transposed names (fnmatch patterns, '*' matching
 * dots too): transformers' Conv1D (GPT-2's c_attn, c_proj, c_fc: weight
 * [nx, nf]), GptOssExperts' gate_up_proj [E, H, 2I] (x @ W). */
static bool transposed(const struct checker *K, const char *node)
{
    for (const cJSON *p = K->transposed ? K->transposed->child : NULL; p; p = p->next)
        if (cJSON_IsString(p) && fnmatch(p->valuestring, node, 0) == 0)
            return true;
    return false;
}

/* A parameter of node n as the checkpoint holds it. */
static int want_param(struct checker *K, uint32_t n, const struct memest_param *pr)
{
    const struct memest_node *nd = &K->g.nodes[n];
    int64_t size[MEMEST_MAX_DIMS];
    for (int d = 0; d < pr->shape.ndim; d++)
        size[d] = pr->shape.size[d];
    if (pr->shape.ndim == 2 && strcmp(pr->name, "weight") == 0 && transposed(K, nd->name)) {
        size[0] = pr->shape.size[1];
        size[1] = pr->shape.size[0];
    }
    /* a bare nn.Parameter node: its name is the parameter's */
    return add_want(K, nd->name, nd->op->module_state ? "" : pr->name,
                    pr->tied_to >= 0 ? W_TIED : W_PARAM, pr->shape.ndim, size, pr->numel, 0);
}

/* What the checkpoint may hold: every parameter and buffer of the run, a
 * quantised layer's tensors as its library saves them. */
static int collect(struct checker *K, uint64_t *model_bytes)
{
    for (uint32_t n = 0; n < K->g.nnodes; n++) {
        const struct memest_node *nd = &K->g.nodes[n];
        const struct memest_nodeinfo *ni = &K->r.nodes[n];
        bool quant = nd->wformat != MEMEST_WF_DENSE, buffers = false;
        if (quant && want_quant(K, n, model_bytes, &buffers) != 0)
            return -1;
        for (uint32_t p = ni->param_first; p < ni->param_first + ni->nparam; p++)
            if (!(quant && strcmp(K->r.params[p].name, "weight") == 0) &&
                want_param(K, n, &K->r.params[p]) != 0)
                return -1;
        /* a buffer node (register_buffer) is named as its buffer */
        for (uint32_t b = ni->buffer_first; !buffers && b < ni->buffer_first + ni->nbuffer; b++)
            if (add_want(K, nd->name, nd->op->module_state ? "" : K->r.buffers[b].name, W_BUFFER,
                         0, NULL, K->r.buffers[b].numel, 0) != 0)
                return -1;
    }
    return 0;
}

/* A checkpoint of the base model: its names lack the template's first
 * component ("model."), which the names of most parameters have. */
static const char *base_prefix(struct checker *K)
{
    const char *first = NULL;
    for (size_t i = 0; i < K->n && !first; i++)
        if (K->w[i].kind == W_PARAM && strchr(K->w[i].name, '.'))
            first = K->w[i].name;
    if (!first)
        return NULL;
    size_t len = (size_t)(strchr(first, '.') - first) + 1;
    if (len >= sizeof K->c->match.prefix)
        return NULL;
    for (uint64_t i = 0; i < K->c->ntensors; i++)
        if (strncmp(K->c->t[i].name, first, len) == 0)
            return NULL;
    memcpy(K->c->match.prefix, first, len);
    K->c->match.prefix[len] = '\0';
    return K->c->match.prefix;
}

static const char *model_label(const struct checker *K)
{
    return K->m->arch ? K->m->arch : K->m->file;
}

/* A checkpoint tensor no want has: transformers does not load an old
 * checkpoint's per-layer rotary_emb.inv_freq; anything else is an error. */
static int unknown(struct checker *K, const struct memest_ckpt_tensor *t)
{
    if (ends_with(t->name, ".inv_freq") || strcmp(t->name, "inv_freq") == 0) {
        K->c->match.ignored++;
        return 0;
    }
    const char **cands = malloc((K->n + 1) * sizeof *cands);
    if (!cands)
        return nomem(K);
    int nc = 0;
    for (size_t i = 0; i < K->n && nc < 100000; i++)
        cands[nc++] = K->w[i].name;
    char dym[sizeof K->err->msg];
    memest_suggest_clause(memest_suggest(t->name, cands, nc), dym, sizeof dym);
    free(cands);
    return bad(K, K->c->files[t->file], t->name, MEMEST_ERR_SCHEMA, "not a parameter or buffer "
               "of the model of %s%s", model_label(K), dym);
}

/* One checkpoint tensor against what the model gives it. */
static int compare(struct checker *K, const struct memest_ckpt_tensor *t, struct want *w)
{
    const char *file = K->c->files[t->file];
    char a[160], b[160];
    bool same = t->ndim == w->ndim;
    for (int d = 0; same && d < t->ndim; d++)
        same = t->shape[d] == w->size[d];
    uint64_t numel = 1;
    for (int d = 0; d < t->ndim; d++)
        numel = memest_sat_mul(numel, (uint64_t)t->shape[d]);
    switch ((enum want_kind)w->kind) {
    case W_EXTRA:
        return 0;
    case W_BUFFER:
        if (numel != w->numel)
            return bad(K, file, t->name, MEMEST_ERR_SCHEMA, "shape %s (%llu elements) in the "
                       "checkpoint, the template's buffer has %llu elements",
                       mb_st_dims(t->ndim, t->shape, a, sizeof a), (unsigned long long)numel,
                       (unsigned long long)w->numel);
        return 0;
    case W_PARAM:
    case W_TIED:
    case W_QUANT:
        break;
    }
    if (!same)
        return bad(K, file, t->name, MEMEST_ERR_SCHEMA, "shape %s in the checkpoint, %s gives %s",
                   mb_st_dims(t->ndim, t->shape, a, sizeof a),
                   w->kind == W_QUANT ? "memest's layout of the quantised layer" : "the template",
                   mb_st_dims(w->ndim, w->size, b, sizeof b));
    unsigned bits = memest_ckpt_dtype_bits((enum memest_ckpt_dtype)t->dtype);
    if (w->kind == W_QUANT && bits != w->bits)
        return bad(K, file, t->name, MEMEST_ERR_SCHEMA, "%s (%u bits) in the checkpoint, "
                   "memest's layout of the quantised layer stores %u bits an element",
                   memest_ckpt_dtype_name((enum memest_ckpt_dtype)t->dtype), bits, w->bits);
    if (w->kind == W_QUANT)
        K->c->match.quant_bytes = memest_sat_add(K->c->match.quant_bytes, t->bytes);
    return 0;
}

/* How a module that fuses the experts names its parameters, each one
 * tensor [E, ...] over them, for the template's per-expert "<linear>.<tensor>":
 * by the linear layer alone (its weight) or joined to the tensor's name by
 * '_' (transformers' GptOssExperts: gate_up_proj, gate_up_proj_bias;
 * Mxfp4GptOssExperts: gate_up_proj_blocks, gate_up_proj_scales). The first
 * entry: the template's own name ("experts.gate_up_proj.weight"). */
static const struct {
    const char *ckpt, *model;
} fused_names[] = {
    {NULL, NULL}, {"", ".weight"}, {"_bias", ".bias"}, {"_blocks", ".blocks"},
    {"_scales", ".scales"},
};

#define STACK_NAME 1024

/* The template's name of expert i of a stacked tensor: head, i, tail. */
static bool stack_want(const struct checker *K, const char *head, uint64_t i, const char *tail,
                       int64_t *k)
{
    char buf[STACK_NAME + 32];
    int n = snprintf(buf, sizeof buf, "%s%llu%s", head, (unsigned long long)i, tail);
    return n > 0 && (size_t)n < sizeof buf && memest_strmap_get(&K->map, buf, (size_t)n, k);
}

/* A checkpoint tensor "A.R" that stacks, along a first dimension of E, the
 * tensors the template writes per expert as "A.<i>.R'" (R' is R, or R's
 * fused name of fused_names): whether the template has "A.0.R'"; *head gets
 * "A.", *tail ".R'" (in K->a). */
static int stack_of(struct checker *K, const char *name, const char **head, const char **tail,
                    bool *found)
{
    size_t len = strlen(name);
    *found = false;
    for (size_t p = len; p-- > 0 && len < STACK_NAME - 16;) {
        if (name[p] != '.')
            continue;
        const char *b = name + p + 1;
        size_t bl = len - p - 1;
        for (size_t f = 0; f < sizeof fused_names / sizeof *fused_names; f++) {
            char t[STACK_NAME];
            if (!fused_names[f].ckpt) {
                snprintf(t, sizeof t, ".%s", b);
            } else {
                size_t cl = strlen(fused_names[f].ckpt);
                if (strchr(b, '.') || bl <= cl || !ends_with(b, fused_names[f].ckpt))
                    continue;
                snprintf(t, sizeof t, ".%.*s%s", (int)(bl - cl), b, fused_names[f].model);
            }
            char h[STACK_NAME];
            snprintf(h, sizeof h, "%.*s.", (int)p, name);
            int64_t k;
            if (!stack_want(K, h, 0, t, &k))
                continue;
            if (!(*head = memest_arena_strdup(&K->a, h)) ||
                !(*tail = memest_arena_strdup(&K->a, t)))
                return nomem(K);
            *found = true;
            return 0;
        }
    }
    return 0;
}

/* Checkpoint tensor t stacking the template's head<i>tail, i from 0 to
 * E - 1: E as many as the template has, each of t's shape less its first
 * dimension, each checked as its own tensor (its share of t's bytes). */
static int match_stacked(struct checker *K, const struct memest_ckpt_tensor *t, const char *head,
                         const char *tail)
{
    const char *file = K->c->files[t->file];
    char a[160], b[160], c[160];
    uint64_t n = 0;
    int64_t k;
    while (n < MEMEST_CKPT_MAX_TENSORS && stack_want(K, head, n, tail, &k))
        n++;
    if (t->ndim < 1 || (uint64_t)t->shape[0] != n)
        return bad(K, file, t->name, MEMEST_ERR_SCHEMA, "shape %s in the checkpoint stacks %lld "
                   "tensors along its first dimension, the template has %llu (%s{0..%llu}%s)",
                   mb_st_dims(t->ndim, t->shape, a, sizeof a),
                   t->ndim ? (long long)t->shape[0] : 0LL, (unsigned long long)n, head,
                   (unsigned long long)n - 1, tail);
    struct memest_ckpt_tensor one = *t;
    one.ndim = t->ndim - 1;
    for (int d = 0; d < one.ndim; d++)
        one.shape[d] = t->shape[d + 1];
    one.bytes = t->bytes / n;
    for (uint64_t i = 0; i < n; i++) {
        stack_want(K, head, i, tail, &k);
        struct want *w = &K->w[k];
        bool same = one.ndim == w->ndim;
        for (int d = 0; same && d < one.ndim; d++)
            same = one.shape[d] == w->size[d];
        if (!same && w->kind != W_BUFFER && w->kind != W_EXTRA)
            return bad(K, file, t->name, MEMEST_ERR_SCHEMA, "shape %s in the checkpoint stacks "
                       "%llu tensors of %s, %s gives %s (%s)",
                       mb_st_dims(t->ndim, t->shape, a, sizeof a), (unsigned long long)n,
                       mb_st_dims(one.ndim, one.shape, b, sizeof b),
                       w->kind == W_QUANT ? "memest's layout of the quantised layer"
                                          : "the template", mb_st_dims(w->ndim, w->size, c,
                                                                       sizeof c), w->name);
        if (w->seen)
            return bad(K, file, t->name, MEMEST_ERR_SCHEMA, "the same tensor of the model as "
                       "another of the checkpoint (%s)", w->name);
        if (compare(K, &one, w) != 0)
            return -1;
        w->seen = true;
    }
    K->c->match.stacked++;
    return 0;
}

static int match_all(struct checker *K)
{
    struct memest_ckpt *c = K->c;
    const char *prefix = base_prefix(K);
    for (uint64_t i = 0; i < c->ntensors; i++) {
        const struct memest_ckpt_tensor *t = &c->t[i];
        int64_t k;
        bool found = memest_strmap_get(&K->map, t->name, strlen(t->name), &k);
        if (!found && prefix) {
            const char *p = memest_arena_concat(&K->a, prefix, t->name, (char *)NULL);
            if (!p)
                return nomem(K);
            found = memest_strmap_get(&K->map, p, strlen(p), &k);
        }
        if (!found) {
            const char *head, *tail, *p = NULL;
            bool stack = false;
            if (stack_of(K, t->name, &head, &tail, &stack) != 0)
                return -1;
            if (!stack && prefix &&
                (!(p = memest_arena_concat(&K->a, prefix, t->name, (char *)NULL)) ||
                 stack_of(K, p, &head, &tail, &stack) != 0))
                return p ? -1 : nomem(K);
            if (stack ? match_stacked(K, t, head, tail) != 0 : unknown(K, t) != 0)
                return -1;
            c->match.matched += stack;
            continue;
        }
        struct want *w = &K->w[k];
        if (w->seen)
            return bad(K, c->files[t->file], t->name, MEMEST_ERR_SCHEMA, "the same tensor of "
                       "the model as another of the checkpoint (%s)", w->name);
        if (compare(K, t, w) != 0)
            return -1;
        w->seen = true;
        c->match.matched++;
    }
    size_t missing = 0, first = 0;
    for (size_t i = 0; i < K->n; i++)
        if ((K->w[i].kind == W_PARAM || K->w[i].kind == W_QUANT) && !K->w[i].seen && !missing++)
            first = i;
    if (missing) {
        char s[160], more[64] = "";
        const struct want *w = &K->w[first];
        if (missing > 1)
            snprintf(more, sizeof more, " (and %zu more)", missing - 1);
        return bad(K, c->index ? c->index : c->files[0], w->name, MEMEST_ERR_SCHEMA,
                   "%s of shape %s is not in the checkpoint%s",
                   w->kind == W_QUANT ? "a tensor of the quantised layer" : "a parameter of the "
                   "model", mb_st_dims(w->ndim, w->size, s, sizeof s), more);
    }
    return 0;
}

static int check(struct checker *K)
{
    const struct memest_model *m = K->m;
    K->format = (enum memest_wformat)m->quant.format;
    const cJSON *hc = m->arch ? cJSON_GetObjectItemCaseSensitive(m->root, "hf_config") : NULL;
    K->transposed = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(hc, "checkpoint"), "transposed");
    for (uint64_t i = 0; i < K->c->ntensors; i++)
        if (memest_strmap_put(&K->names, K->c->t[i].name, strlen(K->c->t[i].name), (int64_t)i))
            return nomem(K);
    if (unmodelled(K) != 0 || format_agrees(K) != 0)
        return -1;
    enum memest_dtype dt = m->has_dtype ? m->dtype : MEMEST_F32;
    struct memest_run_opts ro = {.batch = 1, .dtype = dt, .no_grad = true};
    if (memest_model_build(m, K->ov, K->nov, &K->g, K->err) != 0)
        return -1;
    uint64_t model_bytes = 0;
    if (memest_quantize(&K->g, &m->quant, dt, NULL, K->err) != 0 ||
        memest_run_infer(&K->r, &K->g, &ro, K->err) != 0 || collect(K, &model_bytes) != 0 ||
        match_all(K) != 0)
        return -1;
    struct memest_ckpt_match *mt = &K->c->match;
    mt->format = (uint8_t)(memest_graph_quantized(&K->g, NULL) > 0 ? K->format : MEMEST_WF_DENSE);
    mt->quant_model_bytes = model_bytes;
    /* every tensor of the layout present with its shape and element size:
     * the same bytes, or memest's layout and its count disagree */
    if (mt->quant_bytes != model_bytes)
        return memest_errf(K->err, MEMEST_ERR_INTERNAL, NULL, "the quantised layers' tensors "
                           "hold %llu bytes in the checkpoint, %llu as memest lays them out",
                           (unsigned long long)mt->quant_bytes, (unsigned long long)model_bytes);
    mt->checked = true;
    return 0;
}

int memest_ckpt_check(struct memest_ckpt *c, const struct memest_model *m,
                      const struct memest_override *ov, int nov, struct memest_error *err)
{
    struct checker K = {.c = c, .m = m, .ov = ov, .nov = nov, .err = err};
    c->match = (struct memest_ckpt_match){0};
    int rc = check(&K);
    memest_run_free(&K.r);
    memest_graph_free(&K.g);
    memest_strmap_free(&K.map);
    memest_strmap_free(&K.names);
    free(K.w);
    memest_arena_free(&K.a);
    return rc;
}
