/* probe_pressure.c - the step on the device under memory pressure: when the
 * segments' replay (probe_replay.c), which holds every segment to the end as
 * the caching allocator does on a card with room, runs out of device
 * memory, the step is replayed again through the allocator's model
 * (calc.h: memest_calc_device_replay), each segment it makes cuMemAlloc'd
 * (and written, so that the device backs it) and each it gives back
 * cuMemFree'd, a cuMemAlloc that fails with CUDA_ERROR_OUT_OF_MEMORY making
 * it release its cached segments and retry, as PyTorch's malloc does
 * before it raises OutOfMemoryError. */
#include "memest/calc.h"
#include "probe_internal.h"

static int seg_alloc(void *ctx, uint64_t bytes, uint64_t *handle)
{
    const struct memest_probe_backend *b = ((struct probe_run *)ctx)->b;
    enum memest_probe_status st = b->mem_alloc(bytes, handle);
    if (st == MEMEST_PROBE_OOM)
        return 1;
    if (st != MEMEST_PROBE_OK)
        return -1;
    if (b->mem_touch(*handle, 0, bytes) != MEMEST_PROBE_OK) {
        b->mem_free(*handle);
        return -1;
    }
    return 0;
}

static int seg_free(void *ctx, uint64_t handle)
{
    const struct memest_probe_backend *b = ((struct probe_run *)ctx)->b;
    return b->mem_free(handle) == MEMEST_PROBE_OK ? 0 : -1;
}

int memest_probe_pressure(struct probe_run *r, const struct memest_alloc_conf *c)
{
    struct memest_probe_result *res = r->res;
    if (!probe_release(r))
        return MEMEST_EXIT_RUNTIME;
    struct memest_device_segments d = {seg_alloc, seg_free, r};
    struct memest_device_replay dr;
    if (memest_calc_device_replay(r->tl, c, &d, &dr, r->err) != 0)
        return MEMEST_EXIT_RUNTIME;
    res->pressured = true;
    res->pressure_completes = dr.completes;
    res->pressure_failed_event = dr.failed_event;
    res->pressure_retries = dr.retries;
    res->pressure_released = dr.released;
    res->pressure_reserved = dr.max_reserved;
    res->pressure_least = dr.least;
    if (!dr.completes)
        return MEMEST_EXIT_NOFIT;
    res->fits = true;
    return MEMEST_EXIT_OK;
}
