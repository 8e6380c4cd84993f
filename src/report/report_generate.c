/* report_generate.c - the --generate document (text and JSON; README.md,
 * "Fine-tuning and serving", documents the fields). The speed figures are
 * roofline estimates and say so. */
#include "memest/escape.h"
#include "memest/format.h"
#include "memest/jsonw.h"
#include "memest/report.h"

static const char *cache_name(uint8_t c)
{
    return c == MEMEST_CACHE_STATIC ? "static" : "dynamic";
}

static const char *kv_name(const struct memest_gen_estimate *e)
{
    return e->kv_fp8 ? "fp8" : memest_dtype_name(e->kv_dtype);
}

static void peak_line(FILE *f, const char *what, const struct memest_gen_step *s)
{
    char a[32], b[32], k[32];
    fprintf(f, "  %-15s %s allocated, %s reserved (KV cache %s)\n", what,
            memest_fmt_bytes(s->peak.bytes, a, sizeof a), memest_fmt_bytes(s->peak.reserved, b, sizeof b),
            memest_fmt_bytes(s->kv_bytes, k, sizeof k));
}

static void sweep_text(FILE *f, const struct memest_gen_report *g)
{
    char name[MEMEST_ESC_NAME];
    fprintf(f, "%s: generation by context (prefill and decode peaks allocated; tokens/s: "
               "roofline estimates)\n",
            memest_esc_text(g->model, name, sizeof name));
    fprintf(f, "%10s %12s %12s %12s %12s %6s %10s %10s\n", "context", "KV cache", "prefill",
            "decode", "device", "fits", "prefill", "tokens/s");
    for (size_t i = 0; i < g->nrows; i++) {
        const struct memest_gen_row *r = &g->rows[i];
        char a[32], b[32], c[32], d[32], t[32];
        fprintf(f, "%10lld %12s %12s %12s %12s %6s %10s ", (long long)r->context,
                memest_fmt_bytes(r->kv, a, sizeof a), memest_fmt_bytes(r->prefill, b, sizeof b),
                memest_fmt_bytes(r->decode, c, sizeof c), memest_fmt_bytes(r->total, d, sizeof d),
                r->has_fit ? (r->fits ? "yes" : "no") : "-",
                r->has_speed ? memest_fmt_seconds(r->prefill_s, t, sizeof t) : "-");
        if (r->has_speed)
            fprintf(f, "%10.1f\n", r->tok_s);
        else
            fprintf(f, "%10s\n", "-");
    }
}

void memest_generate_text(FILE *f, const struct memest_gen_report *g)
{
    const struct memest_gen_estimate *e = g->e;
    char a[32], b[32], c[32], name[MEMEST_ESC_NAME];
    if (!e) {
        sweep_text(f, g);
        return;
    }
    if (g->has_max_batch)
        fprintf(f, "largest batch that fits: %lld%s\n", (long long)g->max_batch,
                g->max_batch ? "" : " (none: the estimate below is at batch 1)");
    if (g->has_max_context)
        fprintf(f, "largest context that fits: %lld tokens%s\n", (long long)g->max_context,
                g->max_context ? "" : " (none: the estimate below is at 1 token)");
    fprintf(f, "%s: generation (transformers v4.48 generate(), greedy), batch %lld, context %lld + "
               "%lld new tokens, %s cache in %s\n",
            memest_esc_text(g->model, name, sizeof name), (long long)e->batch, (long long)e->context,
            (long long)e->new_tokens, cache_name(e->cache), kv_name(e));
    fprintf(f, "  %-15s %s (%s parameters; matrix products read %s per step)\n", "weights",
            memest_fmt_bytes(e->params.bytes, a, sizeof a), memest_fmt_count(e->params.total, b, sizeof b),
            memest_fmt_bytes(e->weight_bytes, c, sizeof c));
    fprintf(f, "  %-15s %s at %lld tokens: %s per token per sequence, %u attention layers\n",
            "KV cache", memest_fmt_bytes(e->kv_bytes, a, sizeof a),
            (long long)(e->context + e->new_tokens), memest_fmt_bytes(e->kv_token_bytes, b, sizeof b),
            e->layers);
    if (e->state_layers)
        fprintf(f, "  %-15s %s: the conv and SSM states of %u Mamba layers, whatever the tokens\n",
                "recurrent state", memest_fmt_bytes(e->state_bytes, a, sizeof a), e->state_layers);
    peak_line(f, "prefill peak", &e->prefill);
    peak_line(f, "decode peak", &e->decode);
    fprintf(f, "  %-15s %s (the larger reserved peak + %s CUDA context)\n", "device total",
            memest_fmt_bytes(e->total_device, a, sizeof a), memest_fmt_bytes(e->overhead, b, sizeof b));
    if (g->card) {
        char line[200];
        fprintf(f, "card: %s: %s\n", memest_esc_text(g->card->label, name, sizeof name),
                memest_fit_text(&g->fit, line, sizeof line));
    }
    if (g->speed && g->speed->have) {
        const struct memest_gen_speed *s = g->speed;
        fprintf(f, "estimates (roofline, not measurements: %s/s memory bandwidth, %s FLOP/s peak):\n",
                memest_fmt_bytes((uint64_t)s->bandwidth, a, sizeof a), memest_fmt_si(s->peak_flops, b, sizeof b));
        fprintf(f, "  %-15s %s (compute at %.0f%% of peak)\n", "prefill",
                memest_fmt_seconds(s->prefill_s, a, sizeof a), s->mfu * 100);
        fprintf(f, "  %-15s %s to %s per step (%s-bound: weights + KV cache read per token)\n",
                "decode", memest_fmt_seconds(s->decode_first_s, a, sizeof a),
                memest_fmt_seconds(s->decode_last_s, b, sizeof b),
                s->decode_compute_bound ? "compute" : "bandwidth");
        fprintf(f, "  %-15s %.1f tokens/s (batch %lld), %s for the whole generation\n", "throughput",
                s->decode_tok_s, (long long)e->batch, memest_fmt_seconds(s->total_s, a, sizeof a));
    }
    if (g->paged) {
        const struct memest_paged *p = g->paged;
        fprintf(f, "paged KV cache (vLLM, block %lld, gpu_memory_utilization %.2f):\n",
                (long long)g->kv_block, g->gpu_util);
        fprintf(f, "  %-15s %s of %s, less %s (weights, profile-run peak, CUDA context)\n", "cache memory",
                memest_fmt_bytes(p->cache_bytes, a, sizeof a), memest_fmt_bytes(p->budget, b, sizeof b),
                memest_fmt_bytes(p->used, c, sizeof c));
        fprintf(f, "  %-15s %llu of %s (%llu tokens); %llu sequences of %lld tokens\n", "blocks",
                (unsigned long long)p->blocks, memest_fmt_bytes(p->block_bytes, a, sizeof a),
                (unsigned long long)p->tokens, (unsigned long long)p->seqs, (long long)p->seq_len);
    }
}

static void step_json(struct memest_jsonw *w, const char *key, const struct memest_gen_step *s)
{
    memest_jsonw_obj_begin(w, key);
    memest_jsonw_u64(w, "bytes", s->peak.bytes);
    memest_jsonw_u64(w, "tensor_bytes", s->peak.tensor_bytes);
    memest_jsonw_u64(w, "reserved", s->peak.reserved);
    memest_jsonw_u64(w, "kv_cache", s->kv_bytes);
    memest_jsonw_u64(w, "logits", s->logits_bytes);
    memest_jsonw_f64(w, "flops", s->flops);
    memest_jsonw_obj_end(w);
}

static void sweep_json(struct memest_jsonw *w, const struct memest_gen_report *g)
{
    memest_jsonw_arr_begin(w, "sweep_context");
    for (size_t i = 0; i < g->nrows; i++) {
        const struct memest_gen_row *r = &g->rows[i];
        memest_jsonw_obj_begin(w, NULL);
        memest_jsonw_i64(w, "context", r->context);
        memest_jsonw_u64(w, "kv_cache", r->kv);
        memest_jsonw_u64(w, "prefill_bytes", r->prefill);
        memest_jsonw_u64(w, "decode_bytes", r->decode);
        memest_jsonw_u64(w, "total_device", r->total);
        if (r->has_fit)
            memest_jsonw_bool(w, "fits", r->fits);
        else
            memest_jsonw_null(w, "fits");
        if (r->has_speed) {
            memest_jsonw_f64(w, "prefill_seconds", r->prefill_s);
            memest_jsonw_f64(w, "decode_tokens_per_second", r->tok_s);
        } else {
            memest_jsonw_null(w, "prefill_seconds");
            memest_jsonw_null(w, "decode_tokens_per_second");
        }
        memest_jsonw_obj_end(w);
    }
    memest_jsonw_arr_end(w);
}

void memest_generate_json(FILE *f, const struct memest_gen_report *g)
{
    const struct memest_gen_estimate *e = g->e;
    struct memest_jsonw w;
    memest_jsonw_init(&w, f, true);
    memest_jsonw_obj_begin(&w, NULL);
    memest_jsonw_u64(&w, "schema_version", 1);
    memest_jsonw_str(&w, "model", g->model);
    if (!e) {
        sweep_json(&w, g);
        memest_jsonw_obj_end(&w);
        memest_jsonw_finish(&w);
        return;
    }
    if (g->has_max_batch)
        memest_jsonw_i64(&w, "max_batch", g->max_batch);
    if (g->has_max_context)
        memest_jsonw_i64(&w, "max_context", g->max_context);
    memest_jsonw_obj_begin(&w, "generate");
    memest_jsonw_i64(&w, "batch", e->batch);
    memest_jsonw_i64(&w, "context", e->context);
    memest_jsonw_i64(&w, "new_tokens", e->new_tokens);
    memest_jsonw_str(&w, "cache", cache_name(e->cache));
    memest_jsonw_str(&w, "kv_dtype", kv_name(e));
    memest_jsonw_str(&w, "dtype", memest_dtype_name(g->dtype));
    memest_jsonw_u64(&w, "parameters", e->params.total);
    memest_jsonw_u64(&w, "weights", e->params.bytes);
    memest_jsonw_u64(&w, "weights_read", e->weight_bytes);
    memest_jsonw_u64(&w, "attention_layers", e->layers);
    memest_jsonw_u64(&w, "kv_bytes_per_token", e->kv_token_bytes);
    memest_jsonw_u64(&w, "kv_cache", e->kv_bytes);
    if (e->state_layers) {
        memest_jsonw_u64(&w, "recurrent_layers", e->state_layers);
        memest_jsonw_u64(&w, "recurrent_state", e->state_bytes);
    }
    step_json(&w, "prefill", &e->prefill);
    step_json(&w, "decode", &e->decode);
    memest_jsonw_u64(&w, "overhead", e->overhead);
    memest_jsonw_u64(&w, "total_device", e->total_device);
    memest_jsonw_obj_end(&w);
    if (g->card) {
        memest_card_id_json(&w, g->card);
        memest_jsonw_obj_begin(&w, "fit");
        memest_jsonw_bool(&w, "fits", g->fit.fits);
        memest_jsonw_u64(&w, "needs", g->fit.needs);
        memest_jsonw_u64(&w, "usable", g->fit.usable);
        memest_jsonw_obj_end(&w);
    }
    if (g->speed && g->speed->have) {
        const struct memest_gen_speed *s = g->speed;
        memest_jsonw_obj_begin(&w, "speed_estimate");
        memest_jsonw_f64(&w, "bandwidth", s->bandwidth);
        memest_jsonw_f64(&w, "peak_flops", s->peak_flops);
        memest_jsonw_f64(&w, "mfu", s->mfu);
        memest_jsonw_f64(&w, "prefill_seconds", s->prefill_s);
        memest_jsonw_f64(&w, "decode_first_step_seconds", s->decode_first_s);
        memest_jsonw_f64(&w, "decode_last_step_seconds", s->decode_last_s);
        memest_jsonw_f64(&w, "decode_tokens_per_second", s->decode_tok_s);
        memest_jsonw_f64(&w, "total_seconds", s->total_s);
        memest_jsonw_bool(&w, "decode_compute_bound", s->decode_compute_bound);
        memest_jsonw_obj_end(&w);
    }
    if (g->paged) {
        const struct memest_paged *p = g->paged;
        memest_jsonw_obj_begin(&w, "paged");
        memest_jsonw_i64(&w, "block_size", g->kv_block);
        memest_jsonw_f64(&w, "gpu_memory_utilization", g->gpu_util);
        memest_jsonw_u64(&w, "budget", p->budget);
        memest_jsonw_u64(&w, "profile_peak", g->profile_peak);
        memest_jsonw_u64(&w, "used", p->used);
        memest_jsonw_u64(&w, "block_bytes", p->block_bytes);
        memest_jsonw_u64(&w, "blocks", p->blocks);
        memest_jsonw_u64(&w, "cache_bytes", p->cache_bytes);
        memest_jsonw_u64(&w, "tokens", p->tokens);
        memest_jsonw_i64(&w, "seq_len", p->seq_len);
        memest_jsonw_u64(&w, "sequences", p->seqs);
        memest_jsonw_obj_end(&w);
    }
    memest_jsonw_obj_end(&w);
    memest_jsonw_finish(&w);
}
