/* shape.h - tensor geometry: sizes and strides (in elements), as PyTorch
 * keeps them, so that views, copies and layouts follow PyTorch's rules. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MEMEST_MAX_DIMS 8
/* Largest single dimension accepted: 2^53 (exact in JSON numbers). */
#define MEMEST_DIM_MAX ((int64_t)1 << 53)

struct memest_shape {
    int ndim;
    int64_t size[MEMEST_MAX_DIMS];
    int64_t stride[MEMEST_MAX_DIMS];
};

/* Sets sizes and row-major contiguous strides. ndim must be <= MAX_DIMS. */
void memest_shape_set(struct memest_shape *s, int ndim, const int64_t *size);
void memest_shape_contiguous_strides(struct memest_shape *s);
/* Number of elements, overflow-checked: false if it exceeds 2^63-1. */
bool memest_shape_numel(const struct memest_shape *s, uint64_t *numel);
bool memest_shape_is_contiguous(const struct memest_shape *s);
/* True when the elements cover a dense block without overlap, in any dim
 * order (PyTorch's is_non_overlapping_and_dense). */
bool memest_shape_is_dense(const struct memest_shape *s);
/* Strides for a view of `from` with the sizes of `to` (PyTorch's
 * computeStride). Returns true and fills to->stride when a view is possible,
 * false when reshape would have to copy. Numels must match. */
bool memest_shape_view_strides(const struct memest_shape *from, struct memest_shape *to);
/* Strides like PyTorch's empty_like with preserve_format: like's own when it
 * is dense, else dense strides in like's dim order (infer_dense_strides). */
void memest_shape_like(struct memest_shape *out, const struct memest_shape *like);
/* Normalises a possibly negative dim for a tensor of ndim dims (PyTorch's
 * maybe_wrap_dim). Returns -1 when out of range. */
int memest_wrap_dim(int64_t dim, int ndim);
/* Broadcasts a and b into out (sizes only). Returns false when the sizes are
 * not broadcastable. */
bool memest_shape_broadcast(const struct memest_shape *a, const struct memest_shape *b,
                            struct memest_shape *out);
bool memest_shape_equal(const struct memest_shape *a, const struct memest_shape *b);
/* "[32, 3, 224, 224]" into buf; returns buf. */
char *memest_shape_str(const struct memest_shape *s, char *buf, size_t n);
