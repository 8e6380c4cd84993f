/* checked.h - overflow-checked 64-bit size arithmetic. All byte and element
 * counts in memest go through these: a wrap-around is an error, never a
 * silently wrong number. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* Largest size memest accepts for any count or byte total: 2^63 - 1. */
#define MEMEST_SIZE_MAX ((uint64_t)INT64_MAX)

/* *out = a * b; returns false (and leaves *out unspecified) on overflow past
 * MEMEST_SIZE_MAX. */
static inline bool memest_mul(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out) && *out <= MEMEST_SIZE_MAX;
}

/* *out = a + b; false on overflow past MEMEST_SIZE_MAX. */
static inline bool memest_add(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_add_overflow(a, b, out) && *out <= MEMEST_SIZE_MAX;
}

/* Saturating add for totals that are checked once at the end. */
static inline uint64_t memest_sat_add(uint64_t a, uint64_t b)
{
    uint64_t r;
    return memest_add(a, b, &r) ? r : UINT64_MAX;
}

static inline uint64_t memest_sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return memest_mul(a, b, &r) ? r : UINT64_MAX;
}
