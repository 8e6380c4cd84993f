/* test_ops_view.c - slice, unbind, tensor_split (views), roll, tile and
 * repeat_interleave (new tensors): sizes, strides, offsets, storage and
 * what is saved, against PyTorch (tests/reference/ops_b_saved_113.txt and
 * _26.txt, the cases on a [2, 8, 6] float32 activation) and hand-worked
 * geometry. x below is a linear layer's [2, 8, 6] output (strides [48, 6,
 * 1]) so that it requires grad as the measured activations do. */
#include "check.h"
#include "ops_test.h"

#define X_MODEL(layers)                                                                         \
    "{'inputs': [{'name': 'a', 'shape': [8, 6]}],"                                              \
    " 'layers': [{'name': 'x', 'type': 'linear', 'out_features': 6}, " layers "]}"

/* x[:, 2:7:2]: sizes [2, 3, 6] (indices 2, 4, 6), strides [48, 12, 1],
 * offset 2 * 6 = 12 elements into x's storage; end -1 and a start past the
 * end clamp as Python's slicing. Nothing saved. */
static void test_slice(void)
{
    struct t_model t;
    LOAD(&t,
         X_MODEL("{'name': 's', 'type': 'slice', 'inputs': ['x'], 'dim': 1, 'start': 2, 'end': 7,"
                 " 'step': 2},"
                 "{'name': 'neg', 'type': 'slice', 'inputs': ['x'], 'dim': -1, 'end': -1},"
                 "{'name': 'past', 'type': 'slice', 'inputs': ['x'], 'dim': 1, 'start': 20}"),
         2);
    CHECK_STR_EQ(t_shape(&t, "s", 0), "[2, 3, 6]");
    CHECK_STR_EQ(t_strides(&t, "s", 0), "[48, 12, 1]");
    CHECK_EQ_INT(t_out(&t, "s", 0)->offset, 12);
    CHECK(t_storage(&t, "s", 0) == t_storage(&t, "x", 0));
    CHECK_EQ_U64(t_nsaved(&t, "s"), 0);
    CHECK_STR_EQ(t_shape(&t, "neg", 0), "[2, 8, 5]");
    CHECK_STR_EQ(t_shape(&t, "past", 0), "[2, 0, 6]");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, X_MODEL("{'type': 'slice', 'dim': 3}"), 2),
                   "dimension out of range (expected to be in range of [-3, 2], but got 3)");
    t_free(&t);
}

/* unbind(x[:, :3], 1): three [2, 6] views at offsets 0, 6, 12 (stride 6 of
 * dim 1). tensor_split(x, 3, 1): 8 = 3 + 3 + 2; tensor_split(x, [1, 5], 2):
 * [0:1], [1:5], [5:6]. A one-element list [3] is an index (two pieces),
 * the int 3 three sections. */
static void test_unbind_tensor_split(void)
{
    struct t_model t;
    LOAD(&t,
         X_MODEL("{'name': 'h', 'type': 'slice', 'inputs': ['x'], 'dim': 1, 'end': 3},"
                 "{'name': 'u', 'type': 'unbind', 'dim': 1},"
                 "{'name': 's3', 'type': 'tensor_split', 'inputs': ['x'],"
                 " 'indices_or_sections': 3, 'dim': 1},"
                 "{'name': 'si', 'type': 'tensor_split', 'inputs': ['x'],"
                 " 'indices_or_sections': [1, 5], 'dim': 2},"
                 "{'name': 'one', 'type': 'tensor_split', 'inputs': ['x'],"
                 " 'indices_or_sections': [3], 'dim': 1}"),
         2);
    CHECK_EQ_U64(t_nout(&t, "u"), 3);
    CHECK_STR_EQ(t_shape(&t, "u", 2), "[2, 6]");
    CHECK_STR_EQ(t_strides(&t, "u", 2), "[48, 1]");
    CHECK_EQ_INT(t_out(&t, "u", 2)->offset, 12);
    CHECK(t_storage(&t, "u", 1) == t_storage(&t, "x", 0));
    CHECK_EQ_U64(t_nout(&t, "s3"), 3);
    CHECK_STR_EQ(t_shape(&t, "s3", 0), "[2, 3, 6]");
    CHECK_STR_EQ(t_shape(&t, "s3", 2), "[2, 2, 6]");
    CHECK_EQ_INT(t_out(&t, "s3", 2)->offset, 36);
    CHECK_STR_EQ(t_shape(&t, "si", 0), "[2, 8, 1]");
    CHECK_STR_EQ(t_shape(&t, "si", 1), "[2, 8, 4]");
    CHECK_STR_EQ(t_shape(&t, "si", 2), "[2, 8, 1]");
    CHECK_EQ_U64(t_nout(&t, "one"), 2);
    CHECK_STR_EQ(t_shape(&t, "one", 1), "[2, 5, 6]");
    CHECK_EQ_U64(t_nsaved(&t, "si"), 0);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, X_MODEL("{'type': 'tensor_split', 'indices_or_sections': 0}"), 2),
                   "number of sections must be larger than 0, got 0");
    t_free(&t);
}

/* roll, tile: new tensors, nothing saved. roll over two dims keeps one
 * intermediate of x's size (2*8*6*4 = 384 bytes of workspace); one dim
 * none. tile (2, 1, 3) of [2, 8, 6]: [4, 8, 18]; tile (3,) pads to (1, 1,
 * 3): [2, 8, 18]; tile (2, 1, 1, 1) adds a dim: [2, 2, 8, 6]. */
static void test_roll_tile(void)
{
    struct t_model t;
    LOAD(&t,
         X_MODEL("{'name': 'r2', 'type': 'roll', 'inputs': ['x'], 'shifts': [1, -2],"
                 " 'dims': [1, 2]},"
                 "{'name': 'r0', 'type': 'roll', 'inputs': ['x'], 'shifts': 3},"
                 "{'name': 't', 'type': 'tile', 'inputs': ['x'], 'dims': [2, 1, 3]},"
                 "{'name': 't1', 'type': 'tile', 'inputs': ['x'], 'dims': [3]},"
                 "{'name': 't4', 'type': 'tile', 'inputs': ['x'], 'dims': [2, 1, 1, 1]}"),
         2);
    CHECK_STR_EQ(t_shape(&t, "r2", 0), "[2, 8, 6]");
    CHECK(t_storage(&t, "r2", 0) != t_storage(&t, "x", 0));
    CHECK_EQ_U64(t_nsaved(&t, "r2"), 0);
    CHECK_EQ_U64(t_info(&t, "r2")->work_bytes, 384);
    CHECK_EQ_U64(t_info(&t, "r0")->work_bytes, 0);
    CHECK_STR_EQ(t_shape(&t, "t", 0), "[4, 8, 18]");
    CHECK_STR_EQ(t_shape(&t, "t1", 0), "[2, 8, 18]");
    CHECK_STR_EQ(t_shape(&t, "t4", 0), "[2, 2, 8, 6]");
    CHECK_EQ_U64(t_nsaved(&t, "t"), 0);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, X_MODEL("{'type': 'roll', 'shifts': [1, 2], 'dims': 1}"), 2),
                   "shifts and dimensions must align. shifts: 2, dims: 1");
    t_free(&t);
}

/* repeat_interleave(x, 3, dim=1): [2, 24, 6]; PyTorch 1.13 saves the int64
 * index of index_select, 24 * 8 = 192 bytes; 2.x nothing. Without dim the
 * flattened 96 elements twice: [192], 1.13 saves 192 * 8 = 1536 bytes. */
static void test_repeat_interleave(void)
{
    static const char *json =
        X_MODEL("{'name': 'r', 'type': 'repeat_interleave', 'inputs': ['x'], 'repeats': 3,"
                " 'dim': 1},"
                "{'name': 'f', 'type': 'repeat_interleave', 'inputs': ['x'], 'repeats': 2}");
    struct t_model t;
    LOAD(&t, json, 2);
    CHECK_STR_EQ(t_shape(&t, "r", 0), "[2, 24, 6]");
    CHECK_STR_EQ(t_shape(&t, "f", 0), "[192]");
    CHECK_EQ_U64(t_nsaved(&t, "r"), 0);
    CHECK_EQ_U64(t_nsaved(&t, "f"), 0);
    t_free(&t);
    LOAD_OPTS(&t, json, .batch = 2, .dtype = MEMEST_F32, .torch = 113);
    CHECK_EQ_U64(t_saved(&t, "r"), 192);
    CHECK_EQ_U64(t_saved(&t, "f"), 1536);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           X_MODEL("{'type': 'repeat_interleave', 'repeats': 2, 'dim': 1,"
                                   " 'output_size': 15}"),
                           2),
                   "output_size 15 does not match the repeated size 16");
    t_free(&t);
}

/* x.detach(): x's storage, sizes and strides, requiring no grad; nothing
 * saved. A linear layer on it still saves its input (the weight needs a
 * gradient) but no gradient reaches x through it. */
static void test_detach(void)
{
    struct t_model t;
    LOAD(&t,
         X_MODEL("{'name': 'd', 'type': 'detach', 'inputs': ['x']},"
                 "{'name': 'l', 'type': 'linear', 'inputs': ['d'], 'out_features': 3}"),
         2);
    CHECK(t_storage(&t, "d", 0) == t_storage(&t, "x", 0));
    CHECK_STR_EQ(t_strides(&t, "d", 0), "[48, 6, 1]");
    CHECK(!t_out(&t, "d", 0)->requires_grad);
    CHECK(t_out(&t, "x", 0)->requires_grad);
    CHECK_EQ_U64(t_nsaved(&t, "d"), 0);
    CHECK_EQ_U64(t_saved(&t, "l"), 2 * 8 * 6 * 4);
    t_free(&t);
}

int main(void)
{
    test_detach();
    test_slice();
    test_unbind_tensor_split();
    test_roll_tile();
    test_repeat_interleave();
    return CHECK_DONE();
}
