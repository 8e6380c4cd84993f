/* test_ops_einsum.c - torch.einsum: output shapes, the operands BmmBackward0
 * saves (views of the inputs, or the copies reshape makes), MACs, and the
 * parser's errors. The saved bytes are PyTorch's (tests/reference/
 * ops_b_saved_113.txt and _26.txt, the same under both), each worked out
 * below from the lowering (ops_einsum.c's header). float32 throughout. */
#include "check.h"
#include "ops_test.h"

/* MaxViT's attention, "B G H I D, B G H J D -> B G H I J" on q [2, 3, 4, 5,
 * 8] and k [2, 3, 4, 6, 8]: lro = B G H (24), lo = I (5), sum = D (8),
 * ro = J (6). left [24, 5, 8] views q; right = k permuted (B G H D J) and
 * reshaped to [24, 8, 6], a view too (the last two dims transposed). Both
 * saved: 2*3*4*5*8*4 = 3840 + 2*3*4*6*8*4 = 4608 = 8448 bytes. MACs 24 * 5 *
 * 8 * 6 = 5760, twice that backward. The output is the bmm's [24, 5, 6]
 * viewed as [2, 3, 4, 5, 6]. Then attention @ v, "BGHIJ,BGHJD->BGHID" with
 * p = that output: left [24, 5, 6] views p, right [24, 6, 8] views v: 2880
 * + 2*3*4*6*8*4 = 4608 = 7488 bytes. (q, k, v come from linear layers, as
 * in PyTorch's case, so that they require grad.) */
static void test_maxvit(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'q', 'shape': [3, 4, 5, 8]}, {'name': 'k', 'shape': [3, 4, 6, 8]},"
         "            {'name': 'v', 'shape': [3, 4, 6, 8]}],"
         " 'layers': [{'name': 'lq', 'type': 'linear', 'inputs': ['q'], 'out_features': 8},"
         "            {'name': 'lk', 'type': 'linear', 'inputs': ['k'], 'out_features': 8},"
         "            {'name': 'lv', 'type': 'linear', 'inputs': ['v'], 'out_features': 8},"
         "            {'name': 'qk', 'type': 'einsum', 'inputs': ['lq', 'lk'],"
         "             'equation': 'B G H I D, B G H J D -> B G H I J'},"
         "            {'name': 'pv', 'type': 'einsum', 'inputs': ['qk', 'lv'],"
         "             'equation': 'B G H I J, B G H J D -> B G H I D'}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "qk", 0), "[2, 3, 4, 5, 6]");
    CHECK_STR_EQ(t_strides(&t, "qk", 0), "[360, 120, 30, 6, 1]");
    CHECK_EQ_U64(t_saved(&t, "qk"), 8448);
    CHECK(t_saves_storage(&t, "qk", t_storage(&t, "lq", 0)));
    CHECK(t_saves_storage(&t, "qk", t_storage(&t, "lk", 0)));
    CHECK(t_fwd(&t, "qk") == 5760);
    CHECK(t_bwd(&t, "qk") == 2 * 5760);
    CHECK_STR_EQ(t_shape(&t, "pv", 0), "[2, 3, 4, 5, 8]");
    CHECK_EQ_U64(t_saved(&t, "pv"), 7488);
    CHECK(t_fwd(&t, "pv") == 24 * 5 * 6 * 8);
    t_free(&t);
}

/* MViT's relative positions, "bythwc,hkc->bythwk" on r [2, 2, 3, 4, 5, 8]
 * and a [4, 7, 8] parameter: lro = h (4), lo = b y t w (60), sum = c (8), ro
 * = k (7). left = r.permute(h, b, y, t, w, c): b..t merge but w (stride 8)
 * does not follow t (stride 160 != 5 * 8): reshape copies [4, 60, 8] =
 * 7680 bytes, saved (the parameter requires grad). The parameter is
 * saved too, not an activation. For "bythwc,wkc->bythwk": lro = w, lo = b
 * y t h (48; r's strides 960, 480, 160, 40 merge), so r itself is saved:
 * 2*2*3*4*5*8*4 = 7680 bytes of the input's storage, no copy.
 * Output [2, 2, 3, 4, 5, 7] in the bmm's layout permuted back: h first,
 * strides h 420, b 210, y 105, t 35, w 7, k 1. */
static void test_mvit(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [2, 3, 4, 5, 8]}],"
         " 'layers': [{'name': 'r', 'type': 'linear', 'out_features': 8},"
         "            {'name': 'rh', 'type': 'parameter', 'shape': [4, 7, 8]},"
         "            {'name': 'rw', 'type': 'parameter', 'shape': [5, 7, 8]},"
         "            {'name': 'eh', 'type': 'einsum', 'inputs': ['r', 'rh'],"
         "             'equation': 'bythwc,hkc->bythwk'},"
         "            {'name': 'ew', 'type': 'einsum', 'inputs': ['r', 'rw'],"
         "             'equation': 'bythwc,wkc->bythwk'}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "eh", 0), "[2, 2, 3, 4, 5, 7]");
    CHECK_STR_EQ(t_strides(&t, "eh", 0), "[210, 105, 35, 420, 7, 1]");
    CHECK_EQ_U64(t_saved(&t, "eh"), 7680);
    CHECK(!t_saves_storage(&t, "eh", t_storage(&t, "r", 0)));
    CHECK(t_fwd(&t, "eh") == 4 * 60 * 8 * 7);
    CHECK_EQ_U64(t_saved(&t, "ew"), 7680);
    CHECK(t_saves_storage(&t, "ew", t_storage(&t, "r", 0)));
    t_free(&t);
}

/* "bhid,bhjd->bhij" with one operand not requiring grad (a model input):
 * only the operand the other side's gradient needs is kept. The left one
 * comes from a linear layer (requires grad), the right one is the input b:
 * b's [8, 8, 6] view (2*4*6*8*4 = 1536 bytes) is saved alone, as in
 * PyTorch's "b frozen" case. With both operands model inputs nothing
 * records and nothing is saved. */
static void test_frozen_side(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'a', 'shape': [4, 5, 8]}, {'name': 'b', 'shape': [4, 6, 8]}],"
         " 'layers': [{'name': 'l', 'type': 'linear', 'inputs': ['a'], 'out_features': 8},"
         "            {'name': 'e', 'type': 'einsum', 'inputs': ['l', 'b'],"
         "             'equation': 'bhid,bhjd->bhij'},"
         "            {'name': 'n', 'type': 'einsum', 'inputs': ['a', 'b'],"
         "             'equation': 'bhid,bhjd->bhij'}]}",
         2);
    CHECK_EQ_U64(t_saved(&t, "e"), 1536);
    CHECK(t_saves_storage(&t, "e", t_storage(&t, "b", 0)));
    CHECK_EQ_U64(t_nsaved(&t, "n"), 0);
    CHECK(t_bwd(&t, "e") == 8 * 5 * 8 * 6);
    t_free(&t);
}

/* Implicit output "bhid,bhjd" = "ij" (labels seen once, alphabetical):
 * b h d summed, [1, 5, 64] and [1, 64, 6], both copies (b h d do not
 * merge: h's stride 40 != 8 * 1): 1280 + 1536 bytes, new storages. The
 * ellipsis form "...id,...jd->...ij" is the explicit case. Three operands,
 * "bij,jk,bkl->bil" left to right: (bij, jk) has lro none, lo = b i (10),
 * sum j, ro k: [1, 10, 8] views a (320), [1, 8, 6] the parameter; the
 * result [2, 5, 6] (240 bytes, new) then meets c [2, 6, 3] (144): 320 +
 * 240 + 144 = 704 bytes besides the parameter. */
static void test_implicit_ellipsis_three(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'a', 'shape': [4, 5, 8]}, {'name': 'b', 'shape': [4, 6, 8]},"
         "            {'name': 'c', 'shape': [5, 8]}, {'name': 'd', 'shape': [6, 3]}],"
         " 'layers': [{'name': 'la', 'type': 'linear', 'inputs': ['a'], 'out_features': 8},"
         "            {'name': 'lb', 'type': 'linear', 'inputs': ['b'], 'out_features': 8},"
         "            {'name': 'im', 'type': 'einsum', 'inputs': ['la', 'lb'],"
         "             'equation': 'bhid,bhjd'},"
         "            {'name': 'el', 'type': 'einsum', 'inputs': ['la', 'lb'],"
         "             'equation': '...id,...jd->...ij'},"
         "            {'name': 'w', 'type': 'parameter', 'shape': [8, 6]},"
         "            {'name': 'lc', 'type': 'linear', 'inputs': ['c'], 'out_features': 8},"
         "            {'name': 'ld', 'type': 'linear', 'inputs': ['d'], 'out_features': 3},"
         "            {'name': 'three', 'type': 'einsum', 'inputs': ['lc', 'w', 'ld'],"
         "             'equation': 'bij,jk,bkl->bil'}]}",
         2);
    CHECK_STR_EQ(t_shape(&t, "im", 0), "[5, 6]");
    CHECK_EQ_U64(t_saved(&t, "im"), 1280 + 1536);
    CHECK(!t_saves_storage(&t, "im", t_storage(&t, "la", 0)));
    CHECK(t_fwd(&t, "im") == 5 * 64 * 6);
    CHECK_STR_EQ(t_shape(&t, "el", 0), "[2, 4, 5, 6]");
    CHECK_EQ_U64(t_saved(&t, "el"), 1280 + 1536);
    CHECK(t_saves_storage(&t, "el", t_storage(&t, "la", 0)));
    CHECK_STR_EQ(t_shape(&t, "three", 0), "[2, 5, 3]");
    CHECK_EQ_U64(t_saved(&t, "three"), 320 + 240 + 144);
    CHECK(t_fwd(&t, "three") == 10 * 8 * 6 + 2 * 5 * 6 * 3);
    t_free(&t);
}

/* One operand: "ij->ji" is the transposed view, "ii->i" the diagonal view
 * (stride 6 on a [5, 5] contiguous: 5 + 1), "ij->j" a sum (new, nothing
 * saved, no MACs). No contraction, "ij,k->ijk" on u = lx[0] and v = u[1]:
 * at::mul of the broadcast views, each saved (views of lx's one storage,
 * 2*5*5*4 = 200 bytes), no MACs. */
static void test_single_and_outer(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'x', 'shape': [5, 5]}],"
         " 'layers': [{'name': 'lx', 'type': 'linear', 'out_features': 5},"
         "            {'name': 'tr', 'type': 'einsum', 'inputs': ['lx'], 'equation': 'bij->bji'},"
         "            {'name': 'dg', 'type': 'einsum', 'inputs': ['lx'], 'equation': 'bii->bi'},"
         "            {'name': 'sm', 'type': 'einsum', 'inputs': ['lx'], 'equation': 'bij->bj'},"
         "            {'name': 'u', 'type': 'select', 'inputs': ['lx'], 'dim': 0, 'index': 0},"
         "            {'name': 'v', 'type': 'select', 'inputs': ['u'], 'dim': 0, 'index': 1},"
         "            {'name': 'o', 'type': 'einsum', 'inputs': ['u', 'v'],"
         "             'equation': 'ij,k->ijk'}]}",
         2);
    CHECK_STR_EQ(t_strides(&t, "tr", 0), "[25, 1, 5]");
    CHECK(t_storage(&t, "tr", 0) == t_storage(&t, "lx", 0));
    CHECK_STR_EQ(t_shape(&t, "dg", 0), "[2, 5]");
    CHECK_STR_EQ(t_strides(&t, "dg", 0), "[25, 6]");
    CHECK_STR_EQ(t_shape(&t, "sm", 0), "[2, 5]");
    CHECK(t_storage(&t, "sm", 0) != t_storage(&t, "lx", 0));
    CHECK_EQ_U64(t_nsaved(&t, "sm"), 0);
    CHECK_STR_EQ(t_shape(&t, "o", 0), "[5, 5, 5]");
    CHECK(t_fwd(&t, "o") == 0);
    CHECK_EQ_U64(t_saved(&t, "o"), 200);
    t_free(&t);
}

/* More of the measured cases. "nchw,nc->nhw" on a [2, 8, 4, 5] and a [2,
 * 8]: lro n, lo h w (20), sum c (8), ro none: left = a.permute(n, h, w, c)
 * -> [2, 20, 8], h and w merge (strides 5, 1): a view of a, 1280 bytes;
 * right [2, 8, 1] views b, 64: 1344; MACs 2 * 20 * 8. "bi,bi->b" on two
 * [4, 5]: [4, 1, 5] and [4, 5, 1] views, 80 + 80 = 160 bytes, MACs 20.
 * "bij,bjk->bki": the [2, 5, 6] bmm result permuted to [2, 6, 5], strides
 * [30, 1, 6] (no copy: the output is that view). */
static void test_more_layouts(void)
{
    struct t_model t;
    LOAD(&t,
         "{'inputs': [{'name': 'a', 'shape': [8, 4, 5]}, {'name': 'b', 'shape': [8]},"
         "            {'name': 'c', 'shape': [5]}, {'name': 'd', 'shape': [5, 8]},"
         "            {'name': 'e', 'shape': [8, 6]}],"
         " 'layers': [{'name': 'la', 'type': 'linear', 'inputs': ['a'], 'out_features': 5},"
         "            {'name': 'lb', 'type': 'linear', 'inputs': ['b'], 'out_features': 8},"
         "            {'name': 'x', 'type': 'einsum', 'inputs': ['la', 'lb'],"
         "             'equation': 'nchw,nc->nhw'},"
         "            {'name': 'lc', 'type': 'linear', 'inputs': ['c'], 'out_features': 5},"
         "            {'name': 'lc2', 'type': 'linear', 'inputs': ['c'], 'out_features': 5},"
         "            {'name': 'dot', 'type': 'einsum', 'inputs': ['lc', 'lc2'],"
         "             'equation': 'bi,bi->b'},"
         "            {'name': 'ld', 'type': 'linear', 'inputs': ['d'], 'out_features': 8},"
         "            {'name': 'le', 'type': 'linear', 'inputs': ['e'], 'out_features': 6},"
         "            {'name': 'ki', 'type': 'einsum', 'inputs': ['ld', 'le'],"
         "             'equation': 'bij,bjk->bki'}]}",
         4);
    CHECK_STR_EQ(t_shape(&t, "x", 0), "[4, 4, 5]");
    CHECK_EQ_U64(t_saved(&t, "x"), 2 * 1344);  /* batch 4: twice the measured batch 2 */
    CHECK(t_saves_storage(&t, "x", t_storage(&t, "la", 0)));
    CHECK(t_fwd(&t, "x") == 4 * 20 * 8);
    CHECK_STR_EQ(t_shape(&t, "dot", 0), "[4]");
    CHECK_EQ_U64(t_saved(&t, "dot"), 160);
    CHECK(t_fwd(&t, "dot") == 20);
    CHECK_STR_EQ(t_shape(&t, "ki", 0), "[4, 6, 5]");
    CHECK_STR_EQ(t_strides(&t, "ki", 0), "[30, 1, 6]");
    t_free(&t);
}

static void test_errors(void)
{
    struct t_model t;
    static const struct {
        const char *eq, *msg;
    } cases[] = {
        {"bij,bjk,x->bik", "more operands were provided"}, /* inverted below */
        {"bij,bjk->bix", "output subscript x does not appear"},
        {"bij,bjk->bii", "output subscript i appears more than once"},
        {"bi1,bjk->bik", "invalid subscript given at index 2"},
        {"bij,bjk->bi.k", "not part of any ellipsis"},
        {"bi,bjk->bik", "the number of subscripts in the equation (2) does not match the "
                        "number of dimensions (3) for operand 0 and no ellipsis was given"},
        {"bij,bik->bjk", "subscript i has size 4 for operand 1 which does not broadcast with "
                         "previously seen size 3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char json[600];
        snprintf(json, sizeof json,
                 "{'inputs': [{'name': 'a', 'shape': [3, 4]}, {'name': 'b', 'shape': [4, 5]}],"
                 " 'layers': [{'type': 'einsum', 'inputs': ['a', 'b'], 'equation': '%s'}]}",
                 cases[i].eq);
        const char *msg = t_error(&t, json, 2);
        if (i == 0)
            CHECK_CONTAINS(msg, "fewer operands were provided");
        else
            CHECK_CONTAINS(msg, cases[i].msg);
        t_free(&t);
    }
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'a', 'shape': [3, 4]}],"
                           " 'layers': [{'type': 'einsum', 'inputs': ['a', 'a'],"
                           "             'equation': 'bij'}]}",
                           2),
                   "more operands were provided than specified");
    t_free(&t);
}

int main(void)
{
    test_maxvit();
    test_mvit();
    test_frozen_side();
    test_implicit_ellipsis_three();
    test_single_and_outer();
    test_more_layouts();
    test_errors();
    return CHECK_DONE();
}
