/* test_ops_moe.c - the sparse MoE ops (moe_router, moe_gather,
 * moe_index_add): shapes, the tokens each expert gets (balanced, with a
 * remainder, and under --moe-imbalance), the saved tensors and the forward
 * temporaries, by hand from transformers v4.48.0's MixtralSparseMoeBlock and
 * PyTorch 2.6's autograd formulas (see src/ops/ops_moe.c), and errors.
 *
 * The batch size is the token count T (inputs [H] per token, batch T). */
#include "check.h"
#include "ops_test.h"

/* Re-runs inference of a loaded model with the run option moe_imbalance
 * (t_load infers with the defaults first). 0 / -1 with the message. */
static int t_rerun_imbalance(struct t_model *t, int64_t batch, double imbalance)
{
    struct memest_run_opts o = {.batch = batch, .dtype = MEMEST_F32, .moe_imbalance = imbalance};
    int rc = memest_run_infer(&t->r, &t->g, &o, &t->err);
    if (rc != 0)
        memest_error_format(&t->err, t->msg, sizeof t->msg);
    return rc;
}

/* A router over E experts, top 2, on T tokens of H = 8 (the batch): a
 * trainable linear before it so that the hidden states require grad, the
 * gate linear (the logits), the router and, for each expert e, moe_gather
 * "g<e>", a weighting mul "m<e>" and moe_index_add "a<e>" into a zeros
 * accumulator (the expert's MLP left out: it does not change the ops). */
#define ROUTER_JSON(E, NORM)                                                                  \
    "{'inputs': [{'name': 'x', 'shape': [8]}],"                                               \
    " 'layers': [{'name': 'h', 'type': 'linear', 'out_features': 8, 'bias': false},"          \
    "  {'name': 'gate', 'type': 'linear', 'out_features': " #E ", 'bias': false},"           \
    "  {'name': 'r', 'type': 'moe_router', 'inputs': ['gate', 'h'], 'top_k': 2,"              \
    "   'norm_topk_prob': " #NORM "},"                                                        \
    "  {'name': 'acc', 'type': 'zeros', 'size': ['batch', 8]},"
#define EXPERT_JSON(E, e, PREV)                                                               \
    "  {'name': 'g" #e "', 'type': 'moe_gather', 'inputs': ['h', 'r:0', 'r:2'],"              \
    "   'num_experts': " #E ", 'top_k': 2, 'expert': " #e "},"                                \
    "  {'name': 'm" #e "', 'type': 'mul', 'inputs': ['g" #e ":0', 'g" #e ":1']},"             \
    "  {'name': 'a" #e "', 'type': 'moe_index_add', 'inputs': ['" PREV "', 'm" #e "',"        \
    "   'g" #e ":2'], 'num_experts': " #E ", 'top_k': 2, 'expert': " #e "}"

/* Mixtral's routing (norm_topk_prob) on T = 6 tokens, E = 4, k = 2, fp32:
 * outputs weights [6, 2] fp32, experts [6, 2] int64, mask [4, 2, 6] int64;
 * saved: softmax's float32 result 6*4*4 = 96, topk's indices 6*2*8 = 96,
 * div_'s clone of the topk values 6*2*4 = 48 and the sum [6, 1] 24: 264
 * bytes (the sizes PyTorch 2.6's saved_tensors_hooks report for the same
 * statements). No temporaries in fp32; the backward's float32 [6, 4]
 * gradient of topk: 96 bytes. Without the renormalisation (Qwen2-MoE's
 * default): 96 + 96 = 192. */
static void test_router(void)
{
    struct t_model t;
    LOAD(&t, ROUTER_JSON(4, true) EXPERT_JSON(4, 0, "acc") "]}", 6);
    CHECK_STR_EQ(t_shape(&t, "r", 0), "[6, 2]");
    CHECK_STR_EQ(t_shape(&t, "r", 1), "[6, 2]");
    CHECK_STR_EQ(t_shape(&t, "r", 2), "[4, 2, 6]");
    CHECK(t_out(&t, "r", 0)->dtype == MEMEST_F32);
    CHECK(t_out(&t, "r", 1)->dtype == MEMEST_I64);
    CHECK(t_out(&t, "r", 2)->dtype == MEMEST_I64);
    CHECK(t_out(&t, "r", 0)->requires_grad);
    CHECK(!t_out(&t, "r", 1)->requires_grad);
    CHECK(!t_out(&t, "r", 2)->requires_grad);
    CHECK_EQ_U64(t_saved(&t, "r"), 96 + 96 + 48 + 24);
    CHECK(t_saves_storage(&t, "r", t_storage(&t, "r", 1)));
    CHECK_EQ_U64(t_info(&t, "r")->work_bytes, 0);
    CHECK_EQ_U64(t_info(&t, "r")->bwd_work_bytes, 6 * 4 * 4);
    CHECK(t_fwd(&t, "r") == 0);
    t_free(&t);

    LOAD(&t, ROUTER_JSON(4, false) EXPERT_JSON(4, 0, "acc") "]}", 6);
    CHECK_EQ_U64(t_saved(&t, "r"), 96 + 96);
    t_free(&t);
}

/* bfloat16: the logits [6, 4] are copied to float32 for _softmax (a
 * temporary of 96 bytes), the weights are bfloat16 (the hidden states'
 * dtype), the saved tensors are float32 and int64 as before (264); the
 * backward holds topk's and softmax's float32 gradients: 2 * 96. fp16:
 * _softmax reads the half logits (half_to_float), the temporary is the
 * float32 topk values that .to() casts, 6*2*4 = 48; backward 96. */
static void test_router_dtypes(void)
{
    struct t_model t;
    if (t_load_dt(&t, ROUTER_JSON(4, true) EXPERT_JSON(4, 0, "acc") "]}", 6, MEMEST_BF16) != 0) {
        fprintf(stderr, "%s\n", t.msg);
        CHECK(!"load bf16");
        t_free(&t);
        return;
    }
    CHECK(t_out(&t, "r", 0)->dtype == MEMEST_BF16);
    CHECK_EQ_U64(t_saved(&t, "r"), 264);
    CHECK_EQ_U64(t_info(&t, "r")->work_bytes, 96);
    CHECK_EQ_U64(t_info(&t, "r")->bwd_work_bytes, 192);
    t_free(&t);
    if (t_load_dt(&t, ROUTER_JSON(4, true) EXPERT_JSON(4, 0, "acc") "]}", 6, MEMEST_F16) != 0) {
        fprintf(stderr, "%s\n", t.msg);
        CHECK(!"load fp16");
        t_free(&t);
        return;
    }
    CHECK(t_out(&t, "r", 0)->dtype == MEMEST_F16);
    CHECK_EQ_U64(t_info(&t, "r")->work_bytes, 48);
    CHECK_EQ_U64(t_info(&t, "r")->bwd_work_bytes, 96);
    t_free(&t);
}

/* DeepSeek-V3's router (scoring "sigmoid", src/ops/ops_moe.c) on T = 6
 * tokens, E = 4 experts in n_group 2 groups, topk_group 1, k = 2, the
 * float32 logits alone (no hidden-states input: the weights stay float32).
 * Saved: sigmoid's float32 result 6*4*4 = 96 (gather's self, the same
 * storage), gather's int64 index 6*2*8 = 96, with norm_topk_prob the
 * division's clone 6*2*4 = 48 and its divisor [6, 1] 24: 264; without it
 * 192. Forward temporaries of the no_grad selection: two float32 [6, 4]
 * (scores_for_choice, masked_fill's) and two bool [6, 4]: 2*96 + 2*24 = 240;
 * backward: gather's and sigmoid's float32 [6, 4] gradients, 192. */
#define SIGMOID_JSON(NORM, G, KG, K)                                                          \
    "{'inputs': [{'name': 'x', 'shape': [8]}],"                                               \
    " 'layers': [{'name': 'h', 'type': 'linear', 'out_features': 8, 'bias': false},"          \
    "  {'name': 'gate', 'type': 'linear', 'out_features': 4, 'bias': false},"                \
    "  {'name': 'r', 'type': 'moe_router', 'inputs': 'gate', 'top_k': " #K ","                \
    "   'scoring': 'sigmoid', 'n_group': " #G ", 'topk_group': " #KG ","                       \
    "   'norm_topk_prob': " #NORM "}]}"
static void test_router_sigmoid(void)
{
    struct t_model t;
    if (t_load_dt(&t, SIGMOID_JSON(true, 2, 1, 2), 6, MEMEST_BF16) != 0) {
        fprintf(stderr, "%s\n", t.msg);
        CHECK(!"load sigmoid");
        t_free(&t);
        return;
    }
    CHECK_STR_EQ(t_shape(&t, "r", 0), "[6, 2]");
    CHECK_STR_EQ(t_shape(&t, "r", 2), "[4, 2, 6]");
    CHECK(t_out(&t, "r", 1)->dtype == MEMEST_I64);
    CHECK(t_out(&t, "r", 0)->requires_grad);
    t_free(&t);
    LOAD(&t, SIGMOID_JSON(true, 2, 1, 2), 6);
    CHECK(t_out(&t, "r", 0)->dtype == MEMEST_F32);
    CHECK_EQ_U64(t_saved(&t, "r"), 96 + 96 + 48 + 24);
    CHECK(t_saves_storage(&t, "r", t_storage(&t, "r", 1)));
    CHECK_EQ_U64(t_info(&t, "r")->work_bytes, 2 * 96 + 2 * 24);
    CHECK_EQ_U64(t_info(&t, "r")->bwd_work_bytes, 2 * 96);
    t_free(&t);
    LOAD(&t, SIGMOID_JSON(false, 2, 1, 2), 6);
    CHECK_EQ_U64(t_saved(&t, "r"), 96 + 96);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, SIGMOID_JSON(true, 3, 1, 2), 6), "n_group 3 must divide the 4 experts");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, SIGMOID_JSON(true, 2, 3, 2), 6), "topk_group 3 is more than n_group 2");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, SIGMOID_JSON(true, 4, 1, 1), 6), "groups needs 2 experts at least");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, SIGMOID_JSON(true, 2, 1, 3), 6),
                   "top_k 3 is more than the 2 experts of topk_group 1 groups");
    t_free(&t);
}

/* Granite-MoE's gating (scoring "topk_softmax") on T = 6 tokens, E = 4, k = 2,
 * the hidden states as input 2 (the weights take their dtype). Saved: topk's
 * int64 indices 6*2*8 = 96 and softmax's float32 [6, 2] result 48: 144, in
 * float32 and bfloat16 alike. Forward temporary: the float32 copy of bfloat16
 * logits [6, 4], 96 (none in float32); backward: topk's float32 [6, 4]
 * gradient 96, plus its bfloat16 cast 48 for bfloat16 logits. */
#define TOPK_SOFTMAX_JSON(NORM)                                                               \
    "{'inputs': [{'name': 'x', 'shape': [8]}],"                                               \
    " 'layers': [{'name': 'h', 'type': 'linear', 'out_features': 8, 'bias': false},"          \
    "  {'name': 'gate', 'type': 'linear', 'out_features': 4, 'bias': false},"                \
    "  {'name': 'r', 'type': 'moe_router', 'inputs': ['gate', 'h'], 'top_k': 2,"              \
    "   'scoring': 'topk_softmax', 'norm_topk_prob': " #NORM "}]}"
static void test_router_topk_softmax(void)
{
    struct t_model t;
    if (t_load_dt(&t, TOPK_SOFTMAX_JSON(false), 6, MEMEST_BF16) != 0) {
        fprintf(stderr, "%s\n", t.msg);
        CHECK(!"load topk_softmax");
        t_free(&t);
        return;
    }
    CHECK_STR_EQ(t_shape(&t, "r", 0), "[6, 2]");
    CHECK_STR_EQ(t_shape(&t, "r", 2), "[4, 2, 6]");
    CHECK(t_out(&t, "r", 0)->dtype == MEMEST_BF16);
    CHECK(t_out(&t, "r", 1)->dtype == MEMEST_I64);
    CHECK_EQ_U64(t_saved(&t, "r"), 96 + 48);
    CHECK(t_saves_storage(&t, "r", t_storage(&t, "r", 1)));
    CHECK_EQ_U64(t_info(&t, "r")->work_bytes, 96);
    CHECK_EQ_U64(t_info(&t, "r")->bwd_work_bytes, 96 + 48);
    t_free(&t);
    LOAD(&t, TOPK_SOFTMAX_JSON(false), 6);
    CHECK(t_out(&t, "r", 0)->dtype == MEMEST_F32);
    CHECK_EQ_U64(t_saved(&t, "r"), 96 + 48);
    CHECK_EQ_U64(t_info(&t, "r")->work_bytes, 0);
    CHECK_EQ_U64(t_info(&t, "r")->bwd_work_bytes, 96);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, TOPK_SOFTMAX_JSON(true), 6), "norm_topk_prob does not apply");
    t_free(&t);
}

/* gpt-oss's router (float32 false): topk and softmax in the logits' dtype,
 * bfloat16, no hidden-states input: saved the int64 indices 96 and the
 * bfloat16 [6, 2] result 24; no forward temporary; backward topk's bfloat16
 * [6, 4] gradient 48. float32 false with the softmax scoring is an error. */
#define GPT_OSS_ROUTER_JSON(SCORING)                                                          \
    "{'inputs': [{'name': 'x', 'shape': [8]}],"                                               \
    " 'layers': [{'name': 'gate', 'type': 'linear', 'out_features': 4, 'bias': true},"        \
    "  {'name': 'r', 'type': 'moe_router', 'inputs': ['gate'], 'top_k': 2,"                    \
    "   'scoring': '" SCORING "', 'float32': false}]}"
static void test_router_topk_softmax_dtype(void)
{
    struct t_model t;
    if (t_load_dt(&t, GPT_OSS_ROUTER_JSON("topk_softmax"), 6, MEMEST_BF16) != 0) {
        fprintf(stderr, "%s\n", t.msg);
        CHECK(!"load topk_softmax float32 false");
        t_free(&t);
        return;
    }
    CHECK(t_out(&t, "r", 0)->dtype == MEMEST_BF16);
    CHECK_EQ_U64(t_saved(&t, "r"), 96 + 24);
    CHECK_EQ_U64(t_info(&t, "r")->work_bytes, 0);
    CHECK_EQ_U64(t_info(&t, "r")->bwd_work_bytes, 48);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, GPT_OSS_ROUTER_JSON("softmax"), 6),
                   "float32 false applies to scoring \"topk_softmax\" only");
    t_free(&t);
}

/* Llama 4's router (scoring "sigmoid_scatter") on T = 6 tokens, E = 4, k = 2:
 * the dense scores [6, 4] in the logits' dtype and the experts [6, 2] int64.
 * Saved: the int64 indices (topk's and scatter_'s, one storage) 96 and
 * sigmoid's float32 [6, 4] result 96 (the output itself in float32): 192.
 * Forward temporaries: full_like [6, 4] and the topk values [6, 2] in the
 * logits' dtype (96 + 48 in float32; 48 + 24 + the float32 copy 96 = 168 in
 * bfloat16); backward: sigmoid's float32 gradient 96 + the values' 48 (144),
 * in bfloat16 96 + 24 + the cast 48 = 168. */
#define SIGMOID_SCATTER_JSON(DT, NORM)                                                        \
    "{'inputs': [{'name': 'x', 'shape': [8]}],"                                               \
    " 'layers': [{'name': 'h', 'type': 'to', 'dtype': '" DT "'},"                             \
    "  {'name': 'gate', 'type': 'linear', 'out_features': 4, 'bias': false},"                \
    "  {'name': 'r', 'type': 'moe_router', 'top_k': 2, 'scoring': 'sigmoid_scatter',"         \
    "   'norm_topk_prob': " #NORM "},"                                                        \
    "  {'name': 'v', 'type': 'moe_experts_view', 'inputs': 'h', 'shape': [2, -1, 8],"         \
    "   'num_experts': 2, 'top_k': 1}]}"
static void test_router_sigmoid_scatter(void)
{
    struct t_model t;
    LOAD(&t, SIGMOID_SCATTER_JSON("float32", false), 6);
    CHECK_EQ_U64(t_nout(&t, "r"), 2);
    CHECK_STR_EQ(t_shape(&t, "r", 0), "[6, 4]");
    CHECK_STR_EQ(t_shape(&t, "r", 1), "[6, 2]");
    CHECK(t_out(&t, "r", 0)->dtype == MEMEST_F32);
    CHECK(t_out(&t, "r", 1)->dtype == MEMEST_I64);
    CHECK_EQ_U64(t_saved(&t, "r"), 96 + 96);
    CHECK(t_saves_storage(&t, "r", t_storage(&t, "r", 0)));
    CHECK(t_saves_storage(&t, "r", t_storage(&t, "r", 1)));
    CHECK_EQ_U64(t_info(&t, "r")->work_bytes, 144);
    CHECK_EQ_U64(t_info(&t, "r")->bwd_work_bytes, 144);
    CHECK_STR_EQ(t_shape(&t, "v", 0), "[2, 3, 8]");
    t_free(&t);
    LOAD(&t, SIGMOID_SCATTER_JSON("bfloat16", false), 6);
    CHECK(t_out(&t, "r", 0)->dtype == MEMEST_BF16);
    CHECK_EQ_U64(t_saved(&t, "r"), 96 + 96);
    CHECK(!t_saves_storage(&t, "r", t_storage(&t, "r", 0)));
    CHECK_EQ_U64(t_info(&t, "r")->work_bytes, 168);
    CHECK_EQ_U64(t_info(&t, "r")->bwd_work_bytes, 168);
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, SIGMOID_SCATTER_JSON("float32", true), 6),
                   "norm_topk_prob does not apply to scoring \"sigmoid_scatter\"");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [8]}],"
                           " 'layers': [{'name': 'v', 'type': 'moe_experts_view', 'shape': [3, -1, 8],"
                           "  'num_experts': 2, 'top_k': 1}]}",
                           6),
                   "the view's first dim must be num_experts 2");
    t_free(&t);
}

/* One expert, T = 6, E = 4, k = 2, H = 8, fp32: 12 assignments, 3 each.
 * moe_gather: [3, 8] fp32, [3, 1] fp32, the where result [3, 2] int64,
 * saved (by both index ops) once: 3*2*8 = 48 bytes. The mul saves both
 * operands: 3*8*4 + 3*1*4 = 108. moe_index_add is in place on the
 * accumulator and saves index_add's source (the mul's output, 96 bytes) and
 * the index (gather's storage again): 96 + 48; its accumulator's gradient
 * is the output's. */
static void test_gather_index_add(void)
{
    struct t_model t;
    LOAD(&t, ROUTER_JSON(4, true) EXPERT_JSON(4, 0, "acc") "]}", 6);
    CHECK_STR_EQ(t_shape(&t, "g0", 0), "[3, 8]");
    CHECK_STR_EQ(t_shape(&t, "g0", 1), "[3, 1]");
    CHECK_STR_EQ(t_shape(&t, "g0", 2), "[3, 2]");
    CHECK(t_out(&t, "g0", 2)->dtype == MEMEST_I64);
    CHECK(t_out(&t, "g0", 0)->requires_grad);
    CHECK(t_out(&t, "g0", 1)->requires_grad);
    CHECK(!t_out(&t, "g0", 2)->requires_grad);
    CHECK_EQ_U64(t_saved(&t, "g0"), 48);
    CHECK(t_saves_storage(&t, "g0", t_storage(&t, "g0", 2)));
    CHECK_EQ_U64(t_saved(&t, "m0"), 96 + 12);
    CHECK_EQ_U64(t_saved(&t, "a0"), 96 + 48);
    CHECK(t_saves_storage(&t, "a0", t_storage(&t, "m0", 0)));
    CHECK(t_saves_storage(&t, "a0", t_storage(&t, "g0", 2)));
    CHECK(t_storage(&t, "a0", 0) == t_storage(&t, "acc", 0));
    CHECK_STR_EQ(t_shape(&t, "a0", 0), "[6, 8]");
    CHECK(t_out(&t, "a0", 0)->requires_grad);
    const struct memest_nodeinfo *ni = t_info(&t, "a0");
    CHECK(t.r.ins[ni->in_first].grad == MEMEST_GRAD_SAME);
    CHECK(t.r.ins[ni->in_first + 2].grad == MEMEST_GRAD_NONE);
    t_free(&t);
}

/* n_e for T = 6, k = 2 (12 assignments):
 *   E = 5, balanced: 12 = 5*2 + 2, experts 0 and 1 get 3, experts 2-4 get 2;
 *   E = 4, imbalance 1.5: expert 0 gets ceil(1.5 * 12 / 4) = ceil(4.5) = 5,
 *     the other three share 7: 3, 2, 2;
 *   E = 4, imbalance 3: ceil(3 * 12 / 4) = 9 > T: expert 0 gets all 6 tokens,
 *     the others share 6: 2, 2, 2;
 *   E = 4, imbalance 1 is the balanced split: 3 each. */
static void test_tokens_per_expert(void)
{
    struct t_model t;
    LOAD(&t,
         ROUTER_JSON(5, true) EXPERT_JSON(5, 0, "acc") "," EXPERT_JSON(5, 1, "a0") ","
             EXPERT_JSON(5, 2, "a1") "," EXPERT_JSON(5, 3, "a2") "," EXPERT_JSON(5, 4, "a3") "]}",
         6);
    CHECK_STR_EQ(t_shape(&t, "g0", 0), "[3, 8]");
    CHECK_STR_EQ(t_shape(&t, "g1", 0), "[3, 8]");
    CHECK_STR_EQ(t_shape(&t, "g2", 0), "[2, 8]");
    CHECK_STR_EQ(t_shape(&t, "g3", 0), "[2, 8]");
    CHECK_STR_EQ(t_shape(&t, "g4", 1), "[2, 1]");
    CHECK_EQ_U64(t_saved(&t, "g4"), 2 * 2 * 8);
    t_free(&t);

    LOAD(&t,
         ROUTER_JSON(4, true) EXPERT_JSON(4, 0, "acc") "," EXPERT_JSON(4, 1, "a0") ","
             EXPERT_JSON(4, 2, "a1") "," EXPERT_JSON(4, 3, "a2") "]}",
         6);
    CHECK(t_rerun_imbalance(&t, 6, 1.5) == 0);
    CHECK_STR_EQ(t_shape(&t, "g0", 0), "[5, 8]");
    CHECK_STR_EQ(t_shape(&t, "g1", 0), "[3, 8]");
    CHECK_STR_EQ(t_shape(&t, "g2", 0), "[2, 8]");
    CHECK_STR_EQ(t_shape(&t, "g3", 0), "[2, 8]");
    CHECK_EQ_U64(t_saved(&t, "g0"), 5 * 2 * 8);
    CHECK_EQ_U64(t_saved(&t, "a0"), 5 * 8 * 4 + 5 * 2 * 8);
    CHECK(t_rerun_imbalance(&t, 6, 3.0) == 0);
    CHECK_STR_EQ(t_shape(&t, "g0", 0), "[6, 8]");
    CHECK_STR_EQ(t_shape(&t, "g1", 0), "[2, 8]");
    CHECK_STR_EQ(t_shape(&t, "g3", 0), "[2, 8]");
    CHECK(t_rerun_imbalance(&t, 6, 1.0) == 0);
    CHECK_STR_EQ(t_shape(&t, "g0", 0), "[3, 8]");
    CHECK_STR_EQ(t_shape(&t, "g3", 0), "[3, 8]");
    t_free(&t);
}

/* Fewer assignments than experts (T = 1, k = 2, E = 4): experts 2 and 3
 * get no token, as PyTorch runs them on empty tensors. */
static void test_empty_expert(void)
{
    struct t_model t;
    LOAD(&t, ROUTER_JSON(4, true) EXPERT_JSON(4, 0, "acc") "," EXPERT_JSON(4, 3, "a0") "]}", 1);
    CHECK_STR_EQ(t_shape(&t, "g0", 0), "[1, 8]");
    CHECK_STR_EQ(t_shape(&t, "g3", 0), "[0, 8]");
    CHECK_EQ_U64(t_saved(&t, "a3"), 0);
    t_free(&t);
}

static void test_moe_errors(void)
{
    struct t_model t;
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [4]}],"
                           " 'layers': [{'type': 'moe_router', 'top_k': 5}]}",
                           2),
                   "top_k 5 is more than the 4 experts");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           "{'inputs': [{'name': 'x', 'shape': [3, 4]}],"
                           " 'layers': [{'type': 'moe_router', 'top_k': 1}]}",
                           2),
                   "expects router logits [tokens, experts] as a 2-D tensor");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t, ROUTER_JSON(4, true) EXPERT_JSON(4, 4, "acc") "]}", 6),
                   "expert 4 is out of range (num_experts 4)");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           ROUTER_JSON(4, true)
                           "  {'name': 'g0', 'type': 'moe_gather', 'inputs': ['h', 'r:0'],"
                           "   'num_experts': 4, 'top_k': 3, 'expert': 0}]}",
                           6),
                   "expects routing weights [6, 3] (tokens, top_k)");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           ROUTER_JSON(4, true)
                           "  {'name': 'g0', 'type': 'moe_gather', 'inputs': ['h', 'r:0', 'r:1'],"
                           "   'num_experts': 4, 'top_k': 2, 'expert': 0}]}",
                           6),
                   "expects the expert mask [4, 2, 6]");
    t_free(&t);
    /* the expert's output must have the expert's token count */
    CHECK_CONTAINS(t_error(&t,
                           ROUTER_JSON(4, true)
                           "  {'name': 'a0', 'type': 'moe_index_add', 'inputs': ['acc', 'h'],"
                           "   'num_experts': 4, 'top_k': 2, 'expert': 0}]}",
                           6),
                   "expects the expert's output as [3, 8] (its tokens, hidden)");
    t_free(&t);
    CHECK_CONTAINS(t_error(&t,
                           ROUTER_JSON(4, true)
                           "  {'name': 'g0', 'type': 'moe_gather', 'inputs': ['h', 'r:0'],"
                           "   'num_experts': 1, 'top_k': 2, 'expert': 0}]}",
                           6),
                   "top_k 2 is more than num_experts 1");
    t_free(&t);
}

int main(void)
{
    test_router();
    test_router_dtypes();
    test_router_sigmoid();
    test_router_topk_softmax();
    test_router_topk_softmax_dtype();
    test_router_sigmoid_scatter();
    test_gather_index_add();
    test_tokens_per_expert();
    test_empty_expert();
    test_moe_errors();
    return CHECK_DONE();
}
