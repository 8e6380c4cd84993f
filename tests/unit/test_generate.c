/* test_generate.c - --generate (src/calc/generate.c) against figures worked
 * out by hand here, and vLLM's published block counts:
 *   - the KV cache of models/hf/llama-3-8b.json, 2 * layers * kv_heads *
 *     head_dim * tokens * batch * bytes, read from the attention nodes;
 *   - models/hf/mistral-7b-v0.1.json's sliding window (4096): DynamicCache
 *     keeps every token, a static cache (SlidingWindowCache) the window;
 *   - a prefill whose peak is generate()'s clone of the logits (--all-logits),
 *     and the decode step's growth with the cache (the torch.cat copy and
 *     repeat_kv), both justified line by line below;
 *   - real PyTorch 2.6 running generate() on the tiny Llama config
 *     (tests/tools/generate_peak.py -> tests/reference/generate_peaks.json):
 *     the prefill's and the last decode step's peak live tensor bytes;
 *   - vLLM's paged cache: rows I9 and I10 of
 *     tests/reference/gpu-measurements.md (the block formula of
 *     vllm/worker/worker.py determine_num_available_blocks and
 *     cache_engine.py get_cache_block_size, then the whole estimate within
 *     the stated tolerances, the difference explained).
 * Runs from the source directory. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "reference_json.h"
#include "memest/cuda_overhead.h"
#include "memest/generate.h"
#include "memest/model.h"
#include "memest/run.h"

#define GIB 1073741824.0

static void report(const struct memest_error *err)
{
    char msg[1200];
    memest_error_format(err, msg, sizeof msg);
    fprintf(stderr, "%s\n", msg);
}

struct gen {
    struct memest_model m;
    struct memest_graph pg, dg;
    struct memest_run pr, dr;
};

/* The transformers release the graphs follow (the template variable
 * "transformers": 449 is 4.49, 500 5.x). */
static const char *release = "500";

/* Generation of `path` at batch, context C + N new tokens, dtype. 0 / -1. */
static int generate(const char *path, int64_t batch, struct memest_gen_cfg cfg, enum memest_dtype dt,
                    uint64_t overhead, struct gen *G, struct memest_gen_estimate *e)
{
    struct memest_error err = {0};
    char c[24];
    snprintf(c, sizeof c, "%lld", (long long)cfg.context);
    const struct memest_override pre[] = {{"seq_len", c, NULL}, {"transformers", release, NULL}},
                                 dec[] = {{"seq_len", "1", NULL}, {"transformers", release, NULL}};
    struct memest_run_opts o = {.batch = batch, .dtype = dt};
    struct memest_step_cfg step;
    memest_step_cfg_default(&step);
    step.gpu_arch = 80;
    step.overhead = overhead;
    step.overhead_set = overhead != 0;
    memset(G, 0, sizeof *G);
    if (memest_model_read_file(path, &G->m, &err) != 0 || memest_model_build(&G->m, pre, 2, &G->pg, &err) != 0 ||
        memest_model_build(&G->m, dec, 2, &G->dg, &err) != 0 ||
        memest_run_infer(&G->pr, &G->pg, &o, &err) != 0 || memest_run_infer(&G->dr, &G->dg, &o, &err) != 0 ||
        memest_generate(&G->pr, &G->dr, &step, &cfg, e, &err) != 0) {
        report(&err);
        return -1;
    }
    return 0;
}

static void done(struct gen *G)
{
    memest_run_free(&G->pr);
    memest_run_free(&G->dr);
    memest_graph_free(&G->pg);
    memest_graph_free(&G->dg);
    memest_model_free(&G->m);
}

/* Llama-3-8B (config.json: 32 layers, 32 heads, 8 kv heads, hidden 4096 ->
 * head_dim 128, bf16): per token of a sequence 2 (k, v) * 32 * 8 * 128 * 2 B
 * = 131,072 B; at batch 2, C + N = 1000 + 24 = 1024 tokens: 268,435,456 B. */
static void kv_llama3(void)
{
    struct gen G;
    struct memest_gen_estimate e;
    struct memest_gen_cfg cfg = {.context = 1000, .new_tokens = 24};
    if (generate("models/hf/llama-3-8b.json", 2, cfg, MEMEST_BF16, 0, &G, &e) != 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ_U64(e.layers, 32);
    CHECK_EQ_U64(e.kv_token_bytes, 2ull * 32 * 8 * 128 * 2);
    CHECK_EQ_U64(e.kv_bytes, 2ull * 32 * 8 * 128 * 1024 * 2 * 2);
    /* the prefill holds the C prompt tokens' cache */
    CHECK_EQ_U64(e.prefill.kv_bytes, 2ull * 32 * 8 * 128 * 1000 * 2 * 2);
    done(&G);
    /* --kv-dtype int8: one byte per element */
    cfg.kv_dtype = MEMEST_I8;
    cfg.kv_dtype_set = true;
    if (generate("models/hf/llama-3-8b.json", 2, cfg, MEMEST_BF16, 0, &G, &e) != 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ_U64(e.kv_bytes, 2ull * 32 * 8 * 128 * 1024 * 2 * 1);
    done(&G);
}

/* google/gemma-3-4b-pt (tests/hf/published/gemma-3-4b-pt.json): the 34
 * text layers (4 kv heads of 256, bf16) keep a cache, 2 * 34 * 4 * 256 * 2
 * = 139,264 B per token; the SigLIP tower's 27 attention layers, neither
 * causal nor masked, keep none (and a one-token decode step has no image). */
static void kv_gemma3_vision(void)
{
    struct gen G;
    struct memest_gen_estimate e;
    struct memest_gen_cfg cfg = {.context = 512, .new_tokens = 64};
    if (generate("tests/hf/published/gemma-3-4b-pt.json", 1, cfg, MEMEST_BF16, 0, &G, &e) != 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ_U64(e.layers, 34);
    CHECK_EQ_U64(e.kv_token_bytes, 2ull * 34 * 4 * 256 * 2);
    done(&G);
}

/* Mistral-7B-v0.1 (32 layers, 8 kv heads, head_dim 128, sliding_window
 * 4096), batch 1, C + N = 8000 + 192 = 8192: DynamicCache keeps all 8192
 * tokens (the window only masks): 2 * 32 * 8 * 128 * 8192 * 2 B = 1 GiB;
 * a static cache (transformers' SlidingWindowCache) holds
 * min(4096, 8192) = 4096: 512 MiB. */
static void kv_mistral(void)
{
    struct gen G;
    struct memest_gen_estimate e;
    struct memest_gen_cfg cfg = {.context = 8000, .new_tokens = 192};
    if (generate("models/hf/mistral-7b-v0.1.json", 1, cfg, MEMEST_BF16, 0, &G, &e) != 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ_U64(e.kv_bytes, 2ull * 32 * 8 * 128 * 8192 * 2);
    done(&G);
    cfg.cache = MEMEST_CACHE_STATIC;
    if (generate("models/hf/mistral-7b-v0.1.json", 1, cfg, MEMEST_BF16, 0, &G, &e) != 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ_U64(e.kv_bytes, 2ull * 32 * 8 * 128 * 4096 * 2);
    /* the static cache exists before the prefill: its peak holds it all */
    CHECK_EQ_U64(e.prefill.kv_bytes, 2ull * 32 * 8 * 128 * 4096 * 2);
    done(&G);
}

/* Llama-3-8B, batch 1, C = 1024, --all-logits (logits_to_keep = 0), bf16.
 * The peak is at the end of the prefill, in _sample:
 *   parameters       8,030,261,248 * 2           = 16,060,522,496
 *   inv_freq buffer  64 float32                  =            256
 *   input_ids        1024 int64                  =          8,192
 *   the cache        2 * 32 * 8 * 128 * 1024 * 2 =    134,217,728
 *   outputs.logits   1024 * 128,256 * 2          =    262,668,288
 *   its .clone()     the same                    =    262,668,288
 *   [:, -1].float()  128,256 * 4                 =        513,024
 * (the forward's hidden states went when forward() returned, before the
 * clone): 16,720,598,272 tensor bytes. */
static void prefill_all_logits(void)
{
    struct gen G;
    struct memest_gen_estimate e;
    struct memest_gen_cfg cfg = {.context = 1024, .new_tokens = 1, .all_logits = true};
    if (generate("models/hf/llama-3-8b.json", 1, cfg, MEMEST_BF16, 0, &G, &e) != 0) {
        CHECK(0);
        return;
    }
    uint64_t logits = 1024ull * 128256 * 2;
    CHECK_EQ_U64(e.prefill.logits_bytes, logits);
    CHECK_EQ_U64(e.prefill.peak.tensor_bytes, 8030261248ull * 2 + 256 + 8192 +
                                                  2ull * 32 * 8 * 128 * 1024 * 2 + 2 * logits +
                                                  128256ull * 4);
    done(&G);
}

/* Two decode steps of Llama-3-8B (batch 1, bf16) at T = 3072 and T = 4096
 * tokens. What is live besides the cache (the token's activations) does not
 * depend on T.
 * transformers 4.49 (repeat_kv before SDPA): the step peaks in the last
 * layer's attention: every layer's cache at T tokens (the torch.cat copies
 * made, the old tensors gone) and repeat_kv's copies of the cache's T - 1
 * earlier tokens to 32 heads (the graph's node repeats the new token
 * itself); 1024 tokens more are
 *   cache      2 * 32 layers * 8 heads * 128 * 2 B = 131,072 B
 *   repeat_kv  2 * 32 heads * 128 * 2 B             =  16,384 B
 * = 150,994,944 B.
 * transformers 5.x (enable_gqa, no repeat): the step peaks in the last
 * layer's torch.cat of the values: the new [1, 8, T, 128] value exists
 * beside the old [1, 8, T - 1, 128] one, 8 * 128 * 2 = 2,048 B a token more:
 * 1024 * (131,072 + 2,048) = 136,314,880 B. */
static void decode_growth_at(const char *rel, uint64_t extra_per_token)
{
    struct gen G;
    struct memest_gen_estimate e1, e2;
    struct memest_gen_cfg cfg = {.context = 3071, .new_tokens = 1};
    release = rel;
    if (generate("models/hf/llama-3-8b.json", 1, cfg, MEMEST_BF16, 0, &G, &e1) != 0) {
        CHECK(0);
        return;
    }
    done(&G);
    cfg.context = 4095;
    if (generate("models/hf/llama-3-8b.json", 1, cfg, MEMEST_BF16, 0, &G, &e2) != 0) {
        CHECK(0);
        return;
    }
    done(&G);
    release = "500";
    CHECK_EQ_U64(e2.decode.kv_bytes, 4096ull * 131072);
    CHECK_EQ_U64(e2.decode.peak.tensor_bytes - e1.decode.peak.tensor_bytes,
                 1024ull * (131072 + extra_per_token));
    /* the peak itself: weights + cache + the T - 1 tokens' extra copies +
     * at most a few of the token's [1, 1, 4096] activations */
    uint64_t floor = 8030261248ull * 2 + 4096ull * 131072 + 4095ull * extra_per_token;
    CHECK(e2.decode.peak.tensor_bytes >= floor && e2.decode.peak.tensor_bytes < floor + 64 * 1024);
}

static void decode_growth(void)
{
    decode_growth_at("449", 16384);
    decode_growth_at("500", 2048);
}

/* vLLM's formula: cache_block_size = block * 2 * layers * kv_heads *
 * head_size * dtype bytes (Llama-2-7B fp16, block 16: 16 * 2 * 32 * 32 *
 * 128 * 2 = 8 MiB), blocks = floor((total * 0.9 - peak) / block_size). */
static void paged_formula(void)
{
    struct memest_paged p;
    uint64_t total = 80ull << 30, used = 14ull << 30;
    memest_paged_blocks(total, 0.9, used, 2ull * 32 * 32 * 128 * 2, 16, 4096, &p);
    CHECK_EQ_U64(p.block_bytes, 8ull << 20);
    CHECK_EQ_U64(p.blocks, (uint64_t)((72.0 * GIB - 14.0 * GIB) / (8 << 20)));   /* 7424 */
    CHECK_EQ_U64(p.seqs, p.blocks / 256);
    memest_paged_blocks(total, 0.9, total, 1, 16, 16, &p);   /* nothing left */
    CHECK_EQ_U64(p.blocks, 0);
}

/* I10 (vLLM PR #2031, A100-80GB, Llama-2-7B fp16, block 16, utilization
 * 0.9): 7,351 blocks. vLLM 0.2's profile run is max_num_batched_tokens =
 * max(max_model_len 4096, 2048) tokens as max_num_seqs = 256 sequences of
 * 16: memest's prefill of batch 256 x 16 tokens without a cache. memest
 * counts the CUDA context (its default) as the memory outside PyTorch and
 * finds ~1% more blocks: vLLM's peak also holds the sampler's float32
 * probabilities and the non-torch memory of its process.
 * I9 (vLLM PR #10511, Llama-3-8B bf16, 79.22 GiB card, max_model_len 8192:
 * 256 sequences of 32): available_kv_cache_memory 53.29 GiB with
 * non_torch_memory 1.79 GiB and an activation peak of 1.26 GiB. Given the
 * same non-torch figure as the overhead, memest's cache memory is within
 * 1 GiB of it (memest's activation peak is lower: vLLM's fused
 * gate_up_proj output and sampler). */
static void paged_vllm(void)
{
    struct gen G;
    struct memest_gen_estimate e;
    struct memest_gen_cfg cfg = {.context = 16, .new_tokens = 4080};
    if (generate("models/hf/llama-2-7b.json", 256, cfg, MEMEST_F16, 0, &G, &e) != 0) {
        CHECK(0);
        return;
    }
    struct memest_peak prof;
    struct memest_step_cfg step;
    memest_step_cfg_default(&step);
    step.gpu_arch = 80;
    struct memest_error err = {0};
    CHECK(memest_generate_profile(&G.pr, &step, &cfg, &prof, &err) == 0);
    struct memest_paged p;
    uint64_t a100 = 84987740160ull;   /* models/gpus.json a100-80gb */
    memest_paged_blocks(a100, 0.9, prof.bytes + memest_default_overhead(80), e.kv_token_bytes, 16,
                        4096, &p);
    CHECK_EQ_U64(p.block_bytes, 8ull << 20);
    printf("I10: memest %llu blocks, vLLM 7351\n", (unsigned long long)p.blocks);
    CHECK(fabs((double)p.blocks - 7351) / 7351 < 0.02);
    done(&G);

    cfg = (struct memest_gen_cfg){.context = 32, .new_tokens = 8160};
    if (generate("models/hf/llama-3-8b.json", 256, cfg, MEMEST_BF16, 0, &G, &e) != 0) {
        CHECK(0);
        return;
    }
    CHECK(memest_generate_profile(&G.pr, &step, &cfg, &prof, &err) == 0);
    uint64_t card = (uint64_t)(79.22 * GIB), non_torch = (uint64_t)(1.79 * GIB);
    memest_paged_blocks(card, 0.9, prof.bytes + non_torch, e.kv_token_bytes, 16, 8192, &p);
    printf("I9: memest weights %.2f GiB, activation peak %.2f GiB, KV memory %.2f GiB; vLLM 14.96, "
           "1.26, 53.29\n",
           (double)e.params.bytes / GIB, (double)(prof.bytes - e.params.bytes) / GIB,
           (double)p.cache_bytes / GIB);
    CHECK(fabs((double)e.params.bytes / GIB - 14.96) < 0.01);
    CHECK(fabs((double)(p.budget - p.used) / GIB - 53.29) < 1.0);
    done(&G);
}

/* tests/tools/generate_peak.py: tests/hf/tiny/llama.json (2 layers, 4
 * heads, 2 kv heads, hidden 64, vocab 128), bf16, SDPA, batch 2, C = 48,
 * N = 16, generate() with a DynamicCache and a StaticCache (with its 4-d
 * mask) in PyTorch 2.6. memest leaves out generate()'s growing input_ids
 * and attention_mask (int64 [B, C + step] each), the argmax and the
 * attention kernel's float32 logsumexp: within 3% (the prefills within
 * 0.5%). */
static void against_torch(void)
{
    cJSON *ref = read_reference_json("tests/reference/generate_peaks.json");
    if (!ref) {
        CHECK(0);
        return;
    }
    release = "449"; /* generate_peak.py's replica */
    static const char *const kinds[] = {"dynamic", "static"};
    for (int k = 0; k < 2; k++) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(ref, kinds[k]);
        double pre = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "prefill_peak"));
        double dec = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "decode_peak"));
        struct gen G;
        struct memest_gen_estimate e;
        struct memest_gen_cfg cfg = {.context = 48, .new_tokens = 16, .cache = (uint8_t)k};
        if (generate("tests/hf/tiny/llama.json", 2, cfg, MEMEST_BF16, 0, &G, &e) != 0) {
            CHECK(0);
            continue;
        }
        printf("tiny llama, %s cache: prefill memest %llu torch %.0f; decode memest %llu torch %.0f\n",
               kinds[k], (unsigned long long)e.prefill.peak.tensor_bytes, pre,
               (unsigned long long)e.decode.peak.tensor_bytes, dec);
        CHECK(fabs((double)e.prefill.peak.tensor_bytes - pre) / pre < 0.005);
        CHECK(fabs((double)e.decode.peak.tensor_bytes - dec) / dec < 0.03);
        done(&G);
    }
    release = "500";
    cJSON_Delete(ref);
}

int main(void)
{
    against_torch();
    kv_llama3();
    kv_gemma3_vision();
    kv_mistral();
    prefill_all_logits();
    decode_growth();
    paged_formula();
    paged_vllm();
    return CHECK_DONE();
}
