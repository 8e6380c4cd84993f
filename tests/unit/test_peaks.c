/* test_peaks.c - the step simulator against real PyTorch: the peak live
 * tensor bytes of a steady-state training step (SGD, SGD with momentum, Adam;
 * for-loop and foreach) and of an inference forward pass, measured by
 * tests/tools/torch_peak.py into tests/reference/torch_peaks.json (torch
 * 1.13, CPU, exact tensor sizes, CUDA-corrected). memest's figure compared
 * is memory.peak_tensors (struct memest_peak.tensor_bytes): live tensor bytes
 * before the allocator's 512-byte rounding and without the cuBLAS
 * workspace, which is what the measurement counts. The optimizer step
 * follows torch 1.13's code here (cfg.torch_version = 113), as measured.
 * Every figure must be within 3%. Prints the comparison table (doc/memory-model.md's
 * validation table). Runs from the source directory; MEMEST_TORCH_PEAKS
 * names another file. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "reference_json.h"
#include "memest/calc.h"
#include "memest/model.h"
#include "memest/run.h"

#define TOLERANCE 3.0   /* percent */

static double peak_of(const cJSON *o)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "peak"));
}

struct stats {
    int rows, bad;
    double worst;
};

static void row(struct stats *st, const char *model, const char *batch, const char *what,
                double measured, uint64_t memest)
{
    double d = measured > 0 ? 100.0 * ((double)memest - measured) / measured : 0;
    bool ok = fabs(d) <= TOLERANCE;
    printf("| %-12s | %2s | %-22s | %14.0f | %14llu | %+7.3f%% |%s\n", model, batch, what, measured,
           (unsigned long long)memest, d, ok ? "" : " FAIL");
    st->rows++;
    if (!ok)
        st->bad++;
    if (fabs(d) > st->worst)
        st->worst = fabs(d);
    CHECK(ok);
}

static void check_model(struct stats *st, const char *name, const cJSON *entry)
{
    char path[256];
    snprintf(path, sizeof path, "models/%s.json", name);
    struct memest_model m = {0};
    struct memest_graph g = {0};
    struct memest_run r = {0};
    struct memest_error err = {0};
    if (memest_model_read_file(path, &m, &err) != 0 || memest_model_build(&m, NULL, 0, &g, &err) != 0) {
        fprintf(stderr, "%s: %s\n", path, err.msg);
        CHECK(0);
        memest_model_free(&m);
        return;
    }
    const cJSON *batches = cJSON_GetObjectItemCaseSensitive(entry, "batches");
    const cJSON *b;
    cJSON_ArrayForEach(b, batches) {
        /* native RNN kernels: the reference ran PyTorch on the CPU */
        struct memest_run_opts ro = {.batch = atoll(b->string), .dtype = MEMEST_F32,
                                      .torch = 113, .rnn_kernel = MEMEST_RNN_NATIVE};
        if (memest_run_infer(&r, &g, &ro, &err) != 0) {
            fprintf(stderr, "%s: %s\n", path, err.msg);
            CHECK(0);
            continue;
        }
        struct memest_step_cfg cfg;
        memest_step_cfg_default(&cfg);
        cfg.torch_version = 113;
        struct memest_estimate e;
        const cJSON *inf = cJSON_GetObjectItemCaseSensitive(b, "inference");
        if (inf) {
            CHECK_EQ_INT(memest_estimate(&r, &cfg, &e, NULL, NULL, &err), 0);
            row(st, name, b->string, "inference", peak_of(inf), e.infer_peak.tensor_bytes);
        }
        static const struct {
            const char *key;
            enum memest_optim kind;
            double momentum;
        } optims[] = {{"sgd", MEMEST_OPT_SGD, 0}, {"sgd_momentum", MEMEST_OPT_SGD, 0.9},
                      {"adam", MEMEST_OPT_ADAM, 0}};
        static const struct {
            const char *key;
            enum memest_optim_impl impl;
        } impls[] = {{"for-loop", MEMEST_IMPL_FORLOOP}, {"foreach", MEMEST_IMPL_FOREACH}};
        const cJSON *train = cJSON_GetObjectItemCaseSensitive(b, "train");
        for (size_t o = 0; o < sizeof optims / sizeof *optims; o++) {
            const cJSON *jo = cJSON_GetObjectItemCaseSensitive(train, optims[o].key);
            for (size_t i = 0; jo && i < sizeof impls / sizeof *impls; i++) {
                const cJSON *ji = cJSON_GetObjectItemCaseSensitive(jo, impls[i].key);
                if (!cJSON_GetObjectItemCaseSensitive(ji, "peak"))
                    continue;
                cfg.optim.kind = optims[o].kind;
                cfg.optim.momentum = optims[o].momentum;
                cfg.impl = impls[i].impl;
                if (memest_estimate(&r, &cfg, &e, NULL, NULL, &err) != 0) {
                    fprintf(stderr, "%s: %s\n", path, err.msg);
                    CHECK(0);
                    continue;
                }
                char what[64];
                snprintf(what, sizeof what, "%s %s", optims[o].key, impls[i].key);
                row(st, name, b->string, what, peak_of(ji), e.train_peak.tensor_bytes);
            }
        }
    }
    memest_run_free(&r);
    memest_graph_free(&g);
    memest_model_free(&m);
}

int main(void)
{
    const char *path = getenv("MEMEST_TORCH_PEAKS");
    if (!path)
        path = "tests/reference/torch_peaks.json";
    cJSON *j = read_reference_json(path);
    CHECK(j != NULL);
    if (!j) {
        fprintf(stderr, "cannot read %s\n", path);
        return CHECK_DONE();
    }
    const cJSON *models = cJSON_GetObjectItemCaseSensitive(j, "models");
    CHECK(cJSON_GetArraySize(models) >= 9);
    struct stats st = {0};
    printf("| model        |  B | step                   |  PyTorch bytes |   memest bytes |     diff |\n"
           "| ------------ | -- | ---------------------- | -------------- | -------------- | -------- |\n");
    const cJSON *m;
    cJSON_ArrayForEach(m, models) {
        check_model(&st, m->string, m);
    }
    printf("%d figures, %d beyond %.0f%%, worst %.3f%%\n", st.rows, st.bad, TOLERANCE, st.worst);
    cJSON_Delete(j);
    return CHECK_DONE();
}
