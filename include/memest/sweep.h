/* sweep.h - batch-size and variable sweeps: the LIST argument of --sweep and
 * --sweep-var, one row of figures per value, and the sweep report (a text
 * table, CSV with a header row, or JSON with "schema_version").
 *
 * LIST is one of
 *   1,2,8,32          the values, in the order given
 *   START:END:xK      START, START*K, START*K^2, ... while <= END  (K >= 2)
 *   START:END:+K      START, START+K, START+2K, ...  while <= END  (K >= 1)
 * Every value is a whole number between 1 and 2^53 - 1 written in decimal
 * digits only (no sign, space, exponent or leading '+'), START <= END, and a
 * list has at most MEMEST_SWEEP_MAX_VALUES values. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memest/error.h"
#include "memest/fit.h"
#include "memest/roofline.h"

#define MEMEST_SWEEP_MAX_VALUES 65536
#define MEMEST_SWEEP_MAX_VALUE (((int64_t)1 << 53) - 1)

struct memest_sweep_list {
    int64_t *v;
    size_t n;
};

/* Parses LIST (the value of option `opt`, for messages) into out (free it
 * with memest_sweep_list_free). 0, or -1 with a usage error naming the
 * option, the list and the fault. */
int memest_sweep_parse(const char *list, const char *opt, struct memest_sweep_list *out,
                       struct memest_error *err);
void memest_sweep_list_free(struct memest_sweep_list *l);

/* One value of a sweep. Sizes in bytes; figures that need a card (fits) or a
 * card preset (time) are flagged by has_fit / has_time. */
struct memest_sweep_row {
    int64_t value;           /* the swept value (the batch, or the variable) */
    int64_t batch;
    bool limit;              /* beyond memest's limits (an overflow): no figures, does not fit */
    char limit_msg[256];
    uint64_t peak;           /* train_peak.bytes (or the inference peak) */
    uint64_t reserved;       /* reserved_peak */
    uint64_t total_device;   /* reserved + overhead: on a card that is no constraint */
    uint64_t least;          /* the least device memory the step runs in (0: not
                                searched: the points of a search) */
    bool least_exact;        /* (calc.h: memest_pressure) */
    uint64_t lower;          /* peak + overhead: total_device is never below it */
    bool may_fit;            /* lower fits (needs a card) */
    double step_flops;       /* FLOPs of one optimizer step: grad_accum micro-batches'
                                forward and backward, and the optimizer's own once */
    bool has_fit, fits;
    bool has_time;
    struct memest_time time;
};

/* What the report prints around the rows (report.h writes it). */
struct memest_sweep_report {
    const char *model, *file;
    const char *variable;    /* NULL: a batch sweep */
    int64_t batch;           /* the batch of a variable sweep */
    const char *optimizer, *dtype;
    bool inference;
    const struct memest_card *card;   /* NULL: no card */
    double headroom_pct;
    double mfu;
    const char *precision;   /* of the time estimate; NULL without times */
    double peak_flops;
    bool peak_fallback;      /* the card lacks that tensor-core mode: fp32 peak used */
    const struct memest_sweep_row *rows;
    size_t nrows;
};
