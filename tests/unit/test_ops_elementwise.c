/* test_ops_elementwise.c - add/sub/mul/div, matmul, bmm, mean/sum,
 * masked_fill, arange, zeros: shapes, dtypes, what is saved, MACs. */
#include "check.h"
#include "ops_test.h"

/* Two activations a, b [2, 8, 4, 4] that require grad (1024 bytes each),
 * and c that does not. */
#define AB "{'inputs': [{'name': 'a', 'shape': [8, 4, 4], 'requires_grad': true}," \
           "            {'name': 'b', 'shape': [8, 4, 4], 'requires_grad': true}," \
           "            {'name': 'c', 'shape': [8, 4, 4]}], 'layers': ["

/* add/sub save nothing; a * b saves both (2048); a * c saves c only (for
 * grad(a)); a / c saves the divisor c; c / a saves both (grad(a) needs the
 * dividend). Scalars: nothing (a CPU tensor on CUDA). */
static void test_arith_saves(void)
{
    struct t_model t;
    LOAD(&t,
         AB "{'name': 'add', 'type': 'add', 'inputs': ['a', 'b']},"
            "{'name': 'sub', 'type': 'sub', 'inputs': ['a', 'b']},"
            "{'name': 'mul', 'type': 'mul', 'inputs': ['a', 'b']},"
            "{'name': 'mulc', 'type': 'mul', 'inputs': ['a', 'c']},"
            "{'name': 'divc', 'type': 'div', 'inputs': ['a', 'c']},"
            "{'name': 'cdiv', 'type': 'div', 'inputs': ['c', 'a']},"
            "{'name': 'smul', 'type': 'mul', 'inputs': ['a'], 'other': 0.5},"
            "{'name': 'sdiv', 'type': 'div', 'inputs': ['a'], 'other': 8}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "add", 0), "[2, 8, 4, 4]");
    CHECK_EQ_U64(t_nsaved(&t, "add"), 0);
    CHECK_EQ_U64(t_nsaved(&t, "sub"), 0);
    CHECK_EQ_U64(t_saved(&t, "mul"), 2048);
    CHECK_EQ_U64(t_saved(&t, "mulc"), 1024);
    CHECK(t_saves_storage(&t, "mulc", t_storage(&t, "c", 0)));
    CHECK_EQ_U64(t_saved(&t, "divc"), 1024);
    CHECK(t_saves_storage(&t, "divc", t_storage(&t, "c", 0)));
    CHECK_EQ_U64(t_saved(&t, "cdiv"), 2048);
    CHECK_EQ_U64(t_nsaved(&t, "smul"), 0);
    CHECK_EQ_U64(t_nsaved(&t, "sdiv"), 0);
    CHECK(t_fwd(&t, "mul") == 0);
    t_free(&t);
}

/* Broadcasting [2, 8, 4, 4] + [2, 8, 1, 1] -> [2, 8, 4, 4]; [2, 3] + [2, 4]
 * is an error. In place: the output is the first input; a.mul_(b) with b
 * requiring grad saves a clone of a (new 1024 bytes) and b. */
static void test_broadcast_inplace(void)
{
    struct t_model t;
    LOAD(&t,
         AB "{'name': 'p', 'type': 'mean', 'inputs': ['b'], 'dim': [2, 3], 'keepdim': true},"
            "{'name': 'bc', 'type': 'add', 'inputs': ['a', 'p']},"
            "{'name': 'r', 'type': 'relu', 'inputs': ['a']},"
            "{'name': 'ip', 'type': 'mul', 'inputs': ['r', 'b'], 'inplace': true}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "p", 0), "[2, 8, 1, 1]");
    CHECK_STR_EQ(t_shape(&t, "bc", 0), "[2, 8, 4, 4]");
    CHECK(t_storage(&t, "ip", 0) == t_storage(&t, "r", 0));
    CHECK_EQ_U64(t_saved(&t, "ip"), 2048);
    CHECK(!t_saves_storage(&t, "ip", t_storage(&t, "r", 0)));
    CHECK(t_saves_storage(&t, "ip", t_storage(&t, "b", 0)));
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'a', 'shape': [3]}, {'name': 'b', 'shape': [4]}],"
                           " 'layers': [{'type': 'add', 'inputs': ['a', 'b']}]}",
                           2),
                   "shapes [2, 3] and [2, 4] are not broadcastable");
    t_free(&t);
}

/* Dtypes: int64 + 0.5 is float; int64 / int64 is float (true division);
 * int64 * 2 stays int64. */
static void test_arith_dtypes(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'i', 'shape': [3], 'dtype': 'int64'}],"
         " 'layers': [{'name': 'f', 'type': 'add', 'other': 0.5},"
         "            {'name': 'd', 'type': 'div', 'inputs': ['i', 'i']},"
         "            {'name': 'm', 'type': 'mul', 'inputs': ['i'], 'other': 2}]}",
         2);
    CHECK(t_out(&t, "f", 0)->dtype == MEMEST_F32);
    CHECK(t_out(&t, "d", 0)->dtype == MEMEST_F32);
    CHECK(t_out(&t, "m", 0)->dtype == MEMEST_I64);
    t_free(&t);
}

/* matmul 2-D @ 2-D: x[4, 16] (no grad) @ W[16, 8] (a parameter): mm saves x
 * for grad(W) (4*16*4 = 256 bytes) and not W (x needs no grad);
 * MACs 4*16*8 = 512; backward: grad(W) only, 512. */
static void test_matmul_2d(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [16]}],"
         " 'layers': [{'name': 'w', 'type': 'parameter', 'inputs': [], 'shape': [16, 8]},"
         "            {'name': 'mm', 'type': 'matmul', 'inputs': ['x', 'w']}]}",
         4);
    CHECK_STR_EQ(t_shape(&t, "mm", 0), "[4, 8]");
    CHECK_EQ_U64(t_saved(&t, "mm"), 256);
    CHECK(t_fwd(&t, "mm") == 512.0);
    CHECK(t_bwd(&t, "mm") == 512.0);
    t_free(&t);
}

/* matmul 3-D @ 2-D folds the left operand: [2, 5, 16] @ [16, 8] ->
 * [2, 5, 8]; contiguous: saved as a view of the input (640 bytes);
 * MACs 10*16*8 = 1280. */
static void test_matmul_fold(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [5, 16]}],"
         " 'layers': [{'name': 'w', 'type': 'parameter', 'inputs': [], 'shape': [16, 8]},"
         "            {'name': 'mm', 'type': 'matmul', 'inputs': ['x', 'w']}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "mm", 0), "[2, 5, 8]");
    CHECK(t_saves_storage(&t, "mm", t_storage(&t, "x", 0)));
    CHECK_EQ_U64(t_saved(&t, "mm"), 640);
    CHECK(t_fwd(&t, "mm") == 1280.0);
    t_free(&t);
}

/* Batched matmul, BERT scores: q, k [B=2, s=5, 12] contiguous (h=3, d=4);
 * q.view(2,5,3,4).permute(0,2,1,3) @ k.view(...).permute(0,2,3,1): both
 * operands must be reshaped to [6, 5, 4] / [6, 4, 5], which copies: 480 +
 * 480 bytes of new storage (the catalog); MACs 6*5*4*5 = 600. */
static void test_matmul_batched_copies(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'q', 'shape': [5, 12], 'requires_grad': true},"
         "            {'name': 'k', 'shape': [5, 12], 'requires_grad': true}],"
         " 'layers': [{'name': 'qv', 'type': 'view', 'inputs': ['q'], 'shape': ['batch', 5, 3, 4]},"
         "            {'name': 'qp', 'type': 'permute', 'dims': [0, 2, 1, 3]},"
         "            {'name': 'kv', 'type': 'view', 'inputs': ['k'], 'shape': ['batch', 5, 3, 4]},"
         "            {'name': 'kp', 'type': 'permute', 'dims': [0, 2, 3, 1]},"
         "            {'name': 's', 'type': 'matmul', 'inputs': ['qp', 'kp']}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "s", 0), "[2, 3, 5, 5]");
    CHECK_EQ_U64(t_saved(&t, "s"), 960);
    CHECK(!t_saves_storage(&t, "s", t_storage(&t, "q", 0)));
    CHECK(t_fwd(&t, "s") == 600.0);
    CHECK(t_bwd(&t, "s") == 1200.0);
    t_free(&t);
    /* B = 1: the permuted [1, 3, 5, 4] can be viewed as [3, 5, 4]: the
     * inputs' storages are saved, 240 + 240 bytes (catalog, B=1 case). */
    LOAD(&t,
         "{'inputs': [{'name': 'q', 'shape': [5, 12], 'requires_grad': true},"
         "            {'name': 'k', 'shape': [5, 12], 'requires_grad': true}],"
         " 'layers': [{'name': 'qv', 'type': 'view', 'inputs': ['q'], 'shape': ['batch', 5, 3, 4]},"
         "            {'name': 'qp', 'type': 'permute', 'dims': [0, 2, 1, 3]},"
         "            {'name': 'kv', 'type': 'view', 'inputs': ['k'], 'shape': ['batch', 5, 3, 4]},"
         "            {'name': 'kp', 'type': 'permute', 'dims': [0, 2, 3, 1]},"
         "            {'name': 's', 'type': 'matmul', 'inputs': ['qp', 'kp']}]}",
         1);
    CHECK_EQ_U64(t_saved(&t, "s"), 480);
    CHECK(t_saves_storage(&t, "s", t_storage(&t, "q", 0)));
    CHECK(t_saves_storage(&t, "s", t_storage(&t, "k", 0)));
    t_free(&t);
}

/* Broadcast batch: a[1, 3, 5, 4] (a parameter) @ b[2, 3, 4, 5]: a is
 * expanded to [2, 3, 5, 4] and reshaped to [6, 5, 4], a copy (480 bytes),
 * saved for grad(b); b is viewed as [6, 4, 5] (its storage). */
static void test_matmul_broadcast(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'b', 'shape': [3, 4, 5], 'requires_grad': true}],"
         " 'layers': [{'name': 'a', 'type': 'parameter', 'inputs': [], 'shape': [1, 3, 5, 4]},"
         "            {'name': 'mm', 'type': 'matmul', 'inputs': ['a', 'b']}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "mm", 0), "[2, 3, 5, 5]");
    CHECK_EQ_U64(t_saved(&t, "mm"), 480 + 480);
    CHECK(t_saves_storage(&t, "mm", t_storage(&t, "b", 0)));
    t_free(&t);
}

/* bmm [6, 5, 4] @ [6, 4, 5] (input batch 6): [6, 5, 5], MACs 6*5*4*5 = 600;
 * errors on mismatched batch or inner sizes. */
static void test_bmm(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'a', 'shape': [5, 4], 'requires_grad': true},"
         "            {'name': 'b', 'shape': [4, 5], 'requires_grad': true}],"
         " 'layers': [{'name': 'bmm', 'type': 'bmm', 'inputs': ['a', 'b']}]}",
         6);
    CHECK_STR_EQ(t_shape(&t, "bmm", 0), "[6, 5, 5]");
    CHECK(t_fwd(&t, "bmm") == 600.0);
    CHECK_EQ_U64(t_saved(&t, "bmm"), 480 + 480);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'a', 'shape': [5, 4]},"
                           "            {'name': 'b', 'shape': [5, 4]}],"
                           " 'layers': [{'type': 'bmm', 'inputs': ['a', 'b']}]}",
                           6),
                   "shapes [6, 5, 4] and [6, 5, 4] cannot be multiplied");
    t_free(&t);
}

/* mean over dims (2, 3) of [2, 8, 4, 4]: [2, 8]; 2.x's MeanBackward1
 * keeps only sizes (derivatives.yaml: mean_backward(grad, self.sym_sizes(),
 * dim, self.sym_numel(), keepdim)), 1.13's saves the input (1024 bytes);
 * keepdim: [2, 8, 1, 1]; a full mean(): [] and nothing saved; sum saves
 * nothing and keeps integer inputs int64. */
#define REDUCTIONS                                                                           \
    AB "{'name': 'm', 'type': 'mean', 'inputs': ['a'], 'dim': [2, 3]},"                     \
       "{'name': 'mk', 'type': 'mean', 'inputs': ['a'], 'dim': -1, 'keepdim': true},"        \
       "{'name': 'ma', 'type': 'mean', 'inputs': ['a']},"                                    \
       "{'name': 's', 'type': 'sum', 'inputs': ['a'], 'dim': 1}]}"
static void test_reductions(void)
{
    struct t_model t;
    struct memest_run_opts o113 = {.batch = 2, .dtype = MEMEST_F32, .torch = 113};
    CHECK(t_load_opts(&t, REDUCTIONS, &o113) == 0);
    CHECK_EQ_U64(t_saved(&t, "m"), 1024);
    t_free(&t);
    LOAD(&t, REDUCTIONS, 2);
    CHECK_STR_EQ(t_shape(&t, "m", 0), "[2, 8]");
    CHECK_EQ_U64(t_nsaved(&t, "m"), 0);
    CHECK_STR_EQ(t_shape(&t, "mk", 0), "[2, 8, 4, 1]");
    CHECK_STR_EQ(t_shape(&t, "ma", 0), "[]");
    CHECK_EQ_U64(t_nsaved(&t, "ma"), 0);
    CHECK_STR_EQ(t_shape(&t, "s", 0), "[2, 4, 4]");
    CHECK_EQ_U64(t_nsaved(&t, "s"), 0);
    t_free(&t);
    LOAD_OPTS(&t, AB "{'name': 'm', 'type': 'mean', 'inputs': ['a'], 'dim': [2, 3]}]}",
              .batch = 2, .dtype = MEMEST_F32, .torch = 113);
    CHECK_EQ_U64(t_saved(&t, "m"), 1024);
    CHECK(t_saves_storage(&t, "m", t_storage(&t, "a", 0)));
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, AB "{'type': 'sum', 'dim': [1, -3]}]}", 2),
                   "dim 1 appears multiple times in the list of dims");
    t_free(&t);
}

/* masked_fill with a causal mask on scores [2, 3, 5, 5]: the bool mask is a
 * [1, 1, 5, 5] buffer (25 elements; with max_positions 8: 64), nothing is
 * saved; the output is new, like the input. */
static void test_masked_fill(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'w', 'shape': [3, 5, 5], 'requires_grad': true}],"
         " 'layers': [{'name': 'm', 'type': 'masked_fill', 'mask': 'causal'},"
         "            {'name': 'm8', 'type': 'masked_fill', 'inputs': ['w'], 'mask': 'causal',"
         "             'max_positions': 8}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "m", 0), "[2, 3, 5, 5]");
    CHECK_EQ_U64(t_buffer(&t, "m", "mask"), 25);
    CHECK_EQ_U64(t_buffer(&t, "m8", "mask"), 64);
    CHECK_EQ_U64(t_saved(&t, "m"), 0);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'w', 'shape': [3, 5, 5]}],"
                           " 'layers': [{'type': 'masked_fill', 'mask': 'causal',"
                           "  'max_positions': 4}]}",
                           2),
                   "the key length 5 exceeds max_positions 4");
    t_free(&t);
}

/* arange(10): [10] int64; arange(0, 1, 0.25): 4 floats; zeros(['batch', 3]):
 * [B, 3] float; none requires grad. */
static void test_factories(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [3]}],"
         " 'layers': [{'name': 'ar', 'type': 'arange', 'inputs': [], 'end': 10},"
         "            {'name': 'af', 'type': 'arange', 'inputs': [], 'end': 1, 'step': 0.25},"
         "            {'name': 'z', 'type': 'zeros', 'inputs': [], 'size': ['batch', 3]}]}",
         5);
    CHECK_STR_EQ(t_shape(&t, "ar", 0), "[10]");
    CHECK(t_out(&t, "ar", 0)->dtype == MEMEST_I64);
    CHECK_STR_EQ(t_shape(&t, "af", 0), "[4]");
    CHECK(t_out(&t, "af", 0)->dtype == MEMEST_F32);
    CHECK_STR_EQ(t_shape(&t, "z", 0), "[5, 3]");
    CHECK(!t_out(&t, "z", 0)->requires_grad);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [3]}],"
                           " 'layers': [{'type': 'arange', 'inputs': [], 'start': 5, 'end': 1}]}",
                           2),
                   "inconsistent with step sign");
    t_free(&t);
}

int main(void)
{
    test_arith_saves();
    test_broadcast_inplace();
    test_arith_dtypes();
    test_matmul_2d();
    test_matmul_fold();
    test_matmul_batched_copies();
    test_matmul_broadcast();
    test_bmm();
    test_reductions();
    test_masked_fill();
    test_factories();
    return CHECK_DONE();
}
