/* test_calc.c - the calculators on a model small enough to count by hand:
 * x[3, 8] -> Linear(8, 16) -> ReLU -> Linear(16, 4), batch 3. */
#include <string.h>

#include "check.h"
#include "memest/calc.h"
#include "memest/model.h"
#include "memest/optim.h"
#include "memest/run.h"

static const char *json =
    "{\"inputs\": [{\"name\": \"x\", \"shape\": [8]}],"
    " \"layers\": [{\"name\": \"fc1\", \"type\": \"linear\", \"out_features\": 16},"
    "              {\"name\": \"act\", \"type\": \"relu\"},"
    "              {\"name\": \"fc2\", \"type\": \"linear\", \"out_features\": 4}]}";

/* parameters: fc1 8*16 + 16 = 144, fc2 16*4 + 4 = 68: 212 elements, 4 tensors */
#define PARAMS 212u

static uint64_t optstate(struct memest_run *r, struct memest_optim_cfg cfg, uint64_t *host)
{
    struct memest_optstate s;
    struct memest_error err = {0};
    CHECK_EQ_INT(memest_calc_optimizer(r, &cfg, &s, &err), 0);
    *host = s.host_bytes;
    return s.device_bytes;
}

/* A model read from the JSON text and built, its run inferred with o. */
struct built_run {
    struct memest_model m;
    struct memest_graph g;
    struct memest_run r;
};

static void open_run(struct built_run *b, const char *text, const struct memest_run_opts *o)
{
    struct memest_error err = {0};
    memset(b, 0, sizeof *b);
    CHECK_EQ_INT(memest_model_read_string(text, strlen(text), "t.json", &b->m, &err), 0);
    CHECK_EQ_INT(memest_model_build(&b->m, NULL, 0, &b->g, &err), 0);
    CHECK_EQ_INT(memest_run_infer(&b->r, &b->g, o, &err), 0);
}

static void close_run(struct built_run *b)
{
    memest_run_free(&b->r);
    memest_graph_free(&b->g);
    memest_model_free(&b->m);
}

/* bitsandbytes' optimizers (bitsandbytes/optim/optimizer.py of 0.50.2.dev0,
 * Optimizer2State.init_state, get_state_buffer; test_optim.c has the rules)
 * on x[4096] -> Linear(4096, 4096, bias=False) -> Linear(4096, 1000) in
 * bf16, whose state does not follow the parameters' dtype:
 *   fc1.weight 16,777,216 elements: uint8 16,777,216 B twice, absmax
 *     65,536 blocks x 4 B = 262,144 B twice;
 *   fc2.weight 4,096,000: uint8 4,096,000 B twice, 16,000 blocks: 64,000 B
 *     twice;
 *   fc2.bias 1,000 (< 4096): float32, 4,000 B twice;
 *   qmap1, qmap2: 256 float32 each, once: 2,048 B.
 * adamw8bit: 2 x (16,777,216 + 262,144 + 4,096,000 + 64,000 + 4,000) +
 *   2,048 = 42,408,768 B, none paged.
 * paged_adamw8bit: state1/state2 of both weights (>= 1e5 elements) paged:
 *   2 x (16,777,216 + 4,096,000) = 41,746,432 B; on the device
 *   2 x (262,144 + 64,000 + 4,000) + 2,048 = 662,336 B.
 * paged_adamw32bit: float32, paged 2 x 4 x 20,873,216 = 166,985,728 B;
 *   the bias's 8,000 B on the device, no qmaps.
 * In the simulated steady state the live optimizer state is the device
 * part in the allocator's 512-byte blocks (4,000 B -> 4,096 B, the rest are
 * multiples of 512): 42,408,960 B, 662,528 B and 8,192 B, plus, for a
 * block from the large pool (over 1 MiB: the four uint8 weight states), the
 * remainder of the free block it came from when that is 1 MiB or less
 * (the caching allocator does not split it off): at most 4 MiB more. */
static void test_bitsandbytes(void)
{
    static const char *bjson =
        "{\"inputs\": [{\"name\": \"x\", \"shape\": [4096]}],"
        " \"layers\": [{\"name\": \"fc1\", \"type\": \"linear\", \"out_features\": 4096,"
        "               \"bias\": false},"
        "              {\"name\": \"fc2\", \"type\": \"linear\", \"out_features\": 1000}]}";
    static const struct {
        enum memest_optim kind;
        uint64_t device, paged, live;
    } cases[] = {
        {MEMEST_OPT_ADAMW8BIT, 42408768, 0, 42408960},
        {MEMEST_OPT_ADAM8BIT, 42408768, 0, 42408960},
        {MEMEST_OPT_PAGED_ADAMW8BIT, 662336, 41746432, 662528},
        {MEMEST_OPT_PAGED_ADAM8BIT, 662336, 41746432, 662528},
        {MEMEST_OPT_PAGED_ADAMW32BIT, 8000, 166985728, 8192},
        {MEMEST_OPT_PAGED_ADAMW, 8000, 166985728, 8192},
    };
    struct built_run b;
    struct memest_run *r = &b.r;
    struct memest_error err = {0};
    open_run(&b, bjson, &(struct memest_run_opts){.batch = 2, .dtype = MEMEST_BF16});
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct memest_optstate s;
        struct memest_optim_cfg oc = {.kind = cases[i].kind};
        CHECK_EQ_INT(memest_calc_optimizer(r, &oc, &s, &err), 0);
        CHECK_EQ_U64(s.device_bytes, cases[i].device);
        CHECK_EQ_U64(s.paged_bytes, cases[i].paged);
        CHECK_EQ_U64(s.host_bytes, 0);   /* state["step"] is a Python int */
        for (int first = 0; first < 2; first++) {
            struct memest_step_cfg cfg;
            memest_step_cfg_default(&cfg);
            cfg.optim = oc;
            cfg.first_step = first;
            struct memest_estimate e;
            CHECK_EQ_INT(memest_estimate(r, &cfg, &e, NULL, NULL, &err), 0);
            CHECK_EQ_U64(e.opt.paged_bytes, cases[i].paged);
            if (!first) {   /* the state lives through the steady-state step */
                uint64_t at = e.train_peak.at_peak[MEMEST_CAT_OPTSTATE];
                CHECK(at >= cases[i].live);
                CHECK(at - cases[i].live <= (cases[i].paged ? 0 : 4u << 20));
            }
            CHECK(e.train_peak.sim_events <= e.cost.train_events);
        }
    }
    close_run(&b);
}

int main(void)
{
    struct memest_model m;
    struct memest_graph g;
    struct memest_run r = {0};
    struct memest_error err = {0};
    CHECK_EQ_INT(memest_model_read_string(json, strlen(json), "t.json", &m, &err), 0);
    CHECK_EQ_INT(memest_model_build(&m, NULL, 0, &g, &err), 0);
    struct memest_run_opts o = {.batch = 3, .dtype = MEMEST_F32};
    CHECK_EQ_INT(memest_run_infer(&r, &g, &o, &err), 0);

    struct memest_param_totals p;
    CHECK_EQ_INT(memest_calc_params(&r, &p, &err), 0);
    CHECK_EQ_U64(p.total, PARAMS);
    CHECK_EQ_U64(p.tensors, 4);
    CHECK_EQ_U64(p.bytes, PARAMS * 4);
    CHECK_EQ_U64(memest_calc_grads(&r), PARAMS * 4);

    /* optimizer state: copies of the fp32 parameters (848 bytes each) */
    uint64_t host;
    CHECK_EQ_U64(optstate(&r, (struct memest_optim_cfg){.kind = MEMEST_OPT_SGD}, &host), 0);
    CHECK_EQ_U64(host, 0);
    CHECK_EQ_U64(optstate(&r, (struct memest_optim_cfg){.kind = MEMEST_OPT_SGD, .momentum = 0.9}, &host), 848);
    CHECK_EQ_U64(optstate(&r, (struct memest_optim_cfg){.kind = MEMEST_OPT_ADAM}, &host), 2 * 848);
    CHECK_EQ_U64(host, 4 * 4); /* one float32 step scalar per parameter tensor */
    CHECK_EQ_U64(optstate(&r, (struct memest_optim_cfg){.kind = MEMEST_OPT_ADAMW, .amsgrad = true}, &host), 3 * 848);
    CHECK_EQ_U64(optstate(&r, (struct memest_optim_cfg){.kind = MEMEST_OPT_RMSPROP}, &host), 848);
    CHECK_EQ_U64(optstate(&r, (struct memest_optim_cfg){.kind = MEMEST_OPT_RMSPROP, .momentum = 0.9, .centered = true}, &host), 3 * 848);
    CHECK_EQ_U64(optstate(&r, (struct memest_optim_cfg){.kind = MEMEST_OPT_ADAGRAD}, &host), 848);

    /* saved for backward: fc1 saves x [3, 8] (96 B, the weight is trainable);
     * relu saves its output [3, 16] (192 B); fc2 saves its input, the same
     * storage, counted once: 288 B */
    CHECK_EQ_U64(memest_calc_activations(&r), 96 + 192);

    /* MACs: forward 3*8*16 + 3*16*4 = 576; backward: fc1 only its weight
     * gradient (x does not require grad) 384, fc2 input and weight 2*192 */
    struct memest_flops f;
    memest_calc_flops(&r, &f);
    CHECK(f.fwd_macs == 576);
    CHECK(f.bwd_macs == 384 + 2 * 192);
    CHECK(f.step_macs == 576 + 768);
    CHECK(f.fwd_flops == 2 * 576);
    CHECK(f.step_flops == 2 * (576 + 768));

    /* activations scale with the batch, the model part does not */
    o.batch = 6;
    CHECK_EQ_INT(memest_run_infer(&r, &g, &o, &err), 0);
    CHECK_EQ_U64(memest_calc_activations(&r), 2 * (96 + 192));
    CHECK_EQ_INT(memest_calc_params(&r, &p, &err), 0);
    CHECK_EQ_U64(p.bytes, PARAMS * 4);

    /* fp16: two bytes per element everywhere */
    o.dtype = MEMEST_F16;
    o.batch = 3;
    CHECK_EQ_INT(memest_run_infer(&r, &g, &o, &err), 0);
    CHECK_EQ_INT(memest_calc_params(&r, &p, &err), 0);
    CHECK_EQ_U64(p.bytes, PARAMS * 2);
    CHECK_EQ_U64(memest_calc_activations(&r), (96 + 192) / 2);

    memest_run_free(&r);
    memest_graph_free(&g);
    memest_model_free(&m);
    test_bitsandbytes();
    return CHECK_DONE();
}
