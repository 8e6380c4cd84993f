/* test_quant.c - quantised linear weights (src/ops/quant.c, the pass of
 * src/model/quantize.c), against figures written out by hand from the
 * libraries' allocation code:
 *   - bitsandbytes 0.49.2 functional.quantize_4bit / quantize_blockwise and
 *     backends/cuda/ops.py (nf4 with block size 64, with and without double
 *     quantisation), Int8Params._quantize (int8 row-wise: CB + SCB);
 *   - AutoGPTQ qlinear_cuda.QuantLinear (4 bits, group 128) and AutoAWQ
 *     WQLinear_GEMM buffers;
 *   - Llama-2-7B (models/hf/llama-2-7b.json, float16) in nf4, nf4 + double
 *     quantisation, int8 and GPTQ 4-bit: the whole parameter bytes, layer by
 *     layer below;
 *   - the transients of one layer against a replica of bitsandbytes 0.49.2's
 *     code in plain PyTorch 2.6 (tests/tools/quant_replica.py,
 *     tests/reference/quant_replica.json): exact;
 *   - which layers the pass quantises (transformers v4.48.0
 *     _replace_with_bnb_linear and get_keys_to_not_convert), frozen weights,
 *     and the transients of MatMul4Bit / MatMul8bitLt.
 * Runs from the source directory. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "reference_json.h"
#include "memest/calc.h"
#include "memest/model.h"
#include "memest/quant.h"
#include "memest/quantize.h"
#include "memest/run.h"

static uint64_t layout_bytes(enum memest_wformat f, const struct memest_quant_params *p,
                             int64_t out, int64_t in, bool bias)
{
    struct memest_quant_layout l;
    char why[160];
    CHECK(memest_quant_layout(f, p, out, in, bias, &l, why, sizeof why) == 0);
    return memest_quant_layout_bytes(&l);
}

static void test_formulas(void)
{
    struct memest_quant_params p;
    memest_quant_defaults(&p);
    CHECK_EQ_INT(p.blocksize, 64);
    CHECK_EQ_INT(p.group_size, 128);
    CHECK(!p.double_quant);

    /* nf4, block 64, 4096 x 4096 (n = 16,777,216, 262,144 blocks):
     * packed uint8 [(n + 1) // 2, 1]        8,388,608
     * absmax float32 [262,144]              1,048,576
     * quant_map (get_4bit_type) float32 [16]       64 */
    CHECK_EQ_U64(layout_bytes(MEMEST_WF_NF4, &p, 4096, 4096, false),
                 8388608ull + 1048576ull + 64ull);
    /* with double quantisation:
     * packed                                8,388,608
     * absmax quantised: uint8 [262,144]       262,144
     * quant_map float32 [16]                       64
     * nested absmax float32 [262,144 / 256 = 1,024]  4,096
     * nested code float32 [256] (copy per layer)  1,024
     * offset, a 0-d float32                         4 */
    p.double_quant = true;
    CHECK_EQ_U64(layout_bytes(MEMEST_WF_NF4, &p, 4096, 4096, false),
                 8388608ull + 262144ull + 64ull + 4096ull + 1024ull + 4ull);
    /* 11008 x 4096 (n = 45,088,768): 704,512 blocks, ceil(704,512 / 256)
     * = 2,752 nested blocks */
    CHECK_EQ_U64(layout_bytes(MEMEST_WF_NF4, &p, 11008, 4096, false),
                 22544384ull + 704512ull + 64ull + 2752ull * 4 + 1024ull + 4ull);
    /* an odd count: 3 x 5 = 15 values -> 8 bytes, one block of 64 */
    CHECK_EQ_U64(layout_bytes(MEMEST_WF_FP4, &p, 3, 5, false), 8ull + 1 + 64 + 4 + 1024 + 4);
    /* bnb_4bit_quant_storage bfloat16: (n + 1) // 4 elements of 2 bytes */
    struct memest_quant_params ps = p;
    ps.quant_storage = (uint8_t)(MEMEST_BF16 + 1);
    struct memest_quant_layout l;
    char why[160];
    CHECK(memest_quant_layout(MEMEST_WF_NF4, &ps, 4096, 4096, false, &l, why, sizeof why) == 0);
    CHECK_EQ_U64((uint64_t)l.t[0].size[0], 4194304ull);
    CHECK_EQ_INT(l.t[0].dtype, MEMEST_BF16);
    CHECK(!l.buffers);

    /* int8 row-wise, out 11008, in 4096: CB int8 [11008, 4096] 45,088,768
     * + SCB float32 [11008] 44,032 */
    CHECK_EQ_U64(layout_bytes(MEMEST_WF_INT8, &p, 11008, 4096, false), 45088768ull + 44032ull);

    /* GPTQ 4-bit, group 128, 4096 -> 4096:
     * qweight int32 [4096 // 32 * 4 = 512, 4096]     8,388,608
     * qzeros int32 [ceil(4096 / 128) = 32, 4096 // 32 * 4 = 512]  65,536
     * scales float16 [32, 4096]                        262,144
     * g_idx int32 [4096]                                16,384 */
    CHECK_EQ_U64(layout_bytes(MEMEST_WF_GPTQ4, &p, 4096, 4096, false),
                 8388608ull + 65536ull + 262144ull + 16384ull);
    /* down_proj, in 11008: qweight [1376, 4096] 22,544,384; 86 groups
     * (ceil(11008 / 128)): qzeros [86, 512] 176,128, scales [86, 4096]
     * 704,512; g_idx [11008] 44,032; a bias float16 [4096] 8,192 */
    CHECK_EQ_U64(layout_bytes(MEMEST_WF_GPTQ4, &p, 4096, 11008, true),
                 22544384ull + 176128ull + 704512ull + 44032ull + 8192ull);
    /* group -1: one group per row of in_features */
    struct memest_quant_params pg = p;
    pg.group_size = -1;
    CHECK_EQ_U64(layout_bytes(MEMEST_WF_GPTQ4, &pg, 4096, 4096, false),
                 8388608ull + 1ull * 512 * 4 + 1ull * 4096 * 2 + 16384ull);
    /* AWQ GEMM, group 128, 4096 -> 4096: qweight int32 [4096, 512]
     * 8,388,608, qzeros int32 [32, 512] 65,536, scales float16 [32, 4096]
     * 262,144; no g_idx */
    CHECK_EQ_U64(layout_bytes(MEMEST_WF_AWQ4, &p, 4096, 4096, false),
                 8388608ull + 65536ull + 262144ull);
    /* WQLinear_GEMM's asserts */
    CHECK(memest_quant_layout(MEMEST_WF_AWQ4, &p, 4100, 4096, false, &l, why, sizeof why) != 0);
    CHECK_CONTAINS(why, "divisible");
    CHECK(memest_quant_layout(MEMEST_WF_AWQ4, &p, 4096, 4000, false, &l, why, sizeof why) != 0);

    /* MXFP4 (Mxfp4GptOssExperts), gate_up_proj of gpt-oss: out 5760, in
     * 2880: blocks uint8 [5760, 1440] 8,294,400, scales uint8 [5760, 90]
     * 518,400, the float32 bias [5760] 23,040; in_features a multiple of 32 */
    CHECK_EQ_U64(layout_bytes(MEMEST_WF_MXFP4, &p, 5760, 2880, true), 8294400ull + 518400ull + 23040ull);
    CHECK(memest_quant_layout(MEMEST_WF_MXFP4, &p, 64, 48, false, &l, why, sizeof why) != 0);
    CHECK_CONTAINS(why, "multiple of 32");
    /* FP8 (FP8Linear), blocks [128, 128], 300 x 200: float8 [300, 200]
     * 60,000 and weight_scale_inv float32 [3, 2] 24; the bias is the
     * model's, not the layout's */
    CHECK_EQ_INT(p.fp8_block[0], 128);
    CHECK_EQ_U64(layout_bytes(MEMEST_WF_FP8, &p, 300, 200, true), 60000ull + 24ull);
    struct memest_quant_params p8 = p;
    p8.fp8_block[0] = 64;
    p8.fp8_block[1] = 256;
    CHECK_EQ_U64(layout_bytes(MEMEST_WF_FP8, &p8, 300, 200, false), 60000ull + 5ull * 1 * 4);
    /* NVFP4 (ModelOpt, group 16), 4096 x 4096: weight uint8 [4096, 2048]
     * 8,388,608, weight_scale float8 [4096, 256] 1,048,576, weight_scale_2
     * and input_scale float32 [1] 8; in_features a multiple of 16 */
    CHECK_EQ_INT(p.nvfp4_group, 16);
    CHECK_EQ_U64(layout_bytes(MEMEST_WF_NVFP4, &p, 4096, 4096, false), 8388608ull + 1048576ull + 8ull);
    CHECK(memest_quant_layout(MEMEST_WF_NVFP4, &p, 64, 40, false, &l, why, sizeof why) != 0);
    CHECK_CONTAINS(why, "multiple of 16");
}

static void test_transients(void)
{
    struct memest_quant_params p;
    memest_quant_defaults(&p);
    p.double_quant = true;
    p.compute_dtype = (uint8_t)(MEMEST_BF16 + 1);
    struct memest_quant_transient t;
    /* Each figure is the largest live set of the layer's code less its
     * output (forward) or its input's gradient (backward).
     * QLoRA's usual set-up: bf16 model, bf16 compute, 2048 rows, 4096 ->
     * 4096, input requiring grad. Forward: the nested absmax float32
     * [262,144] (1,048,576) with the dequantised bf16 weight (33,554,432),
     * then that weight with the output [2048, 4096] bf16 (16,777,216):
     * 50,331,648 - 16,777,216. Nothing saved (MatMul4Bit keeps only the
     * packed B). The backward dequantises again: the weight with grad_A
     * (16,777,216) less grad_A. */
    memest_quant_transient(MEMEST_WF_NF4, &p, 4096, 4096, 2048, MEMEST_BF16, MEMEST_BF16, true,
                           &t);
    CHECK_EQ_U64(t.fwd, 33554432ull + 16777216ull - 16777216ull);
    CHECK_EQ_U64(t.bwd, 33554432ull);
    CHECK_EQ_U64(t.saved, 0);
    CHECK(!t.saves_input && !t.gemv);
    /* the config's default compute dtype, float32, on an fp16 model (the
     * I2 set-up), no grad: x.to(float32) [2048, 4096] 33,554,432 lives
     * through the forward; at the weight's cast the fp16 dequantised
     * weight 33,554,432 and its float32 copy 67,108,864 are alive too
     * (as much as the float32 copy with the float32 result 33,554,432):
     * 134,217,728, less the fp16 output 16,777,216 */
    p.compute_dtype = 0;
    p.double_quant = false;
    memest_quant_transient(MEMEST_WF_NF4, &p, 4096, 4096, 2048, MEMEST_F16, MEMEST_F16, false,
                           &t);
    CHECK_EQ_U64(t.fwd, 33554432ull + 33554432ull + 67108864ull - 16777216ull);
    CHECK_EQ_U64(t.bwd, 0);
    /* one token without grad: gemv_4bit, x.to(float32) [1, 4096] 16,384
     * and the float32 result [1, 4096] 16,384, no dequantised weight; then
     * the fp16 output 8,192 with both, less itself */
    memest_quant_transient(MEMEST_WF_NF4, &p, 4096, 4096, 1, MEMEST_F16, MEMEST_F16, false, &t);
    CHECK(t.gemv);
    CHECK_EQ_U64(t.fwd, 16384ull + 16384ull);
    /* int8, fp16 input, 2048 rows, 4096 -> 4096: the outlier test (SCA
     * float32 8,192, CA int8 8,388,608, abs fp16 16,777,216 and the bool
     * mask 8,388,608) is below CA + SCA + the int32 product [2048, 4096]
     * 33,554,432 + the fp16 output 16,777,216 (less the output); the node
     * saves its input; the backward's CB copy in fp16 [4096, 4096]
     * 33,554,432 with grad_A [2048, 4096] 16,777,216 (less grad_A) is above
     * CB with SCB / 127 float32 [4096, 1] 16,384 */
    memest_quant_transient(MEMEST_WF_INT8, &p, 4096, 4096, 2048, MEMEST_F16, MEMEST_F16, true,
                           &t);
    CHECK_EQ_U64(t.fwd, 8388608ull + 8192ull + 33554432ull);
    CHECK(t.saves_input);
    CHECK_EQ_U64(t.bwd, 33554432ull);
    /* GPTQ's PyTorch path under grad saves the fp16 dequantised weight */
    memest_quant_transient(MEMEST_WF_GPTQ4, &p, 4096, 4096, 16, MEMEST_F16, MEMEST_F16, true, &t);
    CHECK_EQ_U64(t.saved, 33554432ull);
    /* ... and for fewer than 128 rows without grad calls its kernel */
    memest_quant_transient(MEMEST_WF_GPTQ4, &p, 4096, 4096, 16, MEMEST_F16, MEMEST_F16, false,
                           &t);
    CHECK_EQ_U64(t.fwd, 0);
    memest_quant_transient(MEMEST_WF_AWQ4, &p, 4096, 4096, 16, MEMEST_F16, MEMEST_F16, true, &t);
    CHECK(t.no_grad);
}

/* Builds Llama-2-7B, runs the pass with q and infers in float16. */
static int llama(const struct memest_quant_cfg *q, struct memest_model *m, struct memest_graph *g,
                 struct memest_run *r, uint32_t *count)
{
    struct memest_error err = {0};
    struct memest_run_opts o = {.batch = 1, .dtype = MEMEST_F16};
    if (memest_model_read_file("models/hf/llama-2-7b.json", m, &err) != 0)
        return -1;
    if (memest_model_build(m, NULL, 0, g, &err) != 0 ||
        memest_quantize(g, q, MEMEST_F16, count, &err) != 0 ||
        memest_run_infer(r, g, &o, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return 0;
}

static void done(struct memest_model *m, struct memest_graph *g, struct memest_run *r)
{
    memest_run_free(r);
    memest_graph_free(g);
    memest_model_free(m);
}

/* Llama-2-7B: hidden 4096, intermediate 11008, 32 layers, vocabulary
 * 32,000. Per layer: q, k, v, o [4096, 4096] and gate, up [11008, 4096],
 * down [4096, 11008]: 202,375,168 weights in 7 quantised layers, 224 in
 * all; left dense in float16: embed_tokens and lm_head (2 x 131,072,000)
 * and 65 RMSNorm weights of 4096: 262,410,240 values, 524,820,480 bytes. */
static void test_llama(void)
{
    const uint64_t dense = 524820480ull;
    struct memest_param_totals t;
    struct memest_error err = {0};
    struct memest_model m;
    struct memest_graph g;
    struct memest_run r = {0};
    uint32_t count;

    /* nf4 without double quantisation, per layer: packed 4 x 8,388,608 +
     * 3 x 22,544,384 = 101,187,584; absmax float32 4 x 1,048,576 + 3 x
     * 2,818,048 = 12,648,448; quant maps 7 x 64 = 448 */
    struct memest_quant_cfg q = {.format = MEMEST_WF_NF4};
    CHECK(llama(&q, &m, &g, &r, &count) == 0);
    CHECK_EQ_INT(count, 224);
    CHECK(memest_calc_params(&r, &t, &err) == 0);
    CHECK_EQ_U64(t.bytes, dense + 32ull * (101187584ull + 12648448ull + 448ull));
    CHECK_EQ_U64(t.total, 6738415616ull);   /* counted as transformers counts them */
    CHECK_EQ_U64(t.frozen, 6476005376ull);  /* Params4bit: requires_grad=False */
    CHECK_EQ_U64(t.trainable_bytes, dense);
    /* the head and the embeddings stay dense; q_proj is quantised */
    int64_t head = memest_graph_output_head(&g);
    CHECK(head >= 0 && g.nodes[head].wformat == MEMEST_WF_DENSE);
    int64_t qp = memest_graph_find(&g, "model.layers.0.self_attn.q_proj");
    CHECK(qp >= 0 && g.nodes[qp].wformat == MEMEST_WF_NF4);
    /* a frozen nf4 linear saves nothing (MatMul4Bit keeps only B) */
    CHECK_EQ_U64(r.nodes[qp].act_bytes, 0);
    done(&m, &g, &r);

    /* nf4 + double quantisation, per layer: packed 101,187,584; absmax
     * uint8 4 x 262,144 + 3 x 704,512 = 3,162,112; quant maps 448; nested
     * absmax 4 x 4,096 + 3 x 11,008 = 49,408; nested codes 7 x 1,024 =
     * 7,168; offsets 7 x 4 = 28 */
    r = (struct memest_run){0};
    q.dq_set = q.p.double_quant = true;
    CHECK(llama(&q, &m, &g, &r, &count) == 0);
    CHECK(memest_calc_params(&r, &t, &err) == 0);
    CHECK_EQ_U64(t.bytes, dense + 32ull * (101187584ull + 3162112ull + 448ull + 49408ull +
                                           7168ull + 28ull));
    done(&m, &g, &r);

    /* int8: CB 202,375,168 and SCB float32 per row 4 x (4 x 4096 + 2 x
     * 11008 + 4096) = 169,984 per layer */
    r = (struct memest_run){0};
    q = (struct memest_quant_cfg){.format = MEMEST_WF_INT8};
    CHECK(llama(&q, &m, &g, &r, &count) == 0);
    CHECK(memest_calc_params(&r, &t, &err) == 0);
    CHECK_EQ_U64(t.bytes, dense + 32ull * (202375168ull + 169984ull));
    done(&m, &g, &r);

    /* GPTQ 4-bit, group 128, as buffers: per layer qweight 4 x 8,388,608 +
     * 2 x 22,544,384 (gate, up: [512, 11008]) + 22,544,384 (down: [1376,
     * 4096]); qzeros 4 x 65,536 + 2 x 32 x 1,376 x 4 + 86 x 512 x 4; scales
     * 4 x 262,144 + 2 x 32 x 11,008 x 2 + 86 x 4,096 x 2; g_idx 6 x 16,384
     * + 44,032. The parameters are the dense ones; the buffers add the
     * rotary inv_freq (64 float32). */
    r = (struct memest_run){0};
    q = (struct memest_quant_cfg){.format = MEMEST_WF_GPTQ4};
    CHECK(llama(&q, &m, &g, &r, &count) == 0);
    CHECK(memest_calc_params(&r, &t, &err) == 0);
    CHECK_EQ_U64(t.bytes, dense);
    uint64_t layer = 4ull * 8388608 + 3ull * 22544384 + 4ull * 65536 + 2ull * 32 * 1376 * 4 +
                     86ull * 512 * 4 + 4ull * 262144 + 2ull * 32 * 11008 * 2 + 86ull * 4096 * 2 +
                     6ull * 16384 + 44032ull;
    CHECK_EQ_U64(t.buffer_bytes, 32ull * layer + 256ull);
    CHECK_EQ_U64(t.total, 262410240ull);   /* QuantLinear holds buffers only */
    done(&m, &g, &r);

    /* llm_int8_skip_modules replaces bitsandbytes' default list: the head
     * is quantised unless named; "mlp" matches every MLP projection */
    r = (struct memest_run){0};
    q = (struct memest_quant_cfg){.format = MEMEST_WF_NF4, .skip = {"mlp"}, .nskip = 1,
                                  .skip_set = true};
    CHECK(llama(&q, &m, &g, &r, &count) == 0);
    CHECK_EQ_INT(count, 32 * 4 + 1);
    head = memest_graph_output_head(&g);
    CHECK(head >= 0 && g.nodes[head].wformat == MEMEST_WF_NF4);
    done(&m, &g, &r);

    /* prepare_model_for_kbit_training: everything frozen, the dense fp16
     * parameters in float32: 262,410,240 x 4 bytes */
    r = (struct memest_run){0};
    q = (struct memest_quant_cfg){.format = MEMEST_WF_NF4, .kbit_prep = true};
    CHECK(llama(&q, &m, &g, &r, &count) == 0);
    CHECK(memest_calc_params(&r, &t, &err) == 0);
    CHECK_EQ_U64(t.trainable, 0);
    CHECK_EQ_U64(t.bytes, 262410240ull * 4 + 32ull * (101187584ull + 12648448ull + 448ull));
    /* the float32 embedding makes float32 hidden states (nn.Embedding
     * returns its weight's dtype), which Linear4bit casts to its compute
     * dtype and back */
    int64_t emb = memest_graph_find(&g, "model.embed_tokens");
    qp = memest_graph_find(&g, "model.layers.0.self_attn.q_proj");
    CHECK(emb >= 0 && r.values[r.nodes[emb].out_first].dtype == MEMEST_F32);
    CHECK(qp >= 0 && r.values[r.nodes[qp].out_first].dtype == MEMEST_F32);
    done(&m, &g, &r);

    /* --kbit-prep needs quantised weights */
    q = (struct memest_quant_cfg){.kbit_prep = true};
    struct memest_graph empty = {0};
    CHECK(memest_quantize(&empty, &q, MEMEST_F16, NULL, &err) != 0);
    CHECK_EQ_INT(err.code, MEMEST_ERR_USAGE);
}

static void test_merge(void)
{
    struct memest_quant_cfg config = {.format = MEMEST_WF_AWQ4, .group_set = true};
    config.p.group_size = 64;
    struct memest_quant_cfg cli = {.format = MEMEST_WF_GPTQ4, .int4 = true}, out;
    /* int4 follows a config that says AWQ, with its group */
    memest_quant_cfg_merge(&config, &cli, &out);
    CHECK_EQ_INT(out.format, MEMEST_WF_AWQ4);
    CHECK_EQ_U64((uint64_t)out.p.group_size, 64);
    /* another method drops the config's settings; the command line's
     * group wins */
    cli = (struct memest_quant_cfg){.format = MEMEST_WF_GPTQ4, .group_set = true};
    cli.p.group_size = 32;
    memest_quant_cfg_merge(&config, &cli, &out);
    CHECK_EQ_INT(out.format, MEMEST_WF_GPTQ4);
    CHECK_EQ_U64((uint64_t)out.p.group_size, 32);
    /* nothing on the command line: the config's */
    cli = (struct memest_quant_cfg){0};
    memest_quant_cfg_merge(&config, &cli, &out);
    CHECK_EQ_INT(out.format, MEMEST_WF_AWQ4);
}

static enum memest_dtype dt_of(const cJSON *v)
{
    enum memest_dtype t = MEMEST_F32;
    if (cJSON_IsString(v))
        CHECK(memest_dtype_parse(v->valuestring, &t) == 0);
    return t;
}

/* Each case of the replica: fwd (the forward's peak above what was live,
 * less the output), kept (what the node keeps besides the output: 0, its
 * input being no new tensor) and bwd (the backward's peak above what was
 * live, less the input's gradient). */
static void test_replica(void)
{
    cJSON *root = read_reference_json("tests/reference/quant_replica.json");
    CHECK(root != NULL);
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "cases"), *c;
    int n = 0;
    cJSON_ArrayForEach(c, cases) {
        struct memest_quant_params p;
        memest_quant_defaults(&p);
        const cJSON *comp = cJSON_GetObjectItemCaseSensitive(c, "compute");
        bool int8 = cJSON_IsNull(comp);
        if (!int8)
            p.compute_dtype = (uint8_t)(dt_of(comp) + 1);
        p.double_quant = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "nested"));
        enum memest_dtype x = dt_of(cJSON_GetObjectItemCaseSensitive(c, "dtype"));
#define NUM(k) ((int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, k)))
        struct memest_quant_transient t;
        memest_quant_transient(int8 ? MEMEST_WF_INT8 : MEMEST_WF_NF4, &p, NUM("out"), NUM("in"),
                               NUM("rows"), x, x,
                               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "grad")), &t);
        printf("%-28s fwd %9llu (replica %9lld)  bwd %9llu (replica %9lld)\n", c->string,
               (unsigned long long)t.fwd, (long long)NUM("fwd"), (unsigned long long)t.bwd,
               (long long)NUM("bwd"));
        CHECK_EQ_U64(t.fwd, (uint64_t)NUM("fwd"));
        CHECK_EQ_U64(t.bwd, (uint64_t)NUM("bwd"));
        CHECK_EQ_U64(t.saved, (uint64_t)NUM("kept"));
#undef NUM
        n++;
    }
    CHECK_EQ_INT(n, 5);
    cJSON_Delete(root);
}

/* models/hf/llama-2-7b.json with a quantization_config in front, read as
 * a config file (a temporary one); 0 / -1 (err set) as
 * memest_model_read_file returns. */
static int read_quant_config(const char *qc, struct memest_model *m, struct memest_error *err)
{
    static char text[8192];
    FILE *f = fopen("models/hf/llama-2-7b.json", "rb");
    CHECK(f != NULL);
    if (!f)
        return -1;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char *brace = strchr(text, '{');
    CHECK(brace != NULL && n < 4096);
    static char doc[16384];
    snprintf(doc, sizeof doc, "{\"quantization_config\": %s,%s", qc, brace + 1);
    char path[] = "/tmp/memest_test_quant_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return -1;
    FILE *w = fdopen(fd, "wb");
    CHECK(w && fwrite(doc, 1, strlen(doc), w) == strlen(doc));
    if (w)
        fclose(w);
    int rc = memest_model_read_file(path, m, err);
    remove(path);
    return rc;
}

/* transformers v4.48.0 BitsAndBytesConfig / GPTQConfig / AwqConfig keys */
static void test_config(void)
{
    struct memest_model m;
    struct memest_error err = {0};
    CHECK(read_quant_config("{\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true, "
                            "\"bnb_4bit_quant_type\": \"nf4\", \"bnb_4bit_use_double_quant\": true, "
                            "\"bnb_4bit_compute_dtype\": \"bfloat16\", \"llm_int8_threshold\": 6.0, "
                            "\"llm_int8_skip_modules\": [\"lm_head\", \"mlp.down_proj\"]}",
                            &m, &err) == 0);
    CHECK_EQ_INT(m.quant.format, MEMEST_WF_NF4);
    CHECK(m.quant.dq_set && m.quant.p.double_quant);
    CHECK(m.quant.compute_set && m.quant.p.compute_dtype == MEMEST_BF16 + 1);
    CHECK(m.quant.skip_set && m.quant.nskip == 2);
    CHECK_STR_EQ(m.quant.skip[1], "mlp.down_proj");
    memest_model_free(&m);
    /* load_in_4bit alone: fp4, BitsAndBytesConfig's default */
    CHECK(read_quant_config("{\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true}", &m,
                            &err) == 0);
    CHECK_EQ_INT(m.quant.format, MEMEST_WF_FP4);
    CHECK(!m.quant.p.double_quant && !m.quant.compute_set);
    memest_model_free(&m);
    CHECK(read_quant_config("{\"quant_method\": \"bitsandbytes\", \"load_in_8bit\": true}", &m,
                            &err) == 0);
    CHECK_EQ_INT(m.quant.format, MEMEST_WF_INT8);
    memest_model_free(&m);
    CHECK(read_quant_config("{\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 128, "
                            "\"desc_act\": true, \"sym\": true, \"damp_percent\": 0.01}",
                            &m, &err) == 0);
    CHECK_EQ_INT(m.quant.format, MEMEST_WF_GPTQ4);
    CHECK(m.quant.group_set && m.quant.p.group_size == 128 && m.quant.p.desc_act);
    memest_model_free(&m);
    CHECK(read_quant_config("{\"quant_method\": \"awq\", \"bits\": 4, \"group_size\": 64, "
                            "\"version\": \"gemm\", \"zero_point\": true, "
                            "\"modules_to_not_convert\": null}", &m, &err) == 0);
    CHECK_EQ_INT(m.quant.format, MEMEST_WF_AWQ4);
    CHECK(m.quant.p.group_size == 64 && !m.quant.skip_set);
    memest_model_free(&m);
    /* MXFP4 (gpt-oss's checkpoints): the experts outside modules_to_not_convert;
     * dequantize true: dense weights. FP8 (DeepSeek-V3's) with its block. */
    CHECK(read_quant_config("{\"quant_method\": \"mxfp4\", \"modules_to_not_convert\": "
                            "[\"model.layers.*.self_attn\", \"lm_head\"]}", &m, &err) == 0);
    CHECK_EQ_INT(m.quant.format, MEMEST_WF_MXFP4);
    CHECK(m.quant.nskip == 2);
    memest_model_free(&m);
    CHECK(read_quant_config("{\"quant_method\": \"mxfp4\", \"dequantize\": true}", &m, &err) == 0);
    CHECK_EQ_INT(m.quant.format, MEMEST_WF_DENSE);
    memest_model_free(&m);
    CHECK(read_quant_config("{\"quant_method\": \"fp8\", \"activation_scheme\": \"dynamic\", "
                            "\"fmt\": \"e4m3\", \"weight_block_size\": [64, 32]}", &m, &err) == 0);
    CHECK_EQ_INT(m.quant.format, MEMEST_WF_FP8);
    CHECK(m.quant.fp8_set && m.quant.p.fp8_block[0] == 64 && m.quant.p.fp8_block[1] == 32);
    memest_model_free(&m);
    CHECK(read_quant_config("{\"quant_method\": \"modelopt\", \"quant_algo\": \"NVFP4\", "
                            "\"group_size\": 16, \"exclude_modules\": [\"lm_head\"]}", &m, &err) == 0);
    CHECK_EQ_INT(m.quant.format, MEMEST_WF_NVFP4);
    CHECK(m.quant.nvfp4_set && m.quant.p.nvfp4_group == 16 && m.quant.nskip == 1);
    memest_model_free(&m);
    /* refused: each names the key */
    static const struct { const char *qc, *frag; } bad[] = {
        {"{\"quant_method\": \"gptq\", \"bits\": 8}", "bits: memest models 4-bit"},
        {"{\"quant_method\": \"awq\", \"bits\": 4, \"version\": \"gemv\"}", "version"},
        {"{\"quant_method\": \"hqq\"}", "quant_method"},
        {"{\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true, "
         "\"bnb_4bit_quant_type\": \"int4\"}", "bnb_4bit_quant_type"},
        {"{\"quant_method\": \"bitsandbytes\", \"load_in_8bit\": true, "
         "\"llm_int8_skip_modules\": \"lm_head\"}", "a list of module names"},
        {"{\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 0}", "group_size"},
        {"{\"quant_method\": \"fp8\", \"activation_scheme\": \"static\"}", "activation_scheme"},
        {"{\"quant_method\": \"fp8\", \"weight_block_size\": [128]}", "weight_block_size"},
        {"{\"quant_method\": \"fp8\", \"fmt\": \"e5m2\"}", "fmt"},
        {"{\"quant_method\": \"mxfp4\", \"dequantize\": 1}", "dequantize"},
        {"{\"quant_method\": \"modelopt\", \"quant_algo\": \"FP8\"}", "quant_algo"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err = (struct memest_error){0};
        CHECK(read_quant_config(bad[i].qc, &m, &err) != 0);
        CHECK_EQ_INT(err.code, MEMEST_ERR_SCHEMA);
        CHECK_CONTAINS(err.msg, bad[i].frag);
        memest_model_free(&m);
    }
}

int main(void)
{
    test_config();
    test_replica();
    test_formulas();
    test_transients();
    test_llama();
    test_merge();
    return CHECK_DONE();
}
