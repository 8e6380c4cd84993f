/* test_ops_index.c - gather, index_select, index (advanced indexing by
 * integer tensors) and where: result sizes, what autograd saves, errors.
 * The saved bytes are PyTorch's (tests/reference/ops_b_saved_113.txt and
 * _26.txt, equal under both) for the same sizes, worked out below. x is a
 * linear layer's [2, 8, 6] float32 output (2*8*6*4 = 384 bytes) so that
 * it requires grad; index tensors are int64 aranges (no batch dim, no
 * gradient) reshaped to the sizes the measured cases use. */
#include "check.h"
#include "ops_test.h"

#define X_MODEL(inputs, layers)                                                                 \
    "{'inputs': [{'name': 'a', 'shape': [8, 6]}" inputs "],"                                    \
    " 'layers': [{'name': 'x', 'type': 'linear', 'inputs': ['a'], 'out_features': 6}, " layers \
    "]}"

/* gather(x, 2, idx) with idx [2, 8, 4] int64 (a model input): the result
 * has idx's sizes; GatherBackward0 saves self (384 bytes) and the index
 * (2*8*4*8 = 512): 896. */
static void test_gather(void)
{
    struct t_model t;
    LOAD(&t,
         X_MODEL(", {'name': 'i', 'shape': [8, 4], 'dtype': 'int64'}",
                 "{'name': 'g', 'type': 'gather', 'inputs': ['x', 'i'], 'dim': 2}"),
         2);
    CHECK_STR_EQ(t_shape(&t, "g", 0), "[2, 8, 4]");
    CHECK_EQ_U64(t_saved(&t, "g"), 896);
    CHECK(t_saves_storage(&t, "g", t_storage(&t, "i", 0)));
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           X_MODEL(", {'name': 'i', 'shape': [9, 4], 'dtype': 'int64'}",
                                   "{'type': 'gather', 'inputs': ['x', 'i'], 'dim': 2}"),
                           2),
                   "Size does not match at dimension 1");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           X_MODEL(", {'name': 'i', 'shape': [8, 4], 'dtype': 'int32'}",
                                   "{'type': 'gather', 'inputs': ['x', 'i'], 'dim': 2}"),
                           2),
                   "Expected dtype int64 for index, got int32");
    t_free(&t);
}

/* index_select(x, 1, arange(5)) and x[:, arange(5)]: [2, 5, 6]; both save
 * the index only, 5 * 8 = 40 bytes. x[:, ia, ib] with [3, 4] index tensors
 * (views of two aranges of 12, 96 bytes each): [2, 3, 4], 192 bytes.
 * x[ia] (dim 0): [3, 4] replaces dim 0: [3, 4, 8, 6]. */
static void test_index_select_index(void)
{
    struct t_model t;
    LOAD(&t,
         X_MODEL("", "{'name': 'i5', 'type': 'arange', 'end': 5},"
                     "{'name': 'sel', 'type': 'index_select', 'inputs': ['x', 'i5'], 'dim': 1},"
                     "{'name': 'ix', 'type': 'index', 'inputs': ['x', 'i5'], 'dim': 1},"
                     "{'name': 'ra', 'type': 'arange', 'end': 12},"
                     "{'name': 'ia', 'type': 'reshape', 'shape': [3, 4]},"
                     "{'name': 'rb', 'type': 'arange', 'end': 12},"
                     "{'name': 'ib', 'type': 'reshape', 'shape': [3, 4]},"
                     "{'name': 'two', 'type': 'index', 'inputs': ['x', 'ia', 'ib'], 'dim': 1},"
                     "{'name': 'lead', 'type': 'index', 'inputs': ['x', 'ia']}"),
         2);
    CHECK_STR_EQ(t_shape(&t, "sel", 0), "[2, 5, 6]");
    CHECK_EQ_U64(t_saved(&t, "sel"), 40);
    CHECK_STR_EQ(t_shape(&t, "ix", 0), "[2, 5, 6]");
    CHECK_EQ_U64(t_saved(&t, "ix"), 40);
    CHECK_STR_EQ(t_shape(&t, "two", 0), "[2, 3, 4]");
    CHECK_EQ_U64(t_saved(&t, "two"), 192);
    CHECK_STR_EQ(t_shape(&t, "lead", 0), "[3, 4, 8, 6]");
    CHECK_EQ_U64(t_saved(&t, "lead"), 96);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           X_MODEL("", "{'name': 'm', 'type': 'gt', 'inputs': ['x'], 'other': 0},"
                                       "{'type': 'index', 'inputs': ['x', 'm']}"),
                           2),
                   "index 1 is a mask (bool)");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           X_MODEL("", "{'name': 'i', 'type': 'arange', 'end': 5},"
                                       "{'type': 'index', 'inputs': ['x', 'i', 'i', 'i'],"
                                       " 'dim': 1}"),
                           2),
                   "too many indices for tensor of dimension 3");
    t_free(&t);
}

/* where(x > 0, x, y) and where(x > 0, x, 0.0): WhereBackward0 saves the
 * bool condition, 2*8*6 = 96 bytes; nothing when neither value requires
 * grad (y alone, a model input, with a number). */
static void test_where(void)
{
    struct t_model t;
    LOAD(&t,
         X_MODEL(", {'name': 'y', 'shape': [8, 6]}",
                 "{'name': 'c', 'type': 'gt', 'inputs': ['x'], 'other': 0},"
                 "{'name': 'w', 'type': 'where', 'inputs': ['c', 'x', 'y']},"
                 "{'name': 'w0', 'type': 'where', 'inputs': ['c', 'x'], 'other': 0},"
                 "{'name': 'wy', 'type': 'where', 'inputs': ['c', 'y'], 'input': 1}"),
         2);
    CHECK_STR_EQ(t_shape(&t, "w", 0), "[2, 8, 6]");
    CHECK_EQ_U64(t_saved(&t, "w"), 96);
    CHECK(t_saves_storage(&t, "w", t_storage(&t, "c", 0)));
    CHECK_EQ_U64(t_saved(&t, "w0"), 96);
    CHECK_EQ_U64(t_nsaved(&t, "wy"), 0);
    CHECK(!t_out(&t, "c", 0)->requires_grad);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, X_MODEL("", "{'type': 'where', 'inputs': ['x', 'x', 'x']}"), 2),
                   "where expected condition to be a boolean tensor");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           X_MODEL("", "{'name': 'c', 'type': 'gt', 'inputs': ['x'], 'other': 0},"
                                       "{'type': 'where', 'inputs': ['c', 'x']}"),
                           2),
                   "where takes 3 tensor inputs with no numbers, got 2");
    t_free(&t);
}

/* x.masked_scatter(m, y) with m = (i == 0).unsqueeze(-1).expand_as(x), i
 * [8] int64 (a model input: [2, 8]): MaskedScatterBackward0 saves the mask,
 * the eq's [2, 8] bool storage (16 bytes) under the expanded view; the
 * result is a new [2, 8, 6] tensor. Nothing saved when neither self nor
 * source requires grad; a float mask is refused. */
static void test_masked_scatter(void)
{
    struct t_model t;
    LOAD(&t,
         X_MODEL(", {'name': 'i', 'shape': [8], 'dtype': 'int64'}, {'name': 'y', 'shape': [4, 6]}",
                 "{'name': 'e', 'type': 'eq', 'inputs': ['i'], 'other': 0},"
                 "{'name': 'u', 'type': 'unsqueeze', 'dim': -1},"
                 "{'name': 'm', 'type': 'expand', 'size': [-1, -1, 6]},"
                 "{'name': 'ms', 'type': 'masked_scatter', 'inputs': ['x', 'm', 'y']},"
                 "{'name': 'ms0', 'type': 'masked_scatter', 'inputs': ['a', 'm', 'y']}"),
         2);
    CHECK_STR_EQ(t_shape(&t, "ms", 0), "[2, 8, 6]");
    CHECK_EQ_U64(t_saved(&t, "ms"), 16);
    CHECK(t_saves_storage(&t, "ms", t_storage(&t, "e", 0)));
    CHECK_EQ_U64(t_nsaved(&t, "ms0"), 0);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, X_MODEL("", "{'type': 'masked_scatter', 'inputs': ['x', 'x', 'x']}"), 2),
                   "masked_scatter_ only supports boolean masks");
    t_free(&t);
}

int main(void)
{
    test_masked_scatter();
    test_gather();
    test_index_select_index();
    test_where();
    return CHECK_DONE();
}
