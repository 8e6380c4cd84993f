/* alloc_check.h - the allocator tests' request: a malloc that must succeed
 * with the block size the test worked out. */
#pragma once

#include <stdint.h>

#include "check.h"
#include "memest/alloc.h"

static inline uint32_t get(struct memest_alloc *a, uint64_t bytes, uint64_t expect_block)
{
    uint32_t h = UINT32_MAX;
    uint64_t got = 0;
    CHECK_EQ_INT(memest_alloc_malloc(a, bytes, &h, &got), 0);
    CHECK_EQ_U64(got, expect_block);
    return h;
}
