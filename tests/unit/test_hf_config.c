/* test_hf_config.c - Hugging Face config.json files read through their
 * architecture template (src/model/hf_config.c), with the test-only
 * template tests/hf/arch/memest_test_lm.json on MEMEST_ARCH_PATH. The
 * parameter counts are hand counts of that template, written out below. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memest/calc.h"
#include "memest/model.h"
#include "memest/run.h"

struct hf_built {
    struct memest_model m;
    struct memest_graph g;
    struct memest_run r;
    struct memest_param_totals p;
    struct memest_error err;
    int rc;
};

static void load(struct hf_built *b, const char *path, const struct memest_override *ov, int nov)
{
    memset(b, 0, sizeof *b);
    struct memest_run_opts o = {.batch = 1, .dtype = MEMEST_F32};
    b->rc = memest_model_read_file(path, &b->m, &b->err);
    if (b->rc == 0)
        b->rc = memest_model_build(&b->m, ov, nov, &b->g, &b->err);
    if (b->rc == 0)
        b->rc = memest_run_infer(&b->r, &b->g, &o, &b->err);
    if (b->rc == 0)
        b->rc = memest_calc_params(&b->r, &b->p, &b->err);
    if (b->rc != 0) {
        char msg[1200];
        memest_error_format(&b->err, msg, sizeof msg);
        fprintf(stderr, "(error) %s\n", msg);
    }
}

static void unload(struct hf_built *b)
{
    memest_run_free(&b->r);
    memest_graph_free(&b->g);
    memest_model_free(&b->m);
}

/* The value the config gives the variable `name`, or NULL. */
static const char *preset(const struct memest_model *m, const char *name)
{
    const char *v = NULL;
    for (int i = 0; i < m->npreset; i++)
        if (strcmp(m->preset[i].name, name) == 0)
            v = m->preset[i].value;
    return v;
}

static bool has_node(const struct memest_graph *g, const char *name)
{
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0)
            return true;
    return false;
}

int main(void)
{
    struct hf_built b;
    CHECK_EQ_INT(setenv("MEMEST_ARCH_PATH", "tests/hf/no_such_dir::tests/hf/arch", 1), 0);

    /* good.json: vocab 1000, hidden 64, intermediate 256, 3 layers, 8 heads,
     * 2 kv heads, head_dim null (the template's 0: hidden // heads = 8),
     * tied lm_head. Per layer: 2 layernorms 2*128, v_proj 64*(2*8) = 1024,
     * o_proj 16*64 = 1024, gate/up/down 3*64*256 = 49152: 51456; 3 layers
     * 154368, embedding 1000*64 = 64000, final norm 128, lm_head tied 0:
     * 218496. */
    load(&b, "tests/hf/good.json", NULL, 0);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_EQ_U64(b.p.total, 218496);
    CHECK(b.m.arch && strstr(b.m.arch, "tests/hf/arch/memest_test_lm.json"));
    CHECK_STR_EQ(b.m.file, "tests/hf/good.json");
    CHECK(b.m.has_dtype);
    CHECK_EQ_INT(b.m.dtype, MEMEST_BF16);
    CHECK_STR_EQ(preset(&b.m, "hidden_size"), "64");
    CHECK_STR_EQ(preset(&b.m, "rms_norm_eps"), "1e-05");
    CHECK_STR_EQ(preset(&b.m, "act_silu"), "true");        /* hidden_act "silu" */
    CHECK_STR_EQ(preset(&b.m, "head_dim"), "0");           /* null: None, the template's 0 */
    CHECK_STR_EQ(b.g.name, "memest_test_lm");
    CHECK(has_node(&b.g, "model.layers.2.mlp.act_fn"));
    unload(&b);

    /* the command line wins over the config: --set tie_word_embeddings=false
     * adds lm_head 64*1000 = 64000 -> 282496 */
    struct memest_override untie[] = {{"tie_word_embeddings", "false", NULL}};
    load(&b, "tests/hf/good.json", untie, 1);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_EQ_U64(b.p.total, 282496);
    unload(&b);

    /* untied.json: gelu, untied, rope_scaling {"type": "linear"}, kv heads
     * null (0: kv_heads = 8, v_proj 64*64 = 4096, o_proj 4096), dtype auto.
     * Per layer 256 + 8192 + 49152 = 57600; 3 layers 172800, + 64000 +
     * 128 + lm_head 64000 = 300928 */
    load(&b, "tests/hf/untied.json", NULL, 0);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_EQ_U64(b.p.total, 300928);
    CHECK(!b.m.has_dtype);
    CHECK(has_node(&b.g, "model.layers.0.mlp.act_gelu"));
    CHECK(!has_node(&b.g, "model.layers.0.mlp.act_fn"));
    unload(&b);

    /* a directory stands for its config.json */
    load(&b, "tests/hf/dir", NULL, 0);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_STR_EQ(b.m.file, "tests/hf/dir/config.json");
    CHECK_EQ_U64(b.p.total, 218496);
    unload(&b);

    /* an unknown key, at the top or in a known object: noted, not refused
     * (the command warns, or refuses it with --strict-config) */
    static const struct { const char *file, *key, *frag; } unknown[] = {
        {"errors/unknown_key", "sliding_window", "unknown key for model_type \"memest_test_lm\" "
         "(neither in the template tests/hf/arch/memest_test_lm.json nor a generic "
         "PretrainedConfig key)"},
        {"errors/rope_unknown_field", "rope_scaling.beta_fast", "unknown key for model_type "
         "\"memest_test_lm\" (the template tests/hf/arch/memest_test_lm.json does not list it)"},
        {"policy/attn_implementation", "attn_implementation", "--attention"},
        /* in a sub-config read by a key set ({"rest": ...}, models/arch/llava.json): its path;
         * the sub-config's generic keys (architectures, _name_or_path, torch_dtype, dtype) are
         * known */
        {"errors/llava_unknown_sub", "vision_config.weird", "unknown key for model_type \"llava\" "
         "(the template models/arch/llava.json (built in) does not list it)"},
    };
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++) {
        char path[200];
        snprintf(path, sizeof path, "tests/hf/%s.json", unknown[i].file);
        load(&b, path, NULL, 0);
        CHECK_EQ_INT(b.rc, 0);
        CHECK_EQ_INT(b.m.nunknown, 1);
        CHECK_EQ_INT(b.m.nunknown_kept, 1);
        CHECK_STR_EQ(b.m.unknown[0].key, unknown[i].key);
        CHECK_CONTAINS(b.m.unknown[0].msg, unknown[i].frag);
        unload(&b);
    }
    /* 18 of them: the first 8 kept, in the file's order, all counted */
    load(&b, "tests/hf/policy/many_unknown.json", NULL, 0);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_EQ_INT(b.m.nunknown, 18);
    CHECK_EQ_INT(b.m.nunknown_kept, MEMEST_MAX_UNKNOWN_KEYS);
    CHECK_STR_EQ(b.m.unknown[0].key, "extra_00");
    CHECK_STR_EQ(b.m.unknown[MEMEST_MAX_UNKNOWN_KEYS - 1].key, "extra_07");
    unload(&b);
    /* Python's Infinity, -Infinity and NaN in keys that change no memory
     * (null specs, a generic key, a nested field): read and ignored; the
     * template's variables keep the config's finite values */
    load(&b, "tests/hf/policy/infinity_free.json", NULL, 0);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_EQ_INT(b.m.nunknown, 0);
    CHECK_STR_EQ(preset(&b.m, "num_hidden_layers"), "3");
    CHECK_STR_EQ(preset(&b.m, "rms_norm_eps"), "1e-05");
    unload(&b);

    /* nested configs (hf_config.outer, {"config": ...}: models/arch/gemma3.json,
     * built in): text_config read with the template's keys, vision_config with
     * its own specs; their unknown keys named by their paths, the generic
     * keys known there too, a sub-config's torch_dtype not the model's; a
     * text key at the top level (no Gemma3Config key) is unknown */
    load(&b, "tests/hf/policy/gemma3_nested.json", NULL, 0);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_STR_EQ(preset(&b.m, "hidden_size"), "64");
    CHECK_STR_EQ(preset(&b.m, "vision_hidden_size"), "32");
    CHECK_STR_EQ(preset(&b.m, "mm_tokens_per_image"), "4");
    CHECK(!b.m.has_dtype);
    CHECK_EQ_INT(b.m.nunknown, 3);
    CHECK_STR_EQ(b.m.unknown[0].key, "hidden_size");
    CHECK_STR_EQ(b.m.unknown[1].key, "text_config.foo");
    CHECK_STR_EQ(b.m.unknown[2].key, "vision_config.bar");
    CHECK(has_node(&b.g, "vision_tower.vision_model.encoder.layers.1.mlp.fc2"));
    unload(&b);

    /* errors: one per kind, each naming the key's JSON path */
    static const struct { const char *file, *path, *frag; int code; } bad[] = {
        {"rope_type", "rope_scaling.rope_type", "\"yarn\" is not supported for model_type "
         "\"memest_test_lm\" (supported: llama3, linear)", MEMEST_ERR_SCHEMA},
        /* the supported list has the built-in templates too */
        {"model_type", "model_type", "memest_test_lm", MEMEST_ERR_SCHEMA},
        {"wrong_kind", "hidden_size", "expected a number", MEMEST_ERR_SCHEMA},
        {"quantized", "quantization_config", "quant_method: memest models", MEMEST_ERR_SCHEMA},
        {"hidden_act", "hidden_act", "\"relu\" is not supported", MEMEST_ERR_SCHEMA},
        {"dtype", "torch_dtype", "\"float64\" is not supported", MEMEST_ERR_SCHEMA},
        /* a size of 0: refused at the key, where transformers builds no model */
        {"bad_value", "num_hidden_layers", "expected a whole number of at least 1 for model_type "
         "\"memest_test_lm\", got 0", MEMEST_ERR_SCHEMA},
        /* values that fail in the template: model errors naming the key */
        {"huge_repeat", "layers[1].repeat", "the config's num_hidden_layers=300000: must be an "
         "integer between 1 and 250000", MEMEST_ERR_SCHEMA},
        {"seq_check", "checks[0]", "the config's max_position_embeddings=8: seq_len is longer",
         MEMEST_ERR_SCHEMA},
        /* a non-finite number where the model is built with it, and a model
         * type without a template whose config names custom code */
        {"../policy/infinity_size", "hidden_size", "Infinity is not a finite number: the key "
         "sets the template's variable \"hidden_size\"", MEMEST_ERR_SCHEMA},
        {"../policy/nan_size", "num_hidden_layers", "NaN is not a finite number",
         MEMEST_ERR_SCHEMA},
        {"../policy/neg_infinity_eps", "rms_norm_eps", "-Infinity is not a finite number",
         MEMEST_ERR_SCHEMA},
        {"../policy/nan_enum", "hidden_act", "NaN is not supported", MEMEST_ERR_SCHEMA},
        {"../policy/auto_map_no_template", "auto_map", "uses custom code", MEMEST_ERR_SCHEMA},
        /* a composite config's sub-config, by its own fields: LLaVA's text model is Llama's */
        {"llava_text_model_type", "text_config.model_type", "\"mistral\" is not supported for "
         "model_type \"llava\" (supported: llama)", MEMEST_ERR_SCHEMA},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char path[200];
        snprintf(path, sizeof path, "tests/hf/errors/%s.json", bad[i].file);
        load(&b, path, NULL, 0);
        CHECK_EQ_INT(b.rc, -1);
        CHECK_EQ_INT(b.err.code, bad[i].code);
        CHECK_STR_EQ(b.err.path, bad[i].path);
        CHECK_CONTAINS(b.err.msg, bad[i].frag);
        CHECK(strstr(b.err.file, path) == b.err.file);
        unload(&b);
    }

    /* the template's faults name the template and the config */
    CHECK_EQ_INT(setenv("MEMEST_ARCH_PATH", "tests/hf/badarch:tests/hf/arch", 1), 0);
    load(&b, "tests/hf/good.json", NULL, 0);
    CHECK_EQ_INT(b.rc, -1);
    CHECK_STR_EQ(b.err.file, "tests/hf/badarch/memest_test_lm.json");
    CHECK_STR_EQ(b.err.path, "hf_config.keys.hidden_size");
    CHECK_CONTAINS(b.err.msg, "in the architecture template for tests/hf/good.json");
    unload(&b);
    load(&b, "tests/hf/errors/broken.json", NULL, 0);
    CHECK_EQ_INT(b.rc, -1);
    CHECK_STR_EQ(b.err.file,
                 "tests/hf/errors/broken.json [template tests/hf/badarch/memest_test_broken.json]");
    CHECK_CONTAINS(b.err.msg, "unknown variable 'kv_sizee'");
    unload(&b);
    load(&b, "tests/hf/errors/rest_set.json", NULL, 0);
    CHECK_EQ_INT(b.rc, -1);
    CHECK_STR_EQ(b.err.path, "hf_config.top.text_config");
    CHECK_CONTAINS(b.err.msg, "\"rest\" must name \"keys\" or a member of hf_config.key_sets");
    unload(&b);
    load(&b, "tests/hf/errors/ckpt_transposed.json", NULL, 0);
    CHECK_EQ_INT(b.rc, -1);
    CHECK_EQ_INT(b.err.code, MEMEST_ERR_SCHEMA);
    CHECK_STR_EQ(b.err.path, "hf_config.checkpoint");
    CHECK_CONTAINS(b.err.msg, "\"transposed\": expected transposed (a list of module name patterns)");
    unload(&b);

    /* a composite config (models/arch/llava.json's top): LlavaConfig's keys at the top, text_config
     * by the keys of models/arch/llama.json, vision_config by lib/vision.json's key set clip_vision */
    CHECK_EQ_INT(unsetenv("MEMEST_ARCH_PATH"), 0);
    load(&b, "models/hf/llava-1.5-7b-hf.json", NULL, 0);
    CHECK_EQ_INT(b.rc, 0);
    CHECK_EQ_INT(b.m.nunknown, 0);
    CHECK_STR_EQ(preset(&b.m, "vocab_size"), "32064");
    CHECK_STR_EQ(preset(&b.m, "rms_norm_eps"), "1e-05");
    CHECK_STR_EQ(preset(&b.m, "vision_hidden_size"), "1024");
    CHECK_STR_EQ(preset(&b.m, "vision_feature_layer"), "-2");
    CHECK_STR_EQ(preset(&b.m, "select_full"), "false");
    CHECK_EQ_U64(b.p.total, 7063427072ULL);
    unload(&b);

    /* no MEMEST_ARCH_PATH: the built-in templates only */
    CHECK_EQ_INT(unsetenv("MEMEST_ARCH_PATH"), 0);
    load(&b, "tests/hf/good.json", NULL, 0);
    CHECK_EQ_INT(b.rc, -1);
    CHECK_CONTAINS(b.err.msg, "no architecture template for model_type \"memest_test_lm\"");
    unload(&b);
    return CHECK_DONE();
}
