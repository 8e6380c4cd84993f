/* generate.c - text generation (generate.h): the prefill and a decode step
 * of transformers' generate() (v4.48: generation/utils.py _sample,
 * cache_utils.py DynamicCache / StaticCache / SlidingWindowCache /
 * HybridCache, models/llama/modeling_llama.py LlamaForCausalLM.forward),
 * simulated as no-grad forward passes with the plan of tensors the cache and
 * generate() add (sim.h: struct memest_gen_plan).
 *
 * Prefill, one forward over the C prompt tokens (run at seq_len = C):
 *   - DynamicCache.update() on an empty layer appends key_states and
 *     value_states themselves (`self.key_cache.append(key_states)`): the
 *     storages the attention node reads as k and v are kept (with a cache
 *     dtype other than theirs, a converted copy of C tokens is made instead);
 *   - StaticCache.__init__ (generate()'s _get_cache, before the forward)
 *     allocates torch.zeros([B, Hkv, max_cache_len, D]) for k and v of every
 *     layer, max_cache_len = C + N (SlidingWindowCache / HybridCache:
 *     min(sliding_window, C + N) on windowed layers); update() index_copy_'s
 *     into it, and attention reads the whole cache: repeat_kv copies of
 *     max_cache_len tokens (those of C tokens the graph already has);
 *   - the output head: `logits = self.lm_head(hidden_states[:, slice_indices,
 *     :])` with logits_to_keep = 1 (generate() sets it when the model takes
 *     it), no float() (only the loss upcasts): [B, 1, V] in the model's dtype
 *     (--all-logits: [B, C, V]). The graph's nodes from the head on are not
 *     run; then forward() returns (its hidden states go), and _sample takes
 *     `outputs.logits.clone()[:, -1, :].float()`: a clone of the logits and a
 *     float32 [B, V], and drops `outputs` at the end of the iteration.
 * Decode, the last step (run at seq_len = 1), the cache holding C + N - 1
 * tokens before it and C + N after:
 *   - DynamicCache: `torch.cat([self.key_cache[i], key_states], dim=-2)`
 *     makes the new tensor while the old one is alive; the old goes when the
 *     list slot is rebound: old + new of one layer's keys, then values;
 *   - StaticCache: index_copy_ in place, nothing new;
 *   - attention over the whole cache: repeat_kv (transformers v4.48's
 *     sdpa_attention_forward and eager_attention_forward both repeat) makes
 *     [B, Hq, len, D] copies of k and v when Hq != Hkv;
 *   - the head and _sample's logits as in the prefill with one position.
 *   - a static cache's attention mask [B, 1, q, max_cache_len] (static_mask).
 * Not modelled: the eager kernel's [B, Hq, 1, len] scores in
 * decode, logits processors and sampling (greedy argmax: [B] int64). */
#include "memest/generate.h"

#include <stdlib.h>
#include <string.h>

#include "memest/checked.h"
#include "memest/cuda_overhead.h"
#include "memest/ops.h"
#include "memest/sim.h"

static const struct memest_value *in_value(const struct memest_run *r, uint32_t n, uint32_t i)
{
    return &r->values[r->ins[r->nodes[n].in_first + i].src];
}

static uint32_t in_storage(const struct memest_run *r, uint32_t n, uint32_t i)
{
    return in_value(r, n, i)->storage;
}

/* Whether node nd's attention keeps a key/value cache in generation: an
 * attention op's, unless it is neither causal nor masked (is_causal and
 * mask false: an encoder's bidirectional self-attention, a vision tower's
 * such as Gemma 3's SigLIP, which runs on the prompt's images only). */
static bool caches_kv(const struct memest_node *nd)
{
    if (!nd->op->kv_attention)
        return false;
    int causal = memest_op_arg_index(nd->op, "is_causal"), mask = memest_op_arg_index(nd->op, "mask");
    bool c = causal < 0 || (nd->args[causal].v && nd->args[causal].v[0]);
    bool m = mask >= 0 && nd->args[mask].v && nd->args[mask].v[0];
    return c || m;
}

int memest_gen_attention(const struct memest_run *r, struct memest_gen_attn **out, uint32_t *n,
                         struct memest_error *err)
{
    const struct memest_graph *g = r->g;
    *out = NULL;
    *n = 0;
    uint32_t count = 0;
    for (uint32_t k = 0; k < g->nnodes; k++)
        count += caches_kv(&g->nodes[k]);
    if (!count)
        return 0;
    struct memest_gen_attn *a = calloc(count, sizeof *a);
    if (!a)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    uint32_t m = 0;
    for (uint32_t k = 0; k < g->nnodes; k++) {
        const struct memest_node *nd = &g->nodes[k];
        if (!caches_kv(nd))
            continue;
        const struct memest_shape *q = &in_value(r, k, 0)->shape, *kk = &in_value(r, k, 1)->shape,
                                  *v = &in_value(r, k, 2)->shape;
        if (q->ndim != 4 || kk->ndim != 4 || v->ndim != 4) {
            free(a);
            return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                               "--generate: attention node \"%s\" has no [B, H, S, D] inputs: "
                               "its key/value cache is not known",
                               nd->name);
        }
        struct memest_gen_attn *x = &a[m++];
        x->node = k;
        x->batch = kk->size[0];
        x->q_heads = q->size[1];
        x->kv_heads = kk->size[1];
        x->k_dim = kk->size[3];
        x->v_dim = v->size[3];
        x->dtype = (enum memest_dtype)in_value(r, k, 1)->dtype;
        int w = nd->op->kv_window_arg ? memest_op_arg_index(nd->op, nd->op->kv_window_arg) : -1;
        x->window = w >= 0 && !nd->args[w].none && nd->args[w].v ? nd->args[w].v[0] : 0;
        int gqa = memest_op_arg_index(nd->op, "enable_gqa");
        bool native = gqa >= 0 && nd->args[gqa].v && nd->args[gqa].v[0];
        x->repeats = x->q_heads != x->kv_heads && !native;
    }
    *out = a;
    *n = m;
    return 0;
}

int64_t memest_gen_cache_len(const struct memest_gen_attn *a, uint8_t cache, int64_t tokens)
{
    if (cache == MEMEST_CACHE_STATIC && a->window > 0 && a->window < tokens)
        return a->window;
    return tokens;
}

/* The recurrent state of node k (an op with gen_state_elems, sim.h: the
 * Mamba mixers' conv and SSM states) for the whole batch, in its input's
 * dtype; 0 for other nodes. */
static uint64_t state_of(const struct memest_run *r, uint32_t k)
{
    const struct memest_node *nd = &r->g->nodes[k];
    if (!nd->op->gen_state_elems)
        return 0;
    const struct memest_value *x = in_value(r, k, 0);
    uint64_t b = memest_sat_mul(nd->op->gen_state_elems(nd->args), (uint64_t)x->shape.size[0]);
    return memest_sat_mul(b, memest_dtype_size((enum memest_dtype)x->dtype));
}

/* Bytes of `tokens` tokens of keys (or values: dim) of node a. */
static uint64_t kv_part(const struct memest_gen_attn *a, int64_t heads, int64_t dim, int64_t tokens,
                        enum memest_dtype dt)
{
    uint64_t b = memest_sat_mul((uint64_t)a->batch, (uint64_t)heads);
    b = memest_sat_mul(b, (uint64_t)(tokens > 0 ? tokens : 0));
    b = memest_sat_mul(b, (uint64_t)dim);
    return memest_sat_mul(b, memest_dtype_size(dt));
}

/* ---- the plan under construction ---- */

struct plan {
    struct memest_gen_event *ev;
    uint32_t n, cap, slots;
    bool nomem;
};

static void add(struct plan *p, uint8_t at, uint8_t op, uint32_t node, uint32_t slot, uint64_t bytes)
{
    if (p->nomem)
        return;
    if (p->n == p->cap) {
        uint32_t c = p->cap ? p->cap * 2 : 64;
        struct memest_gen_event *e = realloc(p->ev, sizeof *e * c);
        if (!e) {
            p->nomem = true;
            return;
        }
        p->ev = e;
        p->cap = c;
    }
    p->ev[p->n++] = (struct memest_gen_event){at, op, MEMEST_CAT_SAVED, node, slot, bytes};
    if (op != MEMEST_GEN_RETURN && slot >= p->slots)
        p->slots = slot + 1;
}

/* The recurrent states, made before the forward (the cache's __init__) and
 * updated in place, into slots from `slot` on (p NULL: none): one per
 * stateful node. Their bytes; *layers counts the nodes. */
static uint64_t states(struct plan *p, const struct memest_run *r, uint32_t slot, uint32_t *layers)
{
    uint64_t total = 0;
    uint32_t n = 0;
    for (uint32_t k = 0; k < r->g->nnodes; k++) {
        uint64_t b = state_of(r, k);
        if (!b)
            continue;
        if (p)
            add(p, MEMEST_GEN_SETUP, MEMEST_GEN_ALLOC, 0, slot + n, b);
        n++;
        total = memest_sat_add(total, b);
    }
    if (layers)
        *layers = n;
    return total;
}

/* A transient (category transient) alloc at PRE and its free at POST. */
static void transient(struct plan *p, uint32_t node, uint32_t slot, uint64_t bytes)
{
    if (!bytes)
        return;
    add(p, MEMEST_GEN_PRE, MEMEST_GEN_ALLOC, node, slot, bytes);
    if (!p->nomem)
        p->ev[p->n - 1].cat = MEMEST_CAT_TRANSIENT;
}

/* A static cache's 4-d mask: LlamaModel._update_causal_mask builds it for
 * every forward over the whole cache (_ignore_causal_mask_sdpa is skipped
 * with a static cache): _prepare_4d_causal_attention_mask_with_cache_position
 * makes [q, T] in the dtype, expands it to [B, 1, q, T] and, as generate()
 * passes an attention_mask, clone()s it (its own temporaries, [q, T] and the
 * padding comparison, go at once). It lives until forward() returns. Made
 * at the first attention node's place (after embed_tokens, as the model
 * makes it), into slot `slot`; freed by the tail. Returns the slot, or
 * UINT32_MAX with a dynamic cache. */
static uint32_t static_mask(struct plan *p, const struct memest_gen_attn *a, uint32_t na,
                            const struct memest_gen_cfg *cfg, int64_t q_len, int64_t tokens,
                            uint32_t slot)
{
    if (cfg->cache != MEMEST_CACHE_STATIC || !na)
        return UINT32_MAX;
    int64_t len = 0;
    for (uint32_t i = 0; i < na; i++) {
        int64_t l = memest_gen_cache_len(&a[i], cfg->cache, tokens);
        len = l > len ? l : len;
    }
    uint64_t b = memest_sat_mul(memest_sat_mul((uint64_t)a[0].batch, (uint64_t)q_len),
                                memest_sat_mul((uint64_t)len, memest_dtype_size(a[0].dtype)));
    transient(p, a[0].node, slot, b);
    return slot;
}

/* The output head (memest_graph_output_head) when it comes after every
 * attention node: the node the forward stops at; else nnodes. */
static uint32_t head_node(const struct memest_run *r, const struct memest_gen_attn *a, uint32_t na)
{
    int64_t h = memest_graph_output_head(r->g);
    if (h < 0 || (na && (uint32_t)h <= a[na - 1].node))
        return r->g->nnodes;
    return (uint32_t)h;
}

/* The logits the head makes for `keep` of its `seq` positions, and the
 * tail events: lm_head, forward() returns, clone, float, drops. */
static uint64_t tail(struct plan *p, const struct memest_run *r, uint32_t head, int64_t seq,
                     int64_t keep, uint32_t slot, uint32_t mask)
{
    if (head >= r->g->nnodes) {
        add(p, MEMEST_GEN_TAIL, MEMEST_GEN_RETURN, 0, 0, 0);
        if (mask != UINT32_MAX)
            add(p, MEMEST_GEN_TAIL, MEMEST_GEN_FREE, 0, mask, 0);
        return 0;
    }
    const struct memest_value *o = &r->values[r->nodes[head].out_first];
    uint64_t numel;
    if (!memest_shape_numel(&o->shape, &numel) || o->shape.ndim < 1)
        numel = 0;
    uint64_t vocab = o->shape.ndim ? (uint64_t)o->shape.size[o->shape.ndim - 1] : 1;
    uint64_t rows = vocab ? numel / vocab : 0;              /* B * seq */
    uint64_t batch = seq > 0 ? rows / (uint64_t)seq : rows;
    uint64_t esz = memest_dtype_size((enum memest_dtype)o->dtype);
    uint64_t logits = memest_sat_mul(memest_sat_mul(batch, (uint64_t)keep), memest_sat_mul(vocab, esz));
    uint64_t scores = memest_sat_mul(memest_sat_mul(batch, vocab), 4);
    add(p, MEMEST_GEN_TAIL, MEMEST_GEN_ALLOC, 0, slot, logits);          /* outputs.logits */
    add(p, MEMEST_GEN_TAIL, MEMEST_GEN_RETURN, 0, 0, 0);
    if (mask != UINT32_MAX)
        add(p, MEMEST_GEN_TAIL, MEMEST_GEN_FREE, 0, mask, 0);
    add(p, MEMEST_GEN_TAIL, MEMEST_GEN_ALLOC, 0, slot + 1, logits);      /* .clone() */
    add(p, MEMEST_GEN_TAIL, MEMEST_GEN_ALLOC, 0, slot + 2, scores);      /* [:, -1, :].float() */
    add(p, MEMEST_GEN_TAIL, MEMEST_GEN_FREE, 0, slot + 1, 0);
    add(p, MEMEST_GEN_TAIL, MEMEST_GEN_FREE, 0, slot, 0);                /* del outputs */
    add(p, MEMEST_GEN_TAIL, MEMEST_GEN_FREE, 0, slot + 2, 0);
    for (uint32_t e = p->nomem ? 0 : p->n - (mask != UINT32_MAX ? 8 : 7); !p->nomem && e < p->n; e++)
        p->ev[e].cat = MEMEST_CAT_TRANSIENT;
    return logits;
}

static double macs_before(const struct memest_run *r, uint32_t stop)
{
    double m = 0;
    for (uint32_t n = 0; n < stop && n < r->g->nnodes; n++)
        m += r->nodes[n].fwd_macs;
    return m;
}

/* Parameter bytes the matrix products of r read: each storage once. */
static int weight_bytes(const struct memest_run *r, uint64_t *out, struct memest_error *err)
{
    uint8_t *seen = calloc(r->nstorages ? r->nstorages : 1, 1);
    if (!seen)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    uint64_t b = 0;
    for (uint32_t n = 0; n < r->g->nnodes; n++) {
        const struct memest_nodeinfo *ni = &r->nodes[n];
        if (ni->fwd_macs <= 0)
            continue;
        for (uint32_t p = ni->param_first; p < ni->param_first + ni->nparam; p++) {
            int64_t t = r->params[p].tied_to;
            uint32_t s = r->params[t >= 0 ? (uint32_t)t : p].storage;
            if (!seen[s]) {
                seen[s] = 1;
                b = memest_sat_add(b, r->storages[s].bytes);
            }
        }
    }
    free(seen);
    *out = b;
    return 0;
}

static int simulate(const struct memest_run *r, const struct memest_step_cfg *step, struct plan *p,
                    const uint8_t *keep, uint32_t stop, struct memest_peak *pk,
                    struct memest_error *err)
{
    if (p->nomem)
        return memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
    struct memest_gen_plan plan = {keep, stop, p->ev, p->n, p->slots};
    struct memest_peak_opts o = {.inference = true, .gen = &plan, .step = step};
    return memest_sim_step(r, &o, NULL, pk, err);
}

static enum memest_dtype kv_type(const struct memest_gen_cfg *cfg, const struct memest_gen_attn *a)
{
    return cfg->kv_dtype_set ? cfg->kv_dtype : a->dtype;
}

/* The cache's bytes at `tokens` tokens, the whole batch. */
static uint64_t cache_bytes(const struct memest_gen_attn *a, uint32_t na,
                            const struct memest_gen_cfg *cfg, int64_t tokens)
{
    uint64_t b = 0;
    for (uint32_t i = 0; i < na; i++) {
        int64_t len = memest_gen_cache_len(&a[i], cfg->cache, tokens);
        b = memest_sat_add(b, kv_part(&a[i], a[i].kv_heads, a[i].k_dim, len, kv_type(cfg, &a[i])));
        b = memest_sat_add(b, kv_part(&a[i], a[i].kv_heads, a[i].v_dim, len, kv_type(cfg, &a[i])));
    }
    return b;
}

/* Extra attention MACs over a cache of len tokens besides the `seq` the
 * graph's node computed with (flop_counter's sdpa_flop: B*Hq*L*S*(D+Dv)). */
static double attn_extra_macs(const struct memest_gen_attn *a, uint32_t na, int64_t q_len,
                              const struct memest_gen_cfg *cfg, int64_t tokens, int64_t seq)
{
    double m = 0;
    for (uint32_t i = 0; i < na; i++) {
        int64_t len = memest_gen_cache_len(&a[i], cfg->cache, tokens);
        if (len > seq)
            m += (double)a[i].batch * (double)a[i].q_heads * (double)q_len * (double)(len - seq) *
                 (double)(a[i].k_dim + a[i].v_dim);
    }
    return m;
}

static int prefill(const struct memest_run *r, const struct memest_step_cfg *step,
                   const struct memest_gen_cfg *cfg, bool profile, struct memest_gen_step *out,
                   struct memest_error *err)
{
    struct memest_gen_attn *a;
    uint32_t na;
    if (memest_gen_attention(r, &a, &na, err) != 0)
        return -1;
    int64_t C = cfg->context, T = cfg->context + cfg->new_tokens;
    uint8_t *keep = calloc(r->nstorages ? r->nstorages : 1, 1);
    struct plan p = {0};
    int rc = -1;
    if (!keep) {
        memest_errf(err, MEMEST_ERR_NOMEM, NULL, "out of memory");
        goto end;
    }
    uint32_t stop = head_node(r, a, na);
    /* a static cache exists before the forward */
    for (uint32_t i = 0; !profile && cfg->cache == MEMEST_CACHE_STATIC && i < na; i++) {
        int64_t len = memest_gen_cache_len(&a[i], cfg->cache, T);
        add(&p, MEMEST_GEN_SETUP, MEMEST_GEN_ALLOC, 0, 4 * i,
            kv_part(&a[i], a[i].kv_heads, a[i].k_dim, len, kv_type(cfg, &a[i])));
        add(&p, MEMEST_GEN_SETUP, MEMEST_GEN_ALLOC, 0, 4 * i + 1,
            kv_part(&a[i], a[i].kv_heads, a[i].v_dim, len, kv_type(cfg, &a[i])));
    }
    uint64_t st = profile ? 0 : states(&p, r, 4 * na + 4, NULL);
    uint32_t mask = profile ? UINT32_MAX : static_mask(&p, a, na, cfg, C, T, 4 * na + 3);
    for (uint32_t i = 0; !profile && i < na; i++) {
        uint32_t n = a[i].node;
        if (cfg->cache == MEMEST_CACHE_STATIC) {
            int64_t len = memest_gen_cache_len(&a[i], cfg->cache, T);
            if (a[i].repeats && len > C) {   /* repeat_kv of the rest of the cache */
                transient(&p, n, 4 * i + 2, kv_part(&a[i], a[i].q_heads, a[i].k_dim, len - C, a[i].dtype));
                transient(&p, n, 4 * i + 3, kv_part(&a[i], a[i].q_heads, a[i].v_dim, len - C, a[i].dtype));
                add(&p, MEMEST_GEN_POST, MEMEST_GEN_FREE, n, 4 * i + 2, 0);
                add(&p, MEMEST_GEN_POST, MEMEST_GEN_FREE, n, 4 * i + 3, 0);
            }
        } else if (kv_type(cfg, &a[i]) == a[i].dtype) {
            keep[in_storage(r, n, 1)] = 1;   /* DynamicCache appends the tensors */
            keep[in_storage(r, n, 2)] = 1;
        } else {   /* a cache of another dtype: a converted copy */
            add(&p, MEMEST_GEN_PRE, MEMEST_GEN_ALLOC, n, 4 * i,
                kv_part(&a[i], a[i].kv_heads, a[i].k_dim, C, kv_type(cfg, &a[i])));
            add(&p, MEMEST_GEN_PRE, MEMEST_GEN_ALLOC, n, 4 * i + 1,
                kv_part(&a[i], a[i].kv_heads, a[i].v_dim, C, kv_type(cfg, &a[i])));
        }
    }
    int64_t keep_pos = cfg->all_logits && !profile ? C : 1;
    out->logits_bytes = tail(&p, r, stop, C, keep_pos, 4 * na, mask);
    if (simulate(r, step, &p, keep, stop, &out->peak, err) != 0)
        goto end;
    out->kv_bytes = profile ? 0 : cache_bytes(a, na, cfg, cfg->cache == MEMEST_CACHE_STATIC ? T : C);
    out->state_bytes = st;
    double m = macs_before(r, stop);
    if (stop < r->g->nnodes)
        m += r->nodes[stop].fwd_macs * (double)keep_pos / (double)(C > 0 ? C : 1);
    if (cfg->cache == MEMEST_CACHE_STATIC && !profile)
        m += attn_extra_macs(a, na, C, cfg, T, C);
    out->flops = 2 * m;
    rc = 0;
end:
    free(p.ev);
    free(keep);
    free(a);
    return rc;
}

/* The decode step whose cache grows from `tokens - 1` to `tokens`. */
static int decode(const struct memest_run *r, const struct memest_step_cfg *step,
                  const struct memest_gen_cfg *cfg, int64_t tokens, bool simulate_it,
                  struct memest_gen_step *out, struct memest_error *err)
{
    struct memest_gen_attn *a;
    uint32_t na;
    if (memest_gen_attention(r, &a, &na, err) != 0)
        return -1;
    struct plan p = {0};
    int rc = -1;
    for (uint32_t i = 0; i < na; i++) {
        const struct memest_shape *k = &in_value(r, a[i].node, 1)->shape;
        if (k->size[2] != 1) {
            memest_errf(err, MEMEST_ERR_USAGE, NULL,
                        "--generate: at seq_len 1 attention node \"%s\" still reads %lld keys: the "
                        "model's sequence length is not its variable seq_len",
                        r->g->nodes[a[i].node].name, (long long)k->size[2]);
            goto end;
        }
    }
    bool dyn = cfg->cache == MEMEST_CACHE_DYNAMIC;
    uint32_t mask = UINT32_MAX;
    out->state_bytes = states(&p, r, 6 * na + 4, NULL);
    for (uint32_t i = 0; i < na; i++) {   /* the cache before the step */
        int64_t len = memest_gen_cache_len(&a[i], cfg->cache, dyn ? tokens - 1 : tokens);
        add(&p, MEMEST_GEN_SETUP, MEMEST_GEN_ALLOC, 0, 6 * i,
            kv_part(&a[i], a[i].kv_heads, a[i].k_dim, len, kv_type(cfg, &a[i])));
        add(&p, MEMEST_GEN_SETUP, MEMEST_GEN_ALLOC, 0, 6 * i + 1,
            kv_part(&a[i], a[i].kv_heads, a[i].v_dim, len, kv_type(cfg, &a[i])));
    }
    for (uint32_t i = 0; i < na; i++) {
        uint32_t n = a[i].node;
        int64_t len = memest_gen_cache_len(&a[i], cfg->cache, tokens);
        if (i == 0)
            mask = static_mask(&p, a, na, cfg, 1, tokens, 6 * na + 3);
        if (dyn) {   /* torch.cat: the new tensor, then the old one goes */
            add(&p, MEMEST_GEN_PRE, MEMEST_GEN_ALLOC, n, 6 * i + 2,
                kv_part(&a[i], a[i].kv_heads, a[i].k_dim, len, kv_type(cfg, &a[i])));
            add(&p, MEMEST_GEN_PRE, MEMEST_GEN_FREE, n, 6 * i, 0);
            add(&p, MEMEST_GEN_PRE, MEMEST_GEN_ALLOC, n, 6 * i + 3,
                kv_part(&a[i], a[i].kv_heads, a[i].v_dim, len, kv_type(cfg, &a[i])));
            add(&p, MEMEST_GEN_PRE, MEMEST_GEN_FREE, n, 6 * i + 1, 0);
        }
        if (a[i].repeats) {   /* repeat_kv over the cache (the graph's node has 1 token) */
            transient(&p, n, 6 * i + 4, kv_part(&a[i], a[i].q_heads, a[i].k_dim, len - 1, a[i].dtype));
            transient(&p, n, 6 * i + 5, kv_part(&a[i], a[i].q_heads, a[i].v_dim, len - 1, a[i].dtype));
            if (len > 1) {
                add(&p, MEMEST_GEN_POST, MEMEST_GEN_FREE, n, 6 * i + 4, 0);
                add(&p, MEMEST_GEN_POST, MEMEST_GEN_FREE, n, 6 * i + 5, 0);
            }
        }
    }
    uint32_t stop = head_node(r, a, na);
    out->logits_bytes = tail(&p, r, stop, 1, 1, 6 * na, mask);
    if (simulate_it && simulate(r, step, &p, NULL, stop, &out->peak, err) != 0)
        goto end;
    out->kv_bytes = cache_bytes(a, na, cfg, tokens);
    out->flops = 2 * (macs_before(r, r->g->nnodes) + attn_extra_macs(a, na, 1, cfg, tokens, 1));
    rc = 0;
end:
    free(p.ev);
    free(a);
    return rc;
}

/* The weights the one-token graph lacks: a vision-language model's decode
 * step has no image (prepare_inputs_for_generation passes pixel_values at
 * the first step only), so its graph at seq_len 1 leaves the vision tower
 * out, whose parameters and buffers stay on the device all the same. Their
 * blocks, as the prefill's peak holds them, join the decode step's peak. */
static void resident_missing(const struct memest_peak *pre, struct memest_peak *dec)
{
    for (int c = MEMEST_CAT_PARAMS; c <= MEMEST_CAT_BUFFERS; c++) {
        if (pre->at_peak[c] <= dec->at_peak[c])
            continue;
        uint64_t d = pre->at_peak[c] - dec->at_peak[c];
        dec->at_peak[c] += d;
        dec->bytes = memest_sat_add(dec->bytes, d);
        dec->tensor_bytes = memest_sat_add(dec->tensor_bytes, d);
        dec->reserved = memest_sat_add(dec->reserved, d);
    }
}

int memest_generate(const struct memest_run *pre, const struct memest_run *dec,
                    const struct memest_step_cfg *step, const struct memest_gen_cfg *cfg,
                    struct memest_gen_estimate *out, struct memest_error *err)
{
    memset(out, 0, sizeof *out);
    struct memest_gen_attn *a;
    uint32_t na;
    if (memest_gen_attention(pre, &a, &na, err) != 0)
        return -1;
    out->state_bytes = states(NULL, pre, 0, &out->state_layers);
    if (!na && !out->state_layers)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL,
                           "--generate needs a model with scaled_dot_product_attention nodes "
                           "(their key and value inputs are what the KV cache keeps) or "
                           "recurrent layers (mamba2_scan)");
    out->layers = na;
    out->batch = na ? a[0].batch : 0;
    enum memest_dtype sdt = MEMEST_F32;
    for (uint32_t k = 0; !na && k < pre->g->nnodes; k++)
        if (state_of(pre, k)) {   /* no attention: the batch and the type of the states */
            out->batch = in_value(pre, k, 0)->shape.size[0];
            sdt = (enum memest_dtype)in_value(pre, k, 0)->dtype;
            break;
        }
    out->context = cfg->context;
    out->new_tokens = cfg->new_tokens;
    out->cache = cfg->cache;
    out->kv_dtype = na ? kv_type(cfg, &a[0]) : sdt;
    out->kv_fp8 = cfg->kv_dtype_set && cfg->kv_fp8;
    for (uint32_t i = 0; i < na; i++) {
        uint64_t t = memest_dtype_size(kv_type(cfg, &a[i]));
        t = memest_sat_mul(t, memest_sat_mul((uint64_t)a[i].kv_heads,
                                             (uint64_t)(a[i].k_dim + a[i].v_dim)));
        out->kv_token_bytes = memest_sat_add(out->kv_token_bytes, t);
    }
    free(a);
    int64_t T = cfg->context + cfg->new_tokens;
    struct memest_gen_step first;
    if (memest_calc_params(pre, &out->params, err) != 0 || weight_bytes(dec, &out->weight_bytes, err) != 0 ||
        prefill(pre, step, cfg, false, &out->prefill, err) != 0 ||
        decode(dec, step, cfg, T, true, &out->decode, err) != 0 ||
        decode(dec, step, cfg, cfg->context + 1, false, &first, err) != 0)
        return -1;
    resident_missing(&out->prefill.peak, &out->decode.peak);
    out->kv_bytes = out->decode.kv_bytes;
    out->decode.read_bytes = memest_sat_add(memest_sat_add(out->weight_bytes, out->decode.kv_bytes),
                                            out->state_bytes);
    out->decode_read_first = memest_sat_add(memest_sat_add(out->weight_bytes, first.kv_bytes),
                                            out->state_bytes);
    out->decode_flops_first = first.flops;
    out->prefill.read_bytes = memest_sat_add(out->weight_bytes, out->prefill.kv_bytes);
    out->overhead = step->overhead_set ? step->overhead : memest_default_overhead(step->gpu_arch);
    uint64_t res = out->prefill.peak.reserved > out->decode.peak.reserved ? out->prefill.peak.reserved
                                                                          : out->decode.peak.reserved;
    out->total_device = memest_sat_add(res, out->overhead);
    return 0;
}

int memest_generate_profile(const struct memest_run *pre, const struct memest_step_cfg *step,
                            const struct memest_gen_cfg *cfg, struct memest_peak *out,
                            struct memest_error *err)
{
    struct memest_gen_step s = {0};
    if (prefill(pre, step, cfg, true, &s, err) != 0)
        return -1;
    *out = s.peak;
    return 0;
}

void memest_paged_blocks(uint64_t total, double utilization, uint64_t used, uint64_t kv_token_bytes,
                         int64_t block, int64_t seq_len, struct memest_paged *out)
{
    memset(out, 0, sizeof *out);
    out->budget = (uint64_t)((double)total * utilization);
    out->used = used;
    out->seq_len = seq_len;
    out->block_bytes = memest_sat_mul((uint64_t)block, kv_token_bytes);
    if (out->budget > used && out->block_bytes)
        out->blocks = (out->budget - used) / out->block_bytes;
    out->cache_bytes = memest_sat_mul(out->blocks, out->block_bytes);
    out->tokens = memest_sat_mul(out->blocks, (uint64_t)block);
    uint64_t per_seq = seq_len > 0 ? ((uint64_t)seq_len + (uint64_t)block - 1) / (uint64_t)block : 1;
    out->seqs = out->blocks / per_seq;
}
