/* test_fit.c - the fit verdict and its one-line text, and the roofline time
 * estimate, against figures computed by hand. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "memest/calc.h"
#include "memest/fit.h"
#include "memest/model.h"
#include "memest/report.h"
#include "memest/roofline.h"
#include "memest/run.h"

#define GiB 1073741824ull
#define MiB 1048576ull

static const char *line(uint64_t needs, uint64_t card, double headroom, bool *fits)
{
    static char buf[256];
    struct memest_fit f;
    memest_fit_check(needs, card, headroom, &f);
    if (fits)
        *fits = f.fits;
    return memest_fit_text(&f, buf, sizeof buf);
}

static void test_verdict(void)
{
    bool fits;
    /* the examples: 31.2 GiB = 33500744089.6 bytes, 52.1 GiB = 55942014156.8 */
    CHECK_STR_EQ(line(33500744090ull, 40 * GiB, 5, &fits),
                 "fits: 31.2 GiB of 40.0 GiB (78%), headroom 8.8 GiB");
    CHECK(fits);
    CHECK_STR_EQ(line(55942014157ull, 40 * GiB, 5, &fits),
                 "does not fit: needs 52.1 GiB, card has 40.0 GiB");
    CHECK(!fits);
    /* within the card, not within the headroom: 5% of 40 GiB leaves 38 GiB */
    CHECK_STR_EQ(line(39 * GiB, 40 * GiB, 5, &fits),
                 "does not fit: needs 39.0 GiB, card has 40.0 GiB (38.0 GiB with 5% headroom)");
    CHECK(!fits);
    /* the boundary: usable = floor(40 GiB * 0.95) = 40802189312 exactly */
    struct memest_fit f;
    memest_fit_check(0, 40 * GiB, 5, &f);
    CHECK_EQ_U64(f.usable, 40802189312ull);
    CHECK(f.free == (int64_t)(40 * GiB));
    memest_fit_check(41 * GiB, 40 * GiB, 5, &f);
    CHECK(f.free == -(int64_t)GiB);
    CHECK_STR_EQ(line(40802189312ull, 40 * GiB, 5, &fits),
                 "fits: 38.0 GiB of 40.0 GiB (95%), headroom 2.0 GiB");
    CHECK(fits);
    /* one byte more does not fit; more decimals (up to 4) show the two apart
     * where they can */
    CHECK_STR_EQ(line(40802189313ull, 40 * GiB, 5, &fits),
                 "does not fit: needs 38.0000 GiB, card has 40.0000 GiB "
                 "(38.0000 GiB with 5% headroom)");
    CHECK(!fits);
    CHECK_STR_EQ(line(38 * GiB + 30 * MiB, 40 * GiB, 5, &fits),
                 "does not fit: needs 38.03 GiB, card has 40.00 GiB (38.00 GiB with 5% headroom)");
    CHECK_STR_EQ(line(38 * GiB + 60 * MiB, 40 * GiB, 5, &fits),
                 "does not fit: needs 38.1 GiB, card has 40.0 GiB (38.0 GiB with 5% headroom)");
    CHECK_STR_EQ(line(40 * GiB + 1, 40 * GiB, 5, &fits),
                 "does not fit: needs 40.0000 GiB, card has 40.0000 GiB");
    /* headroom 0: the whole card */
    CHECK_STR_EQ(line(40 * GiB, 40 * GiB, 0, &fits), "fits: 40.0 GiB of 40.0 GiB (100%), headroom 0 B");
    CHECK(fits);
    CHECK_STR_EQ(line(40 * GiB - 1, 40 * GiB, 0, &fits),
                 "fits: 40.0 GiB of 40.0 GiB (99%), headroom 1 B");
    /* each figure in its own unit */
    CHECK_STR_EQ(line(3250586, 64 * MiB, 5, &fits), "fits: 3.1 MiB of 64.0 MiB (5%), headroom 60.9 MiB");
    CHECK_STR_EQ(line(11010048, GiB, 5, &fits), "fits: 10.5 MiB of 1.0 GiB (1%), headroom 1013.5 MiB");
    CHECK_STR_EQ(line(12 * GiB, 40 * GiB, 5, &fits), "fits: 12.0 GiB of 40.0 GiB (30%), headroom 28.0 GiB");
    CHECK_STR_EQ(line(1000, 512, 5, &fits), "does not fit: needs 1000 B, card has 512 B");
}

/* One linear layer, 1000 -> 1000 without bias, batch 10, fp32, Adam, on a
 * card of 1 TFLOP/s at mfu 0.5 and 100 GB/s. By hand:
 *   forward:  2 * 10*1000*1000 = 2e7 FLOPs -> 2e7 / 5e11 = 4.0e-5 s;
 *             bytes: input 40,000 + weight 4,000,000 + output 40,000
 *             = 4,080,000 -> 4.08e-5 s: memory-bound, 4.08e-5 s
 *   backward: the input needs no gradient, so only grad(W): 2e7 FLOPs (4e-5 s);
 *             bytes: grad(out) 40,000 + saved input 40,000 + W read 4e6 +
 *             grad(W) written 4e6 = 8,080,000 -> 8.08e-5 s: memory-bound
 *   optimizer: params 4e6 read and written, grads 4e6 read, Adam state
 *             8e6 read and written = 2.8e7 bytes -> 2.8e-4 s
 *   step = 4.08e-5 + 8.08e-5 + 2.8e-4 = 4.016e-4 s; 10 / 4.016e-4 samples/s */
static void test_roofline(void)
{
    const char *json = "{\"inputs\": [{\"name\": \"x\", \"shape\": [1000]}], \"layers\": ["
                       "{\"name\": \"fc\", \"type\": \"linear\", \"out_features\": 1000, "
                       "\"bias\": false}]}";
    struct memest_model m = {0};
    struct memest_graph g = {0};
    struct memest_run r = {0};
    struct memest_error err = {0};
    struct memest_estimate e;
    struct memest_step_cfg step;
    memest_step_cfg_default(&step);
    struct memest_run_opts ro = {.batch = 10, .dtype = MEMEST_F32};
    int rc = memest_model_read_string(json, strlen(json), "t.json", &m, &err);
    if (rc == 0)
        rc = memest_model_build(&m, NULL, 0, &g, &err);
    if (rc == 0)
        rc = memest_run_infer(&r, &g, &ro, &err);
    if (rc == 0)
        rc = memest_estimate(&r, &step, &e, NULL, NULL, &err);
    CHECK(rc == 0);
    if (rc != 0) {
        fprintf(stderr, "  %s\n", err.msg);
        goto end;
    }
    struct memest_time_opts o = {.peak_flops = 1e12, .bandwidth = 1e11, .mfu = 0.5, .grad_accum = 1};
    struct memest_time t;
    struct memest_node_time nodes[2];
    CHECK(memest_roofline(&r, &e, &o, &t, nodes) == 0);
    CHECK(fabs(t.fwd_s - 4.08e-5) < 1e-12);
    CHECK(fabs(t.bwd_s - 8.08e-5) < 1e-12);
    CHECK(fabs(t.opt_s - 2.8e-4) < 1e-12);
    CHECK(fabs(t.step_s - 4.016e-4) < 1e-12);
    CHECK(fabs(t.samples_per_s - 10 / 4.016e-4) < 1e-6);
    CHECK(nodes[1].fwd.memory_bound && nodes[1].bwd.memory_bound);
    CHECK(nodes[1].fwd.flops == 2e7 && nodes[1].fwd.bytes == 4080000);
    CHECK(nodes[1].bwd.flops == 2e7 && nodes[1].bwd.bytes == 8080000);
    CHECK(nodes[0].fwd.bytes == 0 && nodes[0].bwd.bytes == 0); /* the input: data loading */
    CHECK_EQ_U64(t.passes, 2);
    CHECK_EQ_U64(t.memory_bound_passes, 2);
    CHECK(fabs(t.memory_bound_fraction - 1) < 1e-12);
    CHECK(t.flops == 4e7);

    /* a faster memory makes it compute-bound: at 1 TB/s the forward is
     * max(4e-5, 4.08e-6) = 4e-5 s */
    o.bandwidth = 1e12;
    CHECK(memest_roofline(&r, &e, &o, &t, nodes) == 0);
    CHECK(fabs(t.fwd_s - 4e-5) < 1e-12);
    CHECK(!nodes[1].fwd.memory_bound);
    /* 4 micro-batches per step: 4 * (4e-5 + 4e-5) + 2.8e-5 s for 40 samples */
    o.grad_accum = 4;
    CHECK(memest_roofline(&r, &e, &o, &t, NULL) == 0);
    CHECK(fabs(t.step_s - (4 * 8e-5 + 2.8e-5)) < 1e-12);
    CHECK(fabs(t.samples_per_s - 40 / (4 * 8e-5 + 2.8e-5)) < 1e-6);
    /* inference: the forward pass only */
    o.grad_accum = 1;
    o.inference = true;
    CHECK(memest_roofline(&r, &e, &o, &t, NULL) == 0);
    CHECK(fabs(t.step_s - 4e-5) < 1e-12 && t.opt_s == 0 && t.bwd_s == 0);
    /* unusable options */
    o.peak_flops = 0;
    CHECK(memest_roofline(&r, &e, &o, &t, NULL) == -1);
end:
    memest_run_free(&r);
    memest_graph_free(&g);
    memest_model_free(&m);
}

/* The slowest memory-bound passes: by time, equal times in node order;
 * compute-bound passes and passes without a time left out. */
static void test_slowest(void)
{
    struct memest_node_time nodes[5] = {0};
    nodes[0].fwd = (struct memest_pass_time){.seconds = 0, .memory_bound = true};
    nodes[1].fwd = (struct memest_pass_time){.seconds = 2e-3, .memory_bound = true};
    nodes[1].bwd = (struct memest_pass_time){.seconds = 9e-3, .memory_bound = false};
    nodes[2].fwd = (struct memest_pass_time){.seconds = 1e-3, .memory_bound = true};
    nodes[2].bwd = (struct memest_pass_time){.seconds = 5e-3, .memory_bound = true};
    nodes[3].fwd = (struct memest_pass_time){.seconds = 2e-3, .memory_bound = true};
    nodes[4].bwd = (struct memest_pass_time){.seconds = 3e-4, .memory_bound = true};
    struct memest_slow_pass top[3];
    CHECK_EQ_INT(memest_roofline_slowest(nodes, 5, top, 3), 3);
    CHECK(top[0].node == 2 && top[0].bwd && top[0].seconds == 5e-3);
    CHECK(top[1].node == 1 && !top[1].bwd);
    CHECK(top[2].node == 3 && !top[2].bwd);
    CHECK_EQ_INT(memest_roofline_slowest(nodes, 1, top, 3), 0);
    CHECK_EQ_INT(memest_roofline_slowest(nodes, 5, top, 0), 0);
}

int main(void)
{
    test_verdict();
    test_roofline();
    test_slowest();
    return CHECK_DONE();
}
