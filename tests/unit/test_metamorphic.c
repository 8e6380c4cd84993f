/* test_metamorphic.c - the same model written another way gives the same
 * figures (issue 10): for every shipped model (the .json files of models/) and every
 * model of tests/metamorphic/, the expanded graph written flat, the flat
 * file with every node unnamed (referenced by index) or renamed, the file
 * with its unreferenced names stripped, each node called through a block of
 * its own, identical chained nodes rolled into "repeat", and the nodes in
 * other valid orders (tests/support/metamorphic.h says what must be equal
 * for each). No figure here comes from memest: each rewrite is compared
 * with the original file, whose figures test_models and test_peaks check
 * against PyTorch. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memest/model.h"
#include "metamorphic.h"

#define MAX_NODES 0 /* the tool's limit */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[65536];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* The step configurations compared: the default one; one through the
 * other paths of the simulator (SGD with momentum, for-loop, first step,
 * accumulation, fp16 autocast); AdamW fused, zeroed gradients, bf16. */
struct cfg {
    const char *what;
    int64_t batch;
    enum memest_dtype dtype;
    struct memest_step_cfg step;
};

static int configs(struct cfg *c, bool checkpoint)
{
    int n = 0;
    c[n] = (struct cfg){.what = "adam, batch 1", .batch = 1, .dtype = MEMEST_F32};
    memest_step_cfg_default(&c[n++].step);
    c[n] = (struct cfg){.what = "sgd momentum for-loop first step accum 2 amp fp16, batch 3", .batch = 3, .dtype = MEMEST_F32};
    memest_step_cfg_default(&c[n].step);
    c[n].step.optim.kind = MEMEST_OPT_SGD;
    c[n].step.optim.momentum = 0.9;
    c[n].step.impl = MEMEST_IMPL_FORLOOP;
    c[n].step.first_step = true;
    c[n].step.grad_accum = 2;
    c[n++].step.amp = MEMEST_AMP_FP16;
    c[n] = (struct cfg){.what = "adamw fused zeros bf16, batch 2", .batch = 2, .dtype = MEMEST_F32};
    memest_step_cfg_default(&c[n].step);
    c[n].step.optim.kind = MEMEST_OPT_ADAMW;
    c[n].step.impl = MEMEST_IMPL_FUSED;
    c[n].step.zero_grad_zeros = true;
    c[n++].step.amp = MEMEST_AMP_BF16;
    if (checkpoint) {
        c[n] = (struct cfg){.what = "adam with --checkpoint, batch 2", .batch = 2, .dtype = MEMEST_F32};
        memest_step_cfg_default(&c[n].step);
        c[n++].step.checkpoint = true;
    }
    return n;
}

static int cases;

/* Compares variant v with the model it was made from under every config. */
static void compare(const char *file, const char *variant, const cJSON *orig, const cJSON *v,
                    enum mm_compare how, bool checkpoint)
{
    CHECK(v != NULL);
    if (!v) {
        fprintf(stderr, "  %s: the %s rewrite failed\n", file, variant);
        return;
    }
    struct cfg c[4];
    int n = configs(c, checkpoint);
    for (int i = 0; i < n; i++) {
        struct mm_figures a, b;
        mm_figures_of(orig, file, MAX_NODES, c[i].batch, c[i].dtype, &c[i].step, &a);
        mm_figures_of(v, file, MAX_NODES, c[i].batch, c[i].dtype, &c[i].step, &b);
        char why[300] = "";
        bool same = mm_same(&a, &b, how, why, sizeof why);
        CHECK(a.rc == 0);
        CHECK(same);
        if (a.rc != 0)
            fprintf(stderr, "  %s: the original fails: %s\n", file, a.msg);
        if (!same)
            fprintf(stderr, "  %s, %s, %s: %s\n", file, variant, c[i].what, why);
        cases++;
    }
}

static void check_model(const char *path)
{
    char *text = slurp(path);
    CHECK(text != NULL);
    if (!text)
        return;
    cJSON *orig = cJSON_Parse(text);
    free(text);
    CHECK(orig != NULL);
    struct memest_model m = {0};
    struct memest_graph g = {0};
    struct memest_run r = {0};
    struct memest_error err = {0};
    char *print = orig ? cJSON_PrintUnformatted(orig) : NULL;
    struct memest_run_opts ro = {.batch = 1, .dtype = MEMEST_F32};
    int rc = print ? memest_model_read_string(print, strlen(print), path, &m, &err) : -1;
    free(print);
    if (rc == 0)
        rc = memest_model_build(&m, NULL, 0, &g, &err);
    cJSON *flat = rc == 0 ? mm_flat(&g) : NULL;
    if (rc == 0)
        rc = memest_run_infer(&r, &g, &ro, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc != 0) {
        char msg[1200];
        memest_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "  %s: %s\n", path, msg);
    }
    if (rc == 0 && flat) {
        /* a module's forward() arguments live until it returns: the flat
         * file (no blocks) keeps the figures that do not depend on when
         * tensors die; the rest keep every figure */
        compare(path, "flat", orig, flat, MM_ORDER_FREE, false);
        cJSON *v = mm_strip_names(orig);
        compare(path, "unreferenced names stripped", orig, v, MM_ALL, g.nblocks > 0);
        cJSON_Delete(v);
        v = mm_unroll_repeats(orig);
        compare(path, "repeats unrolled", orig, v, MM_ALL, g.nblocks > 0);
        cJSON_Delete(v);
        v = mm_index_names(flat);
        compare(path, "flat, unnamed, referenced by index", flat, v, MM_ALL, false);
        cJSON_Delete(v);
        v = mm_rename(flat, 7);
        compare(path, "flat, renamed", flat, v, MM_ALL, false);
        cJSON_Delete(v);
        v = mm_wrap_blocks(flat);
        compare(path, "flat, a block per node", flat, v, MM_ALL, false);
        cJSON_Delete(v);
        v = mm_roll_repeats(flat);
        if (v) /* only where the flat file has identical chained nodes */
            compare(path, "flat, runs rolled into repeat", flat, v, MM_ALL, false);
        cJSON_Delete(v);
        for (uint32_t seed = 1; seed <= 3; seed++) {
            v = mm_reorder(flat, &g, &r, seed);
            compare(path, "flat, reordered", flat, v, MM_ORDER_FREE, false);
            cJSON_Delete(v);
        }
    }
    cJSON_Delete(flat);
    memest_run_free(&r);
    memest_graph_free(&g);
    memest_model_free(&m);
    cJSON_Delete(orig);
}

static void check_dir(const char *dir)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d)
        return;
    char *names[256];
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 256;) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0 &&
            strcmp(e->d_name, "gpus.json") != 0)
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    for (int i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        int before = cases;
        check_model(path);
        fprintf(stderr, "%s: %d comparisons\n", path, cases - before);
        free(names[i]);
    }
}

int main(void)
{
    check_dir("models");
    check_dir("tests/metamorphic");
    fprintf(stderr, "metamorphic comparisons: %d\n", cases);
    CHECK(cases > 0);
    return CHECK_DONE();
}
