/* test_ops_shape.c - views, reshapes, joins: sizes, strides, offsets, when
 * a copy is made, and PyTorch's errors. Nothing here saves anything. */
#include "check.h"
#include "ops_test.h"

/* nn.Flatten on contiguous [2, 4, 7, 7]: [2, 196], a view (no copy). On a
 * permuted input, reshape must copy: new storage. start_dim == end_dim:
 * the input itself. */
static void test_flatten(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [4, 7, 7]}],"
         " 'layers': [{'name': 'f', 'type': 'flatten'},"
         "            {'name': 'p', 'type': 'permute', 'inputs': ['x'], 'dims': [0, 2, 3, 1]},"
         "            {'name': 'fp', 'type': 'flatten'},"
         "            {'name': 'f0', 'type': 'flatten', 'inputs': ['x'], 'start_dim': 2,"
         "             'end_dim': 2},"
         "            {'name': 'fa', 'type': 'flatten', 'inputs': ['x'], 'start_dim': 0}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "f", 0), "[2, 196]");
    CHECK(t_storage(&t, "f", 0) == t_storage(&t, "x", 0));
    CHECK_STR_EQ(t_shape(&t, "fp", 0), "[2, 196]");
    CHECK(t_storage(&t, "fp", 0) != t_storage(&t, "x", 0));
    CHECK_STR_EQ(t_shape(&t, "f0", 0), "[2, 4, 7, 7]");
    CHECK_STR_EQ(t_shape(&t, "fa", 0), "[392]");
    CHECK_EQ_U64(t_nsaved(&t, "fp"), 0);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [4, 7, 7]}],"
                           " 'layers': [{'type': 'flatten', 'start_dim': 2, 'end_dim': 1}]}",
                           2),
                   "start_dim (2) cannot come after end_dim (1)");
    t_free(&t);
}

/* unflatten dim 1 of [2, 196] into [4, -1]: [2, 4, 49], strides [196, 49, 1].
 * reshape ['batch', -1] on [2, 4, 7, 7]: [2, 196]. view on a transposed
 * tensor that cannot be viewed fails like Tensor.view. */
static void test_unflatten_reshape_view(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [196]}],"
         " 'layers': [{'name': 'u', 'type': 'unflatten', 'dim': 1, 'unflattened_size': [4, -1]},"
         "            {'name': 'r', 'type': 'reshape', 'shape': ['batch', -1]},"
         "            {'name': 'v', 'type': 'view', 'shape': [-1]}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "u", 0), "[2, 4, 49]");
    CHECK_STR_EQ(t_strides(&t, "u", 0), "[196, 49, 1]");
    CHECK_STR_EQ(t_shape(&t, "r", 0), "[2, 196]");
    CHECK_STR_EQ(t_shape(&t, "v", 0), "[392]");
    CHECK(t_storage(&t, "v", 0) == t_storage(&t, "x", 0));
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [3, 4]}],"
                           " 'layers': [{'type': 'transpose', 'dim0': 1, 'dim1': 2},"
                           "            {'type': 'view', 'shape': [2, 12]}]}",
                           2),
                   "view size [2, 12] is not compatible");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [7]}],"
                           " 'layers': [{'type': 'reshape', 'shape': [2, -1, -1]}]}",
                           2),
                   "only one dimension can be inferred");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [7]}],"
                           " 'layers': [{'type': 'reshape', 'shape': [4, -1]}]}",
                           2),
                   "shape [4, -1] is invalid for an input of 14 elements");
    t_free(&t);
}

/* permute [0, 2, 3, 1] of contiguous [2, 4, 7, 7] (strides [196, 49, 7, 1]):
 * sizes [2, 7, 7, 4], strides [196, 7, 1, 49]. contiguous() copies it; on a
 * contiguous tensor it is the tensor itself. transpose(-1, -2) swaps the
 * last two. */
static void test_permute_transpose_contiguous(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [4, 7, 7]}],"
         " 'layers': [{'name': 'p', 'type': 'permute', 'dims': [0, 2, 3, 1]},"
         "            {'name': 'c', 'type': 'contiguous'},"
         "            {'name': 'cc', 'type': 'contiguous'},"
         "            {'name': 't', 'type': 'transpose', 'inputs': ['x'], 'dim0': -1,"
         "             'dim1': -2}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "p", 0), "[2, 7, 7, 4]");
    CHECK_STR_EQ(t_strides(&t, "p", 0), "[196, 7, 1, 49]");
    CHECK(t_storage(&t, "c", 0) != t_storage(&t, "x", 0));
    CHECK_STR_EQ(t_strides(&t, "c", 0), "[196, 28, 4, 1]");
    CHECK(t_storage(&t, "cc", 0) == t_storage(&t, "c", 0));
    CHECK_STR_EQ(t_strides(&t, "t", 0), "[196, 49, 1, 7]");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [4, 7]}],"
                           " 'layers': [{'type': 'permute', 'dims': [0, 1, 1]}]}",
                           2),
                   "repeated dim 1 in permute");
    t_free(&t);
}

/* squeeze/unsqueeze/expand on x[2, 1, 3] (strides [3, 3, 1]). */
static void test_squeeze_unsqueeze_expand(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [1, 3]}],"
         " 'layers': [{'name': 'sq', 'type': 'squeeze'},"
         "            {'name': 'sq0', 'type': 'squeeze', 'inputs': ['x'], 'dim': 0},"
         "            {'name': 'us', 'type': 'unsqueeze', 'inputs': ['x'], 'dim': -1},"
         "            {'name': 'ex', 'type': 'expand', 'inputs': ['x'], 'size': [-1, 4, -1]},"
         "            {'name': 'ex2', 'type': 'expand', 'inputs': ['x'],"
         "             'size': [5, 'batch', 4, 3]}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "sq", 0), "[2, 3]");
    CHECK_STR_EQ(t_shape(&t, "sq0", 0), "[2, 1, 3]"); /* dim 0 has size 2: no-op */
    CHECK_STR_EQ(t_shape(&t, "us", 0), "[2, 1, 3, 1]");
    CHECK_STR_EQ(t_strides(&t, "us", 0), "[3, 3, 1, 1]");
    CHECK_STR_EQ(t_shape(&t, "ex", 0), "[2, 4, 3]");
    CHECK_STR_EQ(t_strides(&t, "ex", 0), "[3, 0, 1]");
    CHECK_STR_EQ(t_shape(&t, "ex2", 0), "[5, 2, 4, 3]");
    CHECK_STR_EQ(t_strides(&t, "ex2", 0), "[0, 3, 0, 1]");
    CHECK(t_storage(&t, "ex2", 0) == t_storage(&t, "x", 0));
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [3]}],"
                           " 'layers': [{'type': 'expand', 'size': [2, 4]}]}",
                           2),
                   "the expanded size (4) must match the existing size (3) at non-singleton "
                   "dimension 1");
    t_free(&t);
}

/* select dim 1 index -1 of [2, 5, 16]: [2, 16], offset 4*16 = 64 elements.
 * narrow dim 1 start 1 length 2: [2, 2, 16], offset 16. */
static void test_select_narrow(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [5, 16]}],"
         " 'layers': [{'name': 's', 'type': 'select', 'dim': 1, 'index': -1},"
         "            {'name': 'n', 'type': 'narrow', 'inputs': ['x'], 'dim': 1, 'start': 1,"
         "             'length': 2}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "s", 0), "[2, 16]");
    CHECK_STR_EQ(t_strides(&t, "s", 0), "[80, 1]");
    CHECK_EQ_INT(t_out(&t, "s", 0)->offset, 64);
    CHECK_STR_EQ(t_shape(&t, "n", 0), "[2, 2, 16]");
    CHECK_EQ_INT(t_out(&t, "n", 0)->offset, 16);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [5, 16]}],"
                           " 'layers': [{'type': 'select', 'dim': 1, 'index': 5}]}",
                           2),
                   "index 5 is out of range for dimension 1 of size 5");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [5, 16]}],"
                           " 'layers': [{'type': 'narrow', 'dim': 1, 'start': 3, 'length': 3}]}",
                           2),
                   "start (3) + length (3) exceeds dimension size (5)");
    t_free(&t);
}

/* split 4 of a size-10 dim: pieces 4, 4, 2 (offsets 0, 4, 8 rows of 3);
 * sections [3, 7]; chunk 3 of 10: split size ceil(10/3) = 4 -> 4, 4, 2;
 * chunk 4 of 6: split size 2 -> only 3 pieces. */
static void test_split_chunk(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [10, 3]}, {'name': 'y', 'shape': [6]}],"
         " 'layers': [{'name': 's', 'type': 'split', 'split_size_or_sections': 4, 'dim': 1},"
         "            {'name': 's2', 'type': 'split', 'inputs': ['x'],"
         "             'split_size_or_sections': [3, 7], 'dim': 1},"
         "            {'name': 'c', 'type': 'chunk', 'inputs': ['x'], 'chunks': 3, 'dim': 1},"
         "            {'name': 'c2', 'type': 'chunk', 'inputs': ['y'], 'chunks': 4, 'dim': -1}]}",
         2);
    CHECK_EQ_U64(t_nout(&t, "s"), 3);
    CHECK_STR_EQ(t_shape(&t, "s", 2), "[2, 2, 3]");
    CHECK_EQ_INT(t_out(&t, "s", 2)->offset, 24);
    CHECK_STR_EQ(t_shape(&t, "s2", 1), "[2, 7, 3]");
    CHECK_EQ_U64(t_nout(&t, "c"), 3);
    CHECK_STR_EQ(t_shape(&t, "c", 0), "[2, 4, 3]");
    CHECK_EQ_U64(t_nout(&t, "c2"), 3);
    CHECK_STR_EQ(t_shape(&t, "c2", 2), "[2, 2]");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [10]}],"
                           " 'layers': [{'type': 'split', 'split_size_or_sections': [3, 3],"
                           "  'dim': 1}]}",
                           2),
                   "split sizes sum to 6 but dimension 1 has size 10");
    t_free(&t);
}

/* cat dim 1 of [2, 3, 4] and [2, 5, 4]: [2, 8, 4], new storage. stack of two
 * [2, 3]: dim 0 -> [2, 2, 3], dim -1 -> [2, 3, 2]. */
static void test_cat_stack(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'a', 'shape': [3, 4]}, {'name': 'b', 'shape': [5, 4]},"
         "            {'name': 'c', 'shape': [3]}, {'name': 'd', 'shape': [3]}],"
         " 'layers': [{'name': 'cat', 'type': 'cat', 'inputs': ['a', 'b'], 'dim': 1},"
         "            {'name': 's0', 'type': 'stack', 'inputs': ['c', 'd']},"
         "            {'name': 's1', 'type': 'stack', 'inputs': ['c', 'd'], 'dim': -1}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "cat", 0), "[2, 8, 4]");
    CHECK(t_storage(&t, "cat", 0) != t_storage(&t, "a", 0));
    CHECK_STR_EQ(t_shape(&t, "s0", 0), "[2, 2, 3]");
    CHECK_STR_EQ(t_shape(&t, "s1", 0), "[2, 3, 2]");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'a', 'shape': [3, 4]},"
                           "            {'name': 'b', 'shape': [5, 4]}],"
                           " 'layers': [{'type': 'cat', 'inputs': ['a', 'b'], 'dim': 2}]}",
                           2),
                   "sizes of tensors must match except in dimension 2: expected size 3 but "
                   "got size 5 for input 1");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'a', 'shape': [3, 4]},"
                           "            {'name': 'b', 'shape': [5, 4]}],"
                           " 'layers': [{'type': 'stack', 'inputs': ['a', 'b']}]}",
                           2),
                   "stack expects each tensor to be equal size");
    t_free(&t);
}

int main(void)
{
    test_flatten();
    test_unflatten_reshape_view();
    test_permute_transpose_contiguous();
    test_squeeze_unsqueeze_expand();
    test_select_narrow();
    test_split_chunk();
    test_cat_stack();
    return CHECK_DONE();
}
