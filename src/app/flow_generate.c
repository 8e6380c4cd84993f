/* flow_generate.c - --generate: the prefill's run on the graph the app
 * built (seq_len = --context), a decode step's run on the graph rebuilt
 * with seq_len = 1, the generation estimate (src/calc/generate.c), the
 * card's verdict, the speed estimates from its preset and vLLM's paged
 * cache (--kv-block), handed to the report (report_generate.c). */
#include <stdlib.h>
#include <string.h>

#include "memest/app.h"
#include "memest/generate.h"
#include "memest/report.h"

/* Shape inference of g at the command's batch into r, its cost charged to
 * the command's work. 0 / -1. */
static int infer(struct memest_app *a, const struct memest_graph *g, struct memest_run *r,
                 struct memest_error *err)
{
    struct memest_run_opts ro = a->o->run;
    ro.batch = a->o->batch;
    ro.dtype = a->dtype;
    ro.fused &= ~(uint32_t)MEMEST_FUSED_LINEAR_CE;   /* no loss */
    struct memest_cost c;
    if (memest_app_charge(a, 0, err) != 0)
        return -1;
    if (memest_run_infer(r, g, &ro, err) != 0 || memest_estimate_cost(r, &a->step, &c, err) != 0)
        return memest_app_overrides_note(a, err);
    return memest_app_charge(a, c.total, err);
}

/* The decode step's graph: the command's overrides with seq_len = 1. */
static int decode_graph(struct memest_app *a, struct memest_graph *g, struct memest_error *err)
{
    const struct memest_cli *o = a->o;
    struct memest_override sets[MEMEST_MAX_SETS];
    int n = 0;
    for (int i = 0; i < o->nsets; i++) {
        sets[n] = o->sets[i];
        if (strcmp(sets[n].name, "seq_len") == 0)
            sets[n].value = "1";
        n++;
    }
    return memest_model_build(&a->m, sets, n, g, err);
}

/* Roofline estimates on the card's preset (README: labelled estimates). */
static void speed(const struct memest_app *a, const struct memest_gen_estimate *e,
                  struct memest_gen_speed *s)
{
    memset(s, 0, sizeof *s);
    const struct memest_gpu *gpu = a->card.gpu;
    if (!a->has_card || !gpu || gpu->bandwidth <= 0)
        return;
    bool fb;
    s->peak_flops = memest_gpu_peak(gpu, memest_gpu_step_precision(a->dtype, a->step.amp), &fb);
    if (s->peak_flops <= 0)
        return;
    s->have = true;
    s->bandwidth = gpu->bandwidth;
    s->mfu = a->o->mfu;
    double pc = e->prefill.flops / (s->peak_flops * s->mfu), pm = (double)e->prefill.read_bytes / s->bandwidth;
    s->prefill_s = pc > pm ? pc : pm;
    double fm = (double)e->decode_read_first / s->bandwidth, fc = e->decode_flops_first / s->peak_flops;
    double lm = (double)e->decode.read_bytes / s->bandwidth, lc = e->decode.flops / s->peak_flops;
    s->decode_first_s = fm > fc ? fm : fc;
    s->decode_last_s = lm > lc ? lm : lc;
    s->decode_compute_bound = lc > lm;
    /* each step's time grows linearly with the cache: the mean of the first and last */
    double steps = (double)e->new_tokens * (s->decode_first_s + s->decode_last_s) / 2;
    s->decode_tok_s = steps > 0 ? (double)e->batch * (double)e->new_tokens / steps : 0;
    s->total_s = s->prefill_s + steps;
}

int memest_flow_generate(struct memest_app *a)
{
    const struct memest_cli *o = a->o;
    struct memest_error err = {0};
    struct memest_graph dg = {0};
    struct memest_run dr = {0};
    struct memest_gen_estimate e;
    struct memest_gen_speed sp;
    struct memest_paged paged;
    struct memest_peak profile = {0};
    int rc = MEMEST_EXIT_OK;
    a->flow = "--generate";
    struct memest_gen_cfg cfg = {.context = o->gen_context, .new_tokens = o->gen_new_tokens,
                                 .kv_dtype = o->kv_dtype, .kv_dtype_set = o->kv_dtype_set,
                                 .kv_fp8 = o->kv_fp8, .cache = o->gen_cache,
                                 .all_logits = o->all_logits};
    if (infer(a, &a->g, &a->r, &err) != 0 || decode_graph(a, &dg, &err) != 0 ||
        infer(a, &dg, &dr, &err) != 0 ||
        memest_generate(&a->r, &dr, &a->step, &cfg, &e, &err) != 0 ||
        (o->kv_block && memest_generate_profile(&a->r, &a->step, &cfg, &profile, &err) != 0)) {
        rc = memest_app_fail(o, &err);
        goto end;
    }
    struct memest_gen_report rep = {.model = a->g.name, .dtype = a->dtype, .e = &e,
                                    .kv_block = o->kv_block, .gpu_util = o->gpu_util};
    if (a->has_card) {
        rep.card = &a->card;
        memest_fit_check(e.total_device, a->card.memory, o->headroom, &rep.fit);
        speed(a, &e, &sp);
        rep.speed = &sp;
    }
    if (o->kv_block && a->has_card) {
        /* vLLM: peak = what the profile run allocated (weights included) +
         * memory outside PyTorch (here the CUDA context) */
        rep.profile_peak = profile.bytes;
        memest_paged_blocks(a->card.memory, o->gpu_util, profile.bytes + e.overhead, e.kv_token_bytes,
                            o->kv_block, e.context + e.new_tokens, &paged);
        rep.paged = &paged;
    }
    memest_render_generate(stdout, o->format, &rep);
end:
    memest_run_free(&dr);
    memest_graph_free(&dg);
    return rc;
}
