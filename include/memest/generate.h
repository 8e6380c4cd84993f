/* generate.h - text generation (--generate): the memory of transformers'
 * generate() over a prompt of C tokens and N new ones, and what a serving
 * engine's paged KV cache holds (src/calc/generate.c). It reads two runs of
 * the same model: one at seq_len = C (the prefill) and one at seq_len = 1 (a
 * decode step). The KV cache's size comes from the runs' attention nodes
 * (op kv_attention: their key and value inputs), never from the model's
 * name; the steps are simulated (sim.h: struct memest_gen_plan) like any
 * no-grad forward pass. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memest/calc.h"
#include "memest/dtype.h"
#include "memest/error.h"
#include "memest/run.h"
#include "memest/step.h"
#include "memest/timeline.h"

/* --cache: transformers' cache classes (cache_utils.py, v4.48). */
enum memest_kv_cache {
    MEMEST_CACHE_DYNAMIC = 0,  /* DynamicCache, generate()'s default: grows by
                                  torch.cat, keeps every token (a sliding window
                                  only masks) */
    MEMEST_CACHE_STATIC,       /* StaticCache (SlidingWindowCache / HybridCache for
                                  windowed layers): [B, Hkv, max_cache_len, D]
                                  per layer, made before the prefill */
};

struct memest_gen_cfg {
    int64_t context;           /* C: prompt tokens */
    int64_t new_tokens;        /* N: tokens generated */
    enum memest_dtype kv_dtype;    /* the cache's element type */
    bool kv_dtype_set;         /* else the keys' own dtype */
    bool kv_fp8;               /* kv_dtype is a one-byte float8 (e4m3/e5m2): named fp8 */
    uint8_t cache;             /* enum memest_kv_cache */
    bool all_logits;           /* logits of every prompt position (logits_to_keep=0),
                                  else of the last only (generate()'s 1) */
};

/* One attention node of a run, as the cache sees it. */
struct memest_gen_attn {
    uint32_t node;
    int64_t batch, q_heads, kv_heads, k_dim, v_dim;
    int64_t window;            /* sliding window (0: none) */
    enum memest_dtype dtype;   /* the keys' element type */
    bool repeats;              /* attention copies k, v to q_heads heads (repeat_kv) */
};

/* The attention nodes of r (op kv_attention), in graph order, into a
 * malloc'd array (*n entries; NULL and 0 when none). 0, or -1 with err set
 * (out of memory, or an attention node whose inputs are not 4-d). */
int memest_gen_attention(const struct memest_run *r, struct memest_gen_attn **out, uint32_t *n,
                         struct memest_error *err);

/* The tokens the cache of attention node a holds for a sequence that has
 * seen `tokens`: all of them, or its window with a static cache
 * (SlidingWindowCache / HybridCache: min(window, max_cache_len)). */
int64_t memest_gen_cache_len(const struct memest_gen_attn *a, uint8_t cache, int64_t tokens);

/* One simulated step of generation. */
struct memest_gen_step {
    struct memest_peak peak;   /* max_memory_allocated / reserved of the step */
    uint64_t kv_bytes;         /* the cache at the end of the step */
    uint64_t state_bytes;      /* the recurrent layers' states (Mamba), the whole batch */
    uint64_t logits_bytes;     /* the logits the model returns */
    double flops;              /* of the step */
    uint64_t read_bytes;       /* weights and cache the step reads (decode) */
};

struct memest_gen_estimate {
    struct memest_param_totals params;
    uint64_t weight_bytes;     /* parameters a matrix product reads (each once) */
    uint32_t layers;           /* attention nodes */
    uint64_t kv_token_bytes;   /* cache bytes of one token of one sequence, all layers */
    uint64_t kv_bytes;         /* the cache at C + N tokens, the whole batch */
    uint64_t state_bytes;      /* the recurrent layers' states (conv and SSM states of
                                  the Mamba mixers), the whole batch, any length */
    uint32_t state_layers;     /* the layers holding them */
    int64_t batch, context, new_tokens;
    uint8_t cache;
    enum memest_dtype kv_dtype;
    bool kv_fp8;
    struct memest_gen_step prefill, decode;
    double decode_flops_first; /* the first decode step's FLOPs and bytes (cache at C) */
    uint64_t decode_read_first;
    uint64_t overhead;         /* CUDA context */
    uint64_t total_device;     /* max(prefill, decode) reserved + overhead */
};

/* Simulates generation: the prefill on run `pre` (seq_len = C) and the last
 * decode step on run `dec` (seq_len = 1), step cfg for the card's
 * generation and the overhead. 0, or -1 with err set (a usage error when
 * the model has no attention node). */
int memest_generate(const struct memest_run *pre, const struct memest_run *dec,
                    const struct memest_step_cfg *step, const struct memest_gen_cfg *cfg,
                    struct memest_gen_estimate *out, struct memest_error *err);

/* The peak of vLLM's profile run (worker.py profile_run: a forward over
 * the batch of dummy sequences without a KV cache, logits of one position
 * each) as the prefill of run `pre` without its cache. 0 / -1. */
int memest_generate_profile(const struct memest_run *pre, const struct memest_step_cfg *step,
                            const struct memest_gen_cfg *cfg, struct memest_peak *out,
                            struct memest_error *err);

/* Speed estimates on a card (the flow computes them from its preset):
 * decode bound by memory bandwidth (weights + cache read per step) or by
 * compute, whichever is slower; the prefill by compute at --mfu. */
struct memest_gen_speed {
    bool have;
    double bandwidth, peak_flops, mfu;
    double prefill_s;          /* time to first token */
    double decode_first_s, decode_last_s;   /* one step, cache at C+1 / C+N */
    double decode_tok_s;       /* batch * N / (sum of the N steps' times) */
    double total_s;            /* prefill + the N steps */
    bool decode_compute_bound;
};

/* vLLM's paged cache (--kv-block): vllm/worker/worker.py
 * determine_num_available_blocks() (profile_num_available_blocks() in
 * vLLM 0.2, the version of row I10) with cache_engine.py
 * get_cache_block_size() = block * 2 * layers * kv_heads * head_size * bytes:
 * blocks = floor((total * utilization - peak) / (block * kv_token_bytes)),
 * peak = weights + the profile run's activation peak + memory outside
 * PyTorch. Sequences of `len` tokens fitting: blocks / ceil(len / block). */
struct memest_paged {
    uint64_t budget;           /* total * utilization */
    uint64_t used;             /* the peak subtracted */
    uint64_t block_bytes;      /* block * kv_token_bytes */
    uint64_t blocks;           /* 0 when nothing is left */
    uint64_t cache_bytes;      /* blocks * block_bytes */
    uint64_t tokens;           /* blocks * block */
    uint64_t seqs;             /* sequences of seq_len tokens */
    int64_t seq_len;
};
void memest_paged_blocks(uint64_t total, double utilization, uint64_t used, uint64_t kv_token_bytes,
                         int64_t block, int64_t seq_len, struct memest_paged *out);
