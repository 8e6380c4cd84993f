/* probe_internal.h - what the probe's setup (probe.c) and its replays
 * (probe_replay.c) share: the state of one probe run. */
#pragma once

#include <signal.h>
#include <stdbool.h>

#include "memest/probe.h"

/* One timeline allocation id: live, and (replaying tensors) its device
 * handle (0 for a 0-byte allocation, which PyTorch does not send to the
 * device either). */
struct probe_slot {
    uint64_t handle;
    uint64_t bytes;
    bool live;
};

struct probe_run {
    const struct memest_probe_backend *b;
    const struct memest_timeline *tl;
    struct memest_probe_result *res;
    struct memest_error *err;
    struct probe_slot *slots;   /* indexed by allocation id */
    size_t nslots;
    uint64_t *seg_handle;       /* replaying segments: per segment, 0 until made */
    void *ctx;                  /* memest's context, NULL when none */
    bool opened;
};

/* The first SIGINT or SIGTERM caught during the run, or 0. */
extern volatile sig_atomic_t memest_probe_caught_signal;

/* Replays the timeline's events: one device allocation per allocator
 * segment when the timeline has the allocator's layout (timeline.h),
 * else one per tensor. MEMEST_EXIT_OK, NOFIT or RUNTIME (err set). */
int memest_probe_replay(struct probe_run *r);
/* Frees what the replay holds on the device (its tensors, its segments),
 * keeping the context. false when a free failed (err set). */
bool probe_release(struct probe_run *r);
/* After the segments' replay ran out of memory: the replay under pressure
 * (probe_pressure.c). OK when it completes, NOFIT, or RUNTIME. */
int memest_probe_pressure(struct probe_run *r, const struct memest_alloc_conf *c);
