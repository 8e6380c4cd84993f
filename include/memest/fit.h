/* fit.h - does a step fit on the target card: the card (--gpu, --mem, or the
 * probed device), the verdict with its headroom, and the largest batch that
 * fits (--max-batch, by bisection). The one-line verdict --fit prints, and
 * every other text of these figures, is the report layer's (report.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memest/calc.h"
#include "memest/error.h"
#include "memest/gpu.h"
#include "memest/graph.h"
#include "memest/roofline.h"

enum memest_card_source {
    MEMEST_CARD_PRESET = 0,  /* --gpu NAME */
    MEMEST_CARD_MEM,         /* --mem SIZE */
    MEMEST_CARD_PROBE,       /* --gpu auto --probe: the probed device's total */
};

/* The target card. `gpu` carries the peaks and bandwidth of the time
 * estimate; it is NULL for --mem, and for a probed device memest has no
 * preset for. */
struct memest_card {
    enum memest_card_source source;
    const char *name;              /* preset name, "mem", or the driver's device name */
    const char *label;             /* for reports */
    uint64_t memory;               /* bytes the step may use in total */
    const struct memest_gpu *gpu;  /* NULL: no throughput figures */
};

/* The verdict: the step needs `needs` bytes on the device (total_device:
 * allocator segments plus the CUDA context and workspaces, what nvidia-smi
 * shows), the card has `card`; it fits when needs <= usable, the card less
 * the headroom percentage. */
struct memest_fit {
    uint64_t needs;
    uint64_t card;
    double headroom_pct;
    uint64_t usable;      /* floor(card * (1 - headroom_pct / 100)) */
    int64_t free;         /* card - needs: what stays free, negative when the
                             step needs more than the card */
    bool fits;
    /* under memory pressure (memest_fit_judge): */
    uint64_t unconstrained;  /* the unconstrained reserved peak + overhead */
    bool has_least;          /* needs is the least device memory the step runs in */
    bool least_exact;        /* (calc.h: memest_pressure) */
    bool judged;             /* fits is the replay's on the card */
    bool fraction;           /* judged under --memory-fraction's allowed bytes: */
    uint64_t allowed, least_allocator;   /* those, and the least allocator memory */
    uint64_t retries, released;   /* that replay's releases */
};

/* The bytes a fit check compares with the card: the least device memory
 * the training step runs in (context included) when it was searched, else
 * its total_device; for --inference the no-grad pass's. */
uint64_t memest_fit_needs(const struct memest_estimate *e, bool inference);

/* Fills *out. headroom_pct in [0, 100). Cannot fail. */
void memest_fit_check(uint64_t needs, uint64_t card, double headroom_pct, struct memest_fit *out);

/* The verdict on estimate e: memest_fit_check of memest_fit_needs, and,
 * when e replayed the step on this card (its step's card_usable), fits is
 * whether that replay completed, not a comparison: completion need not be
 * monotone in the memory. */
void memest_fit_judge(const struct memest_estimate *e, bool inference, uint64_t card,
                      double headroom_pct, struct memest_fit *out);

/* The step at a batch size: *fits, the verdict; *may_fit, a bound that
 * never decreases as the batch shrinks: false only when the batch cannot
 * fit (memest uses "the allocated peak, without the allocator's rounding
 * and the CUDA overhead, is within the usable memory", which the reserved
 * total never undercuts). *fits implies *may_fit. A batch beyond memest's
 * limits (MEMEST_ERR_LIMIT) neither fits nor may fit. 0, or -1 on an error
 * (err set). */
typedef int (*memest_fits_fn)(void *ctx, int64_t batch, bool *fits, bool *may_fit,
                              struct memest_error *err);

#define MEMEST_MAX_BATCH_SCAN 65536  /* batches checked one by one, at most */

/* How many more calls of fits() the caller can afford (its work budget,
 * cost.h), asked once before the scan; >= 0. */
typedef int64_t (*memest_afford_fn)(void *ctx);

struct memest_max_batch {
    int64_t best;      /* the largest batch in [1, limit] that fits; 0: none */
    int64_t steady;    /* a batch N that fits where N + 1 does not, found by
                          doubling and bisection: when the memory grows
                          steadily with the batch, every batch up to N fits
                          (not proven otherwise: see below) */
    int64_t bound;     /* the largest batch that may fit (no larger one can) */
    int calls;         /* evaluations of fits() */
    int64_t scan_max;  /* batches the scan could check: MEMEST_MAX_BATCH_SCAN, or
                          fewer when the caller could not afford as many */
    bool capped;       /* bound - steady exceeded scan_max: best is the largest
                          fitting batch of the top of that range, or steady; not
                          proven maximal */
};

/* The largest batch in [1, limit] that fits. The memory of a step does not
 * always grow with the batch: PyTorch's caching allocator rounds blocks
 * and picks segment sizes by block size, so a larger batch can reserve
 * less. So: `steady` by a doubling search and bisection (O(log limit)
 * calls: where fitting is not monotone it ends at the end of some run of
 * fitting batches, not always the first), `bound` the same way over may_fit
 * (which is monotone), then every
 * batch from bound down to steady + 1 in turn until one fits (none is
 * needed when the memory does grow steadily). The answer equals the last
 * fitting batch of a brute-force sweep of 1..limit unless `capped`. The
 * scan checks at most MEMEST_MAX_BATCH_SCAN batches, and at most what
 * afford(ctx) says when afford is not NULL. 0 / -1 (an error of fits). */
int memest_fit_max_batch(memest_fits_fn fits, memest_afford_fn afford, void *ctx, int64_t limit,
                         struct memest_max_batch *out, struct memest_error *err);

/* The card, verdict and time estimate of one estimate, as reported. */
struct memest_card_report {
    const struct memest_card *card;
    struct memest_fit fit;
    uint64_t reserved, overhead;    /* the parts of fit.needs */
    bool has_time;                  /* the card has a preset */
    struct memest_time time;
    double mfu;
    int64_t grad_accum;             /* micro-batches per step */
    double slots, samples_k;  /* several GPUs: the time options' (roofline.h), 0 on one */
    enum memest_precision precision;
    double peak_flops;              /* of that precision (or the fp32 fallback) */
    bool peak_fallback;
    const struct memest_node_time *nodes;  /* per node (for the slowest memory-bound layers), or NULL */
};
