/* test_vision_blocks.c - the small torchvision blocks of tests/models/vision_*.json
 * (ConvNeXt's permuted LayerNorm and stochastic depth, the video ResNets' 3-D
 * stem and head, a segmentation head with padding, interpolation and pixel
 * shuffles) against PyTorch: parameters, buffers and the bytes saved for
 * backward at batch 2, measured by tests/tools/vision_blocks.py into
 * tests/reference/vision_blocks.json with PyTorch 1.13 (run option torch =
 * 113) and 2.6 (the default rules). Exact: the blocks use no op whose CUDA
 * saves differ from the CPU's. Runs from the source directory. */
#include <cjson/cJSON.h>
#include <stdio.h>

#include "check.h"
#include "reference_json.h"
#include "memest/calc.h"
#include "memest/model.h"
#include "memest/run.h"

static const char *const blocks[] = {"vision_convnext_block", "vision_video_stem",
                                     "vision_seg_head"};
static const struct {
    const char *key;
    int torch;
} versions[] = {{"torch_1.13", 113}, {"torch_2.6", 0}};

static double num(const cJSON *o, const char *k)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static void check_block(const cJSON *ref, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "tests/models/%s.json", name);
    struct memest_model m;
    struct memest_graph g;
    struct memest_error err = {0};
    if (memest_model_read_file(path, &m, &err) != 0 ||
        memest_model_build(&m, NULL, 0, &g, &err) != 0) {
        char msg[1200];
        memest_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "%s\n", msg);
        CHECK(!"model loads");
        return;
    }
    for (size_t v = 0; v < sizeof versions / sizeof *versions; v++) {
        const cJSON *want = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(ref, versions[v].key), name);
        CHECK(want != NULL);
        struct memest_run r = {0};
        struct memest_run_opts o = {.batch = 2, .dtype = MEMEST_F32, .torch = versions[v].torch};
        struct memest_param_totals pt;
        if (memest_run_infer(&r, &g, &o, &err) != 0 || memest_calc_params(&r, &pt, &err) != 0) {
            char msg[1200];
            memest_error_format(&err, msg, sizeof msg);
            fprintf(stderr, "%s\n", msg);
            CHECK(!"model infers");
            memest_run_free(&r);
            break;
        }
        uint64_t act = memest_calc_activations(&r);
        printf("%-24s %-10s params %6llu (torch %6.0f)  saved %8llu (torch %8.0f)\n", name,
               versions[v].key, (unsigned long long)pt.total, num(want, "params"),
               (unsigned long long)act, num(want, "saved_bytes"));
        CHECK_EQ_U64(pt.total, (uint64_t)num(want, "params"));
        CHECK_EQ_U64(pt.buffer_elems, (uint64_t)num(want, "buffers"));
        CHECK_EQ_U64(act, (uint64_t)num(want, "saved_bytes"));
        memest_run_free(&r);
    }
    memest_graph_free(&g);
    memest_model_free(&m);
}

int main(void)
{
    cJSON *ref = read_reference_json("tests/reference/vision_blocks.json");
    CHECK(ref != NULL);
    for (size_t i = 0; ref && i < sizeof blocks / sizeof *blocks; i++)
        check_block(ref, blocks[i]);
    cJSON_Delete(ref);
    return CHECK_DONE();
}
