/* test_lora.c - the LoRA graph pass (src/model/lora.c) on a small model: the
 * nodes inserted after a target linear, in the order of peft v0.17.1's
 * forwards (tuners/lora/layer.py Linear.forward; tuners/lora/bnb.py
 * Linear8bitLt/Linear4bit.forward for a bitsandbytes base, whose wformat is
 * set here by hand as the quantisation pass would), how the readers of the
 * base output, the model outputs and the blocks are remapped, the frozen
 * base, the adapters' float32 dtype, the scaling (alpha / r, alpha / sqrt(r)
 * with rsLoRA), target matching (name or ".name" suffix, all-linear without
 * the output layer), the errors, and shape inference on the result: the
 * parameter counts worked out by hand. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "memest/calc.h"
#include "memest/lora.h"
#include "memest/model.h"
#include "memest/ops.h"
#include "memest/quant.h"
#include "memest/run.h"

/* Two blocks "layers.0", "layers.1" (q_proj 16 -> 16, relu, residual add),
 * then lm_head 16 -> 8, the model output. */
static const char *json =
    "{\"name\": \"t\", \"inputs\": [{\"name\": \"x\", \"shape\": [4, 16]}],"
    " \"blocks\": {\"layer\": {\"inputs\": [\"h\"], \"layers\": ["
    "   {\"name\": \"q_proj\", \"type\": \"linear\", \"out_features\": 16},"
    "   {\"name\": \"act\", \"type\": \"relu\"},"
    "   {\"name\": \"add\", \"type\": \"add\", \"inputs\": [\"h\", \"act\"]}]}},"
    " \"layers\": [{\"name\": \"layers\", \"type\": \"layer\", \"repeat\": 2},"
    "   {\"name\": \"lm_head\", \"type\": \"linear\", \"out_features\": 8}]}";

struct fixture {
    struct memest_model m;
    struct memest_graph g;
    struct memest_lora_summary s;
    struct memest_error err;
};

static void build(struct fixture *f)
{
    memset(f, 0, sizeof *f);
    CHECK_EQ_INT(memest_model_read_string(json, strlen(json), "t.json", &f->m, &f->err), 0);
    CHECK_EQ_INT(memest_model_build(&f->m, NULL, 0, &f->g, &f->err), 0);
}

static void done(struct fixture *f)
{
    memest_graph_free(&f->g);
    memest_model_free(&f->m);
}

static int64_t find(const struct fixture *f, const char *name)
{
    return memest_graph_find(&f->g, name);
}

/* The nodes after `base`, by their name's suffix, are exactly `want`. */
static void check_seq(const struct fixture *f, const char *base, const char *const *want, int n)
{
    int64_t b = find(f, base);
    CHECK(b >= 0);
    if (b < 0)
        return;
    size_t bl = strlen(base);
    for (int i = 0; i < n; i++) {
        const struct memest_node *nd = &f->g.nodes[b + 1 + i];
        CHECK(strncmp(nd->name, base, bl) == 0);
        CHECK_STR_EQ(nd->name + bl, want[i]);
    }
    /* the next node is no adapter node of base */
    const struct memest_node *next = &f->g.nodes[b + 1 + n];
    CHECK(strncmp(next->name, base, bl) != 0 || next->name[bl] != '.');
}

static const struct memest_node *node(const struct fixture *f, const char *name)
{
    int64_t i = find(f, name);
    CHECK(i >= 0);
    return i >= 0 ? &f->g.nodes[i] : &f->g.nodes[0];
}

static void test_plain(void)
{
    struct fixture f;
    build(&f);
    uint32_t n0 = f.g.nnodes;
    int64_t act0 = find(&f, "layers.0.act");
    struct memest_lora_opts o = {.r = 4, .alpha = 16, .dropout = 0, .targets = "q_proj"};
    CHECK_EQ_INT(memest_lora_apply(&f.g, &o, false, NULL, &f.s, &f.err), 0);
    CHECK_EQ_INT(f.s.modules, 2);
    CHECK_EQ_INT(f.s.bnb_modules, 0);
    CHECK(f.s.scaling == 4.0); /* 16 / 4 */
    CHECK_STR_EQ(f.s.targets, "q_proj");
    /* layer.py: cast, (no dropout: nn.Identity), A, B, * scaling, add, cast back */
    static const char *const seq[] = {".lora_input_cast", ".lora_A.default", ".lora_B.default",
                                      ".lora_scaling", ".lora_add", ".lora_output_cast"};
    check_seq(&f, "layers.0.q_proj", seq, 6);
    check_seq(&f, "layers.1.q_proj", seq, 6);
    CHECK_EQ_INT(f.g.nnodes, n0 + 12);
    CHECK(act0 >= 0);

    int64_t q = find(&f, "layers.0.q_proj"), x = find(&f, "x");
    const struct memest_node *cast = node(&f, "layers.0.q_proj.lora_input_cast");
    const struct memest_node *a = node(&f, "layers.0.q_proj.lora_A.default");
    const struct memest_node *b = node(&f, "layers.0.q_proj.lora_B.default");
    const struct memest_node *sc = node(&f, "layers.0.q_proj.lora_scaling");
    const struct memest_node *add = node(&f, "layers.0.q_proj.lora_add");
    const struct memest_node *back = node(&f, "layers.0.q_proj.lora_output_cast");
    CHECK_EQ_INT(cast->in[0].node, x);  /* the linear's input x */
    CHECK_STR_EQ(cast->args[memest_op_arg_index(cast->op, "dtype")].s, "float32");
    CHECK_EQ_INT(a->in[0].node, q + 1);
    CHECK_EQ_INT(a->args[memest_op_arg_index(a->op, "out_features")].v[0], 4);
    CHECK_EQ_INT(a->args[memest_op_arg_index(a->op, "bias")].v[0], 0);
    CHECK_EQ_INT(b->args[memest_op_arg_index(b->op, "out_features")].v[0], 16);
    CHECK(sc->args[memest_op_arg_index(sc->op, "other")].f == 4.0);
    CHECK_EQ_INT(add->nin, 2);
    CHECK_EQ_INT(add->in[0].node, q);   /* result + lora output */
    CHECK_EQ_INT(add->in[1].node, q + 4);
    CHECK_EQ_INT(back->nin, 2);         /* .to(torch_result_dtype): type_as(x) */
    CHECK_EQ_INT(back->in[0].node, q + 5);
    CHECK_EQ_INT(back->in[1].node, x);
    /* the readers of q_proj's output read the cast back */
    CHECK_EQ_INT(node(&f, "layers.0.act")->in[0].node, q + 6);
    /* frozen base, float32 trainable adapters */
    for (uint32_t i = 0; i < f.g.nnodes; i++) {
        const struct memest_node *nd = &f.g.nodes[i];
        bool adapter = strstr(nd->name, ".lora_A.") || strstr(nd->name, ".lora_B.");
        CHECK(nd->trainable == adapter);
        CHECK_EQ_INT(nd->param_dtype, adapter ? MEMEST_F32 + 1 : 0);
    }
    /* the block instances hold their adapters */
    for (uint32_t i = 0; i < f.g.nblocks; i++) {
        const struct memest_block_inst *bi = &f.g.blocks[i];
        const char *want = strcmp(bi->name, "layers.0") == 0 ? "layers.0." : "layers.1.";
        CHECK_EQ_INT(strncmp(f.g.nodes[bi->first].name, want, 9), 0);
        CHECK_EQ_INT(strncmp(f.g.nodes[bi->last].name, want, 9), 0);
        CHECK_EQ_INT(strcmp(f.g.nodes[bi->last].name + 9, "add"), 0);
        CHECK(f.g.nodes[bi->first + 1].name[9] == 'q');   /* q_proj, then its adapters */
    }
    /* every input refers to an earlier node */
    for (uint32_t i = 0; i < f.g.nnodes; i++)
        for (uint32_t k = 0; k < f.g.nodes[i].nin; k++)
            CHECK(f.g.nodes[i].in[k].node < i);

    /* parameters: base 2 * (16*16 + 16) + 16*8 + 8 = 680; adapters per layer
     * lora_A [4, 16] + lora_B [16, 4] = 128, two layers 256 */
    struct memest_run r = {0};
    struct memest_run_opts ro = {.batch = 2, .dtype = MEMEST_BF16};
    CHECK_EQ_INT(memest_run_infer(&r, &f.g, &ro, &f.err), 0);
    struct memest_param_totals p;
    CHECK_EQ_INT(memest_calc_params(&r, &p, &f.err), 0);
    CHECK_EQ_U64(p.total, 680 + 256);
    CHECK_EQ_U64(p.trainable, 256);
    /* bytes: the base in bf16, the adapters in float32 */
    CHECK_EQ_U64(p.bytes, 680 * 2 + 256 * 4);
    memest_run_free(&r);
    done(&f);
}

static void test_dropout_rslora_all_linear(void)
{
    struct fixture f;
    build(&f);
    struct memest_lora_opts o = {.r = 4, .alpha = 16, .dropout = 0.1, .targets = "ALL-LINEAR",
                                 .rslora = true};
    CHECK_EQ_INT(memest_lora_apply(&f.g, &o, false, NULL, &f.s, &f.err), 0);
    CHECK_EQ_INT(f.s.modules, 2);       /* lm_head, the output layer, left out */
    CHECK(f.s.scaling == 8.0);          /* 16 / sqrt(4) */
    CHECK_STR_EQ(f.s.targets, "all-linear");
    static const char *const seq[] = {".lora_input_cast", ".lora_dropout.default",
                                      ".lora_A.default", ".lora_B.default", ".lora_scaling",
                                      ".lora_add", ".lora_output_cast"};
    check_seq(&f, "layers.1.q_proj", seq, 7);
    const struct memest_node *d = node(&f, "layers.1.q_proj.lora_dropout.default");
    CHECK(d->args[memest_op_arg_index(d->op, "p")].f == 0.1);
    CHECK(!strstr(f.g.nodes[f.g.nnodes - 1].name, "lora"));
    done(&f);
}

static void test_head_output(void)
{
    struct fixture f;
    build(&f);
    struct memest_lora_opts o = {.r = 2, .alpha = 8, .targets = "lm_head"};
    CHECK_EQ_INT(memest_lora_apply(&f.g, &o, false, NULL, &f.s, &f.err), 0);
    CHECK_EQ_INT(f.s.modules, 1);
    /* the model output is the adapted head's last node */
    CHECK_STR_EQ(f.g.nodes[f.g.outputs[0].node].name, "lm_head.lora_output_cast");
    done(&f);
}

static void test_bnb(void)
{
    struct fixture f;
    /* Linear4bit (nf4): clone, cast, A, B, scale, cast of the output, add */
    build(&f);
    f.g.nodes[find(&f, "layers.0.q_proj")].wformat = MEMEST_WF_NF4;
    f.g.nodes[find(&f, "layers.1.q_proj")].wformat = MEMEST_WF_INT8;
    struct memest_lora_opts o = {.r = 4, .alpha = 8, .targets = "q_proj"};
    CHECK_EQ_INT(memest_lora_apply(&f.g, &o, false, NULL, &f.s, &f.err), 0);
    CHECK_EQ_INT(f.s.bnb_modules, 2);
    static const char *const nf4[] = {".base_clone", ".lora_input_cast", ".lora_A.default",
                                      ".lora_B.default", ".lora_scaling", ".lora_output_cast",
                                      ".lora_add"};
    check_seq(&f, "layers.0.q_proj", nf4, 7);
    int64_t q = find(&f, "layers.0.q_proj");
    const struct memest_node *add = node(&f, "layers.0.q_proj.lora_add");
    CHECK_EQ_INT(add->in[0].node, q + 1);   /* the clone */
    CHECK_EQ_INT(add->in[1].node, q + 6);   /* output.to(expected_dtype) */
    CHECK_EQ_INT(node(&f, "layers.0.act")->in[0].node, q + 7);
    /* Linear8bitLt: no clone */
    static const char *const int8[] = {".lora_input_cast", ".lora_A.default", ".lora_B.default",
                                       ".lora_scaling", ".lora_output_cast", ".lora_add"};
    check_seq(&f, "layers.1.q_proj", int8, 6);
    done(&f);

    /* under autocast bnb.py skips both casts (requires_conversion is false) */
    build(&f);
    f.g.nodes[find(&f, "layers.0.q_proj")].wformat = MEMEST_WF_FP4;
    f.g.nodes[find(&f, "layers.1.q_proj")].wformat = MEMEST_WF_GPTQ4; /* layer.py's steps */
    CHECK_EQ_INT(memest_lora_apply(&f.g, &o, true, NULL, &f.s, &f.err), 0);
    CHECK_EQ_INT(f.s.bnb_modules, 1);
    static const char *const fp4amp[] = {".base_clone", ".lora_A.default", ".lora_B.default",
                                         ".lora_scaling", ".lora_add"};
    check_seq(&f, "layers.0.q_proj", fp4amp, 5);
    q = find(&f, "layers.0.q_proj");
    CHECK_EQ_INT(node(&f, "layers.0.q_proj.lora_A.default")->in[0].node, find(&f, "x"));
    /* layer.py under autocast: the input cast stays, the cast back is a no-op (no node) */
    static const char *const gptq[] = {".lora_input_cast", ".lora_A.default", ".lora_B.default",
                                       ".lora_scaling", ".lora_add"};
    check_seq(&f, "layers.1.q_proj", gptq, 5);
    done(&f);
}

static void test_errors(void)
{
    struct fixture f;
    struct memest_lora_opts o = {.r = 4, .alpha = 8};
    build(&f);   /* no model_type, no targets */
    CHECK_EQ_INT(memest_lora_apply(&f.g, &o, false, NULL, &f.s, &f.err), -1);
    CHECK_EQ_INT(f.err.code, MEMEST_ERR_USAGE);
    done(&f);
    build(&f);   /* a model_type PEFT has no entry for */
    CHECK_EQ_INT(memest_lora_apply(&f.g, &o, false, "phi3", &f.s, &f.err), -1);
    CHECK(strstr(f.err.msg, "\"phi3\"") != NULL);
    done(&f);
    build(&f);   /* no layer called so; "proj" is no suffix after a '.' of "q_proj" */
    o.targets = "proj";
    CHECK_EQ_INT(memest_lora_apply(&f.g, &o, false, NULL, &f.s, &f.err), -1);
    CHECK(strstr(f.err.msg, "not found") != NULL);
    done(&f);
    build(&f);   /* a relu */
    o.targets = "q_proj,act";
    CHECK_EQ_INT(memest_lora_apply(&f.g, &o, false, NULL, &f.s, &f.err), -1);
    CHECK(strstr(f.err.msg, "relu") != NULL);
    done(&f);
    build(&f);   /* r 0: nothing */
    o.r = 0;
    uint32_t n0 = f.g.nnodes;
    CHECK_EQ_INT(memest_lora_apply(&f.g, &o, false, NULL, &f.s, &f.err), 0);
    CHECK_EQ_INT(f.g.nnodes, n0);
    CHECK(f.g.nodes[find(&f, "layers.0.q_proj")].trainable);
    done(&f);
    /* PEFT's defaults (utils/constants.py) */
    CHECK_STR_EQ(memest_lora_default_targets("llama"), "q_proj,v_proj");
    CHECK_STR_EQ(memest_lora_default_targets("gpt2"), "c_attn");
    CHECK(memest_lora_default_targets(NULL) == NULL);
}

int main(void)
{
    test_plain();
    test_dropout_rslora_all_linear();
    test_head_output();
    test_bnb();
    test_errors();
    return CHECK_DONE();
}
