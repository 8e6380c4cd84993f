/* ops_families.h - the op families: each src/ops/ops_<family>.c defines a
 * table memest_ops_<family>[] of memest_ops_<family>_count descriptors, and
 * ops.c registers every family listed here. The family files see these
 * declarations (through ops_common.h), so a definition that disagrees with
 * them does not compile. A new family: one more X(name) below. */
#pragma once

#include "memest/ops.h"

#define MEMEST_OP_FAMILIES(X)                                                                \
    X(linear) X(conv) X(pool) X(norm) X(activation) X(shape) X(elementwise) X(embedding)   \
    X(rnn) X(attention) X(llm) X(llm_rotary) X(moe) X(sdpa) X(resample) X(pad) X(view)      \
    X(rearrange) X(einsum) X(index) X(unary) X(compare) X(factory) X(vecnorm) X(detection) \
    X(write) X(sample) X(parallel) X(ssm)

#define MEMEST_OP_FAMILY_DECL(f)                         \
    extern const struct memest_op_desc memest_ops_##f[]; \
    extern const int memest_ops_##f##_count;
MEMEST_OP_FAMILIES(MEMEST_OP_FAMILY_DECL)
