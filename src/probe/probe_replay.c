/* probe_replay.c - the probe's replay of a timeline on the device, in one of
 * two ways:
 *   - segments (the timeline carries the allocator model's layout, as the
 *     simulator makes it for --probe): one device allocation per segment
 *     PyTorch's caching allocator would cudaMalloc, made at the event that
 *     makes it and never freed during the step (the allocator keeps its
 *     segments); each block is written where the model places it in its
 *     segment. The device then holds what PyTorch's reserved memory holds:
 *     2 MiB small-pool segments, 20 MiB and rounded large ones.
 *   - tensors (a timeline without a layout): one device allocation per
 *     tensor, freed when the tensor is, each paying the driver's own
 *     granularity.
 * Both measure the device at the predicted peak and at the end. */
#include <inttypes.h>
#include <string.h>

#include "memest/checked.h"
#include "probe_internal.h"

static const char *node_name(const struct memest_timeline *tl, uint32_t node)
{
    if (!tl->node_names || node == UINT32_MAX)
        return NULL;
    return tl->node_names[node];
}

/* "forward, node 'fc1'" or "forward" for event i, into buf. */
static const char *event_where(const struct memest_timeline *tl, size_t i, char *buf, size_t n)
{
    if (i >= tl->n) {
        snprintf(buf, n, "end of the step");
        return buf;
    }
    const struct memest_event *e = &tl->ev[i];
    const char *name = node_name(tl, e->node);
    if (name)
        snprintf(buf, n, "%s, node '%s'", memest_phase_name(e->phase), name);
    else
        snprintf(buf, n, "%s", memest_phase_name(e->phase));
    return buf;
}

/* The failure at event i (an allocation of `bytes` with `live` held). */
static void record_failure(struct probe_run *r, size_t i, uint64_t bytes, uint64_t live,
                           bool segment)
{
    struct memest_probe_failure *f = &r->res->failed_at;
    r->res->failed = true;
    f->event = i;
    f->segment = segment;
    f->bytes = bytes;
    f->live = live;
    f->node = UINT32_MAX;
    f->node_name[0] = '\0';
    f->phase = MEMEST_PH_TEARDOWN;
    if (i < r->tl->n) {
        const struct memest_event *e = &r->tl->ev[i];
        const char *name = node_name(r->tl, e->node);
        f->phase = (enum memest_phase)e->phase;
        /* a segment of the setup was made before the step, by no node
         * of the timeline's */
        bool before = segment && f->phase == MEMEST_PH_SETUP;
        f->node = before ? UINT32_MAX : e->node;
        snprintf(f->node_name, sizeof f->node_name, "%s", name && !before ? name : "");
    }
}

/* A driver error other than out-of-memory during the replay. */
static int driver_error(struct probe_run *r, size_t i, const char *what)
{
    char where[256];
    event_where(r->tl, i, where, sizeof where);
    memest_errf(r->err, MEMEST_ERR_PROBE, NULL, "CUDA driver error at event %zu (%s) while %s: %s",
                i, where, what, r->b->last_error());
    return MEMEST_EXIT_RUNTIME;
}

static int inconsistent(struct probe_run *r, size_t i, const char *what)
{
    char where[256];
    memest_errf(r->err, MEMEST_ERR_PROBE, NULL, "inconsistent timeline: event %zu (%s) %s id %" PRIu32
                ", which is %s", i, event_where(r->tl, i, where, sizeof where), what,
                r->tl->ev[i].id, strcmp(what, "allocates") == 0 ? "already live" : "not live");
    return MEMEST_EXIT_RUNTIME;
}

/* Device memory used since the context's baseline: *used. 0, or an exit code. */
static int device_used(struct probe_run *r, size_t i, const char *when, uint64_t *free_now,
                       uint64_t *used)
{
    uint64_t total;
    if (r->b->mem_info(free_now, &total) != MEMEST_PROBE_OK)
        return driver_error(r, i, when);
    *used = *free_now < r->res->free_after_ctx ? r->res->free_after_ctx - *free_now : 0;
    return 0;
}

static int out_of_memory(struct probe_run *r)
{
    r->res->verdict = true;
    r->res->fits = false;
    return MEMEST_EXIT_NOFIT;
}

/* The id bookkeeping both replays share: ALLOC of a live id or FREE of a
 * dead one is an inconsistent timeline. 0, or an exit code. */
static int check_id(struct probe_run *r, size_t i)
{
    const struct memest_event *e = &r->tl->ev[i];
    struct probe_slot *s = &r->slots[e->id];
    bool alloc = e->kind == MEMEST_EV_ALLOC;
    if (s->live == alloc)
        return inconsistent(r, i, alloc ? "allocates" : "frees");
    return 0;
}

/* ---- one device allocation per segment ---------------------------------- */

/* The segment made before event i that holds [addr, addr + bytes), or
 * SIZE_MAX. Segments ascend by address. */
static size_t segment_of(const struct memest_timeline *tl, size_t made, uint64_t addr,
                         uint64_t bytes)
{
    size_t lo = 0, hi = made;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tl->seg[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return SIZE_MAX;
    const struct memest_segment *s = &tl->seg[lo - 1];
    if (addr - s->addr > s->bytes || bytes > s->bytes - (addr - s->addr))
        return SIZE_MAX;
    return lo - 1;
}

/* Makes the segments due before event i (every one left when i is past the
 * end). 0, or an exit code. */
static int make_segments(struct probe_run *r, size_t i, size_t *made, uint64_t *reserved)
{
    const struct memest_timeline *tl = r->tl;
    while (*made < tl->nseg && (i >= tl->n || tl->seg[*made].event <= i)) {
        const struct memest_segment *s = &tl->seg[*made];
        if (s->bytes > 0) {
            enum memest_probe_status st = r->b->mem_alloc(s->bytes, &r->seg_handle[*made]);
            if (st != MEMEST_PROBE_OK) {
                r->seg_handle[*made] = 0;
                record_failure(r, i, s->bytes, *reserved, true);
                return st == MEMEST_PROBE_OOM ? out_of_memory(r)
                                              : driver_error(r, i, "allocating a segment");
            }
        }
        *reserved = memest_sat_add(*reserved, s->bytes);
        (*made)++;
    }
    return 0;
}

static int replay_segments(struct probe_run *r)
{
    const struct memest_timeline *tl = r->tl;
    struct memest_probe_result *res = r->res;
    size_t made = 0;
    uint64_t reserved = 0;
    int rc;
    for (size_t i = 0; i < tl->n; i++) {
        if (memest_probe_caught_signal) {
            res->interrupted = true;
            return MEMEST_EXIT_RUNTIME;
        }
        if ((rc = make_segments(r, i, &made, &reserved)) != 0 || (rc = check_id(r, i)) != 0)
            return rc;
        const struct memest_event *e = &tl->ev[i];
        bool alloc = e->kind == MEMEST_EV_ALLOC;
        r->slots[e->id].live = alloc;
        if (alloc && e->bytes > 0) {
            uint64_t span = e->block ? e->block : e->bytes;
            size_t k = segment_of(tl, made, tl->addr[i], span);
            if (k == SIZE_MAX) {
                char where[256];
                memest_errf(r->err, MEMEST_ERR_PROBE, NULL,
                            "inconsistent timeline: event %zu (%s) places %" PRIu64
                            " bytes outside every segment made so far", i,
                            event_where(tl, i, where, sizeof where), span);
                return MEMEST_EXIT_RUNTIME;
            }
            if (r->b->mem_touch(r->seg_handle[k], tl->addr[i] - tl->seg[k].addr, span) !=
                MEMEST_PROBE_OK)
                return driver_error(r, i, "writing a block");
        }
        if (i == res->peak_event) {
            res->predicted_reserved_at_peak = reserved;
            if ((rc = device_used(r, i, "reading free memory at the peak", &res->free_at_peak,
                                  &res->measured_peak)) != 0)
                return rc;
            res->have_measured_peak = true;
        }
    }
    if ((rc = make_segments(r, tl->n, &made, &reserved)) != 0)
        return rc;
    if (tl->n == 0) {   /* nothing to replay: the peak is what the segments hold */
        res->predicted_reserved_at_peak = reserved;
        if ((rc = device_used(r, 0, "reading free memory", &res->free_at_peak,
                              &res->measured_peak)) != 0)
            return rc;
        res->have_measured_peak = true;
    }
    uint64_t free_end;
    if ((rc = device_used(r, tl->n, "reading free memory at the end", &free_end,
                          &res->measured_reserved)) != 0)
        return rc;
    res->have_measured_reserved = true;
    return 0;
}

/* ---- one device allocation per tensor ----------------------------------- */

static int replay_tensors(struct probe_run *r)
{
    const struct memest_probe_backend *b = r->b;
    const struct memest_timeline *tl = r->tl;
    struct memest_probe_result *res = r->res;
    uint64_t live = 0;
    int rc;
    for (size_t i = 0; i < tl->n; i++) {
        if (memest_probe_caught_signal) {
            res->interrupted = true;
            return MEMEST_EXIT_RUNTIME;
        }
        if ((rc = check_id(r, i)) != 0)
            return rc;
        const struct memest_event *e = &tl->ev[i];
        struct probe_slot *s = &r->slots[e->id];
        if (e->kind == MEMEST_EV_ALLOC) {
            if (e->bytes > 0) {
                enum memest_probe_status st = b->mem_alloc(e->bytes, &s->handle);
                if (st == MEMEST_PROBE_OK) {
                    s->live = true;
                    s->bytes = e->bytes;
                    st = b->mem_touch(s->handle, 0, e->bytes);
                }
                if (st != MEMEST_PROBE_OK) {
                    record_failure(r, i, e->bytes, live, false);
                    if (st == MEMEST_PROBE_OOM)
                        return out_of_memory(r);
                    return driver_error(r, i, s->live ? "writing an allocation"
                                                      : "allocating device memory");
                }
            }
            s->live = true;
            s->bytes = e->bytes;
            live = memest_sat_add(live, e->bytes);
        } else {
            s->live = false;
            if (s->bytes > 0 && b->mem_free(s->handle) != MEMEST_PROBE_OK)
                return driver_error(r, i, "freeing device memory");
            live = s->bytes < live ? live - s->bytes : 0;
        }
        if (i == res->peak_event) {
            if ((rc = device_used(r, i, "reading free memory at the peak", &res->free_at_peak,
                                  &res->measured_peak)) != 0)
                return rc;
            res->have_measured_peak = true;
        }
    }
    if (tl->n == 0) {   /* nothing to replay: the peak is 0 bytes */
        res->free_at_peak = res->free_after_ctx;
        res->have_measured_peak = true;
    }
    return 0;
}

int memest_probe_replay(struct probe_run *r)
{
    int rc = r->res->segments ? replay_segments(r) : replay_tensors(r);
    if (rc)
        return rc;
    if (memest_probe_caught_signal) {
        r->res->interrupted = true;
        return MEMEST_EXIT_RUNTIME;
    }
    r->res->verdict = true;
    r->res->fits = true;
    return MEMEST_EXIT_OK;
}
