/* test_ops_embedding.c - nn.Embedding: shapes, parameters, saved indices,
 * errors. */
#include "check.h"
#include "ops_test.h"

/* Embedding(100, 16) on int64 indices [2, 5]: out [2, 5, 16] fp32;
 * weight 100*16 = 1600; saved: the indices, 2*5*8 = 80 bytes (catalog);
 * no MACs. Frozen: nothing is recorded (integer indices need no grad). */
static void test_embedding(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'ids', 'shape': [5], 'dtype': 'int64'}],"
         " 'layers': [{'name': 'emb', 'type': 'embedding', 'num_embeddings': 100,"
         "             'embedding_dim': 16, 'padding_idx': 0},"
         "            {'name': 'frozen', 'type': 'embedding', 'inputs': ['ids'],"
         "             'num_embeddings': 100, 'embedding_dim': 16, 'trainable': false}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "emb", 0), "[2, 5, 16]");
    CHECK(t_out(&t, "emb", 0)->dtype == MEMEST_F32);
    CHECK_EQ_U64(t_param(&t, "emb", "weight"), 1600);
    CHECK_EQ_U64(t_saved(&t, "emb"), 80);
    CHECK(t_saves_storage(&t, "emb", t_storage(&t, "ids", 0)));
    CHECK(t_fwd(&t, "emb") == 0);
    CHECK_EQ_U64(t_nsaved(&t, "frozen"), 0);
    CHECK(!t_out(&t, "frozen", 0)->requires_grad);
    t_free(&t);
}

/* int32 indices are accepted; with --dtype fp16 the table and output are
 * fp16: [2, 5, 16] * 2 bytes. */
static void test_embedding_dtypes(void)
{
    struct t_model t;
    if (t_load_dt(&t,
                  "{'inputs': [{'name': 'ids', 'shape': [5], 'dtype': 'int32'}],"
                  " 'layers': [{'name': 'emb', 'type': 'embedding', 'num_embeddings': 10,"
                  "             'embedding_dim': 16}]}",
                  2, MEMEST_F16) != 0) {
        fprintf(stderr, "%s\n", t.msg);
        CHECK(!"load");
        t_free(&t);
        return;
    }
    CHECK(t_out(&t, "emb", 0)->dtype == MEMEST_F16);
    CHECK_EQ_U64(t.r.storages[t_storage(&t, "emb", 0)].bytes, 2 * 5 * 16 * 2);
    CHECK_EQ_U64(t_saved(&t, "emb"), 2 * 5 * 4); /* int32 indices */
    t_free(&t);
}

static void test_embedding_errors(void)
{
    struct t_model t;
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [5]}],"
                           " 'layers': [{'type': 'embedding', 'num_embeddings': 10,"
                           "  'embedding_dim': 4}]}",
                           2),
                   "expects int64 or int32 indices, got fp32");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [5], 'dtype': 'int64'}],"
                           " 'layers': [{'type': 'embedding', 'num_embeddings': 10,"
                           "  'embedding_dim': 4, 'padding_idx': 10}]}",
                           2),
                   "padding_idx 10 must be within num_embeddings (10)");
    t_free(&t);
}

int main(void)
{
    test_embedding();
    test_embedding_dtypes();
    test_embedding_errors();
    return CHECK_DONE();
}
