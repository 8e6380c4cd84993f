/* test_model_build.c - expansion of blocks, repeat, if, variables, "let",
 * "checks", weight tying and freezing; figures are hand counts written out below. */
#include <string.h>

#include "check.h"
#include "built.h"

static const char *name_of(const struct built *b, uint32_t i)
{
    return i < b->g.nnodes ? b->g.nodes[i].name : "(none)";
}

static const char *mlp =
    "{\"name\": \"mlp\", \"variables\": {\"width\": 16, \"depth\": 3},"
    " \"inputs\": [{\"name\": \"x\", \"shape\": [8]}],"
    " \"blocks\": {\"layer\": {\"args\": {\"w\": null, \"act\": true},"
    "   \"layers\": [{\"name\": \"fc\", \"type\": \"linear\", \"out_features\": \"w\"},"
    "                {\"name\": \"relu\", \"type\": \"relu\", \"if\": \"act\"}]}},"
    " \"layers\": [{\"name\": \"body\", \"type\": \"layer\", \"repeat\": \"depth\","
    "               \"w\": \"width * (repeat_index + 1)\"},"
    "              {\"name\": \"head\", \"type\": \"layer\", \"w\": 2, \"act\": false}]}";

int main(void)
{
    struct built b;

    /* repeat + block args + expressions: widths 16, 32, 48 then 2:
     * 8*16+16 + 16*32+32 + 32*48+48 + 48*2+2 = 144 + 544 + 1584 + 98 = 2370 */
    build(&b, mlp, NULL, 0, 4);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_EQ_U64(b.p.total, 2370);
    /* nodes: x, body.0.fc, body.0.relu, body.1.fc, body.1.relu, body.2.fc, body.2.relu, head.fc */
    CHECK_EQ_INT(b.g.nnodes, 8);
    CHECK_STR_EQ(name_of(&b, 1), "body.0.fc");
    CHECK_STR_EQ(name_of(&b, 6), "body.2.relu");
    CHECK_STR_EQ(name_of(&b, 7), "head.fc");
    /* output [4, 2] */
    const struct memest_value *out = NULL;
    if (b.rc == 0) {
        out = memest_run_value(&b.r, b.g.outputs[0]);
        CHECK_EQ_INT(out->shape.ndim, 2);
        CHECK_EQ_INT(out->shape.size[0], 4);
        CHECK_EQ_INT(out->shape.size[1], 2);
    }
    drop(&b);

    /* --set overrides: depth 1, width 10: 8*10+10 + 10*2+2 = 112 */
    struct memest_override ov[] = {{"depth", "1", NULL}, {"width", "10", NULL}};
    build(&b, mlp, ov, 2, 1);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_EQ_U64(b.p.total, 112);
    drop(&b);

    /* Python's json words for non-finite numbers (json_load.c): read where
     * nothing is built with them, the numbers around them unchanged (fc1
     * 8*5+5 = 45, fc2 5*2+2 = 12: 57); refused where a value is built
     * with one (tests/errors/cases.tsv, nonfinite_*) */
    build(&b,
          "{\"variables\": {\"lim\": [1, Infinity, -2.5e0,NaN,-Infinity, \"NaN\"],"
          " \"w\": 5, \"d\": 2}, \"inputs\": [{\"name\": \"x\", \"shape\": [8]}],"
          " \"layers\": [{\"name\": \"fc1\", \"type\": \"linear\", \"out_features\": \"w\"},"
          "            {\"name\": \"fc2\", \"type\": \"linear\", \"out_features\": \"d\"}]}",
          NULL, 0, 1);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_EQ_U64(b.p.total, 57);
    drop(&b);

    /* an override of an unknown variable is a usage error */
    struct memest_override bad[] = {{"widht", "3", NULL}};
    build(&b, mlp, bad, 1, 1);
    CHECK_EQ_INT(b.rc, -1);
    CHECK_EQ_INT(b.err.code, MEMEST_ERR_USAGE);
    CHECK_CONTAINS(b.err.msg, "did you mean \"width\"");
    drop(&b);

    /* residual block with "if": when skipped, ds stands for the block input.
     * Params: a: 8*8+8 = 72 per instance; ds (first instance only) 8*8+8 = 72.
     * Two instances: 72 + 72 + 72 = 216. */
    build(&b,
          "{\"inputs\": [{\"name\": \"x\", \"shape\": [8]}],"
          " \"blocks\": {\"res\": {\"args\": {\"down\": false},"
          "   \"layers\": [{\"name\": \"a\", \"type\": \"linear\", \"out_features\": 8},"
          "                {\"name\": \"ds\", \"type\": \"linear\", \"inputs\": [\"x\"],"
          "                 \"out_features\": 8, \"if\": \"down\"},"
          "                {\"name\": \"sum\", \"type\": \"add\", \"inputs\": [\"a\", \"ds\"]}]}},"
          " \"layers\": [{\"name\": \"r\", \"type\": \"res\", \"repeat\": 2,"
          "               \"down\": \"repeat_index == 0\"}]}",
          NULL, 0, 2);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_EQ_U64(b.p.total, 216);
    /* nodes: x, r.0.a, r.0.ds, r.0.sum, r.1.a, r.1.sum */
    CHECK_EQ_INT(b.g.nnodes, 6);
    CHECK_STR_EQ(name_of(&b, 5), "r.1.sum");
    if (b.g.nnodes == 6) /* r.1.sum adds r.1.a and the block input r.0.sum */
        CHECK_EQ_INT(b.g.nodes[5].in[1].node, 3);
    drop(&b);

    /* weight tying counts once; frozen nodes are not trainable.
     * emb: Embedding(100, 8) = 800; head: Linear(8, 100, bias=False) tied = 0 more;
     * frozen linear 8->8 with bias: 72 frozen. Total 872, trainable 800. */
    build(&b,
          "{\"inputs\": [{\"name\": \"ids\", \"shape\": [5], \"dtype\": \"int64\"}],"
          " \"layers\": [{\"name\": \"emb\", \"type\": \"embedding\", \"num_embeddings\": 100,"
          "               \"embedding_dim\": 8},"
          "              {\"name\": \"mid\", \"type\": \"linear\", \"out_features\": 8,"
          "               \"trainable\": false},"
          "              {\"name\": \"head\", \"type\": \"linear\", \"out_features\": 100,"
          "               \"bias\": false, \"tie_weight\": \"emb\"}]}",
          NULL, 0, 3);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_EQ_U64(b.p.total, 872);
    CHECK_EQ_U64(b.p.trainable, 800);
    CHECK_EQ_U64(b.p.tensors, 3); /* emb.weight, mid.weight, mid.bias */
    CHECK_EQ_U64(memest_calc_grads(&b.r), 800 * 4);
    drop(&b);

    /* tie_params: a module called again (a recurrent cell) shares all its
     * parameters. cell: Linear(8, 8) = 64 + 8 = 72, once for its three calls;
     * norm: LayerNorm(8) = 8 + 8 = 16, once for two. Total 88 in 4 tensors;
     * their gradients (88 floats) once. */
    build(&b,
          "{\"inputs\": [{\"name\": \"x\", \"shape\": [8]}],"
          " \"layers\": [{\"name\": \"cell\", \"type\": \"linear\", \"out_features\": 8},"
          "              {\"name\": \"norm\", \"type\": \"layernorm\", \"normalized_shape\": [8]},"
          "              {\"name\": \"cell_1\", \"type\": \"linear\", \"out_features\": 8,"
          "               \"tie_params\": \"cell\"},"
          "              {\"name\": \"norm_1\", \"type\": \"layernorm\", \"normalized_shape\": [8],"
          "               \"tie_params\": \"norm\"},"
          "              {\"name\": \"cell_2\", \"type\": \"linear\", \"out_features\": 8,"
          "               \"tie_params\": \"cell\"}]}",
          NULL, 0, 3);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_EQ_U64(b.p.total, 88);
    CHECK_EQ_U64(b.p.tensors, 4);
    CHECK_EQ_U64(memest_calc_grads(&b.r), 88 * 4);
    drop(&b);

    /* default names are list indices, as nn.Sequential's */
    build(&b,
          "{\"inputs\": [{\"name\": \"x\", \"shape\": [3]}],"
          " \"layers\": [{\"type\": \"linear\", \"out_features\": 4}, {\"type\": \"relu\"}]}",
          NULL, 0, 1);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_STR_EQ(name_of(&b, 1), "0");
    CHECK_STR_EQ(name_of(&b, 2), "1");
    drop(&b);

    /* a sequence-first input: batch at dim 1 */
    build(&b,
          "{\"inputs\": [{\"name\": \"t\", \"shape\": [35], \"dtype\": \"int64\", \"batch_dim\": 1}],"
          " \"layers\": [{\"type\": \"embedding\", \"num_embeddings\": 10, \"embedding_dim\": 4}]}",
          NULL, 0, 20);
    CHECK_EQ_INT(b.rc, 0);
    if (b.rc == 0) {
        out = memest_run_value(&b.r, b.g.outputs[0]);
        CHECK_EQ_INT(out->shape.ndim, 3);
        CHECK_EQ_INT(out->shape.size[0], 35);
        CHECK_EQ_INT(out->shape.size[1], 20);
        CHECK_EQ_INT(out->shape.size[2], 4);
    }
    drop(&b);

    /* a block that uses itself through another is an error naming it */
    build(&b,
          "{\"inputs\": [{\"name\": \"x\", \"shape\": [3]}],"
          " \"blocks\": {\"a\": {\"layers\": [{\"type\": \"b\"}]}, \"b\": {\"layers\": [{\"type\": \"a\"}]}},"
          " \"layers\": [{\"name\": \"top\", \"type\": \"a\"}]}",
          NULL, 0, 1);
    CHECK_EQ_INT(b.rc, -1);
    CHECK_CONTAINS(b.err.msg, "uses itself");
    drop(&b);

    /* default names (the index, as nn.Sequential names children) are
     * references like any other: relu(x) + relu(relu(x)) of 8 features,
     * then a linear 8 -> 3 (8*3+3 = 27 parameters) on "0" (the first relu),
     * not on the add before it */
    build(&b,
          "{\"inputs\": [{\"name\": \"x\", \"shape\": [8]}],"
          " \"layers\": [{\"type\": \"relu\"}, {\"type\": \"relu\"},"
          "              {\"type\": \"add\", \"inputs\": [\"0\", \"1\"]},"
          "              {\"type\": \"linear\", \"inputs\": \"0\", \"out_features\": 3},"
          "              {\"type\": \"add\", \"inputs\": [\"2\", \"2\"]}],"
          " \"outputs\": [\"3\", \"4\"]}",
          NULL, 0, 2);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_EQ_U64(b.p.total, 27);
    if (b.rc == 0) {
        CHECK_EQ_INT(b.g.nnodes, 6);
        /* node 3 is the add, reading nodes 1 and 2 ("0" and "1") */
        CHECK_EQ_INT(b.g.nodes[3].in[0].node, 1);
        CHECK_EQ_INT(b.g.nodes[3].in[1].node, 2);
        /* the linear ("3") reads "0", node 1; the last add reads "2" twice */
        CHECK_EQ_INT(b.g.nodes[4].in[0].node, 1);
        CHECK_EQ_INT(b.g.nodes[5].in[0].node, 3);
        CHECK_EQ_INT(b.g.outputs[0].node, 4);
        CHECK_EQ_INT(b.g.outputs[1].node, 5);
    }
    drop(&b);

    /* 40 unnamed nodes in a chain (the old code formatted each default name
     * in a stack buffer that the name map kept: 29 or more gave a bogus
     * "duplicate node name"); a relu on each, then "39" is the last one */
    {
        char json[4096];
        size_t k = (size_t)snprintf(json, sizeof json, "{\"inputs\": [{\"name\": \"x\", \"shape\": [8]}], \"layers\": [");
        for (int i = 0; i < 40; i++)
            k += (size_t)snprintf(json + k, sizeof json - k, "{\"type\": \"relu\"},");
        snprintf(json + k, sizeof json - k, "{\"type\": \"add\", \"inputs\": [\"39\", \"7\"]}]}");
        build(&b, json, NULL, 0, 1);
        CHECK_EQ_INT(b.rc, 0);
        if (b.rc == 0) {
            CHECK_EQ_INT(b.g.nnodes, 42);
            CHECK_EQ_INT(b.g.nodes[41].in[0].node, 40);
            CHECK_EQ_INT(b.g.nodes[41].in[1].node, 8);
        }
        drop(&b);
    }

    /* the variables a model declares (--sweep-var's check): mlp has
     * "width" and "depth"; "widht" is two edits from "width", "zzz" is
     * near nothing; a model without "variables" has none */
    {
        struct memest_model m;
        struct memest_error err = {0};
        CHECK_EQ_INT(memest_model_read_string(mlp, strlen(mlp), "mlp.json", &m, &err), 0);
        const char *near = "unset";
        CHECK(memest_model_has_variable(&m, "depth", &near));
        CHECK_STR_EQ(near, "unset");
        CHECK(!memest_model_has_variable(&m, "widht", &near));
        CHECK_STR_EQ(near, "width");
        CHECK(!memest_model_has_variable(&m, "zzz", &near));
        CHECK(near == NULL);
        CHECK(!memest_model_has_variable(&m, "batch", NULL));
        memest_model_free(&m);
        const char *plain = "{\"inputs\": [{\"name\": \"x\", \"shape\": [8]}],"
                            " \"layers\": [{\"type\": \"relu\"}]}";
        CHECK_EQ_INT(memest_model_read_string(plain, strlen(plain), "plain.json", &m, &err), 0);
        CHECK(!memest_model_has_variable(&m, "width", &near));
        CHECK(near == NULL);
        memest_model_free(&m);
    }
    /* "let": derived variables, in order, over variables (overrides
     * applied) and earlier lets, usable in blocks and shapes; "checks".
     * heads 4, kv 0 -> kv_heads = 4; head = 32 // 4 = 8; kv = 4 * 8 = 32:
     * fc 32 -> 32: 32*32 + 32 = 1056; out [3, 32] */
    {
        const char *lm =
            "{\"variables\": {\"d\": 32, \"heads\": 4, \"kv\": 0, \"len\": 3, \"maxlen\": 8},"
            " \"let\": {\"kv_heads\": \"kv > 0 ? kv : heads\", \"head\": \"d // heads\","
            "           \"kv_size\": \"kv_heads * head\", \"wide\": \"kv_size > d\"},"
            " \"checks\": [{\"if\": \"len <= maxlen\", \"error\": \"len is longer than maxlen\"},"
            "              {\"if\": \"heads % kv_heads == 0\", \"error\": \"kv must divide heads\"}],"
            " \"inputs\": [{\"name\": \"x\", \"shape\": [\"len\", \"d\"]}],"
            " \"blocks\": {\"b\": {\"layers\": [{\"name\": \"fc\", \"type\": \"linear\","
            "   \"out_features\": \"kv_size\"}, {\"name\": \"r\", \"type\": \"relu\", \"if\": \"wide\"}]}},"
            " \"layers\": [{\"name\": \"blk\", \"type\": \"b\"}]}";
        build(&b, lm, NULL, 0, 2);
        CHECK_EQ_INT(b.rc, 0);
        CHECK_EQ_U64(b.p.total, 1056);
        CHECK_EQ_INT(b.g.nnodes, 2); /* x, blk.fc: wide is false (32 > 32) */
        if (b.rc == 0) {
            const struct memest_value *o = memest_run_value(&b.r, b.g.outputs[0]);
            CHECK_EQ_INT(o->shape.ndim, 3);
            CHECK_EQ_INT(o->shape.size[1], 3);
            CHECK_EQ_INT(o->shape.size[2], 32);
        }
        drop(&b);
        /* --set kv=2: kv_heads 2, kv_size 2*8 = 16: 32*16 + 16 = 528 */
        struct memest_override kv2[] = {{"kv", "2", NULL}};
        build(&b, lm, kv2, 1, 1);
        CHECK_EQ_INT(b.rc, 0);
        CHECK_EQ_U64(b.p.total, 528);
        drop(&b);
        /* --set heads=8 kv=8 d=64: kv_heads 8, head 64 // 8 = 8, kv_size 64
         * (wide: 64 > 64 is false): fc 64 -> 64: 64*64 + 64 = 4160 */
        struct memest_override h8[] = {{"heads", "8", NULL}, {"kv", "8", NULL}, {"d", "64", NULL}};
        build(&b, lm, h8, 3, 1);
        CHECK_EQ_INT(b.rc, 0);
        CHECK_EQ_U64(b.p.total, 4160);
        drop(&b);
        /* a failing check: the message, at checks[i]; from a --set: a usage
         * error naming it */
        struct memest_override kv3[] = {{"kv", "3", NULL}};
        build(&b, lm, kv3, 1, 1);
        CHECK_EQ_INT(b.rc, -1);
        CHECK_EQ_INT(b.err.code, MEMEST_ERR_USAGE);
        CHECK_STR_EQ(b.err.path, "checks[1]");
        CHECK_CONTAINS(b.err.msg, "--set kv=3: kv must divide heads");
        drop(&b);
        struct memest_override len9[] = {{"len", "9", NULL}};
        build(&b, lm, len9, 1, 1);
        CHECK_EQ_INT(b.rc, -1);
        CHECK_STR_EQ(b.err.path, "checks[0]");
        CHECK_CONTAINS(b.err.msg, "len is longer than maxlen");
        drop(&b);
        /* a let cannot be set */
        struct memest_override setlet[] = {{"head", "4", NULL}};
        build(&b, lm, setlet, 1, 1);
        CHECK_EQ_INT(b.rc, -1);
        CHECK_EQ_INT(b.err.code, MEMEST_ERR_USAGE);
        CHECK_CONTAINS(b.err.msg, "\"head\" is derived");
        drop(&b);
    }
    /* let and checks errors: a later let, an unknown name, a let named like
     * a variable, a condition that is not one, a check with no message, a
     * false check without overrides (a model error) */
    {
        static const struct { const char *json, *path, *frag; } bad_cases[] = {
            {"{\"variables\": {\"a\": 1}, \"let\": {\"b\": \"c + 1\", \"c\": \"a\"}",
             "let.b", "\"c + 1\": unknown variable 'c' (a \"let\" is an expression over the variables and the lets before it)"},
            {"{\"let\": {\"b\": \"b + 1\"}", "let.b", "unknown variable 'b'"},
            {"{\"variables\": {\"a\": 1}, \"let\": {\"a\": \"2\"}", "let.a", "already a variable"},
            {"{\"let\": {\"batch\": 2}", "let.batch", "reserved"},
            {"{\"let\": {\"a-b\": 2}", "let.a-b", "letters, digits and '_'"},
            {"{\"let\": [1]", "let", "must be an object"},
            {"{\"let\": {\"a\": [1]}", "let.a", "expected an expression, a number or a boolean, got a list"},
            {"{\"checks\": [{\"if\": \"1 + 1\", \"error\": \"x\"}]", "checks[0].if",
             "expected a condition (true or false), got 2"},
            {"{\"checks\": [{\"if\": true}]", "checks[0]", "non-empty message"},
            {"{\"checks\": [{\"if\": true, \"error\": \"x\", \"iff\": 1}]", "checks[0].iff",
             "unknown field"},
            {"{\"checks\": {}", "checks", "must be a list"},
            {"{\"variables\": {\"a\": 1}, \"let\": {\"two\": \"a * 2\"},"
             " \"checks\": [{\"if\": \"two == 3\", \"error\": \"two is not 3\"}]",
             "checks[0]", "two is not 3"},
        };
        for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
            char json[600];
            snprintf(json, sizeof json, "%s, \"inputs\": [{\"name\": \"x\", \"shape\": [4]}],"
                     " \"layers\": [{\"type\": \"relu\"}]}", bad_cases[i].json);
            build(&b, json, NULL, 0, 1);
            CHECK_EQ_INT(b.rc, -1);
            CHECK_EQ_INT(b.err.code, MEMEST_ERR_SCHEMA);
            CHECK_STR_EQ(b.err.path, bad_cases[i].path);
            CHECK_CONTAINS(b.err.msg, bad_cases[i].frag);
            drop(&b);
        }
    }
    return CHECK_DONE();
}
