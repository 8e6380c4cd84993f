/* compare.h - the comparison of cards (--gpu all, or a list of presets):
 * for the model and step as given, one row per card: whether the step fits
 * at --batch (the device total and what stays free), the largest batch that
 * fits, and the estimated step time and samples/s at that batch (per node
 * with several GPUs; per unit of the user's price with --price). The rows
 * are computed by the command (src/app/flow_compare.c), ordered here, and
 * printed by the report layer (text, CSV or JSON). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memest/fit.h"
#include "memest/gpu.h"
#include "memest/roofline.h"

struct memest_compare_row {
    const struct memest_gpu *gpu;
    size_t index;              /* the card's place in the list given (the table's for all) */
    bool has_price;
    double price;              /* --price: per hour of one card, the user's currency */
    /* at --batch */
    bool limit;                /* beyond memest's limits: does not fit */
    char limit_msg[256];
    struct memest_fit fit;     /* needs: the device total; fits: within the headroom */
    /* the largest batch that fits (mb.best; 0: not even batch 1) */
    struct memest_max_batch mb;
    uint64_t best_needs;       /* the device total at mb.best */
    bool has_time;             /* the time at mb.best (needs mb.best > 0) */
    struct memest_time time;
    enum memest_precision precision;
    bool peak_fallback;        /* the card lacks that tensor-core mode: its fp32 peak */
    double peak_flops;
    double per_node;           /* samples/s of one node (several nodes), else 0 */
    double per_price;          /* samples per unit of price (with a price and a time), else 0 */
};

struct memest_compare_report {
    const char *model, *file, *optimizer, *dtype;
    bool inference;
    int64_t batch;
    double headroom_pct, mfu;
    int64_t gpus;              /* world size (1: one GPU) */
    int64_t gpus_per_node;     /* of the layout; nodes = ceil(gpus / gpus_per_node) */
    int64_t nodes;
    bool by_price;             /* sorted by samples per unit of price (some card is priced) */
    const struct memest_compare_row *rows;   /* in the report's order */
    size_t n;
    size_t fitting;            /* rows that fit at --batch */
};

/* Orders the rows: first the cards the step fits at --batch, by samples/s at
 * their largest batch (by samples per unit of price first when by_price,
 * the priced cards before the others), fastest first; then the cards it
 * does not fit, by their largest batch, largest first. Ties keep the order
 * given. */
void memest_compare_sort(struct memest_compare_row *rows, size_t n, bool by_price);
