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
#include "reference_json.h"
#include "memest/calc.h"
#include "memest/optim.h"
#include "memest/dtype.h"
#include "memest/error.h"
#include "memest/step.h"

static unsigned state(enum memest_optim k, double momentum, bool amsgrad, bool centered,
                      uint64_t pb, uint64_t *total)
{
    struct memest_optim_cfg c = {.kind = k, .momentum = momentum, .amsgrad = amsgrad,
                                 .centered = centered};
    struct memest_optim_state st;
    memest_optim_param_state(&c, pb / 4, pb, &st);
    *total = 0;
    for (unsigned i = 0; i < st.n; i++)
        *total += st.bytes[i];
    CHECK_EQ_INT(memest_optim_state_count(&c), st.n);
    CHECK_EQ_INT(memest_optim_copies(&c), st.n);
    CHECK_EQ_INT(memest_optim_state_max(&c), st.n);
    CHECK_EQ_INT(st.paged, 0);
    CHECK(!st.shared);
    return st.n;
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

/* torch/optim/_adafactor.py (2.6) _init_group: a gradient of sizes
 * [..., m, n] gets row_var [..., m, 1] and col_var [..., 1, n] in its
 * dtype; one of a single dimension a variance like it. */
static void test_adafactor(void)
{
    struct memest_optim_cfg c = {.kind = MEMEST_OPT_ADAFACTOR};
    struct memest_optim_state st;
    const int64_t w[2] = {512, 784};   /* nn.Linear(784, 512).weight, fp32 */
    struct memest_optim_param p = memest_optim_param_of(512 * 784, 512 * 784 * 4, 2, w);
    memest_optim_shaped_state(&c, &p, &st);
    CHECK_EQ_INT(st.n, 2);
    CHECK_EQ_U64(st.bytes[0], 512 * 4);   /* row_var [512, 1] */
    CHECK_EQ_U64(st.bytes[1], 784 * 4);   /* col_var [1, 784] */
    const int64_t conv[4] = {64, 3, 7, 7};   /* a conv weight, bf16: [64, 3, 7, 1], [64, 3, 1, 7] */
    p = memest_optim_param_of(64 * 3 * 49, 64 * 3 * 49 * 2, 4, conv);
    memest_optim_shaped_state(&c, &p, &st);
    CHECK_EQ_U64(st.bytes[0], 64 * 3 * 7 * 2);
    CHECK_EQ_U64(st.bytes[1], 64 * 3 * 7 * 2);
    /* the foreach temporaries: row means [64, 3, 7, 1], column means
     * [64, 3, 1, 7], the row variances' means [64, 3, 1, 1] */
    CHECK_EQ_U64(memest_optim_temp_bytes(&p, MEMEST_OTS_ROWS), 64 * 3 * 7 * 2);
    CHECK_EQ_U64(memest_optim_temp_bytes(&p, MEMEST_OTS_CORNER), 64 * 3 * 2);
    CHECK_EQ_U64(memest_optim_temp_bytes(&p, MEMEST_OTS_FULL), 64 * 3 * 49 * 2);
    memest_optim_param_state(&c, 512, 512 * 4, &st);   /* a bias: variance */
    CHECK_EQ_INT(st.n, 1);
    CHECK_EQ_U64(st.bytes[0], 512 * 4);
    CHECK_EQ_INT(memest_optim_state_max(&c), 2);
}

/* bitsandbytes' Optimizer1State.init_state (optim.c cites it): Lion's one
 * state, uint8 from 4096 elements with absmax1 (one float32 per 256) and
 * the one shared map, float32 below; paged from 1e5 elements. */
static void test_lion(void)
{
    struct memest_optim_cfg c = {.kind = MEMEST_OPT_LION8BIT};
    struct memest_optim_state st;
    memest_optim_param_state(&c, 4096 * 4096, 4096 * 4096 * 2, &st);   /* a bf16 matrix */
    CHECK_EQ_INT(st.n, 2);
    CHECK_EQ_U64(st.bytes[0], 4096 * 4096);             /* state1, uint8 */
    CHECK_EQ_U64(st.bytes[1], 4096 * 4096 / 256 * 4);   /* absmax1 */
    CHECK(st.shared);
    CHECK_EQ_INT(memest_optim_desc(c.kind)->nshared, 1);
    memest_optim_param_state(&c, 4095, 4095 * 2, &st);  /* below min_8bit_size: float32 */
    CHECK_EQ_INT(st.n, 1);
    CHECK_EQ_U64(st.bytes[0], 4095 * 4);
    c.kind = MEMEST_OPT_LION;
    memest_optim_param_state(&c, 1000, 4000, &st);
    CHECK_EQ_INT(st.n, 1);
    CHECK_EQ_U64(st.bytes[0], 4000);
    c.kind = MEMEST_OPT_PAGED_LION8BIT;
    memest_optim_param_state(&c, 100000, 200000, &st);
    CHECK_EQ_INT(st.paged, 1);    /* state1 in unified memory, absmax1 not */
    memest_optim_param_state(&c, 99999, 199998, &st);
    CHECK_EQ_INT(st.paged, 0);
}

/* The most bytes a per-parameter program (optim.h) holds at once, its
 * slots starting empty; in *left the bytes still held at its end. */
static uint64_t pprog_peak(const struct memest_optim_pprog *o, uint64_t *left)
{
    uint64_t held[MEMEST_OPTIM_MAX_SLOTS + 1] = {0}, cur = 0, peak = 0;
    for (unsigned k = 0; k < o->n; k++) {
        int s = o->op[k] > 0 ? o->op[k] : -o->op[k];
        if (o->op[k] > 0) {
            cur += o->bytes[s];
            peak = cur > peak ? cur : peak;
        }
        cur -= held[s];
        held[s] = o->op[k] > 0 ? o->bytes[s] : 0;
    }
    *left = cur;
    return peak;
}

/* A matrix [m, n] of elem-byte elements of dtype t. */
static struct memest_optim_param matrix(int64_t m, int64_t n, unsigned elem, enum memest_dtype t)
{
    const int64_t size[2] = {m, n};
    uint64_t numel = (uint64_t)m * (uint64_t)n;
    struct memest_optim_param p = memest_optim_param_of(numel, numel * elem, 2, size);
    p.dtype = (uint8_t)t;
    return p;
}

/* torch.optim.Muon (torch/optim/_muon.py, PyTorch 2.9; optim.c cites it):
 * momentum_buffer = zeros_like(p.grad) for a hidden matrix, AdamW's
 * exp_avg and exp_avg_sq (and a step) for the rest. Newton-Schulz over
 * [m, n] (m <= n, ortho_grad transposed): from its second iteration the
 * lerp tensor U, the previous X and the new one (bf16 [m, n]),
 * gram_matrix and gram_update (bf16 [m, m]) are alive together. */
static void test_muon(void)
{
    struct memest_optim_cfg c = {.kind = MEMEST_OPT_MUON};
    struct memest_optim_state st;
    struct memest_optim_param p = matrix(14336, 4096, 2, MEMEST_BF16);   /* Llama-3-8B's gate_proj */
    memest_optim_shaped_state(&c, &p, &st);
    CHECK_EQ_INT(st.n, 1);
    CHECK_EQ_U64(st.bytes[0], 117440512);   /* 14336 * 4096 * 2 */
    CHECK(!st.aux);
    CHECK(!memest_optim_state_steps(&c, &st));
    struct memest_optim_pprog o;
    uint64_t left;
    memest_optim_param_prog(&c, &p, &o);
    /* bf16: grad.bfloat16() is U itself; U 117440512 + 2 X 117440512 +
     * 2 * 4096^2 * 2 = 3 * 117440512 + 67108864 = 419430400 (400 MiB) */
    CHECK_EQ_U64(pprog_peak(&o, &left), 419430400);
    CHECK_EQ_U64(left, 117440512);           /* the result, bound until the next lerp */
    struct memest_step_cfg sc = {.optim = c, .impl = MEMEST_IMPL_FOREACH};
    /* U, 5 x (gram, gram_update, X): 16; the event bound takes the larger
     * Distributed Muon program's (the Nesterov partition, its bf16 copy, the
     * gathered matrix, 5 x 3): 18 */
    CHECK_EQ_INT(memest_optim_param_temporaries(&sc, &p), 18);
    /* nn.Linear(784, 512).weight, fp32 (mlp-mnist, tests/reference/optim_2026.json):
     * U 1605632 + X0 802816 + ... from the second iteration U + 2 X +
     * 2 * 512^2 * 2 = 1605632 + 1605632 + 1048576 = 4259840 */
    p = matrix(512, 784, 4, MEMEST_F32);
    memest_optim_param_prog(&c, &p, &o);
    CHECK_EQ_U64(pprog_peak(&o, &left), 4259840);
    CHECK_EQ_INT(memest_optim_param_temporaries(&sc, &p), 18);   /* 17 with the bf16 copy; 18 */
    /* Newton-Schulz's MACs: m = 512, n = 784: 5 * (2 * 512^2 * 784 + 512^3) =
     * 5 * (411041792 + 134217728) = 2726297600; the transposed [784, 512] the same */
    CHECK_EQ_U64(memest_optim_param_macs(&c, &p), 2726297600u);
    struct memest_optim_param pt = matrix(784, 512, 4, MEMEST_F32);
    CHECK_EQ_U64(memest_optim_param_macs(&c, &pt), 2726297600u);
    /* Distributed Muon on one of 4 ranks, fp32 state: the partition
     * 512 * 784 / 4 = 100352 elements, Nesterov 401408 B, its bf16 copy
     * 200704, the gathered bf16 matrix 4 * 100352 * 2 = 802816; then
     * Newton-Schulz on it (bf16 already): gathered + 2 X + 2 [512, 512] =
     * 802816 + 1605632 + 1048576 = 3457024; nothing left */
    memest_optim_gather_prog(&c, &p, 4, false, 4, &o);
    CHECK_EQ_U64(pprog_peak(&o, &left), 3457024);
    CHECK_EQ_U64(left, 0);
    /* its partition's state: 100352 of 100400 elements its matrices'
     * (momentum 401408 B), 48 AdamW's (2 x 192 B) */
    memest_optim_part_state(&c, 100400, 401600, 100352, &st);
    CHECK_EQ_INT(st.n, 3);
    CHECK_EQ_U64(st.bytes[0], 401408);
    CHECK_EQ_U64(st.bytes[1] + st.bytes[2], 384);
    struct memest_optim_cfg adamw = {.kind = MEMEST_OPT_ADAMW};
    memest_optim_part_state(&adamw, 100400, 401600, 100352, &st);   /* no gathering: 2 copies */
    CHECK_EQ_U64(st.bytes[0] + st.bytes[1], 2 * 401600);
    /* the embedding table, the head, a norm's weight, a conv kernel: AdamW's */
    p.nonhidden = true;
    memest_optim_shaped_state(&c, &p, &st);
    CHECK_EQ_INT(st.n, 2);
    CHECK_EQ_U64(st.bytes[0] + st.bytes[1], 2 * 512 * 784 * 4);
    CHECK(st.aux);
    CHECK(memest_optim_state_steps(&c, &st));
    memest_optim_param_prog(&c, &p, &o);
    CHECK_EQ_INT(o.n, 0);
    memest_optim_param_state(&c, 4096, 8192, &st);
    CHECK(st.aux);
    const int64_t conv[4] = {64, 3, 7, 7};
    p = memest_optim_param_of(64 * 3 * 49, 64 * 3 * 49 * 4, 4, conv);
    memest_optim_shaped_state(&c, &p, &st);
    CHECK(st.aux);
    CHECK_EQ_INT(memest_optim_param_temporaries(&sc, &p), 1);   /* AdamW's foreach list */
    struct memest_error err = {0};
    CHECK_EQ_INT(memest_step_cfg_check(&sc, &err), 0);
    sc.torch_version = 113;
    CHECK(memest_step_cfg_check(&sc, &err) != 0);   /* torch.optim.Muon is 2.9's, not 1.13's */
}

/* transformers' Adafactor (transformers/optimization.py; optim.c cites
 * it): float32 state whatever the parameter's dtype (grad.float()),
 * exp_avg_sq_row [..., m] and exp_avg_sq_col [..., n] for two dimensions
 * or more, exp_avg_sq like the parameter otherwise, and RMS, a 0-d float32
 * tensor. Per parameter (bf16): grad.float() G, p.float() P, grad**2 and
 * update = it + eps, then the product of the factors A, with G, P and the
 * old update alive, and the row and column factors: 4 float32 copies of
 * the parameter and r + c. */
static void test_hf_adafactor(void)
{
    struct memest_optim_cfg c = {.kind = MEMEST_OPT_HF_ADAFACTOR};
    struct memest_optim_state st;
    struct memest_optim_param p = matrix(128256, 4096, 2, MEMEST_BF16);   /* embed_tokens */
    memest_optim_shaped_state(&c, &p, &st);
    CHECK_EQ_INT(st.n, 3);
    CHECK_EQ_U64(st.bytes[0], 128256 * 4);   /* exp_avg_sq_row, float32 */
    CHECK_EQ_U64(st.bytes[1], 4096 * 4);     /* exp_avg_sq_col */
    CHECK_EQ_U64(st.bytes[2], 4);            /* RMS */
    CHECK(!memest_optim_state_steps(&c, &st));   /* step: a Python int */
    struct memest_optim_pprog o;
    uint64_t left;
    memest_optim_param_prog(&c, &p, &o);
    /* 4 * 128256 * 4096 * 4 + (128256 + 4096) * 4 = 8405385216 + 529408 */
    CHECK_EQ_U64(pprog_peak(&o, &left), 8405914624ull);
    CHECK_EQ_U64(left, 3ull * 2101346304);   /* G, P and update stay bound */
    /* fp32 [512, 784] (mlp-mnist): no copies; grad**2 and update
     * 2 * 1605632, then the product with update and r, c: 3211264 + 2048 + 3136 */
    p = matrix(512, 784, 4, MEMEST_F32);
    memest_optim_param_prog(&c, &p, &o);
    CHECK_EQ_U64(pprog_peak(&o, &left), 3216448);
    /* a bf16 bias of 4096: exp_avg_sq float32, RMS */
    const int64_t bias[1] = {4096};
    p = memest_optim_param_of(4096, 8192, 1, bias);
    p.dtype = MEMEST_BF16;
    memest_optim_shaped_state(&c, &p, &st);
    CHECK_EQ_INT(st.n, 2);
    CHECK_EQ_U64(st.bytes[0], 4096 * 4);
    CHECK_EQ_U64(st.bytes[1], 4);
    memest_optim_param_prog(&c, &p, &o);   /* G, P, grad**2 + update, rsqrt(), -update */
    CHECK_EQ_U64(pprog_peak(&o, &left), 4 * 4096 * 4);
    struct memest_step_cfg sc = {.optim = c, .impl = MEMEST_IMPL_FUSED};
    struct memest_error err = {0};
    CHECK(memest_step_cfg_check(&sc, &err) != 0);   /* no fused kernel */
}

static void test_accepting(void)
{
    char b[80];
    CHECK_STR_EQ(memest_optim_accepting(MEMEST_OPTF_MOMENTUM, b, sizeof b), "sgd and rmsprop");
    CHECK_STR_EQ(memest_optim_accepting(MEMEST_OPTF_AMSGRAD, b, sizeof b), "adam and adamw");
    CHECK_STR_EQ(memest_optim_accepting(MEMEST_OPTF_CENTERED, b, sizeof b), "rmsprop");
    CHECK_STR_EQ(memest_optim_accepting(MEMEST_OPTF_FUSED, b, sizeof b), "sgd, adam and adamw");
    char all[400];
    CHECK_STR_EQ(memest_optim_names(all, sizeof all),
                 "sgd, adam, adamw, rmsprop, adagrad, adam8bit, adamw8bit, paged_adam8bit, "
                 "paged_adamw8bit, paged_adamw, paged_adamw32bit, adafactor, lion, lion8bit, "
                 "paged_lion, paged_lion8bit, muon, hf_adafactor");
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

/* bitsandbytes (bitsandbytes/optim/optimizer.py of 0.50.2.dev0, commit
 * 95f9af3; blocksize 256 since 0.44.0): Optimizer2State.init_state keeps
 * state1 and state2 in uint8 (optim_bits 8) or float32 (32, and below
 * min_8bit_size = 4096 elements), absmax1 and absmax2 as float32
 * torch.zeros(ceil(numel / 256)) with uint8; get_state_buffer pages state1
 * and state2 (F.get_paged, cudaMallocManaged) when is_paged and numel >= 1e5,
 * never absmax; qmap1/qmap2 are create_dynamic_map's 256 float32, made
 * once. Figures by hand:
 *   4096 x 4096 = 16,777,216 elements, 8-bit: state1 = state2 = 16,777,216
 *     bytes; 16,777,216 / 256 = 65,536 blocks, absmax 262,144 bytes each;
 *     32-bit: 67,108,864 bytes each;
 *   1,000 elements (< 4096): float32 states, 4,000 bytes each, no absmax;
 *   4,097 elements: 8-bit, 4,097 bytes each, 17 blocks (16 x 256 = 4,096,
 *     one element left), absmax 68 bytes each;
 *   50,000 elements (paged optimizer, < 1e5): on the device, 8-bit 50,000
 *     bytes each, 196 blocks (195 x 256 = 49,920), absmax 784 bytes each;
 *   99,999 and 100,000 elements: 391 blocks (390 x 256 = 99,840), absmax
 *     1,564 bytes each; 100,000 is not < 1e5: paged with is_paged. */
static struct memest_optim_state bnb(enum memest_optim k, uint64_t numel, uint64_t param_bytes)
{
    struct memest_optim_cfg c = {.kind = k};
    struct memest_optim_state st;
    memest_optim_param_state(&c, numel, param_bytes, &st);
    return st;
}

/* st: state1 and state2 of `each` bytes, with absmax1 and absmax2 of
 * `absmax` bytes when absmax is not 0 (uint8 state, with the maps), paged
 * as the bit mask says. */
static void expect_state(struct memest_optim_state st, uint64_t each, uint64_t absmax,
                         unsigned paged)
{
    CHECK_EQ_INT(st.n, absmax ? 4 : 2);
    CHECK_EQ_U64(st.bytes[0], each);
    CHECK_EQ_U64(st.bytes[1], each);
    if (absmax && st.n == 4) {
        CHECK_EQ_U64(st.bytes[2], absmax);
        CHECK_EQ_U64(st.bytes[3], absmax);
    }
    CHECK_EQ_INT(st.paged, paged);
    CHECK_EQ_INT(st.shared, absmax != 0);
}

static void test_bitsandbytes(void)
{
    const enum memest_optim q8[] = {MEMEST_OPT_ADAM8BIT, MEMEST_OPT_ADAMW8BIT,
                                    MEMEST_OPT_PAGED_ADAM8BIT, MEMEST_OPT_PAGED_ADAMW8BIT};
    for (size_t i = 0; i < sizeof q8 / sizeof *q8; i++) {
        unsigned paged = q8[i] == MEMEST_OPT_PAGED_ADAM8BIT || q8[i] == MEMEST_OPT_PAGED_ADAMW8BIT
                             ? 3 : 0;
        /* bf16 4096 x 4096: the states do not follow the parameter's bytes */
        expect_state(bnb(q8[i], 4096ull * 4096, 33554432), 16777216, 262144, paged);
        /* float32 below 4096 elements, for a bf16 parameter */
        expect_state(bnb(q8[i], 1000, 2000), 4000, 0, 0);
        expect_state(bnb(q8[i], 4095, 16380), 16380, 0, 0);
        /* not < min_8bit_size: 8-bit, 16 blocks */
        expect_state(bnb(q8[i], 4096, 16384), 4096, 64, 0);
        expect_state(bnb(q8[i], 4097, 16388), 4097, 68, 0);
        expect_state(bnb(q8[i], 50000, 100000), 50000, 784, 0);
        expect_state(bnb(q8[i], 99999, 199998), 99999, 1564, 0);
        /* not < 1e5: paged (ceil(100000 / 256) = 391 blocks) */
        expect_state(bnb(q8[i], 100000, 200000), 100000, 1564, paged);
        const struct memest_optim_desc *d = memest_optim_desc(q8[i]);
        CHECK_EQ_INT(d->nshared, 2);
        CHECK_EQ_U64(d->shared_bytes, 1024);
        CHECK_EQ_INT(memest_optim_state_count(&(struct memest_optim_cfg){.kind = q8[i]}), 2);
        CHECK_EQ_INT(memest_optim_state_max(&(struct memest_optim_cfg){.kind = q8[i]}), 6);
    }
    const enum memest_optim p32[] = {MEMEST_OPT_PAGED_ADAMW, MEMEST_OPT_PAGED_ADAMW32BIT};
    for (size_t i = 0; i < sizeof p32 / sizeof *p32; i++) {
        expect_state(bnb(p32[i], 4096ull * 4096, 33554432), 67108864, 0, 3);
        expect_state(bnb(p32[i], 1000, 2000), 4000, 0, 0);
        expect_state(bnb(p32[i], 100000, 400000), 400000, 0, 3);
        CHECK_EQ_INT(memest_optim_state_max(&(struct memest_optim_cfg){.kind = p32[i]}), 4);
    }
    for (int k = MEMEST_OPT_ADAM8BIT; k <= MEMEST_OPT_PAGED_ADAMW32BIT; k++) {
        const struct memest_optim_desc *d = memest_optim_desc((enum memest_optim)k);
        CHECK_EQ_INT(d->init, MEMEST_INIT_PER_PARAM);   /* init_state in step() */
        CHECK(!d->step_scalar);                         /* state["step"] is an int */
        CHECK_EQ_INT(d->accepts, 0);                    /* no amsgrad, no fused */
        CHECK(d->note != NULL);
        CHECK_EQ_INT(d->paged, strncmp(d->name, "paged_", 6) == 0);
        CHECK_EQ_INT(temps((enum memest_optim)k, MEMEST_IMPL_FOREACH, 0), 0);
        CHECK_EQ_INT(temps((enum memest_optim)k, MEMEST_IMPL_FORLOOP, 113), 0);
    }
    /* --advise's 8-bit alternative: the same update with uint8 states */
    struct memest_optim_cfg q;
    CHECK_EQ_INT(memest_optim_8bit(&(struct memest_optim_cfg){.kind = MEMEST_OPT_ADAMW}, &q), 0);
    CHECK_EQ_INT(q.kind, MEMEST_OPT_ADAMW8BIT);
    CHECK_EQ_INT(memest_optim_8bit(&(struct memest_optim_cfg){.kind = MEMEST_OPT_ADAM}, &q), 0);
    CHECK_EQ_INT(q.kind, MEMEST_OPT_ADAM8BIT);
    CHECK_EQ_INT(memest_optim_8bit(&(struct memest_optim_cfg){.kind = MEMEST_OPT_PAGED_ADAMW32BIT}, &q), 0);
    CHECK_EQ_INT(q.kind, MEMEST_OPT_PAGED_ADAMW8BIT);
    CHECK_EQ_INT(memest_optim_8bit(&(struct memest_optim_cfg){.kind = MEMEST_OPT_ADAMW, .amsgrad = true}, &q), -1);
    CHECK_EQ_INT(memest_optim_8bit(&(struct memest_optim_cfg){.kind = MEMEST_OPT_SGD}, &q), -1);
    CHECK_EQ_INT(memest_optim_8bit(&(struct memest_optim_cfg){.kind = MEMEST_OPT_ADAMW8BIT}, &q), -1);
    CHECK_STR_EQ(MEMEST_OPTIM_8BIT_KEY, "optim_8bit");
    enum memest_optim k;
    CHECK_EQ_INT(memest_optim_parse("paged_adamw8bit", &k), 0);
    CHECK_EQ_INT(k, MEMEST_OPT_PAGED_ADAMW8BIT);
    CHECK_EQ_INT(memest_optim_parse("paged_adamw32bit", &k), 0);
    CHECK_EQ_INT(k, MEMEST_OPT_PAGED_ADAMW32BIT);
}

/* Against the replica of bitsandbytes' state creation run under PyTorch 2.6
 * (tests/tools/bnb_optim_state.py -> tests/reference/bnb_optim_state.json):
 * per optimizer and parameter, the state tensors' bytes and paging in
 * creation order, and the maps' bytes once per optimizer. */
static void test_bitsandbytes_replica(void)
{
    cJSON *ref = read_reference_json("tests/reference/bnb_optim_state.json");
    CHECK(ref != NULL);
    if (!ref)
        return;
    const cJSON *c;
    int ncases = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(ref, "cases")) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(c, "optim"));
        const char *dtype = cJSON_GetStringValue(cJSON_GetObjectItem(c, "dtype"));
        uint64_t numel = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(c, "numel"));
        struct memest_optim_cfg oc = {0};
        CHECK(name && dtype && memest_optim_parse(name, &oc.kind) == 0);
        if (!name || !dtype)
            continue;
        uint64_t pb = numel * (strcmp(dtype, "bfloat16") == 0 ? 2 : 4);
        struct memest_optim_state st;
        memest_optim_param_state(&oc, numel, pb, &st);
        const cJSON *tensors = cJSON_GetObjectItem(c, "tensors"), *t;
        CHECK_EQ_INT(cJSON_GetArraySize(tensors), st.n);
        unsigned i = 0;
        cJSON_ArrayForEach(t, tensors) {
            if (i < st.n) {
                CHECK_EQ_U64((uint64_t)cJSON_GetNumberValue(cJSON_GetArrayItem(t, 1)), st.bytes[i]);
                CHECK_EQ_INT(cJSON_IsTrue(cJSON_GetArrayItem(t, 2)), (st.paged >> i) & 1u);
            }
            i++;
        }
        CHECK_EQ_INT(st.shared, st.n == 4);   /* the maps come with uint8 state */
        ncases++;
    }
    CHECK(ncases >= 50);
    const cJSON *sh;
    cJSON_ArrayForEach(sh, cJSON_GetObjectItem(ref, "shared")) {
        struct memest_optim_cfg oc = {0};
        CHECK(memest_optim_parse(sh->string, &oc.kind) == 0);
        const struct memest_optim_desc *d = memest_optim_desc(oc.kind);
        struct memest_optim_state big;
        memest_optim_param_state(&oc, 1u << 20, 4u << 20, &big);
        CHECK_EQ_U64((uint64_t)cJSON_GetNumberValue(sh), big.shared ? d->nshared * d->shared_bytes : 0);
    }
    cJSON_Delete(ref);
}

int main(void)
{
    test_state();
    test_temporaries();
    test_fused();
    test_accepting();
    test_adafactor();
    test_muon();
    test_hf_adafactor();
    test_lion();
    test_bitsandbytes();
    test_bitsandbytes_replica();
    return CHECK_DONE();
}
