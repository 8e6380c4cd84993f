/* ops_embedding.c - nn.Embedding: a lookup table of num_embeddings rows of
 * embedding_dim values, indexed by an integer tensor.
 *
 * Saved for backward (EmbeddingBackward0): the indices (its input) and the
 * weight (a parameter, not counted); only when the weight requires grad,
 * since integer indices never do. No MACs. With sparse=true the gradient is
 * a sparse tensor, which memest does not model differently. */
#include "ops_common.h"

enum { EM_NUM, EM_DIM, EM_PADDING_IDX, EM_MAX_NORM, EM_NORM_TYPE, EM_SCALE_GRAD, EM_SPARSE };

static const struct memest_argspec embedding_args[] = {
    [EM_NUM] = {"num_embeddings", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX},
    [EM_DIM] = {"embedding_dim", MEMEST_ARG_INT, .required = true, .lo = 1, .hi = ARG_MAX},
    [EM_PADDING_IDX] = {"padding_idx", MEMEST_ARG_INT, .optional = true,
                        .doc = "row excluded from the gradient; "
                               "-num_embeddings <= padding_idx < num_embeddings"},
    [EM_MAX_NORM] = {"max_norm", MEMEST_ARG_FLOAT, .optional = true},
    [EM_NORM_TYPE] = {"norm_type", MEMEST_ARG_FLOAT, .fdef = 2.0},
    [EM_SCALE_GRAD] = {"scale_grad_by_freq", MEMEST_ARG_BOOL, .idef = 0},
    [EM_SPARSE] = {"sparse", MEMEST_ARG_BOOL, .idef = 0},
};

static int infer_embedding(struct memest_ictx *c)
{
    enum memest_dtype it = memest_in_dtype(c, 0);
    if (it != MEMEST_I64 && it != MEMEST_I32)
        return memest_fail(c, "expects int64 or int32 indices, got %s", memest_dtype_name(it));
    int64_t num = memest_arg_int(c, EM_NUM), dim = memest_arg_int(c, EM_DIM);
    const struct memest_argval *pi = memest_arg(c, EM_PADDING_IDX);
    if (!pi->none && (pi->v[0] < -num || pi->v[0] >= num))
        return memest_fail(c, "padding_idx %lld must be within num_embeddings (%lld)",
                           (long long)pi->v[0], (long long)num);
    const struct memest_shape s_in = *memest_in_shape(c, 0), *s = &s_in;
    if (s->ndim + 1 > MEMEST_MAX_DIMS)
        return memest_fail(c, "the result would have more than %d dimensions", MEMEST_MAX_DIMS);
    int64_t w[2] = {num, dim};
    if (memest_param(c, "weight", 2, w) != 0)
        return -1;
    int64_t size[MEMEST_MAX_DIMS];
    for (int d = 0; d < s->ndim; d++)
        size[d] = s->size[d];
    size[s->ndim] = dim;
    if (memest_out_new(c, s->ndim + 1, size, memest_param_dtype(c)) < 0)
        return -1;
    if (memest_param_trainable(c, "weight") && memest_save_in(c, 0) != 0)
        return -1;
    memest_grad_none(c, 0);
    /* embedding_dense_backward_cuda: up to 3072 indices, one kernel into the
     * zeroed weight gradient; more, it sorts the indices (sorted and original
     * positions, segment and partial-segment offsets: about six int64 per
     * index) and sums each row's partial segments into a [segments, dim]
     * float32 buffer first (one segment per distinct index, at most
     * min(indices, num_embeddings)) */
    uint64_t nidx = 1;
    for (int d = 0; d < s->ndim; d++)
        nidx = memest_sat_mul(nidx, (uint64_t)s->size[d]);
    if (memest_param_trainable(c, "weight") && nidx > 3072) {
        uint64_t seg = nidx < (uint64_t)num ? nidx : (uint64_t)num;
        memest_bwd_workspace(c, memest_sat_add(memest_sat_mul(nidx, 6 * 8),
                                               memest_sat_mul(memest_sat_mul(seg, (uint64_t)dim), 4)));
    }
    return 0;
}

const struct memest_op_desc memest_ops_embedding[] = {
    {
        .name = "embedding",
        .min_in = 1,
        .max_in = 1,
        .args = embedding_args,
        .nargs = NARGS(embedding_args),
        .infer = infer_embedding,
        .doc = "nn.Embedding: integer indices (*) to vectors (*, embedding_dim)",
        .lookup_table = true,
    },
};
const int memest_ops_embedding_count = NOPS(memest_ops_embedding);
