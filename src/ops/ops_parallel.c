/* ops_parallel.c - Megatron-LM's sequence parallelism as one tensor-parallel
 * rank sees it (megatron/core/tensor_parallel/mappings.py and layers.py,
 * Korthikanti et al. 2022), for models that declare it (doc/several-gpus.md:
 * the variable sp):
 *   sequence_gather   the all-gather along the sequence before a
 *                     column-parallel linear: the linear reads the whole
 *                     sequence but saves only the rank's shard (it gathers
 *                     again in its backward, into Megatron's global memory
 *                     buffer), so the output is a view of the shard that
 *                     lends its storage to whatever saves it;
 *   sequence_scatter  the reduce-scatter after a row-parallel linear (and
 *                     the scatter of the embeddings): a new tensor of the
 *                     rank's seq / size positions.
 * With size 1 both are the identity (a view whose gradient passes through).
 * Nothing is saved, no MACs; with size > 1 the backward's gradient of the
 * input is a new tensor of its size (the reduce-scatter or all-gather of the
 * incoming gradient), the default. */
#include "ops_common.h"

enum { SP_DIM, SP_SIZE };
static const struct memest_argspec sp_args[] = {
    [SP_DIM] = {"dim", MEMEST_ARG_INT, .idef = 1, .lo = -MEMEST_MAX_DIMS, .hi = MEMEST_MAX_DIMS - 1,
                .doc = "the sequence dim"},
    [SP_SIZE] = {"size", MEMEST_ARG_INT, .idef = 1, .lo = 1, .hi = 1 << 20,
                 .doc = "the tensor-parallel ranks the sequence is split over (1: identity)"},
};

static int infer_gather(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    int d;
    if (s.ndim == 0)
        return memest_fail(c, "sequence_gather needs a tensor with a sequence dim");
    if (wrap_dim(c, memest_arg_int(c, SP_DIM), s.ndim, &d) != 0)
        return -1;
    int64_t k = memest_arg_int(c, SP_SIZE), size[MEMEST_MAX_DIMS];
    for (int i = 0; i < s.ndim; i++)
        size[i] = s.size[i];
    if (__builtin_mul_overflow(size[d], k, &size[d]) || size[d] > MEMEST_DIM_MAX)
        return memest_fail(c, "the gathered sequence is longer than %lld",
                           (long long)MEMEST_DIM_MAX);
    struct memest_shape g;
    memest_shape_set(&g, s.ndim, size);
    if (memest_out_view(c, 0, &g, 0) < 0)
        return -1;
    if (k == 1)   /* the identity: its gradient passes through */
        memest_grad_same(c, 0, 0);
    return 0;
}

static int infer_scatter(struct memest_ictx *c)
{
    const struct memest_shape s = *memest_in_shape(c, 0);
    int d;
    if (s.ndim == 0)
        return memest_fail(c, "sequence_scatter needs a tensor with a sequence dim");
    if (wrap_dim(c, memest_arg_int(c, SP_DIM), s.ndim, &d) != 0)
        return -1;
    int64_t k = memest_arg_int(c, SP_SIZE), size[MEMEST_MAX_DIMS];
    if (k == 1) {   /* the identity: a view, its gradient passes through */
        if (memest_out_view(c, 0, &s, 0) < 0)
            return -1;
        memest_grad_same(c, 0, 0);
        return 0;
    }
    if (s.size[d] % k != 0)
        return memest_fail(c, "the sequence dim (%lld) is not a multiple of the %lld ranks",
                           (long long)s.size[d], (long long)k);
    for (int i = 0; i < s.ndim; i++)
        size[i] = i == d ? s.size[i] / k : s.size[i];
    return memest_out_new(c, s.ndim, size, memest_in_dtype(c, 0)) < 0 ? -1 : 0;
}

const struct memest_op_desc memest_ops_parallel[] = {
    OP1("sequence_gather", sp_args, infer_gather,
        "Megatron-LM's sequence-parallel all-gather before a column-parallel linear (a view of "
        "the shard: its readers save the shard)"),
    OP1("sequence_scatter", sp_args, infer_scatter,
        "Megatron-LM's sequence-parallel reduce-scatter after a row-parallel linear (seq / size "
        "positions)"),
};
const int memest_ops_parallel_count = NOPS(memest_ops_parallel);
