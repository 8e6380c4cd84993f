/* test_sim.c - the training-step simulator on a small MLP computed by hand:
 * x [4, 8] -> fc1 linear(8, 16) -> relu -> fc2 linear(16, 4), cross-entropy,
 * fp32. Also the timeline's contract (every ALLOC freed once) on the
 * shipped models with every step option. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memest/alloc.h"
#include "memest/calc.h"
#include "memest/cuda_overhead.h"
#include "memest/model.h"
#include "memest/run.h"
#include "memest/sim.h"

static const char *const tiny =
    "{\"name\": \"tiny\", \"inputs\": [{\"name\": \"x\", \"shape\": [8]}],"
    " \"layers\": [{\"name\": \"fc1\", \"type\": \"linear\", \"out_features\": 16},"
    "              {\"name\": \"relu\", \"type\": \"relu\"},"
    "              {\"name\": \"fc2\", \"type\": \"linear\", \"out_features\": 4}]}";

struct fixture {
    struct memest_model m;
    struct memest_graph g;
    struct memest_run r;
};

/* The model (text, else file) with run options o (batch, dtype, fused...). */
static int open_model_opts(struct fixture *t, const char *text, const char *file,
                           struct memest_run_opts o)
{
    struct memest_error err = {0};
    memset(t, 0, sizeof *t);
    int rc = text ? memest_model_read_string(text, strlen(text), "tiny", &t->m, &err)
                  : memest_model_read_file(file, &t->m, &err);
    if (rc == 0)
        rc = memest_model_build(&t->m, NULL, 0, &t->g, &err);
    if (rc == 0)
        rc = memest_run_infer(&t->r, &t->g, &o, &err);
    if (rc != 0)
        fprintf(stderr, "%s\n", err.msg);
    return rc;
}

static int open_model(struct fixture *t, const char *text, const char *file, int64_t batch)
{
    return open_model_opts(t, text, file, (struct memest_run_opts){.batch = batch,
                                                                   .dtype = MEMEST_F32});
}

static void close_model(struct fixture *t)
{
    memest_run_free(&t->r);
    memest_graph_free(&t->g);
    memest_model_free(&t->m);
}

static const char *node_of(const struct fixture *t, uint32_t n)
{
    return n < t->g.nnodes ? t->g.nodes[n].name : "-";
}

/* Every ALLOC has exactly one FREE with the same id and size. */
static void check_contract(const struct memest_timeline *tl)
{
    uint32_t n = tl->next_id;
    uint8_t *st = calloc(n ? n : 1, 1);
    uint64_t *bytes = calloc(n ? n : 1, sizeof *bytes);
    bool ok = st && bytes;
    for (size_t i = 0; ok && i < tl->n; i++) {
        const struct memest_event *e = &tl->ev[i];
        if (e->id >= n) {
            ok = false;
        } else if (e->kind == MEMEST_EV_ALLOC) {
            ok = st[e->id] == 0;
            st[e->id] = 1;
            bytes[e->id] = e->bytes;
        } else {
            ok = st[e->id] == 1 && bytes[e->id] == e->bytes;
            st[e->id] = 2;
        }
    }
    for (uint32_t i = 0; ok && i < n; i++)
        ok = st[i] != 1;
    CHECK(ok);
    free(st);
    free(bytes);
}

static int step(struct fixture *t, const struct memest_step_cfg *cfg, struct memest_estimate *e,
                struct memest_timeline *tl)
{
    struct memest_error err = {0};
    struct memest_step_cfg c = *cfg;   /* with the model's loss, as the command resolves it */
    int rc = memest_step_cfg_resolve_loss(&c, t->g.loss, &err);
    if (rc == 0)
        rc = memest_estimate(&t->r, &c, e, tl, NULL, &err);
    if (rc != 0)
        fprintf(stderr, "estimate: %s\n", err.msg);
    return rc;
}

/* One steady-state step of plain SGD (for-loop). */
static int sgd_step(struct fixture *t, struct memest_estimate *e, struct memest_timeline *tl)
{
    struct memest_step_cfg cfg;
    memest_step_cfg_default(&cfg);
    cfg.optim.kind = MEMEST_OPT_SGD;
    cfg.impl = MEMEST_IMPL_FORLOOP;
    return step(t, &cfg, e, tl);
}

/* SGD, steady state, by hand (bytes: fc1.weight 512, fc1.bias 64,
 * fc2.weight 256, fc2.bias 16; x 128, target 4 int64 = 32):
 *   setup 848 + 128 + 32 = 1008
 *   forward: fc1 out 256 (freed after relu), relu out 256 (saved),
 *     fc2 out 64 (the caller's `out`)                       max 1520 at relu
 *   loss: log_softmax 64, loss 4, total_weight 4; backward seed 4,
 *     nll grad 64, log_softmax grad 64                      max 1468
 *   backward fc2: grad of relu's output 256, weight 256, bias 16 (1924),
 *     drops its incoming 64; relu: grad 256 (2116), drops 256, releases
 *     its saved output 256 (1604); fc1: weight 512, bias 64  max 2180
 * The allocator rounds every tensor to 512 bytes: 13 blocks of 512 live
 * at the peak (first reached in the loss), plus two cuBLAS workspaces
 * of 8.125 MiB, the main thread's and the autograd device thread's (both
 * made in the warm-up step, split from one 20 MiB segment: 16.25 MiB
 * leaves 3.75 MiB); reserved: that segment and one 2 MiB small-pool
 * segment. */
static void test_tiny_sgd(void)
{
    struct fixture t;
    if (open_model(&t, tiny, NULL, 4) != 0) {
        CHECK(0);
        return;
    }
    struct memest_estimate e;
    struct memest_timeline tl = {0};
    CHECK_EQ_INT(sgd_step(&t, &e, &tl), 0);
    const struct memest_peak *p = &e.train_peak;
    uint64_t ws = memest_cublas_workspace(0);
    CHECK_EQ_U64(ws, 8519680);
    CHECK_EQ_U64(p->tensor_bytes, 2180);
    CHECK_STR_EQ(node_of(&t, t.g.nodes ? tl.ev[p->tensor_event].node : 0), "fc1");
    CHECK_EQ_INT(tl.ev[p->tensor_event].phase, MEMEST_PH_BACKWARD);
    CHECK_EQ_U64(p->bytes, 2 * ws + 13 * 512);
    CHECK_EQ_INT(p->phase, MEMEST_PH_LOSS);
    CHECK_EQ_U64(p->reserved, (20 + 2) << 20);
    CHECK_EQ_U64(e.reserved_peak, (20 + 2) << 20);
    CHECK_EQ_U64(e.overhead, memest_default_overhead(0));
    CHECK_EQ_U64(e.total_device, e.reserved_peak + e.overhead);
    /* at the peak (loss): parameters 4 blocks, inputs 2, workspace, saved:
     * relu's output and log_softmax's, total_weight; transient: out, loss;
     * activation gradients: seed, nll grad */
    CHECK_EQ_U64(p->at_peak[MEMEST_CAT_PARAMS], 4 * 512);
    CHECK_EQ_U64(p->at_peak[MEMEST_CAT_INPUTS], 2 * 512);
    CHECK_EQ_U64(p->at_peak[MEMEST_CAT_WORKSPACE], 2 * ws);
    CHECK_EQ_U64(p->at_peak[MEMEST_CAT_SAVED], 3 * 512);
    CHECK_EQ_U64(p->at_peak[MEMEST_CAT_TRANSIENT], 2 * 512);
    CHECK_EQ_U64(p->at_peak[MEMEST_CAT_ACTGRADS], 2 * 512);
    CHECK_EQ_U64(p->at_peak[MEMEST_CAT_GRADS], 0);
    check_contract(&tl);
    /* the timeline starts with the setup: x, the parameters, the target
     * (the workspace, made by the warm-up step, follows) */
    CHECK_EQ_INT(tl.ev[0].phase, MEMEST_PH_SETUP);
    CHECK_EQ_U64(tl.ev[0].bytes, 128);
    CHECK_EQ_U64(tl.ev[1].bytes, 512);
    /* inference: 848 + 128, fc1 256, relu 256 -> 1488 at relu */
    CHECK_EQ_U64(e.infer_peak.tensor_bytes, 1488);
    CHECK_STR_EQ(node_of(&t, e.infer_peak.node), "relu");
    memest_timeline_dispose(&tl);
    close_model(&t);
}

/* Adam: state 2 x 848 = 1696 from the setup on. At the optimizer's start:
 * 848 params + 848 grads + 1696 state + 160 inputs + 64 out + 4 loss = 3620.
 *   for-loop: per parameter sqrt() and the division (2 p) with the previous
 *     denom: 3620 + 512 + 512 = 4644 at fc1.weight;
 *   foreach: one copy of every parameter at once: 3620 + 848 = 4468;
 *   fused: none: the backward's 2180 + 1696 = 3876 (and 4-byte step
 *     tensors on the device, one 512-byte block each). */
static void test_tiny_adam(void)
{
    struct fixture t;
    if (open_model(&t, tiny, NULL, 4) != 0) {
        CHECK(0);
        return;
    }
    struct memest_step_cfg cfg;
    memest_step_cfg_default(&cfg);
    struct memest_estimate e;
    struct memest_timeline tl = {0};
    cfg.impl = MEMEST_IMPL_FORLOOP;
    CHECK_EQ_INT(step(&t, &cfg, &e, &tl), 0);
    CHECK_EQ_U64(e.train_peak.tensor_bytes, 4644);
    CHECK_EQ_INT(tl.ev[e.train_peak.tensor_event].phase, MEMEST_PH_OPTIMIZER);
    CHECK_STR_EQ(node_of(&t, tl.ev[e.train_peak.tensor_event].node), "fc1");
    check_contract(&tl);
    cfg.impl = MEMEST_IMPL_FOREACH;
    CHECK_EQ_INT(step(&t, &cfg, &e, &tl), 0);
    CHECK_EQ_U64(e.train_peak.tensor_bytes, 4468);
    check_contract(&tl);
    cfg.impl = MEMEST_IMPL_FUSED;
    CHECK_EQ_INT(step(&t, &cfg, &e, &tl), 0);
    CHECK_EQ_U64(e.train_peak.tensor_bytes, 3876 + 4 * 4);
    check_contract(&tl);
    /* first step: no state before the optimizer creates it (zeros_like per
     * parameter, 1696), then the foreach temporaries: 848 + 848 + 160 + 68
     * + 1696 + 848 = 4468 */
    cfg.impl = MEMEST_IMPL_FOREACH;
    cfg.first_step = true;
    CHECK_EQ_INT(step(&t, &cfg, &e, &tl), 0);
    CHECK_EQ_U64(e.train_peak.tensor_bytes, 4468);
    check_contract(&tl);
    /* zero_grad(set_to_none=False): the gradients (848) live through the
     * whole step and each new one is added in place and dropped: fc2's
     * backward reaches 3552 + 320 (relu's output, out) + 4 (loss) + 64
     * (out's gradient) + 272 + 256 = 4468, as much as the optimizer */
    cfg.first_step = false;
    cfg.zero_grad_zeros = true;
    CHECK_EQ_INT(step(&t, &cfg, &e, &tl), 0);
    CHECK_EQ_U64(e.train_peak.tensor_bytes, 4468);
    check_contract(&tl);
    memest_timeline_dispose(&tl);
    close_model(&t);
}

/* Gradient accumulation and checkpointing on a model with blocks keep the
 * contract; checkpointing lowers the backward peak, accumulation raises it
 * by the gradients (at most). */
static void test_options_contract(void)
{
    static const char *const files[] = {"models/gpt2.json", "models/resnet18.json",
                                        "models/lstm-lm.json", "models/mobilenet_v2.json",
                                        "models/bert-base.json"};
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        struct fixture t;
        if (open_model(&t, NULL, files[f], 1) != 0) {
            CHECK(0);
            continue;
        }
        struct memest_step_cfg cfg;
        memest_step_cfg_default(&cfg);
        struct memest_estimate base, e;
        struct memest_timeline tl = {0};
        CHECK_EQ_INT(step(&t, &cfg, &base, &tl), 0);
        check_contract(&tl);
        cfg.grad_accum = 4;
        CHECK_EQ_INT(step(&t, &cfg, &e, &tl), 0);
        check_contract(&tl);
        CHECK(e.train_peak.tensor_bytes >= base.train_peak.tensor_bytes);
        CHECK(e.train_peak.tensor_bytes <= base.train_peak.tensor_bytes + 2 * base.gradients);
        cfg.grad_accum = 1;
        if (t.g.nblocks) {
            cfg.checkpoint = true;
            CHECK_EQ_INT(step(&t, &cfg, &e, &tl), 0);
            check_contract(&tl);
            CHECK(e.train_peak.tensor_bytes <= base.train_peak.tensor_bytes);
            cfg.checkpoint = false;
        }
        cfg.amp = MEMEST_AMP_BF16;
        CHECK_EQ_INT(step(&t, &cfg, &e, &tl), 0);
        check_contract(&tl);
        cfg.amp = MEMEST_AMP_NONE;
        CHECK_EQ_INT(step(&t, &cfg, &e, &tl), 0);   /* infers again without autocast */
        CHECK_EQ_U64(e.train_peak.tensor_bytes, base.train_peak.tensor_bytes);
        memest_timeline_dispose(&tl);
        close_model(&t);
    }
}

/* A node with many parameter tensors: an LSTM of 40 bidirectional layers
 * has 40 x 2 x 4 = 320 (the simulator once kept 256 per node and silently
 * gave the rest no gradient). input_size 8, hidden 8, so 4H = 32:
 *   layer 0, per direction: w_ih 32x8 + w_hh 32x8 + b_ih 32 + b_hh 32 = 576
 *   layers 1-39, per direction: w_ih 32x16 + w_hh 32x8 + 64 = 832
 *   2 x (576 + 39 x 832) = 66,048 elements, 264,192 bytes in fp32.
 * With SGD, set_to_none, the step's backward allocates each .grad once. */
static void test_many_params(void)
{
    struct fixture t;
    if (open_model(&t,
                   "{\"inputs\": [{\"name\": \"x\", \"shape\": [5, 8]}],"
                   " \"layers\": [{\"name\": \"lstm\", \"type\": \"lstm\", \"hidden_size\": 8,"
                   "   \"num_layers\": 40, \"bidirectional\": true, \"batch_first\": true},"
                   "  {\"type\": \"sum\"}], \"loss\": {\"type\": \"none\"}}",
                   NULL, 2) != 0) {
        CHECK(0);
        return;
    }
    struct memest_estimate e;
    struct memest_timeline tl = {0};
    CHECK_EQ_INT(sgd_step(&t, &e, &tl), 0);
    CHECK_EQ_U64(e.params.total, 66048);
    CHECK_EQ_U64(e.gradients, 264192);
    uint64_t n = 0, bytes = 0;
    for (size_t i = 0; i < tl.n; i++)
        if (tl.ev[i].kind == MEMEST_EV_ALLOC && tl.ev[i].category == MEMEST_CAT_GRADS &&
            tl.ev[i].node == 1) {
            n++;
            bytes += tl.ev[i].bytes;
        }
    CHECK_EQ_U64(n, 320);
    CHECK_EQ_U64(bytes, 264192);
    check_contract(&tl);
    memest_timeline_dispose(&tl);
    close_model(&t);
}

/* Issue 11, bug 1: the backward once kept 256 parameter gradients per node
 * and silently skipped the rest; a bidirectional LSTM of 33 layers has
 * 33 x 2 x 4 = 264. Every gradient must be live at the training peak (Adam,
 * foreach, steady state: the peak is in the optimizer step, with every
 * .grad). torch.nn.LSTM's parameters per layer and direction are
 * weight_ih [4h, in], weight_hh [4h, h], bias_ih and bias_hh [4h]:
 * 4h (in + h) + 8h elements, with in = the input's features for layer 0 and
 * 2h (both directions' outputs) after it. With h = 32 and 8 features every
 * tensor is a multiple of 512 bytes, so the allocator's blocks are the
 * tensors' exact sizes:
 *   layer 0:     4 x 32 x (8 + 32) + 8 x 32 = 5,376 per direction
 *   layers 1-32: 4 x 32 x (64 + 32) + 8 x 32 = 12,544 per direction
 *   2 x (5,376 + 32 x 12,544) = 813,568 elements, 3,254,272 bytes in fp32. */
static void test_lstm_33_layers(void)
{
    const uint64_t h = 32, in0 = 8, layers = 33;
    uint64_t elems = 0;
    for (uint64_t l = 0; l < layers; l++)
        elems += 2 * (4 * h * ((l ? 2 * h : in0) + h) + 8 * h);
    CHECK_EQ_U64(elems, 813568);
    uint64_t bytes = elems * 4;
    struct fixture t;
    if (open_model(&t,
                   "{\"inputs\": [{\"name\": \"x\", \"shape\": [5, 8]}],"
                   " \"layers\": [{\"name\": \"lstm\", \"type\": \"lstm\", \"hidden_size\": 32,"
                   "   \"num_layers\": 33, \"bidirectional\": true, \"batch_first\": true},"
                   "  {\"type\": \"sum\"}], \"loss\": {\"type\": \"none\"}}",
                   NULL, 2) != 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ_U64(t.r.nodes[1].nparam, 264);
    struct memest_step_cfg cfg;
    memest_step_cfg_default(&cfg);
    struct memest_estimate e;
    CHECK_EQ_INT(step(&t, &cfg, &e, NULL), 0);
    CHECK_EQ_U64(e.params.bytes, bytes);
    CHECK_EQ_U64(e.gradients, bytes);
    CHECK_EQ_INT(e.train_peak.phase, MEMEST_PH_OPTIMIZER);
    CHECK_EQ_U64(e.train_peak.at_peak[MEMEST_CAT_GRADS], bytes);
    CHECK_EQ_U64(e.train_peak.at_peak[MEMEST_CAT_PARAMS], bytes);
    CHECK_EQ_U64(e.train_peak.at_peak[MEMEST_CAT_OPTSTATE], 2 * bytes);   /* exp_avg, exp_avg_sq */
    close_model(&t);
}

/* ---- --fused linear-ce ----
 * A language model cut to its ends: token ids [B, S] int64 -> embedding
 * (V, H) -> lm_head linear(H, V, no bias) -> view [-1, V], cross-entropy,
 * fp32, B = 2, S = 12: BT = 24 rows, H = 16. */
static int open_lm(struct fixture *t, int64_t vocab, bool fused)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"inputs\": [{\"name\": \"ids\", \"shape\": [12], \"dtype\": \"int64\"}],"
             " \"layers\": [{\"name\": \"embed\", \"type\": \"embedding\","
             "   \"num_embeddings\": %lld, \"embedding_dim\": 16},"
             "  {\"name\": \"lm_head\", \"type\": \"linear\", \"out_features\": %lld,"
             "   \"bias\": false},"
             "  {\"name\": \"flat\", \"type\": \"view\", \"shape\": [-1, %lld]}]}",
             (long long)vocab, (long long)vocab, (long long)vocab);
    struct memest_run_opts o = {.batch = 2, .dtype = MEMEST_F32,
                                .fused = fused ? MEMEST_FUSED_LINEAR_CE : 0};
    return open_model_opts(t, text, NULL, o);
}

/* The most live tensor bytes over the events of one phase of tl (the
 * workspace left out, as the peaks leave it), and the largest allocation
 * outside the setup. */
static uint64_t phase_max(const struct memest_timeline *tl, uint8_t phase, uint64_t *largest)
{
    uint64_t *bytes = calloc(tl->next_id ? tl->next_id : 1, sizeof *bytes);
    uint64_t live = 0, best = 0;
    *largest = 0;
    for (size_t i = 0; bytes && i < tl->n; i++) {
        const struct memest_event *e = &tl->ev[i];
        if (e->category == MEMEST_CAT_WORKSPACE || e->id >= tl->next_id)
            continue;
        if (e->kind == MEMEST_EV_ALLOC) {
            bytes[e->id] = e->bytes;
            live += e->bytes;
            if (e->phase != MEMEST_PH_SETUP && e->bytes > *largest)
                *largest = e->bytes;
        } else {
            live -= bytes[e->id];
        }
        if (e->phase == phase && live > best)
            best = live;
    }
    free(bytes);
    return best;
}

/* V = 100. Liger (v0.5.10): inc_factor = cdiv(V, H) = cdiv(100, 16) = 7,
 * chunk_size = next_power_of_2(cdiv(24, 7) = 4) = 4, 6 chunks. Bytes:
 * ids 2 x 12 x 8 = 192, target 24 x 8 = 192, each weight P = 100 x 16 x 4
 * = 6,400 (12,800): setup 13,184. The embedding's output E = 24 x 16 x 4 =
 * 1,536 (read by the fused function only: nobody saves it).
 *   forward, the fused function: grad_weight P, grad_input E, loss_1d
 *     24 x 4 = 96, the target mask 24 (bool): 13,184 + 1,536 + 6,400 +
 *     1,536 + 96 + 24 = 22,776; per chunk the logits chunk 4 x 100 x 4 =
 *     1,600 (the previous one still alive until the CE kernel has run: two)
 *     and the grad_input chunk 4 x 16 x 4 = 256 (one logits chunk then):
 *     max 22,776 + 2 x 1,600 = 25,976;
 *     at its end: the loss 4 stays, the rest of its locals go, and E goes
 *     (its last reader): 13,184 + 6,400 + 1,536 + 4 = 21,124;
 *   backward: the seed and the 1.0 compared (4 each); grad_input goes to
 *     the embedding, grad_weight to lm_head.weight's .grad; the embedding
 *     makes its weight's gradient P: 21,124 + 6,400 = 27,524, the peak
 *     (SGD, for-loop, makes no temporaries).
 * The logits [24, 100] (9,600 bytes) are never made: the largest tensor
 * after the setup is a weight gradient, 6,400. */
static void test_fused_ce_small(void)
{
    struct fixture t;
    if (open_lm(&t, 100, true) != 0) {
        CHECK(0);
        return;
    }
    struct memest_step_cfg cfg;
    memest_step_cfg_default(&cfg);
    struct memest_fused_ce f;
    struct memest_error err = {0};
    CHECK_EQ_INT(memest_fused_ce_plan(&t.r, &cfg, false, &f, &err), 0);
    CHECK(f.on);
    CHECK_STR_EQ(node_of(&t, f.head), "lm_head");
    CHECK_STR_EQ(node_of(&t, f.last), "flat");
    CHECK_EQ_U64(f.rows, 24);
    CHECK_EQ_U64(f.hidden, 16);
    CHECK_EQ_U64(f.vocab, 100);
    CHECK_EQ_U64(f.chunk, 4);
    CHECK_EQ_U64(f.nchunks, 6);
    CHECK_EQ_INT(memest_fused_ce_plan(&t.r, &cfg, true, &f, &err), 0);
    CHECK(!f.on);   /* --inference: no loss, nothing fused */

    struct memest_estimate e;
    struct memest_timeline tl = {0};
    CHECK_EQ_INT(sgd_step(&t, &e, &tl), 0);
    uint64_t largest;
    CHECK_EQ_U64(phase_max(&tl, MEMEST_PH_FORWARD, &largest), 25976);
    CHECK_EQ_U64(largest, 6400);
    CHECK_EQ_U64(e.train_peak.tensor_bytes, 27524);
    CHECK_STR_EQ(node_of(&t, tl.ev[e.train_peak.tensor_event].node), "embed");
    CHECK_EQ_INT(tl.ev[e.train_peak.tensor_event].phase, MEMEST_PH_BACKWARD);
    CHECK(e.train_peak.sim_events <= e.cost.train_events);
    check_contract(&tl);
    /* the no-grad pass is the same with and without the option */
    struct fixture plain;
    struct memest_estimate e0;
    if (open_lm(&plain, 100, false) == 0) {
        CHECK_EQ_INT(sgd_step(&plain, &e0, NULL), 0);
        CHECK_EQ_U64(e.infer_peak.tensor_bytes, e0.infer_peak.tensor_bytes);
        CHECK(e.flops.fwd_macs == e0.flops.fwd_macs);
        CHECK(e.flops.bwd_macs == e0.flops.bwd_macs);
        close_model(&plain);
    } else {
        CHECK(0);
    }
    memest_timeline_dispose(&tl);
    close_model(&t);
}

/* V = 5,000: logits O = 24 x 5,000 x 4 = 480,000 bytes, each weight
 * P = 5,000 x 16 x 4 = 320,000, E = 1,536; setup 192 + 2P + 192 = 640,384.
 *   without the option the peak is the loss's: E (saved by lm_head), `out`
 *     O, log_softmax's saved O, the loss 4, nll_loss_backward's zeros O and
 *     log_softmax's gradient O: 640,384 + 1,536 + 4 x 480,000 + 4 =
 *     2,561,924 (lm_head's backward, 2 O + 2 E + P, and the embedding's,
 *     O + E + 2 P, stay below);
 *   with it: chunk_size = next_power_of_2(cdiv(24, cdiv(5000, 16) = 313))
 *     = 1, 24 chunks of 1 x 5,000 x 4 = 20,000; the forward's most is
 *     E + P + E + 96 + 24 + 2 x 20,000 above the setup (363,712), the
 *     embedding's backward 2 P + E + 4 (641,540): 1,281,924.
 * The option saves 4 O - 2 P = 1,280,000 bytes. */
static void test_fused_ce_large(void)
{
    const uint64_t O = 24 * 5000 * 4, P = 5000 * 16 * 4, E = 24 * 16 * 4, setup = 192 + 2 * P + 192;
    struct fixture t[2];
    struct memest_estimate e[2];
    for (int k = 0; k < 2; k++) {
        if (open_lm(&t[k], 5000, k == 1) != 0 || sgd_step(&t[k], &e[k], NULL) != 0) {
            CHECK(0);
            return;
        }
    }
    CHECK_EQ_U64(e[0].train_peak.tensor_bytes, setup + E + 4 * O + 4);
    CHECK_EQ_U64(e[0].train_peak.tensor_bytes, 2561924);
    CHECK_EQ_U64(e[1].train_peak.tensor_bytes, setup + 2 * P + E + 4);
    CHECK_EQ_U64(e[0].train_peak.tensor_bytes - e[1].train_peak.tensor_bytes, 4 * O - 2 * P);
    close_model(&t[0]);
    close_model(&t[1]);
}

/* A last output that is not a linear layer's: a usage error naming it; a
 * linear with a bias (tiny's fc2) and autocast keep the events paired and
 * under their bound. */
static void test_fused_ce_refused(void)
{
    struct fixture t;
    struct memest_run_opts o = {.batch = 4, .dtype = MEMEST_F32, .fused = MEMEST_FUSED_LINEAR_CE};
    if (open_model_opts(&t,
                        "{\"inputs\": [{\"name\": \"x\", \"shape\": [8]}],"
                        " \"layers\": [{\"name\": \"fc\", \"type\": \"linear\", \"out_features\": 4},"
                        "  {\"name\": \"act\", \"type\": \"relu\"}]}",
                        NULL, o) != 0) {
        CHECK(0);
        return;
    }
    struct memest_step_cfg cfg;
    memest_step_cfg_default(&cfg);
    struct memest_estimate e;
    struct memest_error err = {0};
    CHECK_EQ_INT(memest_estimate(&t.r, &cfg, &e, NULL, NULL, &err), -1);
    CHECK_EQ_INT(err.code, MEMEST_ERR_USAGE);
    CHECK(strstr(err.msg, "node \"act\" (relu)") != NULL);
    close_model(&t);

    if (open_model_opts(&t, tiny, NULL, o) != 0) {
        CHECK(0);
        return;
    }
    struct memest_timeline tl = {0};
    for (int amp = 0; amp < 2; amp++) {
        cfg.amp = amp ? MEMEST_AMP_BF16 : MEMEST_AMP_NONE;
        CHECK_EQ_INT(step(&t, &cfg, &e, &tl), 0);
        check_contract(&tl);
        CHECK(e.train_peak.sim_events <= e.cost.train_events);
    }
    memest_timeline_dispose(&tl);
    close_model(&t);
}

/* Bytes and count of the ALLOC events of phase ph and category cat. */
static uint64_t allocs(const struct memest_timeline *tl, uint8_t ph, uint8_t cat, int *count)
{
    uint64_t sum = 0;
    *count = 0;
    for (size_t i = 0; i < tl->n; i++)
        if (tl->ev[i].kind == MEMEST_EV_ALLOC && tl->ev[i].phase == ph &&
            tl->ev[i].category == cat) {
            sum += tl->ev[i].bytes;
            ++*count;
        }
    return sum;
}

/* Cross-entropy on a segmentation map, as nn.CrossEntropyLoss takes it
 * (aten/src/ATen/native/LossNLL.cpp: cross_entropy_loss -> log_softmax over
 * dim 1 -> nll_loss_nd -> nll_loss2d): x [2, 3, 4, 4] -> a 1x1 conv2d to 5
 * classes -> out [2, 5, 4, 4] fp32, target [2, 4, 4] int64. By hand:
 *   setup inputs: x 2*3*16*4 = 384, target 2*16*8 = 256        = 640 in 2
 *   loss: log_softmax [2, 5, 4, 4] saved 2*5*16*4 = 640, total_weight 4
 *     saved (644 in 2); the loss 4, transient (no copy: out is
 *     contiguous); backward: the seed 4, nll_loss2d_backward's zeros 640,
 *     log_softmax's gradient 640                                = 1284 in 3
 * With "class_dim": -1 (out.view(-1, 4): the last dim, W = 4, as classes)
 * the target is [2*5*4] = 40 int64 = 320 bytes; the rest is the same size.
 * The output permuted from channels-last ([2, 4, 4, 5] -> permute(0, 3, 1,
 * 2)) is not contiguous: log_softmax reads a contiguous copy, 640 bytes,
 * transient in the loss (SoftMax.cu host_softmax: input_.contiguous()).
 * PyTorch 1.13 and 2.6 save these tensors (tests/tools/loss_class_dim.py):
 * LogSoftmaxBackward0 result [2, 5, 4, 4] float32, NllLoss2DBackward0 self
 * (the same tensor), target [2, 4, 4] int64, total_weight [] float32. */
static void test_loss_class_dim(void)
{
    static const char *const seg =
        "{\"inputs\": [{\"name\": \"x\", \"shape\": [3, 4, 4]}], \"layers\": ["
        " {\"type\": \"conv2d\", \"in_channels\": 3, \"out_channels\": 5, \"kernel_size\": 1}],"
        " \"loss\": {\"type\": \"crossentropyloss\"";
    static const char *const nhwc =
        "{\"inputs\": [{\"name\": \"x\", \"shape\": [4, 4, 3]}], \"layers\": ["
        " {\"type\": \"linear\", \"out_features\": 5},"
        " {\"type\": \"permute\", \"dims\": [0, 3, 1, 2]}], \"loss\": {\"type\": \"crossentropyloss\"";
    struct {
        const char *model, *class_dim;
        uint64_t inputs, transient;
        int ntransient;
    } cases[] = {
        {seg, "", 384 + 256, 4, 1},
        {seg, ", \"class_dim\": 1", 384 + 256, 4, 1},
        {seg, ", \"class_dim\": -1", 384 + 320, 4, 1},
        {nhwc, "", 384 + 256, 640 + 4, 2},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s}}", cases[k].model, cases[k].class_dim);
        struct fixture t;
        if (open_model(&t, text, NULL, 2) != 0) {
            CHECK(0);
            continue;
        }
        struct memest_estimate e;
        struct memest_timeline tl = {0};
        CHECK_EQ_INT(sgd_step(&t, &e, &tl), 0);
        int n;
        CHECK_EQ_U64(allocs(&tl, MEMEST_PH_SETUP, MEMEST_CAT_INPUTS, &n), cases[k].inputs);
        CHECK_EQ_INT(n, 2);
        CHECK_EQ_U64(allocs(&tl, MEMEST_PH_LOSS, MEMEST_CAT_SAVED, &n), 640 + 4);
        CHECK_EQ_INT(n, 2);
        CHECK_EQ_U64(allocs(&tl, MEMEST_PH_LOSS, MEMEST_CAT_TRANSIENT, &n), cases[k].transient);
        CHECK_EQ_INT(n, cases[k].ntransient);
        CHECK_EQ_U64(allocs(&tl, MEMEST_PH_LOSS, MEMEST_CAT_ACTGRADS, &n), 4 + 640 + 640);
        CHECK_EQ_INT(n, 3);
        check_contract(&tl);
        memest_timeline_dispose(&tl);
        close_model(&t);
    }
}

/* The allocator's layout the probe replays (timeline.h), checked against
 * the events: segments ascend and do not overlap; each one's event is an
 * ALLOC of a block at its start (0: made before the step); every block lies
 * in a segment made by its event; each event's `reserved` is the segments
 * made by then; and they sum to the reserved peak. Returns the count. */
static size_t check_layout(const struct memest_timeline *tl, uint64_t reserved_peak)
{
    bool ok = tl->layout && tl->addr && (tl->nseg == 0 || tl->seg);
    uint64_t sum = 0;
    for (size_t k = 0; ok && k < tl->nseg; k++) {
        const struct memest_segment *s = &tl->seg[k];
        ok = s->bytes > 0 && s->bytes % MEMEST_TIMELINE_RESERVED_UNIT == 0 &&
             (k == 0 || (s->addr >= tl->seg[k - 1].addr + tl->seg[k - 1].bytes &&
                         s->event >= tl->seg[k - 1].event)) &&
             (s->event == 0 || (s->event < tl->n && tl->ev[s->event].kind == MEMEST_EV_ALLOC &&
                                tl->addr[s->event] == s->addr));
        sum += s->bytes;
    }
    CHECK(ok);
    CHECK_EQ_U64(sum, reserved_peak);
    size_t made = 0;
    uint64_t held = 0;
    for (size_t i = 0; ok && i < tl->n; i++) {
        while (made < tl->nseg && tl->seg[made].event <= i)
            held += tl->seg[made++].bytes;
        const struct memest_event *e = &tl->ev[i];
        if (e->kind == MEMEST_EV_ALLOC && e->bytes > 0) {
            bool in = false;
            for (size_t k = 0; k < made && !in; k++)
                in = tl->addr[i] >= tl->seg[k].addr &&
                     tl->addr[i] + e->block <= tl->seg[k].addr + tl->seg[k].bytes;
            ok = in;
        }
        ok = ok && (uint64_t)e->reserved * MEMEST_TIMELINE_RESERVED_UNIT == held;
    }
    CHECK(ok);
    return tl->nseg;
}

static void test_layout(void)
{
    /* the tiny model with SGD (see above): the cuBLAS workspace's 20 MiB
     * segment and one 2 MiB small-pool segment */
    struct fixture t;
    struct memest_estimate e;
    struct memest_timeline tl = {.layout = 1};
    CHECK(open_model(&t, tiny, NULL, 4) == 0);
    CHECK(sgd_step(&t, &e, &tl) == 0);
    CHECK_EQ_U64(e.train_peak.reserved, 22ull << 20);
    CHECK_EQ_U64(check_layout(&tl, e.train_peak.reserved), 2);
    memest_timeline_dispose(&tl);
    close_model(&t);

    /* shipped models, training (Adam, foreach) and inference */
    static const char *const files[] = {"models/resnet18.json", "models/lstm-lm.json",
                                        "models/bert-base.json"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        struct memest_step_cfg cfg;
        memest_step_cfg_default(&cfg);
        struct memest_timeline itl = {.layout = 1};
        struct memest_error err = {0};
        tl = (struct memest_timeline){.layout = 1};
        CHECK(open_model(&t, NULL, files[f], 2) == 0);
        CHECK(memest_step_cfg_resolve_loss(&cfg, t.g.loss, &err) == 0);
        CHECK(memest_estimate(&t.r, &cfg, &e, &tl, &itl, &err) == 0);
        CHECK(check_layout(&tl, e.train_peak.reserved) > 2);
        CHECK(check_layout(&itl, e.infer_peak.reserved) > 2);
        memest_timeline_dispose(&tl);
        memest_timeline_dispose(&itl);
        close_model(&t);
    }
    /* without the flag, no layout */
    tl = (struct memest_timeline){0};
    CHECK(open_model(&t, tiny, NULL, 4) == 0);
    CHECK(sgd_step(&t, &e, &tl) == 0);
    CHECK(!tl.layout && !tl.seg && !tl.addr && tl.nseg == 0);
    memest_timeline_dispose(&tl);
    close_model(&t);
}

int main(void)
{
    test_lstm_33_layers();
    test_many_params();
    test_tiny_sgd();
    test_tiny_adam();
    test_options_contract();
    test_fused_ce_small();
    test_fused_ce_large();
    test_fused_ce_refused();
    test_loss_class_dim();
    test_layout();
    return CHECK_DONE();
}
