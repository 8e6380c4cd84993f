/* probe.h - the live CUDA probe: replays a predicted allocation timeline on a
 * real device and reports whether it fits and what the device really used.
 *
 * The driver is reached through a backend, a struct of function pointers
 * (nvtop's pattern). The CUDA backend (probe_cuda.c) dlopen()s libcuda at
 * run time, so memest has no link-time dependency on CUDA; the tests load a
 * fake libcuda (tests/fake_cuda/) through the same backend code.
 *
 * Usage:
 *     struct memest_probe_config cfg = { .device = 0 };
 *     struct memest_probe_result res;
 *     struct memest_error err = {0};
 *     int rc = memest_probe_run(&cfg, &timeline, &res, &err);
 *     memest_probe_text(stdout, &res);   // report.h; also after NOFIT
 *     if (rc != MEMEST_EXIT_OK && rc != MEMEST_EXIT_NOFIT) report err
 *
 * What the probe proves: that the predicted footprint can be allocated on
 * this card, next to memest's own CUDA context and whatever other processes
 * hold right now. With the allocator's layout (timeline.h; memest's
 * --probe asks the simulator for it) it allocates what PyTorch's caching
 * allocator would: one cuMemAlloc per segment, at the event that makes it,
 * so the device holds the predicted reserved memory and its usage is what
 * nvidia-smi would show; without one, one cuMemAlloc per tensor. It does
 * not run the model: kernels' own workspaces beyond the timeline's (cuDNN's
 * algorithm-dependent ones), and library handles, are not exercised. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memest/error.h"
#include "memest/timeline.h"

struct memest_alloc_conf;   /* alloc_conf.h */

/* What a backend call reports. */
enum memest_probe_status {
    MEMEST_PROBE_OK = 0,
    MEMEST_PROBE_OOM,       /* the device is out of memory */
    MEMEST_PROBE_NODRIVER,  /* no driver library, or it lacks an entry point */
    MEMEST_PROBE_NODEV,     /* the driver cannot initialise, or no such device */
    MEMEST_PROBE_FAILED,    /* any other driver error */
    MEMEST_PROBE_NOMEM,     /* the host is out of memory (loading the driver) */
    MEMEST_PROBE_STATUS_COUNT
};

/* A device driver behind the probe. Calls other than open() require a
 * successful open(); memory calls act on the current context (the one last
 * created or selected with ctx_use). On failure, last_error() describes the
 * most recent failed call ("cuMemAlloc_v2(4096 bytes): out of memory
 * (CUDA_ERROR_OUT_OF_MEMORY)"); the text lives until the next call. */
struct memest_probe_backend {
    const char *name;   /* "cuda" */
    /* Loads and initialises the driver. libpath NULL: the backend's default
     * search. NODRIVER (library missing or incomplete) or NODEV (it cannot
     * initialise or sees no device) on failure. */
    enum memest_probe_status (*open)(const char *libpath);
    enum memest_probe_status (*device_count)(int *count);
    /* Name (NUL-terminated, truncated to name_size) and total memory. */
    enum memest_probe_status (*device_info)(int device, char *name, size_t name_size,
                                            uint64_t *total);
    /* Creates a context on `device` and makes it current. scratch false:
     * the context the replay runs in (the device's primary context, as
     * PyTorch uses, where the driver has one); scratch true: an additional
     * ordinary context, used only to measure what one context costs. */
    enum memest_probe_status (*ctx_create)(int device, bool scratch, void **ctx);
    enum memest_probe_status (*ctx_use)(void *ctx);     /* makes ctx current */
    enum memest_probe_status (*ctx_destroy)(void *ctx); /* releases it */
    /* Free and total device memory as the driver reports them. */
    enum memest_probe_status (*mem_info)(uint64_t *free_bytes, uint64_t *total_bytes);
    /* Plain device memory (never managed memory), its handle in *handle. */
    enum memest_probe_status (*mem_alloc)(uint64_t bytes, uint64_t *handle);
    /* Writes `bytes` of an allocation from `offset` on, so the device
     * really backs them. */
    enum memest_probe_status (*mem_touch)(uint64_t handle, uint64_t offset, uint64_t bytes);
    enum memest_probe_status (*mem_free)(uint64_t handle);
    /* Releases any context still held and unloads the driver. Safe to call
     * twice and without a successful open(). */
    void (*close)(void);
    const char *(*last_error)(void);
};

/* The CUDA Driver API backend (src/probe/probe_cuda.c). */
extern const struct memest_probe_backend memest_probe_cuda;

struct memest_probe_config {
    int device;         /* CUDA device ordinal */
    /* Driver library to load. NULL: $MEMEST_LIBCUDA if set and not empty,
     * else "libcuda.so.1", then "libcuda.so". */
    const char *libpath;
    const struct memest_probe_backend *backend;  /* NULL: &memest_probe_cuda */
    /* The estimate's CUDA context (calc.h: overhead), compared with the
     * context measured. */
    bool have_predicted_context;
    uint64_t predicted_context;
    /* When the segments' replay runs out of memory: the step replayed again
     * through the caching allocator's model on the device, whose cudaMalloc
     * failures make it release cached segments and retry as PyTorch does
     * (calc.h: memest_calc_device_replay); alloc is the settings (NULL: the
     * default). Not with expandable segments. */
    bool pressure;
    const struct memest_alloc_conf *alloc;
};

/* Where the replay ran out of device memory (or hit a driver error). */
struct memest_probe_failure {
    size_t event;           /* index into the timeline's events */
    enum memest_phase phase;
    uint32_t node;          /* node index, UINT32_MAX = none */
    char node_name[160];    /* "" when unknown */
    bool segment;           /* a segment failed (replaying segments) */
    uint64_t bytes;         /* size of the allocation (tensor or segment) that failed */
    uint64_t live;          /* tensors: timeline bytes live just before it;
                               segments: segment bytes made before it */
};

/* All byte figures come from the driver, except predicted_peak and
 * failed_at.live, which come from the timeline. A figure whose have_* flag
 * is false could not be measured and is 0.
 *
 * free_after_ctx   free memory right after memest's context was created
 *                  (and warmed up by one 1-byte allocation, memset and free,
 *                  so lazily loaded driver code is counted with it), before
 *                  the first event: the baseline of the replay.
 * context_overhead what one CUDA context costs on this device: the drop in
 *                  free memory when a second, scratch context is created
 *                  (and warmed up) next to memest's, measured before the
 *                  replay and destroyed again. The driver cannot report free
 *                  memory without a context, so this is how the cost of
 *                  memest's own context is measured. Flag: have_overhead.
 * free_before      free_after_ctx + context_overhead: the free memory the
 *                  device had before memest created its context, i.e. what
 *                  a new process (context and tensors) could use. Flag:
 *                  have_overhead.
 * predicted_peak   memest_timeline_peak() of the timeline; peak_event is
 *                  the event at which it is first reached (peak_phase,
 *                  peak_node: where that is).
 * measured_peak    free_after_ctx minus the free memory right after event
 *                  peak_event was replayed (and touched): the device memory
 *                  the replayed allocations really took at the predicted
 *                  peak, including the driver's rounding to its allocation
 *                  granularity, excluding contexts and other processes
 *                  (assumed not to change their usage during the probe).
 *                  Flag: have_measured_peak (false when the replay stopped
 *                  before the peak).
 * free_at_peak     free memory at that moment: the headroom left. */
struct memest_probe_result {
    int device;
    bool have_device;           /* device_name and total are set */
    char device_name[256];
    uint64_t total;             /* total device memory */
    bool have_context;          /* free_after_ctx is set */
    uint64_t free_after_ctx;
    bool have_overhead;         /* context_overhead and free_before are set */
    uint64_t context_overhead;
    uint64_t free_before;
    uint64_t predicted_peak;
    size_t peak_event;
    enum memest_phase peak_phase;   /* of event peak_event */
    char peak_node[160];            /* its node's name, "" when unknown */
    bool have_measured_peak;    /* measured_peak and free_at_peak are set */
    uint64_t measured_peak;
    uint64_t free_at_peak;
    bool segments;              /* replayed segment by segment */
    size_t nsegments;
    uint64_t predicted_reserved, predicted_reserved_at_peak;
    bool have_measured_reserved;
    uint64_t measured_reserved;
    bool have_predicted_context;
    uint64_t predicted_context;
    bool verdict;               /* the replay completed or ran out of memory */
    bool fits;                  /* every event was replayed (valid if verdict) */
    bool failed;                /* failed_at is set (out of memory, or a driver error) */
    struct memest_probe_failure failed_at;
    bool pressured;             /* the replay under pressure ran (config.pressure) */
    bool pressure_completes;    /* ... and every event was served: fits */
    size_t pressure_failed_event;
    uint64_t pressure_retries, pressure_released, pressure_reserved;
    uint64_t pressure_least;    /* the least memory these events run in */
    bool interrupted;           /* stopped by SIGINT / SIGTERM */
    bool no_memory;             /* not run: the host is out of memory */
};

/* Replays the timeline on device cfg->device. With the allocator's layout:
 * every segment becomes a device allocation at the event that makes it,
 * each ALLOC writes its block within its segment, and nothing is freed
 * before the end. Without: every ALLOC becomes a device allocation that is
 * memset (so it is backed), every FREE frees it. At the predicted peak and
 * at the end device usage is measured. Everything allocated is freed
 * and the contexts destroyed on every path. SIGINT and SIGTERM are caught
 * for the duration: the replay stops, cleans up, restores the previous
 * handlers and re-raises the signal (if that returns: INTERNAL, err set).
 *
 * *res is always filled as far as the probe got. Returns
 *   MEMEST_EXIT_OK        every event replayed: fits (err untouched)
 *   MEMEST_EXIT_NOFIT     out of device memory at res->failed_at (err untouched)
 *   MEMEST_EXIT_NODEV     no driver, the driver cannot initialise, no such
 *                         device, or no context can be created on it (device
 *                         full, or busy in exclusive mode): err (MEMEST_ERR_PROBE)
 *                         says why, ending "cannot probe; the estimate above
 *                         is unchecked"
 *   MEMEST_EXIT_RUNTIME  any other driver error (err MEMEST_ERR_PROBE, with
 *                         the driver's text and the event), an inconsistent
 *                         timeline (MEMEST_ERR_PROBE), host memory exhausted
 *                         (MEMEST_ERR_NOMEM), or an interruption.
 * Note that memest_error_exit() maps MEMEST_ERR_PROBE to NODEV: use this
 * return value as the exit code. */
int memest_probe_run(const struct memest_probe_config *cfg, const struct memest_timeline *tl,
                     struct memest_probe_result *res, struct memest_error *err);
