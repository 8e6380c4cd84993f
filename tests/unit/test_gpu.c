/* test_gpu.c - the GPU presets: the embedded models/gpus.json, the strict
 * parser, lookup with "did you mean", device-name matching, and the
 * precision rule of the time estimate. */
#include <math.h>
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
    "mi250x",      "mi325x",         "l40",            "a40",       "rtx5090",  "rtx-pro-6000",
    "h20",         "b300",           "gb200",          "gb300",
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

/* --list-gpus's table of t (the caller frees it). */
static char *listing(const struct memest_gpu_table *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    memest_gpus_markdown(f, t);
    fclose(f);
    return buf;
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
                                    48, 40, 80, 80, 94, 141, 96, 144, 180, 64, 256,
                                    48, 48, 32, 96, 96, 288, 186, 288};
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

    /* the cards of 2026 (issue 32): dense TFLOP/s fp32, tf32, fp16, bf16 and
     * GB/s, as the vendors publish them */
    static const struct {
        const char *name, *arch;
        unsigned cc;
        double fp32, tf32, fp16, bf16, gbs;
    } sheet[] = {
        /* NVIDIA L40 datasheet: FP32 90.5, TF32 90.5 (181 sparse), BF16/FP16
         * 181.05 (362.1 sparse), 864 GB/s */
        {"l40", "ada", 89, 90.5, 90.5, 181.05, 181.05, 864},
        /* NVIDIA A40 datasheet: FP32 37.4, TF32 74.8 (149.6 sparse), BF16 and
         * FP16 149.7 (299.4 sparse), 696 GB/s */
        {"a40", "ampere", 86, 37.4, 74.8, 149.7, 149.7, 696},
        /* NVIDIA RTX Blackwell GPU architecture whitepaper, RTX 5090: FP32
         * 104.8, TF32 104.8, FP16 (FP32 accumulate) and BF16 209.5, 1792 GB/s */
        {"rtx5090", "blackwell", 120, 104.8, 104.8, 209.5, 209.5, 1792},
        /* RTX PRO 6000 Blackwell Workstation Edition datasheet: FP32 125, 1792
         * GB/s; the RTX Blackwell whitepaper: TF32 251.9, FP16/BF16 503.8 */
        {"rtx-pro-6000", "blackwell", 120, 125, 251.9, 503.8, 503.8, 1792},
        /* H20 (no public NVIDIA datasheet; the figures reported from its
         * specification): FP32 44, TF32 74, FP16/BF16 148, 4.0 TB/s */
        {"h20", "hopper", 90, 44, 74, 148, 148, 4000},
        /* NVIDIA HGX B300 datasheet over 8 GPUs: FP32 600, TF32 18 PFLOPS and
         * FP16/BF16 36 PFLOPS with sparsity; 8 TB/s a GPU */
        {"b300", "blackwell", 103, 600.0 / 8, 18000.0 / 8 / 2, 36000.0 / 8 / 2,
         36000.0 / 8 / 2, 8000},
        /* NVIDIA Blackwell technical brief, GB200's B200: FP32 90, TF32 1250,
         * FP16/BF16 2500; the GB200 NVL72 datasheet: 576 TB/s over 72 GPUs */
        {"gb200", "blackwell", 100, 90, 1250, 2500, 2500, 576000.0 / 72},
        /* NVIDIA GB300 NVL72 datasheet over 72 GPUs: FP16/BF16 360 PFLOPS and
         * TF32 180 PFLOPS with sparsity, 576 TB/s; FP32 80 (verda.com) */
        {"gb300", "blackwell", 103, 80, 180000.0 / 72 / 2, 360000.0 / 72 / 2,
         360000.0 / 72 / 2, 576000.0 / 72},
    };
    for (size_t i = 0; i < sizeof sheet / sizeof *sheet; i++) {
        const struct memest_gpu *g = memest_gpu_find(&t, sheet[i].name);
        CHECK(g != NULL);
        if (!g)
            continue;
        CHECK_STR_EQ(g->arch, sheet[i].arch);
        CHECK_EQ_INT(g->compute_capability, sheet[i].cc);
        CHECK(fabs(g->peak_flops[MEMEST_PREC_FP32] - sheet[i].fp32 * 1e12) < 1e6);
        CHECK(fabs(g->peak_flops[MEMEST_PREC_TF32] - sheet[i].tf32 * 1e12) < 1e6);
        CHECK(fabs(g->peak_flops[MEMEST_PREC_FP16] - sheet[i].fp16 * 1e12) < 1e6);
        CHECK(fabs(g->peak_flops[MEMEST_PREC_BF16] - sheet[i].bf16 * 1e12) < 1e6);
        CHECK(fabs(g->bandwidth - sheet[i].gbs * 1e9) < 1e3);
    }
    /* the totals a driver reported (deviceQuery, CUDA 12.4 and 13.0) */
    CHECK_EQ_U64(memest_gpu_find(&t, "a40")->memory, 47608692736ull);
    CHECK(memest_gpu_find(&t, "a40")->memory_exact);
    CHECK_EQ_U64(memest_gpu_find(&t, "rtx5090")->memory, 33660534784ull);
    CHECK(!memest_gpu_find(&t, "gb200")->memory_exact); /* nvidia-smi's 189471 MiB */
    CHECK_EQ_U64(memest_gpu_find(&t, "gb200")->memory, 189471ull << 20);
    CHECK(memest_gpu_match_device(&t, "NVIDIA B300 SXM6 AC") == memest_gpu_find(&t, "b300"));

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
    /* a family: every preset it begins, not the nearest name */
    memset(&err, 0, sizeof err);
    CHECK(memest_gpu_lookup(&t, "a100", &err) == NULL);
    CHECK(err.code == MEMEST_ERR_USAGE);
    CHECK_CONTAINS(err.msg, "--gpu: 'a100' matches several presets: a100-40gb, a100-80gb, "
                            "a100-pcie-40gb, a100-pcie-80gb; name one");
    memset(&err, 0, sizeof err);
    CHECK(memest_gpu_lookup_opt(&t, "GB", "--price", &err) == NULL);
    CHECK_CONTAINS(err.msg, "--price: 'GB' matches several presets: gb200, gb300;");
    memset(&err, 0, sizeof err);
    CHECK(memest_gpu_lookup(&t, "gh200-144", &err) == NULL); /* one: the suggestion */
    CHECK_CONTAINS(err.msg, "did you mean 'gh200-144gb'");
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
    char *buf = listing(&t);
    CHECK_CONTAINS(buf, "| `a100-40gb` (also `a100-sxm4-40gb`) | NVIDIA A100 40 GB (SXM4) | ampere |");
    CHECK_CONTAINS(buf, "| `h200`");
    free(buf);
    memest_gpu_table_free(&t);
}

/* A user presets file: its presets add to the built-in ones, one with a
 * built-in's name or alias replaces it in place, and its device names win. */
static void test_user_presets(void)
{
    struct memest_gpu_table t;
    struct memest_error err = {0};
    CHECK(memest_gpu_table_builtin(&t, &err) == 0);
    size_t n = t.n;
    const char *user = "{\"schema_version\": 1, \"gpus\": ["
        "{\"name\": \"acme\", \"aliases\": [\"h200-sxm\"], \"label\": \"A\", "
        "\"device_names\": [\"NVIDIA L4\"], \"arch\": \"ada\", \"compute_capability\": \"8.9\", "
        "\"memory\": 1000, \"memory_exact\": true, \"memory_source\": \"s\", \"tflops\": "
        "{\"fp32\": 1, \"tf32\": null, \"fp16\": 2, \"bf16\": null}, \"bandwidth_gbs\": 1, "
        "\"spec_source\": \"s\"},"
        "{\"name\": \"zeta\", \"label\": \"Z\", \"device_names\": [\"Zeta\"], \"arch\": \"ada\", "
        "\"compute_capability\": null, \"memory\": 7, \"memory_exact\": false, "
        "\"memory_source\": \"s\", \"tflops\": {\"fp32\": 1, \"tf32\": null, \"fp16\": null, "
        "\"bf16\": null}, \"bandwidth_gbs\": 1, \"spec_source\": \"s\"}]}";
    CHECK(memest_gpu_table_add(&t, user, strlen(user), "user.json", &err) == 0);
    CHECK(err.code == MEMEST_ERR_NONE);
    CHECK_EQ_U64(t.n, n + 1);   /* acme replaces h200 (its alias), zeta is new */
    const struct memest_gpu *acme = memest_gpu_find(&t, "h200-sxm");
    CHECK(acme && strcmp(acme->name, "acme") == 0 && acme->user && acme->memory == 1000);
    CHECK(acme && acme->replaces && strcmp(acme->replaces, "h200") == 0);
    CHECK(acme == memest_gpu_find(&t, "h100-nvl") + 2);   /* at h200's place, after h20 */
    CHECK(memest_gpu_find(&t, "h200") == NULL);   /* the replaced preset's other names */
    CHECK(memest_gpu_find(&t, "h200-141gb") == NULL);
    CHECK(memest_gpu_find(&t, "h200-nvl") != NULL && !memest_gpu_find(&t, "h200-nvl")->user);
    CHECK(memest_gpu_find(&t, "zeta") == &t.gpus[t.n - 1]);
    CHECK(memest_gpu_match_device(&t, "NVIDIA L4") == acme);   /* before the built-in l4 */
    CHECK(memest_gpu_find(&t, "l4") != NULL);
    CHECK_STR_EQ(t.user_file, "user.json");
    char *buf = listing(&t);
    CHECK_CONTAINS(buf, "| `zeta` (user) | Z | ada |");
    CHECK_CONTAINS(buf,
                   "Presets marked (user): from user.json; `acme` replaces the built-in `h200`.");
    free(buf);
    /* a second file, and an error in one: t unchanged */
    memset(&err, 0, sizeof err);
    CHECK(memest_gpu_table_add(&t, user, strlen(user), "again.json", &err) != 0);
    memest_gpu_table_free(&t);

    CHECK(memest_gpu_table_builtin(&t, &err) == 0);
    memset(&err, 0, sizeof err);
    const char *bad = "{\"schema_version\": 1, \"gpus\": [{\"name\": \"x\"}]}";
    CHECK(memest_gpu_table_add(&t, bad, strlen(bad), "bad.json", &err) != 0);
    CHECK_STR_EQ(err.file, "bad.json");
    CHECK_STR_EQ(err.path, "gpus[0]");
    CHECK_EQ_U64(t.n, n);
    CHECK(t.user_root == NULL);
    memset(&err, 0, sizeof err);
    CHECK(memest_gpu_table_add_file(&t, "/nonexistent/gpus.json", &err) != 0);
    CHECK_CONTAINS(err.msg, "cannot open");
    CHECK_STR_EQ(err.file, "/nonexistent/gpus.json");
    memest_gpu_table_free(&t);
}

int main(void)
{
    test_parse_figures();
    test_parse_errors();
    test_builtin();
    test_user_presets();
    return CHECK_DONE();
}
