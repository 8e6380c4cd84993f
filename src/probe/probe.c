/* probe.c - the live probe's run, independent of the driver: the
 * predictions it checks, opening the backend and the device, measuring the
 * context, the replay (probe_replay.c), and cleaning up on every path
 * (including SIGINT / SIGTERM). Its reports are report_probe.c's. */
#include "memest/probe.h"

#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "memest/checked.h"
#include "probe_internal.h"

#define UNCHECKED "cannot probe; the estimate above is unchecked"

/* ---- signals ----------------------------------------------------------- */

volatile sig_atomic_t memest_probe_caught_signal;

static void on_signal(int sig)
{
    if (!memest_probe_caught_signal)
        memest_probe_caught_signal = sig;
}

struct saved_signals {
    struct sigaction old_int, old_term;
    bool installed;
};

static void signals_install(struct saved_signals *s)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    memest_probe_caught_signal = 0;
    s->installed = sigaction(SIGINT, &sa, &s->old_int) == 0;
    if (s->installed && sigaction(SIGTERM, &sa, &s->old_term) != 0) {
        sigaction(SIGINT, &s->old_int, NULL);
        s->installed = false;
    }
}

/* Restores the previous handlers; returns the signal caught meanwhile, or 0. */
static int signals_restore(struct saved_signals *s)
{
    if (s->installed) {
        sigaction(SIGTERM, &s->old_term, NULL);
        sigaction(SIGINT, &s->old_int, NULL);
        s->installed = false;
    }
    int sig = memest_probe_caught_signal;
    memest_probe_caught_signal = 0;
    return sig;
}

/* ---- the replay -------------------------------------------------------- */

/* A driver error outside the replay (setup, measurement, cleanup). */
static int setup_error(struct probe_run *r, int rc, const char *what)
{
    memest_errf(r->err, MEMEST_ERR_PROBE, NULL, "CUDA driver error while %s: %s", what,
                r->b->last_error());
    return rc;
}

/* One small allocation, memset and free, so that whatever the driver loads
 * lazily for them is counted with the context. Out of memory is ignored
 * here (the replay will meet it); other errors are returned. */
static enum memest_probe_status warm_up(const struct memest_probe_backend *b)
{
    uint64_t h;
    enum memest_probe_status st = b->mem_alloc(1, &h);
    if (st != MEMEST_PROBE_OK)
        return st == MEMEST_PROBE_OOM ? MEMEST_PROBE_OK : st;
    st = b->mem_touch(h, 0, 1);
    enum memest_probe_status st2 = b->mem_free(h);
    if (st == MEMEST_PROBE_OOM)
        st = MEMEST_PROBE_OK;
    return st != MEMEST_PROBE_OK ? st : st2;
}

/* Measures one context's cost with a scratch context, then makes memest's
 * context current again. A scratch context that cannot be created leaves
 * the overhead unmeasured; returns 0, or an exit code on a driver error. */
static int measure_overhead(struct probe_run *r, int device)
{
    const struct memest_probe_backend *b = r->b;
    void *scratch = NULL;
    uint64_t free_two = 0, total;
    bool measured = false;
    if (b->ctx_create(device, true, &scratch) == MEMEST_PROBE_OK) {
        measured = warm_up(b) == MEMEST_PROBE_OK &&
                   b->mem_info(&free_two, &total) == MEMEST_PROBE_OK;
        if (b->ctx_destroy(scratch) != MEMEST_PROBE_OK)
            return setup_error(r, MEMEST_EXIT_RUNTIME, "destroying the scratch context");
    }
    if (b->ctx_use(r->ctx) != MEMEST_PROBE_OK)
        return setup_error(r, MEMEST_EXIT_RUNTIME, "selecting memest's context");
    /* The baseline is taken after the scratch context is gone. */
    if (b->mem_info(&r->res->free_after_ctx, &total) != MEMEST_PROBE_OK)
        return setup_error(r, MEMEST_EXIT_RUNTIME, "reading free memory");
    r->res->have_context = true;
    if (measured) {
        uint64_t base = r->res->free_after_ctx;
        r->res->context_overhead = free_two < base ? base - free_two : 0;
        r->res->free_before = memest_sat_add(base, r->res->context_overhead);
        r->res->have_overhead = true;
    }
    return 0;
}

/* Sizes the slot table from the largest allocation id. 0, or an exit code. */
static int make_slots(struct probe_run *r)
{
    uint64_t max_id = 0;
    bool any = false;
    for (size_t i = 0; i < r->tl->n; i++) {
        if (r->tl->ev[i].id > max_id || !any)
            max_id = r->tl->ev[i].id;
        any = true;
    }
    r->nslots = any ? (size_t)max_id + 1 : 1;
    r->slots = calloc(r->nslots, sizeof *r->slots);
    if (r->res->segments && r->tl->nseg > 0)
        r->seg_handle = calloc(r->tl->nseg, sizeof *r->seg_handle);
    if (!r->slots || (r->res->segments && r->tl->nseg > 0 && !r->seg_handle)) {
        free(r->slots);
        free(r->seg_handle);
        r->slots = NULL;
        r->seg_handle = NULL;
        r->res->no_memory = true;
        memest_errf(r->err, MEMEST_ERR_NOMEM, NULL, "out of memory (probe: %zu allocation slots)",
                    r->nslots);
        return MEMEST_EXIT_RUNTIME;
    }
    return 0;
}

bool probe_release(struct probe_run *r)
{
    const struct memest_probe_backend *b = r->b;
    bool failed = false;
    for (size_t id = 0; r->slots && id < r->nslots; id++) {
        struct probe_slot *s = &r->slots[id];
        if (s->live && s->bytes > 0 && b->mem_free(s->handle) != MEMEST_PROBE_OK && !failed) {
            failed = true;
            memest_errf(r->err, MEMEST_ERR_PROBE, NULL,
                        "CUDA driver error while freeing device memory: %s", b->last_error());
        }
        s->live = false;
    }
    for (size_t k = 0; r->seg_handle && k < r->tl->nseg; k++) {
        if (r->seg_handle[k] && b->mem_free(r->seg_handle[k]) != MEMEST_PROBE_OK && !failed) {
            failed = true;
            memest_errf(r->err, MEMEST_ERR_PROBE, NULL,
                        "CUDA driver error while freeing a segment: %s", b->last_error());
        }
        r->seg_handle[k] = 0;
    }
    return !failed;
}

/* Frees every live allocation, destroys memest's context and unloads the
 * driver. Returns rc, or INTERNAL if rc was OK/NOFIT and cleanup failed. */
static int cleanup(struct probe_run *r, int rc)
{
    const struct memest_probe_backend *b = r->b;
    bool failed = !probe_release(r);
    if (r->ctx && b->ctx_destroy(r->ctx) != MEMEST_PROBE_OK && !failed) {
        failed = true;
        memest_errf(r->err, MEMEST_ERR_PROBE, NULL,
                    "CUDA driver error while destroying the context: %s", b->last_error());
    }
    r->ctx = NULL;
    if (r->opened)
        b->close();
    r->opened = false;
    free(r->slots);
    r->slots = NULL;
    free(r->seg_handle);
    r->seg_handle = NULL;
    if (failed && (rc == MEMEST_EXIT_OK || rc == MEMEST_EXIT_NOFIT))
        rc = MEMEST_EXIT_RUNTIME;
    return rc;
}

/* Opens the driver and selects the device. 0, or an exit code. */
static int open_device(struct probe_run *r, int device)
{
    const struct memest_probe_backend *b = r->b;
    struct memest_probe_result *res = r->res;
    int count = 0;
    if (b->device_count(&count) != MEMEST_PROBE_OK) {
        memest_errf(r->err, MEMEST_ERR_PROBE, NULL, "cannot count CUDA devices: %s: " UNCHECKED,
                    b->last_error());
        return MEMEST_EXIT_NODEV;
    }
    if (count <= 0) {
        memest_errf(r->err, MEMEST_ERR_PROBE, NULL, "no CUDA device found: " UNCHECKED);
        return MEMEST_EXIT_NODEV;
    }
    if (device < 0 || device >= count) {
        memest_errf(r->err, MEMEST_ERR_PROBE, NULL,
                    "no CUDA device %d: the driver sees %d device%s (0 to %d): " UNCHECKED,
                    device, count, count == 1 ? "" : "s", count - 1);
        return MEMEST_EXIT_NODEV;
    }
    if (b->device_info(device, res->device_name, sizeof res->device_name, &res->total)
        != MEMEST_PROBE_OK) {
        memest_errf(r->err, MEMEST_ERR_PROBE, NULL, "cannot query CUDA device %d: %s: " UNCHECKED,
                    device, b->last_error());
        return MEMEST_EXIT_NODEV;
    }
    res->have_device = true;
    return 0;
}

/* The peak of live blocks (the allocator's allocated peak) and the first
 * event that reaches it. */
static uint64_t block_peak(const struct memest_timeline *tl, size_t *at)
{
    struct memest_live l = {0};
    uint64_t peak = 0;
    *at = 0;
    for (size_t i = 0; i < tl->n; i++) {
        memest_live_apply(&l, &tl->ev[i], MEMEST_LIVE_BLOCKS);
        if (l.total > peak) {
            peak = l.total;
            *at = i;
        }
    }
    return peak;
}

/* The predictions: the peak and where it is; replaying segments, the
 * reserved memory (every segment: the allocator never releases one during
 * the step) and the device total. */
static void predict(const struct memest_probe_config *cfg, const struct memest_timeline *tl,
                    struct memest_probe_result *res)
{
    res->segments = tl->layout && (tl->addr || tl->n == 0);
    res->predicted_peak = res->segments ? block_peak(tl, &res->peak_event)
                                        : memest_timeline_peak(tl, &res->peak_event);
    if (res->peak_event < tl->n) {
        uint32_t node = tl->ev[res->peak_event].node;
        const char *name = tl->node_names && node != UINT32_MAX ? tl->node_names[node] : NULL;
        res->peak_phase = (enum memest_phase)tl->ev[res->peak_event].phase;
        snprintf(res->peak_node, sizeof res->peak_node, "%s", name ? name : "");
    }
    res->have_predicted_context = cfg->have_predicted_context;
    res->predicted_context = cfg->predicted_context;
    if (res->segments) {
        res->nsegments = tl->nseg;
        for (size_t k = 0; k < tl->nseg; k++)
            res->predicted_reserved = memest_sat_add(res->predicted_reserved, tl->seg[k].bytes);
    }
}

int memest_probe_run(const struct memest_probe_config *cfg, const struct memest_timeline *tl,
                     struct memest_probe_result *res, struct memest_error *err)
{
    memset(res, 0, sizeof *res);
    res->device = cfg->device;
    predict(cfg, tl, res);

    struct probe_run r = {
        .b = cfg->backend ? cfg->backend : &memest_probe_cuda,
        .tl = tl, .res = res, .err = err,
    };
    const struct memest_probe_backend *b = r.b;
    int rc = make_slots(&r);
    if (rc)
        return rc;

    enum memest_probe_status st = b->open(cfg->libpath);
    if (st != MEMEST_PROBE_OK) {
        res->no_memory = st == MEMEST_PROBE_NOMEM;
        memest_errf(err, res->no_memory ? MEMEST_ERR_NOMEM : MEMEST_ERR_PROBE, NULL,
                    "%s: " UNCHECKED, b->last_error());
        b->close();
        return cleanup(&r, st == MEMEST_PROBE_NODRIVER || st == MEMEST_PROBE_NODEV
                               ? MEMEST_EXIT_NODEV : MEMEST_EXIT_RUNTIME);
    }
    r.opened = true;
    rc = open_device(&r, cfg->device);
    if (rc)
        return cleanup(&r, rc);

    /* From the first context on, a signal must not leave device memory
     * behind: catch it, finish cleanly, then re-raise it. */
    struct saved_signals sigs;
    signals_install(&sigs);

    st = b->ctx_create(cfg->device, false, &r.ctx);
    if (st != MEMEST_PROBE_OK) {
        r.ctx = NULL;
        memest_errf(err, MEMEST_ERR_PROBE, NULL,
                    "cannot create a CUDA context on device %d: %s: " UNCHECKED, cfg->device,
                    b->last_error());
        rc = MEMEST_EXIT_NODEV;   /* full, busy (exclusive mode) or broken */
    }
    if (!rc && warm_up(b) != MEMEST_PROBE_OK)
        rc = setup_error(&r, MEMEST_EXIT_RUNTIME, "warming up the context");
    if (!rc)
        rc = measure_overhead(&r, cfg->device);
    if (!rc)
        rc = memest_probe_replay(&r);
    if (rc == MEMEST_EXIT_NOFIT && cfg->pressure && res->segments && !res->interrupted)
        rc = memest_probe_pressure(&r, cfg->alloc);
    rc = cleanup(&r, rc);

    int sig = signals_restore(&sigs);
    if (sig) {
        res->interrupted = true;
        res->verdict = false;
        res->fits = false;
        raise(sig);   /* the previous disposition: usually terminates */
        memest_errf(err, MEMEST_ERR_PROBE, NULL, "probe interrupted by signal %d", sig);
        return MEMEST_EXIT_RUNTIME;
    }
    return rc;
}
