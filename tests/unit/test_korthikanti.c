/* test_korthikanti.c - saved activations of one GPT transformer layer
 * against Korthikanti et al. 2022, "Reducing Activation Recomputation in
 * Large Transformer Models", section 4.1 / Table 2 (no parallelism): with
 * 2-byte activations, 2-byte softmax outputs and 1-byte dropout masks, a
 * layer keeps
 *     s*b*h * (34 + 5*a*s/h) bytes:
 *   attention 11*s*b*h + 5*a*s^2*b: the QKV linear's input 2sbh, Q and K
 *     4sbh, the softmax output 2as^2b, its dropout mask as^2b, the dropout
 *     output 2as^2b and V 2sbh (attention over values), the output
 *     linear's input 2sbh, its dropout mask sbh;
 *   MLP 19sbh: the first linear's input 2sbh, GeLU's input 8sbh, the
 *     second linear's input 8sbh, the dropout mask sbh;
 *   the two LayerNorms' inputs 4sbh.
 * With the attention core recomputed (the paper's selective recomputation)
 * the as^2 terms go: 34sbh, which flash attention should match, plus its
 * float32 log-sum-exp.
 *
 * The layer is tests/models/korthikanti_layer.json, in fp16, batch-first as
 * transformers lays it out, 3 layers; a layer's figure is what the nodes of
 * the middle one save first (its input, saved by its first LayerNorm,
 * included; its output, saved by the next layer, not).
 *
 * What memest counts beyond the formula, each written out below:
 *   both: the LayerNorms' float32 mean and rstd [b, s, 1], 2 * 2 * 4sb
 *     = 16sb (the paper leaves out these statistics);
 *   flash: the attention output O [b, a, s, h/a] 2sbh, which flash's
 *     backward needs (selective recomputation keeps no O: it recomputes it),
 *     besides its transposed contiguous copy that the output linear keeps
 *     (the formula's 2sbh), and the log-sum-exp float32 [b, a, s] 4asb. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "memest/calc.h"
#include "memest/model.h"
#include "memest/run.h"

#define S 2048.0 /* seq_len */
#define H 2048.0 /* hidden */
#define A 16.0   /* heads */
#define B 2.0    /* batch */

/* Saved bytes first saved by the nodes of layer 1, under the backend and
 * softmax_fp32 given as --set overrides. */
static double layer_bytes(const char *backend, const char *softmax_fp32)
{
    struct memest_model m;
    struct memest_graph g;
    struct memest_run r = {0};
    struct memest_error err = {0};
    struct memest_override ov[2] = {{"backend", backend, NULL},
                                    {"softmax_fp32", softmax_fp32, NULL}};
    double sum = -1;
    if (memest_model_read_file("tests/models/korthikanti_layer.json", &m, &err) != 0)
        goto fail;
    if (memest_model_build(&m, ov, 2, &g, &err) != 0) {
        memest_model_free(&m);
        goto fail;
    }
    struct memest_run_opts o = {.batch = (int64_t)B, .dtype = MEMEST_F16};
    if (memest_run_infer(&r, &g, &o, &err) == 0) {
        memest_calc_activations(&r);
        sum = 0;
        for (uint32_t n = 0; n < g.nnodes; n++)
            if (strncmp(g.nodes[n].name, "layers.1.", 9) == 0)
                sum += (double)r.nodes[n].act_bytes;
    }
    memest_run_free(&r);
    memest_graph_free(&g);
    memest_model_free(&m);
    if (sum >= 0)
        return sum;
fail: {
    char msg[1200];
    memest_error_format(&err, msg, sizeof msg);
    fprintf(stderr, "%s\n", msg);
    return -1;
}
}

static bool within(double got, double want, double rel)
{
    return fabs(got - want) <= rel * want;
}

int main(void)
{
    double sbh = S * B * H;
    double ln_stats = 2 * 2 * 4 * S * B;

    /* eager attention with dropout, 2-byte softmax: the paper's case */
    double paper = sbh * (34 + 5 * A * S / H);
    double eager = layer_bytes("eager", "false");
    printf("eager: memest %.0f, Korthikanti %.0f (%+.3f%%)\n", eager, paper,
           100 * (eager / paper - 1));
    CHECK(within(eager, paper, 0.02));
    CHECK(eager == paper + ln_stats);

    /* transformers' float32 softmax: 2 bytes more per score (4-byte
     * softmax output) and the 2-byte .to(fp16) copy is not kept (dropout
     * reads it; its output is what the matmul keeps): 7 bytes per score */
    double eager32 = layer_bytes("eager", "true");
    CHECK(eager32 == sbh * 34 + 7 * A * S * S * B + ln_stats);

    /* flash: 34sbh + O + log-sum-exp */
    double lse = 4 * A * S * B;
    double flash = layer_bytes("flash", "false");
    double flash_formula = sbh * 34 + lse;
    printf("flash: memest %.0f, 34sbh + lse %.0f (%+.3f%%), + O %.0f (%+.3f%%)\n", flash,
           flash_formula, 100 * (flash / flash_formula - 1), flash_formula + 2 * sbh,
           100 * (flash / (flash_formula + 2 * sbh) - 1));
    CHECK(within(flash, flash_formula + 2 * sbh, 0.02));
    CHECK(flash == flash_formula + 2 * sbh + ln_stats);
    return CHECK_DONE();
}
