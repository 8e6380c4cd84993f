/* test_calc.c - the calculators on a model small enough to count by hand:
 * x[3, 8] -> Linear(8, 16) -> ReLU -> Linear(16, 4), batch 3. */
#include <string.h>

#include "check.h"
#include "memest/calc.h"
#include "memest/model.h"
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
    return CHECK_DONE();
}
