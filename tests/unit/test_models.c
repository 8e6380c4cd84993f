/* test_models.c - the shipped models against independent figures:
 *   - parameter counts: the published tables (torchvision model docs,
 *     Hugging Face model cards; shared/reference/README.md), exact;
 *   - forward MACs at batch 1: torchvision's "GFLOPS" column (which counts
 *     multiply-adds), within 1%;
 *   - parameters, buffers and bytes saved for backward at batches 1 and 2:
 *     real PyTorch, measured by tests/tools/torch_figures.py into
 *     tests/reference/torch_figures.json (CUDA-corrected), activations
 *     within 1%, counts exact; measured with torch 1.13, so the run uses
 *     its autograd rules (run option torch = 113).
 * Prints a comparison table. Runs from the source directory. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "reference_json.h"
#include "memest/calc.h"
#include "memest/model.h"
#include "memest/run.h"

struct published {
    const char *model;
    uint64_t params;  /* exact, published */
    double gmacs;     /* torchvision "GFLOPS" (= GMACs) at 224x224, 0 = none published */
};

static const struct published table[] = {
    {"alexnet", 61100840, 0.71},   {"vgg16", 138357544, 15.47},
    {"resnet18", 11689512, 1.81},  {"resnet50", 25557032, 4.09},
    {"mobilenet_v2", 3504872, 0.30}, {"bert-base", 109482240, 0},
    {"gpt2", 124439808, 0},
    /* no published table: hand counts, written out */
    /* lstm-lm: embedding 10000*650 + 2 LSTM layers of 4*650*(650+650) + 2*4*650
     *          + decoder 650*10000 + 10000 */
    {"lstm-lm", 10000ull * 650 + 2 * (4ull * 650 * (650 + 650) + 2 * 4 * 650) + 650ull * 10000 + 10000, 0},
    /* mlp-mnist: 784*512+512 + 512*512+512 + 512*10+10 */
    {"mlp-mnist", 784ull * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10, 0},
};

static double num(const cJSON *o, const char *k)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static bool within(double got, double want, double rel)
{
    return fabs(got - want) <= rel * fabs(want);
}

int main(void)
{
    cJSON *ref = read_reference_json("tests/reference/torch_figures.json");
    CHECK(ref != NULL);
    const cJSON *models = cJSON_GetObjectItemCaseSensitive(ref, "models");
    printf("%-13s %5s %14s %14s %9s %16s %16s %8s %10s %10s\n", "model", "batch", "params",
           "torch params", "buffers", "activations", "torch (CUDA)", "diff %", "GMACs", "published");
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        const struct published *p = &table[i];
        char path[256];
        snprintf(path, sizeof path, "models/%s.json", p->model);
        struct memest_model m;
        struct memest_graph g;
        struct memest_error err = {0};
        if (memest_model_read_file(path, &m, &err) != 0 || memest_model_build(&m, NULL, 0, &g, &err) != 0) {
            char msg[1200];
            memest_error_format(&err, msg, sizeof msg);
            fprintf(stderr, "%s\n", msg);
            CHECK(!"model loads");
            continue;
        }
        const cJSON *tm = cJSON_GetObjectItemCaseSensitive(models, p->model);
        CHECK(tm != NULL);
        struct memest_run r = {0};
        for (int64_t b = 1; b <= 2; b++) {
            /* native RNN kernels: the reference (lstm-lm) ran PyTorch on the
             * CPU, whose saved tensors are the native path's, not cuDNN's */
            struct memest_run_opts o = {.batch = b, .dtype = MEMEST_F32, .torch = 113,
                                        .rnn_kernel = MEMEST_RNN_NATIVE};
            struct memest_param_totals pt;
            if (memest_run_infer(&r, &g, &o, &err) != 0 || memest_calc_params(&r, &pt, &err) != 0) {
                char msg[1200];
                memest_error_format(&err, msg, sizeof msg);
                fprintf(stderr, "%s\n", msg);
                CHECK(!"model infers");
                break;
            }
            uint64_t act = memest_calc_activations(&r);
            struct memest_flops fl;
            memest_calc_flops(&r, &fl);
            char key[8];
            snprintf(key, sizeof key, "%lld", (long long)b);
            const cJSON *tb = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(tm, "batches"), key);
            double want_act = num(tb, "saved_activation_bytes_cuda_corrected");
            printf("%-13s %5lld %14llu %14.0f %9llu %16llu %16.0f %+8.3f %10.3f %10.2f\n", p->model,
                   (long long)b, (unsigned long long)pt.total, num(tm, "params_total"),
                   (unsigned long long)pt.buffer_elems, (unsigned long long)act, want_act,
                   want_act ? 100.0 * ((double)act - want_act) / want_act : 0.0,
                   fl.fwd_macs / 1e9 / (double)b, p->gmacs);
            if (b == 1) {
                CHECK_EQ_U64(pt.total, p->params);
                CHECK_EQ_U64(pt.total, (uint64_t)num(tm, "params_total"));
                CHECK_EQ_U64(pt.trainable, (uint64_t)num(tm, "params_trainable"));
                CHECK_EQ_U64(pt.buffer_elems, (uint64_t)num(tm, "buffers_count"));
                if (p->gmacs > 0)
                    CHECK(within(fl.fwd_macs / 1e9, p->gmacs, 0.01));
            }
            CHECK(want_act > 0 && within((double)act, want_act, 0.01));
        }
        memest_run_free(&r);
        memest_graph_free(&g);
        memest_model_free(&m);
    }
    cJSON_Delete(ref);
    return CHECK_DONE();
}
