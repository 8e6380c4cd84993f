/* test_probe.c - the live probe against the fake libcuda (tests/fake_cuda/):
 * the real CUDA backend loads the fake, synthetic timelines are replayed,
 * and after every run the fake must hold no allocation and no context. */
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memest/probe.h"
#include "memest/report.h"

#ifndef MEMEST_FAKECUDA_PATH
#error "MEMEST_FAKECUDA_PATH must name the fake libcuda (tests/group_probe.cmake)"
#endif

#define MiB (1ull << 20)
#define GiB (1ull << 30)

/* The fake's query functions, through our own handle on it (which also
 * keeps it loaded between runs, so its counters persist). */
static void *fake;
static int (*live_allocations)(void);
static int (*live_contexts)(void);
static int (*dropped_allocations)(void);
static int (*untouched_frees)(void);
static int (*alloc_calls)(void);

#define SYM(var, name)                                                         \
    do {                                                                       \
        void *p_ = dlsym(fake, name);                                          \
        if (!p_) {                                                             \
            fprintf(stderr, "fake libcuda lacks %s\n", name);                  \
            exit(1);                                                           \
        }                                                                      \
        memcpy(&var, &p_, sizeof p_);                                          \
    } while (0)

static void load_fake(void)
{
    fake = dlopen(MEMEST_FAKECUDA_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!fake) {
        fprintf(stderr, "cannot load %s: %s\n", MEMEST_FAKECUDA_PATH, dlerror());
        exit(1);
    }
    SYM(live_allocations, "fakecuda_live_allocations");
    SYM(live_contexts, "fakecuda_live_contexts");
    SYM(dropped_allocations, "fakecuda_dropped_allocations");
    SYM(untouched_frees, "fakecuda_untouched_frees");
    SYM(alloc_calls, "fakecuda_alloc_calls");
}

/* Default device for each test: 8 GiB, 2 MiB granularity, 256 MiB contexts,
 * 1 GiB used by other processes; no failure injected. */
static void fake_reset(void)
{
    static const char *const vars[] = {
        "FAKECUDA_DEVICES", "FAKECUDA_TOTAL", "FAKECUDA_GRANULARITY", "FAKECUDA_CONTEXT",
        "FAKECUDA_OTHER", "FAKECUDA_NAME", "FAKECUDA_FAIL_INIT", "FAKECUDA_FAIL_ALLOC_AT",
        "FAKECUDA_FAIL_ALLOC_CODE", "FAKECUDA_SIGNAL_AT", "MEMEST_LIBCUDA",
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    setenv("FAKECUDA_TOTAL", "8G", 1);
    setenv("FAKECUDA_GRANULARITY", "2M", 1);
    setenv("FAKECUDA_CONTEXT", "256M", 1);
    setenv("FAKECUDA_OTHER", "1G", 1);
    setenv("FAKECUDA_NAME", "Fake GPU 8GB", 1);
}

/* After every run: nothing left on the fake device, everything written. */
#define CHECK_NO_LEAKS()                                                       \
    do {                                                                       \
        CHECK_EQ_INT(live_allocations(), 0);                                   \
        CHECK_EQ_INT(live_contexts(), 0);                                      \
        CHECK_EQ_INT(dropped_allocations(), 0);                                \
        CHECK_EQ_INT(untouched_frees(), 0);                                    \
    } while (0)

static const char *const names[] = { "input", "conv1", "relu1", "fc", "loss", "opt" };

/* A small training step:
 *   0 setup     alloc params  A (node 1)
 *   1 forward   alloc input   B (node 0)
 *   2 forward   alloc act     C (node 1)
 *   3 forward   alloc act     D (node 2)
 *   4 forward   free C
 *   5 loss      alloc         E (node 4)
 *   6 backward  alloc grad    G (node 3)      <- peak with these sizes
 *   7 backward  free D, 8 free E, 9 free B
 *  10 optimizer alloc temp    T (node 5), 11 free T
 *  12 teardown  free G, 13 free A */
static void make_step(struct memest_timeline *t, uint64_t a, uint64_t b, uint64_t c, uint64_t d,
                      uint64_t e, uint64_t g, uint64_t tmp)
{
    uint32_t A, B, C, D, E, G, T;
    *t = (struct memest_timeline){ .node_names = names };
    memest_timeline_alloc(t, MEMEST_PH_SETUP, MEMEST_CAT_PARAMS, 1, a, &A);
    memest_timeline_alloc(t, MEMEST_PH_FORWARD, MEMEST_CAT_INPUTS, 0, b, &B);
    memest_timeline_alloc(t, MEMEST_PH_FORWARD, MEMEST_CAT_SAVED, 1, c, &C);
    memest_timeline_alloc(t, MEMEST_PH_FORWARD, MEMEST_CAT_SAVED, 2, d, &D);
    memest_timeline_free(t, MEMEST_PH_FORWARD, MEMEST_CAT_SAVED, 2, C, c);
    memest_timeline_alloc(t, MEMEST_PH_LOSS, MEMEST_CAT_TRANSIENT, 4, e, &E);
    memest_timeline_alloc(t, MEMEST_PH_BACKWARD, MEMEST_CAT_GRADS, 3, g, &G);
    memest_timeline_free(t, MEMEST_PH_BACKWARD, MEMEST_CAT_SAVED, 3, D, d);
    memest_timeline_free(t, MEMEST_PH_BACKWARD, MEMEST_CAT_TRANSIENT, 3, E, e);
    memest_timeline_free(t, MEMEST_PH_BACKWARD, MEMEST_CAT_INPUTS, 3, B, b);
    memest_timeline_alloc(t, MEMEST_PH_OPTIMIZER, MEMEST_CAT_OPTTEMP, 5, tmp, &T);
    memest_timeline_free(t, MEMEST_PH_OPTIMIZER, MEMEST_CAT_OPTTEMP, 5, T, tmp);
    memest_timeline_free(t, MEMEST_PH_TEARDOWN, MEMEST_CAT_GRADS, UINT32_MAX, G, g);
    memest_timeline_free(t, MEMEST_PH_TEARDOWN, MEMEST_CAT_PARAMS, UINT32_MAX, A, a);
}

static struct memest_probe_config fake_config(void)
{
    return (struct memest_probe_config){ .device = 0, .libpath = MEMEST_FAKECUDA_PATH };
}

static char *capture_text(const struct memest_probe_result *r)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    memest_probe_text(f, r);
    fclose(f);
    return s;
}

static char *capture_json(const struct memest_probe_result *r)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    struct memest_jsonw w;
    memest_jsonw_init(&w, f, false);
    memest_jsonw_obj_begin(&w, NULL);
    memest_probe_json(&w, r);
    memest_jsonw_obj_end(&w);
    memest_jsonw_finish(&w);
    fclose(f);
    return s;
}

/* The step fits; sizes are not multiples of the 2 MiB granularity, so the
 * measured peak shows the driver's rounding. */
static void test_fits(void)
{
    fake_reset();
    struct memest_timeline t;
    /* peak at event 6: A + B + D + E + G */
    make_step(&t, 100 * MiB + 1, 10 * MiB, 50 * MiB, 200 * MiB, 1 * MiB, 100 * MiB + 1, 50 * MiB);
    struct memest_probe_config cfg = fake_config();
    struct memest_probe_result r;
    struct memest_error err = {0};
    int rc = memest_probe_run(&cfg, &t, &r, &err);
    CHECK_EQ_INT(rc, MEMEST_EXIT_OK);
    CHECK_EQ_INT(err.code, MEMEST_ERR_NONE);
    CHECK(r.have_device && r.have_context && r.have_overhead && r.have_measured_peak);
    CHECK(r.verdict && r.fits && !r.failed && !r.interrupted);
    CHECK_STR_EQ(r.device_name, "Fake GPU 8GB");
    CHECK_EQ_U64(r.total, 8 * GiB);
    CHECK_EQ_U64(r.context_overhead, 256 * MiB);
    CHECK_EQ_U64(r.free_before, 7 * GiB);                 /* total - other processes */
    CHECK_EQ_U64(r.free_after_ctx, 7 * GiB - 256 * MiB);
    CHECK_EQ_U64(r.peak_event, 6);
    CHECK_EQ_U64(r.predicted_peak, 411 * MiB + 2);
    CHECK_EQ_U64(r.measured_peak, (102 + 10 + 200 + 2 + 102) * MiB);
    CHECK_EQ_U64(r.free_at_peak, r.free_after_ctx - r.measured_peak);
    CHECK_NO_LEAKS();

    char *s = capture_text(&r);
    CHECK_CONTAINS(s, "probe: Fake GPU 8GB (device 0), 8.0 GiB total\n");
    CHECK_CONTAINS(s, "free before memest: 7.0 GiB; CUDA context: 256.0 MiB; free after it: 6.8 GiB");
    CHECK_CONTAINS(s, "predicted peak: 411.0 MiB at event 6 (backward, node 'fc')\n");
    CHECK_EQ_INT(r.peak_phase, MEMEST_PH_BACKWARD);
    CHECK_STR_EQ(r.peak_node, "fc");
    CHECK_CONTAINS(s, "measured at the peak: 416.0 MiB (+5.0 MiB against the prediction); "
                      "headroom: 6.3 GiB free\n");
    CHECK_CONTAINS(s, "probe: fits");
    free(s);
    s = capture_json(&r);
    CHECK_STR_EQ(s, "{\"probe\":{\"device\":\"Fake GPU 8GB\",\"total\":8589934592,"
                    "\"free_before\":7516192768,\"context_overhead\":268435456,"
                    "\"predicted_peak\":430964738,\"measured_peak\":436207616,\"fits\":true,"
                    "\"failed_at\":null,\"device_index\":0,\"free_after_context\":7247757312,"
                    "\"free_at_peak\":6811549696,\"peak_event\":6,"
                    "\"replay\":\"tensors\",\"segments\":null,\"predicted_context\":null,"
                    "\"predicted_reserved\":null,\"measured_reserved\":null,\"predicted_total\":null,"
                    "\"measured_total\":null,\"predicted_reserved_at_peak\":null,\"pressure\":null}}\n");
    free(s);
    memest_timeline_dispose(&t);
}

/* Out of memory at event 6 (backward, node 'fc'), with 4 buffers live. */
static void test_out_of_memory(void)
{
    fake_reset();
    setenv("FAKECUDA_TOTAL", "2G", 1);
    setenv("FAKECUDA_OTHER", "0", 1);
    /* 2048 - 256 (context) = 1792 MiB for the step; live before event 6:
     * A 400 + B 100 + D 500 + E 100 = 1100; G 800 does not fit. */
    struct memest_timeline t;
    make_step(&t, 400 * MiB, 100 * MiB, 500 * MiB, 500 * MiB, 100 * MiB, 800 * MiB, 10 * MiB);
    struct memest_probe_config cfg = fake_config();
    struct memest_probe_result r;
    struct memest_error err = {0};
    int rc = memest_probe_run(&cfg, &t, &r, &err);
    CHECK_EQ_INT(rc, MEMEST_EXIT_NOFIT);
    CHECK_EQ_INT(err.code, MEMEST_ERR_NONE);
    CHECK(r.verdict && !r.fits && r.failed && !r.interrupted);
    CHECK_EQ_U64(r.failed_at.event, 6);
    CHECK_EQ_INT(r.failed_at.phase, MEMEST_PH_BACKWARD);
    CHECK_EQ_U64(r.failed_at.node, 3);
    CHECK_STR_EQ(r.failed_at.node_name, "fc");
    CHECK_EQ_U64(r.failed_at.bytes, 800 * MiB);
    CHECK_EQ_U64(r.failed_at.live, 1100 * MiB);
    CHECK(!r.have_measured_peak);   /* the peak was never reached */
    CHECK_EQ_U64(r.predicted_peak, 1900 * MiB);
    CHECK_NO_LEAKS();

    char *s = capture_text(&r);
    CHECK_CONTAINS(s, "probe: does not fit: out of memory at event 6 (backward, node 'fc') "
                      "allocating 800.0 MiB with 1.1 GiB live\n");
    free(s);
    s = capture_json(&r);
    CHECK_CONTAINS(s, "\"measured_peak\":null,\"fits\":false,\"failed_at\":{\"event\":6,"
                      "\"phase\":\"backward\",\"node\":\"fc\",\"what\":\"tensor\",\"bytes\":838860800,"
                      "\"live\":1153433600},");
    free(s);

    /* Without node names the node is null. */
    t.node_names = NULL;
    memset(&err, 0, sizeof err);
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_NOFIT);
    CHECK_STR_EQ(r.failed_at.node_name, "");
    s = capture_json(&r);
    CHECK_CONTAINS(s, "\"phase\":\"backward\",\"node\":null,");
    free(s);
    s = capture_text(&r);
    CHECK_CONTAINS(s, "out of memory at event 6 (backward) allocating");
    free(s);
    CHECK_NO_LEAKS();
    memest_timeline_dispose(&t);
}

/* Out of memory only because of the granularity: the prediction is exactly
 * what is free, but every allocation is rounded up. */
static void test_out_of_memory_by_rounding(void)
{
    fake_reset();
    setenv("FAKECUDA_TOTAL", "1G", 1);
    setenv("FAKECUDA_OTHER", "0", 1);
    struct memest_timeline t = { .node_names = names };
    uint64_t avail = 1 * GiB - 256 * MiB;
    for (int i = 0; i < 4; i++)
        memest_timeline_alloc(&t, MEMEST_PH_FORWARD, MEMEST_CAT_SAVED, 2, avail / 4 - 1, NULL);
    for (uint32_t i = 0; i < 4; i++)
        memest_timeline_free(&t, MEMEST_PH_TEARDOWN, MEMEST_CAT_SAVED, 2, i, avail / 4 - 1);
    setenv("FAKECUDA_GRANULARITY", "1", 1);
    struct memest_probe_config cfg = fake_config();
    struct memest_probe_result r;
    struct memest_error err = {0};
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_OK);
    CHECK_EQ_U64(r.measured_peak, r.predicted_peak);
    CHECK_NO_LEAKS();
    setenv("FAKECUDA_GRANULARITY", "64M", 1);   /* 192 MiB - 1 rounds to 192 MiB: fits */
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_OK);
    setenv("FAKECUDA_GRANULARITY", "100M", 1);  /* rounds to 200 MiB: the 4th fails */
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_NOFIT);
    CHECK_EQ_U64(r.failed_at.event, 3);
    CHECK_EQ_U64(r.failed_at.live, 3 * (avail / 4 - 1));
    CHECK_EQ_INT(err.code, MEMEST_ERR_NONE);
    CHECK_NO_LEAKS();
    memest_timeline_dispose(&t);
}

static void test_no_driver(void)
{
    fake_reset();
    struct memest_timeline t;
    make_step(&t, 1, 1, 1, 1, 1, 1, 1);
    struct memest_probe_result r;

    /* MEMEST_LIBCUDA naming a missing file. */
    setenv("MEMEST_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    struct memest_probe_config cfg = { .device = 0 };
    struct memest_error err = {0};
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_NODEV);
    CHECK_EQ_INT(err.code, MEMEST_ERR_PROBE);
    CHECK_CONTAINS(err.msg, "cannot load the CUDA driver /nonexistent/libcuda.so.1 (MEMEST_LIBCUDA)");
    CHECK_CONTAINS(err.msg, ": cannot probe; the estimate above is unchecked");
    CHECK(!r.have_device && !r.verdict);
    char *s = capture_text(&r);
    CHECK_STR_EQ(s, "probe: not run (no usable CUDA driver or device)\n");
    free(s);
    s = capture_json(&r);
    CHECK_STR_EQ(s, "{\"probe\":{\"device\":null,\"total\":null,\"free_before\":null,"
                    "\"context_overhead\":null,\"predicted_peak\":5,\"measured_peak\":null,"
                    "\"fits\":null,\"failed_at\":null,\"device_index\":0,"
                    "\"free_after_context\":null,\"free_at_peak\":null,\"peak_event\":6,"
                    "\"replay\":\"tensors\",\"segments\":null,\"predicted_context\":null,"
                    "\"predicted_reserved\":null,\"measured_reserved\":null,\"predicted_total\":null,"
                    "\"measured_total\":null,\"predicted_reserved_at_peak\":null,\"pressure\":null}}\n");
    free(s);

    /* MEMEST_LIBCUDA pointing at the fake works the same as the config path. */
    setenv("MEMEST_LIBCUDA", MEMEST_FAKECUDA_PATH, 1);
    memset(&err, 0, sizeof err);
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_OK);
    CHECK(r.fits);
    CHECK_NO_LEAKS();

    /* The config path wins over MEMEST_LIBCUDA. */
    cfg.libpath = "/nonexistent/libfake.so";
    memset(&err, 0, sizeof err);
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_NODEV);
    CHECK_CONTAINS(err.msg, "cannot load the CUDA driver /nonexistent/libfake.so: ");

    /* A library that is not a CUDA driver. */
    cfg.libpath = "libc.so.6";
    memset(&err, 0, sizeof err);
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_NODEV);
    CHECK_CONTAINS(err.msg, "the CUDA driver libc.so.6 has no cuInit: cannot probe");

    /* The default search, where this machine has no libcuda. */
    unsetenv("MEMEST_LIBCUDA");
    void *real = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!real)
        real = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!real) {
        cfg.libpath = NULL;
        memset(&err, 0, sizeof err);
        CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_NODEV);
        CHECK_STR_EQ(err.msg, "no CUDA driver found (libcuda.so.1): cannot probe; "
                              "the estimate above is unchecked");
    } else {
        dlclose(real);
    }
    memest_timeline_dispose(&t);
}

static void test_init_fails(void)
{
    fake_reset();
    setenv("FAKECUDA_FAIL_INIT", "3", 1);   /* CUDA_ERROR_NOT_INITIALIZED */
    struct memest_timeline t;
    make_step(&t, 1, 1, 1, 1, 1, 1, 1);
    struct memest_probe_config cfg = fake_config();
    struct memest_probe_result r;
    struct memest_error err = {0};
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_NODEV);
    CHECK_EQ_INT(err.code, MEMEST_ERR_PROBE);
    CHECK_CONTAINS(err.msg, "the CUDA driver failed to initialise using ");
    CHECK_CONTAINS(err.msg, "cuInit: initialization error (CUDA_ERROR_NOT_INITIALIZED): "
                            "cannot probe; the estimate above is unchecked");
    CHECK(!r.have_device);
    CHECK_NO_LEAKS();

    setenv("FAKECUDA_FAIL_INIT", "12345", 1);  /* a code without a name */
    memset(&err, 0, sizeof err);
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_NODEV);
    CHECK_CONTAINS(err.msg, "cuInit: CUDA error 12345: cannot probe");
    memest_timeline_dispose(&t);
}

static void test_no_device(void)
{
    fake_reset();
    setenv("FAKECUDA_DEVICES", "0", 1);
    struct memest_timeline t;
    make_step(&t, 1, 1, 1, 1, 1, 1, 1);
    struct memest_probe_config cfg = fake_config();
    struct memest_probe_result r;
    struct memest_error err = {0};
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_NODEV);
    CHECK_CONTAINS(err.msg, "no CUDA device found using ");
    CHECK_CONTAINS(err.msg, "(CUDA_ERROR_NO_DEVICE): cannot probe; the estimate above is unchecked");
    CHECK_NO_LEAKS();

    /* A device ordinal the driver does not have. */
    setenv("FAKECUDA_DEVICES", "2", 1);
    cfg.device = 2;
    memset(&err, 0, sizeof err);
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_NODEV);
    CHECK_STR_EQ(err.msg, "no CUDA device 2: the driver sees 2 devices (0 to 1): cannot probe; "
                          "the estimate above is unchecked");
    cfg.device = 1;   /* the second one works */
    memset(&err, 0, sizeof err);
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_OK);
    CHECK_EQ_INT(r.device, 1);
    CHECK_NO_LEAKS();

    /* No room even for memest's context. */
    setenv("FAKECUDA_DEVICES", "1", 1);
    setenv("FAKECUDA_OTHER", "8000M", 1);
    cfg.device = 0;
    memset(&err, 0, sizeof err);
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_NODEV);
    CHECK_CONTAINS(err.msg, "cannot create a CUDA context on device 0: cuDevicePrimaryCtxRetain: "
                            "out of memory (CUDA_ERROR_OUT_OF_MEMORY)");
    CHECK(r.have_device && !r.have_context);
    CHECK_NO_LEAKS();

    /* Room for one context but not the scratch one: the overhead is not
     * measured, the replay still runs. */
    setenv("FAKECUDA_OTHER", "7700M", 1);
    memset(&err, 0, sizeof err);
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_OK);
    CHECK(r.have_context && !r.have_overhead && r.fits);
    CHECK_EQ_U64(r.free_after_ctx, 8 * GiB - 7700 * MiB - 256 * MiB);
    char *s = capture_text(&r);
    CHECK_CONTAINS(s, "free after memest's CUDA context: 236.0 MiB (context size not measured)");
    free(s);
    s = capture_json(&r);
    CHECK_CONTAINS(s, "\"free_before\":null,\"context_overhead\":null,");
    free(s);
    CHECK_NO_LEAKS();
    memest_timeline_dispose(&t);
}

/* The fake's number of cuMemAlloc_v2 calls before the first timeline event
 * (the context warm-ups), found with a clean run. */
static int setup_allocs(const struct memest_timeline *t)
{
    struct memest_probe_config cfg = fake_config();
    struct memest_probe_result r;
    struct memest_error err = {0};
    memest_probe_run(&cfg, t, &r, &err);
    int n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->ev[i].kind == MEMEST_EV_ALLOC && t->ev[i].bytes > 0;
    return alloc_calls() - n;
}

static void test_alloc_error(void)
{
    fake_reset();
    struct memest_timeline t;
    make_step(&t, 10 * MiB, 10 * MiB, 10 * MiB, 10 * MiB, 10 * MiB, 10 * MiB, 10 * MiB);
    int before = setup_allocs(&t);
    CHECK(before >= 0);
    char at[16];
    snprintf(at, sizeof at, "%d", before + 3);   /* the 3rd allocation: event 2 */
    setenv("FAKECUDA_FAIL_ALLOC_AT", at, 1);
    struct memest_probe_config cfg = fake_config();
    struct memest_probe_result r;
    struct memest_error err = {0};
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_RUNTIME);
    CHECK_EQ_INT(err.code, MEMEST_ERR_PROBE);
    CHECK_STR_EQ(err.msg, "CUDA driver error at event 2 (forward, node 'conv1') while allocating "
                          "device memory: cuMemAlloc_v2(10485760 bytes): unknown error "
                          "(CUDA_ERROR_UNKNOWN)");
    CHECK(r.failed && !r.verdict && !r.fits);
    CHECK_EQ_U64(r.failed_at.event, 2);
    CHECK_EQ_U64(r.failed_at.live, 20 * MiB);
    CHECK_NO_LEAKS();
    char *s = capture_json(&r);
    CHECK_CONTAINS(s, "\"fits\":null,\"failed_at\":{\"event\":2,\"phase\":\"forward\"");
    free(s);
    s = capture_text(&r);
    CHECK_CONTAINS(s, "probe: driver error at event 2 (forward, node 'conv1')");
    free(s);

    /* A failing warm-up allocation is a driver error too. */
    setenv("FAKECUDA_FAIL_ALLOC_AT", "1", 1);
    setenv("FAKECUDA_FAIL_ALLOC_CODE", "1", 1);
    memset(&err, 0, sizeof err);
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_RUNTIME);
    CHECK_CONTAINS(err.msg, "invalid argument (CUDA_ERROR_INVALID_VALUE)");
    CHECK_NO_LEAKS();
    memest_timeline_dispose(&t);
}

static void test_edge_timelines(void)
{
    fake_reset();
    struct memest_probe_config cfg = fake_config();
    struct memest_probe_result r;
    struct memest_error err = {0};

    /* Empty: fits, nothing measured but the context. */
    struct memest_timeline t = { .node_names = names };
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_OK);
    CHECK(r.fits && r.have_measured_peak);
    CHECK_EQ_U64(r.measured_peak, 0);
    CHECK_EQ_U64(r.predicted_peak, 0);
    CHECK_NO_LEAKS();

    /* Zero-byte allocations never reach the device (cuMemAlloc(0) is an
     * error); a timeline missing its frees is cleaned up anyway. */
    uint32_t id;
    memest_timeline_alloc(&t, MEMEST_PH_FORWARD, MEMEST_CAT_SAVED, 0, 0, &id);
    memest_timeline_alloc(&t, MEMEST_PH_FORWARD, MEMEST_CAT_SAVED, 0, 5 * MiB, NULL);
    memest_timeline_free(&t, MEMEST_PH_FORWARD, MEMEST_CAT_SAVED, 0, id, 0);
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_OK);
    CHECK_EQ_U64(r.measured_peak, 6 * MiB);
    CHECK_EQ_U64(r.peak_event, 1);
    CHECK_NO_LEAKS();

    /* Inconsistent timelines are reported, and still cleaned up. */
    memest_timeline_free(&t, MEMEST_PH_FORWARD, MEMEST_CAT_SAVED, 0, id, 0);  /* double free */
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_RUNTIME);
    CHECK_STR_EQ(err.msg, "inconsistent timeline: event 3 (forward, node 'input') frees id 0, "
                          "which is not live");
    CHECK_NO_LEAKS();
    memest_timeline_dispose(&t);
}

static volatile sig_atomic_t got_sigint;

/* A step with the allocator's layout, worked out by hand from the caching
 * allocator's rules (alloc.h): segments from 2^32 on, in the order made.
 *   0 setup    A 100 MiB: no cached block; a large request of 10 MiB or
 *              more gets its own segment, rounded to 2 MiB: S0 = 100 MiB
 *   1 forward  B 1000 B: 1024 B in a new small-pool segment S1 = 2 MiB
 *   2 forward  C 5 MiB: under 10 MiB, a 20 MiB segment S2; C at S2 + 0,
 *              the remaining 15 MiB (> 1 MiB) split off
 *   3 forward  D 3 MiB: best fit, the 15 MiB block: S2 + 5 MiB
 *   4 forward  free C (5 MiB at S2 + 0; D's neighbour is in use)
 *   5 backward G 7 MiB: the 5 MiB block is too small, the 12 MiB one at
 *              S2 + 8 MiB serves it              <- allocated peak:
 *              A + B + D + G = 110 MiB + 1024 B
 *   6 free D, 7 free G, 8 free B, 9 teardown free A
 * Reserved: 100 + 2 + 20 = 122 MiB, all made by the peak. `move_d` puts D
 * past its segment's end (an inconsistent layout). */
static void make_layout_step(struct memest_timeline *t, bool move_d)
{
    static struct memest_segment seg[3];
    static uint64_t addr[10];
    const uint64_t s0 = 1ull << 32, s1 = s0 + 100 * MiB, s2 = s1 + 2 * MiB;
    seg[0] = (struct memest_segment){s0, 100 * MiB, 0};
    seg[1] = (struct memest_segment){s1, 2 * MiB, 1};
    seg[2] = (struct memest_segment){s2, 20 * MiB, 2};
    uint32_t A, B, C, D, G;
    *t = (struct memest_timeline){.node_names = names};
    memest_timeline_alloc(t, MEMEST_PH_SETUP, MEMEST_CAT_PARAMS, 1, 100 * MiB, &A);
    memest_timeline_alloc(t, MEMEST_PH_FORWARD, MEMEST_CAT_INPUTS, 0, 1000, &B);
    memest_timeline_alloc(t, MEMEST_PH_FORWARD, MEMEST_CAT_SAVED, 1, 5 * MiB, &C);
    memest_timeline_alloc(t, MEMEST_PH_FORWARD, MEMEST_CAT_SAVED, 2, 3 * MiB, &D);
    memest_timeline_free(t, MEMEST_PH_FORWARD, MEMEST_CAT_SAVED, 2, C, 5 * MiB);
    memest_timeline_alloc(t, MEMEST_PH_BACKWARD, MEMEST_CAT_GRADS, 3, 7 * MiB, &G);
    memest_timeline_free(t, MEMEST_PH_BACKWARD, MEMEST_CAT_SAVED, 3, D, 3 * MiB);
    memest_timeline_free(t, MEMEST_PH_BACKWARD, MEMEST_CAT_GRADS, 3, G, 7 * MiB);
    memest_timeline_free(t, MEMEST_PH_BACKWARD, MEMEST_CAT_INPUTS, 3, B, 1000);
    memest_timeline_free(t, MEMEST_PH_TEARDOWN, MEMEST_CAT_PARAMS, UINT32_MAX, A, 100 * MiB);
    const uint64_t block[10] = {100 * MiB, 1024, 5 * MiB, 3 * MiB, 5 * MiB,
                                7 * MiB, 3 * MiB, 7 * MiB, 1024, 100 * MiB};
    const uint64_t at[10] = {s0, s1, s2, s2 + (move_d ? 19 : 5) * MiB, s2,
                             s2 + 8 * MiB, s2 + 5 * MiB, s2 + 8 * MiB, s1, s0};
    for (size_t i = 0; i < 10; i++) {
        t->ev[i].block = block[i];
        addr[i] = at[i];
    }
    t->layout = 1;
    t->seg = seg;
    t->nseg = 3;
    t->addr = addr;
}

static void drop_layout(struct memest_timeline *t)
{
    t->seg = NULL;   /* static: not the timeline's to free */
    t->addr = NULL;
    memest_timeline_dispose(t);
}

static void test_segments(void)
{
    fake_reset();
    struct memest_timeline t;
    make_layout_step(&t, false);
    struct memest_probe_config cfg = fake_config();
    cfg.have_predicted_context = true;
    cfg.predicted_context = 250 * MiB;
    struct memest_probe_result r;
    struct memest_error err = {0};
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_OK);
    CHECK(r.segments && r.verdict && r.fits && r.have_measured_reserved);
    /* since cuInit: two context warm-ups (memest's and the scratch
     * context's), then one cuMemAlloc per segment, none per tensor */
    CHECK_EQ_INT(alloc_calls(), 2 + 3);
    CHECK_EQ_U64(r.nsegments, 3);
    CHECK_EQ_U64(r.predicted_reserved, 122 * MiB);
    CHECK_EQ_U64(r.measured_reserved, 122 * MiB);   /* all multiples of 2 MiB */
    CHECK_EQ_U64(r.peak_event, 5);
    CHECK_EQ_U64(r.predicted_peak, 110 * MiB + 1024);
    CHECK_EQ_U64(r.predicted_reserved_at_peak, 122 * MiB);
    CHECK_EQ_U64(r.measured_peak, 122 * MiB);
    CHECK_EQ_U64(r.context_overhead, 256 * MiB);
    CHECK_NO_LEAKS();   /* every segment written (its blocks) and freed */
    char *s = capture_text(&r);
    CHECK_CONTAINS(s, "probe:   CUDA context     250.0 MiB   256.0 MiB  +6.0 MiB (+2.4%)\n");
    CHECK_CONTAINS(s, "probe:   reserved         122.0 MiB   122.0 MiB  0 B (0.0%)\n");
    CHECK_CONTAINS(s, "probe:   device total     372.0 MiB   378.0 MiB  +6.0 MiB (+1.6%)\n");
    CHECK_CONTAINS(s, "3 segments replayed");
    CHECK_CONTAINS(s, "allocated peak 110.0 MiB at event 5 (backward, node 'fc'): segments then "
                      "122.0 MiB predicted, 122.0 MiB measured");
    free(s);
    s = capture_json(&r);
    CHECK_CONTAINS(s, "\"replay\":\"segments\",\"segments\":3,\"predicted_context\":262144000,"
                      "\"predicted_reserved\":127926272,\"measured_reserved\":127926272,"
                      "\"predicted_total\":390070272,\"measured_total\":396361728,"
                      "\"predicted_reserved_at_peak\":127926272,\"pressure\":null}");
    free(s);

    /* The card holds the context and 110 MiB: S2 (20 MiB, after 102 MiB of
     * segments) does not fit, at event 2. */
    setenv("FAKECUDA_TOTAL", "366M", 1);
    setenv("FAKECUDA_OTHER", "0", 1);
    memset(&err, 0, sizeof err);
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_NOFIT);
    CHECK(r.failed && r.failed_at.segment && !r.fits && r.verdict);
    CHECK_EQ_U64(r.failed_at.event, 2);
    CHECK_EQ_U64(r.failed_at.bytes, 20 * MiB);
    CHECK_EQ_U64(r.failed_at.live, 102 * MiB);
    CHECK_NO_LEAKS();
    s = capture_text(&r);
    CHECK_CONTAINS(s, "out of memory at event 2 (forward, node 'conv1') making a 20.0 MiB "
                      "segment with 102.0 MiB of segments held\n");
    free(s);
    s = capture_json(&r);
    CHECK_CONTAINS(s, "\"what\":\"segment\",\"bytes\":20971520,\"live\":106954752}");
    free(s);
    drop_layout(&t);

    /* A block outside its segment: an inconsistent timeline, nothing left behind. */
    fake_reset();
    make_layout_step(&t, true);
    memset(&err, 0, sizeof err);
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_RUNTIME);
    CHECK_STR_EQ(err.msg, "inconsistent timeline: event 3 (forward, node 'relu1') places 3145728 "
                          "bytes outside every segment made so far");
    CHECK_NO_LEAKS();
    drop_layout(&t);
}

static void test_handler(int sig)
{
    (void)sig;
    got_sigint++;
}

/* SIGINT in the middle of the replay: everything is freed, the previous
 * handler is back and receives the signal. */
static void test_signal(void)
{
    fake_reset();
    struct memest_timeline t;
    make_step(&t, 10 * MiB, 10 * MiB, 10 * MiB, 10 * MiB, 10 * MiB, 10 * MiB, 10 * MiB);
    int before = setup_allocs(&t);
    char at[16];
    snprintf(at, sizeof at, "%d", before + 4);
    setenv("FAKECUDA_SIGNAL_AT", at, 1);

    struct sigaction sa, old, now;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = test_handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    got_sigint = 0;

    struct memest_probe_config cfg = fake_config();
    struct memest_probe_result r;
    struct memest_error err = {0};
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_RUNTIME);
    CHECK_EQ_INT(got_sigint, 1);
    CHECK(r.interrupted && !r.verdict);
    CHECK_CONTAINS(err.msg, "probe interrupted by signal");
    sigaction(SIGINT, NULL, &now);
    CHECK(now.sa_handler == test_handler);
    CHECK_NO_LEAKS();
    char *s = capture_text(&r);
    CHECK_CONTAINS(s, "probe: interrupted; everything allocated was freed\n");
    free(s);
    memest_timeline_dispose(&t);

    /* replaying segments: SIGINT after the second segment (S1, event 1) */
    fake_reset();
    setenv("FAKECUDA_SIGNAL_AT", "4", 1);   /* two warm-ups, S0, S1 */
    make_layout_step(&t, false);
    got_sigint = 0;
    memset(&err, 0, sizeof err);
    CHECK_EQ_INT(memest_probe_run(&cfg, &t, &r, &err), MEMEST_EXIT_RUNTIME);
    CHECK_EQ_INT(got_sigint, 1);
    CHECK(r.interrupted && !r.verdict && r.segments);
    CHECK_NO_LEAKS();

    sigaction(SIGINT, &old, NULL);
    drop_layout(&t);
}

/* The fake itself: it must behave like the driver where the probe relies on
 * it, and its leak counters must see a leak. */
static void test_fake_driver(void)
{
    fake_reset();
    typedef int (*init_fn)(unsigned);
    typedef int (*retain_fn)(void **, int);
    typedef int (*release_fn)(int);
    typedef int (*set_fn)(void *);
    typedef int (*info_fn)(size_t *, size_t *);
    typedef int (*alloc_fn)(unsigned long long *, size_t);
    typedef int (*free_fn)(unsigned long long);
    init_fn init;
    retain_fn retain;
    release_fn release;
    set_fn set;
    info_fn info;
    alloc_fn alloc;
    free_fn mfree;
    SYM(init, "cuInit");
    SYM(retain, "cuDevicePrimaryCtxRetain");
    SYM(release, "cuDevicePrimaryCtxRelease_v2");
    SYM(set, "cuCtxSetCurrent");
    SYM(info, "cuMemGetInfo_v2");
    SYM(alloc, "cuMemAlloc_v2");
    SYM(mfree, "cuMemFree_v2");

    CHECK_EQ_INT(init(0), 0);
    size_t f, tot;
    CHECK_EQ_INT(info(&f, &tot), 201);   /* no context: CUDA_ERROR_INVALID_CONTEXT */
    void *ctx;
    CHECK_EQ_INT(retain(&ctx, 0), 0);
    CHECK_EQ_INT(set(ctx), 0);
    CHECK_EQ_INT(info(&f, &tot), 0);
    CHECK_EQ_U64(tot, 8 * GiB);
    CHECK_EQ_U64(f, 7 * GiB - 256 * MiB);
    unsigned long long p;
    CHECK_EQ_INT(alloc(&p, 0), 1);           /* CUDA_ERROR_INVALID_VALUE */
    CHECK_EQ_INT(alloc(&p, 8 * GiB), 2);     /* CUDA_ERROR_OUT_OF_MEMORY */
    CHECK_EQ_INT(alloc(&p, 1), 0);
    CHECK_EQ_INT(live_allocations(), 1);
    CHECK_EQ_INT(info(&f, &tot), 0);
    CHECK_EQ_U64(f, 7 * GiB - 258 * MiB);
    CHECK_EQ_INT(mfree(p), 0);
    CHECK_EQ_INT(mfree(p), 1);
    CHECK_EQ_INT(untouched_frees(), 1);      /* it was never written */
    CHECK_EQ_INT(live_contexts(), 1);
    CHECK_EQ_INT(set(NULL), 0);
    CHECK_EQ_INT(release(0), 0);
    CHECK_EQ_INT(live_contexts(), 0);
    CHECK_EQ_INT(release(0), 201);
    CHECK_EQ_INT(live_allocations(), 0);
}

int main(void)
{
    load_fake();
    test_fits();
    test_out_of_memory();
    test_out_of_memory_by_rounding();
    test_no_driver();
    test_init_fails();
    test_no_device();
    test_alloc_error();
    test_edge_timelines();
    test_segments();
    test_signal();
    test_fake_driver();   /* last: it frees one allocation unwritten on purpose */
    dlclose(fake);
    return CHECK_DONE();
}
