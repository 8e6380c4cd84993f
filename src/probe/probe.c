/* probe.c - the live probe's replay logic, independent of the driver: opens
 * the backend, measures the context, replays a timeline's allocations and
 * frees on the device, measures usage at the predicted peak, and cleans up
 * on every path (including SIGINT / SIGTERM). Also its text and JSON
 * reports. */
#include "memest/probe.h"

#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "memest/checked.h"
#include "memest/escape.h"

#define UNCHECKED "cannot probe; the estimate above is unchecked"

/* One timeline allocation id: live, and its device handle (0 for a 0-byte
 * allocation, which PyTorch does not send to the device either). */
struct slot {
    uint64_t handle;
    uint64_t bytes;
    bool live;
};

/* ---- signals ----------------------------------------------------------- */

static volatile sig_atomic_t caught_signal;

static void on_signal(int sig)
{
    if (!caught_signal)
        caught_signal = sig;
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
    caught_signal = 0;
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
    int sig = caught_signal;
    caught_signal = 0;
    return sig;
}

/* ---- the replay -------------------------------------------------------- */

struct replay {
    const struct memest_probe_backend *b;
    const struct memest_timeline *tl;
    struct memest_probe_result *res;
    struct memest_error *err;
    struct slot *slots;     /* indexed by allocation id */
    size_t nslots;
    void *ctx;              /* memest's context, NULL when none */
    bool opened;
};

static const char *node_name(const struct memest_timeline *tl, uint32_t node)
{
    if (!tl->node_names || node == UINT32_MAX)
        return NULL;
    return tl->node_names[node];
}

/* " (forward, node 'fc1')" or " (forward)" for event i, into buf. */
static const char *event_where(const struct memest_timeline *tl, size_t i, char *buf, size_t n)
{
    const struct memest_event *e = &tl->ev[i];
    const char *name = node_name(tl, e->node);
    if (name)
        snprintf(buf, n, "%s, node '%s'", memest_phase_name(e->phase), name);
    else
        snprintf(buf, n, "%s", memest_phase_name(e->phase));
    return buf;
}

static void record_failure(struct replay *r, size_t i, uint64_t live)
{
    const struct memest_event *e = &r->tl->ev[i];
    struct memest_probe_failure *f = &r->res->failed_at;
    const char *name = node_name(r->tl, e->node);
    r->res->failed = true;
    f->event = i;
    f->phase = (enum memest_phase)e->phase;
    f->node = e->node;
    snprintf(f->node_name, sizeof f->node_name, "%s", name ? name : "");
    f->bytes = e->bytes;
    f->live = live;
}

/* A driver error other than out-of-memory during the replay. */
static int driver_error(struct replay *r, size_t i, const char *what)
{
    char where[256];
    event_where(r->tl, i, where, sizeof where);
    memest_errf(r->err, MEMEST_ERR_PROBE, NULL, "CUDA driver error at event %zu (%s) while %s: %s",
                i, where, what, r->b->last_error());
    return MEMEST_EXIT_RUNTIME;
}

/* A driver error outside the replay (setup, measurement, cleanup). */
static int setup_error(struct replay *r, int rc, const char *what)
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
    st = b->mem_touch(h, 1);
    enum memest_probe_status st2 = b->mem_free(h);
    if (st == MEMEST_PROBE_OOM)
        st = MEMEST_PROBE_OK;
    return st != MEMEST_PROBE_OK ? st : st2;
}

/* Measures one context's cost with a scratch context, then makes memest's
 * context current again. A scratch context that cannot be created leaves
 * the overhead unmeasured; returns 0, or an exit code on a driver error. */
static int measure_overhead(struct replay *r, int device)
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
static int make_slots(struct replay *r)
{
    uint64_t max_id = 0;
    bool any = false;
    for (size_t i = 0; i < r->tl->n; i++) {
        if (r->tl->ev[i].id > max_id || !any)
            max_id = r->tl->ev[i].id;
        any = true;
    }
    r->nslots = any ? (size_t)max_id + 1 : 0;
    if (r->nslots == 0)
        return 0;
    r->slots = calloc(r->nslots, sizeof *r->slots);
    if (!r->slots) {
        r->res->no_memory = true;
        memest_errf(r->err, MEMEST_ERR_NOMEM, NULL, "out of memory (probe: %zu allocation slots)",
                    r->nslots);
        return MEMEST_EXIT_RUNTIME;
    }
    return 0;
}

/* Replays every event. Returns MEMEST_EXIT_OK, NOFIT or INTERNAL. */
static int replay_events(struct replay *r)
{
    const struct memest_probe_backend *b = r->b;
    const struct memest_timeline *tl = r->tl;
    struct memest_probe_result *res = r->res;
    uint64_t live = 0, total;
    char where[256];

    for (size_t i = 0; i < tl->n; i++) {
        if (caught_signal) {
            res->interrupted = true;
            return MEMEST_EXIT_RUNTIME;
        }
        const struct memest_event *e = &tl->ev[i];
        struct slot *s = &r->slots[e->id];
        if (e->kind == MEMEST_EV_ALLOC) {
            if (s->live) {
                memest_errf(r->err, MEMEST_ERR_PROBE, NULL,
                            "inconsistent timeline: event %zu (%s) allocates id %" PRIu32
                            ", which is already live", i, event_where(tl, i, where, sizeof where),
                            e->id);
                return MEMEST_EXIT_RUNTIME;
            }
            if (e->bytes > 0) {
                enum memest_probe_status st = b->mem_alloc(e->bytes, &s->handle);
                if (st == MEMEST_PROBE_OK) {
                    s->live = true;
                    s->bytes = e->bytes;
                    st = b->mem_touch(s->handle, e->bytes);
                }
                if (st != MEMEST_PROBE_OK) {
                    record_failure(r, i, live);
                    if (st == MEMEST_PROBE_OOM) {
                        res->verdict = true;
                        res->fits = false;
                        return MEMEST_EXIT_NOFIT;
                    }
                    return driver_error(r, i, s->live ? "writing an allocation"
                                                      : "allocating device memory");
                }
            }
            s->live = true;
            s->bytes = e->bytes;
            live = memest_sat_add(live, e->bytes);
        } else {
            if (!s->live) {
                memest_errf(r->err, MEMEST_ERR_PROBE, NULL,
                            "inconsistent timeline: event %zu (%s) frees id %" PRIu32
                            ", which is not live", i, event_where(tl, i, where, sizeof where),
                            e->id);
                return MEMEST_EXIT_RUNTIME;
            }
            s->live = false;
            if (s->bytes > 0 && b->mem_free(s->handle) != MEMEST_PROBE_OK)
                return driver_error(r, i, "freeing device memory");
            live = s->bytes < live ? live - s->bytes : 0;
        }
        if (i == res->peak_event) {
            if (b->mem_info(&res->free_at_peak, &total) != MEMEST_PROBE_OK)
                return driver_error(r, i, "reading free memory at the peak");
            res->measured_peak = res->free_at_peak < res->free_after_ctx
                                     ? res->free_after_ctx - res->free_at_peak : 0;
            res->have_measured_peak = true;
        }
    }
    if (tl->n == 0) {   /* nothing to replay: the peak is 0 bytes */
        res->free_at_peak = res->free_after_ctx;
        res->have_measured_peak = true;
    }
    if (caught_signal) {
        res->interrupted = true;
        return MEMEST_EXIT_RUNTIME;
    }
    res->verdict = true;
    res->fits = true;
    return MEMEST_EXIT_OK;
}

/* Frees every live allocation, destroys memest's context and unloads the
 * driver. Returns rc, or INTERNAL if rc was OK/NOFIT and cleanup failed. */
static int cleanup(struct replay *r, int rc)
{
    const struct memest_probe_backend *b = r->b;
    bool failed = false;
    for (size_t id = 0; id < r->nslots; id++) {
        struct slot *s = &r->slots[id];
        if (s->live && s->bytes > 0 && b->mem_free(s->handle) != MEMEST_PROBE_OK && !failed) {
            failed = true;
            memest_errf(r->err, MEMEST_ERR_PROBE, NULL,
                        "CUDA driver error while freeing device memory: %s", b->last_error());
        }
        s->live = false;
    }
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
    if (failed && (rc == MEMEST_EXIT_OK || rc == MEMEST_EXIT_NOFIT))
        rc = MEMEST_EXIT_RUNTIME;
    return rc;
}

/* Opens the driver and selects the device. 0, or an exit code. */
static int open_device(struct replay *r, int device)
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

int memest_probe_run(const struct memest_probe_config *cfg, const struct memest_timeline *tl,
                     struct memest_probe_result *res, struct memest_error *err)
{
    memset(res, 0, sizeof *res);
    res->device = cfg->device;
    res->predicted_peak = memest_timeline_peak(tl, &res->peak_event);
    if (res->peak_event < tl->n) {
        const char *name = node_name(tl, tl->ev[res->peak_event].node);
        res->peak_phase = (enum memest_phase)tl->ev[res->peak_event].phase;
        snprintf(res->peak_node, sizeof res->peak_node, "%s", name ? name : "");
    }

    struct replay r = {
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
        rc = replay_events(&r);
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
