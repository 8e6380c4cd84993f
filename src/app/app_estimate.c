/* app_estimate.c - one estimate of one graph: its run options (the
 * options' under the step's autocast, made once before its only shape
 * inference), the run options no op applied, its cost and the estimate
 * itself, charged to the command's work; and the note a model error gets
 * when the graph was built with overrides. */
#include <stdio.h>
#include <string.h>

#include "memest/app.h"
#include "memest/fp8.h"

int memest_app_overrides_note(const struct memest_app *a, struct memest_error *err)
{
    bool model_err = err->code == MEMEST_ERR_SHAPE || err->code == MEMEST_ERR_LIMIT ||
                     err->code == MEMEST_ERR_SCHEMA;
    size_t len = strlen(err->msg);
    if (model_err && a->g.overrides)
        snprintf(err->msg + len, sizeof err->msg - len, " (the model with %s)", a->g.overrides);
    return -1;
}

int memest_app_options_used(const struct memest_app *a, const struct memest_run *r,
                            struct memest_error *err)
{
    /* --fused linear-ce is the step's (the simulator checks the head) */
    uint32_t unused = a->o->run_named & ~r->used & ~(uint32_t)MEMEST_FUSED_LINEAR_CE;
    if (unused & MEMEST_USED_ATTENTION)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--attention %s chooses the kernel of "
                           "scaled_dot_product_attention (and multiheadattention's), which the "
                           "model has none of: it would change nothing",
                           memest_attention_name(a->o->run.attention));
    if (unused & MEMEST_USED_FP8)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--fp8 %s runs linear layers in float8, "
                           "and the model has none but its output head whose features are "
                           "multiples of %d: it would change nothing",
                           memest_fp8_name(a->o->run.fp8),
                           a->o->run.fp8 == MEMEST_FP8_TE_MXFP8 ? 32 : 16);
    if (unused & MEMEST_USED_RNN)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--rnn-kernel %s chooses the kernel of "
                           "lstm, gru and rnn nodes, which the model has none of: it would "
                           "change nothing", memest_rnn_kernel_name(a->o->run.rnn_kernel));
    if (unused & MEMEST_USED_MOE_IMBALANCE)
        return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--moe-imbalance routes the tokens of "
                           "MoE experts, which the model has none of: it would change nothing");
    for (int k = 0; k < MEMEST_FUSED_COUNT; k++)
        if (unused & (1u << k))
            return memest_errf(err, MEMEST_ERR_USAGE, NULL, "--fused %s: no op of the model "
                               "runs that kernel (an op of that kind with impl \"auto\"): it "
                               "would change nothing", memest_fused_name(k));
    return 0;
}

struct memest_run_opts memest_app_run_opts(const struct memest_app *a, int64_t batch,
                                           const struct memest_step_cfg *step,
                                           enum memest_dtype dtype)
{
    struct memest_run_opts ro = a->o->run;   /* --attention, --fused, ... */
    ro.batch = batch;
    ro.dtype = dtype;
    memest_run_opts_autocast(&ro, step);   /* the first inference runs under --amp */
    /* --inference has no loss: the fused linear + cross-entropy is not used
     * (nor checked against the model) */
    if (a->o->inference)
        ro.fused &= ~(uint32_t)MEMEST_FUSED_LINEAR_CE;
    return ro;
}

int memest_app_prepare(const struct memest_app *a, const struct memest_graph *g,
                       struct memest_run *r, int64_t batch, const struct memest_step_cfg *step,
                       enum memest_dtype dtype, struct memest_cost *c, struct memest_error *err)
{
    struct memest_run_opts ro = memest_app_run_opts(a, batch, step, dtype);
    /* a pipeline stage may lack an op another stage has: the whole model's
     * run alone answers for the options */
    if (memest_run_infer(r, g, &ro, err) != 0 ||
        (g == &a->g && memest_app_options_used(a, r, err) != 0) ||
        memest_estimate_cost(r, step, c, err) != 0) {
        memest_cost_records(r, c);   /* what the refusal cost */
        return -1;
    }
    return 0;
}

int memest_app_estimate(struct memest_app *a, const struct memest_graph *g, struct memest_run *r,
                        int64_t batch, const struct memest_step_cfg *step,
                        enum memest_dtype dtype, struct memest_estimate *e,
                        struct memest_timeline *train_tl, struct memest_timeline *infer_tl,
                        struct memest_error *err)
{
    struct memest_cost c;
    if (memest_app_charge(a, 0, err) != 0)   /* the budget may be spent already */
        return -1;
    if (memest_app_prepare(a, g, r, batch, step, dtype, &c, err) != 0) {
        a->work += c.total;
        return memest_app_overrides_note(a, err);
    }
    a->estimates++;
    if (c.total > a->top_cost)
        a->top_cost = c.total;
    if (memest_app_charge(a, c.total, err) != 0)
        return -1;
    if (memest_estimate_sims(r, step, a->est.sims ? a->est.sims : MEMEST_SIM_BOTH, e, train_tl,
                             infer_tl, err) == 0)
        return 0;
    return memest_app_overrides_note(a, err);
}

int memest_app_cost(struct memest_app *a, int64_t batch, const struct memest_step_cfg *step,
                    enum memest_dtype dtype, uint64_t *units, struct memest_error *err)
{
    struct memest_run_opts ro = memest_app_run_opts(a, batch, step, dtype);
    struct memest_error e1 = {0};
    struct memest_cost c;
    struct memest_run *r = a->est.r;
    if (memest_run_infer(r, a->est.g, &ro, &e1) == 0 &&
        memest_estimate_cost(r, step, &c, &e1) == 0) {
        *units = c.total;
        return 0;
    }
    if (e1.code != MEMEST_ERR_LIMIT) {
        *err = e1;
        return memest_app_overrides_note(a, err);
    }
    memest_cost_records(r, &c);   /* refused: what shape inference made */
    *units = c.records;
    return 0;
}

