/* test_ops_write.c - clone, fill, copy and copyslices (src/ops/ops_write.c):
 * sizes, strides, storages and what is saved, against PyTorch (the write
 * cases at the end of tests/reference/ops_b_saved_113.txt and _26.txt: all
 * save nothing, under both versions; in-place results share their input's
 * storage, "view" there) and hand-worked geometry. x below is a linear
 * layer's [2, 8, 6] output (strides [48, 6, 1]), an activation that requires
 * grad as the measured ones do. */
#include "check.h"
#include "ops_test.h"

#define X_MODEL(layers)                                                                         \
    "{'inputs': [{'name': 'a', 'shape': [8, 6]}],"                                              \
    " 'layers': [{'name': 'x', 'type': 'linear', 'out_features': 6}, " layers "]}"

/* clone: a new storage of 2 * 8 * 6 elements; of x.transpose(1, 2) (sizes
 * [2, 6, 8], strides [48, 1, 6], dense) it keeps those strides
 * (preserve_format). Nothing saved ("clone", "clone of a transpose"). */
static void test_clone(void)
{
    struct t_model t;
    LOAD(&t,
         X_MODEL("{'name': 'c', 'type': 'clone', 'inputs': ['x']},"
                 "{'name': 't', 'type': 'transpose', 'inputs': ['x'], 'dim0': 1, 'dim1': 2},"
                 "{'name': 'ct', 'type': 'clone', 'inputs': ['t']}"),
         2);
    CHECK_STR_EQ(t_shape(&t, "c", 0), "[2, 8, 6]");
    CHECK(t_storage(&t, "c", 0) != t_storage(&t, "x", 0));
    CHECK_EQ_U64(t_nsaved(&t, "c"), 0);
    CHECK_STR_EQ(t_shape(&t, "ct", 0), "[2, 6, 8]");
    CHECK_STR_EQ(t_strides(&t, "ct", 0), "[48, 1, 6]");
    CHECK(t_storage(&t, "ct", 0) != t_storage(&t, "x", 0));
    CHECK_EQ_U64(t_nsaved(&t, "ct"), 0);
    t_free(&t);
}

/* fill_ / zero_ and copy_ write input 1 in place: the output is x's storage
 * ("zero_", "fill_ 2.5", "copy_ same sizes", "copy_ broadcast [6]": view,
 * saved 0). torch.fill (out of place) makes a new tensor that requires no
 * grad. copy_'s source must broadcast to the destination. */
static void test_fill_copy(void)
{
    struct t_model t;
    LOAD(&t,
         X_MODEL("{'name': 'y', 'type': 'linear', 'inputs': ['a'], 'out_features': 6},"
                 "{'name': 'b', 'type': 'parameter', 'shape': [6]},"
                 "{'name': 'z', 'type': 'fill', 'inputs': ['x'], 'inplace': true},"
                 "{'name': 'f', 'type': 'fill', 'inputs': ['z'], 'value': 2.5},"
                 "{'name': 'cp', 'type': 'copy', 'inputs': ['z', 'y']},"
                 "{'name': 'cb', 'type': 'copy', 'inputs': ['cp', 'b']}"),
         2);
    CHECK(t_storage(&t, "z", 0) == t_storage(&t, "x", 0));
    CHECK_EQ_U64(t_nsaved(&t, "z"), 0);
    CHECK(t_storage(&t, "f", 0) != t_storage(&t, "x", 0));
    CHECK(!t_out(&t, "f", 0)->requires_grad);
    CHECK(t_storage(&t, "cp", 0) == t_storage(&t, "x", 0));
    CHECK(t_storage(&t, "cb", 0) == t_storage(&t, "x", 0));
    CHECK_STR_EQ(t_shape(&t, "cb", 0), "[2, 8, 6]");
    CHECK_EQ_U64(t_nsaved(&t, "cp") + t_nsaved(&t, "cb"), 0);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           X_MODEL("{'name': 'b', 'type': 'parameter', 'shape': [5]},"
                                   "{'type': 'copy', 'inputs': ['x', 'b']}"),
                           2),
                   "the source [5] cannot be broadcast to the destination [2, 8, 6]");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           X_MODEL("{'name': 'b', 'type': 'parameter', 'shape': [2, 2, 8, 6]},"
                                   "{'type': 'copy', 'inputs': ['x', 'b']}"),
                           2),
                   "cannot be broadcast to the destination [2, 8, 6]");
    t_free(&t);
}

/* x[:, 1:] += y: narrow (a view at offset 6), add in place on it, then
 * copyslices(x, the written view): x's storage with x's sizes and strides
 * ("x[:, 1:] += y": view, saved 0). A second input that is not a view of
 * the first is an error. */
static void test_copyslices(void)
{
    struct t_model t;
    LOAD(&t,
         X_MODEL("{'name': 'y', 'type': 'linear', 'inputs': ['a'], 'out_features': 6},"
                 "{'name': 'v', 'type': 'narrow', 'inputs': ['x'], 'dim': 1, 'start': 1,"
                 " 'length': 7},"
                 "{'name': 'ys', 'type': 'narrow', 'inputs': ['y'], 'dim': 1, 'start': 0,"
                 " 'length': 7},"
                 "{'name': 'w', 'type': 'add', 'inputs': ['v', 'ys'], 'inplace': true},"
                 "{'name': 'xw', 'type': 'copyslices', 'inputs': ['x', 'w']}"),
         2);
    CHECK_EQ_INT(t_out(&t, "w", 0)->offset, 6);
    CHECK(t_storage(&t, "xw", 0) == t_storage(&t, "x", 0));
    CHECK_STR_EQ(t_shape(&t, "xw", 0), "[2, 8, 6]");
    CHECK_STR_EQ(t_strides(&t, "xw", 0), "[48, 6, 1]");
    CHECK_EQ_INT(t_out(&t, "xw", 0)->offset, 0);
    CHECK_EQ_U64(t_nsaved(&t, "w") + t_nsaved(&t, "xw"), 0);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           X_MODEL("{'name': 'y', 'type': 'linear', 'inputs': ['a'],"
                                   " 'out_features': 6},"
                                   "{'type': 'copyslices', 'inputs': ['x', 'y']}"),
                           2),
                   "input 2 ([2, 8, 6]) is not a view of input 1's storage ([2, 8, 6])");
    t_free(&t);
}

int main(void)
{
    test_clone();
    test_fill_copy();
    test_copyslices();
    return CHECK_DONE();
}
