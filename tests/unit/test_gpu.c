/* test_gpu.c - the GPU presets: the embedded models/gpus.json, the strict
 * parser, lookup with "did you mean", device-name matching, and the
 * precision rule of the time estimate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memest/gpu.h"
#include "memest/report.h"

static const char *const required[] = {
    "t4",          "v100-16gb",      "v100-32gb",      "a10",       "l4",       "rtx3090",
    "rtx4090",     "a100-40gb",      "a100-80gb",      "h100-80gb", "h200",     "mi300x",
    "l40s",        "rtx-a6000",      "rtx6000-ada",    "a100-pcie-40gb", "a100-pcie-80gb",
    "h100-pcie",   "h100-nvl",       "h200-nvl",       "gh200",     "gh200-144gb", "b200",
    "mi250x",      "mi325x",
};

#define ONE_GPU(extra)                                                                          \
    "{\"schema_version\": 1, \"gpus\": [{\"name\": \"x100\", \"label\": \"X 100\", "            \
    "\"device_names\": [\"Acme X100\"], \"arch\": \"ampere\", \"compute_capability\": \"8.6\", "  \
    "\"memory\": 42505273344, "       \
    "\"memory_exact\": true, \"memory_source\": \"s\", "                                      \
    "\"tflops\": {\"fp32\": 19.5, \"tf32\": 156, \"fp16\": 312, \"bf16\": null}, "             \
    "\"bandwidth_gbs\": 1555, \"spec_source\": \"s\"" extra "}]}"

static int parse(const char *text, struct memest_gpu_table *t, struct memest_error *err)
{
    memset(err, 0, sizeof *err);
    return memest_gpu_table_parse(text, strlen(text), "test.json", t, err);
}

static void test_parse_figures(void)
{
    struct memest_gpu_table t;
    struct memest_error err;
    int rc = parse(ONE_GPU(""), &t, &err);
    CHECK(rc == 0);
    if (rc != 0) {
        fprintf(stderr, "  %s: %s\n", err.path, err.msg);
        return;
    }
    CHECK_EQ_U64(t.n, 1);
    CHECK_EQ_INT(t.gpus[0].compute_capability, 86);
    const struct memest_gpu *g = &t.gpus[0];
    CHECK_STR_EQ(g->name, "x100");
    CHECK_EQ_U64(g->memory, 42505273344ull); /* exact, above 2^32 */
    CHECK(g->memory_exact);
    CHECK(g->peak_flops[MEMEST_PREC_FP32] == 19.5e12);
    CHECK(g->peak_flops[MEMEST_PREC_TF32] == 156e12);
    CHECK(g->peak_flops[MEMEST_PREC_FP16] == 312e12);
    CHECK(g->peak_flops[MEMEST_PREC_BF16] == 0); /* null: no bf16 tensor cores */
    CHECK(g->bandwidth == 1555e9);
    CHECK_STR_EQ(g->arch, "ampere");
    memest_gpu_table_free(&t);
}

static void test_parse_errors(void)
{
    struct memest_gpu_table t;
    struct memest_error err;
    CHECK(parse(ONE_GPU(", \"memroy\": 1"), &t, &err) != 0);
    CHECK_CONTAINS(err.msg, "unknown field \"memroy\"");
    CHECK_STR_EQ(err.path, "gpus[0].memroy");
    CHECK(parse(ONE_GPU(", \"spec_source\": \"again\""), &t, &err) != 0);
    CHECK_CONTAINS(err.msg, "duplicate key");
    CHECK(parse("{\"schema_version\": 1, \"gpus\": [{\"name\": \"x\"}]}", &t, &err) != 0);
    CHECK_CONTAINS(err.msg, "missing field");
    CHECK(parse("{\"schema_version\": 2, \"gpus\": []}", &t, &err) != 0);
    CHECK_CONTAINS(err.msg, "schema_version must be 1");
    CHECK(parse("{\"schema_version\": 1, \"gpus\": []}", &t, &err) != 0);
    CHECK_CONTAINS(err.msg, "non-empty list");
    /* two entries with the same name */
    const char *two = "{\"schema_version\": 1, \"gpus\": ["
                      "{\"name\": \"a\", \"label\": \"A\", \"device_names\": [\"A\"], \"arch\": \"ada\", \"compute_capability\": null, "
                      "\"memory\": 1, \"memory_exact\": true, \"memory_source\": \"s\", \"tflops\": "
                      "{\"fp32\": 1, \"tf32\": null, \"fp16\": null, \"bf16\": null}, "
                      "\"bandwidth_gbs\": 1, \"spec_source\": \"s\"},"
                      "{\"name\": \"b\", \"aliases\": [\"a\"], \"label\": \"B\", \"device_names\": [\"B\"], "
                      "\"arch\": \"ada\", \"compute_capability\": null, \"memory\": 1, \"memory_exact\": true, "
                      "\"memory_source\": \"s\", \"tflops\": {\"fp32\": 1, \"tf32\": null, \"fp16\": null, \"bf16\": null}, "
                      "\"bandwidth_gbs\": 1, \"spec_source\": \"s\"}]}";
    CHECK(parse(two, &t, &err) != 0);
    CHECK_CONTAINS(err.msg, "used twice");
    /* bad values */
    char buf[2048];
    static const struct {
        const char *from, *to, *msg;
    } subs[] = {
        {"\"memory\": 42505273344", "\"memory\": 1.5", "whole number of bytes"},
        {"\"memory\": 42505273344", "\"memory\": 9007199254740993", "whole number of bytes"},
        {"\"memory\": 42505273344", "\"memory\": 0", "whole number of bytes"},
        {"\"arch\": \"ampere\"", "\"arch\": \"pascal\"", "unknown arch"},
        {"\"fp32\": 19.5", "\"fp32\": null", "fp32"},
        {"\"fp16\": 312", "\"fp16\": -1", "TFLOP/s"},
        {"\"bandwidth_gbs\": 1555", "\"bandwidth_gbs\": \"fast\"", "bandwidth_gbs"},
        {"\"name\": \"x100\"", "\"name\": \"X 100\"", "lower-case"},
        {"\"memory_exact\": true", "\"memory_exact\": 1", "true or false"},
        {"\"compute_capability\": \"8.6\"", "\"compute_capability\": \"86\"", "major.minor"},
        {"\"compute_capability\": \"8.6\"", "\"compute_capability\": 8.6", "major.minor"},
        {"\"compute_capability\": \"8.6\"", "\"compute_capability\": \"100.0\"", "major.minor"},
        {"\"compute_capability\": \"8.6\"", "\"compute_capability\": \"08.6\"", "major.minor"},
        {"\"compute_capability\": \"8.6\"", "\"compute_capability\": \"0.6\"", "major.minor"},
        {"\"compute_capability\": \"8.6\"", "\"compute_capability\": \"10.\"", "major.minor"},
        {"\"compute_capability\": \"8.6\"", "\"compute_capability\": \"10.00\"", "major.minor"},
    };
    for (size_t i = 0; i < sizeof subs / sizeof *subs; i++) {
        const char *base = ONE_GPU("");
        const char *at = strstr(base, subs[i].from);
        CHECK(at != NULL);
        if (!at)
            continue;
        snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - base), base, subs[i].to,
                 at + strlen(subs[i].from));
        CHECK(parse(buf, &t, &err) != 0);
        CHECK_CONTAINS(err.msg, subs[i].msg);
        CHECK_STR_EQ(err.file, "test.json");
    }
}

static void test_builtin(void)
{
    struct memest_gpu_table t;
    struct memest_error err = {0};
    CHECK(memest_gpu_table_builtin(&t, &err) == 0);
    CHECK(err.code == MEMEST_ERR_NONE);
    for (size_t i = 0; i < sizeof required / sizeof *required; i++) {
        const struct memest_gpu *g = memest_gpu_find(&t, required[i]);
        CHECK(g != NULL);
        if (!g)
            continue;
        /* what a device reports is below the marketing size in GB (10^9)
         * and above 88% of it; the peaks are ordered as on every card */
        static const double gb[] = {16, 16, 32, 24, 24, 24, 24, 40, 80, 80, 141, 192, 48, 48,
                                    48, 40, 80, 80, 94, 141, 96, 144, 180, 64, 256};
        _Static_assert(sizeof gb / sizeof *gb == sizeof required / sizeof *required,
                       "one marketing size per required preset");
        CHECK((double)g->memory < gb[i] * 1e9 * 1.075);
        CHECK((double)g->memory > gb[i] * 1e9 * 0.88);
        CHECK(g->peak_flops[MEMEST_PREC_FP32] > 0);
        CHECK(g->peak_flops[MEMEST_PREC_FP16] >= g->peak_flops[MEMEST_PREC_FP32]);
        CHECK(g->bandwidth >= 300e9);
        CHECK(g->ndevice_names > 0);
    }
    /* the figures the issue names (datasheets, dense) */
    const struct memest_gpu *a100 = memest_gpu_find(&t, "a100-40gb");
    CHECK(a100 && a100->peak_flops[MEMEST_PREC_FP32] == 19.5e12 &&
          a100->peak_flops[MEMEST_PREC_TF32] == 156e12 &&
          a100->peak_flops[MEMEST_PREC_BF16] == 312e12 && a100->bandwidth == 1555e9);
    CHECK(a100 && strcmp(a100->arch, "ampere") == 0 && a100->compute_capability == 80);
    CHECK(memest_gpu_find(&t, "h100-80gb")->compute_capability == 90);
    CHECK(memest_gpu_find(&t, "mi300x")->compute_capability == 0); /* not CUDA */
    CHECK(memest_gpu_find(&t, "b200")->compute_capability == 100);  /* "10.0" */
    CHECK(strcmp(memest_gpu_find(&t, "b200")->arch, "blackwell") == 0);
    CHECK(strcmp(memest_gpu_find(&t, "mi250x")->arch, "cdna2") == 0);
    CHECK(memest_gpu_find(&t, "mi250x")->compute_capability == 0);
    const struct memest_gpu *v100 = memest_gpu_find(&t, "v100-32gb");
    CHECK(v100 && v100->peak_flops[MEMEST_PREC_BF16] == 0 && strcmp(v100->arch, "volta") == 0);
    CHECK(strcmp(memest_gpu_find(&t, "mi300x")->arch, "cdna3") == 0);
    CHECK(strcmp(memest_gpu_find(&t, "h100-80gb")->arch, "hopper") == 0);

    /* lookup: case-insensitive, aliases, suggestions */
    CHECK(memest_gpu_find(&t, "A100-40GB") == a100);
    CHECK(memest_gpu_find(&t, "h100") == memest_gpu_find(&t, "h100-80gb"));
    CHECK(memest_gpu_find(&t, "a100") == NULL); /* ambiguous: not an alias */
    memset(&err, 0, sizeof err);
    CHECK(memest_gpu_lookup(&t, "a100-40", &err) == NULL);
    CHECK(err.code == MEMEST_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "did you mean 'a100-40gb'");
    memset(&err, 0, sizeof err);
    CHECK(memest_gpu_lookup(&t, "RTX-4090", &err) == NULL);
    CHECK_CONTAINS(err.msg, "did you mean 'rtx4090'");
    CHECK(memest_gpu_match_device(&t, "NVIDIA A100-SXM4-40GB") == a100);
    CHECK(memest_gpu_match_device(&t, "Tesla V100-SXM2-32GB") == v100);
    CHECK(memest_gpu_match_device(&t, "NVIDIA B200") == memest_gpu_find(&t, "b200"));
    CHECK(memest_gpu_match_device(&t, "NVIDIA H100 PCIe") == memest_gpu_find(&t, "h100-pcie"));
    CHECK(memest_gpu_match_device(&t, "NVIDIA GeForce GTX 1080") == NULL);

    /* the precision rule */
    CHECK(memest_gpu_step_precision(MEMEST_F32, MEMEST_AMP_NONE) == MEMEST_PREC_FP32);
    CHECK(memest_gpu_step_precision(MEMEST_F32, MEMEST_AMP_BF16) == MEMEST_PREC_BF16);
    CHECK(memest_gpu_step_precision(MEMEST_F32, MEMEST_AMP_FP16) == MEMEST_PREC_FP16);
    CHECK(memest_gpu_step_precision(MEMEST_BF16, MEMEST_AMP_NONE) == MEMEST_PREC_BF16);
    CHECK(memest_gpu_step_precision(MEMEST_F16, MEMEST_AMP_NONE) == MEMEST_PREC_FP16);
    bool fb = true;
    CHECK(memest_gpu_peak(a100, MEMEST_PREC_FP32, &fb) == 19.5e12 && !fb);
    CHECK(memest_gpu_peak(v100, MEMEST_PREC_BF16, &fb) == 15.7e12 && fb); /* no bf16 tensor cores */
    CHECK(memest_gpu_peak(v100, MEMEST_PREC_FP16, &fb) == 125e12 && !fb);

    /* the listing */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    memest_gpus_markdown(f, &t);
    fclose(f);
    CHECK_CONTAINS(buf, "| `a100-40gb` (also `a100-sxm4-40gb`) | NVIDIA A100 40 GB (SXM4) | ampere |");
    CHECK_CONTAINS(buf, "| `h200`");
    free(buf);
    memest_gpu_table_free(&t);
}

int main(void)
{
    test_parse_figures();
    test_parse_errors();
    test_builtin();
    return CHECK_DONE();
}
