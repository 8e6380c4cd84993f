/* test_optim.c - the optimizer table (optim.h) against torch/optim's
 * sources, figures written by hand from them:
 *   sgd.py: momentum_buffer = torch.clone(grad).detach() in the first
 *     update when momentum != 0; no `step`; fused (_fused_sgd_) from 2.3.
 *   adam.py / adamw.py: _init_group makes exp_avg, exp_avg_sq (and
 *     max_exp_avg_sq with amsgrad) with zeros_like, and a float32 `step`;
 *     _multi_tensor_adam (2.x) makes exp_avg_sq_sqrt = _foreach_sqrt(...)
 *     only (1 list), 1.13's also denom = _foreach_add(...) (2 lists);
 *     _single_tensor_adam's denom = (exp_avg_sq.sqrt() / bc2_sqrt).add_(eps)
 *     (2 temporaries); fused since 1.13 (adam.py) and 2.0 (adamw.py).
 *   rmsprop.py: square_avg (+ momentum_buffer with momentum, + grad_avg when
 *     centered), `step`; avg = sqrt(...) (1 list / 1 temporary); no fused.
 *   adagrad.py: `sum` and `step` made in __init__; _multi_tensor_adagrad
 *     (2.x) makes std = _foreach_sqrt(state_sums) and numerator =
 *     _foreach_mul(grads, minus_clr) (2 lists, both alive); 1.13's makes
 *     sqrt, std, the product and toAdd (4 lists, 3 alive at once);
 *     _single_tensor_adagrad's std = state_sum.sqrt().add_(eps) (1). */
#include <string.h>

#include "check.h"
#include "memest/calc.h"
#include "memest/optim.h"

static unsigned state(enum memest_optim k, double momentum, bool amsgrad, bool centered,
                      uint64_t pb, uint64_t *total)
{
    struct memest_optim_cfg c = {.kind = k, .momentum = momentum, .amsgrad = amsgrad,
                                 .centered = centered};
    uint64_t b[MEMEST_OPTIM_MAX_STATE];
    unsigned n = memest_optim_desc(k)->state(pb, &c, b);
    *total = 0;
    for (unsigned i = 0; i < n; i++)
        *total += b[i];
    CHECK_EQ_INT(memest_optim_state_count(&c), n);
    CHECK_EQ_INT(memest_optim_copies(&c), n);
    return n;
}

static void test_state(void)
{
    uint64_t t;
    CHECK_EQ_INT(state(MEMEST_OPT_SGD, 0, false, false, 1000, &t), 0);
    CHECK_EQ_U64(t, 0);
    CHECK_EQ_INT(state(MEMEST_OPT_SGD, 0.9, false, false, 1000, &t), 1);
    CHECK_EQ_U64(t, 1000);
    CHECK_EQ_INT(state(MEMEST_OPT_ADAM, 0, false, false, 1000, &t), 2);
    CHECK_EQ_U64(t, 2000);
    CHECK_EQ_INT(state(MEMEST_OPT_ADAM, 0, true, false, 1000, &t), 3);
    CHECK_EQ_U64(t, 3000);
    CHECK_EQ_INT(state(MEMEST_OPT_ADAMW, 0, true, false, 1000, &t), 3);
    CHECK_EQ_INT(state(MEMEST_OPT_RMSPROP, 0, false, false, 1000, &t), 1);
    CHECK_EQ_INT(state(MEMEST_OPT_RMSPROP, 0.9, false, false, 1000, &t), 2);
    CHECK_EQ_INT(state(MEMEST_OPT_RMSPROP, 0, false, true, 1000, &t), 2);
    CHECK_EQ_INT(state(MEMEST_OPT_RMSPROP, 0.9, false, true, 1000, &t), 3);
    CHECK_EQ_U64(t, 3000);
    CHECK_EQ_INT(state(MEMEST_OPT_ADAGRAD, 0, false, false, 1000, &t), 1);
    CHECK_EQ_U64(t, 1000);

    CHECK_EQ_INT(memest_optim_desc(MEMEST_OPT_SGD)->init, MEMEST_INIT_LAZY_CLONE);
    CHECK_EQ_INT(memest_optim_desc(MEMEST_OPT_ADAM)->init, MEMEST_INIT_FIRST_STEP);
    CHECK_EQ_INT(memest_optim_desc(MEMEST_OPT_ADAMW)->init, MEMEST_INIT_FIRST_STEP);
    CHECK_EQ_INT(memest_optim_desc(MEMEST_OPT_RMSPROP)->init, MEMEST_INIT_FIRST_STEP);
    CHECK_EQ_INT(memest_optim_desc(MEMEST_OPT_ADAGRAD)->init, MEMEST_INIT_CONSTRUCTOR);

    CHECK(!memest_optim_desc(MEMEST_OPT_SGD)->step_scalar);
    CHECK(memest_optim_desc(MEMEST_OPT_ADAM)->step_scalar);
    CHECK(memest_optim_desc(MEMEST_OPT_ADAMW)->step_scalar);
    CHECK(memest_optim_desc(MEMEST_OPT_RMSPROP)->step_scalar);
    CHECK(memest_optim_desc(MEMEST_OPT_ADAGRAD)->step_scalar);
}

static unsigned temps(enum memest_optim k, enum memest_optim_impl impl, unsigned version)
{
    struct memest_step_cfg c;
    memest_step_cfg_default(&c);
    c.optim.kind = k;
    c.impl = impl;
    c.torch_version = version;
    return memest_optim_temporaries(&c);
}

/* The most lists a foreach program holds at once, checking its form: +k
 * makes a list not yet alive, -k drops one that is. */
static unsigned most_alive(enum memest_optim k, unsigned version)
{
    const struct memest_optim_prog *p = memest_optim_foreach(k, version);
    bool alive[MEMEST_OPTIM_MAX_LISTS + 1] = {false};
    unsigned now = 0, most = 0;
    CHECK(p->n <= MEMEST_OPTIM_MAX_PROG);
    for (unsigned i = 0; i < p->n; i++) {
        int l = p->op[i] > 0 ? p->op[i] : -p->op[i];
        CHECK(l >= 1 && l <= MEMEST_OPTIM_MAX_LISTS);
        if (l < 1 || l > MEMEST_OPTIM_MAX_LISTS)
            return 0;
        CHECK(alive[l] == (p->op[i] < 0));
        alive[l] = p->op[i] > 0;
        now = p->op[i] > 0 ? now + 1 : now - 1;
        most = now > most ? now : most;
    }
    return most;
}

static void test_temporaries(void)
{
    /* PyTorch 2.x foreach: lists made, and alive at once */
    CHECK_EQ_INT(temps(MEMEST_OPT_SGD, MEMEST_IMPL_FOREACH, 0), 0);
    CHECK_EQ_INT(temps(MEMEST_OPT_ADAM, MEMEST_IMPL_FOREACH, 0), 1);
    CHECK_EQ_INT(temps(MEMEST_OPT_ADAMW, MEMEST_IMPL_FOREACH, 0), 1);
    CHECK_EQ_INT(temps(MEMEST_OPT_RMSPROP, MEMEST_IMPL_FOREACH, 0), 1);
    CHECK_EQ_INT(temps(MEMEST_OPT_ADAGRAD, MEMEST_IMPL_FOREACH, 0), 2);
    CHECK_EQ_INT(most_alive(MEMEST_OPT_SGD, 0), 0);
    CHECK_EQ_INT(most_alive(MEMEST_OPT_ADAM, 0), 1);
    CHECK_EQ_INT(most_alive(MEMEST_OPT_RMSPROP, 0), 1);
    CHECK_EQ_INT(most_alive(MEMEST_OPT_ADAGRAD, 0), 2);
    /* PyTorch 1.13 foreach */
    CHECK_EQ_INT(temps(MEMEST_OPT_ADAM, MEMEST_IMPL_FOREACH, 113), 2);
    CHECK_EQ_INT(temps(MEMEST_OPT_ADAMW, MEMEST_IMPL_FOREACH, 113), 2);
    CHECK_EQ_INT(temps(MEMEST_OPT_RMSPROP, MEMEST_IMPL_FOREACH, 113), 1);
    CHECK_EQ_INT(temps(MEMEST_OPT_ADAGRAD, MEMEST_IMPL_FOREACH, 113), 4);
    CHECK_EQ_INT(most_alive(MEMEST_OPT_ADAM, 113), 2);
    CHECK_EQ_INT(most_alive(MEMEST_OPT_ADAGRAD, 113), 3);
    /* for-loop, fused */
    CHECK_EQ_INT(temps(MEMEST_OPT_SGD, MEMEST_IMPL_FORLOOP, 0), 0);
    CHECK_EQ_INT(temps(MEMEST_OPT_ADAM, MEMEST_IMPL_FORLOOP, 0), 2);
    CHECK_EQ_INT(temps(MEMEST_OPT_RMSPROP, MEMEST_IMPL_FORLOOP, 0), 1);
    CHECK_EQ_INT(temps(MEMEST_OPT_ADAGRAD, MEMEST_IMPL_FORLOOP, 113), 1);
    CHECK_EQ_INT(temps(MEMEST_OPT_ADAM, MEMEST_IMPL_FUSED, 0), 0);
    CHECK_EQ_INT(temps(MEMEST_OPT_SGD, MEMEST_IMPL_FUSED, 0), 0);
}

static void test_fused(void)
{
    CHECK_EQ_INT(memest_optim_desc(MEMEST_OPT_SGD)->fused_since, 203);
    CHECK_EQ_INT(memest_optim_desc(MEMEST_OPT_ADAM)->fused_since, 113);
    CHECK_EQ_INT(memest_optim_desc(MEMEST_OPT_ADAMW)->fused_since, 200);
    CHECK_EQ_INT(memest_optim_desc(MEMEST_OPT_RMSPROP)->fused_since, 0);
    CHECK_EQ_INT(memest_optim_desc(MEMEST_OPT_ADAGRAD)->fused_since, 0);
    for (int k = 0; k < MEMEST_OPT_COUNT; k++) {
        const struct memest_optim_desc *d = memest_optim_desc((enum memest_optim)k);
        CHECK_EQ_INT((d->accepts & MEMEST_OPTF_FUSED) != 0, d->fused_since != 0);
    }
    /* device `step` scalars: fused Adam/AdamW keep theirs on the device
     * (state_steps on the parameters' device); SGD has none */
    struct memest_step_cfg c;
    memest_step_cfg_default(&c);
    c.impl = MEMEST_IMPL_FUSED;
    CHECK(memest_optim_device_steps(&c));
    c.optim.kind = MEMEST_OPT_SGD;
    CHECK(!memest_optim_device_steps(&c));
    c.optim.kind = MEMEST_OPT_ADAMW;
    c.impl = MEMEST_IMPL_FOREACH;
    CHECK(!memest_optim_device_steps(&c));
}

static void test_accepting(void)
{
    char b[80];
    CHECK_STR_EQ(memest_optim_accepting(MEMEST_OPTF_MOMENTUM, b, sizeof b), "sgd and rmsprop");
    CHECK_STR_EQ(memest_optim_accepting(MEMEST_OPTF_AMSGRAD, b, sizeof b), "adam and adamw");
    CHECK_STR_EQ(memest_optim_accepting(MEMEST_OPTF_CENTERED, b, sizeof b), "rmsprop");
    CHECK_STR_EQ(memest_optim_accepting(MEMEST_OPTF_FUSED, b, sizeof b), "sgd, adam and adamw");
    CHECK_STR_EQ(memest_optim_names(b, sizeof b), "sgd, adam, adamw, rmsprop, adagrad");
    char small[6];
    CHECK_STR_EQ(memest_optim_accepting(MEMEST_OPTF_FUSED, small, sizeof small), "sgd, ");

    /* --advise's alternative: SGD with momentum, which it accepts */
    const struct memest_optim_cfg *lean = &memest_optim_lean.cfg;
    CHECK_STR_EQ(memest_optim_name(lean->kind), "sgd");
    CHECK(lean->momentum == 0.9);
    CHECK(memest_optim_desc(lean->kind)->accepts & MEMEST_OPTF_MOMENTUM);
    CHECK_STR_EQ(memest_optim_lean.key, "sgd_momentum");
    enum memest_optim k;
    CHECK_EQ_INT(memest_optim_parse("Adam", &k), -1);
}

int main(void)
{
    test_state();
    test_temporaries();
    test_fused();
    test_accepting();
    return CHECK_DONE();
}
