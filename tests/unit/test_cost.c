/* test_cost.c - the cost model of an estimate (cost.h): its figures for a
 * model computed by hand, its event bound against what the simulator really
 * makes on every shipped model under many step options, and the limits:
 * refused during shape inference, refused before simulating, scaled with
 * the node limit. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memest/calc.h"
#include "memest/cost.h"
#include "memest/model.h"
#include "memest/optim.h"
#include "memest/run.h"

struct fixture {
    struct memest_model m;
    struct memest_graph g;
    struct memest_run r;
};

/* Reads and builds text (or file), with node limit max_nodes (0: default),
 * and runs shape inference at batch 1 (--rnn-kernel native). 0, or -1 with err set. */
static int open_model(struct fixture *t, const char *text, const char *file, uint32_t max_nodes,
                      struct memest_error *err)
{
    memset(t, 0, sizeof *t);
    int rc = text ? memest_model_read_string(text, strlen(text), "cost.json", &t->m, err)
                  : memest_model_read_file(file, &t->m, err);
    t->m.max_nodes = max_nodes;
    /* the native RNN kernels: the per-layer records the LSTM cases count
     * (cuDNN's path saves five tensors per module) */
    struct memest_run_opts o = {.batch = 1, .dtype = MEMEST_F32, .rnn_kernel = MEMEST_RNN_NATIVE};
    if (rc == 0)
        rc = memest_model_build(&t->m, NULL, 0, &t->g, err);
    if (rc == 0)
        rc = memest_run_infer(&t->r, &t->g, &o, err);
    return rc;
}

static void close_model(struct fixture *t)
{
    memest_run_free(&t->r);
    memest_graph_free(&t->g);
    memest_model_free(&t->m);
}

/* x [4] -> linear(4, 4) -> n ReLUs (tests/limits/chain_*.json), with node
 * limit max_nodes, estimated with the default step into *e: the estimate's
 * 0 / -1, or -2 when the model could not be opened (t is closed then). */
static int chain_estimate(int n, uint32_t max_nodes, struct fixture *t,
                          struct memest_estimate *e, struct memest_error *err)
{
    char text[256];
    snprintf(text, sizeof text,
             "{\"inputs\": [{\"name\": \"x\", \"shape\": [4]}], \"layers\": [{\"type\": "
             "\"linear\", \"out_features\": 4}, {\"type\": \"relu\", \"repeat\": %d}]}",
             n);
    if (open_model(t, text, NULL, max_nodes, err) != 0) {
        close_model(t);
        return -2;
    }
    struct memest_step_cfg cfg;
    memest_step_cfg_default(&cfg);
    return memest_estimate(&t->r, &cfg, e, NULL, NULL, err);
}

/* The chain by hand, batch 1, the default step (Adam foreach, steady
 * state, one micro-batch, fp32, cross-entropy):
 *   records: n + 2 nodes (x, the linear layer, the ReLUs), n + 1 node
 *     inputs, n + 2 values, n + 4 storages (x, W, b and each output), 2
 *     parameter tensors, n + 1 saved tensors (x for W's gradient, each
 *     ReLU's output); weighted 4, 1, 3, 1, 3, 1: 10 n + 26 units;
 *   event bound (cost.c): 3 persistent storages, n + 1 others, no
 *     workspace, no scratch, no contiguous copy; n input gradients (x takes
 *     none), no sum, 2 trainable parameters, Adam's 2 state copies and 1
 *     temporary each. Training: 3 + target + 2 cuBLAS workspaces (the
 *     forward's and the backward thread's) + 2 x 2 (state) + 2 steps x
 *     ((n + 1) forward + 8 loss + (n + 2) backward + 2 temporaries)
 *     = 4 n + 36 allocations; the no-grad pass: 3 + cuBLAS + 2 (n + 1) =
 *     2 n + 6; events twice the allocations: 12 n + 84;
 *   total 22 n + 110 (so 227,267 ReLUs cost 4,999,984, within the limit of
 *   5,000,000, and 227,268 cost 5,000,006: tests/limits/cost_*.json). */
static void test_chain_by_hand(void)
{
    static const int ns[] = {1, 1000};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
        uint64_t n = (uint64_t)ns[i];
        struct fixture t;
        struct memest_error err = {0};
        struct memest_estimate e;
        if (chain_estimate(ns[i], 0, &t, &e, &err) == -2) {
            CHECK(0);
            continue;
        }
        CHECK_EQ_INT(err.code, MEMEST_ERR_NONE);
        CHECK_EQ_U64(e.cost.nodes, n + 2);
        CHECK_EQ_U64(e.cost.inputs, n + 1);
        CHECK_EQ_U64(e.cost.values, n + 2);
        CHECK_EQ_U64(e.cost.storages, n + 4);
        CHECK_EQ_U64(e.cost.params, 2);
        CHECK_EQ_U64(e.cost.saves, n + 1);
        CHECK_EQ_U64(e.cost.records, 10 * n + 26);
        CHECK_EQ_U64(e.cost.train_events, 8 * n + 72);
        CHECK_EQ_U64(e.cost.events, 12 * n + 84);
        CHECK_EQ_U64(e.cost.total, 22 * n + 110);
        /* the bound holds; here the loss makes 6 allocations, not 8 */
        CHECK_EQ_U64(e.train_peak.sim_events, 8 * n + 72 - 2 * 2 * 2);
        CHECK_EQ_U64(e.infer_peak.sim_events, 4 * n + 12);
        /* the same with the step's timeline exported (the list handed over) */
        struct memest_step_cfg cfg;
        memest_step_cfg_default(&cfg);
        struct memest_timeline tl = {0};
        struct memest_estimate e2;
        CHECK_EQ_INT(memest_estimate(&t.r, &cfg, &e2, &tl, NULL, &err), 0);
        CHECK_EQ_U64(e2.train_peak.sim_events, e.train_peak.sim_events);
        CHECK(tl.n > 0 && tl.n < e2.train_peak.sim_events);   /* the warm-up is left out */
        memest_timeline_dispose(&tl);
        close_model(&t);
    }
}

/* A small deterministic generator of step options. */
static uint32_t next(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static void random_cfg(uint32_t *seed, bool blocks, struct memest_step_cfg *c)
{
    memest_step_cfg_default(c);
    c->optim.kind = (enum memest_optim)(next(seed) % MEMEST_OPT_COUNT);
    c->optim.momentum = next(seed) % 2 ? 0.9 : 0;
    c->optim.amsgrad = next(seed) % 2;
    c->optim.centered = next(seed) % 2;
    c->impl = (enum memest_optim_impl)(next(seed) % MEMEST_IMPL_COUNT);
    if (c->impl == MEMEST_IMPL_FUSED &&
        !(memest_optim_desc(c->optim.kind)->accepts & MEMEST_OPTF_FUSED))   /* not in PyTorch */
        c->impl = MEMEST_IMPL_FORLOOP;
    c->torch_version = next(seed) % 2 ? 113 : 0;
    c->first_step = next(seed) % 2;
    c->zero_grad_zeros = next(seed) % 2;
    c->grad_accum = next(seed) % 2 ? 4 : 1;
    c->amp = (enum memest_amp)(next(seed) % 3);
    c->checkpoint = blocks && next(seed) % 2;
    static const enum memest_loss losses[] = {MEMEST_LOSS_CROSSENTROPY, MEMEST_LOSS_MSE,
                                              MEMEST_LOSS_BCEWITHLOGITS, MEMEST_LOSS_NONE};
    c->loss = losses[next(seed) % 4];
}

/* The simulations never make more events than the bound, whatever the
 * step options; and the bound is not loose on these models (at most half
 * again the events, the slack of views and unreached parameters). */
static void test_bound_holds(void)
{
    static const char *const files[] = {
        "models/alexnet.json", "models/bert-base.json", "models/gpt2.json",
        "models/lstm-lm.json", "models/mlp-mnist.json", "models/mobilenet_v2.json",
        "models/resnet18.json", "models/resnet50.json", "models/vgg16.json",
    };
    uint32_t seed = 12345;
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        struct fixture t;
        struct memest_error err = {0};
        if (open_model(&t, NULL, files[f], 0, &err) != 0) {
            CHECK(0);
            continue;
        }
        for (int k = 0; k < 40; k++) {
            struct memest_step_cfg cfg;
            random_cfg(&seed, t.g.nblocks > 0, &cfg);
            struct memest_estimate e;
            memset(&err, 0, sizeof err);
            if (memest_estimate(&t.r, &cfg, &e, NULL, NULL, &err) != 0) {
                CHECK_EQ_INT(err.code, MEMEST_ERR_USAGE);   /* e.g. fused rmsprop */
                continue;
            }
            uint64_t made = e.train_peak.sim_events + e.infer_peak.sim_events;
            CHECK(e.train_peak.sim_events <= e.cost.train_events);
            CHECK(made <= e.cost.events);
            CHECK(2 * e.cost.events <= 3 * made);
            if (2 * e.cost.events > 3 * made)
                fprintf(stderr, "  %s: optim %s impl %d torch %u accum %lld ckpt %d loss %d: %" PRIu64
                        " events, bound %" PRIu64 "\n", files[f], memest_optim_name(cfg.optim.kind),
                        (int)cfg.impl, cfg.torch_version, (long long)cfg.grad_accum, cfg.checkpoint,
                        (int)cfg.loss, made, e.cost.events);
            CHECK_EQ_U64(e.cost.total, e.cost.records + e.cost.events);
            if (made > e.cost.events)
                fprintf(stderr, "  %s: %" PRIu64 " events, bound %" PRIu64 "\n", files[f], made,
                        e.cost.events);
        }
        close_model(&t);
    }
}

static void test_limit_scales(void)
{
    CHECK_EQ_U64(memest_cost_limit(0), MEMEST_MAX_COST);
    CHECK_EQ_U64(memest_cost_limit(MEMEST_MAX_NODES), MEMEST_MAX_COST);
    CHECK_EQ_U64(memest_cost_limit(5000), 100000);   /* 5,000,000 x 5,000 / 250,000 */
    struct memest_graph g = {0};
    CHECK_EQ_U64(memest_cost_graph_limit(&g), MEMEST_MAX_COST);
}

/* With the node limit at 5,000 (the fuzzer's), one estimate may cost
 * 100,000 units: 4,540 ReLUs cost 99,990, 4,541 cost 100,012 and are
 * refused before anything is simulated. */
static void test_refused_before_simulating(void)
{
    static const int ns[] = {4540, 4541};
    for (int i = 0; i < 2; i++) {
        struct fixture t;
        struct memest_error err = {0};
        struct memest_estimate e;
        int rc = chain_estimate(ns[i], 5000, &t, &e, &err);
        if (rc == -2) {
            CHECK(0);
            continue;
        }
        CHECK_EQ_U64(e.cost.total, 22 * (uint64_t)ns[i] + 110);
        if (i == 0) {
            CHECK_EQ_INT(rc, 0);
        } else {
            CHECK_EQ_INT(rc, -1);
            CHECK_EQ_INT(err.code, MEMEST_ERR_LIMIT);
            CHECK_CONTAINS(err.msg, "one estimate costs 100,012 units");
            CHECK_CONTAINS(err.msg, "more than the limit of 100,000");
            CHECK_EQ_U64(e.train_peak.sim_events, 0);   /* nothing simulated */
            CHECK_EQ_U64(e.infer_peak.sim_events, 0);
        }
        close_model(&t);
    }
}

/* Shape inference stops once its records pass the limit: 64-layer
 * bidirectional LSTMs make about 1,092 storages, 512 parameter tensors and
 * 578 saved tensors each (over 3,000 units), so 40 of them pass 100,000;
 * the error names the node where it stopped, and what was made stays
 * within the limit plus that node's records. */
static void test_refused_during_inference(void)
{
    static const char *const text =
        "{\"inputs\": [{\"name\": \"x\", \"shape\": [1, 1]}], \"layers\": [{\"name\": \"l\", "
        "\"type\": \"lstm\", \"hidden_size\": 1, \"num_layers\": 64, \"bidirectional\": true, "
        "\"batch_first\": true, \"repeat\": 40}]}";
    struct fixture t;
    struct memest_error err = {0};
    CHECK_EQ_INT(open_model(&t, text, NULL, 5000, &err), -1);
    CHECK_EQ_INT(err.code, MEMEST_ERR_LIMIT);
    CHECK_CONTAINS(err.msg, "shape inference made records costing");
    CHECK_CONTAINS(err.msg, "more than the 100,000 one estimate may cost");
    CHECK(strncmp(err.node, "l.", 2) == 0 && strcmp(err.node, "l.39") != 0);
    struct memest_cost c;
    memest_cost_records(&t.r, &c);
    uint64_t node = 3 * 512 + 1092 + 578 + 3 * 3 + 4 + 1;   /* one LSTM's records, about */
    CHECK(c.records > 100000 && c.records <= 100000 + node + node / 10);
    close_model(&t);
}

int main(void)
{
    test_chain_by_hand();
    test_bound_holds();
    test_limit_scales();
    test_refused_before_simulating();
    test_refused_during_inference();
    return CHECK_DONE();
}
