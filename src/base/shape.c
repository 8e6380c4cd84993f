/* shape.c - sizes, strides, views and broadcasting with PyTorch's rules
 * (c10 TensorImpl contiguity, at::detail::computeStride, infer_size). */
#include "memest/shape.h"

#include <stdio.h>
#include <string.h>

#include "memest/checked.h"

/* a * b for sizes and strides, saturating at INT64_MAX (and INT64_MIN):
 * shapes are built before their element count is checked, and a geometry
 * that large is rejected by that check, so a saturated stride is never
 * used for a figure. */
static int64_t smul(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
    return r;
}

void memest_shape_contiguous_strides(struct memest_shape *s)
{
    int64_t st = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
        s->stride[d] = st;
        st = smul(st, s->size[d] > 1 ? s->size[d] : 1);
    }
}

void memest_shape_set(struct memest_shape *s, int ndim, const int64_t *size)
{
    s->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        s->size[d] = size[d];
    memest_shape_contiguous_strides(s);
}

bool memest_shape_numel(const struct memest_shape *s, uint64_t *numel)
{
    uint64_t n = 1;
    for (int d = 0; d < s->ndim; d++)
        if (s->size[d] < 0 || !memest_mul(n, (uint64_t)s->size[d], &n))
            return false;
    *numel = n;
    return true;
}

bool memest_shape_is_contiguous(const struct memest_shape *s)
{
    int64_t expected = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
        if (s->size[d] == 0)
            return true;
        if (s->size[d] != 1) {
            if (s->stride[d] != expected)
                return false;
            expected = smul(expected, s->size[d]);
        }
    }
    return true;
}

bool memest_shape_is_dense(const struct memest_shape *s)
{
    if (s->ndim == 0)
        return true;
    if (s->ndim == 1)
        return s->size[0] < 2 || s->stride[0] == 1;
    int perm[MEMEST_MAX_DIMS];
    for (int i = 0; i < s->ndim; i++)
        perm[i] = i;
    /* insertion sort: size<2 dims last, otherwise by increasing stride */
    for (int i = 1; i < s->ndim; i++) {
        for (int j = i; j > 0; j--) {
            int a = perm[j], b = perm[j - 1];
            bool a_before_b;
            if (s->size[a] < 2)
                a_before_b = false;
            else if (s->size[b] < 2)
                a_before_b = true;
            else
                a_before_b = s->stride[a] < s->stride[b];
            if (!a_before_b)
                break;
            perm[j] = b;
            perm[j - 1] = a;
        }
    }
    int64_t require = 1;
    for (int i = 0; i < s->ndim; i++) {
        int64_t sz = s->size[perm[i]];
        if (sz < 2)
            return true;
        if (s->stride[perm[i]] != require)
            return false;
        require = smul(require, sz);
    }
    return true;
}

bool memest_shape_view_strides(const struct memest_shape *from, struct memest_shape *to)
{
    if (from->ndim == 0) {
        for (int d = 0; d < to->ndim; d++)
            to->stride[d] = 1;
        return true;
    }
    uint64_t numel;
    if (!memest_shape_numel(from, &numel))
        return false;
    if (numel == 0) {
        memest_shape_contiguous_strides(to);
        return true;
    }
    int view_d = to->ndim - 1;
    int64_t chunk_base_stride = from->stride[from->ndim - 1];
    int64_t tensor_numel = 1, view_numel = 1;
    for (int td = from->ndim - 1; td >= 0; td--) {
        tensor_numel = smul(tensor_numel, from->size[td]);
        if (td == 0 || (from->size[td - 1] != 1 &&
                        from->stride[td - 1] != smul(tensor_numel, chunk_base_stride))) {
            while (view_d >= 0 && (view_numel < tensor_numel || to->size[view_d] == 1)) {
                to->stride[view_d] = smul(view_numel, chunk_base_stride);
                view_numel = smul(view_numel, to->size[view_d]);
                view_d--;
            }
            if (view_numel != tensor_numel)
                return false;
            if (td > 0) {
                chunk_base_stride = from->stride[td - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

/* -1, 0, 1: whether dim a goes before, stays, or goes after dim b in the
 * innermost-first order of infer_dense_strides (a 0 stride is ambiguous). */
static int dense_order(const struct memest_shape *s, int a, int b)
{
    int64_t sa = s->stride[a], sb = s->stride[b];
    if (sa == 0 || sb == 0)
        return 0;
    if (sa != sb)
        return sa < sb ? -1 : 1;
    return s->size[a] > s->size[b] ? 1 : 0;
}

/* PyTorch's infer_dense_strides (c10/util/strides.h, as empty_like's
 * preserve_format and TensorIterator use it): dense strides keeping the dim
 * order of a strided, non-dense tensor (a transposed select, a slice). */
static void infer_dense_strides(struct memest_shape *out, const struct memest_shape *like)
{
    int n = like->ndim, perm[MEMEST_MAX_DIMS];
    for (int i = 0; i < n; i++)
        perm[i] = n - 1 - i;
    for (int i = 1; i < n; i++) {
        int d1 = i;
        for (int d0 = i - 1; d0 >= 0; d0--) {
            int cmp = dense_order(like, perm[d0], perm[d1]);
            if (cmp > 0) {
                int t = perm[d0];
                perm[d0] = perm[d1];
                perm[d1] = t;
                d1 = d0;
            } else if (cmp < 0) {
                break;
            }
        }
    }
    int64_t cur = 1;
    for (int i = 0; i < n; i++) {
        out->stride[perm[i]] = cur;
        if (like->size[perm[i]] > 1)
            cur = smul(cur, like->size[perm[i]]);
    }
}

void memest_shape_like(struct memest_shape *out, const struct memest_shape *like)
{
    if (out != like)
        *out = *like;
    if (!memest_shape_is_dense(like))
        infer_dense_strides(out, like);
}

int memest_wrap_dim(int64_t dim, int ndim)
{
    int n = ndim > 0 ? ndim : 1; /* PyTorch treats a scalar as 1-D here */
    if (dim < -n || dim >= n)
        return -1;
    return (int)(dim < 0 ? dim + n : dim);
}

bool memest_shape_broadcast(const struct memest_shape *a, const struct memest_shape *b,
                            struct memest_shape *out)
{
    int n = a->ndim > b->ndim ? a->ndim : b->ndim;
    struct memest_shape r;
    r.ndim = n;
    for (int i = 0; i < n; i++) {
        int da = a->ndim - n + i, db = b->ndim - n + i;
        int64_t sa = da >= 0 ? a->size[da] : 1;
        int64_t sb = db >= 0 ? b->size[db] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return false;
        r.size[i] = sa == 1 ? sb : sa;
    }
    memest_shape_contiguous_strides(&r);
    *out = r;
    return true;
}

bool memest_shape_equal(const struct memest_shape *a, const struct memest_shape *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->size[d] != b->size[d])
            return false;
    return true;
}

char *memest_shape_str(const struct memest_shape *s, char *buf, size_t n)
{
    size_t used = 0;
    if (n == 0)
        return buf;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < s->ndim && used < n; d++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", d ? ", " : "",
                                 (long long)s->size[d]);
    if (used < n)
        snprintf(buf + used, n - used, "]");
    return buf;
}
